"""``RequestWatch``: the deadlines and the abort signal of one provider request, enforced from
inside the task that makes the request.

Why not ``race(signal, ...)`` and ``asyncio.timeout`` around each await: ``race`` wins an abort
by leaving the awaited work to finish on another task, and httpx2's body is read inside anyio
cancel scopes and the connection pool's lock, which belong to the task that entered them.
Closing them from another task fails ("Attempted to exit cancel scope in a different task",
"The current task is not holding this lock"), and a run could return while that task was
still closing the response. And a new ``asyncio.timeout`` per socket read costs a timer and
a context manager per chunk.

So the watch cancels the request's own task, the way ``asyncio.timeout`` does, and turns that
cancellation into the right error at the await it interrupted: the abort reason, or a
``PROVIDER_TIMEOUT`` naming the deadline. httpx2 then unwinds and closes in the task that
opened it. There is one timer per request: ``expect(seconds)`` only moves a deadline (a float),
and the timer, when it fires early, re-arms itself at the current deadline.

Deadlines: ``expect(seconds, kind)`` sets the one in force (``first_byte`` from sending to the
first body byte, ``idle`` between events, ``drain`` after the end event), ``expect_nothing()``
clears it (a retry's sleep), and the optional ``total`` bounds everything from the watch's
start. Only awaits made through the watch are interrupted (``wait``, or ``enter``/``leave``
around an await on the hot path); a deadline that passes or an abort that comes between them
is raised by the next ``enter``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Final, Literal, TypeVar

from tether._async.race import neutralize, signal_aborted, signal_reason
from tether.abort import AbortSignal, abort_exception
from tether.providers.errors import ProviderError

__all__ = ["DeadlineKind", "RequestWatch"]

T = TypeVar("T")

DeadlineKind = Literal["first_byte", "idle", "drain", "total"]
"""Which deadline a ``PROVIDER_TIMEOUT`` broke."""

_INF: Final = float("inf")
_EARLY: Final = 1e-4
"""A timer that fires less than this before its deadline counts as on time (clock rounding)."""


class RequestWatch:
    """Deadlines and abort for one request, enforced in its task (see the module docstring).

    Create it in the task that makes the request; ``close()`` when the request is done.
    """

    __slots__ = (
        "_base",
        "_cancelled",
        "_fired",
        "_fired_seconds",
        "_handle",
        "_kind",
        "_loop",
        "_remove",
        "_seconds",
        "_signal",
        "_task",
        "_total",
        "_total_at",
        "_waiting",
        "_when",
    )

    def __init__(self, signal: AbortSignal, total: float | None) -> None:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task(loop)
        if task is None:
            raise RuntimeError("RequestWatch needs a task")
        self._loop = loop
        self._task = task
        self._base = task.cancelling()
        self._signal = signal
        self._total = total
        self._total_at = _INF if total is None else loop.time() + total
        self._when = self._total_at
        self._kind: DeadlineKind = "total"
        self._seconds = total or 0.0
        self._handle: asyncio.TimerHandle | None = None
        self._fired: DeadlineKind | Literal["abort"] | None = None
        self._fired_seconds = 0.0
        self._waiting = False
        self._cancelled = False
        self._remove = signal.add_listener(self._on_abort)
        if signal_aborted(signal):
            self._fired = "abort"
        self._arm()

    # --- deadlines ------------------------------------------------------------------------

    def expect(self, seconds: float, kind: DeadlineKind) -> None:
        """From now, the next progress must come within ``seconds`` (or the total deadline,
        whichever is first); ``kind`` names it in the timeout's message."""
        when = self._loop.time() + seconds
        if when >= self._total_at:
            when, kind, seconds = self._total_at, "total", self._total or 0.0
        self._when = when
        self._kind = kind
        self._seconds = seconds
        handle = self._handle
        if handle is None or handle.when() > when:
            self._arm()

    def expect_nothing(self) -> None:
        """No deadline but the total one until the next ``expect`` (a retry's sleep)."""
        self._when = self._total_at
        self._kind = "total"
        self._seconds = self._total or 0.0

    def _arm(self) -> None:
        handle = self._handle
        if handle is not None:
            handle.cancel()
            self._handle = None
        if self._when < _INF:
            self._handle = self._loop.call_at(self._when, self._on_timer)

    def _on_timer(self) -> None:
        self._handle = None
        if self._fired is not None:
            return
        if self._when - self._loop.time() > _EARLY:
            self._arm()  # the deadline moved on since this timer was set
            return
        self._fire(self._kind)

    def _on_abort(self) -> None:
        if self._fired is None:
            self._fire("abort")

    def _fire(self, what: DeadlineKind | Literal["abort"]) -> None:
        self._fired = what
        self._fired_seconds = self._seconds
        if self._waiting and not self._cancelled:
            self._cancelled = True
            self._task.cancel()

    # --- guarded awaits -------------------------------------------------------------------

    def enter(self) -> None:
        """Before an await the watch may interrupt: raises at once if a deadline already
        passed or the signal aborted."""
        if self._fired is not None:
            raise self._error()
        self._waiting = True

    def leave(self) -> None:
        """After that await ended without a ``CancelledError``. If the watch had interrupted
        it anyway (the await swallowed the cancellation), raises the watch's error."""
        self._waiting = False
        if self._cancelled:
            self._cancelled = False
            self._task.uncancel()
            raise self._error()

    def interrupted(self) -> BaseException | None:
        """In a ``CancelledError`` handler of a guarded await: the error to raise instead when
        the watch cancelled the task (and nothing else did too), else ``None``: re-raise."""
        self._waiting = False
        if not self._cancelled:
            return None
        self._cancelled = False
        if self._task.uncancel() > self._base:
            return None  # the task was cancelled from outside as well: that one wins
        return self._error()

    async def wait(self, awaitable: Awaitable[T]) -> T:
        """``await awaitable``, interrupted by the deadline in force or the signal."""
        try:
            self.enter()
        except BaseException:
            neutralize(awaitable)
            raise
        try:
            result = await awaitable
        except asyncio.CancelledError:
            error = self.interrupted()
            if error is None:
                raise
            raise error from None
        except BaseException:
            self.leave()
            raise
        self.leave()
        return result

    def _error(self) -> BaseException:
        fired = self._fired
        if fired == "abort":
            return abort_exception(signal_reason(self._signal))
        seconds = f"{self._fired_seconds:g}"
        if fired == "first_byte":
            text = f"No response body within {seconds} s of sending the request"
        elif fired == "idle":
            text = f"No event from the server for {seconds} s"
        elif fired == "drain":
            text = f"The response did not end within {seconds} s of its last event"
        else:
            text = f"The request exceeded its total deadline of {seconds} s"
        return ProviderError("PROVIDER_TIMEOUT", text)

    def close(self) -> None:
        """Stop the timer and stop listening to the signal."""
        self._remove()
        handle = self._handle
        if handle is not None:
            handle.cancel()
            self._handle = None
        self._waiting = False
