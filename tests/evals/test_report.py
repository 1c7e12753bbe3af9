"""Evaluation reports: validation, canonical JSON, parsing back, comparison (checkpoint 14)."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from support import examples
from tether.evals import (
    EvaluationAggregateMetrics,
    EvaluationComparison,
    EvaluationComparisonMetrics,
    EvaluationComparisonRun,
    EvaluationInfrastructureError,
    EvaluationReport,
    EvaluationRunReport,
    EvaluationVerdict,
    PublicMetrics,
    compare_evaluations,
    parse_evaluation_report,
    serialize_evaluation_report,
)
from tether.evals.report import aggregate_metrics, capture_report, quote_json_string
from tether.jsonvalue import js_number_text


def run(
    run_id: str = "run-000001",
    verdict: EvaluationVerdict = "pass",
    *,
    task_id: str = "task-a",
    candidate_id: str = "cand",
    metrics: object = None,
    duration: object = 0.0,
    code: object = "MISSING",
) -> EvaluationRunReport:
    error_code = ("TASK_FAILED" if verdict == "error" else None) if code == "MISSING" else code
    return EvaluationRunReport(
        task_id=task_id,
        run_id=run_id,
        candidate_id=candidate_id,
        verdict=verdict,
        public_metrics=PublicMetrics() if metrics is None else metrics,  # type: ignore[arg-type]
        duration_ms=duration,  # type: ignore[arg-type]
        error_code=error_code,  # type: ignore[arg-type]
    )


def report(*runs: EvaluationRunReport, candidate_id: str = "cand") -> EvaluationReport:
    frozen = runs or (run(),)
    return EvaluationReport(
        candidate_id=candidate_id, runs=frozen, public_metrics=aggregate_metrics(frozen)
    )


def invalid(action: Any, *args: Any) -> str:
    with pytest.raises(EvaluationInfrastructureError) as caught:
        action(*args)
    assert caught.value.code == "EVALUATION_INVALID_REPORT"
    assert caught.value.message.startswith("Invalid evaluation report: ")
    return caught.value.message


# -- Numbers and strings ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1.0, "1"),
        (-0.0, "0"),
        (0, "0"),
        (0.5, "0.5"),
        (-2.5, "-2.5"),
        (1e21, "1e+21"),
        (1e20, "100000000000000000000"),
        (123456789012345680000.0, "123456789012345680000"),
        (1e-7, "1e-7"),
        (1e-6, "0.000001"),
        (1.5e-7, "1.5e-7"),
        (0.1 + 0.2, "0.30000000000000004"),
        (1 / 3, "0.3333333333333333"),
        (2**53, "9007199254740992"),
        (2**53 + 1, "9007199254740992"),
        (-(2**60), "-1152921504606847000"),  # as String(-(2 ** 60)) in JavaScript
        (1.7976931348623157e308, "1.7976931348623157e+308"),
        (5e-324, "5e-324"),
        (123.456, "123.456"),
        (100, "100"),
    ],
)
def test_js_number_text(value: float, text: str) -> None:
    assert js_number_text(value) == text


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_js_number_text_rejects_non_finite(value: float) -> None:
    with pytest.raises(ValueError, match="non-finite"):
        js_number_text(value)


@settings(max_examples=examples(300))
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_js_number_text_round_trips(value: float) -> None:
    text = js_number_text(value)
    assert float(text) == value or (value == 0 and float(text) == 0)
    assert float(json.loads(text)) == value


def test_quote_json_string_escapes_exactly_the_workshop_set() -> None:
    assert quote_json_string('a"b\\c') == '"a\\"b\\\\c"'
    assert quote_json_string("\b\t\n\f\r") == '"\\b\\t\\n\\f\\r"'
    assert quote_json_string("\x00\x1f\x7f") == '"\\u0000\\u001f\x7f"'
    assert quote_json_string("\u2028\u2029") == '"\\u2028\\u2029"'
    assert quote_json_string("\ud800 \udfff") == '"\\ud800 \\udfff"'
    assert quote_json_string("\U0001f600") == '"\\ud83d\\ude00"'
    assert quote_json_string("é€/<>") == '"é€/<>"'


@given(st.text())
def test_quoted_strings_are_ascii_safe_json(text: str) -> None:
    quoted = quote_json_string(text)
    assert "\u2028" not in quoted
    assert "\u2029" not in quoted
    assert all(not 0xD800 <= ord(c) <= 0xDFFF for c in quoted)
    decoded = json.loads(quoted)
    assert decoded.encode("utf-16-le", "surrogatepass") == text.encode("utf-16-le", "surrogatepass")


# -- Serialization ------------------------------------------------------------------------------


def test_serialization_is_exact() -> None:
    value = report(
        run("run-000001", "pass", metrics=PublicMetrics({"zeta": 0.5, "alpha": 1.0})),
        run("run-000002", "error", code="TOOL:LIMIT", duration=12.25),
        run("run-000003", "fail", task_id="task-b", metrics={"big": 1e21, "tiny": 1e-7}),
    )
    assert serialize_evaluation_report(value) == (
        '{"candidateId":"cand","runs":['
        '{"taskId":"task-a","runId":"run-000001","candidateId":"cand","verdict":"pass",'
        '"publicMetrics":{"alpha":1,"zeta":0.5},"durationMs":0,"errorCode":null},'
        '{"taskId":"task-a","runId":"run-000002","candidateId":"cand","verdict":"error",'
        '"publicMetrics":{},"durationMs":12.25,"errorCode":"TOOL:LIMIT"},'
        '{"taskId":"task-b","runId":"run-000003","candidateId":"cand","verdict":"fail",'
        '"publicMetrics":{"big":1e+21,"tiny":1e-7},"durationMs":0,"errorCode":null}],'
        '"publicMetrics":{"totalRuns":3,"passedRuns":1,"failedRuns":1,"errorRuns":1,'
        '"passRate":0.3333333333333333,"failRate":0.3333333333333333,'
        '"errorRate":0.3333333333333333}}'
    )


def test_serialization_never_uses_hooks_and_ignores_extra_state() -> None:
    class Hooked(dict[str, float]):
        def __json__(self) -> str:
            return "hooked"

    plain = report(run(metrics={"m": 2}))
    assert '"publicMetrics":{"m":2}' in serialize_evaluation_report(plain)
    invalid(serialize_evaluation_report, report(run(metrics=Hooked(m=2))))


def test_negative_zero_and_integers_print_like_javascript() -> None:
    text = serialize_evaluation_report(report(run(metrics={"z": -0.0, "n": 3}, duration=-0.0)))
    assert '"publicMetrics":{"n":3,"z":0},"durationMs":0' in text


class ExplodingMapping(Mapping[str, float]):
    def __getitem__(self, key: str) -> float:
        raise RuntimeError("boom")

    def __iter__(self) -> Iterator[str]:
        raise RuntimeError("boom")

    def __len__(self) -> int:
        return 1


class ExplodingProxyTarget(dict[str, float]):
    def items(self) -> Any:
        raise RuntimeError("boom")


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ("not a report", "the report must be an EvaluationReport"),
        (report(candidate_id="Bad ID"), "candidateId must match the ID pattern"),
        (
            EvaluationReport(
                candidate_id="cand",
                runs=(),
                public_metrics=EvaluationAggregateMetrics(
                    total_runs=0,
                    passed_runs=0,
                    failed_runs=0,
                    error_runs=0,
                    pass_rate=0,
                    fail_rate=0,
                    error_rate=0,
                ),
            ),
            "runs must hold 1 to 4096 runs",
        ),
        (report(*(run(f"run-{i:06d}") for i in range(4_097))), "runs must hold 1 to 4096 runs"),
        (report(run(task_id="")), "runs[0].taskId must match the ID pattern"),
        (report(run(run_id="RUN")), "runs[0].runId must match the ID pattern"),
        (report(run(candidate_id="other")), "runs[0].candidateId must equal"),
        (report(run(verdict="maybe")), "runs[0].verdict must be pass, fail or error"),  # type: ignore[arg-type]
        (report(run(metrics=[("a", 1)])), "runs[0].publicMetrics must be an object"),
        (report(run(metrics=ExplodingMapping())), "runs[0].publicMetrics must be an object"),
        (
            report(run(metrics=MappingProxyType(ExplodingProxyTarget(a=1)))),
            "runs[0].publicMetrics could not be read",
        ),
        (report(run(metrics={"9": 1})), "invalid metric name"),
        (report(run(metrics={1: 1})), "invalid metric name"),
        (report(run(metrics={"a": "1"})), "runs[0].publicMetrics.a must be a number"),
        (report(run(metrics={"a": math.inf})), "runs[0].publicMetrics.a must be finite"),
        (report(run(metrics={"a": 10**400})), "runs[0].publicMetrics.a must be finite"),
        (report(run(metrics={f"m{i}": 1 for i in range(129)})), "more than 128 metrics"),
        (report(run(duration=-1)), "runs[0].durationMs must not be negative"),
        (report(run(duration=math.nan)), "runs[0].durationMs must be finite"),
        (report(run(duration=None)), "runs[0].durationMs must be a number"),
        (report(run(code="lower")), "errorCode must be null or match"),
        (report(run(code=5)), "errorCode must be null or match"),
        (report(run(code="E")), "errorCode must be set exactly when the verdict is error"),
        (report(run(verdict="error", code=None)), "errorCode must be set exactly"),
        (report(run("run-000001"), run("run-000001")), "duplicate run task-a/run-000001"),
        (report(run("run-000001"), run("run-000001", task_id="task-b")), "duplicate runId"),
        (
            dataclasses.replace(report(), runs=[run()]),
            None,
        ),
        (dataclasses.replace(report(), runs="runs"), "runs must be a list"),
        (dataclasses.replace(report(), runs=("x",)), "runs[0] must be an EvaluationRunReport"),
        (dataclasses.replace(report(), public_metrics=None), "publicMetrics must be"),
        (
            dataclasses.replace(
                report(),
                public_metrics=dataclasses.replace(aggregate_metrics((run(),)), pass_rate=0.5),
            ),
            "publicMetrics.passRate does not match the runs",
        ),
        (
            dataclasses.replace(
                report(),
                public_metrics=dataclasses.replace(aggregate_metrics((run(),)), total_runs=1.5),
            ),
            "publicMetrics.totalRuns must be an integer",
        ),
        (
            dataclasses.replace(
                report(),
                public_metrics=dataclasses.replace(aggregate_metrics((run(),)), error_runs=True),
            ),
            "publicMetrics.errorRuns must be a number",
        ),
    ],
)
def test_report_validation(value: object, fragment: str | None) -> None:
    if fragment is None:  # a list of runs is accepted and normalized to a tuple
        captured = capture_report(value)
        assert type(captured.runs) is tuple
        return
    message = invalid(serialize_evaluation_report, value)
    assert fragment in message


def test_capture_normalizes_metrics_and_numbers() -> None:
    captured = capture_report(report(run(metrics={"b": 2, "a": 1}, duration=3)))
    metrics = captured.runs[0].public_metrics
    assert type(metrics) is PublicMetrics
    assert list(metrics) == ["a", "b"]
    assert type(captured.runs[0].duration_ms) is float
    assert captured == report(run(metrics={"a": 1.0, "b": 2.0}, duration=3.0))


def test_public_metrics_is_an_immutable_picklable_mapping() -> None:
    import pickle

    metrics = PublicMetrics({"b": 1.0, "a": 2.0})
    assert list(metrics) == ["a", "b"]
    assert len(metrics) == 2
    assert metrics["a"] == 2.0
    assert metrics == {"a": 2.0, "b": 1.0}
    assert metrics != {"a": 2.0}
    assert metrics != [("a", 2.0)]
    assert hash(metrics) == hash(PublicMetrics({"a": 2.0, "b": 1.0}))
    assert pickle.loads(pickle.dumps(metrics)) == metrics
    assert repr(metrics) == "PublicMetrics({'a': 2.0, 'b': 1.0})"
    with pytest.raises(AttributeError):
        metrics.extra = 1


# -- Parsing ------------------------------------------------------------------------------------


def test_parse_reads_serialized_text_back() -> None:
    value = report(run(metrics={"m": 0.25}), run("run-000002", "error", code="X", duration=5.5))
    text = serialize_evaluation_report(value)
    parsed = parse_evaluation_report(text)
    assert parsed == capture_report(value)
    assert serialize_evaluation_report(parsed) == text


def test_parse_ignores_extra_fields_and_whitespace() -> None:
    data = json.loads(serialize_evaluation_report(report()))
    data["extra"] = {"prompt": "secret"}
    data["runs"][0]["transcript"] = ["secret"]
    parsed = parse_evaluation_report(json.dumps(data, indent=2))
    assert serialize_evaluation_report(parsed) == serialize_evaluation_report(report())


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        (b"{}", "the report text must be a string"),
        ("", "not valid JSON"),
        ("{", "not valid JSON"),
        ("[" * 100_000, "not valid JSON"),
        ("[]", "report must be an object"),
        ("{}", "report.candidateId is missing"),
        ('{"candidateId":"c","runs":{},"publicMetrics":{}}', "runs must be a list"),
        ('{"candidateId":"c","runs":[5],"publicMetrics":{}}', "runs[0] must be an object"),
        ('{"candidateId":"c","runs":[{}],"publicMetrics":{}}', "runs[0].taskId is missing"),
        ('{"candidateId":"c","candidateId":"c"}', "duplicate key 'candidateId'"),
        ('{"a":NaN}', "NaN is not JSON"),
        ('{"a":-Infinity}', "-Infinity is not JSON"),
    ],
)
def test_parse_rejects_bad_text(text: object, fragment: str) -> None:
    message = invalid(parse_evaluation_report, text)
    assert fragment in message


def test_parse_rejects_semantic_problems_and_huge_numbers() -> None:
    data = json.loads(serialize_evaluation_report(report()))
    data["publicMetrics"]["passRate"] = 0
    assert "passRate does not match" in invalid(parse_evaluation_report, json.dumps(data))
    data = json.loads(serialize_evaluation_report(report()))
    text = json.dumps(data).replace('"durationMs": 0', '"durationMs": 1e400')
    assert "durationMs must be finite" in invalid(parse_evaluation_report, text)
    text = json.dumps(data).replace('"durationMs": 0', '"durationMs": ' + "9" * 400)
    assert "durationMs must be finite" in invalid(parse_evaluation_report, text)
    data["runs"][0]["publicMetrics"] = []
    assert "publicMetrics must be an object" in invalid(parse_evaluation_report, json.dumps(data))


# -- Comparison ---------------------------------------------------------------------------------


def test_compare_aligns_runs_in_baseline_order() -> None:
    baseline = report(
        run("run-000001", "pass"),
        run("run-000002", "fail"),
        run("run-000003", "error"),
        run("run-000004", "fail", task_id="task-b"),
    )
    candidate = report(
        run("run-000004", "pass", task_id="task-b", duration=99, candidate_id="new"),
        run("run-000003", "fail", candidate_id="new"),
        run("run-000002", "error", candidate_id="new"),
        run("run-000001", "pass", candidate_id="new"),
        candidate_id="new",
    )
    assert compare_evaluations(baseline, candidate) == EvaluationComparison(
        baseline_candidate_id="cand",
        candidate_candidate_id="new",
        runs=(
            EvaluationComparisonRun(
                task_id="task-a", run_id="run-000001", baseline_verdict="pass",
                candidate_verdict="pass", outcome="unchanged",
            ),
            EvaluationComparisonRun(
                task_id="task-a", run_id="run-000002", baseline_verdict="fail",
                candidate_verdict="error", outcome="regressed",
            ),
            EvaluationComparisonRun(
                task_id="task-a", run_id="run-000003", baseline_verdict="error",
                candidate_verdict="fail", outcome="improved",
            ),
            EvaluationComparisonRun(
                task_id="task-b", run_id="run-000004", baseline_verdict="fail",
                candidate_verdict="pass", outcome="improved",
            ),
        ),
        public_metrics=EvaluationComparisonMetrics(
            pass_rate_delta=0.25,
            fail_rate_delta=-0.25,
            error_rate_delta=0.0,
            improved_runs=2,
            regressed_runs=1,
            unchanged_runs=1,
        ),
    )  # fmt: skip


def test_compare_rejects_invalid_or_misaligned_reports() -> None:
    good = report()
    bad = dataclasses.replace(good, candidate_id="Bad")
    invalid(compare_evaluations, bad, good)
    invalid(compare_evaluations, good, bad)
    two = report(run("run-000001"), run("run-000002"))
    assert "different numbers of runs" in invalid(compare_evaluations, good, two)
    other = report(run("run-000001", task_id="task-z"))
    assert "run task-a/run-000001 is missing" in invalid(compare_evaluations, good, other)


# -- Properties ---------------------------------------------------------------------------------

metric_names = st.from_regex(r"[A-Za-z][A-Za-z0-9_.-]{0,10}", fullmatch=True)
finite = st.floats(allow_nan=False, allow_infinity=False)


@st.composite
def reports(draw: st.DrawFn) -> EvaluationReport:
    candidate_id = draw(st.from_regex(r"[a-z0-9][a-z0-9._-]{0,12}", fullmatch=True))
    count = draw(st.integers(1, 8))
    runs: list[EvaluationRunReport] = []
    for index in range(count):
        verdict: EvaluationVerdict = draw(st.sampled_from(["pass", "fail", "error"]))
        runs.append(
            EvaluationRunReport(
                task_id=draw(st.sampled_from(["task-a", "task-b", "t.c"])),
                run_id=f"run-{index + 1:06d}",
                candidate_id=candidate_id,
                verdict=verdict,
                public_metrics=PublicMetrics(
                    draw(st.dictionaries(metric_names, finite, max_size=5))
                ),
                duration_ms=abs(draw(finite)),
                error_code=draw(st.from_regex(r"[A-Z][A-Z0-9_:-]{0,8}", fullmatch=True))
                if verdict == "error"
                else None,
            )
        )
    frozen = tuple(runs)
    return EvaluationReport(
        candidate_id=candidate_id, runs=frozen, public_metrics=aggregate_metrics(frozen)
    )


@settings(max_examples=examples(200))
@given(reports())
def test_parse_and_serialize_are_inverse(value: EvaluationReport) -> None:
    text = serialize_evaluation_report(value)
    assert text.isascii()
    assert " " not in text
    parsed = parse_evaluation_report(text)
    assert parsed == value
    assert serialize_evaluation_report(parsed) == text
    assert json.loads(text)["publicMetrics"]["totalRuns"] == len(value.runs)


@settings(max_examples=examples(100))
@given(reports())
def test_a_report_compared_with_itself_is_unchanged(value: EvaluationReport) -> None:
    comparison = compare_evaluations(value, value)
    assert comparison.public_metrics.unchanged_runs == len(value.runs)
    assert comparison.public_metrics.pass_rate_delta == 0


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=10,
)


@st.composite
def tampered(draw: st.DrawFn) -> str:
    data = json.loads(serialize_evaluation_report(draw(reports())))
    target = draw(st.sampled_from(["top", "run", "aggregate"]))
    if target == "top":
        holder = data
    elif target == "run":
        holder = draw(st.sampled_from(data["runs"]))
    else:
        holder = data["publicMetrics"]
    key = draw(st.sampled_from(sorted(holder)))
    holder[key] = draw(json_values)
    return json.dumps(data)


@settings(max_examples=examples(200))
@given(st.one_of(tampered(), st.text(max_size=30)))
def test_parse_accepts_only_valid_reports(text: str) -> None:
    try:
        parsed = parse_evaluation_report(text)
    except EvaluationInfrastructureError as error:
        code = error.code
        assert code == "EVALUATION_INVALID_REPORT"
        return
    again = serialize_evaluation_report(parsed)
    assert parse_evaluation_report(again) == parsed


@settings(max_examples=examples(100))
@given(reports(), st.data())
def test_validation_rejects_any_tampered_run(value: EvaluationReport, data: st.DataObject) -> None:
    index = data.draw(st.integers(0, len(value.runs) - 1))
    field = data.draw(
        st.sampled_from(
            ["task_id", "run_id", "candidate_id", "verdict", "duration_ms", "error_code"]
        )
    )
    replacement = data.draw(st.sampled_from([None, "", "X Y", -1.0, math.nan, 3]))
    tampered_run = dataclasses.replace(value.runs[index], **{field: replacement})
    runs = (*value.runs[:index], tampered_run, *value.runs[index + 1 :])
    changed = dataclasses.replace(value, runs=runs)
    try:
        captured = capture_report(changed)
    except EvaluationInfrastructureError as error:
        code = error.code
        assert code == "EVALUATION_INVALID_REPORT"
        return
    # only a replacement that is itself valid survives (e.g. no error code on a non-error run)
    assert captured.runs[index] == dataclasses.replace(
        tampered_run, duration_ms=float(tampered_run.duration_ms)
    )
