"""Assistant content blocks: text, thinking and tool calls (``AssistantBlock``).

Add a block type by defining its class here and adding it to ``AssistantBlock``: the checks,
the JSON codec, the message IR and the loop's agreement rules derive from that union.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias

from tether.jsonvalue import JsonObject
from tether.protocol._fields import NonEmpty, ProtocolValue, v2

__all__ = ["AssistantBlock", "TextBlock", "ThinkingBlock", "ToolCall", "ToolCallId"]

ToolCallId: TypeAlias = str
"""Identifies one tool call; a tool result links back to it by this ID."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TextBlock(ProtocolValue):
    """A run of assistant text."""

    type: Literal["text"] = "text"
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ThinkingBlock(ProtocolValue):
    """The model's reasoning, shown to people but never executed.

    ``signature`` is the vendor's opaque proof that the block is unmodified (Anthropic sends
    it and requires it back verbatim); ``redacted`` marks a block whose reasoning the vendor
    encrypted: ``text`` is then empty and ``signature`` carries the opaque data.
    """

    type: Literal["thinking"] = "thinking"
    text: str
    signature: str | None = v2(None)
    redacted: bool = v2(False)


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCall(ProtocolValue):
    """The model asking for one tool call. ``id`` is opaque and survives every layer unchanged.

    ``arguments`` may be given as a ``dict``; it is deep-frozen into a ``JsonObject``.
    """

    type: Literal["toolCall"] = "toolCall"
    id: NonEmpty
    name: NonEmpty
    arguments: JsonObject


AssistantBlock: TypeAlias = TextBlock | ThinkingBlock | ToolCall
"""Every block an assistant message can hold, in the order the model produced them."""
