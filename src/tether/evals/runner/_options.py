"""Capturing ``run_evaluation``'s options once (``EVALUATION_INVALID_OPTIONS``) and turning the
tasks into work items."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeAlias, TypeGuard, TypeVar, cast

from tether._base.dataclass import dataclass
from tether._base.exact_types import instance_of
from tether.abort import AbortSignal
from tether.evals.executors import (
    EvaluationExecutor,
    EvaluationWorkItem,
    ItemOutcome,
    LocalExecutor,
)
from tether.evals.judge import deterministic_judge
from tether.evals.runner._defaults import LoopCleanupTimer, TemporaryWorkspaceFactory, ZeroClock
from tether.evals.runner._job import EvaluationJob
from tether.evals.runner._steps import options_error
from tether.evals.tasks import load_evaluation_tasks, task_to_source
from tether.evals.types import (
    ID_PATTERN,
    MAX_CONCURRENCY,
    MAX_EVALUATION_CLEANUP_MS,
    MAX_EVALUATION_RUNS,
    MAX_REPETITIONS,
    EvaluationCandidate,
    EvaluationCleanupTimer,
    EvaluationClock,
    EvaluationJudge,
    EvaluationTask,
    EvaluationWorkspaceFactory,
    EvaluationWorkTask,
)

_T = TypeVar("_T")

OnRun: TypeAlias = Callable[[ItemOutcome], None]
"""Progress callback: called with each run's report (or failure) as it settles."""


def _integer(value: object, name: str, low: int, high: int) -> int:
    if type(value) is not int or not low <= value <= high:
        options_error(f"{name} must be an integer from {low} to {high}")
    return value


def _has_method(value: object, name: str, kind: type[_T]) -> TypeGuard[_T]:
    """Whether ``value`` has a callable ``name``: all that is checked of an object meant to
    implement the protocol ``kind`` before it is called (what it returns is checked then)."""
    try:
        return callable(getattr(value, name))
    except Exception:
        return False


def _tasks(source: object) -> tuple[EvaluationTask, ...]:
    try:
        if type(source) is tuple or type(source) is list:
            entries = cast("Sequence[object]", source)
            if entries and all(type(task) is EvaluationTask for task in entries):
                loaded = cast("Sequence[EvaluationTask]", entries)
                source = {"schemaVersion": 1, "tasks": [task_to_source(task) for task in loaded]}
        return load_evaluation_tasks(cast("object", source))
    except Exception as error:
        options_error(f"tasks: {error}", error)


@dataclass(frozen=True, slots=True, kw_only=True)
class _Options:
    job: EvaluationJob
    tasks: tuple[EvaluationTask, ...]
    repetitions: int
    concurrency: int
    signal: AbortSignal
    executor: EvaluationExecutor
    on_run: OnRun | None


def capture_options(
    *,
    candidate: object,
    tasks: object,
    repetitions: object,
    judge: object,
    signal: object,
    concurrency: object,
    clock: object,
    workspace_factory: object,
    cleanup_timeout_ms: object,
    cleanup_timer: object,
    executor: object,
    on_run: object,
) -> _Options:
    try:
        candidate_id: object = getattr(candidate, "id")  # noqa: B009 - any object may come in
    except Exception as error:
        options_error("candidate must have an id", error)
    if type(candidate_id) is not str or ID_PATTERN.fullmatch(candidate_id) is None:
        options_error("candidate.id must match the ID pattern")
    if not _has_method(candidate, "create_runtime", EvaluationCandidate):
        options_error("candidate.create_runtime must be a function")
    judge = deterministic_judge if judge is None else judge
    if not _has_method(judge, "judge", EvaluationJudge):
        options_error("judge.judge must be a function")
    clock = ZeroClock() if clock is None else clock
    if not _has_method(clock, "now", EvaluationClock):
        options_error("clock.now must be a function")
    workspace_factory = (
        TemporaryWorkspaceFactory() if workspace_factory is None else workspace_factory
    )
    if not callable(workspace_factory):
        options_error("workspace_factory must be a function")
    cleanup_timer = LoopCleanupTimer() if cleanup_timer is None else cleanup_timer
    if not _has_method(cleanup_timer, "schedule", EvaluationCleanupTimer):
        options_error("cleanup_timer.schedule must be a function")
    executor = LocalExecutor() if executor is None else executor
    if not _has_method(executor, "execute", EvaluationExecutor):
        options_error("executor.execute must be a function")
    if on_run is not None and not callable(on_run):
        options_error("on_run must be a function")
    repeat = _integer(repetitions, "repetitions", 1, MAX_REPETITIONS)
    workers = _integer(concurrency, "concurrency", 1, MAX_CONCURRENCY)
    timeout = _integer(cleanup_timeout_ms, "cleanup_timeout_ms", 1, MAX_EVALUATION_CLEANUP_MS)
    if signal is None:
        signal = AbortSignal()
    elif not instance_of(signal, AbortSignal):
        options_error("signal must be an AbortSignal")
    loaded = _tasks(tasks)
    if len(loaded) * repeat > MAX_EVALUATION_RUNS:
        options_error(f"tasks x repetitions must not exceed {MAX_EVALUATION_RUNS}")
    job = EvaluationJob(
        candidate=candidate,
        candidate_id=candidate_id,
        judge=judge,
        clock=clock,
        # callable() is all a function's check can be before it is called
        workspace_factory=cast(EvaluationWorkspaceFactory, workspace_factory),
        cleanup_timeout_ms=timeout,
        cleanup_timer=cleanup_timer,
    )
    return _Options(
        job=job,
        tasks=loaded,
        repetitions=repeat,
        concurrency=workers,
        signal=signal,
        executor=executor,
        on_run=cast("OnRun | None", on_run),  # callable or None, as checked above
    )


def work_items(
    tasks: tuple[EvaluationTask, ...], repetitions: int
) -> tuple[EvaluationWorkItem, ...]:
    """Each task in order, repetitions 1..R; run IDs ``run-000001``, ... in that order.

    An item carries an ``EvaluationWorkTask``: the task's fixture-only fields stay here."""
    items: list[EvaluationWorkItem] = []
    for task in tasks:
        needed = EvaluationWorkTask.of(task)
        for repetition in range(1, repetitions + 1):
            index = len(items)
            items.append(
                EvaluationWorkItem(
                    index=index, task=needed, run_id=f"run-{index + 1:06d}", repetition=repetition
                )
            )
    return tuple(items)
