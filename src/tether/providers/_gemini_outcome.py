"""How a Gemini response ends: an error payload in the stream as a ``ProviderError``, the
last ``finishReason`` as a stop reason (or the error it means), and the ``usageMetadata``
snapshots as a ``ModelUsage``.

Used by ``gemini_wire.GeminiStreamParser``. Gemini has no end event and no "tool call"
finish reason, so the stop reason is decided here from what the stream left: the last
``finishReason``, a blocked prompt, whether the turn has calls. ``usageMetadata`` is a
cumulative snapshot on every chunk: the last value of each field wins (``read_usage``), and
nothing is summed.
"""

from __future__ import annotations

from typing import Any, Final

from tether._base.exact_types import is_dict, type_of
from tether._base.strings import is_non_empty
from tether.protocol import MAX_SAFE_INTEGER, ModelUsage, StopReason
from tether.protocol import _trusted as trusted
from tether.providers._wire import (
    MAX_SHOWN,
    error_text,
    field_error,
    protocol,
    shown,
    token_count,
)
from tether.providers.errors import ProviderError

__all__ = ["error_event", "read_usage", "stop_reason", "usage_of"]


def error_event(error: object) -> ProviderError:
    """An ``{"error": {"code", "message", "status"}}`` payload inside the stream: ``UNAVAILABLE``
    (or code 503) is ``PROVIDER_OVERLOADED`` (retried when nothing was delivered yet), anything
    else ``PROVIDER_ERROR_EVENT``; ``provider_code`` is the ``status``."""
    status: str | None = None
    message: object = None
    code: object = None
    if is_dict(error):
        fields_: dict[str, Any] = error
        raw = fields_.get("status")
        if is_non_empty(raw):
            status = raw[:MAX_SHOWN]
        message = fields_.get("message")
        code = fields_.get("code")
    elif type_of(error) is str:
        message = error
    text = error_text("reported an error in the stream", message)
    overloaded = status == "UNAVAILABLE" or (type_of(code) is int and code == 503)
    mapped = "PROVIDER_OVERLOADED" if overloaded else "PROVIDER_ERROR_EVENT"
    return ProviderError(mapped, text, provider_code=status)


_STOPS: Final[dict[str, StopReason]] = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "refusal",
    "RECITATION": "refusal",
    "BLOCKLIST": "refusal",
    "PROHIBITED_CONTENT": "refusal",
    "SPII": "refusal",
    "IMAGE_SAFETY": "refusal",
    "IMAGE_PROHIBITED_CONTENT": "refusal",
    "IMAGE_RECITATION": "refusal",
    "MODEL_ARMOR": "refusal",
}
_FAILED: Final = frozenset(
    {
        "FINISH_REASON_UNSPECIFIED",
        "OTHER",
        "LANGUAGE",
        "MALFORMED_FUNCTION_CALL",
        "UNEXPECTED_TOOL_CALL",
        "TOO_MANY_TOOL_CALLS",
        "MISSING_THOUGHT_SIGNATURE",
        "MALFORMED_RESPONSE",
        "NO_IMAGE",
        "IMAGE_OTHER",
        "ESCALATION",
        "PUP_LIMITED_DISABLED",
        "CONTINUATION",
    }
)
"""Finish reasons that mean the turn failed: ``PROVIDER_ERROR_EVENT`` naming the reason."""
_USAGE_FIELDS: Final = (
    "promptTokenCount",
    "candidatesTokenCount",
    "thoughtsTokenCount",
    "cachedContentTokenCount",
    "toolUsePromptTokenCount",
)


def stop_reason(
    reason: str | None, *, blocked: bool, has_calls: bool, finish_message: str | None
) -> StopReason:
    """The stop reason of a turn whose last ``finishReason`` was ``reason``: a turn with a
    call is ``toolCall`` unless it was refused; a blocked prompt (no finish reason) is
    ``refusal``. ``ProviderError``: no finish reason (``PROVIDER_STREAM_INTERRUPTED``), a
    failure reason (``PROVIDER_ERROR_EVENT`` with the ``finishMessage``), an unknown one
    (``PROVIDER_PROTOCOL_ERROR``)."""
    if reason is None:
        if not blocked:
            raise ProviderError(
                "PROVIDER_STREAM_INTERRUPTED", "The stream ended without a finishReason"
            )
        return "refusal"
    if reason in _FAILED:
        detail = f": {finish_message}" if finish_message else ""
        raise ProviderError(
            "PROVIDER_ERROR_EVENT",
            f"The model stopped with finishReason {reason}{detail}",
            provider_code=reason,
        )
    mapped = _STOPS.get(reason)
    if mapped is None:
        raise protocol(f"Unknown finishReason {shown(reason)}")
    return "toolCall" if has_calls and mapped != "refusal" else mapped


def read_usage(value: object, counts: dict[str, int]) -> None:
    """One chunk's ``usageMetadata`` into ``counts``: each count present overwrites the
    earlier one."""
    if not is_dict(value):
        raise field_error("usageMetadata", "an object", value)
    usage: dict[str, Any] = value
    for name in _USAGE_FIELDS:  # on every chunk: the check is inline (``token_count``'s)
        count = usage.get(name)
        if count is None:
            continue
        if type_of(count) is not int or not 0 <= count <= MAX_SAFE_INTEGER:
            token_count(count, f"usageMetadata.{name}")  # raises the protocol error
        counts[name] = count


def usage_of(counts: dict[str, int]) -> ModelUsage:
    """The turn's usage from the last counts: ``input_tokens`` is ``promptTokenCount +
    toolUsePromptTokenCount - cachedContentTokenCount``, ``cache_read_tokens`` the cached
    count, ``output_tokens`` ``candidatesTokenCount + thoughtsTokenCount`` (a missing count is
    0)."""
    prompt = counts.get("promptTokenCount", 0) + counts.get("toolUsePromptTokenCount", 0)
    cached = counts.get("cachedContentTokenCount", 0)
    if cached > prompt:
        raise protocol(
            f"usageMetadata counts {cached} cached tokens of only {prompt} prompt tokens"
        )
    output = counts.get("candidatesTokenCount", 0) + counts.get("thoughtsTokenCount", 0)
    return trusted.model_usage(prompt - cached, output, cached, 0)
