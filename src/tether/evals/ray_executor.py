"""``RayExecutor``: the runs of an evaluation as Ray tasks, behind the ``EvaluationExecutor`` seam.

For suites that outgrow one machine (or one core). Same contract as ``LocalExecutor``: at most
``concurrency`` items in flight, submitted in work order; the first failure (or the caller's
abort) stops submitting and cancels what is in flight; ``execute`` returns once every submitted
item settled, with the outcomes in item order and the failures in the order they were seen.
The same suite gives the same report through either executor (tested byte for byte).

How a run travels:

* The job (candidate, judge, workspace factory, clock...) is put in Ray's object store once
  per ``execute``; each item is one remote call of ``run_item(job, item)``, which runs
  ``job.run_one(item, signal)`` on a fresh event loop *in the worker*. The workspace is created
  there, by the job, so the candidate's files live on the machine that runs it; the report (or
  the ``EvaluationInfrastructureError``, which pickles with its cause) comes back.
* Cancellation is ``ray.cancel(ref, force=False, recursive=True)``. ``force=False`` because a
  forced cancel kills the worker process, and with it the run's cleanups (a candidate's
  ``dispose`` and the workspace ``cleanup``). Without force Ray interrupts the worker's main
  thread as a SIGINT would; ``run_item`` answers that SIGINT by aborting the run's own signal,
  so ``run_one`` ends as it does locally: ``EVALUATION_CANCELLED`` *after* its cleanups ran
  (bounded by the cleanup timeout). An item Ray had not started yet is simply never run. Tasks
  are never retried (``max_retries=0``): a run may have side effects.
* The driver never blocks its event loop waiting: it awaits each ref's asyncio future, raced
  with the abort signal. Starting and stopping Ray, and putting the job, run on a thread.

Ray is started only if it is not running: ``ray.init(address=..., num_cpus=...)`` for a local
instance (or to join ``address``), without the dashboard and without forwarding worker logs,
and shut down again when ``execute`` returns. A Ray the caller started is left running.
``import ray`` happens only inside ``execute`` (install the ``tether[ray]`` extra).

If Ray cannot be started or joined, or the job cannot be put in its object store (a job that
does not pickle, a cluster that went away), ``execute`` raises ``RayExecutorError``: an
``EvaluationInfrastructureError`` with the code ``EVALUATION_RUNTIME_FAILED`` (the library's
code for an evaluation infrastructure that failed; no item ran, so no candidate is to blame),
a message saying which, and Ray's exception as ``__cause__``. ``stage`` tells the two apart;
``tether eval`` reports it as ``CLI_EVAL_RAY_FAILED``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import pickle
import signal as signals
from collections.abc import Callable, Generator
from types import FrameType
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias, TypeVar

from tether._async.race import follow_signal
from tether._base.exact_types import type_of
from tether.abort import AbortController, AbortSignal
from tether.evals.errors import EvaluationInfrastructureError
from tether.evals.executors import (
    EvaluationWorkItem,
    ExecutionResult,
    ItemOutcome,
    OnSettled,
    SettledItems,
    cancelled_error,
    infrastructure_error,
)
from tether.evals.types import EvaluationRunReport

if TYPE_CHECKING:
    from tether.evals.runner import EvaluationJob

__all__ = ["RayExecutor", "RayExecutorError", "RayExecutorStage", "run_item"]

T = TypeVar("T")

_CANCEL_FORCE: Final = False
"""Never force: a forced cancel kills the worker, and the run's cleanups with it."""
_CANCEL_RECURSIVE: Final = True
"""A candidate that starts Ray tasks of its own has them cancelled too."""

_remote_function: Any = None


RayExecutorStage: TypeAlias = Literal["start", "put"]
"""Where Ray failed: starting or joining it (``start``), or putting the job (``put``)."""

_STAGE_MESSAGES: Final[dict[RayExecutorStage, str]] = {
    "start": "Evaluation infrastructure failed: Ray could not be started or joined",
    "put": "Evaluation infrastructure failed: the evaluation job could not be put in Ray",
}


class RayExecutorError(EvaluationInfrastructureError):
    """Ray could not be started or joined (``stage == "start"``), or could not take the job
    (``"put"``); code ``EVALUATION_RUNTIME_FAILED``, Ray's exception as ``__cause__``."""

    def __init__(self, stage: RayExecutorStage) -> None:
        super().__init__("EVALUATION_RUNTIME_FAILED", _STAGE_MESSAGES[stage])
        self._stage: RayExecutorStage = stage

    @property
    def stage(self) -> RayExecutorStage:
        """``"start"`` (start or join) or ``"put"`` (the job into the object store)."""
        return self._stage


def _remote() -> Any:
    """``run_item`` as a Ray remote function (created once per process; Ray re-exports it to
    each new session by itself)."""
    global _remote_function
    if _remote_function is None:
        _remote_function = _ray().remote(max_retries=0, num_cpus=1)(run_item)
    return _remote_function


def _ray() -> Any:
    """The ``ray`` module, imported now (its API is only partly typed: used as ``Any``)."""
    import ray

    return ray


class RayExecutor:
    """Runs work items as Ray tasks (see the module docstring).

    ``address``: the cluster to join when Ray is not initialized yet (``None``: start a local
    instance, or what ``RAY_ADDRESS`` names). ``num_cpus``: the CPUs of a local instance it
    starts (``None``: Ray's default, every core).
    """

    __slots__ = ("_address", "_num_cpus")

    def __init__(self, address: str | None = None, num_cpus: int | None = None) -> None:
        if address is not None and (type_of(address) is not str or not address):
            raise TypeError("RayExecutor address must be a non-empty string or None")
        if num_cpus is not None and (type_of(num_cpus) is not int or num_cpus < 1):
            raise TypeError("RayExecutor num_cpus must be a positive integer or None")
        self._address = address
        self._num_cpus = num_cpus

    @property
    def address(self) -> str | None:
        """The cluster address given (``None``: a local instance)."""
        return self._address

    @property
    def num_cpus(self) -> int | None:
        """The CPUs of a local instance this executor starts."""
        return self._num_cpus

    def __repr__(self) -> str:
        return f"RayExecutor(address={self._address!r}, num_cpus={self._num_cpus!r})"

    async def execute(
        self,
        job: EvaluationJob,
        items: tuple[EvaluationWorkItem, ...],
        *,
        concurrency: int,
        signal: AbortSignal,
        on_settled: OnSettled | None = None,
    ) -> ExecutionResult:
        """Run ``items`` as Ray tasks (see ``EvaluationExecutor``); cancelling this call
        cancels the tasks in flight, waits for them to settle, then re-raises."""
        if not items or signal.aborted:
            return await _Execution(job, items, concurrency, signal, on_settled).run()
        ray = _ray()

        started = False
        try:
            if not ray.is_initialized():
                started = True  # even if cancelled meanwhile: the start is waited for
                try:
                    await _in_thread(self._init)
                except Exception as error:
                    raise RayExecutorError("start") from error
            return await _Execution(job, items, concurrency, signal, on_settled).run()
        finally:
            if started:
                await _in_thread(ray.shutdown)

    def _init(self) -> None:
        options: dict[str, Any] = {}
        if self._num_cpus is not None:
            options["num_cpus"] = self._num_cpus
        _ray().init(
            address=self._address,
            include_dashboard=False,
            log_to_driver=False,
            logging_level=logging.ERROR,
            **options,
        )


class _Execution:
    """The driver side of one ``execute``: submits, waits, cancels, records."""

    def __init__(
        self,
        job: EvaluationJob,
        items: tuple[EvaluationWorkItem, ...],
        concurrency: int,
        signal: AbortSignal,
        on_settled: OnSettled | None,
    ) -> None:
        self.job = job
        self.items = items
        self.concurrency = concurrency
        self.signal = signal
        self.settled = SettledItems(len(items), on_settled)
        self.controller = self.settled.controller
        self.in_flight: dict[asyncio.Future[Any], tuple[int, Any]] = {}
        self.cancelled = False

    async def run(self) -> ExecutionResult:
        unfollow = follow_signal(self.signal, self.controller)
        try:
            if self.items and not self.controller.signal.aborted:
                await self._drive()
        finally:
            if unfollow is not None:
                unfollow()
        return self.settled.result()

    async def _drive(self) -> None:
        ray = _ray()
        try:
            job_ref = await _in_thread(lambda: ray.put(self.job))
        except Exception as error:
            raise RayExecutorError("put") from error
        remote = _remote()
        loop = asyncio.get_running_loop()
        aborted: asyncio.Future[None] = loop.create_future()

        def wake() -> None:
            if not aborted.done():
                aborted.set_result(None)

        shared = self.controller.signal
        remove = shared.add_listener(wake)
        cursor = 0
        try:
            while True:
                while not shared.aborted and cursor < len(self.items):
                    if len(self.in_flight) >= self.concurrency:
                        break
                    ref = remote.remote(job_ref, self.items[cursor])
                    self.in_flight[ref.as_future()] = (cursor, ref)
                    cursor += 1
                if shared.aborted:
                    self._cancel_in_flight()
                if not self.in_flight:
                    return
                waiting: set[asyncio.Future[Any]] = {*self.in_flight}
                if not self.cancelled:
                    waiting.add(aborted)
                try:
                    await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
                except asyncio.CancelledError:
                    await self._after_cancellation()
                    raise
                self._settle_done()
        finally:
            remove()

    def _cancel_in_flight(self) -> None:
        if self.cancelled:
            return
        self.cancelled = True
        ray = _ray()
        for _, ref in self.in_flight.values():
            with contextlib.suppress(Exception):  # already finished, or Ray went away
                ray.cancel(ref, force=_CANCEL_FORCE, recursive=_CANCEL_RECURSIVE)

    def _settle_done(self) -> None:
        done = sorted(
            (position, future) for future, (position, _) in self.in_flight.items() if future.done()
        )
        for position, future in done:
            del self.in_flight[future]
            self.settled.settle(position, self.items[position], _outcome_of(future))

    async def _after_cancellation(self) -> None:
        """The caller cancelled ``execute``: cancel the tasks, then wait for them to settle
        (a second cancellation stops the wait; the tasks are cancelled by then)."""
        self.controller.abort(cancelled_error())
        self._cancel_in_flight()
        if self.in_flight:
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait(set(self.in_flight))
        self._settle_done()


def _outcome_of(future: asyncio.Future[Any]) -> ItemOutcome:
    """What a finished ref's future says, as an item outcome."""
    if future.cancelled():
        return cancelled_error()
    error = future.exception()
    if error is None:
        value = future.result()
        if isinstance(value, EvaluationRunReport | EvaluationInfrastructureError):
            return value
        return infrastructure_error()
    from ray.exceptions import TaskCancelledError

    if isinstance(error, TaskCancelledError):
        return cancelled_error()
    return infrastructure_error(error)


async def _in_thread(work: Callable[[], T]) -> T:
    """``work()`` on a thread; if the caller is cancelled meanwhile, wait for ``work`` to end
    before re-raising (Ray must not be shut down while it is still starting)."""
    future = asyncio.ensure_future(asyncio.to_thread(work))
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        with contextlib.suppress(BaseException):
            await future
        raise


# --- the worker side ----------------------------------------------------------------------------


def run_item(job: EvaluationJob, item: EvaluationWorkItem) -> ItemOutcome:
    """Run one item in this process (a Ray worker): ``job.run_one(item, signal)`` on a fresh
    event loop, where ``signal`` aborts on SIGINT (Ray's non-forced cancel interrupts the main
    thread that way), so a cancelled run still runs its cleanups. Returns the report or the
    infrastructure error (never raises for a run's failure)."""
    controller = AbortController()
    with asyncio.Runner() as runner:
        loop = runner.get_loop()

        def interrupted(signum: int, frame: FrameType | None) -> None:
            with contextlib.suppress(RuntimeError):  # the loop is closed: the run is over
                loop.call_soon_threadsafe(controller.abort, cancelled_error())

        with _sigint_handler(interrupted):
            outcome = runner.run(_settle(job, item, controller.signal))
    return _portable(outcome)


async def _settle(job: EvaluationJob, item: EvaluationWorkItem, signal: AbortSignal) -> ItemOutcome:
    try:
        return await job.run_one(item, signal)
    except EvaluationInfrastructureError as error:
        return error
    except Exception as error:
        return infrastructure_error(error)


@contextlib.contextmanager
def _sigint_handler(
    handler: Callable[[int, FrameType | None], None],
) -> Generator[None, None, None]:
    """Install ``handler`` for SIGINT for the ``with`` body (main thread only; elsewhere no
    SIGINT reaches this code, so nothing is installed)."""
    try:
        previous = signals.signal(signals.SIGINT, handler)
    except ValueError:
        yield
        return
    try:
        yield
    finally:
        signals.signal(signals.SIGINT, previous)


def _portable(outcome: ItemOutcome) -> ItemOutcome:
    """``outcome``, or for an error whose cause cannot be pickled, the same error without the
    cause (so the driver gets the code, not a serialization failure)."""
    if isinstance(outcome, EvaluationRunReport):
        return outcome
    try:
        pickle.dumps(outcome)
    except Exception:
        return EvaluationInfrastructureError(outcome.code, outcome.message)
    return outcome
