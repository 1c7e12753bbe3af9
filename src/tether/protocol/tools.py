"""The two-stage tool contract: validate any input first, then execute only a valid value."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, Literal, Protocol, TypeAlias, TypeVar

from tether.abort import AbortSignal
from tether.protocol._fields import NonEmpty, ProtocolValue

__all__ = ["Invalid", "Tool", "ToolExecutionContext", "ToolValidation", "Valid"]

T_co = TypeVar("T_co", covariant=True)
InputT = TypeVar("InputT")
OutputT_co = TypeVar("OutputT_co", covariant=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class Valid(ProtocolValue, Generic[T_co]):
    """A successful validation: ``value`` is the typed input ``execute`` receives."""

    ok: Literal[True] = True
    value: T_co


@dataclass(frozen=True, slots=True, kw_only=True)
class Invalid(ProtocolValue):
    """A rejected validation; ``error`` explains what is wrong with the arguments."""

    ok: Literal[False] = False
    error: NonEmpty


ToolValidation: TypeAlias = Valid[InputT] | Invalid
"""What ``validate`` returns."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolExecutionContext(ProtocolValue):
    """What ``execute`` receives besides its input: the run's abort signal and the call ID."""

    signal: AbortSignal
    tool_call_id: NonEmpty


class Tool(Protocol[InputT, OutputT_co]):
    """The two-stage tool contract, structurally: ``ToolRegistry`` accepts any object with
    these members (``define_tool`` and ``@tool`` build ``ToolDefinition`` values that have them).

    ``validate`` must accept ``object`` (model output is untrusted) and return a decision;
    only a ``Valid`` value's ``value`` ever reaches the asynchronous ``execute``.
    """

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    def validate(self, input: object, /) -> ToolValidation[InputT]: ...

    async def execute(self, input: InputT, context: ToolExecutionContext, /) -> OutputT_co: ...
