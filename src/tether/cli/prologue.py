"""Checkpoint 00: one complete agent trace, written down before any machinery exists.

``run_prologue()`` returns the same prebuilt, deeply immutable trace on every call: eight
progress records in causal order (input accepted, first model stream, a complete tool call,
execution, the linked result, the continuation stream, the final text, the terminal) and the
single settled result. Nothing runs: no model, no tool, no network.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Final, Literal, TypeAlias

from tether._base.dataclass import dataclass
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


class _WorkshopJson:
    """``to_json`` for the trace's dataclasses: the workshop's field names and values."""

    __slots__ = ()

    def to_json(self) -> dict[str, Any]:
        """Every field in order, named in camelCase (``tool_call_id``: ``toolCallId``), a
        JSON object thawed into plain ``dict`` and ``list`` values."""
        values: Any = self  # every subclass is a dataclass
        return {
            _camel_case(field.name): _plain(getattr(self, field.name))
            for field in dataclasses.fields(values)
        }


def _camel_case(name: str) -> str:
    first, *rest = name.split("_")
    return first + "".join(word[:1].upper() + word[1:] for word in rest)


def _plain(value: object) -> object:
    return thaw_json(value) if type(value) is JsonObject else value


@dataclass(frozen=True, slots=True, kw_only=True)
class UserMessageAcceptedRecord(_WorkshopJson):
    """The user's input entered the run."""

    type: Literal["user_message_accepted"] = "user_message_accepted"
    sequence: int
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelStreamOpenedRecord(_WorkshopJson):
    """A model stream opened."""

    type: Literal["model_stream_opened"] = "model_stream_opened"
    sequence: int
    stream_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallCompletedRecord(_WorkshopJson):
    """The model finished describing one tool call."""

    type: Literal["tool_call_completed"] = "tool_call_completed"
    sequence: int
    tool_call_id: str
    tool_name: str
    arguments: JsonObject


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolExecutionStartedRecord(_WorkshopJson):
    """The tool began executing."""

    type: Literal["tool_execution_started"] = "tool_execution_started"
    sequence: int
    tool_call_id: str
    tool_name: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolResultAppendedRecord(_WorkshopJson):
    """The tool's result joined the transcript under the same call ID."""

    type: Literal["tool_result_appended"] = "tool_result_appended"
    sequence: int
    tool_call_id: str
    result: int


@dataclass(frozen=True, slots=True, kw_only=True)
class FinalTextCompletedRecord(_WorkshopJson):
    """The continuation stream produced the final answer."""

    type: Literal["final_text_completed"] = "final_text_completed"
    sequence: int
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentEndedRecord(_WorkshopJson):
    """The terminal progress record."""

    type: Literal["agent_ended"] = "agent_ended"
    sequence: int
    status: Literal["completed"] = "completed"


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
class PrologueResult(_WorkshopJson):
    """The single settled value a caller receives."""

    status: Literal["completed"] = "completed"
    final_text: str


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
