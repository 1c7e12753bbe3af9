"""Anthropic Messages stream bodies (``text/event-stream`` text) written for the tests.

Each body is written from the shapes documented in ``spec/providers.md`` §3.1 and §9.11, not
copied from any recording (the recorded vendor streams are replayed from
the shared folder's ``recorded/`` by the tests instead and never stored here). Every event has an
``event:`` line and a matching ``data.type``; data lines are padded with trailing spaces as
Anthropic pads them, and the payloads carry the fields real responses add and the parser
must ignore (``stop_details``, ``cache_creation``, ``service_tier``, ``inference_geo``,
``caller``, ``output_tokens_details``...).
"""

from __future__ import annotations

import json
from typing import Any, Final

MODEL: Final = "claude-sonnet-4-6"


def event(payload: dict[str, Any], *, pad: int = 0, name: str | None = None) -> str:
    """One SSE event: ``event: <type>`` and the compact JSON padded with ``pad`` spaces."""
    kind = name or str(payload["type"])
    return f"event: {kind}\ndata: {json.dumps(payload, separators=(',', ':'))}{' ' * pad}\n\n"


def sse(*parts: dict[str, Any] | str) -> str:
    """A body: dict parts become events (padded a varying amount), strings are kept as is."""
    out: list[str] = []
    for number, part in enumerate(parts):
        out.append(part if isinstance(part, str) else event(part, pad=(number * 7) % 16))
    return "".join(out)


def usage(
    input_tokens: int | None = 25,
    output_tokens: int | None = 1,
    *,
    cache_read: int | None = 0,
    cache_write: int | None = 0,
) -> dict[str, Any]:
    value: dict[str, Any] = {}
    if input_tokens is not None:
        value["input_tokens"] = input_tokens
    if cache_write is not None:
        value["cache_creation_input_tokens"] = cache_write
    if cache_read is not None:
        value["cache_read_input_tokens"] = cache_read
    value["cache_creation"] = {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0}
    if output_tokens is not None:
        value["output_tokens"] = output_tokens
    value["service_tier"] = "standard"
    value["inference_geo"] = "not_available"
    return value


def message_start(message_id: str = "msg_01T3th3r", **counts: Any) -> dict[str, Any]:
    return {
        "type": "message_start",
        "message": {
            "model": MODEL,
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "stop_details": None,
            "usage": usage(**counts),
        },
    }


def text_start(index: int) -> dict[str, Any]:
    return {
        "type": "content_block_start",
        "index": index,
        "content_block": {"type": "text", "text": ""},
    }


def thinking_start(index: int) -> dict[str, Any]:
    return {
        "type": "content_block_start",
        "index": index,
        "content_block": {"type": "thinking", "thinking": "", "signature": ""},
    }


def tool_start(index: int, call_id: str, name: str) -> dict[str, Any]:
    return {
        "type": "content_block_start",
        "index": index,
        "content_block": {
            "type": "tool_use",
            "id": call_id,
            "name": name,
            "input": {},
            "caller": {"type": "direct"},
        },
    }


def delta(index: int, kind: str, **fields: Any) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": {"type": kind, **fields}}


def text(index: int, value: str) -> dict[str, Any]:
    return delta(index, "text_delta", text=value)


def thinking(index: int, value: str) -> dict[str, Any]:
    return delta(index, "thinking_delta", thinking=value)


def signature(index: int, value: str) -> dict[str, Any]:
    return delta(index, "signature_delta", signature=value)


def json_part(index: int, value: str) -> dict[str, Any]:
    return delta(index, "input_json_delta", partial_json=value)


def stop(index: int) -> dict[str, Any]:
    return {"type": "content_block_stop", "index": index}


def message_delta(reason: str | None, counts: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "type": "message_delta",
        "delta": {"stop_reason": reason, "stop_sequence": None, "stop_details": None},
        "usage": counts if counts is not None else {"output_tokens": 12},
    }


PING: Final[dict[str, Any]] = {"type": "ping"}
MESSAGE_STOP: Final[dict[str, Any]] = {"type": "message_stop"}
PING_SPACED: Final = 'event: ping\ndata: {"type": "ping"}\n\n'
"""``ping`` as Anthropic writes it (a space after the colon)."""

SIGNATURE: Final = "EqQBCkYIBRgCIkBT3th3rS1gnatur3+/="


# --- §9.11 ----------------------------------------------------------------------------------------

TEXT: Final = sse(
    message_start(),
    text_start(0),
    PING_SPACED,  # ping mid-block, right after the first start, as recorded
    text(0, "Hello"),
    text(0, ", wor"),
    PING,
    text(0, "ld!"),
    stop(0),
    message_delta("end_turn", {"output_tokens": 6}),
    MESSAGE_STOP,
)

TOOL_USE: Final = sse(
    message_start("msg_01Tool", input_tokens=702, output_tokens=1),
    text_start(0),
    text(0, "Let me check."),
    stop(0),
    tool_start(1, "toolu_01AbC", "get_exchange_rate"),
    *(
        json_part(1, part)
        for part in [
            "",
            '{"from_',
            "curre",
            'ncy"',
            ': "US',
            'D"',
            ', "',
            'to_currency"',
            ': "EUR"}',
        ]
    ),
    stop(1),
    message_delta(
        "tool_use",
        {
            "input_tokens": 1591,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": 175,
            "server_tool_use": {"web_search_requests": 0},
        },
    ),
    MESSAGE_STOP,
)
"""``input_json_delta`` starting with ``""``; ``message_delta`` usage larger than
``message_start``'s (702 → 1591 input tokens, overwritten, never added)."""

PARALLEL_PARAMETERLESS: Final = sse(
    message_start("msg_01Par"),
    text_start(0),
    text(0, "Calling both."),
    stop(0),
    tool_start(1, "toolu_01One", "llm_version"),
    json_part(1, ""),
    stop(1),
    tool_start(2, "toolu_01Two", "llm_time"),
    json_part(2, ""),
    stop(2),
    message_delta("tool_use", {"output_tokens": 90}),
    MESSAGE_STOP,
)

THINKING_SIGNATURE: Final = sse(
    message_start("msg_01Think"),
    thinking_start(0),
    PING_SPACED,
    thinking(0, "The user wants\n1"),
    thinking(0, ". the version."),
    thinking(0, ""),  # the last thinking_delta may be empty
    signature(0, SIGNATURE),
    stop(0),
    tool_start(1, "toolu_01Fix", "fixed_version"),
    json_part(1, ""),
    stop(1),
    message_delta(
        "tool_use",
        {
            "input_tokens": 598,
            "output_tokens": 92,
            "output_tokens_details": {"thinking_tokens": 53},
        },
    ),
    MESSAGE_STOP,
)

REDACTED_DATA: Final = "EmwKAhgBEgy3va3bcSR4Xkr0jYsaDOpaque+Data/=="

REDACTED_THINKING: Final = sse(
    message_start("msg_01Red"),
    {
        "type": "content_block_start",
        "index": 0,
        "content_block": {"type": "redacted_thinking", "data": REDACTED_DATA},
    },
    stop(0),
    text_start(1),
    text(1, "The answer is 42."),
    stop(1),
    message_delta("end_turn", {"output_tokens": 30}),
    MESSAGE_STOP,
)

CACHE: Final = sse(
    message_start(
        "msg_01Cache", input_tokens=3000, output_tokens=1, cache_read=None, cache_write=None
    ),
    text_start(0),
    text(0, "Cached."),
    stop(0),
    message_delta(
        "end_turn",
        {
            "input_tokens": 18,
            "cache_read_input_tokens": 8831,
            "cache_creation_input_tokens": 120,
            "output_tokens": 4,
        },
    ),
    MESSAGE_STOP,
)
"""Kimi/QwenCloud style: prompt-scale ``input_tokens`` without cache counters at start, the
cache-aware split in ``message_delta``, which wins field by field."""

ERROR_AFTER_CONTENT: Final = sse(
    message_start("msg_01Err"),
    text_start(0),
    text(0, "Partial"),
    {
        "type": "error",
        "error": {"details": None, "type": "api_error", "message": "Internal server error"},
        "request_id": "req_011Err",
    },
)

OVERLOADED: Final = sse(
    {
        "type": "error",
        "error": {"details": None, "type": "overloaded_error", "message": "Overloaded"},
        "request_id": "req_011Over",
    },
)

# --- more shapes ----------------------------------------------------------------------------------

SERVER_TOOL_PAUSE: Final = sse(
    message_start("msg_01Srv"),
    text_start(0),
    text(0, "Searching."),
    stop(0),
    {
        "type": "content_block_start",
        "index": 1,
        "content_block": {
            "type": "server_tool_use",
            "id": "srvtoolu_01",
            "name": "web_search",
            "input": {},
        },
    },
    json_part(1, '{"query": "x"}'),
    stop(1),
    {
        "type": "content_block_start",
        "index": 2,
        "content_block": {
            "type": "web_search_tool_result",
            "tool_use_id": "srvtoolu_01",
            "content": [],
        },
    },
    stop(2),
    text_start(3),
    text(3, " Found it."),
    delta(3, "citations_delta", citation={"type": "web_search_result_location", "url": "u"}),
    stop(3),
    message_delta("pause_turn", {"output_tokens": 40}),
    MESSAGE_STOP,
)
"""Server-tool blocks (skipped), a ``citations_delta`` (ignored), ``pause_turn``."""

CUT_CALL: Final = sse(
    message_start("msg_01Cut"),
    tool_start(0, "toolu_01Cut", "write"),
    json_part(0, ""),
    json_part(0, '{"path": "a.py", "content": "print('),
    stop(0),
    message_delta("max_tokens", {"output_tokens": 4096}),
    MESSAGE_STOP,
)
"""A call cut by ``max_tokens``: its JSON never completes."""

BAD_JSON_CALL: Final = sse(
    message_start("msg_01Bad"),
    tool_start(0, "toolu_01Bad", "write"),
    json_part(0, '{"path": '),
    stop(0),
    message_delta("tool_use", {"output_tokens": 9}),
    MESSAGE_STOP,
)


def body(*parts: dict[str, Any] | str, start: bool = True, end: str | None = "end_turn") -> str:
    """A body around ``parts``: ``message_start`` first (unless ``start`` is off) and, when
    ``end`` is a stop reason, ``message_delta`` + ``message_stop`` last."""
    head: list[dict[str, Any] | str] = [message_start()] if start else []
    tail: list[dict[str, Any] | str] = [] if end is None else [message_delta(end), MESSAGE_STOP]
    return sse(*head, *parts, *tail)
