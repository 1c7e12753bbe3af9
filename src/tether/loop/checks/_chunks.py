"""Snapshotting one streamed chunk: a protocol chunk as it is, or a JSON-shaped mapping parsed
once; correlated with the active request and counted against the limits."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from tether._base.exact_types import type_of
from tether._base.strings import is_non_empty
from tether.loop.checks._bounds import check_argument_bounds, check_raw_argument_bounds
from tether.loop.checks._failures import ModelProtocolError
from tether.loop.checks._rest import with_rest
from tether.models.limits import RunLimits
from tether.protocol import (
    ModelChunk,
    TextDeltaChunk,
    ToolCall,
    ToolCallChunk,
    from_json,
)
from tether.protocol.codec import ProtocolJsonError
from tether.protocol.model import is_model_chunk
from tether.protocol.transcript import assistant_message
from tether.protocol.transcript._reading import is_mapping, read_field

# --- chunks ---------------------------------------------------------------------------------

_TEXT_KEYS: Final = frozenset({"type", "requestId", "delta"})
_CALL_KEYS: Final = frozenset({"type", "requestId", "toolCall"})


def snapshot_chunk(item: object, active: str, limits: RunLimits) -> ModelChunk:
    """A streamed item as a protocol chunk of the active request (tool-call arguments within
    budget); mappings use the chunk's camelCase JSON form."""
    try:
        if is_model_chunk(item):
            chunk: ModelChunk = item
        elif is_mapping(item):
            chunk = _chunk_from_mapping(item, limits)
        else:
            raise ModelProtocolError("Model chunk must be an object")
    except ModelProtocolError:
        raise
    except Exception as error:
        raise ModelProtocolError("Model chunk could not be inspected safely") from error
    if chunk.request_id != active:
        raise ModelProtocolError(f'Model chunk requestId must equal active request "{active}"')
    if chunk.type == "toolCall":
        check_argument_bounds(chunk.tool_call.arguments, limits)
        check_raw_argument_bounds(chunk.tool_call.raw_arguments, limits)
    return chunk


def _chunk_from_mapping(item: Mapping[Any, Any], limits: RunLimits) -> ModelChunk:
    chunk_type = read_field(item, "type")
    if type_of(chunk_type) is not str:
        raise ModelProtocolError("Model chunk has an unsupported type")
    if chunk_type == "textDelta":
        request_id = read_field(item, "requestId")
        delta = read_field(item, "delta")
        if not is_non_empty(request_id) or type_of(delta) is not str:
            raise ModelProtocolError("Model text chunk is invalid")
        chunk = TextDeltaChunk(request_id=request_id, delta=delta)
        return with_rest(chunk, item, _TEXT_KEYS, "Model text chunk")
    if chunk_type == "toolCall":
        request_id = read_field(item, "requestId")
        raw_call = read_field(item, "toolCall")
        if not is_non_empty(request_id) or (
            type_of(raw_call) is not ToolCall and not is_mapping(raw_call)
        ):
            raise ModelProtocolError("Model Tool-call chunk is invalid")
        try:
            if type_of(raw_call) is not ToolCall:
                check_argument_bounds(read_field(raw_call, "arguments"), limits)
                check_raw_argument_bounds(read_field(raw_call, "rawArguments"), limits)
            block = assistant_message(id="chunk", content=[raw_call]).content[0]
        except ModelProtocolError:
            raise
        except Exception as error:
            raise ModelProtocolError("Model Tool-call chunk is invalid") from error
        assert block.type == "toolCall"
        call_chunk = ToolCallChunk(request_id=request_id, tool_call=block)
        return with_rest(call_chunk, item, _CALL_KEYS, "Model Tool-call chunk")
    if chunk_type in ("thinkingDelta", "toolCallDelta"):
        if type_of(item) is not dict:
            item = dict(item)
        try:
            return from_json(item, ModelChunk)
        except ProtocolJsonError as error:
            raise ModelProtocolError(f"Model {chunk_type} chunk is invalid: {error}") from error
    raise ModelProtocolError("Model chunk has an unsupported type")
