"""Loading an evaluation fixture: untrusted JSON-shaped data in, frozen ``EvaluationTask`` out.

The source is what ``json.load`` gives for a fixture file (``schemaVersion`` 1, a ``tasks``
list). Only exact ``dict`` / ``list`` / ``tuple`` / ``str`` values are accepted: a subclass
could run code on every read (the Python analogue of the workshop's Proxy rule). Python lists
have no holes; a ``None`` entry stands for one (the "dense" rule). The result is a deep
snapshot, so later changes to the source have no effect. Every problem raises a plain
``TypeError`` whose message names the field, with the workshop's fragments ("held-out",
"dense", "duplicate required evidence").
"""

from __future__ import annotations

from typing import Any, Final, NoReturn, cast

from tether._base.exact_types import is_array
from tether._base.strings import is_non_empty
from tether.evals.types import (
    ID_PATTERN,
    MAX_EVALUATION_TASKS,
    MAX_EVIDENCE_ITEM_CODE_POINTS,
    MAX_EVIDENCE_ITEM_UTF16_UNITS,
    MAX_EVIDENCE_ITEMS,
    MAX_PROMPT_UTF16_UNITS,
    MAX_TASK_EVIDENCE_CODE_POINTS,
    EvaluationTask,
    ExpectedEvidence,
    JudgeVerdict,
)

__all__ = [
    "EVALUATION_FIXTURE_SCHEMA_VERSION",
    "load_evaluation_tasks",
    "task_to_source",
    "utf16_units",
]

EVALUATION_FIXTURE_SCHEMA_VERSION: Final = 1
"""The only fixture ``schemaVersion`` this loader reads."""


def utf16_units(text: str) -> int:
    """The length of ``text`` in UTF-16 code units (a lone surrogate counts one)."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def _fail(message: str) -> NoReturn:
    raise TypeError(message)


def _dense_list(value: object, where: str) -> list[Any] | tuple[Any, ...]:
    if not is_array(value):
        _fail(f"{where} must be a dense list")
    items: list[Any] | tuple[Any, ...] = value
    if any(item is None for item in items):
        _fail(f"{where} must be dense (no missing entries)")
    return items


def _evidence(value: object, where: str, *, minimum: int) -> tuple[str, ...]:
    items = _dense_list(value, where)
    if not minimum <= len(items) <= MAX_EVIDENCE_ITEMS:
        _fail(f"{where} must hold {minimum} to {MAX_EVIDENCE_ITEMS} items")
    for index, item in enumerate(items):
        if not is_non_empty(item):
            _fail(f"{where}[{index}] must be a non-empty string")
        if len(item) > MAX_EVIDENCE_ITEM_CODE_POINTS:
            _fail(f"{where}[{index}] is longer than {MAX_EVIDENCE_ITEM_CODE_POINTS} code points")
        if utf16_units(item) > MAX_EVIDENCE_ITEM_UTF16_UNITS:  # pragma: no cover - see below
            # Unreachable while 4,096 code points are at most 8,192 UTF-16 units; kept because
            # the workshop states both limits.
            _fail(f"{where}[{index}] is longer than {MAX_EVIDENCE_ITEM_UTF16_UNITS} UTF-16 units")
    return tuple(items)


def _task(value: object, index: int) -> EvaluationTask:
    where = f"Evaluation fixture tasks[{index}]"
    if type(value) is not dict:
        _fail(f"{where} must be an object")
    source = cast("dict[Any, Any]", value)
    task_id = source.get("id")
    if type(task_id) is not str or ID_PATTERN.fullmatch(task_id) is None:
        _fail(f"{where}.id must match ^[a-z0-9](?:[a-z0-9._-]{{0,63}})$")
    where = f"Evaluation task {task_id!r}"
    if source.get("split") != "held-out" or type(source.get("split")) is not str:
        _fail(f'{where}: split must be "held-out"')
    prompt = source.get("prompt")
    if not is_non_empty(prompt):
        _fail(f"{where}: prompt must be a non-empty string")
    if utf16_units(prompt) > MAX_PROMPT_UTF16_UNITS:
        _fail(f"{where}: prompt is longer than {MAX_PROMPT_UTF16_UNITS} UTF-16 units")
    expected = source.get("expectedPublicEvidence")
    if type(expected) is not dict:
        _fail(f"{where}: expectedPublicEvidence must be an object")
    expected_source = cast("dict[Any, Any]", expected)
    includes = _evidence(
        expected_source.get("includes"), f"{where}: expectedPublicEvidence.includes", minimum=1
    )
    if len(set(includes)) != len(includes):
        _fail(f"{where}: duplicate required evidence in expectedPublicEvidence.includes")
    candidate = _evidence(
        source.get("candidatePublicEvidence"), f"{where}: candidatePublicEvidence", minimum=0
    )
    total = sum(map(len, includes)) + sum(map(len, candidate))
    if total > MAX_TASK_EVIDENCE_CODE_POINTS:
        _fail(
            f"{where}: evidence holds more than {MAX_TASK_EVIDENCE_CODE_POINTS} code points "
            "in total"
        )
    verdict = source.get("expectedVerdict")
    if type(verdict) is not str or verdict not in ("pass", "fail"):
        _fail(f'{where}: expectedVerdict must be "pass" or "fail"')
    expected_verdict: JudgeVerdict = "pass" if verdict == "pass" else "fail"
    return EvaluationTask(
        id=task_id,
        split="held-out",
        prompt=prompt,
        expected_public_evidence=ExpectedEvidence(includes=includes),
        candidate_public_evidence=candidate,
        expected_verdict=expected_verdict,
    )


def load_evaluation_tasks(source: object) -> tuple[EvaluationTask, ...]:
    """Validate a fixture (``{"schemaVersion": 1, "tasks": [...]}``) into frozen tasks.

    Raises ``TypeError`` naming the first problem (see the module docstring).
    """
    if type(source) is not dict:
        _fail("Evaluation fixture must be an object (an exact dict)")
    fixture = cast("dict[Any, Any]", source)
    version = fixture.get("schemaVersion")
    if type(version) not in (int, float) or version != EVALUATION_FIXTURE_SCHEMA_VERSION:
        _fail(f"Evaluation fixture schemaVersion must be {EVALUATION_FIXTURE_SCHEMA_VERSION}")
    entries = _dense_list(fixture.get("tasks"), "Evaluation fixture tasks")
    if not 1 <= len(entries) <= MAX_EVALUATION_TASKS:
        _fail(f"Evaluation fixture tasks must hold 1 to {MAX_EVALUATION_TASKS} tasks")
    tasks = tuple(_task(entry, index) for index, entry in enumerate(entries))
    seen: set[str] = set()
    for task in tasks:
        if task.id in seen:
            _fail(f"Evaluation fixture has duplicate task id {task.id!r}")
        seen.add(task.id)
    return tasks


def task_to_source(task: EvaluationTask) -> dict[str, Any]:
    """The fixture JSON form of a task (what ``load_evaluation_tasks`` reads back)."""
    return {
        "id": task.id,
        "split": task.split,
        "prompt": task.prompt,
        "expectedPublicEvidence": {"includes": list(task.expected_public_evidence.includes)},
        "candidatePublicEvidence": list(task.candidate_public_evidence),
        "expectedVerdict": task.expected_verdict,
    }
