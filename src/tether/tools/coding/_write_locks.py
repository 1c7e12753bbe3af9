"""The two locks every tether write takes: one per target in this process, one per directory
across processes.

``target_lock`` serializes the writes to one target in this process: an ``asyncio.Lock`` per
(parent directory, name), taken in arrival order (FIFO), the wait raced against the abort
signal; it is dropped when its last user leaves. ``DirectoryLock`` is an exclusive ``flock``
of the parent directory, which every tether write takes (in any process) around its last
checks and its rename, so two tether processes never interleave there.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import threading
from collections.abc import AsyncGenerator, Callable

from tether._async.race import race
from tether.abort import AbortSignal
from tether.tools.coding.worker import run_in_worker

__all__ = ["DirectoryLock", "target_lock"]

_LOCKS: dict[tuple[int, int, str], tuple[asyncio.Lock, list[int]]] = {}
"""Per-target locks keyed by (parent dev, parent ino, name), with a user count."""


@contextlib.asynccontextmanager
async def target_lock(directory: int, name: str, signal: AbortSignal) -> AsyncGenerator[None]:
    """Hold the in-process lock of target ``name`` in ``directory`` (an fd), waiting for it in
    arrival order, raced against ``signal``."""
    info = os.fstat(directory)
    key = (info.st_dev, info.st_ino, name)
    entry = _LOCKS.get(key)
    if entry is None:
        entry = _LOCKS[key] = (asyncio.Lock(), [0])
    lock, users = entry
    users[0] += 1
    try:
        await race(signal, lock.acquire())
        try:
            yield
        finally:
            lock.release()
    finally:
        users[0] -= 1
        if users[0] == 0 and _LOCKS.get(key) is entry:
            del _LOCKS[key]


class DirectoryLock:
    """An exclusive ``flock`` of a directory, which every tether write in it takes, in any
    process, around its last checks and its rename.

    Taken at once when free; otherwise a worker thread waits for it, raced against the abort
    signal. ``release`` closes the descriptor (which releases the lock); if the worker still
    waits at that moment, it closes the descriptor itself once ``flock`` returns.
    """

    __slots__ = ("_busy", "_closed", "_fd", "_guard")

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._guard = threading.Lock()
        self._busy = False
        self._closed = False

    @classmethod
    async def take(
        cls, directory: int, signal: AbortSignal, waiting: Callable[[], None]
    ) -> DirectoryLock:
        """The lock of ``directory``; ``waiting()`` is called when it has to be waited for."""
        lock = cls(os.open(".", os.O_RDONLY | os.O_DIRECTORY, dir_fd=directory))
        try:
            fcntl.flock(lock._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            waiting()
            try:
                await run_in_worker(signal, lock._wait, "write-lock")
            except BaseException:
                lock.release()
                raise
        except OSError:  # pragma: no cover - no flock here (some network file systems)
            pass  # the in-process order still holds
        return lock

    def _wait(self, stop: threading.Event) -> None:
        with self._guard:
            if self._closed:
                return
            self._busy = True
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX)
        finally:
            with self._guard:
                self._busy = False
                if self._closed:
                    os.close(self._fd)

    def release(self) -> None:
        with self._guard:
            if self._closed:
                return
            self._closed = True
            if not self._busy:
                os.close(self._fd)
