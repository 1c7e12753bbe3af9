"""Agent events: what a run reports, in order, under one sequence (``AgentEvent``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal, TypeAlias

from tether.protocol._fields import NON_NEGATIVE, ProtocolValue
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
    "RunFinishedEvent",
    "RunFinishedPayload",
    "ToolFinishedEvent",
    "ToolFinishedPayload",
    "ToolStartedEvent",
    "ToolStartedPayload",
]

AgentEventType: TypeAlias = Literal[
    "message.accepted", "model.chunk", "tool.started", "tool.finished", "run.finished"
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
class ToolStartedPayload(ProtocolValue):
    """A tool call is about to be validated and executed."""

    tool_call: ToolCall


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
class ToolStartedEvent(ProtocolValue):
    """``tool.started``: a tool call is starting."""

    type: Literal["tool.started"] = "tool.started"
    sequence: Sequence
    payload: ToolStartedPayload


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
    MessageAcceptedEvent | ModelChunkEvent | ToolStartedEvent | ToolFinishedEvent | RunFinishedEvent
)
"""Every event a run emits; ``run.finished`` is always last."""
