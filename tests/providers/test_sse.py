"""Tests for ``tether.providers._sse``: the bytes-level Server-Sent Events decoder.

Explicit byte examples pin every framing rule of spec/providers.md §1 (line ends, BOM,
comments, fields, dispatch, EOF, UTF-8, bounds). Three Hypothesis properties then check:

(1) any split of a valid event stream (random events, line ends, comments, unknown fields,
    optional BOM) decodes to exactly the events a model of the rules predicts: whole, cut at
    random points, one byte at a time, and cut in two at every offset;
(2) arbitrary bytes in arbitrary splits only ever raise ``ProviderError``
    (``PROVIDER_PROTOCOL_ERROR``), fail or succeed the same way for every split, and emit no
    event a byte-by-byte feed would not;
(3) ``max_event_bytes`` and ``max_response_bytes`` are enforced exactly, for any split.

Example counts come from the profile in conftest.py (``HYPOTHESIS_PROFILE=fuzz`` runs more);
the deadlines are generous for a loaded 2-core machine in dev mode.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tether.providers._sse import (
    DEFAULT_MAX_EVENT_BYTES,
    DEFAULT_MAX_RESPONSE_BYTES,
    SSEDecoder,
    SSEEvent,
    is_event_stream,
)
from tether.providers.errors import ProviderError

BOM = b"\xef\xbb\xbf"
PROPERTY = settings(deadline=timedelta(seconds=5), suppress_health_check=[HealthCheck.too_slow])


def feed_all(decoder: SSEDecoder, chunks: Sequence[bytes]) -> list[SSEEvent]:
    events: list[SSEEvent] = []
    for chunk in chunks:
        events += decoder.feed(chunk)
    return events


def decode(*chunks: bytes, **limits: int) -> list[SSEEvent]:
    """Feed ``chunks`` in order to a fresh decoder, then close it; all the events."""
    decoder = SSEDecoder(**limits)
    events = feed_all(decoder, chunks)
    events += decoder.close()
    return events


def decode_fields(*chunks: bytes, **limits: int) -> list[tuple[str, str, str | None, int | None]]:
    """``decode`` through ``feed_fields``: each event as its ``(event, data, id, retry)``."""
    decoder = SSEDecoder(**limits)
    events: list[tuple[str, str, str | None, int | None]] = []
    for chunk in chunks:
        events += decoder.feed_fields(chunk)
    events += decoder.close_fields()
    return events


def bytewise(body: bytes) -> list[bytes]:
    return [body[index : index + 1] for index in range(len(body))]


def split_at(body: bytes, cuts: Sequence[int]) -> list[bytes]:
    """``body`` cut at the given offsets (clamped, sorted; repeats give empty chunks)."""
    points = sorted(min(max(cut, 0), len(body)) for cut in cuts)
    bounds = [0, *points, len(body)]
    return [body[start:end] for start, end in itertools.pairwise(bounds)]


def message(data: str, **fields: Any) -> SSEEvent:
    return SSEEvent(data=data, **fields)


def protocol_error(*chunks: bytes, **limits: int) -> ProviderError:
    with pytest.raises(ProviderError) as caught:
        decode(*chunks, **limits)
    assert caught.value.code == "PROVIDER_PROTOCOL_ERROR"
    return caught.value


# --- SSEEvent and is_event_stream ---------------------------------------------------------------


def test_sse_event_defaults_and_is_frozen() -> None:
    event = SSEEvent(data="x")
    assert (event.event, event.data, event.id, event.retry) == ("message", "x", None, None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.data = "y"  # pyright: ignore[reportAttributeAccessIssue]
    assert hash(event) == hash(SSEEvent(data="x"))
    with pytest.raises(TypeError):
        SSEEvent("message", "x")  # pyright: ignore[reportCallIssue]


def test_decoded_events_equal_constructed_ones() -> None:
    [event] = decode(b"event: e\nid: 1\nretry: 5\ndata: d\n\n")
    expected = SSEEvent(event="e", data="d", id="1", retry=5)
    assert event == expected
    assert hash(event) == hash(expected)
    assert repr(event) == repr(expected)
    assert type(event) is SSEEvent
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.id = "2"  # pyright: ignore[reportAttributeAccessIssue]


@pytest.mark.parametrize(
    "content_type",
    [
        "text/event-stream",
        "text/event-stream; charset=utf-8",
        "Text/Event-Stream;charset=UTF-8",
        "TEXT/EVENT-STREAM",
        " text/event-stream ; charset=utf-8",
    ],
)
def test_is_event_stream_accepts_the_media_type_with_parameters(content_type: str) -> None:
    assert is_event_stream(content_type)


@pytest.mark.parametrize(
    "content_type",
    [
        None,
        "",
        "application/json",
        "application/json; charset=utf-8",
        "text/event-streams",
        "text/event-stream-x",
        "text/plain; format=text/event-stream",
        "text/eventstream",
    ],
)
def test_is_event_stream_rejects_other_media_types(content_type: str | None) -> None:
    assert not is_event_stream(content_type)


# --- line ends ----------------------------------------------------------------------------------


def test_lf_terminated_data_line() -> None:
    assert decode(b'data: {"k":1}\n\n') == [message('{"k":1}')]


def test_crlf_line_ends() -> None:
    assert decode(b"data: a\r\ndata: b\r\n\r\n") == [message("a\nb")]
    # A chunk ending with CRLF ends one line, not two.
    assert decode(b"data: a\r\n", b"data: b\r\n", b"\r\n") == [message("a\nb")]


def test_lone_cr_line_ends() -> None:
    assert decode(b"data: a\rdata: b\r\r") == [message("a\nb")]


def test_mixed_line_ends_in_one_stream() -> None:
    assert decode(b"data: a\rdata: b\r\ndata: c\n\r\ndata: d\r\r\n") == [
        message("a\nb\nc"),
        message("d"),
    ]


def test_cr_at_the_end_of_a_chunk_with_its_lf_in_the_next() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\r") == []
    assert decoder.feed(b"\n") == []  # completes the CRLF: not a blank line
    assert decoder.feed(b"\r") == [message("a")]  # a lone CR: the blank line


def test_cr_lf_split_survives_empty_chunks_in_between() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\r") == []
    assert decoder.feed(b"") == []
    assert decoder.feed(b"\ndata: b\r") == []
    assert decoder.feed(b"") == []
    assert decoder.feed(b"") == []
    assert decoder.feed(b"\n") == []
    assert decoder.feed(b"\n") == [message("a\nb")]


def test_cr_split_from_lf_then_a_blank_line_dispatches() -> None:
    assert decode(b"data: a\r", b"\n\n") == [message("a")]
    assert decode(b"data: a\r", b"\r\n") == [message("a")]
    assert decode(b"data: a\r\n\r", b"\ndata: b\n\n") == [message("a"), message("b")]


def test_a_lone_cr_before_an_unfinished_line_does_not_skip_the_next_lf() -> None:
    assert decode(b"data: a\rdata: b", b"\n\n") == [message("a\nb")]
    assert decode(b"data: a\r\n\rdata: b", b"\ndata: c\n\n") == [message("a"), message("b\nc")]


def test_crlf_split_after_the_blank_line() -> None:
    assert decode(b"data: a\n\r", b"\ndata: b\n\n") == [message("a"), message("b")]


def test_unicode_line_separators_are_not_line_ends() -> None:
    payload = '{"text":"a\u2028b\u2029c\u0085d\x0be\x0cf\x1cg"}'
    assert decode(f"data: {payload}\n\n".encode()) == [message(payload)]
    body = f"data: {payload}\n\n".encode()
    assert decode(*bytewise(body)) == [message(payload)]


def test_multi_byte_characters_split_across_chunks() -> None:
    body = "data: żółw 🐢\n\n".encode()
    assert decode(*bytewise(body)) == [message("żółw 🐢")]


# --- BOM ----------------------------------------------------------------------------------------


def test_a_bom_at_the_start_is_stripped() -> None:
    assert decode(BOM + b"data: first\n\n") == [message("first")]


def test_a_bom_split_across_feeds_is_stripped() -> None:
    assert decode(b"\xef", b"\xbb", b"\xbf", b"data: first\n\n") == [message("first")]
    assert decode(b"\xef\xbb", b"\xbfdata: first\n\n") == [message("first")]
    assert decode(b"\xef", b"\xbb\xbfdata: fi", b"rst\n\n") == [message("first")]


def test_only_one_bom_is_stripped() -> None:
    # The second BOM is part of the first line's field name: an unknown field.
    assert decode(BOM + BOM + b"data: a\n\ndata: b\n\n") == [message("b")]


def test_a_bom_later_in_the_stream_is_not_stripped() -> None:
    assert decode(b"data: a\n\n" + BOM + b"data: b\n\n") == [message("a")]
    assert decode(b"data: " + BOM + b"x\n\n") == [message("\ufeffx")]


def test_a_partial_bom_followed_by_other_bytes_is_invalid_utf8() -> None:
    error = protocol_error(b"\xef", b"\xbbdata: a\n\n")
    assert "UTF-8" in error.message


def test_a_stream_of_only_a_bom_or_part_of_one_has_no_events() -> None:
    assert decode(BOM) == []
    assert decode(b"\xef\xbb") == []


# --- comments and fields ------------------------------------------------------------------------


def test_comments_are_ignored() -> None:
    body = b": OPENROUTER PROCESSING\n\n: OPENROUTER PROCESSING\n\ndata: a\n\n:\n\n"
    assert decode(body) == [message("a")]


def test_a_comment_inside_an_event_does_not_end_it() -> None:
    assert decode(b"data: a\n: keep-alive\ndata: b\n\n") == [message("a\nb")]


def test_multi_line_data_is_joined_with_lf() -> None:
    assert decode(b"data: a\ndata: b\ndata: c\n\n") == [message("a\nb\nc")]
    assert decode(b"data: a\ndata:\ndata: c\n\n") == [message("a\n\nc")]


def test_data_with_and_without_the_space() -> None:
    assert decode(b'data:{"k":1}\n\n') == [message('{"k":1}')]
    assert decode(b'data: {"k":1}\n\n') == [message('{"k":1}')]


def test_only_one_leading_space_is_stripped() -> None:
    assert decode(b"data:  x\n\n") == [message(" x")]
    assert decode(b"data:\tx\n\n") == [message("\tx")]
    assert decode(b"event:  ping\ndata: x\n\n") == [message("x", event=" ping")]


def test_trailing_whitespace_is_kept() -> None:
    body = b'data: {"type":"content_block_stop","index":0               }\n\n'
    assert decode(body) == [message('{"type":"content_block_stop","index":0               }')]


def test_empty_data_values_still_dispatch() -> None:
    assert decode(b"data\n\n") == [message("")]
    assert decode(b"data:\n\n") == [message("")]
    assert decode(b"data: \n\n") == [message("")]


def test_the_field_name_ends_at_the_first_colon() -> None:
    assert decode(b"data: a:b: c\n\n") == [message("a:b: c")]
    assert decode(b"event:a:b\ndata: x\n\n") == [message("x", event="a:b")]


def test_unknown_fields_are_ignored() -> None:
    body = b"foo: bar\nData: X\nDATA: Y\n data: Z\ndat\nevents: e\nretry2: 5\ndata: y\n\n"
    assert decode(body) == [message("y")]


def test_the_default_event_type_is_message() -> None:
    assert decode(b"data: x\n\n") == [message("x", event="message")]
    assert decode(b"event:\ndata: x\n\n") == [message("x", event="message")]
    assert decode(b"event\ndata: x\n\n") == [message("x", event="message")]


def test_event_sets_the_type_of_one_event_only() -> None:
    body = b"event: content_block_delta\ndata: a\n\ndata: b\n\n"
    assert decode(body) == [message("a", event="content_block_delta"), message("b")]


def test_the_last_event_line_wins() -> None:
    assert decode(b"event: a\nevent: b\ndata: x\n\n") == [message("x", event="b")]


def test_an_event_without_data_is_not_dispatched_and_resets_the_type() -> None:
    assert decode(b"event: ping\n\n") == []
    assert decode(b"event: ping\n\ndata: x\n\n") == [message("x")]


def test_blank_lines_alone_dispatch_nothing() -> None:
    assert decode(b"\n\n\r\n\r\r\n") == []


def test_id_then_extra_blank_lines_give_no_spurious_events() -> None:
    assert decode(b"id: 7\ndata: a\n\n\n\n\n") == [message("a", id="7")]
    assert decode(b"id: 7\n\n\n\n") == []


def test_the_last_event_id_persists_across_events() -> None:
    decoder = SSEDecoder()
    assert decoder.last_event_id is None
    events = decoder.feed(b"id: 7\ndata: a\n\ndata: b\n\nid: 8\n\ndata: c\n\n")
    assert events == [message("a", id="7"), message("b", id="7"), message("c", id="8")]
    assert decoder.last_event_id == "8"


def test_an_empty_id_resets_the_last_event_id() -> None:
    assert decode(b"id: 7\ndata: a\n\nid\ndata: b\n\nid:\ndata: c\n\n") == [
        message("a", id="7"),
        message("b", id=""),
        message("c", id=""),
    ]


def test_an_id_containing_nul_is_ignored() -> None:
    decoder = SSEDecoder()
    events = decoder.feed(b"id: 1\ndata: a\n\nid: 2\x003\ndata: b\n\n")
    assert events == [message("a", id="1"), message("b", id="1")]
    assert decoder.last_event_id == "1"
    assert decode(b"id: \x00\ndata: x\n\n") == [message("x")]


def test_retry_of_ascii_digits_is_kept_and_persists() -> None:
    decoder = SSEDecoder()
    assert decoder.retry is None
    events = decoder.feed(b"retry: 3000\ndata: a\n\ndata: b\n\nretry:0\n\ndata: c\n\n")
    assert events == [message("a", retry=3000), message("b", retry=3000), message("c", retry=0)]
    assert decoder.retry == 0


@pytest.mark.parametrize(
    "value",
    [
        b"",
        b"3s",
        b"-1",
        b"+1",
        b"1.5",
        b"1 ",
        b" 1",
        b"1_000",
        b"0x10",
        "١٢٣".encode(),
        b"\xc2\xb2",
    ],
)
def test_retry_other_than_ascii_digits_is_ignored(value: bytes) -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"retry: 10\n\nretry: " + value + b"\ndata: x\n\n") == [
        message("x", retry=10)
    ]
    assert decoder.retry == 10


def test_retry_with_more_digits_than_int_accepts_is_ignored() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"retry: " + b"9" * 5000 + b"\ndata: x\n\n") == [message("x")]
    assert decoder.retry is None


def test_a_lone_space_line_is_a_field_not_a_blank_line() -> None:
    assert decode(b"data: a\n \ndata: b\n\n") == [message("a\nb")]


# --- end of stream ------------------------------------------------------------------------------


def test_an_incomplete_event_at_eof_is_dropped() -> None:
    assert decode(b"data: a\n") == []
    assert decode(b"data: a") == []
    assert decode(b"data: a\n\ndata: b\ndata: c\n") == [message("a")]


def test_done_without_a_trailing_blank_line_is_dropped() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b'data: {"x":1}\n\ndata: [DONE]\n') == [message('{"x":1}')]
    assert decoder.close() == []
    assert decode(b"data: [DONE]\n\n") == [message("[DONE]")]


def test_close_is_idempotent_and_feed_after_close_is_refused() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\n\ndata: b") == [message("a")]
    assert decoder.close() == []
    assert decoder.close() == []
    with pytest.raises(RuntimeError, match="after close"):
        decoder.feed(b"\n\n")


# --- UTF-8 --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        b"data: \xff\n\n",
        b"data:\xc3\x28\n\n",
        b"data: \xed\xa0\x80\n\n",  # an encoded surrogate
        b"data: \xc0\xaf\n\n",  # an overlong form
        b": comment \xfe\n\n",
        b"ev\xffent: x\ndata: y\n\n",
        b"id: \xe2\x82\n\n",  # truncated sequence
        b"data: ok\n\xff\n",
    ],
)
def test_invalid_utf8_in_a_complete_line_is_a_protocol_error(body: bytes) -> None:
    error = protocol_error(body)
    assert "UTF-8" in error.message
    assert protocol_error(*bytewise(body)).message.startswith("SSE line is not valid UTF-8")


def test_invalid_utf8_in_a_dropped_unfinished_line_is_never_decoded() -> None:
    assert decode(b"data: a\n\ndata: \xff") == [message("a")]


def test_a_failed_decoder_stays_failed() -> None:
    decoder = SSEDecoder()
    with pytest.raises(ProviderError):
        decoder.feed(b"data: \xff\n\n")
    with pytest.raises(ProviderError, match="UTF-8") as again:
        decoder.feed(b"data: fine\n\n")
    assert again.value.code == "PROVIDER_PROTOCOL_ERROR"
    assert decoder.close() == []
    with pytest.raises(ProviderError):
        decoder.feed(b"data: fine\n\n")


# --- bounds -------------------------------------------------------------------------------------


def test_default_bounds() -> None:
    assert DEFAULT_MAX_EVENT_BYTES == 1 << 20
    assert DEFAULT_MAX_RESPONSE_BYTES == 64 << 20


def test_an_event_of_exactly_max_event_bytes_is_accepted() -> None:
    assert decode(b"data: 1234\n\n", max_event_bytes=10) == [message("1234")]
    assert decode(b"data: 12\n\ndata: 34\n\n", max_event_bytes=8) == [
        message("12"),
        message("34"),
    ]


def test_an_event_over_max_event_bytes_is_a_protocol_error() -> None:
    error = protocol_error(b"data: 12345\n\n", max_event_bytes=10)
    assert "max_event_bytes (10 bytes)" in error.message


def test_accumulated_data_lines_count_towards_max_event_bytes() -> None:
    error = protocol_error(b"data: 12\ndata: 34\n\n", max_event_bytes=15)
    assert "max_event_bytes" in error.message


def test_every_line_of_the_event_counts_and_bytes_not_characters() -> None:
    protocol_error(b": pad\ndata: 1\n\n", max_event_bytes=10)
    assert decode("data: ééé\n\n".encode(), max_event_bytes=12) == [message("ééé")]
    protocol_error("data: ééé\n\n".encode(), max_event_bytes=11)


def test_the_bom_and_line_ends_do_not_count() -> None:
    assert decode(BOM + b"data: 1234\r\n\r\n", max_event_bytes=10) == [message("1234")]


def test_a_long_line_without_a_line_end_fails_before_it_ends() -> None:
    decoder = SSEDecoder(max_event_bytes=10)
    assert decoder.feed(b"data: 1234") == []
    with pytest.raises(ProviderError, match="max_event_bytes") as caught:
        decoder.feed(b"5")
    assert "line" in caught.value.message
    with pytest.raises(ProviderError, match="max_event_bytes"):
        SSEDecoder(max_event_bytes=10).feed(b"data: " + b"x" * 100)
    with pytest.raises(ProviderError, match="max_event_bytes"):
        SSEDecoder(max_event_bytes=10).feed(b"data: a\n\ndata: " + b"x" * 100)


def test_a_long_line_fed_one_byte_at_a_time_fails_at_the_limit() -> None:
    decoder = SSEDecoder(max_event_bytes=1000)
    for _ in range(1000):
        assert decoder.feed(b"x") == []
    with pytest.raises(ProviderError, match="max_event_bytes"):
        decoder.feed(b"x")


def test_max_response_bytes_bounds_everything_fed() -> None:
    body = b"data: a\n\n" * 4  # 36 bytes
    assert len(decode(body, max_response_bytes=36)) == 4
    error = protocol_error(body + b"\n", max_response_bytes=36)
    assert "max_response_bytes (36 bytes)" in error.message
    protocol_error(*bytewise(body + b":"), max_response_bytes=36)
    protocol_error(b"\n" * 37, max_response_bytes=36)


@pytest.mark.parametrize("name", ["max_event_bytes", "max_response_bytes"])
def test_bounds_must_be_positive_ints(name: str) -> None:
    for bad in (0, -1):
        with pytest.raises(ValueError, match=name):
            SSEDecoder(**{name: bad})
    wrongs: tuple[Any, ...] = (True, 1.0, "1", None)
    for wrong in wrongs:
        with pytest.raises(TypeError, match=name):
            SSEDecoder(**{name: wrong})


@pytest.mark.parametrize("chunk", [bytearray(b"data: x\n\n"), memoryview(b"x"), "data: x\n\n"])
def test_feed_takes_bytes_only(chunk: object) -> None:
    with pytest.raises(TypeError, match="bytes"):
        SSEDecoder().feed(chunk)  # pyright: ignore[reportArgumentType]


def test_one_byte_feeds_of_a_realistic_stream() -> None:
    body = (
        b": OPENROUTER PROCESSING\n\n"
        b'data: {"choices":[{"delta":{"content":"Hi"}}]}\n\n'
        b"event: error\r\n"
        b'data: {"error":{"message":"x"}}\r\n\r\n'
        b"data: [DONE]\n\n"
    )
    expected = [
        message('{"choices":[{"delta":{"content":"Hi"}}]}'),
        message('{"error":{"message":"x"}}', event="error"),
        message("[DONE]"),
    ]
    assert decode(body) == expected
    assert decode(*bytewise(body)) == expected


# --- property (1): any split of a valid stream decodes to the modelled events -------------------

TEXT = st.text(
    st.characters(codec="utf-8", exclude_characters="\r\n")
    | st.sampled_from(["\u2028", "\u2029", "\u0085", "\ufeff", ":", " ", "\x00", "é", "🐢"]),
    max_size=10,
)
DIGITS = st.integers(0, 10**12).map(str) | st.just("007")
BAD_RETRY = st.sampled_from(["", "3s", "-1", "1.5", " 1", "١٢", "1 "])
UNKNOWN_FIELD = st.sampled_from(["foo", "Data", "ID", "dat", "events", "retry2", " data"])
ENDINGS = st.sampled_from(["\n", "\r\n", "\r"])
Field = tuple[str, str]


def field_line(name: str, value: str, draw: st.DrawFn) -> str:
    """``name`` and ``value`` written as one line, in any of the forms the rules allow."""
    if value.startswith(" ") or draw(st.booleans()):
        return f"{name}: {value}"
    if not value and draw(st.booleans()):
        return name
    return f"{name}:{value}"


@st.composite
def valid_streams(draw: st.DrawFn) -> tuple[bytes, list[SSEEvent]]:
    """An encoded stream and the events the rules say it holds."""
    lines: list[str] = []
    events: list[SSEEvent] = []
    last_id: str | None = None
    retry: int | None = None
    for _ in range(draw(st.integers(0, 6))):
        data: list[str] = []
        event_type = ""
        operations = draw(
            st.lists(
                st.sampled_from(["data", "data", "event", "id", "retry", "comment", "unknown"]),
                max_size=6,
            )
        )
        for operation in operations:
            if operation == "data":
                value = draw(TEXT)
                data.append(value)
                lines.append(field_line("data", value, draw))
            elif operation == "event":
                event_type = draw(TEXT)
                lines.append(field_line("event", event_type, draw))
            elif operation == "id":
                value = draw(TEXT)
                if "\x00" not in value:
                    last_id = value
                lines.append(field_line("id", value, draw))
            elif operation == "retry":
                if draw(st.booleans()):
                    digits = draw(DIGITS)
                    retry = int(digits)
                    lines.append(field_line("retry", digits, draw))
                else:
                    lines.append(field_line("retry", draw(BAD_RETRY), draw))
            elif operation == "comment":
                lines.append(":" + draw(TEXT))
            else:
                lines.append(field_line(draw(UNKNOWN_FIELD), draw(TEXT), draw))
        lines.extend([""] * draw(st.integers(1, 3)))
        if data:
            events.append(
                SSEEvent(
                    event=event_type or "message", data="\n".join(data), id=last_id, retry=retry
                )
            )
    # An incomplete trailing event, dropped by the decoder.
    trailing = draw(
        st.lists(st.sampled_from(["data: [DONE]", "data: x", ": c", "id: 9"]), max_size=2)
    )
    lines.extend(trailing)
    unterminated = draw(st.sampled_from(["", "", "data: partial", "da"]))
    text = ""
    previous = ""
    for line in lines:
        ending = draw(ENDINGS)
        if previous == "\r" and not line and ending == "\n":
            ending = "\r\n"  # a lone CR then an LF would read as one CRLF
        text += line + ending
        previous = ending
    text += unterminated
    body = text.encode()
    if draw(st.booleans()):
        body = BOM + body
    return body, events


CUTS = st.lists(st.integers(0, 4096), max_size=24)


@PROPERTY
@given(valid_streams(), CUTS)
def test_any_split_of_a_valid_stream_decodes_to_the_modelled_events(
    stream: tuple[bytes, list[SSEEvent]], cuts: list[int]
) -> None:
    body, expected = stream
    assert decode(body) == expected
    assert decode(*split_at(body, [cut % (len(body) + 1) for cut in cuts])) == expected
    assert decode(*bytewise(body)) == expected
    for cut in range(1, len(body)):  # every split in two
        assert decode(body[:cut], body[cut:]) == expected
    # feed_fields (the providers' path) gives the same events as plain tuples, for any split
    fields = [(event.event, event.data, event.id, event.retry) for event in expected]
    assert decode_fields(*split_at(body, [cut % (len(body) + 1) for cut in cuts])) == fields
    assert decode_fields(*bytewise(body)) == fields


# --- property (2): arbitrary bytes only ever raise ProviderError --------------------------------

TOKENS = st.sampled_from(
    [
        b"data:",
        b"data: ",
        b"event:",
        b"id:",
        b"retry:",
        b":",
        b" ",
        b"\n",
        b"\r",
        b"\r\n",
        b"\n\n",
        BOM,
        b"\xef",
        b"\xbb",
        b"\xff",
        b"\xc3",
        b"\xa9",
        b"\x00",
        b"7",
        "\u2028".encode(),
        b"[DONE]",
    ]
)
NOISE = st.lists(TOKENS | st.binary(max_size=6), max_size=80).map(b"".join)
LIMITS = st.fixed_dictionaries(
    {},
    optional={
        "max_event_bytes": st.integers(1, 40),
        "max_response_bytes": st.integers(1, 300),
    },
)


def outcome(chunks: Sequence[bytes], limits: dict[str, int]) -> tuple[list[SSEEvent], bool]:
    """The events emitted before the end or a failure, and whether it failed; ``feed_fields``
    must emit the same events and fail the same way, with the same message."""
    decoder = SSEDecoder(**limits)
    twin = SSEDecoder(**limits)
    events: list[SSEEvent] = []
    fields: list[tuple[str, str, str | None, int | None]] = []
    failure: ProviderError | None = None
    twin_failure: ProviderError | None = None
    try:
        for chunk in chunks:
            events += decoder.feed(chunk)
        events += decoder.close()
    except ProviderError as error:
        failure = error
    try:
        for chunk in chunks:
            fields += twin.feed_fields(chunk)
        fields += twin.close_fields()
    except ProviderError as error:
        twin_failure = error
    assert failure is None or failure.code == "PROVIDER_PROTOCOL_ERROR"
    assert fields == [(event.event, event.data, event.id, event.retry) for event in events]
    assert (failure is None) == (twin_failure is None)
    if failure is not None and twin_failure is not None:
        assert failure.message == twin_failure.message
    return events, failure is not None


@PROPERTY
@given(NOISE, CUTS, LIMITS)
def test_arbitrary_bytes_in_any_split_only_raise_provider_error(
    body: bytes, cuts: list[int], limits: dict[str, int]
) -> None:
    whole_events, whole_failed = outcome([body], limits)
    split_events, split_failed = outcome(split_at(body, cuts), limits)
    byte_events, byte_failed = outcome(bytewise(body), limits)
    halves = [outcome([body[:cut], body[cut:]], limits) for cut in range(1, len(body))]
    for events, failed in [(whole_events, whole_failed), (split_events, split_failed), *halves]:
        assert failed == byte_failed
        if failed:  # a failing chunk loses its events; nothing is emitted past the failure
            assert events == byte_events[: len(events)]
        else:
            assert events == byte_events


# --- property (3): the bounds hold for any split ------------------------------------------------

BOUNDED_LINE = st.text(st.sampled_from("ab:é🐢 "), min_size=1, max_size=12).map(
    lambda text: text if text[0] != " " else "x" + text
)


@st.composite
def bounded_streams(draw: st.DrawFn) -> tuple[bytes, list[list[str]], str]:
    """A stream of blocks of non-blank lines, then its blocks and its unterminated tail."""
    blocks = draw(st.lists(st.lists(BOUNDED_LINE, min_size=1, max_size=4), max_size=5))
    trailing = draw(st.lists(BOUNDED_LINE, max_size=3))
    unterminated = draw(st.sampled_from(["", "data: " + "z" * 30, "data: é"]))
    text = ""
    previous = ""
    for index, block in enumerate([*blocks, trailing]):
        last = index == len(blocks)
        for line in [*block, *([] if last else [""])]:
            ending = draw(ENDINGS)
            if previous == "\r" and not line and ending == "\n":
                ending = "\r\n"
            text += line + ending
            previous = ending
    body = text + unterminated
    encoded = body.encode()
    if draw(st.booleans()):
        encoded = BOM + encoded
    return encoded, [*blocks, trailing], unterminated


def over_event_limit(blocks: list[list[str]], unterminated: str, limit: int) -> bool:
    """The model: some event's complete lines, or the unfinished last line, exceed ``limit``."""
    for block in blocks:
        size = 0
        for line in block:
            size += len(line.encode())
            if size > limit:
                return True
    return len(unterminated.encode()) > limit


@PROPERTY
@given(bounded_streams(), st.integers(1, 60), CUTS)
def test_max_event_bytes_is_enforced_exactly_for_any_split(
    stream: tuple[bytes, list[list[str]], str], limit: int, cuts: list[int]
) -> None:
    body, blocks, unterminated = stream
    expected = over_event_limit(blocks, unterminated, limit)
    halves = [[body[:cut], body[cut:]] for cut in range(1, len(body))]
    for chunks in ([body], split_at(body, cuts), bytewise(body), *halves):
        decoder = SSEDecoder(max_event_bytes=limit)
        if expected:
            with pytest.raises(ProviderError, match="max_event_bytes") as caught:
                feed_all(decoder, chunks)
            assert caught.value.code == "PROVIDER_PROTOCOL_ERROR"
        else:
            feed_all(decoder, chunks)
            assert decoder.close() == []


@PROPERTY
@given(bounded_streams(), st.integers(1, 400), CUTS)
def test_max_response_bytes_is_enforced_exactly_for_any_split(
    stream: tuple[bytes, list[list[str]], str], limit: int, cuts: list[int]
) -> None:
    body = stream[0]
    for chunks in ([body], split_at(body, cuts), bytewise(body)):
        decoder = SSEDecoder(max_response_bytes=limit)
        if len(body) > limit:
            with pytest.raises(ProviderError, match="max_response_bytes") as caught:
                feed_all(decoder, chunks)
            assert caught.value.code == "PROVIDER_PROTOCOL_ERROR"
        else:
            feed_all(decoder, chunks)
            decoder.close()


def test_comment_lines_are_counted_but_dispatch_nothing() -> None:
    """``comments`` lets a caller count keep-alives (``: OPENROUTER PROCESSING``) as the
    server being alive; comments still never become events, however they are split."""
    decoder = SSEDecoder()
    assert decoder.comments == 0
    assert decoder.feed(b": OPENROUTER PROCESSING\n\n: again\r") == []
    assert decoder.comments == 2
    assert decoder.feed(b"\n: partial") == []
    assert decoder.comments == 2  # a comment line counts once it is complete
    events = decoder.feed(b"\ndata: {}\n\n")
    assert [event.data for event in events] == ["{}"]
    assert decoder.comments == 3
