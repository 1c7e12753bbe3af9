"""Checkpoint 02: ``EventStream``, a single-consumer event channel with a separate result.

A producer calls ``push(event)`` any number of times and then exactly one of ``finish(result)``
or ``fail(error)``; both are synchronous, so plain callbacks can produce while a loop runs. One
consumer at a time iterates the events (``async for``); anyone may ``await stream.result``.

Rules:

* Events are buffered in order, without a capacity limit (there is no backpressure: a producer
  that outruns its consumer grows the buffer). The buffer belongs to the stream, so after an
  iterator is closed with ``aclose()`` a new iterator continues with the unconsumed events.
* Reads waiting for an event are settled first in, first out. A read settled with an event
  whose task is cancelled before it resumes gives the event back in order: to the oldest
  waiting read, else to the head of the buffer; the stream ends no read before that.
* Every buffered event is delivered before the terminal outcome is seen through iteration.
* The first terminal call wins; ``push``/``finish``/``fail`` after it raise
  ``EventStreamStateError("EventStream is already terminal (finished|failed)")``.
* A second iterator while one is active raises
  ``EventStreamStateError("EventStream supports a single consumer at a time")``.
* ``fail(error)``: the same exception object is raised by ``await result`` and by iteration.
  A failed ``result`` that nobody awaits is never logged as an unretrieved exception.
* ``on_abandon(callback)``: the producer learns that its consumer went away before the stream
  settled: the active iterator is closed with ``aclose()``, or a task waiting on the stream
  (reading the next event, or awaiting ``result``) is cancelled and nobody else is waiting on
  it. The callback runs once, at most; ``abandon_notified`` says whether it ran. Leaving an
  ``async for`` with ``break`` does not close the iterator and waits on nothing, so it is
  not an abandonment: the stream may be iterated again, continuing with the unconsumed
  events (a dropped iterator no longer counts as the active consumer).
* Dropping the stream: neither the stream, its iterator nor its ``result`` awaitable refer to
  each other in a cycle, so a stream nobody references any more is freed at once, and a
  producer that holds it only through a weak reference (``weakref.ref(stream, callback)``)
  learns then that its consumer went away. tether's HTTP providers do this: their stream
  closes its HTTP response when it is dropped, without ``aclose()``. ``aclose()`` of the
  iterator (or ``async with contextlib.aclosing(aiter(stream))``) stays the explicit way,
  and the only one for producers that hold their stream strongly.
"""

# The stream and its iterator are one unit and share private state.
# pyright: reportPrivateUsage=false

from __future__ import annotations

import asyncio
import weakref
from collections import deque
from collections.abc import AsyncIterator, Callable, Generator, Iterable
from typing import Any, Final, Generic, TypeGuard, TypeVar

from tether._base.exact_types import instance_of, type_of
from tether._base.tether_error import TetherError

__all__ = ["EventStream", "EventStreamIterator", "EventStreamStateError", "finished_stream"]

E = TypeVar("E")
R = TypeVar("R")
D = TypeVar("D")

_OPEN: Final = 0
_FINISHED: Final = 1
_FAILED: Final = 2

# What a waiting read is settled with: an event is ready for it (``EventStream._delivered``),
# or the iterator closed (the end, or the failure to raise).
_EVENT: Final = object()
_DONE: Final = object()
_NO_EVENTS: Final[deque[Any]] = deque(maxlen=0)  # what a closed iterator reads: always empty
_RAISE: Final = object()


class EventStreamStateError(TetherError, RuntimeError):
    """An ``EventStream`` was used against its rules (``code == "EVENT_STREAM_STATE"``)."""

    def __init__(self, message: str) -> None:
        super().__init__("EVENT_STREAM_STATE", message)


class EventStream(Generic[E, R]):
    """A single-consumer async stream of events ``E`` that settles with one result ``R``.

    >>> stream: EventStream[str, int] = EventStream()
    >>> stream.push("hello"); stream.finish(1)
    >>> # async for event in stream: ...   then   await stream.result  -> 1
    """

    __slots__ = (
        "__weakref__",
        "_abandon",
        "_active",
        "_buffer",
        "_delivered",
        "_notified",
        "_outcome",
        "_ready",
        "_result_waiters",
        "_state",
        "_waiters",
    )

    _buffer: deque[E]
    _waiters: deque[asyncio.Future[Any]]
    # Events handed to reads that were settled (with ``_EVENT``) and have not resumed yet, in
    # the order pushed: each such read takes the oldest when it resumes. Why not the future's
    # result: a read cancelled before it resumes gives its place back, and the events after
    # it move up one read (see ``_give_back``), so no event is lost, reordered or left
    # buffered behind a read that waits.
    _delivered: deque[E]
    _state: int
    _outcome: Any
    # The active iterator, weakly: a strong reference would tie the stream and an iterator
    # left after ``break`` into a cycle that only the cycle collector frees.
    _active: weakref.ReferenceType[EventStreamIterator[E]] | None
    _result_waiters: list[asyncio.Future[None]] | None

    def __init__(self) -> None:
        self._buffer = deque()
        self._waiters = deque()  # reads of the active iterator waiting for an event
        self._delivered = deque()
        self._ready = True  # open with no waiting read: ``push`` only appends
        self._state = _OPEN
        self._outcome = None
        self._active = None
        self._result_waiters = None
        self._abandon: Callable[[], object] | None = None
        self._notified = False

    @property
    def result(self) -> _Result[R]:
        """An awaitable of the terminal result; raises the ``fail`` error. Await it any number
        of times, before or after the stream settles."""
        return _Result(self)  # not cached: it refers to the stream, which must not refer back

    def on_abandon(self, callback: Callable[[], object]) -> None:
        """Call ``callback()`` once if the consumer goes away before the stream settles (see
        the module docstring); replaces an earlier callback."""
        self._abandon = callback

    @property
    def abandon_notified(self) -> bool:
        """Whether the ``on_abandon`` callback ran: the producer was told its consumer went
        away, so it is expected to settle the stream soon (after its own cleanup)."""
        return self._notified

    def _abandoned(self) -> None:
        callback = self._abandon
        if callback is not None and self._state == _OPEN:
            self._abandon = None
            self._notified = True
            callback()

    @property
    def settled(self) -> bool:
        """Whether ``finish`` or ``fail`` has been called."""
        return self._state != _OPEN

    def push(self, event: E) -> None:
        """Deliver ``event`` to the oldest waiting read, or buffer it."""
        if self._ready:
            self._buffer.append(event)
            return
        if self._state:
            raise self._terminal_error()
        waiters = self._waiters
        while waiters:
            waiter = waiters.popleft()
            if not waiter.done():
                self._delivered.append(event)
                waiter.set_result(_EVENT)
                self._ready = not waiters
                return
        self._ready = True
        self._buffer.append(event)

    def push_all(self, events: Iterable[E]) -> None:
        """``push`` each of ``events`` in order: one call, and while no read is waiting (a
        producer that fills its stream before handing it out) one ``extend`` of the buffer
        instead of a call per event, which is all ``push`` would do then."""
        if self._ready:
            self._buffer.extend(events)
            return
        push = self.push
        for event in events:
            push(event)

    def finish(self, result: R) -> None:
        """Settle the stream successfully. Buffered events are still delivered first."""
        if self._state:
            raise self._terminal_error()
        self._state = _FINISHED
        self._ready = False
        self._outcome = result
        self._release_result_waiters()
        active = self._active_iterator()
        if active is not None and not self._buffer and not self._delivered:
            active._close(_DONE)

    def fail(self, error: BaseException) -> None:
        """Settle the stream with ``error``. Buffered events are still delivered first."""
        if not instance_of(error, BaseException):
            raise TypeError("EventStream.fail() requires an exception instance")
        if self._state:
            raise self._terminal_error()
        self._state = _FAILED
        self._ready = False
        self._outcome = error
        self._release_result_waiters()
        active = self._active_iterator()
        if active is not None and not self._buffer and not self._delivered and self._waiters:
            active._close(_RAISE)

    def take_finished(self) -> deque[E] | None:
        """Every buffered event at once, if the stream finished (not failed) and no iterator
        is active; else ``None`` and nothing changes. The stream then reads as consumed: a
        new iterator ends at once, and ``result`` is unchanged.

        Why: a consumer that finds a producer's stream already finished (a scripted model
        fills and settles its stream before ``stream()`` returns) takes its events without
        an iterator, a poll per event and the end raised as ``StopAsyncIteration``: that
        was a good part of an agent-loop step (``bench_loop``). A failed stream is read
        the usual way, so its failure is raised where iteration raises it.
        """
        if self._state != _FINISHED or self._active_iterator() is not None:
            return None
        events = self._buffer
        self._buffer = deque()
        return events

    def result_nowait(self, default: D) -> R | D:
        """The result if the stream finished (raises the error if it failed), else ``default``."""
        state = self._state
        if state == _FINISHED:
            return self._outcome
        if state == _FAILED:
            raise self._outcome
        return default

    def __aiter__(self) -> EventStreamIterator[E]:
        if self._active_iterator() is not None:
            raise EventStreamStateError("EventStream supports a single consumer at a time")
        iterator: EventStreamIterator[E] = EventStreamIterator(self)
        self._active = weakref.ref(iterator)
        return iterator

    def _active_iterator(self) -> EventStreamIterator[E] | None:
        active = self._active
        return None if active is None else active()

    def _terminal_error(self) -> EventStreamStateError:
        state = "finished" if self._state == _FINISHED else "failed"
        return EventStreamStateError(f"EventStream is already terminal ({state})")

    def _give_back(self) -> None:
        """A read settled with an event was cancelled before it resumed: the reads still to
        resume take ``_delivered`` oldest first, so the newest of those events is one too many.
        The oldest waiting read takes an event instead (first in, first out), else that event
        goes back to the head of the buffer (it was pushed before everything buffered)."""
        waiters = self._waiters
        while waiters:
            waiter = waiters.popleft()
            if not waiter.done():
                waiter.set_result(_EVENT)
                self._ready = not waiters and not self._state
                return
        self._ready = not self._state
        self._buffer.appendleft(self._delivered.pop())

    def _end_reads_behind(self) -> None:
        """The stream settled while reads held events: once the last of them is taken and
        nothing is buffered, the reads that waited behind them end (``finish``/``fail`` left
        them waiting, as an event given back by a cancelled read would have gone to them)."""
        active = self._active_iterator()
        if active is not None and not self._delivered and not self._buffer and self._waiters:
            active._close(_DONE if self._state == _FINISHED else _RAISE)

    def _release_result_waiters(self) -> None:
        waiters = self._result_waiters
        if waiters:
            self._result_waiters = None
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_result(None)

    def __repr__(self) -> str:
        state = ("open", "finished", "failed")[self._state]
        return f"<EventStream {state}, {len(self._buffer)} buffered>"


def finished_stream(events: Iterable[E], result: R) -> EventStream[E, R]:
    """A stream that already holds ``events`` and finished with ``result``: what
    ``stream = EventStream(); stream.push_all(events); stream.finish(result)`` makes, slot for
    slot (a fresh buffer, no waiting read, no consumer, no abandon callback).

    Why: a producer that has every event and the result before it hands the stream out (the
    fixture adapter replaying a list of records) paid the constructor's call and ``__init__``,
    then ``push_all`` and ``finish`` with their checks for waiting reads and an active
    iterator, none of which can exist yet: a good part of the per-response set-up
    (``bench_boundary``). Here the slots are filled at once. ``tests/base/test_stream.py``
    compares it with the plain path on any events and result.
    """
    stream: EventStream[E, R] = _new_stream(EventStream)
    stream._buffer = deque(events)
    stream._waiters = deque()
    stream._delivered = deque()
    stream._ready = False
    stream._state = _FINISHED
    stream._outcome = result
    stream._active = None
    stream._result_waiters = None
    stream._abandon = None
    stream._notified = False
    return stream


_new_stream: Final[Callable[[type[EventStream[Any, Any]]], EventStream[Any, Any]]] = object.__new__


class _Result(Generic[R]):
    """The awaitable behind ``EventStream.result``; holds no exception until awaited."""

    __slots__ = ("_stream",)

    def __init__(self, stream: EventStream[Any, R]) -> None:
        self._stream = stream

    def __await__(self) -> Generator[Any, None, R]:
        stream = self._stream
        if stream._state == _OPEN:
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            waiters = stream._result_waiters
            if waiters is None:
                waiters = stream._result_waiters = []
            waiters.append(waiter)
            try:
                yield from waiter
            except asyncio.CancelledError:
                remaining = stream._result_waiters
                if remaining is not None and waiter in remaining:
                    remaining.remove(waiter)
                if not remaining and not stream._waiters:
                    stream._abandoned()  # the last consumer waiting on the stream went away
                raise
            finally:
                remaining = stream._result_waiters
                if not waiter.done() and remaining is not None and waiter in remaining:
                    remaining.remove(waiter)
        if stream._state == _FINISHED:
            return stream._outcome
        raise stream._outcome


def is_event_stream(value: object) -> TypeGuard[EventStream[Any, Any]]:
    """Whether ``value``'s real class is exactly ``EventStream`` (a subclass's methods are
    caller code), narrowed with its event and result types not known (so ``Any``)."""
    return type_of(value) is EventStream


class EventStreamIterator(AsyncIterator[E]):
    """The one active reader of an ``EventStream``. ``aclose()`` releases the stream."""

    __slots__ = ("__weakref__", "_buffer", "_closed", "_stream")

    def __init__(self, stream: EventStream[E, Any]) -> None:
        self._stream = stream
        # The stream's buffer, read directly on the hot path; a closed iterator reads an
        # empty one of its own so it never takes events meant for the next consumer.
        self._buffer: deque[E] = stream._buffer
        self._closed = False

    def __aiter__(self) -> EventStreamIterator[E]:
        return self

    def poll(self, default: D) -> E | D:
        """The next event without waiting: a buffered event, else ``default`` while the stream
        is open (or a read settled with an event has not resumed yet: cancelled, it would give
        the event back). Once the stream has ended and its events are read, raises what
        ``__anext__`` raises (``StopAsyncIteration`` or the failure)."""
        buffer = self._buffer
        if buffer:
            return buffer.popleft()
        if self._closed:
            raise StopAsyncIteration
        stream = self._stream
        state = stream._state
        if not state or stream._delivered:
            return default
        self._close(_DONE if state == _FINISHED else _RAISE)
        if state == _FINISHED:
            raise StopAsyncIteration
        raise stream._outcome

    async def __anext__(self) -> E:
        # EAFP on the buffer: a buffered event (the common read) costs no length test; an
        # empty buffer raises once, on a read that is about to wait or end anyway. Why: this
        # is the per-event cost of every stream (bench_stream's batch goal).
        try:
            return self._buffer.popleft()
        except IndexError:
            pass
        if self._closed:
            raise StopAsyncIteration
        stream = self._stream
        state = stream._state
        if state and not stream._delivered:  # else wait: a settled read may give its event back
            self._close(_DONE if state == _FINISHED else _RAISE)
            if state == _FINISHED:
                raise StopAsyncIteration
            raise stream._outcome
        waiter: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        stream._waiters.append(waiter)
        stream._ready = False
        try:
            value = await waiter
        except asyncio.CancelledError:
            self._forget(waiter)
            if not stream._waiters and not stream._delivered and not stream._result_waiters:
                stream._abandoned()  # the reader's task was cancelled: the consumer went away
            raise
        except GeneratorExit:  # the read's coroutine was closed: its event is not lost either
            self._forget(waiter)
            raise
        if value is _EVENT:
            event = stream._delivered.popleft()
            if stream._state:
                stream._end_reads_behind()
            return event
        if value is _DONE:
            raise StopAsyncIteration
        raise stream._outcome

    async def aclose(self) -> None:
        """Stop reading: pending reads end, and the stream accepts a new consumer."""
        if not self._closed:
            self._close(_DONE)
            self._stream._abandoned()

    def _close(self, outcome: object) -> None:
        self._closed = True
        self._buffer = _NO_EVENTS
        stream = self._stream
        if stream._active_iterator() is self:
            stream._active = None
            waiters = stream._waiters
            while waiters:
                waiter = waiters.popleft()
                if not waiter.done():
                    waiter.set_result(outcome)
            stream._ready = not stream._state

    def _forget(self, waiter: asyncio.Future[Any]) -> None:
        """A waiting read was cancelled. If an event already reached it, keep that event."""
        stream = self._stream
        waiters = stream._waiters
        if waiter in waiters:
            waiters.remove(waiter)
            stream._ready = not waiters and not stream._state
        elif waiter.done() and not waiter.cancelled() and waiter.result() is _EVENT:
            stream._give_back()

    def __repr__(self) -> str:
        return f"<EventStreamIterator {'closed' if self._closed else 'active'}>"
