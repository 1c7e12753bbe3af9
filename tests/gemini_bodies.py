"""Gemini ``streamGenerateContent?alt=sse`` bodies written for the tests from the documented
shapes (``spec/providers-responses-gemini.md`` §4): each event one whole
``GenerateContentResponse``, ``data:`` lines only, no end event."""

from __future__ import annotations

import json
from typing import Any

RESPONSE_ID = "resp-gemini-1"
MODEL_VERSION = "gemini-test-2026"


def chunk(
    *parts: dict[str, Any],
    finish: str | None = None,
    usage: dict[str, Any] | None = None,
    response_id: str = RESPONSE_ID,
    **extra: Any,
) -> dict[str, Any]:
    """One ``GenerateContentResponse`` with candidate 0 holding ``parts``."""
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": list(parts)}, "index": 0}
    if finish is not None:
        candidate["finishReason"] = finish
    payload: dict[str, Any] = {
        "candidates": [candidate],
        "modelVersion": MODEL_VERSION,
        "responseId": response_id,
        **extra,
    }
    if usage is not None:
        payload["usageMetadata"] = usage
    return payload


def usage(prompt: int, candidates: int | None = None, **more: int) -> dict[str, int]:
    """A ``usageMetadata`` snapshot (``candidatesTokenCount`` left out when ``None``)."""
    counts: dict[str, int] = {"promptTokenCount": prompt, **more}
    if candidates is not None:
        counts["candidatesTokenCount"] = candidates
    return counts


def text(value: str, **fields: Any) -> dict[str, Any]:
    return {"text": value, **fields}


def call(name: str, args: dict[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
    function: dict[str, Any] = {"name": name, "args": {} if args is None else args}
    if "id" in fields:
        function["id"] = fields.pop("id")
    return {"functionCall": function, **fields}


def body(*payloads: dict[str, Any], crlf: bool = True) -> bytes:
    """The SSE body: ``data: <json>`` events, CRLF CRLF between them as Gemini sends them."""
    end = "\r\n\r\n" if crlf else "\n\n"
    return "".join(f"data: {json.dumps(payload)}{end}" for payload in payloads).encode()


def text_body(*words: str, crlf: bool = True) -> bytes:
    """A complete text answer: one chunk per word, the last with ``STOP`` and usage."""
    payloads = [chunk(text(word), usage=usage(10)) for word in words[:-1]]
    payloads.append(chunk(text(words[-1]), finish="STOP", usage=usage(10, len(words))))
    return body(*payloads, crlf=crlf)
