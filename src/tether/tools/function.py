"""``@tool``: a typed tool from an annotated ``async def``.

The decorator reads the function's signature and docstring once, at decoration time, and
derives both halves of the tool contract from them:

* ``parameters``, a JSON Schema of the arguments (``properties``, ``required``,
  ``additionalProperties: false``, descriptions from the docstring's ``Args:`` section), and
* ``validate``, which accepts exactly what the schema describes and returns the keyword
  arguments to call the function with (``Invalid`` with a readable error otherwise).

Supported annotations: ``str``, ``int``, ``float``, ``bool``, ``None``, ``Literal[...]``,
unions (``X | None``), ``list[X]``, ``tuple[X, ...]``, ``dict[str, X]``, ``Any``/``object``
(any JSON value, passed as plain ``dict``/``list``), ``typing.Annotated[X, "description"]``,
``TypedDict`` classes and dataclasses (built from an object). A parameter annotated
``ToolExecutionContext`` receives the call's context and is not part of the schema. Anything
else is a ``TypeError`` when the function is decorated, never at call time.

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

import dataclasses
import math
import types
import typing
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import Any, Literal, TypeVar, Union, overload

from tether.jsonvalue import JsonObject, JsonValue, JsonValueError, freeze_json, thaw_json
from tether.protocol import Invalid, ToolExecutionContext, ToolValidation, Valid
from tether.tools.contract import ToolDefinition, define_tool

__all__ = ["tool"]

R = TypeVar("R")

_Function = Callable[..., Coroutine[Any, Any, R]]


class _Reject(Exception):
    """Internal: an argument does not match its schema."""


@dataclasses.dataclass(frozen=True, slots=True)
class _Field:
    """How one annotated value is described and checked."""

    schema: dict[str, Any]
    check: Callable[[JsonValue, str], Any]


@overload
def tool(function: _Function[R], /) -> ToolDefinition[dict[str, Any], R]: ...


@overload
def tool(
    *, name: str | None = None, description: str | None = None
) -> Callable[[_Function[R]], ToolDefinition[dict[str, Any], R]]: ...


def tool(
    function: _Function[R] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
) -> (
    ToolDefinition[dict[str, Any], R] | Callable[[_Function[R]], ToolDefinition[dict[str, Any], R]]
):
    """Turn an annotated ``async def`` into a ``ToolDefinition`` (see the module docstring).

    ``name`` defaults to the function's name and ``description`` to its docstring summary.
    """

    def decorate(target: _Function[R]) -> ToolDefinition[dict[str, Any], R]:
        return _build(target, name=name, description=description)

    if function is None:
        return decorate
    return decorate(function)


def _build(
    function: _Function[R], *, name: str | None, description: str | None
) -> ToolDefinition[dict[str, Any], R]:
    import inspect

    if not inspect.iscoroutinefunction(function):
        raise TypeError("@tool needs an async def function")
    summary, documented = _parse_docstring(inspect.getdoc(function) or "")
    hints = typing.get_type_hints(function, include_extras=True)
    properties: dict[str, Any] = {}
    required: list[str] = []
    checks: dict[str, _Field] = {}
    defaults: dict[str, Any] = {}
    context_name: str | None = None
    for parameter in inspect.signature(function).parameters.values():
        label = parameter.name
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            raise TypeError(f"@tool does not support *{label} or **{label} parameters")
        if parameter.kind is parameter.POSITIONAL_ONLY:
            raise TypeError(f"@tool parameter {label!r} must not be positional-only")
        if label not in hints:
            raise TypeError(f"@tool parameter {label!r} needs a type annotation")
        if _is_context(hints[label]):
            context_name = label
            continue
        field = _field_for(hints[label], f"parameter {label!r}")
        schema = dict(field.schema)
        if label in documented and "description" not in schema:
            schema["description"] = documented[label]
        properties[label] = schema
        checks[label] = field
        if parameter.default is parameter.empty:
            required.append(label)
        else:
            defaults[label] = parameter.default
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
        values: JsonObject = frozen
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
        return Valid(value=result)

    def execute(arguments: dict[str, Any], context: ToolExecutionContext) -> Coroutine[Any, Any, R]:
        if context_name is None:
            return function(**arguments)
        return function(**arguments, **{context_name: context})

    return define_tool(
        name=name or function.__name__,
        description=description or summary,
        validate=validate,
        execute=execute,
        parameters=parameters,
    )


def _is_context(annotation: Any) -> bool:
    """``ToolExecutionContext``, optionally ``| None``."""
    if annotation is ToolExecutionContext:
        return True
    origin = typing.get_origin(annotation)
    if origin is Union or origin is types.UnionType:
        options = [option for option in typing.get_args(annotation) if option is not type(None)]
        return options == [ToolExecutionContext]
    return False


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


def _field_for(annotation: Any, where: str) -> _Field:
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
    raise TypeError(f"@tool cannot describe {where} annotated {annotation!r}")


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


def _literal(options: tuple[Any, ...], where: str) -> _Field:
    for option in options:
        if option is not None and type(option) not in (str, int, bool):
            raise TypeError(f"@tool cannot describe {where}: Literal values must be JSON scalars")
    allowed = list(options)

    def check(value: JsonValue, path: str) -> Any:
        for option in allowed:
            if type(option) is type(value) and option == value:
                return option
        raise _Reject(f"{path}: expected one of {allowed!r}")

    return _Field({"enum": allowed}, check)


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


def _array(origin: Any, arguments: tuple[Any, ...], where: str) -> _Field:
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


def _mapping(arguments: tuple[Any, ...], where: str) -> _Field:
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
    fields: dict[str, _Field], required: set[str], build: Callable[[dict[str, Any]], Any]
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

    schema = {
        "type": "object",
        "properties": {key: field.schema for key, field in fields.items()},
        "required": [key for key in fields if key in required],
        "additionalProperties": False,
    }
    return _Field(schema, check)


def _typed_dict(annotation: Any, where: str) -> _Field:
    hints = typing.get_type_hints(annotation, include_extras=True)
    fields = {key: _field_for(hint, f"{where} field {key!r}") for key, hint in hints.items()}
    required: set[str] = set(annotation.__required_keys__)
    for key, hint in hints.items():  # string annotations hide the wrappers from the class
        origin = typing.get_origin(hint)
        if origin is typing.NotRequired:
            required.discard(key)
        elif origin is typing.Required:
            required.add(key)
    return _object(fields, required, dict)


def _dataclass(annotation: type[Any], where: str) -> _Field:
    hints = typing.get_type_hints(annotation, include_extras=True)
    fields: dict[str, _Field] = {}
    required: set[str] = set()
    for item in dataclasses.fields(annotation):
        if not item.init:
            continue
        fields[item.name] = _field_for(hints[item.name], f"{where} field {item.name!r}")
        no_default = item.default is dataclasses.MISSING
        if no_default and item.default_factory is dataclasses.MISSING:
            required.add(item.name)
    return _object(fields, required, lambda values: annotation(**values))
