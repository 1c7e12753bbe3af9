"""The closed, immutable protocol every tether layer speaks (checkpoint 01).

Messages (``user``, ``assistant``, ``toolResult``), assistant blocks, model requests, chunks and
responses, the two-stage ``Tool`` contract, agent events and the four terminal run results.

Every value is a frozen, slotted, keyword-only dataclass with a ``Literal`` discriminant that
defaults to its one legal value, so ``TextDeltaChunk(request_id="r", delta="x").type ==
"textDelta"``. Construction checks field types (``TypeError`` otherwise), so a protocol value
that exists is well-formed and deeply immutable: sequences are tuples and JSON objects are
``JsonObject``. Semantic rules that span values (tool-call linkage, stop reasons agreeing with
content) belong to the layers above; untrusted, JSON-shaped input enters through
``tether.messages`` and the model boundaries, never by calling these classes on raw data.

``to_json`` gives the workshop's camelCase JSON form of any protocol value.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Generic, Literal, Never, NoReturn, Protocol, TypeAlias, TypeVar

from tether._text import is_non_empty
from tether._types import type_of
from tether.abort import AbortSignal
from tether.jsonvalue import JsonObject, thaw_json

__all__ = [
    "AgentEvent",
    "AgentEventType",
    "AssistantBlock",
    "AssistantMessage",
    "CancelledRunResult",
    "CompletedRunResult",
    "FailedRunResult",
    "Invalid",
    "MaxStepsRunResult",
    "Message",
    "MessageAcceptedEvent",
    "MessageAcceptedPayload",
    "MessageId",
    "ModelChunk",
    "ModelChunkEvent",
    "ModelChunkPayload",
    "ModelRequest",
    "ModelRequestId",
    "ModelResponse",
    "ModelResponseId",
    "ModelUsage",
    "RunError",
    "RunFinishedEvent",
    "RunFinishedPayload",
    "RunResult",
    "RunStatus",
    "StopReason",
    "TextBlock",
    "TextDeltaChunk",
    "Tool",
    "ToolCall",
    "ToolCallChunk",
    "ToolCallId",
    "ToolExecutionContext",
    "ToolFinishedEvent",
    "ToolFinishedPayload",
    "ToolResultMessage",
    "ToolStartedEvent",
    "ToolSpec",
    "ToolStartedPayload",
    "ToolValidation",
    "UserMessage",
    "Valid",
    "assert_never",
    "to_json",
]

MessageId: TypeAlias = str
"""Identifies one message in a transcript."""
ModelRequestId: TypeAlias = str
"""Identifies one model request (``request-001``, ...)."""
ModelResponseId: TypeAlias = str
"""Identifies one model response, as chosen by the model or provider."""
ToolCallId: TypeAlias = str
"""Identifies one tool call; a tool result links back to it by this ID."""

StopReason: TypeAlias = Literal["stop", "toolCall"]
RunStatus: TypeAlias = Literal["completed", "cancelled", "maxSteps", "failed"]
AgentEventType: TypeAlias = Literal[
    "message.accepted", "model.chunk", "tool.started", "tool.finished", "run.finished"
]

MAX_SAFE_INTEGER = 2**53 - 1


def _fail(owner: str, field: str, requirement: str) -> NoReturn:
    raise TypeError(f"{owner}.{field} {requirement}")


def _check_id(owner: str, field: str, value: object) -> None:
    if not is_non_empty(value):
        _fail(owner, field, "must be a non-empty string")


def _check_str(owner: str, field: str, value: object) -> None:
    if type(value) is not str:
        _fail(owner, field, "must be a string")


def _check_literal(owner: str, field: str, value: object, expected: str) -> None:
    if type(value) is not str or value != expected:
        _fail(owner, field, f"must be {expected!r}")


def _check_messages(owner: str, value: Any) -> None:
    kind = type_of(value)
    if kind is not tuple or not _MESSAGE_TYPES.issuperset(map(type, value)):
        _fail(owner, "messages", "must be a tuple of messages")


# --- assistant blocks -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class TextBlock:
    """A run of assistant text."""

    type: Literal["text"] = "text"
    text: str

    def __post_init__(self) -> None:
        _check_literal("TextBlock", "type", self.type, "text")
        _check_str("TextBlock", "text", self.text)


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCall:
    """The model asking for one tool call. ``id`` is opaque and survives every layer unchanged."""

    type: Literal["toolCall"] = "toolCall"
    id: ToolCallId
    name: str
    arguments: JsonObject

    def __post_init__(self) -> None:
        _check_literal("ToolCall", "type", self.type, "toolCall")
        _check_id("ToolCall", "id", self.id)
        _check_id("ToolCall", "name", self.name)
        if type(self.arguments) is not JsonObject:
            _fail("ToolCall", "arguments", "must be a JsonObject")


AssistantBlock: TypeAlias = TextBlock | ToolCall

# --- messages -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class UserMessage:
    """Input from the person (or program) driving the agent."""

    id: MessageId
    role: Literal["user"] = "user"
    content: str

    def __post_init__(self) -> None:
        _check_id("UserMessage", "id", self.id)
        _check_literal("UserMessage", "role", self.role, "user")
        _check_str("UserMessage", "content", self.content)


@dataclass(frozen=True, slots=True, kw_only=True)
class AssistantMessage:
    """One complete model turn: text and tool-call blocks in the order the model produced them."""

    id: MessageId
    role: Literal["assistant"] = "assistant"
    content: tuple[AssistantBlock, ...]

    def __post_init__(self) -> None:
        _check_id("AssistantMessage", "id", self.id)
        _check_literal("AssistantMessage", "role", self.role, "assistant")
        content: Any = self.content
        kind = type_of(content)
        if kind is not tuple or not _BLOCK_TYPES.issuperset(map(type, content)):
            _fail("AssistantMessage", "content", "must be a tuple of TextBlock or ToolCall")


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolResultMessage:
    """The outcome of one tool call, linked to it by ``tool_call_id``."""

    id: MessageId
    role: Literal["toolResult"] = "toolResult"
    tool_call_id: ToolCallId
    tool_name: str
    content: str
    is_error: bool

    def __post_init__(self) -> None:
        _check_id("ToolResultMessage", "id", self.id)
        _check_literal("ToolResultMessage", "role", self.role, "toolResult")
        _check_id("ToolResultMessage", "tool_call_id", self.tool_call_id)
        _check_id("ToolResultMessage", "tool_name", self.tool_name)
        _check_str("ToolResultMessage", "content", self.content)
        if type(self.is_error) is not bool:
            _fail("ToolResultMessage", "is_error", "must be a bool")


Message: TypeAlias = UserMessage | AssistantMessage | ToolResultMessage
_MESSAGE_TYPES = frozenset({UserMessage, AssistantMessage, ToolResultMessage})
_BLOCK_TYPES = frozenset({TextBlock, ToolCall})

# --- model traffic --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelRequest:
    """What a model is asked: the transcript so far, under one request ID."""

    id: ModelRequestId
    messages: tuple[Message, ...]

    def __post_init__(self) -> None:
        _check_id("ModelRequest", "id", self.id)
        _check_messages("ModelRequest", self.messages)


@dataclass(frozen=True, slots=True, kw_only=True)
class TextDeltaChunk:
    """A streamed piece of assistant text."""

    type: Literal["textDelta"] = "textDelta"
    request_id: ModelRequestId
    delta: str

    def __post_init__(self) -> None:
        _check_literal("TextDeltaChunk", "type", self.type, "textDelta")
        _check_id("TextDeltaChunk", "request_id", self.request_id)
        _check_str("TextDeltaChunk", "delta", self.delta)


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallChunk:
    """A streamed, complete tool call."""

    type: Literal["toolCall"] = "toolCall"
    request_id: ModelRequestId
    tool_call: ToolCall

    def __post_init__(self) -> None:
        _check_literal("ToolCallChunk", "type", self.type, "toolCall")
        _check_id("ToolCallChunk", "request_id", self.request_id)
        if type(self.tool_call) is not ToolCall:
            _fail("ToolCallChunk", "tool_call", "must be a ToolCall")


ModelChunk: TypeAlias = TextDeltaChunk | ToolCallChunk


def _check_count(owner: str, field: str, value: object) -> None:
    if type(value) is not int or not 0 <= value <= MAX_SAFE_INTEGER:
        _fail(owner, field, "must be a non-negative safe integer")


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelUsage:
    """Token counts for one response: non-negative integers no larger than 2**53 - 1."""

    input_tokens: int
    output_tokens: int

    def __post_init__(self) -> None:
        _check_count("ModelUsage", "input_tokens", self.input_tokens)
        _check_count("ModelUsage", "output_tokens", self.output_tokens)


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelResponse:
    """The terminal value of one model turn."""

    id: ModelResponseId
    request_id: ModelRequestId
    message: AssistantMessage
    stop_reason: StopReason
    usage: ModelUsage

    def __post_init__(self) -> None:
        _check_id("ModelResponse", "id", self.id)
        _check_id("ModelResponse", "request_id", self.request_id)
        if type(self.message) is not AssistantMessage:
            _fail("ModelResponse", "message", "must be an AssistantMessage")
        if type(self.stop_reason) is not str or self.stop_reason not in ("stop", "toolCall"):
            _fail("ModelResponse", "stop_reason", "must be 'stop' or 'toolCall'")
        if type(self.usage) is not ModelUsage:
            _fail("ModelResponse", "usage", "must be a ModelUsage")


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolSpec:
    """What a model is told about one tool: its name, description and JSON Schema."""

    name: str
    description: str
    parameters: JsonObject

    def __post_init__(self) -> None:
        _check_id("ToolSpec", "name", self.name)
        _check_str("ToolSpec", "description", self.description)
        if type(self.parameters) is not JsonObject:
            _fail("ToolSpec", "parameters", "must be a JsonObject")


# --- tools ----------------------------------------------------------------------------------

T_co = TypeVar("T_co", covariant=True)
InputT = TypeVar("InputT")
OutputT_co = TypeVar("OutputT_co", covariant=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class Valid(Generic[T_co]):
    """A successful validation: ``value`` is the typed input ``execute`` receives."""

    ok: Literal[True] = True
    value: T_co

    def __post_init__(self) -> None:
        if self.ok is not True:
            _fail("Valid", "ok", "must be True")


@dataclass(frozen=True, slots=True, kw_only=True)
class Invalid:
    """A rejected validation; ``error`` explains what is wrong with the arguments."""

    ok: Literal[False] = False
    error: str

    def __post_init__(self) -> None:
        if self.ok is not False:
            _fail("Invalid", "ok", "must be False")
        _check_id("Invalid", "error", self.error)


ToolValidation: TypeAlias = Valid[InputT] | Invalid


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolExecutionContext:
    """What ``execute`` receives besides its input: the run's abort signal and the call ID."""

    signal: AbortSignal
    tool_call_id: ToolCallId

    def __post_init__(self) -> None:
        if not isinstance(self.signal, AbortSignal):  # pyright: ignore[reportUnnecessaryIsInstance]
            _fail("ToolExecutionContext", "signal", "must be an AbortSignal")
        _check_id("ToolExecutionContext", "tool_call_id", self.tool_call_id)


class Tool(Protocol[InputT, OutputT_co]):
    """The two-stage tool contract: ``validate`` any input first, then ``execute`` it.

    ``validate`` must accept ``object`` (model output is untrusted) and return a decision;
    only a ``Valid`` value's ``value`` ever reaches the asynchronous ``execute``.
    """

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    def validate(self, input: object, /) -> ToolValidation[InputT]: ...

    async def execute(self, input: InputT, context: ToolExecutionContext, /) -> OutputT_co: ...


# --- run results ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class RunError:
    """Why a run failed: a stable ``code`` and a message for people."""

    code: str
    message: str

    def __post_init__(self) -> None:
        _check_id("RunError", "code", self.code)
        _check_str("RunError", "message", self.message)


@dataclass(frozen=True, slots=True, kw_only=True)
class CompletedRunResult:
    """The model answered with a ``stop`` response; ``final_text`` is that answer's text."""

    status: Literal["completed"] = "completed"
    messages: tuple[Message, ...]
    final_text: str

    def __post_init__(self) -> None:
        _check_literal("CompletedRunResult", "status", self.status, "completed")
        _check_messages("CompletedRunResult", self.messages)
        _check_str("CompletedRunResult", "final_text", self.final_text)


@dataclass(frozen=True, slots=True, kw_only=True)
class CancelledRunResult:
    """The run's signal was aborted; ``messages`` holds only complete messages."""

    status: Literal["cancelled"] = "cancelled"
    messages: tuple[Message, ...]
    reason: str

    def __post_init__(self) -> None:
        _check_literal("CancelledRunResult", "status", self.status, "cancelled")
        _check_messages("CancelledRunResult", self.messages)
        _check_str("CancelledRunResult", "reason", self.reason)


@dataclass(frozen=True, slots=True, kw_only=True)
class MaxStepsRunResult:
    """The step budget ran out after a tool turn; ``max_steps`` is that budget."""

    status: Literal["maxSteps"] = "maxSteps"
    messages: tuple[Message, ...]
    max_steps: int

    def __post_init__(self) -> None:
        _check_literal("MaxStepsRunResult", "status", self.status, "maxSteps")
        _check_messages("MaxStepsRunResult", self.messages)
        if type(self.max_steps) is not int or self.max_steps < 1:
            _fail("MaxStepsRunResult", "max_steps", "must be a positive int")


@dataclass(frozen=True, slots=True, kw_only=True)
class FailedRunResult:
    """The run stopped on an error with a stable code; ``messages`` holds complete messages."""

    status: Literal["failed"] = "failed"
    messages: tuple[Message, ...]
    error: RunError

    def __post_init__(self) -> None:
        _check_literal("FailedRunResult", "status", self.status, "failed")
        _check_messages("FailedRunResult", self.messages)
        if type(self.error) is not RunError:
            _fail("FailedRunResult", "error", "must be a RunError")


RunResult: TypeAlias = CompletedRunResult | CancelledRunResult | MaxStepsRunResult | FailedRunResult
_RUN_RESULT_TYPES = frozenset(
    {CompletedRunResult, CancelledRunResult, MaxStepsRunResult, FailedRunResult}
)

# --- agent events ---------------------------------------------------------------------------


def _check_sequence(owner: str, value: object) -> None:
    if type(value) is not int or value < 0:
        _fail(owner, "sequence", "must be a non-negative int")


@dataclass(frozen=True, slots=True, kw_only=True)
class MessageAcceptedPayload:
    """A message entered the run's transcript."""

    message: Message

    def __post_init__(self) -> None:
        if type(self.message) not in _MESSAGE_TYPES:
            _fail("MessageAcceptedPayload", "message", "must be a message")


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelChunkPayload:
    """The model streamed a chunk."""

    chunk: ModelChunk

    def __post_init__(self) -> None:
        if type(self.chunk) is not TextDeltaChunk and type(self.chunk) is not ToolCallChunk:
            _fail("ModelChunkPayload", "chunk", "must be a model chunk")


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolStartedPayload:
    """A tool call is about to be validated and executed."""

    tool_call: ToolCall

    def __post_init__(self) -> None:
        if type(self.tool_call) is not ToolCall:
            _fail("ToolStartedPayload", "tool_call", "must be a ToolCall")


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolFinishedPayload:
    """A tool call produced its result message."""

    message: ToolResultMessage

    def __post_init__(self) -> None:
        if type(self.message) is not ToolResultMessage:
            _fail("ToolFinishedPayload", "message", "must be a ToolResultMessage")


@dataclass(frozen=True, slots=True, kw_only=True)
class RunFinishedPayload:
    """The run settled."""

    result: RunResult

    def __post_init__(self) -> None:
        if type(self.result) not in _RUN_RESULT_TYPES:
            _fail("RunFinishedPayload", "result", "must be a run result")


@dataclass(frozen=True, slots=True, kw_only=True)
class MessageAcceptedEvent:
    """``message.accepted``: a starting message was accepted into the run."""

    type: Literal["message.accepted"] = "message.accepted"
    sequence: int
    payload: MessageAcceptedPayload

    def __post_init__(self) -> None:
        _check_literal("MessageAcceptedEvent", "type", self.type, "message.accepted")
        _check_sequence("MessageAcceptedEvent", self.sequence)
        if type(self.payload) is not MessageAcceptedPayload:
            _fail("MessageAcceptedEvent", "payload", "must be a MessageAcceptedPayload")


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelChunkEvent:
    """``model.chunk``: the model streamed a chunk that the run accepted."""

    type: Literal["model.chunk"] = "model.chunk"
    sequence: int
    payload: ModelChunkPayload

    def __post_init__(self) -> None:
        _check_literal("ModelChunkEvent", "type", self.type, "model.chunk")
        _check_sequence("ModelChunkEvent", self.sequence)
        if type(self.payload) is not ModelChunkPayload:
            _fail("ModelChunkEvent", "payload", "must be a ModelChunkPayload")


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolStartedEvent:
    """``tool.started``: a tool call is starting."""

    type: Literal["tool.started"] = "tool.started"
    sequence: int
    payload: ToolStartedPayload

    def __post_init__(self) -> None:
        _check_literal("ToolStartedEvent", "type", self.type, "tool.started")
        _check_sequence("ToolStartedEvent", self.sequence)
        if type(self.payload) is not ToolStartedPayload:
            _fail("ToolStartedEvent", "payload", "must be a ToolStartedPayload")


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolFinishedEvent:
    """``tool.finished``: a tool call's result message was appended."""

    type: Literal["tool.finished"] = "tool.finished"
    sequence: int
    payload: ToolFinishedPayload

    def __post_init__(self) -> None:
        _check_literal("ToolFinishedEvent", "type", self.type, "tool.finished")
        _check_sequence("ToolFinishedEvent", self.sequence)
        if type(self.payload) is not ToolFinishedPayload:
            _fail("ToolFinishedEvent", "payload", "must be a ToolFinishedPayload")


@dataclass(frozen=True, slots=True, kw_only=True)
class RunFinishedEvent:
    """``run.finished``: always the last event of a run."""

    type: Literal["run.finished"] = "run.finished"
    sequence: int
    payload: RunFinishedPayload

    def __post_init__(self) -> None:
        _check_literal("RunFinishedEvent", "type", self.type, "run.finished")
        _check_sequence("RunFinishedEvent", self.sequence)
        if type(self.payload) is not RunFinishedPayload:
            _fail("RunFinishedEvent", "payload", "must be a RunFinishedPayload")


AgentEvent: TypeAlias = (
    MessageAcceptedEvent | ModelChunkEvent | ToolStartedEvent | ToolFinishedEvent | RunFinishedEvent
)

# --- helpers --------------------------------------------------------------------------------


def assert_never(value: Never, /) -> NoReturn:
    """Mark the unreachable branch of an exhaustive ``match``.

    pyright reports a call that can be reached with a value; at runtime it raises
    ``AssertionError("Unexpected protocol value: <value>")``.
    """
    raise AssertionError(f"Unexpected protocol value: {value}")


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


_JSON_CLASSES: tuple[type, ...] = (
    TextBlock,
    ToolCall,
    UserMessage,
    AssistantMessage,
    ToolResultMessage,
    ModelRequest,
    TextDeltaChunk,
    ToolCallChunk,
    ModelUsage,
    ModelResponse,
    Valid,
    Invalid,
    RunError,
    CompletedRunResult,
    CancelledRunResult,
    MaxStepsRunResult,
    FailedRunResult,
    MessageAcceptedPayload,
    ModelChunkPayload,
    ToolStartedPayload,
    ToolFinishedPayload,
    RunFinishedPayload,
    MessageAcceptedEvent,
    ModelChunkEvent,
    ToolStartedEvent,
    ToolFinishedEvent,
    RunFinishedEvent,
)
_JSON_KEYS: dict[type, tuple[tuple[str, str], ...]] = {
    cls: tuple((field.name, _camel(field.name)) for field in fields(cls)) for cls in _JSON_CLASSES
}


def to_json(value: object) -> Any:
    """The workshop's JSON form of a protocol value: plain containers and camelCase keys.

    ``to_json(ToolCallChunk(...)) == {"type": "toolCall", "requestId": ..., "toolCall": {...}}``.
    Tuples and lists of protocol values (a transcript) become lists.
    ``ToolExecutionContext`` (it holds a live signal) and non-protocol objects raise ``TypeError``.
    """
    keys = _JSON_KEYS.get(type(value))
    if keys is not None:
        return {key: to_json(getattr(value, attribute)) for attribute, key in keys}
    if type(value) is tuple or type(value) is list:
        items: tuple[object, ...] | list[object] = value  # pyright: ignore[reportUnknownVariableType]
        return [to_json(item) for item in items]
    if type(value) is JsonObject:
        return thaw_json(value)
    if value is None or type(value) in (str, int, float, bool):
        return value
    raise TypeError(f"to_json() cannot encode {type(value).__name__} values")
