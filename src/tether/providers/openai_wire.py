"""OpenAI Chat Completions on the wire, outbound: the JSON body of ``POST /chat/completions``.

Pure data work (no I/O, no HTTP client): ``OpenAIChatModel`` sends what
``build_chat_request`` builds. ``arguments_text`` writes a tool call's arguments as OpenAI
sends them (the Responses request uses it too). The way back is elsewhere:
``openai_chat_stream`` normalizes the streamed answer, ``openai_chat_body`` a whole
``chat.completion`` body. The per-server switches are the fields of ``OpenAIChatCompat``
(presets in ``tether.providers.catalog``; docs/providers.md says which server deviates how).
"""

from __future__ import annotations

import json
import math
from typing import Final

from tether._base.exact_types import exactly, type_of
from tether._base.strings import is_non_empty, well_formed
from tether.jsonvalue import JsonObject, entries, thaw_json
from tether.protocol import AssistantMessage, ImageBlock, ModelRequest, ToolCall, UserMessage
from tether.providers._images import data_url, tool_images_note
from tether.providers.openai_compat import OpenAIChatCompat

__all__ = ["OpenAIChatCompat", "arguments_text", "build_chat_request"]

# --- the request ------------------------------------------------------------------------------


def build_chat_request(
    request: ModelRequest,
    *,
    model: str,
    compat: OpenAIChatCompat,
    max_output_tokens: int | None,
    temperature: float | None,
    reasoning_effort: str | None,
    stream: bool = True,
    prompt_cache_key: str | None = None,
) -> dict[str, object]:
    """The JSON body of ``POST /chat/completions`` for ``request``.

    * ``messages``: the system prompt first (when there is one and it is not empty), as a
      ``compat.system_role`` message; then the transcript: a user message's text; an
      assistant message's text (its text blocks joined, ``null`` when it has tool calls and no
      text, ``""`` when it has neither, which OpenAI requires) and ``tool_calls`` with
      ``arguments`` as compact JSON text (an invalid call's raw text, or ``"{}"``, as
      ``compat.invalid_arguments`` says); one ``tool`` message per tool result, linked by
      ``tool_call_id``. Thinking blocks are never replayed: this API has no field for them.
      A tool result's ``is_error`` has no field either; its text says what failed.
    * Images: a user message with images has content parts, ``{"type": "image_url",
      "image_url": {"url": "data:<type>;base64,<data>"}}`` for each image, then its text (a
      ``text`` part, when not empty). A ``tool`` message can hold only text, so the images of
      a run of tool results follow it in one ``user`` message: for each result with images, a
      ``text`` part naming it (``Attached image(s) from tool result <call id> (<tool>):``),
      then its images (as Pi sends them); a result with images and no text says
      ``(see the attached images)`` in its ``tool`` message.
    * ``tools`` (only when there are some): ``{"type": "function", "function": {"name",
      "description", "parameters"}}`` (``description`` left out when empty), and
      ``parallel_tool_calls`` when ``compat.send_parallel_tool_calls`` is set.
    * ``stream``; with it, ``stream_options`` (``include_usage``, and ``include_obfuscation``
      when the compat sets it) unless ``compat.send_stream_options`` is off.
    * ``max_completion_tokens`` or ``max_tokens`` (``compat.max_tokens_field``),
      ``temperature`` and ``reasoning_effort``, each only when given.
    * ``prompt_cache_key`` when given and ``compat.send_prompt_cache_key`` is on.

    ``TypeError``/``ValueError`` for arguments of the wrong type or out of range.
    """
    if type_of(request) is not ModelRequest:
        raise TypeError("request must be a ModelRequest")
    if not is_non_empty(model):
        raise TypeError("model must be a non-empty string")
    if type_of(compat) is not OpenAIChatCompat:
        raise TypeError("compat must be an OpenAIChatCompat")
    if max_output_tokens is not None and (
        type_of(max_output_tokens) is not int or max_output_tokens < 1
    ):
        raise ValueError("max_output_tokens must be a positive int or None")
    if temperature is not None and (
        type_of(temperature) not in (int, float)
        or not math.isfinite(temperature)
        or temperature < 0
    ):
        raise ValueError("temperature must be a finite non-negative number or None")
    if reasoning_effort is not None and not is_non_empty(reasoning_effort):
        raise ValueError("reasoning_effort must be a non-empty string or None")
    if type_of(stream) is not bool:
        raise TypeError("stream must be a bool")
    if prompt_cache_key is not None and not is_non_empty(prompt_cache_key):
        raise ValueError("prompt_cache_key must be a non-empty string or None")

    messages: list[dict[str, object]] = []
    if request.system:
        messages.append({"role": compat.system_role, "content": request.system})
    tool_images: list[dict[str, object]] = []  # of the run of tool results being written
    for message in request.messages:
        if message.role != "toolResult" and tool_images:
            messages.append({"role": "user", "content": tool_images})
            tool_images = []
        if message.role == "user":
            messages.append({"role": "user", "content": _user_content(message)})
        elif message.role == "assistant":
            messages.append(_assistant_message(message, compat.invalid_arguments == "raw"))
        else:
            text = message.content or (_SEE_IMAGES if message.images else "")
            messages.append({"role": "tool", "tool_call_id": message.tool_call_id, "content": text})
            if message.images:
                tool_images.append({"type": "text", "text": tool_images_note(message)})
                tool_images.extend(_image_part(image) for image in message.images)
    if tool_images:
        messages.append({"role": "user", "content": tool_images})
    body: dict[str, object] = {"model": model, "messages": messages}
    if request.tools:
        tools: list[dict[str, object]] = []
        for spec in request.tools:
            function: dict[str, object] = {"name": spec.name}
            if spec.description:
                function["description"] = spec.description
            function["parameters"] = thaw_json(spec.parameters)
            tools.append({"type": "function", "function": function})
        body["tools"] = tools
        if compat.send_parallel_tool_calls is not None:
            body["parallel_tool_calls"] = compat.send_parallel_tool_calls
    body["stream"] = stream
    if stream and compat.send_stream_options:
        options: dict[str, object] = {"include_usage": True}
        if compat.include_obfuscation is not None:
            options["include_obfuscation"] = compat.include_obfuscation
        body["stream_options"] = options
    if max_output_tokens is not None:
        body[compat.max_tokens_field] = max_output_tokens
    if temperature is not None:
        body["temperature"] = temperature
    if reasoning_effort is not None:
        body["reasoning_effort"] = reasoning_effort
    if prompt_cache_key is not None and compat.send_prompt_cache_key:
        body["prompt_cache_key"] = prompt_cache_key
    return body


_SEE_IMAGES: Final = "(see the attached images)"
"""A ``tool`` message's text when its result has images and no text of its own."""


def _image_part(image: ImageBlock) -> dict[str, object]:
    return {"type": "image_url", "image_url": {"url": data_url(image)}}


def _user_content(message: UserMessage) -> str | list[dict[str, object]]:
    """A user message's text, or its parts when it has images: the images, then the text."""
    if not message.images:
        return message.content
    parts = [_image_part(image) for image in message.images]
    if message.content:
        parts.append({"type": "text", "text": message.content})
    return parts


def _assistant_message(message: AssistantMessage, raw: bool) -> dict[str, object]:
    texts: list[str] = []
    calls: list[dict[str, object]] = []
    for block in message.content:
        if block.type == "text":
            texts.append(block.text)
        elif block.type == "toolCall":
            calls.append(
                {
                    "id": block.id,
                    "type": "function",
                    "function": {
                        "name": block.name,
                        "arguments": arguments_text(block)
                        if raw or block.raw_arguments is None
                        else "{}",
                    },
                }
            )
    text = "".join(texts)
    entry: dict[str, object] = {"role": "assistant", "content": text or (None if calls else "")}
    if calls:
        entry["tool_calls"] = calls
    return entry


def arguments_text(call: ToolCall) -> str:
    """A call's arguments as compact JSON text (``{"a":1}``), as OpenAI sends them.

    Non-ASCII text is kept as it is; only if the arguments hold a lone surrogate (which UTF-8
    cannot encode) is everything written as ``\\u`` escapes instead. An invalid call
    (``raw_arguments`` set) sends the text the model sent, so the model sees its own mistake
    (a lone surrogate in it becomes U+FFFD, ``well_formed``, as the body's encoding,
    ``utf8_well_formed``, would send it).
    """
    raw = call.raw_arguments
    if raw is not None:
        return well_formed(raw)
    text = json.dumps(call.arguments, default=_unfrozen, separators=(",", ":"), ensure_ascii=False)
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            text = json.dumps(call.arguments, default=_unfrozen, separators=(",", ":"))
    return text


def _unfrozen(value: object) -> object:
    """``json.dumps`` hook: a ``JsonObject`` serializes as the dict it wraps."""
    if exactly(value, JsonObject):
        frozen: JsonObject = value
        return entries(frozen)
    raise TypeError(f"{type_of(value).__name__} is not JSON")  # pragma: no cover - frozen JSON
