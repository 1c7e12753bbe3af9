"""What every wire module (``openai_wire``, ``anthropic_wire``, ``responses_request`` /
``responses_wire``, ``gemini_request`` / ``gemini_wire``) shares: protocol errors that quote
vendor values safely, the parsing of a complete tool call's argument text, typed reads of a
payload's fields (``string_field``, ``token_count``), what an error object in a stream says
(``vendor_error``, ``vendor_code``, ``error_text``), the checks of the sampling options every
request builder takes, a parser's constructor checks, its sticky failure, and how it names
tool calls (``CallIds``).

Pure data work, no I/O. Vendor values quoted in an error message are bounded
(``MAX_SHOWN`` characters) and only their JSON kind is named when they are not strings, so
an error never carries a whole vendor payload.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Set
from typing import Any, Final, NoReturn, cast

from tether._base.exact_types import exactly, is_dict, is_number, type_of
from tether._base.strings import is_non_empty
from tether.jsonvalue import JsonObject, JsonValueError, freeze_json_object
from tether.protocol import MAX_SAFE_INTEGER, ToolSpec
from tether.providers.errors import ProviderError

__all__ = [
    "EMPTY_ARGUMENTS",
    "MAX_SHOWN",
    "RESPONSES_REASONING_PREFIX",
    "BadArguments",
    "CallIds",
    "check_sampling",
    "error_text",
    "field_error",
    "function_declaration",
    "is_responses_reasoning",
    "kind",
    "parse_arguments",
    "protocol",
    "raise_again",
    "repeated",
    "reserved_ids",
    "shown",
    "string_field",
    "token_count",
    "unique_call_id",
    "vendor_code",
    "vendor_error",
]

MAX_SHOWN: Final = 100
"""Most characters of a vendor value quoted in an error message."""

EMPTY_ARGUMENTS: Final = JsonObject()
"""The arguments of a call sent without any (``""``), and of an invalid call."""

RESPONSES_REASONING_PREFIX: Final = '{"type":"reasoning"'
"""How every ``ThinkingBlock.signature`` the OpenAI Responses parser writes begins (its
reasoning item as JSON text, ``responses_request.reasoning_signature``)."""

_JSON_KINDS: Final[dict[type, str]] = {
    dict: "an object",
    list: "an array",
    str: "a string",
    int: "a number",
    float: "a number",
    bool: "a boolean",
    type(None): "null",
}


def is_responses_reasoning(signature: str | None) -> bool:
    """Whether a thinking block's signature is OpenAI Responses' encrypted reasoning, which
    only the Responses API can take back (another vendor rejects it as a signature)."""
    return signature is not None and signature.startswith(RESPONSES_REASONING_PREFIX)


def protocol(message: str) -> ProviderError:
    """A ``PROVIDER_PROTOCOL_ERROR`` with ``message``."""
    return ProviderError("PROVIDER_PROTOCOL_ERROR", message)


def kind(value: object) -> str:
    """The JSON kind of a decoded value, as an error message names it (``"an object"``)."""
    return _JSON_KINDS.get(type_of(value), type_of(value).__name__)


def shown(value: object) -> str:
    """A vendor value quoted in an error message: a string JSON-quoted and bounded to
    ``MAX_SHOWN`` characters, anything else only its kind."""
    if not exactly(value, str):
        return kind(value)
    text: str = value
    if len(text) > MAX_SHOWN:
        text = text[: MAX_SHOWN - 1] + "…"
    return json.dumps(text, ensure_ascii=False)


def field_error(where: str, expected: str, value: object) -> ProviderError:
    """``PROVIDER_PROTOCOL_ERROR``: the field ``where`` is not ``expected`` (its kind named)."""
    return protocol(f"{where} must be {expected} (got {kind(value)})")


def string_field(fields: Mapping[str, Any], name: str, where: str) -> str | None:
    """The string at ``fields[name]``, ``None`` when it is missing or ``null``; any other JSON
    type is a protocol error naming the field ``where``."""
    value = fields.get(name)
    if value is None or exactly(value, str):
        return value
    raise field_error(where, "a string", value)


def token_count(value: object, where: str) -> int:
    """A usage count as the vendor sent it: a non-negative safe integer, else a protocol error
    naming the field ``where``."""
    if not exactly(value, int) or not 0 <= value <= MAX_SAFE_INTEGER:
        raise protocol(f"{where} must be a non-negative safe integer (got {kind(value)})")
    return value


def vendor_code(value: object) -> str | None:
    """A vendor error's ``code`` (or ``type``) as a ``provider_code``: an integer's digits or
    a non-empty string (bounded to ``MAX_SHOWN``); ``None`` for anything else."""
    if exactly(value, int) and -(10**18) < value < 10**18:
        return str(value)
    if is_non_empty(value):
        return value[:MAX_SHOWN]
    return None


def vendor_error(error: object) -> tuple[object, str | None]:
    """What an OpenAI-style vendor error object says, as ``(message, provider_code)``: a
    dict's ``message`` (any value: ``error_text`` shows it only when it is a non-empty
    string) and its ``code``, else its ``type`` (``vendor_code``); a bare string is the
    message with no code; anything else says neither."""
    if is_dict(error):
        fields: dict[str, Any] = error
        code = vendor_code(fields.get("code")) or vendor_code(fields.get("type"))
        return fields.get("message"), code
    if type_of(error) is str:
        return error, None
    return None, None


def error_text(what: str, message: object) -> str:
    """The message of an error the vendor reported: ``"The provider <what>"``, followed by
    ``": <message>"`` when the vendor gave a non-empty one."""
    text = f"The provider {what}"
    if is_non_empty(message):
        return f"{text}: {message}"
    return text


def check_sampling(max_output_tokens: object, temperature: object) -> None:
    """The sampling options of a request builder checked (``ValueError`` otherwise): a
    positive int or ``None``, a number from 0 to 2 or ``None``."""
    if max_output_tokens is not None and (
        not exactly(max_output_tokens, int) or max_output_tokens < 1
    ):
        raise ValueError("max_output_tokens must be a positive int or None")
    if temperature is not None and (
        not is_number(temperature) or not math.isfinite(temperature) or not 0 <= temperature <= 2
    ):
        raise ValueError("temperature must be a number from 0 to 2, or None")


def function_declaration(spec: ToolSpec, parameters: object) -> dict[str, object]:
    """A tool as the vendors declare a function: ``{"name", "description", "parameters"}``
    (``description`` left out when empty; ``parameters`` the schema as the vendor takes
    it)."""
    declaration: dict[str, object] = {"name": spec.name}
    if spec.description:
        declaration["description"] = spec.description
    declaration["parameters"] = parameters
    return declaration


class BadArguments(Exception):
    """Why a call's argument text is not a JSON object (the call is then kept as an invalid
    call, never repaired)."""


def parse_arguments(text: str) -> JsonObject:
    """The arguments of a complete call: ``""`` (or only whitespace) is ``{}``; anything else
    must be a JSON object, frozen. Raises ``BadArguments``; nothing is ever repaired."""
    if not text or text.isspace():
        return EMPTY_ARGUMENTS
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise BadArguments(f"are not valid JSON ({error.msg} at character {error.pos})") from None
    except RecursionError:
        raise BadArguments("nest too deeply to be read") from None
    except ValueError as error:  # e.g. an integer with more digits than Python converts
        raise BadArguments(f"are not valid JSON ({error})") from None
    if type_of(value) is not dict:
        raise BadArguments(f"must be a JSON object, not {kind(value)}")
    try:
        return freeze_json_object(value, path="arguments")
    except JsonValueError as error:
        raise BadArguments(f"are not plain JSON: {error}") from None


def unique_call_id(response_id: str, position: int, reserved: Set[str], used: set[str]) -> str:
    """The ID a parser gives a call whose vendor ID it cannot keep:
    ``"<response id>-call-<position>"``, with ``-2``, ``-3``... appended until it is neither
    ``reserved`` (the transcript's IDs) nor ``used`` (this response's); added to ``used``."""
    base = f"{response_id}-call-{position}"
    call_id = base
    suffix = 1
    while call_id in reserved or call_id in used:
        suffix += 1
        call_id = f"{base}-{suffix}"
    used.add(call_id)
    return call_id


def raise_again(failure: ProviderError | None, parser: str) -> NoReturn:
    """What a stream parser raises when it is used after it failed (a copy of ``failure``:
    failures are sticky) or after ``finish`` (``RuntimeError`` naming ``parser``)."""
    if failure is not None:
        raise repeated(failure)
    raise RuntimeError(f"{parser}.finish() was already called")


def reserved_ids(request_id: object, reserved_call_ids: Iterable[object]) -> frozenset[str]:
    """A stream parser's constructor arguments checked (``TypeError`` otherwise): a non-empty
    ``request_id`` and string ``reserved_call_ids``, returned as a frozenset."""
    if not is_non_empty(request_id):
        raise TypeError("request_id must be a non-empty string")
    reserved = frozenset(reserved_call_ids)
    if reserved and not all(type_of(call_id) is str for call_id in reserved):
        raise TypeError("reserved_call_ids must be strings")
    return cast("frozenset[str]", reserved)


def repeated(failure: ProviderError) -> ProviderError:
    """A fresh copy of a parser's sticky ``failure``, raised again by every later call."""
    return ProviderError(
        failure.code,
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
        """A new unique ID for the call at ``position``, now used (``unique_call_id``)."""
        return unique_call_id(response_id, position, self._reserved, self._used)
