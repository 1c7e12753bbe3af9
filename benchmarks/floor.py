"""The SSE + JSON floor: the least any parser of a recorded stream's bytes must do.

Whatever a parser builds, it must turn the body's bytes, cut as the network cuts them, into
the events' payloads, and decode each payload's JSON. ``sse_json_floor`` does that and nothing
else, as cheaply as this file knows how in pure Python, while staying correct for *any*
``text/event-stream`` body (the WHATWG rules docs/providers.md follows), not just the
recordings:

* the bytes are decoded as UTF-8 once per network chunk, incrementally (CR and LF never occur
  inside a multi-byte sequence, so a line is never cut by that); one BOM at the very start is
  dropped;
* lines end with LF, CRLF or a lone CR (a CR that ends a chunk waits for the next one, which
  may start with its LF);
* the text is split at blank lines (``"\\n\\n"``) into event blocks first; a block that is one
  ``data: ...`` line, or ``event: ...`` then ``data: ...``, is taken whole, and any other block
  goes line by line: a comment (``:``) is skipped, ``field:value`` strips one leading space,
  ``data`` lines join with ``"\\n"``, ``event`` sets the type, ``id`` and ``retry`` are read,
  an empty line dispatches;
* an event with data is dispatched at its blank line, the last incomplete one dropped at the
  end.

The JSON of each payload is decoded the cheapest exact way known (what ``json.loads`` ends in,
the C scanner, called directly; ``json.loads`` itself for anything that is not one compact
value), so that the floor is a floor. There are no bounds, no typed errors, no chunks and no
response: those are the parser's work, which ``tether / floor`` measures.

``floor_events`` returns the ``(event, data)`` pairs instead, so a benchmark can check the
floor against tether's ``SSEDecoder`` on the same bytes before timing it.
"""

from __future__ import annotations

import codecs
import json
import json.scanner
from collections.abc import Callable, Iterable
from typing import Any, cast

_scan_once: Callable[[str, int], tuple[Any, int]] = cast(Any, json.scanner).make_scanner(
    json.JSONDecoder()
)
"""What ``json.loads`` ends in (the C scanner when ``_json`` is there)."""


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
    decode = codecs.getincrementaldecoder("utf-8")().decode
    pending = ""
    first = True
    count = 0
    # the event being read when a block goes line by line (kept across blocks only through
    # ``pending``: a block always ends at a blank line)
    for chunk in chunks:
        text = decode(chunk)
        if first:
            if not text:
                continue
            first = False
            if text[0] == "\ufeff":
                text = text[1:]
        if pending:
            text = pending + text
        if "\r" in text:
            held = text[-1] == "\r"  # its LF may start the next chunk
            if held:
                text = text[:-1]
            text = text.replace("\r\n", "\n").replace("\r", "\n")
            blocks = text.split("\n\n")
            pending = blocks.pop() + ("\r" if held else "")
        else:
            blocks = text.split("\n\n")
            pending = blocks.pop()
        for block in blocks:
            if block[:6] == "data: " and "\n" not in block:
                dispatch("message", block[6:])
                count += 1
                continue
            if block[:7] == "event: ":
                kind, _, rest = block[7:].partition("\n")
                if rest[:6] == "data: " and "\n" not in rest:
                    dispatch(kind or "message", rest[6:])
                    count += 1
                    continue
            count += _lines(block, dispatch)
    if pending[-2:] == "\n\r":  # a CR held at the very end was a blank line after all
        count += _lines(pending[:-2], dispatch)
    return count


def _lines(block: str, dispatch: Callable[[str, str], object]) -> int:
    """A block line by line; the block's end is a blank line (dispatch), as is an empty line
    inside it (a block cut at the first of three line ends starts with one)."""
    count = 0
    kind = ""
    data: list[str] = []
    for line in [*block.split("\n"), ""]:
        if not line:
            if data:
                dispatch(kind or "message", "\n".join(data))
                count += 1
                data = []
            kind = ""
            continue
        name, colon, value = line.partition(":")
        if colon:
            if not name:
                continue  # a comment
            if value[:1] == " ":
                value = value[1:]
        if name == "data":
            data.append(value)
        elif name == "event":
            kind = value
        # ``id`` and ``retry`` change nothing this floor reports
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
