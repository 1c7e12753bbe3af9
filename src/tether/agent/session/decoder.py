"""The message decoder, compiled from the protocol's annotations (``tether.from_json``'s
mapping, stricter about fields the writer always writes), and the snapshot of a caller's
message before it is appended."""

# The package's modules share their underscore helpers with one another.
# pyright: reportPrivateUsage=false, reportUnusedFunction=false

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import Annotated, Any, Final, NoReturn, cast, get_args, get_origin

from tether._types import type_of
from tether.agent.session.format import _describe, _message_bytes
from tether.agent.session.records import _fail, _short
from tether.jsonvalue import JsonObject, JsonValueError, freeze_json, thaw_json
from tether.protocol import (
    AssistantMessage,
    Message,
    ProtocolValue,
    ToolResultMessage,
    UserMessage,
)
from tether.protocol._fields import (
    discriminant_of,
    field_hints,
    members_of,
    omitted_while_default,
)
from tether.protocol.codec import camel_case

__all__: list[str] = []


class _Rejected(Exception):
    """Internal: a message's JSON form does not decode (the text says why)."""


_Decoder = Callable[[object], object]


def _reject(problem: str) -> NoReturn:
    raise _Rejected(problem)


def _pass(value: object) -> object:
    return value


def _decoder_for(hint: Any) -> _Decoder:
    """A decoder for values annotated ``hint``, derived from the protocol's annotations.

    The same mapping as ``tether.from_json`` (discriminated unions, tuples from lists,
    camelCase keys, the constructors' checks), compiled once per type instead of interpreted
    per value, and stricter in one rule of the file format: every field ``to_json`` always
    writes (every field but a v2 one) must be present, where ``from_json`` would fill in a
    default (a generated message ``id``, ``isError=False``). The property tests check it
    against ``from_json``.
    """
    if get_origin(hint) is Annotated:
        hint = get_args(hint)[0]
    members = members_of(hint)
    if len(members) > 1:
        optional = type(None) in members
        rest = [member for member in members if member is not type(None)]
        inner = _decoder_for(rest[0]) if len(rest) == 1 else _union_decoder(rest)
        if not optional:
            return inner
        return lambda value: None if value is None else inner(value)
    if get_origin(hint) is tuple:
        item = _decoder_for(get_args(hint)[0])

        def decode_tuple(value: Any) -> object:
            if type_of(value) is not list:
                _reject("must be an array")
            parts: list[object] = value
            return tuple([item(part) for part in parts])

        return decode_tuple
    if isinstance(hint, type) and issubclass(hint, ProtocolValue):
        return _class_decoder(hint)
    if hint is JsonObject:

        def decode_object(value: object) -> object:
            if type_of(value) is not dict:
                _reject("must be a JSON object")
            return value  # the constructor freezes it

        return decode_object
    return _pass  # scalars: the constructor checks them


def _union_decoder(members: list[Any]) -> _Decoder:
    table: dict[object, _Decoder] = {}
    keys: set[str] = set()
    for member in members:
        found = discriminant_of(member)
        if found is None:  # pragma: no cover - every protocol union is discriminated
            raise TypeError(f"{member!r} has no discriminant")
        keys.add(camel_case(found[0]))
        table[found[1]] = _class_decoder(member)
    if len(keys) != 1:  # pragma: no cover - every protocol union shares one key
        raise TypeError(f"union members disagree on their discriminant: {sorted(keys)}")
    (key,) = keys

    def decode_union(value: Any) -> object:
        if type_of(value) is not dict:
            _reject("must be a JSON object")
        source: dict[str, object] = value
        tag = source.get(key)
        decoder = table.get(tag) if type(tag) is str else None
        if decoder is None:
            _reject(f"has an unknown {key} {_describe(tag)}")
        return decoder(value)

    return decode_union


def _class_decoder(cls: type) -> _Decoder:
    """The decoder of one protocol class, generated from its fields (as ``_fields``
    generates the checks): the exact key set, then the slots are filled and the class's own
    ``__post_init__`` runs, which is what its constructor does after filling them."""
    name = cls.__name__
    namespace: dict[str, Any] = {
        "cls": cls,
        "new": object.__new__,
        "dict_": dict,
        "reject": _reject,
        "bad_keys": _bad_keys,
        "NAME": name,
    }
    hints = field_hints(cls)
    known: set[str] = set()
    always: set[str] = set()
    body: list[str] = []
    for position, field in enumerate(dataclasses.fields(cls)):
        key = camel_case(field.name)
        known.add(key)
        namespace[f"set_{position}"] = cls.__dict__[field.name].__set__
        decoder = _decoder_for(hints[field.name])
        read = f"value[{key!r}]"
        if decoder is not _pass:
            namespace[f"decode_{position}"] = decoder
            read = f"decode_{position}({read})"
        if not omitted_while_default(field):
            always.add(key)
        elif field.default is not dataclasses.MISSING:
            namespace[f"default_{position}"] = field.default
            read = f"{read} if {key!r} in value else default_{position}"
        else:  # pragma: no cover - no v2 field has a default factory
            namespace[f"factory_{position}"] = field.default_factory
            read = f"{read} if {key!r} in value else factory_{position}()"
        body.append(f"    set_{position}(made, {read})")
    namespace["known"] = frozenset(known)
    namespace["always"] = frozenset(always)
    lines = [
        "def decode(value):",
        "    if type(value) is not dict_:",
        "        reject(NAME + ' must be a JSON object')",
        "    keys = value.keys()",
        "    if not (keys <= known and keys >= always):",
        "        bad_keys(NAME, keys, known, always)",
        "    made = new(cls)",
        *body,
        "    try:",
        "        made.__post_init__()",
        "    except (TypeError, ValueError) as error:",
        "        reject(str(error))",
        "    return made",
    ]
    exec("\n".join(lines), namespace)  # generated from the dataclass fields, see above
    decode: _Decoder = namespace["decode"]
    decode.__qualname__ = decode.__name__ = f"decode_{name}"
    return decode


def _bad_keys(
    name: str, keys: Iterable[str], known: frozenset[str], always: frozenset[str]
) -> NoReturn:
    present = set(keys)
    if present - known:
        _reject(f"{name} has unexpected keys {sorted(present - known)!r}")
    _reject(f"{name} is missing {sorted(always - present)!r}")


_MESSAGE_TYPES: Final = frozenset({UserMessage, AssistantMessage, ToolResultMessage})
_MESSAGE_DECODER: list[_Decoder] = []  # compiled on first use


def _message_from_json(data: object) -> Message:
    """A message from its JSON form (exact ``dict``/``list``/``str``... as ``json`` builds)."""
    if not _MESSAGE_DECODER:
        _MESSAGE_DECODER.append(_decoder_for(Message))
    try:
        message = _MESSAGE_DECODER[0](data)
    except _Rejected as error:
        raise _fail(
            "SESSION_INVALID_MESSAGE", f"Session message is invalid: {_short(str(error))}"
        ) from None
    except RecursionError:  # pragma: no cover - nesting is bounded by the protocol's types
        raise _fail("SESSION_INVALID_MESSAGE", "Session message nests too deeply") from None
    return cast(Message, message)  # what the decoder of ``Message`` returns (it is untyped)


def _snapshot_message(value: object) -> tuple[Message, bytes]:
    """A caller's message and its canonical JSON bytes, or ``SESSION_INVALID_MESSAGE``.

    Accepted: a protocol message (exact class), or its JSON form as an exact ``dict`` whose
    containers are exact ``dict``/``list`` with ``str`` keys (snapshotted through
    ``freeze_json``, which runs no caller code). Lone surrogates are refused here, since
    the line could never be written.
    """
    if type(value) in _MESSAGE_TYPES:
        message = cast(Message, value)
    elif type(value) is dict:
        try:
            plain = thaw_json(freeze_json(cast(object, value), path="message"))
        except JsonValueError as error:
            raise _fail("SESSION_INVALID_MESSAGE", f"Session message is invalid: {error}") from None
        message = _message_from_json(plain)
    else:
        raise _fail(
            "SESSION_INVALID_MESSAGE",
            "Session message must be a protocol message or its JSON object "
            f"(got {type(value).__name__})",
        )
    return message, _message_bytes(message)
