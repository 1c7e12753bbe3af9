"""The HTTP half of every real provider: client, retries, timeouts, error mapping, redaction.

Shared by ``OpenAIChatModel`` and ``AnthropicModel``; nothing here knows a vendor's format.

* ``HttpTransport`` owns one pooled ``httpx2.AsyncClient`` per model (created on first use,
  so ``import tether`` never imports httpx2), unless the caller passes ``http_client``
  (then the caller owns and closes it).
* ``open_stream`` sends one request and returns the open response once its status is 2xx.
  It retries (``RetryPolicy``) only here, before any chunk can have reached the consumer:
  on connection errors, connect timeouts and 408/409/429/5xx/529, honouring
  ``retry-after-ms``/``retry-after`` up to a cap (beyond it the call fails at once with
  ``retry_after`` set) and ``x-should-retry``. Every sleep and every read races the signal.
* A non-2xx answer becomes a ``ProviderError`` with the vendor's error text (bounded, the key
  redacted) and a code from the status; a 4xx whose text says the context is too long is
  ``PROVIDER_CONTEXT_OVERFLOW``.
* ``BodyReader`` reads the body's bytes with the first-byte and idle-gap timeouts
  (``Timeouts``) and the signal raced at every read; the caller closes the response in a
  ``finally`` (``close_response``), so an abort or an early close releases the connection
  at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import json
import random
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from tether._race import check_signal, race
from tether.abort import AbortSignal
from tether.providers.errors import MAX_ERROR_TEXT, ProviderError, ProviderErrorCode

if TYPE_CHECKING:
    import httpx2

__all__ = [
    "BodyReader",
    "HttpTransport",
    "RetryPolicy",
    "Timeouts",
    "close_response",
    "error_for_status",
    "open_stream",
    "read_limited",
    "redact",
    "redact_error",
]

MAX_ERROR_BODY_BYTES: Final = 65_536
"""Most bytes of an error response read to find the vendor's message."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RetryPolicy:
    """How failed requests are retried, before anything reached the consumer.

    ``attempts`` counts every try (1 means no retry). The delay before retry ``n`` (from 0)
    is ``min(initial_backoff * 2**n, max_backoff)`` scaled by a random factor in
    ``[1 - jitter, 1]``, unless the server asked for a delay (``retry-after-ms`` or
    ``retry-after``): that is honoured up to ``max_retry_after`` seconds; a longer request
    fails at once with ``ProviderError.retry_after`` set, so the caller can decide.
    """

    attempts: int = 3
    initial_backoff: float = 0.5
    max_backoff: float = 8.0
    jitter: float = 0.25
    max_retry_after: float = 60.0

    def __post_init__(self) -> None:
        if type(self.attempts) is not int or self.attempts < 1:
            raise TypeError("RetryPolicy.attempts must be a positive int")
        for name in ("initial_backoff", "max_backoff", "max_retry_after"):
            value = getattr(self, name)
            if type(value) not in (int, float) or not 0 <= value < float("inf"):
                raise TypeError(f"RetryPolicy.{name} must be a non-negative number of seconds")
        if type(self.jitter) not in (int, float) or not 0 <= self.jitter <= 1:
            raise TypeError("RetryPolicy.jitter must be a number from 0 to 1")

    def backoff(self, retry: int, rand: Callable[[], float] = random.random) -> float:
        """The delay before retry number ``retry`` (0-based) when the server named none."""
        base = min(self.initial_backoff * (2**retry), self.max_backoff)
        return base * (1 - self.jitter * rand())


@dataclass(frozen=True, slots=True, kw_only=True)
class Timeouts:
    """Seconds to wait: ``connect`` for the connection, ``first_byte`` from sending the
    request to its first body byte (long: reasoning models think before they answer),
    ``idle`` for any later gap between body bytes, ``write`` for sending the request."""

    connect: float = 10.0
    first_byte: float = 600.0
    idle: float = 120.0
    write: float = 60.0

    def __post_init__(self) -> None:
        for name in ("connect", "first_byte", "idle", "write"):
            value = getattr(self, name)
            if type(value) not in (int, float) or not 0 < value < float("inf"):
                raise TypeError(f"Timeouts.{name} must be a positive number of seconds")


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
        cleaned = redact(text, secret)
        if cleaned == text:
            return error
        excess = len(cleaned) - MAX_ERROR_TEXT
        if excess > 0:  # "[redacted]" is longer than the cut-off key: keep it whole
            mark = cleaned.rfind("[redacted]")
            cleaned = cleaned[: mark - excess] + cleaned[mark:]
        copy = ProviderError(
            error.code,  # pyright: ignore[reportArgumentType]
            cleaned,
            status=error.status,
            retry_after=error.retry_after,
            provider_code=error.provider_code,
        )
        return copy.with_traceback(error.__traceback__)
    try:
        text = str(error)
    except Exception:
        return error
    if secret not in text and redact(text, secret) == text:
        return error
    return ProviderError("PROVIDER_PROTOCOL_ERROR", redact(text, secret))


class HttpTransport:
    """One pooled ``httpx2.AsyncClient`` for a model, created on first use.

    ``aclose()`` closes a client the transport created; a client passed in stays the
    caller's to close.
    """

    __slots__ = ("_client", "_owned", "_timeouts")

    def __init__(self, client: httpx2.AsyncClient | None, timeouts: Timeouts) -> None:
        self._client = client
        self._owned = client is None
        self._timeouts = timeouts

    def client(self) -> httpx2.AsyncClient:
        """The client, created now if needed."""
        client = self._client
        if client is None:
            import httpx2

            t = self._timeouts
            client = httpx2.AsyncClient(
                timeout=httpx2.Timeout(t.first_byte, connect=t.connect, write=t.write),
                limits=httpx2.Limits(max_connections=100, max_keepalive_connections=20),
            )
            self._client = client
        return client

    async def aclose(self) -> None:
        """Close the client if this transport created it."""
        client = self._client
        if client is not None and self._owned:
            self._client = None
            await client.aclose()


_RETRYABLE_STATUS: Final = frozenset({408, 409, 429, 529})
_OVERFLOW: Final = re.compile(
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
        try:
            parsed = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        return max(0.0, parsed.timestamp() - now())
    return seconds if 0 <= seconds < float("inf") else None


def _vendor_error(body: bytes) -> tuple[str, str | None]:
    """The vendor's message and code from an error body (OpenAI ``{"error": {...}}``,
    Anthropic ``{"type": "error", "error": {...}}``, or plain text)."""
    text = body.decode("utf-8", "replace").strip()
    try:
        parsed: object = json.loads(text)
    except ValueError:
        return text, None
    error: object = _get(parsed, "error")
    if isinstance(error, dict):
        fields: dict[str, object] = error  # pyright: ignore[reportUnknownVariableType]
        message = fields.get("message")
        code = fields.get("code") or fields.get("type")
        return (
            message if isinstance(message, str) else text,
            None if code is None else str(code),
        )
    if isinstance(error, str):
        return error, None
    return text, None


def _get(value: object, key: str) -> object:
    """``value[key]`` of a decoded JSON object, else ``None``."""
    if isinstance(value, dict):
        mapping: dict[str, object] = value  # pyright: ignore[reportUnknownVariableType]
        return mapping.get(key)
    return None


def error_for_status(
    status: int, headers: Mapping[str, str], body: bytes, secret: str | None
) -> ProviderError:
    """The ``ProviderError`` for a non-2xx response (vendor text bounded, key redacted)."""
    message, provider_code = _vendor_error(body)
    message = redact(message, secret) or f"HTTP {status}"
    code = _code_for_status(status, message)
    return ProviderError(
        code,
        f"HTTP {status}: {message}",
        status=status,
        retry_after=_retry_after(headers),
        provider_code=provider_code,
    )


def _should_retry(status: int, headers: Mapping[str, str]) -> bool:
    override = headers.get("x-should-retry")
    if override == "true":
        return True
    if override == "false":
        return False
    return status in _RETRYABLE_STATUS or status >= 500


async def read_limited(
    response: httpx2.Response, limit: int, signal: AbortSignal, timeouts: Timeouts
) -> bytes:
    """At most ``limit`` bytes of the body (more is a protocol error), raced and timed."""
    parts: list[bytes] = []
    size = 0
    reader = BodyReader(response, signal, timeouts)
    try:
        while part := await reader.read():
            size += len(part)
            if size > limit:
                raise ProviderError(
                    "PROVIDER_PROTOCOL_ERROR", f"The response body exceeds {limit} bytes"
                )
            parts.append(part)
    finally:
        await reader.aclose()
    return b"".join(parts)


async def open_stream(
    transport: HttpTransport,
    *,
    url: str,
    headers: Mapping[str, str],
    body: bytes,
    retry: RetryPolicy,
    timeouts: Timeouts,
    signal: AbortSignal,
    secret: str | None,
    sleep: Callable[[float], Any] = asyncio.sleep,
) -> httpx2.Response:
    """POST ``body`` to ``url`` and return the open 2xx response (see the module docstring).

    The caller must close the response (``close_response``). Raises ``ProviderError`` or the
    abort reason.
    """
    import httpx2

    client = transport.client()
    attempt = 0
    while True:
        check_signal(signal)
        request = client.build_request("POST", url, headers=headers, content=body)
        failure: ProviderError
        try:
            response = await _timed(
                race(signal, client.send(request, stream=True)), timeouts.first_byte
            )
        except httpx2.ConnectTimeout as error:
            failure = ProviderError("PROVIDER_TIMEOUT", f"Connecting timed out: {error!r}"[:300])
        except (httpx2.ConnectError, httpx2.NetworkError, httpx2.RemoteProtocolError) as error:
            failure = ProviderError(
                "PROVIDER_CONNECTION_FAILED", redact(f"Could not connect: {error}", secret)
            )
        except (httpx2.TimeoutException, TimeoutError) as error:
            raise ProviderError(
                "PROVIDER_TIMEOUT",
                f"No response within {timeouts.first_byte} s of sending the request",
            ) from error
        else:
            if 200 <= response.status_code < 300:
                return response
            try:
                data = await read_limited(response, MAX_ERROR_BODY_BYTES, signal, timeouts)
            except ProviderError:
                data = b""
            finally:
                await close_response(response)
            failure = error_for_status(response.status_code, response.headers, data, secret)
            if not _should_retry(response.status_code, response.headers):
                raise failure
        attempt += 1
        if attempt >= retry.attempts:
            raise failure
        delay = failure.retry_after
        if delay is None:
            delay = retry.backoff(attempt - 1)
        elif delay > retry.max_retry_after:
            raise failure
        await race(signal, sleep(delay))


async def _timed(work: Any, seconds: float) -> Any:
    async with asyncio.timeout(seconds):
        return await work


class BodyReader:
    """Reads a response body as it arrives (``await reader.read()``; ``b""`` at its end).

    The first read may take ``timeouts.first_byte``, later gaps ``timeouts.idle``; every
    read races ``signal``. A lost connection is ``PROVIDER_STREAM_INTERRUPTED``, a timeout
    ``PROVIDER_TIMEOUT``. The timeout applies to one read at a time, never across the
    caller's own work between reads.
    """

    __slots__ = ("_chunks", "_limit", "_signal", "_timeouts")

    def __init__(self, response: httpx2.Response, signal: AbortSignal, timeouts: Timeouts) -> None:
        self._chunks = response.aiter_raw()
        self._signal = signal
        self._timeouts = timeouts
        self._limit = timeouts.first_byte

    async def read(self) -> bytes:
        """The next non-empty piece of the body, or ``b""`` once it has ended."""
        import httpx2

        limit = self._limit
        while True:
            try:
                async with asyncio.timeout(limit):
                    part = await race(self._signal, self._chunks.__anext__())
            except StopAsyncIteration:
                return b""
            except (httpx2.TimeoutException, TimeoutError) as error:
                raise ProviderError(
                    "PROVIDER_TIMEOUT", f"No data from the server for {limit} s"
                ) from error
            except (httpx2.NetworkError, httpx2.RemoteProtocolError) as error:
                raise ProviderError(
                    "PROVIDER_STREAM_INTERRUPTED",
                    f"The connection was lost before the response ended: {error}"[:500],
                ) from error
            self._limit = self._timeouts.idle
            if part:
                return part

    async def aclose(self) -> None:
        """Stop reading (the response itself is closed with ``close_response``)."""
        with contextlib.suppress(Exception):
            await self._chunks.aclose()


async def close_response(response: httpx2.Response) -> None:
    """Close ``response`` now (its connection is released or dropped); never raises
    anything but a ``BaseException`` that is not an ``Exception``."""
    with contextlib.suppress(Exception):
        await response.aclose()
