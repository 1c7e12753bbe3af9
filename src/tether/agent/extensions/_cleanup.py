"""How an ``ExtensionHost`` cleans up: each cleanup bounded by the host's ``timeout`` (or cut
short once the disposal's own task was cancelled), callbacks abandoned by a cancellation kept
and waited for (at most ``ABANDONED_TASK_GRACE`` seconds), and a factory's late product
disposed."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any, Final

from tether._async.release import Release
from tether.abort import AbortController, AbortSignal
from tether.agent.extensions._instance import ACCESSOR, MISSING, read_function
from tether.agent.extensions._records import extension_error, nothing, timed_out
from tether.agent.extensions._scope import invoke

__all__ = ["ABANDONED_TASK_GRACE", "Cleanup"]

ABANDONED_TASK_GRACE: Final = 1.0
"""How long ``dispose()`` waits, in seconds, for cancelled callback tasks that are still running
(they ignored or are slow to honour the cancellation) before it reports them as failures."""


class Cleanup:
    """The host's cleanup bounds and the callback tasks it abandoned. ``owner`` is the host
    (callbacks run in its scope)."""

    __slots__ = ("abandoned", "cut_short", "owner", "timeout")

    def __init__(self, owner: object, timeout: float | None) -> None:
        self.owner = owner
        self.timeout = timeout
        self.cut_short = False  # the disposal's task was cancelled: wait for nothing more
        self.abandoned: set[asyncio.Future[Any]] = set()  # cancelled callbacks still running

    def bound(self, name: str) -> tuple[AbortSignal | None, Callable[[], None]]:
        """The signal one cleanup of ``name`` races: aborted at the bound, or on the next loop
        turn when the disposal was cut short (the cleanup is called and runs its first step,
        but is not waited for); and its disarm."""
        seconds = self.timeout
        if seconds is None and not self.cut_short:
            return None, nothing
        controller = AbortController()
        loop = asyncio.get_running_loop()
        if self.cut_short:
            cut = extension_error(
                "EXTENSION_CANCELLED", f'Extension "{name}" disposal was cut short'
            )
            return controller.signal, loop.call_soon(controller.abort, cut).cancel
        assert seconds is not None
        reason = timed_out(name, "disposal", seconds)
        return controller.signal, loop.call_later(seconds, controller.abort, reason).cancel

    async def clean_up(
        self, name: str, cleanups: Sequence[Callable[[], object]], release: Release | None = None
    ) -> Release:
        """Run every cleanup of ``name`` in order, in a callback scope, each bounded, into
        ``release`` (a new one holding bare ``BaseException``\\ s when omitted): its failures,
        and the first bare ``BaseException`` (never swallowed: the caller raises it once
        everything ran). A cancellation of this task cuts the rest short."""
        if release is None:
            release = Release(hold=True)
        for cleanup in cleanups:
            signal, disarm = self.bound(name)
            try:
                escaped = await release.attempt(
                    lambda cleanup=cleanup, signal=signal: invoke(
                        self.owner, cleanup, signal=signal, abandoned=self.abandoned
                    )
                )
            finally:
                disarm()
            if isinstance(escaped, asyncio.CancelledError):
                self.cut_short = True
        return release

    def dispose_late(self, name: str, product: object) -> None:
        """A factory's product arrived after activation stopped waiting for it: dispose it
        (on a task the host keeps, bounded like a cleanup; its failure is dropped)."""
        owner = self.owner

        async def dispose() -> None:
            signal, disarm = self.bound(name)
            try:
                instance = await invoke(owner, lambda: product, signal=signal)
                method = read_function(instance, "dispose")
                if method is not MISSING and method is not ACCESSOR and callable(method):
                    await invoke(owner, method, signal=signal, abandoned=self.abandoned)
            except Exception:
                pass  # nobody is left to report it to
            finally:
                disarm()

        task = asyncio.get_running_loop().create_task(dispose())
        self.abandoned.add(task)
        task.add_done_callback(self.abandoned.discard)

    async def wait_abandoned(self) -> int:
        """Wait at most ``ABANDONED_TASK_GRACE`` seconds for the abandoned callbacks (and the
        late disposals they start); how many still run then (none waited for once the
        disposal was cut short)."""
        if self.cut_short:
            return 0
        loop = asyncio.get_running_loop()
        deadline = loop.time() + ABANDONED_TASK_GRACE
        while self.abandoned:
            remaining = deadline - loop.time()
            if remaining <= 0:
                break
            await asyncio.wait(
                tuple(self.abandoned), timeout=remaining, return_when=asyncio.FIRST_COMPLETED
            )
        return len(self.abandoned)
