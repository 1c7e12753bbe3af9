"""Constructors for protocol values that tether assembles from parts it already trusts.

Protocol classes check their fields when constructed, so a protocol value that exists is
well-formed. Inside the runtime, the loop, the tools and the scripted model build many values
from parts that are themselves protocol values or strings tether just made; checking them
again costs more than the rest of a step. These builders fill the same slots directly and
produce values indistinguishable from the checked constructors' output.

They are private on purpose: every argument must already satisfy the class's checks.
"""

from __future__ import annotations

from typing import Any

from tether.abort import AbortSignal
from tether.jsonvalue import JsonObject
from tether.protocol import (
    AssistantBlock,
    AssistantMessage,
    Message,
    MessageAcceptedEvent,
    MessageAcceptedPayload,
    ModelChunk,
    ModelChunkEvent,
    ModelChunkPayload,
    ModelRequest,
    ModelResponse,
    ModelUsage,
    RunFinishedEvent,
    RunFinishedPayload,
    RunResult,
    StopReason,
    TextBlock,
    TextDeltaChunk,
    ToolCall,
    ToolCallChunk,
    ToolExecutionContext,
    ToolFinishedEvent,
    ToolFinishedPayload,
    ToolResultMessage,
    ToolStartedEvent,
    ToolStartedPayload,
)

__all__ = [
    "assistant_message",
    "execution_context",
    "message_accepted_event",
    "model_chunk_event",
    "model_request",
    "model_response",
    "run_finished_event",
    "text_block",
    "text_delta_chunk",
    "tool_call",
    "tool_call_chunk",
    "tool_finished_event",
    "tool_result",
    "tool_started_event",
]

_new = object.__new__


def _setter(cls: type[Any], name: str) -> Any:
    return cls.__dict__[name].__set__


def _event_builder(event: type[Any], payload: type[Any], field: str, kind: str) -> Any:
    set_type = _setter(event, "type")
    set_sequence = _setter(event, "sequence")
    set_payload = _setter(event, "payload")
    set_field = _setter(payload, field)

    def build(sequence: int, value: object) -> Any:
        body: Any = _new(payload)
        set_field(body, value)
        built: Any = _new(event)
        set_type(built, kind)
        set_sequence(built, sequence)
        set_payload(built, body)
        return built

    return build


_message_accepted = _event_builder(
    MessageAcceptedEvent, MessageAcceptedPayload, "message", "message.accepted"
)
_model_chunk = _event_builder(ModelChunkEvent, ModelChunkPayload, "chunk", "model.chunk")
_tool_started = _event_builder(ToolStartedEvent, ToolStartedPayload, "tool_call", "tool.started")
_tool_finished = _event_builder(ToolFinishedEvent, ToolFinishedPayload, "message", "tool.finished")
_run_finished = _event_builder(RunFinishedEvent, RunFinishedPayload, "result", "run.finished")


def message_accepted_event(sequence: int, message: Message) -> MessageAcceptedEvent:
    """``message.accepted`` for a message of the run's transcript."""
    return _message_accepted(sequence, message)


def model_chunk_event(sequence: int, chunk: ModelChunk) -> ModelChunkEvent:
    """``model.chunk`` for a chunk that passed the model boundary."""
    return _model_chunk(sequence, chunk)


def tool_started_event(sequence: int, tool_call: ToolCall) -> ToolStartedEvent:
    """``tool.started`` for a call of an accepted assistant message."""
    return _tool_started(sequence, tool_call)


def tool_finished_event(sequence: int, message: ToolResultMessage) -> ToolFinishedEvent:
    """``tool.finished`` for a result built by ``execute_tool_call``."""
    return _tool_finished(sequence, message)


def run_finished_event(sequence: int, result: RunResult) -> RunFinishedEvent:
    """``run.finished`` for the run's result."""
    return _run_finished(sequence, result)


_set_result_id = _setter(ToolResultMessage, "id")
_set_result_role = _setter(ToolResultMessage, "role")
_set_result_call_id = _setter(ToolResultMessage, "tool_call_id")
_set_result_name = _setter(ToolResultMessage, "tool_name")
_set_result_content = _setter(ToolResultMessage, "content")
_set_result_is_error = _setter(ToolResultMessage, "is_error")


def tool_result(call: ToolCall, content: str, is_error: bool) -> ToolResultMessage:
    """The result message linked to ``call``: ID ``tool-result-<call id>``."""
    built = _new(ToolResultMessage)
    _set_result_id(built, f"tool-result-{call.id}")
    _set_result_role(built, "toolResult")
    _set_result_call_id(built, call.id)
    _set_result_name(built, call.name)
    _set_result_content(built, content)
    _set_result_is_error(built, is_error)
    return built


_set_request_id = _setter(ModelRequest, "id")
_set_request_messages = _setter(ModelRequest, "messages")


def model_request(request_id: str, messages: tuple[Message, ...]) -> ModelRequest:
    """A request over a transcript of protocol messages."""
    built = _new(ModelRequest)
    _set_request_id(built, request_id)
    _set_request_messages(built, messages)
    return built


_set_context_signal = _setter(ToolExecutionContext, "signal")
_set_context_call_id = _setter(ToolExecutionContext, "tool_call_id")


def execution_context(signal: AbortSignal, tool_call_id: str) -> ToolExecutionContext:
    """The context ``execute`` receives for a call of an accepted message."""
    built = _new(ToolExecutionContext)
    _set_context_signal(built, signal)
    _set_context_call_id(built, tool_call_id)
    return built


_set_text_type = _setter(TextBlock, "type")
_set_text = _setter(TextBlock, "text")


def text_block(text: str) -> TextBlock:
    """A text block of a ``str``."""
    built = _new(TextBlock)
    _set_text_type(built, "text")
    _set_text(built, text)
    return built


_set_delta_type = _setter(TextDeltaChunk, "type")
_set_delta_request = _setter(TextDeltaChunk, "request_id")
_set_delta = _setter(TextDeltaChunk, "delta")


def text_delta_chunk(request_id: str, delta: str) -> TextDeltaChunk:
    """A text chunk of a ``str`` for an existing request ID."""
    built = _new(TextDeltaChunk)
    _set_delta_type(built, "textDelta")
    _set_delta_request(built, request_id)
    _set_delta(built, delta)
    return built


_set_call_chunk_type = _setter(ToolCallChunk, "type")
_set_call_chunk_request = _setter(ToolCallChunk, "request_id")
_set_call_chunk_call = _setter(ToolCallChunk, "tool_call")


def tool_call_chunk(request_id: str, tool_call: ToolCall) -> ToolCallChunk:
    """A tool-call chunk of a protocol ``ToolCall`` for an existing request ID."""
    built = _new(ToolCallChunk)
    _set_call_chunk_type(built, "toolCall")
    _set_call_chunk_request(built, request_id)
    _set_call_chunk_call(built, tool_call)
    return built


_set_call_type = _setter(ToolCall, "type")
_set_call_id = _setter(ToolCall, "id")
_set_call_name = _setter(ToolCall, "name")
_set_call_arguments = _setter(ToolCall, "arguments")


def tool_call(call_id: str, name: str, arguments: JsonObject) -> ToolCall:
    """A tool call of non-empty ID and name and frozen arguments."""
    built = _new(ToolCall)
    _set_call_type(built, "toolCall")
    _set_call_id(built, call_id)
    _set_call_name(built, name)
    _set_call_arguments(built, arguments)
    return built


_set_message_id = _setter(AssistantMessage, "id")
_set_message_role = _setter(AssistantMessage, "role")
_set_message_content = _setter(AssistantMessage, "content")


def assistant_message(message_id: str, content: tuple[AssistantBlock, ...]) -> AssistantMessage:
    """An assistant message of protocol blocks under a non-empty ID."""
    built = _new(AssistantMessage)
    _set_message_id(built, message_id)
    _set_message_role(built, "assistant")
    _set_message_content(built, content)
    return built


_set_response_id = _setter(ModelResponse, "id")
_set_response_request = _setter(ModelResponse, "request_id")
_set_response_message = _setter(ModelResponse, "message")
_set_response_stop = _setter(ModelResponse, "stop_reason")
_set_response_usage = _setter(ModelResponse, "usage")


def model_response(
    response_id: str,
    request_id: str,
    message: AssistantMessage,
    stop_reason: StopReason,
    usage: ModelUsage,
) -> ModelResponse:
    """A response from protocol parts under non-empty IDs."""
    built = _new(ModelResponse)
    _set_response_id(built, response_id)
    _set_response_request(built, request_id)
    _set_response_message(built, message)
    _set_response_stop(built, stop_reason)
    _set_response_usage(built, usage)
    return built
