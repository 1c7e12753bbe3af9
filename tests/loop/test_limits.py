"""Checkpoint 07 limits: chunks, streamed text, blocks, tool-argument budgets, messages, steps.

Each limit is exercised at its boundary (accepted) and one past it (rejected), and a
rejection must happen before the offending chunk is emitted and before any tool runs.
"""

from __future__ import annotations

import asyncio
import datetime
import math
from collections import deque
from collections.abc import Awaitable, Sequence
from decimal import Decimal
from typing import Any, cast

import pytest

from factories import accept_anything, chunks_of, delta
from tether import (
    AbortController,
    AbortError,
    AbortSignal,
    AgentEvent,
    AssistantMessage,
    EventStream,
    FailedRunResult,
    JsonObject,
    Message,
    ModelChunk,
    ModelRequest,
    ModelResponse,
    ModelUsage,
    RunLimits,
    RunResult,
    ScriptedModel,
    TextBlock,
    ToolCall,
    ToolDefinition,
    ToolExecutionContext,
    ToolRegistry,
    ToolResultMessage,
    UserMessage,
    define_tool,
    run_agent_loop,
    text_reply,
    tool_call_reply,
)
from tether.loop import (
    MAX_AGENT_STEPS,
    MAX_INITIAL_MESSAGES,
    MAX_MODEL_BLOCKS_PER_STEP,
    MAX_MODEL_CHUNKS_PER_STEP,
    MAX_MODEL_TEXT_CODE_POINTS,
    MAX_TOOL_ARGUMENT_DEPTH,
    MAX_TOOL_ARGUMENT_ENTRIES,
    MAX_TOOL_ARGUMENT_NODES,
    MAX_TOOL_ARGUMENT_STRING_CODE_POINTS,
)
from tether.loop import _model_turn as model_turn_module
from tether.protocol import (
    AssistantBlock,
    StopReason,
    TextDeltaChunk,
    ToolCallChunk,
)

USER = UserMessage(id="user-1", content="Go.")
ZERO_USAGE = ModelUsage(input_tokens=0, output_tokens=0)
CHUNK_LIMIT = "Model turn exceeded 1024 chunks"
TEXT_LIMIT = "Model turn exceeded 65536 streamed text code points"
BLOCK_LIMIT = "Assistant message exceeds 1024 content blocks"
MESSAGE_TEXT_LIMIT = "Assistant message exceeds 65536 text code points"
HIGH = "\ud83d"
LOW = "\ude00"


# --- helpers ----------------------------------------------------------------------------------


def probe_tool(log: list[str]) -> ToolDefinition[object, Any]:
    async def execute(value: object, context: ToolExecutionContext) -> str:
        log.append(context.tool_call_id)
        return "ok"

    return define_tool(
        name="probe", description="records", validate=accept_anything, execute=execute
    )


def probe_call(arguments: dict[str, Any], call_id: str = "c1") -> ToolCall:
    return ToolCall(id=call_id, name="probe", arguments=JsonObject(arguments))


def call_chunk(tool_call: ToolCall) -> ToolCallChunk:
    return ToolCallChunk(request_id="request-001", tool_call=tool_call)


def texts(*parts: str) -> tuple[TextBlock, ...]:
    return tuple(TextBlock(text=part) for part in parts)


def response(*blocks: AssistantBlock, stop_reason: StopReason | None = None) -> ModelResponse:
    has_calls = any(block.type == "toolCall" for block in blocks)
    return ModelResponse(
        id="response-1",
        request_id="request-001",
        message=AssistantMessage(id="message-response-1", content=blocks),
        stop_reason=stop_reason or ("toolCall" if has_calls else "stop"),
        usage=ZERO_USAGE,
    )


class ItemIterator:
    def __init__(self, items: Sequence[object]) -> None:
        self._items: deque[object] = deque(items)

    def __aiter__(self) -> ItemIterator:
        return self

    async def __anext__(self) -> Any:
        if not self._items:
            raise StopAsyncIteration
        return self._items.popleft()


class OneTurnStream:
    def __init__(self, items: Sequence[object], outcome: object) -> None:
        self._items = items
        self._outcome = outcome

    def __aiter__(self) -> ItemIterator:
        return ItemIterator(self._items)

    @property
    def result(self) -> Awaitable[Any]:
        return self._settle()

    async def _settle(self) -> Any:
        return self._outcome


class OneTurnModel:
    """A model (not a ScriptedModel) that streams ``items`` and responds with ``outcome``."""

    def __init__(self, items: Sequence[object], outcome: object) -> None:
        self._items = items
        self._outcome = outcome
        self.calls = 0

    def stream(self, request: ModelRequest, signal: AbortSignal) -> OneTurnStream:
        self.calls += 1
        return OneTurnStream(self._items, self._outcome)


async def run(
    model: object,
    *,
    messages: Sequence[object] = (USER,),
    tools: ToolRegistry | None = None,
    max_steps: int = 1,
) -> tuple[list[AgentEvent], RunResult]:
    stream: EventStream[AgentEvent, RunResult] = run_agent_loop(
        messages=cast(Any, messages),
        model=cast(Any, model),
        tools=tools if tools is not None else ToolRegistry(),
        max_steps=max_steps,
        signal=AbortController().signal,
    )
    events = [event async for event in stream]
    return events, await stream.result


def assert_failed(result: RunResult, code: str, message: str | None = None) -> FailedRunResult:
    assert isinstance(result, FailedRunResult), result
    assert result.error.code == code
    if message is not None:
        assert result.error.message == message
    return result


# --- constants --------------------------------------------------------------------------------


def test_limit_constants_have_the_spec_values() -> None:
    assert (
        MAX_AGENT_STEPS,
        MAX_INITIAL_MESSAGES,
        MAX_MODEL_CHUNKS_PER_STEP,
        MAX_MODEL_TEXT_CODE_POINTS,
        MAX_MODEL_BLOCKS_PER_STEP,
        MAX_TOOL_ARGUMENT_DEPTH,
        MAX_TOOL_ARGUMENT_NODES,
        MAX_TOOL_ARGUMENT_ENTRIES,
        MAX_TOOL_ARGUMENT_STRING_CODE_POINTS,
    ) == (64, 4096, 1024, 65_536, 1024, 32, 257, 256, 4096)


# --- chunks per step --------------------------------------------------------------------------


async def test_1024_chunks_in_one_turn_are_accepted() -> None:
    model = OneTurnModel([delta("a")] * 1024, response(*texts("a" * 1024)))

    events, result = await run(model)

    assert result.status == "completed"
    assert len(chunks_of(events)) == 1024


async def test_the_1025th_chunk_fails_and_is_not_emitted() -> None:
    model = OneTurnModel([delta("a")] * 1025, response(*texts("a" * 1025)))

    events, result = await run(model)

    failed = assert_failed(result, "MODEL_PROTOCOL_ERROR", CHUNK_LIMIT)
    assert len(chunks_of(events)) == 1024
    assert failed.messages == (USER,)
    assert events[-1].sequence == 1 + 1024


async def test_the_chunk_limit_is_checked_before_inspecting_the_1025th_chunk() -> None:
    model = OneTurnModel([*[delta("a")] * 1024, None], response(*texts("a" * 1024)))

    _, result = await run(model)

    assert_failed(result, "MODEL_PROTOCOL_ERROR", CHUNK_LIMIT)


async def test_the_chunk_limit_applies_per_turn() -> None:
    first = ScriptedModel(
        [
            tool_call_reply(("probe", {}, "c1"), text=("a",) * 1023),
            text_reply(*["b"] * 1024),
        ]
    )
    log: list[str] = []

    events, result = await run(first, tools=ToolRegistry([probe_tool(log)]), max_steps=2)

    assert result.status == "completed"
    assert len(chunks_of(events)) == 2048
    assert log == ["c1"]


# --- streamed text per step -------------------------------------------------------------------

LIMIT = MAX_MODEL_TEXT_CODE_POINTS

STREAMED_TEXT_OK = [
    pytest.param(["a" * LIMIT], id="exactly-the-limit"),
    pytest.param(["a" * (LIMIT // 2)] * 2, id="limit-over-two-deltas"),
    pytest.param(["😀" * LIMIT], id="astral-characters-count-one"),
    pytest.param([(HIGH + LOW) * LIMIT], id="surrogate-pairs-count-one"),
    pytest.param(["a" * (LIMIT - 1) + HIGH, LOW], id="pair-split-across-deltas-counts-once"),
    pytest.param(["a" * (LIMIT - 1) + HIGH, "", LOW], id="empty-delta-keeps-the-pending-surrogate"),
]


@pytest.mark.parametrize("deltas", STREAMED_TEXT_OK)
async def test_streamed_text_within_the_budget_is_accepted(deltas: list[str]) -> None:
    model = OneTurnModel([delta(part) for part in deltas], response(*texts(*deltas)))

    events, result = await run(model)

    assert result.status == "completed"
    assert len(chunks_of(events)) == len(deltas)


STREAMED_TEXT_OVER = [
    pytest.param(["a" * (LIMIT + 1)], 0, id="one-over-in-one-delta"),
    pytest.param(["a" * LIMIT, "b"], 1, id="one-over-in-the-next-delta"),
    pytest.param(["a" * LIMIT + HIGH], 0, id="dangling-high-surrogate-counts"),
    pytest.param([LOW * (LIMIT + 1)], 0, id="lone-surrogates-count-one-each"),
    pytest.param(["a" * (LIMIT - 1) + HIGH, LOW, "x"], 2, id="after-a-split-pair"),
]


@pytest.mark.parametrize(("deltas", "emitted"), STREAMED_TEXT_OVER)
async def test_streamed_text_over_the_budget_fails_before_the_chunk_is_emitted(
    deltas: list[str], emitted: int
) -> None:
    model = OneTurnModel([delta(part) for part in deltas], response(*texts(*deltas)))

    events, result = await run(model)

    failed = assert_failed(result, "MODEL_PROTOCOL_ERROR", TEXT_LIMIT)
    assert chunks_of(events) == [delta(part) for part in deltas[:emitted]]
    assert failed.messages == (USER,)


async def test_a_tool_call_chunk_breaks_surrogate_adjacency_between_deltas() -> None:
    tool_call = probe_call({})
    items = [delta("a" * (LIMIT - 1) + HIGH), call_chunk(tool_call), delta(LOW)]
    log: list[str] = []
    model = OneTurnModel(items, response(*texts("a" * (LIMIT - 1) + HIGH), tool_call))

    events, result = await run(model, tools=ToolRegistry([probe_tool(log)]))

    assert_failed(result, "MODEL_PROTOCOL_ERROR", TEXT_LIMIT)
    assert len(chunks_of(events)) == 2
    assert log == []


# --- the final message's text and blocks ------------------------------------------------------


async def test_final_message_text_over_the_budget_fails_before_agreement_is_checked() -> None:
    model = OneTurnModel([], response(*texts("a" * LIMIT, "b")))

    _, result = await run(model)

    assert_failed(result, "MODEL_PROTOCOL_ERROR", MESSAGE_TEXT_LIMIT)


async def test_final_message_text_budget_counts_a_pair_split_across_blocks_once() -> None:
    parts = ("a" * (LIMIT - 1) + HIGH, LOW)
    model = OneTurnModel([delta(part) for part in parts], response(*texts(*parts)))

    _, result = await run(model)

    assert result.status == "completed"


async def test_a_tool_call_block_breaks_adjacency_in_the_final_message_budget() -> None:
    tool_call = probe_call({})
    blocks = (TextBlock(text="a" * (LIMIT - 1) + HIGH), tool_call, TextBlock(text=LOW))
    model = OneTurnModel([], response(*blocks))

    _, result = await run(model, tools=ToolRegistry([probe_tool([])]))

    assert_failed(result, "MODEL_PROTOCOL_ERROR", MESSAGE_TEXT_LIMIT)


async def test_a_final_message_with_1024_blocks_is_accepted() -> None:
    model = OneTurnModel([delta("a" * 1024)], response(*texts(*["a"] * 1024)))

    _, result = await run(model)

    assert result.status == "completed"
    final = result.messages[-1]
    assert isinstance(final, AssistantMessage)
    assert len(final.content) == 1024


async def test_a_final_message_with_1025_blocks_fails_before_agreement_is_checked() -> None:
    model = OneTurnModel([], response(*texts(*["a"] * 1025)))

    _, result = await run(model)

    failed = assert_failed(result, "MODEL_PROTOCOL_ERROR", BLOCK_LIMIT)
    assert failed.messages == (USER,)


async def test_a_mapping_response_with_1025_blocks_fails() -> None:
    raw = {
        "id": "r",
        "requestId": "request-001",
        "message": {
            "id": "m",
            "role": "assistant",
            "content": [{"type": "text", "text": "a"}] * 1025,
        },
        "stopReason": "stop",
        "usage": {"inputTokens": 0, "outputTokens": 0},
    }

    _, result = await run(OneTurnModel([], raw))

    assert_failed(result, "MODEL_PROTOCOL_ERROR", BLOCK_LIMIT)


# --- starting assistant messages ----------------------------------------------------------------


@pytest.mark.parametrize(
    "blocks",
    [
        pytest.param(texts(*["a"] * 1024), id="1024-blocks"),
        pytest.param(texts("a" * (LIMIT // 2), "b" * (LIMIT // 2)), id="text-at-the-limit"),
        pytest.param(texts("a" * (LIMIT - 1) + HIGH, LOW), id="pair-split-across-blocks"),
        pytest.param(texts("a" * (LIMIT - 1) + HIGH, "", LOW), id="empty-block-keeps-the-flag"),
    ],
)
async def test_a_starting_assistant_message_within_bounds_is_accepted(
    blocks: tuple[TextBlock, ...],
) -> None:
    starting = [USER, AssistantMessage(id="a0", content=blocks), UserMessage(id="u2", content="?")]

    events, result = await run(ScriptedModel([text_reply("ok")]), messages=starting)

    assert result.status == "completed"
    assert [event.type for event in events][:3] == ["message.accepted"] * 3


@pytest.mark.parametrize(
    ("blocks", "message"),
    [
        pytest.param(texts(*[""] * 1025), BLOCK_LIMIT, id="1025-blocks"),
        pytest.param(texts("a" * LIMIT, "b"), MESSAGE_TEXT_LIMIT, id="text-over-two-blocks"),
        pytest.param(
            (TextBlock(text="a" * (LIMIT - 1) + HIGH), probe_call({}), TextBlock(text=LOW)),
            MESSAGE_TEXT_LIMIT,
            id="tool-call-breaks-adjacency",
        ),
    ],
)
async def test_a_starting_assistant_message_over_bounds_is_an_invalid_transcript(
    blocks: tuple[AssistantBlock, ...], message: str
) -> None:
    starting = [USER, AssistantMessage(id="a0", content=blocks)]
    model = ScriptedModel([text_reply("never")])

    events, result = await run(model, messages=starting)

    failed = assert_failed(result, "INVALID_TRANSCRIPT", message)
    assert failed.messages == ()
    assert [event.type for event in events] == ["run.finished"]
    assert model.call_count == 0


async def test_a_json_shaped_starting_assistant_message_with_1025_blocks_is_rejected() -> None:
    raw = {"id": "a0", "role": "assistant", "content": [{"type": "text", "text": ""}] * 1025}

    _, result = await run(ScriptedModel([]), messages=[USER, raw])

    assert_failed(result, "INVALID_TRANSCRIPT", BLOCK_LIMIT)


# --- tool-argument budgets --------------------------------------------------------------------


def nested_objects(depth: int) -> dict[str, Any]:
    """Arguments whose deepest object sits at ``depth`` (the arguments object is depth 0)."""
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"a": value}
    return value


def nested_arrays(depth: int) -> dict[str, Any]:
    """Arguments whose deepest array sits at ``depth``."""
    value: list[Any] = []
    for _ in range(depth - 1):
        value = [value]
    return {"a": value}


def keyed(count: int) -> dict[str, Any]:
    return {f"k{index:03d}": 0 for index in range(count)}


STRINGS = MAX_TOOL_ARGUMENT_STRING_CODE_POINTS

ARGUMENTS_WITHIN = [
    pytest.param(nested_objects(32), id="object-depth-32"),
    pytest.param(nested_arrays(32), id="array-depth-32"),
    pytest.param({"a": [0] * 127, "b": [0] * 127}, id="257-nodes"),
    pytest.param(keyed(256), id="256-object-entries"),
    pytest.param({"a": [0] * 255}, id="256-entries-with-an-array"),
    pytest.param({"s": "x" * (STRINGS - 1)}, id="4096-string-code-points-with-the-key"),
    pytest.param({"k" * STRINGS: None}, id="4096-code-point-key"),
    pytest.param({"a": "x" * 2047, "b": "x" * 2047}, id="4096-over-two-strings"),
    pytest.param({"s": "😀" * (STRINGS - 1)}, id="astral-characters-count-one"),
    pytest.param({"s": (HIGH + LOW) * (STRINGS - 1)}, id="surrogate-pairs-count-one"),
    pytest.param(
        {"s": "x" * (STRINGS - 4) + HIGH, "t": LOW}, id="two-strings-at-the-limit-with-halves"
    ),
    pytest.param({"n": None, "t": True, "f": 1.5, "i": -(2**60)}, id="scalars"),
]

ARGUMENTS_OVER = [
    pytest.param(
        nested_objects(33), "Tool-call arguments nest deeper than 32", id="object-depth-33"
    ),
    pytest.param(nested_arrays(33), "Tool-call arguments nest deeper than 32", id="array-depth-33"),
    pytest.param({"a": [0] * 128, "b": [0] * 127}, None, id="258-nodes"),
    pytest.param(keyed(257), "Tool-call arguments exceed 256 entries", id="257-object-entries"),
    pytest.param(
        {"a": [0] * 256}, "Tool-call arguments exceed 256 entries", id="257-entries-with-an-array"
    ),
    pytest.param(
        {"s": "x" * STRINGS},
        "Tool-call arguments exceed 4096 string code points",
        id="4097-string-code-points",
    ),
    pytest.param(
        {"k" * (STRINGS + 1): None},
        "Tool-call arguments exceed 4096 string code points",
        id="4097-code-point-key",
    ),
    pytest.param(
        {"a": "x" * 2047, "b": "x" * 2048},
        "Tool-call arguments exceed 4096 string code points",
        id="4097-over-two-strings",
    ),
    pytest.param(
        {"s": HIGH * STRINGS},
        "Tool-call arguments exceed 4096 string code points",
        id="lone-surrogates-count-one-each",
    ),
    pytest.param(
        {"s": "x" * (STRINGS - 3) + HIGH, "t": LOW},
        "Tool-call arguments exceed 4096 string code points",
        id="no-pairing-across-strings",
    ),
    pytest.param(
        {"a": 0, "b": 0, "c": 0, "d": nested_objects(32)},
        "Tool-call arguments nest deeper than 32",
        id="deep-value-after-siblings",
    ),
    pytest.param(
        {"a": [0, 0, 0, "x" * STRINGS]},
        "Tool-call arguments exceed 4096 string code points",
        id="long-string-in-a-later-slot",
    ),
]


def assert_argument_bound_failure(result: RunResult, message: str | None) -> FailedRunResult:
    assert isinstance(result, FailedRunResult), result
    assert result.error.code in ("MODEL_PROTOCOL_ERROR", "INVALID_TRANSCRIPT")
    if message is None:
        assert result.error.message in (
            "Tool-call arguments exceed 256 entries",
            "Tool-call arguments exceed 257 JSON values",
        )
    else:
        assert result.error.message == message
    return result


@pytest.mark.parametrize("arguments", ARGUMENTS_WITHIN)
async def test_streamed_tool_call_arguments_within_budgets_run_the_tool(
    arguments: dict[str, Any],
) -> None:
    tool_call = probe_call(arguments)
    log: list[str] = []
    model = OneTurnModel([call_chunk(tool_call)], response(tool_call))

    events, result = await run(model, tools=ToolRegistry([probe_tool(log)]))

    assert result.status == "maxSteps"
    assert chunks_of(events) == [call_chunk(tool_call)]
    assert log == ["c1"]


@pytest.mark.parametrize(("arguments", "message"), ARGUMENTS_OVER)
async def test_a_streamed_tool_call_over_budget_fails_before_its_event_and_any_tool_effect(
    arguments: dict[str, Any], message: str | None
) -> None:
    tool_call = probe_call(arguments)
    log: list[str] = []
    model = OneTurnModel([delta("Calling."), call_chunk(tool_call)], response(tool_call))

    events, result = await run(model, tools=ToolRegistry([probe_tool(log)]))

    failed = assert_argument_bound_failure(result, message)
    assert failed.error.code == "MODEL_PROTOCOL_ERROR"
    assert chunks_of(events) == [delta("Calling.")]
    assert failed.messages == (USER,)
    assert log == []


@pytest.mark.parametrize(("arguments", "message"), ARGUMENTS_OVER)
async def test_a_final_response_tool_call_over_budget_fails_before_any_tool_effect(
    arguments: dict[str, Any], message: str | None
) -> None:
    tool_call = probe_call(arguments)
    log: list[str] = []
    model = OneTurnModel([delta("Calling.")], response(TextBlock(text="Calling."), tool_call))

    events, result = await run(model, tools=ToolRegistry([probe_tool(log)]))

    failed = assert_argument_bound_failure(result, message)
    assert failed.error.code == "MODEL_PROTOCOL_ERROR"
    assert failed.messages == (USER,)
    assert "tool.started" not in [event.type for event in events]
    assert log == []


def history_with(tool_call: ToolCall) -> list[Message]:
    return [
        USER,
        AssistantMessage(id="a0", content=(tool_call,)),
        ToolResultMessage(
            id="r0", tool_call_id=tool_call.id, tool_name="probe", content="ok", is_error=False
        ),
    ]


@pytest.mark.parametrize("arguments", ARGUMENTS_WITHIN)
async def test_starting_transcript_tool_call_arguments_within_budgets_are_accepted(
    arguments: dict[str, Any],
) -> None:
    history = history_with(probe_call(arguments, "c0"))

    _, result = await run(ScriptedModel([text_reply("ok")]), messages=history)

    assert result.status == "completed"
    assert result.messages[:3] == tuple(history)


@pytest.mark.parametrize(("arguments", "message"), ARGUMENTS_OVER)
async def test_starting_transcript_tool_call_arguments_over_budget_are_an_invalid_transcript(
    arguments: dict[str, Any], message: str | None
) -> None:
    model = ScriptedModel([text_reply("never")])

    events, result = await run(model, messages=history_with(probe_call(arguments, "c0")))

    failed = assert_argument_bound_failure(result, message)
    assert failed.error.code == "INVALID_TRANSCRIPT"
    assert failed.messages == ()
    assert [event.type for event in events] == ["run.finished"]
    assert model.call_count == 0


class Subdict(dict[str, Any]):
    """Not a plain dict."""


def circular() -> dict[str, Any]:
    value: dict[str, Any] = {}
    value["self"] = value
    return value


@pytest.mark.parametrize(
    "arguments",
    [
        pytest.param({"x": math.nan}, id="nan"),
        pytest.param({"a": 0, "b": 0, "c": 0, "x": [1, 2, 3, math.nan]}, id="nan-in-a-later-slot"),
        pytest.param({"x": math.inf}, id="infinity"),
        pytest.param({"x": {1, 2}}, id="set"),
        pytest.param({"x": datetime.date(2024, 1, 1)}, id="date"),
        pytest.param({"x": Decimal("1.5")}, id="decimal"),
        pytest.param({"x": b"bytes"}, id="bytes"),
        pytest.param({"x": Subdict(a=1)}, id="dict-subclass"),
        pytest.param({1: "non-string key"}, id="non-string-key"),
        pytest.param(circular(), id="circular"),
        pytest.param([1, 2], id="array-root"),
        pytest.param(None, id="null-root"),
        pytest.param(Subdict(a=1), id="dict-subclass-root"),
    ],
)
async def test_mapping_chunk_arguments_that_are_not_plain_json_fail_before_their_event(
    arguments: object,
) -> None:
    raw_chunk = {
        "type": "toolCall",
        "requestId": "request-001",
        "toolCall": {"type": "toolCall", "id": "c1", "name": "probe", "arguments": arguments},
    }
    log: list[str] = []
    model = OneTurnModel([delta("Calling."), raw_chunk], response(TextBlock(text="Calling.")))

    events, result = await run(model, tools=ToolRegistry([probe_tool(log)]))

    failed = assert_failed(result, "MODEL_PROTOCOL_ERROR")
    assert chunks_of(events) == [delta("Calling.")]
    assert failed.messages == (USER,)
    assert log == []


async def test_mapping_chunk_arguments_over_the_depth_budget_fail_before_their_event() -> None:
    raw_chunk = {
        "type": "toolCall",
        "requestId": "request-001",
        "toolCall": {
            "type": "toolCall",
            "id": "c1",
            "name": "probe",
            "arguments": nested_objects(33),
        },
    }

    events, result = await run(OneTurnModel([raw_chunk], response()))

    assert_failed(result, "MODEL_PROTOCOL_ERROR", "Tool-call arguments nest deeper than 32")
    assert chunks_of(events) == []


# --- starting messages and steps ------------------------------------------------------------------


async def test_4096_starting_messages_are_accepted() -> None:
    starting = [UserMessage(id=f"u{index}", content="hi") for index in range(MAX_INITIAL_MESSAGES)]
    model = ScriptedModel([text_reply("ok")])

    events, result = await run(model, messages=starting)

    assert result.status == "completed"
    assert [event.type for event in events].count("message.accepted") == 4096
    assert len(model.requests[0].messages) == 4096


async def test_4097_starting_messages_are_an_invalid_transcript_with_no_messages() -> None:
    starting = [UserMessage(id=f"u{index}", content="hi") for index in range(4097)]
    model = ScriptedModel([text_reply("never")])

    events, result = await run(model, messages=starting)

    failed = assert_failed(
        result, "INVALID_TRANSCRIPT", "messages must not hold more than 4096 messages"
    )
    assert failed.messages == ()
    assert [event.type for event in events] == ["run.finished"]
    assert model.call_count == 0


async def test_64_steps_are_allowed_and_end_with_max_steps() -> None:
    log: list[str] = []
    model = ScriptedModel(
        [*(tool_call_reply(("probe", {})) for _ in range(64)), text_reply("never requested")]
    )

    _, result = await run(model, tools=ToolRegistry([probe_tool(log)]), max_steps=64)

    assert result.status == "maxSteps"
    assert len(log) == 64
    assert [request.id for request in model.requests] == [
        f"request-{step:03d}" for step in range(1, 65)
    ]
    assert model.pending_response_count == 1


async def test_a_request_sequence_start_continues_the_numbering_past_the_workshop_cap() -> None:
    # v2: no lifetime cap on request numbering (the workshop capped start + steps at 64).
    model = ScriptedModel([tool_call_reply(("probe", {})) for _ in range(4)])
    stream = run_agent_loop(
        messages=[USER],
        model=model,
        tools=ToolRegistry([probe_tool([])]),
        max_steps=4,
        request_sequence_start=62,
    )
    _ = [event async for event in stream]

    assert (await stream.result).status == "maxSteps"
    assert [request.id for request in model.requests] == [
        "request-063",
        "request-064",
        "request-065",
        "request-066",
    ]
    with pytest.raises(TypeError, match=r"^request_sequence_start must be"):
        run_agent_loop(
            messages=[USER],
            model=ScriptedModel([]),
            tools=ToolRegistry(),
            max_steps=5,
            request_sequence_start=-1,
        )


def test_more_than_64_steps_cannot_be_requested() -> None:
    with pytest.raises(TypeError, match=r"^max_steps must not exceed 64 "):
        run_agent_loop(
            messages=[USER],
            model=ScriptedModel([]),
            tools=ToolRegistry(),
            max_steps=MAX_AGENT_STEPS + 1,
            signal=AbortController().signal,
        )


# --- a turn that ends early waits for the stream it abandoned ---------------------------------


class ClosingModel:
    """A model whose stream, once abandoned, settles only after a cleanup that takes a few
    loop turns (as the HTTP providers close their response before they settle); with
    ``settles=False`` it never settles."""

    def __init__(self, *, settles: bool) -> None:
        self.settles = settles
        self.closed = False
        self.streams: list[EventStream[ModelChunk, ModelResponse]] = []
        self.cleanups: set[asyncio.Task[None]] = set()

    def stream(
        self, request: ModelRequest, signal: AbortSignal
    ) -> EventStream[ModelChunk, ModelResponse]:
        stream: EventStream[ModelChunk, ModelResponse] = EventStream()
        for word in ("one ", "two ", "three"):
            stream.push(TextDeltaChunk(request_id=request.id, delta=word))
        self.streams.append(stream)

        async def close() -> None:
            for _ in range(3):
                await asyncio.sleep(0)
            self.closed = True
            stream.fail(AbortError("closed"))

        def abandoned() -> None:
            if self.settles:
                task = asyncio.get_running_loop().create_task(close())
                self.cleanups.add(task)
                task.add_done_callback(self.cleanups.discard)

        stream.on_abandon(abandoned)
        return stream


def limit_breaking_run(model: ClosingModel) -> EventStream[AgentEvent, RunResult]:
    """A run whose model's three chunks break ``max_chunks_per_step=2``."""
    return run_agent_loop(
        messages=[UserMessage(content="Count.")],
        model=model,
        tools=ToolRegistry(),
        max_steps=1,
        limits=RunLimits(max_chunks_per_step=2),
    )


async def test_a_turn_that_breaks_a_limit_returns_after_its_model_stream_settled() -> None:
    model = ClosingModel(settles=True)
    result = await limit_breaking_run(model).result
    assert isinstance(result, FailedRunResult)
    assert result.error.code == "MODEL_PROTOCOL_ERROR"
    assert model.closed  # the cleanup ran to its end before the result arrived
    assert model.streams[0].settled
    assert model.cleanups == set()


async def test_a_model_stream_that_never_settles_holds_the_turn_only_briefly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(model_turn_module, "ABANDONED_STREAM_GRACE", 0.05)
    model = ClosingModel(settles=False)
    async with asyncio.timeout(5):
        result = await limit_breaking_run(model).result
    assert isinstance(result, FailedRunResult)
    assert result.error.code == "MODEL_PROTOCOL_ERROR"
    assert model.streams[0].abandon_notified
    assert not model.streams[0].settled
