"""The JSON form of protocol values: ``to_json`` and its inverse ``from_json``.

Both are derived from the dataclass fields and the unions, so a new field or member needs no
edit here: ``from_json`` is the one decoder (``_decoder``) configured as the codec's layer.
Keys are the fields' camelCase names (``tool_call_id`` → ``toolCallId``); a v2 field is
omitted while it holds its default, so values built only from workshop data have the
workshop's JSON byte for byte. Unions are decoded by their discriminant (``type``,
``role``, ``status``). ``bytes`` (an image's data) are standard base64 with padding; decoding
accepts only that canonical form, so a value read back writes the same text.
"""

from __future__ import annotations

import base64
import dataclasses
from collections.abc import Callable
from typing import Any, Final, TypeVar, assert_never, overload

from tether._base.exact_types import is_array
from tether._base.tether_error import TetherError
from tether.jsonvalue import is_json_object, thaw_json
from tether.protocol._decoder import Layer, Problem, camel_case, decoder, json_type, limit_text
from tether.protocol._fields import (
    ProtocolValue,
    field_hints,
    is_python_only,
    omitted_while_default,
)

__all__ = ["ProtocolJsonError", "camel_case", "from_json", "problem_text", "to_json"]

T = TypeVar("T")

_MISSING: Final = dataclasses.MISSING


class ProtocolJsonError(TetherError, ValueError):
    """JSON that is not the form of the requested protocol value (``INVALID_PROTOCOL_JSON``).

    The message names the path of the offending value: ``$.content[1].arguments: ...``.
    """

    def __init__(self, path: str, problem: str) -> None:
        super().__init__("INVALID_PROTOCOL_JSON", f"{path}: {problem}")


# (attribute, key, default or _MISSING when always written, the field's encoder)
_Plan = tuple[tuple[str, str, object, "Callable[[Any], Any]"], ...]
_PLANS: dict[type, _Plan] = {}


def _base64_text(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _plan(cls: type) -> _Plan:
    plan = _PLANS.get(cls)
    if plan is None:
        hints = field_hints(cls)
        plan = tuple(
            (
                field.name,
                camel_case(field.name),
                field.default if omitted_while_default(field) else _MISSING,
                _base64_text if hints[field.name] is bytes else to_json,
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
    ``TypeError``; so do ``bytes`` outside a protocol value (a field's ``bytes`` are base64).
    """
    kind = type(value)
    if kind is str or kind is int or kind is bool or kind is float or value is None:
        return value
    if isinstance(value, ProtocolValue):
        plan = _PLANS.get(kind) or _plan(kind)
        encoded: dict[str, Any] = {}
        for attribute, key, default, encode in plan:
            item = getattr(value, attribute)
            if default is not _MISSING and item == default:
                continue
            encoded[key] = encode(item)
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
    return decoder(kind, _LAYER)(data)


def problem_text(problem: Problem) -> str:
    """The codec's words for a problem (the library's ``ProtocolJsonError`` messages)."""
    match problem.kind:
        case "not_array":
            return f"must be an array (got {json_type(problem.value)})"
        case "not_object":
            return f"must be an object (got {json_type(problem.value)})"
        case "unknown_tag":
            return f"must have one of {', '.join(map(str, problem.keys))}"
        case "missing":
            return f"missing {problem.keys[0]!r}"
        case "unexpected":
            name = problem.cls.__name__ if problem.cls is not None else "the value"
            return f"unexpected key {problem.keys[0]!r} for {name}"
        case "invalid":
            return problem.text
        case "unsupported":
            return f"cannot be decoded as {problem.text}"
        case "too_many_items" | "too_long" | "too_deep":
            return limit_text(problem)
        case _:  # pragma: no cover - exhaustive
            assert_never(problem.kind)


_LAYER: Final = Layer(
    name="codec",
    fail=lambda path, problem: ProtocolJsonError(path, problem_text(problem)),
)
"""The library's layer: keys with a default may be absent; no limits beyond the types'."""
