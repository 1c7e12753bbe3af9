"""What every vendor's stream parser shares: what it says about a payload it cannot read, its
constructor checks, its sticky failure, and how it names tool calls (``CallIds``).

The wire modules (``openai_wire``, ``anthropic_wire``, ``gemini_wire``) read untrusted JSON;
a field of the wrong JSON type or a broken invariant is a ``PROVIDER_PROTOCOL_ERROR`` whose
message names the field and the JSON kind received (never the value itself, which may be
large or hold vendor text), or quotes a vendor string bounded to ``MAX_SHOWN`` characters.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Final, cast

from tether._text import is_non_empty
from tether._types import type_of
from tether.providers.errors import ProviderError

__all__ = [
    "MAX_SHOWN",
    "CallIds",
    "field_error",
    "json_kind",
    "protocol_error",
    "repeated",
    "reserved_ids",
    "shown",
]

MAX_SHOWN: Final = 100
"""Most characters of a vendor value quoted in an error message."""

_JSON_KINDS: Final[dict[type, str]] = {
    dict: "an object",
    list: "an array",
    str: "a string",
    int: "a number",
    float: "a number",
    bool: "a boolean",
    type(None): "null",
}


def protocol_error(message: str) -> ProviderError:
    """A ``PROVIDER_PROTOCOL_ERROR`` saying ``message``."""
    return ProviderError("PROVIDER_PROTOCOL_ERROR", message)


def json_kind(value: object) -> str:
    """The JSON kind of a decoded value, in words (``"an object"``, ``"null"``)."""
    return _JSON_KINDS.get(type_of(value), type_of(value).__name__)


def field_error(where: str, expected: str, value: object) -> ProviderError:
    """``<where> must be <expected> (got <kind>)`` as a protocol error."""
    return protocol_error(f"{where} must be {expected} (got {json_kind(value)})")


def shown(value: object) -> str:
    """A vendor value quoted in an error message: a string as JSON, bounded; anything else
    by its kind."""
    if type_of(value) is not str:
        return json_kind(value)
    text: str = value  # pyright: ignore[reportAssignmentType]
    if len(text) > MAX_SHOWN:
        text = text[: MAX_SHOWN - 1] + "…"
    return json.dumps(text, ensure_ascii=False)


def reserved_ids(request_id: object, reserved_call_ids: Iterable[object]) -> frozenset[str]:
    """A stream parser's constructor arguments checked (``TypeError`` otherwise): a non-empty
    ``request_id`` and string ``reserved_call_ids``, returned as a frozenset."""
    if not is_non_empty(request_id):
        raise TypeError("request_id must be a non-empty string")
    reserved = frozenset(reserved_call_ids)
    if not all(type_of(call_id) is str for call_id in reserved):
        raise TypeError("reserved_call_ids must be strings")
    return cast("frozenset[str]", reserved)


def repeated(failure: ProviderError) -> ProviderError:
    """A fresh copy of a parser's sticky ``failure``, raised again by every later call."""
    return ProviderError(
        failure.code,  # pyright: ignore[reportArgumentType]
        failure.message,
        provider_code=failure.provider_code,
    )


class CallIds:
    """The tool-call IDs of one response: a vendor's ID is kept unless it is empty, already
    used in this response, or reserved (used earlier in the transcript); otherwise one is
    derived, ``"<response id>-call-<position>"`` with ``-2``, ``-3``... until unique."""

    __slots__ = ("_reserved", "_used")

    def __init__(self, reserved: frozenset[str]) -> None:
        self._reserved = reserved
        self._used: set[str] = set()

    def keep(self, vendor_id: object) -> str | None:
        """``vendor_id``, now used, when it may stand; else ``None``."""
        if not is_non_empty(vendor_id):
            return None
        if vendor_id in self._reserved or vendor_id in self._used:
            return None
        self._used.add(vendor_id)
        return vendor_id

    def derive(self, response_id: str, position: int) -> str:
        """A new unique ID for the call at ``position``, now used."""
        base = f"{response_id}-call-{position}"
        call_id = base
        suffix = 1
        while call_id in self._reserved or call_id in self._used:
            suffix += 1
            call_id = f"{base}-{suffix}"
        self._used.add(call_id)
        return call_id
