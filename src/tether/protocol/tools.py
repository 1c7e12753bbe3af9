"""The two-stage tool contract: validate any input first, then execute only a valid value."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, Literal, Protocol, TypeAlias, TypeVar

from tether._base.dataclass import dataclass
from tether.abort import AbortSignal
from tether.protocol._fields import NonEmpty, ProtocolValue, python_only, v2

__all__ = ["Invalid", "RunContext", "Tool", "ToolExecutionContext", "ToolValidation", "Valid"]

T_co = TypeVar("T_co", covariant=True)
InputT = TypeVar("InputT")
OutputT_co = TypeVar("OutputT_co", covariant=True)
DepsT_co = TypeVar("DepsT_co", covariant=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class Valid(ProtocolValue, Generic[T_co]):
    """A successful validation: ``value`` is the typed input ``execute`` receives."""

    ok: Literal[True] = True
    value: T_co


@dataclass(frozen=True, slots=True, kw_only=True)
class Invalid(ProtocolValue):
    """A rejected validation; ``error`` explains what is wrong with the arguments (the model
    reads it). ``code`` (protocol v2; ``""``: none) is its stable code, given to the call's
    result as ``error_code``."""

    ok: Literal[False] = False
    error: NonEmpty
    code: str = v2("")


ToolValidation: TypeAlias = Valid[InputT] | Invalid
"""What ``validate`` returns."""


def _ignore_progress(text: str, /) -> None:
    """The default ``ToolExecutionContext.progress``: reports go nowhere."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolExecutionContext(ProtocolValue):
    """What ``execute`` receives besides its input: the run's abort signal, the call ID and
    the run's ``deps`` (what the caller passed as ``deps=``; ``None`` by default). Annotate
    the parameter ``RunContext[YourDeps]`` to read ``deps`` with its type.

    ``progress(text)`` reports partial output while the call runs (a command's output as it
    arrives): the loop turns the reports into ``tool.progress`` events, coalesced and
    bounded, for display only; the call's result is still what ``execute`` returns. It never
    blocks and never raises; call it from the event loop's thread. Outside a run (and in a
    context built by hand) it does nothing.
    """

    signal: AbortSignal
    tool_call_id: NonEmpty
    deps: object = None
    progress: Callable[[str], None] = python_only(_ignore_progress)


_NO_DEPS: Any = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RunContext(ToolExecutionContext, Generic[DepsT_co]):
    """The context a tool receives, typed by the run's dependencies.

    Every context the loop passes to a tool is a ``RunContext``. Annotate a ``@tool``
    parameter (or an ``execute`` function's context) ``RunContext[Db]`` and ``context.deps``
    is a ``Db`` to the type checker; it holds what the run was given as
    ``run_agent_loop(..., deps=db)`` or ``agent.run(..., deps=db)``. tether does not check
    the value: the caller and the annotation must agree.
    """

    deps: DepsT_co = _NO_DEPS


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
