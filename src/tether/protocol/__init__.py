"""The closed, immutable protocol every tether layer speaks (checkpoint 01, protocol v2).

* ``content``: assistant blocks (``TextBlock``, ``ThinkingBlock``, ``ToolCall``);
* ``images``: ``ImageBlock`` (an image a user message or a tool result carries), its bounds
  and ``ImageError``; ``image_header`` reads a PNG/JPEG/GIF/WebP header;
* ``messages``: ``UserMessage``, ``AssistantMessage``, ``ToolResultMessage``;
* ``model``: ``ModelRequest`` (with ``system`` and ``ToolSpec``\\ s), the four chunks,
  ``ModelUsage``, ``ModelResponse`` and the four stop reasons;
* ``tools``: the two-stage tool contract (``Valid``, ``Invalid``, ``ToolExecutionContext``);
* ``results``: the four run results; ``events``: the agent events;
* ``codec``: ``to_json`` / ``from_json``, the workshop's camelCase JSON form; ``_decoder``:
  the one decoder of that form, which every layer configures (``Layer``);
* ``transcript`` (checkpoint 03, imported from there, not re-exported here): the snapshotting
  constructors (``user_message``...), ``parse_message`` and ``validate_transcript``.

Every value is a frozen, slotted, keyword-only dataclass with a ``Literal`` discriminant that
defaults to its one legal value. Construction checks and snapshots its fields (lists become
tuples, dicts become ``JsonObject``), with errors that name the field:
``ToolCall.arguments must be a JSON object (got set)``. So a protocol value that exists is
well-formed and deeply immutable. The checks, the codec and the fast builders all derive
from the field annotations and the unions (see ``_fields``): adding a member is one edit.
Semantic rules that span values (tool-call linkage, stop reasons agreeing with content)
belong to the layers above.
"""

from __future__ import annotations

from typing import Never, NoReturn

from tether.protocol._fields import MAX_SAFE_INTEGER, ProtocolValue
from tether.protocol.codec import ProtocolJsonError, from_json, to_json
from tether.protocol.content import (
    MAX_RAW_ARGUMENTS_CODE_POINTS,
    AssistantBlock,
    TextBlock,
    ThinkingBlock,
    ToolCall,
    ToolCallId,
)
from tether.protocol.events import (
    AgentEvent,
    AgentEventType,
    MessageAcceptedEvent,
    MessageAcceptedPayload,
    ModelChunkEvent,
    ModelChunkPayload,
    ModelRetryEvent,
    ModelRetryPayload,
    RunFinishedEvent,
    RunFinishedPayload,
    ToolFinishedEvent,
    ToolFinishedPayload,
    ToolProgressEvent,
    ToolProgressPayload,
    ToolStartedEvent,
    ToolStartedPayload,
)
from tether.protocol.images import (
    MAX_IMAGE_BYTES,
    MAX_IMAGE_SIDE,
    MAX_IMAGES_PER_REQUEST,
    ImageBlock,
    ImageError,
    ImageErrorCode,
    ImageMediaType,
)
from tether.protocol.messages import (
    AssistantMessage,
    Message,
    MessageId,
    ToolResultMessage,
    UserMessage,
    new_message_id,
)
from tether.protocol.model import (
    ZERO_USAGE,
    ModelChunk,
    ModelRequest,
    ModelRequestId,
    ModelResponse,
    ModelResponseId,
    ModelUsage,
    StopReason,
    TextDeltaChunk,
    ThinkingDeltaChunk,
    ToolCallChunk,
    ToolCallDeltaChunk,
    ToolSpec,
)
from tether.protocol.results import (
    CancelledRunResult,
    CompletedRunResult,
    FailedRunResult,
    MaxStepsRunResult,
    RunError,
    RunErrorCode,
    RunResult,
    RunStatus,
)
from tether.protocol.tools import (
    Invalid,
    RunContext,
    Tool,
    ToolExecutionContext,
    ToolValidation,
    Valid,
)

__all__ = [
    "MAX_IMAGES_PER_REQUEST",
    "MAX_IMAGE_BYTES",
    "MAX_IMAGE_SIDE",
    "MAX_RAW_ARGUMENTS_CODE_POINTS",
    "MAX_SAFE_INTEGER",
    "ZERO_USAGE",
    "AgentEvent",
    "AgentEventType",
    "AssistantBlock",
    "AssistantMessage",
    "CancelledRunResult",
    "CompletedRunResult",
    "FailedRunResult",
    "ImageBlock",
    "ImageError",
    "ImageErrorCode",
    "ImageMediaType",
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
    "ModelRetryEvent",
    "ModelRetryPayload",
    "ModelUsage",
    "ProtocolJsonError",
    "ProtocolValue",
    "RunContext",
    "RunError",
    "RunErrorCode",
    "RunFinishedEvent",
    "RunFinishedPayload",
    "RunResult",
    "RunStatus",
    "StopReason",
    "TextBlock",
    "TextDeltaChunk",
    "ThinkingBlock",
    "ThinkingDeltaChunk",
    "Tool",
    "ToolCall",
    "ToolCallChunk",
    "ToolCallDeltaChunk",
    "ToolCallId",
    "ToolExecutionContext",
    "ToolFinishedEvent",
    "ToolFinishedPayload",
    "ToolProgressEvent",
    "ToolProgressPayload",
    "ToolResultMessage",
    "ToolSpec",
    "ToolStartedEvent",
    "ToolStartedPayload",
    "ToolValidation",
    "UserMessage",
    "Valid",
    "assert_never",
    "from_json",
    "new_message_id",
    "to_json",
]


def assert_never(value: Never, /) -> NoReturn:
    """Mark the unreachable branch of an exhaustive ``match``.

    pyright reports a call that can be reached with a value; at runtime it raises
    ``AssertionError("Unexpected protocol value: <value>")``.
    """
    raise AssertionError(f"Unexpected protocol value: {value}")
