"""``HttpStreamModel``: what every HTTP provider's ``Model`` shares.

A subclass says how to build the request (URL, headers, JSON body) and which parser turns
the vendor's events into protocol chunks; this class does the rest the same way for every
vendor: one producer task per ``stream()`` call, the caller's signal followed by a private
controller (so an early ``aclose()`` of the stream's iterator aborts the request too), the
request sent through ``_http.open_stream`` (retries before anything streamed, an overloaded
first event included), the ``text/event-stream`` body decoded by ``_sse.SSEDecoder`` and fed
event by event to the parser, a JSON body answered to the streaming request parsed whole.
Every failure settles the stream with a ``ProviderError`` (or the abort reason).

The body is UTF-8 JSON (``ensure_ascii=False``) encoded by ``_base.strings.utf8_well_formed``:
a lone surrogate in the transcript (a model's ``"\\ud800"`` escape decodes to one, and the
session keeps it) is sent as U+FFFD, as a JavaScript ``fetch`` body's ``TextEncoder`` sends
it, not as the ``\\ud800`` escape ``JSON.stringify`` writes (Anthropic answers that with a
400, "no low surrogate in string", to every later request); text without one costs the one
``encode`` it always did.

The response is read and closed by the producer task alone (``_watch.RequestWatch`` turns an
abort or a deadline into an error at the await it interrupts), and the stream settles only
after the response is closed: a consumer that has the result has nothing left running. After
the vendor's end event the rest of the body is drained briefly (``BodyReader.drain``) so the
connection goes back to the pool.

A stream whose consumer goes away closes its response: when the consumer closes its
iterator (``aclose()``) or stops waiting (``on_abandon``), and also when it just drops the
stream (``async for chunk in stream: break`` and no reference left): the producer holds the
stream only through a weak reference, whose callback aborts the request.
"""

from __future__ import annotations

import asyncio
import json
import json.scanner
import weakref
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any, ClassVar, Final, Protocol, Self, TypeAlias, cast

from tether._async.producer import fail_producer, start_producer
from tether._async.race import follow_signal
from tether._base.exact_types import instance_of
from tether._base.strings import utf8_well_formed
from tether.abort import AbortController, AbortError, AbortSignal
from tether.models.base import RetryListener, retry_listener
from tether.providers._http import (
    BodyReader,
    HttpTransport,
    Retries,
    RetryPolicy,
    Timeouts,
    close_response,
    open_stream,
    read_limited,
    redact_error,
)
from tether.providers._images import check_request_images
from tether.providers._watch import RequestWatch
from tether.providers.errors import ProviderError, ProviderErrorCode
from tether.stream import EventStream

if TYPE_CHECKING:
    import httpx2

    from tether.models.limits import RunLimits
    from tether.protocol import ModelChunk, ModelRequest, ModelResponse

__all__ = [
    "HttpStreamModel",
    "StreamParser",
    "bearer_headers",
    "checked_key",
    "loads_payload",
    "transcript_call_ids",
]

MAX_JSON_BODY_BYTES: Final = 16 << 20
"""Most bytes of a non-streamed JSON body read."""

RETRIED_FIRST_EVENTS: Final[frozenset[ProviderErrorCode]] = frozenset(
    {"PROVIDER_OVERLOADED", "PROVIDER_RATE_LIMITED"}
)
"""Error events retried like their status when nothing reached the consumer yet (Anthropic's
``overloaded_error`` or OpenAI Responses' ``server_is_overloaded`` as the first event is a 529
in all but the status line, Responses' ``rate_limit_exceeded`` a 429)."""

StreamRef: TypeAlias = "weakref.ReferenceType[EventStream[ModelChunk, ModelResponse]]"
"""How the producer holds its stream: weakly, so a consumer that drops it is noticed."""


class StreamParser(Protocol):
    """A vendor's stream normalizer: one decoded event payload at a time, then the end."""

    def feed(self, payload: object, event: str = "message") -> list[ModelChunk]: ...

    def finish(self, *, done: bool) -> tuple[list[ModelChunk], ModelResponse]: ...


class HttpStreamModel:
    """Base of the HTTP ``Model`` classes (see the module docstring)."""

    __slots__ = (
        "_api_key",
        "_base_url",
        "_extra_headers",
        "_model",
        "_retry",
        "_timeouts",
        "_transport",
    )

    _MODEL_EXAMPLE: ClassVar[str] = "model-name"
    """A model name of the vendor's, shown in the error for a missing one."""
    _API: ClassVar[str | None] = None
    """The ``ApiSpec`` name of the wire API (how a model finds its preset in the catalog)."""

    def __init__(
        self,
        model: str,
        base_url: str,
        api_key: str | None,
        api_key_env: str | None,
        retry: RetryPolicy,
        timeouts: Timeouts,
        http_client: httpx2.AsyncClient | None,
        headers: Mapping[str, str] | None,
        /,
    ) -> None:
        """What every HTTP model checks (``TypeError`` otherwise): a non-empty ``model``, an
        ``http(s)://`` ``base_url``, an ``api_key`` that is non-empty or ``None`` (then read
        from the ``api_key_env`` environment variable, when one is named), a ``RetryPolicy``
        and ``Timeouts``; ``headers`` are the extra request headers (``_extra_headers``).

        The arguments are the constructor arguments every vendor's model takes, forwarded in
        this order: one call in each subclass instead of the same keyword list four times."""
        api_key = checked_key(model, base_url, api_key, api_key_env, self._MODEL_EXAMPLE)
        if not instance_of(retry, RetryPolicy):
            raise TypeError("retry must be a RetryPolicy")
        if not instance_of(timeouts, Timeouts):
            raise TypeError("timeouts must be a Timeouts")
        self._model = model
        self._base_url = base_url.rstrip("/")
        self._api_key = api_key
        self._retry = retry
        self._timeouts = timeouts
        self._extra_headers = dict(headers or {})
        self._transport = HttpTransport(http_client, timeouts)

    @property
    def run_limits(self) -> RunLimits:
        """The loop limits a run of this model uses unless it is given ``limits``:
        ``RunLimits.for_real_models()``, since a real model streams about one chunk per token
        (the workshop's defaults stay with the offline models)."""
        from tether.models.limits import REAL_MODEL_LIMITS

        return REAL_MODEL_LIMITS

    # --- what a vendor says -------------------------------------------------------------

    def _url(self) -> str:
        raise NotImplementedError

    def _headers(self) -> Mapping[str, str]:
        raise NotImplementedError

    def _body(self, request: ModelRequest) -> object:
        raise NotImplementedError

    def _parser(self, request: ModelRequest, reserved: frozenset[str]) -> StreamParser:
        raise NotImplementedError

    def _parse_whole(
        self, body: object, request: ModelRequest, reserved: frozenset[str]
    ) -> tuple[list[ModelChunk], ModelResponse]:
        raise ProviderError(
            "PROVIDER_PROTOCOL_ERROR", "The server answered a streaming request with JSON"
        )

    def _ends(self, data: str, parser: StreamParser) -> bool:
        """Whether an event whose data is ``data`` ends the stream (OpenAI's ``[DONE]``);
        checked before feeding."""
        return False

    def _ended(self, parser: StreamParser) -> bool:
        """Whether the parser saw the vendor's end event (Anthropic's ``message_stop``)."""
        return False

    # --- shared -------------------------------------------------------------------------

    @property
    def model(self) -> str:
        """The model name sent with every request."""
        return self._model

    @property
    def base_url(self) -> str:
        """The API's base URL, without the endpoint's path."""
        return self._base_url

    def __repr__(self) -> str:
        key = "set" if self._api_key else "none"
        name = type(self).__name__
        return f"{name}({self._model!r}, base_url={self._base_url!r}, api_key={key})"

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the HTTP client the model created (a client passed in stays open)."""
        await self._transport.aclose()

    def _models_url(self, after: str | None) -> str:
        """The URL of the model list's page after the cursor ``after`` (``None``: the first):
        OpenAI's one-page ``{base_url}/models`` unless the vendor pages its list."""
        return f"{self._base_url}/models"

    async def list_models(self, signal: AbortSignal | None = None) -> tuple[str, ...]:
        """The IDs of the models the server offers (``GET /models``), every page of them.

        Sent like a model request (the key in its header only, redirects refused, retried on
        429/5xx, bounded by ``Timeouts``, ``signal`` raced at every await); a failure is a
        ``ProviderError`` (a server without the endpoint: ``PROVIDER_BAD_REQUEST``, 404).
        """
        from tether.providers.model_list import (
            MAX_LISTED_MODELS,
            MAX_MODEL_PAGES,
            parse_model_page,
        )

        watch = RequestWatch(
            AbortController().signal if signal is None else signal, self._timeouts.total
        )
        headers = {**self._headers(), "accept": "application/json"}
        headers.pop("content-type", None)
        ids: list[str] = []
        after: str | None = None
        try:
            for _ in range(MAX_MODEL_PAGES):
                response = await open_stream(
                    self._transport,
                    method="GET",
                    url=self._models_url(after),
                    headers=headers,
                    body=None,
                    retries=Retries(self._retry),
                    timeouts=self._timeouts,
                    watch=watch,
                    secret=self._api_key,
                )
                try:
                    data = await read_limited(
                        response, MAX_JSON_BODY_BYTES, watch, self._timeouts.idle
                    )
                finally:
                    await close_response(response)
                page, after = parse_model_page(loads_payload(data))
                ids.extend(page)
                if len(ids) > MAX_LISTED_MODELS:
                    raise ProviderError(
                        "PROVIDER_PROTOCOL_ERROR",
                        f"The model list holds more than {MAX_LISTED_MODELS} models",
                    )
                if after is None:
                    return tuple(ids)
            raise ProviderError(
                "PROVIDER_PROTOCOL_ERROR", f"The model list has more than {MAX_MODEL_PAGES} pages"
            )
        except BaseException as error:
            raise redact_error(error, self._api_key) from None
        finally:
            watch.close()

    def stream(
        self, request: ModelRequest, signal: AbortSignal
    ) -> EventStream[ModelChunk, ModelResponse]:
        """Start one model turn for ``request``; its chunks and response arrive on the stream.

        The stream settles after the HTTP response is closed. Closing its iterator
        (``aclose()``, or ``async with contextlib.aclosing(aiter(stream))``) aborts the
        request at once; so does dropping the stream without reading it to its end.
        """
        # Here, not at import: a model's module does not load the protocol (issue 30); a
        # request was built with it, so this is a lookup in ``sys.modules``.
        from tether.protocol import ModelRequest

        if type(request) is not ModelRequest:
            raise TypeError("request must be a ModelRequest")
        stream: EventStream[ModelChunk, ModelResponse] = EventStream()
        controller = AbortController()
        detach = follow_signal(signal, controller)
        if detach is None:
            stream.fail(TypeError("signal must be a readable AbortSignal"))
            return stream
        stream.on_abandon(lambda: controller.abort(AbortError("model stream consumer went away")))
        ref = weakref.ref(
            stream, lambda _: controller.abort(AbortError("model stream was dropped"))
        )
        listener = retry_listener()  # the caller's context: the loop listens for this turn
        start_producer(self._produce(ref, request, controller.signal, detach, listener))
        return stream

    async def _produce(
        self,
        ref: StreamRef,
        request: ModelRequest,
        signal: AbortSignal,
        detach: Callable[[], None],
        listener: RetryListener | None = None,
    ) -> None:
        response: httpx2.Response | None = None
        watch = RequestWatch(signal, self._timeouts.total)
        try:
            check_request_images(request, self._base_url, self._API, self._model)
            # A lone surrogate in the transcript (a model's "\ud800" escape, kept by the
            # session) is sent as U+FFFD: one encode unless the text holds one.
            body = utf8_well_formed(
                json.dumps(self._body(request), separators=(",", ":"), ensure_ascii=False)
            )
            retries = Retries(self._retry, listener=listener, request_id=request.id)
            reserved = transcript_call_ids(request)
            while True:
                response = await open_stream(
                    self._transport,
                    url=self._url(),
                    headers=self._headers(),
                    body=body,
                    retries=retries,
                    timeouts=self._timeouts,
                    watch=watch,
                    secret=self._api_key,
                )
                outcome = await self._read_body(response, ref, request, watch, reserved)
                if not isinstance(outcome, ProviderError):
                    break
                await close_response(response)  # an overloaded first event: try again
                response = None
                await retries.pause(outcome, watch)
            await close_response(response)
            response = None
        except BaseException as error:
            detach()
            watch.close()
            try:
                if response is not None:
                    await close_response(response)
            finally:
                _fail(ref, redact_error(error, self._api_key))
            return
        detach()
        watch.close()
        stream = ref()
        if stream is not None:  # else the consumer dropped it while the response was closed
            chunks, final = outcome
            for chunk in chunks:
                stream.push(chunk)
            stream.finish(final)

    async def _read_body(
        self,
        response: httpx2.Response,
        ref: StreamRef,
        request: ModelRequest,
        watch: RequestWatch,
        reserved: frozenset[str],
    ) -> tuple[list[ModelChunk], ModelResponse] | ProviderError:
        """The body read to its end: the chunks still to deliver and the response, or an
        error event to retry (nothing was delivered). An event stream is decoded and parsed
        event by event; a JSON body (some servers answer the streaming request with one) is
        parsed whole."""
        # Here, not at import: the SSE decoder loads with the first response (issue 30).
        from tether.providers._sse import DEFAULT_MAX_RESPONSE_BYTES, SSEDecoder, is_event_stream

        content_type = response.headers.get("content-type")
        if not is_event_stream(content_type):
            if content_type is not None and "json" in content_type.lower():
                data = await read_limited(response, MAX_JSON_BODY_BYTES, watch, self._timeouts.idle)
                return self._parse_whole(loads_payload(data), request, reserved)
            raise ProviderError(
                "PROVIDER_PROTOCOL_ERROR",
                f"The server answered with content type {content_type!r}, "
                "not an event stream or JSON",
            )
        idle = self._timeouts.idle
        decoder = SSEDecoder()
        parser = self._parser(request, reserved)
        reader = BodyReader(response, watch, idle, DEFAULT_MAX_RESPONSE_BYTES)
        read, decode, parse, expect = reader.read, decoder.feed_fields, parser.feed, watch.expect
        ends, ended = self._ends, self._ended
        delivered = False
        done = False
        comments = 0
        try:
            while not done:
                data = await read()
                events = decode(data) if data else decoder.close_fields()
                if events:
                    expect(idle, "idle")  # idle is the gap between events...
                elif decoder.comments != comments:  # ...or keep-alive comments
                    comments = decoder.comments
                    expect(idle, "idle")
                chunks: list[ModelChunk] = []
                try:
                    for kind, text, _, _ in events:
                        if ends(text, parser):
                            done = True
                            break
                        # ``kind`` by position: a keyword argument costs the call ~190
                        # machine instructions more, per event (benchmarks/README.md)
                        chunks += parse(loads_payload(text), kind)
                        if ended(parser):
                            done = True
                            break
                except ProviderError as error:
                    if not delivered and not chunks and error.code in RETRIED_FIRST_EVENTS:
                        return error
                    _deliver(ref, chunks)
                    raise
                if chunks:
                    _deliver(ref, chunks)
                    delivered = True
                if not data:
                    break
            if done:
                await reader.drain()
        finally:
            await reader.aclose()
        return parser.finish(done=done)


def checked_key(
    model: object, base_url: object, api_key: object, api_key_env: str | None, example: str
) -> str | None:
    """Check the arguments every HTTP model's constructor takes (``TypeError`` naming the
    first wrong one; ``example`` is a model name for its message) and return the key to send:
    ``api_key``, else the ``api_key_env`` environment variable's value, else ``None``."""
    if type(model) is not str or not model.strip():
        raise TypeError(f"model must be a non-empty model name, e.g. {example!r}")
    if type(base_url) is not str or not base_url.startswith(("http://", "https://")):
        raise TypeError("base_url must be an http:// or https:// URL")
    if api_key is not None and (type(api_key) is not str or not api_key):
        raise TypeError("api_key must be a non-empty string or None")
    if api_key is None and api_key_env:
        import os

        return os.environ.get(api_key_env) or None
    key: str | None = api_key
    return key


def bearer_headers(api_key: str | None, extra: Mapping[str, str]) -> dict[str, str]:
    """The headers of an OpenAI-style JSON request answered by a stream or JSON: the
    ``extra`` headers, and the key as ``Authorization: Bearer`` (only when there is one)."""
    headers = {
        "content-type": "application/json",
        "accept": "text/event-stream, application/json",
        **extra,
    }
    if api_key:
        headers["authorization"] = f"Bearer {api_key}"
    return headers


def _deliver(ref: StreamRef, chunks: list[ModelChunk]) -> None:
    """Push ``chunks`` to the stream, held only for this call (the producer must not keep it
    alive across an await)."""
    stream = ref()
    if stream is None:
        raise AbortError("model stream was dropped")
    push = stream.push
    for chunk in chunks:
        push(chunk)


def _fail(ref: StreamRef, error: BaseException) -> None:
    """Settle the stream with ``error`` if it is still referenced; re-raise what must not
    stop at the stream (see ``fail_producer``)."""
    stream = ref()
    if stream is not None:
        fail_producer(stream, error)
    elif isinstance(error, asyncio.CancelledError | KeyboardInterrupt | SystemExit):
        raise error


def transcript_call_ids(request: ModelRequest) -> frozenset[str]:
    """Every tool-call ID the request's transcript already uses (its assistant messages' calls
    and its tool results): the ``reserved_call_ids`` of the response's parser, so a server
    that restarts its IDs each turn (``call_0``, ``"0"``) cannot reuse one."""
    used: set[str] = set()
    for message in request.messages:
        if message.role == "assistant":
            used.update(block.id for block in message.content if block.type == "toolCall")
        elif message.role == "toolResult":
            used.add(message.tool_call_id)
    return frozenset(used)


_scan_once: Final[Callable[[str, int], tuple[object, int]]] = cast(Any, json.scanner).make_scanner(
    json.JSONDecoder()
)
"""The scanner ``json.loads`` itself ends in (``json.JSONDecoder().scan_once``): C when the
``_json`` accelerator is there, its pure-Python twin otherwise."""

_JSON_WHITESPACE: Final = " \t\n\r"


def loads_payload(data: str | bytes) -> object:
    """One JSON payload from the server, or ``PROVIDER_PROTOCOL_ERROR``.

    The value and every error are exactly ``json.loads(data)``'s. For a ``str`` it goes
    straight to the scanner ``json.loads`` ends in: ``json.loads(s)`` skips JSON whitespace,
    calls ``scan_once(s, index)``, skips whitespace again and requires the end of ``s``. An
    event payload starts with its value (servers send compact JSON), so ``scan_once(s, 0)``
    followed by nothing but JSON whitespace is that very result, without the four Python calls
    and two regular-expression matches around it (about 1 µs of the 2.5 µs ``json.loads``
    spends on a typical 300-byte chunk: the largest single cost of a stream after the scan
    itself). Anything else (leading whitespace or a BOM, extra data, invalid JSON, bytes) is
    handed to ``json.loads``, which gives its own value or raises its own error.
    ``tests/providers/test_payload.py`` checks the two paths agree on any text.
    """
    if type(data) is str:
        try:
            value, end = _scan_once(data, 0)
        except Exception:  # StopIteration, JSONDecodeError, RecursionError: json.loads says
            pass
        else:
            if end == len(data) or not data[end:].strip(_JSON_WHITESPACE):
                return value
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as error:
        raise ProviderError(
            "PROVIDER_PROTOCOL_ERROR", f"The server sent invalid JSON: {error}"[:300]
        ) from error
