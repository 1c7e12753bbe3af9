"""What the tests of the process tools (``bash``, ``python_process``, the sandbox, MCP
children) share: calling a tool through ``execute_tool_call`` with a bound, reading its
error, and waiting for a process to be gone."""

from __future__ import annotations

import asyncio
import json
import os

from tether import AbortController, JsonObject, ToolCall, ToolRegistry, ToolResultMessage
from tether.abort import AbortSignal
from tether.tools.execution import execute_tool_call

CALL_IDS = iter(range(1_000_000))


async def call(
    registry: ToolRegistry, name: str, signal: AbortSignal | None = None, **arguments: object
) -> ToolResultMessage:
    tool_call = ToolCall(id=f"call-{next(CALL_IDS)}", name=name, arguments=JsonObject(arguments))
    async with asyncio.timeout(30):
        return await execute_tool_call(
            registry, tool_call, signal if signal is not None else AbortController().signal
        )


def error_message(result: ToolResultMessage) -> str:
    assert result.is_error, result.content
    return str(json.loads(result.content)["error"]["message"])


def assert_not_running(pid: int) -> None:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return
    with open(f"/proc/{pid}/stat") as handle:  # dead but not yet reaped by init
        state = handle.read().rsplit(")", 1)[1].split()[0]
    assert state == "Z", f"process {pid} still running (state {state})"


async def wait_dead(pid: int) -> None:
    """Wait (event-driven, via a pidfd) until ``pid`` has terminated: SIGKILL is delivered
    asynchronously, so a process just killed may still be running for a moment."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    loop = asyncio.get_running_loop()
    dead: asyncio.Future[None] = loop.create_future()
    loop.add_reader(fd, lambda: dead.done() or dead.set_result(None))
    try:
        async with asyncio.timeout(20):
            await dead
    finally:
        loop.remove_reader(fd)
        os.close(fd)
