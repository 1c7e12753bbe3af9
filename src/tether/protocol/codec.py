"""The JSON form of protocol values: ``to_json`` and its inverse ``from_json``.

Both are derived from the dataclass fields and the unions, so a new field or member needs no
edit here. Keys are the fields' camelCase names (``tool_call_id`` → ``toolCallId``); a v2
field is omitted while it holds its default, so values built only from workshop data have
the workshop's JSON byte for byte. Unions are decoded by their discriminant (``type``,
``role``, ``status``).
"""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any, Final, Literal, TypeVar, cast, get_args, get_origin, overload

from tether._errors import TetherError
from tether._types import is_array
from tether.jsonvalue import JsonObject, is_json_object, thaw_json
from tether.protocol._fields import (
    ProtocolValue,
    discriminant_of,
    field_hints,
    is_python_only,
    members_of,
    omitted_while_default,
)

__all__ = ["ProtocolJsonError", "camel_case", "from_json", "to_json"]

T = TypeVar("T")

_MISSING: Final = dataclasses.MISSING


class ProtocolJsonError(TetherError, ValueError):
    """JSON that is not the form of the requested protocol value (``INVALID_PROTOCOL_JSON``).

    The message names the path of the offending value: ``$.content[1].arguments: ...``.
    """

    def __init__(self, path: str, problem: str) -> None:
        super().__init__("INVALID_PROTOCOL_JSON", f"{path}: {problem}")


def camel_case(name: str) -> str:
    """``tool_call_id`` → ``toolCallId``: the JSON key of a field."""
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


# (attribute, key, default or _MISSING when always written)
_Plan = tuple[tuple[str, str, object], ...]
_PLANS: dict[type, _Plan] = {}


def _plan(cls: type) -> _Plan:
    plan = _PLANS.get(cls)
    if plan is None:
        plan = tuple(
            (
                field.name,
                camel_case(field.name),
                field.default if omitted_while_default(field) else _MISSING,
            )
            for field in dataclasses.fields(cls)
            if not is_python_only(field)
        )
        _PLANS[cls] = plan
    return plan


def to_json(value: object) -> Any:
    """The JSON form of a protocol value: plain containers and camelCase keys.

    ``to_json(ToolCallChunk(...)) == {"type": "toolCall", "requestId": ..., "toolCall": {...}}``.
    Tuples and lists of protocol values (a transcript) become lists. Values that cannot be
    JSON (``ToolExecutionContext`` holds a live signal) and non-protocol objects raise
    ``TypeError``.
    """
    kind = type(value)
    if kind is str or kind is int or kind is bool or kind is float or value is None:
        return value
    if isinstance(value, ProtocolValue):
        plan = _PLANS.get(kind) or _plan(kind)
        encoded: dict[str, Any] = {}
        for attribute, key, default in plan:
            item = getattr(value, attribute)
            if default is not _MISSING and item == default:
                continue
            encoded[key] = to_json(item)
        return encoded
    if is_array(value):
        return [to_json(item) for item in value]
    if is_json_object(value):
        return thaw_json(value)
    raise TypeError(f"to_json() cannot encode {kind.__name__} values")


@overload
def from_json(data: object, kind: type[T], /) -> T: ...
@overload
def from_json(data: object, kind: object, /) -> Any: ...
def from_json(data: object, kind: object, /) -> Any:
    """Build the protocol value of type ``kind`` (a class or a union such as ``Message``)
    from its JSON form, e.g. ``from_json(json.loads(line), Message)``.

    The inverse of ``to_json``: ``from_json(to_json(value), type(value)) == value``. A
    transcript reads back as ``tuple[Message, ...]`` or ``list[Message]``. Unknown keys,
    missing fields and wrong types raise ``ProtocolJsonError`` with the path.
    """
    return _decode(data, kind, "$")


def _decode(data: object, hint: Any, path: str) -> Any:
    if get_origin(hint) is Annotated:
        hint = get_args(hint)[0]  # Annotated[X, ...]
    members = members_of(hint)
    if len(members) > 1:
        if data is None and type(None) in members:
            return None
        rest = [member for member in members if member is not type(None)]
        if len(rest) == 1:
            return _decode(data, rest[0], path)
        return _decode(data, _pick(data, rest, path), path)
    origin = get_origin(hint)
    if origin is tuple or origin is list:  # tuple[X, ...] (the protocol's) or list[X]
        if type(data) is not list:
            raise ProtocolJsonError(path, f"must be an array (got {_json_type(data)})")
        items = cast("list[object]", data)
        item_hint = get_args(hint)[0] if get_args(hint) else object
        decoded = [_decode(item, item_hint, f"{path}[{index}]") for index, item in enumerate(items)]
        return tuple(decoded) if origin is tuple else decoded
    if isinstance(hint, type) and issubclass(hint, ProtocolValue):
        return _decode_value(data, hint, path)
    if isinstance(origin, type) and issubclass(origin, ProtocolValue):  # CompletedRunResult[X]
        return _decode_value(data, origin, path)
    if hint is JsonObject:
        if type(data) is not dict:
            raise ProtocolJsonError(path, f"must be an object (got {_json_type(data)})")
        return cast("dict[str, object]", data)
    if get_origin(hint) is Literal or hint in (str, int, bool, float, object, Any):
        return data
    if isinstance(hint, TypeVar):
        return data
    raise ProtocolJsonError(path, f"cannot be decoded as {hint!r}")


def _decode_value(data: object, cls: type, path: str) -> Any:
    if type(data) is not dict:
        raise ProtocolJsonError(path, f"must be an object (got {_json_type(data)})")
    source = cast("dict[object, object]", data)
    hints = field_hints(cls)
    arguments: dict[str, Any] = {}
    known: set[str] = set()
    for field in dataclasses.fields(cls):
        if is_python_only(field):
            continue
        key = camel_case(field.name)
        known.add(key)
        if key not in source:
            if field.default is _MISSING and field.default_factory is _MISSING:
                raise ProtocolJsonError(path, f"missing {key!r}")
            continue
        arguments[field.name] = _decode(source[key], hints[field.name], f"{path}.{key}")
    for key in source:
        if key not in known:
            raise ProtocolJsonError(path, f"unexpected key {key!r} for {cls.__name__}")
    try:
        return cls(**arguments)
    except (TypeError, ValueError) as error:
        raise ProtocolJsonError(path, str(error)) from error


def _pick(data: object, members: list[Any], path: str) -> type:
    """The member of a union whose discriminant the object carries."""
    if type(data) is not dict:
        raise ProtocolJsonError(path, f"must be an object (got {_json_type(data)})")
    source = cast("dict[object, object]", data)
    expected: list[str] = []
    for member in members:
        found = discriminant_of(member) if isinstance(member, type) else None
        if found is None:
            continue
        field, value = found
        key = camel_case(field)
        candidate = source.get(key)
        if type(candidate) is type(value) and candidate == value:
            return member
        expected.append(f"{key}={value!r}")
    raise ProtocolJsonError(path, f"must have one of {', '.join(expected)}")


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    names: dict[type, str] = {dict: "object", list: "array", str: "string", bool: "boolean"}
    kind: type = type(value)
    return names.get(kind, "number" if kind in (int, float) else kind.__name__)
