"""Checkpoint 06: the tool contract. Tools validate before any effect and fail in bounded,
linked, machine-readable ways.

* ``define_tool`` snapshots a definition; ``ToolRegistry`` registers definitions all or
  nothing and never lets two tools share a name.
* ``ToolRegistry.specs()`` says what a model is told about the registered tools.
* ``execute_tool_call`` runs one call in a fixed order: abort check, find the tool, validate
  the arguments synchronously, execute, turn the output into content, with abort checks
  between the phases. Output that is an exact ``str`` is sent as it is, except that a lone
  surrogate (a name or output byte that was not UTF-8) becomes U+FFFD, so every result can be
  sent in the next request; anything else goes through the bounded serializer; either way it
  is capped at the tool's ``output_limit``. An ``ImageBlock``, a ``ToolReturn`` or a list of
  text and images puts its images in the result's ``images`` (``tether.tools.returns``).
  Every ordinary failure becomes an ``is_error`` result whose content is
  ``{"error":{"code":...,"message":...}}`` with one of six codes (``TOOL_NOT_FOUND``,
  ``TOOL_VALIDATION_FAILED``, ``TOOL_ARGUMENTS_INVALID``, ``TOOL_EXECUTION_FAILED``,
  ``TOOL_OUTPUT_SERIALIZATION_FAILED``, and ``TOOL_RETRY_REQUESTED`` for a ``ModelRetry``
  the tool raised); the tool's own code, when it raised a ``TetherError`` or its
  ``validate`` returned an ``Invalid`` with a ``code``, is the result's ``error_code`` (the
  content stays as above). Every result has ID ``tool-result-<callId>`` and
  links to its call. Cancellation is never a result: the abort reason is raised, even while
  ``execute`` is blocked. A ``NonRecoverableToolError`` that tether created is raised too, so
  it can stop a run; a look-alike cannot.
* ``@tool`` (see ``tether.tools.function``) builds a definition from an annotated function.
"""

from __future__ import annotations

import contextlib
import types
from collections.abc import Callable, Coroutine, Iterable, Mapping
from typing import Any, Final, Generic, Literal, ParamSpec, TypeAlias, TypeGuard, TypeVar, cast

from tether._dataclass import dataclass
from tether._errors import TetherError
from tether._ownership import trusted_errors
from tether._race import Started, check_signal, neutralize, race_eagerly
from tether._text import is_non_empty, message_of
from tether._types import exactly, instance_of, is_awaitable, type_of
from tether.abort import AbortSignal
from tether.jsonvalue import JsonObject
from tether.protocol import (
    Invalid,
    ToolCall,
    ToolExecutionContext,
    ToolResultMessage,
    ToolSpec,
    ToolValidation,
    Valid,
)
from tether.protocol import _trusted as trusted
from tether.protocol.transcript._blocks import snapshot_arguments
from tether.protocol.transcript._reading import MISSING, is_mapping, read_field
from tether.tools.effects import TOOL_EFFECTS, ToolEffect
from tether.tools.returns import split_tool_output
from tether.tools.serialize import (
    TOOL_OUTPUT_CAP_CHARACTERS,
    TOOL_SERIALIZATION_MAX_BIGINT_BITS,
    TOOL_SERIALIZATION_MAX_COLLECTION_ENTRIES,
    TOOL_SERIALIZATION_MAX_DEPTH,
    TOOL_SERIALIZATION_MAX_NODES,
    TOOL_SERIALIZATION_MAX_STRING_CHARACTERS,
    TOOL_TRUNCATION_MARKER,
    UNDEFINED,
    cap_text,
    encodable_text,
    serialize_output,
)

__all__ = [
    "TOOL_OUTPUT_CAP_CHARACTERS",
    "TOOL_OUTPUT_LIMIT_MIN",
    "TOOL_SERIALIZATION_MAX_BIGINT_BITS",
    "TOOL_SERIALIZATION_MAX_COLLECTION_ENTRIES",
    "TOOL_SERIALIZATION_MAX_DEPTH",
    "TOOL_SERIALIZATION_MAX_NODES",
    "TOOL_SERIALIZATION_MAX_STRING_CHARACTERS",
    "TOOL_TRUNCATION_MARKER",
    "UNDEFINED",
    "FunctionTool",
    "ModelRetry",
    "NonRecoverableToolError",
    "ToolContractError",
    "ToolContractErrorCode",
    "ToolDefinition",
    "ToolRegistry",
    "ToolResultErrorCode",
    "define_tool",
    "execute_tool_call",
]

InputT = TypeVar("InputT")
OutputT = TypeVar("OutputT")
ReturnT = TypeVar("ReturnT")
P = ParamSpec("P")

ToolContractErrorCode: TypeAlias = Literal[
    "INVALID_TOOL_DEFINITION", "INVALID_TOOL_BATCH", "DUPLICATE_TOOL_NAME", "INVALID_TOOL_CALL"
]
ToolResultErrorCode: TypeAlias = Literal[
    "TOOL_NOT_FOUND",
    "TOOL_ARGUMENTS_INVALID",
    "TOOL_VALIDATION_FAILED",
    "TOOL_EXECUTION_FAILED",
    "TOOL_OUTPUT_SERIALIZATION_FAILED",
    "TOOL_RETRY_REQUESTED",
]

_TRUSTED = trusted_errors()


class ToolContractError(TetherError[ToolContractErrorCode]):
    """A tool definition, batch or call broke the contract (not a tool failure)."""

    def __init__(self, code: ToolContractErrorCode, message: str) -> None:
        super().__init__(code, message)


class NonRecoverableToolError(TetherError):
    """Raise from a tool for an invariant or programmer failure that must stop the run.

    ``code == "NON_RECOVERABLE_TOOL_ERROR"`` and ``non_recoverable is True``. Only instances
    made by this constructor (subclasses included) are honoured; anything else that looks
    like one is an ordinary tool failure.
    """

    def __init__(self, message: str) -> None:
        super().__init__("NON_RECOVERABLE_TOOL_ERROR", message)
        _TRUSTED.add(self)

    @property
    def non_recoverable(self) -> Literal[True]:
        """Always ``True``."""
        return True


class ModelRetry(TetherError):
    """Raise from a tool (or its ``validate``) to ask the model to try again.

    The call's result is an ``is_error`` result with code ``TOOL_RETRY_REQUESTED`` whose
    message is ``message``, sent to the model as it is (even when the tool hides error
    details), so say what to change: ``raise ModelRetry("no user 'bob'; call list_users")``.
    Each such result counts against the tool's retry budget (``@tool(retries=...)``).
    """

    def __init__(self, message: str) -> None:
        super().__init__("TOOL_RETRY_REQUESTED", message)


_HIDDEN_DETAILS: Final = "the tool failed (its details are not shown to the model)"


def _is_non_recoverable(error: BaseException) -> bool:
    return isinstance(error, NonRecoverableToolError) and error in _TRUSTED


# --- definitions and the registry ------------------------------------------------------------

TOOL_OUTPUT_LIMIT_MIN: Final = len(TOOL_TRUNCATION_MARKER)
"""The smallest ``output_limit``: a truncated output must still hold the whole marker."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolDefinition(Generic[InputT, OutputT]):
    """A registered tool: the frozen snapshot of a definition.

    ``validate`` must accept any object and return ``Valid(value=...)`` or
    ``Invalid(error=...)`` synchronously; ``execute`` receives only a validated value.
    ``parameters`` is an optional JSON Schema describing the arguments (``@tool`` fills it).
    ``output_limit`` caps the result content of a successful call, in code points including
    the truncation marker (the workshop's 4,096 by default); error results keep the
    workshop's cap. ``retries`` is how many failed calls in a row the tool allows before the
    run fails with ``TOOL_RETRIES_EXHAUSTED`` (``None``: the run's ``tool_retries``, unbounded
    by default); a successful call resets the count. ``expose_errors=False`` replaces the text
    of an exception the tool raised with a generic message in what the model sees
    (``ModelRetry`` messages and argument errors are still sent). ``effects`` says what a
    call may do (``ToolEffect``: ``read``, ``write``, ``execute``, ``network``), for the
    owners that decide what to ask a person about (``tether.tools.effects.tools_to_ask``);
    ``None`` (the default) means undeclared, which they treat as possibly anything.
    Effects are never sent to the model.
    """

    name: str
    description: str
    validate: Callable[[object], ToolValidation[InputT]]
    execute: Callable[[InputT, ToolExecutionContext], Coroutine[Any, Any, OutputT]]
    parameters: JsonObject | None = None
    output_limit: int = TOOL_OUTPUT_CAP_CHARACTERS
    retries: int | None = None
    expose_errors: bool = True
    effects: frozenset[ToolEffect] | None = None


_NO_PARAMETERS_SCHEMA: Final = JsonObject({"type": "object", "properties": {}})


@dataclass(frozen=True, slots=True, kw_only=True)
class FunctionTool(ToolDefinition[dict[str, Any], OutputT], Generic[P, ReturnT, OutputT]):
    """What ``@tool`` returns: a ``ToolDefinition`` that also keeps the decorated function.

    ``fn`` is the original function, still callable with its own parameter and return types
    (an ``async def`` gives a coroutine to await, a ``def`` its value, on the calling thread).
    ``parameters`` is always the derived JSON Schema.
    """

    parameters: JsonObject = _NO_PARAMETERS_SCHEMA
    fn: Callable[P, ReturnT]


def define_tool(
    *,
    name: str,
    description: str,
    validate: Callable[[object], ToolValidation[InputT]],
    execute: Callable[[InputT, ToolExecutionContext], Coroutine[Any, Any, OutputT]],
    parameters: Mapping[str, object] | None = None,
    output_limit: int = TOOL_OUTPUT_CAP_CHARACTERS,
    retries: int | None = None,
    expose_errors: bool = True,
    effects: Iterable[ToolEffect] | None = None,
) -> ToolDefinition[InputT, OutputT]:
    """Check and freeze a tool definition (``ToolContractError`` ``INVALID_TOOL_DEFINITION``).

    ``output_limit`` must be an ``int`` of at least ``TOOL_OUTPUT_LIMIT_MIN`` (24: the length
    of the truncation marker, which a truncated output always ends with). ``retries`` (a
    non-negative ``int`` or ``None``), ``expose_errors`` and ``effects`` (e.g.
    ``{"read"}``, ``{"write"}``; ``None``: undeclared) are described on ``ToolDefinition``.
    """
    return _definition(
        {
            "name": name,
            "description": description,
            "validate": validate,
            "execute": execute,
            "parameters": parameters,
            "output_limit": output_limit,
            "retries": retries,
            "expose_errors": expose_errors,
            "effects": effects,
        }
    )


_FIELDS: Final = (
    "name",
    "description",
    "validate",
    "execute",
    "parameters",
    "output_limit",
    "retries",
    "expose_errors",
    "effects",
)
_OPTIONAL: Final = frozenset({"parameters", "output_limit", "retries", "expose_errors", "effects"})


def _is_definition(value: object) -> TypeGuard[ToolDefinition[Any, Any]]:
    """Whether ``value``'s real class is exactly ``ToolDefinition`` or ``FunctionTool``."""
    kind = type_of(value)
    return kind is ToolDefinition or kind is FunctionTool


def _definition(source: object) -> ToolDefinition[Any, Any]:
    """Snapshot an untrusted definition: each field read once, then checked."""
    kind = type_of(source)
    if _is_definition(source):
        return source
    if source is None or kind in (bool, int, float, str, bytes):
        raise ToolContractError("INVALID_TOOL_DEFINITION", "Tool definition must be an object")
    values: dict[str, Any] = {
        key: _read_definition_field(source, key, required=key not in _OPTIONAL) for key in _FIELDS
    }
    name = values["name"]
    if not is_non_empty(name):
        raise ToolContractError("INVALID_TOOL_DEFINITION", "Tool name must be a non-empty string")
    if not is_non_empty(values["description"]):
        raise ToolContractError(
            "INVALID_TOOL_DEFINITION", f'Tool "{name}" description must be a non-empty string'
        )
    for key in ("validate", "execute"):
        if not callable(values[key]):
            raise ToolContractError(
                "INVALID_TOOL_DEFINITION", f'Tool "{name}" {key} must be a function'
            )
    parameters = values["parameters"]
    if parameters is not None and parameters is not MISSING:
        try:
            parameters = snapshot_arguments(parameters, f'Tool "{name}" parameters')
        except TypeError as error:
            raise ToolContractError("INVALID_TOOL_DEFINITION", str(error)) from error
    else:
        parameters = None
    output_limit = values["output_limit"]
    if output_limit is MISSING:
        output_limit = TOOL_OUTPUT_CAP_CHARACTERS
    elif type_of(output_limit) is not int or output_limit < TOOL_OUTPUT_LIMIT_MIN:
        raise ToolContractError(
            "INVALID_TOOL_DEFINITION",
            f'Tool "{name}" output_limit must be an int of at least {TOOL_OUTPUT_LIMIT_MIN}',
        )
    retries = values["retries"]
    if retries is MISSING:
        retries = None
    elif retries is not None and (type_of(retries) is not int or not 0 <= retries <= 1_000_000):
        raise ToolContractError(
            "INVALID_TOOL_DEFINITION",
            f'Tool "{name}" retries must be None or an int from 0 to 1000000',
        )
    expose_errors = values["expose_errors"]
    if expose_errors is MISSING:
        expose_errors = True
    elif type_of(expose_errors) is not bool:
        raise ToolContractError(
            "INVALID_TOOL_DEFINITION", f'Tool "{name}" expose_errors must be a bool'
        )
    return ToolDefinition(
        name=name,
        description=values["description"],
        validate=values["validate"],
        execute=values["execute"],
        parameters=parameters,
        output_limit=output_limit,
        retries=retries,
        expose_errors=expose_errors,
        effects=checked_effects(values["effects"], name),
    )


def checked_effects(value: object, name: str) -> frozenset[ToolEffect] | None:
    """``value`` as a tool's effects: ``None``/missing, or an iterable (not a string) of
    ``ToolEffect`` names; ``INVALID_TOOL_DEFINITION`` otherwise."""
    if value is None or value is MISSING:
        return None
    problem = f'Tool "{name}" effects must be None or a set of {sorted(TOOL_EFFECTS)}'
    if type_of(value) in (str, bytes) or not isinstance(value, Iterable):
        raise ToolContractError("INVALID_TOOL_DEFINITION", problem)
    try:
        items = list(cast("Iterable[object]", value))
    except Exception as error:
        raise ToolContractError("INVALID_TOOL_DEFINITION", problem) from error
    if any(type_of(item) is not str or item not in TOOL_EFFECTS for item in items):
        raise ToolContractError("INVALID_TOOL_DEFINITION", problem)
    return frozenset(cast("list[ToolEffect]", items))


def _read_definition_field(source: object, key: str, *, required: bool) -> Any:
    try:
        value = read_field(source, key) if is_mapping(source) else getattr(source, key, MISSING)
    except Exception as error:
        raise ToolContractError(
            "INVALID_TOOL_DEFINITION", f"Tool definition {key} could not be read"
        ) from error
    if value is MISSING and required:
        raise ToolContractError(
            "INVALID_TOOL_DEFINITION", f"Tool definition must have an own {key} field"
        )
    return value


_NO_PARAMETERS: Final = JsonObject({"type": "object", "properties": {}})
"""The schema a definition without ``parameters`` is described with: no arguments."""


def _spec(definition: ToolDefinition[Any, Any]) -> ToolSpec:
    parameters = definition.parameters
    return ToolSpec(
        name=definition.name,
        description=definition.description,
        parameters=_NO_PARAMETERS if parameters is None else parameters,
    )


class ToolRegistry:
    """Tools by name. Registration is atomic: a failing batch leaves the registry unchanged.

    ``ToolRegistry(definitions)`` registers a batch; definitions may be ``ToolDefinition``
    values or any object (or mapping) with ``name``, ``description``, ``validate`` and
    ``execute`` (and optionally ``parameters`` and ``output_limit``), each read once.
    """

    __slots__ = ("_specs", "_tools")

    def __init__(self, definitions: Iterable[object] = ()) -> None:
        self._tools: dict[str, ToolDefinition[Any, Any]] = {}
        self._specs: tuple[ToolSpec, ...] | None = None
        self.register_many(definitions)

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    @property
    def names(self) -> tuple[str, ...]:
        """Tool names in registration order."""
        return tuple(self._tools)

    def get(self, name: str) -> ToolDefinition[Any, Any] | None:
        """The tool named ``name``, or ``None``."""
        return self._tools.get(name)

    def specs(self) -> tuple[ToolSpec, ...]:
        """What a model is told about the tools, in registration order.

        Each ``ToolSpec`` has the definition's name, description and ``parameters``; a
        definition without ``parameters`` is described as taking no arguments,
        ``{"type": "object", "properties": {}}``. The tuple is built once and reused (also by
        snapshots) until a registration changes the tools, so calling this every step is free.
        """
        specs = self._specs
        if specs is None:
            specs = self._specs = tuple(_spec(tool) for tool in self._tools.values())
        return specs

    def snapshot(self) -> ToolRegistry:
        """An independent registry with the same tools; later registrations stay apart.

        The specs are built on this registry first and the snapshot shares them (an
        immutable tuple, shared until either side registers). Why: a run snapshots the
        caller's registry, and a registry that never built its own specs gave every run its
        own ``ToolSpec`` values and tuple, two more objects per run in flight for the cycle
        collector to walk (``bench_scale``)."""
        copy = ToolRegistry.__new__(ToolRegistry)
        copy._tools = dict(self._tools)
        copy._specs = self.specs()
        return copy

    def register(self, definition: object) -> ToolDefinition[Any, Any]:
        """Register one definition; returns its frozen snapshot."""
        return self.register_many([definition])[0]

    def register_many(self, definitions: Iterable[object]) -> tuple[ToolDefinition[Any, Any], ...]:
        """Register a batch all or nothing; returns the frozen snapshots in order."""
        if type_of(definitions) not in (list, tuple):
            raise ToolContractError("INVALID_TOOL_BATCH", "Tool definitions must be an array")
        batch: tuple[object, ...] = tuple(definitions)
        snapshots = tuple(_definition(definition) for definition in batch)
        seen: set[str] = set()
        for snapshot in snapshots:
            if snapshot.name in seen or snapshot.name in self._tools:
                raise ToolContractError(
                    "DUPLICATE_TOOL_NAME", f'Tool name "{snapshot.name}" is already registered'
                )
            seen.add(snapshot.name)
        for snapshot in snapshots:
            self._tools[snapshot.name] = snapshot
        if snapshots:
            self._specs = None
        return snapshots

    def __repr__(self) -> str:
        return f"<ToolRegistry {list(self._tools)}>"


# --- execution ------------------------------------------------------------------------------


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
    if _is_non_recoverable(error):
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
