"""What the tests of ``tether run --model`` (and the MCP command-line tests) share: the
model name, the scripted OpenAI replies, and a started command read line by line."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncGenerator, Mapping
from pathlib import Path
from typing import Any

import cli_support
from cli_support import (
    BOUND,
    assert_no_key,
    spawned,
)
from openai_bodies import call, minimal_chunk, minimal_usage
from servers.replay import Script, sse_body, sse_response

MODEL = "openai/gpt-test"


PROMPT_TOKENS = 11
"""The input tokens every text answer reports."""


class Running:
    """A started ``tether`` whose stdout is read line by line."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.stdout = bytearray()

    async def line(self) -> bytes:
        assert self.process.stdout is not None
        async with asyncio.timeout(BOUND):
            line = await self.process.stdout.readline()
        assert line.endswith(b"\n"), f"the command ended; it wrote {bytes(self.stdout[-300:])!r}"
        self.stdout += line
        return line

    async def rest(self) -> tuple[int, bytes]:
        """Read stdout and stderr to their end and wait for the exit; (status, stderr)."""
        assert self.process.stdout is not None
        assert self.process.stderr is not None
        async with asyncio.timeout(BOUND):
            self.stdout += await self.process.stdout.read()
            stderr = await self.process.stderr.read()
            status = await self.process.wait()
        assert_no_key(bytes(self.stdout), stderr)
        return status, stderr


@contextlib.asynccontextmanager
async def started(
    *arguments: str, env: Mapping[str, str], cwd: Path | None = None
) -> AsyncGenerator[Running, None]:
    async with spawned(*arguments, env=env, cwd=cwd, stdin=asyncio.subprocess.DEVNULL) as process:
        yield Running(process)


def model_run(server_url: str, *extra: str, prompt: str = "What is 20 + 22?") -> list[str]:
    return ["run", "--model", MODEL, "--base-url", server_url, "-p", prompt, *extra]


def text_reply(*parts: str) -> Script:
    return cli_support.text_reply(*parts, prompt_tokens=PROMPT_TOKENS)


def stalled_reply(first: str) -> Script:
    return cli_support.stalled_reply(first, prompt_tokens=PROMPT_TOKENS)


def tool_reply(*calls: tuple[str, str, dict[str, Any]]) -> Script:
    """One assistant turn calling each ``(id, name, arguments)``."""
    payloads = [minimal_chunk({"role": "assistant", "content": None})]
    for index, (call_id, name, arguments) in enumerate(calls):
        payloads.append(minimal_chunk({"tool_calls": [call(index, call_id, name, "")]}))
        arguments_text = json.dumps(arguments)
        payloads.append(minimal_chunk({"tool_calls": [call(index, arguments=arguments_text)]}))
    payloads += [minimal_chunk({}, "tool_calls"), minimal_usage(20, 5)]
    return sse_response(sse_body(payloads))
