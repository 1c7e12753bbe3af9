"""OpenAI Responses on the wire: the request body out, the stream normalized back in.

Pure data work (no I/O, no HTTP client): ``OpenAIResponsesModel`` sends what
``build_responses_request`` builds to ``POST /v1/responses`` and feeds each decoded SSE
payload to a ``ResponsesStreamParser``, which turns it into protocol chunks and, at the end,
one ``ModelResponse``. ``parse_response_body`` does the same for a whole ``response`` JSON
body (a server that ignored ``stream: true``).

The conversation is **stateless**: every request sends ``store: false`` and asks for
``include: ["reasoning.encrypted_content"]``, so each reasoning item comes back with its
encrypted content, which tether keeps in the ``ThinkingBlock``'s ``signature`` and sends back
unchanged on the next turn (``reasoning_signature`` says how it is written). No
``previous_response_id`` is ever sent: a session tree that forks conversations needs nothing
stored at the vendor.

The rules (docs/providers.md, "OpenAI Responses"):

* Vendor payloads are untrusted ``object`` data. The parser keys on each payload's own
  ``type`` (a data-only proxy drops the ``event:`` lines); unknown event types, item types
  and fields are ignored (the API has about 60 event types, built-in tools add their own
  items). The fields read must have their documented JSON types and tether's invariants
  (an item added once per ``output_index``, a delta that fits its item, a final text that
  continues what was streamed) are closed sets: breaking one is a ``ProviderError`` with code
  ``PROVIDER_PROTOCOL_ERROR``, never a ``KeyError``.
* The stream ends on a typed terminal event, never on ``[DONE]``: ``response.completed``,
  ``response.incomplete``, ``response.failed`` or ``error``. End of stream before one is
  ``PROVIDER_STREAM_INTERRUPTED``.
* Usage is read only from the terminal event's ``response.usage`` (``created`` and
  ``in_progress`` carry ``null``); it is never summed.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from typing import Any, Final, Literal, NoReturn, TypeAlias

from tether._text import is_non_empty
from tether._types import exactly, is_dict, is_list, type_of
from tether.jsonvalue import thaw_json
from tether.protocol import (
    MAX_SAFE_INTEGER,
    ZERO_USAGE,
    AssistantBlock,
    AssistantMessage,
    ImageBlock,
    ModelChunk,
    ModelRequest,
    ModelResponse,
    ModelUsage,
    StopReason,
    ThinkingBlock,
    ToolCall,
)
from tether.protocol import _trusted as trusted
from tether.providers._images import data_url
from tether.providers._streaming import transcript_call_ids
from tether.providers._wire import (
    MAX_SHOWN,
    BadArguments,
    field_error,
    is_responses_reasoning,
    kind,
    parse_arguments,
    protocol,
    raise_again,
    shown,
    unique_call_id,
)
from tether.providers.errors import ProviderError, ProviderErrorCode
from tether.providers.openai_wire import arguments_text

__all__ = [
    "REASONING_SUMMARIES",
    "ResponsesStreamParser",
    "build_responses_request",
    "parse_response_body",
    "reasoning_item",
    "reasoning_signature",
    "transcript_call_ids",
]

REASONING_SUMMARIES: Final = ("auto", "concise", "detailed")
"""The values ``reasoning.summary`` takes: how much of its reasoning the model summarizes."""

# --- reasoning signatures ---------------------------------------------------------------------


def reasoning_signature(item_id: str, encrypted_content: str) -> str:
    """The ``ThinkingBlock.signature`` of a reasoning item: the JSON text of the item as it is
    sent back, ``{"type":"reasoning","id":…,"encrypted_content":…}``. The encrypted content
    is bound to its ``rs_`` id, so both are kept, exactly as received."""
    return json.dumps(
        {"type": "reasoning", "id": item_id, "encrypted_content": encrypted_content},
        separators=(",", ":"),
        ensure_ascii=False,
    )


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
    if max_output_tokens is not None and (
        type_of(max_output_tokens) is not int or max_output_tokens < 1
    ):
        raise ValueError("max_output_tokens must be a positive int or None")
    if temperature is not None and (
        type_of(temperature) not in (int, float)
        or not math.isfinite(temperature)
        or not 0 <= temperature <= 2
    ):
        raise ValueError("temperature must be a number from 0 to 2, or None")
    if reasoning_effort is not None and not is_non_empty(reasoning_effort):
        raise ValueError("reasoning_effort must be a non-empty string or None")
    if reasoning_summary is not None and reasoning_summary not in REASONING_SUMMARIES:
        raise ValueError("reasoning_summary must be 'auto', 'concise', 'detailed' or None")
    if type_of(stream) is not bool:
        raise TypeError("stream must be a bool")

    items: list[dict[str, object]] = []
    for message in request.messages:
        if message.role == "user":
            content: object = message.content
            if message.images:
                parts = [_input_image(image) for image in message.images]
                if message.content:
                    parts.append({"type": "input_text", "text": message.content})
                content = parts
            items.append({"role": "user", "content": content})
        elif message.role == "toolResult":
            output: object = message.content
            if message.images:
                outputs: list[dict[str, object]] = (
                    [{"type": "input_text", "text": message.content}] if message.content else []
                )
                outputs.extend(_input_image(image) for image in message.images)
                output = outputs
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
        tools: list[dict[str, object]] = []
        for spec in request.tools:
            entry: dict[str, object] = {"type": "function", "name": spec.name}
            if spec.description:
                entry["description"] = spec.description
            entry["parameters"] = thaw_json(spec.parameters)
            entry["strict"] = False
            tools.append(entry)
        body["tools"] = tools
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


def _input_image(image: ImageBlock) -> dict[str, object]:
    return {"type": "input_image", "image_url": data_url(image), "detail": "auto"}


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


# --- errors -----------------------------------------------------------------------------------

_ERROR_CODES: Final[dict[str, ProviderErrorCode]] = {
    "server_is_overloaded": "PROVIDER_OVERLOADED",
    "server_overloaded": "PROVIDER_OVERLOADED",
    "overloaded_error": "PROVIDER_OVERLOADED",
    "rate_limit_exceeded": "PROVIDER_RATE_LIMITED",
    "context_length_exceeded": "PROVIDER_CONTEXT_OVERFLOW",
}
"""Vendor error codes in a stream that have a code of their own; any other is
``PROVIDER_ERROR_EVENT``. The overloaded and rate-limited ones, as the first event, are
retried like their HTTP status (nothing reached the consumer yet)."""


def _vendor_code(value: object) -> str | None:
    if exactly(value, int) and -(10**18) < value < 10**18:
        return str(value)
    if is_non_empty(value):
        return value[:MAX_SHOWN]
    return None


def _error_event(error: object, what: str) -> ProviderError:
    """The ``ProviderError`` for a vendor error object ``{"code", "type", "message"}`` (an
    ``error`` event's ``error``, a flat ``error`` event itself, or ``response.error``).
    ``provider_code`` is its ``code``, else its ``type``."""
    message: object = None
    code: str | None = None
    if is_dict(error):
        fields_: dict[str, Any] = error
        message = fields_.get("message")
        code = _vendor_code(fields_.get("code")) or _vendor_code(fields_.get("type"))
        if code == "error":  # the flat shape's own "type": "error" names no code
            code = None
    elif type_of(error) is str:
        message = error
    text = f"The provider {what}"
    if is_non_empty(message):
        text = f"{text}: {message}"
    mapped = _ERROR_CODES.get(code or "", "PROVIDER_ERROR_EVENT")
    return ProviderError(mapped, text, provider_code=code)


# --- the stream -------------------------------------------------------------------------------

_ItemKind: TypeAlias = Literal["message", "reasoning", "call", "skip"]
_ITEM_KINDS: Final[dict[str, _ItemKind]] = {
    "message": "message",
    "reasoning": "reasoning",
    "function_call": "call",
}
_PART_SEPARATOR: Final = "\n\n"
"""Between two summary (or reasoning text) parts of one reasoning item, in its one block."""

_text_delta: Final = trusted.text_delta_chunk
_thinking_delta: Final = trusted.thinking_delta_chunk
_tool_call_delta: Final = trusted.tool_call_delta_chunk

_TAIL_TYPES: Final[dict[str, str | None]] = {
    "text": "response.output_text.delta",
    "summary": "response.reasoning_summary_text.delta",
    "reasoning": None,
}
"""The delta event that continues a part of each key kind on ``feed``'s hot path (``None``:
always the general path)."""

_PartKey: TypeAlias = "tuple[str, int]"
"""A text part of an item: ``("text", content index)`` (output text and refusals of a
message), ``("summary", summary index)`` or ``("reasoning", content index)``."""


class _Item:
    """One output item (one ``output_index``)."""

    __slots__ = (
        "arguments",
        "call",
        "call_id",
        "done",
        "encrypted",
        "final_arguments",
        "index",
        "item_id",
        "kind",
        "name",
        "order",
        "parts",
        "position",
        "tail",
        "tail_field",
        "tail_index",
        "tail_type",
    )

    def __init__(self, kind: _ItemKind, index: int, item_id: str | None) -> None:
        self.kind: _ItemKind = kind
        self.index = index
        self.item_id = item_id
        self.done = False
        self.parts: dict[_PartKey, list[str]] = {}  # text and reasoning: streamed text by part
        self.order: list[_PartKey] = []  # the parts in the order they first streamed
        # The part that streamed last, for feed's hot path: its texts, the field naming its
        # index in a delta, that index, and the delta event type that continues it.
        self.tail: list[str] = []
        self.tail_field = ""
        self.tail_index = -1
        self.tail_type: str | None = None
        self.encrypted: str | None = None  # reasoning: from output_item.done only
        self.arguments: list[str] = []  # calls: the argument deltas
        self.final_arguments: str | None = None  # calls: function_call_arguments.done
        self.position = -1  # calls: position among this response's calls
        self.call_id = ""
        self.name = ""
        self.call: ToolCall | None = None  # calls, once complete


_State: TypeAlias = Literal["open", "ended", "finished"]
_Terminal: TypeAlias = Literal["completed", "incomplete"]


class ResponsesStreamParser:
    """Turns one response's decoded SSE payloads into protocol chunks and a ``ModelResponse``.

    ``feed(payload, event=...)`` takes each ``data`` payload after ``json.loads`` and returns
    the chunks it completes; ``finish(done=...)`` at the end of the body returns the last
    chunks (always none: every item completes at its ``output_item.done`` or the terminal
    event) and the response. Any malformed payload is a ``ProviderError``; after one, every
    call raises it again.

    What it reads, keyed on the payload's ``type``:

    * ``response.created`` / ``in_progress`` / ``queued``: the response ``id`` and ``model``
      (the first non-empty ones; ``"response-<request id>"`` when none came).
    * ``response.output_item.added``: opens the item at ``output_index`` (once per index):
      ``message``, ``reasoning``, ``function_call`` (``call_id``, ``name``: a
      ``toolCallDelta`` with both); other item types (built-in tools' calls) are skipped with
      their events.
    * ``response.output_text.delta`` and ``response.refusal.delta`` into a ``message`` (a
      ``textDelta``; a refusal makes the response a ``refusal``),
      ``response.reasoning_summary_text.delta`` and ``response.reasoning_text.delta`` into a
      ``reasoning`` item (a ``thinkingDelta``; a second part of one item is preceded by a
      blank line), ``response.function_call_arguments.delta`` into a ``function_call`` (a
      ``toolCallDelta``). Items are found by ``output_index`` (else ``item_id``); a delta
      whose item was never added is a protocol error, and so is one that does not fit its
      item. Text or reasoning of an earlier item after a later one streamed is a protocol
      error (the message keeps the output order, and must equal the chunks).
    * The ``.done`` events and ``response.output_item.done`` are the authority on the final
      text: when one says more than was streamed, the rest is streamed then (a server that
      sends no deltas streams each text whole); one that contradicts what was streamed is a
      protocol error. A call's arguments are ``function_call_arguments.done``'s, else the
      deltas, else ``output_item.done``'s (LM Studio sends ``{}`` there after a real
      ``.done``). A reasoning item's ``encrypted_content`` is taken from
      ``output_item.done`` only (the copy in ``added`` is incomplete).
    * ``output_item.done`` of a ``function_call`` completes the call: its arguments are
      parsed (``""`` is ``{}``) and its ``toolCall`` chunk emitted. Argument text that is not a
      JSON object is never repaired: it is an *invalid call* (``arguments`` ``{}``,
      ``raw_arguments`` the text), which the loop answers with ``TOOL_ARGUMENTS_INVALID``.
    * Terminal events: ``response.completed`` and ``response.incomplete`` end the response.
      Items still open then are completed from the terminal ``response.output`` (the full
      authority) when it has them, else from what streamed; on ``incomplete`` an unfinished
      call is left out (it was cut, and the loop runs no call of a cut turn).
      ``response.failed`` (``response.error``) and ``error`` (``{"error": {…}}`` or the flat
      ``{"code", "message"}``) are errors: ``PROVIDER_OVERLOADED`` for
      ``server_is_overloaded``, ``PROVIDER_RATE_LIMITED`` for ``rate_limit_exceeded``,
      ``PROVIDER_CONTEXT_OVERFLOW`` for ``context_length_exceeded``, else
      ``PROVIDER_ERROR_EVENT``; ``provider_code`` is the vendor's code. Any event after the
      terminal one is a protocol error (a ``response.failed`` after an ``error`` raises that
      error again: failures are sticky).

    Tool-call IDs are the vendor's ``call_id`` (what a ``function_call_output`` answers),
    kept exactly unless it is empty, already used by an earlier call of this response, or in
    ``reserved_call_ids``; then ``"<response id>-call-<position>"``, with ``-2``, ``-3``...
    until it is unique. Names must be non-empty.

    The final message holds the items in output order: a ``message`` is one text block (its
    text and refusal parts joined), a ``reasoning`` item one thinking block (its parts joined
    by a blank line; ``signature`` from ``reasoning_signature`` when it had encrypted
    content, and ``redacted`` when it had no text to show), a ``function_call`` its
    ``ToolCall`` (the very object of its chunk). Items with nothing in them are left out.

    Stop reasons: ``completed`` is ``toolCall`` when the message has calls, else
    ``refusal`` when a refusal streamed, else ``stop``; ``incomplete`` (or a ``completed``
    whose status says ``incomplete``, as some compatible servers send) is ``refusal`` for
    ``content_filter`` and ``length`` otherwise (``max_output_tokens``, or no reason). Usage:
    ``input_tokens`` less ``cached_tokens`` and ``cache_write_tokens`` is the uncached input;
    ``output_tokens`` already counts the reasoning tokens (``reasoning_tokens`` keeps them
    apart for reading, never added on top).
    """

    __slots__ = (
        "_by_id",
        "_calls",
        "_failure",
        "_items",
        "_last_streamed",
        "_model",
        "_reasoning_tokens",
        "_refused",
        "_request_id",
        "_reserved",
        "_response_id",
        "_state",
        "_stop",
        "_usage",
        "_used_ids",
    )

    def __init__(self, request_id: str, *, reserved_call_ids: Iterable[str] = frozenset()) -> None:
        """``request_id`` (non-empty) goes into every chunk and the response;
        ``reserved_call_ids`` are the tool-call IDs the transcript already uses
        (``transcript_call_ids``)."""
        if not is_non_empty(request_id):
            raise TypeError("request_id must be a non-empty string")
        reserved = frozenset(reserved_call_ids)
        if not all(type_of(call_id) is str for call_id in reserved):
            raise TypeError("reserved_call_ids must be strings")
        self._request_id = request_id
        self._reserved = reserved
        self._response_id: str | None = None
        self._model: str | None = None
        self._items: dict[int, _Item] = {}
        self._by_id: dict[str, int] = {}
        self._calls = 0
        self._used_ids: set[str] = set()
        self._last_streamed = -1  # the output index whose text or reasoning streamed last
        self._refused = False
        self._stop: StopReason | None = None
        self._usage: ModelUsage = ZERO_USAGE
        self._reasoning_tokens = 0
        self._failure: ProviderError | None = None
        self._state: _State = "open"

    @property
    def stopped(self) -> bool:
        """A terminal event (``response.completed`` or ``response.incomplete``) was fed: the
        stream is complete."""
        return self._state == "ended"

    @property
    def response_id(self) -> str | None:
        """The response ID seen so far (``None`` until an event carried one)."""
        return self._response_id

    @property
    def reasoning_tokens(self) -> int:
        """The terminal usage's ``output_tokens_details.reasoning_tokens`` (part of
        ``output_tokens``; 0 until the terminal event, or when it sent none)."""
        return self._reasoning_tokens

    # --- feeding ------------------------------------------------------------------------------

    def feed(self, payload: object, event: str = "message") -> list[ModelChunk]:
        """Apply one decoded ``data`` payload (SSE event type ``event``); return its chunks.

        ``ProviderError`` (see the class docstring); ``RuntimeError`` after ``finish``.
        """
        if self._failure is not None or self._state == "finished":
            self._raise_closed()
        try:
            if not is_dict(payload):
                raise field_error("A stream event", "a JSON object", payload)
            data: dict[str, Any] = payload
            kind_ = data.get("type")
            # The hot path, one per token: a text or reasoning summary delta that continues
            # the part that streamed last in its item, or an argument delta into an open call,
            # without a further call (each Python call saved is measurable:
            # benchmarks/bench_responses.py). Anything else, and every case this does not
            # settle, takes the general path (``_event``), which gives the same result.
            if (
                kind_ == "response.reasoning_summary_text.delta"
                or kind_ == "response.output_text.delta"
            ):
                position: Any = data.get("output_index")
                if type_of(position) is int:
                    item = self._items.get(position)
                    if item is not None and item.tail_type == kind_:
                        index: Any = data.get(item.tail_field)
                        delta: Any = data.get("delta")
                        if (
                            index == item.tail_index
                            and type_of(index) is int
                            and type_of(delta) is str
                            and item.index >= self._last_streamed
                        ):
                            if not delta:
                                return []
                            item.tail.append(delta)
                            self._last_streamed = item.index
                            if item.kind == "message":
                                return [_text_delta(self._request_id, delta)]
                            return [_thinking_delta(self._request_id, delta)]
            elif kind_ == "response.function_call_arguments.delta" and self._state == "open":
                position = data.get("output_index")
                if type_of(position) is int:
                    item = self._items.get(position)
                    delta = data.get("delta")
                    if (
                        item is not None
                        and item.kind == "call"
                        and not item.done
                        and type_of(delta) is str
                    ):
                        if not delta:
                            return []
                        item.arguments.append(delta)
                        return [
                            _tool_call_delta(self._request_id, item.position, None, None, delta)
                        ]
            return self._event(data, kind_, event)
        except ProviderError as error:
            self._failure = error
            raise

    def _event(self, data: dict[str, Any], kind_: object, event: str) -> list[ModelChunk]:
        """Every event but the hot path's well-formed deltas."""
        if kind_ == "error" or event == "error":
            error = data.get("error")
            raise _error_event(error if error else data, "reported an error in the stream")
        if not exactly(kind_, str):
            raise field_error("A stream event's type", "a string", kind_)
        name: str = kind_
        if not name.startswith("response."):
            return []  # not a Responses event: tolerated, like unknown ones
        if self._state != "open":
            raise protocol(f"{name} arrived after the response ended")
        if name == "response.failed":
            raise self._failed(data)
        if name in ("response.created", "response.in_progress", "response.queued"):
            self._identify(data.get("response"), name)
            return []
        if name == "response.output_item.added":
            return self._item_added(data)
        if name == "response.output_item.done":
            return self._item_done(data)
        if name == "response.output_text.delta" or name == "response.refusal.delta":
            item, index = self._part(data, name, "message", "content_index")
            delta: Any = data.get("delta")
            if type_of(delta) is not str:
                raise field_error(f"{name}.delta", "a string", delta)
            if name == "response.refusal.delta":
                self._refused = True
            return self._text(item, ("text", index), delta)
        if name == "response.output_text.done" or name == "response.refusal.done":
            item, index = self._part(data, name, "message", "content_index")
            field = "text" if name == "response.output_text.done" else "refusal"
            text: Any = data.get(field)
            if type_of(text) is not str:
                raise field_error(f"{name}.{field}", "a string", text)
            if name == "response.refusal.done":
                self._refused = True
            return self._settle(item, ("text", index), text, name)
        if name == "response.reasoning_summary_text.delta":
            item, index = self._part(data, name, "reasoning", "summary_index")
            return self._thinking(item, ("summary", index), data.get("delta"), name)
        if name == "response.reasoning_text.delta":
            item, index = self._part(data, name, "reasoning", "content_index")
            return self._thinking(item, ("reasoning", index), data.get("delta"), name)
        if name == "response.reasoning_summary_text.done":
            item, index = self._part(data, name, "reasoning", "summary_index")
            return self._settle_text(item, ("summary", index), data.get("text"), name)
        if name == "response.reasoning_text.done":
            item, index = self._part(data, name, "reasoning", "content_index")
            return self._settle_text(item, ("reasoning", index), data.get("text"), name)
        if name == "response.function_call_arguments.delta":
            item = self._find(data, name, "call")
            delta = data.get("delta")
            if type_of(delta) is not str:
                raise field_error(f"{name}.delta", "a string", delta)
            if item.kind != "call" or not delta:
                return []
            item.arguments.append(delta)
            return [_tool_call_delta(self._request_id, item.position, None, None, delta)]
        if name == "response.function_call_arguments.done":
            item = self._find(data, name, "call")
            arguments = data.get("arguments")
            if type_of(arguments) is not str:
                raise field_error(f"{name}.arguments", "a string", arguments)
            if item.kind == "call":
                item.final_arguments = arguments
            return []
        if name == "response.completed":
            return self._terminal(data, "completed")
        if name == "response.incomplete":
            return self._terminal(data, "incomplete")
        return []  # content_part, summary_part, built-in tools' events, future event types

    # --- items --------------------------------------------------------------------------------

    def _identify(self, response: object, where: str) -> dict[str, Any] | None:
        """Read the response object's ``id`` and ``model`` (the first non-empty ones)."""
        if response is None:
            return None
        if not is_dict(response):
            raise field_error(f"{where}.response", "an object", response)
        fields_: dict[str, Any] = response
        response_id = fields_.get("id")
        if response_id is not None and type_of(response_id) is not str:
            raise field_error(f"{where}.response.id", "a string", response_id)
        if self._response_id is None and is_non_empty(response_id):
            self._response_id = response_id
        model = fields_.get("model")
        if model is not None and type_of(model) is not str:
            raise field_error(f"{where}.response.model", "a string", model)
        if self._model is None and model:
            self._model = model
        return fields_

    def _output_index(self, data: dict[str, Any], where: str) -> int:
        index: Any = data.get("output_index")
        if type_of(index) is not int or index < 0:
            raise field_error(f"{where}.output_index", "a non-negative integer", index)
        value: int = index
        return value

    def _item_added(self, data: dict[str, Any]) -> list[ModelChunk]:
        where = "response.output_item.added"
        index = self._output_index(data, where)
        if index in self._items:
            raise protocol(f"{where} for output {index}, which was already added")
        fields_ = self._item_fields(data.get("item"), where)
        item = self._new_item(index, fields_, where)
        out: list[ModelChunk] = []
        if item.kind == "call":
            self._call_fields(item, fields_, where, required=False)
            self._start_call(item, out)
        return out

    def _item_fields(self, value: object, where: str) -> dict[str, Any]:
        if not is_dict(value):
            raise field_error(f"{where}.item", "an object", value)
        fields_: dict[str, Any] = value
        return fields_

    def _new_item(self, index: int, fields_: dict[str, Any], where: str) -> _Item:
        item_type: Any = fields_.get("type")
        if type_of(item_type) is not str:
            raise field_error(f"{where}.item.type", "a string", item_type)
        item_id = fields_.get("id")
        if item_id is not None and type_of(item_id) is not str:
            raise field_error(f"{where}.item.id", "a string", item_id)
        item = _Item(_ITEM_KINDS.get(item_type, "skip"), index, item_id or None)
        self._items[index] = item
        if item_id:
            self._by_id.setdefault(item_id, index)
        return item

    def _call_fields(
        self, item: _Item, fields_: dict[str, Any], where: str, *, required: bool
    ) -> None:
        """A ``function_call`` item's ``name`` and ``call_id``: set once (an identical repeat
        is fine, a different one a protocol error); ``required`` at ``output_item.done``."""
        name = fields_.get("name")
        if name is not None and type_of(name) is not str:
            raise field_error(f"{where}.item.name", "a string", name)
        if name:
            if item.name and name != item.name:
                raise protocol(
                    f"Call {item.position} changed its name from {shown(item.name)} to "
                    f"{shown(name)}"
                )
            item.name = name
        elif required and not item.name:
            raise field_error(f"{where}.item.name", "a non-empty string", name)
        vendor_id = fields_.get("call_id")
        if vendor_id is not None and type_of(vendor_id) is not str:
            raise field_error(f"{where}.item.call_id", "a string", vendor_id)
        if vendor_id and not item.call_id:
            item.call_id = vendor_id  # provisional: _start_call checks it is free

    def _start_call(self, item: _Item, out: list[ModelChunk]) -> None:
        """Give the call its position and ID; its first ``toolCallDelta`` (ID and name)."""
        item.position = self._calls
        self._calls += 1
        vendor_id = item.call_id
        if vendor_id and vendor_id not in self._reserved and vendor_id not in self._used_ids:
            self._used_ids.add(vendor_id)
        else:
            item.call_id = self._derive_id(item.position)
        out.append(
            _tool_call_delta(self._request_id, item.position, item.call_id, item.name or None, "")
        )

    def _derive_id(self, position: int) -> str:
        response_id = self._resolved_response_id()
        return unique_call_id(response_id, position, self._reserved, self._used_ids)

    def _resolved_response_id(self) -> str:
        response_id = self._response_id
        if response_id is None:
            response_id = self._response_id = f"response-{self._request_id}"
        return response_id

    def _find(self, data: dict[str, Any], where: str, wanted: _ItemKind) -> _Item:
        """The open item an event is about: by ``output_index``, else by ``item_id``."""
        index = data.get("output_index")
        if index is None:
            item_id = data.get("item_id")
            if not is_non_empty(item_id) or item_id not in self._by_id:
                raise protocol(f"{where} names no output that was added")
            index = self._by_id[item_id]
        elif type_of(index) is not int:
            raise field_error(f"{where}.output_index", "a non-negative integer", index)
        item = self._items.get(index)
        if item is None:
            raise protocol(f"{where} for output {index}, which was never added")
        if item.done:
            raise protocol(f"{where} for output {index}, which is already done")
        if item.kind != wanted and item.kind != "skip":
            raise protocol(f"A {where} does not fit the {item.kind} item at output {index}")
        return item

    def _part(
        self, data: dict[str, Any], where: str, wanted: _ItemKind, field: str
    ) -> tuple[_Item, int]:
        item = self._find(data, where, wanted)
        index: Any = data.get(field)
        if type_of(index) is not int or index < 0:
            raise field_error(f"{where}.{field}", "a non-negative integer", index)
        value: int = index
        return item, value

    def _text(self, item: _Item, key: _PartKey, delta: str) -> list[ModelChunk]:
        """An output text (or refusal) delta into a message."""
        if not delta or item.kind != "message":
            return []
        if item.index < self._last_streamed:
            self._interleaved(item.index)
        self._last_streamed = item.index
        parts = item.parts.get(key)
        if parts is None:
            parts = item.parts[key] = []
            item.order.append(key)
        parts.append(delta)
        self._tail(item, key, parts, "content_index")
        return [_text_delta(self._request_id, delta)]

    def _thinking(self, item: _Item, key: _PartKey, delta: object, where: str) -> list[ModelChunk]:
        """A reasoning summary (or reasoning text) delta into a reasoning item."""
        if not exactly(delta, str):
            raise field_error(f"{where}.delta", "a string", delta)
        text: str = delta
        if not text or item.kind != "reasoning":
            return []
        return self._thinking_text(item, key, text)

    def _thinking_text(self, item: _Item, key: _PartKey, text: str) -> list[ModelChunk]:
        if item.index < self._last_streamed:
            self._interleaved(item.index)
        self._last_streamed = item.index
        parts = item.parts.get(key)
        field = "summary_index" if key[0] == "summary" else "content_index"
        if parts is None:
            parts = item.parts[key] = []
            if item.order:  # a new part after streamed ones: a blank line between them
                parts.append(text)
                item.order.append(key)
                self._tail(item, key, parts, field)
                return [_thinking_delta(self._request_id, _PART_SEPARATOR + text)]
            item.order.append(key)
        parts.append(text)
        self._tail(item, key, parts, field)
        return [_thinking_delta(self._request_id, text)]

    def _tail(self, item: _Item, key: _PartKey, parts: list[str], field: str) -> None:
        """``key``'s part streamed last in ``item``: the hot path may continue it."""
        if self._state == "open" and not item.done:
            item.tail = parts
            item.tail_field = field
            item.tail_index = key[1]
            item.tail_type = _TAIL_TYPES[key[0]]

    def _interleaved(self, index: int) -> NoReturn:
        raise protocol(f"Output {index} streamed text after a later output had streamed its own")

    def _settle_text(
        self, item: _Item, key: _PartKey, text: object, where: str
    ) -> list[ModelChunk]:
        if not exactly(text, str):
            raise field_error(f"{where}.text", "a string", text)
        value: str = text
        return self._settle(item, key, value, where)

    def _settle(self, item: _Item, key: _PartKey, final: str, where: str) -> list[ModelChunk]:
        """A part's final text: the authority. The part of it not yet streamed is streamed
        now; a final text that does not continue the streamed one is a protocol error."""
        if item.kind == "skip":
            return []
        parts = item.parts.get(key)
        streamed = "".join(parts) if parts else ""
        if final == streamed:
            return []
        if not final.startswith(streamed):
            raise protocol(
                f"{where} for output {item.index} does not match the text streamed before it"
            )
        rest = final[len(streamed) :]
        if item.kind == "message":
            return self._text(item, key, rest)
        return self._thinking_text(item, key, rest)

    def _item_done(self, data: dict[str, Any]) -> list[ModelChunk]:
        where = "response.output_item.done"
        index = self._output_index(data, where)
        fields_ = self._item_fields(data.get("item"), where)
        item = self._items.get(index)
        if item is None:
            item = self._new_item(index, fields_, where)
        elif item.done:
            raise protocol(f"{where} for output {index}, which is already done")
        else:
            item_id = fields_.get("id")
            if item.item_id is not None and item_id is not None and item_id != item.item_id:
                raise protocol(f"{where} for output {index} changed its id")
            item_type: Any = fields_.get("type")
            if type_of(item_type) is not str or _ITEM_KINDS.get(item_type, "skip") != item.kind:
                raise protocol(f"{where} for output {index} changed its type")
        return self._complete(item, fields_, where)

    def _complete(self, item: _Item, fields_: dict[str, Any], where: str) -> list[ModelChunk]:
        """Finish ``item`` from its final object (``output_item.done``'s, or the terminal
        ``response.output``'s)."""
        out: list[ModelChunk] = []
        if item.kind == "message":
            out = self._message_done(item, fields_, where)
        elif item.kind == "reasoning":
            out = self._reasoning_done(item, fields_, where)
        elif item.kind == "call":
            out = self._call_done(item, fields_, where)
        item.done = True
        item.tail_type = None
        return out

    def _message_done(self, item: _Item, fields_: dict[str, Any], where: str) -> list[ModelChunk]:
        content = fields_.get("content")
        if content is None:
            return []
        if type_of(content) is not list:
            raise field_error(f"{where}.item.content", "an array", content)
        entries: list[Any] = content
        out: list[ModelChunk] = []
        for position, part in enumerate(entries):
            if type_of(part) is not dict:
                raise field_error(f"{where}.item.content[]", "an object", part)
            part_fields: dict[str, Any] = part
            part_type = part_fields.get("type")
            if part_type == "output_text":
                field = "text"
            elif part_type == "refusal":
                field = "refusal"
                self._refused = True
            else:
                continue
            text: Any = part_fields.get(field)
            if type_of(text) is not str:
                raise field_error(f"{where}.item.content[].{field}", "a string", text)
            out += self._settle(item, ("text", position), text, where)
        return out

    def _reasoning_done(self, item: _Item, fields_: dict[str, Any], where: str) -> list[ModelChunk]:
        encrypted = fields_.get("encrypted_content")
        if encrypted is not None:
            if type_of(encrypted) is not str:
                raise field_error(f"{where}.item.encrypted_content", "a string", encrypted)
            item.encrypted = encrypted or None
        out: list[ModelChunk] = []
        for field, part_type, key_kind in (
            ("summary", "summary_text", "summary"),
            ("content", "reasoning_text", "reasoning"),
        ):
            entries = fields_.get(field)
            if entries is None:
                continue
            if type_of(entries) is not list:
                raise field_error(f"{where}.item.{field}", "an array", entries)
            listed: list[Any] = entries
            for position, part in enumerate(listed):
                if type_of(part) is not dict:
                    raise field_error(f"{where}.item.{field}[]", "an object", part)
                part_fields: dict[str, Any] = part
                if part_fields.get("type") != part_type:
                    continue
                out += self._settle_text(item, (key_kind, position), part_fields.get("text"), where)
        return out

    def _call_done(self, item: _Item, fields_: dict[str, Any], where: str) -> list[ModelChunk]:
        out: list[ModelChunk] = []
        self._call_fields(item, fields_, where, required=True)
        if item.position < 0:
            self._start_call(item, out)
        if item.final_arguments is not None:
            text = item.final_arguments
        elif item.arguments:
            text = "".join(item.arguments)
        else:
            arguments = fields_.get("arguments")
            if arguments is not None and type_of(arguments) is not str:
                raise field_error(f"{where}.item.arguments", "a string", arguments)
            text = arguments or ""
        item.arguments = []
        try:
            call = trusted.tool_call(item.call_id, item.name, parse_arguments(text))
        except BadArguments:
            # Kept as an invalid call: the loop answers it and the model tries again.
            call = trusted.invalid_tool_call(item.call_id, item.name, text)
        item.call = call
        out.append(trusted.tool_call_chunk(self._request_id, call))
        return out

    # --- the end ------------------------------------------------------------------------------

    def _failed(self, data: dict[str, Any]) -> ProviderError:
        response = self._identify(data.get("response"), "response.failed")
        error = None if response is None else response.get("error")
        return _error_event(error, "failed the response")

    def _terminal(self, data: dict[str, Any], terminal: _Terminal) -> list[ModelChunk]:
        where = f"response.{terminal}"
        response = self._identify(data.get("response"), where)
        if response is None:
            raise field_error(f"{where}.response", "an object", None)
        status = response.get("status")
        if status is not None and type_of(status) is not str:
            raise field_error(f"{where}.response.status", "a string", status)
        if status == "failed":
            raise _error_event(response.get("error"), "failed the response")
        if status == "cancelled":
            raise ProviderError("PROVIDER_ERROR_EVENT", "The provider cancelled the response")
        details = response.get("incomplete_details")
        reason: object = None
        if details is not None:
            if type_of(details) is not dict:
                raise field_error(f"{where}.response.incomplete_details", "an object", details)
            detail_fields: dict[str, Any] = details
            reason = detail_fields.get("reason")
            if reason is not None and type_of(reason) is not str:
                raise field_error(f"{where}.response.incomplete_details.reason", "a string", reason)
        if status == "incomplete" or reason:
            terminal = "incomplete"
        usage = response.get("usage")
        if usage is not None:
            self._usage, self._reasoning_tokens = _usage(usage, f"{where}.response.usage")
        out = self._backfill(response.get("output"), terminal, where)
        if terminal == "incomplete":
            self._stop = "refusal" if reason == "content_filter" else "length"
        self._state = "ended"
        return out

    def _backfill(self, output: object, terminal: _Terminal, where: str) -> list[ModelChunk]:
        """Complete the items still open (and add those never streamed) from the terminal
        ``response.output``; what is still open after that ends with what streamed."""
        out: list[ModelChunk] = []
        if output is not None:
            if not is_list(output):
                raise field_error(f"{where}.response.output", "an array", output)
            listed: list[Any] = output
            for index, value in enumerate(listed):
                fields_ = self._item_fields(value, f"{where}.response.output[]")
                item = self._items.get(index)
                if item is None:
                    item = self._new_item(index, fields_, f"{where}.response.output[]")
                elif item.done:
                    continue
                else:
                    item_id = fields_.get("id")
                    if item.item_id is not None and item_id != item.item_id:
                        continue  # not this item's final state: it ends with what streamed
                if terminal == "incomplete" and item.kind == "call":
                    continue  # cut: a call of an incomplete turn is left out
                out += self._complete(item, fields_, f"{where}.response.output[]")
        for item in self._items.values():
            if item.done:
                continue
            if item.kind == "call" and terminal == "completed":
                out += self._call_done(item, {}, where)
            item.done = True
            item.tail_type = None
        return out

    def finish(self, *, done: bool) -> tuple[list[ModelChunk], ModelResponse]:
        """End of the body. ``done`` says the caller saw a terminal event; the parser checks
        it against its own record: the stream is complete only if ``response.completed`` or
        ``response.incomplete`` was fed (``done`` without one is still
        ``PROVIDER_STREAM_INTERRUPTED``).

        Returns the remaining chunks (always none) and the response. ``RuntimeError`` when
        called twice.
        """
        if self._failure is not None or self._state == "finished":
            self._raise_closed()
        if type_of(done) is not bool:
            raise TypeError("done must be a bool")
        ended = self._state == "ended"
        self._state = "finished"
        if not ended:
            error = ProviderError(
                "PROVIDER_STREAM_INTERRUPTED",
                "The stream ended before response.completed or response.incomplete",
            )
            self._failure = error
            raise error
        return [], self._response()

    def _response(self) -> ModelResponse:
        content: list[AssistantBlock] = []
        has_calls = False
        for index in sorted(self._items):
            item = self._items[index]
            if item.kind == "message":
                text = "".join(["".join(item.parts[key]) for key in item.order])
                if text:
                    content.append(trusted.text_block(text))
            elif item.kind == "reasoning":
                text = _PART_SEPARATOR.join(["".join(item.parts[key]) for key in item.order])
                signature = None
                if item.encrypted is not None and item.item_id is not None:
                    signature = reasoning_signature(item.item_id, item.encrypted)
                if text:
                    content.append(trusted.thinking_block(text, signature))
                elif signature is not None:
                    content.append(trusted.thinking_block("", signature, True))
            elif item.kind == "call" and item.call is not None:
                content.append(item.call)
                has_calls = True
        stop = self._stop
        if stop is None:
            stop = "toolCall" if has_calls else "refusal" if self._refused else "stop"
        response_id = self._resolved_response_id()
        message: AssistantMessage = trusted.assistant_message(
            f"message-{response_id}", tuple(content)
        )
        return trusted.model_response(
            response_id, self._request_id, message, stop, self._usage, self._model
        )

    def _raise_closed(self) -> NoReturn:
        raise_again(self._failure, "ResponsesStreamParser")


def _count(fields_: dict[str, Any], name: str, where: str) -> int:
    value = fields_.get(name)
    if value is None:
        return 0
    if type_of(value) is not int or not 0 <= value <= MAX_SAFE_INTEGER:
        raise protocol(f"{where}.{name} must be a non-negative safe integer (got {kind(value)})")
    count: int = value
    return count


def _details(fields_: dict[str, Any], name: str, where: str) -> dict[str, Any]:
    value = fields_.get(name)
    if value is None:
        return {}
    if type_of(value) is not dict:
        raise field_error(f"{where}.{name}", "an object", value)
    details: dict[str, Any] = value
    return details


def _usage(value: object, where: str) -> tuple[ModelUsage, int]:
    """The terminal ``usage`` as a ``ModelUsage`` and the reasoning tokens: cached reads and
    cache writes are parts of ``input_tokens``, reasoning tokens part of ``output_tokens``."""
    if not is_dict(value):
        raise field_error(where, "an object", value)
    usage: dict[str, Any] = value
    prompt = _count(usage, "input_tokens", where)
    output = _count(usage, "output_tokens", where)
    input_details = _details(usage, "input_tokens_details", where)
    cached = _count(input_details, "cached_tokens", f"{where}.input_tokens_details")
    written = _count(input_details, "cache_write_tokens", f"{where}.input_tokens_details")
    output_details = _details(usage, "output_tokens_details", where)
    reasoning = _count(output_details, "reasoning_tokens", f"{where}.output_tokens_details")
    if cached + written > prompt:
        raise protocol(
            f"{where} counts {cached + written} cached input tokens of only {prompt} input tokens"
        )
    if reasoning > output:
        raise protocol(
            f"{where} counts {reasoning} reasoning tokens of only {output} output tokens"
        )
    return trusted.model_usage(prompt - cached - written, output, cached, written), reasoning


# --- a whole JSON body ------------------------------------------------------------------------


def parse_response_body(
    body: object, request_id: str, *, reserved_call_ids: Iterable[str] = frozenset()
) -> tuple[list[ModelChunk], ModelResponse]:
    """A non-streamed ``response`` object (the answer of a server that ignored
    ``stream: true``) as the chunks a stream would have given (its text, reasoning and
    complete calls; no progress chunks) and the response.

    The same rules as the stream: the body is the terminal event's ``response``
    (``status`` decides ``completed``, ``incomplete`` or ``failed``). ``ProviderError`` for
    an ``error`` body (``PROVIDER_ERROR_EVENT``) or a malformed one.
    """
    parser = ResponsesStreamParser(request_id, reserved_call_ids=reserved_call_ids)
    if not is_dict(body):
        raise field_error("A response body", "a JSON object", body)
    fields_: dict[str, Any] = body
    error = fields_.get("error")
    status = fields_.get("status")
    if error and status != "failed":
        raise _error_event(error, "reported an error")
    kind_ = "response.incomplete" if status == "incomplete" else "response.completed"
    if status == "failed":
        kind_ = "response.failed"
    chunks = parser.feed({"type": kind_, "response": fields_})
    last, response = parser.finish(done=True)
    kept: list[ModelChunk] = [item for item in (*chunks, *last) if item.type != "toolCallDelta"]
    return kept, response
