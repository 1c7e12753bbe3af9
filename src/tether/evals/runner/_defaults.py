"""The default clock, cleanup timer and workspace factory: module-level classes, so a
job that holds them pickles (the Ray executor ships it)."""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from collections.abc import Callable

from tether._base.dataclass import dataclass
from tether.evals.types import WorkspaceFactoryInput

# -- Defaults (module-level classes, so a job pickles) ------------------------------------------


@dataclass(frozen=True, slots=True)
class ZeroClock:
    """The default clock: always 0, so reports are reproducible (durations are 0)."""

    def now(self) -> float:
        """0."""
        return 0.0


@dataclass(frozen=True, slots=True)
class MonotonicClock:
    """A real clock: ``time.perf_counter()`` in milliseconds (for real durations)."""

    def now(self) -> float:
        """Milliseconds on the monotonic performance counter."""
        import time

        return time.perf_counter() * 1000.0


@dataclass(frozen=True, slots=True)
class LoopCleanupTimer:
    """The default cleanup timer: ``loop.call_later`` on the running loop."""

    def schedule(self, delay_ms: int, on_timeout: Callable[[], None], /) -> Callable[[], object]:
        """Call ``on_timeout`` after ``delay_ms``; returns the cancel function."""
        handle = asyncio.get_running_loop().call_later(delay_ms / 1000, on_timeout)
        return handle.cancel


@dataclass(frozen=True, slots=True, kw_only=True)
class TemporaryWorkspace:
    """A temporary directory; ``cleanup()`` removes it (in a worker thread)."""

    path: str

    async def cleanup(self) -> None:
        """Remove the directory and everything in it (nothing if it is already gone)."""
        await asyncio.to_thread(_remove_tree, self.path)


def _remove_tree(path: str) -> None:
    if os.path.lexists(path):
        shutil.rmtree(path)


@dataclass(frozen=True, slots=True)
class TemporaryWorkspaceFactory:
    """The default workspace factory: a fresh ``tempfile.mkdtemp`` directory per run, made
    on the machine that runs it."""

    def __call__(self, input: WorkspaceFactoryInput, /) -> TemporaryWorkspace:
        """A new empty directory named after the run."""
        return TemporaryWorkspace(path=tempfile.mkdtemp(prefix=f"tether-eval-{input.run_id}-"))
