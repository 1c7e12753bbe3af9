"""Checkpoint 07 cancellation: every abort point ends ``cancelled`` with complete messages only.

Blocked work is coordinated with ``asyncio.Event``s the tests control; there are no sleeps,
only ``await asyncio.sleep(0)`` loop turns. The sweep at the end aborts a multi-step run at
each of its await points in turn.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

import pytest

from factories import accept_anything, as_cancelled, drain, types_of
from tether import (
    AbortController,
    AbortError,
    AbortSignal,
    AgentEvent,
    AssistantMessage,
    EventStream,
    Message,
    ModelChunk,
    ModelRequest,
    ModelResponse,
    ModelUsage,
    RunResult,
    ScriptedModel,
    ScriptedReply,
    TextBlock,
    ToolDefinition,
    ToolExecutionContext,
    ToolRegistry,
    UserMessage,
    Valid,
    define_tool,
    run_agent_loop,
    text_reply,
    tool_call_reply,
)
from tether.models.scripted import ResponseFactory
from tether.protocol import TextDeltaChunk, ToolCallChunk, ToolValidation
from tether.protocol.transcript import validate_transcript
from tether.tools import NonRecoverableToolError

USER = UserMessage(id="user-1", content="Add some numbers.")
ZERO_USAGE = ModelUsage(input_tokens=0, output_tokens=0)
DEFAULT_REASON = "This operation was aborted"


# --- helpers ----------------------------------------------------------------------------------


def start(
    model: object,
    signal: AbortSignal,
    *,
    messages: Sequence[Message] = (USER,),
    tools: ToolRegistry | None = None,
    max_steps: int = 8,
) -> EventStream[AgentEvent, RunResult]:
    return run_agent_loop(
        messages=messages,
        model=cast(Any, model),
        tools=tools if tools is not None else ToolRegistry(),
        max_steps=max_steps,
        signal=signal,
    )


def assert_well_sequenced(events: Sequence[AgentEvent], result: RunResult) -> None:
    assert [event.sequence for event in events] == list(range(len(events)))
    assert types_of(events).count("run.finished") == 1
    last = events[-1]
    assert last.type == "run.finished"
    assert last.payload.result is result


def other_tasks() -> list[asyncio.Task[Any]]:
    current = asyncio.current_task()
    return [task for task in asyncio.all_tasks() if task is not current and not task.done()]


async def quiesce() -> None:
    """Give abandoned work a bounded number of loop turns to finish its cleanup."""
    for _ in range(50):
        if not other_tasks():
            return
        await asyncio.sleep(0)


def tool_from(
    name: str,
    execute: Callable[[object, ToolExecutionContext], Awaitable[object]],
    validate: Callable[[object], ToolValidation[object]] = accept_anything,
) -> ToolDefinition[object, Any]:
    return define_tool(
        name=name, description=f"the {name} tool", validate=validate, execute=cast(Any, execute)
    )


@dataclass
class Gate:
    """An await point: ``entered`` is set when work arrives, ``release`` lets it continue."""

    entered: asyncio.Event
    release: asyncio.Event
    finalized: list[str]

    @classmethod
    def new(cls) -> Gate:
        return cls(asyncio.Event(), asyncio.Event(), [])

    async def wait(self, label: str) -> None:
        self.entered.set()
        try:
            await self.release.wait()
        except asyncio.CancelledError:
            self.finalized.append(f"{label}: cancelled")
            raise
        finally:
            self.finalized.append(f"{label}: finally")


def blocking_tool(gate: Gate) -> ToolDefinition[object, Any]:
    async def execute(value: object, context: ToolExecutionContext) -> object:
        await gate.wait("tool")
        return "late"

    return tool_from("block", execute)


def response(*blocks: TextBlock, request_id: str = "request-001") -> ModelResponse:
    return ModelResponse(
        id="response-1",
        request_id=request_id,
        message=AssistantMessage(id="message-response-1", content=blocks),
        stop_reason="stop",
        usage=ZERO_USAGE,
    )


def delta(text: str) -> TextDeltaChunk:
    return TextDeltaChunk(request_id="request-001", delta=text)


# --- before and at the start ------------------------------------------------------------------


async def test_abort_before_the_call_emits_only_run_finished() -> None:
    controller = AbortController()
    controller.abort()
    model = ScriptedModel([text_reply("never")])
    starting: list[Message] = [USER, UserMessage(id="user-2", content="more")]

    events, result = await drain(start(model, controller.signal, messages=starting))

    assert types_of(events) == ["run.finished"]
    assert events[0].sequence == 0
    cancelled = as_cancelled(result)
    assert cancelled.reason == DEFAULT_REASON
    assert cancelled.messages == tuple(starting)
    assert model.call_count == 0


async def test_abort_after_the_call_before_the_run_starts_emits_only_run_finished() -> None:
    controller = AbortController()
    model = ScriptedModel([text_reply("never")])
    stream = start(model, controller.signal)
    controller.abort("changed my mind")

    events, result = await drain(stream)

    assert types_of(events) == ["run.finished"]
    assert as_cancelled(result).reason == "changed my mind"
    assert result.messages == (USER,)
    assert model.call_count == 0


async def test_abort_while_consuming_starting_messages_stops_before_any_model_output() -> None:
    controller = AbortController()
    gate = Gate.new()

    async def factory(request: ModelRequest, signal: AbortSignal) -> AsyncIterator[Any]:
        await gate.wait("model")
        yield response(request_id=request.id)

    starting: list[Message] = [USER, UserMessage(id="user-2", content="b")]
    stream = start(ScriptedModel([factory]), controller.signal, messages=starting)
    iterator = aiter(stream)
    first = await anext(iterator)
    controller.abort("stop reading")
    rest = [event async for event in iterator]
    result = await stream.result
    await quiesce()

    events = [first, *rest]
    assert types_of(events) == ["message.accepted", "message.accepted", "run.finished"]
    assert as_cancelled(result).reason == "stop reading"
    assert result.messages == tuple(starting)
    assert_well_sequenced(events, result)


# --- while blocked ----------------------------------------------------------------------------


async def test_abort_while_the_model_iterator_is_blocked_keeps_no_partial_message() -> None:
    controller = AbortController()
    gate = Gate.new()

    async def factory(request: ModelRequest, signal: AbortSignal) -> AsyncIterator[Any]:
        yield TextDeltaChunk(request_id=request.id, delta="Thinking")
        await gate.wait("model")
        yield TextDeltaChunk(request_id=request.id, delta=" never")

    stream = start(ScriptedModel([factory]), controller.signal)
    iterator = aiter(stream)
    events = [await anext(iterator), await anext(iterator)]
    await gate.entered.wait()
    controller.abort("user pressed stop")
    events += [event async for event in iterator]
    result = await stream.result
    await quiesce()

    assert types_of(events) == ["message.accepted", "model.chunk", "run.finished"]
    cancelled = as_cancelled(result)
    assert cancelled.reason == "user pressed stop"
    assert cancelled.messages == (USER,)
    assert gate.finalized == ["model: cancelled", "model: finally"]


class BlockingResultStream:
    """Streams one delta; its ``result`` blocks on a gate."""

    def __init__(self, gate: Gate) -> None:
        self._gate = gate

    def __aiter__(self) -> AsyncIterator[ModelChunk]:
        return self._chunks()

    async def _chunks(self) -> AsyncIterator[ModelChunk]:
        yield delta("done")

    @property
    def result(self) -> Awaitable[ModelResponse]:
        return self._settle()

    async def _settle(self) -> ModelResponse:
        await self._gate.wait("result")
        return response(TextBlock(text="done"))


class GateModel:
    def __init__(self, opened: object) -> None:
        self._opened = opened

    def stream(self, request: ModelRequest, signal: AbortSignal) -> Any:
        return self._opened


async def test_abort_while_awaiting_the_model_result_appends_nothing() -> None:
    controller = AbortController()
    gate = Gate.new()
    stream = start(GateModel(BlockingResultStream(gate)), controller.signal)
    consumer = asyncio.ensure_future(drain(stream))
    await gate.entered.wait()
    controller.abort()
    events, result = await consumer
    await quiesce()

    assert types_of(events) == ["message.accepted", "model.chunk", "run.finished"]
    assert as_cancelled(result).reason == DEFAULT_REASON
    assert result.messages == (USER,)
    assert gate.finalized == ["result: cancelled", "result: finally"]


async def test_abort_while_a_tool_is_blocked_leaves_tool_started_without_tool_finished() -> None:
    controller = AbortController()
    gate = Gate.new()
    model = ScriptedModel([tool_call_reply(("block", {}, "call-1")), text_reply("never")])
    stream = start(model, controller.signal, tools=ToolRegistry([blocking_tool(gate)]))
    consumer = asyncio.ensure_future(drain(stream))
    await gate.entered.wait()
    controller.abort("too slow")
    events, result = await consumer
    await quiesce()

    assert types_of(events) == ["message.accepted", "model.chunk", "tool.started", "run.finished"]
    cancelled = as_cancelled(result)
    assert cancelled.reason == "too slow"
    assert [message.role for message in cancelled.messages] == ["user", "assistant"]
    assert [d.code for d in validate_transcript(cancelled.messages)] == ["MISSING_TOOL_RESULT"]
    assert gate.finalized == ["tool: cancelled", "tool: finally"]
    assert model.call_count == 1
    assert_well_sequenced(events, result)


async def test_abort_while_the_second_tool_of_a_batch_is_blocked_keeps_the_first_result() -> None:
    controller = AbortController()
    gate = Gate.new()
    ran: list[str] = []

    async def quick(value: object, context: ToolExecutionContext) -> object:
        ran.append(context.tool_call_id)
        return "quick"

    model = ScriptedModel(
        [tool_call_reply(("quick", {}, "call-1"), ("block", {}, "call-2")), text_reply("never")]
    )
    tools = ToolRegistry([tool_from("quick", quick), blocking_tool(gate)])
    consumer = asyncio.ensure_future(drain(start(model, controller.signal, tools=tools)))
    await gate.entered.wait()
    controller.abort()
    events, result = await consumer
    await quiesce()

    assert types_of(events)[-4:] == [
        "tool.started",
        "tool.finished",
        "tool.started",
        "run.finished",
    ]
    assert [message.role for message in result.messages] == ["user", "assistant", "toolResult"]
    assert ran == ["call-1"]
    assert result.status == "cancelled"


# --- aborts from inside the model or a tool (between phases) ----------------------------------


class SelfAbortingStream:
    """A model stream that aborts the run at one chosen moment."""

    def __init__(self, controller: AbortController, where: str) -> None:
        self._controller = controller
        self._where = where
        self._sent = False

    def __aiter__(self) -> SelfAbortingStream:
        return self

    async def __anext__(self) -> ModelChunk:
        if self._sent:
            raise StopAsyncIteration
        self._sent = True
        if self._where == "next-returns":
            self._controller.abort("aborted in next")
        if self._where == "next-raises":
            self._controller.abort("aborted in next")
            raise RuntimeError("next failed after abort")
        return delta("hi")

    @property
    def result(self) -> Awaitable[ModelResponse]:
        return self._settle()

    async def _settle(self) -> ModelResponse:
        if self._where.startswith("result"):
            self._controller.abort("aborted in result")
        if self._where == "result-raises":
            raise RuntimeError("result failed after abort")
        return response(TextBlock(text="hi"))


class SelfAbortingModel:
    def __init__(self, controller: AbortController, where: str) -> None:
        self._controller = controller
        self._where = where

    def stream(self, request: ModelRequest, signal: AbortSignal) -> SelfAbortingStream:
        if self._where.startswith("stream"):
            self._controller.abort("aborted in stream")
        if self._where == "stream-raises":
            raise RuntimeError("stream failed after abort")
        return SelfAbortingStream(self._controller, self._where)


@pytest.mark.parametrize(
    ("where", "reason", "chunks"),
    [
        ("stream-returns", "aborted in stream", 0),
        ("stream-raises", "aborted in stream", 0),
        ("next-returns", "aborted in next", 0),
        ("next-raises", "aborted in next", 0),
        ("result-returns", "aborted in result", 1),
        ("result-raises", "aborted in result", 1),
    ],
)
async def test_an_abort_inside_the_model_wins_over_its_outcome(
    where: str, reason: str, chunks: int
) -> None:
    controller = AbortController()

    events, result = await drain(start(SelfAbortingModel(controller, where), controller.signal))

    assert as_cancelled(result).reason == reason
    assert result.messages == (USER,)
    assert types_of(events).count("model.chunk") == chunks
    assert_well_sequenced(events, result)


def self_aborting_tool(controller: AbortController, where: str) -> ToolDefinition[object, Any]:
    def validate(value: object) -> ToolValidation[object]:
        if where == "validate":
            controller.abort("aborted in validate")
        return Valid(value=value)

    async def execute(value: object, context: ToolExecutionContext) -> object:
        if where == "execute-returns":
            controller.abort("aborted in execute")
        if where == "execute-raises":
            controller.abort("aborted in execute")
            raise ValueError("ordinary failure after abort")
        if where == "execute-non-recoverable":
            controller.abort("aborted in execute")
            raise NonRecoverableToolError("fatal after abort")
        return "ok"

    return tool_from("tool", execute, validate)


@pytest.mark.parametrize(
    ("where", "reason"),
    [
        ("validate", "aborted in validate"),
        ("execute-returns", "aborted in execute"),
        ("execute-raises", "aborted in execute"),
        ("execute-non-recoverable", "aborted in execute"),
    ],
)
async def test_an_abort_inside_a_tool_wins_and_no_result_is_fabricated(
    where: str, reason: str
) -> None:
    controller = AbortController()
    model = ScriptedModel([tool_call_reply(("tool", {}, "call-1")), text_reply("never")])
    tools = ToolRegistry([self_aborting_tool(controller, where)])

    events, result = await drain(start(model, controller.signal, tools=tools))

    assert as_cancelled(result).reason == reason
    assert types_of(events)[-2:] == ["tool.started", "run.finished"]
    assert [message.role for message in result.messages] == ["user", "assistant"]
    assert model.call_count == 1


class AbortingMapping(Mapping[str, object]):
    """A chunk or response in mapping form whose first field read aborts the run."""

    def __init__(self, data: dict[str, object], controller: AbortController) -> None:
        self._data = data
        self._controller = controller

    def __getitem__(self, key: str) -> object:
        self._controller.abort("aborted while inspecting")
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


class ItemsStream:
    def __init__(self, items: Sequence[object], outcome: object) -> None:
        self._items: deque[object] = deque(items)
        self._outcome = outcome

    def __aiter__(self) -> ItemsStream:
        return self

    async def __anext__(self) -> Any:
        if not self._items:
            raise StopAsyncIteration
        return self._items.popleft()

    @property
    def result(self) -> Awaitable[Any]:
        return self._settle()

    async def _settle(self) -> Any:
        return self._outcome


@pytest.mark.parametrize(
    "chunk",
    [
        pytest.param({"type": "textDelta", "requestId": "request-001", "delta": "hi"}, id="valid"),
        pytest.param({"type": "image"}, id="unsupported-type"),
        pytest.param(
            {"type": "textDelta", "requestId": "request-009", "delta": "hi"}, id="other-request"
        ),
    ],
)
async def test_an_abort_while_a_chunk_is_inspected_wins_and_the_chunk_is_not_emitted(
    chunk: dict[str, object],
) -> None:
    controller = AbortController()
    opened = ItemsStream([AbortingMapping(chunk, controller)], response(TextBlock(text="hi")))

    events, result = await drain(start(GateModel(opened), controller.signal))

    assert as_cancelled(result).reason == "aborted while inspecting"
    assert types_of(events) == ["message.accepted", "run.finished"]
    assert result.messages == (USER,)


async def test_an_abort_while_the_response_is_inspected_wins_over_its_protocol_error() -> None:
    controller = AbortController()
    raw: dict[str, object] = {
        "id": "r",
        "requestId": "request-001",
        "message": {"id": "m", "role": "assistant", "content": []},
        "stopReason": "weird",
        "usage": {"inputTokens": 0, "outputTokens": 0},
    }
    opened = ItemsStream([], AbortingMapping(raw, controller))

    _, result = await drain(start(GateModel(opened), controller.signal))

    assert as_cancelled(result).reason == "aborted while inspecting"
    assert result.messages == (USER,)


@pytest.mark.parametrize("where", ["tool", "model"])
async def test_an_abort_by_the_awaited_work_itself_before_it_blocks_settles_the_run(
    where: str,
) -> None:
    controller = AbortController()
    gate = Gate.new()

    async def execute(value: object, context: ToolExecutionContext) -> object:
        controller.abort("self abort")
        await gate.wait("tool")
        return "late"

    class SelfAbortingIterator:
        def __aiter__(self) -> SelfAbortingIterator:
            return self

        async def __anext__(self) -> ModelChunk:
            controller.abort("self abort")
            await gate.wait("model")
            raise StopAsyncIteration

    model: object
    if where == "tool":
        model = ScriptedModel([tool_call_reply(("block", {})), text_reply("never")])
    else:
        model = GateModel(SelfAbortingIterator())
    stream = start(model, controller.signal, tools=ToolRegistry([tool_from("block", execute)]))
    for _ in range(20):
        await asyncio.sleep(0)
    settled_while_blocked = stream.settled
    gate.release.set()
    _, result = await drain(stream)
    await quiesce()

    assert as_cancelled(result).reason == "self abort"
    assert settled_while_blocked


# --- reasons ----------------------------------------------------------------------------------


class ReasonWithMessage:
    message = "custom message"


class ReasonWithoutMessage:
    pass


REASONS = [
    pytest.param(None, DEFAULT_REASON, id="default-abort-error"),
    pytest.param("stop now", "stop now", id="string-as-is"),
    pytest.param(AbortError("custom abort"), "custom abort", id="abort-error-message"),
    pytest.param(ReasonWithMessage(), "custom message", id="object-with-message"),
    pytest.param(RuntimeError("boom"), "boom", id="exception-message"),
    pytest.param(
        ValueError(""),
        "The run was cancelled",
        id="exception-without-message",
    ),
    pytest.param(42, "The run was cancelled", id="number"),
    pytest.param(
        ReasonWithoutMessage(),
        "The run was cancelled",
        id="object-without-message",
    ),
    pytest.param(
        "",
        "The run was cancelled",
        id="empty-string",
    ),
]


@pytest.mark.parametrize(("reason", "expected"), REASONS)
async def test_the_cancelled_reason_text_follows_the_reason_rules(
    reason: object, expected: str
) -> None:
    controller = AbortController()
    controller.abort(reason)

    _, result = await drain(start(ScriptedModel([text_reply("never")]), controller.signal))

    assert as_cancelled(result).reason == expected


@pytest.mark.parametrize(
    ("reason", "expected"),
    [
        pytest.param("blocked too long", "blocked too long", id="string"),
        pytest.param(ReasonWithMessage(), "custom message", id="object-with-message"),
        pytest.param(
            TimeoutError("tool timed out"),
            "tool timed out",
            id="exception",
        ),
    ],
)
async def test_the_reason_of_an_abort_during_a_tool_follows_the_same_rules(
    reason: object, expected: str
) -> None:
    controller = AbortController()
    gate = Gate.new()
    model = ScriptedModel([tool_call_reply(("block", {})), text_reply("never")])
    stream = start(model, controller.signal, tools=ToolRegistry([blocking_tool(gate)]))
    consumer = asyncio.ensure_future(drain(stream))
    await gate.entered.wait()
    controller.abort(reason)
    _, result = await consumer
    await quiesce()

    assert as_cancelled(result).reason == expected


async def test_a_combined_signal_cancels_the_run_with_the_reason_of_the_source_that_aborted() -> (
    None
):
    first = AbortController()
    second = AbortController()
    gate = Gate.new()
    model = ScriptedModel([tool_call_reply(("block", {})), text_reply("never")])
    combined = AbortSignal.any([first.signal, second.signal])
    stream = start(model, combined, tools=ToolRegistry([blocking_tool(gate)]))
    consumer = asyncio.ensure_future(drain(stream))
    await gate.entered.wait()
    second.abort("second source")
    first.abort("first source, too late")
    events, result = await consumer
    await quiesce()

    assert as_cancelled(result).reason == "second source"
    assert types_of(events)[-2:] == ["tool.started", "run.finished"]


async def test_a_combined_signal_with_an_aborted_source_cancels_before_start() -> None:
    first = AbortController()
    first.abort("already gone")
    model = ScriptedModel([text_reply("never")])

    events, result = await drain(
        start(model, AbortSignal.any([AbortController().signal, first.signal]))
    )

    assert as_cancelled(result).reason == "already gone"
    assert types_of(events) == ["run.finished"]
    assert model.call_count == 0


# --- the cancellation sweep -------------------------------------------------------------------


class Checkpoints:
    """Every await point of the sweep's model and tool stops here until the driver decides."""

    def __init__(self) -> None:
        self.labels: list[str] = []
        self._waiting: deque[asyncio.Event] = deque()
        self._arrived = asyncio.Event()

    async def reach(self, label: str) -> None:
        gate = asyncio.Event()
        self.labels.append(label)
        self._waiting.append(gate)
        self._arrived.set()
        await gate.wait()

    async def next_gate(self) -> asyncio.Event:
        while not self._waiting:
            self._arrived.clear()
            await self._arrived.wait()
        return self._waiting.popleft()


SWEEP_REPLIES: tuple[ScriptedReply, ...] = (
    tool_call_reply(("add", {"left": 1, "right": 2}, "call-1"), text=("First, ",)),
    tool_call_reply(("add", {"left": 3, "right": 4}, "call-2"), text=("then ",)),
    tool_call_reply(("add", {"left": 5, "right": 6}, "call-3"), text=("finally ",)),
    text_reply("The sums are ", "3, 7 and 11."),
)


def gated_turn(points: Checkpoints, turn: int, reply: ScriptedReply) -> ResponseFactory:
    """A scripted turn that waits at a checkpoint before each chunk and before its response."""

    async def factory(request: ModelRequest, signal: AbortSignal) -> AsyncIterator[Any]:
        final = reply.response_for(request)
        for position, block in enumerate(final.message.content):
            await points.reach(f"turn {turn}: chunk {position}")
            if block.type == "text":
                yield TextDeltaChunk(request_id=request.id, delta=block.text)
            elif block.type == "toolCall":
                yield ToolCallChunk(request_id=request.id, tool_call=block)
        await points.reach(f"turn {turn}: response")
        yield final

    return factory


def gated_add(points: Checkpoints) -> ToolDefinition[object, Any]:
    async def execute(value: object, context: ToolExecutionContext) -> object:
        arguments = cast(dict[str, int], value)
        await points.reach(f"{context.tool_call_id}: started")
        total = arguments["left"] + arguments["right"]
        await points.reach(f"{context.tool_call_id}: computed")
        return total

    return tool_from("add", execute)


@dataclass
class SweepRun:
    events: list[AgentEvent]
    result: RunResult
    reached: int
    aborted_at: str | None


async def sweep_run(abort_at: int | None, mode: Literal["abort", "abort-and-release"]) -> SweepRun:
    """Run the sweep's script, releasing every checkpoint except the ``abort_at``-th."""
    controller = AbortController()
    points = Checkpoints()
    model = ScriptedModel(
        [gated_turn(points, turn, reply) for turn, reply in enumerate(SWEEP_REPLIES, 1)]
    )
    stream = start(model, controller.signal, tools=ToolRegistry([gated_add(points)]))
    consumer = asyncio.ensure_future(drain(stream))
    reached = 0
    aborted_at: str | None = None
    while True:
        arrival = asyncio.ensure_future(points.next_gate())
        await asyncio.wait({arrival, consumer}, return_when=asyncio.FIRST_COMPLETED)
        if not arrival.done():
            arrival.cancel()
            await asyncio.wait({arrival})
            break
        gate = arrival.result()
        if reached == abort_at:
            aborted_at = points.labels[reached]
            controller.abort(f"abort at {reached}")
            if mode == "abort-and-release":
                gate.set()
        else:
            gate.set()
        reached += 1
    events, result = consumer.result()
    await quiesce()
    assert other_tasks() == [], f"tasks left after aborting at {aborted_at}"
    return SweepRun(events, result, reached, aborted_at)


def event_shape(event: AgentEvent) -> tuple[str, object]:
    match event.type:
        case "message.accepted":
            return event.type, event.payload.message
        case "model.chunk":
            return event.type, event.payload.chunk
        case "tool.started":
            return event.type, event.payload.tool_call
        case "tool.finished":
            return event.type, event.payload.message
        case "model.retry":
            return event.type, event.payload
        case "tool.progress":
            return event.type, event.payload
        case "run.finished":
            return event.type, None


@pytest.mark.parametrize("mode", ["abort", "abort-and-release"])
async def test_cancellation_sweep_aborting_at_every_await_point(
    mode: Literal["abort", "abort-and-release"],
) -> None:
    reference = await sweep_run(None, mode)
    assert reference.result.status == "completed"
    total = reference.reached
    reference_shapes = [event_shape(event) for event in reference.events[:-1]]
    covered: list[str] = []

    for k in range(total + 1):
        outcome = await sweep_run(k, mode)
        if outcome.aborted_at is None:
            assert k == total
            assert outcome.result == reference.result
            break
        covered.append(outcome.aborted_at)
        result = as_cancelled(outcome.result)
        assert result.reason == f"abort at {k}"
        assert_well_sequenced(outcome.events, result)
        shapes = [event_shape(event) for event in outcome.events[:-1]]
        assert shapes == reference_shapes[: len(shapes)], outcome.aborted_at
        messages = result.messages
        assert messages == reference.result.messages[: len(messages)], outcome.aborted_at
        codes = [diagnostic.code for diagnostic in validate_transcript(messages)]
        assert codes in ([], ["MISSING_TOOL_RESULT"]), outcome.aborted_at
        started = types_of(outcome.events).count("tool.started")
        finished = types_of(outcome.events).count("tool.finished")
        assert started - finished in (0, 1)
        assert finished == sum(message.role == "toolResult" for message in messages)

    assert len(covered) == total
    assert total >= 18
    assert any(label.endswith(": started") for label in covered)
    assert any(label.endswith(": computed") for label in covered)
    assert any(label.endswith(": response") for label in covered)
    assert any(": chunk " in label for label in covered)


def waiting_turns() -> list[ResponseFactory]:
    """The sweep's replies from a model that waits for each turn, as a network provider does.

    A model answering from memory may finish a whole run before the consumer reads its first
    event; one that waits gives the consumer a turn per step, and so a chance to abort.
    """

    def waiting(reply: ScriptedReply) -> ResponseFactory:
        async def factory(
            request: ModelRequest, signal: AbortSignal
        ) -> AsyncIterator[ModelChunk | ModelResponse]:
            await asyncio.sleep(0)
            async for item in reply(request, signal):
                yield item

        return factory

    return [waiting(reply) for reply in SWEEP_REPLIES]


async def test_cancellation_sweep_aborting_after_each_event_the_consumer_sees() -> None:
    reference_events, reference = await drain(
        start(ScriptedModel(waiting_turns()), AbortController().signal, tools=plain_add())
    )
    assert reference.status == "completed"
    reference_shapes = [event_shape(event) for event in reference_events[:-1]]
    cancelled_runs = 0

    for index in range(len(reference_events) - 1):
        controller = AbortController()
        stream = start(ScriptedModel(waiting_turns()), controller.signal, tools=plain_add())
        events: list[AgentEvent] = []
        settled_first = False
        async for event in stream:
            events.append(event)
            if len(events) == index + 1:
                settled_first = stream.settled
                controller.abort(f"abort after event {index}")
        result = await stream.result
        await quiesce()

        assert_well_sequenced(events, result)
        assert other_tasks() == []
        if settled_first:  # the producer ran ahead and finished before the abort
            assert result == reference
            continue
        cancelled_runs += 1
        assert as_cancelled(result).reason == f"abort after event {index}"
        shapes = [event_shape(event) for event in events[:-1]]
        assert len(shapes) > index
        assert shapes == reference_shapes[: len(shapes)]
        assert result.messages == reference.messages[: len(result.messages)]
        codes = [diagnostic.code for diagnostic in validate_transcript(result.messages)]
        assert codes in ([], ["MISSING_TOOL_RESULT"])

    assert cancelled_runs >= 10


def plain_add() -> ToolRegistry:
    async def execute(value: object, context: ToolExecutionContext) -> object:
        arguments = cast(dict[str, int], value)
        return arguments["left"] + arguments["right"]

    return ToolRegistry([tool_from("add", execute)])
