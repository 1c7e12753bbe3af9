"""OpenAI Responses on the wire, inbound: the stream normalized back into protocol chunks.

Pure data work (no I/O, no HTTP client): ``OpenAIResponsesModel`` sends what
``responses_request.build_responses_request`` builds to ``POST /v1/responses`` and feeds each
decoded SSE payload to a ``ResponsesStreamParser``, which turns it into protocol chunks and,
at the end, one ``ModelResponse``. ``parse_response_body`` does the same for a whole
``response`` JSON body (a server that ignored ``stream: true``). The parser is split by job:
this module reads the events (their dispatch, the per-token hot path, the terminal events and
the response); ``_responses_items`` keeps the output items they stream into;
``_responses_outcome`` reads error objects and usage. A reasoning item's encrypted content
becomes its block's signature (``responses_request.reasoning_signature``), which the next
request sends back.

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

from collections.abc import Iterable
from typing import Any, Final, Literal, NoReturn, TypeAlias

from tether._base.exact_types import exactly, is_dict, is_list, type_of
from tether._base.strings import is_non_empty
from tether.protocol import (
    ZERO_USAGE,
    AssistantMessage,
    ModelChunk,
    ModelResponse,
    ModelUsage,
    StopReason,
)
from tether.protocol import _trusted as trusted
from tether.providers._responses_items import OutputItems
from tether.providers._responses_outcome import error_event, read_usage
from tether.providers._streaming import transcript_call_ids
from tether.providers._wire import field_error, protocol, raise_again
from tether.providers.errors import ProviderError

__all__ = ["ResponsesStreamParser", "parse_response_body", "transcript_call_ids"]

_text_delta: Final = trusted.text_delta_chunk
_thinking_delta: Final = trusted.thinking_delta_chunk
_tool_call_delta: Final = trusted.tool_call_delta_chunk

_Terminal: TypeAlias = Literal["completed", "incomplete"]

_REASONING_EVENTS: Final[dict[str, tuple[str, str, bool]]] = {
    "response.reasoning_summary_text.delta": ("summary_index", "summary", False),
    "response.reasoning_text.delta": ("content_index", "reasoning", False),
    "response.reasoning_summary_text.done": ("summary_index", "summary", True),
    "response.reasoning_text.done": ("content_index", "reasoning", True),
}
"""The events of a reasoning item's parts: the field naming the part's index, the part's key
kind, and whether the event is the part's final text (``.done``) rather than a delta."""


class ResponsesStreamParser(OutputItems):
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

    __slots__ = ("_failure", "_model", "_reasoning_tokens", "_stop", "_usage")

    def __init__(self, request_id: str, *, reserved_call_ids: Iterable[str] = frozenset()) -> None:
        """``request_id`` (non-empty) goes into every chunk and the response;
        ``reserved_call_ids`` are the tool-call IDs the transcript already uses
        (``transcript_call_ids``)."""
        super().__init__(request_id, reserved_call_ids)
        self._model: str | None = None
        self._stop: StopReason | None = None
        self._usage: ModelUsage = ZERO_USAGE
        self._reasoning_tokens = 0
        self._failure: ProviderError | None = None

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
            value: Any = payload  # ``type_of(value) is dict``: ``is_dict`` without its call
            if type_of(value) is not dict:
                raise field_error("A stream event", "a JSON object", payload)
            data: dict[str, Any] = value
            kind_ = data.get("type")
            if event == "error":  # an error event whatever its type: never the hot path
                return self._event(data, kind_, event)
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
            raise error_event(error if error else data, "reported an error in the stream")
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
        reasoning = _REASONING_EVENTS.get(name)
        if reasoning is not None:
            field, key_kind, final = reasoning
            item, index = self._part(data, name, "reasoning", field)
            if final:
                return self._settle_text(item, (key_kind, index), data.get("text"), name)
            return self._thinking(item, (key_kind, index), data.get("delta"), name)
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

    # --- the response -------------------------------------------------------------------------

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

    # --- the end ------------------------------------------------------------------------------

    def _failed(self, data: dict[str, Any]) -> ProviderError:
        response = self._identify(data.get("response"), "response.failed")
        error = None if response is None else response.get("error")
        return error_event(error, "failed the response")

    def _terminal(self, data: dict[str, Any], terminal: _Terminal) -> list[ModelChunk]:
        where = f"response.{terminal}"
        response = self._identify(data.get("response"), where)
        if response is None:
            raise field_error(f"{where}.response", "an object", None)
        status = response.get("status")
        if status is not None and type_of(status) is not str:
            raise field_error(f"{where}.response.status", "a string", status)
        if status == "failed":
            raise error_event(response.get("error"), "failed the response")
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
            self._usage, self._reasoning_tokens = read_usage(usage, f"{where}.response.usage")
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
        content, has_calls = self._content()
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
        raise error_event(error, "reported an error")
    kind_ = "response.incomplete" if status == "incomplete" else "response.completed"
    if status == "failed":
        kind_ = "response.failed"
    chunks = parser.feed({"type": kind_, "response": fields_})
    last, response = parser.finish(done=True)
    kept: list[ModelChunk] = [item for item in (*chunks, *last) if item.type != "toolCallDelta"]
    return kept, response
