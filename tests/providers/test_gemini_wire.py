"""``tether.providers.gemini_request``, ``gemini_schema`` and ``gemini_wire``: the Gemini
request body (schema conversion, thought signatures sent back) and the stream normalization
(``spec/providers-responses-gemini.md`` §3-§5).

The real recorded Gemini streams are replayed from the shared folder's ``recorded/`` (never
copied here; a missing folder is a skip, and a failure under CI), whole and in small pieces,
against expectations derived from the rules and against the official SDK (``google-genai``
turning each payload into a ``GenerateContentResponse``, as its own stream does). Every
successful parse is also checked with the agent loop's own boundary checks. Hypothesis checks
that arbitrary payloads only ever raise ``ProviderError`` and that text split into any parts
comes back whole.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gemini_bodies as g
from gemini_sdk import assert_same_as_sdk, described, sdk_described
from support import examples, missing_recordings, recorded_streams
from tether import ToolRegistry, tool
from tether.jsonvalue import JsonObject, thaw_json
from tether.loop import RunLimits
from tether.loop.checks import check_agreement, snapshot_chunk, snapshot_response
from tether.protocol import (
    AssistantMessage,
    ModelChunk,
    ModelRequest,
    ModelResponse,
    ModelUsage,
    TextBlock,
    ThinkingBlock,
    ToolCall,
    ToolCallDeltaChunk,
    ToolResultMessage,
    ToolSpec,
    UserMessage,
)
from tether.providers._sse import SSEDecoder
from tether.providers.errors import ProviderError
from tether.providers.gemini_request import SKIP_SIGNATURE, build_gemini_request
from tether.providers.gemini_schema import gemini_schema
from tether.providers.gemini_wire import GeminiStreamParser

REQUEST_ID: Final = "request-001"
LIMITS: Final = RunLimits.for_real_models()


def payloads(body: bytes | str, chunk_size: int | None = None) -> list[Any]:
    """The decoded JSON payloads of a body fed to the project's SSE decoder in pieces."""
    raw = body.encode() if isinstance(body, str) else body
    decoder = SSEDecoder()
    size = chunk_size or max(len(raw), 1)
    events = [e for at in range(0, len(raw), size) for e in decoder.feed(raw[at : at + size])]
    return [json.loads(event.data) for event in [*events, *decoder.close()]]


@dataclass
class Outcome:
    chunks: list[ModelChunk]
    response: ModelResponse

    @property
    def content(self) -> tuple[Any, ...]:
        return self.response.message.content

    @property
    def calls(self) -> list[ToolCall]:
        return [block for block in self.content if isinstance(block, ToolCall)]


def feed(
    items: Iterable[object],
    *,
    reserved: frozenset[str] = frozenset(),
    seen: list[Any] | None = None,
) -> Outcome:
    """What the HTTP glue does with each payload, then the agent loop's boundary checks."""
    parser = GeminiStreamParser(REQUEST_ID, reserved_call_ids=reserved)
    chunks: list[ModelChunk] = [] if seen is None else seen
    for item in items:
        chunks.extend(parser.feed(item))
    tail, response = parser.finish(done=False)
    chunks.extend(tail)
    for chunk in chunks:
        assert snapshot_chunk(chunk, REQUEST_ID, LIMITS) is chunk
    streamed = {id(chunk.tool_call) for chunk in chunks if chunk.type == "toolCall"}
    assert snapshot_response(response, REQUEST_ID, streamed, LIMITS) is response
    check_agreement([chunk for chunk in chunks if chunk.type != "toolCallDelta"], response.message)
    return Outcome(chunks, response)


def fails(items: Iterable[object], code: str, match: str = "") -> ProviderError:
    with pytest.raises(ProviderError) as caught:
        feed(items)
    assert caught.value.code == code, caught.value.message
    assert re.search(match, caught.value.message), caught.value.message
    return caught.value


# --- the stream, from the documented shapes -------------------------------------------------------


def test_text_in_chunks_with_usage_snapshots() -> None:
    outcome = feed(
        [
            g.chunk(g.text("The "), usage=g.usage(15)),
            g.chunk(g.text("answer."), finish="STOP", usage=g.usage(13, 4)),
        ]
    )
    assert outcome.content == (TextBlock(text="The answer."),)
    assert [chunk.type for chunk in outcome.chunks] == ["textDelta", "textDelta"]
    response = outcome.response
    assert (response.stop_reason, response.id, response.model) == (
        "stop",
        g.RESPONSE_ID,
        g.MODEL_VERSION,
    )
    assert response.usage == ModelUsage(input_tokens=13, output_tokens=4)
    assert response.message.id == f"message-{g.RESPONSE_ID}"


def test_usage_keeps_a_field_a_later_chunk_dropped_and_counts_cache_and_thoughts() -> None:
    first = g.usage(100, 2, cachedContentTokenCount=60, thoughtsTokenCount=30)
    outcome = feed(
        [
            g.chunk(g.text("a"), usage=first),
            g.chunk(g.text("b"), finish="STOP", usage=g.usage(101, 5, toolUsePromptTokenCount=4)),
        ]
    )
    assert outcome.response.usage == ModelUsage(
        input_tokens=101 + 4 - 60, output_tokens=5 + 30, cache_read_tokens=60
    )


def test_more_cached_than_prompt_tokens_is_a_protocol_error() -> None:
    bad = g.usage(5, 1, cachedContentTokenCount=6)
    fails([g.chunk(g.text("a"), finish="STOP", usage=bad)], "PROVIDER_PROTOCOL_ERROR", "cached")


def test_thought_parts_then_signed_answer_text() -> None:
    outcome = feed(
        [
            g.chunk(g.text("**Plan**\n", thought=True)),
            g.chunk(g.text("more.", thought=True)),
            g.chunk(g.text("Answer", thoughtSignature="SIG-1")),
            g.chunk(g.text(" here."), finish="STOP"),
        ]
    )
    assert outcome.content == (
        ThinkingBlock(text="**Plan**\nmore."),
        TextBlock(text="Answer here.", signature="SIG-1"),
    )
    assert [chunk.type for chunk in outcome.chunks] == [
        "thinkingDelta",
        "thinkingDelta",
        "textDelta",
        "textDelta",
    ]


def test_a_signed_part_starts_a_new_block_and_an_empty_signed_part_is_kept() -> None:
    outcome = feed(
        [
            g.chunk(g.text("one", thoughtSignature="A"), g.text(" two")),
            g.chunk(g.text("three", thoughtSignature="B")),
            g.chunk(g.text("", thoughtSignature="C"), finish="STOP"),
        ]
    )
    assert outcome.content == (
        TextBlock(text="one two", signature="A"),
        TextBlock(text="three", signature="B"),
        TextBlock(text="", signature="C"),
    )


def test_an_empty_signed_part_after_a_call_is_kept_and_the_loop_accepts_it() -> None:
    outcome = feed(
        [
            g.chunk(g.call("ls", thoughtSignature="S1")),
            g.chunk(g.text("", thoughtSignature="S2")),
            g.chunk(finish="STOP"),
        ]
    )
    assert outcome.response.stop_reason == "toolCall"
    assert outcome.content[1] == TextBlock(text="", signature="S2")
    assert outcome.content[0].signature == "S1"


def test_empty_unsigned_text_and_unknown_parts_are_dropped() -> None:
    outcome = feed(
        [
            g.chunk({"inlineData": {"mimeType": "image/png", "data": "AA=="}}, g.text("")),
            g.chunk({"executableCode": {"code": "1"}}, g.text("ok"), {"future": 1}),
            g.chunk(g.text(""), finish="STOP", groundingMetadata={"x": 1}),
        ]
    )
    assert outcome.content == (TextBlock(text="ok"),)


def test_a_whole_function_call_is_a_delta_and_a_call_with_its_signature() -> None:
    outcome = feed(
        [g.chunk(g.call("add", {"a": 2, "b": 3}, thoughtSignature="SIG")), g.chunk(finish="STOP")]
    )
    (call,) = outcome.calls
    assert call == ToolCall(
        id=f"{g.RESPONSE_ID}-call-0",
        name="add",
        arguments=JsonObject({"a": 2, "b": 3}),
        signature="SIG",
    )
    delta, complete = outcome.chunks
    assert isinstance(delta, ToolCallDeltaChunk)
    assert (delta.index, delta.id, delta.name) == (0, call.id, "add")
    assert json.loads(delta.arguments_delta) == {"a": 2, "b": 3}
    assert complete.type == "toolCall"
    assert complete.tool_call is call
    assert outcome.response.stop_reason == "toolCall"  # Gemini said STOP


def test_parallel_calls_in_one_chunk_keep_the_signature_on_the_first_only() -> None:
    outcome = feed(
        [
            g.chunk(
                g.call("add", {"a": 1}, thoughtSignature="FIRST"),
                g.call("mul", {"a": 2}),
                finish="STOP",
            )
        ]
    )
    assert [(c.id, c.name, c.signature) for c in outcome.calls] == [
        (f"{g.RESPONSE_ID}-call-0", "add", "FIRST"),
        (f"{g.RESPONSE_ID}-call-1", "mul", None),
    ]


def test_vendor_ids_are_kept_unless_reserved_repeated_or_empty() -> None:
    outcome = feed(
        [
            g.chunk(g.call("a", id="8hd01vsf")),
            g.chunk(g.call("b", id="8hd01vsf")),
            g.chunk(g.call("c", id="")),
            g.chunk(g.call("d", id="old")),
            g.chunk(finish="STOP"),
        ],
        reserved=frozenset({"old", f"{g.RESPONSE_ID}-call-3"}),
    )
    assert [call.id for call in outcome.calls] == [
        "8hd01vsf",
        f"{g.RESPONSE_ID}-call-1",
        f"{g.RESPONSE_ID}-call-2",
        f"{g.RESPONSE_ID}-call-3-2",
    ]


def test_synthesized_ids_are_stable_for_the_same_response() -> None:
    items = [g.chunk(g.call("a"), g.call("a"), finish="STOP")]
    assert [c.id for c in feed(items).calls] == [c.id for c in feed(items).calls]


def test_args_that_are_not_plain_json_make_an_invalid_call() -> None:
    outcome = feed([g.chunk(g.call("f", {"x": float("nan")}, thoughtSignature="S"), finish="STOP")])
    (call,) = outcome.calls
    assert call.arguments == JsonObject()
    assert call.raw_arguments == '{"x":NaN}'
    assert call.signature == "S"


@pytest.mark.parametrize(
    ("reason", "stop"),
    [
        ("STOP", "stop"),
        ("MAX_TOKENS", "length"),
        ("SAFETY", "refusal"),
        ("RECITATION", "refusal"),
        ("PROHIBITED_CONTENT", "refusal"),
        ("BLOCKLIST", "refusal"),
        ("SPII", "refusal"),
        ("MODEL_ARMOR", "refusal"),
        ("IMAGE_SAFETY", "refusal"),
    ],
)
def test_finish_reasons(reason: str, stop: str) -> None:
    outcome = feed([g.chunk(g.text("x")), g.chunk(finish=reason)])
    assert outcome.response.stop_reason == stop


def test_max_tokens_with_no_parts_at_all_is_an_empty_length_turn() -> None:
    payload = {"candidates": [{"content": {"role": "model"}, "finishReason": "MAX_TOKENS"}]}
    outcome = feed([payload])
    assert (outcome.content, outcome.response.stop_reason) == ((), "length")
    assert outcome.response.id == f"response-{REQUEST_ID}"


def test_a_refusal_with_calls_stays_a_refusal() -> None:
    outcome = feed([g.chunk(g.call("f")), g.chunk(finish="SAFETY")])
    assert outcome.response.stop_reason == "refusal"


@pytest.mark.parametrize("reason", ["MALFORMED_FUNCTION_CALL", "OTHER", "UNEXPECTED_TOOL_CALL"])
def test_failure_reasons_are_error_events_naming_the_reason(reason: str) -> None:
    payload = g.chunk(finish=reason)
    payload["candidates"][0]["finishMessage"] = "Malformed function call: print("
    error = fails([payload], "PROVIDER_ERROR_EVENT", reason)
    assert error.provider_code == reason
    if reason == "MALFORMED_FUNCTION_CALL":
        assert "print(" in error.message


def test_an_unknown_finish_reason_is_a_protocol_error() -> None:
    fails([g.chunk(finish="NEW_REASON")], "PROVIDER_PROTOCOL_ERROR", "NEW_REASON")


def test_a_blocked_prompt_is_a_refusal() -> None:
    outcome = feed([{"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": g.usage(7)}])
    assert (outcome.content, outcome.response.stop_reason) == ((), "refusal")
    assert outcome.response.usage == ModelUsage(input_tokens=7, output_tokens=0)


def test_chunks_without_candidates_are_fine() -> None:
    outcome = feed(
        [{"usageMetadata": g.usage(3)}, g.chunk(g.text("x"), finish="STOP"), {"candidates": []}]
    )
    assert outcome.content == (TextBlock(text="x"),)


def test_only_candidate_zero_is_read() -> None:
    other = {"content": {"parts": [g.text("other")]}, "index": 1, "finishReason": "SAFETY"}
    payload = g.chunk(g.text("mine"), finish="STOP")
    payload["candidates"].insert(0, other)
    assert feed([payload]).content == (TextBlock(text="mine"),)


def test_the_end_without_a_finish_reason_is_interrupted() -> None:
    fails([g.chunk(g.text("cut"))], "PROVIDER_STREAM_INTERRUPTED", "finishReason")
    fails([], "PROVIDER_STREAM_INTERRUPTED")


@pytest.mark.parametrize(
    ("error", "code", "provider_code"),
    [
        ({"code": 503, "message": "busy", "status": "UNAVAILABLE"}, "PROVIDER_OVERLOADED", None),
        ({"code": 500, "message": "bad", "status": "INTERNAL"}, "PROVIDER_ERROR_EVENT", None),
        ("plain text", "PROVIDER_ERROR_EVENT", None),
    ],
)
def test_an_error_payload_in_the_stream(error: object, code: str, provider_code: None) -> None:
    raised = fails([g.chunk(g.text("x")), {"error": error}], code)
    if isinstance(error, dict):
        assert raised.provider_code == error["status"]
        assert error["message"] in raised.message


MALFORMED: Final[list[tuple[object, str]]] = [
    ([], "A stream chunk must be a JSON object"),
    ({"candidates": {}}, "candidates must be an array"),
    ({"candidates": [1]}, "A candidate must be an object"),
    ({"candidates": [{"index": "0"}]}, "index must be an integer"),
    ({"candidates": [{"content": []}]}, r"content must be an object"),
    ({"candidates": [{"content": {"parts": {}}}]}, r"parts must be an array"),
    ({"candidates": [{"content": {"parts": ["x"]}}]}, "A content part must be an object"),
    (g.chunk({"text": 1}), "text must be a string"),
    (g.chunk({"text": "x", "thought": "yes"}), "thought must be a boolean"),
    (g.chunk({"text": "x", "thoughtSignature": 5}), "thoughtSignature must be a string"),
    (g.chunk({"functionCall": []}), "functionCall must be an object"),
    (g.chunk({"functionCall": {"name": ""}}), "name must be a non-empty string"),
    (g.chunk({"functionCall": {"name": "f", "args": "{}"}}), "args must be an object"),
    (g.chunk({"functionCall": {"name": "f", "id": 3}}), "id must be a string"),
    ({"candidates": [{"finishReason": 1}]}, "finishReason must be a string"),
    ({"candidates": [{"finishMessage": 1}]}, "finishMessage must be a string"),
    ({"usageMetadata": []}, "usageMetadata must be an object"),
    ({"usageMetadata": {"promptTokenCount": -1}}, "non-negative safe integer"),
    ({"usageMetadata": {"promptTokenCount": True}}, "non-negative safe integer"),
    ({"responseId": 1}, "responseId must be a string"),
    ({"modelVersion": 1}, "modelVersion must be a string"),
    ({"promptFeedback": 1}, "promptFeedback must be an object"),
    ({"promptFeedback": {"blockReason": 1}}, "blockReason must be a string"),
]


@pytest.mark.parametrize(("payload", "match"), MALFORMED)
def test_malformed_payloads(payload: object, match: str) -> None:
    fails([payload], "PROVIDER_PROTOCOL_ERROR", match)


def test_errors_are_sticky_and_misuse_is_a_runtime_error() -> None:
    parser = GeminiStreamParser(REQUEST_ID)
    with pytest.raises(ProviderError):
        parser.feed([])
    with pytest.raises(ProviderError, match="must be a JSON object"):
        parser.feed(g.chunk(g.text("fine")))
    with pytest.raises(ProviderError):
        parser.finish(done=False)
    done = GeminiStreamParser(REQUEST_ID)
    done.feed(g.chunk(g.text("x"), finish="STOP"))
    done.finish(done=False)
    with pytest.raises(RuntimeError):
        done.feed(g.chunk())
    with pytest.raises(RuntimeError):
        done.finish(done=False)
    with pytest.raises(TypeError):
        GeminiStreamParser("")
    with pytest.raises(TypeError):
        GeminiStreamParser(REQUEST_ID, reserved_call_ids=frozenset({1}))  # pyright: ignore[reportArgumentType]


# --- property tests -------------------------------------------------------------------------------

JSON: Final = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=20,
)
KEYS: Final = st.sampled_from(
    [
        "candidates",
        "content",
        "parts",
        "text",
        "thought",
        "thoughtSignature",
        "functionCall",
        "name",
        "args",
        "id",
        "finishReason",
        "usageMetadata",
        "promptTokenCount",
        "error",
        "index",
        "responseId",
        "promptFeedback",
        "blockReason",
        "STOP",
        "role",
    ]
)
SHAPED: Final = st.recursive(
    st.none() | st.booleans() | st.integers(-2, 3) | st.sampled_from(["", "x", "STOP", "f"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=4),
    max_leaves=30,
)


@settings(max_examples=examples(300))
@given(st.lists(SHAPED | JSON, max_size=5))
def test_any_payloads_only_ever_raise_provider_errors(items: list[object]) -> None:
    with contextlib.suppress(ProviderError):
        feed(items)


PARTS: Final = st.lists(
    st.tuples(st.text(max_size=6), st.booleans(), st.sampled_from([None, "", "S"])),
    max_size=12,
)


@settings(max_examples=examples(200))
@given(PARTS, st.integers(1, 4))
def test_text_split_into_any_parts_comes_back_whole(
    parts: list[tuple[str, bool, str | None]], per_chunk: int
) -> None:
    built = [
        {"text": text, "thought": thought, **({} if sig is None else {"thoughtSignature": sig})}
        for text, thought, sig in parts
    ]
    chunks = [g.chunk(*built[at : at + per_chunk]) for at in range(0, len(built), per_chunk)]
    outcome = feed([*chunks, g.chunk(finish="STOP")])
    answer = "".join(b.text for b in outcome.content if isinstance(b, TextBlock))
    thinking = "".join(b.text for b in outcome.content if isinstance(b, ThinkingBlock))
    assert answer == "".join(text for text, thought, _ in parts if not thought)
    assert thinking == "".join(text for text, thought, _ in parts if thought)
    signatures = [b.signature for b in outcome.content if b.signature]
    assert signatures == [sig for _, _, sig in parts if sig]


# --- recorded vendor streams ----------------------------------------------------------------------


def _recorded() -> list[Path]:
    return recorded_streams("gemini")


def expected_by_the_rules(items: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """What §4 says a stream means, from the payloads by the rules alone (an independent
    reading): text/thought runs, calls with their signature, the last finish reason, the last
    usage snapshot."""
    blocks: list[list[Any]] = []
    usage: dict[str, int] = {}
    finish = None
    calls = 0
    response_id = next(item["responseId"] for item in items if item.get("responseId"))
    for item in items:
        usage.update(item.get("usageMetadata", {}))
        for candidate in item.get("candidates", []):
            finish = candidate.get("finishReason") or finish
            for part in candidate.get("content", {}).get("parts", []):
                signature = part.get("thoughtSignature")
                if "functionCall" in part:
                    call = part["functionCall"]
                    call_id = call.get("id") or f"{response_id}-call-{calls}"
                    calls += 1
                    blocks.append(["tool", (call_id, call["name"], call["args"]), signature])
                    continue
                kind = "thinking" if part.get("thought") and part["text"] else "text"
                if signature is None and not part["text"]:
                    continue
                if signature is None and blocks and blocks[-1][0] == kind:
                    blocks[-1][1] += part["text"]
                else:
                    blocks.append([kind, part["text"], signature])
    stop = "toolCall" if calls else {"STOP": "stop", "MAX_TOKENS": "length"}[str(finish)]
    prompt = usage.get("promptTokenCount", 0)
    cached = usage.get("cachedContentTokenCount", 0)
    output = usage.get("candidatesTokenCount", 0) + usage.get("thoughtsTokenCount", 0)
    return {
        "blocks": [tuple(block) for block in blocks],
        "stop": stop,
        "usage": ModelUsage(
            input_tokens=prompt - cached, output_tokens=output, cache_read_tokens=cached
        ),
        "id": response_id,
        "model": items[-1]["modelVersion"],
    }


def recorded_body(path: Path) -> str:
    recording = json.loads(path.read_text(encoding="utf-8"))
    assert recording["status"] == 200
    assert recording["content_type"].startswith("text/event-stream")
    return recording["body"]


@pytest.mark.parametrize(
    "path", _recorded() or [None], ids=lambda path: getattr(path, "stem", "none")
)
@pytest.mark.parametrize("chunk_size", [None, 1, 7, 64])
def test_recorded_vendor_streams(path: Path | None, chunk_size: int | None) -> None:
    if path is None:
        missing_recordings()
    items = payloads(recorded_body(path), chunk_size)
    expected = expected_by_the_rules(items)
    outcome = feed(items)
    assert described(outcome.content) == expected["blocks"]
    assert outcome.response.stop_reason == expected["stop"]
    assert outcome.response.usage == expected["usage"]
    assert outcome.response.id == expected["id"]
    assert outcome.response.model == expected["model"]


def test_the_recordings_exercise_what_they_say() -> None:
    found = {path.stem: path for path in _recorded()}
    if not found:
        missing_recordings()
    thought = feed(payloads(recorded_body(found["gemini-thought-parts"])))
    assert [type(block) for block in thought.content] == [ThinkingBlock, TextBlock]
    signature = thought.content[1].signature
    assert signature is not None
    assert len(signature) > 6000
    split = feed(payloads(recorded_body(found["gemini-parallel-function-calls-split"])))
    assert [call.id for call in split.calls] == ["8hd01vsf", "k0srpqrc"]
    assert split.calls[0].signature
    assert split.calls[1].signature is None
    text = feed(payloads(recorded_body(found["gemini-text"])))
    assert text.response.usage.input_tokens == 13  # the last snapshot, not 15, never a sum


# --- the official SDK as an oracle ----------------------------------------------------------------


def sdk_responses(body: str) -> list[Any]:
    """Each payload as ``google-genai`` turns it into a ``GenerateContentResponse`` in its own
    stream (``models.Models.generate_content_stream``: the mldev mapping, then
    ``_from_response``)."""
    models: Any = importlib.import_module("google.genai.models")
    types: Any = importlib.import_module("google.genai.types")
    return [
        types.GenerateContentResponse._from_response(
            response=models._GenerateContentResponse_from_mldev(item), kwargs={}
        )
        for item in payloads(body)
    ]


@pytest.mark.parametrize(
    "path", _recorded() or [None], ids=lambda path: getattr(path, "stem", "none")
)
def test_same_result_as_the_official_sdk(path: Path | None) -> None:
    pytest.importorskip("google.genai")
    if path is None:
        missing_recordings()
    body = recorded_body(path)
    sdk = sdk_described(sdk_responses(body))
    outcome = feed(payloads(body))
    assert_same_as_sdk(outcome.response, sdk)


# --- the request ----------------------------------------------------------------------------------

SCHEMA: Final = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}


def sample_request(**changes: Any) -> ModelRequest:
    fields: dict[str, Any] = {
        "id": REQUEST_ID,
        "system": "Be brief.",
        "messages": (
            UserMessage(content="Read a.py and list."),
            AssistantMessage(
                content=(
                    ThinkingBlock(text="I should read."),
                    ThinkingBlock(text="", signature="opaque", redacted=True),
                    TextBlock(text="Reading.", signature="TEXT-SIG"),
                    TextBlock(text=""),
                    ToolCall(
                        id="c-a",
                        name="read",
                        arguments=JsonObject({"path": "a.py"}),
                        signature="S+/=",
                    ),
                    ToolCall(id="c-b", name="ls", arguments=JsonObject({})),
                    TextBlock(text="", signature="TRAILING"),
                )
            ),
            ToolResultMessage(tool_call_id="c-a", tool_name="read", content="print(1)"),
            ToolResultMessage(tool_call_id="c-b", tool_name="ls", content="boom", is_error=True),
            UserMessage(content="And then?"),
        ),
        "tools": (ToolSpec(name="read", description="Read a file", parameters=JsonObject(SCHEMA)),),
    }
    fields.update(changes)
    return ModelRequest(**fields)


def test_the_request_body() -> None:
    assert build_gemini_request(sample_request(), max_output_tokens=100) == {
        "systemInstruction": {"parts": [{"text": "Be brief."}]},
        "contents": [
            {"role": "user", "parts": [{"text": "Read a.py and list."}]},
            {
                "role": "model",
                "parts": [
                    {"text": "I should read.", "thought": True},
                    {"text": "Reading.", "thoughtSignature": "TEXT-SIG"},
                    {
                        "functionCall": {"name": "read", "args": {"path": "a.py"}, "id": "c-a"},
                        "thoughtSignature": "S+/=",
                    },
                    {"functionCall": {"name": "ls", "args": {}, "id": "c-b"}},
                    {"text": "", "thoughtSignature": "TRAILING"},
                ],
            },
            {
                "role": "user",
                "parts": [
                    {
                        "functionResponse": {
                            "name": "read",
                            "id": "c-a",
                            "response": {"output": "print(1)"},
                        }
                    },
                    {
                        "functionResponse": {
                            "name": "ls",
                            "id": "c-b",
                            "response": {"error": "boom"},
                        }
                    },
                    {"text": "And then?"},
                ],
            },
        ],
        "tools": [
            {
                "functionDeclarations": [
                    {
                        "name": "read",
                        "description": "Read a file",
                        "parameters": {
                            "type": "OBJECT",
                            "properties": {"path": {"type": "STRING"}},
                            "required": ["path"],
                        },
                    }
                ]
            }
        ],
        "generationConfig": {"maxOutputTokens": 100},
    }


def test_a_minimal_request_sends_no_config_and_no_tools() -> None:
    request = ModelRequest(id=REQUEST_ID, messages=(UserMessage(content="hi"),))
    assert build_gemini_request(request) == {
        "contents": [{"role": "user", "parts": [{"text": "hi"}]}]
    }


def test_results_go_back_in_the_order_of_their_calls() -> None:
    calls = tuple(ToolCall(id=f"c{n}", name=f"f{n}", arguments=JsonObject()) for n in range(3))
    results = [
        ToolResultMessage(tool_call_id=f"c{n}", tool_name=f"f{n}", content=str(n))
        for n in (2, 0, 1)
    ]
    request = ModelRequest(
        id=REQUEST_ID,
        messages=(AssistantMessage(content=calls), *results, UserMessage(content="next")),
    )
    body: Any = build_gemini_request(request)
    parts = body["contents"][1]["parts"]
    assert [part.get("functionResponse", {}).get("id") for part in parts] == [
        "c0",
        "c1",
        "c2",
        None,
    ]
    assert parts[-1] == {"text": "next"}


def test_unsigned_calls_get_the_documented_placeholder_on_the_first_only() -> None:
    message = AssistantMessage(
        content=(
            ToolCall(id="x", name="f", arguments=JsonObject({})),
            ToolCall(id="y", name="g", arguments=JsonObject({})),
        )
    )
    body: Any = build_gemini_request(ModelRequest(id=REQUEST_ID, messages=(message,)))
    first, second = body["contents"][0]["parts"]
    assert first["thoughtSignature"] == SKIP_SIGNATURE
    assert "thoughtSignature" not in second


def test_an_invalid_call_is_sent_back_with_empty_args() -> None:
    call = ToolCall(
        id="x", name="f", arguments=JsonObject({}), raw_arguments="{broken", signature="S"
    )
    body: Any = build_gemini_request(
        ModelRequest(id=REQUEST_ID, messages=(AssistantMessage(content=(call,)),))
    )
    assert body["contents"][0]["parts"] == [
        {"functionCall": {"name": "f", "args": {}, "id": "x"}, "thoughtSignature": "S"}
    ]


@pytest.mark.parametrize(
    ("options", "config"),
    [
        ({"temperature": 0.5}, {"temperature": 0.5}),
        (
            {"thinking_budget": 1024},
            {"thinkingConfig": {"includeThoughts": True, "thinkingBudget": 1024}},
        ),
        (
            {"thinking_budget": -1},
            {"thinkingConfig": {"includeThoughts": True, "thinkingBudget": -1}},
        ),
        ({"thinking_budget": 0}, {"thinkingConfig": {"thinkingBudget": 0}}),
        (
            {"thinking_level": "low"},
            {"thinkingConfig": {"includeThoughts": True, "thinkingLevel": "low"}},
        ),
    ],
)
def test_generation_config(options: dict[str, Any], config: dict[str, Any]) -> None:
    request = ModelRequest(id=REQUEST_ID, messages=(UserMessage(content="hi"),))
    assert build_gemini_request(request, **options)["generationConfig"] == config


@pytest.mark.parametrize(
    "options",
    [
        {"max_output_tokens": 0},
        {"max_output_tokens": True},
        {"temperature": 2.5},
        {"temperature": float("nan")},
        {"thinking_budget": -2},
        {"thinking_budget": 1.5},
        {"thinking_level": "max"},
        {"thinking_budget": 10, "thinking_level": "low"},
    ],
)
def test_bad_options_are_refused(options: dict[str, Any]) -> None:
    request = ModelRequest(id=REQUEST_ID, messages=(UserMessage(content="hi"),))
    with pytest.raises(ValueError, match=r"must be|not both"):
        build_gemini_request(request, **options)
    with pytest.raises(TypeError):
        build_gemini_request("not a request")  # pyright: ignore[reportArgumentType]


# --- tool schemas ---------------------------------------------------------------------------------


def test_a_pydantic_style_schema_is_converted() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "additionalProperties": False,
        "$defs": {"Mode": {"enum": ["fast", "slow"], "type": "string"}},
        "properties": {
            "mode": {"$ref": "#/$defs/Mode", "description": "How."},
            "limit": {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}]},
            "tags": {"type": ["array", "null"], "items": {"type": "string"}, "uniqueItems": True},
            "kind": {"const": "x"},
            "either": {"oneOf": [{"type": "string"}, {"type": "number"}]},
            "both": {"allOf": [{"type": "boolean"}], "description": "A flag."},
            "ratio": {"type": "number", "exclusiveMinimum": 0, "examples": [0.5]},
            "many": {"type": ["string", "integer"]},
        },
        "required": ["mode"],
    }
    assert gemini_schema(schema) == {
        "type": "OBJECT",
        "properties": {
            "mode": {"enum": ["fast", "slow"], "type": "STRING", "description": "How."},
            "limit": {"type": "INTEGER", "minimum": 1, "nullable": True},
            "tags": {"type": "ARRAY", "items": {"type": "STRING"}, "nullable": True},
            "kind": {"enum": ["x"], "type": "STRING"},
            "either": {"anyOf": [{"type": "STRING"}, {"type": "NUMBER"}]},
            "both": {"type": "BOOLEAN", "description": "A flag."},
            "ratio": {"type": "NUMBER"},
            "many": {"anyOf": [{"type": "STRING"}, {"type": "INTEGER"}]},
        },
        "required": ["mode"],
    }


def test_a_non_string_enum_keeps_its_type_and_names_its_values() -> None:
    schema = {
        "properties": {
            "level": {"enum": [1, 2], "default": 1, "description": "How deep."},
            "flag": {"const": True},
            "mixed": {"enum": [1, 2.5]},
            "odd": {"enum": ["a", 1]},
        }
    }
    assert gemini_schema(schema)["properties"] == {
        "level": {"default": 1, "description": "How deep. One of: 1, 2.", "type": "INTEGER"},
        "flag": {"type": "BOOLEAN", "description": "Must be true."},
        "mixed": {"type": "NUMBER", "description": "One of: 1, 2.5."},
        "odd": {"description": 'One of: "a", 1.'},
    }


@dataclass
class Point:
    x: int
    y: int | None = None


@tool
async def probe(
    a: int | None, b: tuple[str, ...], c: Literal["x", "y"], d: Point, h: Literal[1, 2] = 1
) -> str:
    """Probe."""
    return ""


def test_a_tool_schema_tether_derives_converts() -> None:
    (spec,) = ToolRegistry([probe]).specs()
    assert gemini_schema(thaw_json(spec.parameters)) == {
        "type": "OBJECT",
        "properties": {
            "a": {"type": "INTEGER", "nullable": True},
            "b": {"type": "ARRAY", "items": {"type": "STRING"}},
            "c": {"enum": ["x", "y"], "type": "STRING"},
            "d": {
                "type": "OBJECT",
                "properties": {
                    "x": {"type": "INTEGER"},
                    "y": {"type": "INTEGER", "default": None, "nullable": True},
                },
                "required": ["x"],
            },
            "h": {"default": 1, "type": "INTEGER", "description": "One of: 1, 2."},
        },
        "required": ["a", "b", "c", "d"],
    }


def test_an_empty_schema_is_an_object() -> None:
    assert gemini_schema({}) == {"type": "OBJECT"}
    assert gemini_schema({"type": "object", "properties": {}}) == {
        "type": "OBJECT",
        "properties": {},
    }


@pytest.mark.parametrize(
    ("schema", "match"),
    [
        (
            {
                "type": "object",
                "properties": {"a": {"$ref": "#/$defs/Node"}},
                "$defs": {
                    "Node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}}}
                },
            },
            "recursive",
        ),
        ({"properties": {"a": {"$ref": "https://example.com/s.json"}}}, r"\$ref"),
        ({"allOf": [{"type": "object"}, {"required": ["a"]}]}, "allOf"),
        ({"properties": {"a": {"not": {"type": "string"}}}}, '"not"'),
        (
            {"properties": {"a": {"additionalProperties": {"type": "string"}}}},
            "additionalProperties",
        ),
        ({"properties": {"a": {"type": "array", "items": [{"type": "string"}]}}}, "array"),
        ({"properties": {"a": {"type": "date"}}}, '"date"'),
        ({"properties": {"a": {"patternProperties": {}}}}, "patternProperties"),
        ({"properties": {"a": True}}, "a boolean"),
        ({"required": "a"}, "required"),
    ],
)
def test_what_gemini_cannot_express_is_refused(schema: dict[str, Any], match: str) -> None:
    with pytest.raises(ProviderError) as caught:
        gemini_schema(schema, tool="probe")
    assert caught.value.code == "PROVIDER_BAD_REQUEST"
    assert "Tool 'probe'" in caught.value.message
    assert re.search(match, caught.value.message), caught.value.message


def test_a_refused_schema_fails_the_request() -> None:
    spec = ToolSpec(name="bad", description="", parameters=JsonObject({"not": {}}))
    with pytest.raises(ProviderError, match="Tool 'bad'"):
        build_gemini_request(sample_request(tools=(spec,)))


@settings(max_examples=examples(200))
@given(JSON)
def test_any_schema_converts_or_is_refused_with_a_provider_error(schema: object) -> None:
    code: str | None = None
    try:
        json.dumps(gemini_schema(schema))
    except ProviderError as error:
        code = error.code
    assert code in (None, "PROVIDER_BAD_REQUEST")
