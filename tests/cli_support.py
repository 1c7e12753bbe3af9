"""What the tests that run the installed ``tether`` console script as a real subprocess share.

``test_cli_run_model.py``, ``test_cli_rpc.py`` and ``test_eval_cli.py`` start the script the
same way: an environment without the parent's API keys or debug switches but with a fake key
that must appear in no byte the command writes, every wait bounded, and every process killed
and reaped when its test is done with it. The text answers their scripted servers send are
here too (minimal OpenAI chunks from ``openai_bodies``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from collections.abc import AsyncGenerator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Final

from openai_bodies import call, minimal_chunk, minimal_usage, text_chunks
from servers.replay import Script, sse_body, sse_response

__all__ = [
    "BOUND",
    "FAKE_KEY",
    "TETHER",
    "Completed",
    "assert_no_key",
    "assert_quiet",
    "child_env",
    "run_tether",
    "spawned",
    "stalled_reply",
    "text_reply",
]

TETHER: Final = Path(sys.executable).parent / "tether"
"""The console script installed next to this interpreter."""

FAKE_KEY: Final = "sk-tether-FAKE-KEY-0123456789-never-print-me"
BOUND: Final = 20.0
"""Seconds any one wait on a child may take."""

_SCRUBBED: Final = ("PYTHONDEVMODE", "PYTHONASYNCIODEBUG", "PYTHONWARNINGS", "TETHER_CONFIG")
_PIPE: Final = asyncio.subprocess.PIPE
_STREAM_LIMIT: Final = 1 << 16
"""asyncio's default line limit for a child's streams."""


def child_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """The parent's environment without API keys or debug switches, with the fake key in
    OPENAI_API_KEY, a config path in ``tmp_path`` (absent unless a test writes it), every
    warning shown (so a leaked resource shows up on stderr), the data directory (sessions)
    in ``tmp_path``, and ``extra``."""
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.endswith("_API_KEY") and name not in _SCRUBBED
    }
    env["TETHER_CONFIG"] = str(tmp_path / "config.toml")
    env["XDG_CONFIG_HOME"] = str(tmp_path / "xdg")
    env["XDG_DATA_HOME"] = str(tmp_path / "data")  # sessions (tether rpc keeps them)
    env["PYTHONWARNINGS"] = "default"
    env["OPENAI_API_KEY"] = FAKE_KEY
    env.update(extra)
    return env


@dataclass(frozen=True, slots=True, kw_only=True)
class Completed:
    """A child that ran to its end: its exit status and everything it wrote."""

    returncode: int
    stdout: bytes
    stderr: bytes

    @property
    def out(self) -> str:
        """stdout as UTF-8 text."""
        return self.stdout.decode("utf-8")

    @property
    def err(self) -> str:
        """stderr as UTF-8 text."""
        return self.stderr.decode("utf-8")

    def events(self) -> list[dict[str, Any]]:
        """Every stdout line (split on \\n only) parsed as JSON."""
        assert self.stdout.endswith(b"\n"), self.stdout[-200:]
        return [json.loads(line) for line in self.stdout.split(b"\n")[:-1]]


def assert_no_key(*outputs: bytes) -> None:
    """The fake API key is in none of ``outputs``."""
    for output in outputs:
        assert FAKE_KEY.encode() not in output, "the API key was written"


def assert_quiet(stderr: bytes) -> None:
    """Nothing on stderr but advice lines: no traceback, no warning."""
    text = stderr.decode("utf-8", "replace")
    assert "Traceback" not in text, text
    assert "Warning" not in text, text


@contextlib.asynccontextmanager
async def spawned(
    *arguments: str,
    env: Mapping[str, str],
    cwd: Path | None = None,
    stdin: int = _PIPE,
    stdout: int | IO[Any] = _PIPE,
    limit: int = _STREAM_LIMIT,
) -> AsyncGenerator[asyncio.subprocess.Process, None]:
    """``tether ARGUMENTS`` started (stderr piped); on the way out it is killed if it still
    runs, its stdin closed and it is reaped."""
    process = await asyncio.create_subprocess_exec(
        str(TETHER),
        *arguments,
        stdin=stdin,
        stdout=stdout,
        stderr=_PIPE,
        env=dict(env),
        cwd=cwd,
        limit=limit,
    )
    try:
        yield process
    finally:
        if process.returncode is None:
            process.kill()
        if process.stdin is not None:
            process.stdin.close()
        await process.wait()


async def run_tether(
    *arguments: str,
    env: Mapping[str, str],
    cwd: Path | None = None,
    stdin: bytes | None = b"",
    bound: float = BOUND,
) -> Completed:
    """Run the installed script to its end (within ``bound`` seconds), with this loop free to
    serve: ``stdin`` written to a pipe, or ``/dev/null`` for ``None``. Nothing it wrote may
    hold the fake key."""
    pipe = asyncio.subprocess.DEVNULL if stdin is None else _PIPE
    async with spawned(*arguments, env=env, cwd=cwd, stdin=pipe) as process:
        async with asyncio.timeout(bound):
            stdout, stderr = await process.communicate(stdin)
    assert process.returncode is not None
    assert_no_key(stdout, stderr)
    return Completed(returncode=process.returncode, stdout=stdout, stderr=stderr)


def text_reply(*parts: str, prompt_tokens: int) -> Script:
    """A streamed text answer, one chunk per part, reporting ``prompt_tokens`` tokens in."""
    return sse_response(sse_body(text_chunks(*parts, prompt_tokens=prompt_tokens)))


def bash_reply(call_id: str, command: str) -> Script:
    """A streamed answer that calls ``bash`` with ``command`` (call ``call_id``)."""
    arguments = json.dumps({"command": command})
    return sse_response(
        sse_body(
            [
                minimal_chunk({"role": "assistant", "tool_calls": [call(0, call_id, "bash", "")]}),
                minimal_chunk({"tool_calls": [call(0, arguments=arguments)]}),
                minimal_chunk({}, "tool_calls"),
                minimal_usage(9, 3),
            ]
        )
    )


def stalled_reply(first: str, *, prompt_tokens: int) -> Script:
    """A text stream that stops after its first words until the client goes away (or the
    script is released)."""
    payloads = text_chunks(first, " and the rest", prompt_tokens=prompt_tokens)
    offset = len(sse_body(payloads[:2], done=False))
    return sse_response(sse_body(payloads), stall_after=offset)
