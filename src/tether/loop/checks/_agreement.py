"""The final message must agree with what was streamed: text and thinking coalesced, tool
calls one for one (``toolCallDelta`` chunks are progress and are not matched)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Final, TypeAlias

from tether._base.exact_types import is_number, type_of
from tether.jsonvalue import JsonValue, is_json_array, is_json_object
from tether.loop.checks._failures import ModelProtocolError
from tether.protocol import (
    AssistantBlock,
    AssistantMessage,
    ModelChunk,
    TextBlock,
    TextDeltaChunk,
    ThinkingBlock,
    ThinkingDeltaChunk,
    ToolCall,
)

# --- agreement between the chunks and the final message --------------------------------------

AGREEMENT_KINDS: Final[dict[type, str]] = {
    TextDeltaChunk: "text",
    ThinkingDeltaChunk: "thinking",
    TextBlock: "text",
    ThinkingBlock: "thinking",
}
"""Streamed and final pieces whose text is coalesced and compared, by kind. Tool calls are
compared one for one; a redacted thinking block is never streamed and is not compared."""

_Segment: TypeAlias = "tuple[str, str] | ToolCall"


def _segments(pieces: Iterable[_Segment]) -> list[_Segment]:
    """Adjacent text of one kind coalesced into one segment; other pieces separate runs."""
    segments: list[_Segment] = []
    parts: list[str] = []
    current: str | None = None
    for piece in pieces:
        if isinstance(piece, tuple):
            kind, text = piece
            if kind == current:
                parts.append(text)
                continue
            if current is not None:
                segments.append((current, "".join(parts)))
            current, parts = kind, [text]
            continue
        if current is not None:
            segments.append((current, "".join(parts)))
            current = None
        segments.append(piece)
    if current is not None:
        segments.append((current, "".join(parts)))
    return segments


def _streamed_pieces(chunks: Sequence[ModelChunk]) -> Iterable[tuple[str, str] | ToolCall]:
    for chunk in chunks:
        if chunk.type == "toolCall":
            yield chunk.tool_call
        elif chunk.type == "textDelta" or chunk.type == "thinkingDelta":
            yield (AGREEMENT_KINDS[type(chunk)], chunk.delta)


def _final_pieces(content: Sequence[AssistantBlock]) -> Iterable[tuple[str, str] | ToolCall]:
    for block in content:
        if block.type == "toolCall":
            yield block
        elif block.type == "thinking" and block.redacted:
            continue
        elif block.type == "text" and not block.text:
            continue  # nothing to stream: an empty block that carries only its signature
        else:
            yield (AGREEMENT_KINDS[type(block)], block.text)


def check_agreement(chunks: Sequence[ModelChunk], message: AssistantMessage) -> None:
    """Everything in the final message must have been streamed, in the same order.

    ``chunks`` holds the run's accepted text, thinking and tool-call chunks (tool-call deltas
    are progress and are left out by the caller).
    """
    if _streamed_verbatim(chunks, message.content):
        return
    streamed = _segments(_streamed_pieces(chunks))
    final = _segments(_final_pieces(message.content))
    if len(streamed) != len(final):
        raise ModelProtocolError("Streamed chunks do not match the final message")
    for left, right in zip(streamed, final, strict=True):
        if type_of(left) is not type_of(right):
            raise ModelProtocolError("Streamed chunk order does not match the final message")
        if isinstance(left, tuple) and isinstance(right, tuple):
            left_kind, left_text = left
            right_kind, right_text = right
            if left_kind != right_kind:
                raise ModelProtocolError("Streamed chunk order does not match the final message")
            if joined(left_text) != joined(right_text):
                noun = "text" if left_kind == "text" else "thinking"
                raise ModelProtocolError(f"Streamed {noun} does not match the final message")
        elif isinstance(left, ToolCall) and isinstance(right, ToolCall):
            if not _same_call(left, right):
                raise ModelProtocolError("Streamed Tool call does not match the final message")
        else:  # pragma: no cover - the type check above already compared the kinds
            raise ModelProtocolError("Streamed Tool call does not match the final message")


def _streamed_verbatim(chunks: Sequence[ModelChunk], content: tuple[AssistantBlock, ...]) -> bool:
    """True when each block is exactly one chunk: the same tool-call object, or a text block
    whose text is the delta. Such a turn agrees without coalescing anything."""
    if len(chunks) != len(content):
        return False
    for chunk, block in zip(chunks, content, strict=True):
        if chunk.type == "toolCall":
            if chunk.tool_call is not block:
                return False
        elif chunk.type == "textDelta":
            if block.type != "text" or block.text != chunk.delta:
                return False
        else:
            return False
    return True


def joined(text: str) -> str:
    """Join surrogate halves written as two code points into one character."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "surrogatepass")
    return text


def _same_call(left: ToolCall, right: ToolCall) -> bool:
    if left is right:
        return True
    return (
        left.id == right.id
        and left.name == right.name
        and left.raw_arguments == right.raw_arguments
        and _same_json(left.arguments, right.arguments)
    )


def _same_json(left: JsonValue, right: JsonValue) -> bool:
    """Deep JSON equality where ``True`` is not ``1`` and ``0.0`` is not ``-0.0``."""
    left_type = type_of(left)
    if left_type is not type_of(right) and not (is_number(left) and is_number(right)):
        return False
    if is_json_object(left) and is_json_object(right):
        return left.keys() == right.keys() and all(
            _same_json(value, right[key]) for key, value in left.items()
        )
    if is_json_array(left) and is_json_array(right):
        return len(left) == len(right) and all(
            _same_json(a, b) for a, b in zip(left, right, strict=True)
        )
    if is_number(left) and is_number(right) and (left_type is float or type_of(right) is float):
        return left == right and math.copysign(1, left) == math.copysign(1, right)
    return left == right
