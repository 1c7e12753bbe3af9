"""The ``openai-chat`` wire API (OpenAI Chat Completions and the servers that speak it): its
registry entry and its catalog presets, each with its quirks as an ``OpenAIChatCompat``
(docs/providers.md). Pure data: ``OpenAIChatModel`` (and httpx2) load when a model is built.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Final

from tether.providers.openai_compat import OpenAIChatCompat
from tether.providers.registry import ApiSpec, ProviderPreset

if TYPE_CHECKING:
    from tether.providers.openai_chat import OpenAIChatModel

__all__ = ["API_SPEC", "CONFIG_SERVER_COMPAT"]

CONFIG_SERVER_COMPAT: Final = OpenAIChatCompat(
    max_tokens_field="max_tokens", invalid_arguments="empty", send_prompt_cache_key=False
)
"""The quirks assumed for a ``[providers.NAME]`` server of the config file: most compatible
servers know ``max_tokens`` only, and many re-parse earlier calls' arguments (so an invalid
call goes back as ``{}``); ``prompt_cache_key`` is OpenAI's own field, never sent to them."""


def _model_class() -> Callable[..., OpenAIChatModel]:
    from tether.providers.openai_chat import OpenAIChatModel

    return OpenAIChatModel


def _options(preset: ProviderPreset | None) -> Mapping[str, object]:
    return {"compat": CONFIG_SERVER_COMPAT if preset is None else preset.compat}


API_SPEC: Final = ApiSpec(
    name="openai-chat",
    summary="OpenAI Chat Completions (and every compatible server)",
    load_model=_model_class,
    base_url_example="http://localhost:8000/v1",
    preset_options=_options,
    cache_key_option="prompt_cache_key",
    presets=(
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
                send_prompt_cache_key=False,
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
            compat=OpenAIChatCompat(
                send_prompt_cache_key=False,
                send_stream_options=False,
                reasoning_fields=("reasoning",),
            ),
        ),
        # `reasoning_content`; usage on the finish chunk with `prompt_cache_hit_tokens`.
        ProviderPreset(
            name="deepseek",
            base_url="https://api.deepseek.com",
            api_key_env="DEEPSEEK_API_KEY",
            compat=OpenAIChatCompat(
                send_prompt_cache_key=False,
                max_tokens_field="max_tokens",
                reasoning_fields=("reasoning_content",),
            ),
        ),
        # `stream_options` is a 422 ("Extra inputs are not permitted"); usage comes anyway.
        ProviderPreset(
            name="mistral",
            base_url="https://api.mistral.ai/v1",
            api_key_env="MISTRAL_API_KEY",
            compat=OpenAIChatCompat(
                send_prompt_cache_key=False,
                send_stream_options=False,
                max_tokens_field="max_tokens",
            ),
        ),
        # Local servers: no key; they know `max_tokens`. They re-parse the arguments of earlier
        # tool calls to render their chat templates, so an invalid call goes back as `{}`.
        ProviderPreset(
            name="ollama",
            base_url="http://localhost:11434/v1",
            api_key_env=None,
            compat=OpenAIChatCompat(
                send_prompt_cache_key=False,
                max_tokens_field="max_tokens",
                invalid_arguments="empty",
            ),
        ),
        # vLLM moved reasoning to `reasoning` (Nov 2025); older versions send `reasoning_content`.
        ProviderPreset(
            name="vllm",
            base_url="http://localhost:8000/v1",
            api_key_env=None,
            compat=OpenAIChatCompat(
                send_prompt_cache_key=False,
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
            compat=OpenAIChatCompat(
                send_prompt_cache_key=False,
                max_tokens_field="max_tokens",
                invalid_arguments="empty",
            ),
        ),
        ProviderPreset(
            name="lmstudio",
            base_url="http://localhost:1234/v1",
            api_key_env=None,
            compat=OpenAIChatCompat(
                send_prompt_cache_key=False,
                max_tokens_field="max_tokens",
                invalid_arguments="empty",
            ),
        ),
    ),
)
"""OpenAI Chat Completions: ``OpenAIChatModel``; the base URL ends in ``/v1`` (the model
adds ``/chat/completions``)."""
