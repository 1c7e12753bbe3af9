"""``OpenAIResponsesModel``: a ``Model`` for the OpenAI Responses API (``POST /v1/responses``),
stateless, with reasoning replayed.

One ``stream(request, signal)`` call is one HTTP request, handled by the shared
``_streaming.HttpStreamModel`` like the other providers (retries before anything streamed: a
``server_is_overloaded`` or ``rate_limit_exceeded`` error event before anything reached the
consumer is retried like its status; SSE decoding; gzip/deflate bodies decoded; redirects
refused as ``PROVIDER_REDIRECTED``; the idle timeout measured between events).
``responses_request.build_responses_request`` converts the request (``instructions`` from the
system prompt, flat function tools, ``store: false`` and
``include: ["reasoning.encrypted_content"]``, the reasoning items of earlier turns sent back
with their encrypted content) and ``responses_wire.ResponsesStreamParser`` normalizes the
events, keyed on each payload's ``type``; a JSON ``response`` body answered to the streaming
request is parsed whole. Every failure is a ``ProviderError``.

The stream closes its HTTP response when its consumer goes away (an abort, ``aclose()`` of
its iterator, or dropping the stream before its end) and settles only once the response is
closed; after the terminal event (``response.completed``/``response.incomplete``) the rest of
the body is drained briefly so the connection is reused.

The API key is sent only in the ``Authorization`` header (never to a redirect's target),
never in ``repr``, an error, an event or JSON output. Close the model's HTTP client with
``await model.aclose()`` (or ``async with``); one never closed is closed when its event loop
shuts down.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Final

from tether.protocol import ModelChunk, ModelRequest, ModelResponse
from tether.providers._http import RetryPolicy, Timeouts
from tether.providers._openai_model import OpenAIModel, check_max_output_tokens
from tether.providers._streaming import (
    HttpStreamModel,
    StreamParser,
    checked_key,
)
from tether.providers.responses_request import REASONING_SUMMARIES, build_responses_request
from tether.providers.responses_wire import ResponsesStreamParser, parse_response_body
from tether.providers.thinking import ThinkingLevel

if TYPE_CHECKING:
    import httpx2

__all__ = ["OpenAIResponsesModel"]

_DEFAULT_RETRY: Final = RetryPolicy()
_DEFAULT_TIMEOUTS: Final = Timeouts()


class OpenAIResponsesModel(OpenAIModel, HttpStreamModel):
    """A ``Model`` speaking the OpenAI Responses API over HTTP (see the module docstring).

    ``api_key`` defaults to the ``api_key_env`` environment variable (none is sent when
    neither is set). ``reasoning_effort`` (``"minimal"``, ``"low"``, ``"medium"``,
    ``"high"``, as the model accepts) is sent as ``reasoning.effort``, like
    ``OpenAIChatModel(reasoning_effort=...)``; ``thinking`` is a ``ThinkingLevel``
    (``tether.providers.thinking``) sent as that effort, clamped to what the model takes
    (``thinking_choice``), the level every API shares; ``reasoning_summary`` (``"auto"``,
    ``"concise"`` or ``"detailed"``) asks for the reasoning summaries that stream as thinking
    (some organizations must be verified first; without it only the encrypted reasoning comes
    back, which is still replayed). ``max_output_tokens`` counts reasoning too (OpenAI's
    minimum is 16: a smaller value is answered with a 400, ``PROVIDER_BAD_REQUEST``).
    ``headers`` are extra request headers; ``http_client`` is an ``httpx2.AsyncClient`` you
    own (else the model creates one).
    """

    __slots__ = (
        "_max_output_tokens",
        "_reasoning_effort",
        "_reasoning_summary",
        "_temperature",
        "_thinking",
    )

    _MODEL_EXAMPLE = "gpt-5"
    _API = "openai-responses"

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
        thinking: ThinkingLevel | None = None,
        reasoning_summary: str | None = None,
        retry: RetryPolicy = _DEFAULT_RETRY,
        timeouts: Timeouts = _DEFAULT_TIMEOUTS,
        headers: Mapping[str, str] | None = None,
        http_client: httpx2.AsyncClient | None = None,
    ) -> None:
        api_key = checked_key(model, base_url, api_key, api_key_env, self._MODEL_EXAMPLE)
        check_max_output_tokens(max_output_tokens)
        if reasoning_effort is not None and (
            type(reasoning_effort) is not str or not reasoning_effort
        ):
            raise TypeError("reasoning_effort must be a non-empty string or None")
        if reasoning_summary is not None and reasoning_summary not in REASONING_SUMMARIES:
            raise TypeError("reasoning_summary must be 'auto', 'concise', 'detailed' or None")
        super().__init__(model, base_url, api_key, None, retry, timeouts, http_client, headers)
        self._max_output_tokens = max_output_tokens
        self._temperature = temperature
        self._choose_reasoning(thinking, reasoning_effort)
        self._reasoning_summary = reasoning_summary

    def _url(self) -> str:
        return f"{self._base_url}/responses"

    def _body(self, request: ModelRequest) -> object:
        return build_responses_request(
            request,
            model=self._model,
            max_output_tokens=self._max_output_tokens,
            temperature=self._temperature,
            reasoning_effort=self._effort(),
            reasoning_summary=self._reasoning_summary,
        )

    def _parser(self, request: ModelRequest, reserved: frozenset[str]) -> StreamParser:
        return ResponsesStreamParser(request.id, reserved_call_ids=reserved)

    def _parse_whole(
        self, body: object, request: ModelRequest, reserved: frozenset[str]
    ) -> tuple[list[ModelChunk], ModelResponse]:
        return parse_response_body(body, request.id, reserved_call_ids=reserved)

    def _ended(self, parser: StreamParser) -> bool:
        return isinstance(parser, ResponsesStreamParser) and parser.stopped
