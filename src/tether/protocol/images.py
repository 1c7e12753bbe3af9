"""Images in the protocol: ``ImageBlock``, its bounds and its errors (``ImageError``).

An image goes in a ``UserMessage`` or a ``ToolResultMessage`` (their ``images`` field,
protocol v2), next to the text ``content``. Its bytes are held once, raw; the JSON form
(``to_json``) carries them as standard base64 in ``data``, with padding.

Bounds, checked when an ``ImageBlock`` is built (tether refuses what is too large, it never
downscales: it takes no imaging dependency):

* at most ``MAX_IMAGE_BYTES`` (3.75 MiB) of image bytes: their base64 text is then at most
  5 MiB, Anthropic's API limit per image (it counts the base64 length: "image exceeds 5 MB
  maximum: N bytes > 5242880 bytes"), the smallest of the supported vendors';
* at most ``MAX_IMAGE_SIDE`` (8000) pixels a side: Anthropic refuses larger images;
* at most ``MAX_IMAGES_PER_REQUEST`` (20) images in one model request, checked by the
  providers before they send (``PROVIDER_TOO_MANY_IMAGES``): above 20, Anthropic lowers its
  size limit to 2000 px a side.
"""

from __future__ import annotations

from typing import Annotated, Final, Literal, TypeAlias

from tether._base.dataclass import dataclass
from tether._base.tether_error import TetherError
from tether.protocol._fields import POSITIVE, ProtocolValue
from tether.protocol.image_header import ImageMediaType, read_image_header

__all__ = [
    "MAX_IMAGES_PER_REQUEST",
    "MAX_IMAGE_BYTES",
    "MAX_IMAGE_SIDE",
    "ImageBlock",
    "ImageError",
    "ImageErrorCode",
    "ImageMediaType",
]

MAX_IMAGE_BYTES: Final = 5 * 1024 * 1024 // 4 * 3
"""The most bytes one image may have (3,932,160: 3.75 MiB, whose base64 text is exactly
Anthropic's limit per image, 5 MiB)."""
MAX_IMAGE_SIDE: Final = 8000
"""The most pixels an image may have along either side (Anthropic's limit)."""
MAX_IMAGES_PER_REQUEST: Final = 20
"""The most images one model request may carry (the providers check it before sending)."""

ImageErrorCode: TypeAlias = Literal["IMAGE_INVALID", "IMAGE_TOO_LARGE"]
"""Why bytes are not an image tether can send."""


class ImageError(TetherError[ImageErrorCode], ValueError):
    """Bytes that are not an image tether can send: not a PNG, JPEG, GIF or WebP whose
    header agrees with the block (``IMAGE_INVALID``), or beyond the bounds
    (``IMAGE_TOO_LARGE``)."""

    def __init__(self, code: ImageErrorCode, message: str) -> None:
        super().__init__(code, message)


@dataclass(frozen=True, slots=True, kw_only=True)
class ImageBlock(ProtocolValue):
    """One image: its media type, its bytes (held once, raw) and its size in pixels.

    Build one from a file's bytes with ``ImageBlock.from_bytes(data)``, which reads the type
    and the dimensions from the header. The constructor checks that ``media_type``, ``width``
    and ``height`` are what the bytes' header declares, and the bounds (``ImageError``).
    ``data`` may be given as a ``bytearray``; it is copied into ``bytes``. Its ``repr``
    shows the size of the bytes, never the bytes.
    """

    type: Literal["image"] = "image"
    media_type: ImageMediaType
    data: bytes
    width: Annotated[int, POSITIVE]
    height: Annotated[int, POSITIVE]

    def _invariant(self) -> None:
        """The bytes are an image of this type and size, within the bounds."""
        _check_bounds(len(self.data), self.width, self.height)
        header = read_image_header(self.data)
        if header is None:
            raise ImageError("IMAGE_INVALID", f"ImageBlock.data is not {_FORMATS}")
        declared = (self.media_type, self.width, self.height)
        found = (header.media_type, header.width, header.height)
        if declared != found:
            raise ImageError(
                "IMAGE_INVALID",
                f"ImageBlock says {_describe(*declared)} but its bytes are {_describe(*found)}",
            )

    @classmethod
    def from_bytes(cls, data: bytes | bytearray) -> ImageBlock:
        """The image ``data`` holds (a PNG, JPEG, GIF or WebP file's bytes), its type and
        dimensions read from its header; ``ImageError`` when it is none of these or too
        large."""
        if type(data) is not bytes and type(data) is not bytearray:
            raise TypeError(f"ImageBlock.from_bytes() needs bytes (got {type(data).__name__})")
        raw = bytes(data)
        _check_bounds(len(raw), 1, 1)  # before reading a header of what will be refused
        header = read_image_header(raw)
        if header is None:
            raise ImageError("IMAGE_INVALID", f"The bytes are not {_FORMATS}")
        return cls(media_type=header.media_type, data=raw, width=header.width, height=header.height)

    def __repr__(self) -> str:
        return (
            f"ImageBlock(media_type={self.media_type!r}, bytes={len(self.data)}, "
            f"width={self.width}, height={self.height})"
        )


_FORMATS: Final = "a PNG, JPEG, GIF or WebP image"


def _check_bounds(size: int, width: int, height: int) -> None:
    if size > MAX_IMAGE_BYTES:
        raise ImageError(
            "IMAGE_TOO_LARGE",
            f"The image has {size} bytes; at most {MAX_IMAGE_BYTES} (3.75 MiB, 5 MiB as base64) "
            "are allowed",
        )
    if width > MAX_IMAGE_SIDE or height > MAX_IMAGE_SIDE:
        raise ImageError(
            "IMAGE_TOO_LARGE",
            f"The image is {width}x{height} pixels; at most {MAX_IMAGE_SIDE} a side are allowed",
        )


def _describe(media_type: str, width: int, height: int) -> str:
    return f"{media_type} {width}x{height}"
