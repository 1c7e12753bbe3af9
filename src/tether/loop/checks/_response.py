"""Snapshotting a model's final response (message, usage, stop reason) within the limits."""

from __future__ import annotations

import dataclasses
from typing import Any, Final

from tether._base.exact_types import exactly, type_of
from tether._base.strings import message_of
from tether.loop.checks._bounds import check_assistant_bounds
from tether.loop.checks._failures import ModelProtocolError
from tether.loop.checks._rest import with_rest
from tether.models.limits import RunLimits
from tether.protocol import (
    AssistantMessage,
    ModelResponse,
    ModelUsage,
    ToolCall,
)
from tether.protocol.codec import camel_case
from tether.protocol.transcript import assistant_message
from tether.protocol.transcript._reading import MISSING, is_mapping, read_field

# --- the response ---------------------------------------------------------------------------


def snapshot_response(
    raw: object, active: str, checked: set[int], limits: RunLimits
) -> ModelResponse:
    """The terminal value as a protocol response of the active request, within bounds, whose
    stop reason agrees with its content. ``checked``: tool calls already checked as chunks."""
    try:
        if exactly(raw, ModelResponse):
            response: ModelResponse = raw
            check_assistant_bounds(response.message.content, limits, checked)
        elif is_mapping(raw):
            response = _response_from_mapping(raw, limits)
        else:
            raise ModelProtocolError("Model response must be an object")
    except ModelProtocolError:
        raise
    except Exception as error:
        raise ModelProtocolError(
            f"Model response is invalid: {message_of(error, 'could not be inspected')}"
        ) from error
    if response.request_id != active:
        raise ModelProtocolError(f'Model response requestId must equal active request "{active}"')
    # The blocks are exact protocol classes (the message's constructor admits no other).
    has_calls = ToolCall in map(type_of, response.message.content)
    if response.stop_reason == "stop" and has_calls:
        raise ModelProtocolError("A stop response must not contain Tool calls")
    if response.stop_reason == "toolCall" and not has_calls:
        raise ModelProtocolError("A toolCall response must contain at least one Tool call")
    return response


_USAGE_KEYS: Final = tuple(
    (field.name, camel_case(field.name), field.default is dataclasses.MISSING)
    for field in dataclasses.fields(ModelUsage)
)
"""``(field, JSON key, required)`` of every usage count, from ``ModelUsage`` itself."""
_RESPONSE_KEYS: Final = frozenset({"id", "requestId", "message", "stopReason", "usage", "model"})


def _response_from_mapping(raw: object, limits: RunLimits) -> ModelResponse:
    message = read_field(raw, "message")
    if type_of(message) is AssistantMessage:
        check_assistant_bounds(message.content, limits)
        assistant: AssistantMessage = message
    else:
        if not is_mapping(message) or read_field(message, "role") != "assistant":
            raise ModelProtocolError("Model response message must be an assistant message")
        content = read_field(message, "content")
        check_assistant_bounds(content, limits)
        assistant = assistant_message(id=read_field(message, "id"), content=content)
    usage = read_field(raw, "usage")
    if type_of(usage) is not ModelUsage:
        if not is_mapping(usage):
            raise ModelProtocolError("Model response usage must be an object")
        counts: dict[str, Any] = {}
        for name, key, required in _USAGE_KEYS:
            value = read_field(usage, key)
            if value is not MISSING or required:
                counts[name] = value
        usage = ModelUsage(**counts)
    model = read_field(raw, "model")
    response = ModelResponse(
        id=read_field(raw, "id"),
        request_id=read_field(raw, "requestId"),
        message=assistant,
        stop_reason=read_field(raw, "stopReason"),
        usage=usage,
        model=None if model is MISSING else model,
    )
    return with_rest(response, raw, _RESPONSE_KEYS, "Model response")
