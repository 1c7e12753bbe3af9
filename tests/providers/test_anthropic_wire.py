"""``tether.providers.anthropic_wire`` and ``anthropic_stream``: the Anthropic Messages request
body and the stream normalization (``spec/providers.md`` §3, §9.11).

Stream bodies are SSE text: the ones in ``anthropic_bodies`` are written for these tests from
the documented shapes; the real recorded vendor streams are replayed from the shared folder's
``recorded/`` (``../shared`` beside the repository, or ``$TETHER_SHARED_DIR``; a missing folder
is a skip, and a failure under CI; never copied here), with
expectations derived from the rules, not snapshots. The anthropic SDK's ``accumulate_event``
is the oracle on faithful bodies (§5.4). Hypothesis checks that arbitrary payload sequences
only ever raise ``ProviderError``. Every successful parse is also checked with the agent
loop's own boundary checks (chunks, response, agreement between them).
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import anthropic_bodies as bodies
import wire_support as wire
from support import examples, missing_recordings, recorded_streams
from tether.jsonvalue import JsonObject
from tether.protocol import (
    AssistantMessage,
    ModelChunk,
    ModelRequest,
    ModelUsage,
    TextBlock,
    ThinkingBlock,
    ToolCall,
    ToolCallChunk,
    ToolResultMessage,
    ToolSpec,
    UserMessage,
)
from tether.providers.anthropic_stream import AnthropicStreamParser, transcript_call_ids
from tether.providers.anthropic_wire import build_messages_request
from tether.providers.errors import ProviderError
from tether.providers.responses_request import reasoning_signature
from wire_support import REQUEST_ID, Event, Outcome, decode, loop_accepts, parse_outcome


def feed_events(
    events: Iterable[Event],
    *,
    reserved: frozenset[str] = frozenset(),
    seen: list[ModelChunk] | None = None,
) -> Outcome:
    """What the HTTP glue does: ``json.loads`` each event's data, feed it with its event type,
    finish with ``done`` once ``message_stop`` was fed."""
    parser = AnthropicStreamParser(REQUEST_ID, reserved_call_ids=reserved)
    chunks: list[ModelChunk] = [] if seen is None else seen
    for kind, data in events:
        chunks.extend(parser.feed(json.loads(data), event=kind))
    tail, response = parser.finish(done=parser.stopped)
    chunks.extend(tail)
    loop_accepts(chunks, response)
    return Outcome(chunks, response)


def run(
    body: str, *, reserved: frozenset[str] = frozenset(), chunk_size: int | None = None
) -> Outcome:
    return feed_events(decode(body, chunk_size), reserved=reserved)


def fails(body: str, code: str, match: str = "") -> tuple[ProviderError, list[ModelChunk]]:
    seen: list[ModelChunk] = []
    with pytest.raises(ProviderError) as caught:
        feed_events(decode(body), seen=seen)
    assert caught.value.code == code, caught.value.message
    assert re.search(match, caught.value.message), caught.value.message
    return caught.value, seen


def tool(call_id: str, name: str, arguments: dict[str, Any] | None = None) -> ToolCall:
    return ToolCall(id=call_id, name=name, arguments=JsonObject(arguments or {}))


# --- §9.11 shapes ---------------------------------------------------------------------------------


@pytest.mark.parametrize("chunk_size", [None, 1, 7, 100])
def test_text_with_padding_and_pings(chunk_size: int | None) -> None:
    outcome = run(bodies.TEXT, chunk_size=chunk_size)
    assert [chunk.type for chunk in outcome.chunks] == ["textDelta"] * 3
    assert outcome.content == (TextBlock(text="Hello, world!"),)
    response = outcome.response
    assert response.id == "msg_01T3th3r"
    assert response.message.id == "message-msg_01T3th3r"
    assert response.model == bodies.MODEL
    assert response.stop_reason == "stop"
    assert response.usage == ModelUsage(input_tokens=25, output_tokens=6)


def test_tool_use_fragments_and_usage_that_grows() -> None:
    outcome = run(bodies.TOOL_USE)
    (call,) = outcome.calls
    assert call == tool(
        "toolu_01AbC", "get_exchange_rate", {"from_currency": "USD", "to_currency": "EUR"}
    )
    assert outcome.text == "Let me check."
    deltas = outcome.deltas
    assert (deltas[0].index, deltas[0].id, deltas[0].name, deltas[0].arguments_delta) == (
        0,
        "toolu_01AbC",
        "get_exchange_rate",
        "",
    )
    assert "".join(delta.arguments_delta for delta in deltas) == json.dumps(
        {"from_currency": "USD", "to_currency": "EUR"}
    )
    assert outcome.chunks[-1].type == "toolCall"
    assert outcome.response.stop_reason == "toolCall"
    # message_delta overwrites message_start: 1591, not 702 + 1591
    assert outcome.response.usage == ModelUsage(input_tokens=1591, output_tokens=175)


def test_parallel_parameterless_tools() -> None:
    outcome = run(bodies.PARALLEL_PARAMETERLESS)
    assert outcome.calls == [tool("toolu_01One", "llm_version"), tool("toolu_01Two", "llm_time")]
    assert [delta.index for delta in outcome.deltas] == [0, 1]
    assert [type(block) for block in outcome.content] == [TextBlock, ToolCall, ToolCall]
    assert outcome.response.stop_reason == "toolCall"


def test_thinking_with_its_signature() -> None:
    outcome = run(bodies.THINKING_SIGNATURE)
    thinking, call = outcome.content
    assert thinking == ThinkingBlock(
        text="The user wants\n1. the version.", signature=bodies.SIGNATURE
    )
    assert call == tool("toolu_01Fix", "fixed_version")
    assert [chunk.type for chunk in outcome.chunks] == [
        "thinkingDelta",
        "thinkingDelta",
        "toolCallDelta",
        "toolCall",
    ]
    assert outcome.response.usage == ModelUsage(input_tokens=598, output_tokens=92)


def test_redacted_thinking_is_kept_and_not_streamed() -> None:
    outcome = run(bodies.REDACTED_THINKING)
    assert outcome.content == (
        ThinkingBlock(text="", signature=bodies.REDACTED_DATA, redacted=True),
        TextBlock(text="The answer is 42."),
    )
    assert [chunk.type for chunk in outcome.chunks] == ["textDelta"]


def test_cache_tokens_and_field_by_field_overwrite() -> None:
    outcome = run(bodies.CACHE)
    assert outcome.response.usage == ModelUsage(
        input_tokens=18, output_tokens=4, cache_read_tokens=8831, cache_write_tokens=120
    )


def test_usage_fields_missing_or_null_in_message_delta_are_kept() -> None:
    body = bodies.sse(
        bodies.message_start(input_tokens=50, output_tokens=1, cache_read=7, cache_write=3),
        bodies.message_delta("end_turn", {"output_tokens": 9, "input_tokens": None}),
        bodies.MESSAGE_STOP,
    )
    usage = run(body).response.usage
    assert usage == ModelUsage(
        input_tokens=50, output_tokens=9, cache_read_tokens=7, cache_write_tokens=3
    )


def test_an_error_event_after_content() -> None:
    error, seen = fails(bodies.ERROR_AFTER_CONTENT, "PROVIDER_ERROR_EVENT", "Internal server error")
    assert error.provider_code == "api_error"
    assert [chunk.type for chunk in seen] == ["textDelta"]


def test_overloaded() -> None:
    error, seen = fails(bodies.OVERLOADED, "PROVIDER_OVERLOADED", "Overloaded")
    assert error.provider_code == "overloaded_error"
    assert seen == []


def test_an_event_error_line_is_an_error_even_without_its_type() -> None:
    parser = AnthropicStreamParser(REQUEST_ID)
    with pytest.raises(ProviderError) as caught:
        parser.feed({"error": {"type": "overloaded_error"}}, event="error")
    assert caught.value.code == "PROVIDER_OVERLOADED"


def test_a_delta_under_an_event_error_line_is_an_error() -> None:
    """``event: error`` makes a payload an error event whatever its ``type``: a content
    delta into an open block too (on the fast path and the general one)."""
    parser = AnthropicStreamParser(REQUEST_ID)
    parser.feed(bodies.message_start(), event="message_start")
    parser.feed(bodies.text_start(0), event="content_block_start")
    with pytest.raises(ProviderError) as caught:
        parser.feed(bodies.text(0, "hi"), event="error")
    assert caught.value.code == "PROVIDER_ERROR_EVENT"


def test_vendor_error_text_is_bounded() -> None:
    parser = AnthropicStreamParser(REQUEST_ID)
    with pytest.raises(ProviderError) as caught:
        parser.feed({"type": "error", "error": {"type": "x" * 500, "message": "m" * 10_000}})
    assert len(caught.value.message) <= 2000
    assert caught.value.provider_code == "x" * 100


def test_server_tools_are_skipped_and_pause_turn_is_a_stop() -> None:
    outcome = run(bodies.SERVER_TOOL_PAUSE)
    assert outcome.content == (TextBlock(text="Searching."), TextBlock(text=" Found it."))
    assert outcome.response.stop_reason == "stop"
    assert outcome.deltas == []


def test_a_call_cut_by_max_tokens_is_left_out() -> None:
    outcome = run(bodies.CUT_CALL)
    assert outcome.response.stop_reason == "length"
    assert outcome.calls == []


def test_invalid_json_is_kept_as_an_invalid_call_never_repaired() -> None:
    outcome = run(bodies.BAD_JSON_CALL)
    invalid = ToolCall(
        id="toolu_01Bad", name="write", arguments=JsonObject(), raw_arguments='{"path": '
    )
    assert outcome.calls == [invalid]
    assert outcome.response.stop_reason == "toolCall"
    streamed = [chunk.tool_call for chunk in outcome.chunks if isinstance(chunk, ToolCallChunk)]
    assert streamed == [invalid]
    assert streamed[0] is outcome.calls[0]
    body = bodies.body(
        bodies.tool_start(0, "toolu_1", "f"),
        bodies.json_part(0, "[1]"),
        bodies.stop(0),
        end="tool_use",
    )
    assert [call.raw_arguments for call in run(body).calls] == ["[1]"]
    # a broken call followed by another block is released before that block's chunks: the
    # model went on past it, so it was not cut
    body = bodies.body(
        bodies.tool_start(0, "toolu_1", "f"),
        bodies.json_part(0, "{"),
        bodies.stop(0),
        bodies.text_start(1),
        bodies.text(1, "and more"),
        bodies.stop(1),
        end="max_tokens",
    )
    outcome = run(body)
    assert outcome.content == (
        ToolCall(id="toolu_1", name="f", arguments=JsonObject(), raw_arguments="{"),
        TextBlock(text="and more"),
    )
    assert outcome.response.stop_reason == "length"
    kinds = [chunk.type for chunk in outcome.chunks if chunk.type != "toolCallDelta"]
    assert kinds == ["toolCall", "textDelta"]


def test_the_start_input_is_used_without_fragments() -> None:
    start = bodies.tool_start(0, "toolu_1", "f")
    start["content_block"]["input"] = {"a": 1}
    outcome = run(bodies.body(start, bodies.stop(0), end="tool_use"))
    assert outcome.calls == [tool("toolu_1", "f", {"a": 1})]


@pytest.mark.parametrize(
    ("reason", "stop"),
    [
        ("end_turn", "stop"),
        ("stop_sequence", "stop"),
        ("pause_turn", "stop"),
        ("max_tokens", "length"),
        ("model_context_window_exceeded", "length"),
        ("refusal", "refusal"),
    ],
)
def test_stop_reasons(reason: str, stop: str) -> None:
    body = bodies.body(bodies.text_start(0), bodies.text(0, "x"), bodies.stop(0), end=reason)
    assert run(body).response.stop_reason == stop


def test_tool_calls_with_end_turn_are_a_tool_turn() -> None:
    body = bodies.body(bodies.tool_start(0, "toolu_1", "f"), bodies.stop(0), end="end_turn")
    assert run(body).response.stop_reason == "toolCall"


def test_bad_stop_reasons() -> None:
    fails(bodies.body(end="surprise"), "PROVIDER_PROTOCOL_ERROR", 'Unknown stop_reason "surprise"')
    fails(bodies.body(end="tool_use"), "PROVIDER_PROTOCOL_ERROR", "without any tool call")
    fails(
        bodies.sse(bodies.message_start(), bodies.MESSAGE_STOP),
        "PROVIDER_PROTOCOL_ERROR",
        "without a stop_reason",
    )


def test_eof_before_message_stop_is_interrupted() -> None:
    body = bodies.body(bodies.text_start(0), bodies.text(0, "x"), end=None)
    _, seen = fails(body, "PROVIDER_STREAM_INTERRUPTED", "before message_stop")
    assert [chunk.type for chunk in seen] == ["textDelta"]
    fails("", "PROVIDER_STREAM_INTERRUPTED")
    body = bodies.sse(bodies.message_start(), bodies.message_delta("end_turn"))
    fails(body, "PROVIDER_STREAM_INTERRUPTED")


def test_done_without_message_stop_is_still_interrupted() -> None:
    parser = AnthropicStreamParser(REQUEST_ID)
    parser.feed(bodies.message_start())
    assert not parser.stopped
    with pytest.raises(ProviderError) as caught:
        parser.finish(done=True)
    assert caught.value.code == "PROVIDER_STREAM_INTERRUPTED"


# --- order and indexes ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("parts", "match"),
    [
        ([bodies.text(0, "x")], "never started"),
        ([bodies.stop(0)], "never started"),
        ([bodies.text_start(0), bodies.stop(0), bodies.text(0, "x")], "already closed"),
        ([bodies.text_start(0), bodies.stop(0), bodies.stop(0)], "already closed"),
        ([bodies.text_start(0), bodies.text_start(0)], "content block 0, already open"),
        ([bodies.text_start(0), bodies.stop(0), bodies.text_start(0)], "already closed"),
        ([bodies.text_start(1)], "index 1 where 0 was next"),
        ([bodies.text_start(0), bodies.text(1, "x")], "never started"),
        ([bodies.text_start(0), {**bodies.text(0, "x"), "index": "0"}], "index must be an integer"),
        ([bodies.text_start(0), bodies.MESSAGE_STOP], "still open"),
        (
            [bodies.text_start(0), bodies.json_part(0, "{}")],
            "input_json_delta does not fit the text",
        ),
        ([bodies.tool_start(0, "t", "f"), bodies.text(0, "x")], "text_delta does not fit the tool"),
        ([bodies.thinking_start(0), bodies.text(0, "x")], "does not fit the thinking"),
        ([bodies.text_start(0), bodies.signature(0, "s")], "signature_delta does not fit"),
        ([bodies.message_start()], "second message_start"),
    ],
)
def test_order_and_index_errors(parts: list[dict[str, Any]], match: str) -> None:
    fails(bodies.body(*parts, end=None), "PROVIDER_PROTOCOL_ERROR", match)


@pytest.mark.parametrize(
    "first",
    [
        bodies.text_start(0),
        bodies.text(0, "x"),
        bodies.stop(0),
        bodies.message_delta("end_turn"),
        bodies.MESSAGE_STOP,
    ],
)
def test_events_before_message_start(first: dict[str, Any]) -> None:
    fails(bodies.sse(first), "PROVIDER_PROTOCOL_ERROR", "before message_start")


def test_events_after_message_stop() -> None:
    body = bodies.body() + bodies.sse(bodies.text_start(0))
    fails(body, "PROVIDER_PROTOCOL_ERROR", "after message_stop")
    # pings and unknown event types stay harmless
    outcome = run(bodies.body() + bodies.sse(bodies.PING, {"type": "future_event"}))
    assert outcome.content == ()


def test_unknown_fields_blocks_deltas_and_events_are_tolerated() -> None:
    body = bodies.body(
        {"type": "future_event", "whatever": [1]},
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "future_block", "x": 1},
        },
        bodies.delta(0, "text_delta", text="ignored"),
        bodies.stop(0),
        {**bodies.text_start(1), "extra": True},
        bodies.delta(1, "future_delta", value=1),
        {**bodies.text(1, "ok"), "more": None},
        bodies.stop(1),
    )
    outcome = run(body)
    assert outcome.content == (TextBlock(text="ok"),)


@pytest.mark.parametrize(
    ("payload", "match"),
    [
        ([], "A stream event must be a JSON object"),
        ({"no": "type"}, "type must be a string"),
        ({"type": "message_start"}, "message must be an object"),
        ({"type": "message_start", "message": {"id": 5}}, "id must be a string"),
        ({"type": "message_start", "message": {"model": 5}}, "model must be a string"),
        ({"type": "message_start", "message": {"usage": []}}, "usage must be an object"),
        ({"type": "message_start", "message": {"usage": {"input_tokens": -1}}}, "non-negative"),
        ({"type": "message_start", "message": {"usage": {"output_tokens": 1.5}}}, "non-negative"),
        ({"type": "message_start", "message": {"usage": {"input_tokens": True}}}, "non-negative"),
    ],
)
def test_malformed_payloads(payload: object, match: str) -> None:
    parser = AnthropicStreamParser(REQUEST_ID)
    with pytest.raises(ProviderError) as caught:
        parser.feed(payload)
    assert caught.value.code == "PROVIDER_PROTOCOL_ERROR"
    assert re.search(match, caught.value.message), caught.value.message


@pytest.mark.parametrize(
    ("part", "match"),
    [
        ({"type": "content_block_start", "index": 0}, "content_block must be an object"),
        ({"type": "content_block_start", "index": 0, "content_block": {}}, "type must be a string"),
        (
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "tool_use", "id": "t"},
            },
            "name must be a non-empty string",
        ),
        (
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "tool_use", "name": "f", "id": 1},
            },
            "id must be a string",
        ),
        (
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "tool_use", "name": "f", "input": []},
            },
            "input must be an object",
        ),
        (
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "redacted_thinking"},
            },
            "data",
        ),
        (
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": 1},
            },
            "a string",
        ),
        (
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "thinking", "signature": 1},
            },
            "a string",
        ),
        ({"type": "message_delta", "delta": []}, "delta must be an object"),
        ({"type": "message_delta", "delta": {"stop_reason": 1}}, "stop_reason must be a string"),
        ({"type": "message_delta", "usage": {"output_tokens": "9"}}, "non-negative"),
    ],
)
def test_malformed_blocks(part: dict[str, Any], match: str) -> None:
    fails(bodies.body(part, end=None), "PROVIDER_PROTOCOL_ERROR", match)


@pytest.mark.parametrize(
    ("delta", "match"),
    [
        ({"type": "content_block_delta", "index": 0, "delta": "x"}, "delta must be an object"),
        (
            {"type": "content_block_delta", "index": 0, "delta": {"type": 1}},
            "type must be a string",
        ),
        # an array or an object as the type is not a hashable key: a typed error, never a
        # TypeError from the lookup
        (
            {"type": "content_block_delta", "index": 0, "delta": {"type": []}},
            r"delta\.type must be a string \(got an array\)",
        ),
        (
            {"type": "content_block_delta", "index": 0, "delta": {"type": {}}},
            r"delta\.type must be a string \(got an object\)",
        ),
        (bodies.delta(0, "text_delta", text=None), "text must be a string"),
    ],
)
def test_malformed_deltas(delta: dict[str, Any], match: str) -> None:
    fails(bodies.body(bodies.text_start(0), delta, end=None), "PROVIDER_PROTOCOL_ERROR", match)


def test_an_initial_text_is_streamed() -> None:
    start = bodies.text_start(0)
    start["content_block"]["text"] = "Hi"
    thinking = bodies.thinking_start(1)
    thinking["content_block"]["thinking"] = "Hmm"
    outcome = run(bodies.body(start, bodies.stop(0), thinking, bodies.stop(1)))
    assert outcome.content == (TextBlock(text="Hi"), ThinkingBlock(text="Hmm"))


def test_errors_are_sticky_and_misuse_is_a_runtime_error() -> None:
    parser = AnthropicStreamParser(REQUEST_ID)
    with pytest.raises(ProviderError):
        parser.feed(bodies.text(0, "x"))
    for _ in range(2):
        with pytest.raises(ProviderError) as caught:
            parser.feed(bodies.PING)
        assert caught.value.code == "PROVIDER_PROTOCOL_ERROR"
    with pytest.raises(ProviderError):
        parser.finish(done=False)
    parser = AnthropicStreamParser(REQUEST_ID)
    for _, data in decode(bodies.TEXT):
        parser.feed(json.loads(data))
    assert parser.stopped
    not_a_bool: Any = 1
    with pytest.raises(TypeError):
        parser.finish(done=not_a_bool)
    parser.finish(done=True)
    assert parser.stopped
    with pytest.raises(RuntimeError):
        parser.finish(done=True)
    with pytest.raises(RuntimeError):
        parser.feed(bodies.PING)


def test_constructor_arguments_are_checked() -> None:
    with pytest.raises(TypeError):
        AnthropicStreamParser("")
    with pytest.raises(TypeError):
        AnthropicStreamParser(REQUEST_ID, reserved_call_ids=frozenset({1}))  # pyright: ignore[reportArgumentType]


def test_response_id_falls_back() -> None:
    start = bodies.message_start()
    start["message"]["id"] = ""
    outcome = run(bodies.sse(start, bodies.message_delta("end_turn"), bodies.MESSAGE_STOP))
    assert outcome.response.id == f"response-{REQUEST_ID}"


def test_reserved_duplicate_and_empty_ids_are_replaced() -> None:
    body = bodies.body(
        bodies.tool_start(0, "toolu_old", "f"),
        bodies.stop(0),
        bodies.tool_start(1, "toolu_same", "f"),
        bodies.stop(1),
        bodies.tool_start(2, "toolu_same", "f"),
        bodies.stop(2),
        bodies.tool_start(3, "", "f"),
        bodies.stop(3),
        bodies.tool_start(4, "msg_01T3th3r-call-4", "f"),
        bodies.stop(4),
        end="tool_use",
    )
    reserved = frozenset({"toolu_old", "msg_01T3th3r-call-3"})
    ids = [call.id for call in run(body, reserved=reserved).calls]
    assert ids == [
        "msg_01T3th3r-call-0",
        "toolu_same",
        "msg_01T3th3r-call-2",
        "msg_01T3th3r-call-3-2",
        "msg_01T3th3r-call-4",
    ]
    assert ids == [call.id for call in run(body, reserved=reserved).calls]  # deterministic


def test_transcript_call_ids_is_reexported() -> None:
    request = sample_request()
    assert transcript_call_ids(request) == frozenset({"toolu_a", "toolu_b"})


# --- recorded vendor streams ----------------------------------------------------------------------


def _recorded() -> list[Path]:
    return recorded_streams("anthropic-messages")


@dataclass
class Expected:
    """What §3.3/§3.4 say a stream means, computed from the decoded payloads by the rules
    alone (an independent reading, not the parser's code)."""

    error: str | None = None
    blocks: list[tuple[str, object]] = dataclasses.field(default_factory=list[Any])
    usage: ModelUsage | None = None
    stop: str | None = None
    response_id: str = ""
    model: str | None = None


def expected_by_the_rules(events: list[Event]) -> Expected:
    blocks: dict[int, dict[str, Any]] = {}
    counts: dict[str, int] = {}
    stop_reason: str | None = None
    stopped = False
    response_id, model = "", None
    for _, data in events:
        payload: dict[str, Any] = json.loads(data)
        kind = payload["type"]
        if kind == "error":
            code = payload["error"]["type"]
            return Expected(
                error="PROVIDER_OVERLOADED"
                if code == "overloaded_error"
                else "PROVIDER_ERROR_EVENT"
            )
        if kind == "message_start":
            message = payload["message"]
            response_id, model = message["id"], message["model"]
            counts.update({k: v for k, v in message["usage"].items() if isinstance(v, int)})
        elif kind == "content_block_start":
            block = payload["content_block"]
            blocks[payload["index"]] = {"type": block["type"], "parts": [], "start": block}
        elif kind == "content_block_delta":
            delta = payload["delta"]
            entry = blocks[payload["index"]]
            for field in ("text", "thinking", "partial_json"):
                if field in delta:
                    entry["parts"].append(delta[field])
            if delta["type"] == "signature_delta":
                entry["signature"] = delta["signature"]
        elif kind == "message_delta":
            stop_reason = payload["delta"].get("stop_reason") or stop_reason
            counts.update(
                {k: v for k, v in payload["usage"].items() if isinstance(v, int)}
            )  # overwrite
        elif kind == "message_stop":
            stopped = True
    if not stopped:
        return Expected(error="PROVIDER_STREAM_INTERRUPTED")
    final: list[tuple[str, object]] = []
    for _, entry in sorted(blocks.items()):
        joined = "".join(entry["parts"])
        if entry["type"] == "text" and joined:
            final.append(("text", joined))
        elif entry["type"] == "thinking" and joined:
            final.append(("thinking", (joined, entry.get("signature") or None)))
        elif entry["type"] == "redacted_thinking":
            final.append(("redacted", entry["start"]["data"]))
        elif entry["type"] == "tool_use":
            final.append(
                ("tool", (entry["start"]["id"], entry["start"]["name"], json.loads(joined or "{}")))
            )
    has_calls = any(kind == "tool" for kind, _ in final)
    stops = {"tool_use": "toolCall", "max_tokens": "length", "refusal": "refusal"}
    stop = stops.get(stop_reason or "") or ("toolCall" if has_calls else "stop")
    usage = ModelUsage(
        input_tokens=counts.get("input_tokens", 0),
        output_tokens=counts.get("output_tokens", 0),
        cache_read_tokens=counts.get("cache_read_input_tokens", 0),
        cache_write_tokens=counts.get("cache_creation_input_tokens", 0),
    )
    return Expected(None, final, usage, stop, response_id, model)


def described(content: Iterable[Any]) -> list[tuple[str, object]]:
    out: list[tuple[str, object]] = []
    for block in content:
        if isinstance(block, TextBlock):
            out.append(("text", block.text))
        elif isinstance(block, ThinkingBlock):
            out.append(
                ("redacted", block.signature)
                if block.redacted
                else ("thinking", (block.text, block.signature))
            )
        elif isinstance(block, ToolCall):
            out.append(
                (
                    "tool",
                    (block.id, block.name, json.loads(json.dumps(dict(block.arguments.items())))),
                )
            )
    return out


@pytest.mark.parametrize(
    "path", _recorded() or [None], ids=lambda path: getattr(path, "stem", "none")
)
@pytest.mark.parametrize("chunk_size", [None, 13])
def test_recorded_vendor_streams(path: Path | None, chunk_size: int | None) -> None:
    if path is None:
        missing_recordings()
    recording = json.loads(path.read_text(encoding="utf-8"))
    assert recording["status"] == 200
    assert recording["content_type"].startswith("text/event-stream")
    events = decode(recording["body"], chunk_size)
    expected = expected_by_the_rules(events)
    if expected.error is not None:
        seen: list[ModelChunk] = []
        with pytest.raises(ProviderError) as caught:
            feed_events(events, seen=seen)
        assert caught.value.code == expected.error
        return
    outcome = feed_events(events)
    response = outcome.response
    assert described(outcome.content) == expected.blocks
    assert response.usage == expected.usage
    assert response.stop_reason == expected.stop
    assert response.id == expected.response_id
    assert response.model == expected.model


# --- the official SDK as an oracle ----------------------------------------------------------------

FAITHFUL: Final = {
    "text": bodies.TEXT,
    "tool_use": bodies.TOOL_USE,
    "parallel_parameterless": bodies.PARALLEL_PARAMETERLESS,
    "thinking_signature": bodies.THINKING_SIGNATURE,
    "redacted_thinking": bodies.REDACTED_THINKING,
    "cache": bodies.CACHE,
}
for _path in _recorded():
    FAITHFUL[_path.stem] = json.loads(_path.read_text(encoding="utf-8"))["body"]


def sdk_accumulate(body: str) -> Any:
    """``accumulate_event`` (anthropic SDK, private module) fed the same payloads; ``ping``
    and ``error`` skipped as §5.4 says."""
    messages: Any = importlib.import_module("anthropic.lib.streaming._messages")
    snapshot: Any = None
    json_bufs: dict[int, bytes] = {}
    for _, data in decode(body):
        payload = json.loads(data)
        if payload["type"] in ("ping", "error"):
            continue
        snapshot = messages.accumulate_event(
            event=payload, current_snapshot=snapshot, json_bufs=json_bufs
        )
    return snapshot


def sdk_described(message: Any) -> list[tuple[str, object]]:
    out: list[tuple[str, object]] = []
    for block in message.content:
        if block.type == "text" and block.text:
            out.append(("text", block.text))
        elif block.type == "thinking" and block.thinking:
            out.append(("thinking", (block.thinking, block.signature or None)))
        elif block.type == "redacted_thinking":
            out.append(("redacted", block.data))
        elif block.type == "tool_use":
            out.append(("tool", (block.id, block.name, block.input)))
    return out


@pytest.mark.parametrize("name", sorted(FAITHFUL))
def test_same_result_as_the_official_sdk(name: str) -> None:
    pytest.importorskip("anthropic")
    body = FAITHFUL[name]
    message = sdk_accumulate(body)
    outcome = run(body)
    assert described(outcome.content) == sdk_described(message)
    usage = message.usage
    assert outcome.response.usage == ModelUsage(
        input_tokens=usage.input_tokens or 0,
        output_tokens=usage.output_tokens or 0,
        cache_read_tokens=usage.cache_read_input_tokens or 0,
        cache_write_tokens=usage.cache_creation_input_tokens or 0,
    )
    stops = {"tool_use": "toolCall", "max_tokens": "length", "refusal": "refusal"}
    has_calls = bool(outcome.calls)
    expected = stops.get(message.stop_reason) or ("toolCall" if has_calls else "stop")
    assert outcome.response.stop_reason == expected
    assert outcome.response.id == message.id
    assert outcome.response.model == message.model


# --- request building -----------------------------------------------------------------------------

SCHEMA: Final = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}


def sample_request(**changes: Any) -> ModelRequest:
    call_a = tool("toolu_a", "read", {"path": "a.py"})
    call_b = tool("toolu_b", "ls")
    fields: dict[str, Any] = {
        "id": REQUEST_ID,
        "system": "Be brief.",
        "messages": (
            UserMessage(content="Read a.py and list."),
            AssistantMessage(
                content=(
                    ThinkingBlock(text="I should read.", signature="sig-1"),
                    ThinkingBlock(text="", signature="opaque", redacted=True),
                    ThinkingBlock(text="unsigned reasoning"),
                    TextBlock(text="Reading."),
                    call_a,
                    call_b,
                )
            ),
            ToolResultMessage(tool_call_id="toolu_a", tool_name="read", content="print(1)"),
            ToolResultMessage(
                tool_call_id="toolu_b", tool_name="ls", content="boom", is_error=True
            ),
            UserMessage(content="And then?"),
        ),
        "tools": (ToolSpec(name="read", description="Read a file", parameters=JsonObject(SCHEMA)),),
    }
    fields.update(changes)
    return ModelRequest(**fields)


def build(request: ModelRequest | None = None, **options: Any) -> dict[str, object]:
    arguments: dict[str, Any] = {
        "model": "claude-sonnet-4-6",
        "max_output_tokens": 4096,
        "temperature": None,
        "thinking_budget": None,
    }
    arguments.update(options)
    return build_messages_request(request or sample_request(), **arguments)


def test_reasoning_signed_by_the_responses_api_is_not_sent() -> None:
    """A conversation that switched from an OpenAI Responses model (``/model``) holds
    thinking blocks signed with Responses' encrypted reasoning: Anthropic would reject that
    signature, so they are dropped like unsigned reasoning."""
    foreign = reasoning_signature("rs_1", "gAAAA-blob")
    request = sample_request(
        messages=(
            UserMessage(content="Hi"),
            AssistantMessage(
                content=(
                    ThinkingBlock(text="summary", signature=foreign),
                    ThinkingBlock(text="", signature=foreign, redacted=True),
                    TextBlock(text="Hello."),
                )
            ),
            UserMessage(content="Again"),
        )
    )
    body: Any = build(request)
    assert body["messages"][1] == {
        "role": "assistant",
        "content": [{"type": "text", "text": "Hello."}],
    }


def test_the_request_body() -> None:
    assert build() == {
        "model": "claude-sonnet-4-6",
        "max_tokens": 4096,
        "system": "Be brief.",
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Read a.py and list."}]},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "I should read.", "signature": "sig-1"},
                    {"type": "redacted_thinking", "data": "opaque"},
                    {"type": "text", "text": "Reading."},
                    {
                        "type": "tool_use",
                        "id": "toolu_a",
                        "name": "read",
                        "input": {"path": "a.py"},
                    },
                    {"type": "tool_use", "id": "toolu_b", "name": "ls", "input": {}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_a", "content": "print(1)"},
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_b",
                        "content": "boom",
                        "is_error": True,
                    },
                    {"type": "text", "text": "And then?"},
                ],
            },
        ],
        "tools": [{"name": "read", "description": "Read a file", "input_schema": SCHEMA}],
        "stream": True,
    }
    json.dumps(build())  # plain JSON


def test_consecutive_messages_merge_and_empty_ones_vanish() -> None:
    request = sample_request(
        system="",
        tools=(ToolSpec(name="x", description="", parameters=JsonObject({"type": "object"})),),
        messages=(
            UserMessage(content="one"),
            UserMessage(content=""),
            UserMessage(content="two"),
            AssistantMessage(content=(ThinkingBlock(text="unsigned"), TextBlock(text=""))),
            UserMessage(content="three"),
        ),
    )
    body = build(request, stream=False)
    assert "system" not in body
    assert body["tools"] == [{"name": "x", "input_schema": {"type": "object"}}]
    assert body["stream"] is False
    assert body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "one"},
                {"type": "text", "text": "two"},
                {"type": "text", "text": "three"},
            ],
        }
    ]
    assert "tools" not in build(sample_request(tools=()))
    assert "system" not in build(sample_request(system=None))


def test_thinking_and_temperature() -> None:
    assert build(temperature=0.3)["temperature"] == 0.3
    body = build(thinking_budget=2048)
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert "temperature" not in body
    assert "temperature" not in build(thinking_budget=2048, temperature=1)
    with pytest.raises(ValueError, match="temperature cannot be set with thinking"):
        build(thinking_budget=2048, temperature=0.5)


@pytest.mark.parametrize(
    ("changes", "error"),
    [
        ({"model": ""}, TypeError),
        ({"max_output_tokens": 0}, ValueError),
        ({"max_output_tokens": None}, ValueError),
        ({"temperature": 1.5}, ValueError),
        ({"temperature": float("nan")}, ValueError),
        ({"temperature": "1"}, ValueError),
        ({"thinking_budget": 0}, ValueError),
        ({"thinking_budget": 4096}, ValueError),
        ({"stream": 1}, TypeError),
    ],
)
def test_request_arguments_are_checked(changes: dict[str, Any], error: type[Exception]) -> None:
    with pytest.raises(error):
        build(**changes)
    with pytest.raises(TypeError):
        build_messages_request(
            "request",  # pyright: ignore[reportArgumentType]
            model="m",
            max_output_tokens=1,
            temperature=None,
            thinking_budget=None,
        )


def test_a_replayed_response_builds_a_valid_next_request() -> None:
    outcome = run(bodies.THINKING_SIGNATURE)
    request = ModelRequest(
        id=REQUEST_ID,
        messages=(
            UserMessage(content="go"),
            outcome.response.message,
            ToolResultMessage(tool_call_id="toolu_01Fix", tool_name="fixed_version", content="1.0"),
        ),
    )
    messages: Any = build(request)["messages"]
    assert messages[1]["content"][0] == {
        "type": "thinking",
        "thinking": "The user wants\n1. the version.",
        "signature": bodies.SIGNATURE,
    }
    assert [turn["role"] for turn in messages] == ["user", "assistant", "user"]


# --- properties -----------------------------------------------------------------------------------

scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 10**6), st.text(max_size=4))
json_values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=3), children, max_size=3)
    ),
    max_leaves=8,
)


def fixed(required: dict[str, Any], optional: dict[str, Any] | None = None) -> Any:
    """``st.fixed_dictionaries`` with plain-typed arguments."""
    return st.fixed_dictionaries(required, optional=optional or {})


def payload_strategy(junk: Any) -> Any:
    def either(*options: Any) -> Any:
        plausible = st.sampled_from(options)
        return st.one_of(plausible, plausible, plausible, plausible, junk)

    indexes = either(0, 0, 1, 1, 2, -1)
    counts = fixed(
        {},
        optional={
            "input_tokens": either(0, 5, None),
            "output_tokens": either(1, 9, None),
            "cache_read_input_tokens": either(0, 3, None),
            "cache_creation_input_tokens": either(0, 2, None),
        },
    )
    content_blocks = st.one_of(
        fixed({"type": st.just("text")}, optional={"text": either("", "a")}),
        fixed(
            {"type": st.just("thinking")},
            optional={"thinking": either("", "t"), "signature": either("", "s")},
        ),
        fixed({"type": st.just("redacted_thinking")}, optional={"data": either("d", "")}),
        fixed(
            {"type": st.just("tool_use")},
            optional={
                "id": either("toolu_1", "toolu_1", "", "m-call-0"),
                "name": either("f", ""),
                "input": either({}, {"a": 1}),
            },
        ),
        fixed({"type": either("server_tool_use", "future")}),
    )
    deltas = st.one_of(
        fixed({"type": st.just("text_delta"), "text": either("", "x")}),
        fixed({"type": st.just("thinking_delta"), "thinking": either("", "y")}),
        fixed({"type": st.just("signature_delta"), "signature": either("sig", "")}),
        fixed(
            {
                "type": st.just("input_json_delta"),
                "partial_json": either("", "{", "}", '{"a":1}', '"b"'),
            }
        ),
        fixed({"type": either("citations_delta", "future")}),
    )
    stops = either("end_turn", "tool_use", "max_tokens", "refusal", "pause_turn", "weird", None)
    events = st.one_of(
        fixed(
            {
                "type": st.just("message_start"),
                "message": fixed(
                    {},
                    optional={"id": either("m", ""), "model": either("c", None), "usage": counts},
                ),
            }
        ),
        fixed(
            {
                "type": st.just("content_block_start"),
                "index": indexes,
                "content_block": content_blocks,
            }
        ),
        fixed({"type": st.just("content_block_delta"), "index": indexes, "delta": deltas}),
        fixed({"type": st.just("content_block_stop"), "index": indexes}),
        fixed(
            {"type": st.just("message_delta")},
            optional={
                "delta": fixed({}, optional={"stop_reason": stops}),
                "usage": counts,
            },
        ),
        st.sampled_from([{"type": "message_stop"}, {"type": "ping"}, {"type": "future"}]),
        fixed(
            {
                "type": st.just("error"),
                "error": fixed(
                    {},
                    optional={
                        "type": either("overloaded_error", "api_error"),
                        "message": either("m"),
                    },
                ),
            }
        ),
    )
    return st.one_of(events, events, events, events, junk)


CODES: Final = {
    "PROVIDER_PROTOCOL_ERROR",
    "PROVIDER_ERROR_EVENT",
    "PROVIDER_STREAM_INTERRUPTED",
    "PROVIDER_OVERLOADED",
}
RESERVED: Final = st.frozensets(st.sampled_from(["toolu_1", "m-call-0", "m-call-1"]))


def check_sequence(items: list[tuple[object, str]], reserved: frozenset[str]) -> None:
    parser = AnthropicStreamParser(REQUEST_ID, reserved_call_ids=reserved)
    wire.check_sequence(parser, items, reserved, CODES)


def sequences(payloads: Any) -> Any:
    kinds = st.sampled_from(["message"] * 30 + ["error", "ping"])
    start = st.just(({"type": "message_start", "message": {"id": "m", "model": "c"}}, "message"))
    body = st.lists(st.tuples(payloads, kinds), max_size=14)
    return st.one_of(body, st.tuples(start, body).map(lambda pair: [pair[0], *pair[1]]))


@settings(max_examples=examples(300))
@given(items=sequences(payload_strategy(json_values)), reserved=RESERVED)
def test_any_payloads_only_raise_provider_errors(
    items: list[tuple[object, str]], reserved: frozenset[str]
) -> None:
    check_sequence(items, reserved)


@settings(max_examples=examples(500))
@given(items=sequences(payload_strategy(st.nothing())), reserved=RESERVED)
def test_well_shaped_payload_sequences(
    items: list[tuple[object, str]], reserved: frozenset[str]
) -> None:
    check_sequence(items, reserved)


@given(
    arguments=st.dictionaries(st.text(max_size=5), json_values, max_size=6),
    cuts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=30),
)
def test_any_split_of_the_arguments_assembles_the_same_call(
    arguments: dict[str, Any], cuts: list[int]
) -> None:
    text = json.dumps(arguments)
    points = sorted({cut % (len(text) + 1) for cut in cuts})
    fragments = [
        text[start:end] for start, end in zip([0, *points], [*points, len(text)], strict=True)
    ]
    body = bodies.body(
        bodies.tool_start(0, "toolu_x", "write"),
        bodies.json_part(0, ""),
        *(bodies.json_part(0, fragment) for fragment in fragments),
        bodies.stop(0),
        end="tool_use",
    )
    outcome = run(body)
    (call,) = outcome.calls
    assert call.arguments == arguments
    assert "".join(delta.arguments_delta for delta in outcome.deltas) == text


class PlainPathParser(AnthropicStreamParser):
    """The parser with every payload through the general path (``_feed``), skipping the
    delta fast path in ``feed``: the reference the fast path must match."""

    __slots__ = ()

    def feed(self, payload: object, event: str = "message") -> list[ModelChunk]:
        if self._failure is not None or self._state == "finished":
            self._raise_closed()
        try:
            return self._feed(payload, event)
        except ProviderError as error:
            self._failure = error
            raise


START: Final[dict[str, object]] = {"type": "message_start", "message": {"id": "m", "model": "c"}}
INDEXES: Final = st.sampled_from([0, 0, 0, 1, 1, 2, -1, None, "0", True])
DELTA_VALUES: Final[list[object]] = [
    {"type": "text_delta", "text": "x"},
    {"type": "text_delta", "text": "x"},
    {"type": "text_delta", "text": ""},
    {"type": "text_delta", "text": 1},
    {"type": "thinking_delta", "thinking": "t"},
    {"type": "signature_delta", "signature": "s"},
    {"type": "input_json_delta", "partial_json": '{"a":'},
    {"type": "input_json_delta", "partial_json": "1}"},
    {"type": "thinking_delta", "thinking": ""},
    {"type": "thinking_delta", "thinking": None},
    {"type": "input_json_delta", "partial_json": ""},
    {"type": "input_json_delta", "partial_json": 3},
    {"type": "citations_delta"},
    {"type": 7},
    {"type": ["text_delta"]},
    {"text": "x"},
    [],
]
DELTAS: Final = st.sampled_from(DELTA_VALUES)
KIND_VALUES: Final = ["text", "thinking", "redacted_thinking", "tool_use", "server_tool_use"]
KINDS: Final = st.sampled_from(["text", "text", "thinking", "tool_use", "server_tool_use"])


def _block_start(index: object, kind: str) -> dict[str, object]:
    block = {"type": kind, "name": "f", "id": "toolu_1"}
    return {"type": "content_block_start", "index": index, "content_block": block}


def _block_delta(index: object, delta: object) -> dict[str, object]:
    return {"type": "content_block_delta", "index": index, "delta": delta}


def _block_stop(index: object) -> dict[str, object]:
    return {"type": "content_block_stop", "index": index}


def _after_start(items: list[tuple[dict[str, object], str]]) -> list[tuple[object, str]]:
    return [(START, "message"), *items]


BLOCK_EVENTS: Final[st.SearchStrategy[dict[str, object]]] = st.one_of(
    st.builds(_block_start, INDEXES, KINDS),
    st.builds(_block_delta, INDEXES, DELTAS),
    st.builds(_block_delta, INDEXES, DELTAS),
    st.builds(_block_stop, INDEXES),
    st.sampled_from(
        [
            {"type": "message_stop"},
            {"type": "ping"},
            START,
            {"type": "message_delta", "delta": {"stop_reason": "tool_use"}},
        ]
    ),
)
FOCUSED: Final = st.lists(
    st.tuples(BLOCK_EVENTS, st.sampled_from(["message"] * 8 + ["error"])), max_size=16
).map(_after_start)
"""Sequences aimed at the fast path: blocks started, stopped and fed, with bad indexes."""


@settings(max_examples=examples(300))
@given(
    items=sequences(payload_strategy(json_values) | payload_strategy(st.nothing())) | FOCUSED,
    reserved=RESERVED,
)
def test_the_delta_fast_path_matches_the_plain_path(
    items: list[tuple[object, str]], reserved: frozenset[str]
) -> None:
    fast = parse_outcome(AnthropicStreamParser(REQUEST_ID, reserved_call_ids=reserved), items)
    plain = parse_outcome(PlainPathParser(REQUEST_ID, reserved_call_ids=reserved), items)
    assert fast == plain


@pytest.mark.parametrize("kind", KIND_VALUES)
@pytest.mark.parametrize("delta", DELTA_VALUES)
@pytest.mark.parametrize("event", ["message", "error"])
def test_every_delta_into_every_block_kind_matches_the_plain_path(
    kind: str, delta: object, event: str
) -> None:
    # each delta the fast path may take, into each kind of block, open and closed
    items = _after_start(
        [
            (_block_start(0, kind), "message"),
            (_block_delta(0, delta), event),
            (_block_delta(0, delta), "message"),
            (_block_stop(0), "message"),
            (_block_delta(0, delta), "message"),
            ({"type": "message_stop"}, "message"),
        ]
    )
    fast = parse_outcome(AnthropicStreamParser(REQUEST_ID), items)
    assert fast == parse_outcome(PlainPathParser(REQUEST_ID), items)


# --- prompt caching (issue 33) ----------------------------------------------------------------

_EPHEMERAL: Final = {"type": "ephemeral"}


def _strip_markers(body: Any) -> Any:
    if isinstance(body, dict):
        return {k: _strip_markers(v) for k, v in body.items() if k != "cache_control"}  # pyright: ignore[reportUnknownVariableType]
    if isinstance(body, list):
        return [_strip_markers(item) for item in body]  # pyright: ignore[reportUnknownVariableType]
    return body


def _marked(body: Any) -> list[Any]:
    found: list[Any] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            if "cache_control" in value:
                found.append(value)
            for item in value.values():  # pyright: ignore[reportUnknownVariableType]
                walk(item)
        elif isinstance(value, list):
            for item in value:  # pyright: ignore[reportUnknownVariableType]
                walk(item)

    walk(body)
    return found


def test_cache_marks_system_last_tool_and_the_last_two_user_turns() -> None:
    body: Any = build(cache=True)
    assert body["system"] == [{"type": "text", "text": "Be brief.", "cache_control": _EPHEMERAL}]
    assert body["tools"][-1]["cache_control"] == _EPHEMERAL
    first, _, last = body["messages"]
    assert first["content"][-1]["cache_control"] == _EPHEMERAL
    assert last["content"][-1] == {"type": "text", "text": "And then?", "cache_control": _EPHEMERAL}
    assert len(_marked(body)) == 4
    assert _strip_markers(body) == {**build(), "system": [{"type": "text", "text": "Be brief."}]}
    with pytest.raises(TypeError, match="cache"):
        build(cache=1)


def test_cache_never_marks_thinking_and_skips_what_is_absent() -> None:
    request = sample_request(
        system=None,
        tools=(),
        messages=(
            UserMessage(content="hi"),
            AssistantMessage(content=(ThinkingBlock(text="hm", signature="s"),)),
        ),
    )
    body: Any = build(request, cache=True)
    assert "system" not in body
    assert "tools" not in body
    # the assistant turn holds thinking only: the user turn before it is marked, once
    assert _marked(body) == [{"type": "text", "text": "hi", "cache_control": _EPHEMERAL}]


_MESSAGES: Final = st.lists(
    st.sampled_from(
        [
            UserMessage(content="u"),
            UserMessage(content=""),
            AssistantMessage(content=(TextBlock(text="a"),)),
            AssistantMessage(content=(ThinkingBlock(text="t", signature="s"),)),
            AssistantMessage(content=(tool("toolu_x", "read", {"path": "p"}),)),
            ToolResultMessage(tool_call_id="toolu_x", tool_name="read", content="r"),
        ]
    ),
    max_size=8,
)


@given(_MESSAGES, st.booleans(), st.booleans())
def test_cache_markers_are_at_most_four_and_change_nothing_else(
    messages: list[Any], system: bool, tools: bool
) -> None:
    request = sample_request(
        messages=tuple(messages),
        system="S" if system else None,
        tools=sample_request().tools if tools else (),
    )
    plain: Any = build(request)
    body: Any = build(request, cache=True)
    marked = _marked(body)
    assert len(marked) <= 4
    assert all(block.get("type") not in ("thinking", "redacted_thinking") for block in marked)
    assert all(block["cache_control"] == _EPHEMERAL for block in marked)
    if system:
        plain["system"] = [{"type": "text", "text": "S"}]
    assert _strip_markers(body) == plain
    if body["messages"]:
        assert any("cache_control" in block for block in body["messages"][-1]["content"]) or all(
            block["type"] in ("thinking", "redacted_thinking")
            for block in body["messages"][-1]["content"]
        )
