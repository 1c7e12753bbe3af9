"""``tether run --model ...`` as a real subprocess against loopback servers.

The installed console script runs against the scripted ``ReplayServer`` (on this test's
event loop, 127.0.0.1) and the real llm-katan: a text answer for a person and as JSON lines
(every line parsed), the coding tools confined to the working directory, the step budget,
Ctrl-C during a stalled stream, a config-file provider, and each error a person can act on
(missing key, unknown provider, unreachable server, 401, 429 with its retry-after, context
overflow) with its stable code and exit status 2. A fake API key is set for every run and
must appear in no byte the command writes: not even when the server echoes it back.

No sleeps: the tests wait for the command's own output lines, every wait is bounded, and
every process is killed and reaped when its test ends.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any, cast

import pytest

from cli_support import (
    BOUND,
    FAKE_KEY,
    TETHER,
    assert_quiet,
    child_env,
    run_tether,
    spawned,
)
from openai_bodies import text_chunks
from run_model_support import (
    MODEL,
    model_run,
    stalled_reply,
    started,
    text_reply,
    tool_reply,
)
from servers.katan import KatanServer, free_port
from servers.replay import ReplayServer, Script, json_response, sse_body, sse_response
from tether.agent import INTERRUPTED_TURN_NOTE
from tether.agent.session import SessionStore, SessionTree
from tether.protocol import AssistantMessage, TextBlock

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals"),
]


# --- the subprocess ---------------------------------------------------------------------------


# --- OpenAI stream bodies ---------------------------------------------------------------------


def keys_everywhere(value: object) -> set[str]:
    found: set[str] = set()
    if isinstance(value, dict):
        for key, item in cast(dict[str, object], value).items():
            found.add(key)
            found |= keys_everywhere(item)
    elif isinstance(value, list):
        for item in cast(list[object], value):
            found |= keys_everywhere(item)
    return found


# --- a model run ------------------------------------------------------------------------------


async def test_a_text_answer_is_shown_to_a_person(tmp_path: Path) -> None:
    async with ReplayServer() as server:
        server.respond(text_reply("The sum ", "is 42."))
        completed = await run_tether(
            *model_run(server.url, "--system", "Be brief."), env=child_env(tmp_path)
        )

    assert completed.returncode == 0, completed.err
    assert completed.stderr == b""
    lines = completed.out.splitlines()
    assert lines[0] == "user: What is 20 + 22?"
    assert "assistant: The sum is 42." in lines
    assert lines[-1] == "status: completed · model turns: 1 · tokens: 11 in, 2 out"
    request = server.requests[0]
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {FAKE_KEY}"
    body = request.json
    assert body["model"] == "gpt-test"
    # The same system prompt as tether chat (issue 27): --system replaces its introduction.
    system = body["messages"][0]
    assert system["role"] == "system"
    assert system["content"].startswith("Be brief.\n\nTools: none.\nToday's date: ")
    assert f"Project directory: {os.getcwd()}" in system["content"]
    assert body["messages"][1:] == [{"role": "user", "content": "What is 20 + 22?"}]
    assert "tools" not in body


async def test_json_writes_one_camel_case_event_per_line(tmp_path: Path) -> None:
    async with ReplayServer() as server:
        server.respond(text_reply("Forty", "-two."))
        completed = await run_tether(*model_run(server.url, "--json"), env=child_env(tmp_path))

    assert completed.returncode == 0, completed.err
    assert completed.stderr == b""
    events = completed.events()
    assert [event["type"] for event in events] == [
        "message.accepted",
        "model.chunk",
        "model.chunk",
        "run.finished",
    ]
    assert [event["sequence"] for event in events] == list(range(4))
    assert [event["payload"]["chunk"]["delta"] for event in events[1:3]] == ["Forty", "-two."]
    result = events[-1]["payload"]["result"]
    assert result["status"] == "completed"
    assert result["finalText"] == "Forty-two."
    assert result["usage"] == {"inputTokens": 11, "outputTokens": 2}
    assert [message["role"] for message in result["messages"]] == ["user", "assistant"]
    keys = keys_everywhere(events)
    assert {"requestId", "finalText", "inputTokens"} <= keys
    assert not [key for key in keys if "_" in key]


async def test_a_priced_model_run_shows_its_cost(tmp_path: Path) -> None:
    """Issue 33: the summary line and the JSON ``run.finished`` carry the run's cost (the
    config's prices here: 11 tokens in at $1000 per million, 2 out at $2000)."""
    (tmp_path / "config.toml").write_text(
        '[models."openai/gpt-test"]\ninput_price = 1000\noutput_price = 2000\n'
    )
    env = child_env(tmp_path)
    async with ReplayServer() as server:
        server.respond(text_reply("Forty", "-two."))
        server.respond(text_reply("Forty", "-two."))
        human = await run_tether(*model_run(server.url), env=env)
        as_json = await run_tether(*model_run(server.url, "--json"), env=env)
    assert human.returncode == 0, human.err
    last = human.out.splitlines()[-1]
    assert last == "status: completed · model turns: 1 · tokens: 11 in, 2 out · cost: $0.0150"
    assert as_json.returncode == 0, as_json.err
    finished = as_json.events()[-1]
    assert finished["type"] == "run.finished"
    assert finished["costUsd"] == pytest.approx(0.015)


async def test_the_coding_tools_work_in_the_current_directory_only(tmp_path: Path) -> None:
    workspace = tmp_path / "work"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("the answer is 42\n", encoding="utf-8")
    (tmp_path / "outside.txt").write_text("not yours\n", encoding="utf-8")
    async with ReplayServer() as server:
        server.respond(
            tool_reply(
                ("call-1", "read_file", {"path": "notes.txt"}),
                ("call-2", "read_file", {"path": "../outside.txt"}),
            )
        )
        server.respond(text_reply("It says 42."))
        completed = await run_tether(
            *model_run(server.url, "--json", "--tools", "coding", prompt="Read notes.txt"),
            env=child_env(tmp_path),
            cwd=workspace,
        )

    assert completed.returncode == 0, completed.err
    events = completed.events()
    finished = [event["payload"]["message"] for event in events if event["type"] == "tool.finished"]
    assert [(m["toolCallId"], m["isError"]) for m in finished] == [
        ("call-1", False),
        ("call-2", True),
    ]
    assert "the answer is 42" in finished[0]["content"]
    assert "not yours" not in finished[1]["content"]
    first, second = (request.json for request in server.requests)
    names = [tool["function"]["name"] for tool in first["tools"]]
    assert names == [
        "read_file",
        "write_file",
        "edit_file",
        "list_files",
        "grep",
        "bash",
        "python_process",
    ]
    assert [message["role"] for message in second["messages"]] == [
        "system",  # the coding tools come with chat's system prompt (issue 27)
        "user",
        "assistant",
        "tool",
        "tool",
    ]
    assert "Tools: read_file, write_file" in second["messages"][0]["content"]
    assert events[-1]["payload"]["result"]["finalText"] == "It says 42."


async def test_a_person_sees_tool_calls_and_shortened_results(tmp_path: Path) -> None:
    workspace = tmp_path / "work"
    workspace.mkdir()
    (workspace / "big.txt").write_text("line\n" * 500, encoding="utf-8")
    async with ReplayServer() as server:
        server.respond(tool_reply(("call-1", "read_file", {"path": "big.txt"})))
        server.respond(text_reply("Many lines."))
        completed = await run_tether(
            *model_run(server.url, "--tools", "coding", prompt="Read big.txt"),
            env=child_env(tmp_path),
            cwd=workspace,
        )

    assert completed.returncode == 0, completed.err
    lines = completed.out.splitlines()
    assert '→ read_file({"path":"big.txt"})  [call-1]' in lines
    result = next(line for line in lines if line.startswith("← read_file ok: "))
    assert "lines" in result
    assert len(result) < 400
    assert lines[-1].startswith("status: completed · model turns: 2")


async def test_max_steps_allows_up_to_1024_with_a_model(tmp_path: Path) -> None:
    env = child_env(tmp_path)
    async with ReplayServer() as server:
        server.respond(text_reply("ok"))
        many = await run_tether(*model_run(server.url, "--json", "--max-steps", "1024"), env=env)
        server.respond(tool_reply(("call-1", "list_files", {})))
        one = await run_tether(
            *model_run(server.url, "--json", "--tools", "coding", "--max-steps", "1"),
            env=env,
            cwd=tmp_path,
        )
    too_many = await run_tether(*model_run("http://127.0.0.1:9/v1", "--max-steps", "1025"), env=env)

    assert many.returncode == 0, many.err
    assert one.returncode == 3, one.err
    result = one.events()[-1]["payload"]["result"]
    assert (result["status"], result["maxSteps"]) == ("maxSteps", 1)
    assert too_many.returncode == 2
    assert "--max-steps" in too_many.err
    assert too_many.stdout == b""


@pytest.mark.parametrize(
    ("arguments", "complaint"),
    [
        (["--tools", "coding"], "--tools needs --model"),
        (["--base-url", "http://127.0.0.1:9/v1"], "--base-url needs --model"),
        (["--system", "Be brief."], "--system needs --model"),
        (["--model", MODEL], "-p/--prompt"),
        (["--model", MODEL, "-p", "hi", "--fixture", "x.json"], "exclusive"),
        (["--model", MODEL, "-p", "hi", "--base-url", "ftp://x"], "--base-url"),
        (["--model", MODEL, "-p", "hi", "--tools", "everything"], "--tools"),
        (["--model", MODEL, "-p", "hi", "--system", ""], "--system"),
    ],
)
async def test_options_that_do_not_fit_are_usage_errors(
    tmp_path: Path, arguments: list[str], complaint: str
) -> None:
    completed = await run_tether("run", *arguments, env=child_env(tmp_path))

    assert completed.returncode == 2
    assert complaint in completed.err
    assert "usage" in completed.err.lower()
    assert completed.stdout == b""


async def test_without_a_model_the_bundled_fixture_still_runs_offline(tmp_path: Path) -> None:
    # No key at all, and a config file that is broken: a fixture run reads neither.
    (tmp_path / "config.toml").write_text("this is = not [valid", encoding="utf-8")
    env = child_env(tmp_path)
    del env["OPENAI_API_KEY"]
    completed = await run_tether("run", "--json", env=env)

    assert completed.returncode == 0, completed.err
    assert completed.events()[-1]["payload"]["result"]["finalText"] == "The sum is 42."


async def test_a_provider_from_the_config_file_is_used_with_its_settings(tmp_path: Path) -> None:
    async with ReplayServer() as server:
        (tmp_path / "config.toml").write_text(
            f'[providers.box]\nbase_url = "{server.url}"\napi_key_env = "BOX_TOKEN"\n\n'
            '[models."box/m1"]\nmax_output_tokens = 77\ncontext_window = 8192\n',
            encoding="utf-8",
        )
        server.respond(text_reply("hello"))
        completed = await run_tether(
            "run", "--model", "box/m1", "-p", "hi", env=child_env(tmp_path, BOX_TOKEN=FAKE_KEY)
        )

    assert completed.returncode == 0, completed.err
    request = server.requests[0]
    assert request.headers["authorization"] == f"Bearer {FAKE_KEY}"
    assert request.json["model"] == "m1"
    assert request.json["max_tokens"] == 77


# --- errors a person can act on ---------------------------------------------------------------


async def test_a_missing_key_names_the_variable_and_sends_nothing(tmp_path: Path) -> None:
    env = child_env(tmp_path)
    del env["OPENAI_API_KEY"]
    async with ReplayServer() as server:
        completed = await run_tether(*model_run(server.url), env=env)

    assert completed.returncode == 2
    assert completed.stdout == b""
    assert completed.err.startswith("tether run: [CLI_MISSING_API_KEY] ")
    assert "OPENAI_API_KEY" in completed.err
    assert server.requests == []


async def test_an_empty_key_counts_as_missing(tmp_path: Path) -> None:
    completed = await run_tether(
        "run",
        "--model",
        "anthropic/claude-test",
        "-p",
        "hi",
        env=child_env(tmp_path, ANTHROPIC_API_KEY=""),
    )

    assert completed.returncode == 2
    assert "[CLI_MISSING_API_KEY]" in completed.err
    assert "ANTHROPIC_API_KEY" in completed.err


async def test_an_unknown_provider_lists_the_known_ones(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text(
        '[providers.gpu-box]\nbase_url = "http://127.0.0.1:9/v1"\n', encoding="utf-8"
    )
    completed = await run_tether("run", "--model", "nope/x", "-p", "hi", env=child_env(tmp_path))
    malformed = await run_tether("run", "--model", "gpt-4o", "-p", "hi", env=child_env(tmp_path))

    assert completed.returncode == 2
    assert "[CLI_UNKNOWN_PROVIDER]" in completed.err
    for name in ("openai", "anthropic", "ollama", "llamacpp", "gpu-box"):
        assert name in completed.err
    assert malformed.returncode == 2
    assert "[CLI_INVALID_MODEL_SPEC]" in malformed.err
    assert "PROVIDER/MODEL" in malformed.err


async def test_an_unreachable_server_is_named(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    completed = await run_tether(*model_run(url, "--json"), env=child_env(tmp_path))

    assert completed.returncode == 2
    assert f"[CLI_SERVER_UNREACHABLE] cannot reach {url}" in completed.err
    result = completed.events()[-1]["payload"]["result"]
    assert result["status"] == "failed"
    assert result["error"]["message"].startswith("PROVIDER_CONNECTION_FAILED")


async def test_a_401_names_the_key_variable_and_never_the_key(tmp_path: Path) -> None:
    body = {"error": {"message": f"Incorrect API key provided: {FAKE_KEY}", "code": "bad_key"}}
    async with ReplayServer() as server:
        server.respond(json_response(401, body))
        completed = await run_tether(*model_run(server.url), env=child_env(tmp_path))

    assert completed.returncode == 2
    assert "[CLI_AUTH_FAILED]" in completed.err
    assert "HTTP 401" in completed.err
    assert "OPENAI_API_KEY" in completed.err
    assert "status: failed [MODEL_STREAM_FAILED]: PROVIDER_AUTH_FAILED" in completed.out
    assert "[redacted]" in completed.out  # the echoed key was taken out of the message


async def test_a_rate_limit_says_when_to_retry(tmp_path: Path) -> None:
    body = {"error": {"message": "Rate limit reached", "type": "requests"}}
    async with ReplayServer() as server:
        server.respond(json_response(429, body, headers={"retry-after": "120"}))
        completed = await run_tether(*model_run(server.url, "--json"), env=child_env(tmp_path))

    assert completed.returncode == 2
    assert "[CLI_RATE_LIMITED]" in completed.err
    assert "retry after 120 s" in completed.err
    assert completed.events()[-1]["payload"]["result"]["status"] == "failed"


async def test_a_context_overflow_suggests_compacting(tmp_path: Path) -> None:
    body = {
        "error": {
            "message": "This model's maximum context length is 8192 tokens.",
            "code": "context_length_exceeded",
        }
    }
    async with ReplayServer() as server:
        server.respond(json_response(400, body))
        completed = await run_tether(*model_run(server.url), env=child_env(tmp_path))

    assert completed.returncode == 2
    assert "[CLI_CONTEXT_OVERFLOW]" in completed.err
    assert "/compact" in completed.err
    assert "shorter prompt" in completed.err


async def test_another_failure_is_exit_1_without_advice(tmp_path: Path) -> None:
    async with ReplayServer() as server:
        server.respond(json_response(400, {"error": {"message": "unsupported parameter"}}))
        completed = await run_tether(*model_run(server.url), env=child_env(tmp_path))

    assert completed.returncode == 1
    assert completed.stderr == b""
    assert "PROVIDER_BAD_REQUEST" in completed.out


async def test_a_reader_that_went_away_is_exit_4_without_noise(tmp_path: Path) -> None:
    reader, writer = os.pipe()
    os.close(reader)
    try:
        async with ReplayServer() as server:
            server.respond(text_reply("unread"))
            async with spawned(
                *model_run(server.url, "--json"),
                env=child_env(tmp_path),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=writer,
            ) as process:
                async with asyncio.timeout(BOUND):
                    _, stderr = await process.communicate()
    finally:
        os.close(writer)

    assert process.returncode == 4
    assert stderr == b""


# --- Ctrl-C -----------------------------------------------------------------------------------


async def test_ctrl_c_during_a_stalled_stream_cancels_the_run(tmp_path: Path) -> None:
    async with ReplayServer() as server:
        script = server.respond(stalled_reply("Thinking"))
        async with started(*model_run(server.url, "--json"), env=child_env(tmp_path)) as run:
            while b'"textDelta"' not in await run.line():
                pass
            run.process.send_signal(signal.SIGINT)
            status, stderr = await run.rest()
        async with asyncio.timeout(BOUND):
            await script.finished.wait()

    assert status == 130
    assert b"tether run: interrupted" in stderr
    assert_quiet(stderr)
    last = json.loads(bytes(run.stdout).split(b"\n")[-2])
    assert last["type"] == "run.finished"
    result = last["payload"]["result"]
    assert (result["status"], result["reason"]) == ("cancelled", "Interrupted by the user")
    # The interrupted turn is kept for the model (issue 27): what streamed, then a note.
    messages = result["messages"]
    assert [message["role"] for message in messages] == ["user", "assistant", "user"]
    assert "Thinking" in json.dumps(messages[1]["content"])
    assert messages[2]["content"] == INTERRUPTED_TURN_NOTE
    assert script.outcome == "client-gone"


# --- llm-katan ----------------------------------------------------------------------------------


async def test_llm_katan_answers_an_openai_run(tmp_path: Path, katan_server: KatanServer) -> None:
    completed = await run_tether(
        "run",
        "--model",
        f"openai/{katan_server.model}",
        "--base-url",
        katan_server.base_url,
        "-p",
        "Hello there",
        "--json",
        env=child_env(tmp_path),
    )

    assert completed.returncode == 0, completed.err
    result = completed.events()[-1]["payload"]["result"]
    assert result["status"] == "completed"
    assert result["finalText"]
    assert result["usage"]["outputTokens"] > 0


async def test_llm_katan_answers_an_anthropic_run(
    tmp_path: Path, katan_server: KatanServer
) -> None:
    completed = await run_tether(
        "run",
        "--model",
        f"anthropic/{katan_server.model}",
        "--base-url",
        katan_server.origin,
        "-p",
        "Hello there",
        env=child_env(tmp_path, ANTHROPIC_API_KEY=FAKE_KEY),
    )

    assert completed.returncode == 0, completed.err
    assert completed.out.splitlines()[-1].startswith("status: completed · model turns: 1")


async def test_session_continues_a_file_and_records_each_run(tmp_path: Path) -> None:
    path = tmp_path / "chat.jsonl"
    async with ReplayServer() as server:
        server.respond(text_reply("Noted: 42."))
        first = await run_tether(
            *model_run(server.url, "--session", str(path), prompt="Remember 42."),
            env=child_env(tmp_path),
        )
        server.respond(text_reply("It was 42."))
        second = await run_tether(
            *model_run(server.url, "--session", str(path), prompt="Which number?"),
            env=child_env(tmp_path),
        )
    assert first.returncode == 0, first.err
    assert second.returncode == 0, second.err
    roles = [m["role"] for m in server.requests[1].json["messages"]]
    assert roles == ["system", "user", "assistant", "user"]  # chat's system prompt (issue 27)
    assert server.requests[1].json["messages"][1]["content"] == "Remember 42."
    lines = [json.loads(line) for line in path.read_bytes().splitlines()]
    assert lines[0]["type"] == "session"
    assert [line["message"]["role"] for line in lines[1:]] == [
        "user",
        "assistant",
        "user",
        "assistant",
    ]
    assert FAKE_KEY.encode() not in path.read_bytes()


async def run_with_session(
    server: ReplayServer, path: Path, prompt: str, answer: str, tmp_path: Path
) -> Any:
    """``tether run --session PATH -p PROMPT`` with the model answering ``answer``."""
    server.respond(text_reply(answer))
    return await run_tether(
        *model_run(server.url, "--session", str(path), prompt=prompt), env=child_env(tmp_path)
    )


async def test_a_torn_session_is_repaired_and_said_once(tmp_path: Path) -> None:
    path = tmp_path / "chat.jsonl"
    async with ReplayServer() as server:
        first = await run_with_session(server, path, "Remember 42.", "Noted.", tmp_path)
        assert first.returncode == 0, first.err
        whole = path.read_bytes()
        path.write_bytes(whole + b'{"type":"entry","version":1,"id":"torn","parentId":"x')
        second = await run_with_session(server, path, "Which number?", "It was 42.", tmp_path)
        third = await run_with_session(server, path, "And now?", "Still 42.", tmp_path)
    assert second.returncode == 0, second.err
    assert second.err.count("recovered: dropped an incomplete last entry") == 1
    assert third.returncode == 0, third.err
    assert "recovered" not in third.err
    data = path.read_bytes()
    assert data.startswith(whole)
    assert b'"torn"' not in data
    roles = [m["role"] for m in server.requests[1].json["messages"]]
    assert roles == ["system", "user", "assistant", "user"]


async def test_a_session_another_process_writes_is_refused_at_once(tmp_path: Path) -> None:
    from tether.agent.session import SessionStore

    path = tmp_path / "held.jsonl"
    async with await SessionStore.create(path) as held, ReplayServer() as server:
        completed = await run_tether(
            *model_run(server.url, "--session", str(path)), env=child_env(tmp_path)
        )
        assert held.entries == ()
    assert completed.returncode == 2
    assert "[SESSION_IN_USE]" in completed.err
    assert str(path) in completed.err
    assert server.requests == []


async def test_a_session_file_that_cannot_be_used_is_exit_2(tmp_path: Path) -> None:
    path = tmp_path / "broken.jsonl"
    path.write_bytes(b"not json\n")
    async with ReplayServer() as server:
        completed = await run_tether(
            *model_run(server.url, "--session", str(path)), env=child_env(tmp_path)
        )
    assert completed.returncode == 2
    assert "SESSION_INVALID_JSON" in completed.err
    assert server.requests == []


async def test_the_prompt_comes_from_standard_input(tmp_path: Path) -> None:
    """``-p -``, or no ``-p`` with a piped stdin, reads the prompt from stdin (as ``pi -p``
    and ``claude -p`` do); an empty stdin is a usage error (issue 27)."""
    async with ReplayServer() as server:
        server.respond(text_reply("Piped."))
        server.respond(text_reply("Dashed."))
        base = ["run", "--model", MODEL, "--base-url", server.url]
        piped = await run_tether(*base, env=child_env(tmp_path), stdin=b"What is in the pipe?\n")
        dashed = await run_tether(
            *base, "-p", "-", env=child_env(tmp_path), stdin="Zwei\nZeilen \xfc\n".encode()
        )
        empty = await run_tether(*base, env=child_env(tmp_path), stdin=b"\n")
    assert piped.returncode == 0, piped.err
    assert dashed.returncode == 0, dashed.err
    users = [
        [m["content"] for m in request.json["messages"] if m["role"] == "user"]
        for request in server.requests
    ]
    assert users == [["What is in the pipe?"], ["Zwei\nZeilen \xfc"]]
    assert "assistant: Piped." in piped.out
    assert empty.returncode == 2
    assert "standard input was empty" in empty.err
    assert len(server.requests) == 2


async def test_a_prompt_argument_that_is_not_utf8_has_its_bad_bytes_replaced(
    tmp_path: Path,
) -> None:
    """``-p`` bytes that are not UTF-8 reach Python as lone surrogates (``surrogateescape``),
    which the session cannot record: the run failed with AGENT_RECORDING_FAILED and its
    runtime's disposal with RUNTIME_DISPOSAL_FAILED. They are replaced, as on stdin."""
    async with ReplayServer() as server:
        server.respond(text_reply("Replaced."))
        completed = await run_tether(
            *model_run(server.url, prompt="hi \udcff there"), env=child_env(tmp_path)
        )
    assert completed.returncode == 0, completed.err
    users = [
        [m["content"] for m in request.json["messages"] if m["role"] == "user"]
        for request in server.requests
    ]
    assert users == [["hi \ufffd there"]]


@pytest.mark.parametrize("machine", [False, True], ids=["human", "json"])
@pytest.mark.parametrize("session", [True, False], ids=["session-file", "ephemeral"])
async def test_a_session_the_disk_refuses_is_one_recording_failure_not_two_errors(
    tmp_path: Path, machine: bool, session: bool
) -> None:
    """A real write failure: the command runs under ``ulimit -f 1`` (files of at most one
    block, 512 or 1024 bytes), so the session file gets its header but the long prompt's line
    is refused by the kernel (EFBIG, "File too large"), as on a full disk. The run fails
    ``AGENT_RECORDING_FAILED`` and says so once. Regression: the exit then also wrote
    ``the session did not close cleanly: [RUNTIME_DISPOSAL_FAILED]``, the same failure again."""
    prompt = "x" * 2048  # its session line is longer than the limit; the header is not
    extra = ["--json"] if machine else []
    if session:
        extra += ["--session", str(tmp_path / "s.jsonl")]
    async with ReplayServer() as server:
        server.respond(text_reply("never asked"))
        process = await asyncio.create_subprocess_exec(
            "/bin/sh",
            "-c",
            'ulimit -f 1 && exec "$@"',
            "sh",
            str(TETHER),
            *model_run(server.url, *extra, prompt=prompt),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            # Without coverage's subprocess hook: under the file-size limit this test sets,
            # coverage could not write its own data file at the child's exit.
            env={
                key: value
                for key, value in child_env(tmp_path).items()
                if not key.startswith("COVERAGE_")
            },
        )
        try:
            async with asyncio.timeout(BOUND):
                stdout, stderr = await process.communicate()
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
    assert process.returncode == 1, stderr
    assert stderr == b""  # no second error at the exit
    text = stdout.decode("utf-8")
    assert text.count("AGENT_RECORDING_FAILED") == 1, text
    assert "File too large" in text
    assert "RUNTIME_" not in text
    assert server.requests == []  # the prompt's line failed before the model was asked
    if session:
        assert (tmp_path / "s.jsonl").read_bytes().count(b"\n") == 1  # the header only


async def test_json_shows_retries_and_live_tool_output(tmp_path: Path) -> None:
    """Issue 28: ``model.retry`` before the answer and ``tool.progress`` while bash runs."""
    workspace = tmp_path / "work"
    workspace.mkdir()
    async with ReplayServer() as server:
        server.respond(
            json_response(503, {"error": {"message": "busy"}}, headers={"retry-after-ms": "10"})
        )
        server.respond(tool_reply(("call-1", "bash", {"command": "echo live"})))
        server.respond(text_reply("Done."))
        completed = await run_tether(
            *model_run(server.url, "--json", "--tools", "coding", prompt="Say live"),
            env=child_env(tmp_path),
            cwd=workspace,
        )

    assert completed.returncode == 0, completed.err
    events = completed.events()
    types = [event["type"] for event in events]
    retry = events[types.index("model.retry")]
    assert retry["payload"] == {
        "requestId": retry["payload"]["requestId"],
        "attempt": 1,
        "delayMs": 10,
        "code": "PROVIDER_OVERLOADED",
        "reason": "HTTP 503",
    }
    assert types.index("model.retry") < types.index("model.chunk")
    progress = [event["payload"] for event in events if event["type"] == "tool.progress"]
    assert progress == [{"toolCallId": "call-1", "toolName": "bash", "text": "live\n"}]
    assert types.index("tool.started") < types.index("tool.progress") < types.index("tool.finished")


def escaped_reply(text: str) -> Script:
    """A streamed text answer whose JSON spells ``text``'s non-ASCII with ``\\u`` escapes, as a
    provider may: a lone surrogate arrives as ``"\\ud800"``, which ``json.loads`` decodes."""
    chunks = text_chunks(text, prompt_tokens=5)
    return sse_response(sse_body([json.dumps(chunk) for chunk in chunks]))


@pytest.mark.parametrize("machine", [False, True], ids=["human", "json"])
async def test_a_model_reply_holding_a_lone_surrogate_is_shown_recorded_and_sent_back(
    tmp_path: Path, machine: bool
) -> None:
    """A model's answer holding a lone surrogate is shown (``\\ud800`` for a person, the same
    JSON escape in ``--json``), recorded in the session file, and the next run on that
    session sends it back as U+FFFD. Regression: the next run's request failed to encode
    (``UnicodeEncodeError``), so every later run on the session failed."""
    answer = "lone \ud800 here"
    path = tmp_path / "s.jsonl"
    extra = ["--session", str(path), *(["--json"] if machine else [])]
    env = {k: v for k, v in child_env(tmp_path).items() if not k.startswith("COVERAGE_")}
    async with ReplayServer() as server:
        server.respond(escaped_reply(answer))
        first = await run_tether(*model_run(server.url, *extra, prompt="first"), env=env)
        server.respond(text_reply("again"))
        second = await run_tether(*model_run(server.url, *extra, prompt="second"), env=env)
    assert (first.returncode, first.stderr) == (0, b""), first.err
    assert (second.returncode, second.stderr) == (0, b""), second.err
    if machine:
        events = first.events()  # each line parses; the escape decodes to the surrogate
        deltas = [e["payload"]["chunk"]["delta"] for e in events if e["type"] == "model.chunk"]
        assert deltas == [answer]
        assert events[-1]["payload"]["result"]["finalText"] == answer
    else:
        assert "lone \\ud800 here" in first.out  # a Python escape for a person
    assert len(server.requests) == 2
    sent = server.requests[1].body.decode("utf-8")  # strict: the body is valid UTF-8
    assistant = [m for m in json.loads(sent)["messages"] if m["role"] == "assistant"]
    assert assistant[0]["content"] == "lone \ufffd here"
    store = await SessionStore.load(path)
    try:
        kept = SessionTree(store).active_context().messages
    finally:
        await store.close()
    replies = [m.content for m in kept if isinstance(m, AssistantMessage)]
    assert replies == [(TextBlock(text=answer),), (TextBlock(text="again"),)]
