"""The HTTP half of every real provider: client, retries, timeouts, error mapping, redaction.

Shared by every HTTP provider (``OpenAIChatModel``, ``AnthropicModel``,
``OpenAIResponsesModel``, ``GeminiModel``); nothing here knows a vendor's format.

* ``HttpTransport`` owns one pooled ``httpx2.AsyncClient`` per model (created on first use,
  so ``import tether`` never imports httpx2), unless the caller passes ``http_client``
  (then the caller owns and closes it).
* ``open_stream`` sends one request and returns the open response once its status is 2xx.
  It never follows a redirect, whatever the client's ``follow_redirects`` says (a 3xx is
  ``PROVIDER_REDIRECTED`` naming its ``Location``: the key and custom headers never reach
  another origin), and asks for ``Accept-Encoding: identity``. It retries (``Retries``, from a
  ``RetryPolicy``) only before any chunk can have reached the consumer: on connection errors,
  connect timeouts and 408/409/429/5xx/529, honouring ``retry-after-ms``/``retry-after`` up
  to a cap (beyond it the call fails at once with ``retry_after`` set) and
  ``x-should-retry``.
* A non-2xx answer becomes a ``ProviderError`` with the vendor's error text and code (bounded,
  the key redacted) and a code from the status; a 4xx whose text says the context is too
  long is ``PROVIDER_CONTEXT_OVERFLOW``.
* ``BodyReader`` reads the body's bytes as they arrive, decoding a ``Content-Encoding`` a
  server sent anyway (``_decoding``, bounded). Every wait (sending, each read, a retry's
  sleep) goes through the request's ``RequestWatch`` (``_watch``), which enforces the
  deadlines of ``Timeouts`` and the abort signal from inside the request's own task, so
  httpx2 always reads and closes the response in the task that opened it. The caller closes
  the response in a ``finally`` (``close_response``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Final, Literal

from tether._dataclass import dataclass
from tether._types import is_dict, is_list
from tether.models.base import RetryListener
from tether.protocol import ModelRetryPayload
from tether.providers._decoding import BodyDecoder, body_decoder
from tether.providers._watch import RequestWatch
from tether.providers.errors import (
    MAX_ERROR_TEXT,
    MAX_PROVIDER_CODE,
    ProviderError,
    ProviderErrorCode,
    bounded,
)

if TYPE_CHECKING:
    import httpx2

__all__ = [
    "BodyReader",
    "HttpTransport",
    "Retries",
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
"""Most bytes of an error response read (decoded) to find the vendor's message."""

MAX_LOCATION_TEXT: Final = 500
"""Most characters of a redirect's ``Location`` quoted in ``PROVIDER_REDIRECTED``."""

DRAIN_SECONDS: Final = 0.1
"""How long the rest of a body is read after its end event, so the connection can be reused
(the openai SDK drains for at most 0.1 s too); a body still open after that is dropped."""

MAX_DRAIN_BYTES: Final = 65_536
"""Most bytes read (and ignored) after a body's end event."""


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

    def backoff(self, retry: int, rand: Callable[[], float] | None = None) -> float:
        """The delay before retry number ``retry`` (0-based) when the server named none
        (``rand``: the jitter's source, ``random.random`` by default)."""
        if rand is None:
            import random  # first needed here: a run that never retries never loads it

            rand = random.random
        base = min(self.initial_backoff * (2**retry), self.max_backoff)
        return base * (1 - self.jitter * rand())


@dataclass(frozen=True, slots=True, kw_only=True)
class Timeouts:
    """Seconds to wait: ``connect`` for the connection; ``first_byte`` from sending the
    request to its first body byte, headers included (one deadline; long, because reasoning
    models think before they answer); ``idle`` for any later gap between events (a server
    that drips bytes but completes no event in that time is stalled; a keep-alive comment
    line counts as an event; a JSON body counts as one event, so it must arrive whole
    within ``idle`` of its first byte); ``write`` for
    sending the request; and ``total``, when set, for the whole call: every attempt, the
    sleeps between them and the whole body (``None``: no overall deadline)."""

    connect: float = 10.0
    first_byte: float = 600.0
    idle: float = 120.0
    write: float = 60.0
    total: float | None = None

    def __post_init__(self) -> None:
        for name in ("connect", "first_byte", "idle", "write", "total"):
            value = getattr(self, name)
            if name == "total" and value is None:
                continue
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


class HttpTransport:
    """One pooled ``httpx2.AsyncClient`` for a model, created on first use.

    ``aclose()`` closes a client the transport created; a client passed in stays the
    caller's to close.
    """

    __slots__ = ("_client", "_closer", "_owned", "_timeouts")

    def __init__(self, client: httpx2.AsyncClient | None, timeouts: Timeouts) -> None:
        self._client = client
        self._owned = client is None
        self._timeouts = timeouts
        self._closer: AsyncGenerator[None, None] | None = None

    def client(self) -> httpx2.AsyncClient:
        """The client, created now if needed (on the running loop)."""
        client = self._client
        if client is None or (self._owned and client.is_closed):
            import httpx2

            t = self._timeouts
            # Reads and the pool are bounded by the request's RequestWatch (first byte, idle
            # gap between events, total), not per socket read: no timer per chunk.
            client = httpx2.AsyncClient(
                timeout=httpx2.Timeout(None, connect=t.connect, write=t.write),
                limits=httpx2.Limits(max_connections=100, max_keepalive_connections=20),
            )
            self._client = client
            self._closer = _closer_for(client)
        return client

    async def aclose(self) -> None:
        """Close the client if this transport created it."""
        closer, self._closer = self._closer, None  # only an owned client has a closer
        if closer is not None:
            self._client = None
            await closer.aclose()  # closes the client


async def _closing(client: httpx2.AsyncClient) -> AsyncGenerator[None, None]:
    """Suspended while ``client`` may be used; closing it closes the client."""
    try:
        yield
    finally:
        await client.aclose()


def _closer_for(client: httpx2.AsyncClient) -> AsyncGenerator[None, None]:
    """An async generator, started on the running loop, that closes ``client`` when it is
    closed: by ``HttpTransport.aclose()``, or by the loop's ``shutdown_asyncgens()`` at the
    end of ``asyncio.run`` (so a model nobody closed still closes its pooled keep-alive
    connections before the loop ends, instead of leaving open sockets to the exit), or by the
    loop's finalizer hook when the transport is dropped earlier."""
    closer = _closing(client)
    with contextlib.suppress(StopIteration):
        closer.asend(None).send(None)  # to its ``yield``: now the loop knows the generator
    return closer


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


_DELAY: Final = re.compile(r"(\d{1,7}(?:\.\d{1,9})?)s")


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


def _should_retry(status: int, headers: Mapping[str, str]) -> bool:
    if 300 <= status < 400:
        return False  # a redirect is an answer about the URL, not a transient failure
    override = headers.get("x-should-retry")
    if override == "true":
        return True
    if override == "false":
        return False
    return status in _RETRYABLE_STATUS or status >= 500


async def read_limited(
    response: httpx2.Response, limit: int, watch: RequestWatch, idle: float
) -> bytes:
    """At most ``limit`` (decoded) bytes of the body, more is a protocol error; the body is one
    event, so it must arrive whole within ``idle`` of its first byte."""
    parts: list[bytes] = []
    size = 0
    reader = BodyReader(response, watch, idle, limit)
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


class Retries:
    """The retries left for one ``stream()`` call, shared by every way it can fail before
    anything streamed: a status, a lost connection, an overloaded first event.

    ``pause(failure, watch)`` waits before the next attempt, or raises ``failure`` when the
    policy's attempts are used up or the server asked for a longer delay than
    ``RetryPolicy.max_retry_after`` (the error then carries it as ``retry_after``).
    """

    __slots__ = ("_listener", "_made", "_policy", "_request_id", "_sleep")

    def __init__(
        self,
        policy: RetryPolicy,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
        *,
        listener: RetryListener | None = None,
        request_id: str = "",
    ) -> None:
        self._policy = policy
        self._made = 0
        self._sleep = sleep
        self._listener = listener if request_id else None
        self._request_id = request_id

    async def pause(self, failure: ProviderError, watch: RequestWatch) -> None:
        """Sleep before the next attempt (racing the signal and the total deadline), after
        telling the listener (``model.retry``: attempt, delay, code and reason)."""
        self._made += 1
        policy = self._policy
        if self._made >= policy.attempts:
            raise failure
        delay = failure.retry_after
        if delay is None:
            delay = policy.backoff(self._made - 1)
        elif delay > policy.max_retry_after:
            raise failure
        listener = self._listener
        if listener is not None:
            listener(
                ModelRetryPayload(
                    request_id=self._request_id,
                    attempt=self._made,
                    delay_ms=max(0, round(delay * 1000)),
                    code=failure.code,
                    reason=retry_reason(failure),
                )
            )
        watch.expect_nothing()
        await watch.wait(self._sleep(delay))


def retry_reason(failure: ProviderError) -> str:
    """A short text for a person saying why a request is retried: ``HTTP 503`` for a status,
    else the code in words (``connection failed``, ``overloaded``: an error event). Never
    the vendor's text: nothing a server sent (or a key it echoed) reaches an event."""
    if failure.status is not None:
        return f"HTTP {failure.status}"
    return failure.code.removeprefix("PROVIDER_").replace("_", " ").lower()


async def open_stream(
    transport: HttpTransport,
    *,
    url: str,
    headers: Mapping[str, str],
    body: bytes | None,
    retries: Retries,
    timeouts: Timeouts,
    watch: RequestWatch,
    secret: str | None,
    method: Literal["GET", "POST"] = "POST",
) -> httpx2.Response:
    """Send ``method`` to ``url`` (with ``body``, for a POST) and return the open 2xx response
    (see the module docstring).

    The caller must close the response (``close_response``). Raises ``ProviderError`` or the
    abort reason.
    """
    import httpx2

    client = transport.client()
    if not any(name.lower() == "accept-encoding" for name in headers):
        headers = {**headers, "accept-encoding": "identity"}
    while True:
        request = client.build_request(method, url, headers=headers, content=body)
        failure: ProviderError
        watch.expect(timeouts.first_byte, "first_byte")
        try:
            response = await watch.wait(client.send(request, stream=True, follow_redirects=False))
        except httpx2.ConnectTimeout as error:
            failure = ProviderError("PROVIDER_TIMEOUT", f"Connecting timed out: {error!r}"[:300])
        except (httpx2.ConnectError, httpx2.NetworkError, httpx2.RemoteProtocolError) as error:
            failure = ProviderError(
                "PROVIDER_CONNECTION_FAILED", redact(f"Could not connect: {error}", secret)
            )
        except httpx2.TimeoutException as error:  # the caller's client's own read/pool timeout
            raise ProviderError(
                "PROVIDER_TIMEOUT", f"The HTTP client timed out: {error!r}"[:300]
            ) from error
        else:
            status = response.status_code
            if 200 <= status < 300:
                return response
            try:
                if not 300 <= status < 400:  # a redirect's body is never read
                    data = await read_limited(response, MAX_ERROR_BODY_BYTES, watch, timeouts.idle)
                else:
                    data = b""
            except ProviderError:
                data = b""
            finally:
                await close_response(response)
            failure = error_for_status(status, response.headers, data, secret)
            if not _should_retry(status, response.headers):
                raise failure
        await retries.pause(failure, watch)


_stream_errors: tuple[type[BaseException], ...] = ()
_timeout_errors: tuple[type[BaseException], ...] = ()


def _load_errors() -> None:
    """The httpx2 exception classes ``BodyReader`` maps, looked up once (httpx2 loads late)."""
    global _stream_errors, _timeout_errors
    import httpx2

    _stream_errors = (httpx2.NetworkError, httpx2.RemoteProtocolError)
    _timeout_errors = (httpx2.TimeoutException,)


class BodyReader:
    """Reads a response body as it arrives (``await reader.read()``; ``b""`` at its end).

    Every read goes through ``watch``: the first must come within the first-byte deadline
    (set by ``open_stream``), after which the idle deadline is ``idle`` from the first byte
    (the caller moves it on at each event). A ``Content-Encoding`` is decoded (at most
    ``limit`` decoded bytes, pieces of at most 64 KiB). A lost connection is
    ``PROVIDER_STREAM_INTERRUPTED``, a timeout ``PROVIDER_TIMEOUT``, an abort its reason.
    ``drain()`` reads what is left after the end event, briefly, so the connection is reused.
    """

    __slots__ = ("_chunks", "_decoder", "_idle", "_next", "_started", "_watch")

    def __init__(
        self, response: httpx2.Response, watch: RequestWatch, idle: float, limit: int
    ) -> None:
        if not _stream_errors:
            _load_errors()
        self._chunks = response.aiter_raw()
        self._next = self._chunks.__anext__
        self._decoder: BodyDecoder | None = body_decoder(
            response.headers.get("content-encoding"), limit
        )
        self._watch = watch
        self._idle = idle
        self._started = False

    async def read(self) -> bytes:
        """The next non-empty piece of the (decoded) body, or ``b""`` once it has ended."""
        decoder = self._decoder
        if decoder is not None and decoder.pending:
            part = decoder.decode(b"")
            if part:
                return part
        while True:
            part = await self._raw()
            if not part:
                if decoder is not None:
                    while decoder.pending:
                        rest = decoder.decode(b"")
                        if rest:
                            return rest
                    decoder.finish()
                return b""
            if not self._started:
                self._started = True
                self._watch.expect(self._idle, "idle")
            if decoder is not None:
                part = decoder.decode(part)
            if part:
                return part

    async def _raw(self) -> bytes:
        """The next piece of the raw body (``b""`` at its end), through the watch."""
        watch = self._watch
        watch.enter()
        try:
            part = await self._next()
        except StopAsyncIteration:
            watch.leave()
            return b""
        except asyncio.CancelledError:
            error = watch.interrupted()
            if error is None:
                raise
            raise error from None
        except _timeout_errors as error:
            watch.leave()
            raise ProviderError(
                "PROVIDER_TIMEOUT", f"The HTTP client timed out: {error!r}"[:300]
            ) from error
        except _stream_errors as error:
            watch.leave()
            raise ProviderError(
                "PROVIDER_STREAM_INTERRUPTED",
                f"The connection was lost before the response ended: {error}"[:500],
            ) from error
        watch.leave()
        return part

    async def drain(self) -> None:
        """After the end event: read (and ignore) the rest of the raw body for at most
        ``DRAIN_SECONDS`` and ``MAX_DRAIN_BYTES``, so its end (a chunked terminator, a gzip
        trailer) arrives and the connection goes back to the pool; otherwise the response is
        simply closed. Never raises an ``Exception``."""
        self._watch.expect(DRAIN_SECONDS, "drain")
        size = 0
        with contextlib.suppress(Exception):
            while part := await self._raw():
                size += len(part)
                if size > MAX_DRAIN_BYTES:
                    return

    async def aclose(self) -> None:
        """Stop reading (the response itself is closed with ``close_response``)."""
        with contextlib.suppress(Exception):
            await self._chunks.aclose()


async def close_response(response: httpx2.Response) -> None:
    """Close ``response`` now (its connection is released or dropped); never raises
    anything but a ``BaseException`` that is not an ``Exception``."""
    with contextlib.suppress(Exception):
        await response.aclose()
