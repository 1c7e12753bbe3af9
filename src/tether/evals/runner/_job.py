"""``EvaluationJob``: one run (checkpoint 14 ``runOne``) from clock to cleanup, with the
resources it acquired released in ownership order under the cleanup timer."""

from __future__ import annotations

import asyncio
import math
import os
from collections.abc import Callable
from typing import Any, NoReturn, cast

from tether._async.race import reraise_task_cancellation, signal_aborted, start_cleanup
from tether._base.dataclass import dataclass
from tether._base.exact_types import is_awaitable
from tether._base.strings import is_non_empty
from tether.abort import AbortSignal
from tether.evals.errors import (
    EvaluationCleanupErrors,
    EvaluationErrorCode,
    EvaluationInfrastructureError,
)
from tether.evals.executors import (
    EvaluationWorkItem,
    infrastructure_error,
)
from tether.evals.runner._capture import (
    Output,
    capture_judgement,
    capture_output,
    merge_metrics,
    read_time,
)
from tether.evals.runner._settle import (
    PENDING,
    abort_check,
    late_cleanup,
    ownership_method,
    settle_value,
)
from tether.evals.runner._steps import MESSAGES, Step, step_error
from tether.evals.types import (
    MAX_WORKSPACE_PATH_CODE_POINTS,
    EvaluationCandidate,
    EvaluationCleanupTimer,
    EvaluationClock,
    EvaluationJudge,
    EvaluationRunReport,
    EvaluationRuntimeInput,
    EvaluationVerdict,
    EvaluationWorkspaceFactory,
    EvaluationWorkTask,
    JudgeInput,
    PublicMetrics,
    RuntimeFactoryInput,
    WorkspaceFactoryInput,
)

# -- The job ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class EvaluationJob:
    """Everything one run needs, captured once by ``run_evaluation``; picklable when its
    parts are (the defaults and the fixture candidate are)."""

    candidate: EvaluationCandidate
    candidate_id: str
    judge: EvaluationJudge
    clock: EvaluationClock
    workspace_factory: EvaluationWorkspaceFactory
    cleanup_timeout_ms: int
    cleanup_timer: EvaluationCleanupTimer

    async def run_one(self, item: EvaluationWorkItem, signal: AbortSignal) -> EvaluationRunReport:
        """Carry out one run (checkpoint 14 ``runOne``, steps 1-8) under ``signal``.

        Returns its report (the candidate failing the task is a report with verdict
        ``error``); raises ``EvaluationInfrastructureError`` otherwise.
        """
        try:
            return await self._run(item, signal)
        except EvaluationInfrastructureError:
            raise
        except Step as step:
            raise step_error(step.code, step.__cause__) from step.__cause__
        except Exception as error:
            raise infrastructure_error() from error

    async def _run(self, item: EvaluationWorkItem, signal: AbortSignal) -> EvaluationRunReport:
        task = item.task
        owned: list[Callable[[], object]] = []
        primary: EvaluationInfrastructureError | None = None
        verdict: EvaluationVerdict = "error"
        metrics = PublicMetrics()
        error_code: str | None = None
        started = read_time(self.clock)
        try:
            path = await self._workspace(item, signal, owned)
            abort_check(signal)
            run = await self._runtime(item, signal, path, owned)
            abort_check(signal)
            output = await self._output(run, task, signal)
            if output.status == "failed":
                metrics, error_code = output.metrics, output.error_code
            else:
                verdict, metrics = await self._judge(item, output, signal)
        except Step as step:
            primary = step_error(step.code, step.__cause__)
        except asyncio.CancelledError:
            # The run's task itself is cancelled: release in ownership order, under the
            # cleanup timer, on one background coroutine (its failures are swallowed).
            start_cleanup(self._release(owned))
            raise
        except Exception as error:
            primary = infrastructure_error(error)
        failures = await self._release(owned)
        if failures:
            causes: list[Exception] = [] if primary is None else [primary]
            aggregate = EvaluationCleanupErrors(
                MESSAGES["EVALUATION_CLEANUP_FAILED"], [*causes, *failures]
            )
            raise step_error("EVALUATION_CLEANUP_FAILED", aggregate)
        if primary is not None:
            raise primary
        abort_check(signal)
        finished = read_time(self.clock)
        duration = finished - started
        if not math.isfinite(duration) or duration < 0:
            raise Step("EVALUATION_CLOCK_FAILED", "the duration must be finite and not negative")
        return EvaluationRunReport(
            task_id=task.id,
            run_id=item.run_id,
            candidate_id=self.candidate_id,
            verdict=verdict,
            public_metrics=metrics,
            duration_ms=duration,
            error_code=error_code,
        )

    async def _workspace(
        self, item: EvaluationWorkItem, signal: AbortSignal, owned: list[Callable[[], object]]
    ) -> str:
        code: EvaluationErrorCode = "EVALUATION_WORKSPACE_FAILED"
        request = WorkspaceFactoryInput(
            candidate_id=self.candidate_id,
            task_id=item.task.id,
            run_id=item.run_id,
            repetition=item.repetition,
            signal=signal,
        )
        try:
            workspace = await settle_value(signal, self.workspace_factory(request), "cleanup")
            owned.append(ownership_method(workspace, "cleanup"))
            path: object = workspace.path
            if isinstance(path, os.PathLike):
                path = os.fspath(cast("os.PathLike[str]", path))
            if not is_non_empty(path) or len(path) > MAX_WORKSPACE_PATH_CODE_POINTS:
                raise ValueError("the workspace path must be a non-empty bounded string")
        except Step:
            raise
        except (Exception, asyncio.CancelledError) as error:
            _fail_step(signal, code, error)
        return path

    async def _runtime(
        self,
        item: EvaluationWorkItem,
        signal: AbortSignal,
        path: str,
        owned: list[Callable[[], object]],
    ) -> Callable[[EvaluationRuntimeInput], object]:
        request = RuntimeFactoryInput(
            candidate_id=self.candidate_id,
            task_id=item.task.id,
            run_id=item.run_id,
            repetition=item.repetition,
            workspace_path=path,
            signal=signal,
        )
        try:
            runtime = await settle_value(signal, self.candidate.create_runtime(request), "dispose")
            owned.append(ownership_method(runtime, "dispose"))
            run = runtime.run
            if not callable(run):
                raise ValueError("run must be callable")
        except Step:
            raise
        except (Exception, asyncio.CancelledError) as error:
            _fail_step(signal, "EVALUATION_RUNTIME_FACTORY_FAILED", error)
        return cast("Callable[[EvaluationRuntimeInput], object]", run)

    async def _output(
        self,
        run: Callable[[EvaluationRuntimeInput], object],
        task: EvaluationWorkTask,
        signal: AbortSignal,
    ) -> Output:
        try:
            produced = await settle_value(
                signal, run(EvaluationRuntimeInput(prompt=task.prompt, signal=signal)), None
            )
            return capture_output(produced, task)
        except Step:
            raise
        except (Exception, asyncio.CancelledError) as error:
            _fail_step(signal, "EVALUATION_RUNTIME_FAILED", error)

    async def _judge(
        self, item: EvaluationWorkItem, output: Output, signal: AbortSignal
    ) -> tuple[EvaluationVerdict, PublicMetrics]:
        task = item.task
        request = JudgeInput(
            task_id=task.id,
            run_id=item.run_id,
            prompt=task.prompt,
            expected_public_evidence=task.expected_public_evidence,
            candidate_public_evidence=output.evidence,
            signal=signal,
        )
        try:
            judged = await settle_value(signal, self.judge.judge(request), None)
            verdict, judge_metrics = capture_judgement(judged)
            return verdict, merge_metrics(output.metrics, judge_metrics)
        except Step:
            raise
        except (Exception, asyncio.CancelledError) as error:
            _fail_step(signal, "EVALUATION_JUDGE_FAILED", error)

    async def _release(self, owned: list[Callable[[], object]]) -> list[Exception]:
        """Run the cleanups in ownership order (last acquired first), each once, each
        bounded by the cleanup timer; returns their failures."""
        failures: list[Exception] = []
        pending = list(reversed(owned))
        owned.clear()
        while pending:
            method = pending.pop(0)
            try:
                failure = await self._release_one(method)
            except asyncio.CancelledError:
                for rest in pending:
                    _release_in_background(rest)
                raise
            if failure is not None:
                failures.append(failure)
        return failures

    async def _release_one(self, method: Callable[[], object]) -> Exception | None:
        """Invoke one cleanup under the cleanup timer; its failure, or ``None``."""
        timed_out: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def on_timeout() -> None:
            if not timed_out.done():
                timed_out.set_result(None)

        try:
            cancel: object = self.cleanup_timer.schedule(self.cleanup_timeout_ms, on_timeout)
        except Exception as error:
            timed_out.cancel()
            _release_in_background(method)
            return error
        try:
            failure = await _invoke_cleanup(method, timed_out)
        except BaseException:
            timed_out.cancel()
            _cancel_timer(cancel)
            raise
        timed_out.cancel()
        cancel_failure = _cancel_timer(cancel)
        return cancel_failure if failure is None else failure


async def _invoke_cleanup(
    method: Callable[[], object], timed_out: asyncio.Future[None]
) -> Exception | None:
    try:
        result = method()
    except Exception as error:
        return error
    except asyncio.CancelledError as error:  # raised by the cleanup itself
        return step_error("EVALUATION_CLEANUP_FAILED", error)
    if not is_awaitable(result):
        return None
    work: asyncio.Future[Any] = asyncio.ensure_future(result)
    try:
        await asyncio.wait((work, timed_out), return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        PENDING.add(work)
        work.add_done_callback(late_cleanup(None))
        raise
    if not work.done():
        PENDING.add(work)
        work.add_done_callback(late_cleanup(None))
        return step_error("EVALUATION_CLEANUP_TIMEOUT")
    if work.cancelled():
        return step_error("EVALUATION_CLEANUP_FAILED", asyncio.CancelledError())
    error = work.exception()
    if error is None or isinstance(error, Exception):
        return error
    return step_error("EVALUATION_CLEANUP_FAILED", error)


def _cancel_timer(cancel: object) -> Exception | None:
    """Call the timer's cancel function (once); a failure of it, or a timer that returned
    no cancel function, is the cleanup's failure."""
    if not callable(cancel):
        return TypeError("cleanup timer must return a cancel function")
    try:
        cancel()
    except Exception as error:
        return error
    return None


def _release_in_background(method: Callable[[], object]) -> None:
    """Invoke a cleanup nobody will wait for (the run's task is being cancelled)."""
    try:
        result = method()
    except Exception:
        return
    if is_awaitable(result):
        start_cleanup(result)


def _fail_step(signal: AbortSignal, code: EvaluationErrorCode, error: BaseException) -> NoReturn:
    """A step failed: cancellation passes through (the signal is aborted), else ``code``.

    A ``CancelledError`` is a failure of the step only when caller code raised it on its own;
    a cancellation of the running task is re-raised as it is.
    """
    if isinstance(error, asyncio.CancelledError):
        reraise_task_cancellation(error)
    if signal_aborted(signal):
        raise Step("EVALUATION_CANCELLED", "aborted") from error
    raise Step(code, str(code)) from error
