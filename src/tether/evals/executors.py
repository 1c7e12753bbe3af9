"""Where the runs of an evaluation execute: the executor seam and the local (asyncio) executor.

``run_evaluation`` turns its options into one picklable ``EvaluationJob`` (everything a run
needs) and a tuple of ``EvaluationWorkItem`` (one per task and repetition, in work order), then
hands both to an executor. An executor only schedules: ``min(concurrency, len(items))``
workers pull items in order and call ``job.run_one(item, signal)`` with one shared signal that
follows the caller's; the first failure aborts that signal (every running item sees it) and
stops scheduling; ``execute`` returns once every started item settled. It never raises for an
item's failure: outcomes and the order in which failures happened are data, and
``run_evaluation`` decides the evaluation's outcome from them. ``LocalExecutor`` runs the items
as asyncio tasks in this process; ``tether.evals.ray_executor`` (separate, optional) runs them
on a Ray cluster behind the same protocol.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, TypeAlias

from tether._async.race import follow_signal, reraise_task_cancellation
from tether._base.dataclass import dataclass
from tether.abort import AbortController, AbortSignal
from tether.evals.errors import EvaluationInfrastructureError
from tether.evals.types import EvaluationRunReport, EvaluationWorkTask

if TYPE_CHECKING:
    from tether.evals.runner import EvaluationJob

__all__ = [
    "EvaluationExecutor",
    "EvaluationWorkItem",
    "ExecutionResult",
    "ItemOutcome",
    "LocalExecutor",
    "OnSettled",
    "SettledItems",
    "cancelled_error",
    "infrastructure_error",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class EvaluationWorkItem:
    """One run to carry out: ``index`` is its 0-based place in work order, ``task`` what the
    run needs of its task (``EvaluationWorkTask``: no fixture-only field, so none travels to
    an executor or a Ray worker), ``run_id`` is ``"run-000001"``-style (``index + 1``, six
    digits), ``repetition`` is 1-based."""

    index: int
    task: EvaluationWorkTask
    run_id: str
    repetition: int


ItemOutcome: TypeAlias = EvaluationRunReport | EvaluationInfrastructureError
"""How one item settled: its report, or the infrastructure failure that ended it."""

OnSettled: TypeAlias = Callable[[EvaluationWorkItem, ItemOutcome], None]
"""Called once per settled item (progress reporting); it must not raise."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ExecutionResult:
    """What an executor reports: ``outcomes[i]`` for ``items[i]`` (``None``: never started),
    and ``failure_order``, the indexes of failed items in the order they failed."""

    outcomes: tuple[ItemOutcome | None, ...]
    failure_order: tuple[int, ...]


class EvaluationExecutor(Protocol):
    """Schedules the work items of one evaluation (see the module docstring)."""

    async def execute(
        self,
        job: EvaluationJob,
        items: tuple[EvaluationWorkItem, ...],
        *,
        concurrency: int,
        signal: AbortSignal,
        on_settled: OnSettled | None = None,
    ) -> ExecutionResult: ...


def cancelled_error() -> EvaluationInfrastructureError:
    """A fresh ``EVALUATION_CANCELLED`` error."""
    return EvaluationInfrastructureError("EVALUATION_CANCELLED", "Evaluation was cancelled")


def infrastructure_error(cause: BaseException | None = None) -> EvaluationInfrastructureError:
    """The error an untyped failure is normalized to (``EVALUATION_RUNTIME_FAILED``), with
    ``cause`` (the failure, when given) as its ``__cause__``."""
    error = EvaluationInfrastructureError(
        "EVALUATION_RUNTIME_FAILED", "Evaluation infrastructure failed"
    )
    if cause is not None:
        error.__cause__ = cause
    return error


class SettledItems:
    """What an executor records as its items settle, the one rule both executors follow
    (``LocalExecutor``, ``tether.evals.ray_executor.RayExecutor``).

    ``settle`` first calls ``on_settled`` (a failure there becomes the item's
    ``EVALUATION_RUNTIME_FAILED``), keeps the outcome and, for an infrastructure failure,
    records its place in ``failure_order`` and aborts ``controller``, the items' shared
    signal, with ``EVALUATION_CANCELLED``. ``result()`` is the ``ExecutionResult``.
    """

    __slots__ = ("_failure_order", "_on_settled", "_outcomes", "controller")

    def __init__(self, count: int, on_settled: OnSettled | None) -> None:
        self.controller = AbortController()
        self._on_settled = on_settled
        self._outcomes: list[ItemOutcome | None] = [None] * count
        self._failure_order: list[int] = []

    def settle(self, position: int, item: EvaluationWorkItem, outcome: ItemOutcome) -> None:
        """Record how ``item`` (at ``position`` of the items) settled."""
        if self._on_settled is not None:
            try:
                self._on_settled(item, outcome)
            except Exception as error:
                outcome = infrastructure_error(error)
        self._outcomes[position] = outcome
        if isinstance(outcome, EvaluationInfrastructureError):
            self._failure_order.append(item.index)
            self.controller.abort(cancelled_error())

    def result(self) -> ExecutionResult:
        """The outcomes so far (``None``: never started) and the order failures came in."""
        return ExecutionResult(
            outcomes=tuple(self._outcomes), failure_order=tuple(self._failure_order)
        )


class LocalExecutor:
    """Runs work items as asyncio tasks on the running loop, at most ``concurrency`` at once."""

    __slots__ = ()

    async def execute(
        self,
        job: EvaluationJob,
        items: tuple[EvaluationWorkItem, ...],
        *,
        concurrency: int,
        signal: AbortSignal,
        on_settled: OnSettled | None = None,
    ) -> ExecutionResult:
        """Run ``items`` (see ``EvaluationExecutor``); cancelling this call aborts the shared
        signal, waits for the started items to settle, then re-raises the cancellation."""
        settled = SettledItems(len(items), on_settled)
        controller = settled.controller
        shared = controller.signal
        unfollow = follow_signal(signal, controller)
        if unfollow is None:
            raise TypeError("signal must be an AbortSignal")
        cursor = 0

        async def worker() -> None:
            nonlocal cursor
            while cursor < len(items) and not shared.aborted:
                position = cursor
                cursor += 1
                item = items[position]
                outcome: ItemOutcome
                try:
                    outcome = await job.run_one(item, shared)
                except EvaluationInfrastructureError as error:
                    outcome = error
                except asyncio.CancelledError as error:
                    reraise_task_cancellation(error)
                    outcome = infrastructure_error(error)
                except Exception as error:
                    outcome = infrastructure_error(error)
                settled.settle(position, item, outcome)

        loop = asyncio.get_running_loop()
        workers = [loop.create_task(worker()) for _ in range(min(concurrency, len(items)))]
        try:
            if workers:
                try:
                    await asyncio.wait(workers)
                except asyncio.CancelledError:
                    controller.abort(cancelled_error())
                    try:
                        await asyncio.wait(workers)
                    except asyncio.CancelledError:
                        for task in workers:
                            task.cancel()
                        raise
                    raise
            for task in workers:
                error = task.exception()
                if error is not None:
                    raise error
        finally:
            unfollow()
        return settled.result()
