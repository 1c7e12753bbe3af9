"""Protocol v2: the new values, the additive JSON form, the derived codec and the fast builders.

* the v2 members (``ThinkingBlock``, ``ToolSpec``, ``ModelRequest.system``/``.tools``, the
  thinking and tool-call delta chunks, four stop reasons, cache counts and ``+`` on
  ``ModelUsage``, ``ModelResponse.model``, ``usage`` on every ``RunResult``);
* ``to_json`` omits a v2 field while it holds its default, so workshop data keeps its workshop
  JSON byte for byte (checked against the bundled fixture's data);
* ``from_json`` inverts ``to_json`` (Hypothesis over generated values) and turns any other
  JSON into ``ProtocolJsonError`` with a path;
* "one edit adds a member": a scratch block class defined here gets checks, codec and a
  builder without any edit to tether;
* every builder of ``tether.protocol._trusted`` agrees with the public constructor;
* Python-first construction (lists to tuples, frozen dict snapshots, generated message IDs).

Exhaustive ``match`` over the grown unions is proved by ``tests/typing`` (``exhaustive_ok.py``).
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import FrozenInstanceError, dataclass, fields
from pathlib import Path
from typing import Any, Literal, cast, get_args

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from image_support import IMAGES
from support import examples
from tether import (
    AbortController,
    FixtureProviderAdapter,
    JsonObject,
    ToolRegistry,
    run_agent_loop,
    tool,
)
from tether.agent import session as session_module
from tether.jsonvalue import thaw_json
from tether.protocol import (
    MAX_RAW_ARGUMENTS_CODE_POINTS,
    ZERO_USAGE,
    AgentEvent,
    AssistantBlock,
    AssistantMessage,
    CancelledRunResult,
    CompletedRunResult,
    FailedRunResult,
    MaxStepsRunResult,
    Message,
    MessageAcceptedEvent,
    MessageAcceptedPayload,
    ModelChunk,
    ModelChunkEvent,
    ModelChunkPayload,
    ModelRequest,
    ModelResponse,
    ModelRetryEvent,
    ModelRetryPayload,
    ModelUsage,
    ProtocolJsonError,
    ProtocolValue,
    RunContext,
    RunError,
    RunFinishedEvent,
    RunFinishedPayload,
    RunResult,
    StopReason,
    TextBlock,
    TextDeltaChunk,
    ThinkingBlock,
    ThinkingDeltaChunk,
    ToolCall,
    ToolCallChunk,
    ToolCallDeltaChunk,
    ToolExecutionContext,
    ToolFinishedEvent,
    ToolFinishedPayload,
    ToolProgressEvent,
    ToolProgressPayload,
    ToolResultMessage,
    ToolSpec,
    ToolStartedEvent,
    ToolStartedPayload,
    UserMessage,
    Valid,
    from_json,
    to_json,
)
from tether.protocol import _trusted as trusted
from tether.protocol._fields import NonEmpty
from tether.protocol.images import ImageBlock

session_message_from_json = session_module._message_from_json  # pyright: ignore[reportPrivateUsage]

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "provider-tool-roundtrip.json"
MESSAGE_ID = re.compile(r"^message-[0-9a-f]{16}$")
EMPTY = JsonObject()


def dumps(value: object) -> str:
    return json.dumps(to_json(value))


def json_round_trip(value: object) -> Any:
    """``to_json`` through JSON text and back: what a file or a socket would carry."""
    return json.loads(json.dumps(to_json(value)))


# --- the v2 members ---------------------------------------------------------------------------


def test_thinking_block_defaults_and_json() -> None:
    block = ThinkingBlock(text="Let me think.")
    assert (block.type, block.text, block.signature, block.redacted) == (
        "thinking",
        "Let me think.",
        None,
        False,
    )
    assert to_json(block) == {"type": "thinking", "text": "Let me think."}

    signed = ThinkingBlock(text="", signature="opaque==", redacted=True)
    assert to_json(signed) == {
        "type": "thinking",
        "text": "",
        "signature": "opaque==",
        "redacted": True,
    }
    assert from_json(to_json(signed), ThinkingBlock) == signed
    assert from_json(to_json(signed), AssistantBlock) == signed
    with pytest.raises(FrozenInstanceError):
        signed.redacted = False  # pyright: ignore[reportAttributeAccessIssue]


def test_text_and_tool_call_signatures_are_v2_fields() -> None:
    """Gemini's ``thoughtSignature`` rides on the text or call it came with: omitted from the
    JSON while ``None`` (the workshop JSON is unchanged), kept verbatim otherwise."""
    assert to_json(TextBlock(text="hi")) == {"type": "text", "text": "hi"}
    signed = TextBlock(text="", signature="Ep+/sig==")
    assert to_json(signed) == {"type": "text", "text": "", "signature": "Ep+/sig=="}
    assert from_json(to_json(signed), AssistantBlock) == signed
    call = ToolCall(id="c1", name="add", arguments=JsonObject({"a": 1}), signature="SIG")
    assert to_json(call) == {
        "type": "toolCall",
        "id": "c1",
        "name": "add",
        "arguments": {"a": 1},
        "signature": "SIG",
    }
    assert from_json(json_round_trip(call), AssistantBlock) == call
    assert "signature" not in to_json(ToolCall(id="c1", name="add", arguments=JsonObject()))
    with pytest.raises(TypeError, match=r"^TextBlock\.signature must be a string"):
        TextBlock(text="t", signature=b"s")  # pyright: ignore[reportArgumentType]
    with pytest.raises(TypeError, match=r"^ToolCall\.signature must be a string"):
        ToolCall(id="c", name="n", arguments=JsonObject(), signature=1)  # pyright: ignore[reportArgumentType]


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"redacted": 1}, "ThinkingBlock.redacted must be a bool (got int)"),
        ({"signature": b"sig"}, "ThinkingBlock.signature must be a string (got bytes)"),
        ({"text": None}, "ThinkingBlock.text must be a string (got NoneType)"),
        ({"type": "text"}, "ThinkingBlock.type must be 'thinking'"),
    ],
)
def test_thinking_block_checks_its_fields(overrides: dict[str, Any], message: str) -> None:
    arguments: dict[str, Any] = {"text": "t", **overrides}
    with pytest.raises(TypeError, match=f"^{re.escape(message)}$"):
        ThinkingBlock(**arguments)


def test_tool_spec_freezes_its_schema_and_names_its_fields() -> None:
    schema: dict[str, Any] = {"type": "object", "properties": {"path": {"type": "string"}}}
    spec = ToolSpec(name="read_file", description="Read a file.", parameters=schema)  # pyright: ignore[reportArgumentType]  # Python-first: a dict
    schema["properties"]["path"]["type"] = "integer"
    assert type(spec.parameters) is JsonObject
    assert spec.parameters == {"type": "object", "properties": {"path": {"type": "string"}}}
    assert to_json(spec) == {
        "name": "read_file",
        "description": "Read a file.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
    }
    assert from_json(to_json(spec), ToolSpec) == spec
    with pytest.raises(TypeError, match=r"^ToolSpec\.name must be a non-empty string"):
        ToolSpec(name=" ", description="", parameters=JsonObject())
    with pytest.raises(
        TypeError, match=r"^ToolSpec\.parameters must be a JSON object \(got list\)"
    ):
        ToolSpec(name="x", description="", parameters=[])  # pyright: ignore[reportArgumentType]


def test_model_request_system_and_tools() -> None:
    user = UserMessage(id="user-1", content="hi")
    spec = ToolSpec(name="add", description="Add.", parameters=JsonObject({"type": "object"}))
    plain = ModelRequest(id="request-001", messages=(user,))
    assert (plain.system, plain.tools) == (None, ())

    request = ModelRequest(
        id="request-001",
        messages=[user],  # pyright: ignore[reportArgumentType]  # Python-first: a list
        system="Be terse.",
        tools=[spec],  # pyright: ignore[reportArgumentType]  # Python-first: a list
    )
    assert request.system == "Be terse."
    assert request.tools == (spec,)
    assert type(request.tools) is tuple
    assert list(to_json(request)) == ["id", "messages", "system", "tools"]
    assert to_json(request)["tools"] == [to_json(spec)]
    assert from_json(json_round_trip(request), ModelRequest) == request

    with pytest.raises(TypeError, match=r"^ModelRequest\.system must be a string \(got int\)"):
        ModelRequest(id="r", messages=[], system=1)  # pyright: ignore[reportArgumentType]
    with pytest.raises(TypeError, match=r"^ModelRequest\.tools\[1\] must be ToolSpec \(got dict\)"):
        ModelRequest(id="r", messages=[], tools=[spec, {"name": "x"}])  # pyright: ignore[reportArgumentType]


def test_thinking_delta_chunk() -> None:
    chunk = ThinkingDeltaChunk(request_id="request-001", delta="hmm")
    assert chunk.type == "thinkingDelta"
    assert to_json(chunk) == {"type": "thinkingDelta", "requestId": "request-001", "delta": "hmm"}
    assert from_json(to_json(chunk), ModelChunk) == chunk
    with pytest.raises(TypeError, match=r"^ThinkingDeltaChunk\.request_id must be a non-empty"):
        ThinkingDeltaChunk(request_id="", delta="x")


def test_tool_call_delta_chunk() -> None:
    first = ToolCallDeltaChunk(request_id="request-001", index=0, id="call-1", name="write")
    later = ToolCallDeltaChunk(request_id="request-001", index=0, arguments_delta='{"pa')
    assert (first.type, first.index, first.id, first.name, first.arguments_delta) == (
        "toolCallDelta",
        0,
        "call-1",
        "write",
        "",
    )
    assert (later.id, later.name) == (None, None)
    assert to_json(later) == {
        "type": "toolCallDelta",
        "requestId": "request-001",
        "index": 0,
        "id": None,
        "name": None,
        "argumentsDelta": '{"pa',
    }
    for chunk in (first, later):
        assert from_json(json_round_trip(chunk), ModelChunk) == chunk
    with pytest.raises(TypeError, match=r"^ToolCallDeltaChunk\.index must be a non-negative int"):
        ToolCallDeltaChunk(request_id="r", index=-1)
    with pytest.raises(TypeError, match=r"^ToolCallDeltaChunk\.index must be .* \(got bool\)"):
        ToolCallDeltaChunk(request_id="r", index=True)
    with pytest.raises(TypeError, match=r"^ToolCallDeltaChunk\.id must be a non-empty string"):
        ToolCallDeltaChunk(request_id="r", index=0, id="")


def assistant_text(text: str) -> AssistantMessage:
    return AssistantMessage(id="message-1", content=(TextBlock(text=text),))


def test_the_four_stop_reasons() -> None:
    assert get_args(StopReason) == ("stop", "toolCall", "length", "refusal")
    for reason in get_args(StopReason):
        response = ModelResponse(
            id="response-1",
            request_id="request-001",
            message=assistant_text("x"),
            stop_reason=reason,
            usage=ZERO_USAGE,
        )
        assert response.stop_reason == reason
        assert from_json(json_round_trip(response), ModelResponse) == response
    with pytest.raises(TypeError, match=r"^ModelResponse\.stop_reason must be 'stop', "):
        ModelResponse(
            id="response-1",
            request_id="request-001",
            message=assistant_text("x"),
            stop_reason="end_turn",  # pyright: ignore[reportArgumentType]
            usage=ZERO_USAGE,
        )


def test_model_usage_cache_counts_and_json() -> None:
    usage = ModelUsage(input_tokens=10, output_tokens=5, cache_read_tokens=7, cache_write_tokens=3)
    assert (usage.cache_read_tokens, usage.cache_write_tokens) == (7, 3)
    assert usage.total_tokens == 25
    assert to_json(usage) == {
        "inputTokens": 10,
        "outputTokens": 5,
        "cacheReadTokens": 7,
        "cacheWriteTokens": 3,
    }
    only_reads = ModelUsage(input_tokens=1, output_tokens=2, cache_read_tokens=4)
    assert dumps(only_reads) == '{"inputTokens": 1, "outputTokens": 2, "cacheReadTokens": 4}'
    assert dumps(ModelUsage(input_tokens=1, output_tokens=2)) == (
        '{"inputTokens": 1, "outputTokens": 2}'
    )
    with pytest.raises(TypeError, match=r"^ModelUsage\.cache_read_tokens must be a non-negative"):
        ModelUsage(input_tokens=0, output_tokens=0, cache_read_tokens=-1)
    with pytest.raises(TypeError, match=r"^ModelUsage\.cache_write_tokens .* \(got bool\)"):
        ModelUsage(input_tokens=0, output_tokens=0, cache_write_tokens=True)


COUNTS = st.integers(min_value=0, max_value=2**51)  # sums stay safe integers
USAGES = st.builds(
    ModelUsage,
    input_tokens=COUNTS,
    output_tokens=COUNTS,
    cache_read_tokens=COUNTS,
    cache_write_tokens=COUNTS,
)


@given(USAGES, USAGES)
def test_model_usage_addition_sums_every_field(left: ModelUsage, right: ModelUsage) -> None:
    total = left + right
    assert type(total) is ModelUsage
    for field in fields(ModelUsage):
        assert getattr(total, field.name) == getattr(left, field.name) + getattr(right, field.name)
    assert total.total_tokens == left.total_tokens + right.total_tokens
    assert left.total_tokens == sum(getattr(left, field.name) for field in fields(ModelUsage))
    assert left + ZERO_USAGE == left == ZERO_USAGE + left
    assert left + right == right + left


def test_model_usage_adds_only_usages() -> None:
    usage = ModelUsage(input_tokens=1, output_tokens=1)
    with pytest.raises(TypeError):
        usage + 1  # pyright: ignore[reportOperatorIssue, reportUnusedExpression]
    with pytest.raises(TypeError):
        usage + {"inputTokens": 1, "outputTokens": 1}  # pyright: ignore[reportOperatorIssue, reportUnusedExpression]
    assert sum([usage, usage, usage], ZERO_USAGE) == ModelUsage(input_tokens=3, output_tokens=3)


def test_model_response_model_field() -> None:
    arguments: dict[str, Any] = {
        "id": "response-1",
        "request_id": "request-001",
        "message": assistant_text("x"),
        "stop_reason": "stop",
        "usage": ZERO_USAGE,
    }
    unnamed = ModelResponse(**arguments)
    named = ModelResponse(**arguments, model="claude-sonnet-4-5")
    assert unnamed.model is None
    assert named.model == "claude-sonnet-4-5"
    assert "model" not in to_json(unnamed)
    assert list(to_json(named)) == ["id", "requestId", "message", "stopReason", "usage", "model"]
    assert from_json(to_json(named), ModelResponse) == named
    with pytest.raises(TypeError, match=r"^ModelResponse\.model must be a string \(got int\)"):
        ModelResponse(**arguments, model=4)  # pyright: ignore[reportArgumentType]


USER = UserMessage(id="user-1", content="hi")


def make_result(status: str, **extra: Any) -> RunResult:
    """A run result of ``status`` for one message; ``extra`` may carry ``usage``."""
    if status == "completed":
        return CompletedRunResult(messages=(USER,), final_text="ok", **extra)
    if status == "cancelled":
        return CancelledRunResult(messages=(USER,), reason="stop", **extra)
    if status == "maxSteps":
        return MaxStepsRunResult(messages=(USER,), max_steps=3, **extra)
    return FailedRunResult(
        messages=(USER,), error=RunError(code="MODEL_STREAM_FAILED", message="x"), **extra
    )


STATUSES = ["cancelled", "completed", "failed", "maxSteps"]


@pytest.mark.parametrize("status", STATUSES)
def test_every_run_result_has_usage_defaulting_to_zero(status: str) -> None:
    plain = make_result(status)
    assert plain.status == status
    assert plain.usage == ZERO_USAGE
    assert "usage" not in to_json(plain)

    usage = ModelUsage(input_tokens=3, output_tokens=2, cache_read_tokens=1)
    counted = make_result(status, usage=usage)
    encoded = to_json(counted)
    assert list(encoded)[-1] == "usage"
    assert encoded["usage"] == {"inputTokens": 3, "outputTokens": 2, "cacheReadTokens": 1}
    assert from_json(json_round_trip(counted), RunResult) == counted
    assert from_json(json_round_trip(plain), RunResult) == plain
    with pytest.raises(TypeError, match=r"\.usage must be a ModelUsage \(got dict\)"):
        make_result(status, usage={"inputTokens": 1, "outputTokens": 1})


# --- workshop JSON stays byte-identical -------------------------------------------------------


def load_fixture() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(FIXTURE.read_text(encoding="utf-8"))
    return data


def record(response: dict[str, Any], kind: str) -> dict[str, Any]:
    found: dict[str, Any] = next(item for item in response["records"] if item["type"] == kind)
    return found


def workshop_forms() -> dict[str, Any]:
    """The workshop's JSON of the fixture's transcript, responses and result, written out by
    hand from the fixture's data (ID formats ``message-<responseId>``, ``tool-result-<id>``)."""
    fixture = load_fixture()
    tool_turn, text_turn = fixture["responses"]
    start_1, call, end_1 = (
        record(tool_turn, k) for k in ("response_start", "tool_call", "response_end")
    )
    start_2, text, end_2 = (
        record(text_turn, k) for k in ("response_start", "text_delta", "response_end")
    )
    user = {"id": "user-1", "role": "user", "content": "What is 20 + 22?"}
    first = {
        "id": f"message-{start_1['responseId']}",
        "role": "assistant",
        "content": [
            {
                "type": "toolCall",
                "id": call["id"],
                "name": call["name"],
                "arguments": call["arguments"],
            }
        ],
    }
    result = {
        "id": f"tool-result-{call['id']}",
        "role": "toolResult",
        "toolCallId": call["id"],
        "toolName": call["name"],
        "content": "42",
        "isError": False,
    }
    second = {
        "id": f"message-{start_2['responseId']}",
        "role": "assistant",
        "content": [{"type": "text", "text": text["text"]}],
    }
    return {
        "transcript": [user, first, result, second],
        "request": {"id": "request-001", "messages": [user]},
        "response": {
            "id": start_1["responseId"],
            "requestId": "request-001",
            "message": first,
            "stopReason": "toolCall",
            "usage": end_1["usage"],
        },
        "result": {
            "status": "completed",
            "messages": [user, first, result, second],
            "finalText": fixture["expected"]["finalText"],
        },
        "usage": {
            "inputTokens": end_1["usage"]["inputTokens"] + end_2["usage"]["inputTokens"],
            "outputTokens": end_1["usage"]["outputTokens"] + end_2["usage"]["outputTokens"],
        },
    }


@tool
async def add(left: int, right: int) -> int:
    """Add two integers.

    Args:
        left: The first addend.
        right: The second addend.
    """
    return left + right


def test_values_built_from_workshop_data_have_the_workshop_json() -> None:
    forms = workshop_forms()
    user_form, first_form, result_form, second_form = forms["transcript"]
    call_form = first_form["content"][0]
    user = UserMessage(id=user_form["id"], content=user_form["content"])
    first = AssistantMessage(
        id=first_form["id"],
        content=(
            ToolCall(id=call_form["id"], name=call_form["name"], arguments=call_form["arguments"]),
        ),
    )
    request = ModelRequest(id="request-001", messages=(user,))
    response_form = forms["response"]
    response = ModelResponse(
        id=response_form["id"],
        request_id="request-001",
        message=first,
        stop_reason="toolCall",
        usage=ModelUsage(
            input_tokens=response_form["usage"]["inputTokens"],
            output_tokens=response_form["usage"]["outputTokens"],
        ),
    )
    result_message = ToolResultMessage(
        id=result_form["id"],
        tool_call_id=result_form["toolCallId"],
        tool_name=result_form["toolName"],
        content=result_form["content"],
        is_error=result_form["isError"],
    )
    second = AssistantMessage(id=second_form["id"], content=(TextBlock(text="The sum is 42."),))
    completed = CompletedRunResult(
        messages=(user, first, result_message, second), final_text="The sum is 42."
    )

    assert dumps(request) == json.dumps(forms["request"])
    assert list(to_json(request)) == ["id", "messages"]
    assert dumps(response) == json.dumps(forms["response"])
    assert list(to_json(response.usage)) == ["inputTokens", "outputTokens"]
    assert dumps(completed) == json.dumps(forms["result"])
    assert "usage" not in to_json(completed)
    assert dumps(ToolCallChunk(request_id="request-001", tool_call=first.content[0])) == (  # pyright: ignore[reportArgumentType]
        json.dumps({"type": "toolCall", "requestId": "request-001", "toolCall": call_form})
    )
    # ... and the workshop JSON decodes to the same values.
    assert from_json(forms["request"], ModelRequest) == request
    assert from_json(forms["response"], ModelResponse) == response
    assert from_json(forms["result"], RunResult) == completed


async def test_a_fixture_run_has_workshop_json_plus_its_usage() -> None:
    forms = workshop_forms()
    stream = run_agent_loop(
        messages=[UserMessage(id="user-1", content="What is 20 + 22?")],
        model=FixtureProviderAdapter.from_path(FIXTURE),
        tools=ToolRegistry([add]),
        max_steps=4,
        signal=AbortController().signal,
    )
    events = [event async for event in stream]
    result = await stream.result

    assert dumps(result) == json.dumps({**forms["result"], "usage": forms["usage"]})
    assert dumps(dataclasses.replace(result, usage=ZERO_USAGE)) == json.dumps(forms["result"])
    accepted = [e.payload.message for e in events if e.type == "message.accepted"]
    finished = [e.payload.message for e in events if e.type == "tool.finished"]
    assert [to_json(m) for m in accepted] == forms["transcript"][:1]
    assert [to_json(m) for m in finished] == forms["transcript"][2:3]


async def test_fixture_responses_have_the_workshop_json() -> None:
    forms = workshop_forms()
    adapter = FixtureProviderAdapter.from_path(FIXTURE)
    request = ModelRequest(
        id="request-001", messages=(UserMessage(id="user-1", content="What is 20 + 22?"),)
    )
    stream = adapter.stream(request, AbortController().signal)
    chunks = [chunk async for chunk in stream]
    response = await stream.result
    assert dumps(response) == json.dumps(forms["response"])
    assert [to_json(chunk) for chunk in chunks] == [
        {
            "type": "toolCall",
            "requestId": "request-001",
            "toolCall": forms["response"]["message"]["content"][0],
        }
    ]


# --- strategies -------------------------------------------------------------------------------

IDS = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,11}", fullmatch=True)
TEXTS = st.text(max_size=12)
SAFE_INTS = st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1)
JSON_LEAVES = (
    st.none() | st.booleans() | SAFE_INTS | st.floats(allow_nan=False, allow_infinity=False) | TEXTS
)
JSON_VALUES: st.SearchStrategy[Any] = st.recursive(
    JSON_LEAVES,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXTS, inner, max_size=3),
    max_leaves=8,
)
JSON_OBJECTS = st.dictionaries(TEXTS, JSON_VALUES, max_size=4)
OPTIONAL_TEXTS = st.none() | TEXTS
SEQUENCES = st.integers(min_value=0, max_value=2**53 - 1)
FULL_USAGES = st.builds(
    ModelUsage,
    input_tokens=SEQUENCES,
    output_tokens=SEQUENCES,
    cache_read_tokens=SEQUENCES,
    cache_write_tokens=SEQUENCES,
)
SMALL_USAGES = st.builds(
    ModelUsage,
    input_tokens=st.integers(0, 3),
    output_tokens=st.integers(0, 3),
    cache_read_tokens=st.integers(0, 1),
    cache_write_tokens=st.integers(0, 1),
)
USAGE_VALUES = SMALL_USAGES | FULL_USAGES

TEXT_BLOCKS = st.builds(TextBlock, text=TEXTS)
THINKING_BLOCKS = st.builds(
    ThinkingBlock, text=TEXTS, signature=OPTIONAL_TEXTS, redacted=st.booleans()
)
VALID_TOOL_CALLS = st.builds(ToolCall, id=IDS, name=IDS, arguments=JSON_OBJECTS)
INVALID_TOOL_CALLS = st.builds(
    ToolCall, id=IDS, name=IDS, arguments=st.just(JsonObject()), raw_arguments=TEXTS
)
"""Calls whose argument text was not a JSON object (``raw_arguments`` set, ``arguments``
empty)."""
SIGNED_BLOCKS = st.builds(TextBlock, text=TEXTS, signature=TEXTS) | st.builds(
    ToolCall, id=IDS, name=IDS, arguments=st.just(JsonObject()), signature=TEXTS
)
"""Text and calls carrying a vendor signature (Gemini's ``thoughtSignature``)."""
TOOL_CALLS = VALID_TOOL_CALLS | INVALID_TOOL_CALLS
BLOCKS: st.SearchStrategy[AssistantBlock] = st.one_of(
    TEXT_BLOCKS, THINKING_BLOCKS, TOOL_CALLS, SIGNED_BLOCKS
)

IMAGE_LISTS = st.lists(IMAGES, max_size=2)
USER_MESSAGES = st.builds(UserMessage, id=IDS, content=TEXTS, images=IMAGE_LISTS)
ASSISTANT_MESSAGES = st.builds(AssistantMessage, id=IDS, content=st.lists(BLOCKS, max_size=4))
TOOL_RESULT_MESSAGES = st.builds(
    ToolResultMessage,
    id=IDS,
    tool_call_id=IDS,
    tool_name=IDS,
    content=TEXTS,
    is_error=st.booleans(),
    images=IMAGE_LISTS,
)
MESSAGES: st.SearchStrategy[Message] = st.one_of(
    USER_MESSAGES, ASSISTANT_MESSAGES, TOOL_RESULT_MESSAGES
)
TRANSCRIPTS = st.lists(MESSAGES, max_size=3)

TOOL_SPECS = st.builds(ToolSpec, name=IDS, description=TEXTS, parameters=JSON_OBJECTS)
REQUESTS = st.builds(
    ModelRequest,
    id=IDS,
    messages=TRANSCRIPTS,
    system=OPTIONAL_TEXTS,
    tools=st.lists(TOOL_SPECS, max_size=2),
)

TEXT_DELTAS = st.builds(TextDeltaChunk, request_id=IDS, delta=TEXTS)
THINKING_DELTAS = st.builds(ThinkingDeltaChunk, request_id=IDS, delta=TEXTS)
TOOL_CALL_DELTAS = st.builds(
    ToolCallDeltaChunk,
    request_id=IDS,
    index=SEQUENCES,
    id=st.none() | IDS,
    name=st.none() | IDS,
    arguments_delta=TEXTS,
)
TOOL_CALL_CHUNKS = st.builds(ToolCallChunk, request_id=IDS, tool_call=TOOL_CALLS)
CHUNKS: st.SearchStrategy[ModelChunk] = st.one_of(
    TEXT_DELTAS, THINKING_DELTAS, TOOL_CALL_DELTAS, TOOL_CALL_CHUNKS
)

STOP_REASONS: st.SearchStrategy[StopReason] = st.sampled_from(get_args(StopReason))
RESPONSES = st.builds(
    ModelResponse,
    id=IDS,
    request_id=IDS,
    message=ASSISTANT_MESSAGES,
    stop_reason=STOP_REASONS,
    usage=USAGE_VALUES,
    model=OPTIONAL_TEXTS,
)

RUN_ERRORS = st.builds(RunError, code=IDS, message=TEXTS)
RESULT_STRATEGIES: dict[type, st.SearchStrategy[Any]] = {
    CompletedRunResult: st.builds(
        CompletedRunResult, messages=TRANSCRIPTS, final_text=TEXTS, usage=USAGE_VALUES
    ),
    CancelledRunResult: st.builds(
        CancelledRunResult, messages=TRANSCRIPTS, reason=TEXTS, usage=USAGE_VALUES
    ),
    MaxStepsRunResult: st.builds(
        MaxStepsRunResult,
        messages=TRANSCRIPTS,
        max_steps=st.integers(min_value=1, max_value=2**53 - 1),
        usage=USAGE_VALUES,
    ),
    FailedRunResult: st.builds(
        FailedRunResult, messages=TRANSCRIPTS, error=RUN_ERRORS, usage=USAGE_VALUES
    ),
}
"""One strategy per result class (a class's own, not a filter of the union: filtering threw
away three draws in four and failed Hypothesis's health check on a slow machine)."""
RESULTS: st.SearchStrategy[RunResult] = st.one_of(*RESULT_STRATEGIES.values())

MESSAGE_ACCEPTED_PAYLOADS = st.builds(MessageAcceptedPayload, message=MESSAGES)
MODEL_CHUNK_PAYLOADS = st.builds(ModelChunkPayload, chunk=CHUNKS)
TOOL_STARTED_PAYLOADS = st.builds(ToolStartedPayload, tool_call=TOOL_CALLS)
TOOL_FINISHED_PAYLOADS = st.builds(ToolFinishedPayload, message=TOOL_RESULT_MESSAGES)
RUN_FINISHED_PAYLOADS = st.builds(RunFinishedPayload, result=RESULTS)
MESSAGE_ACCEPTED_EVENTS = st.builds(
    MessageAcceptedEvent, sequence=SEQUENCES, payload=MESSAGE_ACCEPTED_PAYLOADS
)
MODEL_CHUNK_EVENTS = st.builds(ModelChunkEvent, sequence=SEQUENCES, payload=MODEL_CHUNK_PAYLOADS)
TOOL_STARTED_EVENTS = st.builds(ToolStartedEvent, sequence=SEQUENCES, payload=TOOL_STARTED_PAYLOADS)
TOOL_FINISHED_EVENTS = st.builds(
    ToolFinishedEvent, sequence=SEQUENCES, payload=TOOL_FINISHED_PAYLOADS
)
RUN_FINISHED_EVENTS = st.builds(RunFinishedEvent, sequence=SEQUENCES, payload=RUN_FINISHED_PAYLOADS)
TOOL_PROGRESS_PAYLOADS = st.builds(
    ToolProgressPayload, tool_call_id=IDS, tool_name=IDS, text=st.text(min_size=1, max_size=40)
)
TOOL_PROGRESS_EVENTS = st.builds(
    ToolProgressEvent, sequence=SEQUENCES, payload=TOOL_PROGRESS_PAYLOADS
)
MODEL_RETRY_PAYLOADS = st.builds(
    ModelRetryPayload,
    request_id=IDS,
    attempt=st.integers(min_value=1, max_value=2**53 - 1),
    delay_ms=st.integers(min_value=0, max_value=2**53 - 1),
    code=IDS,
    reason=IDS,
)
MODEL_RETRY_EVENTS = st.builds(ModelRetryEvent, sequence=SEQUENCES, payload=MODEL_RETRY_PAYLOADS)
EVENTS: st.SearchStrategy[AgentEvent] = st.one_of(
    MESSAGE_ACCEPTED_EVENTS,
    MODEL_CHUNK_EVENTS,
    TOOL_STARTED_EVENTS,
    TOOL_FINISHED_EVENTS,
    RUN_FINISHED_EVENTS,
    TOOL_PROGRESS_EVENTS,
    MODEL_RETRY_EVENTS,
)
EXECUTION_CONTEXTS = st.builds(
    ToolExecutionContext,
    signal=st.builds(lambda: AbortController().signal),
    tool_call_id=IDS,
)
RUN_CONTEXTS = st.builds(
    RunContext,
    signal=st.builds(lambda: AbortController().signal),
    tool_call_id=IDS,
    deps=st.one_of(st.none(), st.integers(), st.text(max_size=4)),
)

STRATEGIES: dict[type, st.SearchStrategy[Any]] = {
    ImageBlock: IMAGES,
    TextBlock: TEXT_BLOCKS,
    ThinkingBlock: THINKING_BLOCKS,
    ToolCall: TOOL_CALLS,
    UserMessage: USER_MESSAGES,
    AssistantMessage: ASSISTANT_MESSAGES,
    ToolResultMessage: TOOL_RESULT_MESSAGES,
    ToolSpec: TOOL_SPECS,
    ModelRequest: REQUESTS,
    TextDeltaChunk: TEXT_DELTAS,
    ThinkingDeltaChunk: THINKING_DELTAS,
    ToolCallDeltaChunk: TOOL_CALL_DELTAS,
    ToolCallChunk: TOOL_CALL_CHUNKS,
    ModelUsage: USAGE_VALUES,
    ModelResponse: RESPONSES,
    RunError: RUN_ERRORS,
    MessageAcceptedPayload: MESSAGE_ACCEPTED_PAYLOADS,
    ModelChunkPayload: MODEL_CHUNK_PAYLOADS,
    ToolStartedPayload: TOOL_STARTED_PAYLOADS,
    ToolFinishedPayload: TOOL_FINISHED_PAYLOADS,
    RunFinishedPayload: RUN_FINISHED_PAYLOADS,
    MessageAcceptedEvent: MESSAGE_ACCEPTED_EVENTS,
    ModelChunkEvent: MODEL_CHUNK_EVENTS,
    ToolStartedEvent: TOOL_STARTED_EVENTS,
    ToolFinishedEvent: TOOL_FINISHED_EVENTS,
    RunFinishedEvent: RUN_FINISHED_EVENTS,
    ToolProgressPayload: TOOL_PROGRESS_PAYLOADS,
    ToolProgressEvent: TOOL_PROGRESS_EVENTS,
    ModelRetryPayload: MODEL_RETRY_PAYLOADS,
    ModelRetryEvent: MODEL_RETRY_EVENTS,
    ToolExecutionContext: EXECUTION_CONTEXTS,
    RunContext: RUN_CONTEXTS,
    Valid: st.builds(Valid, value=st.one_of(st.none(), st.integers(), st.text(max_size=4))),
}
JSON_CLASSES = [cls for cls in STRATEGIES if cls not in (ToolExecutionContext, RunContext, Valid)]
STRATEGIES.update(RESULT_STRATEGIES)
ANY_JSON_VALUE: st.SearchStrategy[object] = st.one_of(
    *(STRATEGIES[cls] for cls in JSON_CLASSES), RESULTS
)


# --- from_json inverts to_json ----------------------------------------------------------------


def test_every_json_class_of_the_unions_has_a_strategy() -> None:
    members = {
        member
        for union in (AssistantBlock, Message, ModelChunk, RunResult, AgentEvent)
        for member in get_args(union)
    }
    assert members <= set(STRATEGIES)


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(ANY_JSON_VALUE)
def test_from_json_inverts_to_json(value: object) -> None:
    data = json_round_trip(value)
    decoded = from_json(data, type(value))
    assert decoded == value
    assert type(decoded) is type(value)
    assert json.dumps(to_json(decoded)) == json.dumps(to_json(value))


@given(BLOCKS)
def test_from_json_decodes_assistant_blocks_by_discriminant(block: AssistantBlock) -> None:
    assert from_json(json_round_trip(block), AssistantBlock) == block


@given(MESSAGES)
def test_from_json_decodes_messages_by_role(message: Message) -> None:
    assert from_json(json_round_trip(message), Message) == message


@given(CHUNKS)
def test_from_json_decodes_chunks_by_type(chunk: ModelChunk) -> None:
    assert from_json(json_round_trip(chunk), ModelChunk) == chunk


@given(RESULTS)
def test_from_json_decodes_results_by_status(result: RunResult) -> None:
    assert from_json(json_round_trip(result), RunResult) == result


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(EVENTS)
def test_from_json_decodes_events_by_type(event: AgentEvent) -> None:
    assert from_json(json_round_trip(event), AgentEvent) == event


# --- invalid JSON is a ProtocolJsonError with a path -------------------------------------------

FUZZ_LEAVES = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=8)
    | st.sampled_from(
        ["user", "assistant", "toolResult", "text", "thinking", "toolCall", "completed", "failed"]
    )
)
FUZZ_KEYS = st.text(max_size=8) | st.sampled_from(
    ["id", "role", "type", "status", "content", "messages", "payload", "sequence", "usage"]
)
ARBITRARY_JSON: st.SearchStrategy[Any] = st.recursive(
    FUZZ_LEAVES,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(FUZZ_KEYS, inner, max_size=4),
    max_leaves=12,
)
UNIONS: dict[str, Any] = {"Message": Message, "RunResult": RunResult, "AgentEvent": AgentEvent}
UNION_STRATEGIES: dict[str, st.SearchStrategy[Any]] = {
    "Message": MESSAGES,
    "RunResult": RESULTS,
    "AgentEvent": EVENTS,
}


def assert_decodes_or_reports(data: object, kind: Any) -> None:
    """``from_json`` gives a member of ``kind`` or a ``ProtocolJsonError`` with a ``$`` path."""
    problem: ProtocolJsonError | None = None
    decoded: object = None
    try:
        decoded = from_json(data, kind)
    except ProtocolJsonError as error:
        problem = error
    if problem is not None:
        assert problem.code == "INVALID_PROTOCOL_JSON"
        assert re.match(r"^\$[^ ]*: \S", str(problem)), str(problem)
        return
    assert type(decoded) in get_args(kind)
    assert from_json(to_json(decoded), kind) == decoded


@pytest.mark.parametrize("union", sorted(UNIONS))
@given(data=ARBITRARY_JSON)
def test_arbitrary_json_is_decoded_or_rejected_with_a_path(union: str, data: object) -> None:
    assert_decodes_or_reports(data, UNIONS[union])


def locations(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield path
    if type(value) is dict:
        mapping: dict[str, Any] = cast(dict[str, Any], value)
        for key, item in mapping.items():
            yield from locations(item, (*path, key))
    elif type(value) is list:
        items: list[Any] = cast(list[Any], value)
        for index, item in enumerate(items):
            yield from locations(item, (*path, index))


@st.composite
def mutated(draw: st.DrawFn, union: str) -> object:
    """The valid JSON of a generated value with one place replaced, removed or extended."""
    data: Any = to_json(draw(UNION_STRATEGIES[union]))
    path = draw(st.sampled_from(list(locations(data))))
    if not path:
        return draw(ARBITRARY_JSON)
    parent: Any = data
    for step in path[:-1]:
        parent = parent[step]
    target: Any = parent[path[-1]]
    action = draw(st.sampled_from(["replace", "remove", "extend"]))
    if action == "replace":
        parent[path[-1]] = draw(ARBITRARY_JSON)
    elif action == "remove":
        del parent[path[-1]]
    elif type(target) is dict:
        target[draw(FUZZ_KEYS)] = draw(ARBITRARY_JSON)
    elif type(target) is list:
        cast(list[Any], target).append(draw(ARBITRARY_JSON))
    else:
        parent[path[-1]] = [target]
    return data


@pytest.mark.parametrize("union", sorted(UNIONS))
@settings(suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_mutated_json_is_decoded_or_rejected_with_a_path(union: str, data: st.DataObject) -> None:
    assert_decodes_or_reports(data.draw(mutated(union)), UNIONS[union])


def nested(depth: int, leaf: object) -> object:
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize("depth", [200, 100_000])
def test_deep_json_is_a_protocol_json_error_not_a_recursion_error(depth: int) -> None:
    deep = nested(depth, 1)
    cases: list[tuple[object, Any, str]] = [
        (
            {
                "id": "m",
                "role": "assistant",
                "content": [{"type": "toolCall", "id": "c", "name": "n", "arguments": {"x": deep}}],
            },
            Message,
            "$.content[0]",
        ),
        ({"id": "m", "role": "assistant", "content": deep}, Message, "$.content[0]"),
        ({"id": "u", "role": "user", "content": deep}, Message, "$"),
        (
            {"status": "completed", "messages": [deep], "finalText": ""},
            RunResult,
            "$.messages[0]",
        ),
        (
            {"type": "run.finished", "sequence": 0, "payload": {"result": deep}},
            AgentEvent,
            "$.payload.result",
        ),
    ]
    for data, kind, path in cases:
        with pytest.raises(ProtocolJsonError) as info:
            from_json(data, kind)
        assert info.value.code == "INVALID_PROTOCOL_JSON"
        assert str(info.value).startswith(f"{path}: "), str(info.value)


def test_protocol_json_errors_name_the_path() -> None:
    data = {
        "id": "m",
        "role": "assistant",
        "content": [{"type": "text", "text": "a"}, {"type": "toolCall", "id": "c", "name": "n"}],
    }
    with pytest.raises(ProtocolJsonError, match=r"^\$\.content\[1\]: missing 'arguments'$"):
        from_json(data, Message)
    with pytest.raises(ProtocolJsonError, match=r"^\$: must have one of role='user', "):
        from_json({"role": "system", "content": "x"}, Message)
    with pytest.raises(ProtocolJsonError, match=r"^\$\.usage: unexpected key 'totalTokens'"):
        from_json(
            {
                "status": "completed",
                "messages": [],
                "finalText": "",
                "usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2},
            },
            RunResult,
        )
    assert isinstance(ProtocolJsonError("$", "x"), ValueError)


# --- one edit adds a member -------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class StickerBlock(ProtocolValue):
    """A scratch block type that tether knows nothing about."""

    type: Literal["sticker"] = "sticker"
    url: NonEmpty


@dataclass(frozen=True, slots=True, kw_only=True)
class Gallery(ProtocolValue):
    """A scratch container whose items are a union that includes the scratch block."""

    id: NonEmpty
    blocks: tuple[TextBlock | StickerBlock, ...]


def test_a_new_block_gets_construction_checks() -> None:
    image = StickerBlock(url="https://example.com/cat.svg")
    assert (image.type, image.url) == ("sticker", "https://example.com/cat.svg")
    with pytest.raises(
        TypeError, match=r"^StickerBlock\.url must be a non-empty string \(got int\)$"
    ):
        StickerBlock(url=7)  # pyright: ignore[reportArgumentType]
    with pytest.raises(
        TypeError, match=r"^StickerBlock\.url must be a non-empty string \(got a blank"
    ):
        StickerBlock(url=" \n")
    with pytest.raises(TypeError, match=r"^StickerBlock\.type must be 'sticker'$"):
        StickerBlock(type="text", url="u")  # pyright: ignore[reportArgumentType]
    with pytest.raises(FrozenInstanceError):
        image.url = "other"  # pyright: ignore[reportAttributeAccessIssue]

    gallery = Gallery(id="g", blocks=[TextBlock(text="a cat"), image])  # pyright: ignore[reportArgumentType]  # Python-first
    assert gallery.blocks == (TextBlock(text="a cat"), image)
    with pytest.raises(
        TypeError,
        match=r"^Gallery\.blocks\[1\] must be TextBlock or StickerBlock \(got ToolCall\)$",
    ):
        Gallery(id="g", blocks=[image, ToolCall(id="c", name="n", arguments=EMPTY)])  # pyright: ignore[reportArgumentType]


def test_a_new_block_round_trips_through_the_derived_codec() -> None:
    image = StickerBlock(url="https://example.com/cat.svg")
    data = to_json(image)
    assert data == {"type": "sticker", "url": "https://example.com/cat.svg"}
    assert from_json(data, TextBlock | StickerBlock) == image
    assert from_json({"type": "text", "text": "hi"}, TextBlock | StickerBlock) == TextBlock(
        text="hi"
    )
    with pytest.raises(
        ProtocolJsonError, match=r"^\$: must have one of type='text', type='sticker'$"
    ):
        from_json({"type": "toolCall"}, TextBlock | StickerBlock)
    with pytest.raises(
        ProtocolJsonError, match=r"^\$: StickerBlock\.url must be a non-empty string"
    ):
        from_json({"type": "sticker", "url": ""}, TextBlock | StickerBlock)

    gallery = Gallery(id="g", blocks=(image, TextBlock(text="a cat")))
    assert to_json(gallery) == {"id": "g", "blocks": [data, {"type": "text", "text": "a cat"}]}
    assert from_json(json_round_trip(gallery), Gallery) == gallery
    with pytest.raises(ProtocolJsonError, match=r"^\$\.blocks\[0\]: unexpected key 'alt'"):
        from_json({"id": "g", "blocks": [{**data, "alt": "x"}]}, Gallery)


def test_a_new_block_gets_a_generated_builder() -> None:
    before = dict(trusted.BUILDERS)
    try:
        build = trusted.builder(StickerBlock, "url")
        built = build("https://example.com/cat.svg")
        public = StickerBlock(url="https://example.com/cat.svg")
        assert built == public
        assert repr(built) == repr(public)
        assert to_json(built) == to_json(public)
        assert [getattr(built, field.name) for field in fields(StickerBlock)] == [
            "sticker",
            "https://example.com/cat.svg",
        ]
        assert trusted.BUILDERS["build_StickerBlock"] == (StickerBlock, ("url",))
    finally:
        trusted.BUILDERS.clear()
        trusted.BUILDERS.update(before)


def test_a_builder_that_omits_a_required_field_fails_when_created() -> None:
    before = dict(trusted.BUILDERS)
    with pytest.raises(
        TypeError, match=r"^builder for StickerBlock must take its required field 'url'$"
    ):
        trusted.builder(StickerBlock)
    with pytest.raises(
        TypeError, match=r"^builder for ToolCall must take its required field 'arguments'$"
    ):
        trusted.builder(ToolCall, "id", "name")
    with pytest.raises(TypeError, match=r"^StickerBlock\.url is required and cannot be optional$"):
        trusted.builder(StickerBlock, optional=("url",))
    with pytest.raises(TypeError, match=r"^StickerBlock has no fields \['alt'\]$"):
        trusted.builder(StickerBlock, "url", "alt")
    assert before == trusted.BUILDERS


@pytest.mark.parametrize(
    ("cls", "params", "optional", "arguments"),
    [
        (ToolCall, ("id", "name", "arguments"), ("raw_arguments",), ("c1", "add", JsonObject())),
        (ThinkingBlock, ("text",), ("signature", "redacted"), ("hmm", "sig")),
        (UserMessage, ("content",), ("id",), ("hi",)),
        (ModelRequest, ("id", "messages"), ("system", "tools"), ("request-001", ())),
    ],
)
def test_a_builder_compiled_on_its_first_call_keeps_its_signature_and_builds_the_same(
    cls: type, params: tuple[str, ...], optional: tuple[str, ...], arguments: tuple[Any, ...]
) -> None:
    """A builder is compiled by its first call (issue 30: importing compiles none): before
    that call it shows the signature its code has after it, and every call builds the same
    value as the public constructor."""
    before = dict(trusted.BUILDERS)
    try:
        build = trusted.builder(cls, *params, optional=optional)
        shown = inspect.signature(build)
        first = build(*arguments)
        assert inspect.signature(build) == shown
        assert "__signature__" not in vars(build)
        second = build(*arguments)
        public = cls(**dict(zip((*params, *optional), arguments, strict=False)))
        for value in (first, second):
            assert type(value) is cls
            assert [
                getattr(value, f.name) for f in fields(cls) if f.name != "id" or "id" in params
            ] == [getattr(public, f.name) for f in fields(cls) if f.name != "id" or "id" in params]
    finally:
        trusted.BUILDERS.clear()
        trusted.BUILDERS.update(before)


# --- every builder agrees with the public constructor ------------------------------------------

REGISTERED: dict[str, tuple[type, tuple[str, ...]]] = dict(trusted.BUILDERS)
BUILDER_FUNCTIONS: dict[str, Callable[..., Any]] = {
    value.__name__: value
    for value in vars(trusted).values()
    if inspect.isfunction(value) and value.__name__.startswith("build_")
}


def test_every_builder_is_registered_once_with_its_parameters() -> None:
    module_builders = [
        value
        for value in vars(trusted).values()
        if inspect.isfunction(value) and value.__name__.startswith("build_")
    ]
    assert len(module_builders) == len(REGISTERED), "two builders share a name"
    assert sorted(BUILDER_FUNCTIONS) == sorted(REGISTERED)
    for name, (cls, params) in REGISTERED.items():
        parameters = inspect.signature(BUILDER_FUNCTIONS[name]).parameters.values()
        # keyword-only parameters are the builder's own bound constants, never passed
        taken = tuple(p.name for p in parameters if p.kind is not p.KEYWORD_ONLY)
        assert taken == params
        assert cls in STRATEGIES, f"{cls.__name__} needs a strategy in this file"
    built_classes = {cls for cls, _ in REGISTERED.values()}
    assert {TextBlock, ThinkingBlock, ToolCall, AssistantMessage, ModelRequest} <= built_classes


@pytest.mark.parametrize("name", sorted(REGISTERED))
@settings(max_examples=examples(50), suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_builder_output_equals_the_public_constructor(name: str, data: st.DataObject) -> None:
    cls, params = REGISTERED[name]
    build = BUILDER_FUNCTIONS[name]
    signature = inspect.signature(build).parameters.values()
    required = sum(1 for parameter in signature if parameter.default is inspect.Parameter.empty)
    source = data.draw(STRATEGIES[cls])
    taken = data.draw(st.integers(min_value=required, max_value=len(params)))
    arguments = {param: getattr(source, param) for param in params[:taken]}

    built = build(*arguments.values())
    public = cls(**arguments)

    assert type(built) is cls
    for field in fields(cls):
        assert getattr(built, field.name) == getattr(public, field.name), field.name
    assert built == public
    assert repr(built) == repr(public)
    if cls is ToolExecutionContext or cls is RunContext:
        for value in (built, public):
            with pytest.raises(TypeError, match="cannot encode AbortSignal"):
                to_json(value)
    elif cls is not Valid:  # a validation's value is any Python value: it has no JSON form
        assert json.dumps(to_json(built)) == json.dumps(to_json(public))
        assert from_json(to_json(built), cls) == public


@given(
    request_id=st.text(min_size=1, max_size=4),
    runs=st.lists(st.lists(st.text(max_size=4), max_size=4), max_size=3),
)
def test_text_deltas_builds_what_the_two_builders_build(
    request_id: str, runs: list[list[str]]
) -> None:
    """``text_deltas`` (a run of deltas built in one call) against ``text_block`` and
    ``text_delta_chunk`` called per delta: the same values, of the same classes, in order,
    appended after what the lists held."""
    blocks: list[Any] = ["before"]
    chunks: list[Any] = ["before"]
    expected_blocks: list[Any] = ["before"]
    expected_chunks: list[Any] = ["before"]
    for texts in runs:
        trusted.text_deltas(request_id, texts, blocks, chunks)
        expected_blocks.extend(trusted.text_block(text) for text in texts)
        expected_chunks.extend(trusted.text_delta_chunk(request_id, text) for text in texts)
    assert [type(value) for value in blocks] == [type(value) for value in expected_blocks]
    assert [type(value) for value in chunks] == [type(value) for value in expected_chunks]
    assert blocks == expected_blocks
    assert chunks == expected_chunks
    for built, public in zip(blocks[1:], expected_blocks[1:], strict=True):
        assert [getattr(built, f.name) for f in fields(TextBlock)] == [
            getattr(public, f.name) for f in fields(TextBlock)
        ]
    for built, public in zip(chunks[1:], expected_chunks[1:], strict=True):
        assert repr(built) == repr(public)
        assert to_json(built) == to_json(public)


def test_every_builder_returns_its_own_class_and_no_twin_escapes() -> None:
    """A builder fills a ``writable_twin`` and gives it the class before returning: each
    built value is exactly its class, frozen, and equal to the public constructor's; a class
    whose layout a twin cannot share is refused when its twin is made, never mid-build."""
    call = trusted.tool_call("call-1", "add", JsonObject())
    assert type(call) is ToolCall
    assert call == ToolCall(id="call-1", name="add", arguments=JsonObject())
    with pytest.raises(FrozenInstanceError):
        call.id = "other"  # pyright: ignore[reportAttributeAccessIssue]
    twin = trusted.writable_twin(ToolCall)
    assert twin is not ToolCall
    assert twin is trusted.writable_twin(ToolCall)
    assert not issubclass(twin, ToolCall)
    assert not isinstance(call, twin)

    @dataclass(frozen=True)
    class Unslotted:
        value: int

    with pytest.raises(TypeError):
        trusted.writable_twin(Unslotted)


def test_text_deltas_fills_every_field_it_is_not_given() -> None:
    """``_fill_lines`` gives every field not named its default, refuses a required field it
    is not given and a name that is no field (as ``builder`` does)."""
    namespace: dict[str, Any] = {}
    lines = trusted._fill_lines(TextBlock, {"text": "text"}, "block", namespace)  # pyright: ignore[reportPrivateUsage]
    assert len(lines) == 2 + len(fields(TextBlock))  # the twin, a store per field, the class
    with pytest.raises(TypeError, match="is required"):
        trusted._fill_lines(TextBlock, {}, "block", {})  # pyright: ignore[reportPrivateUsage]
    with pytest.raises(TypeError, match="has no fields"):
        trusted._fill_lines(TextBlock, {"text": "text", "colour": "x"}, "block", {})  # pyright: ignore[reportPrivateUsage]


# --- Python-first constructors ----------------------------------------------------------------


def test_tool_call_accepts_a_dict_and_keeps_a_frozen_snapshot() -> None:
    arguments: dict[str, Any] = {"a": 1, "nested": {"items": [1, 2]}}
    call = ToolCall(id="call-1", name="add", arguments=arguments)  # pyright: ignore[reportArgumentType]  # Python-first
    arguments["a"] = 2
    arguments["b"] = 3
    arguments["nested"]["items"].append(3)
    assert type(call.arguments) is JsonObject
    assert call.arguments == {"a": 1, "nested": {"items": [1, 2]}}
    assert call.arguments["nested"]["items"] == (1, 2)  # pyright: ignore[reportIndexIssue, reportOptionalSubscript, reportCallIssue, reportArgumentType]
    with pytest.raises(TypeError):
        call.arguments["a"] = 5  # pyright: ignore[reportIndexIssue]
    with pytest.raises(FrozenInstanceError):
        call.arguments = JsonObject()  # pyright: ignore[reportAttributeAccessIssue]
    same = JsonObject({"a": 1, "nested": {"items": (1, 2)}})
    assert ToolCall(id="call-1", name="add", arguments=same) == call


def test_assistant_message_stores_a_tuple_and_generates_unique_ids() -> None:
    content: list[AssistantBlock] = [
        TextBlock(text="a"),
        ToolCall(id="c", name="n", arguments=EMPTY),
    ]
    message = AssistantMessage(content=content)  # pyright: ignore[reportArgumentType]  # Python-first
    content.append(TextBlock(text="b"))
    assert type(message.content) is tuple
    assert message.content == (TextBlock(text="a"), ToolCall(id="c", name="n", arguments=EMPTY))
    assert MESSAGE_ID.match(message.id), message.id
    ids = {AssistantMessage(content=()).id for _ in range(1000)}
    assert len(ids) == 1000
    assert all(MESSAGE_ID.match(generated) for generated in ids)
    assert AssistantMessage(id="message-1", content=tuple(content)).id == "message-1"


def test_user_and_tool_result_messages_generate_ids() -> None:
    user = UserMessage(content="hi")
    result = ToolResultMessage(tool_call_id="c", tool_name="n", content="ok")
    assert MESSAGE_ID.match(user.id), user.id
    assert MESSAGE_ID.match(result.id), result.id
    assert user.id != UserMessage(content="hi").id
    assert result.is_error is False


def test_model_request_accepts_a_list_of_messages() -> None:
    messages: list[Message] = [UserMessage(id="u", content="hi")]
    request = ModelRequest(id="request-001", messages=messages)  # pyright: ignore[reportArgumentType]  # Python-first
    messages.append(UserMessage(id="v", content="again"))
    assert request.messages == (UserMessage(id="u", content="hi"),)
    assert type(request.messages) is tuple


@pytest.mark.parametrize(
    ("build", "message"),
    [
        pytest.param(
            lambda: ToolCall(id="c", name="n", arguments={1, 2}),  # pyright: ignore[reportArgumentType]
            "ToolCall.arguments must be a JSON object (got set)",
            id="arguments-set",
        ),
        pytest.param(
            lambda: ToolResultMessage(tool_call_id=7, tool_name="n", content=""),  # pyright: ignore[reportArgumentType]
            "ToolResultMessage.tool_call_id must be a non-empty string (got int)",
            id="tool-call-id-snake-case",
        ),
        pytest.param(
            lambda: ToolResultMessage(tool_call_id="c", tool_name="n", content="", is_error=0),  # pyright: ignore[reportArgumentType]
            "ToolResultMessage.is_error must be a bool (got int)",
            id="is-error-snake-case",
        ),
        pytest.param(
            lambda: AssistantMessage(content=[TextBlock(text="a"), "b"]),  # pyright: ignore[reportArgumentType]
            "AssistantMessage.content[1] must be TextBlock, ThinkingBlock or ToolCall (got str)",
            id="content-item",
        ),
        pytest.param(
            lambda: AssistantMessage(content="text"),  # pyright: ignore[reportArgumentType]
            "AssistantMessage.content must be a sequence of TextBlock, ThinkingBlock or ToolCall",
            id="content-str",
        ),
        pytest.param(
            lambda: ModelResponse(
                id="r",
                request_id="q",
                message=assistant_text("x"),
                stop_reason="stop",
                usage=ZERO_USAGE,
                model=b"m",  # pyright: ignore[reportArgumentType]
            ),
            "ModelResponse.model must be a string (got bytes)",
            id="model-bytes",
        ),
    ],
)
def test_construction_errors_name_the_field_in_snake_case(
    build: Callable[[], object], message: str
) -> None:
    with pytest.raises(TypeError) as info:
        build()
    assert str(info.value).startswith(message), str(info.value)


@pytest.mark.parametrize(
    "arguments",
    [
        pytest.param({"x": float("nan")}, id="nan"),
        pytest.param({1: "x"}, id="int-key"),
        pytest.param({"x": b"bytes"}, id="bytes"),
        pytest.param({"x": nested(500, 1)}, id="too-deep"),
    ],
)
def test_unfreezable_arguments_raise_naming_the_field(arguments: dict[Any, Any]) -> None:
    with pytest.raises((TypeError, ValueError)) as info:
        ToolCall(id="c", name="n", arguments=arguments)  # pyright: ignore[reportArgumentType]
    assert str(info.value).startswith("ToolCall.arguments must be a JSON object"), str(info.value)


def test_a_cyclic_argument_dict_raises_naming_the_field() -> None:
    arguments: dict[str, Any] = {}
    arguments["self"] = arguments
    with pytest.raises(
        (TypeError, ValueError), match=r"^ToolCall\.arguments must be a JSON object"
    ):
        ToolCall(id="c", name="n", arguments=arguments)  # pyright: ignore[reportArgumentType]


# --- invalid tool calls (raw_arguments) ---------------------------------------------------------


@settings(max_examples=examples(200))
@given(call=INVALID_TOOL_CALLS)
def test_an_invalid_call_round_trips_with_its_raw_text(call: ToolCall) -> None:
    encoded = to_json(call)
    assert encoded["rawArguments"] == call.raw_arguments
    assert encoded["arguments"] == {}
    assert from_json(encoded, ToolCall) == call
    assert from_json(json.loads(json.dumps(encoded)), AssistantBlock) == call
    message = AssistantMessage(id="a", content=(call,))
    assert session_message_from_json(to_json(message)) == message


@given(call=VALID_TOOL_CALLS)
def test_a_valid_call_has_no_raw_arguments_key(call: ToolCall) -> None:
    assert call.raw_arguments is None
    assert "rawArguments" not in to_json(call)


@settings(max_examples=examples(100))
@given(
    arguments=JSON_OBJECTS.filter(lambda value: len(value) > 0),
    raw=TEXTS,
)
def test_raw_arguments_with_non_empty_arguments_are_rejected(
    arguments: JsonObject, raw: str
) -> None:
    message = r"^ToolCall\.arguments must be empty when raw_arguments is set \(got \d+ entries\)$"
    with pytest.raises(ValueError, match=message):
        ToolCall(id="c", name="n", arguments=arguments, raw_arguments=raw)
    encoded = {
        "type": "toolCall",
        "id": "c",
        "name": "n",
        "arguments": thaw_json(JsonObject(arguments)),
        "rawArguments": raw,
    }
    with pytest.raises(ProtocolJsonError, match=r"^\$: ToolCall\.arguments must be empty"):
        from_json(encoded, ToolCall)
    with pytest.raises(Exception, match="arguments must be empty"):
        session_message_from_json({"id": "a", "role": "assistant", "content": [encoded]})


def test_raw_arguments_are_bounded_and_must_be_a_string() -> None:
    empty = JsonObject()
    at_limit = "x" * MAX_RAW_ARGUMENTS_CODE_POINTS
    call = ToolCall(id="c", name="n", arguments=empty, raw_arguments=at_limit)
    assert call.raw_arguments == at_limit
    with pytest.raises(ValueError, match=r"raw_arguments must be at most 4194304 code points"):
        ToolCall(id="c", name="n", arguments=empty, raw_arguments=at_limit + "x")
    with pytest.raises(TypeError, match=r"^ToolCall\.raw_arguments must be a string \(got bytes"):
        ToolCall(id="c", name="n", arguments=empty, raw_arguments=b"{")  # pyright: ignore[reportArgumentType]
    cut = trusted.invalid_tool_call("c", "n", at_limit + "yy")
    assert cut.raw_arguments is not None
    assert len(cut.raw_arguments) == MAX_RAW_ARGUMENTS_CODE_POINTS
    assert cut.raw_arguments.endswith(
        f"[cut by tether: {MAX_RAW_ARGUMENTS_CODE_POINTS + 2} code points]"
    )
    assert trusted.invalid_tool_call("c", "n", "{") == ToolCall(
        id="c", name="n", arguments=empty, raw_arguments="{"
    )
