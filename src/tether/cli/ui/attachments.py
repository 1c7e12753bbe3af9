"""Images attached from the chat prompt: a path to an image file typed or pasted into a line.

``find_image_paths(line)`` finds the words of a line that name an image file by their
extension (``.png``, ``.jpg``/``.jpeg``, ``.gif``, ``.webp``, any case), in the forms a person
types or a terminal pastes: a plain path (``./shot.png``, ``~/Desktop/shot.png``,
``/tmp/a.png``), an ``@path`` mention (the chat's completion inserts those), a path in single
or double quotes (``'/tmp/My Shot.png'``, as GNOME Terminal pastes a dropped file), a path
with backslash-escaped spaces (``/tmp/My\\ Shot.png``, as macOS terminals paste it) and a
``file://`` URL (percent-encoded). Punctuation after the path (``shot.png.``, ``(a.png)``)
is not part of it.

``attach_images(line, cwd)`` reads each one found (relative to ``cwd``; ``~`` expanded; the
person chose the file, so it may lie outside the workspace) and sniffs it: a file that is a
PNG, JPEG, GIF or WebP image within the protocol's bounds becomes an ``ImageBlock``; a
missing path, a directory or a file that is not such an image leaves the word plain text
(a file that has an image's name but is not one, or is too large, gets a note saying why).
The line's text is sent unchanged either way, so the model also sees which file it was.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Final

from tether._base.dataclass import dataclass

if TYPE_CHECKING:
    from tether.protocol import ImageBlock

__all__ = [
    "IMAGE_EXTENSIONS",
    "MAX_ATTACHED_IMAGES",
    "Attachments",
    "attach_images",
    "describe_image",
    "find_image_paths",
    "prompt_images",
]

IMAGE_EXTENSIONS: Final = (".png", ".jpg", ".jpeg", ".gif", ".webp")
"""The file name endings that make a word a candidate image path (any case)."""

MAX_ATTACHED_IMAGES: Final = 8
"""The most images one prompt attaches; further paths stay text (and a note says so)."""

_WORD: Final = re.compile(r"""'([^']+)'|"([^"]+)"|((?:\\.|[^\s'"])+)""")
"""A single-quoted, double-quoted or bare word (a backslash escapes the next character)."""
_ESCAPE: Final = re.compile(r"\\(.)")
_TRAILING: Final = ".,;:!?)]}>"
_LEADING: Final = "([{<"


def _image_name(word: str) -> str | None:
    """``word`` without trailing punctuation when it then ends with an image extension."""
    text = word
    while text and not text.lower().endswith(IMAGE_EXTENSIONS) and text[-1] in _TRAILING:
        text = text[:-1]
    return text if text.lower().endswith(IMAGE_EXTENSIONS) else None


def _unwrap(word: str) -> str:
    """A word as a path: ``@`` and opening brackets dropped, a ``file://`` URL decoded."""
    while word[:1] in _LEADING and word[:1]:
        word = word[1:]
    if word.startswith("@"):
        word = word[1:]
    if word.startswith("file://"):
        from urllib.parse import unquote, urlsplit

        parts = urlsplit(word)
        if parts.netloc not in ("", "localhost"):
            return ""
        word = unquote(parts.path)
    return word


def find_image_paths(line: str) -> list[str]:
    """The paths in ``line`` that name image files by their extension, in order, each once
    (see the module docstring for the forms recognised). Nothing is read."""
    found: list[str] = []
    for match in _WORD.finditer(line):
        quoted = match.group(1) or match.group(2)
        if quoted is not None:
            word = quoted
        else:
            bare = match.group(3)
            word = _ESCAPE.sub(r"\1", bare)
        name = _image_name(_unwrap(word))
        if name and name not in found:
            found.append(name)
    return found


@dataclass(frozen=True, slots=True, kw_only=True)
class Attachments:
    """What ``attach_images`` made of a line: the ``images`` to send with it, one
    ``shown`` line per image for the transcript (``[image: shot.png 640x480]``) and the
    ``notes`` for paths that looked like images but were not attached."""

    images: tuple[ImageBlock, ...] = ()
    shown: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


def describe_image(name: str, image: ImageBlock) -> str:
    """How the transcript shows an attached image: ``[image: NAME WIDTHxHEIGHT]``."""
    return f"[image: {name} {image.width}x{image.height}]"


def attach_images(line: str, cwd: Path) -> Attachments:
    """The images the paths in ``line`` name (see the module docstring)."""
    paths = find_image_paths(line)
    if not paths:
        return Attachments()
    from tether.protocol import MAX_IMAGE_BYTES, ImageBlock, ImageError

    images: list[ImageBlock] = []
    shown: list[str] = []
    notes: list[str] = []
    seen: set[str] = set()
    for text in paths:
        try:
            path = Path(os.path.expanduser(text))  # ValueError: a NUL in a ~user name
            if not path.is_absolute():
                path = cwd / path
            if not path.is_file():
                continue  # missing, or a directory: the word is only text
            size = path.stat().st_size
            key = str(path.resolve())
        except (OSError, ValueError):
            continue
        if key in seen:
            continue
        seen.add(key)
        if len(images) >= MAX_ATTACHED_IMAGES:
            notes.append(f"(not attached: {text}: at most {MAX_ATTACHED_IMAGES} images a prompt)")
            continue
        if size > MAX_IMAGE_BYTES:
            notes.append(
                f"(not attached: {text} has {size} bytes; images may have at most "
                f"{MAX_IMAGE_BYTES})"
            )
            continue
        try:
            with path.open("rb") as handle:
                data = handle.read(MAX_IMAGE_BYTES + 1)
            image = ImageBlock.from_bytes(data)
        except OSError as error:
            notes.append(f"(not attached: {text}: {error.strerror or error})")
            continue
        except ImageError as error:
            notes.append(f"(not attached: {text}: {error.message})")
            continue
        images.append(image)
        shown.append(describe_image(path.name, image))
    return Attachments(images=tuple(images), shown=tuple(shown), notes=tuple(notes))


async def prompt_images(
    text: str, cwd: Path, show: Callable[[str], None]
) -> tuple[ImageBlock, ...]:
    """The images ``text`` attaches (``attach_images``, read on a worker thread), each
    shown with ``show`` (``[image: shot.png 640x480]``), and a note for each path that
    looked like an image but was not attached: the chat's hook before it sends a prompt."""
    if not find_image_paths(text):
        return ()
    found = await asyncio.to_thread(attach_images, text, cwd)
    for line in (*found.shown, *found.notes):
        show(line)
    return found.images
