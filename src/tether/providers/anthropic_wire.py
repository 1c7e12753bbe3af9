"""Anthropic Messages on the wire, outbound: the JSON body of ``POST /v1/messages``.

Pure data work (no I/O, no HTTP client): ``AnthropicModel`` sends what
``build_messages_request`` builds: turns that alternate as the API requires, thinking replayed
only with its signature, images as base64 blocks, and prompt-caching breakpoints. The way back,
the streamed answer, is ``anthropic_stream``'s (docs/providers.md, "Anthropic").
"""

from __future__ import annotations

import math
from typing import Final, Literal, TypeAlias

from tether._base.exact_types import type_of
from tether._base.strings import is_non_empty
from tether.jsonvalue import thaw_json
from tether.protocol import AssistantBlock, ImageBlock, ModelRequest
from tether.providers._images import base64_text
from tether.providers._wire import is_responses_reasoning

__all__ = ["build_messages_request"]

_Turn: TypeAlias = "tuple[Literal['user', 'assistant'], list[dict[str, object]]]"


def build_messages_request(
    request: ModelRequest,
    *,
    model: str,
    max_output_tokens: int,
    temperature: float | None,
    thinking_budget: int | None,
    stream: bool = True,
    cache: bool = False,
) -> dict[str, object]:
    """The JSON body of ``POST /v1/messages`` for ``request``.

    * ``model``, ``max_tokens`` (always: the API requires it), ``system`` (top level; left
      out when ``None`` or empty).
    * ``messages`` alternate ``user``/``assistant`` as the API requires, so consecutive
      messages of one role are merged into one turn, their blocks in transcript order: a
      user message is a ``text`` block; each tool result is a ``tool_result`` block
      (``tool_use_id``, ``content`` text, ``is_error: true`` only when it failed), so the
      results of one assistant turn share one user turn; an assistant message's blocks are
      ``text``, ``thinking`` (``thinking`` + ``signature``, replayed verbatim),
      ``redacted_thinking`` (``data`` is the block's signature) and ``tool_use`` (``id``,
      ``name``, ``input``). Empty text is left out (the API rejects empty text blocks), and
      a message left with no block adds nothing.
    * Images are ``{"type": "image", "source": {"type": "base64", "media_type", "data"}}``
      blocks: a user message's come before its text (Anthropic's advice); a tool result with
      images has ``content`` blocks, its text (when not empty) then its images.
    * An **unsigned** thinking block (an aborted stream, another provider's reasoning) is
      dropped: the API rejects thinking without a valid signature, and sending it as text
      would put the model's private reasoning into its visible answer. So is one signed by
      the OpenAI Responses API (a conversation that switched models): Anthropic would reject
      its encrypted reasoning as a signature.
    * ``tools`` (only when there are some): ``{"name", "description", "input_schema"}``
      (``description`` left out when empty).
    * ``thinking: {"type": "enabled", "budget_tokens": N}`` when ``thinking_budget`` is set
      (it must be below ``max_output_tokens``); the API then requires the default
      temperature, so ``temperature`` must be ``None`` or ``1`` and is not sent (any other
      value is a ``ValueError`` rather than silently ignored). Without thinking,
      ``temperature`` (0 to 1) is sent when given.
    * ``stream``.
    * With ``cache``, prompt caching breakpoints (``cache_control: {"type": "ephemeral"}``,
      at most four, Anthropic's limit; see ``_mark_cache``): the system prompt (then sent as
      one ``text`` block), the last tool, the last block of the last turn (what the next
      request will find cached) and of the user turn before it (where the previous request
      wrote the cache, so it is read even when more than 20 blocks came since).

    ``TypeError``/``ValueError`` for arguments of the wrong type or out of range.
    """
    if type_of(request) is not ModelRequest:
        raise TypeError("request must be a ModelRequest")
    if type_of(cache) is not bool:
        raise TypeError("cache must be a bool")
    if not is_non_empty(model):
        raise TypeError("model must be a non-empty string")
    if type_of(max_output_tokens) is not int or max_output_tokens < 1:
        raise ValueError("max_output_tokens must be a positive int")
    if temperature is not None and (
        type_of(temperature) not in (int, float)
        or not math.isfinite(temperature)
        or not 0 <= temperature <= 1
    ):
        raise ValueError("temperature must be a number from 0 to 1, or None")
    if thinking_budget is not None:
        if type_of(thinking_budget) is not int or thinking_budget < 1:
            raise ValueError("thinking_budget must be a positive int or None")
        if thinking_budget >= max_output_tokens:
            raise ValueError("thinking_budget must be less than max_output_tokens")
        if temperature is not None and temperature != 1:
            raise ValueError("temperature cannot be set with thinking (the API requires 1)")
    if type_of(stream) is not bool:
        raise TypeError("stream must be a bool")

    turns: list[_Turn] = []

    def add(role: Literal["user", "assistant"], block: dict[str, object]) -> None:
        if turns and turns[-1][0] == role:
            turns[-1][1].append(block)
        else:
            turns.append((role, [block]))

    for message in request.messages:
        if message.role == "user":
            for image in message.images:
                add("user", _image_block(image))
            if message.content:
                add("user", {"type": "text", "text": message.content})
        elif message.role == "toolResult":
            content: object = message.content
            if message.images:
                blocks: list[dict[str, object]] = (
                    [{"type": "text", "text": message.content}] if message.content else []
                )
                blocks.extend(_image_block(image) for image in message.images)
                content = blocks
            result: dict[str, object] = {
                "type": "tool_result",
                "tool_use_id": message.tool_call_id,
                "content": content,
            }
            if message.is_error:
                result["is_error"] = True
            add("user", result)
        else:
            for block in message.content:
                replayed = _assistant_block(block)
                if replayed is not None:
                    add("assistant", replayed)

    body: dict[str, object] = {"model": model, "max_tokens": max_output_tokens}
    if request.system:
        body["system"] = request.system
    body["messages"] = [{"role": role, "content": blocks} for role, blocks in turns]
    tools: list[dict[str, object]] = []
    if request.tools:
        for spec in request.tools:
            entry: dict[str, object] = {"name": spec.name}
            if spec.description:
                entry["description"] = spec.description
            entry["input_schema"] = thaw_json(spec.parameters)
            tools.append(entry)
        body["tools"] = tools
    if thinking_budget is not None:
        body["thinking"] = {"type": "enabled", "budget_tokens": thinking_budget}
    elif temperature is not None:
        body["temperature"] = temperature
    body["stream"] = stream
    if cache:
        _mark_cache(body, tools, turns)
    return body


def _image_block(image: ImageBlock) -> dict[str, object]:
    return {
        "type": "image",
        "source": {"type": "base64", "media_type": image.media_type, "data": base64_text(image)},
    }


_EPHEMERAL: Final = {"type": "ephemeral"}
_UNMARKABLE: Final = frozenset({"thinking", "redacted_thinking"})
"""Blocks a ``cache_control`` cannot be put on."""


def _mark_cache(
    body: dict[str, object], tools: list[dict[str, object]], turns: list[_Turn]
) -> None:
    """Put ``cache_control`` breakpoints into ``body`` (see ``build_messages_request``).

    The cached prefix is tools, then system, then messages: each breakpoint caches all before
    it. In the messages the last block of the last turn is marked, and the last block of the
    user turn before it; a turn whose blocks are all thinking is passed over.
    """
    system = body.get("system")
    if isinstance(system, str):
        body["system"] = [{"type": "text", "text": system, "cache_control": dict(_EPHEMERAL)}]
    if tools:
        tools[-1]["cache_control"] = dict(_EPHEMERAL)
    marked = 0
    for index in range(len(turns) - 1, -1, -1):
        role, blocks = turns[index]
        if marked and role != "user":
            continue
        block = next((b for b in reversed(blocks) if b.get("type") not in _UNMARKABLE), None)
        if block is None:
            continue
        block["cache_control"] = dict(_EPHEMERAL)
        marked += 1
        if marked == 2:
            break


def _assistant_block(block: AssistantBlock) -> dict[str, object] | None:
    if block.type == "text":
        return {"type": "text", "text": block.text} if block.text else None
    if block.type == "toolCall":
        return {
            "type": "tool_use",
            "id": block.id,
            "name": block.name,
            "input": thaw_json(block.arguments),
        }
    signature = block.signature
    if not signature or is_responses_reasoning(signature):
        return None  # unsigned or OpenAI's reasoning cannot be replayed (build_messages_request)
    if block.redacted:
        return {"type": "redacted_thinking", "data": signature}
    return {"type": "thinking", "thinking": block.text, "signature": signature}
