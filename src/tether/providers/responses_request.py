"""OpenAI Responses: the request body, and the replay of reasoning items.

Pure data work: ``build_responses_request`` turns a ``ModelRequest`` into the JSON body of
``POST /v1/responses`` (``OpenAIResponsesModel`` sends it; ``responses_wire`` reads the stream
that answers it).

The conversation is **stateless**: every request sends ``store: false`` and asks for
``include: ["reasoning.encrypted_content"]``, so each reasoning item comes back with its
encrypted content, which tether keeps in the ``ThinkingBlock``'s ``signature`` and sends back
unchanged on the next turn. Both ends of that signature live here, so its format is written
once: ``reasoning_signature`` (what the stream parser writes) and ``reasoning_item`` (what a
request sends back). No ``previous_response_id`` is ever sent: a session tree that forks
conversations needs nothing stored at the vendor.
"""

from __future__ import annotations

import json
import json.encoder
from collections.abc import Callable
from typing import Any, Final, cast

from tether._base.exact_types import is_dict, type_of
from tether._base.strings import is_non_empty
from tether.jsonvalue import thaw_json
from tether.protocol import AssistantMessage, ImageBlock, ModelRequest, ThinkingBlock
from tether.providers._images import data_url
from tether.providers._wire import check_sampling, function_declaration, is_responses_reasoning
from tether.providers.openai_wire import arguments_text

__all__ = [
    "REASONING_SUMMARIES",
    "build_responses_request",
    "reasoning_item",
    "reasoning_signature",
]

REASONING_SUMMARIES: Final = ("auto", "concise", "detailed")
"""The values ``reasoning.summary`` takes: how much of its reasoning the model summarizes."""

# --- reasoning signatures ---------------------------------------------------------------------


def reasoning_signature(item_id: str, encrypted_content: str) -> str:
    """The ``ThinkingBlock.signature`` of a reasoning item: the JSON text of the item as it is
    sent back, ``{"type":"reasoning","id":…,"encrypted_content":…}``. The encrypted content
    is bound to its ``rs_`` id, so both are kept, exactly as received.

    The text is ``json.dumps`` of that object with ``separators=(",", ":")`` and
    ``ensure_ascii=False``, written directly: the keys are fixed, and each string is encoded
    by the function ``json.dumps`` itself encodes strings with there (``encode_basestring``,
    C when ``_json`` is there), without building an encoder per call (a third of the cost
    for a few kB of encrypted content, paid once per reasoning item at the end of every
    stream). ``tests/providers/test_responses_wire.py`` compares the two on any strings."""
    return "".join(
        (
            '{"type":"reasoning","id":',
            _json_string(item_id),
            ',"encrypted_content":',
            _json_string(encrypted_content),
            "}",
        )
    )


_json_string: Final[Callable[[str], str]] = cast(Any, json.encoder).encode_basestring
"""How ``json.dumps(..., ensure_ascii=False)`` writes a string (quotes included)."""


def reasoning_item(block: ThinkingBlock) -> dict[str, object] | None:
    """The ``reasoning`` input item that replays ``block``, or ``None`` when its signature is
    not one ``reasoning_signature`` wrote (unsigned reasoning, or another vendor's signature:
    neither can be replayed here). ``summary`` is sent empty: the encrypted content carries
    the reasoning, and the summary text is only for people."""
    signature = block.signature
    if not signature or not is_responses_reasoning(signature):
        return None
    try:
        value: object = json.loads(signature)
    except ValueError:
        return None
    if not is_dict(value):
        return None  # pragma: no cover - the prefix makes it an object
    fields_: dict[str, Any] = value
    item_id = fields_.get("id")
    encrypted = fields_.get("encrypted_content")
    if not is_non_empty(item_id) or not is_non_empty(encrypted):
        return None
    return {"type": "reasoning", "id": item_id, "encrypted_content": encrypted, "summary": []}


# --- the request ------------------------------------------------------------------------------


def build_responses_request(
    request: ModelRequest,
    *,
    model: str,
    max_output_tokens: int | None,
    temperature: float | None,
    reasoning_effort: str | None,
    reasoning_summary: str | None = None,
    stream: bool = True,
) -> dict[str, object]:
    """The JSON body of ``POST /v1/responses`` for ``request``.

    * ``model``; ``instructions`` is the system prompt (left out when ``None`` or empty).
    * ``input``, the transcript as items: a user message is ``{"role": "user", "content"}``;
      an assistant message's blocks become, in order, a ``reasoning`` item for each thinking
      block that carries a Responses signature (``{"type": "reasoning", "id",
      "encrypted_content", "summary": []}``, the id and encrypted content as received; other
      thinking blocks are dropped: unsigned reasoning or another vendor's signature cannot be
      replayed), one ``{"role": "assistant", "content": <text>}`` per run of text blocks
      (empty text left out), and a ``function_call`` item per tool call (``call_id``,
      ``name``, ``arguments`` as compact JSON text; an invalid call's raw text as the model
      sent it). The ``fc_`` item id is never sent (it must not travel without its reasoning
      item). Each tool result is a ``function_call_output`` (``call_id``, ``output``); its
      ``is_error`` has no field, its text says what failed.
    * Images (``{"type": "input_image", "image_url": "data:<type>;base64,<data>", "detail":
      "auto"}``): a user message with images has content parts, its images then its text
      (``input_text``, when not empty); a tool result with images has an ``output`` array,
      its text (``input_text``, when not empty) then its images, as the API allows.
    * ``tools`` (only when there are some): flat function tools ``{"type": "function",
      "name", "description", "parameters", "strict": false}`` (``description`` left out
      when empty).
    * ``store: false`` and ``include: ["reasoning.encrypted_content"]``, always; ``stream``.
    * ``max_output_tokens`` (OpenAI's minimum is 16: it answers a smaller one with a 400) and
      ``temperature``, each only when given; ``reasoning: {"effort", "summary"}`` with whichever of
      ``reasoning_effort``/``reasoning_summary`` is given (``summary``: one of
      ``REASONING_SUMMARIES``; without it the stream carries no reasoning text, only the
      encrypted content).

    ``TypeError``/``ValueError`` for arguments of the wrong type or out of range.
    """
    if type_of(request) is not ModelRequest:
        raise TypeError("request must be a ModelRequest")
    if not is_non_empty(model):
        raise TypeError("model must be a non-empty string")
    check_sampling(max_output_tokens, temperature)
    if reasoning_effort is not None and not is_non_empty(reasoning_effort):
        raise ValueError("reasoning_effort must be a non-empty string or None")
    if reasoning_summary is not None and reasoning_summary not in REASONING_SUMMARIES:
        raise ValueError("reasoning_summary must be 'auto', 'concise', 'detailed' or None")
    if type_of(stream) is not bool:
        raise TypeError("stream must be a bool")

    items: list[dict[str, object]] = []
    for message in request.messages:
        if message.role == "user":
            content = _with_images(message.content, message.images, images_first=True)
            items.append({"role": "user", "content": content})
        elif message.role == "toolResult":
            output = _with_images(message.content, message.images, images_first=False)
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": message.tool_call_id,
                    "output": output,
                }
            )
        else:
            _assistant_items(message, items)
    body: dict[str, object] = {"model": model}
    if request.system:
        body["instructions"] = request.system
    body["input"] = items
    if request.tools:
        body["tools"] = [
            {
                "type": "function",
                **function_declaration(spec, thaw_json(spec.parameters)),
                "strict": False,
            }
            for spec in request.tools
        ]
    body["store"] = False
    body["include"] = ["reasoning.encrypted_content"]
    body["stream"] = stream
    if max_output_tokens is not None:
        body["max_output_tokens"] = max_output_tokens
    if temperature is not None:
        body["temperature"] = temperature
    if reasoning_effort is not None or reasoning_summary is not None:
        reasoning: dict[str, object] = {}
        if reasoning_effort is not None:
            reasoning["effort"] = reasoning_effort
        if reasoning_summary is not None:
            reasoning["summary"] = reasoning_summary
        body["reasoning"] = reasoning
    return body


def _with_images(
    text: str, images: tuple[ImageBlock, ...], *, images_first: bool
) -> str | list[dict[str, object]]:
    """A message's content: its text alone, or with images content parts (the text an
    ``input_text`` part when not empty), the images before the text or after it."""
    if not images:
        return text
    parts: list[dict[str, object]] = [
        {"type": "input_image", "image_url": data_url(image), "detail": "auto"} for image in images
    ]
    if text:
        parts.insert(len(parts) if images_first else 0, {"type": "input_text", "text": text})
    return parts


def _assistant_items(message: AssistantMessage, items: list[dict[str, object]]) -> None:
    texts: list[str] = []

    def flush() -> None:
        text = "".join(texts)
        texts.clear()
        if text:
            items.append({"role": "assistant", "content": text})

    for block in message.content:
        if block.type == "text":
            texts.append(block.text)
            continue
        flush()
        if block.type == "thinking":
            replayed = reasoning_item(block)
            if replayed is not None:
                items.append(replayed)
        else:
            items.append(
                {
                    "type": "function_call",
                    "call_id": block.id,
                    "name": block.name,
                    "arguments": arguments_text(block),
                }
            )
    flush()
