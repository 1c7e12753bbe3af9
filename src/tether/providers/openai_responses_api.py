"""The ``openai-responses`` wire API (the OpenAI Responses API): its registry entry and its
catalog preset. Pure data: ``OpenAIResponsesModel`` (and httpx2) load when a model is built.

``openai/MODEL`` stays on Chat Completions (every OpenAI-compatible server speaks it);
``openai-responses/MODEL`` is OpenAI's own Responses API, which the models that exist only
there (``*-pro``, ``*codex*``) need, and which keeps a reasoning model's encrypted reasoning
across turns (docs/providers.md, "OpenAI Responses").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from tether.providers.registry import ApiSpec, ProviderPreset

if TYPE_CHECKING:
    from tether.providers.openai_responses import OpenAIResponsesModel

__all__ = ["API_SPEC"]


def _model_class() -> Callable[..., OpenAIResponsesModel]:
    from tether.providers.openai_responses import OpenAIResponsesModel

    return OpenAIResponsesModel


API_SPEC: Final = ApiSpec(
    name="openai-responses",
    summary="OpenAI Responses",
    load_model=_model_class,
    base_url_example="https://api.openai.com/v1",
    presets=(
        # OpenAI's Responses API, stateless (store: false); the key goes in `Authorization`.
        ProviderPreset(
            name="openai-responses",
            base_url="https://api.openai.com/v1",
            api_key_env="OPENAI_API_KEY",
            api="openai-responses",
        ),
    ),
)
"""The OpenAI Responses API: ``OpenAIResponsesModel``; the base URL has ``/v1`` (the model
adds ``/responses``)."""
