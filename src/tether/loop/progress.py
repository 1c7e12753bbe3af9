"""Live tool output: what a running tool reports through ``context.progress`` becomes
``tool.progress`` events, coalesced and bounded.

* A report never blocks the tool and never raises into it: ``report(text)`` appends to a
  buffer and, at most, schedules a flush on the event loop (a report from another thread,
  a plain ``def`` tool's, is handed to the loop's thread first).
* Coalesced: a flush emits one event with everything buffered; it runs at most every
  ``TOOL_PROGRESS_INTERVAL_SECONDS`` (the first report of a call is flushed on the next loop
  iteration), or as soon as ``TOOL_PROGRESS_FLUSH_BYTES`` are buffered.
* Bounded: at most ``TOOL_PROGRESS_MAX_BYTES`` (UTF-8) of a call are streamed; later reports
  are dropped (the call's result still carries its own, capped output).
* ``close()`` (the loop calls it before ``tool.finished``, and when the call is cancelled or
  fails) emits what is still buffered when asked to, cancels the pending flush and makes
  further reports no-ops: nothing is emitted after the call ended, and no timer is left.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from typing import Final

from tether._async.race import signal_aborted
from tether.abort import AbortSignal
from tether.protocol import ToolCall
from tether.tools.serialize import encodable_text

__all__ = [
    "TOOL_PROGRESS_FLUSH_BYTES",
    "TOOL_PROGRESS_INTERVAL_SECONDS",
    "TOOL_PROGRESS_MAX_BYTES",
    "ProgressReporter",
]

TOOL_PROGRESS_MAX_BYTES: Final = 32 * 1024
"""At most this many bytes (UTF-8) of one call's reports become ``tool.progress`` events."""
TOOL_PROGRESS_FLUSH_BYTES: Final = 4 * 1024
"""A buffer this large is flushed at once, without waiting for the interval."""
TOOL_PROGRESS_INTERVAL_SECONDS: Final = 0.05
"""The least time between two ``tool.progress`` events of one call."""


class ProgressReporter:
    """The ``progress`` function of one tool call (``report``), owned by the loop.

    ``emit(call, text)`` is called with each coalesced, non-empty piece, from the event loop
    (never from inside ``report``). ``loop`` and ``thread`` are the event loop and its
    thread (``threading.get_ident()``); by default the running ones (none: every report is
    dropped). The buffer and timer are made at the first report: a call that reports
    nothing costs two attribute checks at ``close``.
    """

    __slots__ = (
        "_buffer",
        "_buffered",
        "_call",
        "_closed",
        "_emit",
        "_handle",
        "_last",
        "_left",
        "_loop",
        "_thread",
    )

    def __init__(
        self,
        call: ToolCall,
        emit: Callable[[ToolCall, str], None],
        *,
        max_bytes: int = TOOL_PROGRESS_MAX_BYTES,
        loop: asyncio.AbstractEventLoop | None = None,
        thread: int | None = None,
    ) -> None:
        self._call = call
        self._emit = emit
        self._buffer: list[str] | None = None  # made at the first report
        self._left = max_bytes
        self._closed = False
        if loop is None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                loop = None  # made outside a loop: every report is dropped
        self._loop = loop
        self._thread = threading.get_ident() if thread is None else thread

    def report(self, text: str, /) -> None:
        """Buffer ``text`` (anything but a non-empty ``str`` is ignored) and schedule a flush.

        From another thread (a plain ``def`` tool runs in one) the report is handed to the
        event loop's thread first."""
        if self._closed or self._left <= 0 or type(text) is not str or not text:
            return
        loop = self._loop
        if loop is None:
            return
        if threading.get_ident() != self._thread:
            with contextlib.suppress(RuntimeError):  # the loop is closed: the run is over
                loop.call_soon_threadsafe(self.report, text)
            return
        try:
            data = text.encode("utf-8", "surrogatepass")
            if len(data) > self._left:  # the cap: keep whole characters only
                text = data[: self._left].decode("utf-8", "ignore")
                data = text.encode("utf-8", "surrogatepass")
                self._left = 0
            else:
                self._left -= len(data)
            if not text:
                return
            buffer = self._buffer
            if buffer is None:
                buffer = self._buffer = []
                self._buffered = 0
                self._handle: asyncio.Handle | None = None
                self._last = float("-inf")
            buffer.append(text)
            self._buffered += len(data)
            self._schedule()
        except Exception:  # never raise into the tool (no running loop, ...): drop the report
            return

    __call__ = report
    """The reporter is its own ``progress`` function: the loop hands the tool the reporter
    itself, not a bound ``report`` made per call (one object fewer per tool call in flight,
    ``bench_scale``)."""

    def _schedule(self) -> None:
        if self._handle is not None and self._buffered < TOOL_PROGRESS_FLUSH_BYTES:
            return
        loop = self._loop
        assert loop is not None
        if self._handle is not None:
            self._handle.cancel()
        wait = (
            0.0
            if self._buffered >= TOOL_PROGRESS_FLUSH_BYTES
            else self._last + TOOL_PROGRESS_INTERVAL_SECONDS - loop.time()
        )
        if wait <= 0:
            self._handle = loop.call_soon(self._flush)
        else:
            self._handle = loop.call_later(wait, self._flush)

    def _flush(self) -> None:
        """The timer's callback: emit what is buffered, unless the call ended since."""
        self._handle = None
        if not self._closed:
            self._drain()

    def _drain(self) -> None:
        buffer = self._buffer
        if not buffer:
            return
        text = encodable_text("".join(buffer))
        buffer.clear()
        self._buffered = 0
        loop = self._loop
        assert loop is not None
        self._last = loop.time()
        self._emit(self._call, text)

    def close(self, signal: AbortSignal | None = None) -> None:
        """End the call's reporting: emit what is buffered unless ``signal`` aborted (the
        call was cancelled), then drop the rest and cancel the timer."""
        if self._closed:
            return
        self._closed = True
        buffer = self._buffer
        if buffer is None:
            return
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        if buffer and (signal is None or not signal_aborted(signal)):
            self._drain()
        buffer.clear()
