"""Checkpoint 01: the closed, immutable protocol vocabulary (``tether.protocol``).

Runtime half of the contract: exact discriminants, deep immutability, construction checks,
keyword-only construction, the camelCase JSON form, ``assert_never``, exhaustive ``match``
over ``RunResult`` and the two-stage tool flow. The compile-time half lives in
``tests/typing``.
"""

from __future__ import annotations

import base64
import json
from dataclasses import FrozenInstanceError, dataclass, fields
from typing import Any, Literal, Never, TypeVar, cast, get_args, get_type_hints

import pytest

from image_support import png
from tether import protocol
from tether.abort import AbortController, AbortError, AbortSignal
from tether.jsonvalue import JsonObject
from tether.protocol import (
    AgentEventType,
    AssistantMessage,
    CancelledRunResult,
    CompletedRunResult,
    FailedRunResult,
    ImageBlock,
    Invalid,
    MaxStepsRunResult,
    MessageAcceptedEvent,
    MessageAcceptedPayload,
    ModelChunkEvent,
    ModelChunkPayload,
    ModelRequest,
    ModelResponse,
    ModelRetryEvent,
    ModelRetryPayload,
    ModelUsage,
    RunContext,
    RunError,
    RunFinishedEvent,
    RunFinishedPayload,
    RunResult,
    RunStatus,
    StopReason,
    TextBlock,
    TextDeltaChunk,
    ThinkingBlock,
    ThinkingDeltaChunk,
    Tool,
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
    ToolValidation,
    UserMessage,
    Valid,
    assert_never,
    to_json,
)

MAX_SAFE_INTEGER = 2**53 - 1

# --- shared, immutable sample values ------------------------------------------------------

ARGUMENTS = JsonObject({"left": 20, "right": 22, "options": {"round": [1, {"deep": True}]}})
TOOL_CALL = ToolCall(id="call-add-001", name="add", arguments=ARGUMENTS)
TEXT = TextBlock(text="Let me add that.")
USER = UserMessage(id="message-user", content="What is 20 + 22?")
ASSISTANT = AssistantMessage(id="message-assistant", content=(TEXT, TOOL_CALL))
TOOL_RESULT = ToolResultMessage(
    id="tool-result-call-add-001",
    tool_call_id="call-add-001",
    tool_name="add",
    content="42",
    is_error=False,
)
REQUEST = ModelRequest(id="request-001", messages=(USER, ASSISTANT, TOOL_RESULT))
TEXT_CHUNK = TextDeltaChunk(request_id="request-001", delta="Let me")
TOOL_CHUNK = ToolCallChunk(request_id="request-001", tool_call=TOOL_CALL)
USAGE = ModelUsage(input_tokens=12, output_tokens=7)
RESPONSE = ModelResponse(
    id="response-1",
    request_id="request-001",
    message=ASSISTANT,
    stop_reason="toolCall",
    usage=USAGE,
)
RUN_ERROR = RunError(code="MODEL_STREAM_FAILED", message="The model stream failed")
COMPLETED = CompletedRunResult(messages=(USER,), final_text="The sum is 42.")
CANCELLED = CancelledRunResult(messages=(USER,), reason="stopped by the user")
MAX_STEPS = MaxStepsRunResult(messages=(USER, ASSISTANT, TOOL_RESULT), max_steps=3)
FAILED = FailedRunResult(messages=(), error=RUN_ERROR)
ACCEPTED_EVENT = MessageAcceptedEvent(sequence=0, payload=MessageAcceptedPayload(message=USER))
CHUNK_EVENT = ModelChunkEvent(sequence=1, payload=ModelChunkPayload(chunk=TEXT_CHUNK))
STARTED_EVENT = ToolStartedEvent(sequence=2, payload=ToolStartedPayload(tool_call=TOOL_CALL))
FINISHED_EVENT = ToolFinishedEvent(sequence=3, payload=ToolFinishedPayload(message=TOOL_RESULT))
RUN_FINISHED_EVENT = RunFinishedEvent(sequence=4, payload=RunFinishedPayload(result=COMPLETED))
PROGRESS_EVENT = ToolProgressEvent(
    sequence=5,
    payload=ToolProgressPayload(tool_call_id="call-add-001", tool_name="add", text="first\n"),
)
RETRY_EVENT = ModelRetryEvent(
    sequence=6,
    payload=ModelRetryPayload(
        request_id="request-001",
        attempt=1,
        delay_ms=2000,
        code="PROVIDER_OVERLOADED",
        reason="HTTP 503",
    ),
)
VALID = Valid(value=42)
THINKING = ThinkingBlock(text="Add them.", signature="sig")
TOOL_SPEC = ToolSpec(name="add", description="Add two integers.", parameters=JsonObject())
THINKING_CHUNK = ThinkingDeltaChunk(request_id="request-001", delta="Add")
TOOL_DELTA_CHUNK = ToolCallDeltaChunk(
    request_id="request-001", index=0, id="call-add-001", name="add", arguments_delta="{"
)
INVALID = Invalid(error="left must be a number")

SAMPLES: dict[str, object] = {
    "TextBlock": TEXT,
    "ImageBlock": ImageBlock.from_bytes(png(2, 2)),
    "ThinkingBlock": THINKING,
    "ToolSpec": TOOL_SPEC,
    "ThinkingDeltaChunk": THINKING_CHUNK,
    "ToolCallDeltaChunk": TOOL_DELTA_CHUNK,
    "ToolCall": TOOL_CALL,
    "UserMessage": USER,
    "AssistantMessage": ASSISTANT,
    "ToolResultMessage": TOOL_RESULT,
    "ModelRequest": REQUEST,
    "TextDeltaChunk": TEXT_CHUNK,
    "ToolCallChunk": TOOL_CHUNK,
    "ModelUsage": USAGE,
    "ModelResponse": RESPONSE,
    "Valid": VALID,
    "Invalid": INVALID,
    "ToolExecutionContext": ToolExecutionContext(
        signal=AbortController().signal, tool_call_id="call-add-001"
    ),
    "RunContext": RunContext(
        signal=AbortController().signal, tool_call_id="call-add-001", deps={"db": 1}
    ),
    "RunError": RUN_ERROR,
    "CompletedRunResult": COMPLETED,
    "CancelledRunResult": CANCELLED,
    "MaxStepsRunResult": MAX_STEPS,
    "FailedRunResult": FAILED,
    "MessageAcceptedPayload": ACCEPTED_EVENT.payload,
    "ModelChunkPayload": CHUNK_EVENT.payload,
    "ToolStartedPayload": STARTED_EVENT.payload,
    "ToolFinishedPayload": FINISHED_EVENT.payload,
    "RunFinishedPayload": RUN_FINISHED_EVENT.payload,
    "MessageAcceptedEvent": ACCEPTED_EVENT,
    "ModelChunkEvent": CHUNK_EVENT,
    "ToolStartedEvent": STARTED_EVENT,
    "ToolFinishedEvent": FINISHED_EVENT,
    "RunFinishedEvent": RUN_FINISHED_EVENT,
    "ToolProgressPayload": PROGRESS_EVENT.payload,
    "ToolProgressEvent": PROGRESS_EVENT,
    "ModelRetryPayload": RETRY_EVENT.payload,
    "ModelRetryEvent": RETRY_EVENT,
}
"""One well-formed instance of every protocol dataclass, keyed by class name."""


def _protocol_dataclasses() -> set[str]:
    return {
        name
        for name, value in vars(protocol).items()
        if isinstance(value, type)
        and value.__module__.startswith(f"{protocol.__name__}.")
        and hasattr(value, "__dataclass_fields__")
    }


def test_samples_cover_every_protocol_dataclass() -> None:
    assert set(SAMPLES) == _protocol_dataclasses()
    assert all(type(sample).__name__ == name for name, sample in SAMPLES.items())


# --- discriminants -------------------------------------------------------------------------

DEFAULT_DISCRIMINANTS: list[tuple[object, str, object]] = [
    (TextBlock(text="x"), "type", "text"),
    (ToolCall(id="c", name="n", arguments=JsonObject()), "type", "toolCall"),
    (UserMessage(id="m", content="x"), "role", "user"),
    (AssistantMessage(id="m", content=()), "role", "assistant"),
    (
        ToolResultMessage(id="m", tool_call_id="c", tool_name="n", content="", is_error=True),
        "role",
        "toolResult",
    ),
    (TextDeltaChunk(request_id="r", delta="x"), "type", "textDelta"),
    (ToolCallChunk(request_id="r", tool_call=TOOL_CALL), "type", "toolCall"),
    (Valid(value=None), "ok", True),
    (Invalid(error="e"), "ok", False),
    (CompletedRunResult(messages=(), final_text=""), "status", "completed"),
    (CancelledRunResult(messages=(), reason=""), "status", "cancelled"),
    (MaxStepsRunResult(messages=(), max_steps=1), "status", "maxSteps"),
    (FailedRunResult(messages=(), error=RUN_ERROR), "status", "failed"),
    (MessageAcceptedEvent(sequence=0, payload=ACCEPTED_EVENT.payload), "type", "message.accepted"),
    (ModelChunkEvent(sequence=0, payload=CHUNK_EVENT.payload), "type", "model.chunk"),
    (ToolStartedEvent(sequence=0, payload=STARTED_EVENT.payload), "type", "tool.started"),
    (ToolFinishedEvent(sequence=0, payload=FINISHED_EVENT.payload), "type", "tool.finished"),
    (RunFinishedEvent(sequence=0, payload=RUN_FINISHED_EVENT.payload), "type", "run.finished"),
    (ToolProgressEvent(sequence=0, payload=PROGRESS_EVENT.payload), "type", "tool.progress"),
    (ModelRetryEvent(sequence=0, payload=RETRY_EVENT.payload), "type", "model.retry"),
]


@pytest.mark.parametrize(
    ("value", "field", "expected"),
    DEFAULT_DISCRIMINANTS,
    ids=[f"{type(value).__name__}.{field}" for value, field, _ in DEFAULT_DISCRIMINANTS],
)
def test_discriminant_defaults_to_its_only_legal_value(
    value: object, field: str, expected: object
) -> None:
    actual = getattr(value, field)
    assert actual == expected
    assert type(actual) is type(expected)


@pytest.mark.parametrize(
    ("value", "field", "expected"),
    DEFAULT_DISCRIMINANTS,
    ids=[f"{type(value).__name__}.{field}" for value, field, _ in DEFAULT_DISCRIMINANTS],
)
def test_discriminant_annotation_is_the_single_literal(
    value: object, field: str, expected: object
) -> None:
    hints = get_type_hints(type(value))
    assert get_args(hints[field]) == (expected,)


def test_text_delta_chunk_example_from_the_design() -> None:
    assert TextDeltaChunk(request_id="r", delta="x").type == "textDelta"


def test_exact_discriminant_strings() -> None:
    assert ToolResultMessage.__dataclass_fields__["role"].default == "toolResult"
    assert ToolCall.__dataclass_fields__["type"].default == "toolCall"
    assert ToolCallChunk.__dataclass_fields__["type"].default == "toolCall"
    assert TextDeltaChunk.__dataclass_fields__["type"].default == "textDelta"
    assert MaxStepsRunResult.__dataclass_fields__["status"].default == "maxSteps"
    assert [
        cls.__dataclass_fields__["type"].default
        for cls in (
            MessageAcceptedEvent,
            ModelChunkEvent,
            ToolStartedEvent,
            ToolFinishedEvent,
            RunFinishedEvent,
        )
    ] == ["message.accepted", "model.chunk", "tool.started", "tool.finished", "run.finished"]


def test_literal_aliases_list_exactly_the_closed_sets() -> None:
    assert get_args(RunStatus) == ("completed", "cancelled", "maxSteps", "failed")
    assert get_args(StopReason) == ("stop", "toolCall", "length", "refusal")
    assert get_args(AgentEventType) == (
        "message.accepted",
        "model.chunk",
        "model.retry",
        "tool.started",
        "tool.progress",
        "tool.finished",
        "run.finished",
    )


# --- immutability --------------------------------------------------------------------------

FIELD_CASES: list[tuple[str, str]] = [
    (name, field.name) for name, sample in SAMPLES.items() for field in fields(cast(Any, sample))
]


@pytest.mark.parametrize(("sample_name", "field"), FIELD_CASES)
def test_assigning_any_field_raises(sample_name: str, field: str) -> None:
    sample = SAMPLES[sample_name]
    before = getattr(sample, field)
    with pytest.raises(FrozenInstanceError):
        setattr(sample, field, before)
    with pytest.raises(FrozenInstanceError):
        delattr(sample, field)
    assert getattr(sample, field) is before


@pytest.mark.parametrize("sample_name", list(SAMPLES))
def test_new_attributes_cannot_be_added(sample_name: str) -> None:
    sample = SAMPLES[sample_name]
    attribute = "extra"
    # CPython 3.11's frozen+slots dataclass __setattr__ raises TypeError (from its super()
    # call) rather than FrozenInstanceError for a non-field name; either way it must raise.
    with pytest.raises((AttributeError, TypeError)):
        setattr(sample, attribute, 1)
    assert not hasattr(sample, attribute)
    assert not hasattr(sample, "__dict__")


def test_sequences_are_tuples_without_mutators() -> None:
    for sequence in (ASSISTANT.content, REQUEST.messages, MAX_STEPS.messages):
        assert type(sequence) is tuple
        assert not hasattr(sequence, "append")
        with pytest.raises(TypeError):
            cast(Any, sequence)[0] = TEXT


def test_tool_call_arguments_reject_item_assignment() -> None:
    arguments: Any = TOOL_CALL.arguments
    with pytest.raises(TypeError):
        arguments["left"] = 1
    with pytest.raises(TypeError):
        del arguments["left"]
    assert TOOL_CALL.arguments["left"] == 20


def _unchecked(value: object) -> Any:
    """The same object, typed ``Any`` so a test can attempt what the types forbid."""
    return value


def test_nested_arguments_are_immutable_all_the_way_down() -> None:
    options = TOOL_CALL.arguments["options"]
    assert type(options) is JsonObject
    with pytest.raises(TypeError):
        _unchecked(options)["round"] = []
    rounding = options["round"]
    assert type(rounding) is tuple
    assert not hasattr(_unchecked(rounding), "append")
    deepest = _unchecked(rounding)[1]
    assert type(deepest) is JsonObject
    with pytest.raises(TypeError):
        _unchecked(deepest)["deep"] = False
    assert TOOL_CALL.arguments == {
        "left": 20,
        "right": 22,
        "options": {"round": [1, {"deep": True}]},
    }


def test_nested_run_error_cannot_be_rewritten() -> None:
    code = "code"
    with pytest.raises(FrozenInstanceError):
        setattr(FAILED.error, code, "OTHER")
    assert FAILED.error.code == "MODEL_STREAM_FAILED"


# --- construction checks -------------------------------------------------------------------

IMAGE = ImageBlock.from_bytes(png(2, 2))
VALID_KWARGS: dict[type, dict[str, Any]] = {
    TextBlock: {"text": "t"},
    ImageBlock: {"media_type": "image/png", "data": IMAGE.data, "width": 2, "height": 2},
    ThinkingBlock: {"text": "t", "signature": "s", "redacted": False},
    ToolSpec: {"name": "n", "description": "", "parameters": JsonObject()},
    ThinkingDeltaChunk: {"request_id": "r", "delta": ""},
    ToolCallDeltaChunk: {"request_id": "r", "index": 0, "id": None, "name": None},
    ToolCall: {"id": "c", "name": "n", "arguments": JsonObject()},
    UserMessage: {"id": "m", "content": "c"},
    AssistantMessage: {"id": "m", "content": (TEXT, TOOL_CALL)},
    ToolResultMessage: {
        "id": "m",
        "tool_call_id": "c",
        "tool_name": "n",
        "content": "",
        "is_error": False,
    },
    ModelRequest: {"id": "r", "messages": (USER, ASSISTANT)},
    TextDeltaChunk: {"request_id": "r", "delta": ""},
    ToolCallChunk: {"request_id": "r", "tool_call": TOOL_CALL},
    ModelUsage: {"input_tokens": 0, "output_tokens": MAX_SAFE_INTEGER},
    ModelResponse: {
        "id": "p",
        "request_id": "r",
        "message": ASSISTANT,
        "stop_reason": "stop",
        "usage": USAGE,
    },
    Valid: {"value": object()},
    Invalid: {"error": "e"},
    ToolExecutionContext: {"signal": AbortController().signal, "tool_call_id": "c"},
    RunContext: {"signal": AbortController().signal, "tool_call_id": "c", "deps": None},
    RunError: {"code": "C", "message": ""},
    CompletedRunResult: {"messages": (USER,), "final_text": ""},
    CancelledRunResult: {"messages": (), "reason": "r"},
    MaxStepsRunResult: {"messages": (), "max_steps": 1},
    FailedRunResult: {"messages": (), "error": RUN_ERROR},
    MessageAcceptedPayload: {"message": TOOL_RESULT},
    ModelChunkPayload: {"chunk": TOOL_CHUNK},
    ToolStartedPayload: {"tool_call": TOOL_CALL},
    ToolFinishedPayload: {"message": TOOL_RESULT},
    RunFinishedPayload: {"result": FAILED},
    MessageAcceptedEvent: {"sequence": 0, "payload": ACCEPTED_EVENT.payload},
    ModelChunkEvent: {"sequence": 0, "payload": CHUNK_EVENT.payload},
    ToolStartedEvent: {"sequence": 0, "payload": STARTED_EVENT.payload},
    ToolFinishedEvent: {"sequence": 0, "payload": FINISHED_EVENT.payload},
    RunFinishedEvent: {"sequence": MAX_SAFE_INTEGER, "payload": RUN_FINISHED_EVENT.payload},
    ToolProgressPayload: {"tool_call_id": "c", "tool_name": "n", "text": "x"},
    ToolProgressEvent: {"sequence": 0, "payload": PROGRESS_EVENT.payload},
    ModelRetryPayload: {
        "request_id": "r",
        "attempt": 1,
        "delay_ms": 0,
        "code": "C",
        "reason": "HTTP 429",
    },
    ModelRetryEvent: {"sequence": 0, "payload": RETRY_EVENT.payload},
}


def test_valid_kwargs_cover_every_protocol_dataclass() -> None:
    assert {cls.__name__ for cls in VALID_KWARGS} == _protocol_dataclasses()


@pytest.mark.parametrize("cls", list(VALID_KWARGS), ids=lambda cls: cls.__name__)
def test_well_formed_values_construct(cls: type) -> None:
    value = cls(**VALID_KWARGS[cls])
    for name, expected in VALID_KWARGS[cls].items():
        assert getattr(value, name) is expected


INVALID_FIELDS: list[tuple[type, str, object]] = [
    (TextBlock, "type", "txt"),
    (TextBlock, "text", None),
    (TextBlock, "text", b"bytes"),
    (ToolCall, "type", "tool_call"),
    (ToolCall, "id", ""),
    (ToolCall, "id", 7),
    (ToolCall, "name", ""),
    (ToolCall, "arguments", None),
    (ToolCall, "arguments", {1, 2}),
    (ThinkingBlock, "text", None),
    (ThinkingBlock, "signature", 7),
    (ThinkingBlock, "redacted", 1),
    (ToolSpec, "name", ""),
    (ToolSpec, "parameters", None),
    (ModelRequest, "system", 7),
    (ModelRequest, "tools", (TEXT,)),
    (ThinkingDeltaChunk, "delta", None),
    (ToolCallDeltaChunk, "index", -1),
    (ToolCallDeltaChunk, "id", ""),
    (ToolCallDeltaChunk, "arguments_delta", None),
    (ModelUsage, "cache_read_tokens", -1),
    (ModelResponse, "model", 7),
    (CompletedRunResult, "usage", None),
    (UserMessage, "id", ""),
    (UserMessage, "id", None),
    (UserMessage, "role", "assistant"),
    (UserMessage, "content", 1),
    (AssistantMessage, "role", "user"),
    (AssistantMessage, "content", TEXT),
    (AssistantMessage, "content", (USER,)),
    (AssistantMessage, "content", ({"type": "text", "text": "x"},)),
    (ToolResultMessage, "role", "tool"),
    (ToolResultMessage, "tool_call_id", ""),
    (ToolResultMessage, "tool_name", " "),
    (ToolResultMessage, "content", None),
    (ToolResultMessage, "is_error", 0),
    (ToolResultMessage, "is_error", "false"),
    (ModelRequest, "id", ""),
    (ModelRequest, "messages", (TEXT,)),
    (TextDeltaChunk, "type", "text"),
    (TextDeltaChunk, "request_id", ""),
    (TextDeltaChunk, "delta", None),
    (ToolCallChunk, "request_id", ""),
    (ToolCallChunk, "tool_call", TEXT),
    (ToolCallChunk, "tool_call", {"id": "c", "name": "n", "arguments": {}}),
    (ModelUsage, "input_tokens", True),
    (ModelUsage, "output_tokens", False),
    (ModelUsage, "input_tokens", -1),
    (ModelUsage, "output_tokens", MAX_SAFE_INTEGER + 1),
    (ModelUsage, "input_tokens", 2**64),
    (ModelUsage, "input_tokens", 1.0),
    (ModelUsage, "input_tokens", "1"),
    (ModelResponse, "id", ""),
    (ModelResponse, "request_id", ""),
    (ModelResponse, "message", USER),
    (ModelResponse, "stop_reason", "tool_call"),
    (ModelResponse, "stop_reason", "max_tokens"),
    (ModelResponse, "stop_reason", None),
    (ModelResponse, "usage", {"input_tokens": 1, "output_tokens": 1}),
    (Valid, "ok", False),
    (Invalid, "ok", True),
    (Invalid, "error", ""),
    (ToolExecutionContext, "signal", None),
    (ToolExecutionContext, "signal", AbortController()),
    (ToolExecutionContext, "tool_call_id", ""),
    (ToolExecutionContext, "progress", "print"),
    (RunError, "code", ""),
    (RunError, "message", None),
    (CompletedRunResult, "status", "running"),
    (CompletedRunResult, "messages", (TEXT,)),
    (CompletedRunResult, "final_text", None),
    (CancelledRunResult, "status", "completed"),
    (CancelledRunResult, "reason", None),
    (MaxStepsRunResult, "status", "max_steps"),
    (MaxStepsRunResult, "max_steps", 0),
    (MaxStepsRunResult, "max_steps", True),
    (MaxStepsRunResult, "max_steps", 1.5),
    (FailedRunResult, "status", "failed!"),
    (FailedRunResult, "error", {"code": "C", "message": "m"}),
    (FailedRunResult, "error", None),
    (MessageAcceptedPayload, "message", TEXT),
    (ModelChunkPayload, "chunk", TOOL_CALL),
    (ToolStartedPayload, "tool_call", TOOL_CHUNK),
    (ToolFinishedPayload, "message", USER),
    (RunFinishedPayload, "result", RUN_ERROR),
    (MessageAcceptedEvent, "type", "message_accepted"),
    (MessageAcceptedEvent, "sequence", -1),
    (MessageAcceptedEvent, "sequence", True),
    (MessageAcceptedEvent, "sequence", 1.0),
    (MessageAcceptedEvent, "payload", CHUNK_EVENT.payload),
    (ModelChunkEvent, "payload", ACCEPTED_EVENT.payload),
    (ToolStartedEvent, "payload", FINISHED_EVENT.payload),
    (ToolFinishedEvent, "payload", STARTED_EVENT.payload),
    (RunFinishedEvent, "payload", COMPLETED),
    (ToolProgressPayload, "text", b"out"),
    (ToolProgressPayload, "tool_call_id", " "),
    (ToolProgressPayload, "tool_name", None),
    (ToolProgressEvent, "payload", STARTED_EVENT.payload),
    (ModelRetryPayload, "attempt", 0),
    (ModelRetryPayload, "attempt", True),
    (ModelRetryPayload, "delay_ms", -1),
    (ModelRetryPayload, "delay_ms", 1.5),
    (ModelRetryPayload, "delay_ms", MAX_SAFE_INTEGER + 1),
    (ModelRetryPayload, "code", ""),
    (ModelRetryPayload, "reason", 503),
    (ModelRetryEvent, "payload", PROGRESS_EVENT.payload),
]


@pytest.mark.parametrize(
    ("cls", "field", "bad"),
    INVALID_FIELDS,
    ids=[f"{cls.__name__}.{field}={bad!r}"[:60] for cls, field, bad in INVALID_FIELDS],
)
def test_wrong_field_value_raises_type_error_naming_the_field(
    cls: type, field: str, bad: object
) -> None:
    kwargs = {**VALID_KWARGS[cls], field: bad}
    with pytest.raises(TypeError, match=field):
        cls(**kwargs)


def test_running_is_not_a_run_status_at_runtime() -> None:
    completed: Any = CompletedRunResult
    with pytest.raises(TypeError):
        completed(status="running", messages=(), final_text="")


@pytest.mark.parametrize(
    "blank", ["", " ", "\t\r\n", "\u00a0", "\ufeff", "\u2028", "\u3000", "\u2003\u202f"]
)
def test_blank_ids_are_rejected_like_javascript_trim(blank: str) -> None:
    with pytest.raises(TypeError, match="id"):
        UserMessage(id=blank, content="x")


@pytest.mark.parametrize("identifier", ["a", " a ", "\x1c", "\u200b", "request-001"])
def test_ids_that_javascript_trim_keeps_are_accepted(identifier: str) -> None:
    assert UserMessage(id=identifier, content="x").id == identifier


def test_string_subclasses_are_not_strings() -> None:
    class Str(str):
        pass

    with pytest.raises(TypeError):
        TextBlock(text=Str("x"))
    with pytest.raises(TypeError):
        TextBlock(type=cast(Any, Str("text")), text="x")


def test_token_counts_accept_the_safe_integer_range() -> None:
    usage = ModelUsage(input_tokens=0, output_tokens=MAX_SAFE_INTEGER)
    assert (usage.input_tokens, usage.output_tokens) == (0, MAX_SAFE_INTEGER)


class RaisingComparison:
    """A wrong-typed value whose comparisons explode."""

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("__eq__ called")

    def __ne__(self, other: object) -> bool:
        raise RuntimeError("__ne__ called")

    __hash__ = object.__hash__


@pytest.mark.parametrize(
    ("cls", "field"),
    [
        (UserMessage, "role"),
        (TextBlock, "type"),
        (CompletedRunResult, "status"),
        (ModelResponse, "stop_reason"),
    ],
)
def test_wrong_typed_discriminant_with_hostile_comparison_raises_type_error(
    cls: type, field: str
) -> None:
    kwargs = {**VALID_KWARGS[cls], field: RaisingComparison()}
    with pytest.raises(TypeError):
        cls(**kwargs)


# --- keyword-only --------------------------------------------------------------------------


@pytest.mark.parametrize("sample_name", list(SAMPLES))
def test_positional_construction_raises(sample_name: str) -> None:
    sample = _unchecked(SAMPLES[sample_name])
    cls = _unchecked(type(SAMPLES[sample_name]))
    positional = [getattr(sample, field.name) for field in fields(sample)]
    with pytest.raises(TypeError):
        cls(*positional)
    assert cls(**{field.name: getattr(sample, field.name) for field in fields(sample)}) == sample


# --- to_json ---------------------------------------------------------------------------------

ARGUMENTS_JSON = {"left": 20, "right": 22, "options": {"round": [1, {"deep": True}]}}
TOOL_CALL_JSON = {
    "type": "toolCall",
    "id": "call-add-001",
    "name": "add",
    "arguments": ARGUMENTS_JSON,
}
TEXT_JSON = {"type": "text", "text": "Let me add that."}
USER_JSON = {"id": "message-user", "role": "user", "content": "What is 20 + 22?"}
ASSISTANT_JSON = {
    "id": "message-assistant",
    "role": "assistant",
    "content": [TEXT_JSON, TOOL_CALL_JSON],
}
TOOL_RESULT_JSON = {
    "id": "tool-result-call-add-001",
    "role": "toolResult",
    "toolCallId": "call-add-001",
    "toolName": "add",
    "content": "42",
    "isError": False,
}
USAGE_JSON = {"inputTokens": 12, "outputTokens": 7}
COMPLETED_JSON = {"status": "completed", "messages": [USER_JSON], "finalText": "The sum is 42."}

TO_JSON_CASES: list[tuple[str, object, object]] = [
    ("TextBlock", TEXT, TEXT_JSON),
    (
        "ImageBlock",
        IMAGE,
        {
            "type": "image",
            "mediaType": "image/png",
            "data": base64.b64encode(IMAGE.data).decode(),
            "width": 2,
            "height": 2,
        },
    ),
    (
        "ThinkingBlock",
        THINKING,
        {"type": "thinking", "text": "Add them.", "signature": "sig"},
    ),
    (
        "ToolSpec",
        TOOL_SPEC,
        {"name": "add", "description": "Add two integers.", "parameters": {}},
    ),
    (
        "ThinkingDeltaChunk",
        THINKING_CHUNK,
        {"type": "thinkingDelta", "requestId": "request-001", "delta": "Add"},
    ),
    (
        "ToolCallDeltaChunk",
        TOOL_DELTA_CHUNK,
        {
            "type": "toolCallDelta",
            "requestId": "request-001",
            "index": 0,
            "id": "call-add-001",
            "name": "add",
            "argumentsDelta": "{",
        },
    ),
    ("ToolCall", TOOL_CALL, TOOL_CALL_JSON),
    ("UserMessage", USER, USER_JSON),
    ("AssistantMessage", ASSISTANT, ASSISTANT_JSON),
    ("ToolResultMessage", TOOL_RESULT, TOOL_RESULT_JSON),
    (
        "ModelRequest",
        REQUEST,
        {"id": "request-001", "messages": [USER_JSON, ASSISTANT_JSON, TOOL_RESULT_JSON]},
    ),
    (
        "TextDeltaChunk",
        TEXT_CHUNK,
        {"type": "textDelta", "requestId": "request-001", "delta": "Let me"},
    ),
    (
        "ToolCallChunk",
        TOOL_CHUNK,
        {"type": "toolCall", "requestId": "request-001", "toolCall": TOOL_CALL_JSON},
    ),
    ("ModelUsage", USAGE, USAGE_JSON),
    (
        "ModelResponse",
        RESPONSE,
        {
            "id": "response-1",
            "requestId": "request-001",
            "message": ASSISTANT_JSON,
            "stopReason": "toolCall",
            "usage": USAGE_JSON,
        },
    ),
    (
        "MessageAcceptedEvent",
        ACCEPTED_EVENT,
        {"type": "message.accepted", "sequence": 0, "payload": {"message": USER_JSON}},
    ),
    (
        "ModelChunkEvent",
        CHUNK_EVENT,
        {
            "type": "model.chunk",
            "sequence": 1,
            "payload": {
                "chunk": {"type": "textDelta", "requestId": "request-001", "delta": "Let me"}
            },
        },
    ),
    (
        "ToolStartedEvent",
        STARTED_EVENT,
        {"type": "tool.started", "sequence": 2, "payload": {"toolCall": TOOL_CALL_JSON}},
    ),
    (
        "ToolFinishedEvent",
        FINISHED_EVENT,
        {"type": "tool.finished", "sequence": 3, "payload": {"message": TOOL_RESULT_JSON}},
    ),
    (
        "RunFinishedEvent",
        RUN_FINISHED_EVENT,
        {"type": "run.finished", "sequence": 4, "payload": {"result": COMPLETED_JSON}},
    ),
    (
        "ToolProgressEvent",
        PROGRESS_EVENT,
        {
            "type": "tool.progress",
            "sequence": 5,
            "payload": {"toolCallId": "call-add-001", "toolName": "add", "text": "first\n"},
        },
    ),
    (
        "ModelRetryEvent",
        RETRY_EVENT,
        {
            "type": "model.retry",
            "sequence": 6,
            "payload": {
                "requestId": "request-001",
                "attempt": 1,
                "delayMs": 2000,
                "code": "PROVIDER_OVERLOADED",
                "reason": "HTTP 503",
            },
        },
    ),
    ("CompletedRunResult", COMPLETED, COMPLETED_JSON),
    (
        "CancelledRunResult",
        CANCELLED,
        {"status": "cancelled", "messages": [USER_JSON], "reason": "stopped by the user"},
    ),
    (
        "MaxStepsRunResult",
        MAX_STEPS,
        {
            "status": "maxSteps",
            "messages": [USER_JSON, ASSISTANT_JSON, TOOL_RESULT_JSON],
            "maxSteps": 3,
        },
    ),
    (
        "FailedRunResult",
        FAILED,
        {
            "status": "failed",
            "messages": [],
            "error": {"code": "MODEL_STREAM_FAILED", "message": "The model stream failed"},
        },
    ),
    ("RunError", RUN_ERROR, {"code": "MODEL_STREAM_FAILED", "message": "The model stream failed"}),
    ("Valid", VALID, {"ok": True, "value": 42}),
    ("Valid with JSON object", Valid(value=ARGUMENTS), {"ok": True, "value": ARGUMENTS_JSON}),
    ("Invalid", INVALID, {"ok": False, "error": "left must be a number"}),
]


@pytest.mark.parametrize(
    ("value", "expected"),
    [(value, expected) for _, value, expected in TO_JSON_CASES],
    ids=[name for name, _, _ in TO_JSON_CASES],
)
def test_to_json_uses_exact_camel_case_keys_in_order(value: object, expected: object) -> None:
    encoded = to_json(value)
    assert encoded == expected
    # json.dumps keeps insertion order, so equal text means equal key order at every level
    assert json.dumps(encoded) == json.dumps(expected)


@pytest.mark.parametrize("name", [name for name, _, _ in TO_JSON_CASES])
def test_to_json_returns_fresh_plain_containers(name: str) -> None:
    value = next(value for case, value, _ in TO_JSON_CASES if case == name)
    first = to_json(value)
    second = to_json(value)
    assert first == second
    assert first is not second
    _assert_plain_json(first)


def _assert_plain_json(value: object) -> None:
    if type(value) is dict:
        for key, item in cast(dict[object, object], value).items():
            assert type(key) is str
            _assert_plain_json(item)
    elif type(value) is list:
        for item in cast(list[object], value):
            _assert_plain_json(item)
    else:
        assert value is None or type(value) in (str, int, float, bool)


def test_every_json_encodable_protocol_class_has_a_to_json_case() -> None:
    encoded_classes = {type(value).__name__ for _, value, _ in TO_JSON_CASES}
    payloads = {
        "MessageAcceptedPayload",
        "ModelChunkPayload",
        "ToolStartedPayload",
        "ToolFinishedPayload",
        "RunFinishedPayload",
        "ToolProgressPayload",
        "ModelRetryPayload",
    }  # encoded inside their events
    contexts = {"ToolExecutionContext", "RunContext"}  # hold a live signal: never JSON
    assert encoded_classes | payloads | contexts == _protocol_dataclasses()


def test_to_json_of_a_transcript_is_a_list() -> None:
    assert to_json((USER, TOOL_RESULT)) == [USER_JSON, TOOL_RESULT_JSON]
    assert to_json([USER, TOOL_RESULT]) == [USER_JSON, TOOL_RESULT_JSON]


def test_to_json_mutation_does_not_reach_the_protocol_value() -> None:
    encoded = to_json(TOOL_CALL)
    encoded["arguments"]["options"]["round"].append(2)
    assert to_json(TOOL_CALL) == TOOL_CALL_JSON


@pytest.mark.parametrize(
    "value",
    [
        object(),
        {"type": "text", "text": "x"},
        [TEXT, object()],
        b"bytes",
        AbortController().signal,
        SAMPLES["ToolExecutionContext"],
        (SAMPLES["ToolExecutionContext"],),
    ],
    ids=["object", "dict", "list-with-object", "bytes", "signal", "context", "tuple-with-context"],
)
def test_to_json_rejects_non_protocol_values(value: object) -> None:
    with pytest.raises(TypeError):
        to_json(value)


# --- assert_never and exhaustive matching -------------------------------------------------


def test_assert_never_raises_assertion_error_with_the_value() -> None:
    with pytest.raises(AssertionError) as caught:
        assert_never(cast(Never, "unexpected"))
    assert str(caught.value) == "Unexpected protocol value: unexpected"


Branch = Literal["completed", "cancelled", "maxSteps", "failed"]


def describe_run(result: RunResult) -> tuple[Branch, str]:
    """The seed's exhaustive consumer: one branch per status, ``assert_never`` by default."""
    match result.status:
        case "completed":
            return "completed", result.final_text
        case "cancelled":
            return "cancelled", result.reason
        case "maxSteps":
            return "maxSteps", str(result.max_steps)
        case "failed":
            return "failed", result.error.code
        case _:  # pragma: no cover - reached only by a value the types forbid
            return assert_never(result)


@pytest.mark.parametrize(
    ("result", "expected"),
    [
        (COMPLETED, ("completed", "The sum is 42.")),
        (CANCELLED, ("cancelled", "stopped by the user")),
        (MAX_STEPS, ("maxSteps", "3")),
        (FAILED, ("failed", "MODEL_STREAM_FAILED")),
    ],
    ids=["completed", "cancelled", "maxSteps", "failed"],
)
def test_every_run_status_reaches_its_own_branch(
    result: RunResult, expected: tuple[Branch, str]
) -> None:
    assert describe_run(result) == expected


def test_each_status_reaches_a_distinct_branch() -> None:
    branches = [describe_run(result)[0] for result in (COMPLETED, CANCELLED, MAX_STEPS, FAILED)]
    assert branches == list(get_args(RunStatus))


def test_an_unknown_status_reaches_assert_never() -> None:
    @dataclass(frozen=True)
    class DeferredRunResult:
        status: str = "deferred"

        def __str__(self) -> str:
            return "deferred-result"

    with pytest.raises(AssertionError, match=r"^Unexpected protocol value: deferred-result$"):
        describe_run(cast(RunResult, DeferredRunResult()))


# --- the two-stage tool contract ----------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class AddInput:
    left: int
    right: int


class AddTool:
    """Validates untrusted arguments into ``AddInput``; only that reaches ``execute``."""

    name = "add"
    description = "Add two integers."

    def __init__(self) -> None:
        self.validated: list[object] = []
        self.executed: list[AddInput] = []

    def validate(self, input: object, /) -> ToolValidation[AddInput]:
        self.validated.append(input)
        if type(input) is not JsonObject:
            return Invalid(error="arguments must be a JSON object")
        left = input.get("left")
        right = input.get("right")
        if type(left) is not int or type(right) is not int:
            return Invalid(error="left and right must be integers")
        return Valid(value=AddInput(left=left, right=right))

    async def execute(self, input: AddInput, context: ToolExecutionContext, /) -> int:
        context.signal.throw_if_aborted()
        self.executed.append(input)
        return input.left + input.right


InputT = TypeVar("InputT")
OutputT = TypeVar("OutputT")


async def call_tool(
    tool: Tool[InputT, OutputT], tool_call: ToolCall, signal: AbortSignal
) -> OutputT | Invalid:
    """Validate first; only a ``Valid`` decision's value reaches ``execute``."""
    decision = tool.validate(tool_call.arguments)
    if isinstance(decision, Invalid):
        return decision
    context = ToolExecutionContext(signal=signal, tool_call_id=tool_call.id)
    return await tool.execute(decision.value, context)


async def test_valid_arguments_reach_execute_as_the_validated_value() -> None:
    tool = AddTool()
    typed: Tool[AddInput, int] = tool
    outcome = await call_tool(typed, TOOL_CALL, AbortController().signal)
    assert outcome == 42
    assert tool.validated == [TOOL_CALL.arguments]
    assert tool.executed == [AddInput(left=20, right=22)]
    assert type(tool.executed[0]) is AddInput


@pytest.mark.parametrize(
    "arguments",
    [JsonObject(), JsonObject({"left": "20", "right": 22}), JsonObject({"left": True, "right": 1})],
    ids=["empty", "string", "bool"],
)
async def test_invalid_arguments_never_reach_execute(arguments: JsonObject) -> None:
    tool = AddTool()
    call = ToolCall(id="call-bad", name="add", arguments=arguments)
    outcome = await call_tool(tool, call, AbortController().signal)
    assert outcome == Invalid(error="left and right must be integers")
    assert tool.validated == [arguments]
    assert tool.executed == []


async def test_execute_receives_the_signal_and_call_id() -> None:
    received: list[ToolExecutionContext] = []

    class EchoTool:
        name = "echo"
        description = "Returns its context."

        def validate(self, input: object, /) -> ToolValidation[object]:
            return Valid(value=input)

        async def execute(self, input: object, context: ToolExecutionContext, /) -> str:
            received.append(context)
            return context.tool_call_id

    controller = AbortController()
    assert await call_tool(EchoTool(), TOOL_CALL, controller.signal) == "call-add-001"
    assert received[0].signal is controller.signal


async def test_an_aborted_signal_reaches_execute() -> None:
    controller = AbortController()
    controller.abort()
    tool = AddTool()
    with pytest.raises(AbortError):
        await call_tool(tool, TOOL_CALL, controller.signal)
    assert tool.executed == []
