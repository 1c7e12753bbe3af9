"""Callback scopes and awaitable adoption: how an extension host runs caller code.

Every extension callback (factory, ``activate``, hook, disposer) runs in a copy of the current
``contextvars`` context in which ``_SCOPE`` names a fresh ``Scope`` for the host, linked to
the scopes already active around the call. ``asyncio.create_task`` and ``loop.call_later``
copy the context, so detached work started inside the callback sees the same scope: while it
is ``active`` the host refuses its public operations (``EXTENSION_REENTRANT_OPERATION``). The
scope turns inactive once the callback has *finally* settled (its awaitables fully adopted),
so work that merely started inside it and runs later may call the host normally.

A callback may return a plain value, a coroutine, a Future or any awaitable; what an
awaitable gives is adopted again, at most ``MAX_ADOPTION_DEPTH`` levels deep, and an
awaitable that gives itself (or an earlier one) back is a cycle. The first level completing
is the *selection* of the outcome (``on_selected``), the last its final settlement.

A ``CancelledError`` a callback raises on its own is a failure, never a cancellation of the
host: a plain (synchronous) callback's always is, an async one's whenever the caller is not
being cancelled; both become ``RuntimeError("Extension callback was cancelled")``. When the
caller stops waiting (its signal aborted or its task was cancelled) the callback's task is
cancelled and given one loop turn to unwind before the caller goes on (so its rollback
normally runs after the callback's own cleanup); a task still running after that turn is put
in the caller's ``abandoned`` set until it ends, so it is never garbage collected while
pending and its owner can wait for it.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable
from typing import Any, Final, cast

from tether._async.adoption import adopt_nested
from tether._async.race import neutralize, race, reraise_task_cancellation
from tether._base.exact_types import instance_of, is_awaitable
from tether.abort import AbortSignal

__all__ = ["MAX_ADOPTION_DEPTH", "Scope", "in_scope", "invoke"]

MAX_ADOPTION_DEPTH: Final = 32
"""How many nested awaitables a callback's result may be adopted through."""


class Scope:
    """One running callback of one host: ``active`` until it has finally settled."""

    __slots__ = ("active", "host", "parent")

    def __init__(self, host: object, parent: Scope | None) -> None:
        self.host = host
        self.parent = parent
        self.active = True


_SCOPE: Final[contextvars.ContextVar[Scope | None]] = contextvars.ContextVar(
    "tether_extension_scope", default=None
)


def in_scope(host: object) -> bool:
    """Whether the calling code runs inside an active callback of ``host``."""
    scope = _SCOPE.get()
    while scope is not None:
        if scope.host is host and scope.active:
            return True
        scope = scope.parent
    return False


def _nothing() -> None:
    return None


async def invoke(
    host: object,
    callback: Callable[..., object],
    *args: object,
    signal: AbortSignal | None = None,
    on_selected: Callable[[], None] = _nothing,
    abandoned: set[asyncio.Future[Any]] | None = None,
    on_late: Callable[[object], None] | None = None,
) -> Any:
    """Call ``callback(*args)`` in a fresh scope of ``host`` and adopt what it returns.

    With a ``signal``, waiting stops at once when it aborts (the abort reason is raised) and
    the callback's task is cancelled and given one loop turn to unwind; if it is still running
    then, it goes into ``abandoned`` until it ends. A ``CancelledError`` the callback raised
    on its own (always, for a synchronous callback; while the caller is not being cancelled,
    for an async one) becomes a ``RuntimeError``.

    ``on_late`` (a factory's products): once the caller stopped waiting, a value the callback
    still produces is given to it: what a task that ignored its cancellation returned, or
    what a ``Future`` the callback returned (one it does not own, so it is never cancelled:
    e.g. a thread's ``run_in_executor``) resolves to. Such a future is in ``abandoned`` until
    it is resolved.
    """
    context = contextvars.copy_context()
    scope = Scope(host, _SCOPE.get())
    context.run(_SCOPE.set, scope)
    try:
        result = context.run(callback, *args)
    except BaseException as error:
        scope.active = False
        on_selected()
        if isinstance(error, asyncio.CancelledError):  # nothing awaited: it cannot be ours
            raise _cancelled_itself() from None
        raise
    if not is_awaitable(result):
        scope.active = False
        on_selected()
        return result
    loop = asyncio.get_running_loop()
    late = None if on_late is None else _Late(on_late, abandoned)
    task = loop.create_task(_adopt(result, scope, on_selected, late), context=context)

    def settled(finished: asyncio.Task[Any]) -> None:
        scope.active = False
        if not finished.cancelled():
            finished.exception()  # retrieved: a failure is reported by the awaiting side

    task.add_done_callback(settled)
    try:
        if signal is None:
            return await task
        return await race(signal, task)
    except BaseException as error:
        if late is not None:  # the caller stopped waiting: what the task makes comes late
            task.add_done_callback(late.from_task)  # (now, if it already made it)
        if not task.done():
            task.cancel()
            await _unwind(task, abandoned)
        if isinstance(error, asyncio.CancelledError):
            reraise_task_cancellation(error)
            raise _cancelled_itself() from None
        raise


class _Late:
    """Delivers a value that arrives after the caller stopped waiting (see ``invoke``)."""

    __slots__ = ("abandoned", "deliver")

    def __init__(
        self, deliver: Callable[[object], None], abandoned: set[asyncio.Future[Any]] | None
    ) -> None:
        self.deliver = deliver
        self.abandoned = abandoned

    def from_task(self, task: asyncio.Future[Any]) -> None:
        if not task.cancelled() and task.exception() is None:
            self.deliver(task.result())

    def from_future(self, future: asyncio.Future[Any]) -> None:
        """A future the callback returned outlived the wait: keep it, deliver its value."""
        if self.abandoned is not None and not future.done():
            self.abandoned.add(future)
            future.add_done_callback(self.abandoned.discard)
        future.add_done_callback(self.from_task)


def _cancelled_itself() -> RuntimeError:
    return RuntimeError("Extension callback was cancelled")


async def _unwind(task: asyncio.Task[Any], abandoned: set[asyncio.Future[Any]] | None) -> None:
    """Give a cancelled callback task one loop turn to unwind; keep it in ``abandoned`` while
    it still runs (the loop holds tasks only weakly)."""
    try:
        await asyncio.sleep(0)
    finally:
        if not task.done() and abandoned is not None:
            abandoned.add(task)
            task.add_done_callback(abandoned.discard)


async def _adopt(
    value: Any, scope: Scope, on_selected: Callable[[], None], late: _Late | None
) -> Any:
    async def await_level(awaitable: Any, level: int) -> object:
        try:
            if late is not None and level == 1 and instance_of(awaitable, asyncio.Future):
                return await _shielded(cast("asyncio.Future[Any]", awaitable), late)
            return await awaitable
        finally:
            if level == 1:
                on_selected()

    try:
        return await adopt_nested(
            value,
            max_depth=MAX_ADOPTION_DEPTH,
            too_deep=_too_deep,
            cycle=_cycle,
            await_level=await_level,
        )
    finally:
        scope.active = False


def _too_deep(value: object) -> TypeError:
    neutralize(value)
    return TypeError(f"Extension callback result nests more than {MAX_ADOPTION_DEPTH} awaitables")


def _cycle() -> TypeError:
    return TypeError("Extension callback result is an awaitable that awaits itself")


async def _shielded(future: asyncio.Future[Any], late: _Late) -> Any:
    """Await a future the callback returned without cancelling it when this task is
    cancelled: its value, if it comes, is delivered late."""
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        late.from_future(future)
        raise
