"""The loop, v2: stop reasons, limits, request numbering, specs, thinking, deltas, usage, and
the consumer owning its run.

Runs are driven by ``ScriptedModel`` with plain-data replies, or by small hand-written models
(``PlayModel`` below) where a test needs chunks or responses a script cannot produce. Blocked
tools wait on ``asyncio.Event``\\ s the test controls; there are no sleeps, and every await that a
regression could turn into a hang is bounded by ``asyncio.timeout``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Sequence
from pathlib import Path
from typing import Any, Literal, cast

import pytest

from factories import accept, as_completed, chunks_of
from support import turns
from tether import (
    AbortController,
    AbortSignal,
    AgentEvent,
    AssistantMessage,
    CancelledRunResult,
    EventStream,
    FailedRunResult,
    FixtureProviderAdapter,
    JsonObject,
    MaxStepsRunResult,
    Model,
    ModelChunk,
    ModelRequest,
    ModelResponse,
    ModelStream,
    ModelUsage,
    RunResult,
    ScriptedModel,
    ScriptedReply,
    ScriptedToolCall,
    TextBlock,
    ToolCall,
    ToolDefinition,
    ToolExecutionContext,
    ToolRegistry,
    UserMessage,
    define_tool,
    run_agent_loop,
    text_reply,
    tool,
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
    RunLimits,
)
from tether.protocol import (
    ZERO_USAGE,
    TextDeltaChunk,
    ThinkingBlock,
    ThinkingDeltaChunk,
    ToolCallChunk,
    ToolCallDeltaChunk,
    ToolSpec,
)

USER = UserMessage(id="user-1", content="Go.")
USAGE = ModelUsage(input_tokens=3, output_tokens=2, cache_read_tokens=1)
BOUND = 10  # seconds: an outer bound on awaits that a regression could turn into a hang
CONSUMER_GONE = "run consumer went away"
FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "provider-tool-roundtrip.json"


# --- running ----------------------------------------------------------------------------------


def start(
    model: object,
    *,
    tools: ToolRegistry | None = None,
    max_steps: int = 8,
    limits: RunLimits | None = None,
    **options: Any,
) -> EventStream[AgentEvent, RunResult]:
    if limits is not None:
        options["limits"] = limits
    options.setdefault("signal", AbortController().signal)
    return run_agent_loop(
        messages=[USER],
        model=cast(Any, model),
        tools=tools if tools is not None else ToolRegistry(),
        max_steps=max_steps,
        **options,
    )


async def drain(stream: EventStream[AgentEvent, RunResult]) -> tuple[list[AgentEvent], RunResult]:
    async with asyncio.timeout(BOUND):
        events = [event async for event in stream]
        return events, await stream.result


async def run(model: object, **options: Any) -> tuple[list[AgentEvent], RunResult]:
    return await drain(start(model, **options))


def as_failed(result: RunResult, code: str) -> FailedRunResult:
    assert isinstance(result, FailedRunResult), result
    assert result.error.code == code, result.error
    return result


def started_calls(events: Sequence[AgentEvent]) -> list[str]:
    return [event.payload.tool_call.name for event in events if event.type == "tool.started"]


async def no_other_tasks() -> None:
    await turns()
    current = asyncio.current_task()
    others = [task for task in asyncio.all_tasks() if task is not current]
    assert others == [], others


# --- tools ------------------------------------------------------------------------------------


class Counter:
    """A tool that records every call it starts."""

    def __init__(self, name: str = "count") -> None:
        self.name = name
        self.calls: list[str] = []

    def tool(self) -> ToolDefinition[object, str]:
        async def execute(value: object, context: ToolExecutionContext) -> str:
            self.calls.append(context.tool_call_id)
            return "counted"

        return define_tool(
            name=self.name, description="Counts its calls.", validate=accept, execute=execute
        )


class Blocker:
    """A tool that blocks until ``release`` is set and records how it ended."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.release = asyncio.Event()
        self.finished = asyncio.Event()
        self.log: list[str] = []

    def tool(self) -> ToolDefinition[object, str]:
        async def execute(value: object, context: ToolExecutionContext) -> str:
            self.log.append("started")
            self.started.set()
            try:
                await self.release.wait()
            except asyncio.CancelledError:
                self.log.append("cancelled")
                raise
            finally:
                self.log.append("finally")
                self.finished.set()
            return "released"

        return define_tool(
            name="block", description="Blocks until released.", validate=accept, execute=execute
        )


# --- hand-written models ------------------------------------------------------------------------

Turn = Callable[[ModelRequest], tuple[Sequence[object], object]]
"""One model turn: given the request, the items to stream and the terminal value."""


class PlayModel:
    """Each ``stream()`` call plays the next turn into an ``EventStream``, as given (the
    items and terminal value may be protocol values or plain mappings)."""

    def __init__(self, *turns: Turn) -> None:
        self._turns: deque[Turn] = deque(turns)
        self.requests: list[ModelRequest] = []

    def stream(self, request: ModelRequest, signal: object) -> EventStream[object, object]:
        self.requests.append(request)
        items, outcome = self._turns.popleft()(request)
        stream: EventStream[object, object] = EventStream()
        for item in items:
            stream.push(item)
        stream.finish(outcome)
        return stream


def response(
    request: ModelRequest,
    *blocks: Any,
    stop_reason: Any = None,
    usage: ModelUsage = ZERO_USAGE,
) -> ModelResponse:
    has_calls = any(type(block) is ToolCall for block in blocks)
    return ModelResponse(
        id=f"response-{request.id}",
        request_id=request.id,
        message=AssistantMessage(id=f"message-{request.id}", content=blocks),
        stop_reason=stop_reason or ("toolCall" if has_calls else "stop"),
        usage=usage,
    )


def text_turn(text: str, usage: ModelUsage = ZERO_USAGE) -> Turn:
    def turn(request: ModelRequest) -> tuple[Sequence[object], object]:
        chunk = TextDeltaChunk(request_id=request.id, delta=text)
        return [chunk], response(request, TextBlock(text=text), usage=usage)

    return turn


def call_turn(call: ToolCall, usage: ModelUsage = ZERO_USAGE) -> Turn:
    def turn(request: ModelRequest) -> tuple[Sequence[object], object]:
        chunk = ToolCallChunk(request_id=request.id, tool_call=call)
        return [chunk], response(request, call, usage=usage)

    return turn


def mapping_response(request: ModelRequest, stop_reason: str) -> dict[str, Any]:
    return {
        "id": "response-1",
        "requestId": request.id,
        "message": {
            "id": "message-1",
            "role": "assistant",
            "content": [{"type": "text", "text": "hi"}],
        },
        "stopReason": stop_reason,
        "usage": {"inputTokens": 5, "outputTokens": 4, "cacheReadTokens": 3},
    }


def mapping_turn(stop_reason: str) -> Turn:
    def turn(request: ModelRequest) -> tuple[Sequence[object], object]:
        chunk = {"type": "textDelta", "requestId": request.id, "delta": "hi"}
        return [chunk], mapping_response(request, stop_reason)

    return turn


# --- stop reasons -------------------------------------------------------------------------------


async def test_a_length_response_fails_truncated_and_keeps_its_message() -> None:
    model = ScriptedModel([text_reply("partial", stop_reason="length")])
    events, result = await run(model)
    failed = as_failed(result, "MODEL_OUTPUT_TRUNCATED")
    assert failed.messages == (
        USER,
        AssistantMessage(id="message-response-request-001", content=(TextBlock(text="partial"),)),
    )
    assert events[-1].type == "run.finished"
    assert model.call_count == 1


@pytest.mark.parametrize(
    ("stop_reason", "code"), [("length", "MODEL_OUTPUT_TRUNCATED"), ("refusal", "MODEL_REFUSED")]
)
async def test_a_length_or_refusal_response_with_tool_calls_never_runs_them(
    stop_reason: Literal["length", "refusal"], code: str
) -> None:
    counter = Counter()
    model = ScriptedModel(
        [
            ScriptedReply(
                text=("Writing",),
                tool_calls=(ScriptedToolCall(name="count", arguments=JsonObject({"n": 1})),),
                stop_reason=stop_reason,
            ),
            text_reply("never requested"),
        ]
    )
    events, result = await run(model, tools=ToolRegistry([counter.tool()]))
    failed = as_failed(result, code)
    assert counter.calls == []
    assert started_calls(events) == []
    assert model.call_count == 1
    assert len(failed.messages) == 2
    kept = failed.messages[1]
    assert isinstance(kept, AssistantMessage)
    assert kept.content == (
        TextBlock(text="Writing"),
        ToolCall(id="call-request-001-1", name="count", arguments=JsonObject({"n": 1})),
    )


async def test_a_refusal_fails_refused_and_keeps_its_message() -> None:
    model = ScriptedModel([text_reply("I can't help with that.", stop_reason="refusal")])
    _, result = await run(model)
    failed = as_failed(result, "MODEL_REFUSED")
    assert failed.messages[1:] == (
        AssistantMessage(
            id="message-response-request-001",
            content=(TextBlock(text="I can't help with that."),),
        ),
    )


async def test_an_unknown_stop_reason_is_a_protocol_error_never_a_tool_turn() -> None:
    counter = Counter()
    model = PlayModel(mapping_turn("weird"), text_turn("never requested"))
    _, result = await run(model, tools=ToolRegistry([counter.tool()]))
    failed = as_failed(result, "MODEL_PROTOCOL_ERROR")
    assert "stop_reason" in failed.error.message, failed.error.message
    assert failed.messages == (USER,)
    assert failed.usage == ZERO_USAGE  # a rejected response is not counted
    assert len(model.requests) == 1
    assert counter.calls == []


async def test_a_mapping_response_with_a_known_stop_reason_completes() -> None:
    # The control for the test above: the same mapping, only the stop reason differs.
    _, result = await run(PlayModel(mapping_turn("stop")))
    completed = as_completed(result)
    assert completed.final_text == "hi"
    assert completed.usage == ModelUsage(input_tokens=5, output_tokens=4, cache_read_tokens=3)


# --- chunk budget -------------------------------------------------------------------------------


async def test_a_2000_chunk_stream_passes_under_real_model_limits() -> None:
    model = ScriptedModel([text_reply(*["x"] * 2000)])
    events, result = await run(model, limits=RunLimits.for_real_models())
    assert as_completed(result).final_text == "x" * 2000
    assert len(chunks_of(events)) == 2000


async def test_a_2000_chunk_stream_fails_under_the_default_limits() -> None:
    model = ScriptedModel([text_reply(*["x"] * 2000)])
    events, result = await run(model)
    failed = as_failed(result, "MODEL_PROTOCOL_ERROR")
    assert failed.error.message == "Model turn exceeded 1024 chunks"
    assert failed.messages == (USER,)
    assert len(chunks_of(events)) == 1024


# --- request numbering --------------------------------------------------------------------------


async def test_request_1000_follows_request_999() -> None:
    counter = Counter()
    model = ScriptedModel(
        [tool_call_reply(("count", {})), tool_call_reply(("count", {})), text_reply("done")]
    )
    _, result = await run(
        model, tools=ToolRegistry([counter.tool()]), max_steps=3, request_sequence_start=998
    )
    assert as_completed(result).final_text == "done"
    assert [request.id for request in model.requests] == [
        "request-999",
        "request-1000",
        "request-1001",
    ]
    assert counter.calls == ["call-request-999-1", "call-request-1000-1"]


# --- system prompt and tool specs ---------------------------------------------------------------


@tool
async def add(left: int, right: int) -> int:
    """Add two integers.

    Args:
        left: The first addend.
        right: The second addend.
    """
    return left + right


async def echo_execute(value: object, context: ToolExecutionContext) -> object:
    return value


ECHO_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"text": {"type": "string"}},
    "required": ["text"],
}


def echo_tool() -> ToolDefinition[object, object]:
    return define_tool(
        name="echo",
        description="Echo the text.",
        validate=accept,
        execute=echo_execute,
        parameters=ECHO_SCHEMA,
    )


async def test_requests_carry_the_system_prompt_and_the_tool_specs() -> None:
    registry = ToolRegistry([add, echo_tool()])
    model = ScriptedModel([tool_call_reply(("add", {"left": 20, "right": 22})), text_reply("42")])
    _, result = await run(model, tools=registry, system="You are terse.")
    as_completed(result)

    assert add.parameters is not None
    expected = (
        ToolSpec(name="add", description="Add two integers.", parameters=add.parameters),
        ToolSpec(name="echo", description="Echo the text.", parameters=JsonObject(ECHO_SCHEMA)),
    )
    assert add.parameters["required"] == ("left", "right")
    assert len(model.requests) == 2
    for request in model.requests:
        assert request.system == "You are terse."
        assert request.tools == expected


async def test_a_tool_without_parameters_is_described_as_taking_no_arguments() -> None:
    counter = Counter()
    model = ScriptedModel([text_reply("ok")])
    _, result = await run(model, tools=ToolRegistry([counter.tool()]))
    as_completed(result)
    (request,) = model.requests
    assert request.system is None
    assert request.tools == (
        ToolSpec(
            name="count",
            description="Counts its calls.",
            parameters=JsonObject({"type": "object", "properties": {}}),
        ),
    )


async def test_registering_after_the_run_starts_does_not_change_its_specs() -> None:
    counter = Counter()
    registry = ToolRegistry([echo_tool()])
    model = ScriptedModel([tool_call_reply(("echo", {"text": "a"})), text_reply("done")])
    stream = start(model, tools=registry)
    registry.register(counter.tool())
    _, result = await drain(stream)
    as_completed(result)
    assert [[spec.name for spec in request.tools] for request in model.requests] == [
        ["echo"],
        ["echo"],
    ]
    assert [spec.name for spec in registry.specs()] == ["echo", "count"]


# --- thinking -----------------------------------------------------------------------------------


def thinking_turn(streamed: str, final: str) -> Turn:
    def turn(request: ModelRequest) -> tuple[Sequence[object], object]:
        chunks = [
            ThinkingDeltaChunk(request_id=request.id, delta=streamed),
            TextDeltaChunk(request_id=request.id, delta="answer"),
        ]
        blocks = (ThinkingBlock(text=final), TextBlock(text="answer"))
        return chunks, response(request, *blocks)

    return turn


async def test_streamed_thinking_must_match_the_final_thinking_block() -> None:
    _, result = await run(PlayModel(thinking_turn("a", "b")))
    failed = as_failed(result, "MODEL_PROTOCOL_ERROR")
    assert failed.error.message == "Streamed thinking does not match the final message"
    assert failed.messages == (USER,)


async def test_streamed_thinking_that_matches_completes() -> None:
    _, result = await run(PlayModel(thinking_turn("a", "a")))
    completed = as_completed(result)
    assert completed.final_text == "answer"
    assert completed.messages[-1] == AssistantMessage(
        id="message-request-001", content=(ThinkingBlock(text="a"), TextBlock(text="answer"))
    )


@pytest.mark.parametrize(
    ("streamed", "final"),
    [
        pytest.param(("a", "b"), ("ab",), id="two-deltas-one-block"),
        pytest.param(("ab",), ("a", "b"), id="one-delta-two-blocks"),
    ],
)
async def test_thinking_is_coalesced_like_text(
    streamed: tuple[str, ...], final: tuple[str, ...]
) -> None:
    def turn(request: ModelRequest) -> tuple[Sequence[object], object]:
        chunks = [ThinkingDeltaChunk(request_id=request.id, delta=part) for part in streamed]
        return chunks, response(request, *(ThinkingBlock(text=part) for part in final))

    _, result = await run(PlayModel(turn))
    as_completed(result)


async def test_thinking_and_text_must_stream_in_the_final_order() -> None:
    def turn(request: ModelRequest) -> tuple[Sequence[object], object]:
        chunks = [
            TextDeltaChunk(request_id=request.id, delta="answer"),
            ThinkingDeltaChunk(request_id=request.id, delta="a"),
        ]
        return chunks, response(request, ThinkingBlock(text="a"), TextBlock(text="answer"))

    _, result = await run(PlayModel(turn))
    as_failed(result, "MODEL_PROTOCOL_ERROR")


async def test_scripted_thinking_reaches_the_assistant_message() -> None:
    model = ScriptedModel([text_reply("42", thinking=("Let me ", "add."))])
    events, result = await run(model)
    completed = as_completed(result)
    assert completed.final_text == "42"
    assert completed.messages[-1] == AssistantMessage(
        id="message-response-request-001",
        content=(ThinkingBlock(text="Let me "), ThinkingBlock(text="add."), TextBlock(text="42")),
    )
    assert [chunk.type for chunk in chunks_of(events)] == [
        "thinkingDelta",
        "thinkingDelta",
        "textDelta",
    ]


def unstreamed_thinking_turn(block: ThinkingBlock) -> Turn:
    def turn(request: ModelRequest) -> tuple[Sequence[object], object]:
        chunks = [TextDeltaChunk(request_id=request.id, delta="hi")]
        return chunks, response(request, block, TextBlock(text="hi"))

    return turn


async def test_a_redacted_thinking_block_that_was_never_streamed_is_accepted() -> None:
    redacted = ThinkingBlock(text="", signature="opaque-data", redacted=True)
    _, result = await run(PlayModel(unstreamed_thinking_turn(redacted)))
    completed = as_completed(result)
    last = completed.messages[-1]
    assert isinstance(last, AssistantMessage)
    assert last.content == (redacted, TextBlock(text="hi"))


async def test_an_unredacted_thinking_block_that_was_never_streamed_is_rejected() -> None:
    # The control for the test above: only ``redacted`` differs.
    block = ThinkingBlock(text="", signature="opaque-data")
    _, result = await run(PlayModel(unstreamed_thinking_turn(block)))
    as_failed(result, "MODEL_PROTOCOL_ERROR")


async def test_thinking_counts_against_the_streamed_text_budget() -> None:
    model = ScriptedModel([text_reply("ok", thinking=("abcd",))])
    _, result = await run(model, limits=RunLimits(max_text_code_points=5))
    failed = as_failed(result, "MODEL_PROTOCOL_ERROR")
    assert failed.error.message == "Model turn exceeded 5 streamed text code points"


# --- tool-call deltas ---------------------------------------------------------------------------


def delta_reply(*, deltas: bool) -> ScriptedReply:
    call = ScriptedToolCall(name="count", arguments=JsonObject({"n": 1}))
    return ScriptedReply(tool_calls=(call,), tool_call_deltas=deltas)


async def test_tool_call_deltas_count_against_the_chunk_budget() -> None:
    counter = Counter()
    model = ScriptedModel([delta_reply(deltas=True), text_reply("done")])
    _, result = await run(
        model, tools=ToolRegistry([counter.tool()]), limits=RunLimits(max_chunks_per_step=1)
    )
    failed = as_failed(result, "MODEL_PROTOCOL_ERROR")
    assert failed.error.message == "Model turn exceeded 1 chunks"
    assert counter.calls == []


async def test_without_deltas_the_same_turn_fits_one_chunk() -> None:
    # The control for the test above.
    counter = Counter()
    model = ScriptedModel([delta_reply(deltas=False), text_reply("done")])
    _, result = await run(
        model, tools=ToolRegistry([counter.tool()]), limits=RunLimits(max_chunks_per_step=1)
    )
    as_completed(result)
    assert counter.calls == ["call-request-001-1"]


async def test_tool_call_deltas_appear_as_model_chunk_events() -> None:
    counter = Counter()
    model = ScriptedModel([delta_reply(deltas=True), text_reply("done")])
    events, result = await run(model, tools=ToolRegistry([counter.tool()]))
    as_completed(result)
    chunks = chunks_of(events)
    assert [chunk.type for chunk in chunks] == ["toolCallDelta", "toolCall", "textDelta"]
    assert chunks[0] == ToolCallDeltaChunk(
        request_id="request-001",
        index=0,
        id="call-request-001-1",
        name="count",
        arguments_delta='{"n":1}',
    )
    assert counter.calls == ["call-request-001-1"]


async def test_tool_call_deltas_are_not_matched_against_the_final_message() -> None:
    counter = Counter()
    call = ToolCall(id="call-1", name="count", arguments=JsonObject({"n": 1}))

    def turn(request: ModelRequest) -> tuple[Sequence[object], object]:
        chunks: list[object] = [
            ToolCallDeltaChunk(
                request_id=request.id, index=7, id="other", name="other", arguments_delta="{{"
            ),
            {"type": "toolCallDelta", "requestId": request.id, "index": 0, "argumentsDelta": "]"},
            ToolCallChunk(request_id=request.id, tool_call=call),
        ]
        return chunks, response(request, call)

    events, result = await run(
        PlayModel(turn, text_turn("done")), tools=ToolRegistry([counter.tool()])
    )
    as_completed(result)
    assert counter.calls == ["call-1"]
    assert [type(chunk) for chunk in chunks_of(events)[:3]] == [
        ToolCallDeltaChunk,
        ToolCallDeltaChunk,
        ToolCallChunk,
    ]


async def test_deltas_alone_do_not_stand_in_for_the_complete_tool_call_chunk() -> None:
    counter = Counter()
    call = ToolCall(id="call-1", name="count", arguments=JsonObject({"n": 1}))

    def turn(request: ModelRequest) -> tuple[Sequence[object], object]:
        delta = ToolCallDeltaChunk(
            request_id=request.id, index=0, id="call-1", name="count", arguments_delta='{"n":1}'
        )
        return [delta], response(request, call)

    _, result = await run(PlayModel(turn), tools=ToolRegistry([counter.tool()]))
    as_failed(result, "MODEL_PROTOCOL_ERROR")
    assert counter.calls == []


async def test_a_tool_call_delta_for_another_request_is_a_protocol_error() -> None:
    counter = Counter()
    call = ToolCall(id="call-1", name="count", arguments=JsonObject())

    def turn(request: ModelRequest) -> tuple[Sequence[object], object]:
        chunks = [
            ToolCallDeltaChunk(request_id="request-999", index=0, arguments_delta="{}"),
            ToolCallChunk(request_id=request.id, tool_call=call),
        ]
        return chunks, response(request, call)

    _, result = await run(PlayModel(turn), tools=ToolRegistry([counter.tool()]))
    as_failed(result, "MODEL_PROTOCOL_ERROR")
    assert counter.calls == []


async def test_tool_call_deltas_do_not_count_as_streamed_text() -> None:
    counter = Counter()
    call = ToolCall(id="call-1", name="count", arguments=JsonObject({"text": "y" * 100}))

    def turn(request: ModelRequest) -> tuple[Sequence[object], object]:
        chunks = [
            ToolCallDeltaChunk(request_id=request.id, index=0, arguments_delta="x" * 100),
            ToolCallChunk(request_id=request.id, tool_call=call),
        ]
        return chunks, response(request, call)

    _, result = await run(
        PlayModel(turn, text_turn("ok")),
        tools=ToolRegistry([counter.tool()]),
        limits=RunLimits(max_text_code_points=5),
    )
    as_completed(result)
    assert counter.calls == ["call-1"]


async def test_an_invalid_mapping_delta_is_a_protocol_error() -> None:
    def turn(request: ModelRequest) -> tuple[Sequence[object], object]:
        delta = {"type": "toolCallDelta", "requestId": request.id, "index": -1}
        return [delta], response(request, TextBlock(text="x"))

    _, result = await run(PlayModel(turn))
    failed = as_failed(result, "MODEL_PROTOCOL_ERROR")
    assert failed.error.message.startswith("Model toolCallDelta chunk is invalid"), failed.error


# --- usage ----------------------------------------------------------------------------------


TWICE = ModelUsage(input_tokens=6, output_tokens=4, cache_read_tokens=2)


async def test_a_completed_run_totals_the_usage_of_every_response() -> None:
    counter = Counter()
    model = ScriptedModel(
        [tool_call_reply(("count", {}), usage=USAGE), text_reply("done", usage=USAGE)]
    )
    _, result = await run(model, tools=ToolRegistry([counter.tool()]))
    assert as_completed(result).usage == TWICE
    assert result.usage.total_tokens == 12


async def test_a_max_steps_run_totals_its_usage() -> None:
    counter = Counter()
    model = ScriptedModel(
        [tool_call_reply(("count", {}), usage=USAGE), tool_call_reply(("count", {}), usage=USAGE)]
    )
    _, result = await run(model, tools=ToolRegistry([counter.tool()]), max_steps=2)
    assert isinstance(result, MaxStepsRunResult), result
    assert result.usage == TWICE


async def test_a_truncated_run_counts_the_truncated_response() -> None:
    counter = Counter()
    model = ScriptedModel(
        [
            tool_call_reply(("count", {}), usage=USAGE),
            text_reply("partial", stop_reason="length", usage=USAGE),
        ]
    )
    _, result = await run(model, tools=ToolRegistry([counter.tool()]))
    assert as_failed(result, "MODEL_OUTPUT_TRUNCATED").usage == TWICE


async def test_a_rejected_response_is_not_counted() -> None:
    counter = Counter()
    call = ToolCall(id="call-1", name="count", arguments=JsonObject())

    def mismatched(request: ModelRequest) -> tuple[Sequence[object], object]:
        chunk = TextDeltaChunk(request_id=request.id, delta="a")
        return [chunk], response(request, TextBlock(text="b"), usage=USAGE)

    model = PlayModel(call_turn(call, usage=USAGE), mismatched)
    _, result = await run(model, tools=ToolRegistry([counter.tool()]))
    failed = as_failed(result, "MODEL_PROTOCOL_ERROR")
    assert failed.usage == USAGE
    assert counter.calls == ["call-1"]


async def test_a_fixture_run_totals_the_fixture_usage() -> None:
    _, result = await run(FixtureProviderAdapter.from_path(FIXTURE), tools=ToolRegistry([add]))
    assert as_completed(result).usage == ModelUsage(input_tokens=32, output_tokens=14)


# --- the signal is optional -------------------------------------------------------------------


async def test_a_run_without_a_signal_completes() -> None:
    model = ScriptedModel([text_reply("done")])
    stream = run_agent_loop(messages=[USER], model=model, tools=ToolRegistry(), max_steps=1)
    _, result = await drain(stream)
    assert as_completed(result).final_text == "done"


async def test_a_run_with_signal_none_completes() -> None:
    model = ScriptedModel([text_reply("done")])
    _, result = await run(model, signal=None)
    assert as_completed(result).final_text == "done"


# --- the consumer owns the run ----------------------------------------------------------------


def blocking_run(blocker: Blocker, counter: Counter) -> tuple[ScriptedModel, Any]:
    model = ScriptedModel(
        [tool_call_reply(("block", {}), ("count", {}), usage=USAGE), text_reply("never")]
    )
    stream = start(model, tools=ToolRegistry([blocker.tool(), counter.tool()]))
    return model, stream


async def assert_consumer_gone(
    stream: EventStream[AgentEvent, RunResult],
    model: ScriptedModel,
    blocker: Blocker,
    counter: Counter,
) -> None:
    async with asyncio.timeout(BOUND):
        await blocker.finished.wait()  # nobody awaits the run: it stops the tool by itself
    assert blocker.log == ["started", "cancelled", "finally"]
    async with asyncio.timeout(BOUND):
        result = await stream.result
    assert isinstance(result, CancelledRunResult), result
    assert result.reason == CONSUMER_GONE
    assert result.usage == USAGE
    assert [message.role for message in result.messages] == ["user", "assistant"]
    await no_other_tasks()
    assert counter.calls == []  # the second call of the batch never started
    assert model.call_count == 1


async def test_a_consumer_that_stops_awaiting_result_aborts_the_run() -> None:
    blocker, counter = Blocker(), Counter()
    model, stream = blocking_run(blocker, counter)
    async with asyncio.timeout(BOUND):
        await blocker.started.wait()
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(stream.result, 0.01)  # the tool never returns: always times out
    await assert_consumer_gone(stream, model, blocker, counter)


async def test_cancelling_the_task_that_awaits_result_aborts_the_run() -> None:
    blocker, counter = Blocker(), Counter()
    model, stream = blocking_run(blocker, counter)

    async def wait_for_result() -> RunResult:
        return await stream.result

    waiting = asyncio.create_task(wait_for_result())
    async with asyncio.timeout(BOUND):
        await blocker.started.wait()
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    await assert_consumer_gone(stream, model, blocker, counter)


async def test_closing_the_iterator_early_aborts_the_run() -> None:
    blocker, counter = Blocker(), Counter()
    model, stream = blocking_run(blocker, counter)
    iterator = aiter(stream)
    async with asyncio.timeout(BOUND):
        while True:
            event = await anext(iterator)
            if event.type == "tool.started":
                break
        await blocker.started.wait()
    assert event.payload.tool_call.name == "block"
    await iterator.aclose()
    await assert_consumer_gone(stream, model, blocker, counter)


async def test_a_consumer_iterating_under_a_timeout_aborts_the_run() -> None:
    blocker, counter = Blocker(), Counter()
    model, stream = blocking_run(blocker, counter)

    async def consume() -> None:
        async for _ in stream:
            pass

    reading = asyncio.create_task(consume())
    async with asyncio.timeout(BOUND):
        await blocker.started.wait()
    reading.cancel()  # what asyncio.timeout(...) around ``async for`` does to the consumer
    with pytest.raises(asyncio.CancelledError):
        await reading
    async with asyncio.timeout(BOUND):
        await stream.result
    try:
        assert blocker.log == ["started", "cancelled", "finally"], (
            f"the consumer is gone but the tool is still running: {blocker.log}"
        )
        result = stream.result_nowait(None)
        assert isinstance(result, CancelledRunResult), result
        assert result.reason == CONSUMER_GONE
        assert counter.calls == []
        assert model.call_count == 1
    finally:
        blocker.release.set()  # let a still-running run finish so the test leaves no task
        async with asyncio.timeout(BOUND):
            await stream.result
        await no_other_tasks()


async def test_a_consumer_that_goes_away_while_the_model_streams_aborts_the_turn() -> None:
    opened = asyncio.Event()
    never = asyncio.Event()
    log: list[str] = []

    async def endless(
        request: ModelRequest, signal: AbortSignal
    ) -> AsyncIterator[ModelChunk | ModelResponse]:
        yield TextDeltaChunk(request_id=request.id, delta="thinking about it")
        opened.set()
        try:
            await never.wait()
        finally:
            log.append("closed")
        yield response(request, TextBlock(text="never"))  # pragma: no cover

    model = ScriptedModel([endless])
    stream = start(model)
    async with asyncio.timeout(BOUND):
        await opened.wait()
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(stream.result, 0.01)  # the model never answers: always times out
    async with asyncio.timeout(BOUND):
        result = await stream.result
    assert isinstance(result, CancelledRunResult), result
    assert result.reason == CONSUMER_GONE
    assert result.messages == (USER,)  # no partial assistant message
    await no_other_tasks()
    assert log == ["closed"]


async def test_a_consumer_that_iterates_to_the_end_is_unaffected() -> None:
    blocker, counter = Blocker(), Counter()
    model = ScriptedModel(
        [tool_call_reply(("block", {}), ("count", {}), usage=USAGE), text_reply("done")]
    )
    stream = start(model, tools=ToolRegistry([blocker.tool(), counter.tool()]))
    iterator = aiter(stream)
    events: list[AgentEvent] = []
    async with asyncio.timeout(BOUND):
        async for event in iterator:
            events.append(event)
            if event.type == "tool.started" and event.payload.tool_call.name == "block":
                await blocker.started.wait()
                blocker.release.set()
        await iterator.aclose()  # after the end: changes nothing
        result = await stream.result
    assert as_completed(result).final_text == "done"
    assert result.usage == USAGE
    assert blocker.log == ["started", "finally"]
    assert counter.calls == ["call-request-001-2"]
    assert events[-1].type == "run.finished"
    assert events[-1].payload.result is result


async def test_a_consumer_awaiting_only_the_result_is_unaffected() -> None:
    counter = Counter()
    model = ScriptedModel([tool_call_reply(("count", {})), text_reply("done")])
    stream = start(model, tools=ToolRegistry([counter.tool()]))
    async with asyncio.timeout(BOUND):
        result = await stream.result
    assert as_completed(result).final_text == "done"
    assert counter.calls == ["call-request-001-1"]


# --- a CancelledError nobody asked for is a failure ---------------------------------------------


async def test_a_tool_raising_cancelled_error_on_its_own_is_a_tool_failure() -> None:
    async def cancels(value: object, context: ToolExecutionContext) -> object:
        raise asyncio.CancelledError

    rogue = define_tool(
        name="rogue", description="Cancels itself.", validate=accept, execute=cancels
    )
    counter = Counter()
    model = ScriptedModel([tool_call_reply(("rogue", {}), ("count", {})), text_reply("never")])
    _, result = await run(model, tools=ToolRegistry([rogue, counter.tool()]))
    failed = as_failed(result, "TOOL_EXECUTION_FAILED")
    assert [message.role for message in failed.messages] == ["user", "assistant"]
    assert counter.calls == []
    assert model.call_count == 1


class CancellingIterator:
    def __aiter__(self) -> CancellingIterator:
        return self

    async def __anext__(self) -> ModelChunk:
        raise asyncio.CancelledError


class CancellingStream:
    """A stream whose ``__anext__`` (or ``result``) raises ``CancelledError`` on its own."""

    def __init__(self, where: str) -> None:
        self.where = where

    def __aiter__(self) -> AsyncIterator[ModelChunk]:
        if self.where == "anext":
            return CancellingIterator()
        return EmptyIterator()

    @property
    def result(self) -> Awaitable[ModelResponse]:
        return CancelledAwaitable()


class CancelledAwaitable:
    """Raises ``CancelledError`` when awaited (and makes no coroutine until then)."""

    def __await__(self) -> Generator[Any, None, ModelResponse]:
        yield from ()
        raise asyncio.CancelledError


class EmptyIterator:
    def __aiter__(self) -> EmptyIterator:
        return self

    async def __anext__(self) -> ModelChunk:
        raise StopAsyncIteration


class CancellingModel:
    def __init__(self, where: str) -> None:
        self.where = where
        self.calls = 0

    def stream(self, request: ModelRequest, signal: object) -> CancellingStream:
        self.calls += 1
        return CancellingStream(self.where)


@pytest.mark.parametrize("where", ["anext", "result"])
async def test_a_model_raising_cancelled_error_on_its_own_is_a_stream_failure(where: str) -> None:
    model = CancellingModel(where)
    _, result = await run(model)
    failed = as_failed(result, "MODEL_STREAM_FAILED")
    assert failed.messages == (USER,)
    assert model.calls == 1


# --- RunLimits ----------------------------------------------------------------------------------

WORKSHOP_LIMITS = {
    "max_steps": (MAX_AGENT_STEPS, 64),
    "max_initial_messages": (MAX_INITIAL_MESSAGES, 4096),
    "max_chunks_per_step": (MAX_MODEL_CHUNKS_PER_STEP, 1024),
    "max_text_code_points": (MAX_MODEL_TEXT_CODE_POINTS, 65_536),
    "max_blocks_per_step": (MAX_MODEL_BLOCKS_PER_STEP, 1024),
    "max_argument_depth": (MAX_TOOL_ARGUMENT_DEPTH, 32),
    "max_argument_nodes": (MAX_TOOL_ARGUMENT_NODES, 257),
    "max_argument_entries": (MAX_TOOL_ARGUMENT_ENTRIES, 256),
    "max_argument_string_code_points": (MAX_TOOL_ARGUMENT_STRING_CODE_POINTS, 4096),
}
LIMIT_FIELDS = [field.name for field in dataclasses.fields(RunLimits)]


def test_run_limits_defaults_are_the_workshop_constants() -> None:
    limits = RunLimits()
    assert sorted(LIMIT_FIELDS) == sorted(WORKSHOP_LIMITS)
    for name, (constant, value) in WORKSHOP_LIMITS.items():
        assert getattr(limits, name) == constant == value, name
    with pytest.raises(dataclasses.FrozenInstanceError):
        limits.max_steps = 1  # pyright: ignore[reportAttributeAccessIssue]


@pytest.mark.parametrize("name", LIMIT_FIELDS)
@pytest.mark.parametrize("value", [0, -1, True, 1.0, "8", None, 2**53])
def test_invalid_run_limits_raise_type_error(name: str, value: object) -> None:
    with pytest.raises(TypeError, match=f"^RunLimits.{name} must be a positive safe integer$"):
        RunLimits(**{name: value})  # pyright: ignore[reportArgumentType]


def test_the_real_model_profile_raises_every_limit() -> None:
    real, workshop = RunLimits.for_real_models(), RunLimits()
    for name in LIMIT_FIELDS:
        assert getattr(real, name) >= getattr(workshop, name), name
    assert real.max_chunks_per_step > 2000
    assert real.max_argument_string_code_points >= 1_000_000


def test_max_steps_above_the_limit_raises_type_error() -> None:
    model = ScriptedModel([text_reply("never")])
    with pytest.raises(TypeError, match=r"^max_steps must not exceed 10"):
        start(model, max_steps=11, limits=RunLimits(max_steps=10))
    with pytest.raises(TypeError, match=r"^max_steps must not exceed 64"):
        start(model, max_steps=200)
    with pytest.raises(TypeError, match=r"^limits must be a RunLimits"):
        start(model, limits=cast(Any, {"max_steps": 8}))
    assert model.call_count == 0


async def test_the_real_model_profile_allows_200_steps() -> None:
    model = ScriptedModel([text_reply("done")])
    _, result = await run(model, max_steps=200, limits=RunLimits.for_real_models())
    assert as_completed(result).final_text == "done"
    _, exact = await run(
        ScriptedModel([text_reply("ok")]), max_steps=10, limits=RunLimits(max_steps=10)
    )
    as_completed(exact)


# --- Model and ModelStream are runtime-checkable ------------------------------------------------


def test_model_and_model_stream_are_runtime_checkable() -> None:
    assert isinstance(ScriptedModel([]), Model)
    assert isinstance(PlayModel(), Model)
    assert not isinstance(object(), Model)
    assert not isinstance("model", Model)
    assert isinstance(EventStream(), ModelStream)
    assert isinstance(CancellingStream("anext"), ModelStream)
    assert not isinstance(object(), ModelStream)
    assert not isinstance(EmptyIterator(), ModelStream)  # iterable, but no result


# --- a large write_file-like call -----------------------------------------------------------------


@tool
async def write_file(path: str, content: str) -> str:
    """Write a file."""
    return f"wrote {len(content)} characters to {path}"


LARGE = 1_000_000


def large_call_model(kind: str, content: str) -> object:
    if kind == "scripted":
        return ScriptedModel(
            [
                tool_call_reply(("write_file", {"path": "big.txt", "content": content})),
                text_reply("done"),
            ]
        )

    def turn(request: ModelRequest) -> tuple[Sequence[object], object]:
        call = {
            "type": "toolCall",
            "id": "call-1",
            "name": "write_file",
            "arguments": {"path": "big.txt", "content": content},
        }
        final = {
            "id": "response-1",
            "requestId": request.id,
            "message": {"id": "message-1", "role": "assistant", "content": [call]},
            "stopReason": "toolCall",
            "usage": {"inputTokens": 1, "outputTokens": 1},
        }
        return [{"type": "toolCall", "requestId": request.id, "toolCall": call}], final

    return PlayModel(turn, text_turn("done"))


@pytest.mark.parametrize("kind", ["scripted", "mapping"])
@pytest.mark.parametrize("char", ["x", "é", "\U0001f600"], ids=["ascii", "latin", "astral"])
async def test_a_large_tool_argument_passes_under_real_model_limits(kind: str, char: str) -> None:
    content = char * LARGE
    model = large_call_model(kind, content)
    began = time.perf_counter()
    _, result = await run(
        model, tools=ToolRegistry([write_file]), limits=RunLimits.for_real_models()
    )
    elapsed = time.perf_counter() - began
    print(f"\nlarge argument ({kind}, {char!r} x {LARGE:,}): {elapsed * 1000:.1f} ms")
    completed = as_completed(result)
    tool_result = completed.messages[2]
    assert tool_result.role == "toolResult"
    assert tool_result.is_error is False
    assert f"wrote {LARGE} characters to big.txt" in tool_result.content
    assert elapsed < 2.0


@pytest.mark.parametrize("kind", ["scripted", "mapping"])
async def test_a_large_tool_argument_fails_under_the_default_limits(kind: str) -> None:
    model = large_call_model(kind, "x" * LARGE)
    _, result = await run(model, tools=ToolRegistry([write_file]))
    failed = as_failed(result, "MODEL_PROTOCOL_ERROR")
    assert failed.error.message == "Tool-call arguments exceed 4096 string code points"
    assert failed.messages == (USER,)
