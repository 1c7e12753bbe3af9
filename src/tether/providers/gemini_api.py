"""The ``gemini`` wire API (Google's native Gemini API): its registry entry and its catalog
preset. Pure data: ``GeminiModel`` (and httpx2) load when a model is built.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from tether.providers.registry import ApiSpec, ProviderPreset

if TYPE_CHECKING:
    from tether.providers.gemini import GeminiModel

__all__ = ["API_SPEC"]


def _model_class() -> Callable[..., GeminiModel]:
    from tether.providers.gemini import GeminiModel

    return GeminiModel


API_SPEC: Final = ApiSpec(
    name="gemini",
    summary="Google Gemini API (native: streamGenerateContent)",
    load_model=_model_class,
    base_url_example="https://generativelanguage.googleapis.com",
    presets=(
        # Google AI Studio's Gemini API; the key goes in `x-goog-api-key`, never in the URL.
        ProviderPreset(
            name="google",
            base_url="https://generativelanguage.googleapis.com",
            api_key_env="GEMINI_API_KEY",
            api="gemini",
        ),
    ),
)
"""Gemini: ``GeminiModel``; the base URL has no version (the model adds
``/v1beta/models/{model}:streamGenerateContent?alt=sse``)."""
