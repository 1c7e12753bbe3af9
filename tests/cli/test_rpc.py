"""``tether rpc`` as a real subprocess: JSON lines in, JSON lines out.

Each test starts the installed console script against the scripted ``ReplayServer`` (on this
test's loop, 127.0.0.1), or llm-katan, writes commands to its stdin and reads its stdout
line by line, parsing every line as JSON (split on ``\\n`` only). Covered: a whole session
(state, a prompt whose response comes before its events, the transcript, a U+2028 that does
not split a line, set_model keeping the transcript, new_session, compact), every kind of
malformed line (answered, never a crash; a 1 MiB+ line too), abort during a stalled stream,
commands refused while busy, a steer and a follow-up while a tool runs, a failed run's
advice line, end of input during a run, Ctrl-C, and startup errors. The fake API key is in
the environment of every run and must appear in no byte the command writes.

No sleeps: the tests wait for the lines the command writes (bounded), and a tool that must
stay busy waits on a FIFO the test writes to.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

import cli_support
from cli_support import BOUND, FAKE_KEY, TETHER, bash_reply, child_env, spawned
from rpc_support import MODEL, is_event, is_response, rpc
from servers.katan import KatanServer
from servers.replay import ReplayServer, Script, json_response
from tether.agent import INTERRUPTED_TURN_NOTE

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals and FIFOs"),
]

PROMPT_TOKENS = 7
"""The input tokens every text answer reports."""


# --- OpenAI stream bodies ---------------------------------------------------------------------


def text_reply(*parts: str) -> Script:
    return cli_support.text_reply(*parts, prompt_tokens=PROMPT_TOKENS)


def stalled_reply(first: str) -> Script:
    return cli_support.stalled_reply(first, prompt_tokens=PROMPT_TOKENS)


def roles(messages: list[dict[str, Any]]) -> list[str]:
    return [message["role"] for message in messages]


# --- a whole session --------------------------------------------------------------------------


async def test_a_priced_model_s_runs_carry_their_cost(tmp_path: Path) -> None:
    """Issue 33: with prices (the config's here), ``run.finished`` carries ``costUsd`` and
    ``get_state`` the session's cost and the prices; a model without prices says ``null``."""
    (tmp_path / "config.toml").write_text(
        f'[models."{MODEL}"]\ninput_price = 1000\noutput_price = 2000\ncontext_window = 9000\n'
    )
    async with (
        ReplayServer() as server,
        rpc("--model", MODEL, "--base-url", server.url, env=child_env(tmp_path)) as session,
    ):
        server.respond(text_reply("Hello", " back."))
        await session.ok({"id": 1, "type": "prompt", "message": "hi"})
        events = await session.until(is_event("run.finished"))
        finished = events[-1]["event"]
        # 7 tokens in at $1000 per million, 2 out at $2000
        assert finished["costUsd"] == pytest.approx(0.007 + 0.004)
        state = await session.ok({"id": 2, "type": "get_state"})
        assert state["cost"] == pytest.approx(0.011)
        assert state["contextWindow"] == 9000
        assert state["prices"] == {
            "input": 1000.0,
            "output": 2000.0,
            "cacheRead": None,
            "cacheWrite": None,
        }
        await session.ok({"id": 3, "type": "set_model", "model": "openai/gpt-other"})
        server.respond(text_reply("Still here."))
        await session.ok({"id": 4, "type": "prompt", "message": "and?"})
        events = await session.until(is_event("run.finished"))
        assert events[-1]["event"]["costUsd"] is None  # unknown, not 0
        state = await session.ok({"id": 5, "type": "get_state"})
        assert state["cost"] is None  # one response's cost is unknown: so is the total


async def test_a_session_prompts_reads_state_and_switches_models(tmp_path: Path) -> None:
    separated = "first line\u2028still the first line"
    async with (
        ReplayServer() as server,
        rpc(
            "--model",
            MODEL,
            "--base-url",
            server.url,
            "--system",
            "Be brief.",
            env=child_env(tmp_path),
        ) as session,
    ):
        state = await session.ok({"id": "s1", "type": "get_state"})
        # Sessions are kept (issue 27), the first made by the first prompt, as in chat.
        assert state.pop("sessionId") is None
        assert state.pop("cwd") == os.getcwd()
        assert state == {
            "protocolVersion": 2,
            "pendingApprovals": [],
            "isRunning": False,
            "model": MODEL,
            "provider": "openai",
            "baseUrl": server.url,
            "messageCount": 0,
            "queuedSteering": 0,
            "queuedFollowUps": 0,
            "usage": {"inputTokens": 0, "outputTokens": 0},
            "cost": None,  # no prices in the config, none in the catalog
            "contextWindow": None,
            "prices": {"input": None, "output": None, "cacheRead": None, "cacheWrite": None},
            "tools": [],
            "maxSteps": 64,
            "thinking": None,  # no level: the model's default
        }

        server.respond(text_reply("Hello", " back."))
        await session.send({"id": 1, "type": "prompt", "message": separated})
        accepted = await session.next()  # the response comes before any event of the run
        assert is_response(accepted, 1)
        assert accepted["success"] is True
        message_id = accepted["data"]["messageId"]
        events = await session.until(is_event("run.finished"))
        assert all(line["type"] == "event" for line in events)
        kinds = [line["event"]["type"] for line in events]
        assert kinds == ["message.accepted", "model.chunk", "model.chunk", "run.finished"]
        assert events[0]["event"]["payload"]["message"]["id"] == message_id
        result = events[-1]["event"]["payload"]["result"]
        assert (result["status"], result["finalText"]) == ("completed", "Hello back.")
        assert server.requests[0].json["messages"][1] == {"role": "user", "content": separated}
        assert server.requests[0].headers["authorization"] == f"Bearer {FAKE_KEY}"

        messages = (await session.ok({"id": 2, "type": "get_messages"}))["messages"]
        assert roles(messages) == ["user", "assistant"]
        assert messages[0] == {"id": message_id, "role": "user", "content": separated}
        assert messages[1]["content"] == [{"type": "text", "text": "Hello back."}]
        assert "\u2028".encode() not in session.raw  # escaped: a line splitter cannot break it

        state = await session.ok({"id": 3, "type": "get_state"})
        session_id = state["sessionId"]
        assert (tmp_path / "data" / "tether" / "sessions" / f"{session_id}.jsonl").is_file()
        assert state["messageCount"] == 2
        assert state["usage"] == {"inputTokens": 7, "outputTokens": 2}

        switched = await session.ok({"id": 4, "type": "set_model", "model": "openai/gpt-other"})
        assert switched == {"model": "openai/gpt-other", "baseUrl": server.url}
        server.respond(text_reply("Still here."))
        await session.ok({"id": 5, "type": "prompt", "message": "And now?"})
        await session.until(is_event("run.finished"))
        second = server.requests[1].json
        assert second["model"] == "gpt-other"
        assert [m["role"] for m in second["messages"]] == ["system", "user", "assistant", "user"]
        state = await session.ok({"id": 6, "type": "get_state"})
        assert (state["model"], state["messageCount"]) == ("openai/gpt-other", 4)
        assert state["usage"] == {"inputTokens": 14, "outputTokens": 3}

        unknown = await session.refused(
            {"id": 7, "type": "set_model", "model": "nope/x"}, request_id=7
        )
        assert unknown["code"] == "CLI_UNKNOWN_PROVIDER"
        no_key = await session.refused(
            {"id": 8, "type": "set_model", "model": "anthropic/claude-test"}, request_id=8
        )
        assert no_key["code"] == "CLI_MISSING_API_KEY"
        assert "ANTHROPIC_API_KEY" in no_key["message"]

        # Work queued while idle moves to the new model's Agent; new_session drops it.
        await session.ok({"id": "q1", "type": "steer", "message": "queued while idle"})
        await session.ok({"id": "q2", "type": "follow_up", "message": "queued for later"})
        back = {"id": "q3", "type": "set_model", "model": MODEL, "baseUrl": server.url}
        assert (await session.ok(back))["model"] == MODEL
        state = await session.ok({"id": "q4", "type": "get_state"})
        assert (state["messageCount"], state["queuedSteering"], state["queuedFollowUps"]) == (
            4,
            1,
            1,
        )
        created = await session.ok({"id": 9, "type": "new_session"})
        assert created["messageCount"] == 0
        assert created["sessionId"] != session_id
        state = await session.ok({"id": 10, "type": "get_state"})
        assert (state["messageCount"], state["usage"]["inputTokens"]) == (0, 0)
        assert (state["queuedSteering"], state["queuedFollowUps"]) == (0, 0)
        assert await session.ok({"id": 11, "type": "compact"}) == {"compacted": False}

        status, stderr = await session.finish()

    assert status == 0
    assert stderr == b""


async def test_malformed_lines_are_answered_and_the_session_goes_on(tmp_path: Path) -> None:
    async with rpc("--model", "ollama/qwen3", env=child_env(tmp_path)) as session:
        cases: list[tuple[bytes, object, str]] = [
            (b"not json\n", None, "RPC_INVALID_JSON"),
            (b"\xff\xfe{}\n", None, "RPC_INVALID_JSON"),
            (b'{"id": 1, "type": "get_state", "x": NaN}\n', None, "RPC_INVALID_JSON"),
            (b"[1, 2]\n", None, "RPC_INVALID_REQUEST"),
            (b'"get_state"\n', None, "RPC_INVALID_REQUEST"),
            (b'{"type": "get_state"}\n', None, "RPC_INVALID_REQUEST"),
            (b'{"id": true, "type": "get_state"}\n', None, "RPC_INVALID_REQUEST"),
            (b'{"id": [1], "type": "get_state"}\n', None, "RPC_INVALID_REQUEST"),
            (b'{"id": "a"}\n', "a", "RPC_INVALID_REQUEST"),
            (b'{"id": "b", "type": 7}\n', "b", "RPC_INVALID_REQUEST"),
            (b'{"id": "c", "type": "dance"}\n', "c", "RPC_UNKNOWN_COMMAND"),
            (b'{"id": "d", "type": "prompt"}\n', "d", "RPC_INVALID_REQUEST"),
            (b'{"id": "e", "type": "prompt", "message": ""}\n', "e", "RPC_INVALID_REQUEST"),
            (b'{"id": "f", "type": "steer", "message": 3}\n', "f", "RPC_INVALID_REQUEST"),
            (b'{"id": "g", "type": "abort", "force": true}\n', "g", "RPC_INVALID_REQUEST"),
            (b'{"id": "h", "type": "set_model"}\n', "h", "RPC_INVALID_REQUEST"),
            (
                b'{"id": "i", "type": "set_model", "model": "openai/x", "baseUrl": 1}\n',
                "i",
                "RPC_INVALID_REQUEST",
            ),
            (
                b'{"id": "j", "type": "set_model", "model": "openai/x",'
                b' "baseUrl": "http://127.0.0.1:99999/v1"}\n',
                "j",
                "RPC_INVALID_REQUEST",
            ),
            (b"[" * 100_000 + b"\n", None, "RPC_INVALID_JSON"),
            # A lone surrogate no session records (the run failed: AGENT_RECORDING_FAILED).
            (
                b'{"id": "k", "type": "prompt", "message": "a \\ud800"}\n',
                "k",
                "RPC_INVALID_REQUEST",
            ),
            (b'{"id": "l", "type": "steer", "message": "\\udfff"}\n', "l", "RPC_INVALID_REQUEST"),
        ]
        for line, request_id, code in cases:
            error = await session.refused(line, request_id)
            assert error["code"] == code, (line[:60], error)
        unknown = next(line for line in session.lines if line["id"] == "c")
        assert (unknown["id"], unknown["command"]) == ("c", "dance")
        assert "known:" in unknown["error"]["message"]

        huge = b'{"id": "big", "type": "prompt", "message": "' + b"x" * (1 << 20) + b'"}\n'
        error = await session.refused(huge, None)
        assert error["code"] == "RPC_LINE_TOO_LONG"
        # Blank lines are ignored, CRLF is fine, and the session goes on.
        await session.send(b"\n  \r\n")
        state = await session.ok({"id": 99, "type": "get_state"})
        assert state["messageCount"] == 0
        crlf = await session.call(b'{"id": 100, "type": "get_messages"}\r\n', 100)
        assert crlf["success"] is True
        # A last line without its newline is still read at end of input.
        await session.send(b'{"id": 101, "type": "get_state"}')
        status, stderr = await session.finish()

    assert status == 0
    assert stderr == b""
    assert is_response(session.lines[-1], 101)
    assert all(line["type"] == "response" for line in session.lines)


async def test_the_queue_limit_is_an_agent_error(tmp_path: Path) -> None:
    async with rpc("--model", "ollama/qwen3", env=child_env(tmp_path)) as session:
        lines = b"".join(
            b'{"id": %d, "type": "steer", "message": "more"}\n' % number for number in range(257)
        )
        error = await session.refused(lines, 256)
        status, _ = await session.finish()

    assert status == 0
    assert error["code"] == "AGENT_MESSAGE_LIMIT"
    assert sum(line["success"] for line in session.lines) == 256


async def test_a_closed_stdin_is_the_end_of_input(tmp_path: Path) -> None:
    process = await asyncio.create_subprocess_exec(
        "/bin/sh",
        "-c",
        'exec "$0" rpc --model ollama/qwen3 <&-',
        str(TETHER),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=child_env(tmp_path),
    )
    try:
        async with asyncio.timeout(BOUND):
            stdout, stderr = await process.communicate()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()

    assert (process.returncode, stdout, stderr) == (0, b"", b"")


async def test_a_full_stdout_is_exit_4_with_one_line(tmp_path: Path) -> None:
    with open("/dev/full", "wb") as full:  # noqa: ASYNC230 - opening a device, not reading
        async with spawned(
            "rpc", "--model", "ollama/qwen3", env=child_env(tmp_path), stdout=full
        ) as process:
            async with asyncio.timeout(BOUND):
                _, stderr = await process.communicate(b'{"id": 1, "type": "get_state"}\n')

    assert process.returncode == 4
    assert stderr.startswith(b"tether rpc: cannot write output: ")
    assert stderr.count(b"\n") == 1


async def test_a_reader_gone_during_a_run_cancels_it_and_exits_4(tmp_path: Path) -> None:
    loop = asyncio.get_running_loop()
    read_end, write_end = os.pipe()
    reader = asyncio.StreamReader()
    transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(read_end, "rb", buffering=0)
    )
    try:
        async with ReplayServer() as server:
            stalled = server.respond(stalled_reply("Nobody reads this"))
            async with spawned(
                "rpc",
                "--model",
                MODEL,
                "--base-url",
                server.url,
                env=child_env(tmp_path),
                stdout=write_end,
            ) as process:
                os.close(write_end)
                write_end = -1
                assert process.stdin is not None
                process.stdin.write(b'{"id": 1, "type": "prompt", "message": "hi"}\n')
                async with asyncio.timeout(BOUND):
                    response = json.loads(await reader.readline())
                    assert is_response(response, 1)
                    await stalled.stalled.wait()
                    transport.close()  # the reader goes away while the stream is stalled
                    stalled.release.set()  # the next chunk's event cannot be written
                    _, stderr = await process.communicate()
                    await stalled.finished.wait()
    finally:
        transport.close()
        if write_end >= 0:
            os.close(write_end)

    assert process.returncode == 4
    assert stderr == b""
    assert FAKE_KEY.encode() not in stderr


async def test_abort_during_a_stalled_stream_keeps_the_interrupted_turn(tmp_path: Path) -> None:
    """The coding session keeps what a cancelled turn streamed and tells the model it was
    cut off (``Agent(interrupted_turns="keep")``; issue 27), in a transcript that goes on."""
    async with (
        ReplayServer() as server,
        rpc("--model", MODEL, "--base-url", server.url, env=child_env(tmp_path)) as session,
    ):
        stalled = server.respond(stalled_reply("Let me think"))
        await session.ok({"id": 1, "type": "prompt", "message": "Think hard."})
        await session.until(is_event("model.chunk"))

        busy = [
            await session.refused({"id": 2, "type": "prompt", "message": "again"}, 2),
            await session.refused({"id": 3, "type": "set_model", "model": MODEL}, 3),
            await session.refused({"id": 4, "type": "new_session"}, 4),
        ]
        assert [error["code"] for error in busy] == ["AGENT_BUSY"] * 3
        state = await session.ok({"id": 5, "type": "get_state"})
        assert state["isRunning"] is True

        assert await session.ok({"id": 6, "type": "abort"}) == {"cancelled": True}
        finished = (await session.until(is_event("run.finished")))[-1]
        result = finished["event"]["payload"]["result"]
        assert (result["status"], result["reason"]) == ("cancelled", "Aborted by the RPC client")
        async with asyncio.timeout(BOUND):
            await stalled.finished.wait()
        assert stalled.outcome == "client-gone"
        messages = (await session.ok({"id": 7, "type": "get_messages"}))["messages"]
        assert roles(messages) == ["user", "assistant", "user"]
        assert "Let me think" in json.dumps(messages[1]["content"])
        assert messages[2]["content"] == INTERRUPTED_TURN_NOTE
        assert await session.ok({"id": 8, "type": "abort"}) == {"cancelled": False}

        # The agent goes on: another prompt completes over the same transcript.
        server.respond(text_reply("Done thinking."))
        await session.ok({"id": 9, "type": "prompt", "message": "Just answer."})
        result = (await session.until(is_event("run.finished")))[-1]["event"]["payload"]["result"]
        assert result["status"] == "completed"
        sent = server.requests[1].json["messages"]
        assert roles(sent) == ["system", "user", "assistant", "user", "user"]

        # End of input during a stalled stream cancels the run, writes its end, exits 0.
        server.respond(stalled_reply("Once more"))
        await session.ok({"id": 10, "type": "prompt", "message": "Go on."})
        await session.until(is_event("model.chunk"))
        status, stderr = await session.finish()

    assert status == 0
    assert stderr == b""
    last = session.lines[-1]
    assert last["event"]["type"] == "run.finished"
    result = last["event"]["payload"]["result"]
    assert (result["status"], result["reason"]) == ("cancelled", "Standard input closed")


async def test_a_steer_and_a_follow_up_while_a_tool_runs(tmp_path: Path) -> None:
    workspace = tmp_path / "work"
    workspace.mkdir()
    gate = workspace / "gate"
    os.mkfifo(gate)
    # Held open for reading and writing: the tool's open never blocks, its read waits for us.
    gate_fd = os.open(gate, os.O_RDWR | os.O_NONBLOCK)
    try:
        async with (
            ReplayServer() as server,
            rpc(
                "--model",
                MODEL,
                "--base-url",
                server.url,
                "--tools",
                "coding",
                "--auto-approve",  # approvals are asked of the client otherwise (issue 27)
                env=child_env(tmp_path),
                cwd=workspace,
            ) as session,
        ):
            server.respond(bash_reply("call-gate", 'read -r word < gate && echo "got $word"'))
            server.respond(text_reply("Bonjour."))
            server.respond(text_reply("Bye."))
            await session.ok({"id": 1, "type": "prompt", "message": "Wait for the gate."})
            await session.until(is_event("tool.started"))
            steered = await session.ok({"id": 2, "type": "steer", "message": "Also in French."})
            followed = await session.ok({"id": 3, "type": "follow_up", "message": "Then bye."})
            state = await session.ok({"id": 4, "type": "get_state"})
            assert (state["queuedSteering"], state["queuedFollowUps"]) == (1, 1)
            assert "bash" in state["tools"]
            os.write(gate_fd, b"open\n")
            events = await session.until(is_event("run.finished"))

            kinds = [line["event"]["type"] for line in events]
            tool_done = kinds.index("tool.finished")
            tool_result = events[tool_done]["event"]["payload"]["message"]
            assert tool_result["isError"] is False
            assert "got open" in tool_result["content"]
            accepted = [
                line["event"]["payload"]["message"]["id"]
                for line in events
                if line["event"]["type"] == "message.accepted"
            ]
            assert accepted == [steered["messageId"], followed["messageId"]]
            assert kinds.index("message.accepted") > tool_done
            result = events[-1]["event"]["payload"]["result"]
            assert (result["status"], result["finalText"]) == ("completed", "Bye.")
            second = server.requests[1].json["messages"]
            # chat's system prompt comes first (issue 27)
            assert [m["role"] for m in second] == ["system", "user", "assistant", "tool", "user"]
            assert second[-1]["content"] == "Also in French."
            third = server.requests[2].json["messages"]
            assert third[-1] == {"role": "user", "content": "Then bye."}
            messages = (await session.ok({"id": 5, "type": "get_messages"}))["messages"]
            assert roles(messages) == [
                "user",
                "assistant",
                "toolResult",
                "user",
                "assistant",
                "user",
                "assistant",
            ]
            status, stderr = await session.finish()
    finally:
        os.close(gate_fd)

    assert status == 0
    assert stderr == b""


async def test_a_failed_run_is_followed_by_advice(tmp_path: Path) -> None:
    body = {"error": {"message": f"Incorrect API key provided: {FAKE_KEY}"}}
    async with (
        ReplayServer() as server,
        rpc("--model", MODEL, "--base-url", server.url, env=child_env(tmp_path)) as session,
    ):
        server.respond(json_response(401, body))
        await session.ok({"id": 1, "type": "prompt", "message": "hi"})
        lines = await session.until(is_event("run.finished"))
        advice = lines[-2]
        assert advice["type"] == "error"
        assert advice["error"]["code"] == "CLI_AUTH_FAILED"
        assert "OPENAI_API_KEY" in advice["error"]["message"]
        server.respond(
            json_response(429, {"error": {"message": "slow"}}, headers={"retry-after": "90"})
        )
        await session.ok({"id": 2, "type": "prompt", "message": "hi again"})
        lines = await session.until(is_event("run.finished"))
        assert lines[-2]["error"]["code"] == "CLI_RATE_LIMITED"
        assert lines[-2]["error"]["retryAfter"] == 90
        status, _ = await session.finish()

    assert status == 0


async def test_ctrl_c_cancels_the_prompt_and_exits_130(tmp_path: Path) -> None:
    async with (
        ReplayServer() as server,
        rpc("--model", MODEL, "--base-url", server.url, env=child_env(tmp_path)) as session,
    ):
        server.respond(stalled_reply("Hmm"))
        await session.ok({"id": 1, "type": "prompt", "message": "hi"})
        await session.until(is_event("model.chunk"))
        session.process.send_signal(signal.SIGINT)
        finished = (await session.until(is_event("run.finished")))[-1]
        status, stderr = await session.finish()

    assert status == 130
    assert b"tether rpc: interrupted" in stderr
    assert finished["event"]["payload"]["result"]["reason"] == "Interrupted by the user"


async def test_the_default_model_comes_from_the_config(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text('default_model = "ollama/qwen3"\n', encoding="utf-8")
    async with rpc(env=child_env(tmp_path)) as session:
        state = await session.ok({"id": 1, "type": "get_state"})
        status, _ = await session.finish()

    assert status == 0
    assert (state["model"], state["baseUrl"]) == ("ollama/qwen3", "http://localhost:11434/v1")


@pytest.mark.parametrize(
    ("arguments", "config", "code"),
    [
        ((), "", "CLI_NO_MODEL"),
        (("--model", "nope/x"), "", "CLI_UNKNOWN_PROVIDER"),
        (("--model", "anthropic/claude-test"), "", "CLI_MISSING_API_KEY"),
        (("--model", MODEL), "[tools]\nauto_aprove = true\n", "CLI_CONFIG_INVALID"),
    ],
)
async def test_startup_errors_exit_2_before_reading(
    tmp_path: Path, arguments: tuple[str, ...], config: str, code: str
) -> None:
    if config:
        (tmp_path / "config.toml").write_text(config, encoding="utf-8")
    async with rpc(*arguments, env=child_env(tmp_path)) as session:
        status, stderr = await session.finish()

    assert status == 2
    assert session.raw == b""
    assert stderr.decode().startswith(f"tether rpc: [{code}] ")


async def test_llm_katan_answers_a_prompt(tmp_path: Path, katan_server: KatanServer) -> None:
    async with rpc(
        "--model",
        f"openai/{katan_server.model}",
        "--base-url",
        katan_server.base_url,
        env=child_env(tmp_path),
    ) as session:
        await session.ok({"id": 1, "type": "prompt", "message": "Hello katan"})
        result = (await session.until(is_event("run.finished")))[-1]["event"]["payload"]["result"]
        messages = (await session.ok({"id": 2, "type": "get_messages"}))["messages"]
        status, stderr = await session.finish()

    assert status == 0
    assert stderr == b""
    assert result["status"] == "completed"
    assert result["finalText"]
    assert roles(messages) == ["user", "assistant"]


async def test_compact_runs_in_the_background_and_abort_cancels_it(tmp_path: Path) -> None:
    async with (
        ReplayServer() as server,
        rpc("--model", MODEL, "--base-url", server.url, env=child_env(tmp_path)) as session,
    ):
        for n in range(3):
            server.respond(text_reply(f"Answer {n}: " + "x" * 300))
            await session.ok({"id": f"p{n}", "type": "prompt", "message": "q" * 300})
            await session.until(is_event("run.finished"))
        before = (await session.ok({"id": "m1", "type": "get_messages"}))["messages"]

        stalled = server.respond(stalled_reply("The summary starts"))
        await session.send({"id": "c1", "type": "compact"})
        async with asyncio.timeout(BOUND):
            await stalled.stalled.wait()  # the summarizer's request is in flight
        busy = await session.refused({"id": "p9", "type": "prompt", "message": "now"}, "p9")
        assert busy["code"] == "AGENT_BUSY"
        assert await session.ok({"id": "a1", "type": "abort"}) == {"cancelled": True}
        cancelled = (await session.until(lambda line: is_response(line, "c1")))[-1]
        assert cancelled["success"] is False
        assert cancelled["error"]["code"] == "CONTEXT_CANCELLED"
        after = (await session.ok({"id": "m2", "type": "get_messages"}))["messages"]
        assert after == before  # a cancelled compaction changes nothing
        state = await session.ok({"id": "s1", "type": "get_state"})
        assert state["isRunning"] is False

        server.respond(text_reply("The three questions were all about q."))
        response = await session.call({"id": "c2", "type": "compact"}, "c2")
        assert response["success"] is True, response["error"]
        compacted = response["data"]
        assert compacted["compacted"] is True
        messages = (await session.ok({"id": "m3", "type": "get_messages"}))["messages"]
        assert messages[0]["content"].endswith("The three questions were all about q.")
        assert len(messages) < len(before)
        status, _ = await session.finish()
    assert status == 0


async def test_an_interrupted_command_is_reported_to_the_model(tmp_path: Path) -> None:
    """Issue 27: after approving ``echo started; sleep 30`` and aborting, the next request
    shows the model the call it made, an error result saying it was interrupted and may have
    had side effects, and a note that its answer was cut off (it used to show nothing)."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    async with (
        ReplayServer() as server,
        rpc(
            "--model",
            MODEL,
            "--base-url",
            server.url,
            "--tools",
            "coding",
            "--auto-approve",
            env=child_env(tmp_path),
            cwd=workspace,
        ) as session,
    ):
        server.respond(bash_reply("call-sleep", "echo started; sleep 30"))
        server.respond(text_reply("It was interrupted."))
        await session.ok({"id": 1, "type": "prompt", "message": "Run the slow command."})
        await session.until(is_event("tool.started"))
        assert await session.ok({"id": 2, "type": "abort"}) == {"cancelled": True}
        result = (await session.until(is_event("run.finished")))[-1]["event"]["payload"]["result"]
        assert result["status"] == "cancelled"
        await session.ok({"id": 3, "type": "prompt", "message": "What happened?"})
        await session.until(is_event("run.finished"))
        status, _ = await session.finish()

    assert status == 0
    sent = server.requests[1].json["messages"]
    assert roles(sent) == ["system", "user", "assistant", "tool", "user", "user"]
    arguments = sent[2]["tool_calls"][0]["function"]["arguments"]
    assert json.loads(arguments) == {"command": "echo started; sleep 30"}
    assert sent[3]["tool_call_id"] == "call-sleep"
    assert sent[3]["content"].startswith("TOOL_CALL_INTERRUPTED: interrupted by the user")
    assert "side effects" in sent[3]["content"]
    assert [sent[4]["content"], sent[5]["content"]] == [INTERRUPTED_TURN_NOTE, "What happened?"]


async def test_retries_and_a_commands_output_stream_as_events(tmp_path: Path) -> None:
    """Issue 28: ``model.retry`` before the answer, then ``started`` from a command that is
    still running (it waits 30 s: the test aborts it once it has seen the output)."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    async with (
        ReplayServer() as server,
        rpc(
            "--model",
            MODEL,
            "--base-url",
            server.url,
            "--tools",
            "coding",
            "--auto-approve",
            env=child_env(tmp_path),
            cwd=workspace,
        ) as session,
    ):
        server.respond(
            json_response(503, {"error": {"message": "busy"}}, headers={"retry-after-ms": "5"})
        )
        server.respond(bash_reply("call-live", "echo started; sleep 30"))
        await session.ok({"id": 1, "type": "prompt", "message": "Run it."})
        lines = await session.until(is_event("tool.progress"))
        progress = lines[-1]["event"]["payload"]
        assert progress == {"toolCallId": "call-live", "toolName": "bash", "text": "started\n"}
        assert await session.ok({"id": 2, "type": "abort"}) == {"cancelled": True}
        await session.until(is_event("run.finished"))
        status, _ = await session.finish()

    assert status == 0
    events = [line["event"] for line in session.lines if line.get("type") == "event"]
    retry = next(event for event in events if event["type"] == "model.retry")
    assert retry["payload"] == {
        "requestId": retry["payload"]["requestId"],
        "attempt": 1,
        "delayMs": 5,
        "code": "PROVIDER_OVERLOADED",
        "reason": "HTTP 503",
    }
    types = [event["type"] for event in events]
    assert types.index("model.retry") < types.index("model.chunk")
