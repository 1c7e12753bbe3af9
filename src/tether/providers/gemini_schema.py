"""Gemini's tool schemas: a tool's JSON Schema converted to the OpenAPI subset Gemini's
``functionDeclarations[].parameters`` accepts.

Pure data work, used by ``gemini_request.build_gemini_request`` for every tool. Gemini's
``Schema`` is not JSON Schema: upper-case type names, ``nullable`` instead of a ``null``
type, ``anyOf`` but no ``oneOf``, an ``enum`` of strings only, no ``$ref``. What converts is
converted (``gemini_schema``'s docstring lists it), annotations Gemini has no field for are
left out (tether still checks the arguments against the full schema), and anything else is
refused up front as ``PROVIDER_BAD_REQUEST`` naming the tool and the place, rather than
answered by the vendor with a 400.
"""

from __future__ import annotations

import json
from typing import Any, Final

from tether._base.exact_types import exactly, is_dict, is_list, type_of
from tether.providers._wire import kind as json_kind
from tether.providers._wire import shown
from tether.providers.errors import ProviderError

__all__ = ["gemini_schema"]

_TYPES: Final[dict[str, str]] = {
    "string": "STRING",
    "number": "NUMBER",
    "integer": "INTEGER",
    "boolean": "BOOLEAN",
    "array": "ARRAY",
    "object": "OBJECT",
    "null": "NULL",
}
_KEPT: Final = frozenset(
    {
        "format",
        "title",
        "description",
        "nullable",
        "minItems",
        "maxItems",
        "minProperties",
        "maxProperties",
        "minLength",
        "maxLength",
        "pattern",
        "example",
        "minimum",
        "maximum",
        "default",
        "propertyOrdering",
    }
)
"""JSON Schema keywords Gemini's ``Schema`` takes as they are."""
_DROPPED: Final = frozenset(
    {
        "$schema",
        "$id",
        "$anchor",
        "$comment",
        "examples",
        "readOnly",
        "writeOnly",
        "deprecated",
        "multipleOf",
        "uniqueItems",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "contentEncoding",
        "contentMediaType",
    }
)
"""Annotations and value constraints Gemini's ``Schema`` has no field for: left out (the
arguments are still checked against the full schema on tether's side)."""
_MAX_SCHEMA_DEPTH: Final = 64


class _Unsupported(Exception):
    """Internal: a schema construct Gemini cannot express (where, what)."""


def gemini_schema(schema: object, *, tool: str = "tool") -> dict[str, object]:
    """A tool's JSON Schema (``ToolSpec.parameters``, thawed) converted to the OpenAPI subset
    Gemini's ``functionDeclarations[].parameters`` accepts.

    Converted: ``type`` to Gemini's upper-case names (a ``[T, "null"]`` list becomes ``T``
    with ``nullable: true``, a longer list an ``anyOf``); ``anyOf``/``oneOf`` to ``anyOf``,
    a ``{"type": "null"}`` member to ``nullable`` (and a single member left is merged into the
    schema); ``const`` (a string) to a one-value ``enum``; a non-string ``enum`` or ``const``
    (Gemini's ``enum`` holds strings) to its values' type, when they share one, with the values
    named in the ``description``; ``$ref`` to ``#/$defs/...`` or ``#/definitions/...``
    inlined; a one-member ``allOf`` merged. Kept: the keywords Gemini has (``description``,
    ``enum`` of strings, ``properties``, ``required``, ``items``, ``minimum``, ``format``,
    ...). Left out: annotations and constraints it has no field for (``$schema``,
    ``additionalProperties: true|false``, ``exclusiveMinimum``, ``examples``,
    ``uniqueItems``, ...). Anything else (a recursive or external ``$ref``, ``allOf`` of
    several, ``not``, ``if``, ``patternProperties``, ``additionalProperties`` with a schema,
    tuple ``items``, an unknown keyword) is refused: ``ProviderError``
    ``PROVIDER_BAD_REQUEST`` naming the tool, the place and the keyword.
    """
    if not is_dict(schema):
        raise ProviderError(
            "PROVIDER_BAD_REQUEST", f"Tool {tool!r}: its parameters must be a JSON Schema object"
        )
    root: dict[str, Any] = schema
    defs: dict[str, Any] = {}
    for key in ("$defs", "definitions"):
        found: Any = root.get(key)
        if type_of(found) is dict:
            table: dict[str, Any] = found
            defs.update({f"#/{key}/{name}": value for name, value in table.items()})
    try:
        converted = _convert(root, "parameters", defs, frozenset(), 0)
    except _Unsupported as problem:
        where, what = problem.args
        raise ProviderError(
            "PROVIDER_BAD_REQUEST",
            f"Tool {tool!r}: {where} uses {what}, which Gemini's function declarations cannot "
            "express",
        ) from None
    if "type" not in converted and "anyOf" not in converted:
        converted["type"] = "OBJECT"
    return converted


def _convert(
    node: object, path: str, defs: dict[str, Any], refs: frozenset[str], depth: int
) -> dict[str, object]:
    if depth > _MAX_SCHEMA_DEPTH:
        raise _Unsupported(path, f"more than {_MAX_SCHEMA_DEPTH} levels of nesting")
    if not is_dict(node):
        raise _Unsupported(path, f"a schema that is {json_kind(node)}")
    source: dict[str, Any] = node
    ref = source.get("$ref")
    if ref is not None:
        if type_of(ref) is not str or ref not in defs:
            raise _Unsupported(path, f"the $ref {shown(ref)} (only local $defs are inlined)")
        if ref in refs:
            raise _Unsupported(path, f"the recursive $ref {shown(ref)}")
        target = defs[ref]
        if type_of(target) is not dict:
            raise _Unsupported(path, f"the $ref {shown(ref)} to {json_kind(target)}")
        merged = {**target, **{k: v for k, v in source.items() if k != "$ref"}}
        return _convert(merged, path, defs, refs | {ref}, depth + 1)
    every = source.get("allOf")
    if every is not None:
        if type_of(every) is not list or len(every) != 1 or type_of(every[0]) is not dict:
            raise _Unsupported(path, "allOf with other than one schema")
        merged = {**every[0], **{k: v for k, v in source.items() if k != "allOf"}}
        return _convert(merged, path, defs, refs, depth + 1)
    out: dict[str, object] = {}
    nullable = False
    others: list[Any] | None = None  # a non-string enum: Gemini's enum holds strings only
    for key, value in source.items():
        if key == "type":
            nullable = _type(value, path, out) or nullable
        elif key == "properties":
            if type_of(value) is not dict:
                raise _Unsupported(f"{path}.properties", json_kind(value))
            out["properties"] = {
                name: _convert(sub, f"{path}.properties.{name}", defs, refs, depth + 1)
                for name, sub in value.items()
            }
        elif key == "items":
            out["items"] = _convert(value, f"{path}.items", defs, refs, depth + 1)
        elif key == "anyOf" or key == "oneOf":
            nullable = _any_of(value, f"{path}.{key}", defs, refs, depth, out) or nullable
        elif key == "enum" or key == "const":
            values: Any = value if key == "enum" else [value]
            if type_of(values) is not list or not values:
                raise _Unsupported(f"{path}.{key}", "something other than a non-empty list")
            if all(type_of(v) is str for v in values):
                out["enum"] = list(values)
                out.setdefault("type", "STRING")
            else:
                others = values
        elif key == "required":
            if type_of(value) is not list or not all(type_of(v) is str for v in value):
                raise _Unsupported(f"{path}.required", "something other than a list of names")
            out["required"] = list(value)
        elif key in _KEPT:
            out[key] = value
        elif key == "additionalProperties":
            if type_of(value) is not bool:
                raise _Unsupported(path, "additionalProperties with a schema")
        elif key in _DROPPED or ((key == "$defs" or key == "definitions") and depth == 0):
            continue
        else:
            raise _Unsupported(path, f"the keyword {shown(key)}")
    if others is not None:
        _other_values(others, out)
    if "anyOf" in out:
        members: Any = out["anyOf"]
        if len(members) == 1:  # what is left of an Optional[X]: X itself, made nullable
            del out["anyOf"]
            out = {**members[0], **out}
    if nullable:
        out["nullable"] = True
    return out


_VALUE_TYPES: Final[dict[type, str]] = {int: "INTEGER", float: "NUMBER", bool: "BOOLEAN"}


def _other_values(values: list[Any], out: dict[str, object]) -> None:
    """A non-string ``enum`` (or ``const``): its type, when all its values share one, and the
    values named in the description, since Gemini's ``enum`` takes strings only."""
    kinds = {_VALUE_TYPES.get(type_of(v)) for v in values}
    if len(kinds) == 1 and None not in kinds:
        out.setdefault("type", kinds.pop())
    elif kinds <= {"INTEGER", "NUMBER"}:
        out.setdefault("type", "NUMBER")
    allowed = ", ".join(json.dumps(v, ensure_ascii=False) for v in values)
    hint = f"One of: {allowed}." if len(values) > 1 else f"Must be {allowed}."
    description = out.get("description")
    out["description"] = f"{description} {hint}" if type_of(description) is str else hint


def _type(value: object, path: str, out: dict[str, object]) -> bool:
    """``type`` into ``out``; returns whether it allowed ``null``."""
    if exactly(value, str):
        mapped = _TYPES.get(value)
        if mapped is None:
            raise _Unsupported(path, f"the type {shown(value)}")
        out["type"] = mapped
        return False
    if not is_list(value) or not value:
        raise _Unsupported(path, f"a type that is {json_kind(value)}")
    names: list[Any] = value
    nullable = "null" in names
    rest: list[str] = []
    for name in names:
        mapped = _TYPES.get(name) if type_of(name) is str else None
        if mapped is None:
            raise _Unsupported(path, f"the type {shown(name)}")
        if name != "null":
            rest.append(mapped)
    if not rest:
        out["type"] = "NULL"
    elif len(rest) == 1:
        out["type"] = rest[0]
    else:
        out["anyOf"] = [{"type": name} for name in rest]
    return nullable


def _any_of(
    value: object,
    path: str,
    defs: dict[str, Any],
    refs: frozenset[str],
    depth: int,
    out: dict[str, object],
) -> bool:
    """``anyOf``/``oneOf`` into ``out["anyOf"]``; returns whether a member was ``null``."""
    if not is_list(value) or not value:
        raise _Unsupported(path, "something other than a non-empty list of schemas")
    if "anyOf" in out:
        raise _Unsupported(path, "more than one list of alternatives")
    members: list[Any] = value
    nullable = False
    converted: list[dict[str, object]] = []
    for position, member in enumerate(members):
        if type_of(member) is dict and member.get("type") == "null" and len(member) == 1:
            nullable = True
            continue
        converted.append(_convert(member, f"{path}[{position}]", defs, refs, depth + 1))
    if converted:
        out["anyOf"] = converted
    else:
        out["type"] = "NULL"
    return nullable
