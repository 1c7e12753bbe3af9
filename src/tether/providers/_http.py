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
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Final, Literal

from tether._base.dataclass import dataclass
from tether.models.base import RetryListener
from tether.providers._http_body import BodyReader, close_response, read_limited
from tether.providers._http_errors import error_for_status, redact, redact_error, should_retry
from tether.providers._watch import RequestWatch
from tether.providers.errors import (
    ProviderError,
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
            # Here, not at import: a model's module does not load the protocol (issue 30).
            from tether.protocol import ModelRetryPayload

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
            if not should_retry(status, response.headers):
                raise failure
        await retries.pause(failure, watch)
