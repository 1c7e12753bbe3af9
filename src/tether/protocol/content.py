"""Assistant content blocks: text, thinking and tool calls (``AssistantBlock``).

Add a block type by defining its class here and adding it to ``AssistantBlock``: the checks,
the JSON codec, the message IR and the loop's agreement rules derive from that union.
"""

from __future__ import annotations

from typing import Final, Literal, TypeAlias

from tether._base.dataclass import dataclass
from tether.jsonvalue import JsonObject
from tether.protocol._fields import NonEmpty, ProtocolValue, v2

__all__ = [
    "MAX_RAW_ARGUMENTS_CODE_POINTS",
    "AssistantBlock",
    "TextBlock",
    "ThinkingBlock",
    "ToolCall",
    "ToolCallId",
]

MAX_RAW_ARGUMENTS_CODE_POINTS: Final = 4_194_304
"""The most code points ``ToolCall.raw_arguments`` may hold: the tool-argument string budget
of ``RunLimits.for_real_models()``, so an invalid call may be as large as a valid one. A
provider that receives more keeps the start and ends it with a marker saying it was cut."""

ToolCallId: TypeAlias = str
"""Identifies one tool call; a tool result links back to it by this ID."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TextBlock(ProtocolValue):
    """A run of assistant text.

    ``signature`` (protocol v2) is a vendor's opaque token that came on this text and must go
    back on it, verbatim, when the transcript is sent again: Gemini's ``thoughtSignature``
    (its model's encrypted reasoning state). ``None`` when the vendor sent none; it may be set
    on an empty ``text`` (Gemini sends signatures on empty text parts too).
    """

    type: Literal["text"] = "text"
    text: str
    signature: str | None = v2(None)


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

    ``raw_arguments`` (JSON ``rawArguments``, protocol v2) marks an *invalid* call: the model
    sent argument text that is not a JSON object (broken JSON, an array, ...), and this is
    that text, at most ``MAX_RAW_ARGUMENTS_CODE_POINTS`` long. ``arguments`` is then ``{}``
    (construction rejects anything else). The loop never executes an invalid call; it answers
    it with an error result (``TOOL_ARGUMENTS_INVALID: ...``) so the model can try again, and
    providers send the raw text back as what the model sent.

    ``signature`` (protocol v2) is a vendor's opaque token that came on this call and must go
    back on it, verbatim: Gemini's ``thoughtSignature`` (Gemini 3 rejects a replayed turn
    whose first call lacks it). ``None`` when the vendor sent none.
    """

    type: Literal["toolCall"] = "toolCall"
    id: NonEmpty
    name: NonEmpty
    arguments: JsonObject
    raw_arguments: str | None = v2(None)
    signature: str | None = v2(None)

    def _invariant(self) -> None:
        """Cross-field rule, run after the field checks (see ``ProtocolValue``)."""
        raw = self.raw_arguments
        if raw is not None:
            if self.arguments:
                raise ValueError(
                    "ToolCall.arguments must be empty when raw_arguments is set "
                    f"(got {len(self.arguments)} entries)"
                )
            if len(raw) > MAX_RAW_ARGUMENTS_CODE_POINTS:
                raise ValueError(
                    "ToolCall.raw_arguments must be at most "
                    f"{MAX_RAW_ARGUMENTS_CODE_POINTS} code points (got {len(raw)})"
                )


AssistantBlock: TypeAlias = TextBlock | ThinkingBlock | ToolCall
"""Every block an assistant message can hold, in the order the model produced them."""
