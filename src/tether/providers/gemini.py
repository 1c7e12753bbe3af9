"""``GeminiModel``: a ``Model`` for Google's Gemini API (native, not its OpenAI layer).

One ``stream(request, signal)`` call is one HTTP request to
``{base_url}/{api_version}/models/{model}:streamGenerateContent?alt=sse``, handled by the
shared ``_streaming.HttpStreamModel`` (retries before anything streamed, an ``UNAVAILABLE``
error payload before anything reached the consumer retried like a 503; SSE decoding;
gzip/deflate bodies decoded; redirects refused as ``PROVIDER_REDIRECTED``; the idle timeout
measured between events). ``gemini_request.build_gemini_request`` converts the request
(``systemInstruction``, ``user``/``model`` turns, tool results as ``functionResponse`` parts,
each ``thoughtSignature`` sent back on the part it came with, tool schemas converted to the
subset Gemini accepts) and ``gemini_wire.GeminiStreamParser`` normalizes the chunks. Gemini
sends no end event: the body is read to its end, and a stream that ends without a
``finishReason`` is ``PROVIDER_STREAM_INTERRUPTED``.

The API key is sent only in the ``x-goog-api-key`` header, never in the URL (Google also
accepts ``?key=``, which ends up in proxy and server logs), never to a redirect's target,
never in ``repr``, an error, an event or JSON output. Close the model's HTTP client with
``await model.aclose()``; one never closed is closed when its event loop shuts down.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Final, cast

from tether.protocol import ModelRequest
from tether.providers._http import RetryPolicy, Timeouts
from tether.providers._streaming import HttpStreamModel, StreamParser
from tether.providers.gemini_request import (
    ThinkingLevel,
    build_gemini_request,
    check_generation_options,
    nests_tool_images,
)
from tether.providers.gemini_wire import GeminiStreamParser
from tether.providers.thinking import (
    LevelledThinking,
    ThinkingChoice,
    gemini_levels,
    gemini_thinking_config,
)
from tether.providers.thinking import ThinkingLevel as UnifiedLevel

if TYPE_CHECKING:
    import httpx2

__all__ = ["GEMINI_API_VERSION", "GeminiModel"]

GEMINI_API_VERSION: Final = "v1beta"
"""The API version in the URL by default (thought signatures and ``thinkingConfig`` are
``v1beta`` features)."""
_DEFAULT_RETRY: Final = RetryPolicy()
_DEFAULT_TIMEOUTS: Final = Timeouts()


class GeminiModel(LevelledThinking, HttpStreamModel):
    """A ``Model`` speaking Google's Gemini API over HTTP (see the module docstring).

    ``model`` is a Gemini model name (``"gemini-2.5-flash"``; a ``"models/"`` prefix is
    accepted). ``api_key`` defaults to the ``api_key_env`` environment variable
    (``GEMINI_API_KEY``). ``max_output_tokens`` and ``temperature`` (0 to 2) are sent when
    given. Thinking: ``thinking_budget`` (Gemini 2.5: tokens, ``-1`` dynamic, ``0`` off) or
    ``thinking_level`` (Gemini 3: ``"minimal"``, ``"low"``, ``"medium"``, ``"high"``), not
    both; either asks for the thought summaries too (``includeThoughts``), which arrive as
    thinking. Without either, the model's default thinking applies and no thoughts are shown.
    ``headers`` are extra request headers; ``http_client`` is an ``httpx2.AsyncClient`` you
    own (else the model creates one). ``thinking`` is the ``ThinkingLevel`` every API shares
    (``tether.providers.thinking``), sent as the model's ``thinkingBudget`` or
    ``thinkingLevel`` and clamped to what it takes (``thinking_choice``); the two options above
    are its precise forms.
    """

    __slots__ = (
        "_api_version",
        "_max_output_tokens",
        "_temperature",
        "_thinking",
        "_thinking_budget",
        "_thinking_level",
    )

    _MODEL_EXAMPLE = "gemini-2.5-flash"
    _API = "gemini"

    def __init__(
        self,
        model: str,
        *,
        base_url: str = "https://generativelanguage.googleapis.com",
        api_key: str | None = None,
        api_key_env: str | None = "GEMINI_API_KEY",
        api_version: str = GEMINI_API_VERSION,
        max_output_tokens: int | None = None,
        temperature: float | None = None,
        thinking_budget: int | None = None,
        thinking_level: ThinkingLevel | None = None,
        thinking: UnifiedLevel | None = None,
        retry: RetryPolicy = _DEFAULT_RETRY,
        timeouts: Timeouts = _DEFAULT_TIMEOUTS,
        headers: Mapping[str, str] | None = None,
        http_client: httpx2.AsyncClient | None = None,
    ) -> None:
        if type(model) is str:
            model = model.removeprefix("models/")
        if type(api_version) is not str or not api_version or "/" in api_version:
            raise TypeError("api_version must be a non-empty path segment, e.g. 'v1beta'")
        check_generation_options(max_output_tokens, temperature, thinking_budget, thinking_level)
        super().__init__(
            model, base_url, api_key, api_key_env, retry, timeouts, http_client, headers
        )
        self._api_version = api_version
        self._max_output_tokens = max_output_tokens
        self._temperature = temperature
        self._thinking_budget = thinking_budget
        self._thinking_level: ThinkingLevel | None = thinking_level
        if thinking is not None and (thinking_budget is not None or thinking_level is not None):
            raise TypeError("pass thinking (a level) or thinking_budget/thinking_level, not both")
        self._thinking: ThinkingChoice | None = None
        self._choose_thinking(thinking)

    def _thinking_levels(self) -> tuple[UnifiedLevel, ...]:
        return gemini_levels(self._model)

    def _thinking_options(self) -> tuple[int | None, ThinkingLevel | None]:
        """The ``thinkingBudget`` / ``thinkingLevel`` to send: the constructor's, or the
        unified level's (``gemini_thinking_config``)."""
        if self._thinking is None:
            return self._thinking_budget, self._thinking_level
        config = gemini_thinking_config(self._thinking.level, model=self._model) or {}
        budget = config.get("thinkingBudget")
        level = config.get("thinkingLevel")
        return (
            budget if type(budget) is int else None,
            cast("ThinkingLevel", level) if type(level) is str else None,
        )

    def _models_url(self, after: str | None) -> str:
        from urllib.parse import quote

        url = f"{self._base_url}/{self._api_version}/models?pageSize=1000"
        return url if after is None else f"{url}&pageToken={quote(after, safe='')}"

    def _url(self) -> str:
        from urllib.parse import quote

        model = quote(self._model, safe="")
        return f"{self._base_url}/{self._api_version}/models/{model}:streamGenerateContent?alt=sse"

    def _headers(self) -> Mapping[str, str]:
        headers = {
            "content-type": "application/json",
            "accept": "text/event-stream",
            **self._extra_headers,
        }
        if self._api_key:
            headers["x-goog-api-key"] = self._api_key
        return headers

    def _body(self, request: ModelRequest) -> object:
        budget, level = self._thinking_options()
        return build_gemini_request(
            request,
            max_output_tokens=self._max_output_tokens,
            temperature=self._temperature,
            thinking_budget=budget,
            thinking_level=level,
            nest_tool_images=nests_tool_images(self._model),
        )

    def _parser(self, request: ModelRequest, reserved: frozenset[str]) -> StreamParser:
        return GeminiStreamParser(request.id, reserved_call_ids=reserved)
