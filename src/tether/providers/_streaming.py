"""``HttpStreamModel``: what every HTTP provider's ``Model`` shares.

A subclass says how to build the request (URL, headers, JSON body) and which parser turns
the vendor's events into protocol chunks; this class does the rest the same way for every
vendor: one producer task per ``stream()`` call, the caller's signal followed by a private
controller (so an early ``aclose()`` of the stream's iterator aborts the request too), the
request sent through ``_http.open_stream`` (retries before anything streamed), the
``text/event-stream`` body decoded by ``_sse.SSEDecoder`` and fed event by event to the
parser, a JSON body answered to the streaming request parsed whole, and the response closed
on every path. Every failure settles the stream with a ``ProviderError`` (or the abort
reason).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Final, Protocol, Self

from tether._producer import fail_producer, start_producer
from tether._race import follow_signal
from tether.abort import AbortController, AbortError, AbortSignal
from tether.protocol import ModelChunk, ModelRequest, ModelResponse
from tether.providers._http import (
    BodyReader,
    HttpTransport,
    RetryPolicy,
    Timeouts,
    close_response,
    open_stream,
    read_limited,
    redact_error,
)
from tether.providers._sse import SSEDecoder, SSEEvent, is_event_stream
from tether.providers.errors import ProviderError
from tether.stream import EventStream

if TYPE_CHECKING:
    import httpx2

__all__ = ["HttpStreamModel", "StreamParser", "loads_payload", "transcript_call_ids"]

MAX_JSON_BODY_BYTES: Final = 16 << 20
"""Most bytes of a non-streamed JSON body read."""


class StreamParser(Protocol):
    """A vendor's stream normalizer: one decoded event payload at a time, then the end."""

    def feed(self, payload: object, event: str = "message") -> list[ModelChunk]: ...

    def finish(self, *, done: bool) -> tuple[list[ModelChunk], ModelResponse]: ...


class HttpStreamModel:
    """Base of the HTTP ``Model`` classes (see the module docstring)."""

    __slots__ = ("_api_key", "_base_url", "_model", "_retry", "_timeouts", "_transport")

    def __init__(
        self,
        *,
        model: str,
        base_url: str,
        api_key: str | None,
        retry: RetryPolicy,
        timeouts: Timeouts,
        http_client: httpx2.AsyncClient | None,
    ) -> None:
        if not isinstance(retry, RetryPolicy):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise TypeError("retry must be a RetryPolicy")
        if not isinstance(timeouts, Timeouts):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise TypeError("timeouts must be a Timeouts")
        self._model = model
        self._base_url = base_url.rstrip("/")
        self._api_key = api_key
        self._retry = retry
        self._timeouts = timeouts
        self._transport = HttpTransport(http_client, timeouts)

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

    def _ends(self, event: SSEEvent, parser: StreamParser) -> bool:
        """Whether ``event`` ends the stream (OpenAI's ``[DONE]``); checked before feeding."""
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

    def stream(
        self, request: ModelRequest, signal: AbortSignal
    ) -> EventStream[ModelChunk, ModelResponse]:
        """Start one model turn for ``request``; its chunks and response arrive on the stream."""
        if type(request) is not ModelRequest:
            raise TypeError("request must be a ModelRequest")
        stream: EventStream[ModelChunk, ModelResponse] = EventStream()
        controller = AbortController()
        detach = follow_signal(signal, controller)
        if detach is None:
            stream.fail(TypeError("signal must be a readable AbortSignal"))
            return stream
        stream.on_abandon(lambda: controller.abort(AbortError("model stream consumer went away")))
        start_producer(self._produce(stream, request, controller.signal, detach))
        return stream

    async def _produce(
        self,
        stream: EventStream[ModelChunk, ModelResponse],
        request: ModelRequest,
        signal: AbortSignal,
        detach: Callable[[], None],
    ) -> None:
        response: httpx2.Response | None = None
        try:
            body = json.dumps(
                self._body(request), separators=(",", ":"), ensure_ascii=False
            ).encode()
            response = await open_stream(
                self._transport,
                url=self._url(),
                headers=self._headers(),
                body=body,
                retry=self._retry,
                timeouts=self._timeouts,
                signal=signal,
                secret=self._api_key,
            )
            reserved = transcript_call_ids(request)
            content_type = response.headers.get("content-type")
            if is_event_stream(content_type):
                await self._read_events(response, stream, request, signal, reserved)
            elif content_type is not None and "json" in content_type.lower():
                data = await read_limited(response, MAX_JSON_BODY_BYTES, signal, self._timeouts)
                chunks, final = self._parse_whole(loads_payload(data), request, reserved)
                for chunk in chunks:
                    stream.push(chunk)
                stream.finish(final)
            else:
                raise ProviderError(
                    "PROVIDER_PROTOCOL_ERROR",
                    f"The server answered with content type {content_type!r}, "
                    "not an event stream or JSON",
                )
        except BaseException as error:
            detach()
            if response is not None:
                await close_response(response)
            fail_producer(stream, redact_error(error, self._api_key))
            return
        detach()
        await close_response(response)

    async def _read_events(
        self,
        response: httpx2.Response,
        stream: EventStream[ModelChunk, ModelResponse],
        request: ModelRequest,
        signal: AbortSignal,
        reserved: frozenset[str],
    ) -> None:
        decoder = SSEDecoder()
        parser = self._parser(request, reserved)
        reader = BodyReader(response, signal, self._timeouts)
        push = stream.push
        done = False
        try:
            while not done:
                data = await reader.read()
                events = decoder.feed(data) if data else decoder.close()
                for event in events:
                    if self._ends(event, parser):
                        done = True
                        break
                    for chunk in parser.feed(loads_payload(event.data), event=event.event):
                        push(chunk)
                    if self._ended(parser):
                        done = True
                        break
                if not data:
                    break
        finally:
            await reader.aclose()
        chunks, final = parser.finish(done=done)
        for chunk in chunks:
            push(chunk)
        stream.finish(final)


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


def loads_payload(data: str | bytes) -> object:
    """One JSON payload from the server, or ``PROVIDER_PROTOCOL_ERROR``."""
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as error:
        raise ProviderError(
            "PROVIDER_PROTOCOL_ERROR", f"The server sent invalid JSON: {error}"[:300]
        ) from error
