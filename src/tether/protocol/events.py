"""Agent events: what a run reports, in order, under one sequence (``AgentEvent``)."""

from __future__ import annotations

from typing import Annotated, Literal, TypeAlias

from tether._base.dataclass import dataclass
from tether.protocol._fields import COUNT, NON_NEGATIVE, POSITIVE, NonEmpty, ProtocolValue
from tether.protocol.content import ToolCall
from tether.protocol.messages import Message, ToolResultMessage
from tether.protocol.model import ModelChunk
from tether.protocol.results import RunResult

__all__ = [
    "AgentEvent",
    "AgentEventType",
    "MessageAcceptedEvent",
    "MessageAcceptedPayload",
    "ModelChunkEvent",
    "ModelChunkPayload",
    "ModelRetryEvent",
    "ModelRetryPayload",
    "RunFinishedEvent",
    "RunFinishedPayload",
    "ToolFinishedEvent",
    "ToolFinishedPayload",
    "ToolProgressEvent",
    "ToolProgressPayload",
    "ToolStartedEvent",
    "ToolStartedPayload",
]

AgentEventType: TypeAlias = Literal[
    "message.accepted",
    "model.chunk",
    "model.retry",
    "tool.started",
    "tool.progress",
    "tool.finished",
    "run.finished",
]
Sequence: TypeAlias = Annotated[int, NON_NEGATIVE]


@dataclass(frozen=True, slots=True, kw_only=True)
class MessageAcceptedPayload(ProtocolValue):
    """A message entered the run's transcript."""

    message: Message


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelChunkPayload(ProtocolValue):
    """The model streamed a chunk."""

    chunk: ModelChunk


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelRetryPayload(ProtocolValue):
    """The model request failed before anything streamed and is tried again after a wait.

    ``request_id`` is the request being retried; ``attempt`` the number of the attempt that
    failed (1 for the first); ``delay_ms`` how long the model waits before the next attempt,
    in milliseconds; ``code`` the failure's stable code (``PROVIDER_OVERLOADED``,
    ``PROVIDER_RATE_LIMITED``, ...) and ``reason`` a short text for a person
    (``"HTTP 503"``, ``"connection failed"``).
    """

    request_id: NonEmpty
    attempt: Annotated[int, POSITIVE]
    delay_ms: Annotated[int, COUNT]
    code: NonEmpty
    reason: NonEmpty


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolStartedPayload(ProtocolValue):
    """A tool call is about to be validated and executed."""

    tool_call: ToolCall


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolProgressPayload(ProtocolValue):
    """A running tool call reported partial output (for display only: the call's result
    message is still authoritative). ``text`` is the next piece of what the tool reported,
    coalesced (never empty when the loop emits it); the pieces of one call, joined, are a
    prefix of its reports (bounded)."""

    tool_call_id: NonEmpty
    tool_name: NonEmpty
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolFinishedPayload(ProtocolValue):
    """A tool call produced its result message."""

    message: ToolResultMessage


@dataclass(frozen=True, slots=True, kw_only=True)
class RunFinishedPayload(ProtocolValue):
    """The run settled."""

    result: RunResult


@dataclass(frozen=True, slots=True, kw_only=True)
class MessageAcceptedEvent(ProtocolValue):
    """``message.accepted``: a starting message was accepted into the run."""

    type: Literal["message.accepted"] = "message.accepted"
    sequence: Sequence
    payload: MessageAcceptedPayload


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelChunkEvent(ProtocolValue):
    """``model.chunk``: the model streamed a chunk that the run accepted."""

    type: Literal["model.chunk"] = "model.chunk"
    sequence: Sequence
    payload: ModelChunkPayload


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelRetryEvent(ProtocolValue):
    """``model.retry``: the model request failed before anything streamed; the model waits
    ``payload.delay_ms`` and tries again (emitted before the wait)."""

    type: Literal["model.retry"] = "model.retry"
    sequence: Sequence
    payload: ModelRetryPayload


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolStartedEvent(ProtocolValue):
    """``tool.started``: a tool call is starting."""

    type: Literal["tool.started"] = "tool.started"
    sequence: Sequence
    payload: ToolStartedPayload


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolProgressEvent(ProtocolValue):
    """``tool.progress``: a running tool call's partial output, between its ``tool.started``
    and ``tool.finished``."""

    type: Literal["tool.progress"] = "tool.progress"
    sequence: Sequence
    payload: ToolProgressPayload


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolFinishedEvent(ProtocolValue):
    """``tool.finished``: a tool call's result message was appended."""

    type: Literal["tool.finished"] = "tool.finished"
    sequence: Sequence
    payload: ToolFinishedPayload


@dataclass(frozen=True, slots=True, kw_only=True)
class RunFinishedEvent(ProtocolValue):
    """``run.finished``: always the last event of a run."""

    type: Literal["run.finished"] = "run.finished"
    sequence: Sequence
    payload: RunFinishedPayload


AgentEvent: TypeAlias = (
    MessageAcceptedEvent
    | ModelChunkEvent
    | ModelRetryEvent
    | ToolStartedEvent
    | ToolProgressEvent
    | ToolFinishedEvent
    | RunFinishedEvent
)
"""Every event a run emits; ``run.finished`` is always last."""
