"""The ``openai-chat`` wire API (OpenAI Chat Completions and the servers that speak it): its
registry entry and its catalog presets, each with its quirks as an ``OpenAIChatCompat``
(docs/providers.md). Pure data: ``OpenAIChatModel`` (and httpx2) load when a model is built.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
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


_OTHER_SERVER: Final = OpenAIChatCompat(send_prompt_cache_key=False)
"""A server other than OpenAI: ``prompt_cache_key`` is OpenAI's own field, never sent to it."""

_LOCAL_SERVER: Final = replace(
    _OTHER_SERVER, max_tokens_field="max_tokens", invalid_arguments="empty"
)
"""Local servers: no key; they know ``max_tokens``. They re-parse the arguments of earlier tool
calls to render their chat templates, so an invalid call goes back as ``{}``."""

_PRESETS: Final[tuple[tuple[str, str, str | None, OpenAIChatCompat], ...]] = (
    # (name, base URL, key variable, quirks)
    # OpenAI itself: the defaults are its behaviour.
    ("openai", "https://api.openai.com/v1", "OPENAI_API_KEY", OpenAIChatCompat()),
    # `reasoning` (+ `reasoning_details` with the same text, ignored); `max_tokens` is the
    # documented limit field across its routes.
    (
        "openrouter",
        "https://openrouter.ai/api/v1",
        "OPENROUTER_API_KEY",
        replace(_LOCAL_SERVER, reasoning_fields=("reasoning",)),
    ),
    # Usage comes without asking (top level and in `x_groq`); Groq rejected `stream_options`
    # with 400 before, so none is sent. Reasoning in `delta.reasoning`.
    (
        "groq",
        "https://api.groq.com/openai/v1",
        "GROQ_API_KEY",
        replace(_OTHER_SERVER, send_stream_options=False, reasoning_fields=("reasoning",)),
    ),
    # `reasoning_content`; usage on the finish chunk with `prompt_cache_hit_tokens`.
    (
        "deepseek",
        "https://api.deepseek.com",
        "DEEPSEEK_API_KEY",
        replace(
            _OTHER_SERVER, max_tokens_field="max_tokens", reasoning_fields=("reasoning_content",)
        ),
    ),
    # `stream_options` is a 422 ("Extra inputs are not permitted"); usage comes anyway.
    (
        "mistral",
        "https://api.mistral.ai/v1",
        "MISTRAL_API_KEY",
        replace(_OTHER_SERVER, send_stream_options=False, max_tokens_field="max_tokens"),
    ),
    ("ollama", "http://localhost:11434/v1", None, _LOCAL_SERVER),
    # vLLM moved reasoning to `reasoning` (Nov 2025); older versions send `reasoning_content`.
    (
        "vllm",
        "http://localhost:8000/v1",
        None,
        replace(_LOCAL_SERVER, reasoning_fields=("reasoning", "reasoning_content")),
    ),
    # llama.cpp's `llama-server` (tool calls and reasoning need `--jinja`).
    ("llamacpp", "http://localhost:8080/v1", None, _LOCAL_SERVER),
    ("lmstudio", "http://localhost:1234/v1", None, _LOCAL_SERVER),
)
"""The catalog's servers speaking this API, one row each, in the catalog's order."""

API_SPEC: Final = ApiSpec(
    name="openai-chat",
    summary="OpenAI Chat Completions (and every compatible server)",
    load_model=_model_class,
    base_url_example="http://localhost:8000/v1",
    preset_options=_options,
    cache_key_option="prompt_cache_key",
    presets=tuple(
        ProviderPreset(name=name, base_url=base_url, api_key_env=key_env, compat=compat)
        for name, base_url, key_env, compat in _PRESETS
    ),
)
"""OpenAI Chat Completions: ``OpenAIChatModel``; the base URL ends in ``/v1`` (the model
adds ``/chat/completions``)."""
