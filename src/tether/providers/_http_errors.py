"""The error half of ``tether.providers._http``: a non-2xx answer as a ``ProviderError`` (the
vendor's text and code, bounded, a code from the status, ``PROVIDER_CONTEXT_OVERFLOW`` from
the text, ``retry-after`` read, a redirect never followed), which statuses are retried, and
the redaction of the key from every message."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Mapping
from typing import Final

from tether._base.exact_types import is_dict, is_list
from tether._base.strings import LazyPattern
from tether.providers.errors import (
    MAX_ERROR_TEXT,
    MAX_PROVIDER_CODE,
    ProviderError,
    ProviderErrorCode,
    bounded,
)

__all__ = ["MAX_LOCATION_TEXT", "error_for_status", "redact", "redact_error", "should_retry"]
MAX_LOCATION_TEXT: Final = 500
"""Most characters of a redirect's ``Location`` quoted in ``PROVIDER_REDIRECTED``."""


def redact(text: str, secret: str | None) -> str:
    """``text`` with every occurrence of ``secret`` replaced by ``[redacted]``, and a cut-off
    start of it at the very end (a message shortened to its length limit) too."""
    if not secret:
        return text
    text = text.replace(secret, "[redacted]")
    body = text[:-1] if text.endswith("…") else text
    for size in range(min(len(secret) - 1, len(body)), 3, -1):
        if body.endswith(secret[:size]):
            return body[:-size] + "[redacted]" + text[len(body) :]
    return text


def redact_error(error: BaseException, secret: str | None) -> BaseException:
    """``error``, or a copy without ``secret`` in its message.

    Vendor text reaches errors on paths that never saw the key (an error event inside a 200
    stream, an error body); this is the last check before an error leaves the model. A
    ``ProviderError`` keeps its code and details; another exception that carries the key
    becomes ``PROVIDER_PROTOCOL_ERROR``. Base exceptions (cancellation) pass as they are.
    """
    if not secret or not isinstance(error, Exception):
        return error
    if isinstance(error, ProviderError):
        text = error.message
        code = error.provider_code
        cleaned = _redact_bounded(text, secret, MAX_ERROR_TEXT)
        cleaned_code = None if code is None else _redact_bounded(code, secret, MAX_PROVIDER_CODE)
        if cleaned == text and cleaned_code == code:
            return error
        copy = ProviderError(
            error.code,
            cleaned,
            status=error.status,
            retry_after=error.retry_after,
            provider_code=cleaned_code,
        )
        return copy.with_traceback(error.__traceback__)
    try:
        text = str(error)
    except Exception:
        return error
    if secret not in text and redact(text, secret) == text:
        return error
    return ProviderError("PROVIDER_PROTOCOL_ERROR", redact(text, secret))


def _redact_bounded(text: str, secret: str, limit: int) -> str:
    """``redact(text, secret)`` kept within ``limit`` characters; a ``[redacted]`` mark that
    replaced a cut-off key at the end is kept whole (it is longer than what it replaced)."""
    cleaned = redact(text, secret)
    excess = len(cleaned) - limit
    if excess > 0 and cleaned != text:
        mark = cleaned.rfind("[redacted]")
        cleaned = cleaned[: mark - excess] + cleaned[mark:]
    return cleaned


_RETRYABLE_STATUS: Final = frozenset({408, 409, 429, 529})
_OVERFLOW: Final = LazyPattern(
    r"context[ _-]?length|context window|maximum context|too many tokens|prompt is too long"
    r"|input is too long|context_length_exceeded|exceeds the (?:model'?s? )?context",
    re.IGNORECASE,
)


def _code_for_status(status: int, text: str) -> ProviderErrorCode:
    if status in (401, 403):
        return "PROVIDER_AUTH_FAILED"
    if status == 429:
        return "PROVIDER_RATE_LIMITED"
    if status in (503, 529):
        return "PROVIDER_OVERLOADED"
    if status >= 500:
        return "PROVIDER_SERVER_ERROR"
    if _OVERFLOW.search(text):
        return "PROVIDER_CONTEXT_OVERFLOW"
    return "PROVIDER_BAD_REQUEST"


def _retry_after(headers: Mapping[str, str], now: Callable[[], float] = time.time) -> float | None:
    """The server's requested delay in seconds: ``retry-after-ms``, else ``retry-after`` as
    seconds or an HTTP date; ``None`` when absent or unreadable."""
    value = headers.get("retry-after-ms")
    if value is not None:
        try:
            milliseconds = float(value)
        except ValueError:
            milliseconds = -1.0
        if 0 <= milliseconds < float("inf"):
            return milliseconds / 1000
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        import email.utils  # first needed here (an HTTP date): most runs never parse one

        try:
            parsed = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        return max(0.0, parsed.timestamp() - now())
    return seconds if 0 <= seconds < float("inf") else None


def _vendor_error(body: bytes) -> tuple[str, str | None, float | None]:
    """The vendor's message, code and requested delay from an error body (OpenAI
    ``{"error": {...}}``, Anthropic ``{"type": "error", "error": {...}}``, Google
    ``{"error": {"code": 429, "message", "status", "details"}}``, also wrapped in a one-item
    array as Google's non-SSE stream sends it, or plain text).

    For Google the code is the ``status`` name (``RESOURCE_EXHAUSTED``), not the number the
    HTTP status already says, and the delay is a ``google.rpc.RetryInfo`` detail's
    ``retryDelay`` (``"32s"``)."""
    text = body.decode("utf-8", "replace").strip()
    try:
        parsed: object = json.loads(text)
    except (ValueError, RecursionError):
        return text, None, None
    top: object = parsed
    if is_list(parsed):  # json.loads makes exact lists and dicts only
        wrapped: list[object] = parsed
        if len(wrapped) == 1:
            top = wrapped[0]
    error: object = _get(top, "error")
    if is_dict(error):
        fields: dict[str, object] = error
        message = fields.get("message")
        code = fields.get("code") or fields.get("type")
        status_name = fields.get("status")
        if type(code) is int and isinstance(status_name, str) and status_name:
            code = status_name
        return (
            message if isinstance(message, str) else text,
            None if code is None else str(code),
            _retry_delay(fields.get("details")),
        )
    if isinstance(error, str):
        return error, None, None
    return text, None, None


_DELAY: Final = LazyPattern(r"(\d{1,7}(?:\.\d{1,9})?)s")


def _retry_delay(details: object) -> float | None:
    """The seconds of the first ``google.rpc.RetryInfo`` detail's ``retryDelay``, if any."""
    if not is_list(details):
        return None
    entries: list[object] = details
    for detail in entries:
        delay = _get(detail, "retryDelay")
        if isinstance(delay, str):
            match = _DELAY.fullmatch(delay)
            if match is not None:
                return float(match.group(1))
    return None


def _get(value: object, key: str) -> object:
    """``value[key]`` of a decoded JSON object, else ``None``."""
    if is_dict(value):
        mapping: dict[str, object] = value
        return mapping.get(key)
    return None


def error_for_status(
    status: int, headers: Mapping[str, str], body: bytes, secret: str | None
) -> ProviderError:
    """The ``ProviderError`` for a non-2xx response (vendor text bounded, key redacted)."""
    if 300 <= status < 400:
        return _redirected(status, headers.get("location"), secret)
    message, provider_code, delay = _vendor_error(body)
    message = redact(message, secret) or f"HTTP {status}"
    code = _code_for_status(status, message)
    retry_after = _retry_after(headers)
    return ProviderError(
        code,
        f"HTTP {status}: {message}",
        status=status,
        retry_after=delay if retry_after is None else retry_after,
        provider_code=None if provider_code is None else redact(provider_code, secret),
    )


def _redirected(status: int, location: str | None, secret: str | None) -> ProviderError:
    """``PROVIDER_REDIRECTED``, naming where the server pointed (bounded, key redacted)."""
    if location is None:
        where = "without a Location"
    else:
        where = f"to {bounded(redact(location, secret), MAX_LOCATION_TEXT)}"
    return ProviderError(
        "PROVIDER_REDIRECTED",
        f"HTTP {status}: the server redirected the request {where}; tether never follows a "
        "redirect for a model request (set base_url to the final URL)",
        status=status,
    )


def should_retry(status: int, headers: Mapping[str, str]) -> bool:
    """Whether a failed status is retried: 408, 409, 429, 5xx and 529 unless
    ``x-should-retry`` says otherwise; never a redirect."""
    if 300 <= status < 400:
        return False  # a redirect is an answer about the URL, not a transient failure
    override = headers.get("x-should-retry")
    if override == "true":
        return True
    if override == "false":
        return False
    return status in _RETRYABLE_STATUS or status >= 500
