"""Model specs (``PROVIDER/MODEL``) and the presets of the servers tether knows.

A preset is where a server lives (its documented base URL), which environment variable holds
its API key (``None`` for local servers, which need none), the wire API it speaks and, for
OpenAI-compatible servers, its quirks as an ``OpenAIChatCompat`` (docs/providers.md); the
presets and the model classes come from ``tether.providers.registry``. ``parse_model_spec``
turns the ``--model`` value of the command line into a preset and the vendor's model name:
``"openai/gpt-4o-mini"`` is the ``openai`` preset and ``"gpt-4o-mini"``; everything after the
first ``/`` is the model, so ``"openrouter/anthropic/claude-sonnet-4.5"`` works too.

Pure data: no I/O, and nothing here reads the environment.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from tether._base.exact_types import type_of
from tether._base.strings import is_non_empty
from tether.providers.registry import PRESET_VIEW, REGISTRY, ProviderApi, ProviderPreset

if TYPE_CHECKING:
    from tether.providers.registry import ProviderModel

__all__ = ["PRESETS", "ProviderApi", "ProviderPreset", "model_from_spec", "parse_model_spec"]

PRESETS: Final[Mapping[str, ProviderPreset]] = PRESET_VIEW
"""Every preset by name (read-only): the presets of every API in
``tether.providers.registry.REGISTRY``, in registration order."""


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


def model_from_spec(spec: str, **options: Any) -> ProviderModel:
    """The ``Model`` for ``"PROVIDER/MODEL"``, of the class of the preset's API (an
    ``AnthropicModel`` for ``anthropic/...``, an ``OpenAIChatModel`` for every
    OpenAI-compatible preset), configured from the preset (base URL, key variable, quirks).
    ``options`` are the model's keyword arguments and win over the preset:
    ``model_from_spec("ollama/qwen3", base_url="http://gpu-box:11434/v1")``.
    """
    preset, model = parse_model_spec(spec)
    options.setdefault("base_url", preset.base_url)
    options.setdefault("api_key_env", preset.api_key_env)
    return REGISTRY.api(preset.api).build(model, preset, options)
