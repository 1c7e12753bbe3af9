"""Snapshotting what a run produced: the runtime's output, its evidence and metrics, the
judge's verdict, and the clock's readings, each validated (``ValueError`` or a ``Step``)."""

from __future__ import annotations

import math
from typing import Any, Final, Literal, cast

from tether._async.race import neutralize
from tether._base.dataclass import dataclass
from tether._base.exact_types import is_array
from tether._base.strings import is_non_empty
from tether.evals.report import capture_metrics
from tether.evals.runner._steps import MISSING, Step
from tether.evals.tasks import utf16_units
from tether.evals.types import (
    ERROR_CODE_PATTERN,
    MAX_EVIDENCE_ITEM_CODE_POINTS,
    MAX_EVIDENCE_ITEM_UTF16_UNITS,
    MAX_EVIDENCE_ITEMS,
    MAX_REPORT_METRICS,
    MAX_SOURCE_METRICS,
    MAX_TASK_EVIDENCE_CODE_POINTS,
    EvaluationClock,
    EvaluationCompleted,
    EvaluationFailed,
    EvaluationWorkTask,
    JudgeOutput,
    PublicMetrics,
)

_FAILED_CODE: Final = "TASK_FAILED"


def _evidence(value: object, budget: int) -> tuple[tuple[str, ...], int]:
    """Validate produced evidence (0-32 items, per-item limits); returns it and the budget
    left. Raises ``ValueError``."""
    if not is_array(value):
        raise ValueError("publicEvidence must be a list")
    items: tuple[object, ...] | list[object] = value
    if len(items) > MAX_EVIDENCE_ITEMS:
        raise ValueError(f"publicEvidence holds more than {MAX_EVIDENCE_ITEMS} items")
    checked: list[str] = []
    for item in items:
        if not is_non_empty(item):
            raise ValueError("evidence items must be non-empty strings")
        if len(item) > MAX_EVIDENCE_ITEM_CODE_POINTS or (
            utf16_units(item) > MAX_EVIDENCE_ITEM_UTF16_UNITS
        ):
            raise ValueError("an evidence item is too long")
        budget -= len(item)
        if budget < 0:
            raise ValueError("the task's evidence budget is exceeded")
        checked.append(item)
    return tuple(checked), budget


def _source_metrics(value: object) -> PublicMetrics:
    if value is None or value is MISSING:
        return PublicMetrics()
    return capture_metrics(value, "publicMetrics", MAX_SOURCE_METRICS)


@dataclass(frozen=True, slots=True, kw_only=True)
class Output:
    status: Literal["completed", "failed"]
    evidence: tuple[str, ...]
    error_code: str | None
    metrics: PublicMetrics


def capture_output(value: object, task: EvaluationWorkTask) -> Output:
    """Snapshot a runtime's output (a dataclass or an exact dict of the JSON shape)."""
    if type(value) is EvaluationCompleted:
        status: object = value.status
        evidence: object = value.public_evidence
        code: object = None
        metrics: object = value.public_metrics
    elif type(value) is EvaluationFailed:
        status, evidence, code, metrics = value.status, (), value.error_code, value.public_metrics
    elif type(value) is dict:
        source = cast("dict[Any, Any]", value)
        status = source.get("status")
        evidence = source.get("publicEvidence", MISSING)
        code = source.get("errorCode")
        metrics = source.get("publicMetrics")
    else:
        raise ValueError("the output must be EvaluationCompleted, EvaluationFailed or a dict")
    if status == "completed" and type(status) is str:
        budget = MAX_TASK_EVIDENCE_CODE_POINTS - sum(
            map(len, task.expected_public_evidence.includes)
        )
        produced, _ = _evidence(evidence, budget)
        return Output(
            status="completed", evidence=produced, error_code=None, metrics=_source_metrics(metrics)
        )
    if status == "failed" and type(status) is str:
        kept = code if type(code) is str and ERROR_CODE_PATTERN.fullmatch(code) else _FAILED_CODE
        return Output(
            status="failed", evidence=(), error_code=kept, metrics=_source_metrics(metrics)
        )
    raise ValueError('the output status must be "completed" or "failed"')


def capture_judgement(value: object) -> tuple[Literal["pass", "fail"], PublicMetrics]:
    if type(value) is JudgeOutput:
        verdict: object = value.verdict
        metrics: object = value.public_metrics
    elif type(value) is dict:
        source = cast("dict[Any, Any]", value)
        verdict = source.get("verdict")
        metrics = source.get("publicMetrics")
    else:
        raise ValueError("the judgement must be a JudgeOutput or a dict")
    if type(verdict) is not str or verdict not in ("pass", "fail"):
        raise ValueError('the verdict must be "pass" or "fail"')
    return ("pass" if verdict == "pass" else "fail"), _source_metrics(metrics)


def merge_metrics(runtime: PublicMetrics, judge: PublicMetrics) -> PublicMetrics:
    if any(name in runtime for name in judge):
        raise ValueError("runtime and judge metrics share a name")
    if len(runtime) + len(judge) > MAX_REPORT_METRICS:  # pragma: no cover - 64 + 64 fit
        raise ValueError(f"more than {MAX_REPORT_METRICS} metrics")
    return PublicMetrics({**runtime, **judge})


def read_time(clock: object) -> float:
    try:
        value: object = cast("EvaluationClock", clock).now()
    except Exception as error:
        raise Step("EVALUATION_CLOCK_FAILED", "the clock failed") from error
    if type(value) is not int and type(value) is not float:
        neutralize(value)
        raise Step("EVALUATION_CLOCK_FAILED", "the clock must return a number")
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number):
        raise Step("EVALUATION_CLOCK_FAILED", "the clock must return a finite number")
    return number
