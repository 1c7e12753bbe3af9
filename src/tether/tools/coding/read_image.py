"""``read_file`` on an image: a PNG, JPEG, GIF or WebP file is returned as an image.

The file is recognised by its content, not its name: its first bytes (the PNG signature,
``FF D8 FF``, ``GIF87a``/``GIF89a``, ``RIFF....WEBP``) decide, so ``shot.png`` that holds
text is read as text and a screenshot saved without an extension is read as an image. It is
opened and confined exactly as a text file is (``files.read_bytes``: no symlink out of the
workspace, a regular file, one hard link); only the byte limit differs: an image may have up
to ``MAX_IMAGE_BYTES`` where text has ``CODING_FILE_MAX_BYTES``. An image beyond the
protocol's bounds (``MAX_IMAGE_BYTES``, ``MAX_IMAGE_SIDE`` pixels a side) is
``IMAGE_TOO_LARGE``, and a file that starts like an image but whose header is broken
``IMAGE_INVALID``; both messages name the file and say
what to do. Any other binary file keeps the text path's behaviour (``FILE_NOT_UTF8``).

The result's text says what was read, ``Read image file shot.png [image/png, 640x480,
12.3 KB]``, and its ``images`` hold the image (``tether.tools.returns.ToolReturn``).
"""

from __future__ import annotations

import os
from typing import Final

from tether.protocol import MAX_IMAGE_BYTES, ImageBlock, ImageError
from tether.tools.coding.workspace import CODING_FILE_MAX_BYTES
from tether.tools.returns import ToolReturn

__all__ = ["image_limit", "image_result", "is_image_start", "named_image_error", "render_size"]

_SNIFF_BYTES: Final = 12
_RESIZE_HINT: Final = (
    "Make a smaller copy (e.g. `convert IN -resize 50% OUT.png`, or `sips -Z 2000` on macOS) "
    "and read that instead"
)


def is_image_start(head: bytes) -> bool:
    """Whether ``head`` (a file's first bytes) starts like a PNG, JPEG, GIF or WebP file."""
    return head.startswith((b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff", b"GIF87a", b"GIF89a")) or (
        head.startswith(b"RIFF") and head[8:12] == b"WEBP"
    )


def image_limit(handle: int, size: int) -> int:
    """The byte limit of an opened file (``files.read_bytes``'s ``limit_of``): an image's
    when it starts like one (``IMAGE_TOO_LARGE`` at once when it is larger), else text's."""
    if not is_image_start(os.pread(handle, _SNIFF_BYTES, 0)):
        return CODING_FILE_MAX_BYTES
    if size > MAX_IMAGE_BYTES:
        raise ImageError(
            "IMAGE_TOO_LARGE",
            f"The image has {size} bytes ({render_size(size)}); at most {MAX_IMAGE_BYTES} "
            f"({render_size(MAX_IMAGE_BYTES)}) can be read. {_RESIZE_HINT}",
        )
    return MAX_IMAGE_BYTES


def named_image_error(display: str, error: ImageError) -> ImageError:
    """``error`` again, its message naming the file and saying what to do."""
    if error.code == "IMAGE_TOO_LARGE":
        message = (
            error.message if _RESIZE_HINT in error.message else f"{error.message}. {_RESIZE_HINT}"
        )
        return ImageError("IMAGE_TOO_LARGE", f"{display}: {message}")
    return ImageError("IMAGE_INVALID", f"{display}: {error.message}; it cannot be shown")


def render_size(size: int) -> str:
    """A byte count for people: ``512 B``, ``12.3 KB``, ``4.8 MB`` (1 KB = 1024 bytes)."""
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KB"
    return f"{size / (1024 * 1024):.1f} MB"


def image_result(display: str, data: bytes) -> ToolReturn | None:
    """The ``read_file`` result of a file's bytes when they are an image (``None`` when
    they do not start like one); ``ImageError`` naming the file when they are a broken or
    too large image."""
    if not is_image_start(data[:_SNIFF_BYTES]):
        return None
    try:
        image = ImageBlock.from_bytes(data)
    except ImageError as error:
        raise named_image_error(display, error) from None
    text = (
        f"Read image file {display} [{image.media_type}, {image.width}x{image.height}, "
        f"{render_size(len(data))}]"
    )
    return ToolReturn(value=text, images=(image,))
