"""``@tool``: a typed tool from an annotated function.

The decorator reads the function's signature and docstring once, at decoration time, and
derives both halves of the tool contract from them:

* ``parameters``, a JSON Schema of the arguments (``properties``, ``required``,
  ``additionalProperties: false``, descriptions from the docstring's ``Args:`` section, and
  each default as ``"default"`` when it has a JSON form), and
* ``validate``, which accepts exactly what the schema describes and returns the keyword
  arguments to call the function with (``Invalid`` with a readable error otherwise); an
  absent argument that has a default gets that default.

Supported annotations: ``str``, ``int``, ``float``, ``bool``, ``None``, ``Literal[...]`` and
``Enum`` classes (both an ``enum`` of their JSON values; an enum's values must be ``str`` or
``int``, and a value validates to its member), unions (``X | None``), ``list[X]``,
``tuple[X, ...]``, ``dict[str, X]``, ``Any``/``object`` (any JSON value, passed as plain
``dict``/``list``), ``typing.Annotated[X, "description"]``, ``TypedDict`` classes and
dataclasses (built from an object). A parameter annotated ``ToolExecutionContext`` or
``RunContext[Deps]`` receives the call's context (its ``deps`` are the run's ``deps=``) and is
not part of the schema. Anything else, including a dataclass or
``TypedDict`` that contains itself (directly or through another), is a ``TypeError`` when the
function is decorated, never at call time.

An ``async def`` runs on the event loop. A plain ``def`` runs in a worker thread
(``asyncio.to_thread``), so blocking work does not stall the loop. Cancellation cannot
interrupt a running thread: when the run is aborted it stops waiting for the thread at once,
the thread runs on to completion, and its result (or exception) is discarded.

The result is a ``FunctionTool``: an ordinary ``ToolDefinition`` whose ``fn`` is the
decorated function, still callable directly with its own types.

::

    @tool
    async def add(left: int, right: int) -> int:
        \"\"\"Add two integers.

        Args:
            left: The first addend.
            right: The second addend.
        \"\"\"
        return left + right
"""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import math
import types
import typing
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from typing import Any, Final, Literal, ParamSpec, Protocol, TypeGuard, TypeVar, Union, overload

from tether._dataclass import dataclass
from tether.jsonvalue import (
    JsonObject,
    JsonValue,
    JsonValueError,
    entries,
    freeze_json,
    thaw_json,
)
from tether.protocol import Invalid, RunContext, ToolExecutionContext, ToolValidation
from tether.protocol import _trusted as trusted
from tether.tools.contract import FunctionTool, ToolContractError, define_tool
from tether.tools.effects import ToolEffect
from tether.tools.serialize import TOOL_OUTPUT_CAP_CHARACTERS

__all__ = ["FunctionTool", "ToolSignatureError", "tool"]

P = ParamSpec("P")
R = TypeVar("R")


class _Reject(Exception):
    """Internal: an argument does not match its schema."""


@dataclass(frozen=True, slots=True)
class _Field:
    """How one annotated value is described and checked."""

    schema: dict[str, Any]
    check: Callable[[JsonValue, str], Any]


@dataclass(frozen=True, slots=True)
class _Where:
    """Where an annotation sits: its parameter, the path to it (``str()``), and the dataclass
    and ``TypedDict`` classes being described around it, outermost first."""

    parameter: str
    path: str
    active: tuple[type[Any], ...] = ()

    def __str__(self) -> str:
        return self.path

    def field(self, key: str) -> _Where:
        return _Where(self.parameter, f"{self.path} field {key!r}", self.active)

    def entering(self, cls: type[Any]) -> _Where:
        """The place inside ``cls``; a ``TypeError`` if ``cls`` is already being described."""
        if cls in self.active:
            raise TypeError(
                f"@tool {self.parameter}: recursive type {cls.__name__} is not supported"
            )
        return _Where(self.parameter, self.path, (*self.active, cls))


class _Decorator(Protocol):
    """What ``tool(name=..., ...)`` returns: ``@tool`` with those options applied."""

    @overload
    def __call__(
        self, function: Callable[P, Coroutine[Any, Any, R]], /
    ) -> FunctionTool[P, Coroutine[Any, Any, R], R]: ...

    @overload
    def __call__(self, function: Callable[P, R], /) -> FunctionTool[P, R, R]: ...


@overload
def tool(
    function: Callable[P, Coroutine[Any, Any, R]], /
) -> FunctionTool[P, Coroutine[Any, Any, R], R]: ...


@overload
def tool(function: Callable[P, R], /) -> FunctionTool[P, R, R]: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    output_limit: int = TOOL_OUTPUT_CAP_CHARACTERS,
    retries: int | None = None,
    expose_errors: bool = True,
    effects: Iterable[ToolEffect] | None = None,
) -> _Decorator: ...


def tool(
    function: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    output_limit: int = TOOL_OUTPUT_CAP_CHARACTERS,
    retries: int | None = None,
    expose_errors: bool = True,
    effects: Iterable[ToolEffect] | None = None,
) -> Any:
    """Turn an annotated function into a tool the model can call (a ``FunctionTool``).

    The parameters' annotations become the JSON Schema the model sees (descriptions from the
    docstring's ``Args:`` section) and the validation its arguments go through before the
    function runs; a parameter annotated ``RunContext[Deps]`` (or ``ToolExecutionContext``)
    receives the call's context, its ``deps`` included. Use it bare (``@tool``) or with
    options (``@tool(name=..., retries=2)``).

    ``name`` defaults to the function's name and ``description`` to its docstring summary
    (one of them must exist: ``TypeError`` otherwise). ``output_limit`` caps the result
    content in code points, as for ``define_tool``; ``retries`` (failed calls in a row before
    the run fails with ``TOOL_RETRIES_EXHAUSTED``; ``None``: the run's ``tool_retries``) and
    ``expose_errors`` (``False``: the model never sees an exception's text) and ``effects``
    (what a call may do, e.g. ``effects={"write"}``; undeclared by default) are described on
    ``ToolDefinition``. Raise ``ModelRetry("...")`` in the function to send the model a
    message asking it to try again. A plain ``def`` runs in a worker thread;
    an abort stops waiting for it but cannot interrupt it, and its result is then discarded.
    """

    def decorate(target: Callable[..., Any]) -> FunctionTool[Any, Any, Any]:
        return _build(
            target,
            name=name,
            description=description,
            output_limit=output_limit,
            retries=retries,
            expose_errors=expose_errors,
            effects=effects,
        )

    if function is None:
        return decorate
    return decorate(function)


def _build(
    function: Callable[..., Any],
    *,
    name: str | None,
    description: str | None,
    output_limit: int,
    retries: int | None = None,
    expose_errors: bool = True,
    effects: Iterable[ToolEffect] | None = None,
) -> FunctionTool[Any, Any, Any]:
    import inspect

    if not callable(function):
        raise TypeError("@tool needs a function")
    if not (inspect.isfunction(function) or inspect.ismethod(function)):
        raise ToolSignatureError(
            f"@tool needs a function or method, not {type(function).__name__}",
            "wrap the callable in a def (or async def) whose parameters are annotated, and "
            "call it from there; functools.partial and callable objects have no signature "
            "@tool can describe",
        )
    if inspect.isgeneratorfunction(function) or inspect.isasyncgenfunction(function):
        raise TypeError("@tool does not support generator functions")
    is_async = inspect.iscoroutinefunction(function)
    label: str = name or getattr(function, "__name__", "") or ""
    summary, documented = _parse_docstring(inspect.getdoc(function) or "")
    if not description and not summary:
        raise TypeError(
            f"@tool needs a description for {label!r}: give it a docstring or pass description="
        )
    hints = _hints(function, f"function {label!r}")
    properties: dict[str, Any] = {}
    required: list[str] = []
    checks: dict[str, _Field] = {}
    defaults: dict[str, Any] = {}
    context_name: str | None = None
    for parameter in inspect.signature(function).parameters.values():
        key = parameter.name
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            raise TypeError(f"@tool does not support *{key} or **{key} parameters")
        if parameter.kind is parameter.POSITIONAL_ONLY:
            raise TypeError(f"@tool parameter {key!r} must not be positional-only")
        if key not in hints:
            raise ToolSignatureError(
                f"@tool parameter {key!r} needs a type annotation",
                f"annotate it (e.g. {key}: str); a parameter annotated ToolExecutionContext or "
                "RunContext[Deps] receives the call's context instead of an argument",
            )
        if _is_context(hints[key]):
            context_name = key
            continue
        where = f"parameter {key!r}"
        field = _field_for(hints[key], _Where(where, where))
        schema = dict(field.schema)
        if key in documented and "description" not in schema:
            schema["description"] = documented[key]
        if parameter.default is parameter.empty:
            required.append(key)
        else:
            defaults[key] = parameter.default
            _describe_default(schema, parameter.default)
        properties[key] = schema
        checks[key] = field
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }

    names = checks.keys()

    def validate(arguments: object) -> ToolValidation[dict[str, Any]]:
        try:
            frozen = arguments if type(arguments) is JsonObject else freeze_json(arguments)
        except JsonValueError as error:
            return Invalid(error=str(error))
        if type(frozen) is not JsonObject:
            return Invalid(error="arguments must be a JSON object")
        values = entries(frozen)  # the object's own dict: read without a call per item
        if not values.keys() <= names:
            unexpected = next(key for key in values if key not in checks)
            return Invalid(error=f"unexpected argument {unexpected!r}")
        result: dict[str, Any] = {}
        try:
            for key, field in checks.items():
                if key in values:
                    result[key] = field.check(values[key], key)
                elif key in defaults:
                    result[key] = defaults[key]
                else:
                    return Invalid(error=f"missing required argument {key!r}")
        except _Reject as problem:
            return Invalid(error=str(problem))
        return trusted.valid(result)  # Valid(value=result), without re-checking its fields

    if is_async:

        def execute(
            arguments: dict[str, Any], context: ToolExecutionContext
        ) -> Coroutine[Any, Any, Any]:
            if context_name is None:
                return function(**arguments)
            return function(**arguments, **{context_name: context})

    else:

        def execute(
            arguments: dict[str, Any], context: ToolExecutionContext
        ) -> Coroutine[Any, Any, Any]:
            # The thread cannot be interrupted: an abort abandons this coroutine, which stops
            # waiting for the thread; the thread finishes and its result is discarded.
            if context_name is None:
                return asyncio.to_thread(function, **arguments)
            return asyncio.to_thread(function, **arguments, **{context_name: context})

    checked = define_tool(
        name=label,
        description=description or summary,
        validate=validate,
        execute=execute,
        parameters=parameters,
        output_limit=output_limit,
        retries=retries,
        expose_errors=expose_errors,
        effects=effects,
    )
    derived = checked.parameters
    assert derived is not None  # define_tool froze the schema built above
    return FunctionTool(
        name=checked.name,
        description=checked.description,
        validate=checked.validate,
        execute=checked.execute,
        parameters=derived,
        output_limit=checked.output_limit,
        retries=checked.retries,
        expose_errors=checked.expose_errors,
        effects=checked.effects,
        fn=function,
    )


def describe_annotation(
    annotation: Any, where: str
) -> tuple[dict[str, Any], Callable[[JsonValue, str], tuple[str | None, Any]]]:
    """The JSON Schema of ``annotation`` and a check of a JSON value against it, with the
    rules ``@tool`` applies to one parameter: the check returns ``(None, value)`` or
    ``(problem, None)``. ``TypeError`` (``ToolSignatureError``) for an annotation it cannot
    describe. Used for structured output (``tether.tools.output``)."""
    field = _field_for(annotation, _Where(where, where))

    def check(value: JsonValue, path: str) -> tuple[str | None, Any]:
        try:
            return None, field.check(value, path)
        except _Reject as problem:
            return str(problem), None

    return dict(field.schema), check


def _hints(target: Any, where: str) -> dict[str, Any]:
    """``typing.get_type_hints`` with a decoration-time ``TypeError`` for a bad annotation."""
    try:
        return typing.get_type_hints(target, include_extras=True)
    except Exception as error:
        raise TypeError(f"@tool cannot resolve the annotations of {where}: {error}") from error


_NO_JSON: Final = object()


def _json_form(value: object) -> object:
    """The JSON value a default stands for (an enum member: its value), or ``_NO_JSON``."""
    if isinstance(value, enum.Enum):
        member_value: object = value.value
        return member_value if type(member_value) in (str, int) else _NO_JSON
    try:
        return freeze_json(value)
    except JsonValueError:
        return _NO_JSON


def _describe_default(schema: dict[str, Any], default: object) -> None:
    """Add ``"default"`` to ``schema`` when ``default`` has a JSON form."""
    value = _json_form(default)
    if value is not _NO_JSON:
        schema["default"] = value


def _is_context(annotation: Any) -> bool:
    """``ToolExecutionContext`` or ``RunContext[...]``, optionally ``| None``."""
    if annotation is ToolExecutionContext or annotation is RunContext:
        return True
    origin = typing.get_origin(annotation)
    if origin is RunContext:
        return True
    if origin is Union or origin is types.UnionType:
        options = [option for option in typing.get_args(annotation) if option is not type(None)]
        return len(options) == 1 and _is_context(options[0])
    return False


class ToolSignatureError(ToolContractError, TypeError):
    """``@tool`` met a callable or parameter it cannot describe (``INVALID_TOOL_DEFINITION``);
    ``hint`` says what to change. Also a ``TypeError``, raised when the function is decorated.
    """

    def __init__(self, message: str, hint: str) -> None:
        super().__init__("INVALID_TOOL_DEFINITION", f"{message} ({hint})")
        self.hint = hint


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """The summary paragraph(s) and ``Args:`` entries of a Google-style docstring."""
    summary: list[str] = []
    arguments: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    for line in doc.splitlines():
        stripped = line.strip()
        heading = stripped.rstrip(":").lower()
        if stripped.endswith(":") and heading in ("args", "arguments", "parameters", "params"):
            section, current = "args", None
            continue
        if stripped.endswith(":") and heading in ("returns", "raises", "yields", "examples"):
            section, current = "other", None
            continue
        if section is None:
            summary.append(stripped)
        elif section == "args" and stripped:
            indent = len(line) - len(line.lstrip())
            head, colon, text = stripped.partition(":")
            if colon and indent <= 4 and head.split(" ")[0].isidentifier():
                current = head.split(" ")[0]
                arguments[current] = text.strip()
            elif current is not None:
                arguments[current] = f"{arguments[current]} {stripped}".strip()
    text = " ".join(part for part in summary if part).strip()
    return text, arguments


# --- annotations to schemas and checks -------------------------------------------------------


def _field_for(annotation: Any, where: _Where) -> _Field:
    origin = typing.get_origin(annotation)
    arguments = typing.get_args(annotation)
    if origin is typing.Required or origin is typing.NotRequired:
        return _field_for(arguments[0], where)
    if origin is typing.Annotated:
        inner = _field_for(arguments[0], where)
        notes = [note for note in arguments[1:] if isinstance(note, str)]
        if not notes:
            return inner
        return _Field({**inner.schema, "description": " ".join(notes)}, inner.check)
    if annotation is Any or annotation is object:
        return _Field({}, _any)
    if annotation is None or annotation is type(None):
        return _Field({"type": "null"}, _null)
    if annotation is str:
        return _Field({"type": "string"}, _string)
    if annotation is bool:
        return _Field({"type": "boolean"}, _boolean)
    if annotation is int:
        return _Field({"type": "integer"}, _integer)
    if annotation is float:
        return _Field({"type": "number"}, _number)
    if origin is Literal:
        return _literal(arguments, where)
    if _is_enum(annotation):
        return _enum(annotation, where)
    if origin is Union or origin is types.UnionType:
        return _union([_field_for(option, where) for option in arguments])
    if origin in (list, tuple, Sequence):
        return _array(origin, arguments, where)
    if origin in (dict, Mapping):
        return _mapping(arguments, where)
    if typing.is_typeddict(annotation):
        return _typed_dict(annotation, where)
    if dataclasses.is_dataclass(annotation) and isinstance(annotation, type):
        return _dataclass(annotation, where)
    raise ToolSignatureError(
        f"@tool cannot describe {where} annotated {annotation!r}",
        "use str, int, float, bool, None, Literal[...], an Enum, a union, list[X], "
        "tuple[X, ...], dict[str, X], Annotated[X, 'description'], a TypedDict or a dataclass",
    )


def _is_enum(annotation: Any) -> TypeGuard[type[enum.Enum]]:
    return isinstance(annotation, type) and issubclass(annotation, enum.Enum)


def _any(value: JsonValue, path: str) -> Any:
    return thaw_json(value)


def _null(value: JsonValue, path: str) -> None:
    if value is not None:
        raise _Reject(f"{path}: expected null")


def _string(value: JsonValue, path: str) -> str:
    if type(value) is not str:
        raise _Reject(f"{path}: expected a string")
    return value


def _boolean(value: JsonValue, path: str) -> bool:
    if type(value) is not bool:
        raise _Reject(f"{path}: expected a boolean")
    return value


def _integer(value: JsonValue, path: str) -> int:
    if type(value) is int:
        return value
    if type(value) is float and value.is_integer():
        return int(value)
    raise _Reject(f"{path}: expected an integer")


def _number(value: JsonValue, path: str) -> float:
    if (type(value) is int or type(value) is float) and math.isfinite(value):
        return float(value)
    raise _Reject(f"{path}: expected a number")


def _choices(options: list[tuple[JsonValue, Any]]) -> _Field:
    """An ``enum`` of JSON values, each standing for a Python value: the first exact match
    (same type, so ``True`` never matches ``1``) validates to its Python value."""
    allowed = [json_value for json_value, _ in options]

    def check(value: JsonValue, path: str) -> Any:
        for json_value, chosen in options:
            if type(json_value) is type(value) and json_value == value:
                return chosen
        raise _Reject(f"{path}: expected one of {allowed!r}")

    return _Field({"enum": allowed}, check)


def _literal(values: tuple[Any, ...], where: _Where) -> _Field:
    options: list[tuple[JsonValue, Any]] = []
    for value in values:
        if isinstance(value, enum.Enum):
            options.append((_member_value(value, where), value))
        elif value is None or type(value) in (str, int, bool):
            options.append((value, value))
        else:
            raise TypeError(f"@tool cannot describe {where}: Literal values must be JSON scalars")
    return _choices(options)


def _enum(annotation: type[enum.Enum], where: _Where) -> _Field:
    members = list(annotation)
    if not members:
        raise TypeError(f"@tool cannot describe {where}: {annotation.__name__} has no members")
    return _choices([(_member_value(member, where), member) for member in members])


def _member_value(member: enum.Enum, where: _Where) -> JsonValue:
    value: object = member.value
    if type(value) is not str and type(value) is not int:
        raise TypeError(
            f"@tool cannot describe {where}: {type(member).__name__} values must be str or int"
        )
    return value


def _union(fields: list[_Field]) -> _Field:
    def check(value: JsonValue, path: str) -> Any:
        problems: list[str] = []
        for field in fields:
            try:
                return field.check(value, path)
            except _Reject as problem:
                problems.append(str(problem))
        raise _Reject(" or ".join(problems))

    return _Field({"anyOf": [field.schema for field in fields]}, check)


def _array(origin: Any, arguments: tuple[Any, ...], where: _Where) -> _Field:
    if origin is tuple and not (len(arguments) == 2 and arguments[1] is Ellipsis):
        raise TypeError(f"@tool cannot describe {where}: use tuple[X, ...] for arrays")
    item = _field_for(arguments[0], where) if arguments else _Field({}, _any)
    as_tuple = origin is tuple

    def check(value: JsonValue, path: str) -> Any:
        if type(value) is not tuple:
            raise _Reject(f"{path}: expected an array")
        items: tuple[JsonValue, ...] = value
        checked = [item.check(entry, f"{path}[{index}]") for index, entry in enumerate(items)]
        return tuple(checked) if as_tuple else checked

    return _Field({"type": "array", "items": item.schema}, check)


def _mapping(arguments: tuple[Any, ...], where: _Where) -> _Field:
    if arguments and arguments[0] is not str:
        raise TypeError(f"@tool cannot describe {where}: mapping keys must be str")
    item = _field_for(arguments[1], where) if len(arguments) == 2 else _Field({}, _any)

    def check(value: JsonValue, path: str) -> dict[str, Any]:
        if type(value) is not JsonObject:
            raise _Reject(f"{path}: expected an object")
        entries: JsonObject = value
        return {key: item.check(entry, f"{path}.{key}") for key, entry in entries.items()}

    return _Field({"type": "object", "additionalProperties": item.schema}, check)


def _object(
    fields: dict[str, _Field],
    required: set[str],
    build: Callable[[dict[str, Any]], Any],
    defaults: Mapping[str, object],
) -> _Field:
    def check(value: JsonValue, path: str) -> Any:
        if type(value) is not JsonObject:
            raise _Reject(f"{path}: expected an object")
        entries: JsonObject = value
        for key in entries:
            if key not in fields:
                raise _Reject(f"{path}: unexpected field {key!r}")
        result: dict[str, Any] = {}
        for key, field in fields.items():
            if key in entries:
                result[key] = field.check(entries[key], f"{path}.{key}")
            elif key in required:
                raise _Reject(f"{path}: missing field {key!r}")
        return build(result)

    properties: dict[str, Any] = {}
    for key, field in fields.items():
        properties[key] = field.schema
        if key in defaults:
            properties[key] = dict(field.schema)
            _describe_default(properties[key], defaults[key])
    schema = {
        "type": "object",
        "properties": properties,
        "required": [key for key in fields if key in required],
        "additionalProperties": False,
    }
    return _Field(schema, check)


def _typed_dict(annotation: Any, where: _Where) -> _Field:
    inside = where.entering(annotation)
    hints = _hints(annotation, str(where))
    fields = {key: _field_for(hint, inside.field(key)) for key, hint in hints.items()}
    required: set[str] = set(annotation.__required_keys__)
    for key, hint in hints.items():  # string annotations hide the wrappers from the class
        origin = typing.get_origin(hint)
        if origin is typing.NotRequired:
            required.discard(key)
        elif origin is typing.Required:
            required.add(key)
    return _object(fields, required, dict, {})


def _dataclass(annotation: type[Any], where: _Where) -> _Field:
    inside = where.entering(annotation)
    hints = _hints(annotation, str(where))
    fields: dict[str, _Field] = {}
    required: set[str] = set()
    defaults: dict[str, object] = {}
    for item in dataclasses.fields(annotation):
        if not item.init:
            continue
        fields[item.name] = _field_for(hints[item.name], inside.field(item.name))
        if item.default is not dataclasses.MISSING:
            defaults[item.name] = item.default
        elif item.default_factory is dataclasses.MISSING:
            required.add(item.name)
    return _object(fields, required, lambda values: annotation(**values), defaults)
