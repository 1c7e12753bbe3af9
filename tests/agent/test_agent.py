"""Checkpoint 09: the stateful Agent, rule by rule (``tether.agent.agent``).

Runs are driven by ``ScriptedModel``. Where a test needs a run to be busy, a tool waits on an
``asyncio.Event`` the test controls (``Gate``); there are no sleeps, and waits that a
regression could turn into hangs are bounded by ``asyncio.timeout``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from support import turns
from tether import (
    AbortSignal,
    AgentEvent,
    AssistantMessage,
    ModelRequest,
    ModelUsage,
    RunLimits,
    ScriptedModel,
    TextBlock,
    ToolCall,
    ToolRegistry,
    ToolResultMessage,
    UserMessage,
    text_reply,
    tool,
    tool_call_reply,
)
from tether.agent import (
    MAX_AGENT_QUEUED_MESSAGES,
    Agent,
    AgentBusyError,
    AgentMessageLimitError,
    AgentStateError,
    AgentSubscriberError,
)
from tether.agent.agent import _drive as drive_module
from tether.jsonvalue import JsonObject
from tether.models.scripted import ScriptedReply, ScriptedToolCall
from tether.protocol import AgentEventType
from tether.protocol.transcript import validate_transcript

LIMIT = 5.0  # seconds: only a bound on waits that a regression could turn into hangs


class Gate:
    """A tool ``wait`` that blocks until the test opens the gate; ``entered`` is set when it
    starts, ``calls`` counts runs, ``signals`` holds the signals it ran with."""

    def __init__(self) -> None:
        self.entered = asyncio.Event()
        self.opened = asyncio.Event()
        self.calls = 0
        self.signals: list[AbortSignal] = []

        @tool
        async def wait() -> str:
            """Wait for the gate."""
            self.calls += 1
            self.entered.set()
            await self.opened.wait()
            return "opened"

        self.tool = wait

    def registry(self) -> ToolRegistry:
        return ToolRegistry([self.tool])


@tool
def add(left: int, right: int) -> int:
    """Add two integers."""
    return left + right


def wait_call(call_id: str | None = None) -> ScriptedReply:
    return tool_call_reply(("wait", {}, call_id) if call_id else ("wait", {}))


def roles(agent: Agent) -> list[str]:
    return [message.role for message in agent.messages]


def user_texts(request: ModelRequest) -> list[str]:
    return [message.content for message in request.messages if message.role == "user"]


async def bounded(awaitable: Awaitable[Any]) -> Any:
    async with asyncio.timeout(LIMIT):
        return await awaitable


def user_transcript(count: int) -> list[UserMessage]:
    return [UserMessage(id=f"seed-{index}", content="x") for index in range(count)]


def assistant_tail(count: int) -> list[UserMessage | AssistantMessage]:
    """``count`` messages ending with an assistant message."""
    messages: list[UserMessage | AssistantMessage] = [*user_transcript(count - 1)]
    messages.append(AssistantMessage(id="seed-a", content=(TextBlock(text="ok"),)))
    return messages


# --- construction ---------------------------------------------------------------------------


def test_model_must_have_a_stream_method() -> None:
    with pytest.raises(TypeError, match="Agent model must implement the Model contract"):
        Agent(model=None)  # pyright: ignore[reportArgumentType]

    class NoStream:
        stream = 3

    with pytest.raises(TypeError, match=r"Agent model\.stream must be a function"):
        Agent(model=NoStream())  # pyright: ignore[reportArgumentType]


async def test_model_stream_is_bound_once() -> None:
    scripted = ScriptedModel([text_reply("scripted")])

    class Plain:
        def stream(self, request: ModelRequest, signal: AbortSignal) -> object:
            return scripted.stream(request, signal)

    model = Plain()
    agent = Agent(model=model)  # pyright: ignore[reportArgumentType]
    replaced: list[ModelRequest] = []

    def other(request: ModelRequest, signal: AbortSignal) -> object:
        replaced.append(request)
        raise AssertionError("the replacement must never be called")

    model.stream = other
    result = await bounded(agent.run("hi"))
    assert result.status == "completed"
    assert replaced == []
    assert scripted.call_count == 1


def test_tools_must_be_a_registry() -> None:
    with pytest.raises(TypeError, match="Agent tools must be a ToolRegistry"):
        Agent(model=ScriptedModel(), tools=[add])  # pyright: ignore[reportArgumentType]


async def test_tools_are_snapshotted_through_the_base_method() -> None:
    class Leaky(ToolRegistry):
        def snapshot(self) -> ToolRegistry:
            return self

    registry = Leaky()
    agent = Agent(
        model=ScriptedModel([tool_call_reply(("add", {"left": 1, "right": 2}))]), tools=registry
    )
    registry.register(add)  # registered after the Agent took its snapshot
    assert agent.tool_names == ()
    result = await bounded(agent.run("add"))
    assert result.status == "failed"  # the script ran out after the tool turn
    tool_result = agent.messages[2]
    assert isinstance(tool_result, ToolResultMessage)
    assert tool_result.is_error
    assert '"TOOL_NOT_FOUND"' in tool_result.content


@pytest.mark.parametrize("bad", [0, -1, True, 1.5, "3", 2**53])
def test_max_steps_must_be_a_positive_safe_integer(bad: object) -> None:
    with pytest.raises(TypeError, match="Agent max_steps must be a positive safe integer"):
        Agent(model=ScriptedModel(), max_steps=bad)  # pyright: ignore[reportArgumentType]


def test_max_steps_is_bounded_by_the_limits() -> None:
    with pytest.raises(TypeError, match="Agent max_steps must not exceed 64"):
        Agent(model=ScriptedModel(), max_steps=65)
    agent = Agent(model=ScriptedModel(), max_steps=500, limits=RunLimits.for_real_models())
    assert agent.max_steps == 500
    assert Agent(model=ScriptedModel()).max_steps == 64
    assert Agent(model=ScriptedModel(), limits=RunLimits(max_steps=3)).max_steps == 3


def test_other_options_are_checked() -> None:
    with pytest.raises(TypeError, match="Agent limits must be a RunLimits"):
        Agent(model=ScriptedModel(), limits={})  # pyright: ignore[reportArgumentType]
    with pytest.raises(TypeError, match="Agent system must be a string or None"):
        Agent(model=ScriptedModel(), system=1)  # pyright: ignore[reportArgumentType]
    with pytest.raises(TypeError, match="Agent messages must be a list or tuple"):
        Agent(model=ScriptedModel(), messages="hi")  # pyright: ignore[reportArgumentType]
    with pytest.raises(TypeError, match="before_tool_call must be callable"):
        Agent(model=ScriptedModel(), before_tool_call=3)  # pyright: ignore[reportArgumentType]


def test_messages_are_checked_and_frozen() -> None:
    with pytest.raises(TypeError, match=r"^Agent messages\[1\] has an unsupported role$"):
        Agent(
            model=ScriptedModel(),
            messages=[{"id": "u", "role": "user", "content": "x"}, {"id": "s", "role": "system"}],  # pyright: ignore[reportArgumentType]
        )
    orphan = ToolResultMessage(id="r", tool_call_id="nope", tool_name="add", content="1")
    with pytest.raises(TypeError, match=r"^Agent transcript is invalid: "):
        Agent(model=ScriptedModel(), messages=[orphan])
    source: list[Any] = [{"id": "u1", "role": "user", "content": "from JSON"}]
    agent = Agent(model=ScriptedModel(), messages=source)
    source.append({"id": "u2", "role": "user", "content": "later"})
    assert agent.messages == (UserMessage(id="u1", content="from JSON"),)


def test_transcript_over_the_cap_is_a_limit_error() -> None:
    with pytest.raises(AgentMessageLimitError, match="must not exceed 4096 messages") as caught:
        Agent(model=ScriptedModel(), messages=user_transcript(4097))
    assert caught.value.code == "AGENT_MESSAGE_LIMIT"
    assert len(Agent(model=ScriptedModel(), messages=user_transcript(4096)).messages) == 4096


def test_messages_is_a_fresh_tuple_each_call() -> None:
    agent = Agent(model=ScriptedModel(), messages=user_transcript(2))
    first, second = agent.messages, agent.messages
    assert first == second
    assert first is not second
    assert type(first) is tuple


def test_generated_ids_continue_after_the_highest_present() -> None:
    seed = [
        UserMessage(id="agent-user-000007", content="a"),
        UserMessage(id="agent-user-000003", content="b"),
        UserMessage(id="agent-user-12", content="not six digits"),
    ]
    agent = Agent(model=ScriptedModel(), messages=seed)
    assert agent.steer("s").id == "agent-user-000008"
    assert agent.follow_up("f").id == "agent-user-000009"
    assert Agent(model=ScriptedModel()).steer("x").id == "agent-user-000001"


# --- ownership ------------------------------------------------------------------------------


async def test_prompt_and_continue_while_running_raise_busy_synchronously() -> None:
    gate = Gate()
    agent = Agent(model=ScriptedModel([wait_call(), text_reply("done")]), tools=gate.registry())
    stream = agent.prompt("first")
    assert agent.is_running
    with pytest.raises(AgentBusyError) as caught:
        agent.prompt("second")
    assert caught.value.code == "AGENT_BUSY"
    assert str(caught.value) == "Agent is already running"
    with pytest.raises(AgentBusyError):
        agent.continue_()
    await bounded(gate.entered.wait())
    with pytest.raises(AgentBusyError):
        agent.prompt("third")
    gate.opened.set()
    result = await bounded(stream.result)
    assert result.status == "completed"
    assert [m.content for m in agent.messages if m.role == "user"] == ["first"]
    assert not agent.is_running


def test_prompt_needs_a_running_loop_and_changes_nothing_without_one() -> None:
    agent = Agent(model=ScriptedModel([text_reply("x")]))
    with pytest.raises(RuntimeError, match="running event loop"):
        agent.prompt("hi")
    assert agent.messages == ()
    assert not agent.is_running


async def test_is_running_until_the_result_settles() -> None:
    agent = Agent(model=ScriptedModel([text_reply("x")]))
    during: list[bool] = []
    agent.subscribe(lambda event, signal: during.append(agent.is_running))
    stream = agent.prompt("hi")
    result = await bounded(stream.result)
    assert result.status == "completed"
    assert during
    assert all(during)  # still owned while run.finished is published
    assert not agent.is_running


def test_user_content_must_be_a_string() -> None:
    agent = Agent(model=ScriptedModel())
    with pytest.raises(TypeError, match="Agent user content must be a string"):
        agent.steer(3)  # pyright: ignore[reportArgumentType]
    assert agent.queued_steering == ()


async def test_idle_steering_is_accepted_right_after_the_prompt() -> None:
    model = ScriptedModel([text_reply("a"), text_reply("b")])
    agent = Agent(model=model)
    first = agent.steer("steer 1")
    second = agent.steer("steer 2")
    stream = agent.prompt("prompt")
    events = [event async for event in stream]
    accepted = [e.payload.message.id for e in events if e.type == "message.accepted"]
    assert accepted[:2] == ["agent-user-000003", first.id]
    assert user_texts(model.requests[0]) == ["prompt", "steer 1"]
    # The second steering item waits for the next boundary: after the model's answer.
    assert user_texts(model.requests[1]) == ["prompt", "steer 1", "steer 2"]
    assert second.id in accepted
    assert (await stream.result).status == "completed"


# --- continue_ ------------------------------------------------------------------------------


async def test_continue_needs_a_transcript() -> None:
    agent = Agent(model=ScriptedModel())
    with pytest.raises(AgentStateError, match=r"^Cannot continue without transcript messages$"):
        agent.continue_()


async def test_continue_from_an_assistant_tail_needs_queued_work() -> None:
    agent = Agent(model=ScriptedModel([text_reply("x")]), messages=assistant_tail(2))
    with pytest.raises(
        AgentStateError, match=r"^Cannot continue from an assistant message without queued work$"
    ) as caught:
        agent.continue_()
    assert caught.value.code == "AGENT_NOTHING_TO_CONTINUE"
    assert not agent.is_running


async def test_continue_accepts_one_follow_up_after_an_assistant_tail() -> None:
    model = ScriptedModel([text_reply("one"), text_reply("two")])
    agent = Agent(model=model, messages=assistant_tail(2))
    agent.follow_up("f1")
    agent.follow_up("f2")
    result = await bounded(agent.continue_().result)
    assert result.status == "completed"
    assert user_texts(model.requests[0])[-1] == "f1"
    assert user_texts(model.requests[1])[-1] == "f2"
    assert agent.queued_follow_ups == ()


async def test_continue_prefers_steering_and_takes_only_one() -> None:
    model = ScriptedModel([text_reply("one"), text_reply("two")])
    agent = Agent(model=model, messages=assistant_tail(2))
    agent.follow_up("follow")
    agent.steer("steer")
    stream = agent.continue_()
    assert [m.content for m in agent.queued_follow_ups] == ["follow"]  # not taken at the start
    events = [event async for event in stream]
    accepted = [e.payload.message.content for e in events if e.type == "message.accepted"]
    assert accepted == ["steer", "follow"]
    assert events[0].type == "message.accepted"
    assert user_texts(model.requests[0])[-1] == "steer"
    assert user_texts(model.requests[1])[-1] == "follow"


async def test_continue_from_a_user_tail_accepts_nothing() -> None:
    model = ScriptedModel([text_reply("answer")])
    agent = Agent(model=model, messages=user_transcript(1))
    events = [event async for event in agent.continue_()]
    assert [e.type for e in events] == ["model.chunk", "run.finished"]
    assert roles(agent) == ["user", "assistant"]


# --- the logical run ------------------------------------------------------------------------


async def test_steering_is_accepted_one_at_a_time_between_turns() -> None:
    gate = Gate()
    model = ScriptedModel([wait_call(), text_reply("after s1"), text_reply("after s2")])
    agent = Agent(model=model, tools=gate.registry())
    stream = agent.prompt("go")
    await bounded(gate.entered.wait())
    agent.steer("s1")
    agent.steer("s2")
    gate.opened.set()
    result = await bounded(stream.result)
    assert result.status == "completed"
    assert [len(r.messages) for r in model.requests] == [1, 4, 6]
    assert user_texts(model.requests[1]) == ["go", "s1"]
    assert model.requests[1].messages[2].role == "toolResult"  # steering after the results
    assert user_texts(model.requests[2]) == ["go", "s1", "s2"]
    assert roles(agent) == [
        "user",
        "assistant",
        "toolResult",
        "user",
        "assistant",
        "user",
        "assistant",
    ]


async def test_follow_ups_run_after_completion_as_separate_messages() -> None:
    gate = Gate()
    model = ScriptedModel([wait_call(), text_reply("a"), text_reply("b"), text_reply("c")])
    agent = Agent(model=model, tools=gate.registry())
    stream = agent.prompt("go")
    await bounded(gate.entered.wait())
    agent.follow_up("f1")
    agent.follow_up("f2")
    gate.opened.set()
    events = [event async for event in stream]
    result = await stream.result
    assert result.status == "completed"
    assert result.final_text == "c"
    accepted = [e.payload.message.content for e in events if e.type == "message.accepted"]
    assert accepted == ["go", "f1", "f2"]
    # f1 arrives only after the model's answer "a", not after the tool turn.
    assert model.requests[1].messages[-1].role == "toolResult"
    assert user_texts(model.requests[2])[-1] == "f1"


async def test_one_sequence_and_one_run_finished_per_logical_run() -> None:
    model = ScriptedModel([tool_call_reply(("add", {"left": 1, "right": 2})), text_reply("3")])
    agent = Agent(model=model, tools=ToolRegistry([add]))
    agent.follow_up("again")
    model.append_response(text_reply("still 3"))
    stream = agent.prompt("sum")
    events: list[AgentEvent] = [event async for event in stream]
    result = await stream.result
    assert [e.sequence for e in events] == list(range(len(events)))
    assert [e.type for e in events].count("run.finished") == 1
    last = events[-1]
    assert last.type == "run.finished"
    assert last.payload.result is result
    assert [r.id for r in model.requests] == ["request-001", "request-002", "request-003"]


async def test_request_ids_continue_across_runs() -> None:
    model = ScriptedModel([tool_call_reply(("add", {"left": 1, "right": 1})), text_reply("2")])
    agent = Agent(model=model, tools=ToolRegistry([add]))
    assert (await bounded(agent.run("first"))).status == "completed"
    model.append_response(tool_call_reply(("add", {"left": 2, "right": 2})))
    model.append_response(text_reply("4"))
    second = await bounded(agent.run("second"))
    assert second.status == "completed"  # default call IDs did not collide with run 1's
    assert [r.id for r in model.requests][-2:] == ["request-003", "request-004"]


async def test_max_steps_after_a_tool_turn() -> None:
    model = ScriptedModel([tool_call_reply(("add", {"left": 1, "right": 2}))])
    agent = Agent(model=model, tools=ToolRegistry([add]), max_steps=1)
    result = await bounded(agent.run("go"))
    assert result.status == "maxSteps"
    assert result.max_steps == 1
    assert roles(agent) == ["user", "assistant", "toolResult"]


async def test_queued_work_at_the_step_budget_ends_with_max_steps_and_stays_queued() -> None:
    gate = Gate()
    model = ScriptedModel([text_reply("done")])
    agent = Agent(model=model, max_steps=1)

    def queue_on_chunk(event: AgentEvent, signal: AbortSignal) -> None:
        if event.type == "model.chunk":
            agent.follow_up("later")

    agent.subscribe(queue_on_chunk)
    result = await bounded(agent.run("go"))
    assert result.status == "maxSteps"
    assert [m.content for m in agent.queued_follow_ups] == ["later"]
    assert gate.calls == 0

    steering_model = ScriptedModel([text_reply("done")])
    steering = Agent(model=steering_model, max_steps=1)
    steering.subscribe(lambda event, signal: event.type == "model.chunk" and steering.steer("s"))
    result = await bounded(steering.run("go"))
    assert result.status == "maxSteps"
    assert [m.content for m in steering.queued_steering] == ["s"]


async def test_inner_failures_pass_through_with_their_code() -> None:
    agent = Agent(model=ScriptedModel([]))
    result = await bounded(agent.run("hi"))
    assert result.status == "failed"
    assert result.error.code == "SCRIPT_EXHAUSTED"
    assert roles(agent) == ["user"]
    truncated = Agent(model=ScriptedModel([text_reply("cut", stop_reason="length")]))
    result = await bounded(truncated.run("hi"))
    assert result.status == "failed"
    assert result.error.code == "MODEL_OUTPUT_TRUNCATED"
    assert roles(truncated) == ["user", "assistant"]  # the truncated message is kept


async def test_system_and_limits_reach_every_request() -> None:
    model = ScriptedModel([tool_call_reply(("add", {"left": 1, "right": 2})), text_reply("3")])
    agent = Agent(
        model=model, tools=ToolRegistry([add]), system="be brief", limits=RunLimits(max_steps=8)
    )
    assert (await bounded(agent.run("sum"))).status == "completed"
    assert [r.system for r in model.requests] == ["be brief", "be brief"]
    assert [spec.name for spec in model.requests[0].tools] == ["add"]


async def test_usage_sums_per_run_and_over_the_agent() -> None:
    one = ModelUsage(input_tokens=10, output_tokens=2)
    two = ModelUsage(input_tokens=20, output_tokens=3, cache_read_tokens=5)
    model = ScriptedModel(
        [
            tool_call_reply(("add", {"left": 1, "right": 2}), usage=one),
            text_reply("3", usage=two),
            text_reply("again", usage=one),
        ]
    )
    agent = Agent(model=model, tools=ToolRegistry([add]))
    first = await bounded(agent.run("sum"))
    assert first.usage == one + two
    second = await bounded(agent.run("more"))
    assert second.usage == one
    assert agent.usage == one + two + one


async def test_an_unexpected_failure_is_agent_state_failed(monkeypatch: pytest.MonkeyPatch) -> None:
    async def broken(**_: object) -> object:
        raise RuntimeError("bookkeeping broke")

    monkeypatch.setattr(drive_module, "run_owned_turns", broken)
    agent = Agent(model=ScriptedModel([text_reply("x")]))
    agent.steer("queued")
    agent.follow_up("queued too")
    stream = agent.prompt("hi")
    events = [event async for event in stream]
    result = await stream.result
    assert result.status == "failed"
    assert result.error.code == "AGENT_STATE_FAILED"
    assert result.error.message == "bookkeeping broke"
    assert events[-1].type == "run.finished"
    assert not agent.is_running
    assert [m.content for m in agent.queued_follow_ups] == ["queued too"]


async def test_a_turn_over_the_transcript_cap_fails_with_the_message_limit() -> None:
    limits = RunLimits(max_initial_messages=4)
    calls = [("add", {"left": index, "right": 0}) for index in range(3)]
    agent = Agent(
        model=ScriptedModel([tool_call_reply(*calls)]), tools=ToolRegistry([add]), limits=limits
    )
    result = await bounded(agent.run("hi"))
    assert result.status == "failed"
    assert result.error.code == "AGENT_MESSAGE_LIMIT"
    assert result.error.message == "Agent transcript exceeded 4 messages"
    assert roles(agent) == ["user"]  # the oversized turn was not adopted


# --- cancellation ---------------------------------------------------------------------------


def test_cancel_reason_must_be_a_non_empty_string() -> None:
    agent = Agent(model=ScriptedModel())
    for bad in ("", 3, None):
        with pytest.raises(TypeError, match="Agent cancellation reason must be a non-empty string"):
            agent.cancel(bad)  # pyright: ignore[reportArgumentType]
    assert agent.cancel() is False  # idle


async def test_cancel_during_a_tool_turn_drops_that_turn() -> None:
    gate = Gate()
    model = ScriptedModel([text_reply("first answer"), wait_call(), text_reply("unused")])
    agent = Agent(model=model, tools=gate.registry())
    assert (await bounded(agent.run("one"))).status == "completed"
    before = agent.messages
    stream = agent.prompt("two")
    await bounded(gate.entered.wait())
    assert agent.cancel("stop now") is True
    assert agent.cancel("again") is False  # already aborted
    result = await bounded(stream.result)
    assert result.status == "cancelled"
    assert result.reason == "stop now"
    assert result.messages == agent.messages
    assert agent.messages == (*before, agent.messages[-1])  # only the prompt was added
    assert agent.messages[-1].role == "user"
    assert not agent.is_running


async def test_cancel_after_terminal_selection_returns_false() -> None:
    agent = Agent(model=ScriptedModel([text_reply("done")]))
    answers: list[bool] = []

    def on_event(event: AgentEvent, signal: AbortSignal) -> None:
        if event.type == "run.finished":
            answers.append(agent.cancel("too late"))

    agent.subscribe(on_event)
    result = await bounded(agent.run("hi"))
    assert answers == [False]
    assert result.status == "completed"


async def test_cancel_from_a_subscriber_mid_stream() -> None:
    model = ScriptedModel([text_reply("a", "b", "c")])
    agent = Agent(model=model)
    agent.subscribe(lambda event, signal: event.type == "model.chunk" and agent.cancel("enough"))
    result = await bounded(agent.run("hi"))
    assert result.status == "cancelled"
    assert result.reason == "enough"
    assert roles(agent) == ["user"]


async def test_queued_items_survive_cancellation() -> None:
    gate = Gate()
    model = ScriptedModel([wait_call(), text_reply("resumed")])
    agent = Agent(model=model, tools=gate.registry())
    stream = agent.prompt("go")
    await bounded(gate.entered.wait())
    agent.steer("after cancel")
    agent.cancel()
    result = await bounded(stream.result)
    assert result.status == "cancelled"
    assert result.reason == "Agent run cancelled"
    assert [m.content for m in agent.queued_steering] == ["after cancel"]
    resumed = await bounded(agent.continue_().result)
    assert resumed.status == "completed"
    assert user_texts(model.requests[1]) == ["go", "after cancel"]


async def test_the_consumer_going_away_cancels_the_run() -> None:
    gate = Gate()
    agent = Agent(model=ScriptedModel([wait_call()]), tools=gate.registry())
    stream = agent.prompt("go")
    iterator = aiter(stream)
    await bounded(anext(iterator))
    await bounded(gate.entered.wait())
    await iterator.aclose()
    result = await bounded(stream.result)
    assert result.status == "cancelled"
    assert result.reason == "run consumer went away"
    assert gate.calls == 1


# --- capacity -------------------------------------------------------------------------------


def test_queue_cap_counts_steering_and_follow_ups_together() -> None:
    agent = Agent(model=ScriptedModel())
    for index in range(MAX_AGENT_QUEUED_MESSAGES):
        (agent.steer if index % 2 else agent.follow_up)(f"item {index}")
    with pytest.raises(AgentMessageLimitError, match=r"^Agent queue must not exceed 256 messages$"):
        agent.steer("one too many")
    assert len(agent.queued_steering) + len(agent.queued_follow_ups) == 256


def test_idle_enqueue_reservation_at_its_boundary() -> None:
    cap = RunLimits(max_initial_messages=10)
    # Assistant tail: P = T + 2q.
    agent = Agent(model=ScriptedModel(), messages=assistant_tail(8), limits=cap)
    agent.follow_up("fits")  # 8 + 2 = 10
    with pytest.raises(AgentMessageLimitError, match="transcript and queued work"):
        agent.follow_up("over")  # 8 + 4 = 12
    # User tail, no steering: P = T + 2q + 1.
    agent = Agent(model=ScriptedModel(), messages=user_transcript(7), limits=cap)
    agent.follow_up("fits")  # 7 + 2 + 1 = 10
    with pytest.raises(AgentMessageLimitError):
        agent.follow_up("over")
    # User tail with steering: P = T + 2q.
    agent = Agent(model=ScriptedModel(), messages=user_transcript(6), limits=cap)
    agent.steer("s1")  # 6 + 2 = 8
    agent.steer("s2")  # 6 + 4 = 10
    with pytest.raises(AgentMessageLimitError):
        agent.steer("over")
    # Empty transcript: +2 without steering, +1 with.
    agent = Agent(model=ScriptedModel(), limits=RunLimits(max_initial_messages=4))
    agent.follow_up("fits")  # 0 + 2 + 2 = 4
    with pytest.raises(AgentMessageLimitError):
        agent.follow_up("over")  # 0 + 4 + 2 = 6
    agent = Agent(model=ScriptedModel(), limits=RunLimits(max_initial_messages=3))
    agent.steer("fits")  # 0 + 2 + 1 = 3
    with pytest.raises(AgentMessageLimitError):
        agent.follow_up("over")


async def test_prompt_reservation_at_its_boundary() -> None:
    cap = RunLimits(max_initial_messages=10)
    agent = Agent(model=ScriptedModel([text_reply("x")]), messages=user_transcript(9), limits=cap)
    with pytest.raises(AgentMessageLimitError, match="transcript and queued work"):
        agent.prompt("over")  # 9 + 1 + 0 + 1 = 11
    assert len(agent.messages) == 9
    agent = Agent(model=ScriptedModel([text_reply("x")]), messages=user_transcript(8), limits=cap)
    assert (await bounded(agent.prompt("fits").result)).status == "completed"  # 8 + 1 + 1


async def test_continue_reservation_at_its_boundary() -> None:
    cap = RunLimits(max_initial_messages=10)
    agent = Agent(model=ScriptedModel([text_reply("x")]), messages=user_transcript(10), limits=cap)
    with pytest.raises(AgentMessageLimitError):
        agent.continue_()  # 10 + 0 + 1
    agent = Agent(model=ScriptedModel([text_reply("x")]), messages=user_transcript(9), limits=cap)
    assert (await bounded(agent.continue_().result)).status == "completed"  # 9 + 1


async def test_enqueue_during_a_run_reserves_the_whole_unknown_turn() -> None:
    limits = RunLimits(max_initial_messages=20, max_chunks_per_step=5, max_blocks_per_step=8)
    gate = Gate()
    agent = Agent(model=ScriptedModel([wait_call()]), tools=gate.registry(), limits=limits)
    stream = agent.prompt("go")
    await bounded(gate.entered.wait())
    # T = 1 while the turn runs; reserve 1 assistant + min(5, 8) results: 1 + 6 + q <= 20.
    for index in range(13):
        agent.steer(f"s{index}")
    with pytest.raises(AgentMessageLimitError, match="transcript and queued work"):
        agent.steer("over")
    agent.cancel()
    assert (await bounded(stream.result)).status == "cancelled"


def test_default_active_reservation_is_the_workshops() -> None:
    agent = Agent(model=ScriptedModel())
    assert agent._state.run_reserve == 1 + 1024  # pyright: ignore[reportPrivateUsage]


# --- subscribers ----------------------------------------------------------------------------


async def test_subscriber_ids_start_at_one_and_throwing_subscribers_are_recorded() -> None:
    agent = Agent(model=ScriptedModel([text_reply("x")]))
    seen: list[AgentEventType] = []

    def broken(event: AgentEvent, signal: AbortSignal) -> None:
        raise ValueError(f"cannot handle {event.type}")

    agent.subscribe(broken)
    agent.subscribe(lambda event, signal: seen.append(event.type))
    result = await bounded(agent.run("hi"))
    assert result.status == "completed"
    assert seen == ["message.accepted", "model.chunk", "run.finished"]
    assert agent.subscriber_errors == tuple(
        AgentSubscriberError(event_type=kind, listener_id=1, message=f"cannot handle {kind}")
        for kind in seen
    )
    assert agent.subscriber_errors is not agent.subscriber_errors


async def test_failing_awaitables_are_observed_never_awaited() -> None:
    agent = Agent(model=ScriptedModel([text_reply("x")]))
    release = asyncio.Event()

    async def later(event: AgentEvent, signal: AbortSignal) -> None:
        await release.wait()
        raise RuntimeError(f"late failure on {event.type}")

    agent.subscribe(later)
    result = await bounded(agent.run("hi"))  # completes while every subscriber still waits
    assert result.status == "completed"
    assert agent.subscriber_errors == ()
    release.set()
    await bounded(agent.wait_for_subscribers())
    assert [e.message for e in agent.subscriber_errors] == [
        "late failure on message.accepted",
        "late failure on model.chunk",
        "late failure on run.finished",
    ]


async def test_a_subscriber_blocking_forever_cannot_delay_the_run() -> None:
    agent = Agent(model=ScriptedModel([text_reply("x")]))
    never = asyncio.Event()
    started: list[str] = []

    async def blocked(event: AgentEvent, signal: AbortSignal) -> None:
        started.append(event.type)
        await never.wait()

    agent.subscribe(blocked)
    result = await bounded(agent.run("hi"))
    assert result.status == "completed"
    assert not agent.is_running
    never.set()  # let the observed tasks end so the test leaves nothing behind
    await bounded(agent.wait_for_subscribers())
    assert started == ["message.accepted", "model.chunk", "run.finished"]


async def test_subscriber_cancelled_error_and_odd_returns_are_handled() -> None:
    agent = Agent(model=ScriptedModel([text_reply("x")]))

    def cancels(event: AgentEvent, signal: AbortSignal) -> None:
        raise asyncio.CancelledError

    agent.subscribe(cancels)
    agent.subscribe(lambda event, signal: 42)  # a plain value is ignored
    result = await bounded(agent.run("hi"))
    assert result.status == "completed"
    assert [e.listener_id for e in agent.subscriber_errors] == [1, 1, 1]
    assert agent.subscriber_errors[0].message == "Agent subscriber failed"


async def test_subscribers_may_steer_and_cancel_but_not_prompt() -> None:
    model = ScriptedModel([text_reply("a"), text_reply("b")])
    agent = Agent(model=model)
    steered: list[UserMessage] = []

    def on_event(event: AgentEvent, signal: AbortSignal) -> None:
        if event.type == "model.chunk" and not steered:
            steered.append(agent.steer("from a subscriber"))
            agent.prompt("not allowed")

    agent.subscribe(on_event)
    result = await bounded(agent.run("hi"))
    assert result.status == "completed"
    assert user_texts(model.requests[1]) == ["hi", "from a subscriber"]
    assert [e.message for e in agent.subscriber_errors] == ["Agent is already running"]


async def test_unsubscribe_during_dispatch_takes_effect_from_the_next_event() -> None:
    agent = Agent(model=ScriptedModel([text_reply("x")]))
    second_seen: list[str] = []
    unsubscribers: list[Callable[[], None]] = []

    def first(event: AgentEvent, signal: AbortSignal) -> None:
        unsubscribers[1]()
        unsubscribers[1]()  # idempotent

    unsubscribers.append(agent.subscribe(first))
    unsubscribers.append(agent.subscribe(lambda event, signal: second_seen.append(event.type)))
    await bounded(agent.run("hi"))
    assert second_seen == ["message.accepted"]
    with pytest.raises(TypeError, match="Agent subscriber must be a function"):
        agent.subscribe(3)  # pyright: ignore[reportArgumentType]


async def test_a_thousand_subscribers_each_see_every_event_once_in_order() -> None:
    agent = Agent(model=ScriptedModel([text_reply("a", "b")]))
    calls: list[int] = []
    for index in range(1000):
        agent.subscribe(lambda event, signal, index=index: calls.append(index))
    snapshot = agent._subscribers.snapshot  # pyright: ignore[reportPrivateUsage]
    events = [event async for event in agent.prompt("hi")]
    assert calls == list(range(1000)) * len(events)
    # The listener snapshot is built when subscriptions change, not per event.
    assert agent._subscribers.snapshot is snapshot  # pyright: ignore[reportPrivateUsage]


async def test_subscribers_receive_the_runs_signal() -> None:
    gate = Gate()
    agent = Agent(model=ScriptedModel([wait_call()]), tools=gate.registry())
    signals: list[AbortSignal] = []
    agent.subscribe(lambda event, signal: signals.append(signal))
    stream = agent.prompt("go")
    await bounded(gate.entered.wait())
    agent.cancel("bye")
    await bounded(stream.result)
    assert len({id(signal) for signal in signals}) == 1
    assert signals[0].aborted
    assert signals[0].reason == "bye"


# --- conveniences ---------------------------------------------------------------------------


def test_run_sync_for_scripts() -> None:
    agent = Agent(model=ScriptedModel([text_reply("from a script")]))
    result = agent.run_sync("hi")
    assert result.status == "completed"
    assert result.final_text == "from a script"


async def test_run_sync_refuses_inside_a_loop() -> None:
    agent = Agent(model=ScriptedModel([text_reply("x")]))
    with pytest.raises(RuntimeError, match="cannot run inside an event loop"):
        agent.run_sync("hi")
    assert agent.messages == ()


async def test_cancelling_the_task_awaiting_run_cancels_the_run() -> None:
    gate = Gate()
    agent = Agent(model=ScriptedModel([wait_call()]), tools=gate.registry())
    task = asyncio.ensure_future(agent.run("go"))
    await bounded(gate.entered.wait())
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await bounded(agent.wait_until_idle())
    assert roles(agent) == ["user"]
    assert not agent.is_running
    await agent.wait_until_idle()  # idle: returns at once


async def test_cancelling_a_wait_until_idle_leaves_the_run_alone() -> None:
    gate = Gate()
    agent = Agent(model=ScriptedModel([wait_call(), text_reply("done")]), tools=gate.registry())
    stream = agent.prompt("go")
    await bounded(gate.entered.wait())
    waiter = asyncio.ensure_future(agent.wait_until_idle())
    await turns(1)  # the waiter is now awaiting
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    gate.opened.set()
    result = await bounded(stream.result)
    assert result.status == "completed"


def test_repr_names_the_state_without_contents() -> None:
    agent = Agent(model=ScriptedModel(), messages=[UserMessage(id="u", content="secret")])
    agent.steer("also secret")
    text = repr(agent)
    assert text == "<Agent idle, 1 messages, 1 steering, 0 follow-ups queued>"
    assert "secret" not in text


def test_tool_call_ids_of_the_seed_are_known() -> None:
    call = ToolCall(id="c1", name="add", arguments={"left": 1, "right": 1})  # pyright: ignore[reportArgumentType]
    seed = [
        UserMessage(id="u", content="x"),
        AssistantMessage(id="a", content=(call,)),
        ToolResultMessage(id="r", tool_call_id="c1", tool_name="add", content="2"),
    ]
    agent = Agent(model=ScriptedModel(), messages=seed)
    assert agent._state.call_ids == {"c1"}  # pyright: ignore[reportPrivateUsage]


def test_options_are_readable() -> None:
    limits = RunLimits(max_steps=10)
    agent = Agent(model=ScriptedModel(), system="sys", limits=limits, tools=ToolRegistry([add]))
    assert agent.system == "sys"
    assert agent.limits is limits
    assert agent.tool_names == ("add",)


def test_a_model_whose_stream_cannot_be_read_is_rejected() -> None:
    class Hostile:
        @property
        def stream(self) -> object:
            raise RuntimeError("no")

    with pytest.raises(TypeError, match=r"Agent model\.stream must be a function"):
        Agent(model=Hostile())  # pyright: ignore[reportArgumentType]


async def test_a_cancelled_subscriber_future_is_not_a_failure() -> None:
    agent = Agent(model=ScriptedModel([text_reply("x")]))
    futures: list[asyncio.Future[None]] = []

    def returns_future(event: AgentEvent, signal: AbortSignal) -> asyncio.Future[None]:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        futures.append(future)
        return future

    agent.subscribe(returns_future)
    await bounded(agent.run("hi"))
    for future in futures:
        future.cancel()
    await bounded(agent.wait_for_subscribers())
    assert len(futures) == 3
    assert agent.subscriber_errors == ()


async def test_a_cancel_racing_a_failure_makes_the_result_cancelled(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    agent = Agent(model=ScriptedModel([text_reply("x")]))

    async def cancel_then_fail(**_: object) -> object:
        agent.cancel("cancelled first")
        raise RuntimeError("then failed")

    monkeypatch.setattr(drive_module, "run_owned_turns", cancel_then_fail)
    result = await bounded(agent.run("hi"))
    assert result.status == "cancelled"
    assert result.reason == "cancelled first"


async def test_cancelling_the_agents_own_task_still_settles_the_stream() -> None:
    gate = Gate()
    agent = Agent(model=ScriptedModel([wait_call()]), tools=gate.registry())
    before = set(asyncio.all_tasks())
    stream = agent.prompt("go")
    await bounded(gate.entered.wait())
    (owner,) = [task for task in asyncio.all_tasks() - before if "_own" in repr(task)]
    owner.cancel()
    result = await bounded(stream.result)
    assert result.status == "cancelled"
    assert roles(agent) == ["user"]
    assert not agent.is_running
    with pytest.raises(asyncio.CancelledError):
        await owner


async def test_calls_left_by_a_truncated_turn_are_closed_for_the_next_request() -> None:
    cut = ScriptedReply(
        tool_calls=(ScriptedToolCall(name="add", arguments=JsonObject({"left": 1, "right": 2})),),
        stop_reason="length",
    )
    model = ScriptedModel([cut, text_reply("recovered")])
    agent = Agent(model=model, tools=ToolRegistry([add]))
    stream = agent.prompt("go")
    events = [event async for event in stream]
    result = await stream.result
    assert result.status == "failed"
    assert result.error.code == "MODEL_OUTPUT_TRUNCATED"
    assert roles(agent) == ["user", "assistant", "toolResult"]
    closing = agent.messages[2]
    assert isinstance(closing, ToolResultMessage)
    assert closing.is_error
    assert closing.tool_call_id == "call-request-001-1"
    assert json.loads(closing.content) == {
        "error": {
            "code": "TOOL_CALL_NOT_RUN",
            "message": "The turn ended (MODEL_OUTPUT_TRUNCATED) before this tool call ran",
        }
    }
    assert result.messages == agent.messages
    assert [e.type for e in events][-2:] == ["message.accepted", "run.finished"]
    assert validate_transcript(agent.messages) == ()
    second = await bounded(agent.run("try again"))
    assert second.status == "completed"
    assert model.requests[1].messages[2] == closing


class _AwaitRaises:
    """An awaitable to Python (``inspect.isawaitable``) whose ``await`` fails at once: its
    class defines ``__await__`` as a property that raises."""

    @property
    def __await__(self) -> Callable[[], Any]:
        raise RuntimeError("await refused")


async def test_a_subscriber_returning_an_awaitable_whose_await_raises_is_recorded() -> None:
    agent = Agent(model=ScriptedModel([text_reply("x")]))
    agent.subscribe(lambda event, signal: _AwaitRaises())
    result = await bounded(agent.run("hi"))
    assert result.status == "completed"
    await bounded(agent.wait_for_subscribers())
    assert [(e.event_type, e.message) for e in agent.subscriber_errors] == [
        ("message.accepted", "await refused"),
        ("model.chunk", "await refused"),
        ("run.finished", "await refused"),
    ]


async def test_set_system_changes_the_system_prompt_from_the_next_turn() -> None:
    model = ScriptedModel([text_reply("a"), text_reply("b")])
    agent = Agent(model=model, system="first")
    assert (await bounded(agent.run("one"))).status == "completed"
    agent.set_system("second")
    assert agent.system == "second"
    assert (await bounded(agent.run("two"))).status == "completed"
    assert [request.system for request in model.requests] == ["first", "second"]
    agent.set_system(None)
    assert agent.system is None
    wrong: Any = 1
    with pytest.raises(TypeError, match="Agent system must be a string or None"):
        agent.set_system(wrong)
    assert agent.system is None
