"""The SSE + JSON floor of the provider benchmarks (``benchmarks/floor.py``) frames any event
stream exactly as tether's ``SSEDecoder`` does, however it is cut: a floor that skipped part
of the work would flatter every ratio measured against it."""

from __future__ import annotations

import importlib.util
import itertools
import json
from datetime import timedelta
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from support import REPOSITORY
from tether.providers._sse import SSEDecoder
from tether.providers.errors import ProviderError

_spec = importlib.util.spec_from_file_location("floor", REPOSITORY / "benchmarks" / "floor.py")
assert _spec is not None
assert _spec.loader is not None
floor: Any = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(floor)

PIECES = st.sampled_from(
    [
        b"data:",
        b"data: ",
        b"data",
        b"event: ",
        b"event:",
        b"id: 1",
        b"retry: 5",
        b":",
        b" ",
        b"x",
        b"{}",
        b'{"a": [1, "\\u00e9"]}',
        b"[DONE]",
        b"\n",
        b"\n",
        b"\r",
        b"\r\n",
        b"\xef\xbb\xbf",
        "é€".encode(),
    ]
)
ENDS = st.sampled_from([b"", b"\n", b"\r", b"\n\r", b"\r\r", b"\r\n", b"\n\n"])


def _body(pieces: list[bytes], end: bytes) -> bytes:
    return b"".join(pieces) + end


BODIES = st.builds(_body, st.lists(PIECES, max_size=40), ENDS)
CUTS = st.lists(st.integers(0, 400), max_size=8)
PROPERTY = settings(deadline=timedelta(seconds=5), suppress_health_check=[HealthCheck.too_slow])


def split_at(body: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted(min(cut, len(body)) for cut in cuts)
    return [body[a:b] for a, b in itertools.pairwise([0, *points, len(body)])]


def reference(chunks: list[bytes]) -> list[tuple[str, str]] | None:
    """``(event, data)`` of every event ``SSEDecoder`` dispatches (no bounds), or ``None``
    when it refuses the stream (invalid UTF-8)."""
    decoder = SSEDecoder(max_event_bytes=1 << 30, max_response_bytes=1 << 40)
    try:
        return [(kind, data) for chunk in chunks for kind, data, _, _ in decoder.feed_fields(chunk)]
    except ProviderError:
        return None


@PROPERTY
@given(BODIES, CUTS)
@example(b"data: x\n\r", [])  # a blank line ended by the very last CR
@example(b"data: x\r", [])  # a line ended by it: nothing dispatched
@example(b"\xef\xbb\xbfdata: a\r\rdata: b\r\n\r\n", [1, 2, 9])  # a BOM cut, CRLF cut
@example(b"event: e\ndata: 1\n\n\n\ndata: 2\n\n", [])  # extra blank lines
@example(b"data: 1\ndata: 2\n\nevent: e\ndata: 3\ndata: 4\n\n", [])  # joined data lines
@example(b"event: e\nevent: f\ndata: 1\n\nevent:\ndata:2\n\n: c\ndata\n\n", [])
def test_the_floor_frames_any_split_as_the_decoder_does(body: bytes, cuts: list[int]) -> None:
    chunks = split_at(body, cuts)
    expected = reference(chunks)
    if expected is None:
        return  # the floor need not type its errors; what it frames is what is compared
    assert floor.floor_events(chunks) == expected
    assert floor.floor_events([body[index : index + 1] for index in range(len(body))]) == expected


def test_the_floor_decodes_each_payload_and_skips_done() -> None:
    body = b'data: {"a":1}\n\nevent: x\ndata: [1,\ndata: 2]\n\ndata: [DONE]\n\n'
    decoded: list[tuple[str, str]] = []

    def dispatch(kind: str, data: str) -> None:
        decoded.append((kind, data))

    assert floor.frame([body], dispatch) == 3
    assert [json.loads(data) for _, data in decoded[:2]] == [{"a": 1}, [1, 2]]
    assert floor.sse_json_floor([body]) == 3
    assert floor.decode_json(' {"a": 1} ') == {"a": 1}
    assert floor.decode_json('{"a": 1}  ') == {"a": 1}
