"""Google Gemini's native API on the wire, inbound: the stream normalized back into protocol
chunks.

Pure data work (no I/O, no HTTP client): ``GeminiModel`` sends what
``gemini_request.build_gemini_request`` builds to
``models/{model}:streamGenerateContent?alt=sse`` and feeds each decoded SSE payload (one whole
``GenerateContentResponse`` per event) to a ``GeminiStreamParser``, which turns it into
protocol chunks and, at the end, one ``ModelResponse``. How the response ends (finish reasons,
usage, error payloads) is read by ``_gemini_outcome``.

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

import json
from typing import Any, Final, Literal, NoReturn, TypeAlias

from tether._base.exact_types import is_dict, type_of
from tether._base.strings import is_non_empty
from tether.jsonvalue import JsonValueError, freeze_json_object
from tether.protocol import AssistantBlock, AssistantMessage, ModelChunk, ModelResponse, ToolCall
from tether.protocol import _trusted as trusted
from tether.providers._gemini_outcome import error_event, read_usage, stop_reason, usage_of
from tether.providers._wire import (
    MAX_SHOWN,
    CallIds,
    field_error,
    raise_again,
    reserved_ids,
    string_field,
)
from tether.providers._wire import protocol as protocol_error
from tether.providers.errors import ProviderError

__all__ = ["GeminiStreamParser"]

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
            raise error_event(error)
        if self._response_id is None:
            self._response_id = string_field(data, "responseId", "responseId") or None
        model = data.get("modelVersion")  # on every chunk: checked inline, not by a call
        if model is not None and type_of(model) is not str:
            raise field_error("modelVersion", "a string", model)
        if model:
            self._model = model
        usage = data.get("usageMetadata")
        if usage is not None:
            read_usage(usage, self._usage)
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
        if "finishReason" in candidate:  # mostly on the last chunk only: no call before it
            reason = string_field(candidate, "finishReason", "candidates[0].finishReason")
            if reason:
                self._finish_reason = reason
        if "finishMessage" in candidate:
            message = string_field(candidate, "finishMessage", "candidates[0].finishMessage")
            if message is not None:
                self._finish_message = message[:_MAX_FINISH_MESSAGE]
        return out

    def _part(self, part: object, out: list[ModelChunk]) -> None:
        if not is_dict(part):
            raise field_error("A content part", "an object", part)
        fields_: dict[str, Any] = part
        # On every part: the fields are checked inline, not by a call.
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
        vendor_id = string_field(fields_, "id", "functionCall.id")
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

    def _read_feedback(self, value: object) -> None:
        if not is_dict(value):
            raise field_error("promptFeedback", "an object", value)
        feedback: dict[str, Any] = value
        reason = string_field(feedback, "blockReason", "promptFeedback.blockReason")
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
        stop = stop_reason(
            reason,
            blocked=self._blocked is not None,
            has_calls=has_calls,
            finish_message=self._finish_message,
        )
        usage = usage_of(self._usage)
        response_id = self._response_id or f"response-{self._request_id}"
        message: AssistantMessage = trusted.assistant_message(
            f"message-{response_id}", tuple(content)
        )
        return trusted.model_response(
            response_id, self._request_id, message, stop, usage, self._model
        )

    def _raise_closed(self) -> NoReturn:
        raise_again(self._failure, "GeminiStreamParser")
