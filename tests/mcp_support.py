"""What the MCP tests share: the toy and time servers as stdio configurations, the child
processes a test started, and ``Hanging``, a server that never answers."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

from tether.mcp import (
    McpStdioServer,
)

TOY = str(Path(__file__).parent / "servers" / "mcp_toy.py")


BIN = Path(sys.executable).parent  # the servers' scripts, installed from the lock files


def children() -> set[int]:
    """The pids of this process's direct children (from /proc)."""
    mine = os.getpid()
    found: set[int] = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == mine and fields[0] != "Z":
            found.add(int(entry))
    return found


def only_new(before: set[int]) -> int:
    (pid,) = children() - before
    return pid


def time_server(**options: Any) -> McpStdioServer:
    return McpStdioServer(
        name="time",
        command=str(BIN / "mcp-server-time"),
        args=("--local-timezone", "UTC"),
        **options,
    )


def toy_stdio(**options: Any) -> McpStdioServer:
    return McpStdioServer(name="toy", command=sys.executable, args=(TOY,), **options)


class Hanging:
    """A stdio "server" that says it is up (through a FIFO, no sleeps) and never answers
    ``initialize``: ``await hanging.up()`` returns once its process runs."""

    def __init__(self, tmp_path: Path) -> None:
        fifo = tmp_path / "started"
        os.mkfifo(fifo)
        self._reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        script = f"import os, time; os.write(os.open({str(fifo)!r}, os.O_WRONLY), b'up'); "
        self.config = McpStdioServer(
            name="sleepy", command=sys.executable, args=("-c", script + "time.sleep(600)")
        )

    async def up(self) -> None:
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[None] = loop.create_future()
        loop.add_reader(self._reader, lambda: ready.done() or ready.set_result(None))
        try:
            async with asyncio.timeout(20):
                await ready
        finally:
            loop.remove_reader(self._reader)
            os.close(self._reader)
