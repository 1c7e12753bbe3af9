"""Checkpoint 06: the tool contract. Tools validate before any effect and fail in bounded,
linked, machine-readable ways.

This module says what a tool is and what it may raise; ``tether.tools.tool_registry`` holds tools
by name and ``tether.tools.execution`` runs one call through the contract.

* ``define_tool`` snapshots a definition (``ToolDefinition``), each field of an untrusted
  one read once, then checked (``INVALID_TOOL_DEFINITION``).
* A tool raises ``ModelRetry`` to ask the model to try again, ``NonRecoverableToolError`` to
  stop the run (only one that tether created counts), or anything else for an ordinary
  failure, which becomes an ``is_error`` result.
* ``ToolContractError`` is a broken contract (a bad definition, batch or call), never a tool
  failure; ``ToolSignatureError`` is the one ``@tool`` raises for a signature it cannot
  describe.
* ``@tool`` (see ``tether.tools.function``) builds a ``FunctionTool`` from an annotated
  function.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Iterable, Mapping
from typing import Any, Final, Generic, Literal, ParamSpec, TypeAlias, TypeGuard, TypeVar, cast

from tether._async.ownership import trusted_errors
from tether._base.dataclass import dataclass
from tether._base.exact_types import type_of
from tether._base.strings import is_non_empty
from tether._base.tether_error import TetherError
from tether.jsonvalue import JsonObject
from tether.protocol import ToolExecutionContext, ToolValidation
from tether.protocol.transcript._blocks import snapshot_arguments
from tether.protocol.transcript._reading import MISSING, is_mapping, read_field
from tether.tools.effects import TOOL_EFFECTS, ToolEffect
from tether.tools.serialize import TOOL_OUTPUT_CAP_CHARACTERS, TOOL_TRUNCATION_MARKER

__all__ = [
    "TOOL_OUTPUT_LIMIT_MIN",
    "FunctionTool",
    "ModelRetry",
    "NonRecoverableToolError",
    "ToolContractError",
    "ToolContractErrorCode",
    "ToolDefinition",
    "ToolSignatureError",
    "define_tool",
]

InputT = TypeVar("InputT")
OutputT = TypeVar("OutputT")
ReturnT = TypeVar("ReturnT")
P = ParamSpec("P")

ToolContractErrorCode: TypeAlias = Literal[
    "INVALID_TOOL_DEFINITION", "INVALID_TOOL_BATCH", "DUPLICATE_TOOL_NAME", "INVALID_TOOL_CALL"
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


class ToolSignatureError(ToolContractError, TypeError):
    """``@tool`` met a callable or parameter it cannot describe (``INVALID_TOOL_DEFINITION``);
    ``hint`` says what to change. Also a ``TypeError``, raised when the function is decorated.
    """

    def __init__(self, message: str, hint: str) -> None:
        super().__init__("INVALID_TOOL_DEFINITION", f"{message} ({hint})")
        self.hint = hint


def is_non_recoverable(error: BaseException) -> bool:
    """Whether ``error`` is a ``NonRecoverableToolError`` that tether's constructor made (a
    look-alike is an ordinary failure)."""
    return isinstance(error, NonRecoverableToolError) and error in _TRUSTED


# --- definitions ----------------------------------------------------------------------------

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


NO_PARAMETERS: Final = JsonObject({"type": "object", "properties": {}})
"""The schema of a tool without arguments: what a definition without ``parameters`` is
described with (``tether.tools.tool_registry``), and ``FunctionTool``'s default."""


@dataclass(frozen=True, slots=True, kw_only=True)
class FunctionTool(ToolDefinition[dict[str, Any], OutputT], Generic[P, ReturnT, OutputT]):
    """What ``@tool`` returns: a ``ToolDefinition`` that also keeps the decorated function.

    ``fn`` is the original function, still callable with its own parameter and return types
    (an ``async def`` gives a coroutine to await, a ``def`` its value, on the calling thread).
    ``parameters`` is always the derived JSON Schema.
    """

    parameters: JsonObject = NO_PARAMETERS
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
    return checked_definition(
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


def checked_definition(source: object) -> ToolDefinition[Any, Any]:
    """Snapshot an untrusted definition (``INVALID_TOOL_DEFINITION``): each field read once,
    then checked; a ``ToolDefinition`` or ``FunctionTool`` is returned as it is."""
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
