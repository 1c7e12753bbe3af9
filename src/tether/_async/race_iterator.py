"""Read an untrusted async iterator one raced step at a time (``RacedIterator``), then close it.

Every step that waits races the abort signal (``tether._async.race.race``); a step that does not
wait is taken at once (``ready``, ``poll``). Abandoned steps finish in the background, and the
iterator is closed only once no abandoned step of it still runs (closing a running async
generator is an error). The model doubles, the fixture provider and the loop's model turn
read their sources through it.

Its own module: ``tether._async.race`` races one awaitable; this is the iterator protocol on top
(the end, the close, the claim of a consumed iterator).
"""

from __future__ import annotations

import types
from collections.abc import AsyncIterator, Awaitable
from typing import Any, Generic, TypeGuard, TypeVar

from tether._async.ownership import release_claim
from tether._async.race import (
    Started,
    check_signal,
    close_quietly,
    is_raw_abort_reason,
    race,
    race_eagerly,
)
from tether.abort import AbortError, AbortSignal
from tether.stream import EventStreamIterator

__all__ = ["RacedIterator"]

T = TypeVar("T")
D = TypeVar("D")
_ASYNC_GENERATOR: type[Any] = types.AsyncGeneratorType


def _is_stream_iterator(value: object) -> TypeGuard[EventStreamIterator[Any]]:
    """Whether ``value``'s real class is exactly ``EventStreamIterator`` (tether's own)."""
    return type(value) is EventStreamIterator


class RacedIterator(Generic[T]):
    """Consume an untrusted async iterator one raced step at a time, then close it properly.

    ``await next()`` races each ``__anext__`` against the signal. ``close()`` requests
    ``aclose()`` unless the iterator already ended; if an abandoned step is still running in
    the background, the close waits for it to settle first (closing a running async
    generator is an error).

    ``claimed=True`` says the iterator was claimed with ``claim_iterator_once``: its claim is
    released (``release_claim``) once the iterator is done with, that is when it ended or
    failed, or when its close was requested and no abandoned step still runs.
    """

    __slots__ = (
        "_busy",
        "_claimed",
        "_close_requested",
        "_finished",
        "_iterator",
        "_signal",
        "_started",
    )

    def __init__(
        self, iterator: AsyncIterator[T], signal: AbortSignal, *, claimed: bool = False
    ) -> None:
        self._iterator = iterator
        self._signal = signal
        self._finished = False
        self._busy = False
        self._close_requested = False
        self._claimed = claimed
        self._started: Started | None = None  # a step ready() took that suspended

    def poll(self, default: D) -> T | D:
        """An item that is ready without waiting, else ``default``.

        Only tether's own ``EventStream`` iterators are polled (nothing untrusted runs); any
        other iterator always needs ``next()``.
        """
        iterator = self._iterator
        if not _is_stream_iterator(iterator):
            return default
        try:
            return iterator.poll(default)
        except BaseException as error:
            self._finish()
            if is_raw_abort_reason(self._signal, error):
                raise AbortError(reason=error) from None
            raise

    def ready(self, default: D) -> T | D:
        """Take the next step now (``race_eagerly``): the item when the iterator yields it
        without suspending, else ``default``; then ``await next()`` goes on with that step.
        ``StopAsyncIteration`` at the end; the abort reason on abort.

        For a producer that drives a caller's async generator (a scripted turn): most of
        them never wait, and ``await next()`` for each item cost more than the item.

        An exact async generator is stepped here directly (``race_eagerly`` inlined: its
        step is its own awaitable, so there is nothing to look up, and no bound method is
        made per item); the same abort check, raw-reason ``AbortError`` and ``Started``
        continuation as ``race_eagerly``. Why: a scripted factory's turn takes three such
        steps, and the calls cost more than the steps. ``tests/base/test_race.py`` checks both
        paths give the same items and the same end on any generator.
        """
        iterator = self._iterator
        if type(iterator) is not _ASYNC_GENERATOR:
            step = self._anext()
            try:
                item = race_eagerly(self._signal, step, self._abandoned)
            except StopAsyncIteration:
                self._finish()
                raise
            if type(item) is Started:
                self._started = item
                return default
            return item
        signal = self._signal
        step: Any = iterator.__anext__()  # an exact generator's: builds its step, runs nothing
        check_signal(signal)
        try:
            yielded = step.send(None)
        except StopIteration as stop:
            return stop.value
        except StopAsyncIteration:
            self._finish()
            raise
        except BaseException as error:
            if is_raw_abort_reason(signal, error):
                raise AbortError(reason=error) from None
            raise
        self._started = Started(signal, step, yielded, self._abandoned)
        return default

    async def next(self) -> T:
        """The next item; ``StopAsyncIteration`` at the end; the abort reason on abort."""
        started = self._started
        if started is not None:  # the step ready() took: go on with it
            self._started = None
            try:
                return await started.race()
            except StopAsyncIteration:
                self._finish()
                raise
        step = self._anext()
        try:
            return await race(self._signal, step, self._abandoned)
        except StopAsyncIteration:
            self._finish()
            raise

    def _anext(self) -> Awaitable[T]:
        """The iterator's ``__anext__()``; if that call itself raises, the iterator is done."""
        try:
            return self._iterator.__anext__()
        except BaseException as error:
            self._finish()
            if is_raw_abort_reason(self._signal, error):
                raise AbortError(reason=error) from None
            raise

    def _finish(self) -> None:
        """The iterator ended on its own: nothing to close, and its claim is over."""
        self._finished = True
        if self._claimed:
            self._claimed = False
            release_claim(self._iterator)

    def _abandoned(self, settled: bool) -> None:
        self._busy = not settled
        if settled and self._close_requested:
            self._close_requested = False
            self._close_now()

    def _close_now(self) -> None:
        try:
            close_quietly(self._iterator)
        finally:
            if self._claimed:
                self._claimed = False
                release_claim(self._iterator)

    def close(self) -> None:
        """Request cleanup of the iterator if it has not ended; idempotent. Never raises
        anything but ``KeyboardInterrupt`` or ``SystemExit`` (see ``close_quietly``)."""
        started, self._started = self._started, None
        if started is not None:  # a step ready() took, never awaited: abandon it as race does
            started.abandon()
        if self._finished:
            return
        self._finished = True
        if self._busy:
            self._close_requested = True
        else:
            self._close_now()
