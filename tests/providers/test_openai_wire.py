"""``tether.providers.openai_wire``, ``openai_chat_stream``, ``openai_chat_body`` and
``catalog``: the OpenAI Chat Completions request body, the stream normalization
(``spec/providers.md`` §2.4, §2.9, §9) and the provider presets.

Stream bodies are SSE text: the ones in ``openai_bodies`` are written for these tests from the
documented shapes; the real recorded vendor streams are replayed from the shared folder's
``recorded/`` (``../shared`` beside the repository, or ``$TETHER_SHARED_DIR``; a missing folder
is a skip, and a failure under CI; never copied here), with expectations derived from the
rules, not snapshots. The official openai SDK accumulator is the oracle on OpenAI-faithful
bodies (and shows the doubled Kimi IDs tether avoids). Hypothesis checks that arbitrary
payloads only ever raise ``ProviderError`` and that argument fragments assemble the same call
however they are split. Every successful parse is also checked with the agent loop's own
boundary checks (chunks, response, agreement between them).
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import openai_bodies as bodies
from support import examples, missing_recordings, recorded_streams
from tether._base.exact_types import type_of
from tether.jsonvalue import JsonObject
from tether.loop import RunLimits
from tether.loop.checks import check_agreement, snapshot_chunk, snapshot_response
from tether.protocol import (
    MAX_RAW_ARGUMENTS_CODE_POINTS,
    AssistantMessage,
    ModelChunk,
    ModelRequest,
    ModelResponse,
    ModelUsage,
    TextBlock,
    ThinkingBlock,
    ToolCall,
    ToolCallChunk,
    ToolCallDeltaChunk,
    ToolResultMessage,
    ToolSpec,
    UserMessage,
)
from tether.providers.catalog import PRESETS, ProviderPreset, parse_model_spec
from tether.providers.errors import ProviderError
from tether.providers.openai_chat_body import parse_chat_completion
from tether.providers.openai_chat_stream import OpenAIChatStreamParser, transcript_call_ids
from tether.providers.openai_wire import OpenAIChatCompat, arguments_text, build_chat_request

REQUEST_ID: Final = "request-001"
DEFAULT: Final = OpenAIChatCompat()
LIMITS: Final = RunLimits.for_real_models()


def tool(call_id: str, name: str, arguments: dict[str, Any] | None = None) -> ToolCall:
    """``ToolCall`` with plain-dict arguments (frozen)."""
    return ToolCall(id=call_id, name=name, arguments=JsonObject(arguments or {}))


# --- SSE decoding ---------------------------------------------------------------------------------

Event = tuple[str, str]
"""``(event type, data)`` of one dispatched SSE event."""


def split_sse(body: bytes) -> list[Event]:
    """A test-only SSE splitter (the WHATWG rules the parser relies on), used when the project
    decoder is not available: lines end at CRLF, CR or LF; ``:`` starts a comment; one space
    after the field's colon is stripped; a blank line dispatches non-empty data; an
    unterminated last event is dropped."""
    text = body.decode("utf-8").removeprefix("\ufeff")
    events: list[Event] = []
    data: list[str] = []
    kind = ""
    for line in re.split(r"\r\n|\r|\n", text)[:-1]:  # the last piece never ended
        if not line:
            if data:
                events.append((kind or "message", "\n".join(data)))
            data, kind = [], ""
            continue
        name, colon, value = line.partition(":")
        if colon and not name:
            continue
        value = value.removeprefix(" ")
        if name == "data":
            data.append(value)
        elif name == "event":
            kind = value
    return events


def _project_decoder() -> Callable[[], Any] | None:
    """``tether.providers._sse.SSEDecoder`` when the project has it (preferred)."""
    if importlib.util.find_spec("tether.providers._sse") is None:
        return None
    decoder: Any = getattr(importlib.import_module("tether.providers._sse"), "SSEDecoder", None)
    return decoder


PROJECT_DECODER: Final = _project_decoder()


def decode(body: str | bytes, chunk_size: int | None = None) -> list[Event]:
    """The events of a body, fed to the decoder in ``chunk_size`` pieces (``None``: whole)."""
    raw = body.encode() if isinstance(body, str) else body
    if PROJECT_DECODER is None:
        return split_sse(raw)
    decoder = PROJECT_DECODER()
    size = chunk_size or max(len(raw), 1)
    events: list[Event] = []
    for start in range(0, len(raw), size):
        events.extend(
            (event.event, event.data) for event in decoder.feed(raw[start : start + size])
        )
    events.extend((event.event, event.data) for event in decoder.close())
    return events


def test_the_test_splitter_agrees_with_the_project_decoder() -> None:
    if PROJECT_DECODER is None:
        pytest.skip("tether.providers._sse is not there yet")
    samples = [
        value for name, value in vars(bodies).items() if name.isupper() and isinstance(value, str)
    ]
    samples.append("\ufeffdata: 1\r\n\r\n: c\rdata: 2\rdata: 3\r\revent: x\ndata:4\n\ndata: 5")
    for sample in samples:
        assert split_sse(sample.encode()) == decode(sample, 7) == decode(sample)


# --- running a body -------------------------------------------------------------------------------


@dataclass
class Outcome:
    chunks: list[ModelChunk]
    response: ModelResponse

    @property
    def calls(self) -> list[ToolCall]:
        return [block for block in self.response.message.content if isinstance(block, ToolCall)]

    @property
    def text(self) -> str:
        return "".join(b.text for b in self.response.message.content if isinstance(b, TextBlock))

    @property
    def thinking(self) -> str:
        content = self.response.message.content
        return "".join(b.text for b in content if isinstance(b, ThinkingBlock))

    @property
    def deltas(self) -> list[ToolCallDeltaChunk]:
        return [chunk for chunk in self.chunks if isinstance(chunk, ToolCallDeltaChunk)]


def loop_accepts(chunks: Sequence[ModelChunk], response: ModelResponse) -> None:
    """What the agent loop checks at the model boundary: every chunk is a valid protocol chunk
    of the request, the response is valid (stop reason consistent with content), and the final
    message agrees with the streamed text, thinking and tool-call chunks."""
    for chunk in chunks:
        assert snapshot_chunk(chunk, REQUEST_ID, LIMITS) is chunk
    streamed = {id(chunk.tool_call) for chunk in chunks if chunk.type == "toolCall"}
    assert snapshot_response(response, REQUEST_ID, streamed, LIMITS) is response
    check_agreement([chunk for chunk in chunks if chunk.type != "toolCallDelta"], response.message)


def feed_events(
    events: Iterable[Event],
    *,
    compat: OpenAIChatCompat = DEFAULT,
    reserved: frozenset[str] = frozenset(),
    seen: list[ModelChunk] | None = None,
) -> Outcome:
    parser = OpenAIChatStreamParser(REQUEST_ID, compat=compat, reserved_call_ids=reserved)
    chunks: list[ModelChunk] = [] if seen is None else seen
    done = False
    for event, data in events:
        if data.startswith("[DONE]"):
            done = True
            break
        chunks.extend(parser.feed(json.loads(data), event=event))
    tail, response = parser.finish(done=done)
    chunks.extend(tail)
    loop_accepts(chunks, response)
    return Outcome(chunks, response)


def run(
    body: str,
    *,
    compat: OpenAIChatCompat = DEFAULT,
    reserved: frozenset[str] = frozenset(),
    chunk_size: int | None = None,
) -> Outcome:
    return feed_events(decode(body, chunk_size), compat=compat, reserved=reserved)


def fails(
    body: str, code: str, match: str = "", *, compat: OpenAIChatCompat = DEFAULT
) -> tuple[ProviderError, list[ModelChunk]]:
    """The body fails with ``code`` (message matching ``match``); returns the error and the
    chunks emitted before it."""
    seen: list[ModelChunk] = []
    with pytest.raises(ProviderError) as caught:
        feed_events(decode(body), compat=compat, seen=seen)
    assert caught.value.code == code, caught.value.message
    assert re.search(match, caught.value.message), caught.value.message
    return caught.value, seen


# --- faithful OpenAI ------------------------------------------------------------------------------


@pytest.mark.parametrize("chunk_size", [None, 1, 7, 100])
def test_openai_text_stream(chunk_size: int | None) -> None:
    outcome = run(bodies.OPENAI_TEXT, chunk_size=chunk_size)
    response = outcome.response
    assert [chunk.type for chunk in outcome.chunks] == ["textDelta"] * 7
    assert [getattr(chunk, "delta", None) for chunk in outcome.chunks] == list(
        bodies.OPENAI_TEXT_WORDS
    )
    assert response.message.content == (TextBlock(text="Paris is the capital of France."),)
    assert response.stop_reason == "stop"
    assert response.usage == ModelUsage(input_tokens=21, output_tokens=7)
    assert response.id == "chatcmpl-T3th3rT3xt0001"
    assert response.request_id == REQUEST_ID
    assert response.message.id == "message-chatcmpl-T3th3rT3xt0001"
    assert response.model == "gpt-4o-mini-2024-07-18"


def test_openai_tool_call_stream() -> None:
    outcome = run(bodies.OPENAI_TOOL_CALL)
    (call,) = outcome.calls
    assert call == tool("call_W3athErLondon01", "get_weather", bodies.OPENAI_TOOL_CALL_ARGUMENTS)
    assert outcome.response.stop_reason == "toolCall"
    assert outcome.response.usage == ModelUsage(
        input_tokens=16, output_tokens=18, cache_read_tokens=64
    )
    deltas = outcome.deltas
    assert deltas[0] == ToolCallDeltaChunk(
        request_id=REQUEST_ID, index=0, id="call_W3athErLondon01", name="get_weather"
    )
    assert all(delta.id is None and delta.name is None for delta in deltas[1:])
    assert "".join(delta.arguments_delta for delta in deltas) == json.dumps(
        bodies.OPENAI_TOOL_CALL_ARGUMENTS, separators=(",", ":")
    )
    # the complete call is the last chunk: the very object of the final message
    last = outcome.chunks[-1]
    assert last.type == "toolCall"
    assert last.tool_call is call


def test_parallel_calls_one_after_the_other() -> None:
    outcome = run(bodies.OPENAI_PARALLEL)
    assert [(c.id, c.name, dict(c.arguments)) for c in outcome.calls] == [
        ("call_Aaaa0001", "get_country", {}),
        ("call_Bbbb0002", "get_time", {"zone": "UTC"}),
    ]
    # index 0 is complete as soon as index 1 starts: its toolCall chunk comes before index 1's
    # first delta
    kinds = [(chunk.type, getattr(chunk, "index", None)) for chunk in outcome.chunks]
    assert kinds == [
        ("toolCallDelta", 0),
        ("toolCallDelta", 0),
        ("toolCall", None),
        ("toolCallDelta", 1),
        ("toolCallDelta", 1),
        ("toolCallDelta", 1),
        ("toolCall", None),
    ]
    assert outcome.response.usage == ModelUsage(input_tokens=364, output_tokens=40)


def test_parallel_calls_interleaved() -> None:
    outcome = run(bodies.OPENAI_PARALLEL_INTERLEAVED)
    assert [(c.id, c.name, dict(c.arguments)) for c in outcome.calls] == [
        ("call_Aaaa0001", "get_country", {"code": "FR"}),
        ("call_Bbbb0002", "get_time", {"zone": "UTC"}),
    ]
    by_index: dict[int, str] = {}
    for delta in outcome.deltas:
        by_index[delta.index] = by_index.get(delta.index, "") + delta.arguments_delta
    assert by_index == {0: '{"code":"FR"}', 1: '{"zone":"UTC"}'}


def test_text_while_a_call_streams_stays_before_the_call() -> None:
    outcome = run(bodies.TEXT_THEN_TOOL_THEN_TEXT)
    content = outcome.response.message.content
    assert content[0] == TextBlock(text="Let me check. (one moment)")
    assert content[1] == tool("call_m", "lookup", {"q": "weather"})
    assert outcome.response.stop_reason == "toolCall"


# --- deviations -----------------------------------------------------------------------------------


def test_kimi_repeated_id_and_name_are_not_doubled() -> None:
    outcome = run(bodies.KIMI_REPEATED_ID_NAME)
    assert outcome.calls == [tool("0", "llm_version")]
    # no finish_reason, but [DONE] arrived: complete, and a call makes it a tool turn
    assert outcome.response.stop_reason == "toolCall"
    assert outcome.response.usage == ModelUsage(input_tokens=57, output_tokens=17)
    # the repeats add nothing but the "{}" fragment: one delta with the id and name, one with it
    assert outcome.deltas == [
        ToolCallDeltaChunk(request_id=REQUEST_ID, index=0, id="0", name="llm_version"),
        ToolCallDeltaChunk(request_id=REQUEST_ID, index=0, arguments_delta="{}"),
    ]


def test_kimi_name_only_first_delta() -> None:
    outcome = run(bodies.KIMI_NAME_ONLY_FIRST_DELTA)
    assert outcome.calls == [tool("llm_version:0", "llm_version")]
    assert outcome.response.stop_reason == "toolCall"


def test_groq_whole_call_in_one_delta_with_index_last() -> None:
    outcome = run(bodies.GROQ_WHOLE_TOOL_CALL, compat=PRESETS["groq"].compat)
    assert outcome.thinking == "".join(bodies.GROQ_REASONING)
    assert outcome.calls == [
        tool(
            "fc_0b7e5b5c-1111-4222-8333-944445555666",
            "lookup",
            {"name": "example"},
        )
    ]
    # usage at the top level and in x_groq: the same numbers, taken once
    assert outcome.response.usage == ModelUsage(input_tokens=304, output_tokens=49)
    assert [type(block) for block in outcome.response.message.content] == [ThinkingBlock, ToolCall]


def test_groq_error_event_then_eof() -> None:
    error, seen = fails(bodies.GROQ_ERROR_EVENT, "PROVIDER_ERROR_EVENT", "Tool call validation")
    assert error.provider_code == "tool_use_failed"
    assert error.status is None
    assert "".join(getattr(chunk, "delta", "") for chunk in seen) == "".join(bodies.GROQ_REASONING)


def test_an_error_event_without_an_error_field_is_still_an_error() -> None:
    parser = OpenAIChatStreamParser(REQUEST_ID, compat=DEFAULT)
    with pytest.raises(ProviderError) as caught:
        parser.feed({"message": "overloaded"}, event="error")
    assert caught.value.code == "PROVIDER_ERROR_EVENT"
    assert caught.value.provider_code is None


def test_openrouter_keepalives_finish_twice_and_cache_writes() -> None:
    outcome = run(bodies.OPENROUTER_REASONING_FINISH_TWICE, compat=PRESETS["openrouter"].compat)
    # reasoning and reasoning_details carry the same text: taken once
    assert outcome.thinking == "Simple arithmetic."
    assert outcome.text == "2 + 2 = 4"
    assert outcome.response.stop_reason == "stop"
    assert outcome.response.usage == ModelUsage(
        input_tokens=50, output_tokens=36, cache_read_tokens=1000, cache_write_tokens=150
    )


def test_openrouter_error_inside_a_chunk_with_choices() -> None:
    error, seen = fails(bodies.OPENROUTER_ERROR_IN_CHUNK, "PROVIDER_ERROR_EVENT", "Token limit")
    assert error.provider_code == "400"
    assert [chunk.type for chunk in seen] == ["thinkingDelta", "thinkingDelta"]


def test_openrouter_finish_reason_error() -> None:
    fails(bodies.OPENROUTER_FINISH_ERROR, "PROVIDER_ERROR_EVENT", 'finish_reason "error"')


def test_openai_midstream_error_object() -> None:
    error, _ = fails(bodies.MIDSTREAM_OPENAI_ERROR, "PROVIDER_ERROR_EVENT", "server experienced")
    assert error.provider_code == "server_error"  # code is null: the type


def test_deepseek_reasoning_content_and_cache_hits() -> None:
    outcome = run(bodies.DEEPSEEK_REASONING, compat=PRESETS["deepseek"].compat)
    content = outcome.response.message.content
    assert content == (
        ThinkingBlock(text="".join(bodies.DEEPSEEK_THOUGHT)),
        TextBlock(text="".join(bodies.DEEPSEEK_ANSWER)),
    )
    assert outcome.response.usage == ModelUsage(
        input_tokens=6, output_tokens=212, cache_read_tokens=64
    )
    assert outcome.response.model == "deepseek-reasoner"


def test_reasoning_fields_take_the_first_present_never_both() -> None:
    delta = {"reasoning_content": "A", "reasoning": "B"}
    for fields, expected in ((("reasoning_content", "reasoning"), "A"), (("reasoning",), "B")):
        parser = OpenAIChatStreamParser(
            REQUEST_ID, compat=OpenAIChatCompat(reasoning_fields=fields)
        )
        chunks = parser.feed({"choices": [{"delta": delta, "finish_reason": "stop"}]})
        assert [getattr(chunk, "delta", None) for chunk in chunks] == [expected]
    parser = OpenAIChatStreamParser(REQUEST_ID, compat=OpenAIChatCompat(reasoning_fields=()))
    assert parser.feed({"choices": [{"delta": delta}]}) == []


def test_snowflake_without_finish_reason() -> None:
    # [DONE] arrived: complete even without a finish reason
    outcome = run(bodies.SNOWFLAKE_DONE)
    assert outcome.text == "4"
    assert outcome.response.stop_reason == "stop"
    assert outcome.response.id == f"response-{REQUEST_ID}"  # every chunk id is ""
    assert outcome.response.usage == ModelUsage(input_tokens=22, output_tokens=5)
    # no [DONE] (dropped by the decoder) and no finish reason: a lost connection by default
    fails(bodies.SNOWFLAKE_EOF, "PROVIDER_STREAM_INTERRUPTED", "before its finish_reason")
    tolerant = OpenAIChatCompat(finish_reason_optional=True)
    assert run(bodies.SNOWFLAKE_EOF, compat=tolerant).response == outcome.response


def test_azure_filter_chunks_and_null_delta() -> None:
    outcome = run(bodies.AZURE_FILTERS)
    assert outcome.text == "Hi there"
    assert outcome.response.id == "chatcmpl-Azur3Azur3Azur3"  # the first non-empty id
    assert outcome.response.model == "gpt-4o-2024-11-20"
    assert outcome.response.usage == ModelUsage(input_tokens=9, output_tokens=2)


def test_usage_on_a_chunk_with_choices() -> None:
    outcome = run(bodies.MISTRAL_USAGE_WITH_CHOICES, compat=PRESETS["mistral"].compat)
    assert outcome.text == "Bonjour"
    assert outcome.response.usage == ModelUsage(input_tokens=12, output_tokens=3)


def test_usage_last_non_null_wins_never_summed_never_reset() -> None:
    parser = OpenAIChatStreamParser(REQUEST_ID, compat=DEFAULT)
    payloads: list[dict[str, Any]] = [
        {"choices": [{"delta": {"content": "x"}}], "usage": {"prompt_tokens": 5}},
        {"usage": {"prompt_tokens": 9, "completion_tokens": 3}},
        {"choices": [{"delta": {}, "finish_reason": "stop"}], "usage": None},
        {"choices": [], "usage": {}},
    ]
    for payload in payloads:
        parser.feed(payload)
    _, response = parser.finish(done=False)
    assert response.usage == ModelUsage(input_tokens=9, output_tokens=3)


@pytest.mark.parametrize(
    ("usage", "match"),
    [
        ({"prompt_tokens": -1}, "prompt_tokens must be a non-negative"),
        ({"completion_tokens": True}, "completion_tokens must be"),
        ({"prompt_tokens": 1.5}, "prompt_tokens must be"),
        ({"prompt_tokens": 2**53}, "prompt_tokens must be"),
        ({"prompt_tokens": 3, "prompt_tokens_details": {"cached_tokens": 4}}, "4 cached"),
        ({"prompt_tokens": 3, "prompt_cache_hit_tokens": 4}, "4 cached"),
        ({"prompt_tokens_details": [1]}, "prompt_tokens_details must be an object"),
        ("lots", "usage must be an object"),
    ],
)
def test_invalid_usage(usage: object, match: str) -> None:
    parser = OpenAIChatStreamParser(REQUEST_ID, compat=DEFAULT)
    with pytest.raises(ProviderError, match=match) as caught:
        parser.feed({"usage": usage})
    assert caught.value.code == "PROVIDER_PROTOCOL_ERROR"


def test_cached_tokens_prefer_prompt_tokens_details() -> None:
    parser = OpenAIChatStreamParser(REQUEST_ID, compat=DEFAULT)
    usage = {
        "prompt_tokens": 10,
        "prompt_tokens_details": {"cached_tokens": 2},
        "prompt_cache_hit_tokens": 7,
    }
    finish: dict[str, Any] = {"choices": [{"delta": {}, "finish_reason": "stop"}], "usage": usage}
    parser.feed(finish)
    _, response = parser.finish(done=True)
    assert response.usage == ModelUsage(input_tokens=8, output_tokens=0, cache_read_tokens=2)


# --- stream termination ---------------------------------------------------------------------------


def test_done_with_and_without_its_blank_line() -> None:
    complete = run(bodies.OPENAI_TEXT).response
    assert run(bodies.OPENAI_TEXT_DONE_UNTERMINATED).response == complete
    assert run(bodies.OPENAI_TEXT_NO_DONE).response == complete
    strict = OpenAIChatCompat(requires_done=True)
    assert run(bodies.OPENAI_TEXT, compat=strict).response == complete
    fails(
        bodies.OPENAI_TEXT_DONE_UNTERMINATED,
        "PROVIDER_STREAM_INTERRUPTED",
        "without data: \\[DONE\\]",
        compat=strict,
    )
    # requires_done wins over finish_reason_optional
    both = OpenAIChatCompat(requires_done=True, finish_reason_optional=True)
    fails(bodies.SNOWFLAKE_EOF, "PROVIDER_STREAM_INTERRUPTED", compat=both)


def test_a_cut_stream_is_interrupted() -> None:
    _, seen = fails(bodies.OPENAI_TEXT_CUT, "PROVIDER_STREAM_INTERRUPTED")
    assert len(seen) == 3
    partial = run(bodies.OPENAI_TEXT_CUT, compat=OpenAIChatCompat(finish_reason_optional=True))
    assert partial.text == "Paris is the"


def test_errors_are_sticky_and_misuse_is_a_runtime_error() -> None:
    parser = OpenAIChatStreamParser(REQUEST_ID, compat=DEFAULT)
    with pytest.raises(ProviderError):
        parser.feed([])
    for attempt in (lambda: parser.feed({}), lambda: parser.finish(done=True)):
        with pytest.raises(ProviderError) as caught:
            attempt()
        assert caught.value.code == "PROVIDER_PROTOCOL_ERROR"
    parser = OpenAIChatStreamParser(REQUEST_ID, compat=DEFAULT)
    parser.finish(done=True)
    with pytest.raises(RuntimeError, match="already called"):
        parser.finish(done=True)
    with pytest.raises(RuntimeError, match="already called"):
        parser.feed({})


# --- stop reasons ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "stop"),
    [
        (bodies.STOP_WITH_TOOL_CALL, "toolCall"),
        (bodies.NULL_FINISH_WITH_TOOL_CALL, "toolCall"),
        (bodies.CONTENT_FILTER, "refusal"),
        (bodies.LENGTH, "length"),
        (bodies.REFUSAL, "refusal"),
        (bodies.LEGACY_FUNCTION_CALL, "toolCall"),
    ],
)
def test_stop_reasons(body: str, stop: str) -> None:
    assert run(body).response.stop_reason == stop


def test_refusal_text_is_streamed_as_text() -> None:
    assert run(bodies.REFUSAL).text == "I can't help with that."


def test_legacy_function_call() -> None:
    (call,) = run(bodies.LEGACY_FUNCTION_CALL).calls
    assert call == tool("chatcmpl-T3th3rT3xt0001-call-0", "f", {"k": True})


def test_length_keeps_complete_calls_and_drops_the_truncated_one() -> None:
    outcome = run(bodies.TRUNCATED_TOOL_CALL)
    assert outcome.response.stop_reason == "length"
    assert outcome.calls == [tool("call_ok", "read", {"path": "a"})]


def test_unknown_finish_reason_is_named() -> None:
    fails(bodies.UNKNOWN_FINISH, "PROVIDER_PROTOCOL_ERROR", 'Unknown finish_reason "eos_token"')


def test_tool_calls_finish_without_a_call() -> None:
    fails(bodies.TOOL_CALLS_WITHOUT_CALLS, "PROVIDER_PROTOCOL_ERROR", "without any tool call")


# --- tool calls -----------------------------------------------------------------------------------


def invalid_call(body: str) -> ToolCall:
    """The one call of ``body``, which must be kept as an invalid call (not a failure), with
    its ``toolCall`` chunk the very object of the final message."""
    outcome = run(body)
    assert outcome.response.stop_reason == "toolCall"
    (call,) = outcome.calls
    assert call.raw_arguments is not None
    assert call.arguments == {}
    streamed = [chunk.tool_call for chunk in outcome.chunks if isinstance(chunk, ToolCallChunk)]
    assert streamed == [call]
    assert streamed[0] is call
    return call


def test_invalid_argument_json_is_kept_as_an_invalid_call_never_repaired() -> None:
    call = invalid_call(bodies.INVALID_ARGUMENTS)
    assert call == ToolCall(
        id="call_1", name="write", arguments=JsonObject(), raw_arguments='{"path": "a.txt", '
    )
    assert invalid_call(bodies.ARRAY_ARGUMENTS).raw_arguments == "[1, 2]"


def test_raw_arguments_beyond_the_limit_are_cut_with_a_marker() -> None:
    piece = "x" * 500_000  # an SSE event holds at most 1 MiB: the text comes in pieces
    pieces = ['{"content": "', *[piece] * (MAX_RAW_ARGUMENTS_CODE_POINTS // len(piece) + 1)]
    text = "".join(pieces)
    first, *rest = pieces
    body = bodies.tool_stream(
        [bodies.call(0, "c", "f", first)], *[[bodies.call(0, arguments=part)] for part in rest]
    )
    raw = invalid_call(body).raw_arguments
    assert raw is not None
    assert len(raw) == MAX_RAW_ARGUMENTS_CODE_POINTS
    marker = f"\u2026[cut by tether: {len(text)} code points]"
    assert raw == text[: MAX_RAW_ARGUMENTS_CODE_POINTS - len(marker)] + marker


def test_an_invalid_call_and_a_valid_one_keep_their_order() -> None:
    body = bodies.tool_stream(
        [bodies.call(0, "c0", "f", '{"a": 1'), bodies.call(1, "c1", "g", '{"b": 2}')]
    )
    outcome = run(body)
    assert [(call.id, call.raw_arguments) for call in outcome.calls] == [
        ("c0", '{"a": 1'),
        ("c1", None),
    ]
    loop_accepts(outcome.chunks, outcome.response)


def test_an_invalid_call_goes_back_raw_or_as_an_empty_object_as_the_compat_says() -> None:
    call = ToolCall(id="c", name="f", arguments=JsonObject(), raw_arguments='{"a": 1 "b"}')
    request = ModelRequest(
        id="request-001",
        messages=(
            UserMessage(id="u", content="go"),
            AssistantMessage(id="a", content=(call,)),
            ToolResultMessage(tool_call_id="c", tool_name="f", content="bad", is_error=True),
        ),
    )

    def sent(compat: OpenAIChatCompat) -> object:
        body: Any = build_chat_request(
            request,
            model="m",
            compat=compat,
            max_output_tokens=None,
            temperature=None,
            reasoning_effort=None,
        )
        return body["messages"][1]["tool_calls"][0]["function"]["arguments"]

    assert sent(OpenAIChatCompat()) == '{"a": 1 "b"}'
    assert sent(OpenAIChatCompat(invalid_arguments="empty")) == "{}"
    with pytest.raises(ValueError, match="invalid_arguments must be 'raw' or 'empty'"):
        OpenAIChatCompat(invalid_arguments="repaired")  # pyright: ignore[reportArgumentType]


def test_an_invalid_call_sends_its_raw_text_back_as_arguments() -> None:
    call = ToolCall(id="c", name="f", arguments=JsonObject(), raw_arguments='{"a": 1 "b"}')
    assert arguments_text(call) == '{"a": 1 "b"}'
    lone = ToolCall(id="c", name="f", arguments=JsonObject(), raw_arguments='{"a": "\ud800"')
    assert arguments_text(lone) == '{"a": "\ufffd"'


def test_empty_arguments_are_an_empty_object() -> None:
    outcome = run(bodies.EMPTY_ARGUMENTS)
    assert [(call.id, call.name, call.arguments) for call in outcome.calls] == [
        ("call_A", "list_files", {}),
        ("call_B", "now", {}),
    ]


def test_arguments_before_id_and_name() -> None:
    outcome = run(bodies.ARGUMENTS_BEFORE_ID)
    assert outcome.calls == [tool("call_late", "search", {"q": "x"})]
    assert [(d.id, d.name, d.arguments_delta) for d in outcome.deltas] == [
        (None, None, '{"q":'),
        (None, None, '"x"}'),
        ("call_late", "search", ""),
    ]


def test_a_call_without_a_name_fails() -> None:
    fails(bodies.GHOST_CALL, "PROVIDER_PROTOCOL_ERROR", "Tool call 0 ended without a name")


def test_arguments_sent_as_an_object() -> None:
    outcome = run(bodies.WHOLE_DICT_ARGUMENTS)
    assert outcome.calls == [tool("call_d", "add", {"a": 1, "b": [2, 3]})]
    assert outcome.deltas[0].arguments_delta == '{"a":1,"b":[2,3]}'
    more = bodies.tool_stream(
        [bodies.call(0, "call_d", "add", {"a": 1})], [bodies.call(0, arguments="{}")]
    )
    fails(more, "PROVIDER_PROTOCOL_ERROR", "more arguments after they were complete")


def test_missing_index_only_when_unambiguous() -> None:
    outcome = run(bodies.NO_INDEX)
    assert outcome.calls == [tool("call_n", "ping", {"host": "x"})]
    fails(bodies.NO_INDEX_AMBIGUOUS, "PROVIDER_PROTOCOL_ERROR", "without an index is ambiguous")


def test_a_changed_id_or_name_is_a_protocol_error() -> None:
    fails(bodies.CHANGED_ID, "PROVIDER_PROTOCOL_ERROR", 'changed its id from "call_1" to "call_2"')
    fails(bodies.CHANGED_NAME, "PROVIDER_PROTOCOL_ERROR", 'changed its name from "a" to "b"')


def test_more_arguments_after_an_early_completed_call() -> None:
    body = bodies.tool_stream(
        [bodies.call(0, "c1", "a", "{}")],
        [bodies.call(1, "c2", "b", "{}")],
        [bodies.call(0, "c1", "a", "  ")],  # identical repeats and whitespace: harmless
        [bodies.call(0, arguments=',"x":1}')],
    )
    fails(body, "PROVIDER_PROTOCOL_ERROR", "Tool call 0 received more arguments")


def test_reserved_duplicate_and_empty_ids_are_replaced() -> None:
    response_id = "chatcmpl-T3th3rT3xt0001"
    outcome = run(bodies.DUPLICATE_AND_EMPTY_IDS, reserved=frozenset({"call_reused"}))
    assert [call.id for call in outcome.calls] == [
        "call_0",
        f"{response_id}-call-1",
        f"{response_id}-call-2",
        f"{response_id}-call-3",
    ]
    # a derived ID that is itself taken gets a suffix
    taken = frozenset({"call_reused", f"{response_id}-call-1", f"{response_id}-call-3"})
    outcome = run(bodies.DUPLICATE_AND_EMPTY_IDS, reserved=taken)
    assert [call.id for call in outcome.calls] == [
        "call_0",
        f"{response_id}-call-1-2",
        f"{response_id}-call-2",
        f"{response_id}-call-3-2",
    ]
    # vendor IDs are otherwise kept exactly
    assert [call.id for call in run(bodies.DUPLICATE_AND_EMPTY_IDS).calls][3] == "call_reused"


def test_progress_chunks_carry_the_final_id() -> None:
    outcome = run(bodies.DUPLICATE_AND_EMPTY_IDS, reserved=frozenset({"call_reused"}))
    announced = [delta.id for delta in outcome.deltas if delta.id is not None]
    final = [call.id for call in outcome.calls]
    assert announced == [final[0], final[1], final[3]]  # call 2 had no vendor id


def test_calls_that_never_parse_are_not_read_again_at_every_new_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Many parallel calls whose arguments never become a JSON object (a hostile or broken
    server): each new call used to join and parse every such call still pending, so the work
    grew with the square of the calls. A pending call is read again only after a fragment of
    its own arrived, so the parses stay linear in the calls (counted, not timed)."""
    module: Any = importlib.import_module("tether.providers.openai_chat_stream")
    real = module._parse_arguments
    parsed: list[str] = []

    def counting(text: str) -> JsonObject:
        parsed.append(text)
        return real(text)

    monkeypatch.setattr(module, "_parse_arguments", counting)
    calls = 300
    parser = OpenAIChatStreamParser(REQUEST_ID, compat=DEFAULT)
    for index in range(calls):
        parser.feed(call_payload(index, True, "{"))
    finish: dict[str, Any] = {"index": 0, "delta": {}, "finish_reason": "tool_calls"}
    parser.feed({"choices": [finish]})
    chunks, response = parser.finish(done=True)
    # one look per call when the next one starts, one more at the end: at most 2 per call
    assert len(parsed) <= 2 * calls
    assert len([chunk for chunk in chunks if chunk.type == "toolCall"]) == calls
    assert [call.raw_arguments for call in Outcome(chunks, response).calls] == ["{"] * calls


def test_transcript_call_ids() -> None:
    request = ModelRequest(
        id=REQUEST_ID,
        messages=(
            UserMessage(id="u", content="hi"),
            AssistantMessage(id="a", content=(tool("call_0", "f"), TextBlock(text="t"))),
            ToolResultMessage(id="r", tool_call_id="call_0", tool_name="f", content="ok"),
            ToolResultMessage(id="r2", tool_call_id="orphan", tool_name="f", content="ok"),
        ),
    )
    assert transcript_call_ids(request) == {"call_0", "orphan"}


# --- malformed payloads ---------------------------------------------------------------------------


MALFORMED: Final[list[tuple[Any, str]]] = [
    ([], "A stream chunk must be a JSON object \\(got an array\\)"),
    ("x", "got a string"),
    ({"choices": {"0": {}}}, "choices must be an array"),
    ({"choices": [1]}, "A choice must be an object"),
    ({"choices": [{"index": 1, "delta": {}}]}, "Only choice 0"),
    ({"choices": [{"index": True}]}, "Only choice 0"),
    ({"choices": [{"delta": "x"}]}, "delta must be an object"),
    ({"choices": [{"delta": {"content": 5}}]}, "delta.content must be a string"),
    ({"choices": [{"delta": {"reasoning": ["x"]}}]}, "delta.reasoning must be a string"),
    ({"choices": [{"delta": {"refusal": 1}}]}, "delta.refusal must be a string"),
    ({"choices": [{"delta": {"tool_calls": {"0": {}}}}]}, "tool_calls must be an array"),
    ({"choices": [{"delta": {"tool_calls": "x"}}]}, "delta.tool_calls must be an array"),
    ({"choices": [{"delta": {"tool_calls": [1]}}]}, "A tool-call delta must be an object"),
    ({"choices": [{"delta": {"tool_calls": [{"index": -1}]}}]}, "non-negative integer"),
    ({"choices": [{"delta": {"tool_calls": [{"index": "0"}]}}]}, "non-negative integer"),
    ({"choices": [{"delta": {"tool_calls": [{"index": 0, "id": 7}]}}]}, "id must be a string"),
    ({"choices": [{"delta": {"tool_calls": [{"index": 0, "function": 1}]}}]}, "function must"),
    (
        {"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"name": 1}}]}}]},
        "function.name must be a string",
    ),
    (
        {"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"arguments": 1}}]}}]},
        "function.arguments must be a string",
    ),
    ({"choices": [{"finish_reason": 1}]}, "finish_reason must be a string"),
]


@pytest.mark.parametrize(("payload", "match"), MALFORMED)
def test_malformed_payloads(payload: object, match: str) -> None:
    parser = OpenAIChatStreamParser(REQUEST_ID, compat=DEFAULT)
    with pytest.raises(ProviderError, match=match) as caught:
        parser.feed(payload)
    assert caught.value.code == "PROVIDER_PROTOCOL_ERROR"


def test_unknown_fields_and_events_are_tolerated() -> None:
    parser = OpenAIChatStreamParser(REQUEST_ID, compat=DEFAULT)
    chunk: dict[str, Any] = {
        "id": "x1",
        "obfuscation": "pad",
        "timings": {"prompt_n": 3, "predicted_per_second": 40.5},
        "x_groq": {"id": "req"},
        "provider": "Novita",
        "choices": [
            {
                "index": 0,
                "delta": {"content": "ok", "role": "assistant", "channel": "final", "audio": {}},
                "finish_reason": "stop",
                "native_finish_reason": None,
                "logprobs": {"content": []},
                "token_id": 42,
            }
        ],
    }
    assert len(parser.feed(chunk, event="chunk")) == 1  # an unknown event type is data too
    assert parser.response_id == "x1"
    _, response = parser.finish(done=False)
    assert response.stop_reason == "stop"


def test_deeply_nested_arguments_fail_cleanly() -> None:
    deep: Any = {}
    for _ in range(5_000):  # deeper than json.dumps can write: fed as a decoded payload
        deep = {"a": deep}
    parser = OpenAIChatStreamParser(REQUEST_ID, compat=DEFAULT)
    entry = bodies.call(0, "c", "f", deep)
    with pytest.raises(ProviderError, match="sent as an object could not be read") as caught:
        parser.feed({"choices": [{"delta": {"tool_calls": [entry]}}]})
    assert caught.value.code == "PROVIDER_PROTOCOL_ERROR"
    # Argument text nested too deeply to read, or deeper than JsonObject allows: invalid calls
    nested = '{"a":' + "[" * 100_000
    assert invalid_call(bodies.tool_stream([bodies.call(0, "c", "f", nested)])).raw_arguments == (
        nested
    )
    too_deep = '{"a":' + "[" * 200 + "]" * 200 + "}"  # valid JSON, deeper than JsonObject allows
    call = invalid_call(bodies.tool_stream([bodies.call(0, "c", "f", too_deep)]))
    assert call.raw_arguments == too_deep


def test_error_shapes() -> None:
    for error, message, code in (
        ("rate limited", "rate limited", None),
        ({"message": "Overloaded", "type": "overloaded_error"}, "Overloaded", "overloaded_error"),
        ({"code": 529}, "", "529"),
        ([1], "", None),
    ):
        parser = OpenAIChatStreamParser(REQUEST_ID, compat=DEFAULT)
        with pytest.raises(ProviderError) as caught:
            parser.feed({"error": error})
        assert caught.value.code == "PROVIDER_ERROR_EVENT"
        assert caught.value.message.endswith(message or "in the stream")
        assert caught.value.provider_code == code


def test_an_integer_too_long_to_convert_is_invalid_json() -> None:
    huge = '{"n":' + "9" * 5_000 + "}"
    assert invalid_call(bodies.tool_stream([bodies.call(0, "c", "f", huge)])).raw_arguments == huge


def test_vendor_text_in_errors_is_bounded() -> None:
    parser = OpenAIChatStreamParser(REQUEST_ID, compat=DEFAULT)
    with pytest.raises(ProviderError) as caught:
        parser.feed({"error": {"message": "x" * 10_000, "code": "c" * 500}})
    assert len(caught.value.message) <= 2000
    assert caught.value.provider_code == "c" * 100
    parser = OpenAIChatStreamParser(REQUEST_ID, compat=DEFAULT)
    long_finish: dict[str, Any] = {"choices": [{"delta": {}, "finish_reason": "z" * 10_000}]}
    parser.feed(long_finish)
    with pytest.raises(ProviderError) as caught:
        parser.finish(done=True)
    assert len(caught.value.message) < 200


def test_constructor_arguments_are_checked() -> None:
    with pytest.raises(TypeError, match="request_id"):
        OpenAIChatStreamParser(" ", compat=DEFAULT)
    with pytest.raises(TypeError, match="compat"):
        OpenAIChatStreamParser(REQUEST_ID, compat=object())  # pyright: ignore[reportArgumentType]
    with pytest.raises(TypeError, match="reserved_call_ids"):
        OpenAIChatStreamParser(
            REQUEST_ID,
            compat=DEFAULT,
            reserved_call_ids=[1],  # pyright: ignore[reportArgumentType]
        )
    parser = OpenAIChatStreamParser(REQUEST_ID, compat=DEFAULT, reserved_call_ids=["a", "b"])
    with pytest.raises(TypeError, match="done must be a bool"):
        parser.finish(done=1)  # pyright: ignore[reportArgumentType]


# --- a whole JSON body ----------------------------------------------------------------------------


def test_a_non_streamed_tool_completion() -> None:
    chunks, response = parse_chat_completion(
        bodies.KATAN_TOOL_COMPLETION, REQUEST_ID, compat=DEFAULT, reserved_call_ids=frozenset()
    )
    call = tool("call_katan_0", "get_weather", {"city": "test_city", "days": 1})
    assert [chunk.type for chunk in chunks] == ["toolCall"]
    assert response.message.content == (call,)
    assert response.stop_reason == "toolCall"
    assert response.usage == ModelUsage(input_tokens=12, output_tokens=8)
    assert response.model == "test"
    loop_accepts(chunks, response)


def test_a_non_streamed_text_completion() -> None:
    chunks, response = parse_chat_completion(
        bodies.TEXT_COMPLETION, REQUEST_ID, compat=PRESETS["deepseek"].compat
    )
    assert [chunk.type for chunk in chunks] == ["thinkingDelta", "textDelta"]
    assert response.message.content == (
        ThinkingBlock(text="Greet back."),
        TextBlock(text="Hello!"),
    )
    assert response.usage == ModelUsage(input_tokens=6, output_tokens=5, cache_read_tokens=4)
    loop_accepts(chunks, response)


def test_a_non_streamed_body_keeps_the_id_rules() -> None:
    chunks, response = parse_chat_completion(
        bodies.KATAN_TOOL_COMPLETION,
        REQUEST_ID,
        compat=DEFAULT,
        reserved_call_ids=frozenset({"call_katan_0"}),
    )
    assert [call.id for call in response.message.content if isinstance(call, ToolCall)] == [
        "chatcmpl-katan0001-call-0"
    ]
    loop_accepts(chunks, response)


BAD_BODIES: Final[list[tuple[Any, str, str]]] = [
    (
        {"error": {"message": "bad", "type": "invalid_request_error"}},
        "PROVIDER_ERROR_EVENT",
        "bad",
    ),
    ([], "PROVIDER_PROTOCOL_ERROR", "must be a JSON object"),
    ({"choices": []}, "PROVIDER_PROTOCOL_ERROR", "non-empty array"),
    ({"choices": [1]}, "PROVIDER_PROTOCOL_ERROR", "A choice must be an object"),
    ({"choices": [{"message": "hi"}]}, "PROVIDER_PROTOCOL_ERROR", "message must be an object"),
    (
        {"choices": [{"message": {"tool_calls": [{"id": "x", "function": {}}]}}]},
        "PROVIDER_PROTOCOL_ERROR",
        "ended without",
    ),
]


@pytest.mark.parametrize(("body", "code", "match"), BAD_BODIES)
def test_malformed_json_bodies(body: object, code: str, match: str) -> None:
    with pytest.raises(ProviderError, match=match) as caught:
        parse_chat_completion(body, REQUEST_ID, compat=DEFAULT)
    assert caught.value.code == code


# --- recorded vendor streams ----------------------------------------------------------------------


def _recorded() -> list[Path]:
    return recorded_streams("openai-chat")


@dataclass
class Expected:
    """What ``spec/providers.md`` §2.4 says a stream means, computed directly from the decoded
    payloads by the rules alone (an independent reading, not the parser's code)."""

    error: str | None = None
    thinking: str = ""
    text: str = ""
    calls: list[tuple[str, str, object]] = dataclasses.field(default_factory=list[Any])
    usage: ModelUsage | None = None
    stop: str | None = None


def expected_by_the_rules(events: list[Event], compat: OpenAIChatCompat) -> Expected:
    thinking: list[str] = []
    text: list[str] = []
    slots: dict[int, dict[str, Any]] = {}
    finish: str | None = None
    usage: dict[str, Any] | None = None
    done = False
    for event, data in events:
        if data.strip() == "[DONE]":
            done = True
            break
        chunk: dict[str, Any] = json.loads(data)
        if chunk.get("error") or event == "error":  # rule 2: error first
            return Expected(error="PROVIDER_ERROR_EVENT")
        choices: list[dict[str, Any]] = chunk.get("choices") or []  # rule 3
        for choice in choices:
            delta: dict[str, Any] = choice.get("delta") or {}  # rule 4
            for field in compat.reasoning_fields:  # rule 6: one field, never both
                if delta.get(field) is not None:
                    thinking.append(delta[field])
                    break
            if delta.get("content"):  # rule 5
                text.append(delta["content"])
            entries: list[dict[str, Any]] = delta.get("tool_calls") or []  # rule 7
            for entry in entries:
                slot = slots.setdefault(entry["index"], {"id": "", "name": "", "args": []})
                if entry.get("id") and not slot["id"]:
                    slot["id"] = entry["id"]
                function: dict[str, Any] = entry.get("function") or {}
                if function.get("name") and not slot["name"]:
                    slot["name"] = function["name"]
                if function.get("arguments"):
                    slot["args"].append(function["arguments"])
            if choice.get("finish_reason"):  # rule 8: the last non-null
                finish = choice["finish_reason"]
        if chunk.get("usage"):  # rule 9: overwrite, never sum
            usage = chunk["usage"]
    if not done and finish is None and not compat.finish_reason_optional:
        return Expected(error="PROVIDER_STREAM_INTERRUPTED")  # §2.6
    calls = [
        (slot["id"], slot["name"], json.loads("".join(slot["args"]) or "{}"))  # rule 10
        for _, slot in sorted(slots.items())
    ]
    model_usage = None
    if usage is not None:
        details: dict[str, Any] = usage.get("prompt_tokens_details") or {}
        cached: int | None = details.get("cached_tokens")
        if cached is None:
            cached = int(usage.get("prompt_cache_hit_tokens", 0))
        written: int = details.get("cache_write_tokens") or 0
        model_usage = ModelUsage(
            input_tokens=usage.get("prompt_tokens", 0) - cached - written,
            output_tokens=usage.get("completion_tokens", 0),
            cache_read_tokens=cached,
            cache_write_tokens=written,
        )
    stops = {"length": "length", "content_filter": "refusal"}
    stop = stops.get(finish or "") or ("toolCall" if calls else "stop")
    return Expected(None, "".join(thinking), "".join(text), calls, model_usage, stop)


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
    compat = DEFAULT
    if path.stem.startswith(("groq-", "openrouter-")):
        compat = PRESETS[path.stem.split("-")[0]].compat
    expected = expected_by_the_rules(events, compat)
    if expected.error is not None:
        seen: list[ModelChunk] = []
        with pytest.raises(ProviderError) as caught:
            feed_events(events, compat=compat, seen=seen)
        assert caught.value.code == expected.error
        assert all(chunk.type in ("textDelta", "thinkingDelta", "toolCallDelta") for chunk in seen)
        return
    outcome = feed_events(events, compat=compat)
    response = outcome.response
    assert outcome.thinking == expected.thinking
    assert outcome.text == expected.text
    assert [(call.id, call.name, call.arguments) for call in outcome.calls] == expected.calls
    assert response.usage == (expected.usage or ModelUsage(input_tokens=0, output_tokens=0))
    assert response.stop_reason == expected.stop
    first = json.loads(next(data for _, data in events if data.startswith("{")))
    assert response.id == (first["id"] or f"response-{REQUEST_ID}")
    assert response.model == first["model"]


# --- the official SDK as an oracle on faithful bodies ---------------------------------------------

FAITHFUL: Final = {
    "openai_text": bodies.OPENAI_TEXT,
    "openai_tool_call": bodies.OPENAI_TOOL_CALL,
    "openai_parallel": bodies.OPENAI_PARALLEL,
    "openai_parallel_interleaved": bodies.OPENAI_PARALLEL_INTERLEAVED,
}
for _path in _recorded():
    if _path.stem.startswith("openai-"):
        FAITHFUL[_path.stem] = json.loads(_path.read_text(encoding="utf-8"))["body"]


def sdk_accumulate(body: str) -> Any:
    """The openai SDK's ``ChatCompletionStreamState`` fed the same payloads."""
    chat: Any = importlib.import_module("openai.lib.streaming.chat")
    types: Any = importlib.import_module("openai.types.chat")
    state = chat.ChatCompletionStreamState()
    for _, data in decode(body):
        if data.startswith("[DONE]"):
            break
        state.handle_chunk(types.ChatCompletionChunk.model_validate(json.loads(data)))
    return state.get_final_completion()


@pytest.mark.parametrize("name", sorted(FAITHFUL))
def test_same_result_as_the_official_sdk(name: str) -> None:
    pytest.importorskip("openai")
    body = FAITHFUL[name]
    completion = sdk_accumulate(body)
    outcome = run(body)
    message = completion.choices[0].message
    assert outcome.text == (message.content or "")
    sdk_calls: list[Any] = message.tool_calls or []
    assert [(call.id, call.name, call.arguments) for call in outcome.calls] == [
        (call.id, call.function.name, json.loads(call.function.arguments or "{}"))
        for call in sdk_calls
    ]
    usage = completion.usage
    cached = usage.prompt_tokens_details.cached_tokens or 0
    assert outcome.response.usage == ModelUsage(
        input_tokens=usage.prompt_tokens - cached,
        output_tokens=usage.completion_tokens,
        cache_read_tokens=cached,
    )
    expected_stop = {"stop": "stop", "tool_calls": "toolCall"}[completion.choices[0].finish_reason]
    assert outcome.response.stop_reason == expected_stop


def test_the_sdk_doubles_kimi_ids_and_names_tether_does_not() -> None:
    pytest.importorskip("openai")
    message = sdk_accumulate(bodies.KIMI_REPEATED_ID_NAME).choices[0].message
    (sdk_call,) = message.tool_calls
    assert (sdk_call.id, sdk_call.function.name) == ("00", "llm_versionllm_version")
    (call,) = run(bodies.KIMI_REPEATED_ID_NAME).calls
    assert (call.id, call.name) == ("0", "llm_version")


# --- request building -----------------------------------------------------------------------------

SCHEMA: Final = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}


def sample_request(**changes: Any) -> ModelRequest:
    call = tool("call_1", "read", {"path": "a.txt", "n": [1, 2.5, None]})
    fields: dict[str, Any] = {
        "id": REQUEST_ID,
        "system": "Be brief.",
        "tools": (
            ToolSpec(name="read", description="Read a file.", parameters=JsonObject(SCHEMA)),
            ToolSpec(name="now", description="", parameters=JsonObject({"type": "object"})),
        ),
        "messages": (
            UserMessage(id="u1", content="Read a.txt"),
            AssistantMessage(
                id="a1",
                content=(
                    ThinkingBlock(text="I should read it.", signature="sig"),
                    TextBlock(text="Reading"),
                    TextBlock(text=" now."),
                    call,
                ),
            ),
            ToolResultMessage(id="t1", tool_call_id="call_1", tool_name="read", content="hello"),
            AssistantMessage(id="a2", content=(tool("call_2", "now"),)),
            ToolResultMessage(
                id="t2", tool_call_id="call_2", tool_name="now", content="boom", is_error=True
            ),
            AssistantMessage(id="a3", content=(ThinkingBlock(text="hmm"),)),
            UserMessage(id="u2", content="Thanks"),
        ),
    }
    fields.update(changes)
    return ModelRequest(**fields)


def build(
    request: ModelRequest | None = None,
    compat: OpenAIChatCompat = DEFAULT,
    *,
    max_output_tokens: int | None = None,
    temperature: float | None = None,
    reasoning_effort: str | None = None,
    stream: bool = True,
) -> dict[str, Any]:
    body = build_chat_request(
        request or sample_request(),
        model="gpt-4o-mini",
        compat=compat,
        max_output_tokens=max_output_tokens,
        temperature=temperature,
        reasoning_effort=reasoning_effort,
        stream=stream,
    )
    json.dumps(body, ensure_ascii=False).encode()  # plain JSON, encodable as sent
    return dict(body)


def test_the_request_body() -> None:
    assert build() == {
        "model": "gpt-4o-mini",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Read a.txt"},
            {
                "role": "assistant",
                "content": "Reading now.",
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {
                            "name": "read",
                            "arguments": '{"path":"a.txt","n":[1,2.5,null]}',
                        },
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "hello"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_2",
                        "type": "function",
                        "function": {"name": "now", "arguments": "{}"},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_2", "content": "boom"},
            {"role": "assistant", "content": ""},
            {"role": "user", "content": "Thanks"},
        ],
        "tools": [
            {
                "type": "function",
                "function": {"name": "read", "description": "Read a file.", "parameters": SCHEMA},
            },
            {"type": "function", "function": {"name": "now", "parameters": {"type": "object"}}},
        ],
        "stream": True,
        "stream_options": {"include_usage": True},
    }


def test_parameters_are_plain_json() -> None:
    parameters: Any = build()["tools"][0]["function"]["parameters"]
    required: Any = parameters["required"]
    assert type(parameters) is dict
    assert type(required) is list


def test_request_options() -> None:
    body = build(max_output_tokens=256, temperature=0.2, reasoning_effort="low")
    assert (body["max_completion_tokens"], body["temperature"], body["reasoning_effort"]) == (
        256,
        0.2,
        "low",
    )
    assert "max_tokens" not in body
    assert (
        build(compat=OpenAIChatCompat(max_tokens_field="max_tokens"), max_output_tokens=9)[
            "max_tokens"
        ]
        == 9
    )
    plain = build()
    assert not {"max_completion_tokens", "max_tokens", "temperature", "reasoning_effort"} & set(
        plain
    )


def test_compat_flags_in_the_request() -> None:
    developer = build(compat=OpenAIChatCompat(system_role="developer"))
    assert developer["messages"][0] == {"role": "developer", "content": "Be brief."}
    assert "stream_options" not in build(compat=OpenAIChatCompat(send_stream_options=False))
    assert build(compat=OpenAIChatCompat(include_obfuscation=False))["stream_options"] == {
        "include_usage": True,
        "include_obfuscation": False,
    }
    assert "parallel_tool_calls" not in build()
    assert (
        build(compat=OpenAIChatCompat(send_parallel_tool_calls=False))["parallel_tool_calls"]
        is False
    )
    no_tools = sample_request(tools=())
    assert not {"tools", "parallel_tool_calls"} & set(
        build(no_tools, OpenAIChatCompat(send_parallel_tool_calls=True))
    )
    unstreamed = build(stream=False)
    assert unstreamed["stream"] is False
    assert "stream_options" not in unstreamed


def test_no_system_message_without_a_system_prompt() -> None:
    for system in (None, ""):
        assert build(sample_request(system=system))["messages"][0]["role"] == "user"


def test_arguments_text() -> None:
    call = tool("c", "f", {"é": "ü ✓", "n": {"x": [True, None]}})
    assert arguments_text(call) == '{"é":"ü ✓","n":{"x":[true,null]}}'
    lone = tool("c", "f", {"s": "\ud800"})
    assert arguments_text(lone) == '{"s":"\\ud800"}'
    assert lone.arguments["s"] == "\ud800"  # the value really is a lone surrogate


@pytest.mark.parametrize(
    ("changes", "error"),
    [
        ({"model": " "}, TypeError),
        ({"max_output_tokens": 0}, ValueError),
        ({"max_output_tokens": True}, ValueError),
        ({"temperature": float("nan")}, ValueError),
        ({"temperature": -1}, ValueError),
        ({"temperature": "hot"}, ValueError),
        ({"reasoning_effort": ""}, ValueError),
        ({"stream": 1}, TypeError),
        ({"compat": None}, TypeError),
        ({"request": {"id": "x"}}, TypeError),
    ],
)
def test_request_arguments_are_checked(changes: dict[str, Any], error: type[Exception]) -> None:
    arguments: dict[str, Any] = {
        "request": sample_request(),
        "model": "m",
        "compat": DEFAULT,
        "max_output_tokens": None,
        "temperature": None,
        "reasoning_effort": None,
        **changes,
    }
    request = arguments.pop("request")
    with pytest.raises(error):
        build_chat_request(request, **arguments)


# --- compat and presets ---------------------------------------------------------------------------


def test_compat_defaults_are_openai() -> None:
    assert (
        OpenAIChatCompat(
            system_role="system",
            send_stream_options=True,
            include_obfuscation=None,
            max_tokens_field="max_completion_tokens",
            send_parallel_tool_calls=None,
            reasoning_fields=("reasoning_content", "reasoning"),
            finish_reason_optional=False,
            requires_done=False,
            usage_cumulative_every_chunk=False,
        )
        == DEFAULT
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        DEFAULT.requires_done = True  # pyright: ignore[reportAttributeAccessIssue]
    listed = OpenAIChatCompat(reasoning_fields=["reasoning"])  # pyright: ignore[reportArgumentType]
    assert listed.reasoning_fields == ("reasoning",)


@pytest.mark.parametrize(
    ("changes", "error"),
    [
        ({"system_role": "user"}, ValueError),
        ({"max_tokens_field": "tokens"}, ValueError),
        ({"send_stream_options": 1}, TypeError),
        ({"requires_done": None}, TypeError),
        ({"include_obfuscation": "no"}, TypeError),
        ({"send_parallel_tool_calls": 0}, TypeError),
        ({"reasoning_fields": "reasoning"}, TypeError),
        ({"reasoning_fields": ("",)}, TypeError),
    ],
)
def test_compat_fields_are_checked(changes: dict[str, Any], error: type[Exception]) -> None:
    with pytest.raises(error):
        OpenAIChatCompat(**changes)


def test_presets() -> None:
    from tether.providers.registry import REGISTRY

    assert PRESETS["anthropic"].api == "anthropic-messages"
    openai_chat = sorted(preset.name for preset in REGISTRY.api("openai-chat").presets)
    assert openai_chat == [
        "deepseek",
        "groq",
        "llamacpp",
        "lmstudio",
        "mistral",
        "ollama",
        "openai",
        "openrouter",
        "vllm",
    ]
    for name, preset in PRESETS.items():
        assert preset.name == name
        assert preset.base_url.startswith("https://" if preset.api_key_env else "http://localhost:")
        assert not preset.base_url.endswith("/")
    assert PRESETS["openai"] == ProviderPreset(
        name="openai", base_url="https://api.openai.com/v1", api_key_env="OPENAI_API_KEY"
    )
    assert PRESETS["mistral"].compat.send_stream_options is False
    assert PRESETS["groq"].compat.send_stream_options is False
    local = {name for name, preset in PRESETS.items() if preset.api_key_env is None}
    assert local == {"ollama", "vllm", "llamacpp", "lmstudio"}
    # servers that re-parse earlier calls' arguments get invalid calls back as "{}"
    empty = {name for name, preset in PRESETS.items() if preset.compat.invalid_arguments == "empty"}
    assert empty == {*local, "openrouter"}
    with pytest.raises(TypeError):
        PRESETS["x"] = PRESETS["openai"]  # pyright: ignore[reportIndexIssue]


def test_parse_model_spec() -> None:
    assert parse_model_spec("openai/gpt-4o-mini") == (PRESETS["openai"], "gpt-4o-mini")
    assert parse_model_spec("openrouter/anthropic/claude-sonnet-4.5") == (
        PRESETS["openrouter"],
        "anthropic/claude-sonnet-4.5",
    )
    assert parse_model_spec("ollama/qwen3:8b") == (PRESETS["ollama"], "qwen3:8b")
    known = r"known providers: anthropic, deepseek, google, groq"
    with pytest.raises(ValueError, match=rf"unknown provider 'nope'.*{known}"):
        parse_model_spec("nope/model")
    for bad in ("gpt-4o", "/gpt-4o", "openai/", "openai/ "):
        with pytest.raises(ValueError, match="must be PROVIDER/MODEL"):
            parse_model_spec(bad)
    with pytest.raises(TypeError):
        parse_model_spec(None)  # pyright: ignore[reportArgumentType]


@pytest.mark.parametrize(
    "changes",
    [
        {"name": "a/b"},
        {"name": ""},
        {"base_url": "ftp://x"},
        {"api_key_env": ""},
    ],
)
def test_preset_fields_are_checked(changes: dict[str, Any]) -> None:
    fields: dict[str, Any] = {"name": "x", "base_url": "http://h", "api_key_env": None, **changes}
    with pytest.raises(ValueError, match="ProviderPreset"):
        ProviderPreset(**fields)
    with pytest.raises(TypeError):
        ProviderPreset(name="x", base_url="http://h", api_key_env=None, compat=None)  # pyright: ignore[reportArgumentType]


# --- properties -----------------------------------------------------------------------------------

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**60), max_value=2**60)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
json_values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=16,
)


FALSY: Final[list[Any]] = [None, {}, "", 0, False]


def payload_strategy(junk: Any) -> Any:
    """Chunk-shaped payloads whose fields are plausible values, or now and then ``junk``
    (any JSON value, or nothing: ``st.nothing()`` keeps every field plausible)."""

    def either(*options: Any) -> Any:
        plausible = st.sampled_from(options)
        return st.one_of(plausible, plausible, plausible, plausible, junk)

    def often(strategy: Any) -> Any:
        return st.one_of(strategy, strategy, strategy, strategy, junk)

    function = st.fixed_dictionaries(
        {},
        optional={
            "name": either("", "f", "g", " "),
            "arguments": either("", "{", "}", '{"a":1}', "{}", '"x"', " ", ",", '{"b":', "2}")
            | st.dictionaries(st.sampled_from("ab"), scalars, max_size=2),
        },
    )
    tool_entries = st.fixed_dictionaries(
        {},
        optional={
            "index": either(0, 0, 0, 1, 1, 2, None),
            "id": either("", "0", "call_a", "call_b", " ", "chatcmpl-1-call-1"),
            "type": st.just("function"),
            "function": often(function),
        },
    )
    deltas = st.fixed_dictionaries(
        {},
        optional={
            "content": either("", "a", None),
            "reasoning_content": either("", "r", None),
            "reasoning": either("", "s", None),
            "refusal": either("", None, "no"),
            "tool_calls": often(st.lists(tool_entries, max_size=3)),
            "function_call": either({"name": "f", "arguments": "{}"}, {"arguments": "{"}),
        },
    )
    counts = either(0, 5, 100, None)
    cached = either(0, 0, 1, None)
    usages = st.fixed_dictionaries(
        {},
        optional={
            "prompt_tokens": counts,
            "completion_tokens": counts,
            "prompt_tokens_details": often(
                st.fixed_dictionaries(
                    {}, optional={"cached_tokens": cached, "cache_write_tokens": cached}
                )
            ),
            "prompt_cache_hit_tokens": cached,
        },
    )
    finish_reasons = either(
        None,
        None,
        "stop",
        "length",
        "tool_calls",
        "content_filter",
        "function_call",
        "error",
        "weird",
        "",
    )
    choices = st.fixed_dictionaries(
        {},
        optional={
            "index": either(0, 0, 0, None),
            "delta": often(deltas),
            "finish_reason": finish_reasons,
        },
    )
    chunks = st.fixed_dictionaries(
        {},
        optional={
            "id": either("", "chatcmpl-1", " "),
            "model": either("", "m"),
            "choices": often(st.lists(choices, max_size=2)),
            "usage": either(None, None, None, {}) | usages,
            "error": st.one_of(*[st.sampled_from(FALSY)] * 8, junk),
        },
    )
    return often(chunks)


noisy_payloads = payload_strategy(json_values)
shaped_payloads = payload_strategy(st.nothing())
compats = st.sampled_from(
    [
        DEFAULT,
        OpenAIChatCompat(finish_reason_optional=True),
        OpenAIChatCompat(requires_done=True, reasoning_fields=("reasoning",)),
    ]
)
CODES: Final = {"PROVIDER_PROTOCOL_ERROR", "PROVIDER_ERROR_EVENT", "PROVIDER_STREAM_INTERRUPTED"}


def sequences(payloads: Any) -> Any:
    events = st.sampled_from(["message"] * 40 + ["error", "ping"])
    return st.lists(st.tuples(payloads, events), max_size=12)


RESERVED: Final = st.frozensets(st.sampled_from(["0", "call_a", "chatcmpl-1-call-0"]))


def assert_sticky(error: ProviderError, parser: OpenAIChatStreamParser) -> None:
    """A failure has one of the stream codes, and the parser stays failed."""
    assert error.code in CODES
    with pytest.raises(ProviderError) as again:
        parser.finish(done=True)
    assert again.value.code == error.code


def check_sequence(
    items: list[tuple[object, str]], done: bool, compat: OpenAIChatCompat, reserved: frozenset[str]
) -> None:
    """Feeding ``items`` then finishing raises nothing but a ``ProviderError`` (which then
    sticks), and whatever succeeds is a response the agent loop accepts, with unique tool-call
    IDs none of which is reserved."""
    parser = OpenAIChatStreamParser(REQUEST_ID, compat=compat, reserved_call_ids=reserved)
    streamed: list[ModelChunk] = []
    try:
        for payload, event in items:
            streamed.extend(parser.feed(payload, event=event))
        tail, response = parser.finish(done=done)
    except ProviderError as error:
        assert_sticky(error, parser)
        return
    streamed.extend(tail)
    loop_accepts(streamed, response)
    ids = [block.id for block in response.message.content if isinstance(block, ToolCall)]
    assert len(set(ids)) == len(ids)
    assert not set(ids) & reserved


@settings(max_examples=examples(300))
@given(items=sequences(noisy_payloads), done=st.booleans(), compat=compats, reserved=RESERVED)
def test_any_payloads_only_raise_provider_errors(
    items: list[tuple[object, str]], done: bool, compat: OpenAIChatCompat, reserved: frozenset[str]
) -> None:
    check_sequence(items, done, compat, reserved)


@settings(max_examples=examples(500))
@given(items=sequences(shaped_payloads), done=st.booleans(), compat=compats, reserved=RESERVED)
def test_well_shaped_payload_sequences(
    items: list[tuple[object, str]], done: bool, compat: OpenAIChatCompat, reserved: frozenset[str]
) -> None:
    check_sequence(items, done, compat, reserved)


@given(payload=json_values)
def test_arbitrary_json_payloads(payload: object) -> None:
    parser = OpenAIChatStreamParser(REQUEST_ID, compat=DEFAULT)
    try:
        parser.feed(payload)
        parser.finish(done=True)
    except ProviderError as error:
        assert_sticky(error, parser)


@given(
    arguments=st.dictionaries(st.text(max_size=5), json_values, max_size=6),
    cuts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=30),
    ascii_only=st.booleans(),
    kimi=st.booleans(),
)
def test_any_split_of_the_arguments_assembles_the_same_call(
    arguments: dict[str, Any], cuts: list[int], ascii_only: bool, kimi: bool
) -> None:
    text = json.dumps(arguments, ensure_ascii=ascii_only)
    points = sorted({cut % (len(text) + 1) for cut in cuts})
    fragments = [
        text[start:end] for start, end in zip([0, *points], [*points, len(text)], strict=True)
    ]
    entries = [[bodies.call(0, "call_x", "write", "")]]
    for fragment in fragments:  # Kimi re-sends the id and name with every fragment
        entries.append(
            [bodies.call(0, "call_x" if kimi else None, "write" if kimi else None, fragment)]
        )
    outcome = run(bodies.tool_stream(*entries))
    (call,) = outcome.calls
    assert call.id == "call_x"
    assert call.name == "write"
    assert call.arguments == arguments
    assert "".join(delta.arguments_delta for delta in outcome.deltas) == text


TEXT_DELTAS: Final = st.dictionaries(
    st.sampled_from(["content", "reasoning_content", "reasoning", "refusal", "role", "other"]),
    st.sampled_from(["", "a", "r", None, "assistant"]) | json_values,
    max_size=5,
)


def fed(parser: OpenAIChatStreamParser, items: list[tuple[object, str]]) -> bool:
    """Feed ``items``; whether the parser is still usable."""
    try:
        for payload, event in items:
            parser.feed(payload, event=event)
    except ProviderError:
        return False
    return True


def applied(apply: Callable[[list[ModelChunk]], None], parser: OpenAIChatStreamParser) -> object:
    """The chunks ``apply`` adds and the response ``finish`` then gives (or the errors)."""
    out: list[ModelChunk] = []
    try:
        apply(out)
    except ProviderError as error:
        return out, (error.code, error.message)
    try:
        return out, parser.finish(done=True)
    except ProviderError as error:
        return out, (error.code, error.message)


@settings(max_examples=examples(300))
@given(items=sequences(shaped_payloads), delta=TEXT_DELTAS, compat=compats)
def test_a_delta_without_tool_calls_goes_straight_to_the_text_fields(
    items: list[tuple[object, str]], delta: dict[str, Any], compat: OpenAIChatCompat
) -> None:
    # feed() sends a delta with no tool_calls and no function_call key to _text_fields
    # itself; the plain path, _delta, must do exactly the same with it
    fast = OpenAIChatStreamParser(REQUEST_ID, compat=compat)
    plain = OpenAIChatStreamParser(REQUEST_ID, compat=compat)
    if not (fed(fast, items) and fed(plain, items)):
        return
    direct = applied(lambda out: fast._text_fields(delta, out), fast)  # pyright: ignore[reportPrivateUsage]
    general = applied(lambda out: plain._delta(delta, out), plain)  # pyright: ignore[reportPrivateUsage]
    assert direct == general


def through_delta(payload: object) -> object:
    """``payload`` with ``"function_call": null`` added to each choice's delta that has
    neither ``tool_calls`` nor ``function_call``: ``feed`` then hands it to ``_delta`` (the
    plain path) instead of its own written-out text fields, and a null ``function_call``
    changes nothing else."""
    value: Any = payload
    if type_of(value) is not dict or type(value.get("choices")) is not list:
        return payload
    rewritten: list[Any] = []
    choice: Any
    for choice in value["choices"]:
        if type_of(choice) is dict:
            delta: Any = choice.get("delta")
            if (
                type_of(delta) is dict
                and delta
                and not {"tool_calls", "function_call"} & set(delta)
            ):
                choice = {**choice, "delta": {**delta, "function_call": None}}
        rewritten.append(choice)
    return {**value, "choices": rewritten}


def joined(first: list[tuple[object, str]], second: list[tuple[object, str]]) -> Any:
    return [*first, *second]


def text_payload(delta: dict[str, Any], finish: object) -> dict[str, Any]:
    return {"id": "c", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


TEXT_PAYLOADS: Final = st.lists(
    st.tuples(
        st.builds(text_payload, TEXT_DELTAS, st.sampled_from([None, None, "stop", 1])),
        st.sampled_from(["message"] * 8 + ["error"]),
    ),
    max_size=12,
)


@settings(max_examples=examples(300))
@given(
    items=sequences(shaped_payloads)
    | TEXT_PAYLOADS
    | st.builds(joined, TEXT_PAYLOADS, st.deferred(lambda: INTERLEAVED_CALLS)),
    compat=compats,
)
def test_the_text_fields_written_out_in_feed_match_the_plain_path(
    items: list[tuple[object, str]], compat: OpenAIChatCompat
) -> None:
    fast = outcome_of(OpenAIChatStreamParser(REQUEST_ID, compat=compat), items)
    plain_items = [(through_delta(payload), event) for payload, event in items]
    plain = outcome_of(OpenAIChatStreamParser(REQUEST_ID, compat=compat), plain_items)
    assert fast == plain


class EveryPendingCallParser(OpenAIChatStreamParser):
    """The plain path of ``_complete_ready``: every pending call is looked at when a new call
    starts, not only the ones a delta reached since the last look."""

    def _complete_ready(self, out: list[ModelChunk]) -> None:
        self._touched = list(self._pending.values())
        super()._complete_ready(out)


def outcome_of(parser: OpenAIChatStreamParser, items: list[tuple[object, str]]) -> object:
    """Every chunk ``items`` give, then the response (or the error that ended them)."""
    out: list[ModelChunk] = []
    try:
        for payload, event in items:
            out.extend(parser.feed(payload, event=event))
        tail, response = parser.finish(done=True)
    except ProviderError as error:
        return out, (error.code, error.message)
    return [*out, *tail], response


def call_payload(index: int, named: bool, fragment: str) -> dict[str, Any]:
    """A chunk with one tool-call delta: call ``index``'s ID and name (when ``named``) and an
    argument fragment."""
    entry: dict[str, Any] = {"index": index, "function": {"arguments": fragment}}
    if named:
        entry["id"] = f"call_{index}"
        entry["function"]["name"] = "f"
    return {"choices": [{"index": 0, "delta": {"tool_calls": [entry]}}]}


INTERLEAVED_CALLS: Final = st.lists(
    st.builds(
        call_payload,
        st.integers(0, 4),
        st.booleans(),
        st.sampled_from(["", "{", "}", "{}", '"a":1', ",", '{"b":2}', " "]),
    ).map(lambda payload: (payload, "message")),
    max_size=16,
)


@settings(max_examples=examples(500))
@given(items=sequences(shaped_payloads) | INTERLEAVED_CALLS, compat=compats)
def test_reading_only_touched_calls_completes_what_reading_all_would(
    items: list[tuple[object, str]], compat: OpenAIChatCompat
) -> None:
    assert outcome_of(OpenAIChatStreamParser(REQUEST_ID, compat=compat), items) == outcome_of(
        EveryPendingCallParser(REQUEST_ID, compat=compat), items
    )
