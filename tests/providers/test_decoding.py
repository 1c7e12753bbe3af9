"""``tether.providers._decoding``: a body's ``Content-Encoding`` decoded incrementally, bounded.

Property tests: any bytes, compressed in any of the three forms a server sends (gzip, zlib
``deflate``, raw deflate) and cut anywhere, decode to the same bytes in pieces of at most
``MAX_PIECE``; arbitrary bytes claimed to be compressed fail only with a ``ProviderError``.
Then the edges: several gzip members, a truncated stream, a body inflating past its bound,
and the encodings tether refuses."""

from __future__ import annotations

import gzip
import itertools
import zlib
from typing import Final

import pytest
from hypothesis import given
from hypothesis import strategies as st

from servers.replay import Encoding, encode_body
from tether.providers._decoding import MAX_PIECE, BodyDecoder, body_decoder
from tether.providers.errors import ProviderError

ENCODINGS: Final[tuple[Encoding, ...]] = ("gzip", "deflate", "deflate-raw")
LIMIT: Final = 1 << 24


def decoder_for(encoding: Encoding, limit: int = LIMIT) -> BodyDecoder:
    header = "deflate" if encoding == "deflate-raw" else encoding
    decoder = body_decoder(header, limit)
    assert decoder is not None
    return decoder


def decode_all(decoder: BodyDecoder, pieces: list[bytes]) -> list[bytes]:
    """Every decoded piece, draining ``pending`` before the next input, as ``BodyReader``."""
    out: list[bytes] = []
    for piece in [*pieces, b""]:
        out.append(decoder.decode(piece))
        while decoder.pending:
            out.append(decoder.decode(b""))
    decoder.finish()
    return out


def sse_lines(count: int) -> bytes:
    """A compressible body (up to ~80 KB: more than one ``MAX_PIECE``)."""
    return b"data: x\n\n" * count


def cut(data: bytes, offsets: list[int]) -> list[bytes]:
    bounds = sorted({0, len(data), *(o % (len(data) + 1) for o in offsets)})
    return [data[a:b] for a, b in itertools.pairwise(bounds)]


@given(
    plain=st.binary(max_size=4096) | st.integers(0, 9000).map(sse_lines),
    encoding=st.sampled_from(ENCODINGS),
    offsets=st.lists(st.integers(min_value=0, max_value=1 << 20), max_size=12),
)
def test_every_encoding_decodes_to_the_same_bytes_however_it_is_cut(
    plain: bytes, encoding: Encoding, offsets: list[int]
) -> None:
    pieces = cut(encode_body(plain, encoding), offsets)
    out = decode_all(decoder_for(encoding), pieces)
    assert b"".join(out) == plain
    assert all(len(piece) <= MAX_PIECE for piece in out)


@given(
    data=st.binary(max_size=512),
    encoding=st.sampled_from(ENCODINGS),
    offsets=st.lists(st.integers(min_value=0, max_value=512), max_size=6),
)
def test_arbitrary_bytes_fail_only_with_a_provider_error(
    data: bytes, encoding: Encoding, offsets: list[int]
) -> None:
    codes: list[str] = []
    try:
        decode_all(decoder_for(encoding, limit=1 << 16), cut(data, offsets))
    except ProviderError as error:
        codes.append(error.code)
    assert set(codes) <= {"PROVIDER_PROTOCOL_ERROR", "PROVIDER_STREAM_INTERRUPTED"}


def test_a_large_piece_is_returned_in_bounded_pieces() -> None:
    plain = b"A" * (5 * MAX_PIECE + 17)
    decoder = decoder_for("gzip")
    first = decoder.decode(gzip.compress(plain))
    assert len(first) == MAX_PIECE
    assert decoder.pending
    rest = decode_all(decoder, [])
    assert first + b"".join(rest) == plain


def test_several_gzip_members_are_one_body() -> None:
    data = gzip.compress(b"first ") + gzip.compress(b"second ") + gzip.compress(b"third")
    assert b"".join(decode_all(decoder_for("gzip"), cut(data, [5, 30, 31]))) == (
        b"first second third"
    )


def test_bytes_after_a_deflate_stream_are_ignored() -> None:
    data = encode_body(b"body", "deflate") + b"trailing"
    assert b"".join(decode_all(decoder_for("deflate"), [data, b"more"])) == b"body"


def test_an_empty_deflate_body_is_empty() -> None:
    assert decode_all(decoder_for("deflate"), []) == [b""]


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_a_stream_cut_before_its_end_is_interrupted(encoding: Encoding) -> None:
    data = encode_body(b"x" * 1000, encoding)
    with pytest.raises(ProviderError) as caught:
        decode_all(decoder_for(encoding), [data[: len(data) // 2]])
    assert caught.value.code == "PROVIDER_STREAM_INTERRUPTED"


def test_a_corrupt_stream_is_a_protocol_error() -> None:
    with pytest.raises(ProviderError) as caught:
        decode_all(decoder_for("gzip"), [b"\x1f\x8bnot really gzip"])
    assert caught.value.code == "PROVIDER_PROTOCOL_ERROR"
    assert "corrupt" in caught.value.message


def test_a_body_inflating_past_its_bound_is_a_protocol_error() -> None:
    decoder = decoder_for("gzip", limit=3 * MAX_PIECE)
    with pytest.raises(ProviderError) as caught:
        decode_all(decoder, [gzip.compress(b"\0" * (4 * MAX_PIECE))])
    assert caught.value.code == "PROVIDER_PROTOCOL_ERROR"
    assert str(3 * MAX_PIECE) in caught.value.message


@pytest.mark.parametrize("header", [None, "", "identity", " Identity ", "identity, identity"])
def test_identity_needs_no_decoder(header: str | None) -> None:
    assert body_decoder(header, LIMIT) is None


@pytest.mark.parametrize("header", ["GZIP", "x-gzip", "gzip, identity", "Deflate"])
def test_header_spellings_are_understood(header: str) -> None:
    decoder = body_decoder(header, LIMIT)
    assert decoder is not None
    wbits = zlib.MAX_WBITS | (16 if "gzip" in header.lower() else 0)
    compressor = zlib.compressobj(6, zlib.DEFLATED, wbits)
    data = compressor.compress(b"hello") + compressor.flush()
    assert b"".join(decode_all(decoder, [data])) == b"hello"


@pytest.mark.parametrize("header", ["br", "zstd", "compress", "gzip, gzip", "deflate, br"])
def test_encodings_tether_does_not_decode_are_refused(header: str) -> None:
    with pytest.raises(ProviderError) as caught:
        body_decoder(header, LIMIT)
    assert caught.value.code == "PROVIDER_PROTOCOL_ERROR"
    assert "identity" in caught.value.message
