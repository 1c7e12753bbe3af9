"""Ctrl-C during a CLI command: the first aborts the command's work, the second exits at once.

Why a Python-level handler (``signal.signal``) and not the loop's ``add_signal_handler`` is
explained in ``tether.cli.run_command``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal as signals
from collections.abc import Generator
from types import FrameType
from typing import Any, Final

from tether.abort import AbortController
from tether.cli.exit_codes import EXIT_INTERRUPTED

__all__ = ["INTERRUPT_REASON", "Interrupts", "sigint_blocked"]

INTERRUPT_REASON: Final = "Interrupted by the user"
"""Why a run cancelled by Ctrl-C was cancelled."""
_NOTICE: Final = b"tether run: interrupted; stopping the run (Ctrl-C again quits at once)\n"


class Interrupts:
    """SIGINT during a command: the first aborts ``controller`` (with ``INTERRUPT_REASON``)
    after writing ``notice`` to stderr, the second exits at once with 130.

    Installed for the ``with`` body (main thread only), then the previous handler is back.
    """

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        controller: AbortController,
        notice: bytes = _NOTICE,
    ) -> None:
        self._loop = loop
        self._controller = controller
        self._notice = notice
        self._count = 0
        self._previous: Any = None
        self._installed = False

    def __enter__(self) -> Interrupts:
        try:
            self._previous = signals.signal(signals.SIGINT, self._handle)
        except ValueError:  # not the main thread: SIGINT is not ours to handle
            return self
        self._installed = True
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._installed:
            previous = self._previous
            signals.signal(signals.SIGINT, signals.SIG_DFL if previous is None else previous)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self._count += 1
        if self._count > 1:
            os._exit(EXIT_INTERRUPTED)
        with contextlib.suppress(OSError):  # a raw write: no buffer a handler could re-enter
            os.write(2, self._notice)
        with contextlib.suppress(RuntimeError):  # the loop already closed
            self._loop.call_soon_threadsafe(self._abort)

    def _abort(self) -> None:
        if not self._controller.signal.aborted:
            self._controller.abort(INTERRUPT_REASON)


@contextlib.contextmanager
def sigint_blocked() -> Generator[None, None, None]:
    """Block SIGINT in this thread for the ``with`` body; threads started in it inherit that,
    so the kernel delivers SIGINT to the main thread, whose handler and event loop see it."""
    if not hasattr(signals, "pthread_sigmask"):  # pragma: no cover - not POSIX
        yield
        return
    previous = signals.pthread_sigmask(signals.SIG_BLOCK, {signals.SIGINT})
    try:
        yield
    finally:
        signals.pthread_sigmask(signals.SIG_SETMASK, previous)
