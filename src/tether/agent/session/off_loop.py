"""Disk work off the event loop: a worker thread's work cannot be stopped, so a cancelled
caller waits it out and releases what it made (a store's writes and opens run here)."""

# The package's modules share their underscore helpers with one another.
# pyright: reportPrivateUsage=false, reportUnusedFunction=false

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TypeVar

from tether._async.race import wait_out

__all__: list[str] = []

_T = TypeVar("_T")


async def _off_loop(work: Callable[[], _T], orphan: Callable[[_T], None]) -> _T:
    """``work()`` on a worker thread. If the caller is cancelled meanwhile, the work still
    finishes, ``orphan(result)`` releases what it made, and the cancellation is raised."""
    future = asyncio.get_running_loop().run_in_executor(None, work)
    if await wait_out(future):
        if future.exception() is None:
            orphan(future.result())
        raise asyncio.CancelledError
    return future.result()
