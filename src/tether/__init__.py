"""tether: a typed, offline-first Python agent runtime.

A closed, immutable protocol; a single-consumer event stream; strict boundaries that turn
untrusted model and provider data into trusted values with stable error codes; deterministic
offline models; a tool contract that validates before it executes; and an agent loop whose
runs always end in one of four results.

Every public name is importable from ``tether``. Submodules load on first use, so
``import tether`` stays cheap.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tether._errors import TetherError
    from tether.abort import AbortController, AbortError, AbortSignal
    from tether.jsonvalue import (
        MAX_JSON_DEPTH,
        JsonArray,
        JsonObject,
        JsonPrimitive,
        JsonValue,
        JsonValueError,
        freeze_json,
        thaw_json,
    )
    from tether.messages import (
        TranscriptDiagnostic,
        TranscriptDiagnosticCode,
        assistant_message,
        parse_message,
        text_from_assistant,
        tool_result_message,
        user_message,
        validate_transcript,
    )
    from tether.protocol import (
        AgentEvent,
        AgentEventType,
        AssistantBlock,
        AssistantMessage,
        CancelledRunResult,
        CompletedRunResult,
        FailedRunResult,
        Invalid,
        MaxStepsRunResult,
        Message,
        MessageAcceptedEvent,
        MessageAcceptedPayload,
        MessageId,
        ModelChunk,
        ModelChunkEvent,
        ModelChunkPayload,
        ModelRequest,
        ModelRequestId,
        ModelResponse,
        ModelResponseId,
        ModelUsage,
        RunError,
        RunFinishedEvent,
        RunFinishedPayload,
        RunResult,
        RunStatus,
        StopReason,
        TextBlock,
        TextDeltaChunk,
        Tool,
        ToolCall,
        ToolCallChunk,
        ToolCallId,
        ToolExecutionContext,
        ToolFinishedEvent,
        ToolFinishedPayload,
        ToolResultMessage,
        ToolStartedEvent,
        ToolStartedPayload,
        ToolValidation,
        UserMessage,
        Valid,
        assert_never,
        to_json,
    )
    from tether.stream import EventStream, EventStreamIterator, EventStreamStateError
    from tether.trace import Prologue, PrologueResult, run_prologue

__version__ = "0.1.0"

_MODULE_EXPORTS: dict[str, tuple[str, ...]] = {
    "tether._errors": ("TetherError",),
    "tether.abort": ("AbortController", "AbortError", "AbortSignal"),
    "tether.jsonvalue": (
        "MAX_JSON_DEPTH",
        "JsonArray",
        "JsonObject",
        "JsonPrimitive",
        "JsonValue",
        "JsonValueError",
        "freeze_json",
        "thaw_json",
    ),
    "tether.protocol": (
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
        "ToolStartedPayload",
        "ToolValidation",
        "UserMessage",
        "Valid",
        "assert_never",
        "to_json",
    ),
    "tether.stream": ("EventStream", "EventStreamIterator", "EventStreamStateError"),
    "tether.messages": (
        "TranscriptDiagnostic",
        "TranscriptDiagnosticCode",
        "assistant_message",
        "parse_message",
        "text_from_assistant",
        "tool_result_message",
        "user_message",
        "validate_transcript",
    ),
    "tether.trace": ("Prologue", "PrologueResult", "run_prologue"),
}
_EXPORTS: dict[str, str] = {
    name: module for module, names in _MODULE_EXPORTS.items() for name in names
}

__all__ = [
    "MAX_JSON_DEPTH",
    "AbortController",
    "AbortError",
    "AbortSignal",
    "AgentEvent",
    "AgentEventType",
    "AssistantBlock",
    "AssistantMessage",
    "CancelledRunResult",
    "CompletedRunResult",
    "EventStream",
    "EventStreamIterator",
    "EventStreamStateError",
    "FailedRunResult",
    "Invalid",
    "JsonArray",
    "JsonObject",
    "JsonPrimitive",
    "JsonValue",
    "JsonValueError",
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
    "Prologue",
    "PrologueResult",
    "RunError",
    "RunFinishedEvent",
    "RunFinishedPayload",
    "RunResult",
    "RunStatus",
    "StopReason",
    "TetherError",
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
    "ToolStartedPayload",
    "ToolValidation",
    "TranscriptDiagnostic",
    "TranscriptDiagnosticCode",
    "UserMessage",
    "Valid",
    "assert_never",
    "assistant_message",
    "freeze_json",
    "parse_message",
    "run_prologue",
    "text_from_assistant",
    "thaw_json",
    "to_json",
    "tool_result_message",
    "user_message",
    "validate_transcript",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'tether' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
