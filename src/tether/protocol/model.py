"""Model traffic: requests (with the system prompt and tool specs), streamed chunks, usage and
the terminal ``ModelResponse``.

Chunks (``ModelChunk``): ``textDelta`` and ``thinkingDelta`` stream text that must agree with
the final message; ``toolCallDelta`` is progress for display only; ``toolCall`` carries one
complete, authoritative call.
"""

from __future__ import annotations

from dataclasses import fields
from operator import add, attrgetter
from typing import Annotated, Final, Literal, TypeAlias, TypeGuard, get_args

from tether._base.dataclass import dataclass
from tether.jsonvalue import JsonObject
from tether.protocol._fields import COUNT, NON_NEGATIVE, NonEmpty, ProtocolValue, v2
from tether.protocol.content import ToolCall
from tether.protocol.messages import AssistantMessage, Message

__all__ = [
    "ModelChunk",
    "ModelRequest",
    "ModelRequestId",
    "ModelResponse",
    "ModelResponseId",
    "ModelUsage",
    "StopReason",
    "TextDeltaChunk",
    "ThinkingDeltaChunk",
    "ToolCallChunk",
    "ToolCallDeltaChunk",
    "ToolSpec",
]

ModelRequestId: TypeAlias = str
"""Identifies one model request (``request-001``, ...)."""
ModelResponseId: TypeAlias = str
"""Identifies one model response, as chosen by the model or provider."""

StopReason: TypeAlias = Literal["stop", "toolCall", "length", "refusal"]
"""Why a model turn ended: it answered, it asked for tools, it hit the output limit, or it
refused. The loop completes on ``stop``, runs tools on ``toolCall`` and fails on the others."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolSpec(ProtocolValue):
    """What a model is told about one tool: its name, description and the JSON Schema of its
    arguments object."""

    name: NonEmpty
    description: str
    parameters: JsonObject


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelRequest(ProtocolValue):
    """What a model is asked: the transcript so far under one request ID, the system prompt
    and the tools it may call."""

    id: NonEmpty
    messages: tuple[Message, ...]
    system: str | None = v2(None)
    tools: tuple[ToolSpec, ...] = v2(())


@dataclass(frozen=True, slots=True, kw_only=True)
class TextDeltaChunk(ProtocolValue):
    """A streamed piece of assistant text."""

    type: Literal["textDelta"] = "textDelta"
    request_id: NonEmpty
    delta: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ThinkingDeltaChunk(ProtocolValue):
    """A streamed piece of the model's reasoning."""

    type: Literal["thinkingDelta"] = "thinkingDelta"
    request_id: NonEmpty
    delta: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallDeltaChunk(ProtocolValue):
    """Progress of a tool call being streamed, for display only.

    ``index`` is the call's 0-based position among this response's calls; ``id`` and ``name``
    arrive once (``None`` until then); ``arguments_delta`` is a fragment of the arguments'
    JSON text. The complete ``toolCall`` chunk that follows is authoritative.
    """

    type: Literal["toolCallDelta"] = "toolCallDelta"
    request_id: NonEmpty
    index: Annotated[int, NON_NEGATIVE]
    id: NonEmpty | None = None
    name: NonEmpty | None = None
    arguments_delta: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallChunk(ProtocolValue):
    """A streamed, complete tool call."""

    type: Literal["toolCall"] = "toolCall"
    request_id: NonEmpty
    tool_call: ToolCall


ModelChunk: TypeAlias = TextDeltaChunk | ThinkingDeltaChunk | ToolCallDeltaChunk | ToolCallChunk
"""Every chunk a model stream can yield."""

_CHUNK_CLASSES: Final = frozenset(get_args(ModelChunk))


def is_model_chunk(value: object) -> TypeGuard[ModelChunk]:
    """Whether ``value``'s real class is exactly one of the four chunk classes (a subclass's
    methods are caller code; ``type``, never ``__class__``, is read)."""
    return type(value) in _CHUNK_CLASSES


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelUsage(ProtocolValue):
    """Token counts: non-negative integers no larger than 2**53 - 1.

    ``input_tokens`` counts uncached input; cached reads and cache writes are counted apart.
    Usages add up (``a + b``), which is how a run totals its responses.
    """

    input_tokens: Annotated[int, COUNT]
    output_tokens: Annotated[int, COUNT]
    cache_read_tokens: Annotated[int, COUNT] = v2(0)
    cache_write_tokens: Annotated[int, COUNT] = v2(0)

    def __add__(self, other: ModelUsage) -> ModelUsage:
        if type(other) is not ModelUsage:
            return NotImplemented
        theirs: tuple[int, ...] = _counts(other)
        if not any(theirs):  # the common case in a run's total: nothing to add
            return self
        mine: tuple[int, ...] = _counts(self)
        if not any(mine):
            return other
        return ModelUsage(**dict(zip(_COUNT_FIELDS, map(add, mine, theirs), strict=True)))

    @property
    def total_tokens(self) -> int:
        """Every token counted: input (cached or not), cache writes and output."""
        return sum(_counts(self))


_COUNT_FIELDS: Final = tuple(field.name for field in fields(ModelUsage))
_counts: Final = attrgetter(*_COUNT_FIELDS)
ZERO_USAGE: ModelUsage = ModelUsage(input_tokens=0, output_tokens=0)
"""No tokens: the usage of a run that made no model call."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelResponse(ProtocolValue):
    """The terminal value of one model turn. ``model`` names the vendor's model that produced
    it, when known."""

    id: NonEmpty
    request_id: NonEmpty
    message: AssistantMessage
    stop_reason: StopReason
    usage: ModelUsage
    model: str | None = v2(None)
