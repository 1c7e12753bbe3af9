"""Images in session files: content-addressed blob files beside the session, and the small
reference a JSON line carries instead of the image's bytes.

A message's images are not written into its line (base64 would make every line that holds a
screenshot megabytes long, and a load would decode them all). Each image's bytes go to
``<session file>.blobs/<sha256 hex>`` (the session file's path with ``.blobs`` appended: one
directory per session, so a session and its images are copied, moved or deleted together),
and the line's ``images`` array holds a reference per image::

    {"type":"imageRef","sha256":"<64 hex>","mediaType":"image/png","width":640,
     "height":480,"size":12345}

Writing is crash-safe and ordered: every blob is written to a temporary name in the blob
directory (``O_EXCL``, ``0600``), fsynced, renamed to its digest and the directory fsynced,
*before* the line that references it is appended. A crash in between leaves at most an
unreferenced blob (harmless; the next append of the same image reuses it) or a temporary
(``.tmp-*``, removed by the next ``load``, which holds the session's lock). A blob that already
exists with the right digest is not written again (same bytes, same name).

Reading verifies each blob: its size (at most ``IMAGE_MAX_BYTES``) and its SHA-256 must match
the reference, and the bytes must still be the image the reference describes. A blob that is
missing or does not verify never loses the session: the image is left out of its message, a
marker is appended to the message's text (``[image unavailable: image/png 640x480, sha256
0123abcd...: blob missing]``) so a person and a model both see that something was there, and
the store lists it in ``unavailable_images``. A *malformed reference* (wrong keys, a digest
that is not 64 lowercase hex digits, a size out of range) is a broken line, like any other:
``SESSION_INVALID_MESSAGE``.
"""

# The package's modules share their underscore helpers with one another.
# pyright: reportPrivateUsage=false, reportUnusedFunction=false, reportUnusedClass=false

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Sequence
from typing import Final, Literal, TypeAlias, cast, get_args

from tether._base.dataclass import dataclass
from tether.agent.session.files import (
    _O_CLOEXEC,
    _O_NOFOLLOW,
    _READ_FLAGS,
    _close_quietly,
    _sync_directory,
    _write_all,
    session_io,
)
from tether.agent.session.records import _fail
from tether.protocol import MAX_IMAGE_BYTES, ImageBlock, ImageError, ImageMediaType

__all__ = [
    "BLOB_DIRECTORY_SUFFIX",
    "MEDIA_TYPES",
    "ImageRef",
    "UnavailableImage",
    "UnavailableReason",
    "blob_directory_of",
    "decode_image_ref",
    "unavailable_notice",
]

BLOB_DIRECTORY_SUFFIX: Final = ".blobs"
"""What is appended to a session file's path to name its blob directory."""

MEDIA_TYPES: Final = frozenset(get_args(ImageMediaType))
"""The media types a reference may name (the protocol's)."""
_REF_KEYS: Final = frozenset({"type", "sha256", "mediaType", "width", "height", "size"})
_HEX: Final = frozenset("0123456789abcdef")
_MAX_SIDE: Final = 1 << 20  # far above any image bound: the reference decoder's own sanity cap
_MAX_SIZE: Final = 1 << 30

UnavailableReason: TypeAlias = Literal["missing", "corrupt", "not loaded"]
"""Why a referenced image is not in its message: its blob file is ``missing``, it does not
verify (``corrupt``: wrong size, digest or image), or blobs were ``not loaded`` (a parse of
the bytes alone, ``parse_session`` without ``blobs``, as ``list_sessions`` does)."""


def blob_directory_of(session_path: str | os.PathLike[str]) -> str:
    """The blob directory of a session file: its path with ``.blobs`` appended."""
    return os.fspath(session_path) + BLOB_DIRECTORY_SUFFIX


@dataclass(frozen=True, slots=True, kw_only=True)
class ImageRef:
    """What a session line holds for one image: its SHA-256 (64 lowercase hex digits), media
    type, dimensions and size in bytes."""

    sha256: str
    media_type: str
    width: int
    height: int
    size: int

    def to_json(self) -> dict[str, object]:
        """The reference's JSON object, keys in the order they are written."""
        return {
            "type": "imageRef",
            "sha256": self.sha256,
            "mediaType": self.media_type,
            "width": self.width,
            "height": self.height,
            "size": self.size,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class UnavailableImage:
    """An image a session line references that is not in the loaded message: the record's
    ``entry_id``, the ``ref`` and the ``reason`` (see ``UnavailableReason``)."""

    entry_id: str
    ref: ImageRef
    reason: UnavailableReason


def _is_digest(value: object) -> bool:
    return type(value) is str and len(value) == 64 and _HEX.issuperset(value)


def _is_bounded(value: object, low: int, high: int) -> bool:
    return type(value) is int and low <= value <= high


def decode_image_ref(value: object, media_types: frozenset[str] = MEDIA_TYPES) -> ImageRef:
    """An ``ImageRef`` from its JSON object (exactly the keys it is written with), or
    ``SESSION_INVALID_MESSAGE``; runs nothing of the value's but ``dict`` lookups."""
    if type(value) is not dict:
        raise _fail("SESSION_INVALID_MESSAGE", "Session image reference must be a JSON object")
    record = cast("dict[str, object]", value)
    if record.keys() != _REF_KEYS or record["type"] != "imageRef":
        raise _fail(
            "SESSION_INVALID_MESSAGE",
            "Session image reference must have exactly type, sha256, mediaType, width, height "
            "and size",
        )
    digest, media_type = record["sha256"], record["mediaType"]
    width, height, size = record["width"], record["height"], record["size"]
    if not _is_digest(digest):
        raise _fail(
            "SESSION_INVALID_MESSAGE", "Session image sha256 must be 64 lowercase hex digits"
        )
    if type(media_type) is not str or media_type not in media_types:
        raise _fail(
            "SESSION_INVALID_MESSAGE",
            f"Session image mediaType must be one of {sorted(media_types)}",
        )
    if not _is_bounded(width, 1, _MAX_SIDE) or not _is_bounded(height, 1, _MAX_SIDE):
        raise _fail("SESSION_INVALID_MESSAGE", "Session image width and height must be positive")
    if not _is_bounded(size, 1, _MAX_SIZE):
        raise _fail("SESSION_INVALID_MESSAGE", "Session image size must be a positive integer")
    return ImageRef(
        sha256=cast(str, digest),
        media_type=media_type,
        width=cast(int, width),
        height=cast(int, height),
        size=cast(int, size),
    )


def image_digest(data: bytes) -> str:
    """The SHA-256 of an image's bytes, in hex: its blob's name."""
    # hashlib loads OpenSSL (about 1 ms): imported by the first session with an image, not by
    # every program that imports the session store
    import hashlib

    return hashlib.sha256(data).hexdigest()


# --- reading -----------------------------------------------------------------------------------


def _read_blob(directory: str, ref: ImageRef, max_bytes: int) -> bytes | None:
    """The verified bytes of ``ref``'s blob in ``directory``; ``None`` when it is missing
    (raises nothing for a missing file), ``b""`` when it does not verify."""
    path = os.path.join(directory, ref.sha256)
    try:
        fd = session_io.open(path, _READ_FLAGS)  # no link followed, never blocks on a FIFO
    except FileNotFoundError:
        return None
    except OSError as error:
        if error.errno in (errno.ELOOP, errno.ENOTDIR):
            return b""
        raise
    try:
        info = session_io.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size != ref.size or ref.size > max_bytes:
            return b""
        chunks: list[bytes] = []
        total = 0
        while total <= ref.size:
            chunk = session_io.read(fd, ref.size + 1 - total, total)
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    finally:
        _close_quietly(fd)
    data = b"".join(chunks)
    if len(data) != ref.size or image_digest(data) != ref.sha256:
        return b""
    return data


# --- writing -----------------------------------------------------------------------------------


def _ensure_directory(directory: str) -> None:
    """Make the blob directory (``0700``) if it is missing, and make its name durable; a
    path there that is not a real directory (a symlink included) is ``SESSION_ROOT_CHANGED``."""
    try:
        info = session_io.lstat(directory)
    except FileNotFoundError:
        try:
            session_io.mkdir(directory, 0o700)
        except FileExistsError:
            pass  # made meanwhile: checked below
        else:
            _sync_directory(os.path.dirname(directory))
        info = session_io.lstat(directory)
    if not stat.S_ISDIR(info.st_mode):
        raise _fail(
            "SESSION_ROOT_CHANGED", f"Session blob directory {directory} is not a directory"
        )


def _has_blob(directory: str, digest: str, data: bytes) -> bool:
    """Whether the blob is there already and verifies (then it is not written again)."""
    ref = ImageRef(sha256=digest, media_type="", width=1, height=1, size=len(data))
    found = _read_blob(directory, ref, len(data))
    return found is not None and found == data


_TEMPORARY_PREFIX: Final = ".tmp-"


def _write_blob(directory: str, digest: str, data: bytes) -> None:
    """Write one blob: temp (``O_EXCL``, ``0600``), fsync, rename to the digest. The temp
    is removed when the rename did not happen."""
    temp = os.path.join(directory, f"{_TEMPORARY_PREFIX}{os.urandom(8).hex()}")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_CLOEXEC | _O_NOFOLLOW
    fd = session_io.open(temp, flags, 0o600)
    renamed = False
    try:
        try:
            _write_all(fd, data, 0)
            session_io.fsync(fd)
        finally:
            session_io.close(fd)
        session_io.rename(temp, os.path.join(directory, digest))
        renamed = True
    finally:
        if not renamed:
            with contextlib.suppress(OSError):  # best effort: a stray temp is harmless
                session_io.remove(temp)


def _write_blobs(directory: str, blobs: Sequence[tuple[str, bytes]]) -> None:
    """Make every blob durable in ``directory`` (see the module docstring); the caller then
    appends the lines that reference them."""
    if not blobs:
        return
    _ensure_directory(directory)
    wrote = False
    for digest, data in dict(blobs).items():
        if _has_blob(directory, digest, data):
            continue
        _write_blob(directory, digest, data)
        wrote = True
    if wrote:
        _sync_directory(directory)


def _remove_temporaries(directory: str) -> None:
    """Remove the temporary blobs a crash left in ``directory`` (regular files named
    ``.tmp-*``: a write that never reached its rename). Only the session's one writer
    calls it, holding the file's lock, so no temporary there is still being written.
    Best effort: a missing directory, or one that is not a real directory, is left alone,
    and a temporary that cannot be removed stays (harmless)."""
    try:
        if not stat.S_ISDIR(session_io.lstat(directory).st_mode):
            return
        names = session_io.listdir(directory)
    except OSError:
        return
    removed = False
    for name in names:
        if not name.startswith(_TEMPORARY_PREFIX):
            continue
        path = os.path.join(directory, name)
        try:
            if stat.S_ISREG(session_io.lstat(path).st_mode):
                session_io.remove(path)
                removed = True
        except OSError:
            continue
    if removed:
        with contextlib.suppress(OSError):
            _sync_directory(directory)


class _ImageLoader:
    """The images a parse resolves: from ``directory`` (``None``: none are loaded), each
    verified; what could not be loaded is collected in ``unavailable``."""

    __slots__ = ("directory", "unavailable")

    def __init__(self, directory: str | None) -> None:
        self.directory = directory
        self.unavailable: list[UnavailableImage] = []

    def load(self, entry_id: str, ref: ImageRef) -> ImageBlock | None:
        """The image ``ref`` names, or ``None`` (then recorded in ``unavailable``)."""
        reason: UnavailableReason = "not loaded"
        if self.directory is not None:
            data = _read_blob(self.directory, ref, MAX_IMAGE_BYTES)
            reason = "missing" if data is None else "corrupt"
            if data:
                try:
                    return ImageBlock(
                        media_type=cast("ImageMediaType", ref.media_type),
                        data=data,
                        width=ref.width,
                        height=ref.height,
                    )
                except ImageError:
                    pass  # the right digest, but not the image the reference describes
        self.unavailable.append(UnavailableImage(entry_id=entry_id, ref=ref, reason=reason))
        return None


def unavailable_notice(images: Sequence[UnavailableImage]) -> str:
    """One line for a person about the images a load could not restore, e.g. ``2 images of
    this session could not be loaded (blob missing: 2); their places are marked in the
    text``."""
    counts: dict[str, int] = {}
    for image in images:
        counts[image.reason] = counts.get(image.reason, 0) + 1
    reasons = ", ".join(f"blob {reason}: {count}" for reason, count in counts.items())
    noun = "image" if len(images) == 1 else "images"
    return (
        f"{len(images)} {noun} of this session could not be loaded ({reasons}); their places "
        "are marked in the text"
    )


def _unavailable_note(ref: ImageRef, reason: UnavailableReason) -> str:
    """The marker a message's text gets for an image that could not be loaded."""
    why = {"missing": "blob missing", "corrupt": "blob corrupt", "not loaded": "not loaded"}
    return (
        f"[image unavailable: {ref.media_type} {ref.width}x{ref.height}, sha256 "
        f"{ref.sha256[:12]}...: {why[reason]}]"
    )
