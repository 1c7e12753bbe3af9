"""The values and seams of an evaluation (checkpoint 14): tasks, candidates, judges, reports.

Every value is a frozen, slotted, keyword-only dataclass with snake_case fields; the JSON forms
(fixture files, serialized reports) keep the workshop's camelCase keys. Collections are tuples
and metrics are ``PublicMetrics``, an immutable, key-sorted, picklable mapping (a report or a
run report travels back from a Ray worker, so everything here pickles).

A candidate's runtime is handed only ``EvaluationRuntimeInput`` (the prompt and a signal); a
judge only ``JudgeInput`` (public evidence on both sides). The fixture-only fields of a task
(``candidate_public_evidence``, ``expected_verdict``) stay with the driver: a run is given an
``EvaluationWorkTask`` (ID, prompt, required evidence), so they are never handed to a runtime
or a judge and never shipped to a Ray worker. That boundary is about what the evaluation
*hands* its parts, not a sandbox: a candidate runs as trusted code in the same interpreter as
its run (and, locally, as the driver), and code that walks the interpreter (frames, the task
list, the garbage collector) can reach whatever that process holds, the required evidence
its judge needs included. Run untrusted candidates in a separate process or machine.

Callables may answer synchronously or with an awaitable; outputs may be the dataclasses below
or exact ``dict`` values shaped like the workshop's JSON (``{"status": "completed",
"publicEvidence": [...], "publicMetrics": {...}}``, ``{"verdict": "pass"}``).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import field
from typing import Any, Final, Literal, Protocol, TypeAlias, cast

from tether._base.dataclass import dataclass
from tether.abort import AbortSignal

__all__ = [
    "ERROR_CODE_PATTERN",
    "ID_PATTERN",
    "MAX_CONCURRENCY",
    "MAX_EVALUATION_CLEANUP_MS",
    "MAX_EVALUATION_RUNS",
    "MAX_EVALUATION_TASKS",
    "MAX_EVIDENCE_ITEMS",
    "MAX_EVIDENCE_ITEM_CODE_POINTS",
    "MAX_EVIDENCE_ITEM_UTF16_UNITS",
    "MAX_OWNERSHIP_DEPTH",
    "MAX_PROMPT_UTF16_UNITS",
    "MAX_REPETITIONS",
    "MAX_REPORT_METRICS",
    "MAX_SOURCE_METRICS",
    "MAX_TASK_EVIDENCE_CODE_POINTS",
    "MAX_WORKSPACE_PATH_CODE_POINTS",
    "METRIC_NAME_PATTERN",
    "ComparisonOutcome",
    "EvaluationAggregateMetrics",
    "EvaluationCandidate",
    "EvaluationCleanupTimer",
    "EvaluationClock",
    "EvaluationComparison",
    "EvaluationComparisonMetrics",
    "EvaluationComparisonRun",
    "EvaluationCompleted",
    "EvaluationFailed",
    "EvaluationJudge",
    "EvaluationReport",
    "EvaluationRunReport",
    "EvaluationRuntime",
    "EvaluationRuntimeInput",
    "EvaluationRuntimeOutput",
    "EvaluationTask",
    "EvaluationVerdict",
    "EvaluationWorkTask",
    "EvaluationWorkspace",
    "EvaluationWorkspaceFactory",
    "ExpectedEvidence",
    "JudgeInput",
    "JudgeOutput",
    "JudgeVerdict",
    "PublicMetrics",
    "RuntimeFactoryInput",
    "WorkspaceFactoryInput",
]

# -- Limits (14.1) ------------------------------------------------------------------------------

MAX_EVALUATION_RUNS: Final = 4_096
"""Most runs (tasks x repetitions) one evaluation may have."""
MAX_EVIDENCE_ITEMS: Final = 32
"""Most evidence items on each side (required, and produced by a candidate)."""
MAX_SOURCE_METRICS: Final = 64
"""Most metrics a runtime output, and separately a judge output, may carry."""
MAX_REPORT_METRICS: Final = 128
"""Most metrics in one run report (runtime and judge metrics merged)."""
MAX_EVALUATION_CLEANUP_MS: Final = 1_000
"""Longest (and default) bound on one cleanup (``dispose`` / workspace ``cleanup``)."""
MAX_EVIDENCE_ITEM_CODE_POINTS: Final = 4_096
"""Longest evidence item, in code points."""
MAX_TASK_EVIDENCE_CODE_POINTS: Final = 65_536
"""Combined code points of a task's required and candidate evidence."""

# Internal limits (the workshop does not export them).
MAX_EVALUATION_TASKS: Final = 256
MAX_REPETITIONS: Final = 64
MAX_CONCURRENCY: Final = 8
MAX_PROMPT_UTF16_UNITS: Final = 100_000
MAX_EVIDENCE_ITEM_UTF16_UNITS: Final = 8_192
MAX_WORKSPACE_PATH_CODE_POINTS: Final = 4_096
MAX_OWNERSHIP_DEPTH: Final = 8
"""How many classes of a value's MRO are searched for ``cleanup`` / ``dispose``."""

ID_PATTERN: Final = re.compile(r"[a-z0-9](?:[a-z0-9._-]{0,63})")
"""Task, run and candidate IDs (matched with ``fullmatch``)."""
ERROR_CODE_PATTERN: Final = re.compile(r"[A-Z][A-Z0-9_:-]{0,63}")
"""Error codes of failed runs (``fullmatch``)."""
METRIC_NAME_PATTERN: Final = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,63}")
"""Metric names (``fullmatch``)."""

EvaluationVerdict: TypeAlias = Literal["pass", "fail", "error"]
JudgeVerdict: TypeAlias = Literal["pass", "fail"]
ComparisonOutcome: TypeAlias = Literal["improved", "regressed", "unchanged"]


class PublicMetrics(Mapping[str, float]):
    """An immutable ``str -> float`` mapping whose keys iterate in sorted order.

    Equal to any mapping with the same items; hashable; picklable. Built only from values
    that were already validated (names, finite numbers).
    """

    __slots__ = ("_items",)

    _items: dict[str, float]

    def __init__(self, items: Mapping[str, float] | None = None) -> None:
        source = {} if items is None else dict(items)
        object.__setattr__(self, "_items", {key: source[key] for key in sorted(source)})

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("PublicMetrics is immutable")

    def __getitem__(self, key: str) -> float:
        return self._items[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, PublicMetrics):
            return self._items == other._items
        if isinstance(other, Mapping):
            return self._items == dict(cast("Mapping[object, object]", other))  # isinstance above
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self._items.items()))

    def __repr__(self) -> str:
        return f"PublicMetrics({self._items!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (PublicMetrics, (self._items,))


_NO_METRICS: Final = PublicMetrics()


def _no_metrics() -> PublicMetrics:
    return _NO_METRICS


# -- Tasks --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ExpectedEvidence:
    """The public evidence a correct answer must contain (every item, matched exactly)."""

    includes: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class EvaluationTask:
    """One held-out task of a fixture (see ``load_evaluation_tasks``).

    ``candidate_public_evidence`` and ``expected_verdict`` are fixture-only: the offline
    fixture candidate answers with the former, tests check the latter; neither is ever part of
    a runtime's or a judge's input, nor of a work item (runs get ``EvaluationWorkTask``).
    """

    id: str
    split: Literal["held-out"]
    prompt: str
    expected_public_evidence: ExpectedEvidence
    candidate_public_evidence: tuple[str, ...]
    expected_verdict: JudgeVerdict


@dataclass(frozen=True, slots=True, kw_only=True)
class EvaluationWorkTask:
    """What one run needs of its task, and all a work item carries: the ID, the prompt (for
    the runtime) and the required evidence (for the judge, and the task's evidence budget).
    The fixture-only fields of ``EvaluationTask`` stay with the driver.
    """

    id: str
    prompt: str
    expected_public_evidence: ExpectedEvidence

    @classmethod
    def of(cls, task: EvaluationTask) -> EvaluationWorkTask:
        """The part of ``task`` a run needs."""
        return cls(
            id=task.id, prompt=task.prompt, expected_public_evidence=task.expected_public_evidence
        )


# -- Candidates and their runtimes --------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class EvaluationRuntimeInput:
    """The only data a candidate runtime sees for a task."""

    prompt: str
    signal: AbortSignal


@dataclass(frozen=True, slots=True, kw_only=True)
class EvaluationCompleted:
    """A runtime answered: the public evidence it produced, plus optional metrics."""

    status: Literal["completed"] = "completed"
    public_evidence: tuple[str, ...]
    public_metrics: Mapping[str, float] = field(default_factory=_no_metrics)


@dataclass(frozen=True, slots=True, kw_only=True)
class EvaluationFailed:
    """A runtime gave up on the task; the run's verdict is ``error``.

    ``error_code`` is kept when it matches ``ERROR_CODE_PATTERN``, else reported as
    ``TASK_FAILED``.
    """

    status: Literal["failed"] = "failed"
    error_code: str
    public_metrics: Mapping[str, float] = field(default_factory=_no_metrics)


EvaluationRuntimeOutput: TypeAlias = EvaluationCompleted | EvaluationFailed
"""What ``EvaluationRuntime.run`` returns (an exact ``dict`` of the JSON shape is accepted)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RuntimeFactoryInput:
    """What ``EvaluationCandidate.create_runtime`` receives for one run."""

    candidate_id: str
    task_id: str
    run_id: str
    repetition: int
    workspace_path: str
    signal: AbortSignal


class EvaluationRuntime(Protocol):
    """A candidate's runtime for one run: ``run`` once, then ``dispose`` (always, once).

    ``dispose`` is looked up on the object or its class (a plain function, at most
    ``MAX_OWNERSHIP_DEPTH`` classes deep; a property is rejected).
    """

    def run(
        self, input: EvaluationRuntimeInput, /
    ) -> (
        Awaitable[EvaluationRuntimeOutput | Mapping[str, Any]]
        | EvaluationRuntimeOutput
        | Mapping[str, Any]
    ): ...

    def dispose(self) -> Awaitable[object] | object: ...


class EvaluationCandidate(Protocol):
    """The system under evaluation: builds one fresh runtime per run."""

    @property
    def id(self) -> str: ...

    def create_runtime(
        self, input: RuntimeFactoryInput, /
    ) -> Awaitable[EvaluationRuntime] | EvaluationRuntime: ...


# -- Judges -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class JudgeInput:
    """What a judge sees: public evidence only, never candidate internals."""

    task_id: str
    run_id: str
    prompt: str
    expected_public_evidence: ExpectedEvidence
    candidate_public_evidence: tuple[str, ...]
    signal: AbortSignal


@dataclass(frozen=True, slots=True, kw_only=True)
class JudgeOutput:
    """A judge's verdict and optional metrics (merged with the runtime's)."""

    verdict: JudgeVerdict
    public_metrics: Mapping[str, float] = field(default_factory=_no_metrics)


class EvaluationJudge(Protocol):
    """Decides ``pass`` / ``fail`` for a completed run."""

    def judge(
        self, input: JudgeInput, /
    ) -> Awaitable[JudgeOutput | Mapping[str, Any]] | JudgeOutput | Mapping[str, Any]: ...


# -- Workspaces, clock, cleanup timer -----------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkspaceFactoryInput:
    """What the workspace factory receives for one run."""

    candidate_id: str
    task_id: str
    run_id: str
    repetition: int
    signal: AbortSignal


class EvaluationWorkspace(Protocol):
    """A per-run working directory: ``path`` (a non-empty string) and ``cleanup()``."""

    @property
    def path(self) -> str: ...

    def cleanup(self) -> Awaitable[object] | object: ...


EvaluationWorkspaceFactory: TypeAlias = Callable[
    [WorkspaceFactoryInput], "Awaitable[EvaluationWorkspace] | EvaluationWorkspace"
]
"""Creates the workspace of one run (called on the machine that runs it)."""


class EvaluationClock(Protocol):
    """The time source of run durations, in milliseconds (the default always says 0)."""

    def now(self) -> float: ...


class EvaluationCleanupTimer(Protocol):
    """Bounds a cleanup: call ``on_timeout`` after ``delay_ms`` unless cancelled first."""

    def schedule(
        self, delay_ms: int, on_timeout: Callable[[], None], /
    ) -> Callable[[], object]: ...


# -- Reports ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class EvaluationRunReport:
    """The public outcome of one run (JSON keys: taskId, runId, candidateId, verdict,
    publicMetrics, durationMs, errorCode). ``error_code`` is set exactly when the verdict is
    ``error``."""

    task_id: str
    run_id: str
    candidate_id: str
    verdict: EvaluationVerdict
    public_metrics: Mapping[str, float]
    duration_ms: float
    error_code: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class EvaluationAggregateMetrics:
    """Counts and rates over an evaluation's runs (rates are count / total)."""

    total_runs: int
    passed_runs: int
    failed_runs: int
    error_runs: int
    pass_rate: float
    fail_rate: float
    error_rate: float


@dataclass(frozen=True, slots=True, kw_only=True)
class EvaluationReport:
    """The privacy-bounded result of an evaluation: runs in work order, plus aggregates.
    Prompts, evidence, transcripts and file contents never appear in it."""

    candidate_id: str
    runs: tuple[EvaluationRunReport, ...]
    public_metrics: EvaluationAggregateMetrics


@dataclass(frozen=True, slots=True, kw_only=True)
class EvaluationComparisonRun:
    """One run aligned across two reports (by task ID and run ID)."""

    task_id: str
    run_id: str
    baseline_verdict: EvaluationVerdict
    candidate_verdict: EvaluationVerdict
    outcome: ComparisonOutcome


@dataclass(frozen=True, slots=True, kw_only=True)
class EvaluationComparisonMetrics:
    """Rate deltas (candidate - baseline) and outcome counts."""

    pass_rate_delta: float
    fail_rate_delta: float
    error_rate_delta: float
    improved_runs: int
    regressed_runs: int
    unchanged_runs: int


@dataclass(frozen=True, slots=True, kw_only=True)
class EvaluationComparison:
    """``compare_evaluations(baseline, candidate)``: runs in baseline order."""

    baseline_candidate_id: str
    candidate_candidate_id: str
    runs: tuple[EvaluationComparisonRun, ...]
    public_metrics: EvaluationComparisonMetrics
