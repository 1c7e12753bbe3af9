"""The ``anthropic-messages`` wire API (Anthropic Messages): its registry entry and its catalog
preset. Pure data: ``AnthropicModel`` (and httpx2) load when a model is built.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from tether.providers.registry import ApiSpec, ProviderPreset

if TYPE_CHECKING:
    from tether.providers.anthropic import AnthropicModel

__all__ = ["API_SPEC"]


def _model_class() -> Callable[..., AnthropicModel]:
    from tether.providers.anthropic import AnthropicModel

    return AnthropicModel


API_SPEC: Final = ApiSpec(
    name="anthropic-messages",
    summary="Anthropic Messages",
    load_model=_model_class,
    base_url_example="https://api.anthropic.com",
    presets=(
        # Anthropic's own Messages API; the key goes in `x-api-key`.
        ProviderPreset(
            name="anthropic",
            base_url="https://api.anthropic.com",
            api_key_env="ANTHROPIC_API_KEY",
            api="anthropic-messages",
        ),
    ),
)
"""Anthropic Messages: ``AnthropicModel``; the base URL has no ``/v1`` (the model adds
``/v1/messages``)."""
