"""Model specs (``PROVIDER/MODEL``) and the presets of the OpenAI-compatible servers tether knows.

A preset is where a server lives (its documented base URL), which environment variable holds
its API key (``None`` for local servers, which need none) and its quirks as an
``OpenAIChatCompat`` (docs/providers.md). ``parse_model_spec`` turns the
``--model`` value of the command line into a preset and the vendor's model name:
``"openai/gpt-4o-mini"`` is the ``openai`` preset and ``"gpt-4o-mini"``; everything after the
first ``/`` is the model, so ``"openrouter/anthropic/claude-sonnet-4.5"`` works too.

Pure data: no I/O, and nothing here reads the environment.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias

from tether._text import is_non_empty
from tether._types import type_of
from tether.providers.openai_wire import OpenAIChatCompat

if TYPE_CHECKING:
    from tether.providers.anthropic import AnthropicModel
    from tether.providers.openai_chat import OpenAIChatModel

__all__ = ["PRESETS", "ProviderApi", "ProviderPreset", "model_from_spec", "parse_model_spec"]

ProviderApi: TypeAlias = Literal["openai-chat", "anthropic-messages"]
"""The wire API a provider speaks, which picks the ``Model`` class for it."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ProviderPreset:
    """One server: ``name`` (the ``PROVIDER`` of a model spec), ``base_url`` (without the
    ``/chat/completions`` or ``/v1/messages`` path), ``api_key_env`` (the environment variable
    holding the key; ``None`` when the server needs none), the ``api`` it speaks and, for
    OpenAI-compatible servers, its ``compat`` quirks."""

    name: str
    base_url: str
    api_key_env: str | None
    compat: OpenAIChatCompat = field(default_factory=OpenAIChatCompat)
    api: ProviderApi = "openai-chat"

    def __post_init__(self) -> None:
        if not is_non_empty(self.name) or "/" in self.name:
            raise ValueError("ProviderPreset.name must be a non-empty name without '/'")
        if type_of(self.base_url) is not str or not self.base_url.startswith(
            ("http://", "https://")
        ):
            raise ValueError("ProviderPreset.base_url must be an http:// or https:// URL")
        if self.api_key_env is not None and not is_non_empty(self.api_key_env):
            raise ValueError("ProviderPreset.api_key_env must be a variable name or None")
        if type_of(self.compat) is not OpenAIChatCompat:
            raise TypeError("ProviderPreset.compat must be an OpenAIChatCompat")
        if self.api not in ("openai-chat", "anthropic-messages"):
            raise ValueError("ProviderPreset.api must be 'openai-chat' or 'anthropic-messages'")


def _presets(*presets: ProviderPreset) -> Mapping[str, ProviderPreset]:
    return MappingProxyType({preset.name: preset for preset in presets})


PRESETS: Final[Mapping[str, ProviderPreset]] = _presets(
    # Anthropic's own Messages API (AnthropicModel); the key goes in `x-api-key`.
    ProviderPreset(
        name="anthropic",
        base_url="https://api.anthropic.com",
        api_key_env="ANTHROPIC_API_KEY",
        api="anthropic-messages",
    ),
    # OpenAI itself: the defaults are its behaviour.
    ProviderPreset(
        name="openai",
        base_url="https://api.openai.com/v1",
        api_key_env="OPENAI_API_KEY",
    ),
    # `reasoning` (+ `reasoning_details` with the same text, ignored); `max_tokens` is the
    # documented limit field across its routes.
    ProviderPreset(
        name="openrouter",
        base_url="https://openrouter.ai/api/v1",
        api_key_env="OPENROUTER_API_KEY",
        compat=OpenAIChatCompat(
            max_tokens_field="max_tokens",
            reasoning_fields=("reasoning",),
            invalid_arguments="empty",
        ),
    ),
    # Usage comes without asking (top level and in `x_groq`); Groq rejected `stream_options`
    # with 400 before, so none is sent. Reasoning in `delta.reasoning`.
    ProviderPreset(
        name="groq",
        base_url="https://api.groq.com/openai/v1",
        api_key_env="GROQ_API_KEY",
        compat=OpenAIChatCompat(send_stream_options=False, reasoning_fields=("reasoning",)),
    ),
    # `reasoning_content`; usage on the finish chunk with `prompt_cache_hit_tokens`.
    ProviderPreset(
        name="deepseek",
        base_url="https://api.deepseek.com",
        api_key_env="DEEPSEEK_API_KEY",
        compat=OpenAIChatCompat(
            max_tokens_field="max_tokens", reasoning_fields=("reasoning_content",)
        ),
    ),
    # `stream_options` is a 422 ("Extra inputs are not permitted"); usage comes anyway.
    ProviderPreset(
        name="mistral",
        base_url="https://api.mistral.ai/v1",
        api_key_env="MISTRAL_API_KEY",
        compat=OpenAIChatCompat(send_stream_options=False, max_tokens_field="max_tokens"),
    ),
    # Local servers: no key; they know `max_tokens`. They re-parse the arguments of earlier
    # tool calls to render their chat templates, so an invalid call goes back as `{}`.
    ProviderPreset(
        name="ollama",
        base_url="http://localhost:11434/v1",
        api_key_env=None,
        compat=OpenAIChatCompat(max_tokens_field="max_tokens", invalid_arguments="empty"),
    ),
    # vLLM moved reasoning to `reasoning` (Nov 2025); older versions send `reasoning_content`.
    ProviderPreset(
        name="vllm",
        base_url="http://localhost:8000/v1",
        api_key_env=None,
        compat=OpenAIChatCompat(
            max_tokens_field="max_tokens",
            reasoning_fields=("reasoning", "reasoning_content"),
            invalid_arguments="empty",
        ),
    ),
    # llama.cpp's `llama-server` (tool calls and reasoning need `--jinja`).
    ProviderPreset(
        name="llamacpp",
        base_url="http://localhost:8080/v1",
        api_key_env=None,
        compat=OpenAIChatCompat(max_tokens_field="max_tokens", invalid_arguments="empty"),
    ),
    ProviderPreset(
        name="lmstudio",
        base_url="http://localhost:1234/v1",
        api_key_env=None,
        compat=OpenAIChatCompat(max_tokens_field="max_tokens", invalid_arguments="empty"),
    ),
)
"""Every preset by name (read-only)."""


def parse_model_spec(spec: str) -> tuple[ProviderPreset, str]:
    """``"PROVIDER/MODEL"`` as its preset and the vendor's model name.

    The provider is everything before the first ``/``; the model is the rest, kept exactly
    (it may hold more ``/``). ``TypeError`` unless ``spec`` is a ``str``; ``ValueError`` for a
    spec without both parts, or an unknown provider (the message lists the known ones).
    """
    if type_of(spec) is not str:
        raise TypeError(f"model spec must be a str, not {type_of(spec).__name__}")
    provider, slash, model = spec.partition("/")
    known = ", ".join(sorted(PRESETS))
    if not slash or not provider or not is_non_empty(model):
        raise ValueError(
            f"model spec must be PROVIDER/MODEL, e.g. openai/gpt-4o-mini (got {spec!r}); "
            f"known providers: {known}"
        )
    preset = PRESETS.get(provider)
    if preset is None:
        raise ValueError(f"unknown provider {provider!r} in model spec; known providers: {known}")
    return preset, model


def model_from_spec(spec: str, **options: Any) -> OpenAIChatModel | AnthropicModel:
    """The ``Model`` for ``"PROVIDER/MODEL"``: an ``AnthropicModel`` for ``anthropic/...``,
    an ``OpenAIChatModel`` for every OpenAI-compatible preset, configured from the preset
    (base URL, key variable, quirks). ``options`` are the model's keyword arguments and win
    over the preset: ``model_from_spec("ollama/qwen3", base_url="http://gpu-box:11434/v1")``.
    """
    preset, model = parse_model_spec(spec)
    options.setdefault("base_url", preset.base_url)
    options.setdefault("api_key_env", preset.api_key_env)
    if preset.api == "anthropic-messages":
        from tether.providers.anthropic import AnthropicModel

        return AnthropicModel(model, **options)
    from tether.providers.openai_chat import OpenAIChatModel

    options.setdefault("compat", preset.compat)
    return OpenAIChatModel(model, **options)
