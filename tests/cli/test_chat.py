"""``tether chat`` without a terminal: commands, approval, rendering, sessions, the -c index.

The terminal itself (prompt_toolkit, keys, a real HTTP model) is in ``test_chat_tmux.py``;
here a ``Chat`` runs in-process on a ``ScriptedModel`` with a scripted approval answer, and
the command line is checked through ``main()``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import io
import json
import os
import re
import subprocess
import sys
import uuid
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import pytest

from tether import AbortController, ScriptedModel, ScriptedReply, ScriptedToolCall
from tether.agent.extensions import ExtensionContext, ExtensionDefinition
from tether.agent.session import default_sessions_dir
from tether.cli import chat as chat_module
from tether.cli import chat_commands
from tether.cli import chat_view as chat_view_module
from tether.cli.chat import APPROVE_PROMPT, message_text
from tether.cli.chat_approval import Escaped
from tether.cli.chat_commands import Command, parse_command
from tether.cli.chat_completion import chat_completions
from tether.cli.chat_session import Chat
from tether.cli.chat_view import ChatView
from tether.cli.config import CliConfig, load_config
from tether.cli.main import main
from tether.cli.models import ModelChoice, choose_model
from tether.cli.render import Output
from tether.cli.session_index import (
    chat_data_dir,
    last_session,
    remember_session,
    session_directories,
)
from tether.cli.slash_commands import (
    COMMANDS_HELP,
    HELP,
    SLASH_COMMANDS,
    Handler,
    SlashCommand,
    SlashHost,
    rpc_commands,
)
from tether.cli.ui.picker import More, PickItem
from tether.coding.approval import DECLINED, Approvals, parse_answer
from tether.coding.resources import PROJECT_DIRECTORY, load_chat_resources
from tether.jsonvalue import JsonObject
from tether.loop.hooks import BlockToolCall, ToolCallContext
from tether.models.base import Model

if TYPE_CHECKING:
    from typing_extensions import Buffer

from tether.protocol import (
    AgentEvent,
    ModelChunkEvent,
    ModelChunkPayload,
    TextDeltaChunk,
    ToolCall,
    ToolResultMessage,
)

FAKE_KEY = "sk-tether-FAKE-CHAT-KEY-in-process"


# --- pure parts -------------------------------------------------------------------------------


def test_slash_commands_are_parsed() -> None:
    assert parse_command("/help") == Command("help")
    assert parse_command("  /MODEL  openai/gpt-4o ") == Command("model", "openai/gpt-4o")
    assert parse_command("/tree abc123") == Command("tree", "abc123")
    assert parse_command("/nope x") == Command("nope", "x")
    assert not Command("nope").known
    assert all(Command(name).known for name in ("new", "sessions", "resume", "compact", "usage"))
    for text in ("hello", "", "/", "//etc/passwd is odd", "what about /help"):
        assert parse_command(text) is None
    assert message_text("//etc/passwd") == "/etc/passwd"
    assert message_text("  hi  ") == "hi"
    assert "/resume" in HELP
    assert "Alt-Enter" in HELP


def test_answers_and_approval_decisions() -> None:
    assert [parse_answer(text) for text in ("y", "YES ", "n", "No", "a", " always", "", "q")] == [
        "yes",
        "yes",
        "no",
        "no",
        "always",
        "always",
        None,
        None,
    ]
    approvals = Approvals(("write_file", "bash"), auto=False)
    assert approvals.needs_asking("write_file")
    assert not approvals.needs_asking("read_file")
    assert approvals.decide("write_file", "yes")
    assert approvals.needs_asking("write_file")  # yes is for this call only
    assert not approvals.decide("write_file", "no")
    assert approvals.decide("bash", "always")
    assert not approvals.needs_asking("bash")
    assert approvals.needs_asking("write_file")
    assert not Approvals(("bash",), auto=True).needs_asking("bash")


def view(*, color: bool = False) -> tuple[ChatView, io.BytesIO]:
    buffer = io.BytesIO()
    stream = io.TextIOWrapper(buffer, encoding="utf-8")
    return ChatView(Output.for_people(stream), color=color), buffer


def test_the_approval_question_is_the_ui_one() -> None:
    from tether.cli.ui.approval import APPROVAL_QUESTION

    assert APPROVE_PROMPT == APPROVAL_QUESTION


def test_tool_calls_results_and_usage_are_rendered() -> None:
    chat_view, buffer = view()
    call = ToolCall(
        id="c1", name="write_file", arguments=JsonObject({"path": "a.txt", "content": "hi"})
    )
    assert chat_view.tool_call_line(call) == '→ write_file({"path":"a.txt","content":"hi"})'
    long = ToolCall(id="c2", name="bash", arguments=JsonObject({"command": "x" * 500}))
    assert len(chat_view.tool_call_line(long)) < 300
    many = "\n".join(f"line {n}" for n in range(29)) + "\nFAILED"
    result = ToolResultMessage(tool_call_id="c3", tool_name="read_file", content=many)
    assert chat_view.tool_result_lines(result) == [
        "  ✓ read_file",
        "    line 0",
        "    line 1",
        "    line 2",
        "    line 3",
        "    … 20 lines hidden (Ctrl-O to expand)",
        "    line 24",
        "    line 25",
        "    line 26",
        "    line 27",
        "    line 28",
        "    FAILED",
    ]
    chat_view.expand_last()  # Ctrl-O: every line
    expanded = shown(buffer)
    assert "(all 30 lines of the last tool result)" in expanded
    assert all(f"    line {n}\n" in expanded for n in range(29))
    diff = "Edited a.py:\n--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-old\n+new\n"
    edited = ToolResultMessage(tool_call_id="c4", tool_name="edit_file", content=diff)
    lines = chat_view.tool_result_lines(edited)
    assert lines[0] == "  ✓ edit_file"
    assert "    -old" in lines
    assert "    +new" in lines
    failed = ToolResultMessage(
        tool_call_id="c5", tool_name="bash", content='{"error":"boom"}', is_error=True
    )
    assert chat_view.tool_result_lines(failed) == ["  ✗ bash error", '    {"error":"boom"}']
    assert (
        chat_view.usage_line((3, 4), (10, 20)) == "[tokens: 3 in, 4 out · session: 10 in, 20 out]"
    )
    coloured, _ = view(color=True)
    assert coloured.usage_line((1, 2), (1, 2)).startswith("\x1b[2m")
    assert "\x1b[32m+new" in "".join(coloured.tool_result_lines(edited))


# --- the -c index and the data directory ------------------------------------------------------


def test_the_cwd_index_finds_the_last_session_of_a_directory(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    here, there = tmp_path / "here", tmp_path / "there"
    assert last_session(sessions, here) is None
    for ident in ("s-1", "s-2", "s-3"):
        (sessions / f"{ident}.jsonl").write_text("{}\n", encoding="utf-8")
    remember_session(sessions, here, "s-1")
    remember_session(sessions, there, "s-2")
    remember_session(sessions, here, "s-3")
    assert last_session(sessions, here) == "s-3"
    assert last_session(sessions, there) == "s-2"
    data = json.loads((sessions / "cwd-index.json").read_text(encoding="utf-8"))
    assert data == {
        "version": 1,
        "sessions": {str(here): "s-3", str(there): "s-2"},
        "directories": {"s-1": str(here), "s-2": str(there), "s-3": str(here)},
    }
    assert list(session_directories(sessions)) == ["s-1", "s-2", "s-3"]  # oldest first
    assert (sessions / "cwd-index.json").stat().st_mode & 0o777 == 0o600
    (sessions / "s-2.jsonl").unlink()
    assert last_session(sessions, there) is None  # its file is gone
    (sessions / "cwd-index.json").write_text("not json", encoding="utf-8")
    assert last_session(sessions, here) is None
    remember_session(sessions, here, "s-1")  # a broken index is replaced
    assert last_session(sessions, here) == "s-1"


def test_the_data_dir_is_the_sessions_dirs_parent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert chat_data_dir() == tmp_path / "tether" == default_sessions_dir().parent
    monkeypatch.setenv("XDG_DATA_HOME", "relative")
    assert chat_data_dir() == default_sessions_dir().parent


# --- a chat on a scripted model ---------------------------------------------------------------


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> CliConfig:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    return load_config(tmp_path / "missing.toml")


def a_choice(config: CliConfig) -> ModelChoice:
    return choose_model(
        "openai/gpt-test", base_url=None, config=config, environ={"OPENAI_API_KEY": FAKE_KEY}
    )


class Answers:
    """The approval answers, in order; what was asked."""

    def __init__(self, *answers: str | BaseException) -> None:
        self.answers = list(answers)
        self.asked: list[str] = []

    async def __call__(self, question: str) -> str:
        self.asked.append(question)
        answer = self.answers.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return answer


def make_chat(
    tmp_path: Path,
    config: CliConfig,
    model: ScriptedModel | Callable[[ModelChoice], Model],
    answers: Answers | None = None,
    *,
    extensions: Sequence[ExtensionDefinition] = (),
) -> tuple[Chat, io.BytesIO]:
    """A ``Chat`` in ``tmp_path/project`` (data in ``tmp_path/data``) on ``model`` (or the
    models ``model`` builds for each choice), asking ``answers`` (none by default), with
    ``extensions``; the bytes it shows go to the returned buffer."""
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    chat_view, buffer = view()
    build: Callable[[ModelChoice], Model] = (
        (lambda _: model) if isinstance(model, ScriptedModel) else model
    )
    chat = Chat(
        choice=a_choice(config),
        config=config,
        cwd=project,
        data_dir=tmp_path / "data",
        view=chat_view,
        ask=Answers() if answers is None else answers,
        build_model=build,
        extensions=extensions,
    )
    return chat, buffer


def write(path: str, content: str, call_id: str) -> ScriptedReply:
    arguments = JsonObject({"path": path, "content": content})
    return ScriptedReply(
        tool_calls=(ScriptedToolCall(name="write_file", arguments=arguments, id=call_id),)
    )


def shown(buffer: io.BytesIO) -> str:
    return buffer.getvalue().decode("utf-8")


async def test_a_turn_asks_runs_declines_and_records(tmp_path: Path, config: CliConfig) -> None:
    model = ScriptedModel(
        [
            write("a.txt", "A", "c1"),
            ScriptedReply(text=("Wrote ", "a.")),
            write("b.txt", "B", "c2"),
            ScriptedReply(text=("Skipped b.",)),
        ]
    )
    answers = Answers("maybe", "y", "n")
    chat, buffer = make_chat(tmp_path, config, model, answers)

    first = await chat.turn("write a")
    second = await chat.turn("write b")
    await chat.close()

    assert first is not None
    assert second is not None
    assert first.status == second.status == "completed"
    project = tmp_path / "project"
    assert (project / "a.txt").read_text(encoding="utf-8") == "A"
    assert not (project / "b.txt").exists()
    assert (
        answers.asked
        == ["allow write_file? [y]es / [n]o (n: reason) / [a]lways for write_file: "] * 3
    )
    text = shown(buffer)
    assert "answer y, n (or n: a reason for the model) or a" in text
    assert "write_file a.txt" in text  # the preview, before the question
    assert "Wrote a." in text
    assert "(declined: write_file did not run)" in text
    blocked = model.requests[3].messages[-1]
    assert blocked.role == "toolResult"
    assert blocked.is_error
    assert "TOOL_CALL_BLOCKED" in blocked.content
    assert DECLINED in blocked.content
    assert model.requests[0].system is not None
    assert "write_file" in model.requests[0].system
    ident = chat.session_id
    assert ident is not None
    sessions = tmp_path / "data" / "sessions"
    assert last_session(sessions, project) == ident
    lines = (sessions / f"{ident}.jsonl").read_text(encoding="utf-8").splitlines()
    roles = [json.loads(line)["message"]["role"] for line in lines[1:]]
    assert roles == ["user", "assistant", "toolResult", "assistant"] * 2


async def test_a_reason_given_with_no_reaches_the_model(tmp_path: Path, config: CliConfig) -> None:
    model = ScriptedModel([write("b.txt", "B", "c1"), ScriptedReply(text=("Fine.",))])
    answers = Answers("n: use pytest -x")
    chat, buffer = make_chat(tmp_path, config, model, answers)
    result = await chat.turn("write b")
    await chat.close()
    assert result is not None
    assert result.status == "completed"
    assert not (tmp_path / "project" / "b.txt").exists()
    blocked = model.requests[1].messages[-1]
    assert blocked.role == "toolResult"
    assert "TOOL_CALL_BLOCKED" in blocked.content
    assert "Their reason: use pytest -x" in blocked.content
    assert "(declined: write_file did not run)" in shown(buffer)


async def test_always_stops_asking_for_that_tool(tmp_path: Path, config: CliConfig) -> None:
    model = ScriptedModel(
        [
            write("a.txt", "A", "c1"),
            write("b.txt", "B", "c2"),
            ScriptedReply(text=("Both.",)),
        ]
    )
    answers = Answers("a")
    chat, _ = make_chat(tmp_path, config, model, answers)
    result = await chat.turn("write both")
    await chat.close()
    assert result is not None
    assert result.status == "completed"
    assert len(answers.asked) == 1
    assert (tmp_path / "project" / "b.txt").read_text(encoding="utf-8") == "B"


async def test_ctrl_c_at_the_question_declines_and_cancels(
    tmp_path: Path, config: CliConfig
) -> None:
    model = ScriptedModel([write("a.txt", "A", "c1")])
    chat, buffer = make_chat(tmp_path, config, model, Answers(KeyboardInterrupt()))
    result = await chat.turn("write a")
    await chat.close()
    assert result is not None
    assert result.status == "cancelled"
    assert not (tmp_path / "project" / "a.txt").exists()
    assert "(turn cancelled)" in shown(buffer)


async def test_esc_at_the_question_interrupts_the_call(tmp_path: Path, config: CliConfig) -> None:
    model = ScriptedModel([write("a.txt", "A", "c1")])
    chat, buffer = make_chat(tmp_path, config, model, Answers(Escaped()))
    result = await chat.turn("write a")
    await chat.close()
    assert result is not None
    assert result.status == "cancelled"
    assert not (tmp_path / "project" / "a.txt").exists()
    answered = [message for message in result.messages if message.role == "toolResult"]
    assert [message.tool_call_id for message in answered] == ["c1"]
    assert "TOOL_CALL_INTERRUPTED" in answered[0].content
    assert "Esc: cancelling the turn" in shown(buffer)
    assert "declined" not in shown(buffer)


async def test_picking_a_provider_puts_model_provider_on_the_next_prompt(
    tmp_path: Path, config: CliConfig
) -> None:
    chat, buffer = make_chat(tmp_path, config, ScriptedModel([]))
    offered: list[list[str]] = []

    async def pick(title: str, items: Sequence[PickItem], more: More | None) -> str | None:
        offered.append([item.value for item in items])
        if asyncio.iscoroutine(more):
            more.close()  # no server to ask here
        return "anthropic/"

    chat.pick = pick
    assert await chat.command(Command("model"))
    await chat.close()
    assert offered[0][0] == chat.choice.spec
    assert "anthropic/" in offered[0]
    assert chat.unsent == "/model anthropic/"
    assert "type the model's name" in shown(buffer)


async def test_each_slash_command_runs_its_own_handler_and_no_other(
    tmp_path: Path, config: CliConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 31: the table is the dispatch. Every name runs the handler of its own entry
    (a new entry, here ``frobnicate``, needs nothing else), and a name not in the table is a
    template or unknown, never another command (it used to fall through to ``/compact``)."""
    ran: list[tuple[str, str]] = []

    def recording(name: str) -> Handler:
        async def handler(host: SlashHost, argument: str) -> bool:
            ran.append((name, argument))
            return True

        return handler

    table = {
        command.name: dataclasses.replace(
            command, handler=recording(command.name), chat_handler=None
        )
        for command in SLASH_COMMANDS
    }
    table["frobnicate"] = SlashCommand(
        name="frobnicate", args="", help="a new one", handler=recording("frobnicate")
    )
    monkeypatch.setattr(chat_commands, "find_command", table.get)
    chat, buffer = make_chat(tmp_path, config, ScriptedModel([]))
    for name in table:
        assert await chat.command(Command(name, "x"))
    assert await chat.command(Command("compactt"))
    await chat.close()
    assert ran == [(name, "x") for name in table]
    assert "unknown command /compactt" in shown(buffer)


async def test_the_help_and_completion_come_from_the_table() -> None:
    for command in SLASH_COMMANDS:
        assert f"  {command.usage} " in HELP
        assert f"  {command.usage} " in COMMANDS_HELP
    offered = [item.text for item in chat_completions("/", workspace=None, models=[])]
    assert offered == sorted(f"/{command.name}" for command in SLASH_COMMANDS)
    assert [command.name for command in rpc_commands()] == [
        command.name for command in SLASH_COMMANDS if command.handler is not None
    ]
    with pytest.raises(ValueError, match="exactly one"):
        SlashCommand(name="both", args="", help="", handler=None, chat_handler=None)


async def test_the_hook_lets_unlisted_tools_run(tmp_path: Path, config: CliConfig) -> None:
    chat, _ = make_chat(tmp_path, config, ScriptedModel([]), Answers())
    call = ToolCall(id="c1", name="read_file", arguments=JsonObject({"path": "x"}))
    context = ToolCallContext(tool_call=call, messages=(), signal=AbortController().signal)
    assert await chat.before_tool_call(context) is None
    listed = ToolCallContext(
        tool_call=ToolCall(id="c2", name="bash", arguments=JsonObject({"command": "ls"})),
        messages=(),
        signal=AbortController().signal,
    )
    chat.approvals.auto = False
    chat.ask = Answers("n")
    assert await chat.before_tool_call(listed) == BlockToolCall(reason=DECLINED)


async def test_commands_new_sessions_resume_tree_usage(tmp_path: Path, config: CliConfig) -> None:
    model = ScriptedModel(
        [
            ScriptedReply(text=("one",)),
            ScriptedReply(text=("two",)),
            ScriptedReply(text=("three",)),
            ScriptedReply(text=("branched",)),
        ]
    )
    chat, buffer = make_chat(tmp_path, config, model, Answers())
    assert await chat.command(Command("tree")) is True
    assert "nothing in this session yet" in shown(buffer)
    await chat.turn("first")
    first_id = chat.session_id
    assert first_id is not None
    await chat.turn("second")

    assert await chat.command(Command("usage"))
    assert "session tokens:" in shown(buffer)
    await chat.command(Command("tree"))
    assert shown(buffer).count("you: first") == 1
    assert "assistant: two" in shown(buffer)

    await chat.command(Command("new"))
    await chat.turn("other")
    second_id = chat.session_id
    assert second_id not in (None, first_id)
    assert [message.role for message in model.requests[2].messages] == ["user"]

    await chat.command(Command("sessions"))
    assert f"* {second_id[:8]}" in shown(buffer)
    assert f"  {first_id[:8]}" in shown(buffer)

    assert await chat.command(Command("resume", first_id[:6]))
    assert f"resumed session {first_id} (4 messages)" in shown(buffer)

    tree = chat.tree
    assert tree is not None
    first_answer = tree.active_entries[1].id
    await chat.command(Command("tree", first_answer[:8]))
    assert "(2 messages): the next prompt starts a branch there" in shown(buffer)
    await chat.turn("again")
    assert [
        message.content for message in model.requests[3].messages if message.role == "user"
    ] == [
        "first",
        "again",
    ]
    branched = chat.tree  # a runtime built on the same file, moved to that entry
    assert branched is not None
    assert branched is not tree
    assert branched.store.header.id == first_id
    assert len(branched.entries) == 6  # the old branch stays
    await chat.command(Command("resume", "zzz"))
    assert "no session 'zzz'" in shown(buffer)
    await chat.command(Command("bogus"))
    assert "unknown command /bogus" in shown(buffer)
    await chat.command(Command("compact"))  # two short exchanges: nothing to gain
    assert "nothing to compact" in shown(buffer)
    await chat.command(Command("model", "nosuch/x"))
    assert "CLI_UNKNOWN_PROVIDER" in shown(buffer)
    assert await chat.command(Command("quit")) is False
    await chat.close()


async def test_compact_summarizes_with_the_model_and_records_it(
    tmp_path: Path, config: CliConfig
) -> None:
    from tether.agent.auto_compaction import SUMMARY_PREFIX
    from tether.agent.session import CompactionEntry

    replies = [ScriptedReply(text=(f"answer {n} " + "x" * 300,)) for n in range(3)]
    replies.append(ScriptedReply(text=("we discussed three long questions",)))
    replies.append(ScriptedReply(text=("after the summary",)))
    model = ScriptedModel(replies)
    chat, buffer = make_chat(tmp_path, config, model, Answers())
    for n in range(3):
        await chat.turn(f"question {n} " + "q" * 300)
    await chat.command(Command("compact"))
    assert "compacted: " in shown(buffer)
    tree = chat.tree
    assert tree is not None
    assert [type(e) for e in tree.entries].count(CompactionEntry) == 1
    await chat.turn("and now?")
    first = model.requests[-1].messages[0]
    assert first.role == "user"
    assert first.content == SUMMARY_PREFIX + "we discussed three long questions"
    await chat.close()


# --- the command line -------------------------------------------------------------------------


def test_chat_without_a_model_says_how_to_pick_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TETHER_CONFIG", str(tmp_path / "config.toml"))
    assert main(["chat"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tether chat: [CLI_NO_MODEL] no model: pass --model PROVIDER/MODEL")
    assert "default_model" in err


def test_chat_needs_a_key_and_a_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TETHER_CONFIG", str(tmp_path / "config.toml"))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert main(["chat", "--model", "openai/gpt-test"]) == 2
    assert "OPENAI_API_KEY" in capsys.readouterr().err
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    assert main(["chat", "--model", "openai/gpt-test"]) == 2  # pytest's stdin is no terminal
    err = capsys.readouterr().err
    assert "[CLI_NOT_A_TERMINAL]" in err
    assert FAKE_KEY not in err


def test_help_and_import_do_not_load_prompt_toolkit() -> None:
    code = (
        "import sys, contextlib, io\n"
        "import tether\n"
        "from tether.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        "    main(['--help'])\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        "    main(['chat', '--help'])\n"
        "names = ('prompt_toolkit', 'tether.cli.chat', 'rich')\n"
        "print(sorted(m for m in sys.modules if m.startswith(names)))\n"
    )
    env = {key: value for key, value in os.environ.items() if key != "PYTHONWARNINGS"}
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True, env=env
    ).stdout
    assert out.strip() == "[]"
    assert chat_module.__doc__ is not None


def test_the_chat_loads_rich_only_at_the_first_render() -> None:
    code = (
        "import sys, io\n"
        "from tether.cli.chat_view import ChatView\n"
        "from tether.cli.render import Output\n"
        "view = ChatView(Output.for_people(io.StringIO()), color=True, live=True)\n"
        "view.line('a line')\n"
        "print('rich' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert out.stdout.strip() == "False"


# --- skills and prompt templates (tether.coding.resources) -------------------------------------


def skill_file(root: Path, name: str, description: str, body: str) -> None:
    folder = root / "skills" / name
    folder.mkdir(parents=True)
    text = f"---\nname: {name}\ndescription: {description}\n---\n{body}"
    (folder / "SKILL.md").write_text(text, encoding="utf-8")


async def test_skills_are_announced_and_loaded_and_templates_expand(
    tmp_path: Path, config: CliConfig
) -> None:
    project_root = tmp_path / "project" / ".tether"
    user_root = tmp_path / "config" / "tether"
    skill_file(project_root, "release", "How to cut a release", "Tag it, then push the tag.\n")
    skill_file(user_root, "release", "The user's release notes", "never seen\n")
    skill_file(user_root, "review", "How to review a change", "Read the diff twice.\n")
    (user_root / "skills" / "Bad").mkdir()
    (user_root / "skills" / "Bad" / "SKILL.md").write_text("no front matter", encoding="utf-8")
    (project_root / "prompts").mkdir()
    (project_root / "prompts" / "fix.md").write_text(
        "---\ndescription: Fix an issue\n---\nFix issue $1 in $2 ($ARGUMENTS)", encoding="utf-8"
    )
    call = ScriptedToolCall(name="load_skill", arguments=JsonObject({"name": "release"}), id="s1")
    model = ScriptedModel(
        [
            ScriptedReply(tool_calls=(call,)),
            ScriptedReply(text=("Done.",)),
            ScriptedReply(text=("Fixed.",)),
        ]
    )
    chat, buffer = make_chat(tmp_path, config, model, Answers())

    first = await chat.turn("release it")
    assert await chat.command(Command("help"))
    assert await chat.command(Command("fix", '42 "the parser"'))
    assert await chat.command(Command("nope"))
    await chat.close()

    assert first is not None
    assert first.status == "completed"
    system = model.requests[0].system
    assert system is not None
    assert "release: How to cut a release" in system  # the project root wins the name
    assert "review: How to review a change" in system
    assert "The user's release notes" not in system
    assert "load_skill" in [spec.name for spec in model.requests[0].tools]
    loaded = model.requests[1].messages[-1]
    assert loaded.role == "toolResult"
    assert not loaded.is_error
    assert loaded.content == "Tag it, then push the tag.\n"
    prompt = model.requests[2].messages[-1]
    assert prompt.role == "user"
    assert prompt.content == "Fix issue 42 in the parser (42 the parser)"
    text = shown(buffer)
    assert text.count("(ignored) skill skills/Bad/SKILL.md") == 1
    assert "/fix       Fix an issue" in text
    assert "unknown command /nope" in text


async def test_each_skipped_skill_and_template_is_one_problem_line(tmp_path: Path) -> None:
    root = tmp_path / PROJECT_DIRECTORY
    (root / "skills" / "Bad").mkdir(parents=True)
    (root / "skills" / "Bad" / "SKILL.md").write_text("no front matter", encoding="utf-8")
    (root / "prompts").mkdir()
    (root / "prompts" / "Bad Name.md").write_text("hello", encoding="utf-8")
    (root / "prompts" / "ok.md").write_text("hello there", encoding="utf-8")

    resources = await load_chat_resources(tmp_path, None)

    assert resources.skills == ()
    assert [template.name for template in resources.templates] == ["ok"]
    assert [line.split(":")[0] for line in resources.problems] == [
        "skill skills/Bad/SKILL.md",
        "template prompts/Bad Name.md",
    ]
    assert "[SKILL_MISSING_FRONT_MATTER] skills/Bad/SKILL.md: " in resources.problems[0]
    assert "[TEMPLATE_INVALID_NAME] prompts/Bad Name.md: " in resources.problems[1]


async def test_without_resource_roots_there_are_no_skills(
    tmp_path: Path, config: CliConfig
) -> None:
    model = ScriptedModel([ScriptedReply(text=("Hi.",))])
    chat, buffer = make_chat(tmp_path, config, model, Answers())

    await chat.turn("hello")
    assert await chat.command(Command("fix", "1"))
    await chat.close()

    system = model.requests[0].system
    assert system is not None
    assert "## Skills" not in system
    assert "load_skill" not in [spec.name for spec in model.requests[0].tools]
    assert "unknown command /fix" in shown(buffer)


# --- the chat's runtime (tether.agent.runtime): /cd, /model, /new, extensions ---------------


async def test_cd_continues_the_session_in_another_workspace(
    tmp_path: Path, config: CliConfig
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    model = ScriptedModel(
        [
            write("here.txt", "1", "c1"),
            ScriptedReply(text=("ok",)),
            write("there.txt", "2", "c2"),
            ScriptedReply(text=("ok",)),
        ]
    )
    chat, buffer = make_chat(tmp_path, config, model, Answers("a"))

    await chat.turn("write here")
    first_id = chat.session_id
    assert not await chat.change_directory(str(tmp_path / "missing"))
    assert await chat.command(Command("cd", "~\0"))  # pwd raised ValueError on the NUL
    assert await chat.command(Command("cd", "../other"))
    await chat.turn("write there")
    await chat.close()

    assert (tmp_path / "project" / "here.txt").read_text(encoding="utf-8") == "1"
    assert (other / "there.txt").read_text(encoding="utf-8") == "2"
    assert not (tmp_path / "project" / "there.txt").exists()
    assert chat.session_id == first_id
    assert chat.cwd == other.resolve()
    text = shown(buffer)
    assert f"no directory {tmp_path / 'missing'}" in text
    assert f"no directory {tmp_path / 'project'}/~\0" in text
    assert f"workspace: {other.resolve()}" in text
    system = model.requests[2].system
    assert system is not None
    assert str(other.resolve()) in system
    users = [m.content for m in model.requests[2].messages if m.role == "user"]
    assert users == ["write here", "write there"]


async def test_a_model_switch_that_cannot_be_built_keeps_the_old_runtime(
    tmp_path: Path, config: CliConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    first = ScriptedModel([ScriptedReply(text=("one",)), ScriptedReply(text=("three",))])
    second = ScriptedModel([ScriptedReply(text=("two",))])
    built: list[str] = []

    def build(choice: ModelChoice) -> Model:
        built.append(choice.spec)
        if choice.spec == "openai/broken":
            raise RuntimeError("no such deployment")
        return first if len(built) == 1 else second

    chat, buffer = make_chat(tmp_path, config, build)
    await chat.turn("hello")
    runtime = chat.runtime
    assert await chat.command(Command("model", "openai/broken"))
    assert chat.runtime is runtime  # the old runtime stays current and usable
    assert chat.choice.spec == "openai/gpt-test"
    await chat.turn("still there?")
    assert await chat.command(Command("model", "openai/gpt-other"))
    assert chat.runtime is not runtime
    await chat.turn("and now?")
    session_id = chat.session_id
    await chat.close()

    text = shown(buffer)
    assert "[RUNTIME_CONSTRUCTION_FAILED]" in text
    assert "no such deployment" in text
    assert "model: openai/gpt-other" in text
    assert [m.content for m in second.requests[0].messages if m.role == "user"] == [
        "hello",
        "still there?",
        "and now?",
    ]
    lines = (tmp_path / "data" / "sessions" / f"{session_id}.jsonl").read_text().splitlines()
    assert len(lines) == 1 + 6  # header, three exchanges: the session stayed writable


async def test_new_replaces_the_runtime_and_extensions_see_every_runtime(
    tmp_path: Path, config: CliConfig
) -> None:
    from tether.agent.extensions import ExtensionDefinition
    from tether.protocol import RunFinishedEvent
    from tether.tools import tool

    seen: list[str] = []
    disposed: list[int] = []

    @tool
    def shout(text: str) -> str:
        """Upper-case a text.

        Args:
            text: The text.
        """
        return text.upper()

    class Loud:
        def activate(self, context: ExtensionContext) -> None:
            context.register_tool(shout)
            context.on_agent_event(self.on_event)
            context.on_dispose(lambda: disposed.append(len(seen)))

        def on_event(self, event: AgentEvent) -> None:
            if isinstance(event, RunFinishedEvent):
                seen.append(event.payload.result.status)

    call = ScriptedToolCall(name="shout", arguments=JsonObject({"text": "hi"}), id="s1")
    model = ScriptedModel(
        [ScriptedReply(tool_calls=(call,)), ScriptedReply(text=("HI",)), ScriptedReply(text=("b",))]
    )
    chat, _ = make_chat(
        tmp_path, config, model, extensions=(ExtensionDefinition(id="loud", create=Loud),)
    )
    await chat.turn("shout hi")
    first_id = chat.session_id
    assert await chat.new_session()
    assert disposed == [1]  # the old runtime's extensions were disposed after the swap
    await chat.turn("again")
    second_id = chat.session_id
    await chat.close()

    assert second_id not in (None, first_id)
    assert seen == ["completed", "completed"]
    assert disposed == [1, 2]
    result = model.requests[1].messages[-1]
    assert result.role == "toolResult"
    assert result.content == "HI"
    sessions = sorted(p.name for p in (tmp_path / "data" / "sessions").glob("*.jsonl"))
    assert sessions == sorted([f"{first_id}.jsonl", f"{second_id}.jsonl"])


class Closable(ScriptedModel):
    """A scripted model with an HTTP client's ``aclose``."""

    closed = False

    async def aclose(self) -> None:
        self.closed = True


async def test_a_replacement_whose_old_runtime_fails_to_close_is_still_adopted(
    tmp_path: Path, config: CliConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    disposals: list[int] = []

    class Sticky:
        def activate(self, context: ExtensionContext) -> None:
            context.on_dispose(self.stop)

        def stop(self) -> None:
            disposals.append(1)
            if len(disposals) == 1:
                raise OSError("the first runtime's extension cannot stop")

    models = {
        "openai/gpt-test": Closable([ScriptedReply(text=("one",))]),
        "openai/gpt-other": Closable([ScriptedReply(text=("two",))]),
    }
    chat, buffer = make_chat(
        tmp_path,
        config,
        lambda choice: models[choice.spec],
        extensions=(ExtensionDefinition(id="sticky", create=Sticky),),
    )
    await chat.turn("hello")
    assert await chat.command(Command("model", "openai/gpt-other"))
    second = await chat.turn("again")
    await chat.close()

    assert second is not None
    assert second.status == "completed"
    assert chat.choice.spec == "openai/gpt-other"
    assert models["openai/gpt-test"].closed  # the replaced runtime's model
    assert models["openai/gpt-other"].closed  # closed by close(), not by the switch
    assert len(models["openai/gpt-other"].requests) == 1
    text = shown(buffer)
    assert "(the previous runtime did not close cleanly) [RUNTIME_REPLACEMENT_CLEANUP_FAILED]" in (
        text
    )
    assert "model: openai/gpt-other" in text
    assert disposals == [1, 1]


async def test_a_poisoned_runtime_is_reported_once_and_closes_without_raising(
    tmp_path: Path, config: CliConfig
) -> None:
    class Broken:
        def activate(self, context: ExtensionContext) -> None:
            context.on_agent_event(self.on_event)

        def on_event(self, event: AgentEvent) -> None:
            raise ValueError("hook is broken")

    model = ScriptedModel([ScriptedReply(text=("one",)), ScriptedReply(text=("two",))])
    chat, buffer = make_chat(
        tmp_path, config, model, extensions=(ExtensionDefinition(id="broken", create=Broken),)
    )
    await chat.turn("hello")
    await chat.turn("again")
    await chat.close()

    text = shown(buffer)
    assert text.count("(the session is no longer kept in step) [RUNTIME_EVENT_FAILED]") == 1
    assert "broken[0]: hook is broken" in text
    assert "(the session did not close cleanly) [RUNTIME_DISPOSAL_FAILED]" in text


async def test_a_runtime_that_cannot_be_built_fails_the_turn_not_the_chat(
    tmp_path: Path, config: CliConfig
) -> None:
    class Refuses:
        def activate(self, context: ExtensionContext) -> None:
            raise RuntimeError("no licence")

    model = ScriptedModel([ScriptedReply(text=("one",))])
    chat, buffer = make_chat(
        tmp_path, config, model, extensions=(ExtensionDefinition(id="refuses", create=Refuses),)
    )
    assert await chat.turn("hello") is None
    await chat.close()

    text = shown(buffer)
    assert "[RUNTIME_CONSTRUCTION_FAILED]" in text
    assert 'Extension "refuses" activation failed: no licence' in text
    assert chat.session_id is None
    assert list((tmp_path / "data" / "sessions").glob("*.jsonl")) == []  # rolled back
    assert model.requests == ()


async def test_chat_tools_never_see_the_key_unless_passed_through(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    command = JsonObject({"command": 'echo "[${OPENAI_API_KEY-}]"'})
    bash = ScriptedReply(tool_calls=(ScriptedToolCall(name="bash", arguments=command, id="c1"),))
    for passed in (False, True):
        (tmp_path / str(passed)).mkdir()
        path = tmp_path / f"config-{passed}.toml"
        path.write_text('[tools]\npass_env = ["OPENAI_API_KEY"]\n' if passed else "")
        config = load_config(path)
        model = ScriptedModel([bash, ScriptedReply(text=("ok",))])
        chat, _ = make_chat(tmp_path / str(passed), config, model, Answers("y"))
        await chat.turn("show the key")
        await chat.close()
        result = model.requests[1].messages[-1]
        assert isinstance(result, ToolResultMessage)
        shown = f"[{FAKE_KEY}]" if passed else "[]"
        assert f"--- stdout ---\n{shown}\n" in result.content


# --- stuck extensions: Ctrl-C and the bound (issue 25, item 2) -------------------------------

T = TypeVar("T")
GUARD = 15.0
"""The most a wait below lasts before the test fails."""


class Gate:
    """An extension whose ``activate`` (or ``dispose``) blocks while its workspace holds a
    marker file (``hang-activate`` / ``hang-dispose``), after setting ``entered``."""

    def __init__(self) -> None:
        self.entered = asyncio.Event()
        self.release = asyncio.Event()
        self.log: list[str] = []

    def definition(self) -> ExtensionDefinition:
        gate = self

        class Instance:
            root = Path()

            async def activate(self, context: ExtensionContext) -> None:
                self.root = Path(context.resources.roots[0].directory)
                gate.log.append(f"activate {self.root.name}")
                if (self.root / "hang-activate").exists():
                    gate.entered.set()
                    await gate.release.wait()

            async def dispose(self) -> None:
                gate.log.append(f"dispose {self.root.name}")
                if (self.root / "hang-dispose").exists():
                    gate.entered.set()
                    await gate.release.wait()

        return ExtensionDefinition(id="gate", create=Instance)


async def bounded(awaitable: Awaitable[T]) -> T:
    async with asyncio.timeout(GUARD):
        return await awaitable


async def test_ctrl_c_cancels_a_runtime_being_built_and_the_chat_goes_on(
    tmp_path: Path, config: CliConfig
) -> None:
    gate = Gate()
    model = ScriptedModel([ScriptedReply(text=("answered",))])
    chat, buffer = make_chat(tmp_path, config, model, extensions=(gate.definition(),))
    marker = tmp_path / "project" / "hang-activate"
    marker.write_text("", encoding="utf-8")
    turn = asyncio.ensure_future(chat.turn("hello"))
    await bounded(gate.entered.wait())
    assert chat.interrupt() == "operation"
    assert await bounded(turn) is None
    assert chat.runtime is None
    marker.unlink()
    result = await bounded(chat.turn("hello again"))
    assert result is not None
    assert result.status == "completed"
    await bounded(chat.close())
    text = shown(buffer)
    assert "(cancelled: the turn was not sent)" in text
    assert "answered" in text
    assert gate.log == [
        "activate project",
        "dispose project",
        "activate project",
        "dispose project",
    ]
    assert [m.content for m in model.requests[0].messages if m.role == "user"] == ["hello again"]


async def test_ctrl_c_cancels_a_cd_whose_extension_hangs_and_the_runtime_stays(
    tmp_path: Path, config: CliConfig
) -> None:
    gate = Gate()
    other = tmp_path / "other"
    other.mkdir()
    (other / "hang-activate").write_text("", encoding="utf-8")
    model = ScriptedModel([ScriptedReply(text=("one",)), ScriptedReply(text=("two",))])
    chat, buffer = make_chat(tmp_path, config, model, extensions=(gate.definition(),))
    await bounded(chat.turn("hello"))
    runtime = chat.runtime
    moving = asyncio.ensure_future(chat.command(Command("cd", str(other))))
    await bounded(gate.entered.wait())
    assert chat.interrupt() == "operation"
    assert await bounded(moving) is True
    assert chat.runtime is runtime  # the old runtime is current and usable
    assert chat.cwd == tmp_path / "project"
    result = await bounded(chat.turn("still here?"))
    assert result is not None
    assert result.status == "completed"
    await bounded(chat.close())
    assert "(cancelled: the current runtime stays)" in shown(buffer)
    assert gate.log == ["activate project", "activate other", "dispose other", "dispose project"]


async def test_an_activation_over_the_configured_bound_fails_naming_the_extension(
    tmp_path: Path, config: CliConfig
) -> None:
    import dataclasses

    gate = Gate()
    (tmp_path / "project").mkdir(exist_ok=True)
    (tmp_path / "project" / "hang-activate").write_text("", encoding="utf-8")
    quick = dataclasses.replace(config, extension_timeout=0.05)
    model = ScriptedModel([ScriptedReply(text=("never",))])
    chat, buffer = make_chat(tmp_path, quick, model, extensions=(gate.definition(),))
    assert await bounded(chat.turn("hello")) is None
    await bounded(chat.close())
    text = shown(buffer)
    assert "[RUNTIME_CONSTRUCTION_FAILED]" in text
    assert text.count('Extension "gate" activation did not finish within 0.05 s') == 1
    assert model.requests == ()


async def test_ctrl_c_while_closing_stops_waiting_for_a_stuck_dispose(
    tmp_path: Path, config: CliConfig
) -> None:
    gate = Gate()
    model = ScriptedModel([ScriptedReply(text=("one",))])
    chat, buffer = make_chat(tmp_path, config, model, extensions=(gate.definition(),))
    await bounded(chat.turn("hello"))
    (tmp_path / "project" / "hang-dispose").write_text("", encoding="utf-8")
    manager = chat.coding._manager  # pyright: ignore[reportPrivateUsage]
    assert manager is not None
    closing = asyncio.ensure_future(chat.close())
    await bounded(gate.entered.wait())
    assert chat.interrupt() == "operation"
    assert await bounded(closing) is False
    assert "(not waiting for the runtime to close)" in shown(buffer)
    gate.release.set()  # let the disposal, still going on, end with the test
    await bounded(manager.dispose())
    assert gate.log[-1] == "dispose project"


async def test_a_tree_move_survives_a_model_switch(
    tmp_path: Path, config: CliConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``/tree ID`` then ``/model ...``: the next prompt continues from the moved-to entry
    (the rebuild used to reload the session from disk and forget the move; issue 27)."""
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    first = ScriptedModel([ScriptedReply(text=("one",)), ScriptedReply(text=("two",))])
    second = ScriptedModel([ScriptedReply(text=("branched",))])
    models = {"openai/gpt-test": first, "openai/gpt-other": second}
    chat, buffer = make_chat(tmp_path, config, lambda choice: models[choice.spec])
    await chat.turn("first")
    await chat.turn("second")
    tree = chat.tree
    assert tree is not None
    first_answer = tree.active_entries[1].id
    await chat.command(Command("tree", first_answer[:8]))
    await chat.command(Command("model", "openai/gpt-other"))
    assert "model: openai/gpt-other" in shown(buffer)
    await chat.turn("branch")
    users = [m.content for m in second.requests[0].messages if m.role == "user"]
    assert users == ["first", "branch"]
    await chat.close()


# --- completion -------------------------------------------------------------------------------


def test_tab_completes_commands_model_names_and_paths(tmp_path: Path) -> None:
    from tether.tools.coding.workspace import Workspace

    (tmp_path / "src").mkdir()
    (tmp_path / "setup.py").write_text("", encoding="utf-8")
    models = ["openai/gpt-test", "openai/", "anthropic/"]
    space = Workspace(tmp_path)
    assert [c.text for c in chat_completions("/us", workspace=space, models=models)] == ["/usage"]
    found = chat_completions("/model op", workspace=space, models=models)
    assert [(c.text, c.start_position) for c in found] == [("openai/gpt-test", -2), ("openai/", -2)]
    assert chat_completions("/model a b", workspace=space, models=models) == []
    paths = chat_completions("look at @s", workspace=space, models=models)
    assert [c.text for c in paths] == ["@src/", "@setup.py"]
    assert chat_completions("look at @s", workspace=None, models=models) == []


# --- /export and /sessions' directories -------------------------------------------------------


async def test_export_writes_the_session_as_html(tmp_path: Path, config: CliConfig) -> None:
    model = ScriptedModel([ScriptedReply(text=("The <answer> & more.",))])
    chat, buffer = make_chat(tmp_path, config, model, Answers())
    await chat.command(Command("export"))
    assert "nothing to export yet" in shown(buffer)
    await chat.turn("a question")
    await chat.command(Command("export", "out/page.html"))
    assert "could not write" in shown(buffer)  # no such directory: said, not raised
    for failures, name in enumerate(("page\0.html", "~\0/page.html"), 2):
        await chat.command(Command("export", name))  # a NUL: os.open, pwd raised ValueError
        assert shown(buffer).count("could not write") == failures
    await chat.command(Command("export", "page.html"))
    page = (tmp_path / "project" / "page.html").read_text(encoding="utf-8")
    assert "a question" in page
    assert "The &lt;answer&gt; &amp; more." in page
    assert f"exported to {tmp_path / 'project' / 'page.html'}" in shown(buffer)
    ident = chat.session_id
    assert ident is not None
    await chat.command(Command("export"))
    assert (tmp_path / "project" / f"tether-{ident[:8]}.html").is_file()
    await chat.close()


async def test_sessions_show_the_directory_each_was_started_in(
    tmp_path: Path, config: CliConfig
) -> None:
    model = ScriptedModel([ScriptedReply(text=("one",)), ScriptedReply(text=("two",))])
    chat, buffer = make_chat(tmp_path, config, model, Answers())
    await chat.turn("first")
    first = chat.session_id
    other = tmp_path / "elsewhere"
    other.mkdir()
    await chat.command(Command("cd", str(other)))
    await chat.command(Command("new"))
    await chat.turn("second")
    await chat.command(Command("sessions"))
    await chat.close()
    rows = shown(buffer).splitlines()
    assert first is not None
    (row,) = [row for row in rows if row.startswith(f"  {first[:8]}")]
    assert str(tmp_path / "project") in row
    (current,) = [row for row in rows if row.startswith("* ")]
    assert str(other) in current


async def test_tree_all_shows_every_branch(tmp_path: Path, config: CliConfig) -> None:
    model = ScriptedModel(
        [ScriptedReply(text=("one",)), ScriptedReply(text=("two",)), ScriptedReply(text=("b",))]
    )
    chat, buffer = make_chat(tmp_path, config, model, Answers())
    await chat.turn("first")
    await chat.turn("second")
    tree = chat.tree
    assert tree is not None
    fork = tree.active_entries[1].id  # the answer "one"
    await chat.command(Command("tree", fork[:8]))
    await chat.turn("other way")
    before = len(shown(buffer))
    await chat.command(Command("tree", "all"))
    await chat.close()
    rows = shown(buffer)[before:].splitlines()
    parsed = [re.fullmatch(r"([├└│─ *]*)\S{8}  (.*)", row) for row in rows]
    marks = [(match.group(1), match.group(2)) for match in parsed if match is not None]
    assert marks == [
        ("* ", "you: first"),
        ("* ", "assistant: one"),
        ("├─   ", "you: second"),  # the old branch
        ("│    ", "assistant: two"),
        ("└─ * ", "you: other way"),  # the active one
        ("   * ", "assistant: b"),
    ]


async def test_model_without_an_argument_lists_models_to_pick_by_number(
    tmp_path: Path, config: CliConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    model = ScriptedModel([ScriptedReply(text=("one",))])
    chat, buffer = make_chat(tmp_path, config, model)
    await chat.command(Command("model"))
    assert "*  1  openai/gpt-test" in shown(buffer)
    assert "/model N switches to one of these" in shown(buffer)
    await chat.command(Command("model", "7"))
    assert "no model 7 (/model lists them)" in shown(buffer)
    await chat.command(Command("model", "1" * 5000))  # int() refuses this many digits
    assert f"no model {'1' * 5000} (/model lists them)" in shown(buffer)
    before = shown(buffer).count("CLI_")
    await chat.command(Command("model", "\u00b2"))  # a digit to str.isdigit(), not to int()
    assert shown(buffer).count("CLI_") == before + 1  # a model spec, and not one
    await chat.command(Command("model", "1"))
    assert shown(buffer).endswith("model: openai/gpt-test\n")
    await chat.close()


async def test_the_session_pick_asks_for_a_number_until_one_is_listed(
    tmp_path: Path, config: CliConfig
) -> None:
    model = ScriptedModel([ScriptedReply(text=("one",))])
    # A digit to str.isdigit() but not to int(), too many digits for int(), out of range.
    answers = Answers("\u00b2", "1" * 5000, "2", "1")
    chat, buffer = make_chat(tmp_path, config, model, answers)
    await chat.turn("first")
    ident = chat.session_id
    assert ident is not None
    assert await chat.pick_session() == ident  # as `tether chat -r` off a terminal asks
    assert len(answers.asked) == 4
    assert shown(buffer).count("no session ") == 3
    await chat.close()


async def test_a_number_past_the_list_is_refused_even_when_an_id_starts_with_it(
    tmp_path: Path, config: CliConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One session listed, its ID starting with "2": "2" is the number 2, not that ID's prefix.
    monkeypatch.setattr(uuid, "uuid4", lambda: uuid.UUID("2" * 32))
    model = ScriptedModel([ScriptedReply(text=("one",))])
    answers = Answers("2", "1")
    chat, buffer = make_chat(tmp_path, config, model, answers)
    await chat.turn("first")
    ident = chat.session_id
    assert ident is not None
    assert ident.startswith("2")
    assert await chat.pick_session() == ident
    assert len(answers.asked) == 2
    assert "no session '2': a number from 1 to 1, or an ID" in shown(buffer)
    await chat.close()


async def test_a_prefix_of_two_ids_asks_again_and_a_unique_one_picks_the_whole_id(
    tmp_path: Path, config: CliConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_uuid4 = uuid.uuid4
    monkeypatch.setattr(uuid, "uuid4", lambda: uuid.UUID("ab" + real_uuid4().hex[2:]))
    model = ScriptedModel([ScriptedReply(text=("one",)), ScriptedReply(text=("two",))])
    answers = Answers("ab")
    chat, buffer = make_chat(tmp_path, config, model, answers)
    await chat.turn("first")
    first = chat.session_id
    await chat.command(Command("new"))
    await chat.turn("second")
    second = chat.session_id
    assert first is not None
    assert second is not None
    assert second != first
    unique = next(first[:n] for n in range(3, 37) if not second.startswith(first[:n]))
    answers.answers.append(unique)
    assert await chat.pick_session() == first
    assert len(answers.asked) == 2
    assert "'ab' names 2 sessions: give more of the ID" in shown(buffer)
    await chat.close()


def text_event(delta: str) -> ModelChunkEvent:
    chunk = TextDeltaChunk(request_id="request-1", delta=delta)
    return ModelChunkEvent(sequence=1, payload=ModelChunkPayload(chunk=chunk))


def test_the_unfinished_block_is_redrawn_at_a_frame_rate_not_per_delta(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = [100.0]
    monkeypatch.setattr(chat_view_module.time, "monotonic", lambda: clock[0])
    writes: list[bytes] = []

    class Counting(io.BytesIO):
        def write(self, data: Buffer, /) -> int:
            writes.append(bytes(data))
            return super().write(data)

    buffer = Counting()
    out = Output.for_people(io.TextIOWrapper(buffer, encoding="utf-8"))
    chat_view = ChatView(out, color=False, live=True, size=lambda: (80, 24))
    text = " ".join(f"word{n}" for n in range(400))  # one paragraph: never committed early
    for start in range(0, len(text), 3):
        chat_view.show(text_event(text[start : start + 3]))
    assert len(writes) == 1  # the first delta drew; the clock did not move since
    clock[0] += 0.1
    chat_view.show(text_event(" end"))
    assert len(writes) == 2
    chat_view.end_stream()
    assert " ".join(shown(buffer).split()).endswith("word399 end")


def test_live_tool_output_and_retries_are_shown() -> None:
    """Issue 28: a command's output appears while it runs (a bounded view, before its
    result), and a retry says how long it waits and why."""
    from tether.cli.chat_view import PROGRESS_MAX_LINES
    from tether.protocol import (
        ModelRetryEvent,
        ModelRetryPayload,
        ToolProgressEvent,
        ToolProgressPayload,
    )

    chat_view, buffer = view()
    retry = ModelRetryPayload(
        request_id="r1", attempt=1, delay_ms=2000, code="PROVIDER_OVERLOADED", reason="HTTP 503"
    )
    chat_view.show(ModelRetryEvent(sequence=1, payload=retry))
    assert shown(buffer).endswith("retrying in 2 s (HTTP 503, attempt 1)\n")

    def progress(text: str, sequence: int) -> None:
        payload = ToolProgressPayload(tool_call_id="c1", tool_name="bash", text=text)
        chat_view.show(ToolProgressEvent(sequence=sequence, payload=payload))

    progress("first\nsec", 2)
    assert shown(buffer).endswith("    │ first\n")  # a line is shown once it is complete
    progress("ond\n", 3)
    assert shown(buffer).endswith("    │ first\n    │ second\n")
    progress("".join(f"n{i}\n" for i in range(100)), 4)
    rows = [row for row in shown(buffer).splitlines() if row.startswith("    │")]
    assert len(rows) == PROGRESS_MAX_LINES + 1  # the cap, then one note
    assert rows[-1] == "    │ … (more output: the result follows)"
    done = ToolResultMessage(tool_call_id="c1", tool_name="bash", content="exit code 0")
    for text in chat_view.tool_result_lines(done):
        chat_view.line(text)
    progress("again\n", 5)  # another call of the same id never happens; a new call starts over
    assert shown(buffer).endswith("    │ again\n")


def test_an_invalid_call_shows_what_the_model_sent() -> None:
    """Issue 27: a call whose arguments were not JSON showed as ``→ write_file({})``; it shows
    the text the model sent, marked, before its TOOL_ARGUMENTS_INVALID result."""
    chat_view, _ = view()
    broken = ToolCall(
        id="c1", name="write_file", arguments=JsonObject({}), raw_arguments='{"path": "a.txt",'
    )
    assert chat_view.tool_call_line(broken) == ('→ write_file(not JSON: {"path": "a.txt",)')


def test_tether_run_shows_an_invalid_call_as_sent() -> None:
    from tether.cli.render import HumanView
    from tether.protocol import ToolStartedEvent, ToolStartedPayload

    buffer = io.BytesIO()
    human = HumanView(Output.for_people(io.TextIOWrapper(buffer, encoding="utf-8")))
    broken = ToolCall(id="c1", name="bash", arguments=JsonObject({}), raw_arguments='{"cmd": ')
    human.show(ToolStartedEvent(sequence=1, payload=ToolStartedPayload(tool_call=broken)))
    assert shown(buffer) == '→ bash(not JSON: "{\\"cmd\\": ")  [c1]\n'
