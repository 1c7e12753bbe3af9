"""Reading an image's header: which of the four formats it is, and its size in pixels.

``read_image_header(data)`` looks only at the first bytes of ``data`` (stdlib only, no
decoding of pixels): the PNG ``IHDR`` chunk, the JPEG ``SOFn`` frame header (found by walking
the marker segments), the GIF logical screen descriptor, and the WebP ``VP8 `` / ``VP8L`` /
``VP8X`` chunk. It returns ``None`` for anything else, including a truncated or malformed
header and a zero width or height; it never raises on any bytes (a Hypothesis property in
``tests/protocol/test_images.py``). It says nothing about whether the rest of the file decodes: the
vendor's decoder judges that.

Why a sniffer of our own: ``ImageBlock`` checks that its media type and dimensions are the
ones its bytes declare, and tether takes no imaging dependency.
"""

from __future__ import annotations

from typing import Final, Literal, TypeAlias

from tether._base.dataclass import dataclass

__all__ = ["ImageHeader", "ImageMediaType", "read_image_header"]

ImageMediaType: TypeAlias = Literal["image/png", "image/jpeg", "image/gif", "image/webp"]
"""The image formats every supported vendor API accepts."""

_PNG_SIGNATURE: Final = b"\x89PNG\r\n\x1a\n"
_JPEG_FRAMES: Final = frozenset(
    {0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF}
)
"""The start-of-frame markers (``SOF0``..``SOF15`` but ``DHT`` C4, ``JPG`` C8, ``DAC`` CC)."""
_JPEG_STANDALONE: Final = frozenset({0x01, *range(0xD0, 0xD8)})
"""Markers without a length field (``TEM``, ``RST0``..``RST7``)."""
_JPEG_START_OF_SCAN: Final = 0xDA
_JPEG_END_OF_IMAGE: Final = 0xD9


@dataclass(frozen=True, slots=True, kw_only=True)
class ImageHeader:
    """What an image's header declares: its format and its size in pixels (both >= 1)."""

    media_type: ImageMediaType
    width: int
    height: int


def read_image_header(data: bytes) -> ImageHeader | None:
    """The format and dimensions ``data``'s header declares, or ``None`` when ``data`` does
    not start with a well-formed PNG, JPEG, GIF or WebP header of a non-empty image."""
    if data.startswith(_PNG_SIGNATURE):
        found = _png(data)
        media: ImageMediaType = "image/png"
    elif data.startswith(b"\xff\xd8"):
        found = _jpeg(data)
        media = "image/jpeg"
    elif data.startswith((b"GIF87a", b"GIF89a")):
        found = _gif(data)
        media = "image/gif"
    elif data.startswith(b"RIFF") and data[8:12] == b"WEBP":
        found = _webp(data)
        media = "image/webp"
    else:
        return None
    if found is None or found[0] < 1 or found[1] < 1:
        return None
    return ImageHeader(media_type=media, width=found[0], height=found[1])


def _png(data: bytes) -> tuple[int, int] | None:
    # signature (8), IHDR length (4, always 13), "IHDR", width (4, BE), height (4, BE)
    if len(data) < 24 or data[12:16] != b"IHDR" or _be(data, 8, 4) != 13:
        return None
    return _be(data, 16, 4), _be(data, 20, 4)


def _gif(data: bytes) -> tuple[int, int] | None:
    # "GIF8?a", logical screen width (2, LE), height (2, LE)
    if len(data) < 10:
        return None
    return _le(data, 6, 2), _le(data, 8, 2)


def _jpeg(data: bytes) -> tuple[int, int] | None:
    """Walk the marker segments after ``SOI`` to the first frame header (``SOFn``)."""
    position = 2
    size = len(data)
    while position < size:
        if data[position] != 0xFF:
            return None
        while position < size and data[position] == 0xFF:  # fill bytes before a marker
            position += 1
        if position >= size:
            return None
        marker = data[position]
        position += 1
        if marker in _JPEG_STANDALONE:
            continue
        if marker in (_JPEG_START_OF_SCAN, _JPEG_END_OF_IMAGE, 0xD8, 0x00):
            return None  # scan data, the end, or a second SOI before any frame header
        if position + 2 > size:
            return None
        length = _be(data, position, 2)  # counts its own two bytes
        if length < 2:
            return None
        if marker in _JPEG_FRAMES:
            # precision (1), height (2), width (2)
            if length < 7 or position + 7 > size:
                return None
            return _be(data, position + 5, 2), _be(data, position + 3, 2)
        position += length
    return None


def _webp(data: bytes) -> tuple[int, int] | None:
    chunk = data[12:16]
    if chunk == b"VP8 ":
        # chunk size (4), frame tag (3), start code 9D 01 2A, width (2), height (2): 14 bits
        if len(data) < 30 or data[23:26] != b"\x9d\x01\x2a":
            return None
        return _le(data, 26, 2) & 0x3FFF, _le(data, 28, 2) & 0x3FFF
    if chunk == b"VP8L":
        # chunk size (4), signature 0x2F, then width - 1 and height - 1 in 14 bits each
        if len(data) < 25 or data[20] != 0x2F:
            return None
        bits = _le(data, 21, 4)
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8X":
        # chunk size (4), flags (1), reserved (3), canvas width - 1 (3), height - 1 (3)
        if len(data) < 30:
            return None
        return _le(data, 24, 3) + 1, _le(data, 27, 3) + 1
    return None


def _be(data: bytes, start: int, count: int) -> int:
    return int.from_bytes(data[start : start + count], "big")


def _le(data: bytes, start: int, count: int) -> int:
    return int.from_bytes(data[start : start + count], "little")
