"""What every vendor's stream parser says about a payload it cannot read.

The wire modules (``openai_wire``, ``anthropic_wire``, ``gemini_wire``) read untrusted JSON;
a field of the wrong JSON type or a broken invariant is a ``PROVIDER_PROTOCOL_ERROR`` whose
message names the field and the JSON kind received (never the value itself, which may be
large or hold vendor text), or quotes a vendor string bounded to ``MAX_SHOWN`` characters.
"""

from __future__ import annotations

import json
from typing import Final

from tether._types import type_of
from tether.providers.errors import ProviderError

__all__ = ["MAX_SHOWN", "field_error", "json_kind", "protocol_error", "shown"]

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
