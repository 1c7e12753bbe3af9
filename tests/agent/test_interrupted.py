"""An Agent that keeps interrupted turns (``interrupted_turns="keep"``): after a cancel, the
transcript holds the turn as far as it got, each unanswered call closed with
``TOOL_CALL_INTERRUPTED`` and the ``INTERRUPTED_TURN_NOTE``, so the next request tells the
model what happened; the default (``"discard"``) adopts nothing. Tools and streams block on
``asyncio.Event``\\ s the test controls; no sleeps."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable
from pathlib import Path
from typing import Any

import pytest

from tether import (
    AbortController,
    AbortSignal,
    AssistantMessage,
    Message,
    ModelChunk,
    ModelRequest,
    ModelResponse,
    ScriptedModel,
    TextBlock,
    ToolCall,
    ToolRegistry,
    ToolResultMessage,
    UserMessage,
    run_agent_loop,
    text_reply,
    tool,
    tool_call_reply,
)
from tether.agent import (
    INTERRUPTED_TURN_NOTE,
    Agent,
    unanswered_call_results,
    unanswered_tool_calls,
)
from tether.agent.persistence import SessionRecorder, resume_agent
from tether.agent.session import SessionStore, SessionTree
from tether.jsonvalue import JsonObject
from tether.models.scripted import ScriptedReply, ScriptedToolCall
from tether.protocol import TextDeltaChunk, ToolCallChunk
from tether.protocol.transcript import validate_transcript
from tether.providers.anthropic_wire import build_messages_request
from tether.providers.openai_wire import OpenAIChatCompat, build_chat_request

LIMIT = 5.0
RUNNING = "TOOL_CALL_INTERRUPTED: interrupted by the user; it may have had side effects"
WAITING = "TOOL_CALL_INTERRUPTED: interrupted by the user before it ran"


async def bounded(awaitable: Awaitable[Any]) -> Any:
    async with asyncio.timeout(LIMIT):
        return await awaitable


class Shell:
    """A ``shell`` tool that runs until it is cancelled (``echo started; sleep 30``):
    ``entered`` is set once it runs, ``cancelled`` once its task was cancelled."""

    def __init__(self) -> None:
        self.entered = asyncio.Event()
        self.cancelled = asyncio.Event()

        @tool
        async def shell(command: str) -> str:
            """Run a shell command."""
            self.entered.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                self.cancelled.set()
                raise
            return "done"  # pragma: no cover - never reached

        self.registry = ToolRegistry([shell])


def shell_call(call_id: str = "call-1", *more: ScriptedToolCall) -> ScriptedReply:
    command = ScriptedToolCall(
        name="shell", arguments=JsonObject({"command": "echo started; sleep 30"}), id=call_id
    )
    return ScriptedReply(text=("Running it.",), tool_calls=(command, *more))


def stalled(*deltas: str, streamed: asyncio.Event, call: ToolCall | None = None) -> Any:
    """A turn that streams ``deltas`` (then ``call``) and waits forever (until aborted)."""

    async def factory(
        request: ModelRequest, signal: AbortSignal
    ) -> AsyncIterator[ModelChunk | ModelResponse]:
        for delta in deltas:
            yield TextDeltaChunk(request_id=request.id, delta=delta)
        if call is not None:
            yield ToolCallChunk(request_id=request.id, tool_call=call)
        streamed.set()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")  # pragma: no cover

    return factory


def other_tasks() -> set[asyncio.Task[Any]]:
    return {task for task in asyncio.all_tasks() if task is not asyncio.current_task()}


async def interrupt_the_shell(agent: Agent, shell: Shell) -> Any:
    before = other_tasks()
    stream = agent.prompt("run the slow command")
    await bounded(shell.entered.wait())
    assert agent.cancel("Ctrl-C") is True
    result = await bounded(stream.result)
    assert result.status == "cancelled"
    assert result.reason == "Ctrl-C"
    assert shell.cancelled.is_set()  # the tool was stopped, not left running
    assert other_tasks() <= before, "cancellation left a task behind"
    return result


def note_of(message: Message) -> str:
    assert isinstance(message, UserMessage)
    return message.content


async def test_keep_adopts_the_call_its_interrupted_result_and_the_note() -> None:
    shell = Shell()
    model = ScriptedModel([shell_call(), text_reply("It was interrupted; shall I retry?")])
    agent = Agent(model=model, tools=shell.registry, interrupted_turns="keep")
    accepted: list[Message] = []
    agent.subscribe(
        lambda event, signal: (
            accepted.append(event.payload.message) if event.type == "message.accepted" else None
        )
    )
    result = await interrupt_the_shell(agent, shell)
    messages = agent.messages
    assert result.messages == messages
    assert [message.role for message in messages] == ["user", "assistant", "toolResult", "user"]
    assistant = messages[1]
    assert isinstance(assistant, AssistantMessage)
    assert assistant.content[0] == TextBlock(text="Running it.")
    call = assistant.content[1]
    assert isinstance(call, ToolCall)
    assert call.arguments == {"command": "echo started; sleep 30"}
    answer = messages[2]
    assert isinstance(answer, ToolResultMessage)
    assert (answer.tool_call_id, answer.is_error, answer.content) == ("call-1", True, RUNNING)
    assert note_of(messages[3]) == INTERRUPTED_TURN_NOTE
    assert validate_transcript(list(messages)) == ()
    # the Agent's own additions were announced (the loop's assistant message was not)
    assert accepted[1:] == [answer, messages[3]]
    # the next run's request carries them, and both providers can send it
    assert (await bounded(agent.run("what happened?"))).status == "completed"
    sent = model.requests[-1].messages
    assert sent[:4] == messages
    assert note_of(sent[4]) == "what happened?"
    openai: Any = build_chat_request(
        model.requests[-1],
        model="m",
        compat=OpenAIChatCompat(),
        max_output_tokens=None,
        temperature=None,
        reasoning_effort=None,
    )
    assert [entry["role"] for entry in openai["messages"]] == [
        "user",
        "assistant",
        "tool",
        "user",
        "user",
    ]
    anthropic: Any = build_messages_request(
        model.requests[-1], model="m", max_output_tokens=100, temperature=None, thinking_budget=None
    )
    turns = anthropic["messages"]
    assert [turn["role"] for turn in turns] == ["user", "assistant", "user"]
    last: Any = turns[-1]
    assert [block["type"] for block in last["content"]] == ["tool_result", "text", "text"]


async def test_calls_that_never_started_are_answered_as_such() -> None:
    shell = Shell()
    second = ScriptedToolCall(name="shell", arguments=JsonObject({"command": "ls"}), id="call-2")
    model = ScriptedModel([shell_call("call-1", second)])
    agent = Agent(model=model, tools=shell.registry, interrupted_turns="keep")
    await interrupt_the_shell(agent, shell)
    results = [m for m in agent.messages if isinstance(m, ToolResultMessage)]
    assert [(m.tool_call_id, m.content) for m in results] == [
        ("call-1", RUNNING),
        ("call-2", WAITING),
    ]


async def test_discard_changes_nothing() -> None:
    shell = Shell()
    model = ScriptedModel([shell_call(), text_reply("fresh")])
    agent = Agent(model=model, tools=shell.registry)  # the default
    await interrupt_the_shell(agent, shell)
    assert [message.role for message in agent.messages] == ["user"]
    assert (await bounded(agent.run("again"))).status == "completed"
    assert [message.role for message in model.requests[-1].messages] == ["user", "user"]


async def test_a_partly_streamed_answer_is_kept_as_far_as_it_streamed() -> None:
    streamed = asyncio.Event()
    model = ScriptedModel([stalled("Let me ", "think \ud83d", streamed=streamed), text_reply("ok")])
    agent = Agent(model=model, interrupted_turns="keep")
    stream = agent.prompt("explain")
    await bounded(streamed.wait())
    assert agent.cancel() is True
    assert (await bounded(stream.result)).status == "cancelled"
    messages = agent.messages
    assert [message.role for message in messages] == ["user", "assistant", "user"]
    partial = messages[1]
    assert isinstance(partial, AssistantMessage)
    # As it streamed: a high surrogate (a character cut, or a model's lone "\ud83d") is kept,
    # as a session keeps it; a provider request sends it as U+FFFD.
    assert partial.content == (TextBlock(text="Let me think \ud83d"),)
    assert note_of(messages[2]) == INTERRUPTED_TURN_NOTE
    assert (await bounded(agent.run("go on"))).status == "completed"
    assert model.requests[-1].messages[1] == partial


async def test_a_call_streamed_before_the_interrupt_is_kept_and_answered() -> None:
    streamed = asyncio.Event()
    call = ToolCall(id="c9", name="shell", arguments=JsonObject({"command": "ls"}))
    model = ScriptedModel([stalled("Listing.", streamed=streamed, call=call)])
    agent = Agent(model=model, tools=Shell().registry, interrupted_turns="keep")
    stream = agent.prompt("list")
    await bounded(streamed.wait())
    agent.cancel()
    assert (await bounded(stream.result)).status == "cancelled"
    messages = agent.messages
    assert messages[1] == AssistantMessage(
        id=messages[1].id, content=(TextBlock(text="Listing."), call)
    )
    answer = messages[2]
    assert isinstance(answer, ToolResultMessage)
    assert (answer.tool_call_id, answer.content) == ("c9", WAITING)
    assert note_of(messages[3]) == INTERRUPTED_TURN_NOTE


async def test_a_turn_that_produced_nothing_keeps_nothing() -> None:
    streamed = asyncio.Event()
    model = ScriptedModel([stalled(streamed=streamed)])
    agent = Agent(model=model, interrupted_turns="keep")
    stream = agent.prompt("hello")
    await bounded(streamed.wait())
    agent.cancel()
    assert (await bounded(stream.result)).status == "cancelled"
    assert [message.role for message in agent.messages] == ["user"]


async def test_the_session_records_what_was_kept_and_resumes_from_it(tmp_path: Path) -> None:
    shell = Shell()
    tree = SessionTree(await SessionStore.create(tmp_path / "session.jsonl"))
    agent = Agent(
        model=ScriptedModel([shell_call()]),
        tools=shell.registry,
        recorder=SessionRecorder(tree),
        interrupted_turns="keep",
    )
    await interrupt_the_shell(agent, shell)
    kept = agent.messages
    await tree.store.close()
    reopened = SessionTree(await SessionStore.load(tmp_path / "session.jsonl"))
    assert reopened.active_context().messages == kept
    model = ScriptedModel([text_reply("ok")])
    resumed = await resume_agent(reopened, model=model, interrupted_turns="keep")
    assert resumed.messages == kept  # nothing left to close
    assert (await bounded(resumed.run("and now?"))).status == "completed"
    assert model.requests[0].messages[:4] == kept
    await reopened.store.close()


async def test_a_kept_partial_answer_holding_a_lone_surrogate_reloads_as_it_was(
    tmp_path: Path,
) -> None:
    """Regression: a partial answer's lone surrogate (a model's ``"\\ud800"`` escape) was
    made U+FFFD so that a session could write it; a session now keeps it (escaped), so the
    partial answer is kept as it streamed, as a whole answer would be, and reloads the same."""
    streamed = asyncio.Event()
    path = tmp_path / "session.jsonl"
    tree = SessionTree(await SessionStore.create(path))
    model = ScriptedModel([stalled("half \ud800", " way \udfff", streamed=streamed)])
    agent = Agent(model=model, recorder=SessionRecorder(tree), interrupted_turns="keep")
    stream = agent.prompt("explain")
    await bounded(streamed.wait())
    assert agent.cancel() is True
    assert (await bounded(stream.result)).status == "cancelled"
    kept = agent.messages
    partial = kept[1]
    assert isinstance(partial, AssistantMessage)
    assert partial.content == (TextBlock(text="half \ud800 way \udfff"),)
    await tree.store.close()
    reopened = SessionTree(await SessionStore.load(path))
    assert reopened.active_context().messages == kept
    await reopened.store.close()


def test_interrupted_turns_takes_only_its_two_values() -> None:
    for bad in ("Keep", "", None, True):
        with pytest.raises(TypeError, match='interrupted_turns must be "discard" or "keep"'):
            Agent(model=ScriptedModel(), interrupted_turns=bad)  # pyright: ignore[reportArgumentType]


async def cancelled_during_the_tool(shell: Shell) -> Any:
    """A loop run aborted once its one tool call has started: the call has no result."""
    controller = AbortController()
    stream = run_agent_loop(
        messages=[UserMessage(id="u", content="go")],
        model=ScriptedModel([tool_call_reply(("shell", {"command": "sleep 30"}, "c1"))]),
        tools=shell.registry,
        max_steps=2,
        signal=controller.signal,
    )

    async def consume() -> Any:
        async for event in stream:
            if event.type == "tool.started":
                controller.abort("stop")
        return await stream.result

    return await bounded(consume())


async def test_a_cancelled_loop_transcript_is_closed_by_the_public_helpers() -> None:
    shell = Shell()
    result = await cancelled_during_the_tool(shell)
    assert result.status == "cancelled"
    assert [call.id for call in unanswered_tool_calls(result.messages)] == ["c1"]
    closing = unanswered_call_results(result.messages, "cancelled")
    assert [(m.tool_call_id, m.is_error) for m in closing] == [("c1", True)]
    assert validate_transcript([*result.messages, *closing]) == ()


async def test_a_cancelled_loop_transcript_is_continued_after_closing() -> None:
    """Issue 29: the transcript a cancelled loop leaves (a call with no result) is refused
    as it is (INVALID_TRANSCRIPT) and runs on once the public helper closes its calls."""
    shell = Shell()
    cancelled = await cancelled_during_the_tool(shell)
    follow_up = UserMessage(id="u2", content="go on")

    async def run_on(messages: list[Message]) -> Any:
        again = run_agent_loop(
            messages=messages,
            model=ScriptedModel([text_reply("continued")]),
            tools=shell.registry,
            max_steps=2,
        )
        async for _ in again:
            pass
        return await again.result

    refused = await bounded(run_on([*cancelled.messages, follow_up]))
    assert (refused.status, refused.error.code) == ("failed", "INVALID_TRANSCRIPT")
    closing = unanswered_call_results(cancelled.messages, "cancelled")
    continued = await bounded(run_on([*cancelled.messages, *closing, follow_up]))
    assert (continued.status, continued.final_text) == ("completed", "continued")
