"""``tether chat`` in a real terminal: tmux runs it, the tests type and read the screen.

The installed console script talks to the scripted ``ReplayServer`` (on the test's loop,
127.0.0.1) as ``openai/gpt-test``, with a fake key in ``OPENAI_API_KEY`` and the data and
config directories in the test's temporary directory. Shown here: a streamed answer; a
``write_file`` call approved with ``y`` (the file is written) and one declined with ``n``
(no file; the next request carries the ``TOOL_CALL_BLOCKED`` result); Ctrl-C during a stalled
stream (the prompt comes back, the session file holds only complete messages, the chat goes
on); a conversation restored after a restart, with ``/resume PREFIX`` and with ``-c``, and
``-c`` on a session a crash left with a torn last line (repaired, said once).

No sleeps: every wait polls the screen for an expected string up to a deadline
(``tmux_support``). The fake key must appear on no screen and in no file written.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from chat_support import (
    FAKE_KEY,
    MODEL,
    PROMPT,
    TETHER,
    at_prompt,
    chat_env,
    chunk,
    quit_chat,
    say,
    session_files,
    stalled_reply,
    start_chat,
    text_payloads,
    text_reply,
    usage,
    workspace,
)
from servers.replay import ReplayServer, Script, json_response, sse_body, sse_response
from tether.agent import INTERRUPTED_TURN_NOTE
from tmux_support import Tmux

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(sys.platform == "win32", reason="tmux and POSIX terminals"),
]


# --- the terminal -----------------------------------------------------------------------------


def assert_no_key_anywhere(tmux: Tmux, tmp_path: Path) -> None:
    assert FAKE_KEY not in tmux.screen()
    for path in tmp_path.rglob("*"):
        if path.is_file() and not path.is_socket() and path.name != "tmux.sock":
            assert FAKE_KEY.encode() not in path.read_bytes(), path


# --- OpenAI stream bodies ---------------------------------------------------------------------


def tool_reply(call_id: str, name: str, arguments: dict[str, Any]) -> Script:
    payloads = [
        chunk({"role": "assistant", "content": None}),
        chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": call_id,
                        "type": "function",
                        "function": {"name": name, "arguments": json.dumps(arguments)},
                    }
                ]
            }
        ),
        chunk({}, "tool_calls"),
        usage(20, 5),
    ]
    return sse_response(sse_body(payloads))


# --- the chats --------------------------------------------------------------------------------


async def test_a_chat_streams_the_answer_and_counts_tokens(tmux: Tmux, tmp_path: Path) -> None:
    async with ReplayServer() as server:
        server.respond(text_reply("Hello ", "from the ", "model."))
        start_chat(tmux, tmp_path, server.url)
        await tmux.wait_for(PROMPT)
        await say(tmux, "Say hello")
        screen = await tmux.wait_for("[tokens: 11 in, 3 out · session: 11 in, 3 out]")
        assert "Hello from the model." in screen
        await tmux.wait_for(PROMPT, count=2)
        await quit_chat(tmux)

    body = server.requests[0].json
    assert body["model"] == "gpt-test"
    assert body["stream"] is True
    system, user = body["messages"]
    assert system["role"] == "system"
    assert "write_file" in system["content"]
    assert user == {"role": "user", "content": "Say hello"}
    assert {tool["function"]["name"] for tool in body["tools"]} >= {"write_file", "bash"}
    assert server.requests[0].headers["authorization"] == f"Bearer {FAKE_KEY}"
    assert_no_key_anywhere(tmux, tmp_path)


async def test_a_tool_runs_after_yes_and_not_after_no(tmux: Tmux, tmp_path: Path) -> None:
    project = workspace(tmp_path)
    async with ReplayServer() as server:
        server.respond(tool_reply("call-1", "write_file", {"path": "yes.txt", "content": "hi\n"}))
        server.respond(text_reply("Wrote it."))
        server.respond(tool_reply("call-2", "write_file", {"path": "no.txt", "content": "x\n"}))
        server.respond(text_reply("Understood."))
        start_chat(tmux, tmp_path, server.url)
        await tmux.wait_for(PROMPT)

        await say(tmux, "Write yes.txt")
        screen = await tmux.wait_for("allow write_file? [y]es / [n]o (n: reason) / [a]lways")
        assert '→ write_file({"path":"yes.txt","content":"hi\\n"})' in screen
        assert "write_file yes.txt (new file, 1 line)" in screen  # the preview
        assert not (project / "yes.txt").exists()  # asked before it ran
        await say(tmux, "y")
        await tmux.wait_for("Wrote it.")
        assert (project / "yes.txt").read_text(encoding="utf-8") == "hi\n"
        await tmux.wait_for(PROMPT, count=2)  # the next prompt is up before typing more

        await say(tmux, "Write no.txt")
        await tmux.wait_for("allow write_file?", count=2)
        await say(tmux, "n")
        screen = await tmux.wait_for("Understood.")
        assert "declined" in screen
        await quit_chat(tmux)

    assert not (project / "no.txt").exists()
    messages = server.requests[3].json["messages"]
    blocked = messages[-1]
    assert blocked["role"] == "tool"
    assert blocked["tool_call_id"] == "call-2"
    assert "TOOL_CALL_BLOCKED" in blocked["content"]
    assert "the user declined" in blocked["content"]
    ran = server.requests[1].json["messages"][-1]
    assert ran["tool_call_id"] == "call-1"
    assert "TOOL_CALL_BLOCKED" not in ran["content"]
    assert_no_key_anywhere(tmux, tmp_path)


def preview_rows(screen: str, header: str, question: str) -> list[str]:
    """The rows of the last approval preview on ``screen``: after ``header``, before the
    question."""
    lines = screen.splitlines()
    start = max(i for i, line in enumerate(lines) if line.startswith(header))
    end = max(i for i, line in enumerate(lines) if line.startswith(question))
    return lines[start + 1 : end]


async def test_the_whole_command_is_shown_and_a_reason_reaches_the_model(
    tmux: Tmux, tmp_path: Path
) -> None:
    tail = " && echo HIDDEN-TAIL-rm-rf"
    command = "echo " + " ".join(f"word{n:03}" for n in range(60))
    command = command[: 300 - len(tail)] + tail
    assert len(command) == 300
    async with ReplayServer() as server:
        server.respond(tool_reply("call-1", "bash", {"command": command}))
        server.respond(text_reply("Understood, pytest -x then."))
        start_chat(tmux, tmp_path, server.url)
        await tmux.wait_for(PROMPT)
        await say(tmux, "Run the tests")
        screen = await tmux.wait_for("allow bash? [y]es / [n]o (n: reason) / [a]lways for bash")
        rows = preview_rows(screen, "bash", "allow bash?")
        assert rows[0].startswith("$ ")
        assert all(row.startswith("  ") for row in rows[1:])
        assert "".join(row[2:] for row in rows) == command  # all of it, the tail included
        assert "HIDDEN-TAIL-rm-rf" in rows[-1]
        assert all(len(row) <= 120 for row in rows)
        await say(tmux, "n: use pytest -x")
        await tmux.wait_for("Understood, pytest -x then.")
        assert "(declined: bash did not run)" in tmux.screen()
        await quit_chat(tmux)

    blocked = server.requests[1].json["messages"][-1]
    assert blocked["role"] == "tool"
    assert blocked["tool_call_id"] == "call-1"
    assert "TOOL_CALL_BLOCKED" in blocked["content"]
    assert "Their reason: use pytest -x" in blocked["content"]


async def test_an_edit_shows_its_diff_before_it_runs(tmux: Tmux, tmp_path: Path) -> None:
    project = workspace(tmp_path)
    (project / "app.py").write_text("def main():\n    return 'old'\n", encoding="utf-8")
    arguments = {"path": "app.py", "old": "return 'old'", "new": "return 'new'"}
    async with ReplayServer() as server:
        server.respond(tool_reply("call-1", "edit_file", arguments))
        server.respond(text_reply("Edited."))
        start_chat(tmux, tmp_path, server.url)
        await tmux.wait_for(PROMPT)
        await say(tmux, "Change it")
        screen = await tmux.wait_for("allow edit_file?")
        rows = preview_rows(screen, "edit_file", "allow edit_file?")
        assert any(row.strip().startswith("-") and "return 'old'" in row for row in rows), screen
        assert any(row.strip().startswith("+") and "return 'new'" in row for row in rows), screen
        assert "'old'" in (project / "app.py").read_text(encoding="utf-8")  # not yet
        await say(tmux, "y")
        await tmux.wait_for("Edited.")
        await quit_chat(tmux)
    assert (project / "app.py").read_text(encoding="utf-8") == "def main():\n    return 'new'\n"


async def test_markdown_is_rendered_and_wrapped(tmux: Tmux, tmp_path: Path) -> None:
    words = " ".join(f"lorem{n:02}" for n in range(60))
    answer = (
        "# The Title\n\nSome **bold words** here.\n\n"
        "| name | size |\n|------|------|\n| alpha | 1 |\n| beta | 2 |\n\n" + words + "\n"
    )
    env = chat_env(tmp_path)
    del env["NO_COLOR"]
    async with ReplayServer() as server:
        server.respond(text_reply(*(answer[i : i + 7] for i in range(0, len(answer), 7))))
        tmux.start(
            [str(TETHER), "chat", "--model", MODEL, "--base-url", server.url],
            env=env,
            cwd=workspace(tmp_path),
        )
        await tmux.wait_for(PROMPT)
        await say(tmux, "Show me")
        screen = await tmux.wait_for("[tokens: 11 in,")
        await quit_chat(tmux)
    shown = screen[screen.index("chat> Show me") : screen.index("[tokens: 11 in,")]
    assert "The Title" in shown
    assert "bold words" in shown
    assert "**" not in shown
    assert "# The" not in shown
    assert "|" not in shown  # a table, not raw pipes
    assert "alpha" in shown
    assert "beta" in shown
    rows = [line for line in shown.splitlines() if "lorem" in line]
    assert len(rows) > 1  # wrapped
    assert all(len(row) <= 120 for row in rows)
    tokens = " ".join(rows).split()
    assert [token for token in tokens if token.startswith("lorem")] == words.split()


async def test_after_a_resize_the_answer_wraps_to_the_new_width(tmux: Tmux, tmp_path: Path) -> None:
    words = " ".join(f"ipsum{n:02}" for n in range(40))
    payloads = text_payloads("First paragraph.\n\n", words + "\n")
    offset = len(sse_body(payloads[:2], done=False))
    async with ReplayServer() as server:
        stalled = server.respond(sse_response(sse_body(payloads), stall_after=offset))
        start_chat(tmux, tmp_path, server.url)
        await tmux.wait_for(PROMPT)
        await say(tmux, "Write two paragraphs")
        await tmux.wait_for("First paragraph.")
        await stalled.stalled.wait()
        tmux.resize(60, 40)
        stalled.release.set()
        screen = await tmux.wait_for("[tokens: 11 in,")
        await quit_chat(tmux)
    rows = [line for line in screen.splitlines() if "ipsum" in line]
    assert len(rows) > 3, screen
    assert all(len(row) <= 60 for row in rows), screen
    assert " ".join(rows).split() == words.split()


async def test_a_long_result_shows_head_and_tail_and_ctrl_o_all(tmux: Tmux, tmp_path: Path) -> None:
    command = "for i in $(seq 1 29); do echo line-$i; done; echo FAILED"
    async with ReplayServer() as server:
        server.respond(tool_reply("call-1", "bash", {"command": command}))
        server.respond(text_reply("The tests failed."))
        start_chat(tmux, tmp_path, server.url, "--auto-approve")
        await tmux.wait_for(PROMPT)
        await say(tmux, "Run it")
        screen = await tmux.wait_for("The tests failed.")
        assert "lines hidden (Ctrl-O to expand)" in screen
        assert "FAILED" in screen
        assert "line-1\n" in screen
        assert "line-15" not in screen
        await at_prompt(tmux)
        tmux.send("C-o")
        screen = await tmux.wait_for("line-15")
        assert all(f"line-{n}\n" in screen for n in range(1, 30))
        await quit_chat(tmux)


async def test_a_status_line_shows_while_waiting_and_goes_at_the_end(
    tmux: Tmux, tmp_path: Path
) -> None:
    headers = asyncio.Event()
    async with ReplayServer() as server:
        reply = text_reply("Here ", "it is.")
        server.respond(dataclasses.replace(reply, delay_headers=headers))
        start_chat(tmux, tmp_path, server.url)
        await tmux.wait_for(PROMPT)
        await say(tmux, "Take your time")
        screen = await tmux.wait_for("waiting for the model")
        status = next(line for line in screen.splitlines() if "waiting for the model" in line)
        assert re.search(r"waiting for the model · \d", status), status  # the elapsed time
        headers.set()
        await tmux.wait_for("Here it is.")
        await at_prompt(tmux)
        assert "waiting for the model" not in tmux.screen()  # erased with the turn
        await quit_chat(tmux)


async def test_esc_cancels_a_stalled_turn_without_echo(tmux: Tmux, tmp_path: Path) -> None:
    async with ReplayServer() as server:
        stalled = server.respond(stalled_reply("The first words"))
        server.respond(text_reply("Still here."))
        start_chat(tmux, tmp_path, server.url)
        await tmux.wait_for(PROMPT)
        await say(tmux, "Tell me a long story")
        await tmux.wait_for("The first words")
        await stalled.stalled.wait()
        tmux.send("Escape")
        await tmux.wait_for("(turn cancelled)")
        assert "Esc: cancelling the turn" in tmux.screen()
        await at_prompt(tmux)
        assert "^[" not in tmux.screen()
        await say(tmux, "Are you there?")
        await tmux.wait_for("Still here.")
        await quit_chat(tmux)
    await stalled.finished.wait()
    assert stalled.outcome == "client-gone"


async def test_enter_during_a_turn_steers_and_nothing_is_echoed(tmux: Tmux, tmp_path: Path) -> None:
    async with ReplayServer() as server:
        stalled = server.respond(stalled_reply("The first words"))
        server.respond(text_reply("Checked the docs too."))
        stalled_again = server.respond(stalled_reply("The first words"))
        start_chat(tmux, tmp_path, server.url)
        await tmux.wait_for(PROMPT)
        await say(tmux, "Fix the bug")
        await tmux.wait_for("The first words")
        await stalled.stalled.wait()
        tmux.type("also check the docs")
        screen = await tmux.wait_for("> also check the docs  (Enter steers")  # under the status
        tmux.send("Enter")
        await tmux.wait_for("(steer queued: also check the docs)")
        stalled.release.set()
        screen = await tmux.wait_for("Checked the docs too.")
        answer = screen[screen.index("chat> Fix the bug") : screen.index("(steer queued")]
        assert "also check" not in answer  # not echoed into the answer
        await tmux.wait_for(PROMPT, count=2)
        await say(tmux, "Another")
        await tmux.wait_for("The first words", count=2)
        await stalled_again.stalled.wait()
        tmux.type("half a thought")
        await tmux.wait_for("> half a thought  (Enter steers")
        stalled_again.release.set()
        await tmux.wait_for("chat> half a thought")  # put back on the next prompt
        tmux.send("C-c")
        await quit_chat(tmux)
    sent = server.requests[1].json["messages"]
    assert sent[-1] == {"role": "user", "content": "also check the docs"}
    assert "The first words and the rest" in json.dumps(sent[-2])


async def test_tab_completes_commands_paths_and_model_names(tmux: Tmux, tmp_path: Path) -> None:
    (workspace(tmp_path) / "notes").mkdir()
    async with ReplayServer() as server:
        server.respond(text_reply("Read them."))
        start_chat(tmux, tmp_path, server.url)
        await tmux.wait_for(PROMPT)
        tmux.type("/usa")
        tmux.send("Tab")
        await tmux.wait_for("chat> /usage")
        tmux.send("Enter")
        await tmux.wait_for("session tokens: 0 in, 0 out")
        await at_prompt(tmux)
        tmux.type("/model openai/gpt-t")
        tmux.send("Tab")
        await tmux.wait_for("chat> /model openai/gpt-test")
        tmux.send("C-c")  # clears the line
        await at_prompt(tmux)
        tmux.type("summarise @no")
        tmux.send("Tab")
        await tmux.wait_for("chat> summarise @notes/")
        tmux.send("Enter")
        await tmux.wait_for("Read them.")
        await quit_chat(tmux)
    assert server.requests[0].json["messages"][-1]["content"] == "summarise @notes/"


async def test_export_writes_html_and_sessions_show_their_directory(
    tmux: Tmux, tmp_path: Path
) -> None:
    project = workspace(tmp_path)
    async with ReplayServer() as server:
        server.respond(text_reply("An answer to export."))
        start_chat(tmux, tmp_path, server.url)
        await tmux.wait_for(PROMPT)
        await say(tmux, "Something worth keeping")
        await tmux.wait_for("An answer to export.")
        await at_prompt(tmux)
        await say(tmux, "/export talk.html")
        await tmux.wait_for(f"exported to {project / 'talk.html'}")
        await at_prompt(tmux)
        await say(tmux, "/sessions")
        screen = await tmux.wait_for("Something worth keeping", count=2)
        (row,) = [line for line in screen.splitlines() if line.startswith("* ")]
        assert str(project) in row
        await quit_chat(tmux)
    page = (project / "talk.html").read_text(encoding="utf-8")
    assert "Something worth keeping" in page
    assert "An answer to export." in page


async def test_ctrl_c_cancels_a_stalled_turn_and_keeps_the_chat(tmux: Tmux, tmp_path: Path) -> None:
    async with ReplayServer() as server:
        stalled = server.respond(stalled_reply("The first words"))
        server.respond(text_reply("Still here."))
        start_chat(tmux, tmp_path, server.url)
        await tmux.wait_for(PROMPT)
        await say(tmux, "Tell me a long story")
        await tmux.wait_for("The first words")
        await stalled.stalled.wait()
        tmux.send("C-c")
        await tmux.wait_for("(turn cancelled)")
        await tmux.wait_for(PROMPT, count=2)

        (session,) = session_files(tmp_path)
        records = [json.loads(line) for line in session.read_text(encoding="utf-8").splitlines()]
        assert records[0]["type"] == "session"
        # The interrupted turn is kept: what streamed, then a note for the model (issue 27).
        roles = [record["message"]["role"] for record in records[1:]]
        assert roles == ["user", "assistant", "user"]
        assert records[1]["message"]["content"] == "Tell me a long story"
        assert "The first words" in json.dumps(records[2]["message"]["content"])
        assert records[3]["message"]["content"] == INTERRUPTED_TURN_NOTE

        await say(tmux, "Are you there?")
        await tmux.wait_for("Still here.")
        await quit_chat(tmux)

    await stalled.finished.wait()
    assert stalled.outcome == "client-gone"
    sent = server.requests[1].json["messages"][1:]
    assert [message["role"] for message in sent] == ["user", "assistant", "user", "user"]
    assert sent[0]["content"] == "Tell me a long story"
    assert "The first words" in json.dumps(sent[1]["content"])
    assert [sent[2]["content"], sent[3]["content"]] == [INTERRUPTED_TURN_NOTE, "Are you there?"]
    assert_no_key_anywhere(tmux, tmp_path)


async def remember_42(tmux: Tmux, tmp_path: Path, server: ReplayServer) -> Path:
    """A first chat that asks the model to remember 42 and quits; its session file."""
    start_chat(tmux, tmp_path, server.url)
    await tmux.wait_for(PROMPT)
    await say(tmux, "Remember the number 42")
    await tmux.wait_for("I will remember 42.")
    await quit_chat(tmux)
    (session,) = session_files(tmp_path)
    return session


async def test_r_without_an_id_picks_a_session_from_a_list(tmux: Tmux, tmp_path: Path) -> None:
    """Issue 28: ``-r`` alone opens the picker over the saved sessions (each with its
    directory and last message); typing filters, Enter resumes the one selected."""
    async with ReplayServer() as server:
        server.respond(text_reply("I will remember 42."))
        server.respond(text_reply("Noted, 7."))
        server.respond(text_reply("It was 42."))
        session = await remember_42(tmux, tmp_path, server)
        ident = session.stem
        start_chat(tmux, tmp_path, server.url)  # a second session, in the same directory
        await tmux.wait_for(PROMPT)
        await say(tmux, "Remember the number 7")
        await tmux.wait_for("Noted, 7.")
        await quit_chat(tmux)

        start_chat(tmux, tmp_path, server.url, "-r")
        screen = await tmux.wait_for("2 of 2")
        assert "resume a session" in screen
        assert f"{ident[:8]}" in screen
        rows = [line for line in screen.splitlines() if ident[:8] in line]
        assert "I will remember 42." in rows[0]  # its last message
        assert str(workspace(tmp_path))[:40] in rows[0]  # its directory (clipped to fit)
        # A word of one row only: "42" was also in both rows' time when run at minute 42.
        tmux.type("remember")
        await tmux.wait_for("1 of 2")
        tmux.send("Enter")
        await tmux.wait_for(f"resumed session {ident} (2 messages)")
        await at_prompt(tmux)
        assert "resume a session" not in tmux.screen()  # the list is gone
        await say(tmux, "Which number?")
        await tmux.wait_for("It was 42.")
        await quit_chat(tmux)
    assert [m["role"] for m in server.requests[2].json["messages"]][1:] == [
        "user",
        "assistant",
        "user",
    ]


async def test_resume_alone_opens_the_picker_and_esc_cancels_it(tmux: Tmux, tmp_path: Path) -> None:
    async with ReplayServer() as server:
        server.respond(text_reply("I will remember 42."))
        session = await remember_42(tmux, tmp_path, server)
        start_chat(tmux, tmp_path, server.url)
        await tmux.wait_for(PROMPT)
        await say(tmux, "/resume")
        await tmux.wait_for("1 of 1")
        tmux.send("Escape")
        await at_prompt(tmux)
        assert "resume a session" not in tmux.screen()
        assert "resumed" not in tmux.screen()
        await say(tmux, "/resume")
        await tmux.wait_for("1 of 1")
        tmux.send("Enter")
        await tmux.wait_for(f"resumed session {session.stem} (2 messages)")
        await quit_chat(tmux)


async def test_model_alone_opens_a_picker_with_the_servers_models(
    tmux: Tmux, tmp_path: Path
) -> None:
    """Issue 28: ``/model`` alone lists the known models and, once it answers, the server's
    (``GET /models``); typing filters and Enter switches. A server that fails is a note in
    the list, not an error."""
    listing = {"object": "list", "data": [{"id": "gpt-big", "object": "model"}]}
    async with ReplayServer() as server:
        server.respond(json_response(200, listing))
        server.respond(json_response(404, {"error": {"message": "no such endpoint"}}))
        server.respond(text_reply("Big model here."))
        start_chat(tmux, tmp_path, server.url)
        await tmux.wait_for(PROMPT)
        await say(tmux, "/model")
        screen = await tmux.wait_for("1 from openai")
        assert "openai/gpt-test" in screen
        assert "openai/gpt-big" in screen
        tmux.type("big")
        await tmux.wait_for("1 of ")
        tmux.send("Enter")
        await tmux.wait_for("model: openai/gpt-big")
        await at_prompt(tmux)
        await say(tmux, "/model")
        screen = await tmux.wait_for("openai's models: [")
        tmux.send("Escape")
        await at_prompt(tmux)
        await say(tmux, "Who are you?")
        await tmux.wait_for("Big model here.")
        await quit_chat(tmux)
    assert server.requests[0].method == "GET"
    assert server.requests[0].path.endswith("/models")
    assert server.requests[2].json["model"] == "gpt-big"  # one listing failed, not retried
    assert_no_key_anywhere(tmux, tmp_path)


async def test_a_conversation_is_restored_after_a_restart(tmux: Tmux, tmp_path: Path) -> None:
    async with ReplayServer() as server:
        server.respond(text_reply("I will remember 42."))
        server.respond(text_reply("It was 42."))
        server.respond(text_reply("Still 42."))

        session = await remember_42(tmux, tmp_path, server)
        ident = session.stem

        start_chat(tmux, tmp_path, server.url)  # a new program: /resume a prefix of the ID
        await tmux.wait_for(PROMPT)
        await say(tmux, f"/resume {ident[:8]}")
        await tmux.wait_for(f"resumed session {ident} (2 messages)")
        await tmux.wait_for("you: Remember the number 42")  # the next line, drawn after it
        await tmux.wait_for(PROMPT, count=2)
        await say(tmux, "Which number?")
        await tmux.wait_for("It was 42.")
        await quit_chat(tmux)

        start_chat(tmux, tmp_path, server.url, "-c")  # -c: the last session of this directory
        await tmux.wait_for(f"resumed session {ident} (4 messages)")
        await tmux.wait_for(PROMPT)
        await say(tmux, "And now?")
        await tmux.wait_for("Still 42.")
        await quit_chat(tmux)

    contents = [
        (message["role"], message["content"]) for message in server.requests[1].json["messages"]
    ]
    assert contents[1:] == [
        ("user", "Remember the number 42"),
        ("assistant", "I will remember 42."),
        ("user", "Which number?"),
    ]
    assert len(server.requests[2].json["messages"]) == 1 + 5
    assert session_files(tmp_path) == [session]  # resumed, not copied
    assert_no_key_anywhere(tmux, tmp_path)


async def test_chat_c_repairs_a_torn_session_and_says_so_once(tmux: Tmux, tmp_path: Path) -> None:
    async with ReplayServer() as server:
        server.respond(text_reply("I will remember 42."))
        server.respond(text_reply("It was 42."))

        session = await remember_42(tmux, tmp_path, server)
        whole = session.read_bytes()
        # A crash in the middle of a write: the start of an entry, cut short.
        session.write_bytes(whole + b'{"type":"entry","version":1,"id":"torn","parentId":"x')

        start_chat(tmux, tmp_path, server.url, "-c")
        await tmux.wait_for(f"resumed session {session.stem} (2 messages)")
        await at_prompt(tmux)
        await say(tmux, "/model openai/gpt-test")  # a same-file replacement: no second note
        await tmux.wait_for("model: openai/gpt-test")
        await at_prompt(tmux)
        await say(tmux, "Which number?")
        await tmux.wait_for("It was 42.")
        screen = tmux.screen()
        await quit_chat(tmux)

    assert screen.count("recovered: dropped an incomplete last entry") == 1, screen
    data = session.read_bytes()
    assert data.startswith(whole)
    assert b'"torn"' not in data
    roles = [message["role"] for message in server.requests[1].json["messages"]]
    assert roles[1:] == ["user", "assistant", "user"]
    assert_no_key_anywhere(tmux, tmp_path)


async def test_a_configured_extension_adds_its_tool_and_hook(tmux: Tmux, tmp_path: Path) -> None:
    """The example package (examples/hello-extension, installed in the test venv) is named in
    the config file; the chat activates it from its entry point: its tool is offered and
    runs, and its event hook logs each finished run. ``/cd`` then moves the same session to
    another workspace (a replaced runtime), where a project skill is announced."""
    config = tmp_path / "config" / "tether" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('extensions = ["hello"]\n', encoding="utf-8")
    log = tmp_path / "hello.log"
    other = tmp_path / "other"
    skill = other / ".tether" / "skills" / "deploy"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: deploy\ndescription: How this project deploys\n---\nRun make deploy.\n",
        encoding="utf-8",
    )
    env = chat_env(tmp_path) | {"TETHER_HELLO_LOG": str(log)}
    async with ReplayServer() as server:
        server.respond(tool_reply("call-1", "hello_word_count", {"text": "one two three"}))
        server.respond(text_reply("Three words."))
        server.respond(text_reply("Deploying."))
        tmux.start(
            [str(TETHER), "chat", "--model", MODEL, "--base-url", server.url],
            env=env,
            cwd=workspace(tmp_path),
        )
        await tmux.wait_for(PROMPT)
        await say(tmux, "Count the words")
        screen = await tmux.wait_for("Three words.")
        assert "→ hello_word_count" in screen
        await tmux.wait_for(PROMPT, count=2)
        await say(tmux, f"/cd {other}")
        await tmux.wait_for(f"workspace: {other}")
        await say(tmux, "Deploy it")
        await tmux.wait_for("Deploying.")
        await quit_chat(tmux)

    first = server.requests[0].json
    assert "hello_word_count" in {tool["function"]["name"] for tool in first["tools"]}
    assert server.requests[1].json["messages"][-1]["content"] == "3"
    moved = server.requests[2].json
    assert "deploy: How this project deploys" in moved["messages"][0]["content"]
    assert str(other) in moved["messages"][0]["content"]
    assert "load_skill" in {tool["function"]["name"] for tool in moved["tools"]}
    assert [m["content"] for m in moved["messages"] if m["role"] == "user"] == [
        "Count the words",
        "Deploy it",
    ]
    assert len(session_files(tmp_path)) == 1  # the same session, continued
    logged = log.read_text(encoding="utf-8").splitlines()
    assert len(logged) == 2  # one line per finished run, from both runtimes' hooks
    assert all(re.fullmatch(r"run\.finished \d+ completed", line) for line in logged), logged
    assert_no_key_anywhere(tmux, tmp_path)


async def test_a_missing_extension_is_a_clear_error(tmux: Tmux, tmp_path: Path) -> None:
    config = tmp_path / "config" / "tether" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('extensions = ["not-installed"]\n', encoding="utf-8")
    tmux.start(
        [str(TETHER), "chat", "--model", MODEL, "--base-url", "http://127.0.0.1:9"],
        env=chat_env(tmp_path),
        cwd=workspace(tmp_path),
    )
    assert await tmux.wait_exit() == 2
    screen = tmux.screen()
    assert "[CLI_EXTENSION_UNAVAILABLE]" in screen
    assert "not-installed" in screen


# --- extensions that hang, or exit at import (issue 25, items 2 and 11) -----------------------

_HANG_EXTENSION = '''\
"""A test extension: announces its activation and disposal on the terminal; blocks in either
while its workspace holds a "hang-activate" or "hang-dispose" file."""

import asyncio
from pathlib import Path


class Hang:
    root = Path()

    async def activate(self, context):
        self.root = Path(context.resources.roots[0].directory)
        print(f"hang: activating in {self.root.name}", flush=True)
        if (self.root / "hang-activate").exists():
            await asyncio.Event().wait()

    async def dispose(self):
        print(f"hang: disposing in {self.root.name}", flush=True)
        if (self.root / "hang-dispose").exists():
            await asyncio.Event().wait()
'''


def installed_extension(tmp_path: Path, name: str, module: str, source: str, target: str) -> Path:
    """A directory holding ``module`` and a distribution whose entry point ``name`` (group
    ``tether.extensions``) names ``module:target``: put it on ``PYTHONPATH``."""
    folder = tmp_path / "site"
    folder.mkdir(exist_ok=True)
    (folder / f"{module}.py").write_text(source, encoding="utf-8")
    info = folder / f"{module}-0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {module.replace('_', '-')}\nVersion: 0\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(
        f"[tether.extensions]\n{name} = {module}:{target}\n", encoding="utf-8"
    )
    return folder


def extension_chat_env(tmp_path: Path, site: Path, config: str) -> dict[str, str]:
    path = tmp_path / "config" / "tether" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(config, encoding="utf-8")
    return chat_env(tmp_path) | {"PYTHONPATH": str(site)}


def start_hang_chat(tmux: Tmux, tmp_path: Path, url: str, *, timeout: str, marker: str) -> Path:
    """``tether chat`` with the ``hang`` extension (``extension_timeout = timeout``) in the
    project, which holds the ``marker`` file; returns the project directory."""
    site = installed_extension(tmp_path, "hang", "tether_hang_test", _HANG_EXTENSION, "Hang")
    config = f'extensions = ["hang"]\nextension_timeout = {timeout}\n'
    project = workspace(tmp_path)
    (project / marker).write_text("", encoding="utf-8")
    tmux.start(
        [str(TETHER), "chat", "--model", MODEL, "--base-url", url],
        env=extension_chat_env(tmp_path, site, config),
        cwd=project,
    )
    return project


async def test_ctrl_c_cancels_a_runtime_whose_extension_never_activates(
    tmp_path: Path, tmux: Tmux
) -> None:
    """The first prompt builds the runtime; the extension's activate never finishes. Ctrl-C
    cancels the build (rolled back, nothing recorded), the prompt comes back, and after the
    marker is gone the next prompt builds a runtime and is answered. Then ``/cd`` into a
    directory where it hangs again: Ctrl-C keeps the current runtime, which still answers."""
    other = tmp_path / "other"
    other.mkdir()
    (other / "hang-activate").write_text("", encoding="utf-8")
    async with ReplayServer() as server:
        server.respond(text_reply("First answer."))
        server.respond(text_reply("Second answer."))
        project = start_hang_chat(tmux, tmp_path, server.url, timeout="600", marker="hang-activate")
        await tmux.wait_for(PROMPT)
        await say(tmux, "hello")
        await tmux.wait_for("hang: activating in project")
        tmux.send("C-c")
        await tmux.wait_for("(cancelled: the turn was not sent)")
        await at_prompt(tmux)
        assert session_files(tmp_path) == []  # the build was rolled back
        (project / "hang-activate").unlink()
        await say(tmux, "hello again")
        await tmux.wait_for("First answer.")
        await at_prompt(tmux)
        await say(tmux, f"/cd {other}")
        await tmux.wait_for("hang: activating in other")
        tmux.send("C-c")
        await tmux.wait_for("(cancelled: the current runtime stays)")
        await at_prompt(tmux)
        await say(tmux, "still there?")
        await tmux.wait_for("Second answer.")
        await quit_chat(tmux)
    screen = tmux.screen()
    assert screen.count("^C cancelling (Ctrl-C again quits at once)") == 2
    assert "hang: disposing in other" in screen  # the cancelled candidate was rolled back
    assert len(server.requests) == 2
    assert_no_key_anywhere(tmux, tmp_path)


async def test_an_extension_over_its_bound_fails_the_turn_with_a_message(
    tmp_path: Path, tmux: Tmux
) -> None:
    start_hang_chat(tmux, tmp_path, "http://127.0.0.1:9/v1", timeout="0.2", marker="hang-activate")
    await tmux.wait_for(PROMPT)
    await say(tmux, "hello")
    screen = await tmux.wait_for('Extension "hang" activation did not finish within 0.2 s')
    assert "[RUNTIME_CONSTRUCTION_FAILED]" in screen
    await quit_chat(tmux)


async def test_ctrl_c_at_exit_stops_waiting_for_an_extension_that_never_disposes(
    tmp_path: Path, tmux: Tmux
) -> None:
    async with ReplayServer() as server:
        server.respond(text_reply("Answered."))
        start_hang_chat(tmux, tmp_path, server.url, timeout="600", marker="hang-dispose")
        await tmux.wait_for(PROMPT)
        await say(tmux, "hello")
        await tmux.wait_for("Answered.")
        await at_prompt(tmux)
        tmux.send("C-d")
        await tmux.wait_for("hang: disposing in project")
        tmux.send("C-c")
        assert await tmux.wait_exit() == 130
    screen = tmux.screen()
    assert "(not waiting for the runtime to close)" in screen
    assert "Traceback" not in screen
    assert len(session_files(tmp_path)) == 1  # the conversation was recorded as it went


async def test_an_extension_that_exits_at_import_is_reported_not_silent(
    tmp_path: Path, tmux: Tmux
) -> None:
    site = installed_extension(
        tmp_path, "quitter", "tether_quitter_test", "raise SystemExit(3)\n", "Never"
    )
    env = extension_chat_env(tmp_path, site, 'extensions = ["quitter"]\n')
    tmux.start(
        [str(TETHER), "chat", "--model", MODEL, "--base-url", "http://127.0.0.1:9/v1"],
        env=env,
        cwd=workspace(tmp_path),
    )
    assert await tmux.wait_exit() == 2
    screen = tmux.screen()
    assert "[CLI_EXTENSION_UNAVAILABLE]" in screen
    assert "[EXTENSION_LOAD_FAILED]" in screen
    assert "quitter" in screen
    assert "SystemExit" in screen


async def test_bash_output_streams_before_the_command_ends(tmux: Tmux, tmp_path: Path) -> None:
    """Issue 28: a command's output shows while it runs (a box of its last lines), and the
    box gives way to the result when it ends."""
    gate = workspace(tmp_path) / "gate"
    os.mkfifo(gate)
    command = "echo first-line; read -r word < gate; echo second-$word"
    async with ReplayServer() as server:
        server.respond(tool_reply("call-1", "bash", {"command": command}))
        server.respond(text_reply("Both lines are out."))
        start_chat(tmux, tmp_path, server.url, "--auto-approve")
        await tmux.wait_for(PROMPT)
        await say(tmux, "Run it")
        screen = await tmux.wait_for("│ first-line")  # while the command waits on the gate
        assert "second-open" not in screen
        with open(gate, "w") as opened:  # noqa: ASYNC230 - a FIFO the command reads at once
            opened.write("open\n")
        screen = await tmux.wait_for("Both lines are out.")
        assert "second-open" in screen
        assert "│ first-line" not in screen  # the live box is gone; the result shows it
        assert "    first-line" in screen
        await quit_chat(tmux)


async def test_esc_at_the_approval_question_interrupts_the_turn(tmux: Tmux, tmp_path: Path) -> None:
    """Issue 28: Esc at ``allow bash?`` cancels the turn as Esc during a stream does; the
    call is answered ``TOOL_CALL_INTERRUPTED`` (not declined) and the prompt comes back."""
    project = workspace(tmp_path)
    async with ReplayServer() as server:
        server.respond(tool_reply("call-1", "bash", {"command": "touch ran.txt"}))
        server.respond(text_reply("Still here."))
        start_chat(tmux, tmp_path, server.url)
        await tmux.wait_for(PROMPT)
        await say(tmux, "Touch it")
        await tmux.wait_for("allow bash? [y]es / [n]o")
        tmux.send("Escape")
        await tmux.wait_for("(turn cancelled)")
        await at_prompt(tmux)
        screen = tmux.screen()
        assert "declined" not in screen
        assert "^[" not in screen
        await say(tmux, "Are you there?")
        await tmux.wait_for("Still here.")
        await quit_chat(tmux)
    assert not (project / "ran.txt").exists()
    sent = server.requests[1].json["messages"]
    answered = next(message for message in sent if message["role"] == "tool")
    assert answered["tool_call_id"] == "call-1"
    assert "TOOL_CALL_INTERRUPTED" in answered["content"]
    assert "TOOL_CALL_BLOCKED" not in answered["content"]
    assert sent[-2:] == [
        {"role": "user", "content": INTERRUPTED_TURN_NOTE},
        {"role": "user", "content": "Are you there?"},
    ]


async def test_without_colour_thinking_is_set_apart_from_the_answer(
    tmux: Tmux, tmp_path: Path
) -> None:
    """Issue 28: with ``NO_COLOR`` (no dimming to tell them apart) the model's thinking has a
    ``thinking:`` label and a ``│`` gutter; the answer has neither."""
    thoughts = " ".join(f"ponder{n:02}" for n in range(40))
    payloads = [
        chunk({"role": "assistant", "content": ""}),
        *(chunk({"reasoning_content": thoughts[i : i + 9]}) for i in range(0, len(thoughts), 9)),
        chunk({"content": "The answer is 42."}),
        chunk({}, "stop"),
        usage(11, 3),
    ]
    async with ReplayServer() as server:
        server.respond(sse_response(sse_body(payloads)))
        start_chat(tmux, tmp_path, server.url)
        await tmux.wait_for(PROMPT)
        await say(tmux, "Think first")
        screen = await tmux.wait_for("[tokens: 11 in,")
        await quit_chat(tmux)
    shown = screen[screen.index("chat> Think first") : screen.index("[tokens: 11 in,")]
    lines = shown.splitlines()[1:]
    assert lines[0] == "thinking:", shown
    thinking = [line for line in lines if "ponder" in line]
    assert len(thinking) > 1, shown  # wrapped, inside the gutter
    assert all(line.startswith("│ ") and len(line) <= 120 for line in thinking), shown
    assert " ".join(line[2:] for line in thinking).split() == thoughts.split()
    (answer,) = [line for line in lines if "42" in line]
    assert answer == "The answer is 42."


async def test_a_resize_redraws_the_live_region_without_garbage(tmux: Tmux, tmp_path: Path) -> None:
    """Issue 28: the live region (the unfinished paragraph, the status line) drawn at 120
    columns is erased after a resize to 60 as the terminal now shows it (tmux re-wraps each
    row onto two) and drawn again at the new width, before the stream goes on: the screen
    shows every word once, in rows of the new width. (What tmux pushed into its scrollback
    while re-wrapping stays there: docs, "Resizing".)"""
    words = " ".join(f"ipsum{n:02}" for n in range(80))
    payloads = text_payloads("First paragraph.\n\n", words, " and the end.\n")
    offset = len(sse_body(payloads[:3], done=False))
    async with ReplayServer() as server:
        stalled = server.respond(sse_response(sse_body(payloads), stall_after=offset))
        start_chat(tmux, tmp_path, server.url)
        await tmux.wait_for(PROMPT)
        await say(tmux, "Write")
        await tmux.wait_for("\nipsum75 ipsum76")  # the live tail, 120 columns wide
        await stalled.stalled.wait()
        tmux.resize(60, 40)
        await tmux.wait_for("\nipsum77 ipsum78 ipsum79\n")  # drawn again, 60 wide
        screen = tmux.visible()
        rows = [line for line in screen.splitlines() if "ipsum" in line]
        assert all(len(row) <= 60 for row in rows), screen
        assert " ".join(rows).split() == words.split(), screen  # nothing left of the old rows
        assert screen.count("First paragraph.") <= 1, screen
        (status,) = [line for line in screen.splitlines() if "writing" in line]
        assert len(status) < 60
        stalled.release.set()
        screen = await tmux.wait_for("[tokens: 11 in,")
        await quit_chat(tmux)
    answer = tmux.visible()
    rows = [line for line in answer.splitlines() if "ipsum" in line]
    assert " ".join(rows).split() == [*words.split(), "and", "the", "end."], answer


async def test_the_status_line_shows_the_cost_of_a_priced_model(tmux: Tmux, tmp_path: Path) -> None:
    """Issue 33: with prices (the config's: $1000 per million in, $2000 out), the status
    line shows what the session cost so far, counted per response (the tool call's
    response: 20 in, 5 out = $0.03) while the turn waits for the next one; the usage line
    then gives the turn's and the session's cost."""
    config = tmp_path / "config" / "tether" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(f'[models."{MODEL}"]\ninput_price = 1000\noutput_price = 2000\n')
    (workspace(tmp_path) / "notes.txt").write_text("remember the milk\n")
    headers = asyncio.Event()
    async with ReplayServer() as server:
        server.respond(tool_reply("call-1", "read_file", {"path": "notes.txt"}))
        server.respond(dataclasses.replace(text_reply("Done."), delay_headers=headers))
        start_chat(tmux, tmp_path, server.url)
        await tmux.wait_for(PROMPT)
        await say(tmux, "Read my notes")
        screen = await tmux.wait_for("$0.0300")
        status = next(line for line in screen.splitlines() if "$0.0300" in line)
        assert "waiting for the model" in status, status
        assert "↑20 ↓5" in status, status
        headers.set()
        screen = await tmux.wait_for("[tokens: 31 in, 6 out · $0.0430 · session: 31 in, 6 out")
        assert "session: 31 in, 6 out · $0.0430]" in screen
        await quit_chat(tmux)
