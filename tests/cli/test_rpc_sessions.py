"""``tether rpc`` protocol 2 through the typed client (``tether.coding.rpc_client``), against
the scripted loopback server: approvals asked of the client (``approval_request``, answered
by ``approve``; ``always`` remembered; an unknown request refused; ``abort`` declines a
waiting one), sessions kept and resumed (``-r ID`` and ``resume``), the tree and a move in
it that the next prompt continues from, ``set_cwd``, ``get_system_prompt``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Literal

import pytest

from cli_support import TETHER, child_env
from rpc_support import text_reply, tool_reply
from servers.replay import ReplayServer
from tether.coding.rpc_client import (
    RPC_PROTOCOL_VERSION,
    RpcApprovalRequest,
    RpcClient,
    RpcCommandError,
    RpcEvent,
)

pytestmark = [pytest.mark.slow, pytest.mark.skipif(sys.platform == "win32", reason="POSIX")]

MODEL = "openai/gpt-test"


async def start(server: ReplayServer, tmp_path: Path, *extra: str) -> RpcClient:
    workspace = tmp_path / "work"
    workspace.mkdir(exist_ok=True)
    return await RpcClient.start(
        "--model",
        MODEL,
        "--base-url",
        server.url,
        "--tools",
        "coding",
        *extra,
        env=child_env(tmp_path),
        cwd=workspace,
        command=[str(TETHER)],
    )


async def test_approvals_are_requests_to_the_client(tmp_path: Path) -> None:
    async with ReplayServer() as server:
        server.respond(tool_reply("b1", "bash", {"command": "echo one > one.txt"}))
        server.respond(tool_reply("b2", "bash", {"command": "echo two > two.txt"}))
        server.respond(text_reply("Done."))
        server.respond(tool_reply("b3", "bash", {"command": "echo three > three.txt"}))
        server.respond(text_reply("Done again."))
        async with await start(server, tmp_path) as client:
            state = await client.get_state()
            assert state.protocol_version == RPC_PROTOCOL_VERSION
            await client.prompt("Make the files.")
            first = await client.next_line()
            while isinstance(first, RpcEvent):
                first = await client.next_line()
            assert isinstance(first, RpcApprovalRequest)
            assert (first.request_id, first.name) == ("b1", "bash")
            assert (await client.get_state()).pending_approvals == ("b1",)
            with pytest.raises(RpcCommandError) as refused:
                await client.approve("nope", "yes")
            assert refused.value.code == "RPC_NO_SUCH_APPROVAL"
            assert await client.approve("b1", "no") is False
            second = await client.next_line()
            while isinstance(second, RpcEvent):
                second = await client.next_line()
            assert isinstance(second, RpcApprovalRequest)
            assert await client.approve(second.request_id, "always") is True
            while True:
                line = await client.next_line()
                assert not isinstance(line, RpcApprovalRequest)
                if isinstance(line, RpcEvent) and line.type == "run.finished":
                    break

            async def never(request: RpcApprovalRequest) -> Literal["yes", "no", "always"]:
                raise AssertionError(f"asked again about {request.name}")

            lines = await client.run("And three.", never)  # "always" covers bash now
            assert isinstance(lines[-1], RpcEvent)
            messages = await client.get_messages()
        assert await client.close() == 0
    work = tmp_path / "work"
    assert not (work / "one.txt").exists()
    assert (work / "two.txt").read_text() == "two\n"
    assert (work / "three.txt").read_text() == "three\n"
    results = [m for m in messages if m["role"] == "toolResult"]
    assert [r["isError"] for r in results] == [True, False, False]
    assert "the user declined" in results[0]["content"]


async def test_abort_declines_a_waiting_approval(tmp_path: Path) -> None:
    async with ReplayServer() as server:
        server.respond(tool_reply("b1", "bash", {"command": "echo x > x.txt"}))
        async with await start(server, tmp_path) as client:
            await client.prompt("Go.")
            line = await client.next_line()
            while not isinstance(line, RpcApprovalRequest):
                line = await client.next_line()
            assert await client.abort() is True
            while True:
                line = await client.next_line()
                if isinstance(line, RpcEvent) and line.type == "run.finished":
                    break
            assert line.event["payload"]["result"]["status"] == "cancelled"
            assert (await client.get_state()).pending_approvals == ()
        assert await client.close() == 0
    assert not (tmp_path / "work" / "x.txt").exists()


async def test_sessions_are_kept_resumed_and_branched(tmp_path: Path) -> None:
    async with ReplayServer() as server:
        server.respond(text_reply("Noted: 42."))
        server.respond(text_reply("Noted: 7."))
        async with await start(server, tmp_path) as client:
            assert (await client.get_state()).session_id is None  # made by the first prompt
            await client.run("Remember 42.")
            await client.run("Remember 7.")
            session_id = (await client.get_state()).session_id
            assert session_id is not None
            system = await client.get_system_prompt()
        assert await client.close() == 0
        assert system.startswith("You are tether")
        assert f"Project directory: {tmp_path / 'work'}" in system

        server.respond(text_reply("It was 42."))
        server.respond(text_reply("Elsewhere."))
        async with await start(server, tmp_path, "-r", session_id[:8]) as client:
            state = await client.get_state()
            assert (state.session_id, state.message_count) == (session_id, 4)
            listed = await client.list_sessions()
            assert [item["sessionId"] for item in listed] == [session_id]
            tree = await client.get_tree()
            assert [entry["role"] for entry in tree["entries"]] == [
                "user",
                "assistant",
                "user",
                "assistant",
            ]
            first_answer = tree["entries"][1]["id"]
            assert await client.move_to(first_answer[:10]) == first_answer
            await client.run("Which number?")
            other = tmp_path / "other"
            other.mkdir()
            assert await client.set_cwd(other) == str(other)
            await client.run("Still there?")
            new_id = await client.new_session()
            assert new_id != session_id
            assert await client.resume(session_id) == 6
            with pytest.raises(RpcCommandError) as missing:
                await client.resume("zzzz")
            assert missing.value.code == "CODING_SESSION_NOT_FOUND"
        assert await client.close() == 0
    users = [
        [m["content"] for m in request.json["messages"] if m["role"] == "user"]
        for request in server.requests
    ]
    assert users[2] == ["Remember 42.", "Which number?"]
    assert users[3] == ["Remember 42.", "Which number?", "Still there?"]
    assert f"Project directory: {other}" in server.requests[3].json["messages"][0]["content"]


async def test_chats_slash_commands_without_a_terminal_run_over_rpc(tmp_path: Path) -> None:
    """Issue 31: the slash commands of the one table that need no terminal are ``command``
    requests; their lines are the response. A terminal one, or a name not in the table,
    is refused, never run as another command."""
    async with ReplayServer() as server:
        server.respond(text_reply("Noted: 42."))
        async with await start(server, tmp_path) as client:
            await client.run("Remember 42.")
            session_id = (await client.get_state()).session_id
            assert session_id is not None
            (usage,) = await client.command("usage")
            assert usage.startswith("session tokens: ")
            assert "model openai/gpt-test" in usage
            tree = await client.command("/tree")
            assert [row.split("  ", 2)[2] for row in tree] == [
                "you: Remember 42.",
                "assistant: Noted: 42.",
            ]
            (sessions,) = await client.command("sessions")
            assert session_id[:8] in sessions
            (exported,) = await client.command("export", "talk.html")
            assert exported == f"exported to {tmp_path / 'work' / 'talk.html'}"
            (nothing,) = await client.command("compact")
            assert nothing == "nothing to compact"
            for name in ("quit", "help", "model", "compactt", "frobnicate"):
                with pytest.raises(RpcCommandError) as refused:
                    await client.command(name)
                assert refused.value.code == "RPC_UNKNOWN_COMMAND", name
            assert (await client.get_state()).message_count == 2  # nothing else ran
        assert await client.close() == 0
    assert "Remember 42." in (tmp_path / "work" / "talk.html").read_text(encoding="utf-8")
    assert len(server.requests) == 1


async def test_a_server_sent_no_prompt_leaves_no_session(tmp_path: Path) -> None:
    async with ReplayServer() as server, await start(server, tmp_path) as client:
        state = await client.get_state()
        assert (state.session_id, state.protocol_version) == (None, 2)
        assert await client.get_messages() == []
        assert await client.compact() == {"compacted": False}
        assert await client.close() == 0
    assert not list((tmp_path / "data").rglob("*.jsonl"))
