"""The output items of one OpenAI Responses stream: ``OutputItems``, the part of
``responses_wire.ResponsesStreamParser`` that keeps them.

An item is opened once per ``output_index`` (``response.output_item.added``, or its final
object when it never streamed), found again by index (else by ``item_id``), streamed into
part by part (output text and refusals of a message, summary and reasoning text of a
reasoning item, argument deltas of a call), settled by its final text (the ``.done`` events:
the part not yet streamed is streamed then, a contradiction is a protocol error) and completed
from its final object (``output_item.done``, or the terminal event's ``response.output``).
At the end ``_content`` gives the final message's blocks, in output order.

The parser subclasses it and keeps what is about the events (their dispatch, the hot path,
the terminal events, the response); everything here is about the items. Each part that
streamed last is recorded on its item (``Item.tail``) so the parser's hot path can continue
it without a call.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final, Literal, NoReturn, TypeAlias

from tether._base.exact_types import exactly, is_dict, type_of
from tether._base.strings import is_non_empty
from tether.protocol import AssistantBlock, ModelChunk, ToolCall
from tether.protocol import _trusted as trusted
from tether.providers._wire import (
    BadArguments,
    CallIds,
    field_error,
    parse_arguments,
    protocol,
    reserved_ids,
    shown,
)
from tether.providers.responses_request import reasoning_signature

__all__ = ["Item", "OutputItems", "State"]

_ItemKind: TypeAlias = Literal["message", "reasoning", "call", "skip"]
_ITEM_KINDS: Final[dict[str, _ItemKind]] = {
    "message": "message",
    "reasoning": "reasoning",
    "function_call": "call",
}
_PART_SEPARATOR: Final = "\n\n"
"""Between two summary (or reasoning text) parts of one reasoning item, in its one block."""

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


_text_delta: Final = trusted.text_delta_chunk
_thinking_delta: Final = trusted.thinking_delta_chunk
_tool_call_delta: Final = trusted.tool_call_delta_chunk


class Item:
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


State: TypeAlias = Literal["open", "ended", "finished"]
"""Where the stream is: open, ended by its terminal event, or finished (``finish`` called)."""


class OutputItems:
    """The output items of one response, by ``output_index`` (see the module docstring), and
    the tool-call IDs given to its calls. The base of ``ResponsesStreamParser``."""

    __slots__ = (
        "_by_id",
        "_calls",
        "_ids",
        "_items",
        "_last_streamed",
        "_refused",
        "_request_id",
        "_response_id",
        "_state",
    )

    def __init__(self, request_id: str, reserved_call_ids: Iterable[str]) -> None:
        self._ids = CallIds(reserved_ids(request_id, reserved_call_ids))
        self._request_id = request_id
        self._response_id: str | None = None
        self._items: dict[int, Item] = {}
        self._by_id: dict[str, int] = {}
        self._calls = 0
        self._last_streamed = -1  # the output index whose text or reasoning streamed last
        self._refused = False  # a refusal streamed: the response is a refusal
        self._state: State = "open"

    # --- opening and finding items ------------------------------------------------------------

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

    def _new_item(self, index: int, fields_: dict[str, Any], where: str) -> Item:
        item_type: Any = fields_.get("type")
        if type_of(item_type) is not str:
            raise field_error(f"{where}.item.type", "a string", item_type)
        item_id = fields_.get("id")
        if item_id is not None and type_of(item_id) is not str:
            raise field_error(f"{where}.item.id", "a string", item_id)
        item = Item(_ITEM_KINDS.get(item_type, "skip"), index, item_id or None)
        self._items[index] = item
        if item_id:
            self._by_id.setdefault(item_id, index)
        return item

    def _call_fields(
        self, item: Item, fields_: dict[str, Any], where: str, *, required: bool
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

    def _start_call(self, item: Item, out: list[ModelChunk]) -> None:
        """Give the call its position and ID; its first ``toolCallDelta`` (ID and name)."""
        item.position = self._calls
        self._calls += 1
        item.call_id = self._ids.keep(item.call_id) or self._ids.derive(
            self._resolved_response_id(), item.position
        )
        out.append(
            _tool_call_delta(self._request_id, item.position, item.call_id, item.name or None, "")
        )

    def _resolved_response_id(self) -> str:
        response_id = self._response_id
        if response_id is None:
            response_id = self._response_id = f"response-{self._request_id}"
        return response_id

    def _find(self, data: dict[str, Any], where: str, wanted: _ItemKind) -> Item:
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
    ) -> tuple[Item, int]:
        item = self._find(data, where, wanted)
        index: Any = data.get(field)
        if type_of(index) is not int or index < 0:
            raise field_error(f"{where}.{field}", "a non-negative integer", index)
        value: int = index
        return item, value

    # --- streaming into items ---------------------------------------------------------------

    def _text(self, item: Item, key: _PartKey, delta: str) -> list[ModelChunk]:
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

    def _thinking(self, item: Item, key: _PartKey, delta: object, where: str) -> list[ModelChunk]:
        """A reasoning summary (or reasoning text) delta into a reasoning item."""
        if not exactly(delta, str):
            raise field_error(f"{where}.delta", "a string", delta)
        text: str = delta
        if not text or item.kind != "reasoning":
            return []
        return self._thinking_text(item, key, text)

    def _thinking_text(self, item: Item, key: _PartKey, text: str) -> list[ModelChunk]:
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

    def _tail(self, item: Item, key: _PartKey, parts: list[str], field: str) -> None:
        """``key``'s part streamed last in ``item``: the hot path may continue it."""
        if self._state == "open" and not item.done:
            item.tail = parts
            item.tail_field = field
            item.tail_index = key[1]
            item.tail_type = _TAIL_TYPES[key[0]]

    def _interleaved(self, index: int) -> NoReturn:
        raise protocol(f"Output {index} streamed text after a later output had streamed its own")

    def _settle_text(self, item: Item, key: _PartKey, text: object, where: str) -> list[ModelChunk]:
        if not exactly(text, str):
            raise field_error(f"{where}.text", "a string", text)
        value: str = text
        return self._settle(item, key, value, where)

    def _settle(self, item: Item, key: _PartKey, final: str, where: str) -> list[ModelChunk]:
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

    # --- completing items --------------------------------------------------------------------

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

    def _complete(self, item: Item, fields_: dict[str, Any], where: str) -> list[ModelChunk]:
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

    def _message_done(self, item: Item, fields_: dict[str, Any], where: str) -> list[ModelChunk]:
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

    def _reasoning_done(self, item: Item, fields_: dict[str, Any], where: str) -> list[ModelChunk]:
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

    def _call_done(self, item: Item, fields_: dict[str, Any], where: str) -> list[ModelChunk]:
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

    def _content(self) -> tuple[list[AssistantBlock], bool]:
        """The final message's blocks, in output order, and whether it has calls: a
        ``message`` is one text block, a ``reasoning`` item one thinking block (signed when
        it had encrypted content; redacted when it had no text to show), a call its
        ``ToolCall``; items with nothing in them are left out."""
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
        return content, has_calls
