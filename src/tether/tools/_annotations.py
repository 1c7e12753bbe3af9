"""How an annotation becomes a JSON Schema and a check of JSON values against it.

``@tool`` (``tether.tools.function``) describes each parameter with ``field_for``, and
structured output (``tether.tools.output``) describes its type with ``describe_annotation``:
one set of rules for both, listed in ``tether.tools.function``'s docstring. Every annotation is
read once, when the function is decorated (or the output described): one it cannot describe
is a ``ToolSignatureError`` then, never at call time. A check raises ``Reject`` with the path
of the bad part, or returns the Python value to call the function with (an enum's member, a
dataclass built from its object, a ``tuple`` for ``tuple[X, ...]``).
"""

from __future__ import annotations

import dataclasses
import enum
import math
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Literal, TypeGuard, Union

from tether._base.dataclass import dataclass
from tether.jsonvalue import JsonObject, JsonValue, JsonValueError, freeze_json, thaw_json
from tether.protocol import Invalid
from tether.tools.contract import ToolSignatureError

__all__ = [
    "Field",
    "Reject",
    "Where",
    "describe_annotation",
    "describe_default",
    "field_for",
    "json_object_of",
    "resolved_hints",
]


class Reject(Exception):
    """An argument does not match its schema; the message names the path of the bad part."""


@dataclass(frozen=True, slots=True)
class Field:
    """How one annotated value is described and checked."""

    schema: dict[str, Any]
    check: Callable[[JsonValue, str], Any]


@dataclass(frozen=True, slots=True)
class Where:
    """Where an annotation sits: its parameter, the path to it (``str()``), and the dataclass
    and ``TypedDict`` classes being described around it, outermost first."""

    parameter: str
    path: str
    active: tuple[type[Any], ...] = ()

    def __str__(self) -> str:
        return self.path

    def field(self, key: str) -> Where:
        """The place of field ``key`` of the object being described here."""
        return Where(self.parameter, f"{self.path} field {key!r}", self.active)

    def entering(self, cls: type[Any]) -> Where:
        """The place inside ``cls``; a ``TypeError`` if ``cls`` is already being described."""
        if cls in self.active:
            raise TypeError(
                f"@tool {self.parameter}: recursive type {cls.__name__} is not supported"
            )
        return Where(self.parameter, self.path, (*self.active, cls))


def describe_annotation(
    annotation: Any, where: str
) -> tuple[dict[str, Any], Callable[[JsonValue, str], tuple[str | None, Any]]]:
    """The JSON Schema of ``annotation`` and a check of a JSON value against it, with the
    rules ``@tool`` applies to one parameter: the check returns ``(None, value)`` or
    ``(problem, None)``. ``TypeError`` (``ToolSignatureError``) for an annotation it cannot
    describe. Used for structured output (``tether.tools.output``)."""
    field = field_for(annotation, Where(where, where))

    def check(value: JsonValue, path: str) -> tuple[str | None, Any]:
        try:
            return None, field.check(value, path)
        except Reject as problem:
            return str(problem), None

    return dict(field.schema), check


def resolved_hints(target: Any, where: str) -> dict[str, Any]:
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


def describe_default(schema: dict[str, Any], default: object) -> None:
    """Add ``"default"`` to ``schema`` when ``default`` has a JSON form."""
    value = _json_form(default)
    if value is not _NO_JSON:
        schema["default"] = value


def json_object_of(arguments: object, not_object: str) -> JsonObject | Invalid:
    """``arguments`` as a frozen ``JsonObject``, or the ``Invalid`` decision that says why not:
    the reason it is not a JSON value, or ``not_object`` when it is one but not an object. A
    ``JsonObject`` (what the loop passes) is taken as it is, without a copy."""
    try:
        frozen = arguments if type(arguments) is JsonObject else freeze_json(arguments)
    except JsonValueError as error:
        return Invalid(error=str(error))
    if type(frozen) is not JsonObject:
        return Invalid(error=not_object)
    return frozen


# --- annotations to schemas and checks -------------------------------------------------------


def field_for(annotation: Any, where: Where) -> Field:
    """How ``annotation`` at ``where`` is described and checked; ``ToolSignatureError`` (or
    another ``TypeError``) for one that cannot be."""
    origin = typing.get_origin(annotation)
    arguments = typing.get_args(annotation)
    if origin is typing.Required or origin is typing.NotRequired:
        return field_for(arguments[0], where)
    if origin is typing.Annotated:
        inner = field_for(arguments[0], where)
        notes = [note for note in arguments[1:] if isinstance(note, str)]
        if not notes:
            return inner
        return Field({**inner.schema, "description": " ".join(notes)}, inner.check)
    if annotation is Any or annotation is object:
        return Field({}, _any)
    if annotation is None or annotation is type(None):
        return Field({"type": "null"}, _null)
    if annotation is str:
        return Field({"type": "string"}, _string)
    if annotation is bool:
        return Field({"type": "boolean"}, _boolean)
    if annotation is int:
        return Field({"type": "integer"}, _integer)
    if annotation is float:
        return Field({"type": "number"}, _number)
    if origin is Literal:
        return _literal(arguments, where)
    if _is_enum(annotation):
        return _enum(annotation, where)
    if origin is Union or origin is types.UnionType:
        return _union([field_for(option, where) for option in arguments])
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
        raise Reject(f"{path}: expected null")


def _string(value: JsonValue, path: str) -> str:
    if type(value) is not str:
        raise Reject(f"{path}: expected a string")
    return value


def _boolean(value: JsonValue, path: str) -> bool:
    if type(value) is not bool:
        raise Reject(f"{path}: expected a boolean")
    return value


def _integer(value: JsonValue, path: str) -> int:
    if type(value) is int:
        return value
    if type(value) is float and value.is_integer():
        return int(value)
    raise Reject(f"{path}: expected an integer")


def _number(value: JsonValue, path: str) -> float:
    if (type(value) is int or type(value) is float) and math.isfinite(value):
        return float(value)
    raise Reject(f"{path}: expected a number")


def _choices(options: list[tuple[JsonValue, Any]]) -> Field:
    """An ``enum`` of JSON values, each standing for a Python value: the first exact match
    (same type, so ``True`` never matches ``1``) validates to its Python value."""
    allowed = [json_value for json_value, _ in options]

    def check(value: JsonValue, path: str) -> Any:
        for json_value, chosen in options:
            if type(json_value) is type(value) and json_value == value:
                return chosen
        raise Reject(f"{path}: expected one of {allowed!r}")

    return Field({"enum": allowed}, check)


def _literal(values: tuple[Any, ...], where: Where) -> Field:
    options: list[tuple[JsonValue, Any]] = []
    for value in values:
        if isinstance(value, enum.Enum):
            options.append((_member_value(value, where), value))
        elif value is None or type(value) in (str, int, bool):
            options.append((value, value))
        else:
            raise TypeError(f"@tool cannot describe {where}: Literal values must be JSON scalars")
    return _choices(options)


def _enum(annotation: type[enum.Enum], where: Where) -> Field:
    members = list(annotation)
    if not members:
        raise TypeError(f"@tool cannot describe {where}: {annotation.__name__} has no members")
    return _choices([(_member_value(member, where), member) for member in members])


def _member_value(member: enum.Enum, where: Where) -> JsonValue:
    value: object = member.value
    if type(value) is not str and type(value) is not int:
        raise TypeError(
            f"@tool cannot describe {where}: {type(member).__name__} values must be str or int"
        )
    return value


def _union(fields: list[Field]) -> Field:
    def check(value: JsonValue, path: str) -> Any:
        problems: list[str] = []
        for field in fields:
            try:
                return field.check(value, path)
            except Reject as problem:
                problems.append(str(problem))
        raise Reject(" or ".join(problems))

    return Field({"anyOf": [field.schema for field in fields]}, check)


def _array(origin: Any, arguments: tuple[Any, ...], where: Where) -> Field:
    if origin is tuple and not (len(arguments) == 2 and arguments[1] is Ellipsis):
        raise TypeError(f"@tool cannot describe {where}: use tuple[X, ...] for arrays")
    item = field_for(arguments[0], where) if arguments else Field({}, _any)
    as_tuple = origin is tuple

    def check(value: JsonValue, path: str) -> Any:
        if type(value) is not tuple:
            raise Reject(f"{path}: expected an array")
        items: tuple[JsonValue, ...] = value
        checked = [item.check(entry, f"{path}[{index}]") for index, entry in enumerate(items)]
        return tuple(checked) if as_tuple else checked

    return Field({"type": "array", "items": item.schema}, check)


def _mapping(arguments: tuple[Any, ...], where: Where) -> Field:
    if arguments and arguments[0] is not str:
        raise TypeError(f"@tool cannot describe {where}: mapping keys must be str")
    item = field_for(arguments[1], where) if len(arguments) == 2 else Field({}, _any)

    def check(value: JsonValue, path: str) -> dict[str, Any]:
        if type(value) is not JsonObject:
            raise Reject(f"{path}: expected an object")
        entries: JsonObject = value
        return {key: item.check(entry, f"{path}.{key}") for key, entry in entries.items()}

    return Field({"type": "object", "additionalProperties": item.schema}, check)


def _object(
    fields: dict[str, Field],
    required: set[str],
    build: Callable[[dict[str, Any]], Any],
    defaults: Mapping[str, object],
) -> Field:
    def check(value: JsonValue, path: str) -> Any:
        if type(value) is not JsonObject:
            raise Reject(f"{path}: expected an object")
        entries: JsonObject = value
        for key in entries:
            if key not in fields:
                raise Reject(f"{path}: unexpected field {key!r}")
        result: dict[str, Any] = {}
        for key, field in fields.items():
            if key in entries:
                result[key] = field.check(entries[key], f"{path}.{key}")
            elif key in required:
                raise Reject(f"{path}: missing field {key!r}")
        return build(result)

    properties: dict[str, Any] = {}
    for key, field in fields.items():
        properties[key] = field.schema
        if key in defaults:
            properties[key] = dict(field.schema)
            describe_default(properties[key], defaults[key])
    schema = {
        "type": "object",
        "properties": properties,
        "required": [key for key in fields if key in required],
        "additionalProperties": False,
    }
    return Field(schema, check)


def _typed_dict(annotation: Any, where: Where) -> Field:
    inside = where.entering(annotation)
    hints = resolved_hints(annotation, str(where))
    fields = {key: field_for(hint, inside.field(key)) for key, hint in hints.items()}
    required: set[str] = set(annotation.__required_keys__)
    for key, hint in hints.items():  # string annotations hide the wrappers from the class
        origin = typing.get_origin(hint)
        if origin is typing.NotRequired:
            required.discard(key)
        elif origin is typing.Required:
            required.add(key)
    return _object(fields, required, dict, {})


def _dataclass(annotation: type[Any], where: Where) -> Field:
    inside = where.entering(annotation)
    hints = resolved_hints(annotation, str(where))
    fields: dict[str, Field] = {}
    required: set[str] = set()
    defaults: dict[str, object] = {}
    for item in dataclasses.fields(annotation):
        if not item.init:
            continue
        fields[item.name] = field_for(hints[item.name], inside.field(item.name))
        if item.default is not dataclasses.MISSING:
            defaults[item.name] = item.default
        elif item.default_factory is dataclasses.MISSING:
            required.add(item.name)
    return _object(fields, required, lambda values: annotation(**values), defaults)
