"""Snapshotting the parts of a message: assistant blocks, tool-call arguments and images.

Each function takes an untrusted value (a protocol value, or its JSON-shaped mapping with
camelCase keys), checks it and returns a frozen protocol value, raising ``TypeError`` with
the workshop's messages (``assistantMessage: content[0].name must be a non-empty string``).
The constructors use them, and the validator reuses the thinking-block and raw-arguments
rules so the two never disagree.
"""

from __future__ import annotations

from typing import Any, cast

from tether._base.exact_types import exactly, is_dict, type_of
from tether._base.strings import is_non_empty
from tether.jsonvalue import JsonObject, freeze_json, is_json_object
from tether.protocol import (
    MAX_RAW_ARGUMENTS_CODE_POINTS,
    AssistantBlock,
    ImageBlock,
    ProtocolJsonError,
    TextBlock,
    ThinkingBlock,
    ToolCall,
    from_json,
)
from tether.protocol.transcript._reading import MISSING, is_array, is_mapping, read_field, with_rest

__all__ = [
    "assistant_block",
    "raw_arguments_problem",
    "snapshot_arguments",
    "snapshot_images",
    "thinking_from_mapping",
]


def snapshot_images(value: object, prefix: str) -> tuple[ImageBlock, ...]:
    """A message's images from ``ImageBlock`` values or their JSON form; ``()`` for
    ``None`` or ``MISSING``. ``TypeError`` names the image that is not one."""
    if value is None or value is MISSING:
        return ()
    if not is_array(value):
        raise TypeError(f"{prefix} must be an array")
    items = tuple(cast("tuple[Any, ...]", value))
    blocks: list[ImageBlock] = []
    for index, item in enumerate(items):
        if type_of(item) is ImageBlock:
            blocks.append(item)
            continue
        if type_of(item) is not dict:
            raise TypeError(f"{prefix}[{index}] must be an image block")
        try:
            blocks.append(from_json(item, ImageBlock))
        except ProtocolJsonError as error:
            raise TypeError(f"{prefix}[{index}] is not an image: {error}") from error
    return tuple(blocks)


def assistant_block(block: Any, index: int) -> AssistantBlock:
    """Content block ``index`` of an assistant message, snapshotted (``TypeError``)."""
    kind = type_of(block)
    if kind is TextBlock or kind is ToolCall:
        return block
    prefix = f"assistantMessage: content[{index}]"
    try:
        return _block_from_mapping(block, prefix)
    except TypeError:
        raise
    except Exception as error:  # a hostile mapping: its reads are not to be trusted
        raise TypeError(f"{prefix} could not be inspected safely") from error


def _block_from_mapping(block: Any, prefix: str) -> AssistantBlock:
    if not is_mapping(block):
        raise TypeError(f"{prefix} must be an object")
    block_type = read_field(block, "type")
    if type_of(block_type) is str and block_type == "text":
        text = read_field(block, "text")
        if type_of(text) is not str:
            raise TypeError(f"{prefix}.text must be a string")
        return with_rest(TextBlock(text=text, signature=_signature(block, prefix)), block, prefix)
    if type_of(block_type) is str and block_type == "thinking":
        return with_rest(thinking_from_mapping(block, prefix), block, prefix)
    if type_of(block_type) is str and block_type == "toolCall":
        call_id = read_field(block, "id")
        if not is_non_empty(call_id):
            raise TypeError(f"{prefix}.id must be a non-empty string")
        name = read_field(block, "name")
        if not is_non_empty(name):
            raise TypeError(f"{prefix}.name must be a non-empty string")
        arguments = snapshot_arguments(read_field(block, "arguments"), f"{prefix}.arguments")
        signature = _signature(block, prefix)
        raw = read_field(block, "rawArguments")
        if raw is MISSING or raw is None:
            call = ToolCall(id=call_id, name=name, arguments=arguments, signature=signature)
            return with_rest(call, block, prefix)
        problem = raw_arguments_problem(raw, arguments)
        if problem is not None:
            raise TypeError(f"{prefix}.{problem}")
        call = ToolCall(
            id=call_id, name=name, arguments=arguments, raw_arguments=raw, signature=signature
        )
        return with_rest(call, block, prefix)
    raise TypeError(f'{prefix}.type must be "text", "thinking" or "toolCall"')


def _signature(block: Any, prefix: str) -> str | None:
    """A block's optional ``signature``: a string, or ``None`` when missing or null."""
    signature = read_field(block, "signature")
    if signature is MISSING or signature is None:
        return None
    if type_of(signature) is not str:
        raise TypeError(f"{prefix}.signature must be a string or null")
    text: str = signature
    return text


def thinking_from_mapping(block: Any, prefix: str) -> ThinkingBlock:
    """A thinking block from its JSON form (``TypeError`` naming ``prefix`` and the field)."""
    text = read_field(block, "text")
    if type_of(text) is not str:
        raise TypeError(f"{prefix}.text must be a string")
    signature = _signature(block, prefix)
    redacted = read_field(block, "redacted")
    if redacted is MISSING:
        redacted = False
    elif type_of(redacted) is not bool:
        raise TypeError(f"{prefix}.redacted must be a boolean")
    return ThinkingBlock(text=text, signature=signature, redacted=redacted)


def raw_arguments_problem(raw: object, arguments: object) -> str | None:
    """Why a mapping's ``rawArguments`` (present, not null) cannot stand with its
    ``arguments``, or ``None``: an invalid call holds a bounded string and ``{}``."""
    if not exactly(raw, str):
        return "rawArguments must be a string or null"
    text: str = raw
    if len(text) > MAX_RAW_ARGUMENTS_CODE_POINTS:
        return f"rawArguments must be at most {MAX_RAW_ARGUMENTS_CODE_POINTS} code points"
    if (is_dict(arguments) or is_json_object(arguments)) and len(arguments) != 0:
        return "arguments must be empty when rawArguments is set"
    return None


def snapshot_arguments(value: object, path: str) -> JsonObject:
    """Deep-freeze tool-call arguments: a JSON object (not null, not an array)."""
    if type(value) is JsonObject:
        return value
    if type_of(value) is not dict:
        raise TypeError(f"{path} must be a non-null object and not an array")
    frozen = freeze_json(value, path=path)
    assert type(frozen) is JsonObject
    return frozen
