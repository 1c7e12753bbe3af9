"""An Agent recorded into a session file and resumed from it (``tether.agent.persistence``),
with real files in temporary directories."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from tether import (
    AssistantMessage,
    Message,
    ScriptedModel,
    TextBlock,
    ToolCall,
    ToolRegistry,
    UserMessage,
    text_reply,
    tool,
    tool_call_reply,
)
from tether._base.strings import surrogate_index
from tether.abort import AbortSignal
from tether.agent import Agent, AgentInvalidMessageError
from tether.agent.auto_compaction import AutoCompaction
from tether.agent.compaction import ContextCompactionRecord, ContextSummary, ContextSummaryRequest
from tether.agent.persistence import SessionRecorder, resume_agent
from tether.agent.session import CompactionEntry, SessionStore, SessionTree
from tether.jsonvalue import JsonObject
from tether.models.scripted import ScriptedReply, ScriptedToolCall
from tether.protocol.transcript import validate_transcript

LIMIT = 30.0


@tool
def add(left: int, right: int) -> int:
    """Add two integers."""
    return left + right


def read_lines(path: str) -> list[bytes]:
    return Path(path).read_bytes().splitlines()


def append_behind_the_stores_back(path: str) -> None:
    with open(path, "ab") as handle:
        handle.write(b"\n")


async def bounded(awaitable: Any) -> Any:
    async with asyncio.timeout(LIMIT):
        return await awaitable


async def new_tree(tmp_path: Path, name: str = "session.jsonl") -> SessionTree:
    return SessionTree(await SessionStore.create(tmp_path / name))


async def reloaded(tree: SessionTree) -> SessionTree:
    """What the file holds now (a read-only snapshot: the tree's store keeps writing)."""
    return SessionTree(await SessionStore.read(tree.store.path))


async def reopened(tree: SessionTree) -> SessionTree:
    """The file as another process would resume it: this writer lets go, a new one loads."""
    await tree.store.close()
    return SessionTree(await SessionStore.load(tree.store.path))


async def test_every_message_is_recorded_as_it_enters(tmp_path: Path) -> None:
    tree = await new_tree(tmp_path)
    model = ScriptedModel(
        [tool_call_reply(("add", {"left": 2, "right": 3})), text_reply("5"), text_reply("bye")]
    )
    agent = Agent(model=model, tools=ToolRegistry([add]), recorder=SessionRecorder(tree))
    assert (await bounded(agent.run("add 2 and 3"))).status == "completed"
    assert (await bounded(agent.run("thanks"))).status == "completed"
    on_disk = await reloaded(tree)
    assert on_disk.active_messages == agent.messages
    assert [m.role for m in on_disk.active_messages] == [
        "user",
        "assistant",
        "toolResult",
        "assistant",
        "user",
        "assistant",
    ]
    lines = read_lines(tree.store.path)
    assert len(lines) == 1 + 6  # the header and one entry per message
    assert json.loads(lines[1])["message"]["content"] == "add 2 and 3"


async def test_a_cancelled_turn_records_only_the_prompt(tmp_path: Path) -> None:
    tree = await new_tree(tmp_path)
    entered = asyncio.Event()

    @tool
    async def wait() -> str:
        """Wait forever."""
        entered.set()
        await asyncio.Event().wait()
        return "never"

    model = ScriptedModel([tool_call_reply(("wait", {}))])
    agent = Agent(model=model, tools=ToolRegistry([wait]), recorder=SessionRecorder(tree))
    stream = agent.prompt("go")
    await bounded(entered.wait())
    agent.cancel("stop")
    assert (await bounded(stream.result)).status == "cancelled"
    on_disk = await reloaded(tree)
    assert [m.content for m in on_disk.active_messages if m.role == "user"] == ["go"]
    assert on_disk.active_messages == agent.messages


async def test_a_recorder_failure_fails_the_run_with_its_own_code(tmp_path: Path) -> None:
    tree = await new_tree(tmp_path)
    agent = Agent(model=ScriptedModel([text_reply("a")]), recorder=SessionRecorder(tree))
    append_behind_the_stores_back(tree.store.path)
    result = await bounded(agent.run("hi"))
    assert result.status == "failed"
    assert result.error.code == "AGENT_RECORDING_FAILED"
    assert "changed" in result.error.message.lower()
    assert not agent.is_running


@pytest.mark.parametrize(
    "text", ["hi \ud800", "\udfff", "caf\u00e9 \udcff", "\ud83d\ude00"], ids=repr
)
async def test_user_text_holding_a_surrogate_is_refused_when_it_enters(
    tmp_path: Path, text: str
) -> None:
    """Regression: a user message holding a surrogate code point (a lone ``\\ud800``, or a
    pair written as two code points: UTF-8 encodes neither) was accepted; its run then failed
    with ``AGENT_RECORDING_FAILED`` ("Session message contains a lone surrogate"), and so did
    every later run of that Agent. Now ``prompt``, ``run``, ``steer`` and ``follow_up`` refuse
    it at once, typed, and nothing changes. The reason says what is true: a session would
    record it (escaped), but it is no Unicode text and a provider would be sent U+FFFD; the
    repair the message names makes text the Agent takes."""
    repair = "text.encode('utf-16', 'surrogatepass').decode('utf-16', 'replace')"
    tree = await new_tree(tmp_path)
    agent = Agent(model=ScriptedModel([text_reply("a")]), recorder=SessionRecorder(tree))
    before = read_lines(tree.store.path)
    attempts: list[Any] = [
        lambda: agent.prompt(text),
        lambda: agent.steer(text),
        lambda: agent.follow_up(text),
    ]
    for attempt in attempts:
        with pytest.raises(AgentInvalidMessageError) as refused:
            attempt()
        assert refused.value.code == "AGENT_INVALID_MESSAGE"
        assert "surrogate" in refused.value.message
        assert "session" not in refused.value.message  # a session records such text now
        assert "U+FFFD" in refused.value.message
        assert repair in refused.value.message
        assert isinstance(refused.value, ValueError)
    with pytest.raises(AgentInvalidMessageError):
        await bounded(agent.run(text))
    assert agent.messages == ()
    assert read_lines(tree.store.path) == before
    repaired = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    assert surrogate_index(repaired) is None
    result = await bounded(agent.run(repaired))  # what the message says to do is taken
    assert result.status == "completed"
    assert agent.messages[0].id == "agent-user-000001"  # a refusal takes no generated ID
    assert (await reloaded(tree)).active_messages == agent.messages


@pytest.mark.parametrize("text", ["a\ud800", "\udfff b", "caf\u00e9 \ud83d\ude00"], ids=repr)
async def test_a_model_reply_holding_a_surrogate_is_recorded_and_reloads_as_it_was(
    tmp_path: Path, text: str
) -> None:
    """Regression: a model reply holding a surrogate code point (a provider's JSON
    ``"\\ud800"`` escape decodes to one) failed its run with ``AGENT_RECORDING_FAILED``, and
    every later run of that Agent failed too. The protocol accepted the text, so the session
    records it: the line is written with ``\\u`` escapes and reloads to the same value."""
    tree = await new_tree(tmp_path)
    model = ScriptedModel([text_reply(text), text_reply("next")])
    agent = Agent(model=model, recorder=SessionRecorder(tree))
    first = await bounded(agent.run("hi"))
    assert first.status == "completed"
    assert agent.messages[-1] == AssistantMessage(
        id=agent.messages[-1].id, content=(TextBlock(text=text),)
    )
    second = await bounded(agent.run("again"))
    assert second.status == "completed"
    assert len(agent.messages) == 4
    for line in read_lines(tree.store.path):
        json.loads(line.decode("utf-8"))  # every line is UTF-8 JSON
    # A pair written as two code points reloads as its one character (the same UTF-16 text).
    joined = text.encode("utf-16", "surrogatepass").decode("utf-16", "surrogatepass")
    expected = list(agent.messages)
    expected[1] = AssistantMessage(id=expected[1].id, content=(TextBlock(text=joined),))
    assert list((await reloaded(tree)).active_messages) == expected
    assert list((await reopened(tree)).active_messages) == expected


async def test_an_agent_without_a_session_refuses_the_same_user_text() -> None:
    agent = Agent(model=ScriptedModel([text_reply("a")]))
    with pytest.raises(AgentInvalidMessageError):
        agent.prompt("x\ud800")
    assert (await bounded(agent.run("x \u00e9 \U0001f600"))).status == "completed"


async def test_two_hundred_compacting_turns_reload_to_the_same_context(tmp_path: Path) -> None:
    def summarize(request: ContextSummaryRequest, signal: AbortSignal) -> str:
        previous = request.previous_summary.content if request.previous_summary else ""
        return f"{len(request.messages)} more messages; {previous[:60]}"

    tree = await new_tree(tmp_path)
    replies = [text_reply(f"answer {n} " + "x" * 60, response_id=f"r{n}") for n in range(201)]
    model = ScriptedModel(replies)
    policy = AutoCompaction(context_window=800, reserve_tokens=200, summarizer=summarize)
    agent = Agent(model=model, compaction=policy, recorder=SessionRecorder(tree))
    for n in range(200):
        assert (await bounded(agent.run(f"question {n}"))).status == "completed"
    assert len(agent.compactions) >= 5
    compactions = [e for e in tree.entries if type(e) is CompactionEntry]
    assert len(compactions) == len(agent.compactions)

    resumed = await resume_agent(await reopened(tree), model=model, compaction=policy)
    assert resumed.messages == agent.messages
    assert resumed.summary == agent.summary
    assert (await bounded(resumed.run("one more"))).status == "completed"
    assert model.requests[-1].messages[:-1] == agent.messages


async def test_resuming_closes_calls_the_process_never_answered(tmp_path: Path) -> None:
    tree = await new_tree(tmp_path)
    call = ToolCall(id="c1", name="add", arguments={"left": 1, "right": 1})  # pyright: ignore[reportArgumentType]
    await tree.append(UserMessage(id="u1", content="add"))
    await tree.append(AssistantMessage(id="a1", content=(call,)))
    agent = await resume_agent(
        await reopened(tree), model=ScriptedModel([text_reply("2")]), tools=ToolRegistry([add])
    )
    assert [m.role for m in agent.messages] == ["user", "assistant", "toolResult"]
    closing = agent.messages[2]
    assert closing.role == "toolResult"
    assert closing.is_error
    assert json.loads(closing.content)["error"]["code"] == "TOOL_CALL_NOT_RUN"
    assert validate_transcript(agent.messages) == ()
    on_disk = await reloaded(tree)
    assert on_disk.active_messages == agent.messages  # the closing result was recorded first
    assert (await bounded(agent.run("again"))).status == "completed"


async def test_resuming_an_earlier_entry_branches(tmp_path: Path) -> None:
    tree = await new_tree(tmp_path)
    agent = Agent(
        model=ScriptedModel([text_reply("one"), text_reply("two")]), recorder=SessionRecorder(tree)
    )
    await bounded(agent.run("first"))
    first_answer = tree.active_entries[1].id
    await bounded(agent.run("second"))
    await tree.move_to(first_answer)
    branch = await resume_agent(tree, model=ScriptedModel([text_reply("other")]))
    assert [m.content for m in branch.messages if m.role == "user"] == ["first"]
    await bounded(branch.run("instead"))
    on_disk = await reloaded(tree)
    assert len(on_disk.entries) == 6  # both branches stay on disk
    assert on_disk.active_messages == branch.messages


async def test_resume_takes_messages_from_the_session_only(tmp_path: Path) -> None:
    tree = await new_tree(tmp_path)
    with pytest.raises(TypeError, match="takes messages from the session"):
        await resume_agent(tree, model=ScriptedModel(), messages=[])
    with pytest.raises(TypeError, match="SessionRecorder needs a SessionTree"):
        SessionRecorder(tree.store)  # pyright: ignore[reportArgumentType]


async def test_a_length_stop_with_calls_is_closed_and_recorded(tmp_path: Path) -> None:
    tree = await new_tree(tmp_path)
    cut = ScriptedReply(
        tool_calls=(ScriptedToolCall(name="add", arguments=JsonObject({"left": 1})),),
        stop_reason="length",
    )
    agent = Agent(model=ScriptedModel([cut]), recorder=SessionRecorder(tree))
    result = await bounded(agent.run("go"))
    assert result.status == "failed"
    on_disk = await reloaded(tree)
    assert on_disk.active_messages == agent.messages
    assert [m.role for m in on_disk.active_messages] == ["user", "assistant", "toolResult"]
    assert validate_transcript(on_disk.active_messages) == ()


async def test_messages_a_failed_recording_missed_are_written_first_next_time(
    tmp_path: Path,
) -> None:
    tree = await new_tree(tmp_path)

    class Flaky(SessionRecorder):
        failures = 1

        async def record_messages(self, messages: tuple[Message, ...]) -> None:
            if len(messages) > 1 and self.failures:
                self.failures -= 1
                await super().record_messages(messages[:1])  # one written, then a failure
                raise OSError("disk full")
            await super().record_messages(messages)

    model = ScriptedModel([tool_call_reply(("add", {"left": 1, "right": 2})), text_reply("3")])
    model.append_response(text_reply("later"))
    agent = Agent(model=model, tools=ToolRegistry([add]), recorder=Flaky(tree))
    first = await bounded(agent.run("sum"))
    assert first.status == "failed"
    assert first.error.code == "AGENT_RECORDING_FAILED"
    assert "disk full" in first.error.message
    second = await bounded(agent.run("again"))
    assert second.status == "completed"
    on_disk = await reloaded(tree)
    assert on_disk.active_messages == agent.messages  # in order, nothing twice


def same_context(agent: Agent, tree: SessionTree) -> bool:
    """Whether the session's active context is exactly what the Agent's model sees."""
    context = tree.active_context()
    messages = agent.messages[1:] if agent.summary is not None else agent.messages
    summary = None if agent.summary is None else (agent.summary.id, agent.summary.content)
    recorded = None if context.summary is None else (context.summary.id, context.summary.content)
    return messages == context.messages and summary == recorded


async def test_a_compaction_the_session_could_not_record_is_not_adopted(tmp_path: Path) -> None:
    tree = await new_tree(tmp_path)

    class Flaky(SessionRecorder):
        fail = True

        async def record_compaction(
            self,
            summary: ContextSummary,
            kept: tuple[Message, ...],
            record: ContextCompactionRecord,
        ) -> None:
            if self.fail:
                self.fail = False
                raise OSError("disk full")
            await super().record_compaction(summary, kept, record)

    def summarize(request: ContextSummaryRequest, signal: AbortSignal) -> str:
        return f"summary of {len(request.messages)}"

    model = ScriptedModel([text_reply("a" * 200, response_id=f"r{n}") for n in range(10)])
    policy = AutoCompaction(context_window=800, reserve_tokens=200, summarizer=summarize)
    agent = Agent(model=model, compaction=policy, recorder=Flaky(tree))
    statuses = [(await bounded(agent.run(f"q{n} " + "x" * 200))).status for n in range(7)]
    assert "failed" in statuses
    assert agent.compactions  # a later compaction was recorded and adopted
    assert same_context(agent, await reloaded(tree))


async def test_a_resumed_session_records_new_messages_even_with_old_ids(tmp_path: Path) -> None:
    tree = await new_tree(tmp_path)
    policy = AutoCompaction(
        context_window=100_000,
        keep_recent_messages=0,
        summarizer=lambda request, signal: "they said hi",
    )
    model = ScriptedModel(
        [text_reply("hello " + "z" * 400, response_id=f"resp-{n}") for n in range(4)]
    )
    agent = Agent(model=model, compaction=policy, recorder=SessionRecorder(tree))
    await bounded(agent.run("hi"))
    await bounded(agent.run("more " + "w" * 400))
    assert await bounded(agent.compact()) is not None
    resumed = await resume_agent(await reopened(tree), model=model, compaction=policy)
    assert (await bounded(resumed.run("hi"))).status == "completed"  # the same text as turn 1
    assert resumed.messages[-2].id not in ("agent-user-000001", "agent-user-000002")
    assert same_context(resumed, await reloaded(tree))


async def test_a_recorder_raising_cancelled_error_is_a_recording_failure(tmp_path: Path) -> None:
    tree = await new_tree(tmp_path)

    class Cancelling(SessionRecorder):
        async def record_messages(self, messages: tuple[Message, ...]) -> None:
            future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            future.cancel()
            await future

    agent = Agent(model=ScriptedModel([text_reply("a")]), recorder=Cancelling(tree))
    result = await bounded(agent.run("hi"))
    assert result.status == "failed"
    assert result.error.code == "AGENT_RECORDING_FAILED"
    assert not agent.is_running


async def _unanswered(tmp_path: Path) -> SessionTree:
    tree = await new_tree(tmp_path)
    call = ToolCall(id="c1", name="add", arguments={"left": 1, "right": 1})  # pyright: ignore[reportArgumentType]
    await tree.append(UserMessage(id="u1", content="add"))
    await tree.append(AssistantMessage(id="a1", content=(call,)))
    return await reopened(tree)


async def test_a_callers_recorder_holds_the_closing_results_until_it_writes(
    tmp_path: Path,
) -> None:
    tree = await _unanswered(tmp_path)
    recorder = SessionRecorder(tree)
    agent = await resume_agent(
        tree, recorder=recorder, model=ScriptedModel([text_reply("2")]), tools=ToolRegistry([add])
    )
    assert [m.role for m in agent.messages] == ["user", "assistant", "toolResult"]
    assert recorder.pending == (agent.messages[2],)
    assert len((await reloaded(tree)).entries) == 2  # nothing written yet
    await bounded(recorder.record_pending())
    assert recorder.pending == ()
    assert (await reloaded(tree)).active_messages == agent.messages
    await bounded(recorder.record_pending())  # nothing left: nothing written
    assert len((await reloaded(tree)).entries) == 3


async def test_held_results_are_written_first_by_the_next_write(tmp_path: Path) -> None:
    tree = await _unanswered(tmp_path)
    recorder = SessionRecorder(tree)
    agent = await resume_agent(
        tree, recorder=recorder, model=ScriptedModel([text_reply("2")]), tools=ToolRegistry([add])
    )
    racing = asyncio.ensure_future(recorder.record_pending())  # alongside the run
    assert (await bounded(agent.run("again"))).status == "completed"
    await bounded(racing)
    on_disk = await reloaded(tree)
    assert on_disk.active_messages == agent.messages
    assert len(on_disk.entries) == 5  # the closing result once, then the run's two messages
    assert recorder.pending == ()


async def test_held_results_are_written_before_a_compaction(tmp_path: Path) -> None:
    tree = await _unanswered(tmp_path)
    recorder = SessionRecorder(tree)
    agent = await resume_agent(tree, recorder=recorder, model=ScriptedModel())
    closing = agent.messages[2]
    summary = ContextSummary(id="s1", content="earlier")
    record = ContextCompactionRecord(
        id="k1",
        summary_id="s1",
        boundary=1,
        compacted_message_ids=("u1",),
        units_before=9,
        units_after=3,
    )
    await bounded(recorder.record_compaction(summary, (agent.messages[1], closing), record))
    entries = (await reloaded(tree)).entries
    assert [type(entry).__name__ for entry in entries] == [
        "MessageEntry",
        "MessageEntry",
        "MessageEntry",
        "CompactionEntry",
    ]
    compaction = entries[3]
    assert type(compaction) is CompactionEntry
    assert compaction.first_kept_entry_id == entries[1].id
    assert (await reloaded(tree)).active_context().messages == (agent.messages[1], closing)


async def test_resume_takes_only_a_session_recorder_of_its_tree(tmp_path: Path) -> None:
    tree = await _unanswered(tmp_path)
    other = await new_tree(tmp_path, "other.jsonl")
    with pytest.raises(TypeError, match="recorder must be a SessionRecorder over this tree"):
        await resume_agent(tree, recorder=SessionRecorder(other), model=ScriptedModel())
