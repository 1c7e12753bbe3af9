"""Google Gemini's native API: the request body of ``streamGenerateContent``.

Pure data work: ``build_gemini_request`` turns a ``ModelRequest`` into the JSON body that
``GeminiModel`` sends to ``models/{model}:streamGenerateContent?alt=sse`` (``gemini_wire``
reads the stream that answers it). Each ``thoughtSignature`` goes back on the part it came
with, verbatim (``TextBlock.signature``, ``ThinkingBlock.signature``, ``ToolCall.signature``);
tool schemas are converted by ``gemini_schema``; the thinking options are Gemini 2.5's
``thinkingBudget`` or Gemini 3's ``thinkingLevel`` (``check_generation_options``, shared
with ``GeminiModel``'s constructor).
"""

from __future__ import annotations

import itertools
import re
from typing import Any, Final, Literal, TypeAlias

from tether._base.exact_types import exactly, type_of
from tether.jsonvalue import thaw_json
from tether.protocol import AssistantBlock, ImageBlock, ModelRequest
from tether.providers._images import base64_text, tool_images_note
from tether.providers._wire import check_sampling, function_declaration
from tether.providers.gemini_schema import gemini_schema

__all__ = [
    "SKIP_SIGNATURE",
    "THINKING_LEVELS",
    "ThinkingLevel",
    "build_gemini_request",
    "check_generation_options",
    "nests_tool_images",
]

ThinkingLevel: TypeAlias = Literal["minimal", "low", "medium", "high"]
"""Gemini 3's ``thinkingConfig.thinkingLevel`` values."""

THINKING_LEVELS: Final[tuple[ThinkingLevel, ...]] = ("minimal", "low", "medium", "high")

SKIP_SIGNATURE: Final = "skip_thought_signature_validator"
"""The placeholder signature Google documents for a replayed function call whose real
signature is unknown (history from another model, or edited): sent on the first call of a
model turn when none of its calls has a signature."""


_Role: TypeAlias = Literal["user", "model"]


def build_gemini_request(
    request: ModelRequest,
    *,
    max_output_tokens: int | None = None,
    temperature: float | None = None,
    thinking_budget: int | None = None,
    thinking_level: ThinkingLevel | None = None,
    nest_tool_images: bool = True,
) -> dict[str, object]:
    """The JSON body of ``POST models/{model}:streamGenerateContent?alt=sse`` for ``request``.

    * ``systemInstruction: {"parts": [{"text": system}]}`` (left out when ``None`` or empty).
    * ``contents`` alternate ``user``/``model`` turns (consecutive messages of one role share a
      turn, their parts in transcript order, except that the results of a model turn's calls
      come first, in the order of the calls): a user message is a ``text`` part; a tool result
      a ``functionResponse`` part (``name``, ``id``: the call's ID, ``response``:
      ``{"output": content}``, or ``{"error": content}`` when it failed); an assistant message
      its blocks, each one part, **as received**: text (``thoughtSignature`` when the block has
      a signature; empty text only when it carries one), thinking as ``{"text", "thought":
      true}`` (with its signature; redacted thinking, another vendor's opaque data, is left
      out) and tool calls as ``functionCall`` (``name``, ``args``, ``id``; an invalid call's
      ``args`` are ``{}``) with their signature. When no call of a model turn has a signature
      (history from another model), the first carries ``SKIP_SIGNATURE``.
    * Images are ``{"inlineData": {"mimeType", "data"}}`` parts: a user message's before its
      text; a tool result's in its ``functionResponse.parts`` (Gemini 3's multimodal function
      responses) with ``nest_tool_images`` (``nests_tool_images(model)``), else after the
      turn's ``functionResponse`` parts, each result's introduced by a ``text`` part naming
      it (Gemini 2.5 takes no parts in a function response; Gemini 3 rejects images beside
      one).
    * ``tools: [{"functionDeclarations": [{"name", "description", "parameters"}]}]`` (only
      when there are tools; ``parameters`` converted by ``gemini_schema``).
    * ``generationConfig`` (only when something is set): ``maxOutputTokens``, ``temperature``
      (0 to 2), and ``thinkingConfig: {"includeThoughts": true, "thinkingBudget": N}`` (Gemini
      2.5: ``-1`` dynamic, ``0`` off) or ``{"includeThoughts": true, "thinkingLevel": L}``
      (Gemini 3), never both; ``includeThoughts`` is left out with a budget of 0.

    ``TypeError``/``ValueError`` for arguments of the wrong type or out of range;
    ``ProviderError`` ``PROVIDER_BAD_REQUEST`` for a tool schema Gemini cannot express.
    """
    if type_of(request) is not ModelRequest:
        raise TypeError("request must be a ModelRequest")
    check_generation_options(max_output_tokens, temperature, thinking_budget, thinking_level)
    turns: list[tuple[_Role, list[dict[str, object]]]] = []

    def add(role: _Role, part: dict[str, object]) -> None:
        if turns and turns[-1][0] == role:
            turns[-1][1].append(part)
        else:
            turns.append((role, [part]))

    late_images: list[dict[str, object]] = []  # tool results' images after their responses
    for message in request.messages:
        if message.role != "toolResult" and late_images:
            for part in late_images:
                add("user", part)
            late_images = []
        if message.role == "user":
            for image in message.images:
                add("user", _inline_data(image))
            if message.content:
                add("user", {"text": message.content})
        elif message.role == "toolResult":
            key = "error" if message.is_error else "output"
            response: dict[str, object] = {
                "name": message.tool_name,
                "id": message.tool_call_id,
                "response": {key: message.content},
            }
            if message.images and nest_tool_images:
                response["parts"] = [_inline_data(image) for image in message.images]
            elif message.images:
                late_images.append({"text": tool_images_note(message)})
                late_images.extend(_inline_data(image) for image in message.images)
            add("user", {"functionResponse": response})
        else:
            parts = _model_parts(message.content)
            for part in parts:
                add("model", part)

    for part in late_images:
        add("user", part)
    body: dict[str, object] = {}
    if request.system:
        body["systemInstruction"] = {"parts": [{"text": request.system}]}
    for previous, (role, parts) in itertools.pairwise(turns):
        if role == "user" and previous[0] == "model":
            _in_call_order(previous[1], parts)
    body["contents"] = [{"role": role, "parts": parts} for role, parts in turns]
    if request.tools:
        declarations = [
            function_declaration(spec, gemini_schema(thaw_json(spec.parameters), tool=spec.name))
            for spec in request.tools
        ]
        body["tools"] = [{"functionDeclarations": declarations}]
    config: dict[str, object] = {}
    if max_output_tokens is not None:
        config["maxOutputTokens"] = max_output_tokens
    if temperature is not None:
        config["temperature"] = temperature
    if thinking_budget is not None:
        thinking: dict[str, object] = {"thinkingBudget": thinking_budget}
        if thinking_budget != 0:
            thinking = {"includeThoughts": True, **thinking}
        config["thinkingConfig"] = thinking
    elif thinking_level is not None:
        config["thinkingConfig"] = {"includeThoughts": True, "thinkingLevel": thinking_level}
    if config:
        body["generationConfig"] = config
    return body


def _inline_data(image: ImageBlock) -> dict[str, object]:
    return {"inlineData": {"mimeType": image.media_type, "data": base64_text(image)}}


_GEMINI_MAJOR: Final = re.compile(r"(?:^|/)gemini(?:-live)?-(\d+)")


def nests_tool_images(model: str) -> bool:
    """Whether a tool result's images go inside its ``functionResponse`` (``parts``) for
    ``model``: Gemini 3 and later, and names that are not ``gemini-N...``; Gemini 1 and 2
    take them after it."""
    found = _GEMINI_MAJOR.search(model.lower())
    if found is None:
        return True
    # Compared without int() on all the digits: a name may hold more than int() converts.
    major = found.group(1).lstrip("0")
    return len(major) > 1 or int(major or "0") >= 3


def check_generation_options(
    max_output_tokens: object,
    temperature: object,
    thinking_budget: object,
    thinking_level: object,
) -> None:
    """``TypeError``/``ValueError`` unless the options are what ``build_gemini_request``
    takes (shared with ``GeminiModel``'s constructor)."""
    check_sampling(max_output_tokens, temperature)
    if thinking_budget is not None and (not exactly(thinking_budget, int) or thinking_budget < -1):
        raise ValueError("thinking_budget must be an int >= -1 (-1: dynamic, 0: off) or None")
    if thinking_level is not None and thinking_level not in THINKING_LEVELS:
        raise ValueError(f"thinking_level must be one of {', '.join(THINKING_LEVELS)}, or None")
    if thinking_budget is not None and thinking_level is not None:
        raise ValueError("give thinking_budget (Gemini 2.5) or thinking_level (Gemini 3), not both")


def _in_call_order(calls: list[dict[str, Any]], parts: list[dict[str, Any]]) -> None:
    """Sort the ``functionResponse`` parts of a user turn into the order of the model turn's
    ``functionCall`` parts before it (Gemini pairs them by position when it sent no IDs);
    other parts keep their order after them."""
    order = {
        part["functionCall"]["id"]: position
        for position, part in enumerate(calls)
        if "functionCall" in part
    }
    late = len(calls)

    def position(part: dict[str, Any]) -> int:
        response = part.get("functionResponse")
        return late if response is None else order.get(response["id"], late)

    parts.sort(key=position)


def _model_parts(content: tuple[AssistantBlock, ...]) -> list[dict[str, object]]:
    parts: list[dict[str, object]] = []
    first_call: dict[str, object] | None = None
    signed_call = False
    for block in content:
        part: dict[str, object]
        if block.type == "text":
            if not block.text and not block.signature:
                continue
            part = {"text": block.text}
        elif block.type == "thinking":
            if block.redacted:
                continue  # another vendor's opaque reasoning: nothing Gemini can read
            if not block.text and not block.signature:
                continue
            part = {"text": block.text, "thought": True}
        else:
            call: dict[str, object] = {
                "name": block.name,
                "args": thaw_json(block.arguments),
                "id": block.id,
            }
            part = {"functionCall": call}
            if first_call is None:
                first_call = part
            signed_call = signed_call or bool(block.signature)
        if block.signature:
            part["thoughtSignature"] = block.signature
        parts.append(part)
    if first_call is not None and not signed_call:
        first_call["thoughtSignature"] = SKIP_SIGNATURE
    return parts
