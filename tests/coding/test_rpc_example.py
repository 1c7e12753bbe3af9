"""``examples/rpc-coding-turn/drive.py`` runs a whole coding turn with an approval against a
scripted loopback model (``ReplayServer``): the approval is asked, answered, the file is
written, the session kept; with ``--deny`` nothing is written and the model is told so."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from cli_support import BOUND, assert_no_key, child_env
from rpc_support import text_reply, tool_reply
from servers.replay import ReplayServer

pytestmark = [pytest.mark.slow, pytest.mark.skipif(sys.platform == "win32", reason="POSIX")]

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "rpc-coding-turn" / "drive.py"
CONTENT = "Hello from tether.\n"


async def drive(server: ReplayServer, workspace: Path, tmp_path: Path, *extra: str) -> str:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(EXAMPLE),
        "--model",
        "openai/gpt-test",
        "--base-url",
        server.url,
        *extra,
        str(workspace),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=child_env(tmp_path),
    )
    async with asyncio.timeout(BOUND):
        stdout, stderr = await process.communicate()
    assert process.returncode == 0, stderr.decode()
    assert_no_key(stdout, stderr)
    return stdout.decode()


async def test_the_example_drives_a_coding_turn_with_an_approval(tmp_path: Path) -> None:
    workspace = tmp_path / "work"
    workspace.mkdir()
    async with ReplayServer() as server:
        server.respond(tool_reply("w1", "write_file", {"path": "hello.txt", "content": CONTENT}))
        server.respond(text_reply("I created hello.txt."))
        out = await drive(server, workspace, tmp_path)
    assert (workspace / "hello.txt").read_text(encoding="utf-8") == CONTENT
    assert "protocol 2 · openai/gpt-test\n" in out
    assert 'approval: write_file({"path": "hello.txt"' in out
    assert "tool write_file: ok" in out
    assert "status: completed" in out
    assert "assistant: I created hello.txt." in out
    assert ": 4 entries" in out
    second = server.requests[1].json["messages"]
    assert [m["role"] for m in second] == ["system", "user", "assistant", "tool"]
    sessions = list((tmp_path / "data" / "tether" / "sessions").glob("*.jsonl"))
    assert len(sessions) == 1
    assert f"session {sessions[0].stem}: 4 entries" in out


async def test_denied_the_file_is_not_written(tmp_path: Path) -> None:
    workspace = tmp_path / "work"
    workspace.mkdir()
    async with ReplayServer() as server:
        server.respond(tool_reply("w1", "write_file", {"path": "hello.txt", "content": CONTENT}))
        server.respond(text_reply("You declined."))
        out = await drive(server, workspace, tmp_path, "--deny")
    assert not (workspace / "hello.txt").exists()
    assert "-> no" in out
    assert "tool write_file: error" in out
    tool = server.requests[1].json["messages"][-1]
    assert "the user declined" in tool["content"]
