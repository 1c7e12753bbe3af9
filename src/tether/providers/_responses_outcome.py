"""What an OpenAI Responses stream reports besides its output: a vendor error object as the
``ProviderError`` it means, and the terminal event's usage as a ``ModelUsage``.

Used by ``responses_wire.ResponsesStreamParser`` (the ``error`` and ``response.failed``
events, the terminal ``response.usage``) and ``parse_response_body`` (an ``error`` body).
Vendor values are untrusted: a field of the wrong JSON type is ``PROVIDER_PROTOCOL_ERROR``.
"""

from __future__ import annotations

from typing import Any, Final

from tether._base.exact_types import is_dict, type_of
from tether.protocol import ModelUsage
from tether.protocol import _trusted as trusted
from tether.providers._wire import error_text, field_error, protocol, token_count, vendor_error
from tether.providers.errors import ProviderError, ProviderErrorCode

__all__ = ["error_event", "read_usage"]

_ERROR_CODES: Final[dict[str, ProviderErrorCode]] = {
    "server_is_overloaded": "PROVIDER_OVERLOADED",
    "server_overloaded": "PROVIDER_OVERLOADED",
    "overloaded_error": "PROVIDER_OVERLOADED",
    "rate_limit_exceeded": "PROVIDER_RATE_LIMITED",
    "context_length_exceeded": "PROVIDER_CONTEXT_OVERFLOW",
}
"""Vendor error codes in a stream that have a code of their own; any other is
``PROVIDER_ERROR_EVENT``. The overloaded and rate-limited ones, as the first event, are
retried like their HTTP status (nothing reached the consumer yet)."""


def error_event(error: object, what: str) -> ProviderError:
    """The ``ProviderError`` for a vendor error object ``{"code", "type", "message"}`` (an
    ``error`` event's ``error``, a flat ``error`` event itself, or ``response.error``), its
    message ``"The provider <what>: <message>"``. ``provider_code`` is its ``code``, else its
    ``type``."""
    message, code = vendor_error(error)
    if code == "error":  # the flat shape's own "type": "error" names no code
        code = None
    mapped = _ERROR_CODES.get(code or "", "PROVIDER_ERROR_EVENT")
    return ProviderError(mapped, error_text(what, message), provider_code=code)


def _count(fields_: dict[str, Any], name: str, where: str) -> int:
    value = fields_.get(name)
    return 0 if value is None else token_count(value, f"{where}.{name}")


def _details(fields_: dict[str, Any], name: str, where: str) -> dict[str, Any]:
    value = fields_.get(name)
    if value is None:
        return {}
    if type_of(value) is not dict:
        raise field_error(f"{where}.{name}", "an object", value)
    details: dict[str, Any] = value
    return details


def read_usage(value: object, where: str) -> tuple[ModelUsage, int]:
    """The terminal ``usage`` as a ``ModelUsage`` and the reasoning tokens: cached reads and
    cache writes are parts of ``input_tokens``, reasoning tokens part of ``output_tokens``
    (kept apart for reading, never added on top)."""
    if not is_dict(value):
        raise field_error(where, "an object", value)
    usage: dict[str, Any] = value
    prompt = _count(usage, "input_tokens", where)
    output = _count(usage, "output_tokens", where)
    input_details = _details(usage, "input_tokens_details", where)
    cached = _count(input_details, "cached_tokens", f"{where}.input_tokens_details")
    written = _count(input_details, "cache_write_tokens", f"{where}.input_tokens_details")
    output_details = _details(usage, "output_tokens_details", where)
    reasoning = _count(output_details, "reasoning_tokens", f"{where}.output_tokens_details")
    if cached + written > prompt:
        raise protocol(
            f"{where} counts {cached + written} cached input tokens of only {prompt} input tokens"
        )
    if reasoning > output:
        raise protocol(
            f"{where} counts {reasoning} reasoning tokens of only {output} output tokens"
        )
    return trusted.model_usage(prompt - cached - written, output, cached, written), reasoning
