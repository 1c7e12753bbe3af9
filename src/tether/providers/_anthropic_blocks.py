"""The content blocks of an Anthropic response as ``AnthropicStreamParser`` assembles them,
and what the values of its events mean: stop reasons, usage fields, ``error`` events.

Kept apart from the parser's event handling (``anthropic_stream``): a ``Block`` is one vendor
``index`` (its kind, its streamed parts, a tool call's ID and name), and ``message_content``
turns the blocks into the final message's content, in index order.
"""

from __future__ import annotations

from typing import Any, Final, Literal, TypeAlias

from tether._base.exact_types import type_of
from tether._base.strings import is_non_empty
from tether.protocol import AssistantBlock, StopReason, ToolCall
from tether.protocol import _trusted as trusted
from tether.providers._wire import MAX_SHOWN as _MAX_SHOWN
from tether.providers._wire import error_text
from tether.providers.errors import ProviderError

__all__ = [
    "DELTA_FOR",
    "STOPS",
    "TRUNCATING",
    "USAGE_FIELDS",
    "Block",
    "BlockKind",
    "error_event",
    "message_content",
]

STOPS: Final[dict[str, StopReason]] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "tool_use": "toolCall",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "refusal",
}
TRUNCATING: Final = frozenset({"max_tokens", "model_context_window_exceeded"})
USAGE_FIELDS: Final = (
    ("input_tokens", 0),
    ("output_tokens", 1),
    ("cache_read_input_tokens", 2),
    ("cache_creation_input_tokens", 3),
)
BlockKind: TypeAlias = Literal["text", "thinking", "redacted", "tool", "skip"]
DELTA_FOR: Final[dict[str, BlockKind]] = {
    "text_delta": "text",
    "thinking_delta": "thinking",
    "signature_delta": "thinking",
    "input_json_delta": "tool",
}


class Block:
    """One content block (one vendor ``index``)."""

    __slots__ = (
        "call",
        "call_id",
        "initial",
        "kind",
        "name",
        "open",
        "parts",
        "position",
        "signature",
    )

    def __init__(self, kind: BlockKind) -> None:
        self.kind: BlockKind = kind
        self.open = True
        self.parts: list[str] = []
        self.signature = ""  # thinking: its signature; redacted thinking: its data
        self.initial = ""  # tool calls: the start's non-empty input, as JSON text
        self.position = -1  # tool calls: position among this response's calls
        self.call_id = ""
        self.name = ""
        self.call: ToolCall | None = None  # tool calls, once complete


def message_content(blocks: list[Block]) -> tuple[tuple[AssistantBlock, ...], bool]:
    """The final message's content, in index order, and whether it holds a tool call: text
    and thinking with their text (left out when empty: nothing was streamed for them),
    redacted thinking, complete tool calls (a cut call has none)."""
    content: list[AssistantBlock] = []
    has_calls = False
    for block in blocks:
        kind = block.kind
        if kind == "text":
            if block.parts:
                content.append(trusted.text_block("".join(block.parts)))
        elif kind == "thinking":
            if block.parts:
                content.append(
                    trusted.thinking_block("".join(block.parts), block.signature or None)
                )
        elif kind == "redacted":
            content.append(trusted.thinking_block("", block.signature, True))
        elif kind == "tool" and block.call is not None:
            content.append(block.call)
            has_calls = True
    return tuple(content), has_calls


def error_event(payload: dict[str, Any]) -> ProviderError:
    """An ``error`` event: ``{"type": "error", "error": {"type", "message"}}``.
    ``overloaded_error`` is ``PROVIDER_OVERLOADED``; anything else ``PROVIDER_ERROR_EVENT``.
    ``provider_code`` is the vendor's ``error.type``; its message is bounded."""
    error: Any = payload.get("error")
    kind: str | None = None
    message: object = None
    if type_of(error) is dict:
        fields_: dict[str, Any] = error
        raw_kind = fields_.get("type")
        if is_non_empty(raw_kind):
            kind = raw_kind[:_MAX_SHOWN]
        message = fields_.get("message")
    elif type_of(error) is str:
        message = error
    text = error_text("reported an error in the stream", message)
    if kind == "overloaded_error":
        return ProviderError("PROVIDER_OVERLOADED", text, provider_code=kind)
    return ProviderError("PROVIDER_ERROR_EVENT", text, provider_code=kind)
