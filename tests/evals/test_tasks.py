"""``load_evaluation_tasks``: the fixture loader of checkpoint 14 (and the bundled fixture)."""

from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path
from typing import Any, cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from support import examples
from tether._base.strings import is_non_empty
from tether.evals import EvaluationTask, ExpectedEvidence, load_evaluation_tasks
from tether.evals.tasks import task_to_source, utf16_units

FIXTURE_PATH = Path(__file__).resolve().parents[2] / "fixtures" / "eval-tasks.json"


def task(**overrides: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "id": "task-a",
        "split": "held-out",
        "prompt": "Add 1 and 2.",
        "expectedPublicEvidence": {"includes": ["3"]},
        "candidatePublicEvidence": ["3"],
        "expectedVerdict": "pass",
    }
    entry.update(overrides)
    return entry


def source(*tasks: Any, **overrides: Any) -> dict[str, Any]:
    data: dict[str, Any] = {"schemaVersion": 1, "tasks": list(tasks) or [task()]}
    data.update(overrides)
    return data


def test_the_bundled_fixture_loads_to_the_two_workshop_tasks() -> None:
    data = json.loads(FIXTURE_PATH.read_text(encoding="utf-8"))
    assert data["schemaVersion"] == 1
    assert load_evaluation_tasks(data) == (
        EvaluationTask(
            id="held-out-arithmetic-pass",
            split="held-out",
            prompt="Add 20 and 22, then report the result as a decimal number.",
            expected_public_evidence=ExpectedEvidence(includes=("42",)),
            candidate_public_evidence=("42",),
            expected_verdict="pass",
        ),
        EvaluationTask(
            id="held-out-arithmetic-fail",
            split="held-out",
            prompt="Add 7 and 8, then report the result as a decimal number.",
            expected_public_evidence=ExpectedEvidence(includes=("15",)),
            candidate_public_evidence=("16",),
            expected_verdict="fail",
        ),
    )


def test_the_result_is_a_deep_frozen_snapshot() -> None:
    data = source()
    tasks = load_evaluation_tasks(data)
    data["tasks"][0]["prompt"] = "changed"
    data["tasks"][0]["expectedPublicEvidence"]["includes"].append("4")
    data["tasks"].append(task(id="task-b"))
    assert len(tasks) == 1
    assert tasks[0].prompt == "Add 1 and 2."
    assert tasks[0].expected_public_evidence.includes == ("3",)
    with pytest.raises(dataclasses.FrozenInstanceError):
        tasks[0].prompt = "x"  # type: ignore[misc]


def test_extra_fields_are_ignored_and_tuples_and_float_version_accepted() -> None:
    data = {
        "schemaVersion": 1.0,
        "tasks": (task(extra={"anything": 1}, candidatePublicEvidence=()),),
        "comment": "ignored",
    }
    (loaded,) = load_evaluation_tasks(data)
    assert loaded.candidate_public_evidence == ()


class DictSubclass(dict[str, Any]):
    pass


class ListSubclass(list[Any]):
    pass


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        (None, "must be an object"),
        ([], "must be an object"),
        (DictSubclass(source()), "must be an object"),
        ("{}", "must be an object"),
        (source(schemaVersion=2), "schemaVersion must be 1"),
        (source(schemaVersion=True), "schemaVersion must be 1"),
        (source(schemaVersion="1"), "schemaVersion must be 1"),
        ({"tasks": [task()]}, "schemaVersion must be 1"),
        (source(tasks=None), "tasks must be a dense list"),
        (source(tasks=ListSubclass([task()])), "tasks must be a dense list"),
        (source(tasks=iter([task()])), "tasks must be a dense list"),
        (source(tasks=[task(), None]), "tasks must be dense"),
        (source(tasks=[]), "tasks must hold 1 to 256 tasks"),
        (source(tasks=[task(id=f"t{i}") for i in range(257)]), "tasks must hold 1 to 256 tasks"),
        (source(tasks=["task"]), "tasks[0] must be an object"),
        (source(tasks=[DictSubclass(task())]), "tasks[0] must be an object"),
        (source(task(id="Upper")), "tasks[0].id must match"),
        (source(task(id="-lead")), "tasks[0].id must match"),
        (source(task(id="a" * 65)), "tasks[0].id must match"),
        (source(task(id=7)), "tasks[0].id must match"),
        (source(task(split="train")), "held-out"),
        (source(task(split=None)), "held-out"),
        (source(task(prompt="")), "prompt must be a non-empty string"),
        (source(task(prompt=" \t\ufeff")), "prompt must be a non-empty string"),
        (source(task(prompt=5)), "prompt must be a non-empty string"),
        (source(task(prompt="x" * 100_001)), "prompt is longer than 100000 UTF-16 units"),
        (source(task(prompt="\U0001f600" * 50_001)), "prompt is longer than 100000 UTF-16 units"),
        (source(task(expectedPublicEvidence=["3"])), "expectedPublicEvidence must be an object"),
        (source(task(expectedPublicEvidence={})), "includes must be a dense list"),
        (source(task(expectedPublicEvidence={"includes": []})), "must hold 1 to 32 items"),
        (
            source(task(expectedPublicEvidence={"includes": [str(i) for i in range(33)]})),
            "must hold 1 to 32 items",
        ),
        (source(task(expectedPublicEvidence={"includes": ["3", None]})), "must be dense"),
        (source(task(expectedPublicEvidence={"includes": [""]})), "must be a non-empty string"),
        (source(task(expectedPublicEvidence={"includes": [3]})), "must be a non-empty string"),
        (
            source(task(expectedPublicEvidence={"includes": ["3", "3"]})),
            "duplicate required evidence",
        ),
        (
            source(task(expectedPublicEvidence={"includes": ["x" * 4_097]})),
            "longer than 4096 code points",
        ),
        (
            source(task(expectedPublicEvidence={"includes": ["\ud800" * 4_096 + "\U0001f600"]})),
            "longer than 4096 code points",
        ),
        (
            source(task(candidatePublicEvidence=["\U0001f600" * 4_096 + "x"])),
            "longer than 4096 code points",
        ),
        (source(task(candidatePublicEvidence=None)), "candidatePublicEvidence must be a dense"),
        (source(task(candidatePublicEvidence=["e"] * 33)), "must hold 0 to 32 items"),
        (source(task(candidatePublicEvidence=[" "])), "must be a non-empty string"),
        (
            source(
                task(
                    expectedPublicEvidence={"includes": [c * 4_096 for c in "abcdefghijklmnop"]},
                    candidatePublicEvidence=["q"],
                )
            ),
            "more than 65536 code points in total",
        ),
        (source(task(expectedVerdict="error")), 'expectedVerdict must be "pass" or "fail"'),
        (source(task(expectedVerdict=None)), 'expectedVerdict must be "pass" or "fail"'),
        (source(task(), task()), "duplicate task id 'task-a'"),
    ],
)
def test_invalid_fixtures(data: object, fragment: str) -> None:
    with pytest.raises(TypeError) as caught:
        load_evaluation_tasks(data)
    assert fragment in str(caught.value)


def test_the_combined_budget_is_inclusive() -> None:
    (loaded,) = load_evaluation_tasks(
        source(
            task(
                expectedPublicEvidence={"includes": [c * 4_096 for c in "abcdefghijklmno"]},
                candidatePublicEvidence=["p" * 4_096],
            )
        )
    )
    assert sum(map(len, loaded.expected_public_evidence.includes)) == 61_440


def test_evidence_utf16_limit_for_astral_text() -> None:
    item = "\U0001f600" * 4_096  # 4,096 code points, 8,192 UTF-16 units: the limit exactly
    (loaded,) = load_evaluation_tasks(source(task(expectedPublicEvidence={"includes": [item]})))
    assert loaded.expected_public_evidence.includes == (item,)
    assert utf16_units(item) == 8_192
    assert utf16_units("\ud800") == 1
    assert utf16_units("abc") == 3


# -- Properties ---------------------------------------------------------------------------------

ids = st.from_regex(r"[a-z0-9][a-z0-9._-]{0,20}", fullmatch=True)
texts = st.text(min_size=1, max_size=20).filter(is_non_empty)


@st.composite
def task_entries(draw: st.DrawFn) -> dict[str, Any]:
    includes = draw(st.lists(texts, min_size=1, max_size=5, unique=True))
    return {
        "id": draw(ids),
        "split": "held-out",
        "prompt": draw(texts),
        "expectedPublicEvidence": {"includes": includes},
        "candidatePublicEvidence": draw(st.lists(texts, max_size=5)),
        "expectedVerdict": draw(st.sampled_from(["pass", "fail"])),
    }


fixtures = st.lists(task_entries(), min_size=1, max_size=6, unique_by=lambda t: t["id"]).map(
    lambda tasks: {"schemaVersion": 1, "tasks": tasks}
)


@settings(max_examples=examples(100))
@given(fixtures)
def test_valid_fixtures_round_trip_through_the_source_form(data: dict[str, Any]) -> None:
    original = copy.deepcopy(data)
    tasks = load_evaluation_tasks(data)
    assert data == original  # the loader never mutates its source
    assert [task_to_source(t) for t in tasks] == data["tasks"]
    assert (
        load_evaluation_tasks({"schemaVersion": 1, "tasks": [task_to_source(t) for t in tasks]})
        == tasks
    )


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=10,
)


@st.composite
def mutated(draw: st.DrawFn) -> object:
    data = draw(fixtures)
    entries = cast("list[dict[str, Any]]", data["tasks"])
    entry = draw(st.sampled_from(entries))
    key = draw(
        st.sampled_from(
            [
                "id",
                "split",
                "prompt",
                "expectedPublicEvidence",
                "candidatePublicEvidence",
                "expectedVerdict",
            ]
        )
    )
    entry[key] = draw(json_values)
    return data


@settings(max_examples=examples(200))
@given(st.one_of(json_values, mutated()))
def test_arbitrary_data_loads_or_raises_type_error(data: object) -> None:
    try:
        tasks = load_evaluation_tasks(data)
    except TypeError as error:
        message = str(error)
        assert message
        return
    for loaded in tasks:
        assert loaded.split == "held-out"
        assert is_non_empty(loaded.prompt)
        assert loaded.expected_verdict in ("pass", "fail")
        assert 1 <= len(loaded.expected_public_evidence.includes) <= 32
        assert len(set(loaded.expected_public_evidence.includes)) == len(
            loaded.expected_public_evidence.includes
        )
