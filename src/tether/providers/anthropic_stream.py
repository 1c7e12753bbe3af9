"""Anthropic Messages on the wire, inbound: the streamed answer normalized.

Pure data work (no I/O, no HTTP client): ``AnthropicModel`` feeds each decoded SSE payload to
an ``AnthropicStreamParser``, which turns it into protocol chunks and, at the end, one
``ModelResponse``. The request is built by ``anthropic_wire``; the content blocks being
assembled and the tables of the event values are ``_anthropic_blocks``'.

The rules (docs/providers.md, "Anthropic"):

* Vendor payloads are untrusted ``object`` data. The parser keys on each payload's own
  ``type`` (every Anthropic event carries one; a data-only proxy drops the ``event:`` line),
  unknown fields and unknown event types are ignored (Anthropic's versioning policy adds
  event types), ``ping`` is ignored wherever it comes. The fields read must have their
  documented JSON types, and our own invariants (event order, block indexes, a delta that fits
  its block, tool input that is a JSON object) are closed sets: breaking one is a
  ``ProviderError`` with code ``PROVIDER_PROTOCOL_ERROR``, never a ``KeyError``.
* Usage is cumulative: ``message_delta.usage`` overwrites, field by field, what
  ``message_start`` said (only the fields it carries, non-null); nothing is ever summed.
* ``error`` events are ``PROVIDER_OVERLOADED`` (``overloaded_error``) or
  ``PROVIDER_ERROR_EVENT``; end of stream before ``message_stop`` is
  ``PROVIDER_STREAM_INTERRUPTED``.
"""

from __future__ import annotations

import json
from typing import Any, Final, Literal, NoReturn, TypeAlias

from tether._base.exact_types import exactly, is_dict, type_of
from tether._base.strings import is_non_empty
from tether.protocol import (
    MAX_SAFE_INTEGER,
    AssistantMessage,
    ModelChunk,
    ModelResponse,
    StopReason,
    ToolCall,
)
from tether.protocol import _trusted as trusted
from tether.providers._anthropic_blocks import (
    DELTA_FOR,
    STOPS,
    TRUNCATING,
    USAGE_FIELDS,
    Block,
    error_event,
    message_content,
)
from tether.providers._streaming import transcript_call_ids
from tether.providers._wire import BadArguments as _BadArguments
from tether.providers._wire import CallIds, raise_again, reserved_ids
from tether.providers._wire import field_error as _field_error
from tether.providers._wire import kind as _kind
from tether.providers._wire import parse_arguments as _parse_arguments
from tether.providers._wire import protocol as _protocol
from tether.providers._wire import shown as _shown
from tether.providers.errors import ProviderError

__all__ = ["AnthropicStreamParser", "transcript_call_ids"]

_tool_call_delta: Final = trusted.tool_call_delta_chunk
_text_delta: Final = trusted.text_delta_chunk
_thinking_delta: Final = trusted.thinking_delta_chunk

_TEXT_FIELD: Final[dict[str, str]] = {
    "text_delta": "text",
    "thinking_delta": "thinking",
    "input_json_delta": "partial_json",
}
"""The field of each text-carrying delta (every ``DELTA_FOR`` type but ``signature_delta``):
its text is kept on the block and streamed as that block's delta chunk."""

_IN_MESSAGE: Final = frozenset(
    {"content_block_start", "content_block_stop", "message_delta", "message_stop"}
)
"""The events that only belong between ``message_start`` and ``message_stop``."""

_State: TypeAlias = Literal["new", "streaming", "stopped", "finished"]


class AnthropicStreamParser:
    """Turns one response's decoded SSE payloads into protocol chunks and a ``ModelResponse``.

    ``feed(payload, event=...)`` takes each ``data`` payload after ``json.loads`` and returns
    the chunks it completes; ``finish(done=...)`` at the end of the body returns the last
    chunks (always none: every call completes at its ``content_block_stop``) and the response.
    Any malformed payload is a ``ProviderError``; after one, every call raises it again.

    What it reads, keyed on the payload's ``type``:

    * ``message_start`` first (a content or message event before it is a protocol error; a
      second one too): the response ``id`` (``"response-<request id>"`` when empty),
      ``model`` and ``usage``.
    * ``content_block_start``: ``index`` must be the number of blocks started so far (the
      block's position in the final ``content``), so a start for an open or closed index is a
      protocol error. ``text`` and ``thinking`` (initial text, usually ``""``, streamed like a
      delta), ``redacted_thinking`` (``data``; complete at start, never streamed),
      ``tool_use`` (``id``, ``name``; a ``toolCallDelta`` with both). Server-tool blocks
      (``server_tool_use``, ``web_search_tool_result``, ...) and unknown block types occupy
      their index and are skipped with their deltas: the server ran them, and their results
      are not part of tether's protocol.
    * ``content_block_delta`` into an open block: ``text_delta`` (a ``textDelta``),
      ``thinking_delta`` (a ``thinkingDelta``), ``signature_delta`` (sets the thinking
      block's signature), ``input_json_delta`` (appended; a non-empty fragment is a
      ``toolCallDelta``). A delta of a type that does not fit its block is a protocol error;
      unknown delta types (``citations_delta``) are ignored.
    * ``content_block_stop`` closes an open block; for ``tool_use`` the arguments are parsed
      (``""`` is ``{}``; a block without fragments keeps the start's ``input``) and the
      complete ``toolCall`` chunk is emitted. Text that is not a JSON object is never
      repaired: the call is held until the next block starts or the stop reason arrives.
      With ``max_tokens`` (the call was cut) it is left out, and the loop runs no call of a
      truncated turn; otherwise it is emitted as an *invalid call* (``arguments`` ``{}``,
      ``raw_arguments`` the text, bounded), which the loop answers with
      ``TOOL_ARGUMENTS_INVALID``.
    * ``message_delta``: ``delta.stop_reason``; ``usage`` fields that are present and non-null
      overwrite the earlier ones. ``message_stop``: the end (every block must be closed).
      ``ping``: ignored. ``error`` (or an SSE ``event: error``): ``PROVIDER_OVERLOADED`` for
      ``overloaded_error``, else ``PROVIDER_ERROR_EVENT``; ``provider_code`` is its type.

    Tool-call IDs: the vendor's ``id`` is kept exactly unless it is empty, already used by an
    earlier call of this response, or in ``reserved_call_ids`` (``transcript_call_ids`` of the
    request); then it is ``"<response id>-call-<position>"``, with ``-2``, ``-3``... until it
    is unique. Names must be non-empty.

    The final message holds the blocks in index order: text, thinking (with its signature,
    ``None`` when none came), redacted thinking (``ThinkingBlock(text="", signature=<data>,
    redacted=True)``), tool calls (the very objects of their chunks). Text or thinking blocks
    whose text is empty are left out (nothing was streamed for them, so the loop's agreement
    check would fail). Usage: ``input_tokens`` is Anthropic's (already uncached),
    ``cache_read_input_tokens`` and ``cache_creation_input_tokens`` are
    ``cache_read_tokens``/``cache_write_tokens``. Stop reasons: ``end_turn``,
    ``stop_sequence``, ``pause_turn`` are ``stop`` (``toolCall`` when the message has calls),
    ``tool_use`` is ``toolCall`` (a protocol error without a call), ``max_tokens`` and
    ``model_context_window_exceeded`` are ``length``, ``refusal`` is ``refusal``; any other
    value, or none, is a protocol error naming it.
    """

    __slots__ = (
        "_blocks",
        "_calls",
        "_failure",
        "_held",
        "_ids",
        "_model",
        "_request_id",
        "_response_id",
        "_state",
        "_stop",
        "_stopped",
        "_usage",
    )

    def __init__(self, request_id: str, *, reserved_call_ids: frozenset[str] = frozenset()) -> None:
        """``request_id`` (non-empty) goes into every chunk and the response;
        ``reserved_call_ids`` are the tool-call IDs the transcript already uses."""
        reserved = reserved_ids(request_id, reserved_call_ids)
        self._request_id = request_id
        self._ids = CallIds(reserved)
        self._response_id: str | None = None
        self._model: str | None = None
        self._stop: str | None = None
        self._usage = [0, 0, 0, 0]
        self._blocks: list[Block] = []
        self._calls = 0
        self._held: ToolCall | None = None  # an invalid call awaiting the stop reason
        self._failure: ProviderError | None = None
        self._state: _State = "new"
        self._stopped = False

    @property
    def stopped(self) -> bool:
        """``message_stop`` has been fed: the stream is complete."""
        return self._stopped

    @property
    def response_id(self) -> str | None:
        """The response ID from ``message_start`` (``None`` until then)."""
        return self._response_id

    # --- feeding ------------------------------------------------------------------------------

    def feed(self, payload: object, event: str = "message") -> list[ModelChunk]:
        """Apply one decoded ``data`` payload (SSE event type ``event``); return its chunks.

        ``ProviderError`` (see the class docstring); ``RuntimeError`` after ``finish``.
        """
        if self._failure is not None or self._state == "finished":
            self._raise_closed()
        try:
            # The hot path, one per token, runs here without a further call (each Python call
            # saved is measurable: benchmarks/bench_anthropic.py): a non-empty text, thinking
            # or input_json delta into an open block of its kind. Every other case, and every
            # one this does not settle, goes on to ``_delta`` (an open block) or ``_feed``,
            # which give the same result (tests/providers/test_anthropic_wire.py, "fast path").
            # ``type_of(value) is dict`` is ``is_dict`` without its call.
            value: Any = payload
            if type_of(value) is dict and event != "error":  # ``event: error``: never hot
                data: dict[str, Any] = value
                if data.get("type") == "content_block_delta" and self._state == "streaming":
                    index: Any = data.get("index")
                    blocks = self._blocks
                    if type_of(index) is int and 0 <= index < len(blocks):
                        position: int = index
                        block = blocks[position]
                        if block.open:
                            delta: Any = data.get("delta")
                            if type_of(delta) is dict:
                                delta_type: Any = delta.get("type")
                                kind = block.kind
                                if delta_type == "text_delta":
                                    if kind == "text":
                                        text: Any = delta.get("text")
                                        if type_of(text) is str and text:
                                            block.parts.append(text)
                                            return [_text_delta(self._request_id, text)]
                                elif delta_type == "input_json_delta":
                                    if kind == "tool":
                                        text = delta.get("partial_json")
                                        if type_of(text) is str and text:
                                            block.parts.append(text)
                                            return [
                                                _tool_call_delta(
                                                    self._request_id,
                                                    block.position,
                                                    None,
                                                    None,
                                                    text,
                                                )
                                            ]
                                elif delta_type == "thinking_delta" and kind == "thinking":
                                    text = delta.get("thinking")
                                    if type_of(text) is str and text:
                                        block.parts.append(text)
                                        return [_thinking_delta(self._request_id, text)]
                            return self._delta(block, delta)
            return self._feed(payload, event)
        except ProviderError as error:
            self._failure = error
            raise

    def _feed(self, payload: object, event: str) -> list[ModelChunk]:
        if not is_dict(payload):
            raise _field_error("A stream event", "a JSON object", payload)
        data: dict[str, Any] = payload
        kind = data.get("type")
        if kind == "error" or event == "error":  # an error event whatever its type
            raise error_event(data)
        if kind == "content_block_delta":
            if self._state != "streaming":
                self._out_of_order(kind)
            return self._delta(self._open_block(data.get("index"), kind), data.get("delta"))
        return self._event(data, kind)

    def _delta(self, block: Block, delta: Any) -> list[ModelChunk]:
        """A ``content_block_delta`` (its ``delta`` value) into the open ``block``."""
        if type_of(delta) is not dict:
            raise _field_error("content_block_delta.delta", "an object", delta)
        fields_: dict[str, Any] = delta
        delta_type: Any = fields_.get("type")
        if type_of(delta_type) is not str:  # before the lookup: an array is no dict key
            raise _field_error("content_block_delta.delta.type", "a string", delta_type)
        wanted = DELTA_FOR.get(delta_type)
        if wanted is None:
            return []  # citations_delta and future delta types
        if block.kind != wanted:
            if block.kind == "skip":
                return []
            raise _protocol(f"A {delta_type} does not fit the {block.kind} block")
        if delta_type == "signature_delta":
            signature: Any = fields_.get("signature")
            if type_of(signature) is not str:
                raise _field_error("signature_delta.signature", "a string", signature)
            block.signature = signature
            return []
        name = _TEXT_FIELD[delta_type]
        text = fields_.get(name)
        if type_of(text) is not str:
            raise _field_error(f"{delta_type}.{name}", "a string", text)
        if not text:
            return []
        block.parts.append(text)
        if delta_type == "text_delta":
            return [_text_delta(self._request_id, text)]
        if delta_type == "thinking_delta":
            return [_thinking_delta(self._request_id, text)]
        return [_tool_call_delta(self._request_id, block.position, None, None, text)]

    def _event(self, data: dict[str, Any], kind: Any) -> list[ModelChunk]:
        """Every event but a content delta and an error (``_feed`` raises those)."""
        if kind == "ping":
            return []
        if type_of(kind) is not str:
            raise _field_error("A stream event's type", "a string", kind)
        if kind == "message_start":
            if self._state != "new":
                raise _protocol("A second message_start arrived")
            self._message_start(data)
            return []
        if kind not in _IN_MESSAGE:
            return []  # unknown event types are tolerated (Anthropic may add some)
        if self._state != "streaming":
            self._out_of_order(kind)
        if kind == "content_block_start":
            return self._block_start(data)
        if kind == "content_block_stop":
            return self._block_stop(self._open_block(data.get("index"), kind))
        if kind == "message_delta":
            return self._message_delta(data)
        # message_stop
        if any(block.open for block in self._blocks):
            raise _protocol("message_stop arrived while a content block was still open")
        self._state = "stopped"
        self._stopped = True
        return []

    def _out_of_order(self, kind: str) -> NoReturn:
        if self._state == "new":
            raise _protocol(f"{kind} arrived before message_start")
        raise _protocol(f"{kind} arrived after message_stop")

    def _open_block(self, index: object, kind: str) -> Block:
        if not exactly(index, int):
            raise _field_error(f"{kind}.index", "an integer", index)
        position: int = index
        if not 0 <= position < len(self._blocks):
            raise _protocol(f"{kind} for content block {position}, which was never started")
        block = self._blocks[position]
        if not block.open:
            raise _protocol(f"{kind} for content block {position}, which is already closed")
        return block

    def _message_start(self, data: dict[str, Any]) -> None:
        message: Any = data.get("message")
        if type_of(message) is not dict:
            raise _field_error("message_start.message", "an object", message)
        fields_: dict[str, Any] = message
        response_id = fields_.get("id")
        if response_id is not None and type_of(response_id) is not str:
            raise _field_error("message_start.message.id", "a string", response_id)
        if is_non_empty(response_id):
            self._response_id = response_id
        else:
            self._response_id = f"response-{self._request_id}"
        model = fields_.get("model")
        if model is not None and type_of(model) is not str:
            raise _field_error("message_start.message.model", "a string", model)
        if model:
            self._model = model
        usage = fields_.get("usage")
        if usage is not None:
            self._read_usage(usage, "message_start.message.usage")
        self._state = "streaming"

    def _block_start(self, data: dict[str, Any]) -> list[ModelChunk]:
        held = self._release_held()
        index: Any = data.get("index")
        if type_of(index) is not int:
            raise _field_error("content_block_start.index", "an integer", index)
        count = len(self._blocks)
        if index != count:
            position: int = index
            if 0 <= position < count:
                other = self._blocks[position]
                state = "open" if other.open else "closed"
                raise _protocol(f"content_block_start for content block {index}, already {state}")
            raise _protocol(f"content_block_start index {index} where {count} was next")
        content: Any = data.get("content_block")
        if type_of(content) is not dict:
            raise _field_error("content_block_start.content_block", "an object", content)
        fields_: dict[str, Any] = content
        block_type = fields_.get("type")
        out: list[ModelChunk] = held
        if block_type == "text":
            block = Block("text")
            self._initial(block, fields_.get("text"), "text", out)
        elif block_type == "thinking":
            block = Block("thinking")
            self._initial(block, fields_.get("thinking"), "thinking", out)
            signature = fields_.get("signature")
            if signature is not None:
                if type_of(signature) is not str:
                    raise _field_error("thinking.signature", "a string", signature)
                block.signature = signature
        elif block_type == "redacted_thinking":
            block = Block("redacted")
            opaque = fields_.get("data")
            if not is_non_empty(opaque):
                raise _field_error("redacted_thinking.data", "a non-empty string", opaque)
            block.signature = opaque
        elif block_type == "tool_use":
            block = self._tool_start(fields_, out)
        else:
            if type_of(block_type) is not str:
                raise _field_error("content_block.type", "a string", block_type)
            block = Block("skip")  # server tools and future block types
        self._blocks.append(block)
        return out

    def _initial(self, block: Block, text: object, kind: str, out: list[ModelChunk]) -> None:
        if text is None:
            return
        if not exactly(text, str):
            raise _field_error(f"{kind} block's {kind}", "a string", text)
        if text:
            value: str = text
            block.parts.append(value)
            if kind == "text":
                out.append(trusted.text_delta_chunk(self._request_id, value))
            else:
                out.append(trusted.thinking_delta_chunk(self._request_id, value))

    def _tool_start(self, fields_: dict[str, Any], out: list[ModelChunk]) -> Block:
        block = Block("tool")
        name = fields_.get("name")
        if not is_non_empty(name):
            raise _field_error("tool_use.name", "a non-empty string", name)
        vendor_id = fields_.get("id")
        if vendor_id is not None and type_of(vendor_id) is not str:
            raise _field_error("tool_use.id", "a string", vendor_id)
        initial = fields_.get("input")
        if initial is not None:
            if type_of(initial) is not dict:
                raise _field_error("tool_use.input", "an object", initial)
            if initial:
                try:
                    block.initial = json.dumps(initial, separators=(",", ":"), ensure_ascii=False)
                except (ValueError, TypeError, RecursionError):  # pragma: no cover - from JSON
                    raise _protocol("tool_use.input could not be read") from None
        block.position = self._calls
        self._calls += 1
        block.name = name
        block.call_id = self._ids.keep(vendor_id) or self._derive_id(block.position)
        out.append(_tool_call_delta(self._request_id, block.position, block.call_id, name, ""))
        return block

    def _derive_id(self, position: int) -> str:
        return self._ids.derive(str(self._response_id), position)

    def _block_stop(self, block: Block) -> list[ModelChunk]:
        block.open = False
        if block.kind != "tool":
            return []
        # input_json_delta fragments win; without any, the start's input (usually {}).
        text = "".join(block.parts) if block.parts else block.initial
        block.parts = []
        try:
            arguments = _parse_arguments(text)
        except _BadArguments:
            # Held: a max_tokens stop makes this a cut call (left out); a later block or any
            # other stop reason makes it an invalid call, answered by the loop.
            block.call = self._held = trusted.invalid_tool_call(block.call_id, block.name, text)
            return []
        call = trusted.tool_call(block.call_id, block.name, arguments)
        block.call = call
        return [trusted.tool_call_chunk(self._request_id, call)]

    def _release_held(self) -> list[ModelChunk]:
        """The held invalid call's chunk, now that the model went on past it."""
        held = self._held
        if held is None:
            return []
        self._held = None
        return [trusted.tool_call_chunk(self._request_id, held)]

    def _settle_held(self) -> list[ModelChunk]:
        """At a stop reason: a held call is cut (left out) by ``max_tokens``, else emitted."""
        if self._held is None or self._stop is None:
            return []
        if self._stop in TRUNCATING:
            for block in self._blocks:
                if block.call is self._held:
                    block.call = None
            self._held = None
            return []
        return self._release_held()

    def _message_delta(self, data: dict[str, Any]) -> list[ModelChunk]:
        delta = data.get("delta")
        if delta is not None:
            if type_of(delta) is not dict:
                raise _field_error("message_delta.delta", "an object", delta)
            fields_: dict[str, Any] = delta
            stop = fields_.get("stop_reason")
            if stop is not None:
                if type_of(stop) is not str:
                    raise _field_error("message_delta.delta.stop_reason", "a string", stop)
                if stop:
                    self._stop = stop
        usage = data.get("usage")
        if usage is not None:
            self._read_usage(usage, "message_delta.usage")
        return self._settle_held()

    def _read_usage(self, value: object, where: str) -> None:
        """Overwrite each usage count the object carries (present and non-null)."""
        if not is_dict(value):
            raise _field_error(where, "an object", value)
        usage: dict[str, Any] = value
        counts = self._usage
        for name, slot in USAGE_FIELDS:
            count = usage.get(name)
            if count is None:
                continue
            if type_of(count) is not int or not 0 <= count <= MAX_SAFE_INTEGER:
                raise _protocol(
                    f"{where}.{name} must be a non-negative safe integer (got {_kind(count)})"
                )
            counts[slot] = count

    # --- the end ------------------------------------------------------------------------------

    def finish(self, *, done: bool) -> tuple[list[ModelChunk], ModelResponse]:
        """End of the body. ``done`` says the caller fed a ``message_stop``; the parser checks
        it against its own record: the stream is complete only if ``message_stop`` was fed
        (``done`` without one is still ``PROVIDER_STREAM_INTERRUPTED``).

        Returns the remaining chunks (an invalid call still held, if any: calls complete at
        their block's stop) and the response. ``ProviderError``:
        ``PROVIDER_STREAM_INTERRUPTED``, ``PROVIDER_PROTOCOL_ERROR`` (an unknown or missing
        stop reason).
        ``RuntimeError`` when called twice.
        """
        if self._failure is not None or self._state == "finished":
            self._raise_closed()
        if type_of(done) is not bool:
            raise TypeError("done must be a bool")
        stopped = self._state == "stopped"
        self._state = "finished"
        try:
            return self._finish_stream(stopped)
        except ProviderError as error:
            self._failure = error
            raise

    def _finish_stream(self, stopped: bool) -> tuple[list[ModelChunk], ModelResponse]:
        if not stopped:
            raise ProviderError(
                "PROVIDER_STREAM_INTERRUPTED", "The stream ended before message_stop"
            )
        raw = self._stop
        if raw is None:
            raise _protocol("The message stopped without a stop_reason")
        mapped = STOPS.get(raw)
        if mapped is None:
            raise _protocol(f"Unknown stop_reason {_shown(raw)}")
        last = self._settle_held()  # a held call when message_delta came before its block
        content, has_calls = message_content(self._blocks)
        stop: StopReason
        if mapped == "stop" and has_calls:
            stop = "toolCall"
        elif mapped == "toolCall" and not has_calls:
            raise _protocol('stop_reason "tool_use" arrived without any tool call')
        else:
            stop = mapped
        input_tokens, output_tokens, cache_read, cache_write = self._usage
        usage = trusted.model_usage(input_tokens, output_tokens, cache_read, cache_write)
        response_id = self._response_id or f"response-{self._request_id}"
        message: AssistantMessage = trusted.assistant_message(f"message-{response_id}", content)
        response = trusted.model_response(
            response_id, self._request_id, message, stop, usage, self._model
        )
        return last, response

    def _raise_closed(self) -> NoReturn:
        raise_again(self._failure, "AnthropicStreamParser")
