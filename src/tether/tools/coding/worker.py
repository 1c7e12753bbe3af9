"""Blocking tool work off the event loop, where the abort signal can still win.

Walking a tree and reading its files (``list_files``, ``grep``) can take long, and work on
the event loop cannot be interrupted: an abort (Ctrl-C in ``tether chat``, ``abort`` in
``tether rpc``) would wait for it. ``run_in_worker(signal, work)`` runs ``work(stop)`` on a
daemon thread and awaits its result; when the signal aborts (or the awaiting task is
cancelled) the caller gets the abort at once, ``stop`` is set, and ``work`` is expected to
check ``stop`` often and return. A daemon thread never holds up the interpreter's exit, even
if ``work`` is stuck in one long call (a regular expression that backtracks, a slow disk).

``Unsettled`` tracks background work that outlives the call that started it (an abandoned
worker, a process being reaped); ``workers_settled()`` waits for every worker started so far.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from tether._async.race import check_signal, race
from tether.abort import AbortSignal

__all__ = ["Unsettled", "run_in_worker", "workers_settled"]

T = TypeVar("T")


class Unsettled:
    """Background work that has not finished yet: one future each, done when it has."""

    __slots__ = ("_pending",)

    def __init__(self) -> None:
        self._pending: set[asyncio.Future[None]] = set()

    def begin(self) -> asyncio.Future[None]:
        """A new future of the running loop; set its result when the work has finished."""
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._pending.add(future)
        future.add_done_callback(self._pending.discard)
        return future

    async def wait(self) -> None:
        """Wait until all work begun on this loop so far has finished."""
        loop = asyncio.get_running_loop()
        pending = [future for future in self._pending if future.get_loop() is loop]
        if pending:
            await asyncio.wait(pending)


_WORKERS = Unsettled()


async def workers_settled() -> None:
    """Wait until every worker thread started so far (on this loop) has returned.

    An aborted search returns at once while its thread finishes the entry it is on; await
    this (tests, orderly shutdown) to know that no thread still holds a directory open.
    """
    await _WORKERS.wait()


async def run_in_worker(signal: AbortSignal, work: Callable[[threading.Event], T], name: str) -> T:
    """``work(stop)`` on a daemon thread named ``tether-<name>``; its result or exception.

    Raises the abort reason as soon as ``signal`` aborts; ``stop`` is set then, and also when
    the awaiting task is cancelled or the work has finished.
    """
    check_signal(signal)
    loop = asyncio.get_running_loop()
    stop = threading.Event()
    outcome: asyncio.Future[T] = loop.create_future()
    settled = _WORKERS.begin()

    def deliver(ok: bool, value: Any) -> None:
        if not settled.done():
            settled.set_result(None)
        if outcome.done():  # the caller left (abort, cancellation): nobody wants it
            return
        if ok:
            outcome.set_result(value)
        else:
            outcome.set_exception(value)

    def target() -> None:
        ok, value = False, RuntimeError(f"the {name} worker ended without a result")
        try:
            value = work(stop)
            ok = True
        except Exception as error:
            value = error
        finally:
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits
                loop.call_soon_threadsafe(deliver, ok, value)

    thread = threading.Thread(target=target, name=f"tether-{name}", daemon=True)
    try:
        thread.start()
    except BaseException:
        settled.set_result(None)
        raise
    remove = signal.add_listener(stop.set)
    try:
        return await race(signal, outcome)
    finally:
        remove()
        stop.set()
