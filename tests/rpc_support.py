"""What the tests of ``tether rpc`` share: scripted OpenAI-compatible replies and ``Rpc``, a
running ``tether rpc`` whose every line is parsed as JSON."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncGenerator, Callable, Mapping
from pathlib import Path
from typing import Any, cast

import cli_support
from cli_support import BOUND, assert_no_key, spawned
from openai_bodies import call, minimal_chunk, minimal_usage
from servers.replay import Script, sse_body, sse_response

PROMPT_TOKENS = 7


def text_reply(*parts: str) -> Script:
    """A streamed text answer."""
    return cli_support.text_reply(*parts, prompt_tokens=PROMPT_TOKENS)


def tool_reply(call_id: str, name: str, arguments: dict[str, Any]) -> Script:
    """A streamed answer that calls ``name`` once with ``arguments``."""
    encoded = json.dumps(arguments)
    return sse_response(
        sse_body(
            [
                minimal_chunk({"role": "assistant", "tool_calls": [call(0, call_id, name, "")]}),
                minimal_chunk({"tool_calls": [call(0, arguments=encoded)]}),
                minimal_chunk({}, "tool_calls"),
                minimal_usage(9, 3),
            ]
        )
    )


MODEL = "openai/gpt-test"


Line = dict[str, Any]


class Rpc:
    """A running ``tether rpc``: send commands, read its lines (every one parsed as JSON)."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.raw = bytearray()
        self.lines: list[Line] = []

    async def send(self, command: Mapping[str, object] | bytes) -> None:
        if isinstance(command, bytes):
            data = command
        else:
            data = (json.dumps(command, ensure_ascii=False) + "\n").encode("utf-8")
        stdin = self.process.stdin
        assert stdin is not None
        stdin.write(data)
        async with asyncio.timeout(BOUND):
            await stdin.drain()

    async def next(self) -> Line:
        stdout = self.process.stdout
        assert stdout is not None
        async with asyncio.timeout(BOUND):
            line = await stdout.readline()
        assert line.endswith(b"\n"), f"rpc ended; it wrote {bytes(self.raw[-400:])!r}"
        self.raw += line
        value: object = json.loads(line)
        assert isinstance(value, dict), line
        parsed = cast(Line, value)
        self.lines.append(parsed)
        return parsed

    async def until(self, done: Callable[[Line], bool]) -> list[Line]:
        """Lines up to and including the first one ``done`` accepts."""
        seen: list[Line] = []
        while True:
            line = await self.next()
            seen.append(line)
            if done(line):
                return seen

    async def call(self, command: Mapping[str, object] | bytes, request_id: object) -> Line:
        """Send ``command`` and return the response with ``request_id`` (lines in between are
        kept in ``lines``)."""
        await self.send(command)
        seen = await self.until(lambda line: is_response(line, request_id))
        return seen[-1]

    async def ok(self, command: Mapping[str, object]) -> Any:
        response = await self.call(command, command["id"])
        assert response["success"] is True, response
        assert response["command"] == command["type"]
        return response["data"]

    async def refused(self, command: Mapping[str, object] | bytes, request_id: object) -> Any:
        response = await self.call(command, request_id)
        assert response["success"] is False, response
        assert set(response["error"]) == {"code", "message"}
        return response["error"]

    async def finish(self) -> tuple[int, bytes]:
        """Close stdin, read the rest, wait for the exit: (status, stderr). The rest must be
        JSON lines too."""
        process = self.process
        assert process.stdin is not None
        assert process.stdout is not None
        assert process.stderr is not None
        process.stdin.close()
        async with asyncio.timeout(BOUND):
            rest = await process.stdout.read()
            stderr = await process.stderr.read()
            status = await process.wait()
        assert rest == b"" or rest.endswith(b"\n"), rest[-200:]
        for line in rest.split(b"\n")[:-1]:
            self.lines.append(json.loads(line))
        self.raw += rest
        assert_no_key(bytes(self.raw), stderr)
        return status, stderr


def is_response(line: Line, request_id: object) -> bool:
    return line.get("type") == "response" and line.get("id") == request_id


def is_event(kind: str) -> Callable[[Line], bool]:
    return lambda line: line.get("type") == "event" and line["event"]["type"] == kind


@contextlib.asynccontextmanager
async def rpc(
    *arguments: str, env: Mapping[str, str], cwd: Path | None = None
) -> AsyncGenerator[Rpc, None]:
    async with spawned("rpc", *arguments, env=env, cwd=cwd, limit=8 << 20) as process:
        yield Rpc(process)
