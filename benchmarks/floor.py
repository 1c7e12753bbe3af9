"""The SSE + JSON floor: the least any parser of a recorded stream's bytes must do.

Whatever a parser builds, it must turn the body's bytes, cut as the network cuts them, into
the events' payloads, and decode each payload's JSON. ``sse_json_floor`` does that and nothing
else, as cheaply as this file knows how in pure Python, while staying correct for *any*
``text/event-stream`` body (the WHATWG rules docs/providers.md follows), not just the
recordings:

* each network chunk is split into lines on bytes (LF, CRLF or a lone CR; a CR that ends a
  chunk waits for the next one, which may start with its LF; the unfinished last line waits
  for the next chunk); one BOM at the very start is dropped;
* a ``data: ...`` or ``event: ...`` line has its value decoded from UTF-8 and taken at once;
  any other line is decoded and split at its first colon: a comment (``:``) is skipped,
  ``field:value`` strips one leading space, ``data`` lines join with ``"\\n"``, ``event``
  sets the type; an empty line dispatches the event if it has data (CR and LF never occur
  inside a UTF-8 sequence, so decoding line by line is decoding the stream);
* the last incomplete event is dropped at the end.

This is the cheapest of the framings tried (``SSEDecoder`` works the same way, with its bounds,
``id`` and ``retry`` on top; splitting decoded text at blank lines first cost up to twice as
much on the Anthropic recordings, whose long events hold non-ASCII text).

The JSON of each payload is decoded the cheapest exact way known (what ``json.loads`` ends in,
the C scanner, called directly; ``json.loads`` itself for anything that is not one compact
value), so that the floor is a floor. There are no bounds, no typed errors, no chunks and no
response: those are the parser's work, which ``tether / floor`` measures.

``floor_events`` returns the ``(event, data)`` pairs instead, so a benchmark can check the
floor against tether's ``SSEDecoder`` on the same bytes before timing it.
"""

from __future__ import annotations

import json
import json.scanner
from collections.abc import Callable, Iterable
from typing import Any, cast

_scan_once: Callable[[str, int], tuple[Any, int]] = cast(Any, json.scanner).make_scanner(
    json.JSONDecoder()
)
"""What ``json.loads`` ends in (the C scanner when ``_json`` is there)."""

_BOM = b"\xef\xbb\xbf"


def decode_json(data: str) -> Any:
    """``json.loads(data)``'s value, through the scanner when ``data`` is one compact value."""
    try:
        value, end = _scan_once(data, 0)
    except Exception:
        return json.loads(data)
    if end == len(data) or not data[end:].strip(" \t\n\r"):
        return value
    return json.loads(data)


def frame(chunks: Iterable[bytes], dispatch: Callable[[str, str], object]) -> int:
    """Split ``chunks`` into SSE events, calling ``dispatch(event, data)`` for each; returns
    how many were dispatched."""
    pending = b""
    first = True
    count = 0
    data: str | None = None  # the event being read: its data so far, its type
    kind = ""
    for chunk in chunks:
        if pending:
            chunk = pending + chunk
        if first:
            if len(chunk) < len(_BOM) and _BOM.startswith(chunk):
                pending = chunk  # may still become a BOM
                continue
            first = False
            if chunk[:3] == _BOM:
                chunk = chunk[3:]
        if b"\r" in chunk:
            held = chunk[-1:] == b"\r"  # its LF may start the next chunk
            if held:
                chunk = chunk[:-1]
            lines = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
            pending = lines.pop() + (b"\r" if held else b"")
        else:
            lines = chunk.split(b"\n")
            pending = lines.pop()
        for line in lines:
            if not line:
                if data is not None:
                    dispatch(kind or "message", data)
                    count += 1
                    data = None
                kind = ""
            elif line[:6] == b"data: ":
                value = line[6:].decode()
                data = value if data is None else f"{data}\n{value}"
            elif line[:7] == b"event: ":
                kind = line[7:].decode()
            else:
                name, colon, value = line.decode().partition(":")
                if colon:
                    if not name:
                        continue  # a comment
                    if value[:1] == " ":
                        value = value[1:]
                if name == "data":
                    data = value if data is None else f"{data}\n{value}"
                elif name == "event":
                    kind = value
                # ``id`` and ``retry`` change nothing this floor reports
    if pending == b"\r" and data is not None:  # the last CR ended a blank line after all
        dispatch(kind or "message", data)
        count += 1
    return count


def sse_json_floor(chunks: Iterable[bytes]) -> int:
    """Every event of ``chunks`` framed and its payload's JSON decoded (OpenAI's ``[DONE]``,
    which is no JSON, skipped); returns how many events."""
    loads = decode_json

    def dispatch(kind: str, data: str) -> None:
        if data[:6] != "[DONE]":
            loads(data)

    return frame(chunks, dispatch)


def floor_events(chunks: Iterable[bytes]) -> list[tuple[str, str]]:
    """The ``(event, data)`` of every event ``frame`` dispatches, to check against a decoder."""
    events: list[tuple[str, str]] = []
    frame(chunks, lambda kind, data: events.append((kind, data)))
    return events


# --- how the benchmarks use it ----------------------------------------------------------------

BOUND = 1.3
"""tether on the recorded streams at most this many times the floor (benchmarks/README.md,
"The SSE + JSON floor", says why)."""


def checked(streams: list[list[bytes]], expected: list[list[tuple[str, str]]]) -> None:
    """Fail unless the floor frames every stream into exactly ``expected`` (its ``(event,
    data)`` pairs from tether's ``SSEDecoder``), so that the floor does the same work."""
    for index, chunks in enumerate(streams):
        found = floor_events(chunks)
        if found != expected[index]:
            raise AssertionError(f"the SSE floor framed recorded stream {index} differently")


def contender(streams: list[list[bytes]], repeat: int) -> Callable[[], int]:
    """Every stream through ``sse_json_floor``, ``repeat`` times; returns the events of one
    pass."""
    floor = sse_json_floor

    def run() -> int:
        events = 0
        for _ in range(repeat):
            events = 0
            for chunks in streams:
                events += floor(chunks)
        return events

    return run


def figures(samples: dict[str, list[float]], tether: str, loads: str, floor: str) -> dict[str, Any]:
    """The per-round ratios ``floor / json.loads`` and ``tether / floor`` of ``samples``."""
    return {
        "sse floor / json.loads": [
            f / j for f, j in zip(samples[floor], samples[loads], strict=True)
        ],
        "tether / sse floor": [t / f for t, f in zip(samples[tether], samples[floor], strict=True)],
    }


def report(ratios: dict[str, list[float]]) -> None:
    """Print the per-round ratios (``figures``)."""
    for name, values in ratios.items():
        rounds = " ".join(f"{value:.2f}" for value in values)
        print(f"  {name + ', per round:':<32} {rounds}")
