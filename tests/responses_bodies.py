"""OpenAI Responses stream events written for the tests.

Each event is written from the shapes in ``spec/providers-responses-gemini.md`` §2, not copied
from any recording (the recorded vendor streams are replayed from the shared folder's
``recorded/`` by the tests instead and never stored here). Every event carries its
``sequence_number``; deltas carry the random ``obfuscation`` padding real ones have, which
the parser must ignore.
"""

from __future__ import annotations

import itertools
from typing import Any, Final

from servers.replay import sse_body

MODEL: Final = "gpt-5-2026-01-01"
RESPONSE_ID: Final = "resp_0123"
ENCRYPTED: Final = "gAAAAABencrypted-reasoning-blob=="

Event = dict[str, Any]


def response(status: str = "in_progress", **fields: Any) -> dict[str, Any]:
    """A ``response`` object as lifecycle events carry it."""
    return {
        "id": RESPONSE_ID,
        "object": "response",
        "status": status,
        "model": MODEL,
        "output": [],
        "usage": None,
        "store": False,
        **fields,
    }


def created() -> Event:
    return {"type": "response.created", "response": response()}


def in_progress() -> Event:
    return {"type": "response.in_progress", "response": response()}


def usage(
    input_tokens: int = 20, output_tokens: int = 10, *, cached: int = 0, reasoning: int = 0
) -> dict[str, Any]:
    return {
        "input_tokens": input_tokens,
        "input_tokens_details": {"cached_tokens": cached},
        "output_tokens": output_tokens,
        "output_tokens_details": {"reasoning_tokens": reasoning},
        "total_tokens": input_tokens + output_tokens,
    }


def completed(use: dict[str, Any] | None = None, **fields: Any) -> Event:
    """``response.completed``; its ``output`` is ``null`` unless given (the items are in
    their ``output_item.done`` events; real terminal events repeat them all)."""
    fields.setdefault("output", None)
    return {
        "type": "response.completed",
        "response": response("completed", usage=use or usage(), **fields),
    }


def incomplete(reason: str | None, use: dict[str, Any] | None = None) -> Event:
    details = None if reason is None else {"reason": reason}
    return {
        "type": "response.incomplete",
        "response": response("incomplete", usage=use or usage(), incomplete_details=details),
    }


def message_added(index: int, item_id: str = "msg_1") -> Event:
    item = {"type": "message", "id": item_id, "status": "in_progress", "role": "assistant"}
    return {
        "type": "response.output_item.added",
        "output_index": index,
        "item": item | {"content": []},
    }


def text_delta(index: int, delta: str, item_id: str = "msg_1", part: int = 0) -> Event:
    return {
        "type": "response.output_text.delta",
        "item_id": item_id,
        "output_index": index,
        "content_index": part,
        "delta": delta,
        "logprobs": [],
        "obfuscation": "xYz",
    }


def text_done(index: int, text: str, item_id: str = "msg_1", part: int = 0) -> Event:
    return {
        "type": "response.output_text.done",
        "item_id": item_id,
        "output_index": index,
        "content_index": part,
        "text": text,
    }


def message_done(index: int, text: str, item_id: str = "msg_1") -> Event:
    content: list[dict[str, Any]] = [{"type": "output_text", "text": text, "annotations": []}]
    item = {"type": "message", "id": item_id, "status": "completed", "role": "assistant"}
    return {
        "type": "response.output_item.done",
        "output_index": index,
        "item": item | {"content": content},
    }


def message(index: int, *parts: str, item_id: str = "msg_1") -> list[Event]:
    """A whole message item: added, its part, the deltas, the done events."""
    text = "".join(parts)
    return [
        message_added(index, item_id),
        {
            "type": "response.content_part.added",
            "item_id": item_id,
            "output_index": index,
            "content_index": 0,
            "part": {"type": "output_text", "text": "", "annotations": []},
        },
        *(text_delta(index, part, item_id) for part in parts),
        text_done(index, text, item_id),
        {
            "type": "response.content_part.done",
            "item_id": item_id,
            "output_index": index,
            "content_index": 0,
            "part": {"type": "output_text", "text": text, "annotations": []},
        },
        message_done(index, text, item_id),
    ]


def reasoning(
    index: int,
    *summaries: tuple[str, ...],
    item_id: str = "rs_1",
    encrypted: str | None = ENCRYPTED,
) -> list[Event]:
    """A reasoning item: each summary part streamed in its deltas; the encrypted content
    only in ``output_item.done`` (``added`` has a cut copy)."""
    added: dict[str, Any] = {"type": "reasoning", "id": item_id, "summary": []}
    if encrypted is not None:
        added["encrypted_content"] = encrypted[: len(encrypted) // 2]
    events: list[Event] = [
        {"type": "response.output_item.added", "output_index": index, "item": added}
    ]
    for number, parts in enumerate(summaries):
        where = {"item_id": item_id, "output_index": index, "summary_index": number}
        events.append({"type": "response.reasoning_summary_part.added", **where})
        events.extend(
            {"type": "response.reasoning_summary_text.delta", **where, "delta": part}
            for part in parts
        )
        events.append(
            {"type": "response.reasoning_summary_text.done", **where, "text": "".join(parts)}
        )
        events.append({"type": "response.reasoning_summary_part.done", **where})
    done: dict[str, Any] = {
        "type": "reasoning",
        "id": item_id,
        "summary": [{"type": "summary_text", "text": "".join(parts)} for parts in summaries],
    }
    if encrypted is not None:
        done["encrypted_content"] = encrypted
    events.append({"type": "response.output_item.done", "output_index": index, "item": done})
    return events


def call(
    index: int,
    name: str,
    *fragments: str,
    call_id: str = "call_1",
    item_id: str = "fc_1",
    final: str | None = None,
) -> list[Event]:
    """A function call item: added, its argument deltas, ``.done`` (``final``, else the
    fragments joined) and ``output_item.done`` with the same arguments."""
    arguments = "".join(fragments) if final is None else final
    base = {"type": "function_call", "id": item_id, "call_id": call_id, "name": name}
    where = {"item_id": item_id, "output_index": index}
    return [
        {
            "type": "response.output_item.added",
            "output_index": index,
            "item": base | {"arguments": "", "status": "in_progress"},
        },
        *(
            {"type": "response.function_call_arguments.delta", **where, "delta": fragment}
            for fragment in fragments
        ),
        {"type": "response.function_call_arguments.done", **where, "arguments": arguments},
        {
            "type": "response.output_item.done",
            "output_index": index,
            "item": base | {"arguments": arguments, "status": "completed"},
        },
    ]


def numbered(events: list[Event]) -> list[Event]:
    """The events with ``sequence_number`` 0, 1, 2, ..."""
    counter = itertools.count()
    return [{**event, "sequence_number": next(counter)} for event in events]


def body(*events: Event) -> bytes:
    """An SSE body as OpenAI frames it: ``event: <type>`` and ``data:`` per event, no
    ``[DONE]``."""
    return sse_body(numbered(list(events)), done=False, event_from_type=True)


def text_body(*parts: str) -> bytes:
    """A complete text answer."""
    return body(created(), in_progress(), *message(0, *parts), completed())


def tool_body() -> bytes:
    """A reasoning item (one summary) then an ``add`` call with arguments in fragments."""
    return body(
        created(),
        in_progress(),
        *reasoning(0, ("Add ", "them.")),
        *call(1, "add", '{"left": 20,', ' "right": 22}'),
        completed(usage(30, 40, reasoning=25)),
    )
