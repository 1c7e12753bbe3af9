"""Evaluation reports: validation, the canonical JSON text, parsing it back, and comparison.

``serialize_evaluation_report`` validates the report, then writes JSON by hand in one fixed
key order with no whitespace (never ``json.dumps`` and never a ``__json__`` / ``to_json``
hook), numbers as JavaScript prints them, strings with the workshop's escaping. So two equal
reports always give the same bytes, and a report only ever carries IDs, verdicts, error codes,
metric names and numbers: prompts, evidence, transcripts and file contents cannot appear.

``parse_evaluation_report`` reads that text back (``tether eval --compare BASELINE.json``)
and validates it the same way: ``parse(serialize(r)) == r`` and ``serialize(parse(s)) == s``.
Anything wrong, in any of these functions, raises ``EVALUATION_INVALID_REPORT``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any, Final, NoReturn, TypeGuard, cast

from tether.evals.errors import EvaluationInfrastructureError
from tether.evals.types import (
    ERROR_CODE_PATTERN,
    ID_PATTERN,
    MAX_EVALUATION_RUNS,
    MAX_REPORT_METRICS,
    METRIC_NAME_PATTERN,
    ComparisonOutcome,
    EvaluationAggregateMetrics,
    EvaluationComparison,
    EvaluationComparisonMetrics,
    EvaluationComparisonRun,
    EvaluationReport,
    EvaluationRunReport,
    EvaluationVerdict,
    PublicMetrics,
)
from tether.jsonvalue import js_number_text, loads_strict

__all__ = [
    "aggregate_metrics",
    "capture_metrics",
    "capture_report",
    "compare_evaluations",
    "parse_evaluation_report",
    "quote_json_string",
    "serialize_evaluation_report",
]

_VERDICTS: Final = ("pass", "fail", "error")
_RANK: Final[Mapping[str, int]] = MappingProxyType({"error": 0, "fail": 1, "pass": 2})


class _Invalid(Exception):
    """A validation problem; turned into ``EVALUATION_INVALID_REPORT`` at the boundary."""


def _invalid(message: str) -> NoReturn:
    raise _Invalid(message)


def _report_error(detail: str) -> EvaluationInfrastructureError:
    return EvaluationInfrastructureError(
        "EVALUATION_INVALID_REPORT", f"Invalid evaluation report: {detail}"
    )


# -- Numbers and strings ------------------------------------------------------------------------


_SHORT_ESCAPES: Final = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\f": "\\f",
    "\r": "\\r",
}


def quote_json_string(text: str) -> str:
    """``text`` as a JSON string literal: ``"`` and ``\\`` escaped, ``\\b \\t \\n \\f \\r``,
    other controls below U+0020, every UTF-16 surrogate code unit (an astral character is two
    of them; a lone surrogate is one) and U+2028 / U+2029 as lowercase ``\\uXXXX``."""
    parts: list[str] = ['"']
    for char in text:
        point = ord(char)
        if 0x20 <= point < 0x7F and char not in '"\\':
            parts.append(char)
        elif char in _SHORT_ESCAPES:
            parts.append(_SHORT_ESCAPES[char])
        elif point < 0x20 or 0xD800 <= point <= 0xDFFF or point in (0x2028, 0x2029):
            parts.append(f"\\u{point:04x}")
        elif point > 0xFFFF:
            high = 0xD800 + ((point - 0x10000) >> 10)
            low = 0xDC00 + ((point - 0x10000) & 0x3FF)
            parts.append(f"\\u{high:04x}\\u{low:04x}")
        else:
            parts.append(char)
    parts.append('"')
    return "".join(parts)


# -- Validation ---------------------------------------------------------------------------------


def _number(value: object, where: str) -> float:
    if type(value) is not int and type(value) is not float:
        _invalid(f"{where} must be a number")
    try:
        number = float(cast("float", value))
    except OverflowError:
        _invalid(f"{where} must be finite")
    if not math.isfinite(number):
        _invalid(f"{where} must be finite")
    return number


def _count(value: object, where: str) -> int:
    number = _number(value, where)
    if not number.is_integer():
        _invalid(f"{where} must be an integer")
    return int(number)


def _identifier(value: object, where: str) -> str:
    if type(value) is not str or ID_PATTERN.fullmatch(value) is None:
        _invalid(f"{where} must match the ID pattern")
    return value


def _is_plain_mapping(value: object) -> TypeGuard[Mapping[Any, Any]]:
    """Whether ``value``'s real class is exactly ``dict`` or ``MappingProxyType``."""
    return type(value) is dict or type(value) is MappingProxyType


def capture_metrics(value: object, where: str, limit: int) -> PublicMetrics:
    """Validate a metrics mapping (exact ``dict``, ``MappingProxyType`` or ``PublicMetrics``;
    at most ``limit`` entries; pattern names; finite numbers) into ``PublicMetrics``.

    Raises ``ValueError`` naming the problem; a mapping whose reads fail is invalid too.
    """
    if type(value) is PublicMetrics:
        source: Mapping[Any, Any] = value
    elif _is_plain_mapping(value):
        source = value
    else:
        raise ValueError(f"{where} must be an object")
    try:
        items = list(source.items())
    except Exception:
        raise ValueError(f"{where} could not be read") from None
    if len(items) > limit:
        raise ValueError(f"{where} holds more than {limit} metrics")
    result: dict[str, float] = {}
    for name, metric in items:
        if type(name) is not str or METRIC_NAME_PATTERN.fullmatch(name) is None:
            raise ValueError(f"{where} has an invalid metric name")
        try:
            result[name] = _number(metric, f"{where}.{name}")
        except _Invalid as problem:
            raise ValueError(str(problem)) from None
    return PublicMetrics(result)


def aggregate_metrics(runs: tuple[EvaluationRunReport, ...]) -> EvaluationAggregateMetrics:
    """Counts and rates of ``runs`` (which must not be empty)."""
    total = len(runs)
    passed = sum(1 for run in runs if run.verdict == "pass")
    failed = sum(1 for run in runs if run.verdict == "fail")
    errors = total - passed - failed
    return EvaluationAggregateMetrics(
        total_runs=total,
        passed_runs=passed,
        failed_runs=failed,
        error_runs=errors,
        pass_rate=passed / total,
        fail_rate=failed / total,
        error_rate=errors / total,
    )


def _run(value: object, index: int, candidate_id: str) -> EvaluationRunReport:
    where = f"runs[{index}]"
    if type(value) is not EvaluationRunReport:
        _invalid(f"{where} must be an EvaluationRunReport")
    task_id = _identifier(value.task_id, f"{where}.taskId")
    run_id = _identifier(value.run_id, f"{where}.runId")
    if _identifier(value.candidate_id, f"{where}.candidateId") != candidate_id:
        _invalid(f"{where}.candidateId must equal the report's candidateId")
    verdict = value.verdict
    if type(verdict) is not str or verdict not in _VERDICTS:
        _invalid(f"{where}.verdict must be pass, fail or error")
    try:
        metrics = capture_metrics(
            value.public_metrics, f"{where}.publicMetrics", MAX_REPORT_METRICS
        )
    except ValueError as problem:
        _invalid(str(problem))
    duration = _number(value.duration_ms, f"{where}.durationMs")
    if duration < 0:
        _invalid(f"{where}.durationMs must not be negative")
    code = value.error_code
    if code is not None and (type(code) is not str or ERROR_CODE_PATTERN.fullmatch(code) is None):
        _invalid(f"{where}.errorCode must be null or match the error-code pattern")
    if (verdict == "error") != (code is not None):
        _invalid(f"{where}.errorCode must be set exactly when the verdict is error")
    checked = cast("EvaluationVerdict", verdict)
    return EvaluationRunReport(
        task_id=task_id,
        run_id=run_id,
        candidate_id=candidate_id,
        verdict=checked,
        public_metrics=metrics,
        duration_ms=duration,
        error_code=code,
    )


def _capture(report: object) -> EvaluationReport:
    if type(report) is not EvaluationReport:
        _invalid("the report must be an EvaluationReport")
    candidate_id = _identifier(report.candidate_id, "candidateId")
    runs_value = cast("object", report.runs)
    if type(runs_value) is not tuple and type(runs_value) is not list:
        _invalid("runs must be a list")
    entries = cast("Sequence[object]", runs_value)
    if not 1 <= len(entries) <= MAX_EVALUATION_RUNS:
        _invalid(f"runs must hold 1 to {MAX_EVALUATION_RUNS} runs")
    runs = tuple(_run(entry, index, candidate_id) for index, entry in enumerate(entries))
    identities: set[tuple[str, str]] = set()
    run_ids: set[str] = set()
    for run in runs:
        if (run.task_id, run.run_id) in identities:
            _invalid(f"duplicate run {run.task_id}/{run.run_id}")
        if run.run_id in run_ids:
            _invalid(f"duplicate runId {run.run_id}")
        identities.add((run.task_id, run.run_id))
        run_ids.add(run.run_id)
    expected = aggregate_metrics(runs)
    supplied = report.public_metrics
    if type(supplied) is not EvaluationAggregateMetrics:
        _invalid("publicMetrics must be EvaluationAggregateMetrics")
    for name, kind in _AGGREGATE_FIELDS:
        value = getattr(supplied, name)
        number = (
            _count(value, f"publicMetrics.{kind}")
            if name.endswith("runs")
            else _number(value, f"publicMetrics.{kind}")
        )
        if number != getattr(expected, name):
            _invalid(f"publicMetrics.{kind} does not match the runs")
    return EvaluationReport(candidate_id=candidate_id, runs=runs, public_metrics=expected)


_AGGREGATE_FIELDS: Final = (
    ("total_runs", "totalRuns"),
    ("passed_runs", "passedRuns"),
    ("failed_runs", "failedRuns"),
    ("error_runs", "errorRuns"),
    ("pass_rate", "passRate"),
    ("fail_rate", "failRate"),
    ("error_rate", "errorRate"),
)


def capture_report(report: object) -> EvaluationReport:
    """Validate ``report`` (see the module docstring) into a fresh, normalized report.

    Raises ``EvaluationInfrastructureError("EVALUATION_INVALID_REPORT")``.
    """
    try:
        return _capture(report)
    except _Invalid as problem:
        raise _report_error(str(problem)) from None


# -- Serializing and parsing --------------------------------------------------------------------


def _metrics_text(metrics: Mapping[str, float]) -> str:
    return (
        "{"
        + ",".join(
            f"{quote_json_string(name)}:{js_number_text(metrics[name])}" for name in sorted(metrics)
        )
        + "}"
    )


def _run_text(run: EvaluationRunReport) -> str:
    code = "null" if run.error_code is None else quote_json_string(run.error_code)
    return (
        f'{{"taskId":{quote_json_string(run.task_id)},'
        f'"runId":{quote_json_string(run.run_id)},'
        f'"candidateId":{quote_json_string(run.candidate_id)},'
        f'"verdict":{quote_json_string(run.verdict)},'
        f'"publicMetrics":{_metrics_text(run.public_metrics)},'
        f'"durationMs":{js_number_text(run.duration_ms)},'
        f'"errorCode":{code}}}'
    )


def serialize_evaluation_report(report: EvaluationReport) -> str:
    """The canonical JSON text of ``report`` (validated first; see the module docstring)."""
    checked = capture_report(report)
    aggregate = checked.public_metrics
    numbers = ",".join(
        f'"{kind}":{js_number_text(getattr(aggregate, name))}' for name, kind in _AGGREGATE_FIELDS
    )
    return (
        f'{{"candidateId":{quote_json_string(checked.candidate_id)},'
        f'"runs":[{",".join(_run_text(run) for run in checked.runs)}],'
        f'"publicMetrics":{{{numbers}}}}}'
    )


def _field(source: object, key: str, where: str) -> Any:
    if type(source) is not dict:
        _invalid(f"{where} must be an object")
    mapping = cast("dict[str, Any]", source)
    if key not in mapping:
        _invalid(f"{where}.{key} is missing")
    return mapping[key]


def _parse(text: object) -> EvaluationReport:
    if type(text) is not str:
        _invalid("the report text must be a string")
    try:
        data = loads_strict(text, unique_keys=True)
    except ValueError as error:  # not JSON, a constant, a repeated key, nesting too deep
        _invalid(f"the text is not valid JSON ({error})")
    candidate_id = _field(data, "candidateId", "report")
    runs_value = _field(data, "runs", "report")
    if type(runs_value) is not list:
        _invalid("runs must be a list")
    runs: list[EvaluationRunReport] = []
    entries = cast("list[object]", runs_value)
    for index, entry in enumerate(entries):
        where = f"runs[{index}]"
        runs.append(
            EvaluationRunReport(
                task_id=_field(entry, "taskId", where),
                run_id=_field(entry, "runId", where),
                candidate_id=_field(entry, "candidateId", where),
                verdict=_field(entry, "verdict", where),
                public_metrics=_field(entry, "publicMetrics", where),
                duration_ms=_field(entry, "durationMs", where),
                error_code=_field(entry, "errorCode", where),
            )
        )
    aggregate = _field(data, "publicMetrics", "report")
    metrics = EvaluationAggregateMetrics(
        **{name: _field(aggregate, kind, "publicMetrics") for name, kind in _AGGREGATE_FIELDS}
    )
    return _capture(
        EvaluationReport(candidate_id=candidate_id, runs=tuple(runs), public_metrics=metrics)
    )


def parse_evaluation_report(text: str) -> EvaluationReport:
    """Read a report's JSON text back into a validated report (duplicate keys, ``NaN`` and
    other non-JSON are invalid; extra fields are ignored).

    Raises ``EvaluationInfrastructureError("EVALUATION_INVALID_REPORT")``.
    """
    try:
        return _parse(text)
    except _Invalid as problem:
        raise _report_error(str(problem)) from None


# -- Comparing ----------------------------------------------------------------------------------


def _outcome(baseline: EvaluationVerdict, candidate: EvaluationVerdict) -> ComparisonOutcome:
    before, after = _RANK[baseline], _RANK[candidate]
    if after > before:
        return "improved"
    if after < before:
        return "regressed"
    return "unchanged"


def compare_evaluations(
    baseline: EvaluationReport, candidate: EvaluationReport
) -> EvaluationComparison:
    """Align two reports run by run (by task ID and run ID, in baseline order) and compare
    their verdicts (``error`` < ``fail`` < ``pass``) and rates (candidate - baseline).

    Raises ``EVALUATION_INVALID_REPORT`` if a report is invalid, the run counts differ or a
    baseline run has no counterpart.
    """
    before = capture_report(baseline)
    after = capture_report(candidate)
    if len(before.runs) != len(after.runs):
        raise _report_error("the reports have different numbers of runs")
    index = {(run.task_id, run.run_id): run for run in after.runs}
    rows: list[EvaluationComparisonRun] = []
    for run in before.runs:
        counterpart = index.get((run.task_id, run.run_id))
        if counterpart is None:
            raise _report_error(f"run {run.task_id}/{run.run_id} is missing from the candidate")
        rows.append(
            EvaluationComparisonRun(
                task_id=run.task_id,
                run_id=run.run_id,
                baseline_verdict=run.verdict,
                candidate_verdict=counterpart.verdict,
                outcome=_outcome(run.verdict, counterpart.verdict),
            )
        )
    old, new = before.public_metrics, after.public_metrics
    return EvaluationComparison(
        baseline_candidate_id=before.candidate_id,
        candidate_candidate_id=after.candidate_id,
        runs=tuple(rows),
        public_metrics=EvaluationComparisonMetrics(
            pass_rate_delta=new.pass_rate - old.pass_rate,
            fail_rate_delta=new.fail_rate - old.fail_rate,
            error_rate_delta=new.error_rate - old.error_rate,
            improved_runs=sum(1 for row in rows if row.outcome == "improved"),
            regressed_runs=sum(1 for row in rows if row.outcome == "regressed"),
            unchanged_runs=sum(1 for row in rows if row.outcome == "unchanged"),
        ),
    )
