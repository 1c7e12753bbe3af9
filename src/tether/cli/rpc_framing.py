"""``tether rpc``'s input: standard input read on a thread of its own (``Stdin``) and split into
lines (``Lines``: on ``\\n`` bytes only, a line over the limit skipped without being held in
memory; ``tether.cli.rpc``'s docstring, "Framing")."""

from __future__ import annotations

import asyncio
import os
import sys
import threading
from typing import Final

from tether.cli.interrupts import sigint_blocked

__all__ = ["TOO_LONG", "Lines", "Stdin", "TooLong"]
_READ_BYTES: Final = 65_536
_QUEUED_CHUNKS: Final = 4


class TooLong:
    """A line over ``MAX_LINE_BYTES`` was skipped."""


TOO_LONG: Final = TooLong()


class Stdin:
    """Standard input's bytes, read on a daemon thread (so a regular file, a pipe, a TTY or
    ``/dev/null`` all work, and SIGINT still reaches the main thread) at most a few chunks
    ahead of the loop. ``b""`` is the end."""

    def __init__(self, loop: asyncio.AbstractEventLoop, descriptor: int | None) -> None:
        self._loop = loop
        self._descriptor = descriptor
        self._queue: asyncio.Queue[bytes] = asyncio.Queue()
        self._slots = threading.Semaphore(_QUEUED_CHUNKS)

    @classmethod
    def of_process(cls, loop: asyncio.AbstractEventLoop) -> Stdin:
        """The process's standard input. When Python found no stdin at startup
        (``sys.stdin is None``), descriptor 0 may since have been reused for something else
        (a socket of the event loop): it is then never read, the input is simply empty."""
        stream = sys.stdin
        try:
            descriptor = None if stream is None else stream.fileno()
        except (OSError, ValueError):
            descriptor = None
        return cls(loop, descriptor)

    def start(self) -> None:
        if self._descriptor is None:
            self._queue.put_nowait(b"")
            return
        with sigint_blocked():
            threading.Thread(target=self._work, name="tether-rpc-stdin", daemon=True).start()

    def _work(self) -> None:
        while True:
            self._slots.acquire()
            assert self._descriptor is not None
            try:
                data = os.read(self._descriptor, _READ_BYTES)
            except OSError:  # a closed or unreadable stdin ends the input
                data = b""
            try:
                self._loop.call_soon_threadsafe(self._queue.put_nowait, data)
            except RuntimeError:  # the loop closed: nobody reads any more
                return
            if not data:
                return

    async def read(self) -> bytes:
        data = await self._queue.get()
        self._slots.release()
        return data


class Lines:
    """Splits bytes into lines on ``\\n`` only; a line over ``limit`` bytes becomes
    ``TOO_LONG`` (reported once, as soon as it is too long) and is dropped to its end."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._buffer = bytearray()
        self._skipping = False

    def feed(self, data: bytes) -> list[bytes | TooLong]:
        lines: list[bytes | TooLong] = []
        start = 0
        while True:
            end = data.find(b"\n", start)
            piece = data[start:] if end < 0 else data[start:end]
            if not self._skipping:
                self._buffer += piece
                if len(self._buffer) > self._limit:
                    self._buffer.clear()
                    self._skipping = True
                    lines.append(TOO_LONG)
            if end < 0:
                return lines
            if self._skipping:
                self._skipping = False
            else:
                lines.append(bytes(self._buffer))
                self._buffer.clear()
            start = end + 1

    def finish(self) -> list[bytes | TooLong]:
        """The last line, if the input ended without its ``\\n``."""
        if self._skipping or not self._buffer:
            return []
        line = bytes(self._buffer)
        self._buffer.clear()
        return [line]
