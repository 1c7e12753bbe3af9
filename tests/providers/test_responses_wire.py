"""``tether.providers.responses_request`` and ``responses_wire``: the OpenAI Responses
request body and the stream normalization (``spec/providers-responses-gemini.md`` §1, §2, §5.1).

Stream bodies are SSE: the ones in ``responses_bodies`` are written for these tests from the
documented shapes; the real recorded vendor streams are replayed from the shared folder's
``recorded/`` (``../shared`` beside the repository, or ``$TETHER_SHARED_DIR``; a missing folder
is a skip, and a failure under CI; never copied here), whole and in small pieces, with
expectations derived from the rules, not snapshots. The openai SDK's own stream accumulator
(``ResponseStreamState``, fed ``construct_type``d events as its stream does) is the oracle on
the same bytes. Hypothesis checks that arbitrary payload sequences only ever raise
``ProviderError`` and that the delta fast path agrees with the general one. Every successful
parse is also checked with the agent loop's own boundary checks.
"""

from __future__ import annotations

import dataclasses
import json
import re
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import responses_bodies as rb
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
    ToolResultMessage,
    ToolSpec,
    UserMessage,
)
from tether.providers.errors import ProviderError
from tether.providers.responses_request import (
    build_responses_request,
    reasoning_item,
    reasoning_signature,
)
from tether.providers.responses_wire import (
    ResponsesStreamParser,
    parse_response_body,
    transcript_call_ids,
)
from wire_support import REQUEST_ID, Event, Outcome, decode, loop_accepts, parse_outcome


def feed_events(
    events: Iterable[Event],
    *,
    reserved: frozenset[str] = frozenset(),
    seen: list[ModelChunk] | None = None,
) -> Outcome:
    """What the HTTP glue does: ``json.loads`` each event's data, feed it with its event type,
    stop after a terminal event, finish with ``done`` once one was fed."""
    parser = ResponsesStreamParser(REQUEST_ID, reserved_call_ids=reserved)
    chunks: list[ModelChunk] = [] if seen is None else seen
    for kind, data in events:
        chunks.extend(parser.feed(json.loads(data), event=kind))
        if parser.stopped:
            break
    tail, response = parser.finish(done=parser.stopped)
    chunks.extend(tail)
    loop_accepts(chunks, response)
    return Outcome(chunks, response)


def run(
    body: str | bytes, *, reserved: frozenset[str] = frozenset(), chunk_size: int | None = None
) -> Outcome:
    return feed_events(decode(body, chunk_size), reserved=reserved)


def run_events(*events: rb.Event, reserved: frozenset[str] = frozenset()) -> Outcome:
    return run(rb.body(*events), reserved=reserved)


def fails(*events: rb.Event, code: str, match: str = "") -> ProviderError:
    seen: list[ModelChunk] = []
    with pytest.raises(ProviderError) as caught:
        feed_events(decode(rb.body(*events)), seen=seen)
    assert caught.value.code == code, caught.value.message
    assert re.search(match, caught.value.message), caught.value.message
    return caught.value


def tool(call_id: str, name: str, arguments: dict[str, Any] | None = None) -> ToolCall:
    return ToolCall(id=call_id, name=name, arguments=JsonObject(arguments or {}))


START: Final = (rb.created(), rb.in_progress())

# --- the stream -----------------------------------------------------------------------------------


@pytest.mark.parametrize("chunk_size", [None, 1, 7])
def test_a_text_answer(chunk_size: int | None) -> None:
    outcome = run(rb.text_body("The sum ", "is 42."), chunk_size=chunk_size)
    response = outcome.response
    assert outcome.text == "The sum is 42."
    assert [chunk.type for chunk in outcome.chunks] == ["textDelta", "textDelta"]
    assert response.stop_reason == "stop"
    assert response.id == rb.RESPONSE_ID
    assert response.model == rb.MODEL
    assert response.message.id == f"message-{rb.RESPONSE_ID}"
    assert response.usage == ModelUsage(input_tokens=20, output_tokens=10)


def test_reasoning_summary_streams_as_thinking_and_keeps_the_encrypted_content() -> None:
    outcome = run(rb.tool_body())
    (thinking,) = outcome.thinking
    assert thinking.text == "Add them."
    assert not thinking.redacted
    assert thinking.signature == reasoning_signature("rs_1", rb.ENCRYPTED)
    assert json.loads(thinking.signature or "") == {
        "type": "reasoning",
        "id": "rs_1",
        "encrypted_content": rb.ENCRYPTED,
    }
    (call,) = outcome.calls
    assert (call.id, call.name, dict(call.arguments.items())) == (
        "call_1",
        "add",
        {"left": 20, "right": 22},
    )
    assert outcome.response.stop_reason == "toolCall"
    assert outcome.response.usage == ModelUsage(input_tokens=30, output_tokens=40)
    kinds = [chunk.type for chunk in outcome.chunks]
    assert kinds == [
        "thinkingDelta",
        "thinkingDelta",
        "toolCallDelta",
        "toolCallDelta",
        "toolCallDelta",
        "toolCall",
    ]
    first = outcome.deltas[0]
    assert (first.index, first.id, first.name, first.arguments_delta) == (0, "call_1", "add", "")


def test_two_summary_parts_are_one_block_with_a_blank_line_between() -> None:
    outcome = run_events(
        *START,
        *rb.reasoning(0, ("First",), ("Second", " part")),
        *rb.message(1, "ok"),
        rb.completed(),
    )
    (thinking,) = outcome.thinking
    assert thinking.text == "First\n\nSecond part"
    deltas = [chunk.delta for chunk in outcome.chunks if chunk.type == "thinkingDelta"]
    assert deltas == ["First", "\n\nSecond", " part"]


def test_reasoning_without_a_summary_is_a_redacted_block_with_its_signature() -> None:
    outcome = run_events(*START, *rb.reasoning(0), *rb.message(1, "hi"), rb.completed())
    (thinking,) = outcome.thinking
    assert (thinking.text, thinking.redacted) == ("", True)
    assert thinking.signature == reasoning_signature("rs_1", rb.ENCRYPTED)


def test_reasoning_without_encrypted_content_or_text_is_left_out() -> None:
    outcome = run_events(
        *START, *rb.reasoning(0, encrypted=None), *rb.message(1, "hi"), rb.completed()
    )
    assert outcome.thinking == []
    summarized = run_events(
        *START, *rb.reasoning(0, ("why",), encrypted=None), *rb.message(1, "hi"), rb.completed()
    )
    assert [(block.text, block.signature) for block in summarized.thinking] == [("why", None)]


def test_the_encrypted_content_is_taken_from_output_item_done_only() -> None:
    events = rb.reasoning(0)
    assert events[0]["item"]["encrypted_content"] != rb.ENCRYPTED  # the cut copy
    outcome = run_events(*START, *events, rb.completed())
    assert outcome.thinking[0].signature == reasoning_signature("rs_1", rb.ENCRYPTED)


def test_parallel_calls_each_get_their_own_position() -> None:
    outcome = run_events(
        *START,
        *rb.call(0, "add", '{"left":', "1}", call_id="call_a", item_id="fc_a"),
        *rb.call(1, "add", '{"left":', "2}", call_id="call_b", item_id="fc_b"),
        rb.completed(),
    )
    assert [(call.id, dict(call.arguments.items())) for call in outcome.calls] == [
        ("call_a", {"left": 1}),
        ("call_b", {"left": 2}),
    ]
    assert [delta.index for delta in outcome.deltas] == [0, 0, 0, 1, 1, 1]


def test_arguments_only_in_the_done_event_are_the_authority() -> None:
    """LM Studio sends ``.done`` without deltas and ``{}`` in ``output_item.done``."""
    events = rb.call(0, "add", final='{"left": 5}')
    events[-1]["item"]["arguments"] = "{}"
    outcome = run_events(*START, *events, rb.completed())
    assert dict(outcome.calls[0].arguments.items()) == {"left": 5}


def test_arguments_only_in_output_item_done() -> None:
    events = rb.call(0, "add", final='{"left": 6}')
    del events[1]  # no function_call_arguments.done
    outcome = run_events(*START, *events, rb.completed())
    assert dict(outcome.calls[0].arguments.items()) == {"left": 6}


def test_empty_argument_deltas_are_ignored_and_empty_arguments_are_an_empty_object() -> None:
    outcome = run_events(*START, *rb.call(0, "ls", "", ""), rb.completed())
    (call,) = outcome.calls
    assert call.arguments == {}
    assert call.raw_arguments is None


@pytest.mark.parametrize("text", ['{"left": 1', "[1, 2]", "nope"])
def test_arguments_that_are_not_an_object_make_an_invalid_call_never_repaired(text: str) -> None:
    outcome = run_events(*START, *rb.call(0, "add", text), rb.completed())
    (call,) = outcome.calls
    assert call.arguments == {}
    assert call.raw_arguments == text
    assert outcome.response.stop_reason == "toolCall"


def test_text_only_in_the_done_events_is_streamed_then() -> None:
    events = [event for event in rb.message(0, "Hello", " world") if "delta" not in event]
    outcome = run_events(*START, *events, rb.completed())
    assert outcome.text == "Hello world"
    assert [chunk.delta for chunk in outcome.chunks if chunk.type == "textDelta"] == ["Hello world"]


def test_a_done_text_longer_than_its_deltas_streams_the_rest() -> None:
    events = rb.message(0, "Hello")
    events[3]["text"] = "Hello there"  # output_text.done
    events[4]["part"]["text"] = "Hello there"
    events[5]["item"]["content"][0]["text"] = "Hello there"
    outcome = run_events(*START, *events, rb.completed())
    assert outcome.text == "Hello there"


def test_a_done_text_that_contradicts_its_deltas_is_a_protocol_error() -> None:
    events = rb.message(0, "Hello")
    events[3]["text"] = "Goodbye"
    fails(*START, *events, rb.completed(), code="PROVIDER_PROTOCOL_ERROR", match="does not match")


def test_a_refusal_is_streamed_as_text_and_stops_as_a_refusal() -> None:
    where = {"item_id": "msg_1", "output_index": 0, "content_index": 0}
    done = rb.message_done(0, "")
    done["item"]["content"] = [{"type": "refusal", "refusal": "I can't help with that."}]
    outcome = run_events(
        *START,
        rb.message_added(0),
        {"type": "response.refusal.delta", **where, "delta": "I can't "},
        {"type": "response.refusal.delta", **where, "delta": "help with that."},
        {"type": "response.refusal.done", **where, "refusal": "I can't help with that."},
        done,
        rb.completed(),
    )
    assert outcome.text == "I can't help with that."
    assert outcome.response.stop_reason == "refusal"


@pytest.mark.parametrize(
    ("reason", "stop"),
    [("max_output_tokens", "length"), ("content_filter", "refusal"), (None, "length")],
)
def test_incomplete_responses(reason: str | None, stop: str) -> None:
    outcome = run_events(*START, *rb.message(0, "cut"), rb.incomplete(reason))
    assert outcome.response.stop_reason == stop
    assert outcome.text == "cut"
    assert outcome.response.usage == ModelUsage(input_tokens=20, output_tokens=10)


def test_reasoning_that_used_the_whole_budget_is_length_with_no_text() -> None:
    outcome = run_events(*START, *rb.reasoning(0), rb.incomplete("max_output_tokens"))
    assert outcome.response.stop_reason == "length"
    assert outcome.text == ""


def test_a_call_cut_by_incomplete_is_left_out() -> None:
    events = rb.call(0, "write", '{"path": "a.py", "content": "x')[:2]  # added, one delta
    outcome = run_events(*START, *events, rb.incomplete("max_output_tokens"))
    assert outcome.calls == []
    assert outcome.response.stop_reason == "length"


def test_a_completed_event_whose_status_is_incomplete_is_incomplete() -> None:
    """Compatible servers (omlx, Rapid-MLX) send ``completed`` on truncation."""
    terminal = rb.completed(incomplete_details={"reason": "max_output_tokens"})
    terminal["response"]["status"] = "incomplete"
    outcome = run_events(*START, *rb.message(0, "cut"), terminal)
    assert outcome.response.stop_reason == "length"


def test_usage_splits_cached_input_and_keeps_reasoning_inside_output() -> None:
    parser = ResponsesStreamParser(REQUEST_ID)
    for _, data in decode(
        rb.body(
            *START,
            *rb.message(0, "x"),
            rb.completed(rb.usage(9463, 582, cached=8320, reasoning=512)),
        )
    ):
        parser.feed(json.loads(data))
    _, response = parser.finish(done=True)
    assert response.usage == ModelUsage(
        input_tokens=1143, output_tokens=582, cache_read_tokens=8320
    )
    assert parser.reasoning_tokens == 512


def test_cache_write_tokens_are_counted_apart() -> None:
    use = rb.usage(100, 5, cached=10)
    use["input_tokens_details"]["cache_write_tokens"] = 30
    outcome = run_events(*START, *rb.message(0, "x"), rb.completed(use))
    assert outcome.response.usage == ModelUsage(
        input_tokens=60, output_tokens=5, cache_read_tokens=10, cache_write_tokens=30
    )


@pytest.mark.parametrize(
    ("use", "match"),
    [
        ({"input_tokens": 5, "input_tokens_details": {"cached_tokens": 6}}, "cached input"),
        ({"output_tokens": 1, "output_tokens_details": {"reasoning_tokens": 2}}, "reasoning"),
        ({"input_tokens": -1}, "non-negative"),
        ({"input_tokens": "5"}, "non-negative"),
        ({"input_tokens_details": []}, "an object"),
        ([], "an object"),
    ],
)
def test_malformed_usage(use: Any, match: str) -> None:
    terminal = rb.completed()
    terminal["response"]["usage"] = use
    fails(*START, *rb.message(0, "x"), terminal, code="PROVIDER_PROTOCOL_ERROR", match=match)


def test_an_error_event_then_response_failed_is_one_coded_error() -> None:
    error = fails(
        *START,
        {
            "type": "error",
            "error": {"type": "insufficient_quota", "code": "insufficient_quota", "message": "Pay"},
        },
        {"type": "response.failed", "response": rb.response("failed")},
        code="PROVIDER_ERROR_EVENT",
        match="Pay",
    )
    assert error.provider_code == "insufficient_quota"


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("server_is_overloaded", "PROVIDER_OVERLOADED"),
        ("rate_limit_exceeded", "PROVIDER_RATE_LIMITED"),
        ("context_length_exceeded", "PROVIDER_CONTEXT_OVERFLOW"),
        ("server_error", "PROVIDER_ERROR_EVENT"),
    ],
)
def test_the_flat_error_event_shape_and_its_codes(code: str, expected: str) -> None:
    error = fails(
        *START,
        {"type": "error", "code": code, "message": "m", "param": None},
        code=expected,
        match="m",
    )
    assert error.provider_code == code


def test_response_failed_carries_its_error() -> None:
    failed = rb.response("failed", error={"code": "server_error", "message": "Oops"})
    error = fails(
        *START,
        *rb.message(0, "x"),
        {"type": "response.failed", "response": failed},
        code="PROVIDER_ERROR_EVENT",
        match="failed the response: Oops",
    )
    assert error.provider_code == "server_error"


def test_an_event_error_line_is_an_error_even_without_its_type() -> None:
    parser = ResponsesStreamParser(REQUEST_ID)
    with pytest.raises(ProviderError) as caught:
        parser.feed({"message": "boom"}, event="error")
    assert caught.value.code == "PROVIDER_ERROR_EVENT"


@pytest.mark.parametrize("hot", ["text", "arguments"])
def test_a_hot_path_delta_under_an_event_error_line_is_an_error(hot: str) -> None:
    """``event: error`` makes a payload an error event whatever its ``type``, on the delta
    fast path too (hypothesis found the fast path streaming such a delta)."""
    parser = ResponsesStreamParser(REQUEST_ID)
    parser.feed(rb.created())
    parser.feed(rb.message_added(0))
    parser.feed(rb.call(1, "f")[0])
    payload = rb.text_delta(0, "hi") if hot == "text" else rb.call(1, "f", "{}")[1]
    with pytest.raises(ProviderError) as caught:
        parser.feed(payload, event="error")
    assert caught.value.code == "PROVIDER_ERROR_EVENT"


def test_vendor_error_text_is_bounded() -> None:
    error = fails(
        *START,
        {"type": "error", "error": {"code": "c" * 5000, "message": "m" * 50_000}},
        code="PROVIDER_ERROR_EVENT",
    )
    assert len(error.message) <= 2000
    assert error.provider_code is not None
    assert len(error.provider_code) <= 200


def test_eof_before_a_terminal_event_is_interrupted() -> None:
    fails(*START, *rb.message(0, "x"), code="PROVIDER_STREAM_INTERRUPTED")


def test_done_without_a_terminal_event_is_still_interrupted() -> None:
    parser = ResponsesStreamParser(REQUEST_ID)
    parser.feed(rb.created())
    with pytest.raises(ProviderError) as caught:
        parser.finish(done=True)
    assert caught.value.code == "PROVIDER_STREAM_INTERRUPTED"


def test_events_after_the_terminal_event_are_a_protocol_error() -> None:
    parser = ResponsesStreamParser(REQUEST_ID)
    for event in (*START, *rb.message(0, "x"), rb.completed()):
        parser.feed(event)
    assert parser.stopped
    with pytest.raises(ProviderError) as caught:
        parser.feed(rb.completed())
    assert caught.value.code == "PROVIDER_PROTOCOL_ERROR"
    assert "after the response ended" in caught.value.message


def test_unknown_events_items_and_fields_are_tolerated() -> None:
    outcome = run_events(
        *START,
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {"type": "web_search_call", "id": "ws_1"},
        },
        {"type": "response.web_search_call.searching", "output_index": 0, "item_id": "ws_1"},
        {
            "type": "response.output_item.done",
            "output_index": 0,
            "item": {"type": "web_search_call", "id": "ws_1"},
        },
        {"type": "response.future_event", "anything": [1, 2]},
        {"type": "keepalive"},
        *rb.message(1, "answer"),
        rb.completed(),
    )
    assert outcome.text == "answer"
    assert outcome.response.stop_reason == "stop"


def test_the_terminal_output_completes_items_still_open() -> None:
    """``response.completed.response.output`` is the full authority (pydantic-ai #5419)."""
    added = rb.message_added(0)
    final = rb.message_done(0, "from the output")["item"]
    call = rb.call(1, "add", final='{"left": 1}')[-1]["item"]
    outcome = run_events(*START, added, rb.completed(output=[final, call]))
    assert outcome.text == "from the output"
    assert [call.id for call in outcome.calls] == ["call_1"]
    assert outcome.response.stop_reason == "toolCall"


def test_reserved_duplicate_and_empty_call_ids_are_replaced() -> None:
    outcome = run_events(
        *START,
        *rb.call(0, "a", "{}", call_id="call_0", item_id="fc_0"),
        *rb.call(1, "b", "{}", call_id="call_0", item_id="fc_1"),
        *rb.call(2, "c", "{}", call_id="", item_id="fc_2"),
        rb.completed(),
        reserved=frozenset({"call_0"}),
    )
    ids = [call.id for call in outcome.calls]
    assert ids == [
        f"{rb.RESPONSE_ID}-call-0",
        f"{rb.RESPONSE_ID}-call-1",
        f"{rb.RESPONSE_ID}-call-2",
    ]


def test_the_response_id_falls_back() -> None:
    terminal = rb.completed()
    del terminal["response"]["id"]
    parser = ResponsesStreamParser(REQUEST_ID)
    for event in (*rb.message(0, "x"), terminal):
        parser.feed(event)
    _, response = parser.finish(done=True)
    assert response.id == f"response-{REQUEST_ID}"
    assert response.model == rb.MODEL


def test_interleaved_text_of_two_items_is_a_protocol_error() -> None:
    fails(
        *START,
        rb.message_added(0, "msg_a"),
        rb.message_added(1, "msg_b"),
        rb.text_delta(1, "later", "msg_b"),
        rb.text_delta(0, "earlier", "msg_a"),
        code="PROVIDER_PROTOCOL_ERROR",
        match="after a later output",
    )


def test_events_are_found_by_item_id_without_an_output_index() -> None:
    delta = rb.text_delta(0, "hi")
    del delta["output_index"]
    outcome = run_events(
        *START, rb.message_added(0), delta, rb.message_done(0, "hi"), rb.completed()
    )
    assert outcome.text == "hi"


MALFORMED: Final[list[tuple[list[rb.Event], str]]] = [
    ([rb.text_delta(3, "x")], "never added"),
    ([rb.message_added(0), rb.message_added(0)], "already added"),
    ([*rb.message(0, "x"), rb.text_delta(0, "y")], "already done"),
    ([rb.message_added(0), rb.call(0, "f", "{}")[1]], "does not fit"),
    ([rb.message_added(0), {**rb.text_delta(0, "x"), "delta": 5}], "delta must be a string"),
    ([rb.message_added(0), {**rb.text_delta(0, "x"), "content_index": "0"}], "content_index"),
    ([rb.message_added(0), {**rb.text_delta(0, "x"), "output_index": "0"}], "output_index"),
    (
        [
            {
                "type": "response.output_item.added",
                "output_index": -1,
                "item": {"type": "message"},
            }
        ],
        "output_index",
    ),
    (
        [{"type": "response.output_item.added", "output_index": 0, "item": []}],
        "item must be an object",
    ),
    (
        [{"type": "response.output_item.added", "output_index": 0, "item": {"type": 1}}],
        "type must be a string",
    ),
    ([*rb.call(0, "f", "{}")[:3], {**rb.call(0, "g", "{}")[-1]}], "changed its name"),
    (
        [
            rb.message_added(0),
            {**rb.message_done(0, "x"), "item": {"type": "reasoning", "id": "msg_1"}},
        ],
        "changed its type",
    ),
    (
        [
            {
                "type": "response.output_item.done",
                "output_index": 0,
                "item": {"type": "function_call", "call_id": "c"},
            }
        ],
        "name must be a non-empty string",
    ),
    ([{"type": "response.completed"}], "response must be an object"),
    ([{"type": "response.created", "response": {"id": 5}}], "id must be a string"),
    ([{"type": 5}], "type must be a string"),
]


@pytest.mark.parametrize(("events", "match"), MALFORMED)
def test_malformed_events(events: list[rb.Event], match: str) -> None:
    fails(*START, *events, rb.completed(), code="PROVIDER_PROTOCOL_ERROR", match=match)


@pytest.mark.parametrize("payload", [[], "x", 5, None])
def test_a_payload_that_is_not_an_object(payload: object) -> None:
    parser = ResponsesStreamParser(REQUEST_ID)
    with pytest.raises(ProviderError) as caught:
        parser.feed(payload)
    assert caught.value.code == "PROVIDER_PROTOCOL_ERROR"


def test_errors_are_sticky_and_misuse_is_a_runtime_error() -> None:
    parser = ResponsesStreamParser(REQUEST_ID)
    with pytest.raises(ProviderError):
        parser.feed([])
    with pytest.raises(ProviderError) as again:
        parser.feed(rb.created())
    assert again.value.code == "PROVIDER_PROTOCOL_ERROR"
    with pytest.raises(ProviderError):
        parser.finish(done=True)
    done = ResponsesStreamParser(REQUEST_ID)
    done.feed(rb.completed())
    done.finish(done=True)
    with pytest.raises(RuntimeError):
        done.finish(done=True)
    with pytest.raises(RuntimeError):
        done.feed(rb.created())


def test_constructor_arguments_are_checked() -> None:
    with pytest.raises(TypeError):
        ResponsesStreamParser("")
    with pytest.raises(TypeError):
        ResponsesStreamParser(REQUEST_ID, reserved_call_ids=[1])  # type: ignore[list-item]
    parser = ResponsesStreamParser(REQUEST_ID)
    parser.feed(rb.completed())
    with pytest.raises(TypeError):
        parser.finish(done="yes")  # type: ignore[arg-type]


# --- a whole JSON body ----------------------------------------------------------------------------


def test_a_whole_response_body() -> None:
    reasoning_done = rb.reasoning(0, ("Think.",))[-1]["item"]
    message = rb.message_done(1, "Hi there")["item"]
    call = rb.call(2, "add", final='{"left": 1}')[-1]["item"]
    body = rb.response("completed", output=[reasoning_done, message, call], usage=rb.usage())
    chunks, response = parse_response_body(body, REQUEST_ID)
    assert [chunk.type for chunk in chunks] == ["thinkingDelta", "textDelta", "toolCall"]
    loop_accepts(chunks, response)
    assert response.stop_reason == "toolCall"
    assert [block.type for block in response.message.content] == ["thinking", "text", "toolCall"]


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"error": {"message": "no", "code": "bad"}}, "PROVIDER_ERROR_EVENT"),
        (
            rb.response("failed", error={"code": "server_error", "message": "x"}),
            "PROVIDER_ERROR_EVENT",
        ),
        ([], "PROVIDER_PROTOCOL_ERROR"),
        ({"status": "completed", "output": {}}, "PROVIDER_PROTOCOL_ERROR"),
    ],
)
def test_a_whole_body_that_fails(body: object, code: str) -> None:
    with pytest.raises(ProviderError) as caught:
        parse_response_body(body, REQUEST_ID)
    assert caught.value.code == code


def test_an_incomplete_whole_body_is_length() -> None:
    body = rb.response(
        "incomplete",
        output=[rb.message_done(0, "cut")["item"]],
        incomplete_details={"reason": "max_output_tokens"},
    )
    _, response = parse_response_body(body, REQUEST_ID)
    assert response.stop_reason == "length"


# --- recorded vendor streams ----------------------------------------------------------------------


def _recorded() -> list[Path]:
    return recorded_streams("openai-responses")


@dataclass
class Expected:
    """What §2 says a recorded stream means, computed from the decoded payloads by the rules
    alone (an independent reading, not the parser's code): the terminal
    ``response.output`` is the authority on every item, except that a reasoning item's
    encrypted content is the one its ``output_item.done`` carried (§0.3; the terminal copy of
    the same item can be encrypted anew, as in ``openai-responses-cached-tokens``)."""

    error: str | None = None
    provider_code: str | None = None
    blocks: list[tuple[str, object]] = dataclasses.field(default_factory=list[Any])
    usage: ModelUsage | None = None
    stop: str | None = None
    response_id: str = ""
    model: str | None = None


def expected_by_the_rules(events: list[Event]) -> Expected:
    response_id, model = "", None
    encrypted: dict[str, str] = {}
    for _, data in events:
        payload: dict[str, Any] = json.loads(data)
        kind = payload["type"]
        if kind == "response.output_item.done" and payload["item"]["type"] == "reasoning":
            encrypted[payload["item"]["id"]] = payload["item"].get("encrypted_content")
        if kind == "error":
            error = payload.get("error") or payload
            return Expected(error="PROVIDER_ERROR_EVENT", provider_code=error.get("code"))
        if kind in ("response.created", "response.in_progress"):
            response_id = response_id or payload["response"]["id"]
            model = model or payload["response"]["model"]
        if kind in ("response.completed", "response.incomplete"):
            final = payload["response"]
            blocks: list[tuple[str, object]] = []
            for item in final["output"]:
                if item["type"] == "message":
                    text = "".join(
                        part.get("text") or part.get("refusal") or "" for part in item["content"]
                    )
                    if text:
                        blocks.append(("text", text))
                elif item["type"] == "reasoning":
                    summary: list[dict[str, Any]] = item.get("summary") or []
                    text = "\n\n".join(part["text"] for part in summary)
                    blob = encrypted.get(item["id"], item.get("encrypted_content"))
                    if text or blob:
                        signature = (item["id"], blob) if blob else None
                        blocks.append(("thinking", (text, signature)))
                elif item["type"] == "function_call":
                    arguments = json.loads(item["arguments"] or "{}")
                    blocks.append(("tool", (item["call_id"], item["name"], arguments)))
            usage = final["usage"]
            cached = usage["input_tokens_details"]["cached_tokens"]
            has_calls = any(kind == "tool" for kind, _ in blocks)
            if kind == "response.incomplete":
                details: dict[str, Any] = final.get("incomplete_details") or {}
                reason = details.get("reason")
                stop = "refusal" if reason == "content_filter" else "length"
            else:
                stop = "toolCall" if has_calls else "stop"
            return Expected(
                None,
                None,
                blocks,
                ModelUsage(
                    input_tokens=usage["input_tokens"] - cached,
                    output_tokens=usage["output_tokens"],
                    cache_read_tokens=cached,
                ),
                stop,
                final["id"],
                model or final["model"],
            )
    return Expected(error="PROVIDER_STREAM_INTERRUPTED")


def described(content: Iterable[Any]) -> list[tuple[str, object]]:
    out: list[tuple[str, object]] = []
    for block in content:
        if isinstance(block, TextBlock):
            out.append(("text", block.text))
        elif isinstance(block, ThinkingBlock):
            replay = reasoning_item(block)
            signature = None if replay is None else (replay["id"], replay["encrypted_content"])
            out.append(("thinking", (block.text, signature)))
        elif isinstance(block, ToolCall):
            arguments = json.loads(json.dumps(dict(block.arguments.items())))
            out.append(("tool", (block.id, block.name, arguments)))
    return out


@pytest.mark.parametrize(
    "path", _recorded() or [None], ids=lambda path: getattr(path, "stem", "none")
)
@pytest.mark.parametrize("chunk_size", [None, 1, 13])
def test_recorded_vendor_streams(path: Path | None, chunk_size: int | None) -> None:
    if path is None:
        missing_recordings()
    recording = json.loads(path.read_text(encoding="utf-8"))
    assert recording["status"] == 200
    assert recording["content_type"].startswith("text/event-stream")
    events = decode(recording["body"], chunk_size)
    expected = expected_by_the_rules(events)
    if expected.error is not None:
        with pytest.raises(ProviderError) as caught:
            feed_events(events)
        assert caught.value.code == expected.error
        assert caught.value.provider_code == expected.provider_code
        return
    outcome = feed_events(events)
    response = outcome.response
    assert described(outcome.content) == expected.blocks
    assert response.usage == expected.usage
    assert response.stop_reason == expected.stop
    assert response.id == expected.response_id
    assert response.model == expected.model


def test_the_recordings_cover_the_cases_the_spec_names() -> None:
    names = {path.stem for path in _recorded()}
    if not names:
        missing_recordings()
    assert {
        "openai-responses-text",
        "openai-responses-tool-call",
        "openai-responses-parallel-tool-calls",
        "openai-responses-reasoning-summary",
        "openai-responses-reasoning-tool-call",
        "openai-responses-cached-tokens",
        "openai-responses-error-failed",
    } <= names


# --- the official SDK as an oracle ----------------------------------------------------------------


def _faithful() -> dict[str, str]:
    found = {
        "text": rb.text_body("The sum ", "is 42.").decode(),
        "tool": rb.tool_body().decode(),
    }
    for path in _recorded():
        recording = json.loads(path.read_text(encoding="utf-8"))
        if "response.completed" in recording["body"]:
            found[path.stem] = recording["body"]
    return found


FAITHFUL: Final = _faithful()


def sdk_accumulate(body: str) -> Any:
    """What the openai SDK's stream does with the same bytes: each event ``construct_type``d
    as a ``ResponseStreamEvent`` and handed to ``ResponseStreamState`` (the accumulator behind
    ``client.responses.stream``); its completed response."""
    models: Any = pytest.importorskip("openai._models")
    types_: Any = pytest.importorskip("openai.types.responses")
    streaming: Any = pytest.importorskip("openai.lib.streaming.responses._responses")
    openai: Any = pytest.importorskip("openai")
    state = streaming.ResponseStreamState(input_tools=openai.omit, text_format=openai.omit)
    with warnings.catch_warnings():
        # pydantic warns while the SDK copies a web_search_call item (its serializer does not
        # know that action's shape): the SDK's noise, not a difference in the result.
        warnings.simplefilter("ignore", UserWarning)
        for _, data in decode(body):
            state.handle_event(
                models.construct_type(type_=types_.ResponseStreamEvent, value=json.loads(data))
            )
    return state._completed_response


def sdk_described(response: Any) -> list[tuple[str, object]]:
    out: list[tuple[str, object]] = []
    for item in response.output:
        if item.type == "message":
            text = "".join(
                getattr(part, "text", None) or getattr(part, "refusal", None) or ""
                for part in item.content
            )
            if text:
                out.append(("text", text))
        elif item.type == "reasoning":
            text = "\n\n".join(part.text for part in item.summary)
            if text or item.encrypted_content:
                out.append(("thinking", (text, item.id if item.encrypted_content else None)))
        elif item.type == "function_call":
            out.append(("tool", (item.call_id, item.name, json.loads(item.arguments or "{}"))))
    return out


@pytest.mark.parametrize("name", sorted(FAITHFUL))
@pytest.mark.parametrize("chunk_size", [None, 5])
def test_same_result_as_the_official_sdk(name: str, chunk_size: int | None) -> None:
    """The SDK's completed response takes every item from ``response.completed``; a
    reasoning item's encrypted content there may be a fresh encryption of the one
    ``output_item.done`` carried (tether keeps that one, §0.3), so only its presence is
    compared here; ``test_recorded_vendor_streams`` checks the blob itself."""
    body = FAITHFUL[name]
    sdk = sdk_accumulate(body)
    outcome = run(body, chunk_size=chunk_size)
    ours: list[tuple[str, object]] = []
    for kind, value in described(outcome.content):
        if kind == "thinking":
            pair: Any = value
            text, signature = pair
            value = (text, None if signature is None else signature[0])
        ours.append((kind, value))
    assert ours == sdk_described(sdk)
    usage = sdk.usage
    cached = usage.input_tokens_details.cached_tokens or 0
    assert outcome.response.usage == ModelUsage(
        input_tokens=usage.input_tokens - cached,
        output_tokens=usage.output_tokens,
        cache_read_tokens=cached,
    )
    has_calls = bool(outcome.calls)
    assert outcome.response.stop_reason == ("toolCall" if has_calls else "stop")
    assert outcome.response.id == sdk.id
    assert outcome.response.model == sdk.model


# --- request building -----------------------------------------------------------------------------

SCHEMA: Final = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}


@given(item_id=st.text(), encrypted=st.text() | st.text(st.characters(exclude_categories=())))
def test_a_reasoning_signature_is_json_dumps_of_its_item(item_id: str, encrypted: str) -> None:
    # reasoning_signature writes the JSON text itself; json.dumps is the plain path
    item = {"type": "reasoning", "id": item_id, "encrypted_content": encrypted}
    expected = json.dumps(item, separators=(",", ":"), ensure_ascii=False)
    assert reasoning_signature(item_id, encrypted) == expected


SIGNED: Final = reasoning_signature("rs_9", "gAAAA-blob")


def sample_request(**changes: Any) -> ModelRequest:
    call_a = tool("call_a", "read", {"path": "a.py"})
    call_b = tool("call_b", "ls")
    broken = ToolCall(id="call_c", name="read", arguments=JsonObject(), raw_arguments='{"path":')
    fields: dict[str, Any] = {
        "id": REQUEST_ID,
        "system": "Be brief.",
        "messages": (
            UserMessage(content="Read a.py and list."),
            AssistantMessage(
                content=(
                    ThinkingBlock(text="I should read.", signature=SIGNED),
                    ThinkingBlock(text="", signature="anthropic-signature", redacted=True),
                    ThinkingBlock(text="unsigned reasoning"),
                    TextBlock(text="Reading "),
                    TextBlock(text="now."),
                    call_a,
                    call_b,
                    broken,
                )
            ),
            ToolResultMessage(tool_call_id="call_a", tool_name="read", content="print(1)"),
            ToolResultMessage(tool_call_id="call_b", tool_name="ls", content="boom", is_error=True),
            ToolResultMessage(tool_call_id="call_c", tool_name="read", content="bad args"),
            UserMessage(content="And then?"),
        ),
        "tools": (ToolSpec(name="read", description="Read a file", parameters=JsonObject(SCHEMA)),),
    }
    fields.update(changes)
    return ModelRequest(**fields)


def build(request: ModelRequest | None = None, **options: Any) -> dict[str, object]:
    arguments: dict[str, Any] = {
        "model": "gpt-5",
        "max_output_tokens": None,
        "temperature": None,
        "reasoning_effort": None,
    }
    arguments.update(options)
    return build_responses_request(request or sample_request(), **arguments)


def test_the_request_body() -> None:
    assert build() == {
        "model": "gpt-5",
        "instructions": "Be brief.",
        "input": [
            {"role": "user", "content": "Read a.py and list."},
            {"type": "reasoning", "id": "rs_9", "encrypted_content": "gAAAA-blob", "summary": []},
            {"role": "assistant", "content": "Reading now."},
            {
                "type": "function_call",
                "call_id": "call_a",
                "name": "read",
                "arguments": '{"path":"a.py"}',
            },
            {"type": "function_call", "call_id": "call_b", "name": "ls", "arguments": "{}"},
            {"type": "function_call", "call_id": "call_c", "name": "read", "arguments": '{"path":'},
            {"type": "function_call_output", "call_id": "call_a", "output": "print(1)"},
            {"type": "function_call_output", "call_id": "call_b", "output": "boom"},
            {"type": "function_call_output", "call_id": "call_c", "output": "bad args"},
            {"role": "user", "content": "And then?"},
        ],
        "tools": [
            {
                "type": "function",
                "name": "read",
                "description": "Read a file",
                "parameters": SCHEMA,
                "strict": False,
            }
        ],
        "store": False,
        "include": ["reasoning.encrypted_content"],
        "stream": True,
    }


def test_options_are_sent_only_when_given() -> None:
    request = ModelRequest(id=REQUEST_ID, messages=(UserMessage(content="hi"),))
    body = build(request)
    assert body == {
        "model": "gpt-5",
        "input": [{"role": "user", "content": "hi"}],
        "store": False,
        "include": ["reasoning.encrypted_content"],
        "stream": True,
    }
    full = build(
        request,
        max_output_tokens=4000,
        temperature=0.5,
        reasoning_effort="high",
        reasoning_summary="auto",
    )
    assert full["max_output_tokens"] == 4000
    assert full["temperature"] == 0.5
    assert full["reasoning"] == {"effort": "high", "summary": "auto"}
    assert build(request, reasoning_effort="low")["reasoning"] == {"effort": "low"}


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"max_output_tokens": 0}, ValueError),
        ({"max_output_tokens": True}, ValueError),
        ({"temperature": float("nan")}, ValueError),
        ({"temperature": 3}, ValueError),
        ({"reasoning_effort": ""}, ValueError),
        ({"reasoning_summary": "everything"}, ValueError),
        ({"model": ""}, TypeError),
        ({"stream": 1}, TypeError),
    ],
)
def test_bad_options(options: dict[str, Any], error: type[Exception]) -> None:
    with pytest.raises(error):
        build(**options)


def test_a_request_that_is_not_a_model_request() -> None:
    with pytest.raises(TypeError):
        build_responses_request(
            {},  # type: ignore[arg-type]
            model="m",
            max_output_tokens=None,
            temperature=None,
            reasoning_effort=None,
        )


@pytest.mark.parametrize(
    "signature",
    [
        None,
        "",
        "EqQBCkYIBRgCIkB-anthropic",
        '{"type":"reasoning"',
        '{"type":"reasoning","id":"","encrypted_content":"x"}',
        '{"type":"reasoning","id":"rs_1","encrypted_content":5}',
        '{"type":"reasoning","id":"rs_1"}',
    ],
)
def test_a_thinking_block_without_a_responses_signature_is_not_replayed(
    signature: str | None,
) -> None:
    assert reasoning_item(ThinkingBlock(text="t", signature=signature)) is None


def test_a_parsed_stream_replays_verbatim() -> None:
    """The next turn sends the reasoning item exactly as the stream gave it, before its call."""
    outcome = run(rb.tool_body())
    request = ModelRequest(
        id="request-002",
        messages=(
            UserMessage(content="What is 20 + 22?"),
            outcome.response.message,
            ToolResultMessage(tool_call_id="call_1", tool_name="add", content="42"),
        ),
    )
    items: Any = build(request)["input"]
    assert items[1:] == [
        {"type": "reasoning", "id": "rs_1", "encrypted_content": rb.ENCRYPTED, "summary": []},
        {
            "type": "function_call",
            "call_id": "call_1",
            "name": "add",
            "arguments": '{"left":20,"right":22}',
        },
        {"type": "function_call_output", "call_id": "call_1", "output": "42"},
    ]


def test_transcript_call_ids_is_reexported() -> None:
    assert transcript_call_ids(sample_request()) == frozenset({"call_a", "call_b", "call_c"})


# --- properties -----------------------------------------------------------------------------------

CODES: Final = {
    "PROVIDER_PROTOCOL_ERROR",
    "PROVIDER_ERROR_EVENT",
    "PROVIDER_STREAM_INTERRUPTED",
    "PROVIDER_OVERLOADED",
    "PROVIDER_RATE_LIMITED",
    "PROVIDER_CONTEXT_OVERFLOW",
}
RESERVED: Final = st.frozensets(st.sampled_from(["call_1", f"{rb.RESPONSE_ID}-call-0"]))

json_values: st.SearchStrategy[Any] = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)
INDEXES: Final = st.sampled_from([0, 0, 0, 1, 1, 2, -1, None, "0", True])
EVENT_TYPES: Final = st.sampled_from(
    [
        "response.output_item.added",
        "response.output_item.done",
        "response.output_text.delta",
        "response.output_text.done",
        "response.refusal.delta",
        "response.reasoning_summary_text.delta",
        "response.reasoning_summary_text.done",
        "response.reasoning_text.delta",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.content_part.added",
        "response.completed",
        "response.incomplete",
        "response.failed",
        "response.created",
        "error",
        "response.future",
    ]
)
ITEMS: Final[st.SearchStrategy[Any]] = st.one_of(
    st.sampled_from(
        [
            {"type": "message", "id": "msg_1"},
            {"type": "message", "content": [{"type": "output_text", "text": "ab"}]},
            {"type": "reasoning", "id": "rs_1", "encrypted_content": "e", "summary": []},
            {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "s"}]},
            {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f"},
            {"type": "function_call", "call_id": "call_1", "name": "f", "arguments": '{"a":1}'},
            {"type": "web_search_call", "id": "ws"},
        ]
    ),
    json_values,
)
TEXTS: Final = st.sampled_from(["", "a", "ab", "b", '{"a":', "1}", 5, None])


@st.composite
def responses_events(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(EVENT_TYPES)
    event: dict[str, Any] = {"type": kind}
    if draw(st.booleans()):
        event["output_index"] = draw(INDEXES)
    if draw(st.booleans()):
        event["item_id"] = draw(st.sampled_from(["msg_1", "rs_1", "fc_1", "zz"]))
    for field in ("content_index", "summary_index"):
        if draw(st.booleans()):
            event[field] = draw(INDEXES)
    for field in ("delta", "text", "arguments", "refusal"):
        if draw(st.booleans()):
            event[field] = draw(TEXTS)
    if kind.startswith("response.output_item"):
        event["item"] = draw(ITEMS)
    if kind in ("response.completed", "response.incomplete", "response.failed", "response.created"):
        fields: dict[str, Any] = {"id": "resp_1", "model": "m"}
        if draw(st.booleans()):
            fields["usage"] = draw(st.sampled_from([rb.usage(), None, {"input_tokens": -1}, []]))
        if draw(st.booleans()):
            fields["output"] = draw(st.lists(ITEMS, max_size=3))
        if draw(st.booleans()):
            fields["status"] = draw(st.sampled_from(["completed", "incomplete", "failed", 3]))
        event["response"] = draw(st.sampled_from([fields, None, []]))
    if kind == "error" and draw(st.booleans()):
        event["error"] = draw(st.sampled_from([{"code": "rate_limit_exceeded"}, "x", None, []]))
    return event


def sequences(payloads: Any) -> Any:
    kinds = st.sampled_from(["message"] * 20 + ["error"])
    return st.lists(st.tuples(payloads, kinds), max_size=14)


def check_sequence(items: list[tuple[object, str]], reserved: frozenset[str]) -> None:
    parser = ResponsesStreamParser(REQUEST_ID, reserved_call_ids=reserved)
    wire.check_sequence(parser, items, reserved, CODES)


@settings(max_examples=examples(300))
@given(items=sequences(st.one_of(json_values, responses_events())), reserved=RESERVED)
def test_any_payloads_only_raise_provider_errors(
    items: list[tuple[object, str]], reserved: frozenset[str]
) -> None:
    check_sequence(items, reserved)


@settings(max_examples=examples(500))
@given(items=sequences(responses_events()), reserved=RESERVED)
def test_well_shaped_event_sequences(
    items: list[tuple[object, str]], reserved: frozenset[str]
) -> None:
    check_sequence([(rb.created(), "message"), *items], reserved)


class PlainPathParser(ResponsesStreamParser):
    """The parser with every payload through the general path (``_event``), skipping the
    delta fast path in ``feed``: the reference the fast path must match."""

    __slots__ = ()

    def feed(self, payload: object, event: str = "message") -> list[ModelChunk]:
        if self._failure is not None or self._state == "finished":
            self._raise_closed()
        try:
            if not isinstance(payload, dict):
                return super().feed(payload, event)
            data: dict[str, Any] = payload  # pyright: ignore[reportUnknownVariableType]
            return self._event(data, data.get("type"), event)
        except ProviderError as error:
            self._failure = error
            raise


@settings(max_examples=examples(300))
@given(items=sequences(responses_events()), reserved=RESERVED)
def test_the_delta_fast_path_matches_the_general_path(
    items: list[tuple[object, str]], reserved: frozenset[str]
) -> None:
    start: list[tuple[object, str]] = [
        (rb.created(), "message"),
        (rb.message_added(0), "message"),
        (rb.call(1, "f")[0], "message"),
    ]
    fast = parse_outcome(
        ResponsesStreamParser(REQUEST_ID, reserved_call_ids=reserved), start + items
    )
    plain = parse_outcome(PlainPathParser(REQUEST_ID, reserved_call_ids=reserved), start + items)
    assert fast == plain


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
    outcome = run_events(*START, *rb.call(0, "write", *fragments), rb.completed())
    (call,) = outcome.calls
    assert call.arguments == arguments
    assert "".join(delta.arguments_delta for delta in outcome.deltas) == text


@given(
    parts=st.lists(st.text(min_size=1, max_size=8), min_size=1, max_size=8), size=st.integers(1, 40)
)
def test_any_text_in_any_pieces_is_the_same_answer(parts: list[str], size: int) -> None:
    outcome = run(rb.text_body(*parts), chunk_size=size)
    assert outcome.text == "".join(parts)
