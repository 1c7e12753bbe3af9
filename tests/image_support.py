"""Image bytes for tests, written with the stdlib: a real PNG, and headers of each format.

``png(width, height)`` is a complete, decodable PNG (one colour, RGB, zlib and CRCs as the
PNG spec says). ``header(media_type, width, height)`` is the start of a file of that format
declaring that size (what ``read_image_header`` reads), for formats the stdlib cannot write.
``IMAGES`` draws ``ImageBlock`` values of every format, size and header layout.
"""

from __future__ import annotations

import struct
import zlib
from typing import Final, get_args

from hypothesis import strategies as st

from tether.protocol import MAX_IMAGE_SIDE, ImageBlock, ImageMediaType

MEDIA_TYPES: Final[tuple[ImageMediaType, ...]] = get_args(ImageMediaType)


def _chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def png(width: int, height: int, rgb: tuple[int, int, int] = (200, 40, 40)) -> bytes:
    """A complete PNG of one colour (8-bit RGB, no interlace)."""
    row = b"\x00" + bytes(rgb) * width  # filter type 0, then the pixels
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _chunk(b"IHDR", ihdr)
        + _chunk(b"IDAT", zlib.compress(row * height))
        + _chunk(b"IEND", b"")
    )


def gif(width: int, height: int) -> bytes:
    """A GIF89a logical screen with a global colour table and the trailer (no frames)."""
    return b"GIF89a" + struct.pack("<HHBBB", width, height, 0x80, 0, 0) + b"\0\0\0\xff\xff\xff;"


def jpeg(width: int, height: int, *, app_segments: int = 1, fill: int = 0) -> bytes:
    """A JPEG's start: SOI, ``app_segments`` APPn segments, ``fill`` 0xFF fill bytes, then
    a baseline frame header (SOF0) declaring the size."""
    app = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    sof = b"\xff" * fill + b"\xff\xc0" + struct.pack(">HBHHB", 17, 8, height, width, 3)
    components = b"\x01\x22\x00\x02\x11\x01\x03\x11\x01"
    return b"\xff\xd8" + app * app_segments + sof + components + b"\xff\xd9"


def webp(width: int, height: int, chunk: str = "VP8X") -> bytes:
    """A WebP file's start in one of its three layouts (``VP8 ``, ``VP8L``, ``VP8X``)."""
    if chunk == "VP8 ":
        body = b"\x10\x02\x00" + b"\x9d\x01\x2a" + struct.pack("<HH", width, height) + b"\0" * 4
    elif chunk == "VP8L":
        bits = (width - 1) | ((height - 1) << 14)
        body = b"\x2f" + struct.pack("<I", bits) + b"\0" * 3
    else:
        body = b"\0\0\0\0" + (width - 1).to_bytes(3, "little") + (height - 1).to_bytes(3, "little")
    payload = b"WEBP" + chunk.encode("ascii") + struct.pack("<I", len(body)) + body
    return b"RIFF" + struct.pack("<I", len(payload)) + payload


def header(media_type: ImageMediaType, width: int, height: int) -> bytes:
    """Bytes whose header declares an image of ``media_type`` and this size."""
    if media_type == "image/png":
        return png(width, height) if width * height <= 4096 else _png_header(width, height)
    if media_type == "image/jpeg":
        return jpeg(width, height)
    if media_type == "image/gif":
        return gif(width, height)
    return webp(width, height)


def _png_header(width: int, height: int) -> bytes:
    return b"\x89PNG\r\n\x1a\n" + _chunk(
        b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    )


SIDES: Final = st.integers(min_value=1, max_value=MAX_IMAGE_SIDE)
WEBP_CHUNKS: Final = st.sampled_from(["VP8 ", "VP8L", "VP8X"])


@st.composite
def image_bytes(draw: st.DrawFn) -> tuple[ImageMediaType, int, int, bytes]:
    """``(media type, width, height, bytes)``: a header in any layout, then any tail."""
    media: ImageMediaType = draw(st.sampled_from(MEDIA_TYPES))
    width, height = draw(SIDES), draw(SIDES)
    if media == "image/jpeg":
        data = jpeg(
            width,
            height,
            app_segments=draw(st.integers(0, 3)),
            fill=draw(st.integers(0, 3)),
        )
    elif media == "image/webp":
        chunk = draw(WEBP_CHUNKS)
        if chunk == "VP8 ":  # 14-bit sizes
            width, height = min(width, 0x3FFF), min(height, 0x3FFF)
        data = webp(width, height, chunk)
    elif media == "image/gif":
        data = gif(width, height)
    else:
        data = _png_header(width, height)
    return media, width, height, data + draw(st.binary(max_size=16))


IMAGES: Final = image_bytes().map(
    lambda drawn: ImageBlock(media_type=drawn[0], data=drawn[3], width=drawn[1], height=drawn[2])
)
"""``ImageBlock`` values of every format and size (their bytes: a header and a random tail)."""
