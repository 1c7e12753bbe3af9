"""Await untrusted work while racing an ``AbortSignal``, with no polling, timers or helper tasks.

``await race(signal, awaitable)`` behaves like ``await awaitable`` (same task, same context,
same cancellation semantics) except that an abort wins at once: the abort reason is raised
even while the awaitable is still blocked. The abandoned work is then cancelled the way a task
would be (``CancelledError`` at its await, so its ``finally`` blocks run); if it still wants to
run cleanup, it finishes on a background task whose outcome is observed.

``on_abandoned(settled)`` reports an abandonment before the abort reason is raised:
``settled=True`` when the abandoned work already finished, ``settled=False`` when it goes on
in the background, followed by a second call with ``settled=True`` once it has. Only settled
work (an async generator no longer running) may be closed.

The driver is the inner loop of ``asyncio.Task`` in miniature: while the awaitable waits on a
pending future it waits instead on a private future that either that future or the signal
completes. Whatever else the awaitable yields (a bare ``yield``, an already-done future, a
value that is not a future) gets what a task gives it: one turn of the event loop before the
awaitable resumes, so timers and aborts still run even if it never blocks. An abort reason that
is a ``BaseException`` but not an ``Exception`` is raised in an ``AbortError`` (see
``tether.abort``), also when the awaitable itself raises that very reason.

Cleanup (``aclose()`` of an abandoned iterator, the rest of abandoned work) never raises into
the code it follows: its failures are swallowed, except ``KeyboardInterrupt`` and
``SystemExit``, which keep their meaning for the process as they do in asyncio.

An untrusted async iterator is read through ``tether._async.race_iterator.RacedIterator``, which
races each of its steps with this module.
"""

from __future__ import annotations

import asyncio
import types
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Generator
from typing import Any, TypeGuard, TypeVar, final

from tether._base.exact_types import await_steps, is_awaitable, type_of
from tether.abort import AbortController, AbortError, AbortSignal, abort_exception

__all__ = [
    "NotAwaitableError",
    "Started",
    "check_signal",
    "close_quietly",
    "follow_signal",
    "is_raw_abort_reason",
    "neutralize",
    "observe",
    "race",
    "race_eagerly",
    "reraise_task_cancellation",
    "resume",
    "signal_aborted",
    "signal_reason",
    "start_cleanup",
    "wait_out",
]

T = TypeVar("T")
D = TypeVar("D")
_COROUTINE: type[Any] = types.CoroutineType


async def _probe() -> AsyncIterator[None]:  # pragma: no cover - never iterated
    yield None


def _asend_type() -> type[Any]:
    """The class of an async generator's ``__anext__()`` awaitable (``async_generator_asend``,
    not exposed by ``types``), read from a generator that never runs."""
    generator = _probe()
    step: Any = generator.__anext__()
    kind: type[Any] = type_of(step)
    step.close()
    return kind


_ASEND: type[Any] = _asend_type()

_aborted_slot = AbortSignal.__dict__["_aborted"]
_reason_slot = AbortSignal.__dict__["_reason"]
_add_listener = AbortSignal.add_listener


def signal_aborted(signal: AbortSignal) -> bool:
    """The signal's state, read through the class: an instance cannot shadow it.

    Raises ``AttributeError`` for an object that was never initialised as a signal.
    """
    return _aborted_slot.__get__(signal, AbortSignal)


def signal_reason(signal: AbortSignal) -> object:
    """The signal's abort reason, read through the class."""
    return _reason_slot.__get__(signal, AbortSignal)


def check_signal(signal: AbortSignal) -> None:
    """Raise the abort reason if ``signal`` is aborted (hardened ``throw_if_aborted``; a reason
    that is not an ``Exception`` is carried by an ``AbortError``)."""
    if _aborted_slot.__get__(signal, AbortSignal):
        raise abort_exception(_reason_slot.__get__(signal, AbortSignal))


def reraise_task_cancellation(error: asyncio.CancelledError) -> None:
    """Re-raise ``error`` when the current task is being cancelled; a ``CancelledError`` that
    untrusted code raised on its own is left to the caller to report as a failure."""
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise error


def is_raw_abort_reason(signal: AbortSignal, error: BaseException) -> bool:
    """Whether ``error`` is ``signal``'s abort reason and not an ``Exception``: caller code
    re-raised the raw reason (``throw_if_aborted``). The work was aborted, not interrupted:
    raise an ``AbortError`` carrying it, or end the run ``cancelled``.

    A predicate, so that callers keep no local reference to the exception they re-raise: one
    would tie the frame and the exception's traceback into a cycle on every exception."""
    return (
        not isinstance(error, Exception)
        and _aborted_slot.__get__(signal, AbortSignal)
        and _reason_slot.__get__(signal, AbortSignal) is error
    )


def observe(future: asyncio.Future[Any]) -> None:
    """Mark a future's eventual exception as retrieved, so it is never logged as lost."""
    future.add_done_callback(_retrieve)


def _retrieve(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()


async def wait_out(future: asyncio.Future[Any]) -> bool:
    """Wait until ``future`` is done, even if the waiting task is cancelled meanwhile (work
    that cannot be stopped: disk work on a worker thread, a task that must settle first);
    whether it was. The caller re-raises the cancellation once it has dealt with the outcome."""
    cancelled = False
    while not future.done():
        try:
            await asyncio.wait((future,))
        except asyncio.CancelledError:
            cancelled = True
    return cancelled


def _is_future(value: object) -> TypeGuard[asyncio.Future[Any]]:
    """``isinstance(value, asyncio.Future)``, narrowed with its result type not known."""
    return isinstance(value, asyncio.Future)


def neutralize(awaitable: object) -> None:
    """Dispose of an awaitable that will never be awaited, without any runtime warning."""
    if isinstance(awaitable, types.CoroutineType):
        awaitable.close()
    elif _is_future(awaitable):
        observe(awaitable)


@types.coroutine
def race(
    signal: AbortSignal,
    awaitable: Awaitable[T],
    on_abandoned: Callable[[bool], object] | None = None,
) -> Generator[Any, Any, T]:
    """Await ``awaitable``; if ``signal`` aborts first, raise the abort reason at once."""
    if signal_aborted(signal):
        neutralize(awaitable)
        raise abort_exception(signal_reason(signal))
    return (yield from drive_steps(signal, _steps_of(awaitable), _NOT_STARTED, on_abandoned))


@final
class Started:
    """An awaitable whose first step ``race_eagerly`` ran and which suspended there: await
    ``started.race()`` to go on with it exactly where ``race`` would have."""

    __slots__ = ("_on_abandoned", "_signal", "_step", "_yielded")

    def __init__(
        self,
        signal: AbortSignal,
        step: Any,
        yielded: object,
        on_abandoned: Callable[[bool], object] | None,
    ) -> None:
        self._signal = signal
        self._step = step
        self._yielded = yielded
        self._on_abandoned = on_abandoned

    def race(self) -> Awaitable[Any]:
        """The rest of the race, from the step that suspended (awaitable once).

        The ``drive_steps`` generator itself, made awaitable (``_awaited_steps``), rather
        than a generator of its own delegating to it: one object fewer for each suspended
        tool call or model step (``bench_scale``: objects per run in flight are what the
        cycle collector's full passes walk)."""
        step, yielded = self._step, self._yielded
        self._step = self._yielded = None
        return _awaited_steps(self._signal, step, yielded, self._on_abandoned)

    def abandon(self) -> None:
        """Give up the suspended awaitable as an abort would (see ``race``)."""
        step, self._step = self._step, None
        if step is not None:
            yielded: Any = self._yielded
            blocking = getattr(yielded, "_asyncio_future_blocking", None) is True
            _abandon(step, yielded if blocking else None, self._on_abandoned)


def race_eagerly(
    signal: AbortSignal,
    awaitable: Awaitable[T],
    on_abandoned: Callable[[bool], object] | None = None,
) -> T | Started:
    """``race``, with the first step taken now: the value when the awaitable completes without
    suspending (a scripted turn, a tool that never waits), else a ``Started`` to await with
    ``await started.race()``.

    Why: ``await race(...)`` costs a coroutine and a generator per item even when nothing
    waits, which made a step of a run with async-generator model doubles twice as dear as one
    with plain-data replies. The first step is the one ``race`` itself takes first, in the
    same task, after the same abort check; a raw abort reason raised there is an
    ``AbortError`` as in ``race``. ``tests/base/test_race.py`` checks the two paths agree on any
    awaitable. A value that is a ``Started`` itself can only be tether's own: callers treat it
    as the continuation.
    """
    if _aborted_slot.__get__(signal, AbortSignal):  # signal_aborted(), inlined: once per item
        neutralize(awaitable)
        raise abort_exception(signal_reason(signal))
    kind = type(awaitable)
    step: Any = awaitable if kind is _COROUTINE or kind is _ASEND else _steps_of(awaitable)
    try:
        yielded = step.send(None)
    except StopIteration as stop:
        return stop.value
    except BaseException as error:
        if is_raw_abort_reason(signal, error):
            raise AbortError(reason=error) from None
        raise
    return Started(signal, step, yielded, on_abandoned)


_NOT_STARTED: Any = object()
"""``drive_steps``'s ``yielded`` before a step was taken."""


def drive_steps(
    signal: AbortSignal,
    step: Any,
    yielded: Any,
    on_abandoned: Callable[[bool], object] | None,
) -> Generator[Any, Any, Any]:
    """``race``'s loop over the awaitable's steps (``yielded``: what the step already taken
    yielded, else ``_NOT_STARTED``)."""
    pending: BaseException | None = None
    while True:
        if yielded is _NOT_STARTED:
            try:
                if pending is None:
                    yielded = step.send(None)
                else:
                    error, pending = pending, None
                    yielded = step.throw(error)
            except StopIteration as stop:
                return stop.value
            except BaseException as error:
                if is_raw_abort_reason(signal, error):
                    raise AbortError(reason=error) from None
                raise
        future: asyncio.Future[Any] | None = None
        if getattr(yielded, "_asyncio_future_blocking", None) is True:
            blocking: asyncio.Future[Any] = yielded
            future = blocking
            blocking._asyncio_future_blocking = False
            if not blocking.done() and not signal_aborted(signal):  # the step may have aborted
                wake: asyncio.Future[None] = asyncio.get_running_loop().create_future()

                def ready(_: object = None, wake: asyncio.Future[None] = wake) -> None:
                    if not wake.done():
                        wake.set_result(None)

                blocking.add_done_callback(ready)
                remove = _add_listener(signal, ready)
                try:
                    yield from wake
                except GeneratorExit:
                    remove()
                    blocking.remove_done_callback(ready)
                    step.close()
                    raise
                except BaseException as error:  # our task was cancelled: pass it inwards
                    remove()
                    blocking.remove_done_callback(ready)
                    blocking.cancel()
                    pending = error
                    yielded = _NOT_STARTED
                    continue
                remove()
                blocking.remove_done_callback(ready)
                if not signal_aborted(signal):
                    yielded = _NOT_STARTED
                    continue  # the future is done: resume the awaitable at once
        elif yielded is not None:  # answered after the loop turn below, as a task answers it
            pending = RuntimeError(f"race() got bad yield: {yielded!r}")
        if not signal_aborted(signal):
            # A bare yield, an already-done future or a bad yield: the awaitable did not block,
            # so give the event loop one turn (as a task would) before resuming it. An
            # awaitable that never blocks thus still lets timers and aborts run.
            try:
                yield None
            except GeneratorExit:
                step.close()
                raise
            except BaseException as error:  # our task was cancelled: pass it inwards
                pending = error
                yielded = _NOT_STARTED
                continue
            if not signal_aborted(signal):
                yielded = _NOT_STARTED
                continue
        _abandon(step, future, on_abandoned)
        raise abort_exception(signal_reason(signal)) from None


_awaited_steps: Callable[
    [AbortSignal, Any, Any, Callable[[bool], object] | None], Awaitable[Any]
] = types.coroutine(drive_steps)
"""``drive_steps`` as an awaitable (``types.coroutine`` flags the generator function's code
in place, so ``yield from drive_steps(...)`` in ``race`` is unchanged): ``Started.race``."""


class NotAwaitableError(TypeError):
    """``race()`` was given something that cannot be awaited."""


def _steps_of(awaitable: object) -> Any:
    """The object to send into: what ``await`` would drive
    (``tether._base.exact_types.await_steps``).

    A coroutine and an async generator's ``__anext__()`` step (``_ASEND``) are their own
    steps: ``await`` drives them directly (the step's ``__await__`` returns itself), so the
    class walk of ``is_awaitable``/``await_steps`` is skipped for them. Why: a scripted turn
    built as an async generator takes one such step per item, and the two walks cost more
    than the item. Both classes are final (they cannot be subclassed), so the exact-class
    test admits nothing else; ``tests/base/test_race.py`` checks the answer equals
    ``await_steps``'s.
    """
    kind = type(awaitable)
    if kind is _COROUTINE or kind is _ASEND:
        return awaitable
    if not is_awaitable(awaitable):
        raise NotAwaitableError(f"{type(awaitable).__name__} object can't be awaited")
    return await_steps(awaitable)


def _abandon(
    step: Any, future: asyncio.Future[Any] | None, on_abandoned: Callable[[bool], object] | None
) -> None:
    """Cancel abandoned work as a task would; finish any async cleanup in the background."""
    if future is not None and not future.done():
        future.cancel()
    try:
        yielded = step.throw(asyncio.CancelledError())
    except _PROCESS_EXITS:
        raise
    except BaseException:
        if on_abandoned is not None:
            on_abandoned(True)
        return

    def settled() -> None:
        if on_abandoned is not None:
            on_abandoned(True)

    _in_background(resume(step, yielded), settled)
    if on_abandoned is not None:
        on_abandoned(False)


_PROCESS_EXITS = (KeyboardInterrupt, SystemExit)
"""What cleanup lets through: the process-level exits, which asyncio itself never swallows."""

_BACKGROUND: set[asyncio.Task[Any]] = set()
"""Strong references to cleanup tasks: the event loop itself keeps only weak ones."""


def _in_background(work: Coroutine[Any, Any, Any], then: Callable[[], object] | None) -> None:
    task = asyncio.get_running_loop().create_task(work)
    _BACKGROUND.add(task)

    def done(finished: asyncio.Task[Any]) -> None:
        _BACKGROUND.discard(finished)
        _retrieve(finished)
        if then is not None:
            then()

    task.add_done_callback(done)


def start_cleanup(awaitable: object) -> None:
    """Start an awaitable that nobody will wait for (a cleanup), observing its outcome.

    Its first step runs now, so cleanup that does not block finishes synchronously; the rest,
    if any, runs on a background task. Failures are swallowed, ``CancelledError`` and other
    bare ``BaseException``s included: cleanup never replaces the outcome of the work it
    follows. Only ``KeyboardInterrupt`` and ``SystemExit`` propagate.
    """
    try:
        step = _steps_of(awaitable)
        yielded = step.send(None)
    except _PROCESS_EXITS:
        raise
    except BaseException:
        return
    _in_background(resume(step, yielded), None)


def close_quietly(iterator: object) -> None:
    """Request ``aclose()`` of an abandoned async iterator; never waits, and never raises
    anything but ``KeyboardInterrupt`` or ``SystemExit`` (see ``start_cleanup``)."""
    try:
        closer = getattr(iterator, "aclose", None)
        if closer is None or not callable(closer):
            return
        pending = closer()
    except _PROCESS_EXITS:
        raise
    except BaseException:
        return
    if pending is not None:
        start_cleanup(pending)


async def resume(step: Any, yielded: Any) -> Any:
    """Finish an awaitable that already ran up to ``yielded``, as a coroutine for a task."""
    return await _continue(step, yielded)


@types.coroutine
def _continue(step: Any, yielded: Any) -> Generator[Any, Any, Any]:
    """Keep driving an already-started awaitable, passing what it yields to the task."""
    while True:
        try:
            sent = yield yielded
        except GeneratorExit:
            step.close()
            raise
        except BaseException as error:
            try:
                yielded = step.throw(error)
            except StopIteration as stop:
                return stop.value
        else:
            try:
                yielded = step.send(sent)
            except StopIteration as stop:
                return stop.value


def follow_signal(
    signal: AbortSignal | None, controller: AbortController
) -> Callable[[], None] | None:
    """Make ``controller`` abort when the caller's ``signal`` does (with the same reason);
    returns the function that stops following, or ``None`` when ``signal`` cannot be read.

    A run (or a model stream) checks and races its own controller's signal, so the caller's
    is read only here and in the one listener, and a long-lived caller signal keeps no
    reference to finished work once the returned function has been called.
    """
    if signal is None:
        return _nothing
    try:
        if signal_aborted(signal):
            controller.abort(signal_reason(signal))
            return _nothing
        return _add_listener(signal, _Forward(signal, controller))
    except Exception:
        return None


class _Forward:
    """``follow_signal``'s listener: abort ``controller`` with ``signal``'s reason. One
    small object rather than a closure (a function, two cells and their tuple), as a run
    keeps it for as long as it lives (fewer objects per run for the cycle collector)."""

    __slots__ = ("_controller", "_signal")

    def __init__(self, signal: AbortSignal, controller: AbortController) -> None:
        self._signal = signal
        self._controller = controller

    def __call__(self) -> None:
        self._controller.abort(signal_reason(self._signal))


def _nothing() -> None:
    return None
