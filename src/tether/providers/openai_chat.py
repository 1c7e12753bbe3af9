"""``OpenAIChatModel``: a ``Model`` for the OpenAI Chat Completions API and the many servers
that speak it (OpenRouter, Groq, DeepSeek, Mistral, Ollama, vLLM, llama.cpp, LM Studio).

One ``stream(request, signal)`` call is one HTTP request (retried only before anything
streamed, see ``tether.providers._http``): the request is converted by
``openai_wire.build_chat_request``, the ``text/event-stream`` body is decoded by tether's own
SSE decoder and normalized by ``openai_wire.OpenAIChatStreamParser`` into protocol chunks and
one ``ModelResponse``; a JSON body answered to the streaming request (some servers do this
with tools) is parsed whole. Every failure settles the stream with a ``ProviderError``.

The API key is sent only in the ``Authorization`` header: it never appears in ``repr``, in an
error, in an event or in JSON output. Closing the stream's iterator early, or aborting the
signal, closes the HTTP response at once. The model owns one pooled HTTP client; close it
with ``await model.aclose()`` (or ``async with OpenAIChatModel(...) as model``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final

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
)
from tether.providers._sse import SSEDecoder, is_event_stream
from tether.providers.catalog import parse_model_spec
from tether.providers.errors import ProviderError
from tether.providers.openai_wire import (
    OpenAIChatCompat,
    OpenAIChatStreamParser,
    build_chat_request,
    parse_chat_completion,
)
from tether.stream import EventStream

if TYPE_CHECKING:
    import httpx2

__all__ = ["OpenAIChatCompat", "OpenAIChatModel", "RetryPolicy", "Timeouts"]

MAX_JSON_BODY_BYTES: Final = 16 << 20
"""Most bytes of a non-streamed JSON completion read."""
_DEFAULT_COMPAT: Final = OpenAIChatCompat()
_DEFAULT_RETRY: Final = RetryPolicy()
_DEFAULT_TIMEOUTS: Final = Timeouts()


class OpenAIChatModel:
    """A ``Model`` speaking OpenAI Chat Completions over HTTP (see the module docstring).

    ``api_key`` defaults to the ``api_key_env`` environment variable (none is sent when
    neither is set, as local servers expect). ``compat`` holds the server's quirks
    (``tether.providers.catalog`` has presets); ``headers`` are extra request headers;
    ``http_client`` is an ``httpx2.AsyncClient`` you own (else the model creates one).
    """

    __slots__ = (
        "_api_key",
        "_base_url",
        "_compat",
        "_headers",
        "_max_output_tokens",
        "_model",
        "_reasoning_effort",
        "_retry",
        "_temperature",
        "_timeouts",
        "_transport",
    )

    def __init__(
        self,
        model: str,
        *,
        base_url: str = "https://api.openai.com/v1",
        api_key: str | None = None,
        api_key_env: str | None = "OPENAI_API_KEY",
        max_output_tokens: int | None = None,
        temperature: float | None = None,
        reasoning_effort: str | None = None,
        compat: OpenAIChatCompat = _DEFAULT_COMPAT,
        retry: RetryPolicy = _DEFAULT_RETRY,
        timeouts: Timeouts = _DEFAULT_TIMEOUTS,
        headers: Mapping[str, str] | None = None,
        http_client: httpx2.AsyncClient | None = None,
    ) -> None:
        if type(model) is not str or not model.strip():
            raise TypeError("model must be a non-empty model name, e.g. 'gpt-4o-mini'")
        if type(base_url) is not str or not base_url.startswith(("http://", "https://")):
            raise TypeError("base_url must be an http:// or https:// URL")
        if api_key is not None and (type(api_key) is not str or not api_key):
            raise TypeError("api_key must be a non-empty string or None")
        if max_output_tokens is not None and (
            type(max_output_tokens) is not int or max_output_tokens < 1
        ):
            raise TypeError("max_output_tokens must be a positive int or None")
        if not isinstance(compat, OpenAIChatCompat):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise TypeError("compat must be an OpenAIChatCompat")
        if not isinstance(retry, RetryPolicy):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise TypeError("retry must be a RetryPolicy")
        if not isinstance(timeouts, Timeouts):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise TypeError("timeouts must be a Timeouts")
        if api_key is None and api_key_env:
            api_key = os.environ.get(api_key_env) or None
        self._model = model
        self._base_url = base_url.rstrip("/")
        self._api_key = api_key
        self._max_output_tokens = max_output_tokens
        self._temperature = temperature
        self._reasoning_effort = reasoning_effort
        self._compat = compat
        self._retry = retry
        self._timeouts = timeouts
        self._headers = dict(headers or {})
        self._transport = HttpTransport(http_client, timeouts)

    @classmethod
    def from_spec(cls, spec: str, **options: Any) -> OpenAIChatModel:
        """A model from ``"PROVIDER/MODEL"`` using the catalog's preset for PROVIDER (base
        URL, key variable, quirks): ``OpenAIChatModel.from_spec("groq/llama-3.3-70b")``.
        ``options`` are the constructor's keyword arguments and win over the preset."""
        preset, model = parse_model_spec(spec)
        options.setdefault("base_url", preset.base_url)
        options.setdefault("api_key_env", preset.api_key_env)
        options.setdefault("compat", preset.compat)
        return cls(model, **options)

    @property
    def model(self) -> str:
        """The model name sent with every request."""
        return self._model

    @property
    def base_url(self) -> str:
        """The API's base URL (requests go to ``{base_url}/chat/completions``)."""
        return self._base_url

    def __repr__(self) -> str:
        key = "set" if self._api_key else "none"
        return f"OpenAIChatModel({self._model!r}, base_url={self._base_url!r}, api_key={key})"

    async def aclose(self) -> None:
        """Close the HTTP client the model created (a client passed in stays open)."""
        await self._transport.aclose()

    async def __aenter__(self) -> OpenAIChatModel:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

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

    def _request_headers(self) -> dict[str, str]:
        headers = {
            "content-type": "application/json",
            "accept": "text/event-stream, application/json",
            **self._headers,
        }
        if self._api_key:
            headers["authorization"] = f"Bearer {self._api_key}"
        return headers

    async def _produce(
        self,
        stream: EventStream[ModelChunk, ModelResponse],
        request: ModelRequest,
        signal: AbortSignal,
        detach: Any,
    ) -> None:
        response: httpx2.Response | None = None
        try:
            payload = build_chat_request(
                request,
                model=self._model,
                compat=self._compat,
                max_output_tokens=self._max_output_tokens,
                temperature=self._temperature,
                reasoning_effort=self._reasoning_effort,
            )
            body = json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()
            response = await open_stream(
                self._transport,
                url=f"{self._base_url}/chat/completions",
                headers=self._request_headers(),
                body=body,
                retry=self._retry,
                timeouts=self._timeouts,
                signal=signal,
                secret=self._api_key,
            )
            reserved = frozenset(
                block.id
                for message in request.messages
                if message.role == "assistant"
                for block in message.content
                if block.type == "toolCall"
            )
            content_type = response.headers.get("content-type")
            if is_event_stream(content_type):
                await self._read_events(response, stream, request, signal, reserved)
            elif content_type is not None and "json" in content_type.lower():
                data = await read_limited(response, MAX_JSON_BODY_BYTES, signal, self._timeouts)
                chunks, final = parse_chat_completion(
                    _loads(data), request.id, compat=self._compat, reserved_call_ids=reserved
                )
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
            fail_producer(stream, error)
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
        parser = OpenAIChatStreamParser(request.id, compat=self._compat, reserved_call_ids=reserved)
        reader = BodyReader(response, signal, self._timeouts)
        push = stream.push
        done = False
        try:
            while not done:
                data = await reader.read()
                events = decoder.feed(data) if data else decoder.close()
                for event in events:
                    text = event.data
                    if text.startswith("[DONE]"):
                        done = True
                        break
                    for chunk in parser.feed(_loads(text), event=event.event):
                        push(chunk)
                if not data:
                    break
        finally:
            await reader.aclose()
        chunks, final = parser.finish(done=done)
        for chunk in chunks:
            push(chunk)
        stream.finish(final)


def _loads(data: str | bytes) -> object:
    """One JSON payload from the server, or ``PROVIDER_PROTOCOL_ERROR``."""
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as error:
        raise ProviderError(
            "PROVIDER_PROTOCOL_ERROR", f"The server sent invalid JSON: {error}"[:300]
        ) from error
