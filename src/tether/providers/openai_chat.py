"""``OpenAIChatModel``: a ``Model`` for the OpenAI Chat Completions API and the many servers
that speak it (OpenRouter, Groq, DeepSeek, Mistral, Ollama, vLLM, llama.cpp, LM Studio).

One ``stream(request, signal)`` call is one HTTP request, handled by the shared
``_streaming.HttpStreamModel`` (retries before anything streamed, SSE decoding, gzip/deflate
bodies decoded, redirects refused as ``PROVIDER_REDIRECTED``, the idle timeout measured between
events): the request is converted by ``openai_wire.build_chat_request`` and the events are
normalized by ``openai_chat_stream.OpenAIChatStreamParser``; a JSON body answered to the
streaming request (some servers do this with tools) is parsed whole
(``openai_chat_body.parse_chat_completion``). Every failure is a
``ProviderError``.

The stream closes its HTTP response when its consumer goes away: an abort, ``aclose()`` of its
iterator, or dropping the stream before its end (no reference left); it settles only once the
response is closed. After ``[DONE]`` the rest of the body is drained briefly so the
connection is reused.

The API key is sent only in the ``Authorization`` header: it never appears in ``repr``, in an
error, in an event or in JSON output, and it never follows a redirect. The model owns one
pooled HTTP client; close it with ``await model.aclose()`` (or ``async with
OpenAIChatModel(...) as model``); one never closed is closed when its event loop shuts down
(``asyncio.run``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from tether._base.exact_types import instance_of
from tether.providers._http import RetryPolicy, Timeouts
from tether.providers._openai_model import OpenAIModel, check_max_output_tokens
from tether.providers._streaming import (
    HttpStreamModel,
    StreamParser,
    checked_key,
)
from tether.providers.openai_compat import OpenAIChatCompat
from tether.providers.thinking import ThinkingLevel

if TYPE_CHECKING:
    import httpx2

    from tether.protocol import ModelChunk, ModelRequest, ModelResponse

__all__ = ["OpenAIChatCompat", "OpenAIChatModel", "RetryPolicy", "Timeouts"]

_DEFAULT_COMPAT: Final = OpenAIChatCompat()
_DEFAULT_RETRY: Final = RetryPolicy()
_DEFAULT_TIMEOUTS: Final = Timeouts()


class OpenAIChatModel(OpenAIModel, HttpStreamModel):
    """A ``Model`` speaking OpenAI Chat Completions over HTTP (see the module docstring).

    ``api_key`` defaults to the ``api_key_env`` environment variable (none is sent when
    neither is set, as local servers expect). ``compat`` holds the server's quirks
    (``tether.providers.catalog`` has presets); ``headers`` are extra request headers;
    ``http_client`` is an ``httpx2.AsyncClient`` you own (else the model creates one).
    ``thinking`` is a ``ThinkingLevel`` sent as ``reasoning_effort``
    (``tether.providers.thinking``: clamped to what the model takes, e.g. gpt-5 has no
    ``"off"``, see ``thinking_choice``); ``reasoning_effort`` is the precise form, sent as
    given.
    ``prompt_cache_key`` is sent with every request (when ``compat.send_prompt_cache_key``):
    a stable key per conversation (the coding session gives one) so OpenAI routes its
    requests to the same prompt cache; it must not hold a secret.
    """

    __slots__ = (
        "_compat",
        "_max_output_tokens",
        "_prompt_cache_key",
        "_reasoning_effort",
        "_temperature",
        "_thinking",
    )

    _MODEL_EXAMPLE = "gpt-4o-mini"
    _API = "openai-chat"

    def __init__(
        self,
        model: str,
        *,
        base_url: str = "https://api.openai.com/v1",
        api_key: str | None = None,
        api_key_env: str | None = "OPENAI_API_KEY",
        max_output_tokens: int | None = None,
        temperature: float | None = None,
        thinking: ThinkingLevel | None = None,
        reasoning_effort: str | None = None,
        compat: OpenAIChatCompat = _DEFAULT_COMPAT,
        retry: RetryPolicy = _DEFAULT_RETRY,
        timeouts: Timeouts = _DEFAULT_TIMEOUTS,
        headers: Mapping[str, str] | None = None,
        http_client: httpx2.AsyncClient | None = None,
        prompt_cache_key: str | None = None,
    ) -> None:
        api_key = checked_key(model, base_url, api_key, api_key_env, self._MODEL_EXAMPLE)
        check_max_output_tokens(max_output_tokens)
        if not instance_of(compat, OpenAIChatCompat):
            raise TypeError("compat must be an OpenAIChatCompat")
        if prompt_cache_key is not None and (
            type(prompt_cache_key) is not str or not prompt_cache_key.strip()
        ):
            raise TypeError("prompt_cache_key must be a non-empty string or None")
        super().__init__(
            model, base_url, api_key, api_key_env, retry, timeouts, http_client, headers
        )
        self._max_output_tokens = max_output_tokens
        self._temperature = temperature
        self._compat = compat
        self._prompt_cache_key = prompt_cache_key
        self._choose_reasoning(thinking, reasoning_effort)

    @classmethod
    def from_spec(cls, spec: str, **options: Any) -> OpenAIChatModel:
        """A model from ``"PROVIDER/MODEL"`` using the catalog's preset for PROVIDER (base
        URL, key variable, quirks): ``OpenAIChatModel.from_spec("groq/llama-3.3-70b")``.
        ``options`` are the constructor's keyword arguments and win over the preset."""
        # The catalog loads here, not with the module: a model built from its arguments
        # never needs it (issue 30: importing the usable API).
        from tether.providers.catalog import parse_model_spec
        from tether.providers.openai_chat_api import API_SPEC

        preset, model = parse_model_spec(spec)
        if preset.api != API_SPEC.name:
            raise ValueError(
                f"{preset.name!r} does not speak OpenAI Chat Completions; use "
                "tether.model_from_spec (or AnthropicModel) for it"
            )
        options.setdefault("base_url", preset.base_url)
        options.setdefault("api_key_env", preset.api_key_env)
        options.setdefault("compat", preset.compat)
        return cls(model, **options)

    def _url(self) -> str:
        return f"{self._base_url}/chat/completions"

    # The request builder and both parsers load with the first request, not with the module
    # (issue 30: importing the usable API builds a model at most; five modules wait).

    def _body(self, request: ModelRequest) -> object:
        from tether.providers.openai_wire import build_chat_request

        return build_chat_request(
            request,
            model=self._model,
            compat=self._compat,
            max_output_tokens=self._max_output_tokens,
            temperature=self._temperature,
            reasoning_effort=self._effort(),
            prompt_cache_key=self._prompt_cache_key,
        )

    def _parser(self, request: ModelRequest, reserved: frozenset[str]) -> StreamParser:
        from tether.providers.openai_chat_stream import OpenAIChatStreamParser

        return OpenAIChatStreamParser(request.id, compat=self._compat, reserved_call_ids=reserved)

    def _parse_whole(
        self, body: object, request: ModelRequest, reserved: frozenset[str]
    ) -> tuple[list[ModelChunk], ModelResponse]:
        from tether.providers.openai_chat_body import parse_chat_completion

        return parse_chat_completion(
            body, request.id, compat=self._compat, reserved_call_ids=reserved
        )

    def _ends(self, data: str, parser: StreamParser) -> bool:
        return data.startswith("[DONE]")
