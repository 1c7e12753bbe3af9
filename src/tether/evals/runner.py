"""Running an evaluation: option capture, the per-run job, and the evaluation's outcome.

``run_evaluation`` validates its options once (``EVALUATION_INVALID_OPTIONS``), refuses an
already aborted signal (``EVALUATION_CANCELLED``), builds the work items (each task in fixture
order, repetitions 1..R, run IDs ``run-000001``, ...) and one ``EvaluationJob``, and lets an
executor (``LocalExecutor`` by default) run them. ``EvaluationJob.run_one`` is checkpoint 14's
``runOne``: clock, workspace, runtime, run, judge, then cleanup in ownership order (runtime
``dispose``, then workspace ``cleanup``), each at most once, each bounded by the cleanup
timer and never skipped, whatever happened before.

Every awaitable produced by caller code (workspace factory, ``create_runtime``, ``run``,
``judge``) is raced against the shared signal: on abort the run fails with
``EVALUATION_CANCELLED`` at once, and a workspace or runtime that still arrives later is
cleaned up (its failures swallowed). The abandoned work is not cancelled (it has the signal to
stop on); strong references keep it alive until it settles.

What a run is handed: a work item carries an ``EvaluationWorkTask`` (task ID, prompt, required
evidence), never the task's fixture-only fields (``candidate_public_evidence``,
``expected_verdict``), so those stay in the driver and never travel to a Ray worker; the runtime
gets ``EvaluationRuntimeInput`` (prompt and signal) and the judge ``JudgeInput``. That is the
whole boundary: an in-process candidate is *trusted code*. It runs in the interpreter of its run
(locally, the driver's), and code that walks that interpreter (coroutine frames, the task list,
the garbage collector) can reach anything the process holds, the required evidence handed to
the judge included. This is not a sandbox; isolate untrusted candidates in another process.

If the run's own task is cancelled (not the signal: the task), the resources it acquired are
released by one background coroutine, in ownership order and under the cleanup timer, as
they would have been; their failures are then swallowed (nobody is left to report them to).

The job is picklable (the Ray executor ships it): the defaults (``ZeroClock``,
``LoopCleanupTimer``, ``TemporaryWorkspaceFactory``) are module-level classes, and the default
workspace is a temporary directory made on whichever machine runs the item.
"""

from __future__ import annotations

import asyncio
import math
import os
import shutil
import tempfile
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, NoReturn, TypeAlias, cast

from tether._race import neutralize, reraise_task_cancellation, signal_aborted, start_cleanup
from tether._text import is_non_empty
from tether._types import instance_of, is_awaitable
from tether.abort import AbortSignal
from tether.evals.errors import (
    EvaluationCleanupErrors,
    EvaluationErrorCode,
    EvaluationInfrastructureError,
)
from tether.evals.executors import (
    EvaluationExecutor,
    EvaluationWorkItem,
    ExecutionResult,
    ItemOutcome,
    LocalExecutor,
    cancelled_error,
    infrastructure_error,
)
from tether.evals.judge import deterministic_judge
from tether.evals.report import aggregate_metrics, capture_metrics
from tether.evals.tasks import load_evaluation_tasks, task_to_source, utf16_units
from tether.evals.types import (
    ERROR_CODE_PATTERN,
    ID_PATTERN,
    MAX_CONCURRENCY,
    MAX_EVALUATION_CLEANUP_MS,
    MAX_EVALUATION_RUNS,
    MAX_EVIDENCE_ITEM_CODE_POINTS,
    MAX_EVIDENCE_ITEM_UTF16_UNITS,
    MAX_EVIDENCE_ITEMS,
    MAX_OWNERSHIP_DEPTH,
    MAX_REPETITIONS,
    MAX_REPORT_METRICS,
    MAX_SOURCE_METRICS,
    MAX_TASK_EVIDENCE_CODE_POINTS,
    MAX_WORKSPACE_PATH_CODE_POINTS,
    EvaluationCandidate,
    EvaluationCleanupTimer,
    EvaluationClock,
    EvaluationCompleted,
    EvaluationFailed,
    EvaluationJudge,
    EvaluationReport,
    EvaluationRunReport,
    EvaluationRuntimeInput,
    EvaluationTask,
    EvaluationVerdict,
    EvaluationWorkspaceFactory,
    EvaluationWorkTask,
    JudgeInput,
    JudgeOutput,
    PublicMetrics,
    RuntimeFactoryInput,
    WorkspaceFactoryInput,
)

__all__ = [
    "EvaluationJob",
    "LoopCleanupTimer",
    "MonotonicClock",
    "OnRun",
    "TemporaryWorkspace",
    "TemporaryWorkspaceFactory",
    "ZeroClock",
    "run_evaluation",
]

OnRun: TypeAlias = Callable[[ItemOutcome], None]
"""Progress callback: called with each run's report (or failure) as it settles."""

_FAILED_CODE: Final = "TASK_FAILED"


# -- Defaults (module-level classes, so a job pickles) ------------------------------------------


@dataclass(frozen=True, slots=True)
class ZeroClock:
    """The default clock: always 0, so reports are reproducible (durations are 0)."""

    def now(self) -> float:
        """0."""
        return 0.0


@dataclass(frozen=True, slots=True)
class MonotonicClock:
    """A real clock: ``time.perf_counter()`` in milliseconds (for real durations)."""

    def now(self) -> float:
        """Milliseconds on the monotonic performance counter."""
        import time

        return time.perf_counter() * 1000.0


@dataclass(frozen=True, slots=True)
class LoopCleanupTimer:
    """The default cleanup timer: ``loop.call_later`` on the running loop."""

    def schedule(self, delay_ms: int, on_timeout: Callable[[], None], /) -> Callable[[], object]:
        """Call ``on_timeout`` after ``delay_ms``; returns the cancel function."""
        handle = asyncio.get_running_loop().call_later(delay_ms / 1000, on_timeout)
        return handle.cancel


@dataclass(frozen=True, slots=True, kw_only=True)
class TemporaryWorkspace:
    """A temporary directory; ``cleanup()`` removes it (in a worker thread)."""

    path: str

    async def cleanup(self) -> None:
        """Remove the directory and everything in it (nothing if it is already gone)."""
        await asyncio.to_thread(_remove_tree, self.path)


def _remove_tree(path: str) -> None:
    if os.path.lexists(path):
        shutil.rmtree(path)


@dataclass(frozen=True, slots=True)
class TemporaryWorkspaceFactory:
    """The default workspace factory: a fresh ``tempfile.mkdtemp`` directory per run, made
    on the machine that runs it."""

    def __call__(self, input: WorkspaceFactoryInput, /) -> TemporaryWorkspace:
        """A new empty directory named after the run."""
        return TemporaryWorkspace(path=tempfile.mkdtemp(prefix=f"tether-eval-{input.run_id}-"))


# -- Small helpers ------------------------------------------------------------------------------


class _Step(Exception):
    """A run step failed with ``code`` (internal; becomes an infrastructure error)."""

    def __init__(self, code: EvaluationErrorCode, detail: str) -> None:
        super().__init__(detail)
        self.code: EvaluationErrorCode = code


_MESSAGES: Final[dict[EvaluationErrorCode, str]] = {
    "EVALUATION_INVALID_OPTIONS": "Invalid evaluation options",
    "EVALUATION_CANCELLED": "Evaluation was cancelled",
    "EVALUATION_WORKSPACE_FAILED": "Evaluation workspace failed",
    "EVALUATION_RUNTIME_FACTORY_FAILED": "Evaluation runtime factory failed",
    "EVALUATION_RUNTIME_FAILED": "Evaluation runtime failed",
    "EVALUATION_JUDGE_FAILED": "Evaluation judge failed",
    "EVALUATION_CLOCK_FAILED": "Evaluation clock failed",
    "EVALUATION_CLEANUP_FAILED": "Evaluation cleanup failed",
    "EVALUATION_CLEANUP_TIMEOUT": "Evaluation cleanup timed out",
    "EVALUATION_INVALID_REPORT": "Invalid evaluation report",
}


def _error(
    code: EvaluationErrorCode, cause: BaseException | None = None
) -> EvaluationInfrastructureError:
    error = EvaluationInfrastructureError(code, _MESSAGES[code])
    error.__cause__ = cause
    return error


def _options_error(detail: str, cause: BaseException | None = None) -> NoReturn:
    error = EvaluationInfrastructureError(
        "EVALUATION_INVALID_OPTIONS", f"Invalid evaluation options: {detail}"
    )
    raise error from cause


class _Missing:
    __slots__ = ()


_MISSING: Final = _Missing()


def _ownership_method(value: object, name: str) -> Callable[[], object]:
    """``value``'s ``name`` method, looked up without running caller code: an instance
    attribute, a slot, or a plain function (or static/class method) on one of the first
    ``MAX_OWNERSHIP_DEPTH`` classes of its MRO. Properties and other descriptors are rejected
    (``ValueError``), as is anything not callable."""
    owner = type(value)
    found: object = _MISSING
    for klass in owner.__mro__[:MAX_OWNERSHIP_DEPTH]:
        if name in klass.__dict__:
            found = klass.__dict__[name]
            break
    descriptor = type(found)
    method: object
    if isinstance(found, types.MemberDescriptorType):
        try:
            method = found.__get__(value, owner)
        except AttributeError:
            raise ValueError(f"{name} is not set") from None
    else:
        if found is not _MISSING and hasattr(descriptor, "__set__"):
            raise ValueError(f"{name} must not be a property")
        try:
            own: object = object.__getattribute__(value, "__dict__")
        except AttributeError:
            own = None
        if type(own) is dict and name in own:
            method = cast("dict[str, object]", own)[name]
        elif found is _MISSING:
            raise ValueError(f"{name} is missing")
        elif isinstance(found, types.FunctionType):
            method = types.MethodType(found, value)
        elif isinstance(found, staticmethod):
            method = cast("staticmethod[..., object]", found).__func__
        elif isinstance(found, classmethod):
            method = types.MethodType(cast("classmethod[Any, ..., object]", found).__func__, owner)
        elif hasattr(descriptor, "__get__"):
            raise ValueError(f"{name} must be a plain function")
        else:
            method = found
    if not callable(method):
        raise ValueError(f"{name} must be callable")
    return cast("Callable[[], object]", method)


_PENDING: set[asyncio.Future[Any]] = set()
"""Strong references to abandoned work until it settles (the loop holds only weak ones)."""


def _late(method_name: str | None) -> Callable[[asyncio.Future[Any]], None]:
    """A done-callback for abandoned work: clean up a value that arrives after the abort
    (``cleanup`` / ``dispose``), swallowing every failure."""

    def done(future: asyncio.Future[Any]) -> None:
        _PENDING.discard(future)
        if future.cancelled() or future.exception() is not None:
            return
        if method_name is None:
            return
        value = future.result()
        try:
            result = _ownership_method(value, method_name)()
        except Exception:
            return
        if is_awaitable(result):
            start_cleanup(result)

    return done


async def _settle(signal: AbortSignal, value: object, late: str | None) -> Any:
    """``value`` itself, or what it resolves to if it is awaitable, raced against ``signal``.

    On abort raises ``_Step("EVALUATION_CANCELLED")`` at once and leaves the work running;
    ``late`` names the method that cleans its value if one still arrives. The work's own
    failure propagates unchanged.
    """
    if not is_awaitable(value):
        return value
    if signal_aborted(signal):
        if isinstance(value, asyncio.Future):  # already running: clean what it produces
            _PENDING.add(value)
            value.add_done_callback(_late(late))
        else:
            neutralize(value)
        raise _Step("EVALUATION_CANCELLED", "aborted")
    work: asyncio.Future[Any] = asyncio.ensure_future(value)
    loop = asyncio.get_running_loop()
    aborted: asyncio.Future[None] = loop.create_future()

    def wake() -> None:  # runs at most once, and never after ``remove()``
        aborted.set_result(None)

    remove = signal.add_listener(wake)
    try:
        await asyncio.wait((work, aborted), return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        work.cancel()
        _PENDING.add(work)
        work.add_done_callback(_late(late))
        raise
    finally:
        remove()
        aborted.cancel()
    if signal_aborted(signal):
        _PENDING.add(work)
        work.add_done_callback(_late(late))
        raise _Step("EVALUATION_CANCELLED", "aborted")
    if work.cancelled():  # the work was cancelled by someone else, or raised CancelledError
        raise RuntimeError("the awaited work was cancelled")
    return work.result()


def _abort_check(signal: AbortSignal) -> None:
    if signal_aborted(signal):
        raise _Step("EVALUATION_CANCELLED", "aborted")


def _evidence(value: object, budget: int) -> tuple[tuple[str, ...], int]:
    """Validate produced evidence (0-32 items, per-item limits); returns it and the budget
    left. Raises ``ValueError``."""
    if type(value) is not tuple and type(value) is not list:
        raise ValueError("publicEvidence must be a list")
    items: tuple[object, ...] | list[object] = value  # pyright: ignore[reportUnknownVariableType]
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
    if value is None or value is _MISSING:
        return PublicMetrics()
    return capture_metrics(value, "publicMetrics", MAX_SOURCE_METRICS)


@dataclass(frozen=True, slots=True, kw_only=True)
class _Output:
    status: Literal["completed", "failed"]
    evidence: tuple[str, ...]
    error_code: str | None
    metrics: PublicMetrics


def _capture_output(value: object, task: EvaluationWorkTask) -> _Output:
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
        evidence = source.get("publicEvidence", _MISSING)
        code = source.get("errorCode")
        metrics = source.get("publicMetrics")
    else:
        raise ValueError("the output must be EvaluationCompleted, EvaluationFailed or a dict")
    if status == "completed" and type(status) is str:
        budget = MAX_TASK_EVIDENCE_CODE_POINTS - sum(
            map(len, task.expected_public_evidence.includes)
        )
        produced, _ = _evidence(evidence, budget)
        return _Output(
            status="completed", evidence=produced, error_code=None, metrics=_source_metrics(metrics)
        )
    if status == "failed" and type(status) is str:
        kept = code if type(code) is str and ERROR_CODE_PATTERN.fullmatch(code) else _FAILED_CODE
        return _Output(
            status="failed", evidence=(), error_code=kept, metrics=_source_metrics(metrics)
        )
    raise ValueError('the output status must be "completed" or "failed"')


def _capture_judgement(value: object) -> tuple[Literal["pass", "fail"], PublicMetrics]:
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


def _merge(runtime: PublicMetrics, judge: PublicMetrics) -> PublicMetrics:
    if any(name in runtime for name in judge):
        raise ValueError("runtime and judge metrics share a name")
    if len(runtime) + len(judge) > MAX_REPORT_METRICS:  # pragma: no cover - 64 + 64 fit
        raise ValueError(f"more than {MAX_REPORT_METRICS} metrics")
    return PublicMetrics({**runtime, **judge})


def _read_time(clock: object) -> float:
    try:
        value: object = cast("EvaluationClock", clock).now()
    except Exception as error:
        raise _Step("EVALUATION_CLOCK_FAILED", "the clock failed") from error
    if type(value) is not int and type(value) is not float:
        neutralize(value)
        raise _Step("EVALUATION_CLOCK_FAILED", "the clock must return a number")
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number):
        raise _Step("EVALUATION_CLOCK_FAILED", "the clock must return a finite number")
    return number


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
        except _Step as step:
            raise _error(step.code, step.__cause__) from step.__cause__
        except Exception as error:
            raise infrastructure_error() from error

    async def _run(self, item: EvaluationWorkItem, signal: AbortSignal) -> EvaluationRunReport:
        task = item.task
        owned: list[Callable[[], object]] = []
        primary: EvaluationInfrastructureError | None = None
        verdict: EvaluationVerdict = "error"
        metrics = PublicMetrics()
        error_code: str | None = None
        started = _read_time(self.clock)
        try:
            path = await self._workspace(item, signal, owned)
            _abort_check(signal)
            run = await self._runtime(item, signal, path, owned)
            _abort_check(signal)
            output = await self._output(run, task, signal)
            if output.status == "failed":
                metrics, error_code = output.metrics, output.error_code
            else:
                verdict, metrics = await self._judge(item, output, signal)
        except _Step as step:
            primary = _error(step.code, step.__cause__)
        except asyncio.CancelledError:
            # The run's task itself is cancelled: release in ownership order, under the
            # cleanup timer, on one background coroutine (its failures are swallowed).
            start_cleanup(self._release(owned))
            raise
        except Exception as error:
            primary = infrastructure_error()
            primary.__cause__ = error
        failures = await self._release(owned)
        if failures:
            causes: list[Exception] = [] if primary is None else [primary]
            aggregate = EvaluationCleanupErrors(
                _MESSAGES["EVALUATION_CLEANUP_FAILED"], [*causes, *failures]
            )
            raise _error("EVALUATION_CLEANUP_FAILED", aggregate)
        if primary is not None:
            raise primary
        _abort_check(signal)
        finished = _read_time(self.clock)
        duration = finished - started
        if not math.isfinite(duration) or duration < 0:
            raise _Step("EVALUATION_CLOCK_FAILED", "the duration must be finite and not negative")
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
            workspace = await _settle(signal, self.workspace_factory(request), "cleanup")
            owned.append(_ownership_method(workspace, "cleanup"))
            path: object = workspace.path
            if isinstance(path, os.PathLike):
                path = os.fspath(cast("os.PathLike[str]", path))
            if not is_non_empty(path) or len(path) > MAX_WORKSPACE_PATH_CODE_POINTS:
                raise ValueError("the workspace path must be a non-empty bounded string")
        except _Step:
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
            runtime = await _settle(signal, self.candidate.create_runtime(request), "dispose")
            owned.append(_ownership_method(runtime, "dispose"))
            run = runtime.run
            if not callable(run):
                raise ValueError("run must be callable")
        except _Step:
            raise
        except (Exception, asyncio.CancelledError) as error:
            _fail_step(signal, "EVALUATION_RUNTIME_FACTORY_FAILED", error)
        return cast("Callable[[EvaluationRuntimeInput], object]", run)

    async def _output(
        self,
        run: Callable[[EvaluationRuntimeInput], object],
        task: EvaluationWorkTask,
        signal: AbortSignal,
    ) -> _Output:
        try:
            produced = await _settle(
                signal, run(EvaluationRuntimeInput(prompt=task.prompt, signal=signal)), None
            )
            return _capture_output(produced, task)
        except _Step:
            raise
        except (Exception, asyncio.CancelledError) as error:
            _fail_step(signal, "EVALUATION_RUNTIME_FAILED", error)

    async def _judge(
        self, item: EvaluationWorkItem, output: _Output, signal: AbortSignal
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
            judged = await _settle(signal, self.judge.judge(request), None)
            verdict, judge_metrics = _capture_judgement(judged)
            return verdict, _merge(output.metrics, judge_metrics)
        except _Step:
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
        return _error("EVALUATION_CLEANUP_FAILED", error)
    if not is_awaitable(result):
        return None
    work: asyncio.Future[Any] = asyncio.ensure_future(result)
    try:
        await asyncio.wait((work, timed_out), return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        _PENDING.add(work)
        work.add_done_callback(_late(None))
        raise
    if not work.done():
        _PENDING.add(work)
        work.add_done_callback(_late(None))
        return _error("EVALUATION_CLEANUP_TIMEOUT")
    if work.cancelled():
        return _error("EVALUATION_CLEANUP_FAILED", asyncio.CancelledError())
    error = work.exception()
    if error is None or isinstance(error, Exception):
        return error
    return _error("EVALUATION_CLEANUP_FAILED", error)


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
        raise _Step("EVALUATION_CANCELLED", "aborted") from error
    raise _Step(code, str(code)) from error


# -- Option capture -----------------------------------------------------------------------------


def _integer(value: object, name: str, low: int, high: int) -> int:
    if type(value) is not int or not low <= value <= high:
        _options_error(f"{name} must be an integer from {low} to {high}")
    return value


def _has_method(value: object, name: str) -> bool:
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
        _options_error(f"tasks: {error}", error)


@dataclass(frozen=True, slots=True, kw_only=True)
class _Options:
    job: EvaluationJob
    tasks: tuple[EvaluationTask, ...]
    repetitions: int
    concurrency: int
    signal: AbortSignal
    executor: EvaluationExecutor
    on_run: OnRun | None


def _capture_options(
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
        _options_error("candidate must have an id", error)
    if type(candidate_id) is not str or ID_PATTERN.fullmatch(candidate_id) is None:
        _options_error("candidate.id must match the ID pattern")
    if not _has_method(candidate, "create_runtime"):
        _options_error("candidate.create_runtime must be a function")
    judge = deterministic_judge if judge is None else judge
    if not _has_method(judge, "judge"):
        _options_error("judge.judge must be a function")
    clock = ZeroClock() if clock is None else clock
    if not _has_method(clock, "now"):
        _options_error("clock.now must be a function")
    workspace_factory = (
        TemporaryWorkspaceFactory() if workspace_factory is None else workspace_factory
    )
    if not callable(workspace_factory):
        _options_error("workspace_factory must be a function")
    cleanup_timer = LoopCleanupTimer() if cleanup_timer is None else cleanup_timer
    if not _has_method(cleanup_timer, "schedule"):
        _options_error("cleanup_timer.schedule must be a function")
    executor = LocalExecutor() if executor is None else executor
    if not _has_method(executor, "execute"):
        _options_error("executor.execute must be a function")
    if on_run is not None and not callable(on_run):
        _options_error("on_run must be a function")
    repeat = _integer(repetitions, "repetitions", 1, MAX_REPETITIONS)
    workers = _integer(concurrency, "concurrency", 1, MAX_CONCURRENCY)
    timeout = _integer(cleanup_timeout_ms, "cleanup_timeout_ms", 1, MAX_EVALUATION_CLEANUP_MS)
    if signal is None:
        signal = AbortSignal()
    elif not instance_of(signal, AbortSignal):
        _options_error("signal must be an AbortSignal")
    loaded = _tasks(tasks)
    if len(loaded) * repeat > MAX_EVALUATION_RUNS:
        _options_error(f"tasks x repetitions must not exceed {MAX_EVALUATION_RUNS}")
    job = EvaluationJob(
        candidate=candidate,  # pyright: ignore[reportArgumentType]
        candidate_id=candidate_id,
        judge=judge,  # pyright: ignore[reportArgumentType]
        clock=clock,  # pyright: ignore[reportArgumentType]
        workspace_factory=workspace_factory,  # pyright: ignore[reportArgumentType]
        cleanup_timeout_ms=timeout,
        cleanup_timer=cleanup_timer,  # pyright: ignore[reportArgumentType]
    )
    return _Options(
        job=job,
        tasks=loaded,
        repetitions=repeat,
        concurrency=workers,
        signal=signal,
        executor=executor,  # pyright: ignore[reportArgumentType]
        on_run=on_run,  # pyright: ignore[reportArgumentType]
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
        aggregate = EvaluationCleanupErrors(_MESSAGES["EVALUATION_CLEANUP_FAILED"], causes)
        raise _error("EVALUATION_CLEANUP_FAILED", aggregate)
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
    options = _capture_options(
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
