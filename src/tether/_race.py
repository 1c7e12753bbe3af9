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

The driver is the inner loop of ``asyncio.Task`` in miniature: it forwards what the awaitable
yields, and while the awaitable waits on a future it waits instead on a private future that
either that future or the signal completes.
"""

from __future__ import annotations

import asyncio
import types
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Generator
from typing import Any, Generic, TypeVar

from tether.abort import AbortSignal, abort_exception
from tether.stream import EventStreamIterator

__all__ = [
    "NotAwaitableError",
    "RacedIterator",
    "check_signal",
    "close_quietly",
    "neutralize",
    "observe",
    "race",
    "resume",
    "signal_aborted",
    "signal_reason",
    "start_cleanup",
]

T = TypeVar("T")
D = TypeVar("D")
_COROUTINE: type[Any] = types.CoroutineType

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
    """Raise the abort reason if ``signal`` is aborted (hardened ``throw_if_aborted``)."""
    if _aborted_slot.__get__(signal, AbortSignal):
        raise abort_exception(_reason_slot.__get__(signal, AbortSignal))


def observe(future: asyncio.Future[Any]) -> None:
    """Mark a future's eventual exception as retrieved, so it is never logged as lost."""
    future.add_done_callback(_retrieve)


def _retrieve(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()


def neutralize(awaitable: object) -> None:
    """Dispose of an awaitable that will never be awaited, without any runtime warning."""
    if isinstance(awaitable, types.CoroutineType):
        awaitable.close()
    elif isinstance(awaitable, asyncio.Future):
        observe(awaitable)  # pyright: ignore[reportUnknownArgumentType]


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
    step = _steps_of(awaitable)
    pending: BaseException | None = None
    while True:
        try:
            if pending is None:
                yielded = step.send(None)
            else:
                error, pending = pending, None
                yielded = step.throw(error)
        except StopIteration as stop:
            return stop.value
        if yielded is None:  # a bare yield: give the event loop one turn
            try:
                yield None
            except GeneratorExit:
                step.close()
                raise
            except BaseException as error:
                pending = error
                continue
            if signal_aborted(signal):
                _abandon(step, None, on_abandoned)
                raise abort_exception(signal_reason(signal)) from None
            continue
        if getattr(yielded, "_asyncio_future_blocking", None) is not True:
            pending = RuntimeError(f"race() got bad yield: {yielded!r}")
            continue
        future: asyncio.Future[Any] = yielded
        future._asyncio_future_blocking = False
        if not future.done() and not signal_aborted(signal):  # the step itself may have aborted
            wake: asyncio.Future[None] = asyncio.get_running_loop().create_future()

            def ready(_: object = None, wake: asyncio.Future[None] = wake) -> None:
                if not wake.done():
                    wake.set_result(None)

            future.add_done_callback(ready)
            remove = _add_listener(signal, ready)
            try:
                yield from wake
            except GeneratorExit:
                remove()
                future.remove_done_callback(ready)
                step.close()
                raise
            except BaseException as error:  # our task was cancelled: pass it inwards
                remove()
                future.remove_done_callback(ready)
                future.cancel()
                pending = error
                continue
            remove()
            future.remove_done_callback(ready)
        if signal_aborted(signal):
            _abandon(step, future, on_abandoned)
            raise abort_exception(signal_reason(signal)) from None


class NotAwaitableError(TypeError):
    """``race()`` was given something that cannot be awaited."""


def _steps_of(awaitable: Awaitable[Any]) -> Any:
    """The object to send into: a coroutine itself, or what ``__await__`` returns."""
    if type(awaitable) is _COROUTINE:
        return awaitable
    try:
        method = type(awaitable).__await__
    except AttributeError:
        raise NotAwaitableError(f"{type(awaitable).__name__} object can't be awaited") from None
    return method(awaitable)


def _abandon(
    step: Any, future: asyncio.Future[Any] | None, on_abandoned: Callable[[bool], object] | None
) -> None:
    """Cancel abandoned work as a task would; finish any async cleanup in the background."""
    if future is not None and not future.done():
        future.cancel()
    try:
        yielded = step.throw(asyncio.CancelledError())
    except (Exception, asyncio.CancelledError):
        if on_abandoned is not None:
            on_abandoned(True)
        return

    def settled() -> None:
        if on_abandoned is not None:
            on_abandoned(True)

    _in_background(resume(step, yielded), settled)
    if on_abandoned is not None:
        on_abandoned(False)


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
    if any, runs on a background task. Exceptions are swallowed: cleanup never replaces the
    outcome of the work it follows.
    """
    try:
        step = _steps_of(awaitable)  # pyright: ignore[reportArgumentType]
        yielded = step.send(None)
    except (Exception, asyncio.CancelledError):
        return
    _in_background(resume(step, yielded), None)


def close_quietly(iterator: object) -> None:
    """Request ``aclose()`` of an abandoned async iterator; never raises, never waits."""
    try:
        closer = getattr(iterator, "aclose", None)
        if closer is None or not callable(closer):
            return
        pending = closer()
    except Exception:
        return
    if pending is not None:
        start_cleanup(pending)


class RacedIterator(Generic[T]):
    """Consume an untrusted async iterator one raced step at a time, then close it properly.

    ``await next()`` races each ``__anext__`` against the signal. ``close()`` requests
    ``aclose()`` unless the iterator already ended; if an abandoned step is still running in
    the background, the close waits for it to settle first (closing a running async
    generator is an error).
    """

    __slots__ = ("_busy", "_close_requested", "_finished", "_iterator", "_signal")

    def __init__(self, iterator: AsyncIterator[T], signal: AbortSignal) -> None:
        self._iterator = iterator
        self._signal = signal
        self._finished = False
        self._busy = False
        self._close_requested = False

    def poll(self, default: D) -> T | D:
        """An item that is ready without waiting, else ``default``.

        Only tether's own ``EventStream`` iterators are polled (nothing untrusted runs); any
        other iterator always needs ``next()``.
        """
        iterator = self._iterator
        if type(iterator) is not EventStreamIterator:
            return default
        try:
            return iterator.poll(default)  # pyright: ignore[reportUnknownVariableType]
        except BaseException:
            self._finished = True
            raise

    async def next(self) -> T:
        """The next item; ``StopAsyncIteration`` at the end; the abort reason on abort."""
        try:
            step = self._iterator.__anext__()
        except BaseException:
            self._finished = True
            raise
        try:
            return await race(self._signal, step, self._abandoned)
        except StopAsyncIteration:
            self._finished = True
            raise

    def _abandoned(self, settled: bool) -> None:
        self._busy = not settled
        if settled and self._close_requested:
            self._close_requested = False
            close_quietly(self._iterator)

    def close(self) -> None:
        """Request cleanup of the iterator if it has not ended; idempotent."""
        if self._finished:
            return
        self._finished = True
        if self._busy:
            self._close_requested = True
        else:
            close_quietly(self._iterator)


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
