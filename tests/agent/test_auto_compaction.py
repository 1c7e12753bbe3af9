"""Automatic compaction in the Agent (``tether.agent.auto_compaction``): when the context nears
the window, a prefix becomes a summary message, tool rounds stay whole, failures change
nothing, and the conversation keeps working."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tether import (
    AbortSignal,
    AgentEvent,
    AssistantMessage,
    Message,
    ModelRequest,
    ModelUsage,
    ScriptedModel,
    ToolCall,
    ToolRegistry,
    ToolResultMessage,
    text_reply,
    tool,
    tool_call_reply,
)
from tether.agent import Agent
from tether.agent.auto_compaction import SUMMARY_PREFIX, AutoCompaction, context_tokens
from tether.agent.compaction import (
    ContextCompactionError,
    ContextSummary,
    ContextSummaryRequest,
    estimate_tokens,
    group_tool_rounds,
    message_units,
)
from tether.protocol.transcript import validate_transcript

LIMIT = 10.0


@tool
def add(left: int, right: int) -> int:
    """Add two integers."""
    return left + right


class Summaries:
    """A deterministic summarizer that records what it was asked."""

    def __init__(self) -> None:
        self.requests: list[ContextSummaryRequest] = []

    def __call__(self, request: ContextSummaryRequest, signal: AbortSignal) -> str:
        self.requests.append(request)
        previous = request.previous_summary.content if request.previous_summary else "nothing"
        return f"[{len(request.messages)} messages after {previous[:40]}]"


def is_summary(message: Message) -> bool:
    return message.role == "user" and message.content.startswith(SUMMARY_PREFIX)


def answer(n: int) -> Any:
    return text_reply(f"answer {n}: " + "x" * 80, response_id=f"r{n}")


async def bounded(awaitable: Any) -> Any:
    async with asyncio.timeout(LIMIT):
        return await awaitable


async def test_two_hundred_turns_in_a_small_window_compact_and_keep_working() -> None:
    model = ScriptedModel([answer(n) for n in range(200)])
    summaries = Summaries()
    policy = AutoCompaction(context_window=1_000, reserve_tokens=200, summarizer=summaries)
    agent = Agent(model=model, compaction=policy)
    for n in range(200):
        result = await bounded(agent.run(f"question {n}"))
        assert result.status == "completed", result
    assert len(agent.compactions) >= 5
    assert agent.last_compaction_error is None
    # Every request fits the window: the estimate before sending never passed the threshold
    # by more than the one exchange added since the last check.
    for request in model.requests:
        assert estimate_tokens(list(request.messages)) <= policy.context_window
    last = model.requests[-1]
    assert last.messages[0].role == "user"
    assert is_summary(last.messages[0])
    assert agent.summary is not None
    assert last.messages[0].id == agent.summary.id
    assert last.messages[-1].content == "question 199"
    # Later summaries fold in the earlier ones.
    assert summaries.requests[0].previous_summary is None
    assert all(request.previous_summary is not None for request in summaries.requests[1:])
    assert validate_transcript(agent.messages) == ()


async def test_a_compaction_never_splits_a_tool_round() -> None:
    replies: list[Any] = []
    for n in range(40):
        replies.append(tool_call_reply(("add", {"left": n, "right": 1}), response_id=f"t{n}"))
        replies.append(answer(n))
    model = ScriptedModel(replies)
    policy = AutoCompaction(
        context_window=600, reserve_tokens=100, keep_recent_messages=0, summarizer=Summaries()
    )
    agent = Agent(model=model, tools=ToolRegistry([add]), compaction=policy)
    for n in range(40):
        assert (await bounded(agent.run(f"sum {n}"))).status == "completed"
    assert agent.compactions
    compacted = [r for r in model.requests if is_summary(r.messages[0])]
    assert compacted
    for request in model.requests:
        # No call without its results, no result without its call: rounds stayed whole.
        assert validate_transcript(list(request.messages)) == ()
    for request in compacted:
        retained = list(request.messages[1:])
        assert retained[0].role != "toolResult"
        assert sum(len(group.messages) for group in group_tool_rounds(retained)) == len(retained)


async def test_usage_reported_by_the_model_triggers_compaction() -> None:
    big = ModelUsage(input_tokens=950, output_tokens=10)
    model = ScriptedModel(
        [text_reply("a" * 400, usage=big), text_reply("b"), text_reply("c"), text_reply("d")]
    )
    summaries = Summaries()
    policy = AutoCompaction(
        context_window=1_000, reserve_tokens=100, keep_recent_messages=1, summarizer=summaries
    )
    agent = Agent(model=model, compaction=policy)
    assert (await bounded(agent.run("one " * 100))).status == "completed"
    assert agent.compactions == ()  # ~200 tokens by estimate; nothing reported yet
    assert (await bounded(agent.run("two"))).status == "completed"
    assert len(agent.compactions) == 1  # 960 reported tokens + the new prompt > 900
    assert len(summaries.requests) == 1
    assert is_summary(model.requests[1].messages[0])


async def test_a_failing_summarizer_changes_nothing_and_the_turn_goes_ahead() -> None:
    def broken(request: ContextSummaryRequest, signal: AbortSignal) -> str:
        raise RuntimeError("summarizer down")

    model = ScriptedModel([answer(n) for n in range(30)])
    policy = AutoCompaction(context_window=300, reserve_tokens=100, summarizer=broken)
    agent = Agent(model=model, compaction=policy)
    for n in range(30):
        assert (await bounded(agent.run(f"question {n}"))).status == "completed"
    error = agent.last_compaction_error
    assert isinstance(error, ContextCompactionError)
    assert error.code == "CONTEXT_SUMMARIZER_FAILED"
    assert agent.compactions == ()
    assert len(agent.messages) == 60  # nothing was dropped


async def test_cancel_during_compaction_cancels_the_run_and_keeps_the_context() -> None:
    entered = asyncio.Event()

    async def slow(request: ContextSummaryRequest, signal: AbortSignal) -> str:
        entered.set()
        await asyncio.Event().wait()  # until the run's signal abandons it
        return "never"

    model = ScriptedModel(
        [text_reply("a" * 400, usage=ModelUsage(input_tokens=990, output_tokens=5))]
    )
    policy = AutoCompaction(
        context_window=1_000, reserve_tokens=100, keep_recent_messages=1, summarizer=slow
    )
    agent = Agent(model=model, compaction=policy)
    assert (await bounded(agent.run("one " * 100))).status == "completed"
    before = agent.messages
    stream = agent.prompt("two")
    await bounded(entered.wait())
    assert agent.cancel("stop") is True
    result = await bounded(stream.result)
    assert result.status == "cancelled"
    assert result.reason == "stop"
    assert agent.messages == (*before, agent.messages[-1])  # the prompt, nothing compacted
    assert agent.compactions == ()
    assert agent.last_compaction_error is None
    assert model.call_count == 1


async def test_the_summary_message_is_announced() -> None:
    model = ScriptedModel(
        [text_reply("a" * 400, usage=ModelUsage(input_tokens=990, output_tokens=5))]
    )
    model.append_response(text_reply("b"))
    policy = AutoCompaction(
        context_window=1_000, reserve_tokens=100, keep_recent_messages=1, summarizer=Summaries()
    )
    agent = Agent(model=model, compaction=policy)
    await bounded(agent.run("one " * 100))
    seen: list[AgentEvent] = []
    agent.subscribe(lambda event, signal: seen.append(event))
    await bounded(agent.run("two"))
    accepted = [e.payload.message for e in seen if e.type == "message.accepted"]
    assert accepted[0].content == "two"
    assert is_summary(accepted[1])
    assert agent.summary is not None
    assert accepted[1].id == agent.summary.id


def test_an_agent_can_start_from_a_summary() -> None:
    summary = ContextSummary(id="context-summary-1", content="we added numbers")
    agent = Agent(model=ScriptedModel(), summary=summary)
    (first,) = agent.messages
    assert first.id == "context-summary-1"
    assert first.content == SUMMARY_PREFIX + "we added numbers"
    assert agent.summary is summary
    with pytest.raises(TypeError, match="Agent summary must be a ContextSummary"):
        Agent(model=ScriptedModel(), summary="text")  # pyright: ignore[reportArgumentType]


def test_policy_options_are_checked() -> None:
    with pytest.raises(TypeError, match="context_window"):
        AutoCompaction(context_window=0)
    with pytest.raises(TypeError, match="at most half the window"):
        AutoCompaction(context_window=1_000, reserve_tokens=600)
    with pytest.raises(TypeError, match="target_ratio"):
        AutoCompaction(context_window=1_000, reserve_tokens=100, target_ratio=1.0)
    with pytest.raises(TypeError, match="keep_recent_messages"):
        AutoCompaction(context_window=1_000, reserve_tokens=100, keep_recent_messages=-1)
    with pytest.raises(TypeError, match="summarizer"):
        AutoCompaction(context_window=1_000, reserve_tokens=100, summarizer=3)  # pyright: ignore[reportArgumentType]
    with pytest.raises(TypeError, match="Agent compaction must be an AutoCompaction"):
        Agent(model=ScriptedModel(), compaction=3)  # pyright: ignore[reportArgumentType]
    assert AutoCompaction(context_window=1_000, reserve_tokens=200).threshold_tokens == 800
    assert AutoCompaction(context_window=8_000).reserve == 2_000  # a quarter of a small window
    assert AutoCompaction(context_window=200_000).reserve == 16_384


def test_context_tokens_adds_an_estimate_of_what_came_after_the_usage() -> None:
    from tether import UserMessage

    messages: list[Any] = [UserMessage(id="u1", content="a" * 40)]
    assert context_tokens(messages, None, 0) == estimate_tokens(messages)
    usage = ModelUsage(input_tokens=100, output_tokens=20, cache_read_tokens=5)
    assert context_tokens(messages, usage, 1) == 125
    messages.append(UserMessage(id="u2", content="b" * 40))
    assert context_tokens(messages, usage, 1) == 125 + estimate_tokens(messages[1:])
    # A part of a transcript need not be valid on its own: a result without its call.
    call = ToolCall(id="c1", name="add", arguments={"left": 1})  # pyright: ignore[reportArgumentType]
    turn = [
        UserMessage(id="u", content="add"),
        AssistantMessage(id="a", content=(call,)),
        ToolResultMessage(id="r", tool_call_id="c1", tool_name="add", content="1"),
    ]
    assert context_tokens(turn, usage, 2) == 125 + -(-message_units(turn[2]) // 4)


async def test_the_default_summarizer_asks_the_agents_model() -> None:
    big = ModelUsage(input_tokens=990, output_tokens=5)
    model = ScriptedModel(
        [text_reply("a" * 400, usage=big), text_reply("the summary"), text_reply("b")]
    )
    policy = AutoCompaction(context_window=1_000, reserve_tokens=100, keep_recent_messages=1)
    agent = Agent(model=model, compaction=policy)
    await bounded(agent.run("one " * 100))
    assert (await bounded(agent.run("two"))).status == "completed"
    assert agent.summary is not None
    assert agent.summary.content == "the summary"
    summarize_request: ModelRequest = model.requests[1]
    assert summarize_request.tools == ()
    assert model.requests[2].messages[0].content == SUMMARY_PREFIX + "the summary"


async def test_compact_now_while_idle() -> None:
    model = ScriptedModel([answer(n) for n in range(6)])
    summaries = Summaries()
    policy = AutoCompaction(context_window=100_000, reserve_tokens=100, summarizer=summaries)
    agent = Agent(model=model, compaction=policy)
    for n in range(6):
        await bounded(agent.run(f"question {n} " + "q" * 100))
    assert agent.compactions == ()  # far below the window
    before = len(agent.messages)
    record = await bounded(agent.compact())
    assert record is not None
    assert agent.compactions == (record,)
    assert is_summary(agent.messages[0])
    assert len(agent.messages) < before
    assert record.boundary == len(summaries.requests[0].messages)


async def test_compact_refuses_when_busy_without_policy_or_with_too_little() -> None:
    from tether.agent import AgentBusyError, AgentStateError

    with pytest.raises(AgentStateError, match="without an AutoCompaction policy"):
        await Agent(model=ScriptedModel()).compact()
    policy = AutoCompaction(context_window=1_000, reserve_tokens=100, summarizer=Summaries())
    empty = Agent(model=ScriptedModel(), compaction=policy)
    assert await empty.compact() is None  # nothing to compact
    small = Agent(model=ScriptedModel([answer(0)]), compaction=policy)
    await bounded(small.run("only " * 50))
    assert await small.compact() is None  # both messages are the two it must keep
    assert len(small.messages) == 2

    def broken(request: ContextSummaryRequest, signal: AbortSignal) -> str:
        raise RuntimeError("down")

    failing = Agent(
        model=ScriptedModel([answer(n) for n in range(4)]),
        compaction=AutoCompaction(context_window=100_000, reserve_tokens=100, summarizer=broken),
    )
    for n in range(4):
        await bounded(failing.run(f"question {n} " + "q" * 100))
    before = failing.messages
    with pytest.raises(ContextCompactionError) as caught:
        await failing.compact()
    assert caught.value.code == "CONTEXT_SUMMARIZER_FAILED"
    assert failing.messages == before
    assert not failing.is_running
    assert not small.is_running
    entered = asyncio.Event()

    @tool
    async def wait() -> str:
        """Wait."""
        entered.set()
        await asyncio.Event().wait()
        return "never"

    busy = Agent(
        model=ScriptedModel([tool_call_reply(("wait", {}))]),
        tools=ToolRegistry([wait]),
        compaction=policy,
    )
    stream = busy.prompt("go")
    await bounded(entered.wait())
    with pytest.raises(AgentBusyError):
        await busy.compact()
    busy.cancel()
    assert (await bounded(stream.result)).status == "cancelled"
