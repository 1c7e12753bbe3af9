"""Running one tool call through the contract (checkpoint 06): ``execute_tool_call``.

The call runs in a fixed order: abort check, find the tool, validate the arguments
synchronously, execute, turn the output into content, with abort checks between the phases.
Output that is an exact ``str`` is sent as it is, except that a lone surrogate (a name or
output byte that was not UTF-8) becomes U+FFFD, so every result can be sent in the next
request; anything else goes through the bounded serializer (``tether.tools.serialize``);
either way it is capped at the tool's ``output_limit``. An ``ImageBlock``, a ``ToolReturn`` or
a list of text and images puts its images in the result's ``images``
(``tether.tools.returns``).

Every ordinary failure becomes an ``is_error`` result whose content is
``{"error":{"code":...,"message":...}}`` with one of six codes (``ToolResultErrorCode``:
``TOOL_NOT_FOUND``, ``TOOL_VALIDATION_FAILED``, ``TOOL_ARGUMENTS_INVALID``,
``TOOL_EXECUTION_FAILED``, ``TOOL_OUTPUT_SERIALIZATION_FAILED``, and ``TOOL_RETRY_REQUESTED``
for a ``ModelRetry`` the tool raised); the tool's own code, when it raised a ``TetherError``
or its ``validate`` returned an ``Invalid`` with a ``code``, is the result's ``error_code``
(the content stays as above). Every result has ID ``tool-result-<callId>`` and links to its
call. Cancellation is never a result: the abort reason is raised, even while ``execute`` is
blocked. A ``NonRecoverableToolError`` that tether created is raised too, so it can stop a
run; a look-alike cannot.
"""

from __future__ import annotations

import contextlib
import types
from collections.abc import Callable, Coroutine
from typing import Any, Final, Literal, TypeAlias

from tether._async.race import Started, check_signal, neutralize, race_eagerly
from tether._base.exact_types import exactly, instance_of, is_awaitable, type_of
from tether._base.strings import is_non_empty, message_of
from tether._base.tether_error import TetherError
from tether.abort import AbortSignal
from tether.jsonvalue import JsonObject
from tether.protocol import Invalid, ToolCall, ToolResultMessage, Valid
from tether.protocol import _trusted as trusted
from tether.protocol.transcript._blocks import snapshot_arguments
from tether.protocol.transcript._reading import MISSING, is_mapping, read_field
from tether.tools.contract import (
    ModelRetry,
    ToolContractError,
    ToolDefinition,
    is_non_recoverable,
)
from tether.tools.returns import split_tool_output
from tether.tools.serialize import cap_text, encodable_text, serialize_output
from tether.tools.tool_registry import ToolRegistry

__all__ = ["ToolResultErrorCode", "execute_tool_call"]

ToolResultErrorCode: TypeAlias = Literal[
    "TOOL_NOT_FOUND",
    "TOOL_ARGUMENTS_INVALID",
    "TOOL_VALIDATION_FAILED",
    "TOOL_EXECUTION_FAILED",
    "TOOL_OUTPUT_SERIALIZATION_FAILED",
    "TOOL_RETRY_REQUESTED",
]

_HIDDEN_DETAILS: Final = "the tool failed (its details are not shown to the model)"
_UNAWAITED: Final = "Tool returned an un-awaited coroutine; did you forget await?"


class _ToolFailure(Exception):
    """Internal: an ordinary failure that becomes an ``is_error`` result (``tool_code``: the
    tool's own code, its ``error_code``)."""

    def __init__(self, code: ToolResultErrorCode, message: str, tool_code: str = "") -> None:
        super().__init__(message)
        self.code: ToolResultErrorCode = code
        self.text = message
        self.tool_code = tool_code


async def execute_tool_call(
    registry: ToolRegistry,
    tool_call: ToolCall,
    signal: AbortSignal,
    deps: object = None,
    *,
    progress: Callable[[str], None] | None = None,
) -> ToolResultMessage:
    """Run one tool call through the contract and return its linked result message.

    A successful call's content is the output itself when it is an exact ``str`` (lone
    surrogates replaced by U+FFFD, ``encodable_text``), otherwise
    the bounded serializer's JSON; either is capped at the tool's ``output_limit``. An
    ``ImageBlock``, a ``ToolReturn`` or a list of text and images gives the result its
    ``images`` (``tether.tools.returns``). An awaited
    output that is itself a coroutine (a forgotten ``await``) is closed, never run, and
    becomes ``TOOL_EXECUTION_FAILED``. ``deps`` reaches the tool as its context's ``deps``
    and ``progress`` (a function that must not block or raise; the loop passes one that
    emits ``tool.progress``) as its context's ``progress``.

    An invalid call (``raw_arguments`` set) is never run: ``TOOL_ARGUMENTS_INVALID``.

    Raises the abort reason when ``signal`` aborts (before or during any phase), a
    ``NonRecoverableToolError`` created by tether when the tool raises one, and
    ``ToolContractError`` (``INVALID_TOOL_CALL``) for a registry or call that is not usable.
    """
    check_signal(signal)
    if not instance_of(registry, ToolRegistry):
        raise ToolContractError("INVALID_TOOL_CALL", "execute_tool_call requires a ToolRegistry")
    call = _snapshot_call(tool_call, signal)
    try:
        if call.raw_arguments is not None:  # invalid (the loop answers these before): never run
            raise _ToolFailure("TOOL_ARGUMENTS_INVALID", "Tool call arguments are not JSON")
        tool = registry.get(call.name)
        if tool is None:
            raise _ToolFailure("TOOL_NOT_FOUND", f'Unknown Tool "{call.name}"')
        pending: Any = _start(tool, call, signal, deps, progress)
        if is_awaitable(pending):
            try:
                output = race_eagerly(signal, pending)  # a tool that never waits: no await
                if type_of(output) is Started:
                    output = await output.race()
            except Exception as error:
                _escalate(error, signal)
                raise _failure(
                    tool, error, "TOOL_EXECUTION_FAILED", "Tool execution failed"
                ) from error
            if type_of(output) is types.CoroutineType:
                _discard(output)
                check_signal(signal)
                raise _ToolFailure("TOOL_EXECUTION_FAILED", _UNAWAITED)
        else:
            output: Any = pending
        check_signal(signal)
        output, images = _split(output)
        if type_of(output) is str:
            content = cap_text(encodable_text(output), tool.output_limit)
        else:
            content = _serialized(tool, output, signal)
    except _ToolFailure as failure:
        content = serialize_output({"error": {"code": failure.code, "message": failure.text}})
        return trusted.tool_result(call, content, True, failure.tool_code)
    return trusted.tool_result(call, content, False, "", images)


def _ignore_progress(text: str, /) -> None:
    """``progress`` outside a loop: reports go nowhere."""


def _discard(coroutine: Coroutine[Any, Any, Any]) -> None:
    """Close a coroutine nobody will await, so it never warns "was never awaited".

    One that never started runs nothing; a suspended one runs its ``finally`` blocks, and
    whatever they raise is dropped: the call already failed.
    """
    with contextlib.suppress(Exception):
        coroutine.close()


def _split(output: object) -> tuple[object, tuple[Any, ...]]:
    """The text part and the images of an output (``tether.tools.returns``)."""
    try:
        return split_tool_output(output)
    except ValueError as error:
        raise _ToolFailure("TOOL_OUTPUT_SERIALIZATION_FAILED", str(error)) from error


def _snapshot_call(tool_call: object, signal: AbortSignal) -> ToolCall:
    if exactly(tool_call, ToolCall):
        return tool_call
    try:
        if not is_mapping(tool_call):
            raise TypeError("tool call must be a ToolCall or a mapping")
        call_type = read_field(tool_call, "type")
        if type_of(call_type) is not str or call_type != "toolCall":
            raise TypeError('tool call type must be "toolCall"')
        call_id = read_field(tool_call, "id")
        name = read_field(tool_call, "name")
        if not is_non_empty(call_id) or not is_non_empty(name):
            raise TypeError("tool call id and name must be non-empty strings")
        arguments = snapshot_arguments(read_field(tool_call, "arguments"), "tool_call.arguments")
        snapshot = ToolCall(id=call_id, name=name, arguments=arguments)
    except Exception as error:
        check_signal(signal)
        raise ToolContractError(
            "INVALID_TOOL_CALL", "Tool call could not be inspected safely"
        ) from error
    return snapshot


def _escalate(error: BaseException, signal: AbortSignal) -> None:
    """Cancellation and genuine non-recoverable errors are raised, never turned into results."""
    check_signal(signal)
    if is_non_recoverable(error):
        raise error


def _start(
    tool: ToolDefinition[Any, Any],
    call: ToolCall,
    signal: AbortSignal,
    deps: object,
    progress: Callable[[str], None] | None,
) -> Any:
    """Validate the arguments and start the tool; returns what ``execute`` returned."""
    value = _validated(tool, call.arguments, signal)
    context = trusted.execution_context(
        signal, call.id, deps, _ignore_progress if progress is None else progress
    )
    try:
        return tool.execute(value, context)
    except Exception as error:
        _escalate(error, signal)
        raise _failure(tool, error, "TOOL_EXECUTION_FAILED", "Tool execution failed") from error


def _failure(
    tool: ToolDefinition[Any, Any], error: Exception, code: ToolResultErrorCode, fallback: str
) -> _ToolFailure:
    """The result failure for an exception the tool's own code raised: a ``ModelRetry``'s
    message as it is, else the exception's text (or a generic one when the tool hides it)."""
    if isinstance(error, ModelRetry):
        return _ToolFailure("TOOL_RETRY_REQUESTED", message_of(error, "Please try again"))
    own = _own_code(error)
    if not tool.expose_errors:
        return _ToolFailure(code, _HIDDEN_DETAILS, own)
    return _ToolFailure(code, message_of(error, fallback), own)


def _own_code(error: Exception) -> str:
    """The code a ``TetherError`` the tool raised was built with (``""``: none), read from what
    the constructor stored: no property or ``__getattribute__`` of the error's class runs."""
    if not issubclass(type(error), TetherError):
        return ""
    stored = object.__getattribute__(error, "__dict__").get("_code")  # every exception has one
    return stored if type(stored) is str else ""


def _serialized(tool: ToolDefinition[Any, Any], output: object, signal: AbortSignal) -> str:
    try:
        content = serialize_output(output, cap=tool.output_limit)
    except Exception as error:
        _escalate(error, signal)
        raise _failure(
            tool,
            error,
            "TOOL_OUTPUT_SERIALIZATION_FAILED",
            "Tool output could not be serialized safely",
        ) from error
    check_signal(signal)  # cancellation during output inspection wins
    return content


def _validated(tool: ToolDefinition[Any, Any], arguments: JsonObject, signal: AbortSignal) -> Any:
    try:
        decision: Any = tool.validate(arguments)
    except Exception as error:
        _escalate(error, signal)
        raise _failure(tool, error, "TOOL_VALIDATION_FAILED", "Tool validation failed") from error
    kind = type_of(decision)
    if kind is not Valid and kind is not Invalid and is_awaitable(decision):
        neutralize(decision)
        check_signal(signal)
        raise _ToolFailure("TOOL_VALIDATION_FAILED", "Tool validation must return synchronously")
    check_signal(signal)
    if kind is Valid:  # the common decisions: nothing more of the caller's runs to read them
        return decision.value
    if kind is Invalid:
        raise _ToolFailure("TOOL_ARGUMENTS_INVALID", decision.error, decision.code)
    try:
        accepted, payload = _interpret(decision)
    except _ToolFailure:
        raise
    except Exception as error:
        _escalate(error, signal)
        raise _ToolFailure(
            "TOOL_VALIDATION_FAILED",
            message_of(error, "Tool validation returned an invalid decision"),
        ) from error
    check_signal(signal)
    if not accepted:
        raise _ToolFailure("TOOL_ARGUMENTS_INVALID", payload)
    return payload


def _interpret(decision: Any) -> tuple[bool, Any]:
    """``(True, value)`` or ``(False, error)`` from a decision; raises for a bad decision.

    Only called for decisions that are neither ``Valid`` nor ``Invalid`` (``_validated`` reads
    those itself): a mapping ``{"ok": True, "value": v}`` or ``{"ok": False, "error": "..."}``,
    each field read once.
    """
    if not is_mapping(decision):
        raise _invalid_decision("Tool validation must return a decision object")
    ok = read_field(decision, "ok")
    if ok is True:
        value = read_field(decision, "value")
        if value is MISSING:
            raise _invalid_decision("Tool validation returned an invalid decision")
        return True, value
    if ok is False:
        error = read_field(decision, "error")
        if not is_non_empty(error):
            raise _invalid_decision("A rejected Tool validation must include a non-empty error")
        return False, error
    raise _invalid_decision("Tool validation ok must be a boolean")


def _invalid_decision(message: str) -> _ToolFailure:
    return _ToolFailure("TOOL_VALIDATION_FAILED", message)
