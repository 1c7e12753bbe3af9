"""Property tests of ``tether rpc``'s line framing (``tether.cli.rpc_framing.Lines``): however
standard input's bytes arrive in chunks, the lines are those of splitting the whole input on
``\\n`` (and only ``\\n``), each line over the limit one ``TOO_LONG`` in its place."""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st

from tether.cli.rpc_framing import TOO_LONG, Lines, TooLong

LIMIT = 8

# Short lines around the limit, with \r, \0 and other separators Python's splitlines knows.
pieces = st.lists(
    st.binary(max_size=LIMIT + 3) | st.sampled_from([b"\r", b"\r\n", b"\x0b", b"\x1c", b"\x00"]),
    max_size=8,
)


def reference(data: bytes, limit: int) -> list[bytes | TooLong]:
    """The plain path: the whole input split at once."""
    *whole, rest = data.split(b"\n")
    lines: list[bytes | TooLong] = [TOO_LONG if len(line) > limit else line for line in whole]
    if len(rest) > limit:
        lines.append(TOO_LONG)
    elif rest:
        lines.append(rest)
    return lines


def framed(chunks: list[bytes], limit: int) -> list[bytes | TooLong]:
    lines = Lines(limit)
    result: list[bytes | TooLong] = []
    for chunk in chunks:
        result += lines.feed(chunk)
    return result + lines.finish()


@given(pieces, st.data())
@example([b"a" * (LIMIT + 1), b"\n", b"b"], None)
@example([b"a" * LIMIT, b"a\nb" * 3], None)
def test_lines_do_not_depend_on_how_the_input_is_chunked(
    parts: list[bytes], data: st.DataObject | None
) -> None:
    joined = b"\n".join(parts)
    cuts: list[int] = []
    if data is not None:
        cuts = sorted(data.draw(st.lists(st.integers(0, len(joined)), max_size=6)))
    chunks = [
        joined[start:end] for start, end in zip([0, *cuts], [*cuts, len(joined)], strict=True)
    ]
    assert framed(chunks, LIMIT) == reference(joined, LIMIT)


@given(st.binary(max_size=40), st.integers(0, 12))
def test_a_line_is_never_longer_than_the_limit(data: bytes, limit: int) -> None:
    for line in framed([data[i : i + 3] for i in range(0, len(data), 3)], limit):
        assert line is TOO_LONG or (
            isinstance(line, bytes) and b"\n" not in line and len(line) <= limit
        )
