"""What the objects inside an OpenAI Chat chunk mean: its ``error`` (a
``PROVIDER_ERROR_EVENT``), its ``usage`` (a ``ModelUsage``), arguments sent as an object.

Shared by the stream parser (``openai_chat_stream``) and the whole-body reader
(``openai_chat_body``), so the two read a server's values the same way. Vendor values are
untrusted: a field of the wrong JSON type is a ``PROVIDER_PROTOCOL_ERROR`` naming it.
"""

from __future__ import annotations

import json
from typing import Any

from tether._base.exact_types import is_dict, type_of
from tether.protocol import ModelUsage
from tether.protocol import _trusted as trusted
from tether.providers._wire import error_text, token_count, vendor_error
from tether.providers._wire import field_error as _field_error
from tether.providers._wire import protocol as _protocol
from tether.providers.errors import ProviderError

__all__ = ["dumps_whole", "error_event", "usage_of"]


def error_event(error: object) -> ProviderError:
    """``PROVIDER_ERROR_EVENT`` for a vendor error object (``{"message", "type", "code"}``, a
    bare string, or anything else truthy). ``provider_code`` is ``code``, else ``type``."""
    message, code = vendor_error(error)
    text = error_text("reported an error in the stream", message)
    return ProviderError("PROVIDER_ERROR_EVENT", text, provider_code=code)


def _count(fields_: dict[str, Any], name: str) -> int:
    """A usage count (0 when absent or null), named ``usage.<name>`` in its error."""
    value = fields_.get(name)
    return 0 if value is None else token_count(value, f"usage.{name}")


def usage_of(value: object) -> ModelUsage:
    """``usage`` as a ``ModelUsage``: ``cached_tokens`` (``prompt_tokens_details``, else
    DeepSeek's ``prompt_cache_hit_tokens``) and ``cache_write_tokens`` are parts of
    ``prompt_tokens`` (OpenAI's convention), so the uncached input is what remains."""
    if not is_dict(value):
        raise _field_error("usage", "an object", value)
    usage: dict[str, Any] = value
    prompt = _count(usage, "prompt_tokens")
    completion = _count(usage, "completion_tokens")
    cached: int | None = None
    written = 0
    details = usage.get("prompt_tokens_details")
    if details:
        if type_of(details) is not dict:
            raise _field_error("usage.prompt_tokens_details", "an object", details)
        detail_fields: dict[str, Any] = details
        if detail_fields.get("cached_tokens") is not None:
            cached = _count(detail_fields, "cached_tokens")
        written = _count(detail_fields, "cache_write_tokens")
    if cached is None:
        cached = _count(usage, "prompt_cache_hit_tokens")
    if cached + written > prompt:
        raise _protocol(
            f"usage counts {cached + written} cached prompt tokens of only {prompt} prompt tokens"
        )
    return trusted.model_usage(prompt - cached - written, completion, cached, written)


def dumps_whole(arguments: dict[str, Any]) -> str:
    """Arguments a server sent as a JSON object instead of text, as their JSON text."""
    try:
        return json.dumps(arguments, separators=(",", ":"), ensure_ascii=False)
    except (ValueError, TypeError, RecursionError) as error:
        raise _protocol("Tool-call arguments sent as an object could not be read") from error
