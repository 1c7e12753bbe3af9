"""``AnthropicModel``: a ``Model`` for Anthropic's Messages API, with thinking.

One ``stream(request, signal)`` call is one HTTP request to ``{base_url}/v1/messages``,
handled by the shared ``_streaming.HttpStreamModel`` (retries before anything streamed: 529,
and an ``overloaded_error`` event before anything reached the consumer, are retried like 503;
SSE decoding; the gzip streams Anthropic's API sends decoded; redirects refused as
``PROVIDER_REDIRECTED``). ``anthropic_wire.build_messages_request`` converts the request
(``system`` top-level, ``max_tokens`` always sent, consecutive tool results merged into one
user turn, signed thinking blocks replayed unchanged) and
``anthropic_stream.AnthropicStreamParser`` normalizes the events, keyed on each payload's
``type``.

The stream closes its HTTP response when its consumer goes away (an abort, ``aclose()`` of its
iterator, or dropping the stream before its end) and settles only once the response is
closed; after ``message_stop`` the rest of the body is drained briefly so the connection is
reused.

The API key is sent only in the ``x-api-key`` header (never to a redirect's target), never in
``repr``, an error, an event or JSON output. Close the model's HTTP client with
``await model.aclose()``; one never closed is closed when its event loop shuts down.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Final

from tether.protocol import ModelRequest
from tether.providers._http import RetryPolicy, Timeouts
from tether.providers._streaming import HttpStreamModel, StreamParser, checked_key
from tether.providers.anthropic_stream import AnthropicStreamParser
from tether.providers.anthropic_wire import build_messages_request
from tether.providers.thinking import (
    LevelledThinking,
    ThinkingChoice,
    ThinkingLevel,
    anthropic_levels,
    anthropic_thinking,
)

if TYPE_CHECKING:
    import httpx2

__all__ = ["ANTHROPIC_VERSION", "AnthropicModel"]

ANTHROPIC_VERSION: Final = "2023-06-01"
"""The ``anthropic-version`` header sent by default: the API's current stable version."""
_DEFAULT_RETRY: Final = RetryPolicy()
_DEFAULT_TIMEOUTS: Final = Timeouts()


class AnthropicModel(LevelledThinking, HttpStreamModel):
    """A ``Model`` speaking Anthropic Messages over HTTP (see the module docstring).

        ``api_key`` defaults to the ``api_key_env`` environment variable. ``max_output_tokens``
        is always sent (the API requires it). ``thinking`` is a ``ThinkingLevel``
        (``tether.providers.thinking``: ``"medium"`` sends ``budget_tokens: 8192`` and raises
        ``max_tokens`` so the answer keeps 4096 tokens; a Claude 3 model without extended
        thinking takes ``"off"`` only, see ``thinking_choice``); ``thinking_budget`` is the
        precise form: extended thinking with that many tokens, below ``max_output_tokens``. With
        either, no ``temperature`` is sent (the API requires the default).
        ``anthropic_version`` is the ``anthropic-version`` header.
    ``prompt_caching`` (on by default) puts ``cache_control`` breakpoints on the system
        prompt, the last tool and the conversation's last turns
        (``anthropic_wire.build_messages_request``), so a long conversation's next turn reads its
        prefix from the cache.
    """

    __slots__ = (
        "_anthropic_version",
        "_max_output_tokens",
        "_prompt_caching",
        "_temperature",
        "_thinking",
        "_thinking_budget",
    )

    _MODEL_EXAMPLE = "claude-sonnet-4-5"
    _API = "anthropic-messages"

    def __init__(
        self,
        model: str,
        *,
        base_url: str = "https://api.anthropic.com",
        api_key: str | None = None,
        api_key_env: str | None = "ANTHROPIC_API_KEY",
        max_output_tokens: int = 4096,
        temperature: float | None = None,
        thinking: ThinkingLevel | None = None,
        thinking_budget: int | None = None,
        anthropic_version: str = ANTHROPIC_VERSION,
        retry: RetryPolicy = _DEFAULT_RETRY,
        timeouts: Timeouts = _DEFAULT_TIMEOUTS,
        headers: Mapping[str, str] | None = None,
        http_client: httpx2.AsyncClient | None = None,
        prompt_caching: bool = True,
    ) -> None:
        api_key = checked_key(model, base_url, api_key, api_key_env, self._MODEL_EXAMPLE)
        if type(max_output_tokens) is not int or max_output_tokens < 1:
            raise TypeError("max_output_tokens must be a positive int")
        if thinking_budget is not None and (
            type(thinking_budget) is not int or not 1024 <= thinking_budget < max_output_tokens
        ):
            raise TypeError(
                "thinking_budget must be an int of at least 1024 and below max_output_tokens"
            )
        if thinking is not None and thinking_budget is not None:
            raise TypeError("pass thinking (a level) or thinking_budget (tokens), not both")
        if type(anthropic_version) is not str or not anthropic_version:
            raise TypeError("anthropic_version must be a non-empty string")
        if type(prompt_caching) is not bool:
            raise TypeError("prompt_caching must be a bool")
        super().__init__(
            model, base_url, api_key, api_key_env, retry, timeouts, http_client, headers
        )
        self._max_output_tokens = max_output_tokens
        self._temperature = temperature
        self._thinking_budget = thinking_budget
        self._thinking: ThinkingChoice | None = None
        self._choose_thinking(thinking)
        self._anthropic_version = anthropic_version
        self._prompt_caching = prompt_caching

    def _thinking_levels(self) -> tuple[ThinkingLevel, ...]:
        return anthropic_levels(self._model)

    def _choose_thinking(self, level: ThinkingLevel | None) -> None:
        super()._choose_thinking(level)
        choice = self._thinking
        if choice is not None and choice.level != "off" and self._temperature not in (None, 1):
            raise TypeError("thinking cannot be combined with a temperature (the API requires 1)")

    def _models_url(self, after: str | None) -> str:
        from urllib.parse import quote

        url = f"{self._base_url}/v1/models?limit=1000"
        return url if after is None else f"{url}&after_id={quote(after, safe='')}"

    def _url(self) -> str:
        return f"{self._base_url}/v1/messages"

    def _headers(self) -> Mapping[str, str]:
        headers = {
            "content-type": "application/json",
            "accept": "text/event-stream",
            "anthropic-version": self._anthropic_version,
            **self._extra_headers,
        }
        if self._api_key:
            headers["x-api-key"] = self._api_key
        return headers

    def _body(self, request: ModelRequest) -> object:
        max_tokens, budget = self._max_output_tokens, self._thinking_budget
        if self._thinking is not None:
            mapped = anthropic_thinking(
                self._thinking.level, model=self._model, max_output_tokens=max_tokens
            )
            max_tokens, budget = mapped.max_tokens, mapped.budget_tokens
        return build_messages_request(
            request,
            model=self._model,
            max_output_tokens=max_tokens,
            temperature=self._temperature,
            thinking_budget=budget,
            cache=self._prompt_caching,
        )

    def _parser(self, request: ModelRequest, reserved: frozenset[str]) -> StreamParser:
        return AnthropicStreamParser(request.id, reserved_call_ids=reserved)

    def _ended(self, parser: StreamParser) -> bool:
        return isinstance(parser, AnthropicStreamParser) and parser.stopped
