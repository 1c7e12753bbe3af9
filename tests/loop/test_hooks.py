"""Tool-call hooks (``tether.loop.hooks``) through ``run_agent_loop`` and through ``Agent``.

``before_tool_call`` may allow (``None``) or block (``BlockToolCall``) a call; ``after_tool_call``
may keep (``None``) or replace (``ReplaceToolResult``) its result. A hook that raises, or answers
with anything else, fails closed with a ``TOOL_HOOK_FAILED`` result; only the signal ends the run.
Most behaviours run twice, once per entry point (the ``runner`` fixture). Hooks that wait are
coordinated with ``asyncio.Event``\\ s and futures the tests control; there are no sleeps, and
every await a regression could turn into a hang is bounded by ``asyncio.timeout``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, cast

import pytest

from tether import (
    AbortController,
    AbortSignal,
    AgentEvent,
    AssistantMessage,
    CancelledRunResult,
    CompletedRunResult,
    JsonObject,
    Message,
    ModelRequest,
    RunResult,
    ScriptedModel,
    ScriptedReply,
    ToolCall,
    ToolExecutionContext,
    ToolRegistry,
    ToolResultMessage,
    UserMessage,
    run_agent_loop,
    text_reply,
    tool,
    tool_call_reply,
)
from tether.agent.agent import Agent
from tether.loop.hooks import (
    AfterToolCall,
    BeforeToolCall,
    BlockToolCall,
    ReplaceToolResult,
    ToolCallContext,
    ToolHooks,
)
from tether.tools import FunctionTool

USER = UserMessage(id="user-1", content="Add 20 and 22.")
BOUND = 10  # seconds: an outer bound on awaits that a regression could turn into a hang
PROMPT_TURNS = 20  # loop turns within which an aborted run must have settled
BEFORE_SHAPE = "before_tool_call must return None or BlockToolCall"
AFTER_SHAPE = "after_tool_call must return None or ReplaceToolResult"
UNCANCELLED = "Tool hook raised CancelledError although nothing cancelled the run"


def error_content(code: str, message: str) -> str:
    """The exact content of a hook's error result: compact JSON, non-ASCII kept."""
    payload = {"error": {"code": code, "message": message}}
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False)


def call_id(step: int, position: int = 1) -> str:
    """The ID a scripted call gets in a run's ``step``-th request."""
    return f"call-request-{step:03d}-{position}"


# --- the tool ---------------------------------------------------------------------------------


class Adder:
    """An ``add`` tool that records every call it actually runs, and the signal it was given."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int, int]] = []
        self.signals: list[AbortSignal] = []
        calls, signals = self.calls, self.signals

        @tool
        async def add(left: int, right: int, context: ToolExecutionContext) -> int:
            """Add two integers."""
            calls.append((context.tool_call_id, left, right))
            signals.append(context.signal)
            return left + right

        self.tool: FunctionTool[Any, Any, Any] = add

    def registry(self) -> ToolRegistry:
        return ToolRegistry([self.tool])


def add_reply(*pairs: tuple[int, int]) -> ScriptedReply:
    return tool_call_reply(*(("add", {"left": left, "right": right}) for left, right in pairs))


# --- the two entry points -----------------------------------------------------------------------


@dataclass
class Outcome:
    """What one run produced, whichever entry point ran it."""

    events: list[AgentEvent]
    result: RunResult
    requests: tuple[ModelRequest, ...]
    first: Message  # the user message the run started from


class Runner(Protocol):
    async def __call__(
        self,
        replies: Sequence[ScriptedReply],
        tools: ToolRegistry,
        *,
        before: BeforeToolCall | None = None,
        after: AfterToolCall | None = None,
    ) -> Outcome: ...


class LoopRunner:
    async def __call__(
        self,
        replies: Sequence[ScriptedReply],
        tools: ToolRegistry,
        *,
        before: BeforeToolCall | None = None,
        after: AfterToolCall | None = None,
    ) -> Outcome:
        model = ScriptedModel(list(replies))
        stream = run_agent_loop(
            messages=[USER],
            model=model,
            tools=tools,
            max_steps=8,
            signal=AbortController().signal,
            hooks=ToolHooks(before_tool_call=before, after_tool_call=after),
        )
        async with asyncio.timeout(BOUND):
            events = [event async for event in stream]
            result = await stream.result
        return Outcome(events, result, model.requests, USER)


class AgentRunner:
    async def __call__(
        self,
        replies: Sequence[ScriptedReply],
        tools: ToolRegistry,
        *,
        before: BeforeToolCall | None = None,
        after: AfterToolCall | None = None,
    ) -> Outcome:
        model = ScriptedModel(list(replies))
        agent = Agent(model=model, tools=tools, before_tool_call=before, after_tool_call=after)
        stream = agent.prompt(USER.content)
        async with asyncio.timeout(BOUND):
            events = [event async for event in stream]
            result = await stream.result
        assert agent.messages == result.messages
        assert not agent.is_running
        return Outcome(events, result, model.requests, result.messages[0])


@pytest.fixture(params=["loop", "agent"])
def runner(request: pytest.FixtureRequest) -> Runner:
    return LoopRunner() if request.param == "loop" else AgentRunner()


def results_of(messages: Sequence[Message]) -> list[ToolResultMessage]:
    return [message for message in messages if isinstance(message, ToolResultMessage)]


def finished_results(events: Sequence[AgentEvent]) -> list[ToolResultMessage]:
    return [event.payload.message for event in events if event.type == "tool.finished"]


def started_ids(events: Sequence[AgentEvent]) -> list[str]:
    return [event.payload.tool_call.id for event in events if event.type == "tool.started"]


def completed(result: RunResult, text: str = "done") -> CompletedRunResult:
    assert isinstance(result, CompletedRunResult), result
    assert result.final_text == text
    return result


def cancelled(result: RunResult, reason: str) -> CancelledRunResult:
    assert isinstance(result, CancelledRunResult), result
    assert result.reason == reason
    return result


def expected_result(
    step: int, content: str, *, is_error: bool, position: int = 1
) -> ToolResultMessage:
    identifier = call_id(step, position)
    return ToolResultMessage(
        id=f"tool-result-{identifier}",
        tool_call_id=identifier,
        tool_name="add",
        content=content,
        is_error=is_error,
    )


async def settles_promptly(task: asyncio.Task[Any]) -> None:
    """Fail unless ``task`` finishes within a few loop turns (no timers involved)."""
    for _ in range(PROMPT_TURNS):
        if task.done():
            return
        await asyncio.sleep(0)
    assert task.done(), f"the run did not settle within {PROMPT_TURNS} loop turns of the abort"


# --- allow ------------------------------------------------------------------------------------


async def test_allowing_hooks_run_the_tool_and_see_the_call_and_its_result(runner: Runner) -> None:
    adder = Adder()
    contexts: list[ToolCallContext] = []
    seen: list[ToolResultMessage] = []

    def before(context: ToolCallContext) -> None:
        contexts.append(context)

    def after(context: ToolCallContext, result: ToolResultMessage) -> None:
        assert context is contexts[-1]
        seen.append(result)

    outcome = await runner(
        [add_reply((20, 22)), text_reply("done")], adder.registry(), before=before, after=after
    )
    result = completed(outcome.result)
    assert adder.calls == [(call_id(1), 20, 22)]
    expected = expected_result(1, "42", is_error=False)
    assert results_of(result.messages) == [expected]
    assert seen == [expected]
    (context,) = contexts
    assert context.tool_call == ToolCall(
        id=call_id(1), name="add", arguments=JsonObject({"left": 20, "right": 22})
    )
    assert finished_results(outcome.events) == [expected]


async def test_no_hooks_given_to_the_agent_behave_like_allowing_ones() -> None:
    adder = Adder()
    agent = Agent(
        model=ScriptedModel([add_reply((1, 2)), text_reply("done")]), tools=adder.registry()
    )
    async with asyncio.timeout(BOUND):
        result = await agent.run("go")
    completed(result)
    assert results_of(result.messages) == [expected_result(1, "3", is_error=False)]


# --- block ------------------------------------------------------------------------------------


async def test_a_blocked_call_never_runs_and_the_model_reads_why_in_its_next_request(
    runner: Runner,
) -> None:
    adder = Adder()
    reason = 'Writing "notes.txt" needs approval: refusé'

    def before(context: ToolCallContext) -> BlockToolCall:
        return BlockToolCall(reason=reason)

    outcome = await runner(
        [add_reply((20, 22)), text_reply("done")], adder.registry(), before=before
    )
    result = completed(outcome.result)
    assert adder.calls == []
    blocked = expected_result(1, error_content("TOOL_CALL_BLOCKED", reason), is_error=True)
    assert blocked.content == (
        '{"error":{"code":"TOOL_CALL_BLOCKED","message":'
        '"Writing \\"notes.txt\\" needs approval: refusé"}}'
    )
    assert results_of(result.messages) == [blocked]
    # The blocked call is still reported and linked: started, finished with its result.
    assert started_ids(outcome.events) == [call_id(1)]
    assert finished_results(outcome.events) == [blocked]
    # The run went on: the second request carries the assistant call and the blocked result.
    assert len(outcome.requests) == 2
    second = outcome.requests[1].messages
    assert second[0] == outcome.first
    assert isinstance(second[1], AssistantMessage)
    assert second[2:] == (blocked,)


async def test_blocking_one_call_of_a_batch_runs_the_others(runner: Runner) -> None:
    adder = Adder()

    def before(context: ToolCallContext) -> BlockToolCall | None:
        if context.tool_call.arguments["left"] == 2:
            return BlockToolCall(reason="no twos")
        return None

    outcome = await runner(
        [add_reply((1, 1), (2, 2), (3, 3)), text_reply("done")], adder.registry(), before=before
    )
    result = completed(outcome.result)
    assert adder.calls == [(call_id(1, 1), 1, 1), (call_id(1, 3), 3, 3)]
    assert results_of(result.messages) == [
        expected_result(1, "2", is_error=False, position=1),
        expected_result(
            1, error_content("TOOL_CALL_BLOCKED", "no twos"), is_error=True, position=2
        ),
        expected_result(1, "6", is_error=False, position=3),
    ]


# --- async hooks --------------------------------------------------------------------------------


async def test_async_hooks_are_awaited_and_their_answers_used(runner: Runner) -> None:
    adder = Adder()
    order: list[str] = []

    async def before(context: ToolCallContext) -> BlockToolCall | None:
        answered = asyncio.Event()
        asyncio.get_running_loop().call_soon(answered.set)
        await answered.wait()  # really suspends: the answer arrives on a later loop turn
        order.append(f"before {context.tool_call.id}")
        if context.tool_call.arguments["left"] == 1:
            return BlockToolCall(reason="asked, said no")
        return None

    async def after(context: ToolCallContext, result: ToolResultMessage) -> ReplaceToolResult:
        answered = asyncio.Event()
        asyncio.get_running_loop().call_soon(answered.set)
        await answered.wait()
        order.append(f"after {context.tool_call.id}")
        return ReplaceToolResult(content=f"checked: {result.content}")

    outcome = await runner(
        [add_reply((1, 1), (5, 5)), text_reply("done")],
        adder.registry(),
        before=before,
        after=after,
    )
    result = completed(outcome.result)
    assert adder.calls == [(call_id(1, 2), 5, 5)]
    assert results_of(result.messages) == [
        expected_result(
            1, error_content("TOOL_CALL_BLOCKED", "asked, said no"), is_error=True, position=1
        ),
        expected_result(1, "checked: 10", is_error=False, position=2),
    ]
    # A blocked call never reaches the after hook; the other call's hooks ran in order.
    assert order == [f"before {call_id(1, 1)}", f"before {call_id(1, 2)}", f"after {call_id(1, 2)}"]


async def test_a_hook_may_return_any_awaitable_such_as_a_future(runner: Runner) -> None:
    adder = Adder()

    def before(context: ToolCallContext) -> Awaitable[BlockToolCall | None]:
        future: asyncio.Future[BlockToolCall | None] = asyncio.get_running_loop().create_future()
        asyncio.get_running_loop().call_soon(future.set_result, BlockToolCall(reason="by future"))
        return future

    outcome = await runner([add_reply((1, 2)), text_reply("done")], adder.registry(), before=before)
    result = completed(outcome.result)
    assert adder.calls == []
    assert results_of(result.messages) == [
        expected_result(1, error_content("TOOL_CALL_BLOCKED", "by future"), is_error=True)
    ]


# --- a hook that never answers ------------------------------------------------------------------


class Unanswered:
    """A before hook that asks and then waits forever; records how its wait ended."""

    def __init__(self) -> None:
        self.asked = asyncio.Event()
        self.log: list[str] = []
        self.signals: list[AbortSignal] = []

    async def __call__(self, context: ToolCallContext) -> BlockToolCall | None:
        self.signals.append(context.signal)
        self.asked.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.log.append("cancelled")
            raise
        finally:
            self.log.append("finally")
        return None  # pragma: no cover - never answered


async def test_an_unanswered_hook_cannot_keep_an_aborted_loop_run_alive() -> None:
    adder = Adder()
    hook = Unanswered()
    controller = AbortController()
    model = ScriptedModel([add_reply((1, 2)), text_reply("never requested")])
    stream = run_agent_loop(
        messages=[USER],
        model=model,
        tools=adder.registry(),
        max_steps=4,
        signal=controller.signal,
        hooks=ToolHooks(before_tool_call=hook),
    )

    async def drain() -> tuple[list[AgentEvent], RunResult]:
        return [event async for event in stream], await stream.result

    task = asyncio.create_task(drain())
    async with asyncio.timeout(BOUND):
        await hook.asked.wait()
    controller.abort("The person walked away")
    await settles_promptly(task)
    events, result = task.result()
    failed = cancelled(result, "The person walked away")
    assert adder.calls == []
    assert hook.log == ["cancelled", "finally"]
    # Only complete messages: the call's assistant message, never a fabricated result.
    assert failed.messages[0] == USER
    assert len(failed.messages) == 2
    assert results_of(failed.messages) == []
    assert [event.type for event in events][-2:] == ["tool.started", "run.finished"]
    assert model.call_count == 1


async def test_an_unanswered_hook_cannot_keep_a_cancelled_agent_run_alive() -> None:
    adder = Adder()
    hook = Unanswered()
    agent = Agent(
        model=ScriptedModel([add_reply((1, 2)), text_reply("never requested")]),
        tools=adder.registry(),
        before_tool_call=hook,
    )
    stream = agent.prompt("go")

    async def drain() -> RunResult:
        async for _ in stream:
            pass
        return await stream.result

    task = asyncio.create_task(drain())
    async with asyncio.timeout(BOUND):
        await hook.asked.wait()
    assert agent.is_running
    assert agent.cancel("Nobody answered") is True
    await settles_promptly(task)
    result = cancelled(task.result(), "Nobody answered")
    assert adder.calls == []
    assert hook.log == ["cancelled", "finally"]
    # The cancelled turn is not adopted: the transcript is the prompt alone.
    assert [message.role for message in result.messages] == ["user"]
    assert agent.messages == result.messages
    assert not agent.is_running


async def test_a_hook_that_aborts_the_signal_cancels_the_run_before_the_tool_runs() -> None:
    adder = Adder()
    controller = AbortController()

    def before(context: ToolCallContext) -> None:
        controller.abort("Denied, and stop everything")
        assert context.signal.aborted  # the run's signal follows the caller's at once

    stream = run_agent_loop(
        messages=[USER],
        model=ScriptedModel([add_reply((1, 2)), text_reply("never requested")]),
        tools=adder.registry(),
        max_steps=4,
        signal=controller.signal,
        hooks=ToolHooks(before_tool_call=before),
    )
    async with asyncio.timeout(BOUND):
        events = [event async for event in stream]
        result = await stream.result
    cancelled(result, "Denied, and stop everything")
    assert adder.calls == []
    assert finished_results(events) == []
    assert results_of(result.messages) == []


async def test_a_hook_that_swallows_the_cancellation_still_cannot_keep_the_run_alive() -> None:
    adder = Adder()
    asked = asyncio.Event()
    cleanup = asyncio.Event()
    cleaned = asyncio.Event()
    log: list[str] = []
    controller = AbortController()

    async def before(context: ToolCallContext) -> None:  # answers "allow", late
        asked.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            log.append("cancelled")
            await cleanup.wait()  # keeps running after being told to stop
            log.append("cleaned up")
            cleaned.set()

    stream = run_agent_loop(
        messages=[USER],
        model=ScriptedModel([add_reply((1, 2)), text_reply("never requested")]),
        tools=adder.registry(),
        max_steps=4,
        signal=controller.signal,
        hooks=ToolHooks(before_tool_call=before),
    )

    async def drain() -> RunResult:
        async for _ in stream:
            pass
        return await stream.result

    task = asyncio.create_task(drain())
    async with asyncio.timeout(BOUND):
        await asked.wait()
    controller.abort("Stop")
    await settles_promptly(task)
    cancelled(task.result(), "Stop")
    assert log == ["cancelled"]
    cleanup.set()
    async with asyncio.timeout(BOUND):
        await cleaned.wait()
    assert log == ["cancelled", "cleaned up"]
    assert adder.calls == []  # the late "allow" ran nothing


@pytest.mark.parametrize("style", ["sync", "async"])
async def test_a_run_cancelled_as_its_tool_starts_never_asks_the_before_hook(style: str) -> None:
    # A subscriber runs synchronously inside the Agent's publish of ``tool.started``; when it
    # cancels the run there, the call must not go on to ask the host (a person) about it, just
    # as ``execute_tool_call`` checks the signal before it runs a tool.
    adder = Adder()
    asked: list[bool] = []

    def sync_before(context: ToolCallContext) -> None:
        asked.append(context.signal.aborted)

    async def async_before(context: ToolCallContext) -> None:
        asked.append(context.signal.aborted)

    agent = Agent(
        model=ScriptedModel([add_reply((1, 2)), text_reply("never requested")]),
        tools=adder.registry(),
        before_tool_call=sync_before if style == "sync" else async_before,
    )

    def cancel_at_tool_start(event: AgentEvent, signal: AbortSignal) -> None:
        if event.type == "tool.started":
            assert agent.cancel("Cancelled as the tool started") is True

    agent.subscribe(cancel_at_tool_start)
    async with asyncio.timeout(BOUND):
        result = await agent.run("go")
    cancelled(result, "Cancelled as the tool started")
    assert adder.calls == []
    assert agent.subscriber_errors == ()
    assert asked == [], "the before hook was called although the run was already cancelled"


# --- failing hooks --------------------------------------------------------------------------------


async def test_a_before_hook_that_raises_fails_closed_and_the_tool_never_runs(
    runner: Runner,
) -> None:
    adder = Adder()

    def before(context: ToolCallContext) -> None:
        raise RuntimeError("approval service unreachable")

    outcome = await runner([add_reply((1, 2)), text_reply("done")], adder.registry(), before=before)
    result = completed(outcome.result)
    assert adder.calls == []
    assert results_of(result.messages) == [
        expected_result(
            1, error_content("TOOL_HOOK_FAILED", "approval service unreachable"), is_error=True
        )
    ]
    assert outcome.requests[1].messages[-1] == results_of(result.messages)[0]


async def test_an_async_before_hook_that_raises_after_waiting_fails_closed(runner: Runner) -> None:
    adder = Adder()

    async def before(context: ToolCallContext) -> None:
        answered = asyncio.Event()
        asyncio.get_running_loop().call_soon(answered.set)
        await answered.wait()
        raise ValueError("bad answer")

    outcome = await runner([add_reply((1, 2)), text_reply("done")], adder.registry(), before=before)
    assert adder.calls == []
    assert results_of(completed(outcome.result).messages) == [
        expected_result(1, error_content("TOOL_HOOK_FAILED", "bad answer"), is_error=True)
    ]


async def test_a_hook_error_without_a_message_gets_the_fallback_text(runner: Runner) -> None:
    adder = Adder()

    def before(context: ToolCallContext) -> None:
        raise RuntimeError

    outcome = await runner([add_reply((1, 2)), text_reply("done")], adder.registry(), before=before)
    assert results_of(completed(outcome.result).messages) == [
        expected_result(1, error_content("TOOL_HOOK_FAILED", "Tool hook failed"), is_error=True)
    ]


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param("yes", id="str"),
        pytest.param(True, id="true"),
        pytest.param(False, id="false"),
        pytest.param(0, id="zero"),
        pytest.param({"reason": "no"}, id="mapping"),
        pytest.param(ReplaceToolResult(content="x"), id="replace"),
    ],
)
async def test_a_before_hook_with_a_wrong_answer_fails_closed(
    runner: Runner, answer: object
) -> None:
    adder = Adder()

    def before(context: ToolCallContext) -> Any:
        return answer

    outcome = await runner([add_reply((1, 2)), text_reply("done")], adder.registry(), before=before)
    assert adder.calls == []
    assert results_of(completed(outcome.result).messages) == [
        expected_result(1, error_content("TOOL_HOOK_FAILED", BEFORE_SHAPE), is_error=True)
    ]


async def test_an_async_before_hook_with_a_wrong_answer_fails_closed(runner: Runner) -> None:
    adder = Adder()

    async def before(context: ToolCallContext) -> Any:
        return "allow"

    outcome = await runner([add_reply((1, 2)), text_reply("done")], adder.registry(), before=before)
    assert adder.calls == []
    assert results_of(completed(outcome.result).messages) == [
        expected_result(1, error_content("TOOL_HOOK_FAILED", BEFORE_SHAPE), is_error=True)
    ]


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param("replaced", id="str"),
        pytest.param(BlockToolCall(reason="too late"), id="block"),
        pytest.param({"content": "x"}, id="mapping"),
        pytest.param(1, id="int"),
    ],
)
async def test_an_after_hook_with_a_wrong_answer_replaces_the_result_with_a_failure(
    runner: Runner, answer: object
) -> None:
    adder = Adder()

    def after(context: ToolCallContext, result: ToolResultMessage) -> Any:
        return answer

    outcome = await runner([add_reply((1, 2)), text_reply("done")], adder.registry(), after=after)
    assert adder.calls == [(call_id(1), 1, 2)]  # the tool ran; its output is not passed on
    assert results_of(completed(outcome.result).messages) == [
        expected_result(1, error_content("TOOL_HOOK_FAILED", AFTER_SHAPE), is_error=True)
    ]


async def test_an_after_hook_that_raises_replaces_the_result_with_a_failure(runner: Runner) -> None:
    adder = Adder()

    def after(context: ToolCallContext, result: ToolResultMessage) -> None:
        raise RuntimeError("redactor crashed")

    outcome = await runner([add_reply((1, 2)), text_reply("done")], adder.registry(), after=after)
    assert adder.calls == [(call_id(1), 1, 2)]
    result = completed(outcome.result)
    failure = expected_result(
        1, error_content("TOOL_HOOK_FAILED", "redactor crashed"), is_error=True
    )
    assert results_of(result.messages) == [failure]
    assert finished_results(outcome.events) == [failure]
    assert "3" not in [message.content for message in results_of(outcome.requests[1].messages)]


@pytest.mark.parametrize("which", ["before", "after"])
@pytest.mark.parametrize("style", ["sync", "async"])
async def test_a_hook_raising_cancelled_error_on_its_own_is_a_hook_failure_not_a_cancellation(
    runner: Runner, which: str, style: str
) -> None:
    adder = Adder()

    def sync_hook(*args: object) -> None:
        raise asyncio.CancelledError

    async def async_hook(*args: object) -> None:
        raise asyncio.CancelledError

    hook = sync_hook if style == "sync" else async_hook
    hooks: dict[str, Any] = {which: hook}
    outcome = await runner([add_reply((1, 2)), text_reply("done")], adder.registry(), **hooks)
    result = completed(outcome.result)
    assert adder.calls == ([] if which == "before" else [(call_id(1), 1, 2)])
    assert results_of(result.messages) == [
        expected_result(1, error_content("TOOL_HOOK_FAILED", UNCANCELLED), is_error=True)
    ]


# --- replacing results --------------------------------------------------------------------------


@pytest.mark.parametrize("is_error", [False, True])
async def test_an_after_hook_replaces_the_content_and_the_error_flag(
    runner: Runner, is_error: bool
) -> None:
    adder = Adder()
    received: list[ToolResultMessage] = []

    def after(context: ToolCallContext, result: ToolResultMessage) -> ReplaceToolResult:
        received.append(result)
        return ReplaceToolResult(content="[redacted]", is_error=is_error)

    outcome = await runner([add_reply((20, 22)), text_reply("done")], adder.registry(), after=after)
    result = completed(outcome.result)
    assert received == [expected_result(1, "42", is_error=False)]
    replaced = expected_result(1, "[redacted]", is_error=is_error)  # same ID, same link
    assert results_of(result.messages) == [replaced]
    assert finished_results(outcome.events) == [replaced]
    assert outcome.requests[1].messages[-1] == replaced


async def test_an_after_hook_can_turn_a_tool_error_into_a_plain_result(runner: Runner) -> None:
    adder = Adder()
    received: list[ToolResultMessage] = []

    def after(context: ToolCallContext, result: ToolResultMessage) -> ReplaceToolResult:
        received.append(result)
        return ReplaceToolResult(content="", is_error=False)  # empty content is allowed

    reply = tool_call_reply(("add", {"left": "twenty", "right": 22}))
    outcome = await runner([reply, text_reply("done")], adder.registry(), after=after)
    assert adder.calls == []  # validation failed: the tool never ran
    (original,) = received
    assert original.is_error is True
    assert json.loads(original.content)["error"]["code"] == "TOOL_ARGUMENTS_INVALID"
    assert results_of(completed(outcome.result).messages) == [
        expected_result(1, "", is_error=False)
    ]


# --- the context --------------------------------------------------------------------------------


async def test_the_context_holds_the_assistant_call_and_the_batch_s_earlier_results(
    runner: Runner,
) -> None:
    adder = Adder()
    before_seen: list[tuple[Message, ...]] = []
    after_seen: list[tuple[Message, ...]] = []

    def before(context: ToolCallContext) -> BlockToolCall | None:
        assert type(context.messages) is tuple
        before_seen.append(context.messages)
        return BlockToolCall(reason="second one") if context.tool_call.id == call_id(1, 2) else None

    def after(context: ToolCallContext, result: ToolResultMessage) -> None:
        after_seen.append(context.messages)

    outcome = await runner(
        [add_reply((1, 1), (2, 2), (3, 3)), text_reply("done")],
        adder.registry(),
        before=before,
        after=after,
    )
    result = completed(outcome.result)
    user, assistant, first, second, third, _final = result.messages
    assert user == outcome.first
    assert isinstance(assistant, AssistantMessage)
    assert [block.id for block in assistant.content if isinstance(block, ToolCall)] == [
        call_id(1, 1),
        call_id(1, 2),
        call_id(1, 3),
    ]
    assert before_seen == [
        (user, assistant),
        (user, assistant, first),
        (user, assistant, first, second),
    ]
    # The after hook sees the same transcript as the before hook of its call (not its own
    # result: that is the hook's second argument). The blocked call has no after hook.
    assert after_seen == [(user, assistant), (user, assistant, first, second)]
    assert third == expected_result(1, "6", is_error=False, position=3)


async def test_the_context_of_a_later_step_holds_the_earlier_steps() -> None:
    adder = Adder()
    seen: list[tuple[Message, ...]] = []

    def before(context: ToolCallContext) -> None:
        seen.append(context.messages)

    stream = run_agent_loop(
        messages=[USER],
        model=ScriptedModel([add_reply((1, 1)), add_reply((2, 2)), text_reply("done")]),
        tools=adder.registry(),
        max_steps=4,
        hooks=ToolHooks(before_tool_call=before),
    )
    async with asyncio.timeout(BOUND):
        async for _ in stream:
            pass
        result = completed(await stream.result)
    assert seen == [result.messages[:2], result.messages[:4]]


async def test_the_context_signal_is_the_run_s_signal_in_the_loop() -> None:
    adder = Adder()
    signals: list[AbortSignal] = []
    controller = AbortController()

    def before(context: ToolCallContext) -> None:
        assert not context.signal.aborted
        signals.append(context.signal)

    def after(context: ToolCallContext, result: ToolResultMessage) -> None:
        signals.append(context.signal)

    stream = run_agent_loop(
        messages=[USER],
        model=ScriptedModel([add_reply((1, 1)), text_reply("done")]),
        tools=adder.registry(),
        max_steps=4,
        signal=controller.signal,
        hooks=ToolHooks(before_tool_call=before, after_tool_call=after),
    )
    async with asyncio.timeout(BOUND):
        async for _ in stream:
            pass
        completed(await stream.result)
    # The hooks and the tool are given one and the same signal: the run's.
    assert len(signals) == 2
    assert signals[0] is signals[1]
    assert adder.signals == [signals[0]]


async def test_the_context_signal_is_the_agent_run_s_signal() -> None:
    adder = Adder()
    hook_signals: list[AbortSignal] = []
    subscriber_signals: list[AbortSignal] = []

    def before(context: ToolCallContext) -> None:
        hook_signals.append(context.signal)

    agent = Agent(
        model=ScriptedModel([add_reply((1, 1)), text_reply("done")]),
        tools=adder.registry(),
        before_tool_call=before,
    )
    agent.subscribe(lambda event, signal: subscriber_signals.append(signal))
    async with asyncio.timeout(BOUND):
        completed(await agent.run("go"))
    (signal,) = hook_signals
    assert subscriber_signals
    assert all(seen is signal for seen in subscriber_signals)
    assert adder.signals == [signal]


async def test_the_hooks_run_after_tool_started_and_before_tool_finished() -> None:
    adder = Adder()
    events: list[AgentEvent] = []
    at_before: list[list[str]] = []
    at_after: list[list[str]] = []

    def before(context: ToolCallContext) -> None:
        at_before.append([event.type for event in events])
        last = events[-1]
        assert last.type == "tool.started"
        assert last.payload.tool_call == context.tool_call

    def after(context: ToolCallContext, result: ToolResultMessage) -> None:
        at_after.append([event.type for event in events])

    agent = Agent(
        model=ScriptedModel([add_reply((1, 1)), text_reply("done")]),
        tools=adder.registry(),
        before_tool_call=before,
        after_tool_call=after,
    )
    agent.subscribe(lambda event, signal: events.append(event))
    async with asyncio.timeout(BOUND):
        completed(await agent.run("go"))
    prefix = ["message.accepted", "model.chunk", "tool.started"]
    assert at_before == [prefix]
    assert at_after == [prefix]
    assert [event.type for event in events][3] == "tool.finished"


# --- option checks ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "hooks",
    [
        pytest.param(object(), id="object"),
        pytest.param({"before_tool_call": None}, id="mapping"),
        pytest.param(print, id="function"),
        pytest.param((None, None), id="tuple"),
    ],
)
def test_an_invalid_hooks_option_is_a_type_error(hooks: object) -> None:
    model = ScriptedModel([text_reply("never")])
    with pytest.raises(TypeError, match=r"^hooks must be a ToolHooks or None$"):
        run_agent_loop(
            messages=[USER],
            model=model,
            tools=ToolRegistry(),
            max_steps=1,
            hooks=cast(Any, hooks),
        )
    assert model.call_count == 0


@pytest.mark.parametrize("name", ["before_tool_call", "after_tool_call"])
@pytest.mark.parametrize("value", [1, "hook", BlockToolCall(reason="x")])
def test_a_hook_that_is_not_callable_is_a_type_error(name: str, value: object) -> None:
    with pytest.raises(TypeError, match=rf"^ToolHooks.{name} must be callable or None$"):
        ToolHooks(**{name: cast(Any, value)})
    with pytest.raises(TypeError, match=rf"^ToolHooks.{name} must be callable or None$"):
        Agent(model=ScriptedModel([]), **{name: cast(Any, value)})


def test_hooks_default_to_none_and_accept_callables() -> None:
    assert ToolHooks() == ToolHooks(before_tool_call=None, after_tool_call=None)

    def before(context: ToolCallContext) -> None:
        return None

    assert ToolHooks(before_tool_call=before).before_tool_call is before


@pytest.mark.parametrize("reason", ["", "   ", "\n\t", 1, None, b"no"])
def test_block_tool_call_needs_a_non_empty_string_reason(reason: object) -> None:
    with pytest.raises(TypeError, match=r"^BlockToolCall.reason must be a non-empty string$"):
        BlockToolCall(reason=cast(Any, reason))


def test_block_tool_call_takes_its_reason_by_keyword() -> None:
    with pytest.raises(TypeError):
        BlockToolCall("")  # pyright: ignore[reportCallIssue]
    with pytest.raises(TypeError):
        BlockToolCall("a reason")  # pyright: ignore[reportCallIssue]
    assert BlockToolCall(reason="a reason").reason == "a reason"


@pytest.mark.parametrize("content", [1, None, b"x", ["x"]])
def test_replace_tool_result_needs_string_content(content: object) -> None:
    with pytest.raises(TypeError, match=r"^ReplaceToolResult.content must be a string$"):
        ReplaceToolResult(content=cast(Any, content))


@pytest.mark.parametrize("is_error", [1, 0, None, "true"])
def test_replace_tool_result_needs_a_bool_error_flag(is_error: object) -> None:
    with pytest.raises(TypeError, match=r"^ReplaceToolResult.is_error must be a bool$"):
        ReplaceToolResult(content="x", is_error=cast(Any, is_error))


def test_replace_tool_result_defaults_to_a_plain_result() -> None:
    assert ReplaceToolResult(content="").is_error is False
