"""The models a server offers: one page of ``GET /models`` parsed into model IDs.

OpenAI, Anthropic and most OpenAI-compatible servers (Ollama, vLLM, llama.cpp, LM Studio,
OpenRouter, Groq, ...) answer ``GET {base}/models`` (Anthropic: ``/v1/models``) with
``{"data": [{"id": "...", ...}, ...]}``; Anthropic pages with ``has_more`` and ``last_id``.
Google's Gemini API answers ``GET {base}/v1beta/models`` with ``{"models": [{"name":
"models/gemini-2.5-flash", ...}], "nextPageToken": "..."}``: the IDs are the names without
``models/``, the cursor is ``nextPageToken``.
The body is vendor data: unknown fields are ignored, but what is read must have its
documented type, and the list is bounded, so a hostile server cannot make the caller hold
an unbounded list (``PROVIDER_PROTOCOL_ERROR`` otherwise).
"""

from __future__ import annotations

from typing import Final, cast

from tether._base.exact_types import type_of
from tether.providers.errors import ProviderError

__all__ = ["MAX_LISTED_MODELS", "MAX_MODEL_ID_LENGTH", "MAX_MODEL_PAGES", "parse_model_page"]

MAX_LISTED_MODELS: Final = 10_000
"""Most model IDs one listing returns (over all its pages)."""
MAX_MODEL_ID_LENGTH: Final = 512
"""Longest model ID accepted."""
MAX_MODEL_PAGES: Final = 20
"""Most pages one listing follows."""


def _bad(what: str) -> ProviderError:
    return ProviderError("PROVIDER_PROTOCOL_ERROR", f"The model list {what}")


def _object(value: object) -> dict[str, object] | None:
    """``value`` when it is a decoded JSON object (exactly a ``dict``), else ``None``."""
    return cast("dict[str, object]", value) if type_of(value) is dict else None


def parse_model_page(body: object) -> tuple[tuple[str, ...], str | None]:
    """The model IDs of one decoded page, in the server's order, and the cursor of the next
    page (``None`` when this is the last one)."""
    page = _object(body)
    if page is None:
        raise _bad("is not a JSON object")
    if "data" not in page and type_of(page.get("models")) is list:
        return _google_page(page)
    data = page.get("data")
    if type_of(data) is not list:
        raise _bad("has no 'data' array")
    ids = _ids(cast("list[object]", data), "id", "")
    if page.get("has_more") is not True:
        return ids, None
    last = page.get("last_id")
    if not isinstance(last, str) or not last:
        raise _bad("says it has more but names no 'last_id'")
    return ids, last


def _google_page(page: dict[str, object]) -> tuple[tuple[str, ...], str | None]:
    """A page of Google's ``{"models": [{"name": "models/..."}], "nextPageToken"}``."""
    ids = _ids(cast("list[object]", page["models"]), "name", "models/")
    token = page.get("nextPageToken")
    if token is None or token == "":
        return ids, None
    if not isinstance(token, str):
        raise _bad("has a 'nextPageToken' that is not a string")
    return ids, token


def _ids(entries: list[object], field: str, prefix: str) -> tuple[str, ...]:
    """Each entry's ``field`` (without ``prefix``), bounded in count and length."""
    if len(entries) > MAX_LISTED_MODELS:
        raise _bad(f"holds more than {MAX_LISTED_MODELS} models")
    ids: list[str] = []
    for entry in entries:
        model = _object(entry)
        if model is None:
            raise _bad("holds an entry that is not an object")
        value = model.get(field)
        ident = value.removeprefix(prefix) if isinstance(value, str) else ""
        if not 0 < len(ident) <= MAX_MODEL_ID_LENGTH:
            raise _bad(f"holds a model whose {field} is not a string of 1 to {MAX_MODEL_ID_LENGTH}")
        ids.append(ident)
    return tuple(ids)
