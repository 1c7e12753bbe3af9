"""Tool-call hooks: a host's say before a tool runs and after it returns.

A coding agent asks a person before it writes a file or runs a command; a server may redact
what a tool returned before the model reads it. ``ToolHooks`` carries two optional callables
that the loop calls around every tool call, in the tool phase, after ``tool.started``:

* ``before_tool_call(context)`` returns ``None`` to let the call run, or
  ``BlockToolCall(reason=...)`` to stop it. A blocked call never runs; its result is an
  ``is_error`` message whose content is ``{"error":{"code":"TOOL_CALL_BLOCKED","message":
  <reason>}}``, so the model learns why and the transcript stays linked (never a silent skip).
* ``after_tool_call(context, result)`` returns ``None`` to keep the result, or
  ``ReplaceToolResult(content=..., is_error=...)`` to replace its content (the result keeps
  its ID and its link to the call).

Either may be ``async`` (or return any awaitable): the loop awaits it while racing the run's
abort signal, so a person who never answers cannot keep a cancelled run alive. A hook that
raises, or returns something else, fails closed: the call does not run (or its output is not
passed on) and the result is ``TOOL_HOOK_FAILED`` with the hook's message. A hook can never end
the run by raising; cancellation (the signal) is the only way out.

``context.messages`` is the transcript as the model saw it, with the assistant message that
made the call and the results of the batch's earlier calls.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, Final, Literal, TypeAlias

from tether._async.race import check_signal, race, reraise_task_cancellation
from tether._base.dataclass import dataclass
from tether._base.exact_types import exactly, is_awaitable, type_of
from tether._base.strings import is_non_empty, message_of
from tether.abort import AbortSignal
from tether.protocol import Message, ToolCall, ToolResultMessage
from tether.protocol import _trusted as trusted
from tether.tools import ToolRegistry, execute_tool_call
from tether.tools.serialize import serialize_output

__all__ = [
    "AfterToolCall",
    "BeforeToolCall",
    "BlockToolCall",
    "ReplaceToolResult",
    "ToolCallContext",
    "ToolHookErrorCode",
    "ToolHooks",
]

ToolHookErrorCode: TypeAlias = Literal["TOOL_CALL_BLOCKED", "TOOL_HOOK_FAILED"]
"""The codes of results that a hook, not the tool, produced."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallContext:
    """What a hook is told: the call, the transcript so far and the run's abort signal."""

    tool_call: ToolCall
    messages: tuple[Message, ...]
    signal: AbortSignal


@dataclass(frozen=True, slots=True, kw_only=True)
class BlockToolCall:
    """``before_tool_call``'s answer "do not run this call", with a reason for the model."""

    reason: str

    def __post_init__(self) -> None:
        if type_of(self.reason) is not str or not is_non_empty(self.reason):
            raise TypeError("BlockToolCall.reason must be a non-empty string")


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplaceToolResult:
    """``after_tool_call``'s answer "send this instead": new content and error flag."""

    content: str
    is_error: bool = False

    def __post_init__(self) -> None:
        if type_of(self.content) is not str:
            raise TypeError("ReplaceToolResult.content must be a string")
        if type_of(self.is_error) is not bool:
            raise TypeError("ReplaceToolResult.is_error must be a bool")


BeforeToolCall: TypeAlias = Callable[
    [ToolCallContext], "BlockToolCall | Awaitable[BlockToolCall | None] | None"
]
"""Called before a tool call runs; ``None`` allows it, ``BlockToolCall`` blocks it."""
AfterToolCall: TypeAlias = Callable[
    [ToolCallContext, ToolResultMessage],
    "ReplaceToolResult | Awaitable[ReplaceToolResult | None] | None",
]
"""Called with a call's result; ``None`` keeps it, ``ReplaceToolResult`` replaces its content."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolHooks:
    """The two optional hooks of a run (see the module docstring)."""

    before_tool_call: BeforeToolCall | None = None
    after_tool_call: AfterToolCall | None = None

    def __post_init__(self) -> None:
        for name in ("before_tool_call", "after_tool_call"):
            hook = getattr(self, name)
            if hook is not None and not callable(hook):
                raise TypeError(f"ToolHooks.{name} must be callable or None")


_BEFORE_SHAPE: Final = "before_tool_call must return None or BlockToolCall"
_AFTER_SHAPE: Final = "after_tool_call must return None or ReplaceToolResult"


class _HookFailure(Exception):
    """Internal: the hook failed; becomes a ``TOOL_HOOK_FAILED`` result."""


def _error_result(call: ToolCall, code: ToolHookErrorCode, message: str) -> ToolResultMessage:
    content = serialize_output({"error": {"code": code, "message": message}})
    return trusted.tool_result(call, content, True)


async def _answer(hook: Callable[..., Any], signal: AbortSignal, *args: Any) -> object:
    """Call ``hook(*args)`` and await what it returns, racing ``signal``.

    Raises the abort reason when the signal aborts; any other failure is a ``_HookFailure``.
    """
    check_signal(signal)  # a run cancelled as the call started never asks the host
    try:
        answer = hook(*args)
        if is_awaitable(answer):
            answer = await race(signal, answer)
    except asyncio.CancelledError as error:
        reraise_task_cancellation(error)
        check_signal(signal)
        raise _HookFailure(
            "Tool hook raised CancelledError although nothing cancelled the run"
        ) from error
    except Exception as error:
        check_signal(signal)
        raise _HookFailure(message_of(error, "Tool hook failed")) from error
    check_signal(signal)
    return answer


async def run_hooked_tool_call(
    hooks: ToolHooks,
    registry: ToolRegistry,
    call: ToolCall,
    messages: list[Message],
    signal: AbortSignal,
    deps: object = None,
    progress: Callable[[str], None] | None = None,
) -> ToolResultMessage:
    """One tool call with the hooks around it (the loop's tool phase calls this).

    Raises what ``execute_tool_call`` raises (the abort reason, a non-recoverable tool
    error); every hook failure is a result.
    """
    before, after = hooks.before_tool_call, hooks.after_tool_call
    context = ToolCallContext(tool_call=call, messages=tuple(messages), signal=signal)
    if before is not None:
        try:
            decision = await _answer(before, signal, context)
        except _HookFailure as failure:
            return _error_result(call, "TOOL_HOOK_FAILED", str(failure))
        if exactly(decision, BlockToolCall):
            blocked: BlockToolCall = decision
            return _error_result(call, "TOOL_CALL_BLOCKED", blocked.reason)
        if decision is not None:
            return _error_result(call, "TOOL_HOOK_FAILED", _BEFORE_SHAPE)
    result = await execute_tool_call(registry, call, signal, deps=deps, progress=progress)
    if after is None:
        return result
    try:
        replacement = await _answer(after, signal, context, result)
    except _HookFailure as failure:
        return _error_result(call, "TOOL_HOOK_FAILED", str(failure))
    if replacement is None:
        return result
    if not exactly(replacement, ReplaceToolResult):
        return _error_result(call, "TOOL_HOOK_FAILED", _AFTER_SHAPE)
    replaced: ReplaceToolResult = replacement
    return trusted.tool_result(call, replaced.content, replaced.is_error)
