"""Google Gemini's native API on the wire: the request body out, the stream normalized back in.

Pure data work (no I/O, no HTTP client): ``GeminiModel`` sends what ``build_gemini_request``
builds to ``models/{model}:streamGenerateContent?alt=sse`` and feeds each decoded SSE payload
(one whole ``GenerateContentResponse`` per event) to a ``GeminiStreamParser``, which turns it
into protocol chunks and, at the end, one ``ModelResponse``.

The rules (docs/providers.md, "Gemini"):

* Vendor payloads are untrusted ``object`` data. Unknown fields and unknown part types
  (``inlineData``, ``executableCode``, ...) are ignored; the fields read must have their
  documented JSON types, or the payload is a ``PROVIDER_PROTOCOL_ERROR``, never a
  ``KeyError``.
* A ``thoughtSignature`` stays on the block whose part carried it (``TextBlock.signature``,
  ``ThinkingBlock.signature``, ``ToolCall.signature``) and goes back on that part, verbatim.
* Gemini has no end event and no "tool call" finish reason: the stream simply ends, a turn
  with a ``functionCall`` is ``toolCall`` whatever ``finishReason`` says, and a stream that
  ends without a ``finishReason`` is ``PROVIDER_STREAM_INTERRUPTED``.
* ``usageMetadata`` is a cumulative snapshot on every chunk: the last value of each field
  wins (a field a later chunk leaves out keeps its earlier value); nothing is summed.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from typing import Any, Final, Literal, NoReturn, TypeAlias

from tether._text import is_non_empty
from tether._types import exactly, is_dict, is_list, is_number, type_of
from tether.jsonvalue import JsonValueError, freeze_json_object, thaw_json
from tether.protocol import (
    MAX_SAFE_INTEGER,
    AssistantBlock,
    AssistantMessage,
    ImageBlock,
    ModelChunk,
    ModelRequest,
    ModelResponse,
    StopReason,
    ToolCall,
)
from tether.protocol import _trusted as trusted
from tether.providers._images import base64_text, tool_images_note
from tether.providers._wire import (
    MAX_SHOWN,
    CallIds,
    field_error,
    repeated,
    reserved_ids,
    shown,
)
from tether.providers._wire import kind as json_kind
from tether.providers._wire import protocol as protocol_error
from tether.providers.errors import ProviderError

__all__ = [
    "SKIP_SIGNATURE",
    "THINKING_LEVELS",
    "GeminiStreamParser",
    "ThinkingLevel",
    "build_gemini_request",
    "gemini_schema",
]

ThinkingLevel: TypeAlias = Literal["minimal", "low", "medium", "high"]
"""Gemini 3's ``thinkingConfig.thinkingLevel`` values."""

THINKING_LEVELS: Final[tuple[ThinkingLevel, ...]] = ("minimal", "low", "medium", "high")

SKIP_SIGNATURE: Final = "skip_thought_signature_validator"
"""The placeholder signature Google documents for a replayed function call whose real
signature is unknown (history from another model, or edited): sent on the first call of a
model turn when none of its calls has a signature."""

# --- the request: tool schemas ------------------------------------------------------------------

_TYPES: Final[dict[str, str]] = {
    "string": "STRING",
    "number": "NUMBER",
    "integer": "INTEGER",
    "boolean": "BOOLEAN",
    "array": "ARRAY",
    "object": "OBJECT",
    "null": "NULL",
}
_KEPT: Final = frozenset(
    {
        "format",
        "title",
        "description",
        "nullable",
        "minItems",
        "maxItems",
        "minProperties",
        "maxProperties",
        "minLength",
        "maxLength",
        "pattern",
        "example",
        "minimum",
        "maximum",
        "default",
        "propertyOrdering",
    }
)
"""JSON Schema keywords Gemini's ``Schema`` takes as they are."""
_DROPPED: Final = frozenset(
    {
        "$schema",
        "$id",
        "$anchor",
        "$comment",
        "examples",
        "readOnly",
        "writeOnly",
        "deprecated",
        "multipleOf",
        "uniqueItems",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "contentEncoding",
        "contentMediaType",
    }
)
"""Annotations and value constraints Gemini's ``Schema`` has no field for: left out (the
arguments are still checked against the full schema on tether's side)."""
_MAX_SCHEMA_DEPTH: Final = 64


class _Unsupported(Exception):
    """Internal: a schema construct Gemini cannot express (where, what)."""


def gemini_schema(schema: object, *, tool: str = "tool") -> dict[str, object]:
    """A tool's JSON Schema (``ToolSpec.parameters``, thawed) converted to the OpenAPI subset
    Gemini's ``functionDeclarations[].parameters`` accepts.

    Converted: ``type`` to Gemini's upper-case names (a ``[T, "null"]`` list becomes ``T``
    with ``nullable: true``, a longer list an ``anyOf``); ``anyOf``/``oneOf`` to ``anyOf``,
    a ``{"type": "null"}`` member to ``nullable`` (and a single member left is merged into the
    schema); ``const`` (a string) to a one-value ``enum``; a non-string ``enum`` or ``const``
    (Gemini's ``enum`` holds strings) to its values' type, when they share one, with the values
    named in the ``description``; ``$ref`` to ``#/$defs/...`` or ``#/definitions/...``
    inlined; a one-member ``allOf`` merged. Kept: the keywords Gemini has (``description``,
    ``enum`` of strings, ``properties``, ``required``, ``items``, ``minimum``, ``format``,
    ...). Left out: annotations and constraints it has no field for (``$schema``,
    ``additionalProperties: true|false``, ``exclusiveMinimum``, ``examples``,
    ``uniqueItems``, ...). Anything else (a recursive or external ``$ref``, ``allOf`` of
    several, ``not``, ``if``, ``patternProperties``, ``additionalProperties`` with a schema,
    tuple ``items``, an unknown keyword) is refused: ``ProviderError``
    ``PROVIDER_BAD_REQUEST`` naming the tool, the place and the keyword.
    """
    if not is_dict(schema):
        raise ProviderError(
            "PROVIDER_BAD_REQUEST", f"Tool {tool!r}: its parameters must be a JSON Schema object"
        )
    root: dict[str, Any] = schema
    defs: dict[str, Any] = {}
    for key in ("$defs", "definitions"):
        found: Any = root.get(key)
        if type_of(found) is dict:
            table: dict[str, Any] = found
            defs.update({f"#/{key}/{name}": value for name, value in table.items()})
    try:
        converted = _convert(root, "parameters", defs, frozenset(), 0)
    except _Unsupported as problem:
        where, what = problem.args
        raise ProviderError(
            "PROVIDER_BAD_REQUEST",
            f"Tool {tool!r}: {where} uses {what}, which Gemini's function declarations cannot "
            "express",
        ) from None
    if "type" not in converted and "anyOf" not in converted:
        converted["type"] = "OBJECT"
    return converted


def _convert(
    node: object, path: str, defs: dict[str, Any], refs: frozenset[str], depth: int
) -> dict[str, object]:
    if depth > _MAX_SCHEMA_DEPTH:
        raise _Unsupported(path, f"more than {_MAX_SCHEMA_DEPTH} levels of nesting")
    if not is_dict(node):
        raise _Unsupported(path, f"a schema that is {json_kind(node)}")
    source: dict[str, Any] = node
    ref = source.get("$ref")
    if ref is not None:
        if type_of(ref) is not str or ref not in defs:
            raise _Unsupported(path, f"the $ref {shown(ref)} (only local $defs are inlined)")
        if ref in refs:
            raise _Unsupported(path, f"the recursive $ref {shown(ref)}")
        target = defs[ref]
        if type_of(target) is not dict:
            raise _Unsupported(path, f"the $ref {shown(ref)} to {json_kind(target)}")
        merged = {**target, **{k: v for k, v in source.items() if k != "$ref"}}
        return _convert(merged, path, defs, refs | {ref}, depth + 1)
    every = source.get("allOf")
    if every is not None:
        if type_of(every) is not list or len(every) != 1 or type_of(every[0]) is not dict:
            raise _Unsupported(path, "allOf with other than one schema")
        merged = {**every[0], **{k: v for k, v in source.items() if k != "allOf"}}
        return _convert(merged, path, defs, refs, depth + 1)
    out: dict[str, object] = {}
    nullable = False
    others: list[Any] | None = None  # a non-string enum: Gemini's enum holds strings only
    for key, value in source.items():
        if key == "type":
            nullable = _type(value, path, out) or nullable
        elif key == "properties":
            if type_of(value) is not dict:
                raise _Unsupported(f"{path}.properties", json_kind(value))
            out["properties"] = {
                name: _convert(sub, f"{path}.properties.{name}", defs, refs, depth + 1)
                for name, sub in value.items()
            }
        elif key == "items":
            out["items"] = _convert(value, f"{path}.items", defs, refs, depth + 1)
        elif key == "anyOf" or key == "oneOf":
            nullable = _any_of(value, f"{path}.{key}", defs, refs, depth, out) or nullable
        elif key == "enum" or key == "const":
            values: Any = value if key == "enum" else [value]
            if type_of(values) is not list or not values:
                raise _Unsupported(f"{path}.{key}", "something other than a non-empty list")
            if all(type_of(v) is str for v in values):
                out["enum"] = list(values)
                out.setdefault("type", "STRING")
            else:
                others = values
        elif key == "required":
            if type_of(value) is not list or not all(type_of(v) is str for v in value):
                raise _Unsupported(f"{path}.required", "something other than a list of names")
            out["required"] = list(value)
        elif key in _KEPT:
            out[key] = value
        elif key == "additionalProperties":
            if type_of(value) is not bool:
                raise _Unsupported(path, "additionalProperties with a schema")
        elif key in _DROPPED or ((key == "$defs" or key == "definitions") and depth == 0):
            continue
        else:
            raise _Unsupported(path, f"the keyword {shown(key)}")
    if others is not None:
        _other_values(others, out)
    if "anyOf" in out:
        members: Any = out["anyOf"]
        if len(members) == 1:  # what is left of an Optional[X]: X itself, made nullable
            del out["anyOf"]
            out = {**members[0], **out}
    if nullable:
        out["nullable"] = True
    return out


_VALUE_TYPES: Final[dict[type, str]] = {int: "INTEGER", float: "NUMBER", bool: "BOOLEAN"}


def _other_values(values: list[Any], out: dict[str, object]) -> None:
    """A non-string ``enum`` (or ``const``): its type, when all its values share one, and the
    values named in the description, since Gemini's ``enum`` takes strings only."""
    kinds = {_VALUE_TYPES.get(type_of(v)) for v in values}
    if len(kinds) == 1 and None not in kinds:
        out.setdefault("type", kinds.pop())
    elif kinds <= {"INTEGER", "NUMBER"}:
        out.setdefault("type", "NUMBER")
    allowed = ", ".join(json.dumps(v, ensure_ascii=False) for v in values)
    hint = f"One of: {allowed}." if len(values) > 1 else f"Must be {allowed}."
    description = out.get("description")
    out["description"] = f"{description} {hint}" if type_of(description) is str else hint


def _type(value: object, path: str, out: dict[str, object]) -> bool:
    """``type`` into ``out``; returns whether it allowed ``null``."""
    if exactly(value, str):
        mapped = _TYPES.get(value)
        if mapped is None:
            raise _Unsupported(path, f"the type {shown(value)}")
        out["type"] = mapped
        return False
    if not is_list(value) or not value:
        raise _Unsupported(path, f"a type that is {json_kind(value)}")
    names: list[Any] = value
    nullable = "null" in names
    rest: list[str] = []
    for name in names:
        mapped = _TYPES.get(name) if type_of(name) is str else None
        if mapped is None:
            raise _Unsupported(path, f"the type {shown(name)}")
        if name != "null":
            rest.append(mapped)
    if not rest:
        out["type"] = "NULL"
    elif len(rest) == 1:
        out["type"] = rest[0]
    else:
        out["anyOf"] = [{"type": name} for name in rest]
    return nullable


def _any_of(
    value: object,
    path: str,
    defs: dict[str, Any],
    refs: frozenset[str],
    depth: int,
    out: dict[str, object],
) -> bool:
    """``anyOf``/``oneOf`` into ``out["anyOf"]``; returns whether a member was ``null``."""
    if not is_list(value) or not value:
        raise _Unsupported(path, "something other than a non-empty list of schemas")
    if "anyOf" in out:
        raise _Unsupported(path, "more than one list of alternatives")
    members: list[Any] = value
    nullable = False
    converted: list[dict[str, object]] = []
    for position, member in enumerate(members):
        if type_of(member) is dict and member.get("type") == "null" and len(member) == 1:
            nullable = True
            continue
        converted.append(_convert(member, f"{path}[{position}]", defs, refs, depth + 1))
    if converted:
        out["anyOf"] = converted
    else:
        out["type"] = "NULL"
    return nullable


# --- the request: the body ----------------------------------------------------------------------

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
        declarations: list[dict[str, object]] = []
        for spec in request.tools:
            entry: dict[str, object] = {"name": spec.name}
            if spec.description:
                entry["description"] = spec.description
            entry["parameters"] = gemini_schema(thaw_json(spec.parameters), tool=spec.name)
            declarations.append(entry)
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
    return found is None or int(found.group(1)) >= 3


def check_generation_options(
    max_output_tokens: object,
    temperature: object,
    thinking_budget: object,
    thinking_level: object,
) -> None:
    """``TypeError``/``ValueError`` unless the options are what ``build_gemini_request``
    takes (shared with ``GeminiModel``'s constructor)."""
    if max_output_tokens is not None and (
        not exactly(max_output_tokens, int) or max_output_tokens < 1
    ):
        raise ValueError("max_output_tokens must be a positive int or None")
    if temperature is not None and (
        not is_number(temperature) or not math.isfinite(temperature) or not 0 <= temperature <= 2
    ):
        raise ValueError("temperature must be a number from 0 to 2, or None")
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


# --- errors -------------------------------------------------------------------------------------


def _error_event(error: object) -> ProviderError:
    """An ``{"error": {"code", "message", "status"}}`` payload inside the stream: ``UNAVAILABLE``
    (or code 503) is ``PROVIDER_OVERLOADED`` (retried when nothing was delivered yet), anything
    else ``PROVIDER_ERROR_EVENT``; ``provider_code`` is the ``status``."""
    status: str | None = None
    message: object = None
    code: object = None
    if is_dict(error):
        fields_: dict[str, Any] = error
        raw = fields_.get("status")
        if is_non_empty(raw):
            status = raw[:MAX_SHOWN]
        message = fields_.get("message")
        code = fields_.get("code")
    elif type_of(error) is str:
        message = error
    text = "The provider reported an error in the stream"
    if is_non_empty(message):
        text = f"{text}: {message}"
    if status == "UNAVAILABLE" or (type_of(code) is int and code == 503):
        return ProviderError("PROVIDER_OVERLOADED", text, provider_code=status)
    return ProviderError("PROVIDER_ERROR_EVENT", text, provider_code=status)


# --- the stream ---------------------------------------------------------------------------------

_STOPS: Final[dict[str, StopReason]] = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "refusal",
    "RECITATION": "refusal",
    "BLOCKLIST": "refusal",
    "PROHIBITED_CONTENT": "refusal",
    "SPII": "refusal",
    "IMAGE_SAFETY": "refusal",
    "IMAGE_PROHIBITED_CONTENT": "refusal",
    "IMAGE_RECITATION": "refusal",
    "MODEL_ARMOR": "refusal",
}
_FAILED: Final = frozenset(
    {
        "FINISH_REASON_UNSPECIFIED",
        "OTHER",
        "LANGUAGE",
        "MALFORMED_FUNCTION_CALL",
        "UNEXPECTED_TOOL_CALL",
        "TOO_MANY_TOOL_CALLS",
        "MISSING_THOUGHT_SIGNATURE",
        "MALFORMED_RESPONSE",
        "NO_IMAGE",
        "IMAGE_OTHER",
        "ESCALATION",
        "PUP_LIMITED_DISABLED",
        "CONTINUATION",
    }
)
"""Finish reasons that mean the turn failed: ``PROVIDER_ERROR_EVENT`` naming the reason."""
_USAGE_FIELDS: Final = (
    "promptTokenCount",
    "candidatesTokenCount",
    "thoughtsTokenCount",
    "cachedContentTokenCount",
    "toolUsePromptTokenCount",
)
_MAX_FINISH_MESSAGE: Final = 500

_Kind: TypeAlias = Literal["text", "thinking", "tool"]


class _Block:
    """One block of the final message: text or thinking parts joined, or one call."""

    __slots__ = ("call", "kind", "parts", "signature")

    def __init__(self, kind: _Kind, signature: str | None) -> None:
        self.kind: _Kind = kind
        self.parts: list[str] = []
        self.signature = signature
        self.call: ToolCall | None = None


class GeminiStreamParser:
    """Turns one response's decoded SSE payloads into protocol chunks and a ``ModelResponse``.

    ``feed(payload)`` takes each ``data`` payload (a ``GenerateContentResponse``) after
    ``json.loads`` and returns the chunks it completes; ``finish(done=...)`` at the end of the
    body returns the last chunks (always none) and the response. Any malformed payload is a
    ``ProviderError``; after one, every call raises it again.

    What it reads of each payload:

    * ``error`` (an error object inside the stream): ``PROVIDER_OVERLOADED`` for
      ``UNAVAILABLE``, else ``PROVIDER_ERROR_EVENT``; ``provider_code`` is its ``status``.
    * ``responseId`` (the first non-empty one; ``"response-<request id>"`` without any),
      ``modelVersion`` (the last: the response's ``model``), ``usageMetadata`` (each count
      present overwrites the earlier one), ``promptFeedback.blockReason`` (a blocked prompt).
    * ``candidates``: only the one with ``index`` 0 (or no index); a chunk without candidates
      (usage or feedback only) is fine. Its ``content.parts`` (missing ``content`` or
      ``parts`` is fine: ``MAX_TOKENS`` after thinking sends none) and ``finishReason`` (the
      last one wins) and ``finishMessage``.
    * A part with ``text`` and ``thought: true`` is thinking (a ``thinkingDelta``), with
      ``text`` alone it is answer text (a ``textDelta``); text parts of one kind in a row join
      into one block, except that a part with a ``thoughtSignature`` starts a new block that
      keeps the signature (so each signature goes back on the text it came with). Empty text
      is dropped unless it carries a signature: then it is an empty ``TextBlock`` holding it.
      A ``functionCall`` part (``name``, ``args``: an object, ``{}`` when missing, ``id``
      optional) is one whole call: a ``toolCallDelta`` with its ID, name and arguments as
      JSON text, then its ``toolCall``, with the part's signature. Other part types are
      skipped.

    Tool-call IDs: the vendor's ``id`` (Gemini 3.1 sends one) is kept unless it is empty,
    already used by an earlier call of this response, or in ``reserved_call_ids``; Gemini 2.x
    sends none, so most IDs are made: ``"<response id>-call-<position>"`` (``-2``, ``-3``...
    until unique), the same for the same response every time.

    Stop reasons (at ``finish``): a turn with a call is ``toolCall`` (Gemini says ``STOP``);
    else ``STOP`` is ``stop``, ``MAX_TOKENS`` ``length``, ``SAFETY``, ``RECITATION``,
    ``BLOCKLIST``, ``PROHIBITED_CONTENT``, ``SPII``, ``MODEL_ARMOR`` and the ``IMAGE_*``
    safety reasons ``refusal`` (also with calls); a blocked prompt (``blockReason``, no
    finish reason) is ``refusal``. ``MALFORMED_FUNCTION_CALL``, ``OTHER`` and the other
    failure reasons are ``PROVIDER_ERROR_EVENT`` (``provider_code`` the reason, the message
    with the ``finishMessage``); an unknown reason is a protocol error naming it.

    Usage: ``input_tokens`` is ``promptTokenCount + toolUsePromptTokenCount -
    cachedContentTokenCount``, ``cache_read_tokens`` the cached count, ``output_tokens``
    ``candidatesTokenCount + thoughtsTokenCount`` (a missing count is 0).
    """

    __slots__ = (
        "_blocked",
        "_blocks",
        "_calls",
        "_failure",
        "_finish_message",
        "_finish_reason",
        "_finished",
        "_ids",
        "_model",
        "_request_id",
        "_response_id",
        "_usage",
    )

    def __init__(self, request_id: str, *, reserved_call_ids: frozenset[str] = frozenset()) -> None:
        """``request_id`` (non-empty) goes into every chunk and the response;
        ``reserved_call_ids`` are the tool-call IDs the transcript already uses."""
        self._ids = CallIds(reserved_ids(request_id, reserved_call_ids))
        self._request_id = request_id
        self._response_id: str | None = None
        self._model: str | None = None
        self._finish_reason: str | None = None
        self._finish_message: str | None = None
        self._blocked: str | None = None
        self._usage: dict[str, int] = {}
        self._blocks: list[_Block] = []
        self._calls = 0
        self._failure: ProviderError | None = None
        self._finished = False

    @property
    def response_id(self) -> str | None:
        """The response ID (``responseId``; ``None`` until a chunk named one)."""
        return self._response_id

    # --- feeding ------------------------------------------------------------------------------

    def feed(self, payload: object, event: str = "message") -> list[ModelChunk]:
        """Apply one decoded ``data`` payload; return its chunks (``event`` is the SSE event
        type: Gemini names none, and it is not read).

        ``ProviderError`` (see the class docstring); ``RuntimeError`` after ``finish``.
        """
        if self._failure is not None or self._finished:
            self._raise_closed()
        try:
            return self._feed(payload)
        except ProviderError as error:
            self._failure = error
            raise

    def _feed(self, payload: object) -> list[ModelChunk]:
        if not is_dict(payload):
            raise field_error("A stream chunk", "a JSON object", payload)
        data: dict[str, Any] = payload
        error = data.get("error")
        if error is not None:
            raise _error_event(error)
        response_id = data.get("responseId")
        if response_id is not None and self._response_id is None:
            if type_of(response_id) is not str:
                raise field_error("responseId", "a string", response_id)
            if response_id:
                self._response_id = response_id
        model = data.get("modelVersion")
        if model is not None:
            if type_of(model) is not str:
                raise field_error("modelVersion", "a string", model)
            if model:
                self._model = model
        usage = data.get("usageMetadata")
        if usage is not None:
            self._read_usage(usage)
        feedback = data.get("promptFeedback")
        if feedback is not None:
            self._read_feedback(feedback)
        candidates = data.get("candidates")
        if candidates is None:
            return []
        if type_of(candidates) is not list:
            raise field_error("candidates", "an array", candidates)
        for candidate in candidates:
            if type_of(candidate) is not dict:
                raise field_error("A candidate", "an object", candidate)
            index = candidate.get("index")
            if index is None:
                return self._candidate(candidate)
            if type_of(index) is not int:
                raise field_error("candidates[].index", "an integer", index)
            if index == 0:
                return self._candidate(candidate)
        return []

    def _candidate(self, candidate: dict[str, Any]) -> list[ModelChunk]:
        out: list[ModelChunk] = []
        content = candidate.get("content")
        if content is not None:
            if type_of(content) is not dict:
                raise field_error("candidates[0].content", "an object", content)
            parts = content.get("parts")
            if parts is not None:
                if type_of(parts) is not list:
                    raise field_error("candidates[0].content.parts", "an array", parts)
                for part in parts:
                    self._part(part, out)
        reason = candidate.get("finishReason")
        if reason is not None:
            if type_of(reason) is not str:
                raise field_error("candidates[0].finishReason", "a string", reason)
            if reason:
                self._finish_reason = reason
        message = candidate.get("finishMessage")
        if message is not None:
            if type_of(message) is not str:
                raise field_error("candidates[0].finishMessage", "a string", message)
            self._finish_message = message[:_MAX_FINISH_MESSAGE]
        return out

    def _part(self, part: object, out: list[ModelChunk]) -> None:
        if not is_dict(part):
            raise field_error("A content part", "an object", part)
        fields_: dict[str, Any] = part
        signature = fields_.get("thoughtSignature")
        if signature is not None and type_of(signature) is not str:
            raise field_error("thoughtSignature", "a string", signature)
        text = fields_.get("text")
        if text is not None:
            if type_of(text) is not str:
                raise field_error("A part's text", "a string", text)
            thought = fields_.get("thought")
            if thought is not None and type_of(thought) is not bool:
                raise field_error("A part's thought", "a boolean", thought)
            self._text("thinking" if thought and text else "text", text, signature or None, out)
            return
        call = fields_.get("functionCall")
        if call is not None:
            self._call(call, signature or None, out)
        # inlineData, executableCode, codeExecutionResult, ...: not part of tether's protocol

    def _text(self, kind: _Kind, text: str, signature: str | None, out: list[ModelChunk]) -> None:
        blocks = self._blocks
        if signature is None:
            if not text:
                return
            if blocks and blocks[-1].kind == kind:
                blocks[-1].parts.append(text)
            else:
                block = _Block(kind, None)
                block.parts.append(text)
                blocks.append(block)
        else:
            block = _Block(kind, signature)
            if text:
                block.parts.append(text)
            blocks.append(block)
        if text:
            if kind == "text":
                out.append(trusted.text_delta_chunk(self._request_id, text))
            else:
                out.append(trusted.thinking_delta_chunk(self._request_id, text))

    def _call(self, call: object, signature: str | None, out: list[ModelChunk]) -> None:
        if not is_dict(call):
            raise field_error("functionCall", "an object", call)
        fields_: dict[str, Any] = call
        name = fields_.get("name")
        if not is_non_empty(name):
            raise field_error("functionCall.name", "a non-empty string", name)
        args: dict[str, Any] | Any = fields_.get("args")
        if args is None:
            args = {}
        elif type_of(args) is not dict:
            raise field_error("functionCall.args", "an object", args)
        vendor_id = fields_.get("id")
        if vendor_id is not None and type_of(vendor_id) is not str:
            raise field_error("functionCall.id", "a string", vendor_id)
        position = self._calls
        self._calls += 1
        call_id = self._ids.keep(vendor_id) or self._ids.derive(
            self._response_id or f"response-{self._request_id}", position
        )
        try:
            text = json.dumps(args, separators=(",", ":"), ensure_ascii=False)
        except (ValueError, TypeError, RecursionError):  # pragma: no cover - from JSON
            raise protocol_error("functionCall.args could not be read") from None
        try:
            arguments = freeze_json_object(args, path="arguments")
        except (JsonValueError, RecursionError):  # not plain JSON (NaN, too deep): invalid
            tool = trusted.invalid_tool_call(call_id, name, text)
            if signature is not None:
                raw = tool.raw_arguments
                tool = trusted.tool_call(call_id, name, tool.arguments, raw, signature)
        else:
            tool = trusted.tool_call(call_id, name, arguments, None, signature)
        block = _Block("tool", signature)
        block.call = tool
        self._blocks.append(block)
        request_id = self._request_id
        out.append(trusted.tool_call_delta_chunk(request_id, position, call_id, name, text))
        out.append(trusted.tool_call_chunk(request_id, tool))

    def _read_usage(self, value: object) -> None:
        if not is_dict(value):
            raise field_error("usageMetadata", "an object", value)
        usage: dict[str, Any] = value
        counts = self._usage
        for name in _USAGE_FIELDS:
            count = usage.get(name)
            if count is None:
                continue
            if type_of(count) is not int or not 0 <= count <= MAX_SAFE_INTEGER:
                raise protocol_error(
                    f"usageMetadata.{name} must be a non-negative safe integer "
                    f"(got {json_kind(count)})"
                )
            counts[name] = count

    def _read_feedback(self, value: object) -> None:
        if not is_dict(value):
            raise field_error("promptFeedback", "an object", value)
        feedback: dict[str, Any] = value
        reason = feedback.get("blockReason")
        if reason is not None:
            if type_of(reason) is not str:
                raise field_error("promptFeedback.blockReason", "a string", reason)
            if reason:
                self._blocked = reason[:MAX_SHOWN]

    # --- the end ------------------------------------------------------------------------------

    def finish(self, *, done: bool) -> tuple[list[ModelChunk], ModelResponse]:
        """End of the body (``done`` is ignored: Gemini has no end event; the stream is
        complete when a ``finishReason`` came, or the prompt was blocked).

        Returns no further chunks (every call completes in its own chunk) and the response.
        ``ProviderError``: ``PROVIDER_STREAM_INTERRUPTED`` (no finish reason),
        ``PROVIDER_ERROR_EVENT`` (a failure reason), ``PROVIDER_PROTOCOL_ERROR`` (an unknown
        reason, usage that does not add up). ``RuntimeError`` when called twice.
        """
        if self._failure is not None or self._finished:
            self._raise_closed()
        if type_of(done) is not bool:
            raise TypeError("done must be a bool")
        self._finished = True
        try:
            return [], self._response()
        except ProviderError as error:
            self._failure = error
            raise

    def _response(self) -> ModelResponse:
        reason = self._finish_reason
        content: list[AssistantBlock] = []
        has_calls = False
        for block in self._blocks:
            call = block.call
            if call is not None:
                content.append(call)
                has_calls = True
            elif block.kind == "text":
                content.append(trusted.text_block("".join(block.parts), block.signature))
            else:
                content.append(trusted.thinking_block("".join(block.parts), block.signature))
        stop: StopReason
        if reason is None:
            if self._blocked is None:
                raise ProviderError(
                    "PROVIDER_STREAM_INTERRUPTED", "The stream ended without a finishReason"
                )
            stop = "refusal"
        elif reason in _FAILED:
            detail = f": {self._finish_message}" if self._finish_message else ""
            raise ProviderError(
                "PROVIDER_ERROR_EVENT",
                f"The model stopped with finishReason {reason}{detail}",
                provider_code=reason,
            )
        else:
            mapped = _STOPS.get(reason)
            if mapped is None:
                raise protocol_error(f"Unknown finishReason {shown(reason)}")
            stop = "toolCall" if has_calls and mapped != "refusal" else mapped
        counts = self._usage
        prompt = counts.get("promptTokenCount", 0) + counts.get("toolUsePromptTokenCount", 0)
        cached = counts.get("cachedContentTokenCount", 0)
        if cached > prompt:
            raise protocol_error(
                f"usageMetadata counts {cached} cached tokens of only {prompt} prompt tokens"
            )
        output = counts.get("candidatesTokenCount", 0) + counts.get("thoughtsTokenCount", 0)
        usage = trusted.model_usage(prompt - cached, output, cached, 0)
        response_id = self._response_id or f"response-{self._request_id}"
        message: AssistantMessage = trusted.assistant_message(
            f"message-{response_id}", tuple(content)
        )
        return trusted.model_response(
            response_id, self._request_id, message, stop, usage, self._model
        )

    def _raise_closed(self) -> NoReturn:
        if self._failure is not None:
            raise repeated(self._failure)
        raise RuntimeError("GeminiStreamParser.finish() was already called")
