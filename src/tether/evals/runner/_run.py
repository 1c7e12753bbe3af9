"""``run_evaluation``: validate the options, run the work items on an executor, and settle
the evaluation's outcome (report, or the error that explains it)."""

from __future__ import annotations

from tether._async.race import signal_aborted
from tether.abort import AbortSignal
from tether.evals.errors import (
    EvaluationCleanupErrors,
    EvaluationInfrastructureError,
)
from tether.evals.executors import (
    EvaluationExecutor,
    EvaluationWorkItem,
    ExecutionResult,
    ItemOutcome,
    cancelled_error,
    infrastructure_error,
)
from tether.evals.report import aggregate_metrics
from tether.evals.runner._options import OnRun, capture_options, work_items
from tether.evals.runner._steps import MESSAGES, step_error
from tether.evals.types import (
    MAX_EVALUATION_CLEANUP_MS,
    EvaluationCandidate,
    EvaluationCleanupTimer,
    EvaluationClock,
    EvaluationJudge,
    EvaluationReport,
    EvaluationRunReport,
    EvaluationWorkspaceFactory,
)

# -- The evaluation -----------------------------------------------------------------------------


def _is_cancellation(error: object) -> bool:
    return isinstance(error, EvaluationInfrastructureError) and error.code == "EVALUATION_CANCELLED"


def _initiating(primary: EvaluationInfrastructureError) -> Exception | None:
    """The failure that started it all, first in the aggregate: the primary itself, or, when
    the primary is a run's cleanup failure, that run's own cancellation (an external abort
    its cleanup then failed after), which the run put first among its errors."""
    if primary.code != "EVALUATION_CLEANUP_FAILED":
        return primary
    nested = primary.errors
    first = nested[0] if nested else None
    return (
        first
        if isinstance(first, EvaluationInfrastructureError) and _is_cancellation(first)
        else None
    )


def _outcome(
    result: object, items: tuple[EvaluationWorkItem, ...], candidate_id: str
) -> EvaluationReport:
    if type(result) is not ExecutionResult:
        raise infrastructure_error()
    outcomes = result.outcomes
    order = result.failure_order
    if type(outcomes) is not tuple or len(outcomes) != len(items) or type(order) is not tuple:
        raise infrastructure_error()
    failures: list[EvaluationInfrastructureError] = []
    for index in order:
        outcome = outcomes[index] if type(index) is int and 0 <= index < len(items) else None
        if not isinstance(outcome, EvaluationInfrastructureError):
            raise infrastructure_error()
        failures.append(outcome)
    if failures:
        primary = failures[0]
        cleanup = [
            outcome
            for outcome in outcomes
            if isinstance(outcome, EvaluationInfrastructureError)
            and outcome.code == "EVALUATION_CLEANUP_FAILED"
        ]
        if not cleanup:
            raise primary
        lead = _initiating(primary)
        causes: list[Exception] = [] if lead is None else [lead]
        for failure in cleanup:
            for nested in failure.errors:
                if nested is primary or nested is lead or not isinstance(nested, Exception):
                    continue
                if _is_cancellation(nested):
                    continue
                causes.append(nested)
        aggregate = EvaluationCleanupErrors(MESSAGES["EVALUATION_CLEANUP_FAILED"], causes)
        raise step_error("EVALUATION_CLEANUP_FAILED", aggregate)
    runs: list[EvaluationRunReport] = []
    for outcome in outcomes:
        if outcome is None:
            raise cancelled_error()
        if type(outcome) is not EvaluationRunReport or outcome.candidate_id != candidate_id:
            raise infrastructure_error()
        runs.append(outcome)
    frozen = tuple(runs)
    return EvaluationReport(
        candidate_id=candidate_id, runs=frozen, public_metrics=aggregate_metrics(frozen)
    )


async def run_evaluation(
    *,
    candidate: EvaluationCandidate | object,
    tasks: object,
    repetitions: int = 1,
    judge: EvaluationJudge | None = None,
    signal: AbortSignal | None = None,
    concurrency: int = 1,
    clock: EvaluationClock | None = None,
    workspace_factory: EvaluationWorkspaceFactory | None = None,
    cleanup_timeout_ms: int = MAX_EVALUATION_CLEANUP_MS,
    cleanup_timer: EvaluationCleanupTimer | None = None,
    executor: EvaluationExecutor | None = None,
    on_run: OnRun | None = None,
) -> EvaluationReport:
    """Evaluate ``candidate`` on ``tasks`` (a fixture source, or loaded tasks) and return the
    frozen, privacy-bounded report (runs in work order).

    Raises ``EvaluationInfrastructureError``: ``EVALUATION_INVALID_OPTIONS`` for bad options,
    ``EVALUATION_CANCELLED`` when ``signal`` is (or becomes) aborted, otherwise the first
    failure of a run, or ``EVALUATION_CLEANUP_FAILED`` aggregating every cleanup failure,
    after the failure that started it (after an external abort: ``EVALUATION_CANCELLED``).
    ``on_run`` is called with each run's report or failure as it settles (it must not raise).
    """
    options = capture_options(
        candidate=candidate,
        tasks=tasks,
        repetitions=repetitions,
        judge=judge,
        signal=signal,
        concurrency=concurrency,
        clock=clock,
        workspace_factory=workspace_factory,
        cleanup_timeout_ms=cleanup_timeout_ms,
        cleanup_timer=cleanup_timer,
        executor=executor,
        on_run=on_run,
    )
    if signal_aborted(options.signal):
        raise cancelled_error()
    items = work_items(options.tasks, options.repetitions)
    progress = options.on_run

    def on_settled(_item: EvaluationWorkItem, outcome: ItemOutcome) -> None:
        if progress is not None:
            progress(outcome)

    try:
        result = await options.executor.execute(
            options.job,
            items,
            concurrency=options.concurrency,
            signal=options.signal,
            on_settled=on_settled,
        )
    except EvaluationInfrastructureError:
        raise
    except Exception as error:
        raise infrastructure_error() from error
    return _outcome(result, items, options.job.candidate_id)
