"""Images at the provider boundary: the per-request checks and the encodings the APIs share.

``check_request_images`` runs before a request is built (so before any network call):

* more than ``MAX_IMAGES_PER_REQUEST`` images in the request's messages is
  ``PROVIDER_TOO_MANY_IMAGES``;
* a model that tether's catalog (``tether.providers.model_catalog``) knows and marks as not
  reading images refuses a request with any image: ``MODEL_CANNOT_SEE_IMAGES``, with a hint. A
  model the catalog does not know (a local server's, a new one) gets the images: its server
  says whether it reads them.

The catalog is keyed by ``PROVIDER/MODEL``; a model finds its provider through the preset
whose base URL and API it has (``catalog_spec``): a model built for a server of its own has
no catalog entry.

The order of parts, the same for every API: a user message's images come before its text
(Anthropic's advice: "Claude works best when images come before text"); a tool result's text
comes before its images.
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Final

from tether.providers.errors import ProviderError

if TYPE_CHECKING:
    from tether.protocol import ImageBlock, ModelRequest, ToolResultMessage

__all__ = [
    "TOOL_IMAGES_NOTE",
    "base64_text",
    "catalog_spec",
    "check_request_images",
    "data_url",
    "tool_images_note",
]

TOOL_IMAGES_NOTE: Final = "Attached image(s) from tool result"
"""How the text that introduces a tool result's images begins, where an API cannot put
images in a tool result (OpenAI Chat Completions; Gemini before 3)."""


def tool_images_note(result: ToolResultMessage) -> str:
    """The text before a tool result's images sent outside it: which result they belong to."""
    return f"{TOOL_IMAGES_NOTE} {result.tool_call_id} ({result.tool_name}):"


def base64_text(image: ImageBlock) -> str:
    """The image's bytes as standard base64 text (what every API's JSON carries)."""
    return base64.b64encode(image.data).decode("ascii")


def data_url(image: ImageBlock) -> str:
    """``data:<media type>;base64,<data>``: the form OpenAI's APIs take an inline image in."""
    return f"data:{image.media_type};base64,{base64_text(image)}"


def image_count(request: ModelRequest) -> int:
    """How many images the request's messages carry."""
    return sum(len(message.images) for message in request.messages if message.role != "assistant")


def catalog_spec(base_url: str, api: str | None, model: str) -> str | None:
    """``PRESET/model`` for the catalog preset whose base URL and API these are, or ``None``."""
    from tether.providers.registry import REGISTRY  # the registry imports the model classes

    wanted = base_url.rstrip("/")
    for preset in REGISTRY.presets().values():
        if preset.api == api and preset.base_url.rstrip("/") == wanted:
            return f"{preset.name}/{model}"
    return None


def check_request_images(request: ModelRequest, base_url: str, api: str | None, model: str) -> None:
    """Refuse what the request's images cannot be sent as (see the module docstring), for
    ``model`` of the server at ``base_url`` speaking ``api`` (an ``ApiSpec`` name)."""
    count = image_count(request)
    if count == 0:
        return
    # Here, not at import: a model's module does not load the protocol (issue 30); a request
    # that carries images has loaded it.
    from tether.protocol import MAX_IMAGES_PER_REQUEST

    if count > MAX_IMAGES_PER_REQUEST:
        raise ProviderError(
            "PROVIDER_TOO_MANY_IMAGES",
            f"The request carries {count} images; at most {MAX_IMAGES_PER_REQUEST} may be sent "
            "in one request. Hint: drop older images from the conversation (compact it, or "
            "start a new session) or send fewer at once.",
        )
    spec = catalog_spec(base_url, api, model)
    if spec is None:
        return
    from tether.providers.model_catalog import model_info

    info = model_info(spec)
    if info is not None and not info.images:
        raise ProviderError(
            "MODEL_CANNOT_SEE_IMAGES",
            f"{spec} does not read images (tether's model catalog), and the request carries "
            f"{count}. Hint: switch to a model that reads images, or remove the images.",
        )
