"""Checkpoint 00: one complete agent trace, written down before any machinery exists.

``run_prologue()`` returns the same prebuilt, deeply immutable trace on every call: eight
progress records in causal order (input accepted, first model stream, a complete tool call,
execution, the linked result, the continuation stream, the final text, the terminal) and the
single settled result. Nothing runs: no model, no tool, no network.
"""

from __future__ import annotations

from typing import Any, Final, Literal, TypeAlias

from tether._dataclass import dataclass
from tether.jsonvalue import JsonObject, thaw_json

__all__ = [
    "AgentEndedRecord",
    "FinalTextCompletedRecord",
    "ModelStreamOpenedRecord",
    "Prologue",
    "PrologueRecord",
    "PrologueResult",
    "ToolCallCompletedRecord",
    "ToolExecutionStartedRecord",
    "ToolResultAppendedRecord",
    "UserMessageAcceptedRecord",
    "run_prologue",
]


PROLOGUE_PROMPT: Final = "What is 20 + 22?"
PROLOGUE_TOOL_CALL_ID: Final = "call-add-001"
PROLOGUE_FINAL_TEXT: Final = "The sum is 42."


@dataclass(frozen=True, slots=True, kw_only=True)
class UserMessageAcceptedRecord:
    """The user's input entered the run."""

    type: Literal["user_message_accepted"] = "user_message_accepted"
    sequence: int
    text: str

    def to_json(self) -> dict[str, Any]:
        """The record with the workshop's field names."""
        return {"type": self.type, "sequence": self.sequence, "text": self.text}


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelStreamOpenedRecord:
    """A model stream opened."""

    type: Literal["model_stream_opened"] = "model_stream_opened"
    sequence: int
    stream_id: str

    def to_json(self) -> dict[str, Any]:
        """The record with the workshop's field names."""
        return {"type": self.type, "sequence": self.sequence, "streamId": self.stream_id}


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallCompletedRecord:
    """The model finished describing one tool call."""

    type: Literal["tool_call_completed"] = "tool_call_completed"
    sequence: int
    tool_call_id: str
    tool_name: str
    arguments: JsonObject

    def to_json(self) -> dict[str, Any]:
        """The record with the workshop's field names."""
        return {
            "type": self.type,
            "sequence": self.sequence,
            "toolCallId": self.tool_call_id,
            "toolName": self.tool_name,
            "arguments": thaw_json(self.arguments),
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolExecutionStartedRecord:
    """The tool began executing."""

    type: Literal["tool_execution_started"] = "tool_execution_started"
    sequence: int
    tool_call_id: str
    tool_name: str

    def to_json(self) -> dict[str, Any]:
        """The record with the workshop's field names."""
        return {
            "type": self.type,
            "sequence": self.sequence,
            "toolCallId": self.tool_call_id,
            "toolName": self.tool_name,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolResultAppendedRecord:
    """The tool's result joined the transcript under the same call ID."""

    type: Literal["tool_result_appended"] = "tool_result_appended"
    sequence: int
    tool_call_id: str
    result: int

    def to_json(self) -> dict[str, Any]:
        """The record with the workshop's field names."""
        return {
            "type": self.type,
            "sequence": self.sequence,
            "toolCallId": self.tool_call_id,
            "result": self.result,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class FinalTextCompletedRecord:
    """The continuation stream produced the final answer."""

    type: Literal["final_text_completed"] = "final_text_completed"
    sequence: int
    text: str

    def to_json(self) -> dict[str, Any]:
        """The record with the workshop's field names."""
        return {"type": self.type, "sequence": self.sequence, "text": self.text}


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentEndedRecord:
    """The terminal progress record."""

    type: Literal["agent_ended"] = "agent_ended"
    sequence: int
    status: Literal["completed"] = "completed"

    def to_json(self) -> dict[str, Any]:
        """The record with the workshop's field names."""
        return {"type": self.type, "sequence": self.sequence, "status": self.status}


PrologueRecord: TypeAlias = (
    UserMessageAcceptedRecord
    | ModelStreamOpenedRecord
    | ToolCallCompletedRecord
    | ToolExecutionStartedRecord
    | ToolResultAppendedRecord
    | FinalTextCompletedRecord
    | AgentEndedRecord
)


@dataclass(frozen=True, slots=True, kw_only=True)
class PrologueResult:
    """The single settled value a caller receives."""

    status: Literal["completed"] = "completed"
    final_text: str

    def to_json(self) -> dict[str, Any]:
        """The result with the workshop's field names."""
        return {"status": self.status, "finalText": self.final_text}


@dataclass(frozen=True, slots=True, kw_only=True)
class Prologue:
    """Progress records (``events``) and the settled ``result``, kept apart."""

    events: tuple[PrologueRecord, ...]
    result: PrologueResult


_PROLOGUE: Final = Prologue(
    events=(
        UserMessageAcceptedRecord(sequence=0, text=PROLOGUE_PROMPT),
        ModelStreamOpenedRecord(sequence=1, stream_id="model-stream-001"),
        ToolCallCompletedRecord(
            sequence=2,
            tool_call_id=PROLOGUE_TOOL_CALL_ID,
            tool_name="add",
            arguments=JsonObject({"left": 20, "right": 22}),
        ),
        ToolExecutionStartedRecord(sequence=3, tool_call_id=PROLOGUE_TOOL_CALL_ID, tool_name="add"),
        ToolResultAppendedRecord(sequence=4, tool_call_id=PROLOGUE_TOOL_CALL_ID, result=42),
        ModelStreamOpenedRecord(sequence=5, stream_id="model-stream-002"),
        FinalTextCompletedRecord(sequence=6, text=PROLOGUE_FINAL_TEXT),
        AgentEndedRecord(sequence=7),
    ),
    result=PrologueResult(final_text=PROLOGUE_FINAL_TEXT),
)


def run_prologue() -> Prologue:
    """The checkpoint-00 trace: the same deeply immutable object on every call."""
    return _PROLOGUE
