"""OpenAI Chat Completions on the wire, inbound: the streamed answer normalized.

``OpenAIChatModel`` feeds each decoded SSE payload to an ``OpenAIChatStreamParser``, which
turns it into protocol chunks and, at the end, one ``ModelResponse``. Pure data work (no I/O).
The request is built by ``openai_wire``; a whole ``chat.completion`` body is read by
``openai_chat_body`` through this same parser.

Many servers speak this API, each with its own deviations (docs/providers.md says
which). Vendor payloads are untrusted ``object`` data: unknown fields are always ignored
(``obfuscation``, ``system_fingerprint``, ``x_groq``, ``provider``, ``reasoning_details``,
...), the fields read must have their documented JSON types, and our own invariants are
closed sets: a payload that breaks them is a ``PROVIDER_PROTOCOL_ERROR``, never a
``KeyError`` or a ``TypeError``; a vendor error (a truthy top-level ``error``, checked
first, or an SSE ``event: error``) is ``PROVIDER_ERROR_EVENT``. How tool calls are
assembled, which finish reasons and stream ends count as complete, and how vendor tool-call
IDs are kept or replaced is documented on ``OpenAIChatStreamParser``; the per-server switches
are the fields of ``OpenAIChatCompat`` (presets in ``tether.providers.catalog``).
"""

from __future__ import annotations

from collections.abc import Iterable
from operator import attrgetter
from typing import Any, Final, Literal, NoReturn, TypeAlias

from tether._base.exact_types import type_of
from tether._base.strings import is_non_empty
from tether.jsonvalue import JsonObject
from tether.protocol import (
    ZERO_USAGE,
    AssistantBlock,
    ModelChunk,
    ModelResponse,
    ModelUsage,
    StopReason,
    ToolCall,
)
from tether.protocol import _trusted as trusted
from tether.providers._openai_chat_values import dumps_whole as _dumps_whole
from tether.providers._openai_chat_values import error_event as _error_event
from tether.providers._openai_chat_values import usage_of as _usage
from tether.providers._streaming import transcript_call_ids
from tether.providers._wire import EMPTY_ARGUMENTS as _EMPTY_ARGUMENTS
from tether.providers._wire import BadArguments as _BadArguments
from tether.providers._wire import CallIds, raise_again, reserved_ids
from tether.providers._wire import field_error as _field_error
from tether.providers._wire import parse_arguments as _parse_arguments
from tether.providers._wire import protocol as _protocol
from tether.providers._wire import shown as _shown
from tether.providers.errors import ProviderError
from tether.providers.openai_compat import OpenAIChatCompat

__all__ = ["OpenAIChatStreamParser", "transcript_call_ids"]

_text_delta: Final = trusted.text_delta_chunk
_tool_call_delta: Final = trusted.tool_call_delta_chunk
_thinking_delta: Final = trusted.thinking_delta_chunk

_LEGACY_KEY: Final = -1
"""The slot of a deprecated ``delta.function_call`` (vendor indexes are never negative)."""

_KNOWN_FINISH: Final = frozenset(
    {"stop", "length", "tool_calls", "content_filter", "function_call", "error"}
)
_TRUNCATING: Final[dict[str, StopReason]] = {"length": "length", "content_filter": "refusal"}


class _Call:
    """One tool call being assembled (one vendor ``index``)."""

    __slots__ = (
        "call_id",
        "emitted",
        "name",
        "parts",
        "position",
        "touched",
        "vendor_id",
        "whole",
    )

    def __init__(self, position: int) -> None:
        self.position = position
        self.vendor_id: str | None = None
        self.call_id: str | None = None
        self.name: str | None = None
        self.parts: list[str] = []
        self.whole = False
        self.emitted = False
        self.touched = False  # in the parser's _touched: a delta came since the last look


_Open: TypeAlias = Literal["open", "finished"]
_position: Final = attrgetter("position")


class OpenAIChatStreamParser:
    """Turns one response's decoded SSE payloads into protocol chunks and a ``ModelResponse``.

    ``feed(payload, event=...)`` takes each ``data`` payload after ``json.loads`` (with its SSE
    event type) and returns the chunks it completes; the caller handles ``data: [DONE]``
    itself by calling ``finish(done=True)``, or ``finish(done=False)`` at end of stream without
    it. ``finish`` returns the last chunks (tool calls still pending) and the response. Any
    malformed payload is a ``ProviderError``; after one, every call raises it again.

    What it normalizes:

    * ``choices`` may be ``[]``, ``null`` or missing, a ``delta`` may be ``null`` (Azure
      filter chunks, usage-only chunks); only choice ``0`` exists (tether never asks for
      ``n > 1``, so another index is a protocol error).
    * Text: each non-empty ``delta.content`` is a ``textDelta``. Reasoning: the first of
      ``compat.reasoning_fields`` present in a delta is a ``thinkingDelta``. A non-empty
      ``delta.refusal`` (OpenAI's structured-output refusal) is streamed as text and makes
      the response a ``refusal``.
    * Tool calls, one slot per vendor ``index`` (a missing ``index`` is accepted only when it
      cannot be ambiguous: one entry in the delta and at most one call so far): ``id`` and
      ``function.name`` are set once; an identical repeat is ignored (Kimi re-sends both in
      every delta) and a different one is a protocol error; ``function.arguments`` fragments
      are concatenated (an object sent whole is written as JSON text). Each fragment that
      adds something is also a ``toolCallDelta`` progress chunk: ``index`` is the call's
      position in this response, ``id``/``name`` are set in the delta where they first
      arrive. A legacy ``delta.function_call`` is a call of its own.
    * A call is complete at ``finish``, or earlier, when another index starts and the call
      already has its ID and name and its (non-empty) arguments parse as a JSON object: a
      complete JSON object cannot be continued, so parallel calls may even interleave. Then its
      ``toolCall`` chunk is emitted: the same ``ToolCall`` object as in the final message.
      A call whose arguments are still not a JSON object at ``finish`` (broken JSON, an
      array, ...) is an *invalid call*: ``arguments`` ``{}`` and ``raw_arguments`` the text
      (bounded), never a failed response; the loop answers it with ``TOOL_ARGUMENTS_INVALID``.
    * Tool-call IDs: a vendor ID is kept exactly unless it is empty, already used by an
      earlier call of this response, or in ``reserved_call_ids`` (the IDs of the request's
      transcript); then the ID is ``"<response id>-call-<position>"``, with ``-2``, ``-3``...
      appended until it is unique.
    * ``finish_reason`` and ``usage``: the last non-null value wins (OpenRouter sends
      ``finish_reason`` twice; usage may ride on a chunk with choices). Usage splits cached
      reads and cache writes out of ``prompt_tokens``; no usage at all is zero usage.
    * The response ID is the first non-empty chunk ``id`` (``"response-<request id>"`` when
      there is none, as on Snowflake); ``model`` is the first non-empty chunk ``model``; the
      message ID is ``"message-<response id>"``. Content blocks follow the streamed order:
      adjacent text (or thinking) deltas become one block, and a tool call takes its place
      when its ``toolCall`` chunk is emitted, so the message always equals the chunks.

    Stop reasons: ``length`` and ``content_filter`` win (``length`` and ``refusal``: the turn
    was cut, so calls whose arguments are incomplete are left out, never repaired, and the
    loop runs none of them); otherwise any tool call makes it ``toolCall`` (even with
    ``stop`` or no finish reason: OpenAI itself says ``stop`` when ``tool_choice`` names a
    function); ``stop`` or none is ``stop``; ``tool_calls``/``function_call`` without a call
    is a protocol error; ``error`` is ``PROVIDER_ERROR_EVENT``; any other value is a protocol
    error naming it.

    Completeness: ``done=True`` is complete. End of stream without ``[DONE]`` is complete once
    a ``finish_reason`` arrived (or always, with ``compat.finish_reason_optional``), and
    otherwise ``PROVIDER_STREAM_INTERRUPTED``; with ``compat.requires_done`` it is always
    interrupted.
    """

    __slots__ = (
        "_calls",
        "_content",
        "_failure",
        "_finish",
        "_finish_optional",
        "_ids",
        "_model",
        "_order",
        "_pending",
        "_reasoning",
        "_refused",
        "_request_id",
        "_requires_done",
        "_response_id",
        "_run",
        "_run_kind",
        "_state",
        "_touched",
        "_usage",
    )

    def __init__(
        self,
        request_id: str,
        *,
        compat: OpenAIChatCompat,
        reserved_call_ids: Iterable[str] = frozenset(),
    ) -> None:
        """``request_id`` (non-empty) goes into every chunk and the response;
        ``reserved_call_ids`` are the tool-call IDs the transcript already uses
        (``transcript_call_ids``)."""
        reserved = reserved_ids(request_id, reserved_call_ids)
        if type_of(compat) is not OpenAIChatCompat:
            raise TypeError("compat must be an OpenAIChatCompat")
        self._request_id = request_id
        self._reasoning = compat.reasoning_fields
        self._finish_optional = compat.finish_reason_optional
        self._requires_done = compat.requires_done
        self._ids = CallIds(reserved)
        self._response_id: str | None = None
        self._model: str | None = None
        self._finish: str | None = None
        self._usage: ModelUsage | None = None
        self._refused = False
        self._calls: dict[int, _Call] = {}
        self._order: list[_Call] = []
        self._pending: dict[int, _Call] = {}  # by position: not emitted yet, in order
        self._touched: list[_Call] = []  # pending calls that changed since _complete_ready
        self._content: list[AssistantBlock] = []
        self._run: list[str] = []
        self._run_kind: Literal["text", "thinking"] | None = None
        self._failure: ProviderError | None = None
        self._state: _Open = "open"

    @property
    def response_id(self) -> str | None:
        """The response ID seen so far (``None`` until a chunk carried one)."""
        return self._response_id

    # --- feeding ------------------------------------------------------------------------------

    def feed(self, payload: object, event: str = "message") -> list[ModelChunk]:
        """Apply one decoded ``data`` payload of SSE event type ``event``; return its chunks.

        ``ProviderError``: ``PROVIDER_ERROR_EVENT`` for a vendor error (a truthy ``error``
        field, or ``event == "error"``), ``PROVIDER_PROTOCOL_ERROR`` for a payload that breaks
        the rules. ``RuntimeError`` after ``finish``.
        """
        if self._state != "open" or self._failure is not None:
            self._raise_closed()
        try:
            # One method for the chunk, its choice and its delta: this runs once per token, and
            # each Python call saved is measurable (benchmarks/bench_providers.py).
            value: Any = payload  # ``type_of(value) is dict``: ``is_dict`` without its call
            if type_of(value) is not dict:
                raise _field_error("A stream chunk", "a JSON object", payload)
            chunk: dict[str, Any] = value
            error = chunk.get("error")
            if error:
                raise _error_event(error)
            if event == "error":
                raise _error_event(chunk)
            if self._response_id is None:
                response_id = chunk.get("id")
                if is_non_empty(response_id):
                    self._response_id = response_id
            if self._model is None:
                model = chunk.get("model")
                if type_of(model) is str and model:
                    self._model = model
            out: list[ModelChunk] = []
            choices = chunk.get("choices")
            if choices:
                if type_of(choices) is not list:
                    raise _field_error("choices", "an array", choices)
                for choice in choices:
                    if type_of(choice) is not dict:
                        raise _field_error("A choice", "an object", choice)
                    index = choice.get("index")
                    if index is not None and (type_of(index) is not int or index != 0):
                        raise _protocol(
                            "Only choice 0 is supported (the stream has several choices)"
                        )
                    delta = choice.get("delta")
                    if delta:
                        if type_of(delta) is not dict:
                            raise _field_error("delta", "an object", delta)
                        if "tool_calls" in delta or "function_call" in delta:
                            self._delta(delta, out)
                        else:
                            # A text, reasoning or refusal delta, one per token: _text_fields
                            # written out here, without its call (what _delta runs for such a
                            # delta; tests/providers/test_openai_wire.py compares the two)
                            request_id = self._request_id
                            for name in self._reasoning:
                                reasoning = delta.get(name)
                                if reasoning is not None:
                                    if type_of(reasoning) is not str:
                                        raise _field_error(f"delta.{name}", "a string", reasoning)
                                    if reasoning:
                                        if self._run_kind != "thinking":
                                            self._start_run("thinking")
                                        self._run.append(reasoning)
                                        out.append(_thinking_delta(request_id, reasoning))
                                    break
                            content = delta.get("content")
                            if content is not None:
                                if type_of(content) is not str:
                                    raise _field_error("delta.content", "a string", content)
                                if content:
                                    if self._run_kind != "text":
                                        self._start_run("text")
                                    self._run.append(content)
                                    out.append(_text_delta(request_id, content))
                            if delta.get("refusal"):
                                self._text_fields_refusal(delta, out)
                    finish = choice.get("finish_reason")
                    if finish is not None:
                        if type_of(finish) is not str:
                            raise _field_error("finish_reason", "a string", finish)
                        if finish:
                            self._finish = finish
            usage = chunk.get("usage")
            if usage:
                self._usage = _usage(usage)
            return out
        except ProviderError as error:
            self._failure = error
            raise

    def _delta(self, delta: dict[str, Any], out: list[ModelChunk]) -> None:
        """Apply one choice's ``delta``: reasoning, text, refusal, then tool calls."""
        tool_calls = delta.get("tool_calls")
        if tool_calls:  # the hot path of a long call: argument fragments
            if type_of(tool_calls) is not list:
                raise _field_error("delta.tool_calls", "an array", tool_calls)
            if len(delta) != 1:  # OpenAI's fragments hold nothing else: skip the lookups
                self._text_fields(delta, out)
            entries_: list[Any] = tool_calls
            count = len(entries_)
            for entry in entries_:
                if type_of(entry) is not dict:
                    raise _field_error("A tool-call delta", "an object", entry)
                index = entry.get("index")
                if type_of(index) is int and index >= 0:
                    key: int = index
                elif index is None:
                    calls = self._calls
                    if count != 1 or len(calls) > 1:
                        raise _protocol("A tool-call delta without an index is ambiguous here")
                    key = next(iter(calls)) if calls else 0
                else:
                    raise _field_error("tool_calls[].index", "a non-negative integer", index)
                self._fragment(key, entry.get("id"), entry.get("function"), "function", out)
        else:
            self._text_fields(delta, out)
        function_call = delta.get("function_call")
        if function_call:
            self._fragment(_LEGACY_KEY, None, function_call, "delta.function_call", out)

    def _text_fields(self, delta: dict[str, Any], out: list[ModelChunk]) -> None:
        """A delta's reasoning (the first of ``compat.reasoning_fields`` present), text and
        refusal, in that order."""
        for name in self._reasoning:
            reasoning = delta.get(name)
            if reasoning is not None:
                if type_of(reasoning) is not str:
                    raise _field_error(f"delta.{name}", "a string", reasoning)
                if reasoning:
                    if self._run_kind != "thinking":
                        self._start_run("thinking")
                    self._run.append(reasoning)
                    out.append(_thinking_delta(self._request_id, reasoning))
                break
        content = delta.get("content")
        if content is not None:
            if type_of(content) is not str:
                raise _field_error("delta.content", "a string", content)
            if content:
                if self._run_kind != "text":
                    self._start_run("text")
                self._run.append(content)
                out.append(_text_delta(self._request_id, content))
        if delta.get("refusal"):
            self._text_fields_refusal(delta, out)

    def _text_fields_refusal(self, delta: dict[str, Any], out: list[ModelChunk]) -> None:
        """The last of ``_text_fields``: a truthy ``delta.refusal`` (rare: OpenAI's
        structured-output refusal), streamed as text."""
        refusal: Any = delta.get("refusal")
        if type_of(refusal) is not str:
            raise _field_error("delta.refusal", "a string", refusal)
        self._refused = True
        if self._run_kind != "text":
            self._start_run("text")
        self._run.append(refusal)
        out.append(_text_delta(self._request_id, refusal))

    def _fragment(
        self, key: int, vendor_id: Any, function: Any, where: str, out: list[ModelChunk]
    ) -> None:
        """Apply one tool-call delta to the slot ``key``: its ``id`` and its ``function``
        object (``name`` and an ``arguments`` fragment)."""
        call = self._calls.get(key)
        if call is None:
            if self._pending:
                self._complete_ready(out)
            call = _Call(len(self._order))
            self._calls[key] = call
            self._order.append(call)
            self._pending[call.position] = call
        if not call.touched:
            call.touched = True
            self._touched.append(call)
        new_id: str | None = None
        if vendor_id is not None and vendor_id != "":
            if type_of(vendor_id) is not str:
                raise _field_error("tool_calls[].id", "a string", vendor_id)
            if call.vendor_id is None:
                if is_non_empty(vendor_id):
                    call.vendor_id = vendor_id
                    new_id = self._assign_id(call, vendor_id)
            elif vendor_id != call.vendor_id:
                raise _protocol(
                    f"Tool call {call.position} changed its id from {_shown(call.vendor_id)} "
                    f"to {_shown(vendor_id)}"
                )
        new_name: str | None = None
        fragment = ""
        whole = False
        if function is not None:
            if type_of(function) is not dict:
                raise _field_error(where, "an object", function)
            fields_: dict[str, Any] = function
            name = fields_.get("name")
            if name is not None and name != "":
                if type_of(name) is not str:
                    raise _field_error(f"{where}.name", "a string", name)
                if call.name is None:
                    if is_non_empty(name):
                        call.name = new_name = name
                elif name != call.name:
                    raise _protocol(
                        f"Tool call {call.position} changed its name from {_shown(call.name)} "
                        f"to {_shown(name)}"
                    )
            arguments = fields_.get("arguments")
            if arguments is not None:
                if type_of(arguments) is str:
                    fragment = arguments
                elif type_of(arguments) is dict:
                    fragment = _dumps_whole(arguments)
                    whole = True
                else:
                    raise _field_error(f"{where}.arguments", "a string", arguments)
        if fragment:
            if call.emitted or call.whole:
                if whole or not fragment.isspace():
                    raise _protocol(
                        f"Tool call {call.position} received more arguments after they were "
                        "complete"
                    )
                fragment = ""
            else:
                call.parts.append(fragment)
                call.whole = whole
        if new_id is not None or new_name is not None or fragment:
            out.append(
                _tool_call_delta(self._request_id, call.position, new_id, new_name, fragment)
            )

    def _assign_id(self, call: _Call, vendor_id: str) -> str:
        """The ID the call will have: the vendor's, unless it is taken (then derived)."""
        call_id = call.call_id = self._ids.keep(vendor_id) or self._derive_id(call.position)
        return call_id

    def _derive_id(self, position: int) -> str:
        return self._ids.derive(self._resolved_response_id(), position)

    def _resolved_response_id(self) -> str:
        response_id = self._response_id
        if response_id is None:
            response_id = self._response_id = f"response-{self._request_id}"
        return response_id

    # --- content ------------------------------------------------------------------------------

    def _start_run(self, kind: Literal["text", "thinking"]) -> None:
        self._flush_run()
        self._run_kind = kind

    def _flush_run(self) -> None:
        """Close the current run of text or thinking deltas into one content block."""
        kind = self._run_kind
        if kind is not None:
            text = "".join(self._run)
            if kind == "text":
                self._content.append(trusted.text_block(text))
            else:
                self._content.append(trusted.thinking_block(text))
            self._run = []
            self._run_kind = None

    def _complete_ready(self, out: list[ModelChunk]) -> None:
        """A new call starts: emit each pending call that is already complete (ID and name
        known, arguments a whole JSON object; ``""`` is not, it may still be continued), in
        position order. The others wait for ``finish``.

        Only the calls a delta reached since the last look are read (``_touched``): a call
        that was not complete then, and got nothing since, is not complete now. Reading every
        pending call instead made a stream of many calls whose arguments never parse cost the
        square of their number (each new call joined and parsed all the earlier ones)."""
        touched = self._touched
        if not touched:
            return
        self._touched = []
        if len(touched) > 1:
            touched.sort(key=_position)
        for call in touched:
            call.touched = False
            if call.emitted or call.vendor_id is None or call.name is None:
                continue
            text = "".join(call.parts)
            if not text or text.isspace():  # "" may still be followed by the arguments
                continue
            try:
                arguments = _parse_arguments(text)
            except _BadArguments:
                continue
            self._emit(call, call.name, arguments, out)

    def _emit(
        self,
        call: _Call,
        name: str,
        arguments: JsonObject,
        out: list[ModelChunk],
        raw: str | None = None,
    ) -> None:
        """Complete ``call``: its ``toolCall`` chunk and its place in the content. ``raw``:
        the argument text of an invalid call (``arguments`` is then ``{}``)."""
        call_id = call.call_id
        if call_id is None:
            call_id = call.call_id = self._derive_id(call.position)
        if raw is None:
            tool_call = trusted.tool_call(call_id, name, arguments)
        else:
            tool_call = trusted.invalid_tool_call(call_id, name, raw)
        self._flush_run()
        self._content.append(tool_call)
        out.append(trusted.tool_call_chunk(self._request_id, tool_call))
        call.emitted = True
        call.parts = []
        del self._pending[call.position]

    # --- the end ------------------------------------------------------------------------------

    def finish(self, *, done: bool) -> tuple[list[ModelChunk], ModelResponse]:
        """End of the response: ``done`` says ``data: [DONE]`` arrived. Returns the chunks of
        the calls still pending and the ``ModelResponse`` (see the class docstring for the
        stop reasons and when a stream counts as complete).

        ``ProviderError``: ``PROVIDER_STREAM_INTERRUPTED``, ``PROVIDER_ERROR_EVENT`` (finish
        reason ``error``), ``PROVIDER_PROTOCOL_ERROR`` (a call without a
        name, an unknown finish reason). ``RuntimeError`` when called twice.
        """
        if self._state != "open" or self._failure is not None:
            self._raise_closed()
        if type_of(done) is not bool:
            raise TypeError("done must be a bool")
        self._state = "finished"
        try:
            return self._finish_stream(done)
        except ProviderError as error:
            self._failure = error
            raise

    def _finish_stream(self, done: bool) -> tuple[list[ModelChunk], ModelResponse]:
        raw = self._finish
        if not done:
            if self._requires_done:
                raise ProviderError(
                    "PROVIDER_STREAM_INTERRUPTED", "The stream ended without data: [DONE]"
                )
            if raw is None and not self._finish_optional:
                raise ProviderError(
                    "PROVIDER_STREAM_INTERRUPTED", "The stream ended before its finish_reason"
                )
        if raw == "error":
            raise ProviderError(
                "PROVIDER_ERROR_EVENT", 'The provider ended the response with finish_reason "error"'
            )
        if raw is not None and raw not in _KNOWN_FINISH:
            raise _protocol(f"Unknown finish_reason {_shown(raw)}")
        truncated = _TRUNCATING.get(raw) if raw is not None else None
        out: list[ModelChunk] = []
        for call in tuple(self._pending.values()):
            name = call.name
            if name is None:
                if truncated is not None:
                    continue
                raise _protocol(f"Tool call {call.position} ended without a name")
            text = "".join(call.parts)
            try:
                arguments = _parse_arguments(text)
            except _BadArguments:
                if truncated is not None:
                    continue
                # Kept as an invalid call: the loop answers it and the model tries again.
                self._emit(call, name, _EMPTY_ARGUMENTS, out, raw=text)
                continue
            self._emit(call, name, arguments, out)
        self._flush_run()
        content = tuple(self._content)
        stop: StopReason
        if truncated is not None:
            stop = truncated
        elif any(type_of(block) is ToolCall for block in content):
            stop = "toolCall"
        elif raw == "tool_calls" or raw == "function_call":
            raise _protocol(f'finish_reason "{raw}" arrived without any tool call')
        elif self._refused:
            stop = "refusal"
        else:
            stop = "stop"
        response_id = self._resolved_response_id()
        message = trusted.assistant_message(f"message-{response_id}", content)
        response = trusted.model_response(
            response_id,
            self._request_id,
            message,
            stop,
            self._usage or ZERO_USAGE,
            self._model,
        )
        return out, response

    def _raise_closed(self) -> NoReturn:
        raise_again(self._failure, "OpenAIChatStreamParser")
