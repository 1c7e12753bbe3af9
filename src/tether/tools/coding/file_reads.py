"""Confined reads of workspace files (§08 read steps): ``read_bytes`` and ``read_text``.

A read opens the target relative to a parent directory fd (see ``Workspace.parent_fd``) under
the workspace's one confinement rule (``open_for_reading``: no symlink followed, a regular
file, exactly one hard link, else ``PATH_OUTSIDE_WORKSPACE``), re-checks the workspace and that
the path still names the opened file (``PATH_CHANGED_DURING_READ``), and takes at most
``CODING_FILE_MAX_BYTES`` (``FILE_TOO_LARGE``). A symlink inside the workspace is followed by
resolving it and reading its target the same way. ``read_text`` decodes strict UTF-8
(``FILE_NOT_UTF8``; one leading BOM is dropped). ``tether.tools.coding.writing`` reads the
target again through ``current_bytes`` before an edit's rename.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable

from tether.tools.coding.workspace import (
    CODING_FILE_MAX_BYTES,
    CodingToolError,
    Workspace,
    normalize_relative_path,
    open_for_reading,
)

__all__ = [
    "LimitOf",
    "current_bytes",
    "decode_text",
    "read_bytes",
    "read_text",
    "too_large",
]


LimitOf = Callable[[int, int], int]
"""``limit_of(descriptor, size)``: the most bytes a read of the opened file may take."""


def _read_at(
    ws: Workspace, fd: int, name: str, display: str, limit_of: LimitOf | None = None
) -> tuple[bytes, os.stat_result]:
    """Read ``name`` in directory ``fd`` (no symlink followed), checked per §08 read steps;
    at most ``CODING_FILE_MAX_BYTES``, or what ``limit_of`` allows for the opened file."""
    try:
        info = os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        raise CodingToolError("FILE_NOT_FOUND", f"{display} does not exist") from None
    if stat.S_ISLNK(info.st_mode):
        raise _Symlink
    if not stat.S_ISREG(info.st_mode):
        raise CodingToolError("FILE_NOT_REGULAR", f"{display} is not a regular file")
    ws.notify("read:before-open", display)
    try:
        handle, opened = open_for_reading(name, fd, display)
    except FileNotFoundError:
        raise CodingToolError("PATH_CHANGED_DURING_READ", f"{display} disappeared") from None
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise CodingToolError(
                "PATH_CHANGED_DURING_READ", f"{display} became a symlink"
            ) from None
        raise
    try:
        ws.check()
        try:
            now = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except OSError:
            raise CodingToolError("PATH_CHANGED_DURING_READ", f"{display} changed") from None
        if (now.st_dev, now.st_ino) != (opened.st_dev, opened.st_ino):
            raise CodingToolError("PATH_CHANGED_DURING_READ", f"{display} was replaced")
        limit = CODING_FILE_MAX_BYTES if limit_of is None else limit_of(handle, opened.st_size)
        if opened.st_size > limit:
            raise too_large(display, opened.st_size)
        chunks: list[bytes] = []
        total = 0
        while total <= limit:
            chunk = os.read(handle, limit + 1 - total)
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > limit:
            raise too_large(display, total)
        return b"".join(chunks), opened
    finally:
        os.close(handle)


class _Symlink(Exception):
    """Internal: the last segment is a symlink; resolve it and retry."""


def too_large(display: str, size: int) -> CodingToolError:
    """``FILE_TOO_LARGE`` for ``display`` (a path, or "content") of ``size`` bytes."""
    return CodingToolError(
        "FILE_TOO_LARGE", f"{display} has {size} bytes; the limit is {CODING_FILE_MAX_BYTES}"
    )


def decode_text(data: bytes, display: str) -> str:
    """``data`` as strict UTF-8 (``FILE_NOT_UTF8`` otherwise), one leading BOM dropped."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise CodingToolError(
            "FILE_NOT_UTF8", f"{display} is not UTF-8 text (byte {error.start})"
        ) from None
    return text[1:] if text.startswith("\ufeff") else text


def read_bytes(ws: Workspace, path: str, limit_of: LimitOf | None = None) -> tuple[str, bytes]:
    """``(display path, bytes)`` of a workspace file, symlinks inside followed (at most
    ``CODING_FILE_MAX_BYTES``, or what ``limit_of(descriptor, size)`` allows)."""
    segments = normalize_relative_path(path)
    for _ in range(40):
        with ws.parent_fd(segments, create=False, missing_code="FILE_NOT_FOUND") as (fd, canon):
            display = "/".join(canon)
            try:
                data, _ = _read_at(ws, fd, canon[-1], display, limit_of)
            except _Symlink:
                target = os.path.realpath(os.path.join(ws.root, *canon))
                segments = ws.canonical_segments(target)
                if not segments:
                    raise CodingToolError("FILE_NOT_REGULAR", f"{path} is a directory") from None
                continue
        return display, data
    raise CodingToolError("PATH_OUTSIDE_WORKSPACE", f"{path}: too many symlinks")


def read_text(ws: Workspace, path: str) -> tuple[str, str]:
    """``(display path, text)`` of a workspace file, symlinks inside followed."""
    display, data = read_bytes(ws, path)
    return display, decode_text(data, display)


def current_bytes(ws: Workspace, fd: int, name: str, display: str) -> bytes | None:
    """What ``name`` in directory ``fd`` holds now, read as ``read_bytes`` reads it; ``None``
    when it cannot be (gone, a symlink, not a regular file, too large, replaced meanwhile)."""
    try:
        return _read_at(ws, fd, name, display)[0]
    except (CodingToolError, _Symlink):
        return None
