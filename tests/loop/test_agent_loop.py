"""Checkpoint 07: ``run_agent_loop`` (options, snapshots, events, statuses, model boundary).

Limits live in ``test_loop_limits.py`` and cancellation in ``test_loop_cancellation.py``.
Every run's ``result`` is awaited so no task is left pending; no sleeps, only loop turns.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import re
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, cast

import pytest

from factories import (
    accept_anything,
    as_completed,
    as_failed,
    chunks_of,
    delta,
    drain,
    text,
    types_of,
)
from tether import (
    AbortController,
    AbortSignal,
    AgentEvent,
    AssistantMessage,
    EventStream,
    FailedRunResult,
    FixtureProviderAdapter,
    JsonObject,
    MaxStepsRunResult,
    Message,
    ModelChunk,
    ModelRequest,
    ModelResponse,
    ModelStream,
    ModelUsage,
    RunResult,
    ScriptedModel,
    ToolCall,
    ToolDefinition,
    ToolExecutionContext,
    ToolRegistry,
    ToolResultMessage,
    UserMessage,
    define_tool,
    run_agent_loop,
    text_reply,
    to_json,
    tool,
    tool_call_reply,
)
from tether.protocol import (
    AssistantBlock,
    StopReason,
    ToolCallChunk,
)
from tether.protocol.transcript import validate_transcript
from tether.tools import NonRecoverableToolError

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "provider-tool-roundtrip.json"
USER = UserMessage(id="user-1", content="What is 20 + 22?")
ZERO_USAGE = ModelUsage(input_tokens=0, output_tokens=0)


# --- tools ------------------------------------------------------------------------------------


@tool
async def add(left: int, right: int) -> int:
    """Add two integers.

    Args:
        left: The first addend.
        right: The second addend.
    """
    return left + right


def recording_tool(name: str, log: list[str], output: object = "ok") -> ToolDefinition[object, Any]:
    """A tool that accepts any arguments, records its call ID and returns ``output``."""

    async def execute(value: object, context: ToolExecutionContext) -> object:
        log.append(context.tool_call_id)
        return output

    return define_tool(
        name=name, description=f"records {name}", validate=accept_anything, execute=execute
    )


def raising_tool(name: str, error: Exception) -> ToolDefinition[object, Any]:
    async def execute(value: object, context: ToolExecutionContext) -> object:
        raise error

    return define_tool(name=name, description="raises", validate=accept_anything, execute=execute)


# --- protocol values --------------------------------------------------------------------------


def call(call_id: str, name: str = "add", **arguments: object) -> ToolCall:
    return ToolCall(id=call_id, name=name, arguments=JsonObject(arguments))


def call_chunk(tool_call: ToolCall, request_id: str = "request-001") -> ToolCallChunk:
    return ToolCallChunk(request_id=request_id, tool_call=tool_call)


def response(
    *blocks: AssistantBlock,
    request_id: str = "request-001",
    stop_reason: StopReason | None = None,
    response_id: str = "response-1",
) -> ModelResponse:
    has_calls = any(block.type == "toolCall" for block in blocks)
    return ModelResponse(
        id=response_id,
        request_id=request_id,
        message=AssistantMessage(id=f"message-{response_id}", content=blocks),
        stop_reason=stop_reason or ("toolCall" if has_calls else "stop"),
        usage=ZERO_USAGE,
    )


def assistant(message_id: str, *blocks: AssistantBlock) -> AssistantMessage:
    return AssistantMessage(id=message_id, content=blocks)


def result_for(tool_call: ToolCall, content: str = "ok") -> ToolResultMessage:
    return ToolResultMessage(
        id=f"tool-result-{tool_call.id}",
        tool_call_id=tool_call.id,
        tool_name=tool_call.name,
        content=content,
        is_error=False,
    )


# --- a model that is not a ScriptedModel --------------------------------------------------------


class TurnIterator:
    """Yields fixed items; an exception instance among them is raised instead."""

    def __init__(self, items: Sequence[object]) -> None:
        self._items: deque[object] = deque(items)
        self.closed = False

    def __aiter__(self) -> TurnIterator:
        return self

    async def __anext__(self) -> Any:
        if not self._items:
            raise StopAsyncIteration
        item = self._items.popleft()
        if isinstance(item, BaseException):
            raise item
        return item

    async def aclose(self) -> None:
        self.closed = True


class TurnStream:
    """A ``ModelStream`` of its own: async-iterable chunks plus a ``result`` property."""

    def __init__(self, items: Sequence[object], outcome: object) -> None:
        self.iterator = TurnIterator(items)
        self._outcome = outcome

    def __aiter__(self) -> TurnIterator:
        return self.iterator

    @property
    def result(self) -> Awaitable[Any]:
        return self._settle()

    async def _settle(self) -> Any:
        if isinstance(self._outcome, BaseException):
            raise self._outcome
        return self._outcome


class TurnModel:
    """Each ``stream()`` call plays the next ``(items, outcome)`` turn."""

    def __init__(self, *turns: tuple[Sequence[object], object]) -> None:
        self._turns = deque(turns)
        self.requests: list[ModelRequest] = []
        self.streams: list[TurnStream] = []

    def stream(self, request: ModelRequest, signal: AbortSignal) -> TurnStream:
        self.requests.append(request)
        items, outcome = self._turns.popleft()
        opened = TurnStream(items, outcome)
        self.streams.append(opened)
        return opened


class FactoryModel:
    """``stream()`` returns whatever ``factory(request, signal)`` returns (or raises)."""

    def __init__(self, factory: Callable[[ModelRequest, AbortSignal], object]) -> None:
        self._factory = factory
        self.calls = 0

    def stream(self, request: ModelRequest, signal: AbortSignal) -> Any:
        self.calls += 1
        return self._factory(request, signal)


class SpyModel:
    """A model that must never be called."""

    def __init__(self) -> None:
        self.calls = 0

    def stream(self, request: ModelRequest, signal: AbortSignal) -> ModelStream:
        self.calls += 1
        raise AssertionError("the model must not be called")


# --- running ----------------------------------------------------------------------------------


def start(
    model: object,
    *,
    messages: Sequence[object] = (USER,),
    tools: ToolRegistry | None = None,
    max_steps: int = 8,
    signal: AbortSignal | None = None,
    request_sequence_start: int | None = 0,
) -> EventStream[AgentEvent, RunResult]:
    return run_agent_loop(
        messages=cast(Any, messages),
        model=cast(Any, model),
        tools=tools if tools is not None else ToolRegistry(),
        max_steps=max_steps,
        signal=signal if signal is not None else AbortController().signal,
        request_sequence_start=request_sequence_start,
    )


async def run(model: object, **options: Any) -> tuple[list[AgentEvent], RunResult]:
    return await drain(start(model, **options))


def assert_failed(result: RunResult, code: str, message: str | None = None) -> FailedRunResult:
    failed = as_failed(result)
    assert failed.error.code == code
    if message is not None:
        assert failed.error.message == message
    return failed


def assert_well_sequenced(events: Sequence[AgentEvent], result: RunResult) -> None:
    """Sequences 0..n-1, ``run.finished`` exactly once and last, carrying the result."""
    assert [event.sequence for event in events] == list(range(len(events)))
    assert types_of(events).count("run.finished") == 1
    last = events[-1]
    assert last.type == "run.finished"
    assert last.payload.result is result


# --- option checks ----------------------------------------------------------------------------

MAX_STEPS_TYPE = "max_steps must be a positive safe integer"
MAX_STEPS_CAP = "max_steps must not exceed 64 (raise RunLimits.max_steps"
START = "request_sequence_start must be a non-negative safe integer"
MODEL_CONTRACT = r"model must implement the Model contract"
MODEL_STREAM = "model.stream must be a function"
TOOLS = "tools must be a ToolRegistry"
SIGNAL = "signal must be an AbortSignal"


class NotCallableStream:
    stream = "not a function"


class LookalikeSignal:
    aborted = False
    reason = None


def option_overrides(**overrides: Any) -> dict[str, Any]:
    return overrides


OPTION_CASES = [
    pytest.param(option_overrides(max_steps=0), MAX_STEPS_TYPE, id="max_steps-zero"),
    pytest.param(option_overrides(max_steps=-1), MAX_STEPS_TYPE, id="max_steps-negative"),
    pytest.param(option_overrides(max_steps=True), MAX_STEPS_TYPE, id="max_steps-bool"),
    pytest.param(option_overrides(max_steps=False), MAX_STEPS_TYPE, id="max_steps-false"),
    pytest.param(option_overrides(max_steps=1.0), MAX_STEPS_TYPE, id="max_steps-float"),
    pytest.param(option_overrides(max_steps=2.5), MAX_STEPS_TYPE, id="max_steps-fraction"),
    pytest.param(option_overrides(max_steps="1"), MAX_STEPS_TYPE, id="max_steps-str"),
    pytest.param(option_overrides(max_steps=None), MAX_STEPS_TYPE, id="max_steps-none"),
    pytest.param(option_overrides(max_steps=2**53), MAX_STEPS_TYPE, id="max_steps-unsafe"),
    pytest.param(option_overrides(max_steps=65), MAX_STEPS_CAP, id="max_steps-65"),
    pytest.param(option_overrides(max_steps=2**53 - 1), MAX_STEPS_CAP, id="max_steps-max-safe"),
    pytest.param(option_overrides(request_sequence_start=-1), START, id="start-negative"),
    pytest.param(option_overrides(request_sequence_start=2**53), START, id="start-unsafe"),
    pytest.param(
        option_overrides(request_sequence_start=2**53 - 1, max_steps=1),
        START,
        id="start-plus-steps-unsafe",
    ),
    pytest.param(option_overrides(request_sequence_start=True), START, id="start-bool"),
    pytest.param(option_overrides(request_sequence_start=1.0), START, id="start-float"),
    pytest.param(option_overrides(request_sequence_start="0"), START, id="start-str"),
    pytest.param(option_overrides(model=None), MODEL_CONTRACT, id="model-none"),
    pytest.param(option_overrides(model=42), MODEL_CONTRACT, id="model-int"),
    pytest.param(option_overrides(model="model"), MODEL_CONTRACT, id="model-str"),
    pytest.param(option_overrides(model=object()), MODEL_STREAM, id="model-without-stream"),
    pytest.param(
        option_overrides(model=NotCallableStream()), MODEL_STREAM, id="model-stream-not-callable"
    ),
    pytest.param(option_overrides(tools=None), TOOLS, id="tools-none"),
    pytest.param(option_overrides(tools=[add]), TOOLS, id="tools-list"),
    pytest.param(option_overrides(tools={"add": add}), TOOLS, id="tools-dict"),
    pytest.param(option_overrides(signal=AbortController()), SIGNAL, id="signal-controller"),
    pytest.param(option_overrides(signal=LookalikeSignal()), SIGNAL, id="signal-lookalike"),
    # Several options are wrong at once: the first check in the documented order wins.
    pytest.param(
        option_overrides(
            max_steps=0, request_sequence_start=-1, model=None, tools=None, signal=None
        ),
        MAX_STEPS_TYPE,
        id="order-max_steps-first",
    ),
    pytest.param(
        option_overrides(
            max_steps=65, request_sequence_start=-1, model=None, tools=None, signal=None
        ),
        MAX_STEPS_CAP,
        id="order-max_steps-cap-before-start",
    ),
    pytest.param(
        option_overrides(request_sequence_start=-1, model=None, tools=None, signal=None),
        START,
        id="order-start-before-model",
    ),
    pytest.param(
        option_overrides(model=None, tools=None, signal=None),
        MODEL_CONTRACT,
        id="order-model-before-tools",
    ),
    pytest.param(
        option_overrides(model=object(), tools=None, signal=None),
        MODEL_STREAM,
        id="order-model-stream-before-tools",
    ),
    pytest.param(option_overrides(tools=None, signal=None), TOOLS, id="order-tools-before-signal"),
]


@pytest.mark.parametrize(("overrides", "message"), OPTION_CASES)
async def test_invalid_options_raise_type_error_and_never_call_the_model(
    overrides: dict[str, Any], message: str
) -> None:
    spy = SpyModel()
    options: dict[str, Any] = {
        "messages": [USER],
        "model": spy,
        "tools": ToolRegistry(),
        "max_steps": 1,
        "signal": AbortController().signal,
        **overrides,
    }

    pattern = message if message == MODEL_CONTRACT else re.escape(message)
    with pytest.raises(TypeError, match=f"^{pattern}"):
        run_agent_loop(**options)

    await asyncio.sleep(0)
    assert spy.calls == 0


def test_model_contract_message_names_the_model_protocol() -> None:
    # The workshop says "CourseModel"; tether's protocol is ``tether.Model``.
    with pytest.raises(TypeError) as info:
        run_agent_loop(
            messages=[USER],
            model=cast(Any, None),
            tools=ToolRegistry(),
            max_steps=1,
            signal=AbortController().signal,
        )
    assert (
        str(info.value)
        == "model must implement the Model contract (a stream(request, signal) method)"
    )


@pytest.mark.parametrize(
    ("start_at", "max_steps", "first_id"),
    [
        (None, 1, "request-001"),
        (0, 64, "request-001"),
        (5, 2, "request-006"),
        (63, 1, "request-064"),
    ],
)
async def test_valid_request_sequence_starts_name_the_first_request(
    start_at: int | None, max_steps: int, first_id: str
) -> None:
    model = ScriptedModel([text_reply("hi")])

    _, result = await run(model, max_steps=max_steps, request_sequence_start=start_at)

    assert result.status == "completed"
    assert [request.id for request in model.requests] == [first_id]


async def test_model_stream_is_read_once_and_called_with_the_model_as_self() -> None:
    inner = ScriptedModel([tool_call_reply(("echo", {})), text_reply("done")])
    reads: list[str] = []

    class CountingModel:
        @property
        def stream(self) -> Callable[[ModelRequest, AbortSignal], EventStream[Any, Any]]:
            reads.append("stream")
            owner = self

            def opened(request: ModelRequest, signal: AbortSignal) -> EventStream[Any, Any]:
                assert owner is model
                return inner.stream(request, signal)

            return opened

    model = CountingModel()
    stream = start(model, tools=ToolRegistry([recording_tool("echo", [])]))
    assert reads == ["stream"]

    _, result = await drain(stream)

    assert result.status == "completed"
    assert inner.call_count == 2
    assert reads == ["stream"]


# --- snapshots --------------------------------------------------------------------------------


async def test_tools_registered_after_the_call_are_invisible_to_the_run() -> None:
    log: list[str] = []
    registry = ToolRegistry()
    model = ScriptedModel([tool_call_reply(("late", {}, "call-late")), text_reply("done")])
    stream = start(model, tools=registry)
    registry.register(recording_tool("late", log))

    events, result = await drain(stream)

    assert result.status == "completed"
    assert log == []
    finished = [event.payload.message for event in events if event.type == "tool.finished"]
    assert len(finished) == 1
    assert finished[0].is_error
    assert json.loads(finished[0].content)["error"]["code"] == "TOOL_NOT_FOUND"


async def test_a_registry_subclass_overriding_snapshot_is_ignored() -> None:
    real: list[str] = []
    decoy: list[str] = []
    snapshots: list[str] = []

    class SneakyRegistry(ToolRegistry):
        def snapshot(self) -> ToolRegistry:
            snapshots.append("called")
            return ToolRegistry([recording_tool("echo", decoy)])

    registry = SneakyRegistry([recording_tool("echo", real)])
    model = ScriptedModel([tool_call_reply(("echo", {}, "call-1")), text_reply("done")])

    _, result = await run(model, tools=registry)

    assert result.status == "completed"
    assert snapshots == []
    assert real == ["call-1"]
    assert decoy == []


async def test_caller_mutating_the_starting_list_afterwards_has_no_effect() -> None:
    messages: list[Message] = [USER]
    model = ScriptedModel([text_reply("hi")])
    stream = start(model, messages=messages)
    messages.append(UserMessage(id="user-2", content="sneaky"))

    events, result = await drain(stream)

    assert result.status == "completed"
    assert model.requests[0].messages == (USER,)
    assert types_of(events) == ["message.accepted", "model.chunk", "run.finished"]


async def test_json_shaped_starting_messages_are_rebuilt_as_protocol_messages() -> None:
    raw: list[object] = [
        {"id": "u1", "role": "user", "content": "add"},
        {
            "id": "a1",
            "role": "assistant",
            "content": [{"type": "toolCall", "id": "c1", "name": "add", "arguments": {"left": 1}}],
        },
        {
            "id": "r1",
            "role": "toolResult",
            "toolCallId": "c1",
            "toolName": "add",
            "content": "1",
            "isError": False,
        },
    ]
    model = ScriptedModel([text_reply("ok")])

    events, result = await run(model, messages=raw)

    assert result.status == "completed"
    accepted = [event.payload.message for event in events if event.type == "message.accepted"]
    assert [type(message) for message in accepted] == [
        UserMessage,
        AssistantMessage,
        ToolResultMessage,
    ]
    assert to_json(tuple(accepted)) == raw
    assert model.requests[0].messages == tuple(accepted)


# --- invalid starting transcripts -------------------------------------------------------------

C1 = call("c1", left=1, right=2)
C2 = call("c2", left=3, right=4)

INVALID_TRANSCRIPTS = [
    pytest.param([USER, result_for(C1)], id="orphan-result"),
    pytest.param([USER, assistant("a1", C1)], id="missing-result"),
    pytest.param(
        [USER, assistant("a1", C1), result_for(C1), assistant("a2", C1), result_for(C1)],
        id="duplicate-call-id",
    ),
    pytest.param(
        [
            USER,
            assistant("a1", C1),
            ToolResultMessage(
                id="r1", tool_call_id="c1", tool_name="other", content="x", is_error=False
            ),
        ],
        id="tool-name-mismatch",
    ),
    pytest.param([result_for(C2), assistant("a1", C1)], id="two-problems"),
]


@pytest.mark.parametrize("messages", INVALID_TRANSCRIPTS)
async def test_invalid_starting_transcript_yields_a_single_failed_run_finished(
    messages: list[Message],
) -> None:
    spy = SpyModel()
    diagnostics = validate_transcript(messages)
    assert diagnostics

    events, result = await run(spy, messages=messages)

    assert types_of(events) == ["run.finished"]
    assert events[0].sequence == 0
    failed = assert_failed(result, "INVALID_TRANSCRIPT", diagnostics[0].message)
    assert failed.messages == tuple(messages)
    assert spy.calls == 0


async def test_the_first_diagnostic_is_reported_when_there_are_several() -> None:
    messages = [result_for(C2), assistant("a1", C1)]
    diagnostics = validate_transcript(messages)
    assert len({diagnostic.message for diagnostic in diagnostics}) >= 2

    _, result = await run(SpyModel(), messages=messages)

    assert as_failed(result).error.message == diagnostics[0].message


UNSNAPSHOTTABLE = [
    pytest.param(
        [USER, {"id": "s", "role": "system", "content": "x"}],
        "messages[1] has an unsupported role",
        id="unsupported-role",
    ),
    pytest.param([42], "messages[0] has an unsupported role", id="number-entry"),
    pytest.param([USER, None], "messages[1] has an unsupported role", id="none-entry"),
    pytest.param(
        [{"id": "u", "role": 7, "content": "x"}],
        "messages[0] has an unsupported role",
        id="role-not-a-string",
    ),
    pytest.param(
        [{"id": "u", "role": "user", "content": 5}],
        "userMessage: content must be a string",
        id="bad-user-content",
    ),
    pytest.param("hello", "messages must be a list or tuple of messages", id="string"),
    pytest.param({"role": "user"}, "messages must be a list or tuple of messages", id="dict"),
    pytest.param(iter([USER]), "messages must be a list or tuple of messages", id="iterator"),
]


@pytest.mark.parametrize(("messages", "message"), UNSNAPSHOTTABLE)
async def test_a_starting_transcript_that_cannot_be_snapshotted_fails_with_no_messages(
    messages: object, message: str
) -> None:
    spy = SpyModel()

    events, result = await run(spy, messages=cast(Any, messages))

    assert types_of(events) == ["run.finished"]
    assert events[0].sequence == 0
    failed = assert_failed(result, "INVALID_TRANSCRIPT", message)
    assert failed.messages == ()
    assert spy.calls == 0


# --- requests ---------------------------------------------------------------------------------


def three_step_model() -> ScriptedModel:
    return ScriptedModel(
        [
            tool_call_reply(("echo", {"n": 1}, "call-1")),
            tool_call_reply(("echo", {"n": 2}, "call-2")),
            text_reply("done"),
        ]
    )


async def test_request_ids_count_from_request_001() -> None:
    model = three_step_model()

    events, result = await run(model, tools=ToolRegistry([recording_tool("echo", [])]))

    assert result.status == "completed"
    assert [request.id for request in model.requests] == [
        "request-001",
        "request-002",
        "request-003",
    ]
    assert [chunk.request_id for chunk in chunks_of(events)] == [
        "request-001",
        "request-002",
        "request-003",
    ]


async def test_request_ids_continue_after_request_sequence_start() -> None:
    model = three_step_model()

    _, result = await run(
        model, tools=ToolRegistry([recording_tool("echo", [])]), request_sequence_start=7
    )

    assert result.status == "completed"
    assert [request.id for request in model.requests] == [
        "request-008",
        "request-009",
        "request-010",
    ]


async def test_each_step_sends_one_request_holding_the_transcript_at_that_moment() -> None:
    model = three_step_model()

    _, result = await run(model, tools=ToolRegistry([recording_tool("echo", [])]))

    messages = result.messages
    assert len(messages) == 6
    assert model.call_count == 3
    assert [request.messages for request in model.requests] == [
        messages[:1],
        messages[:3],
        messages[:5],
    ]


# --- events and statuses ----------------------------------------------------------------------


async def test_events_follow_the_documented_order_with_gapless_sequences() -> None:
    starting: list[Message] = [
        USER,
        assistant("a0", text("Hello.")),
        UserMessage(id="user-2", content="Now add twice."),
    ]
    model = ScriptedModel(
        [
            tool_call_reply(
                ("echo", {"n": 1}, "call-1"), ("echo", {"n": 2}, "call-2"), text=("Sure", ".")
            ),
            text_reply("Both ", "done."),
        ]
    )
    log: list[str] = []

    events, result = await run(
        model, messages=starting, tools=ToolRegistry([recording_tool("echo", log)])
    )

    assert types_of(events) == [
        "message.accepted",
        "message.accepted",
        "message.accepted",
        "model.chunk",
        "model.chunk",
        "model.chunk",
        "model.chunk",
        "tool.started",
        "tool.finished",
        "tool.started",
        "tool.finished",
        "model.chunk",
        "model.chunk",
        "run.finished",
    ]
    assert_well_sequenced(events, result)
    accepted = [event.payload.message for event in events if event.type == "message.accepted"]
    assert accepted == starting
    started = [event.payload.tool_call.id for event in events if event.type == "tool.started"]
    finished = [event.payload.message for event in events if event.type == "tool.finished"]
    assert started == ["call-1", "call-2"] == log
    assert [message.tool_call_id for message in finished] == ["call-1", "call-2"]
    assert finished == [message for message in result.messages if message.role == "toolResult"]


async def test_model_chunk_events_carry_the_streamed_chunks_in_order() -> None:
    first = delta("The sum ")
    second = delta("is 42.")
    model = TurnModel(([first, second], response(text("The sum is 42."))))

    events, result = await run(model)

    assert result.status == "completed"
    assert chunks_of(events) == [first, second]


async def test_completed_final_text_joins_text_across_blocks() -> None:
    model = ScriptedModel([text_reply("The sum ", "is ", "42.")])

    _, result = await run(model)

    completed = as_completed(result)
    assert completed.final_text == "The sum is 42."
    final = completed.messages[-1]
    assert isinstance(final, AssistantMessage)
    assert [block.type for block in final.content] == ["text", "text", "text"]
    assert completed.messages[:-1] == (USER,)


async def test_completed_with_no_text_has_empty_final_text() -> None:
    model = TurnModel(([], response()))

    _, result = await run(model)

    assert as_completed(result).final_text == ""


@pytest.mark.parametrize(
    ("deltas", "final_blocks"),
    [
        pytest.param(("\ud83d", "\ude00"), ("\ud83d", "\ude00"), id="halves-in-both"),
        pytest.param(("\ud83d", "\ude00"), ("😀",), id="halves-streamed-astral-final"),
        pytest.param(("😀",), ("\ud83d", "\ude00"), id="astral-streamed-halves-final"),
        pytest.param(("\ud83d\ude00",), ("😀",), id="pair-in-one-delta"),
    ],
)
async def test_surrogate_halves_are_joined_in_final_text_and_agreement(
    deltas: tuple[str, ...], final_blocks: tuple[str, ...]
) -> None:
    model = TurnModel(
        ([delta(part) for part in deltas], response(*(text(part) for part in final_blocks)))
    )

    _, result = await run(model)

    assert as_completed(result).final_text == "😀"


async def test_max_steps_when_the_last_allowed_turn_is_a_tool_turn() -> None:
    log: list[str] = []
    model = ScriptedModel(
        [
            tool_call_reply(("echo", {}, "call-1")),
            tool_call_reply(("echo", {}, "call-2"), ("echo", {}, "call-3")),
            text_reply("never requested"),
        ]
    )

    events, result = await run(
        model, max_steps=2, tools=ToolRegistry([recording_tool("echo", log)])
    )

    assert isinstance(result, MaxStepsRunResult)
    assert result.max_steps == 2
    assert log == ["call-1", "call-2", "call-3"]
    assert model.call_count == 2
    assert model.pending_response_count == 1
    assert types_of(events)[-3:] == ["tool.started", "tool.finished", "run.finished"]
    last = result.messages[-1]
    assert isinstance(last, ToolResultMessage)
    assert last.tool_call_id == "call-3"
    assert validate_transcript(result.messages) == ()
    assert_well_sequenced(events, result)


async def test_a_stop_turn_within_the_budget_completes_rather_than_max_steps() -> None:
    model = ScriptedModel([tool_call_reply(("echo", {})), text_reply("done")])

    _, result = await run(model, max_steps=2, tools=ToolRegistry([recording_tool("echo", [])]))

    assert as_completed(result).final_text == "done"


@pytest.mark.parametrize(
    ("name", "arguments", "code"),
    [
        ("missing", {}, "TOOL_NOT_FOUND"),
        ("add", {"left": "one", "right": 2}, "TOOL_ARGUMENTS_INVALID"),
        ("add", {"left": 1}, "TOOL_ARGUMENTS_INVALID"),
        ("broken", {}, "TOOL_EXECUTION_FAILED"),
    ],
)
async def test_recoverable_tool_errors_are_error_results_and_the_run_continues(
    name: str, arguments: dict[str, object], code: str
) -> None:
    tools = ToolRegistry([add, raising_tool("broken", ValueError("tool broke"))])
    model = ScriptedModel([tool_call_reply((name, arguments, "call-1")), text_reply("recovered")])

    events, result = await run(model, tools=tools)

    assert as_completed(result).final_text == "recovered"
    finished = [event.payload.message for event in events if event.type == "tool.finished"]
    assert len(finished) == 1
    assert finished[0].is_error
    assert finished[0].tool_call_id == "call-1"
    assert json.loads(finished[0].content)["error"]["code"] == code
    assert finished[0] in result.messages
    assert model.call_count == 2


async def test_a_non_recoverable_tool_error_fails_the_run_and_stops_the_batch() -> None:
    log: list[str] = []
    tools = ToolRegistry(
        [
            raising_tool("fatal", NonRecoverableToolError("disk is on fire")),
            recording_tool("echo", log),
        ]
    )
    model = ScriptedModel(
        [tool_call_reply(("fatal", {}, "call-1"), ("echo", {}, "call-2")), text_reply("never")]
    )

    events, result = await run(model, tools=tools)

    failed = assert_failed(result, "TOOL_EXECUTION_FAILED", "disk is on fire")
    assert types_of(events) == [
        "message.accepted",
        "model.chunk",
        "model.chunk",
        "tool.started",
        "run.finished",
    ]
    assert log == []
    assert [message.role for message in failed.messages] == ["user", "assistant"]
    assert [d.code for d in validate_transcript(failed.messages)] == [
        "MISSING_TOOL_RESULT",
        "MISSING_TOOL_RESULT",
    ]
    assert model.call_count == 1
    assert_well_sequenced(events, result)


class Departure(BaseException):
    """A bare ``BaseException`` from a tool."""


async def test_a_bare_base_exception_fails_the_stream_with_that_object() -> None:
    departure = Departure("leaving")
    tools = ToolRegistry([raising_tool("leave", cast(Any, departure))])
    model = ScriptedModel([tool_call_reply(("leave", {})), text_reply("never")])
    stream = start(model, tools=tools)
    seen: list[str] = []

    async def consume() -> None:
        async for event in stream:
            seen.append(event.type)

    with pytest.raises(Departure) as during_iteration:
        await consume()
    with pytest.raises(Departure) as from_result:
        await stream.result

    assert during_iteration.value is departure
    assert from_result.value is departure
    assert seen == ["message.accepted", "model.chunk", "tool.started"]
    for _ in range(3):
        await asyncio.sleep(0)


# --- model stream failures --------------------------------------------------------------------


def raise_now(error: Exception) -> Callable[[ModelRequest, AbortSignal], object]:
    def stream(request: ModelRequest, signal: AbortSignal) -> object:
        raise error

    return stream


async def test_stream_raising_synchronously_is_model_stream_failed() -> None:
    _, result = await run(FactoryModel(raise_now(RuntimeError("socket closed"))))

    failed = assert_failed(result, "MODEL_STREAM_FAILED", "socket closed")
    assert failed.messages == (USER,)


async def test_stream_raising_without_a_message_uses_the_fallback_text() -> None:
    _, result = await run(FactoryModel(raise_now(RuntimeError())))

    assert_failed(result, "MODEL_STREAM_FAILED", "Model stream could not be opened")


async def test_a_scripted_factory_raising_is_model_stream_failed() -> None:
    def factory(request: ModelRequest, signal: AbortSignal) -> AsyncIterator[Any]:
        raise RuntimeError("factory broke")

    events, result = await run(ScriptedModel([factory]))

    assert_failed(result, "MODEL_STREAM_FAILED", "factory broke")
    assert types_of(events) == ["message.accepted", "run.finished"]


async def test_iteration_failing_after_a_chunk_keeps_no_partial_assistant_message() -> None:
    async def factory(request: ModelRequest, signal: AbortSignal) -> AsyncIterator[Any]:
        yield delta("partial", request.id)
        raise RuntimeError("connection reset")

    events, result = await run(ScriptedModel([factory]))

    failed = assert_failed(result, "MODEL_STREAM_FAILED", "connection reset")
    assert types_of(events) == ["message.accepted", "model.chunk", "run.finished"]
    assert failed.messages == (USER,)


async def test_a_custom_iterator_raising_is_model_stream_failed() -> None:
    model = TurnModel(([delta("a"), OSError("stream dropped")], response(text("a"))))

    events, result = await run(model)

    assert_failed(result, "MODEL_STREAM_FAILED", "stream dropped")
    assert types_of(events) == ["message.accepted", "model.chunk", "run.finished"]


async def test_result_failing_is_model_stream_failed() -> None:
    model = TurnModel(([delta("all streamed")], RuntimeError("no terminal")))

    events, result = await run(model)

    failed = assert_failed(result, "MODEL_STREAM_FAILED", "no terminal")
    assert failed.messages == (USER,)
    assert types_of(events) == ["message.accepted", "model.chunk", "run.finished"]


async def test_an_exhausted_script_fails_on_the_request_that_found_no_response() -> None:
    model = ScriptedModel([tool_call_reply(("echo", {}))])

    _, result = await run(model, tools=ToolRegistry([recording_tool("echo", [])]))

    failed = assert_failed(
        result, "SCRIPT_EXHAUSTED", 'No scripted response remains for request "request-002"'
    )
    assert [message.role for message in failed.messages] == ["user", "assistant", "toolResult"]


# --- model protocol errors --------------------------------------------------------------------

RETURN_AN_EVENTSTREAM = "model.stream must return an EventStream"


async def _never_awaited() -> ModelResponse:
    raise AssertionError("this coroutine must never run")


async def test_stream_returning_a_coroutine_is_a_protocol_error_and_it_is_closed() -> None:
    opened: list[Any] = []

    def stream(request: ModelRequest, signal: AbortSignal) -> object:
        coroutine = _never_awaited()
        opened.append(coroutine)
        return coroutine

    _, result = await run(FactoryModel(stream))

    assert_failed(result, "MODEL_PROTOCOL_ERROR", RETURN_AN_EVENTSTREAM)
    assert inspect.getcoroutinestate(opened[0]) == inspect.CORO_CLOSED


async def test_stream_returning_a_failed_future_is_a_protocol_error_and_it_is_observed() -> None:
    def stream(request: ModelRequest, signal: AbortSignal) -> object:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        future.set_exception(RuntimeError("never retrieved?"))
        return future

    _, result = await run(FactoryModel(stream))

    assert_failed(result, "MODEL_PROTOCOL_ERROR", RETURN_AN_EVENTSTREAM)


async def test_stream_returning_a_failing_task_is_a_protocol_error_and_it_is_observed() -> None:
    tasks: list[asyncio.Task[None]] = []

    async def fail() -> None:
        raise RuntimeError("task failed")

    def stream(request: ModelRequest, signal: AbortSignal) -> object:
        task = asyncio.get_running_loop().create_task(fail())
        tasks.append(task)
        return task

    _, result = await run(FactoryModel(stream))
    await asyncio.wait(tasks)

    assert_failed(result, "MODEL_PROTOCOL_ERROR", RETURN_AN_EVENTSTREAM)


@pytest.mark.parametrize(
    "returned",
    [
        pytest.param(object(), id="object"),
        pytest.param(None, id="none"),
        pytest.param([delta("a")], id="sync-list"),
        pytest.param("chunks", id="string"),
    ],
)
async def test_stream_returning_a_non_stream_is_a_protocol_error(returned: object) -> None:
    events, result = await run(FactoryModel(lambda request, signal: returned))

    failed = assert_failed(result, "MODEL_PROTOCOL_ERROR", RETURN_AN_EVENTSTREAM)
    assert failed.messages == (USER,)
    assert types_of(events) == ["message.accepted", "run.finished"]


BAD_CHUNKS = [
    pytest.param(
        delta("hi", "request-002"),
        'Model chunk requestId must equal active request "request-001"',
        id="text-other-request",
    ),
    pytest.param(
        call_chunk(C1, "request-000"),
        'Model chunk requestId must equal active request "request-001"',
        id="call-other-request",
    ),
    pytest.param(
        {"type": "textDelta", "requestId": "request-009", "delta": "hi"},
        'Model chunk requestId must equal active request "request-001"',
        id="mapping-other-request",
    ),
    pytest.param(None, "Model chunk must be an object", id="none"),
    pytest.param("hello", "Model chunk must be an object", id="string"),
    pytest.param(42, "Model chunk must be an object", id="number"),
    pytest.param(text("hi"), "Model chunk must be an object", id="text-block"),
    pytest.param({"type": "image"}, "Model chunk has an unsupported type", id="unsupported-type"),
    pytest.param(
        {"type": "textDelta", "requestId": "request-001", "delta": 5},
        "Model text chunk is invalid",
        id="text-delta-not-a-string",
    ),
    pytest.param(
        {
            "type": "toolCall",
            "requestId": "request-001",
            "toolCall": {"type": "toolCall", "name": "add", "arguments": {}},
        },
        "Model Tool-call chunk is invalid",
        id="tool-call-without-id",
    ),
    pytest.param(
        {
            "type": "toolCall",
            "requestId": "request-001",
            "toolCall": {"type": "toolCall", "id": "c1", "name": "add", "arguments": [1]},
        },
        "Tool-call arguments must be a JSON object",
        id="tool-call-arguments-array",
    ),
]


@pytest.mark.parametrize(("chunk", "message"), BAD_CHUNKS)
async def test_a_bad_chunk_is_a_protocol_error_with_no_event(chunk: object, message: str) -> None:
    model = TurnModel(([delta("ok"), chunk, delta("never")], response(text("ok"))))

    events, result = await run(model)

    failed = assert_failed(result, "MODEL_PROTOCOL_ERROR", message)
    assert chunks_of(events) == [delta("ok")]
    assert failed.messages == (USER,)
    assert model.streams[0].iterator.closed


async def test_mapping_chunks_in_json_form_are_accepted_as_protocol_chunks() -> None:
    model = TurnModel(
        (
            [
                {"type": "textDelta", "requestId": "request-001", "delta": "Adding."},
                {
                    "type": "toolCall",
                    "requestId": "request-001",
                    "toolCall": {"type": "toolCall", "id": "c1", "name": "add", "arguments": {}},
                },
            ],
            response(text("Adding."), call("c1")),
        )
    )

    events, result = await run(model, max_steps=1)

    assert result.status == "maxSteps"
    assert chunks_of(events) == [delta("Adding."), call_chunk(call("c1"))]


BAD_RESPONSES = [
    pytest.param(
        [delta("hi")],
        response(text("hi"), request_id="request-002"),
        'Model response requestId must equal active request "request-001"',
        id="other-request",
    ),
    pytest.param(
        [delta("hi"), call_chunk(C1)],
        response(text("hi"), C1, stop_reason="stop"),
        "A stop response must not contain Tool calls",
        id="stop-with-tool-calls",
    ),
    pytest.param(
        [delta("hi")],
        response(text("hi"), stop_reason="toolCall"),
        "A toolCall response must contain at least one Tool call",
        id="tool-call-without-calls",
    ),
    pytest.param([], 42, "Model response must be an object", id="number"),
    pytest.param([], None, "Model response must be an object", id="none"),
    pytest.param(
        [],
        {"id": "r", "requestId": "request-001", "message": {"role": "user"}},
        "Model response message must be an assistant message",
        id="mapping-with-user-message",
    ),
]


@pytest.mark.parametrize(("items", "outcome", "message"), BAD_RESPONSES)
async def test_a_bad_response_is_a_protocol_error_and_nothing_is_appended(
    items: list[object], outcome: object, message: str
) -> None:
    log: list[str] = []
    model = TurnModel((items, outcome))

    _, result = await run(model, tools=ToolRegistry([recording_tool("add", log)]))

    failed = assert_failed(result, "MODEL_PROTOCOL_ERROR", message)
    assert failed.messages == (USER,)
    assert log == []


async def test_a_mapping_response_with_a_bad_stop_reason_is_a_protocol_error() -> None:
    raw: dict[str, object] = {
        "id": "r",
        "requestId": "request-001",
        "message": {"id": "m", "role": "assistant", "content": []},
        "stopReason": "weird",
        "usage": {"inputTokens": 1, "outputTokens": 1},
    }

    _, result = await run(TurnModel(([], raw)))

    assert as_failed(result).error.message.startswith("Model response is invalid: ")
    assert as_failed(result).error.code == "MODEL_PROTOCOL_ERROR"


async def test_a_mapping_response_in_json_form_is_accepted() -> None:
    raw = {
        "id": "r",
        "requestId": "request-001",
        "message": {"id": "m", "role": "assistant", "content": [{"type": "text", "text": "hi"}]},
        "stopReason": "stop",
        "usage": {"inputTokens": 1, "outputTokens": 2},
    }

    _, result = await run(TurnModel(([delta("hi")], raw)))

    completed = as_completed(result)
    assert completed.final_text == "hi"
    assert completed.messages[-1] == assistant("m", text("hi"))


class ResultProblemStream:
    """Iterates nothing; ``result`` is not awaitable or cannot be read."""

    def __init__(self, result: object, *, raises: bool = False) -> None:
        self._result = result
        self._raises = raises

    def __aiter__(self) -> TurnIterator:
        return TurnIterator([])

    @property
    def result(self) -> Any:
        if self._raises:
            raise RuntimeError("result getter failed")
        return self._result


@pytest.mark.parametrize(
    ("opened", "message"),
    [
        pytest.param(
            ResultProblemStream(response()),
            "Model stream result must be awaitable",
            id="not-awaitable",
        ),
        pytest.param(
            ResultProblemStream(None, raises=True),
            "Model stream result is not accessible",
            id="getter-raises",
        ),
    ],
)
async def test_an_unusable_result_is_a_protocol_error(opened: object, message: str) -> None:
    _, result = await run(FactoryModel(lambda request, signal: opened))

    assert_failed(result, "MODEL_PROTOCOL_ERROR", message)


async def test_the_result_property_is_read_after_the_chunks_are_consumed() -> None:
    consumed: list[object] = []
    reads: list[int] = []

    class Recording:
        def __init__(self) -> None:
            self.inner = TurnIterator([delta("a"), delta("b")])

        def __aiter__(self) -> Recording:
            return self

        async def __anext__(self) -> Any:
            item = await self.inner.__anext__()
            consumed.append(item)
            return item

        @property
        def result(self) -> Awaitable[Any]:
            reads.append(len(consumed))

            async def settle() -> ModelResponse:
                return response(text("ab"))

            return settle()

    _, result = await run(FactoryModel(lambda request, signal: Recording()))

    assert as_completed(result).final_text == "ab"
    assert reads == [2]


# --- streamed chunks must agree with the final message ----------------------------------------

AGREEMENT_FAILURES = [
    pytest.param(
        [delta("Hello")],
        response(text("Hullo")),
        "Streamed text does not match the final message",
        id="text-differs",
    ),
    pytest.param(
        [delta("Hel"), delta("lo")],
        response(text("Hello!")),
        "Streamed text does not match the final message",
        id="text-longer-than-streamed",
    ),
    pytest.param(
        [delta("a")],
        response(text("a"), C1),
        "Streamed chunks do not match the final message",
        id="extra-tool-call-in-final",
    ),
    pytest.param(
        [call_chunk(C1), call_chunk(C2)],
        response(C1),
        "Streamed chunks do not match the final message",
        id="missing-tool-call-in-final",
    ),
    pytest.param(
        [],
        response(text("unstreamed")),
        "Streamed chunks do not match the final message",
        id="nothing-streamed",
    ),
    pytest.param(
        [delta("")],
        response(),
        "Streamed chunks do not match the final message",
        id="isolated-empty-delta-without-block",
    ),
    pytest.param(
        [delta("a"), call_chunk(C1)],
        response(C1, text("a")),
        "Streamed chunk order does not match the final message",
        id="different-order",
    ),
    pytest.param(
        [call_chunk(C1), call_chunk(C2)],
        response(C2, C1),
        "Streamed Tool call does not match the final message",
        id="calls-swapped",
    ),
    pytest.param(
        [call_chunk(call("c1", n=1))],
        response(call("c1", n=2)),
        "Streamed Tool call does not match the final message",
        id="different-argument-value",
    ),
    pytest.param(
        [call_chunk(call("c1", flag=True))],
        response(call("c1", flag=1)),
        "Streamed Tool call does not match the final message",
        id="true-vs-1",
    ),
    pytest.param(
        [call_chunk(call("c1", flag=0))],
        response(call("c1", flag=False)),
        "Streamed Tool call does not match the final message",
        id="0-vs-false",
    ),
    pytest.param(
        [call_chunk(call("c1", x=0.0))],
        response(call("c1", x=-0.0)),
        "Streamed Tool call does not match the final message",
        id="zero-vs-negative-zero",
    ),
    pytest.param(
        [call_chunk(call("c1", x=[1, {"y": -0.0}]))],
        response(call("c1", x=[1, {"y": 0.0}])),
        "Streamed Tool call does not match the final message",
        id="nested-negative-zero",
    ),
    pytest.param(
        [call_chunk(call("c1", a=1))],
        response(call("c1", a=1, b=2)),
        "Streamed Tool call does not match the final message",
        id="extra-argument-key",
    ),
    pytest.param(
        [call_chunk(call("c1", a=None))],
        response(call("c1", b=None)),
        "Streamed Tool call does not match the final message",
        id="different-argument-key",
    ),
    pytest.param(
        [call_chunk(call("c1", a=[1, 2]))],
        response(call("c1", a=[1, 2, 3])),
        "Streamed Tool call does not match the final message",
        id="different-array-length",
    ),
    pytest.param(
        [call_chunk(call("c1", a="1"))],
        response(call("c1", a=1)),
        "Streamed Tool call does not match the final message",
        id="string-vs-number",
    ),
    pytest.param(
        [call_chunk(call("c1"))],
        response(call("c9")),
        "Streamed Tool call does not match the final message",
        id="different-id",
    ),
    pytest.param(
        [call_chunk(call("c1", "add"))],
        response(call("c1", "sub")),
        "Streamed Tool call does not match the final message",
        id="different-name",
    ),
]


@pytest.mark.parametrize(("items", "final", "message"), AGREEMENT_FAILURES)
async def test_chunks_disagreeing_with_the_final_message_are_a_protocol_error(
    items: list[object], final: ModelResponse, message: str
) -> None:
    log: list[str] = []

    events, result = await run(
        TurnModel((items, final)), tools=ToolRegistry([recording_tool("add", log)])
    )

    failed = assert_failed(result, "MODEL_PROTOCOL_ERROR", message)
    assert failed.messages == (USER,)
    assert "tool.started" not in types_of(events)
    assert log == []


AGREEMENT_OK = [
    pytest.param([delta("Hel"), delta("lo")], response(text("Hello")), id="streamed-split"),
    pytest.param([delta("Hello")], response(text("He"), text("llo")), id="final-split"),
    pytest.param(
        [delta("a"), delta(""), delta("b")], response(text("ab")), id="empty-delta-inside-run"
    ),
    pytest.param([delta("")], response(text("")), id="isolated-empty-block"),
    pytest.param([call_chunk(call("c1", x=1))], response(call("c1", x=1.0)), id="1-equals-1.0"),
    pytest.param(
        [call_chunk(call("c1", b=2, a=1))], response(call("c1", a=1, b=2)), id="key-order"
    ),
    pytest.param(
        [delta("x"), call_chunk(C1), delta("y")],
        response(text("x"), C1, text("y")),
        id="text-call-text",
    ),
]


@pytest.mark.parametrize(("items", "final"), AGREEMENT_OK)
async def test_chunks_that_agree_with_the_final_message_are_accepted(
    items: list[object], final: ModelResponse
) -> None:
    _, result = await run(
        TurnModel((items, final)), max_steps=1, tools=ToolRegistry([recording_tool("add", [])])
    )

    assert result.status == ("maxSteps" if final.stop_reason == "toolCall" else "completed")
    assert result.messages[1] == final.message


# --- extending the transcript -----------------------------------------------------------------


async def test_a_tool_call_id_reused_from_earlier_history_cannot_extend_the_transcript() -> None:
    history: list[Message] = [
        USER,
        assistant("a1", C1),
        result_for(C1),
        UserMessage(id="u2", content="again"),
    ]
    log: list[str] = []
    reused = call("c1", left=5, right=6)
    model = TurnModel(([call_chunk(reused)], response(reused)))

    events, result = await run(
        model, messages=history, tools=ToolRegistry([recording_tool("add", log)])
    )

    failed = assert_failed(
        result,
        "MODEL_PROTOCOL_ERROR",
        'Model response cannot extend the transcript: Tool call ID "c1" is not unique',
    )
    assert failed.messages == tuple(history)
    assert "tool.started" not in types_of(events)
    assert log == []


async def test_a_tool_call_id_repeated_within_one_response_cannot_extend_the_transcript() -> None:
    first = call("dup", left=1, right=1)
    second = call("dup", left=2, right=2)
    log: list[str] = []
    model = TurnModel(([call_chunk(first), call_chunk(second)], response(first, second)))

    events, result = await run(model, tools=ToolRegistry([recording_tool("add", log)]))

    failed = as_failed(result)
    assert failed.error.code == "MODEL_PROTOCOL_ERROR"
    assert failed.error.message.startswith("Model response cannot extend the transcript: ")
    assert failed.messages == (USER,)
    assert log == []
    assert "tool.started" not in types_of(events)


async def test_a_tool_call_id_from_an_earlier_step_of_the_same_run_is_rejected() -> None:
    model = ScriptedModel(
        [tool_call_reply(("echo", {}, "same")), tool_call_reply(("echo", {}, "same"))]
    )
    log: list[str] = []

    _, result = await run(model, tools=ToolRegistry([recording_tool("echo", log)]))

    failed = assert_failed(
        result,
        "MODEL_PROTOCOL_ERROR",
        'Model response cannot extend the transcript: Tool call ID "same" is not unique',
    )
    assert log == ["same"]
    assert len(failed.messages) == 3


# --- custom models and streams ------------------------------------------------------------------


async def test_a_custom_model_with_its_own_stream_type_runs_to_completion() -> None:
    tool_call = call("c1", left=20, right=22)
    model = TurnModel(
        ([call_chunk(tool_call)], response(tool_call)),
        (
            [delta("The sum is 42.", "request-002")],
            response(text("The sum is 42."), request_id="request-002", response_id="r2"),
        ),
    )

    events, result = await run(model, tools=ToolRegistry([add]))

    assert as_completed(result).final_text == "The sum is 42."
    finished = [event.payload.message for event in events if event.type == "tool.finished"]
    assert [message.content for message in finished] == ["42"]
    assert all(stream.iterator.closed is False for stream in model.streams)
    assert_well_sequenced(events, result)


class OverriddenStream(EventStream[ModelChunk, ModelResponse]):
    """An EventStream whose ``__aiter__`` is replaced, as the JS tests replace the iterator."""

    def __init__(self, make_iterator: Callable[[], object], outcome: ModelResponse) -> None:
        super().__init__()
        self._make_iterator = make_iterator
        self.push(delta("from the real buffer"))
        self.finish(outcome)

    def __aiter__(self) -> Any:
        return self._make_iterator()


class NoNext:
    pass


class SyncRaisingNext:
    def __anext__(self) -> Any:
        raise RuntimeError("next exploded")


class NoneChunks:
    async def __anext__(self) -> Any:
        return None


class NotAwaitableNext:
    def __anext__(self) -> Any:
        return delta("not awaitable")


def raising_aiter() -> object:
    raise RuntimeError("aiter exploded")


HOSTILE_ITERATORS = [
    pytest.param(
        NoNext,
        "MODEL_PROTOCOL_ERROR",
        "Model stream iterator must expose __anext__()",
        id="no-anext",
    ),
    pytest.param(
        raising_aiter,
        "MODEL_PROTOCOL_ERROR",
        "Model stream iterator must expose __anext__()",
        id="aiter-raises",
    ),
    pytest.param(SyncRaisingNext, "MODEL_STREAM_FAILED", "next exploded", id="anext-raises-sync"),
    pytest.param(
        NoneChunks, "MODEL_PROTOCOL_ERROR", "Model chunk must be an object", id="none-chunk"
    ),
    pytest.param(
        NotAwaitableNext,
        "MODEL_PROTOCOL_ERROR",
        None,
        id="anext-not-awaitable",
    ),
]


@pytest.mark.parametrize(("make_iterator", "code", "message"), HOSTILE_ITERATORS)
async def test_an_eventstream_subclass_with_a_hostile_iterator_fails_cleanly(
    make_iterator: Callable[[], object], code: str, message: str | None
) -> None:
    model = FactoryModel(lambda request, signal: OverriddenStream(make_iterator, response()))

    events, result = await run(model)

    failed = assert_failed(result, code, message)
    assert failed.messages == (USER,)
    assert chunks_of(events) == []


async def test_an_overridden_aiter_is_honoured_instead_of_the_buffered_events() -> None:
    model = FactoryModel(
        lambda request, signal: OverriddenStream(
            lambda: TurnIterator([delta("from the override")]),
            response(text("from the override")),
        )
    )

    events, result = await run(model)

    assert as_completed(result).final_text == "from the override"
    assert chunks_of(events) == [delta("from the override")]


class ClosingIterator:
    """Yields items; records ``aclose`` calls; ``aclose`` may misbehave."""

    def __init__(self, items: Sequence[object], close: Callable[[], object]) -> None:
        self._items: deque[object] = deque(items)
        self._close = close
        self.closes = 0

    def __aiter__(self) -> ClosingIterator:
        return self

    async def __anext__(self) -> Any:
        if not self._items:
            raise StopAsyncIteration
        return self._items.popleft()

    def aclose(self) -> object:
        self.closes += 1
        return self._close()


def close_raises() -> object:
    raise RuntimeError("aclose exploded")


async def _close_fails_later() -> None:
    raise RuntimeError("aclose failed later")


def close_fails_later() -> object:
    return _close_fails_later()


def close_returns_none() -> object:
    return None


@pytest.mark.parametrize(
    "close", [close_returns_none, close_raises, close_fails_later], ids=["ok", "raises", "later"]
)
async def test_an_unfinished_iterator_is_closed_quietly_without_changing_the_outcome(
    close: Callable[[], object],
) -> None:
    iterator = ClosingIterator([delta("ok"), delta("bad", "request-009")], close)
    model = FactoryModel(lambda request, signal: OverriddenStream(lambda: iterator, response()))

    _, result = await run(model)
    await asyncio.sleep(0)

    assert_failed(
        result,
        "MODEL_PROTOCOL_ERROR",
        'Model chunk requestId must equal active request "request-001"',
    )
    assert iterator.closes == 1


async def test_an_iterator_that_reached_its_end_is_not_closed() -> None:
    iterator = ClosingIterator([delta("ok")], close_returns_none)
    model = FactoryModel(
        lambda request, signal: OverriddenStream(lambda: iterator, response(text("ok")))
    )

    _, result = await run(model)

    assert result.status == "completed"
    assert iterator.closes == 0


# --- signals ------------------------------------------------------------------------------------


async def test_a_signal_that_was_never_initialised_is_signal_access_failed() -> None:
    broken = AbortSignal.__new__(AbortSignal)
    spy = SpyModel()

    events, result = await run(spy, signal=broken)

    assert as_failed(result).error.code == "SIGNAL_ACCESS_FAILED"
    assert types_of(events) == ["run.finished"]
    assert spy.calls == 0


# --- results and JSON ---------------------------------------------------------------------------


async def test_results_and_events_are_immutable() -> None:
    events, result = await run(ScriptedModel([text_reply("hi")]))

    assert isinstance(result.messages, tuple)
    with pytest.raises(AttributeError):
        result.status = "failed"  # pyright: ignore[reportAttributeAccessIssue]
    with pytest.raises(AttributeError):
        events[0].sequence = 5  # pyright: ignore[reportAttributeAccessIssue]


def camel_case_keys(value: object) -> list[str]:
    """Every dict key anywhere in ``value`` that is not camelCase."""
    bad: list[str] = []
    if isinstance(value, dict):
        for key, item in cast(dict[str, object], value).items():
            if not re.fullmatch(r"[a-z][A-Za-z0-9]*", key):
                bad.append(key)
            bad.extend(camel_case_keys(item))
    elif isinstance(value, list):
        for item in cast(list[object], value):
            bad.extend(camel_case_keys(item))
    return bad


async def test_every_event_of_a_run_is_json_serializable_with_camel_case_keys() -> None:
    model = ScriptedModel(
        [
            tool_call_reply(
                ("add", {"left": 1, "right": 2}, "call-ok"),
                ("missing", {"x": [1, {"y": None}]}, "call-missing"),
                text=("Working",),
            ),
            text_reply("3"),
        ]
    )

    events, result = await run(model, tools=ToolRegistry([add]))

    assert result.status == "completed"
    encoded = [json.loads(json.dumps(to_json(event))) for event in events]
    assert [item["sequence"] for item in encoded] == list(range(len(events)))
    assert camel_case_keys(encoded) == []
    assert encoded[-1]["payload"]["result"]["finalText"] == "3"
    finished = [item for item in encoded if item["type"] == "tool.finished"]
    assert [item["payload"]["message"]["isError"] for item in finished] == [False, True]


async def test_a_failed_run_finished_event_is_json_serializable() -> None:
    events, _ = await run(FactoryModel(raise_now(RuntimeError("down"))))

    encoded = json.loads(json.dumps(to_json(events[-1])))
    assert encoded["payload"]["result"]["status"] == "failed"
    assert encoded["payload"]["result"]["error"] == {
        "code": "MODEL_STREAM_FAILED",
        "message": "down",
    }


# --- the bundled fixture, end to end --------------------------------------------------------------


async def test_fixture_round_trip_with_an_add_tool() -> None:
    provider = FixtureProviderAdapter.from_path(FIXTURE)
    prompt = UserMessage(id="user-001", content="What is 20 + 22?")

    events, result = await run(provider, messages=[prompt], tools=ToolRegistry([add]))

    assert as_completed(result).final_text == "The sum is 42."
    assert types_of(events) == [
        "message.accepted",
        "model.chunk",
        "tool.started",
        "tool.finished",
        "model.chunk",
        "run.finished",
    ]
    assert_well_sequenced(events, result)
    first, second = chunks_of(events)
    assert isinstance(first, ToolCallChunk)
    assert first.request_id == "request-001"
    assert first.tool_call == call("call-add-001", left=20, right=22)
    assert second == delta("The sum is 42.", "request-002")
    finished = events[3]
    assert finished.type == "tool.finished"
    assert finished.payload.message.content == "42"
    assert finished.payload.message.is_error is False
    assert finished.payload.message.tool_call_id == "call-add-001"
    assert [message.role for message in result.messages] == [
        "user",
        "assistant",
        "toolResult",
        "assistant",
    ]
    assert validate_transcript(result.messages) == ()
    assert provider.pending_response_count == 0
