"""Atomic, confined writes and edits of workspace files (§08 write steps): ``write_text`` and
``edit_text``.

A write creates a ``.pify-tmp-<16 hex digits>`` sibling exclusively (``0600``; short and of
fixed length, so any target name up to the file system's ``NAME_MAX`` works), writes, fsyncs,
re-checks the temp file's identity (``WRITE_TEMP_IDENTITY_CHANGED``), and ``os.replace``-s it
over the target; the temp file is always removed when the rename did not happen (an
attacker's non-empty directory at the temp name is left alone). A target that is a symlink is
refused (``WRITE_TARGET_SYMLINK``, or ``PATH_OUTSIDE_WORKSPACE`` when it points out; a
dangling link is replaced). An existing target's permission bits are kept; a new file gets
``0644``. Each write holds both locks of ``tether.tools.coding._write_locks``: its target's,
in this process, and its directory's ``flock`` around the last checks and the rename.

``edit_text`` is a compare-and-swap: right before the rename it reads the target again and
fails with ``EDIT_CONFLICT`` (nothing written; the message says to read the file again) if it
is not byte for byte what the edit was computed from. The final compare and the rename run
under the directory's ``flock``, which every tether write takes (in any process), so a
concurrent tether edit or write can never slip in between. A program that writes in place
without that lock is caught unless it writes in the moment between the compare and the
rename.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
from typing import Final

from tether._async.race import check_signal
from tether.abort import AbortSignal
from tether.tools.coding._write_locks import DirectoryLock, target_lock
from tether.tools.coding.file_reads import current_bytes, decode_text, read_bytes, too_large
from tether.tools.coding.workspace import (
    CODING_FILE_MAX_BYTES,
    CodingToolError,
    CodingToolErrorCode,
    Workspace,
    normalize_relative_path,
)

__all__ = ["EDIT_DIFF_MAX_LINES", "edit_text", "encode_text", "write_text"]

EDIT_DIFF_MAX_LINES: Final = 120
"""The most diff lines an edit's result shows; the rest are counted."""

_NEW_FILE_MODE: Final = 0o644


def _target_symlink_check(ws: Workspace, fd: int, name: str, canon: tuple[str, ...]) -> int | None:
    """Refuse a symlink target; returns the existing target's permission bits, if any."""
    try:
        info = os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(info.st_mode):
        link = os.path.join(ws.root, *canon)
        try:
            target = os.path.realpath(link, strict=True)
        except OSError:
            return None  # dangling: it is simply replaced
        ws.canonical_segments(target)  # PATH_OUTSIDE_WORKSPACE when it points out
        raise CodingToolError(
            "WRITE_TARGET_SYMLINK", f"{'/'.join(canon)} is a symlink; write to its target"
        )
    return stat.S_IMODE(info.st_mode)


def _remove_temp(fd: int, name: str) -> None:
    try:
        info = os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    try:
        if stat.S_ISDIR(info.st_mode):
            os.rmdir(name, dir_fd=fd)  # non-recursive: a planted non-empty dir stays
        else:
            os.unlink(name, dir_fd=fd)
    except FileNotFoundError:
        return


def _unchanged(ws: Workspace, fd: int, name: str, display: str, expected: bytes) -> None:
    """``EDIT_CONFLICT`` unless ``name`` still holds exactly ``expected``."""
    if current_bytes(ws, fd, name, display) != expected:
        raise CodingToolError(
            "EDIT_CONFLICT",
            f"{display} changed after edit_file read it (something else wrote to it); "
            "nothing was written. Call read_file to see its current text, then edit again.",
        )


def _temp_name() -> str:
    """Short and of fixed length: a target name of ``NAME_MAX`` bytes still has a sibling."""
    return f".pify-tmp-{os.urandom(8).hex()}"  # secrets.token_hex, without importing random


async def _write_locked(
    ws: Workspace,
    fd: int,
    canon: tuple[str, ...],
    data: bytes,
    signal: AbortSignal,
    expected: bytes | None = None,
) -> None:
    """Steps 3-7 of §08 write, the target lock held; with ``expected``, a compare-and-swap
    (``EDIT_CONFLICT`` unless the target still holds ``expected`` at the rename)."""
    name = canon[-1]
    ws.check()
    mode = _target_symlink_check(ws, fd, name, canon)
    temp = _temp_name()
    handle = -1
    owned = False
    renamed = False
    succeeded = False
    try:
        try:
            handle = os.open(
                temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=fd
            )
        except FileExistsError:
            raise CodingToolError("WRITE_TEMP_NOT_REGULAR", "the temp name is taken") from None
        owned = True
        opened = os.fstat(handle)
        if not stat.S_ISREG(opened.st_mode):
            raise CodingToolError("WRITE_TEMP_NOT_REGULAR", "the temp file is not regular")
        identity = (opened.st_dev, opened.st_ino)
        view = memoryview(data)
        while view:
            written = os.write(handle, view)
            view = view[written:]
        os.fchmod(handle, _NEW_FILE_MODE if mode is None else mode)
        os.fsync(handle)
        check_signal(signal)
        await asyncio.sleep(0)  # one scheduler turn, as §08 prescribes
        ws.notify("write:before-rename", os.path.join(ws.root, *canon[:-1], temp))

        def temp_is_ours() -> bool:
            try:
                now = os.stat(temp, dir_fd=fd, follow_symlinks=False)
            except OSError:
                return False
            return stat.S_ISREG(now.st_mode) and (now.st_dev, now.st_ino) == identity

        if not temp_is_ours():
            raise CodingToolError("WRITE_TEMP_IDENTITY_CHANGED", "the temp file was replaced")
        ws.check()
        _target_symlink_check(ws, fd, name, canon)
        check_signal(signal)
        display = "/".join(canon)
        lock = await DirectoryLock.take(fd, signal, lambda: ws.notify("write:lock-wait", display))
        try:
            if expected is not None:
                _unchanged(ws, fd, name, display, expected)
            try:
                os.replace(temp, name, src_dir_fd=fd, dst_dir_fd=fd)
            except OSError:
                if not temp_is_ours():
                    raise CodingToolError(
                        "WRITE_TEMP_IDENTITY_CHANGED", "the temp file was replaced"
                    ) from None
                raise
            renamed = True
            owned = False
            # Checked before the lock is released: once it is, the next tether writer (in any
            # process) may rightly rename its own file over ours, and that file holds our
            # change too.
            after = os.stat(name, dir_fd=fd, follow_symlinks=False)
            if (after.st_dev, after.st_ino) != identity:
                with contextlib.suppress(OSError):
                    again = os.stat(name, dir_fd=fd, follow_symlinks=False)
                    if (again.st_dev, again.st_ino) == (after.st_dev, after.st_ino):
                        os.unlink(name, dir_fd=fd)
                raise CodingToolError(
                    "WRITE_TEMP_IDENTITY_CHANGED", "the renamed file was replaced"
                )
        finally:
            lock.release()
        succeeded = True
    finally:
        if handle >= 0:
            os.close(handle)
        if owned and not renamed:
            try:
                _remove_temp(fd, temp)
            except OSError:
                if succeeded:  # pragma: no cover - renamed is then True
                    raise CodingToolError("WRITE_TEMP_CLEANUP_FAILED") from None


async def write_text(
    ws: Workspace, path: str, content: str, signal: AbortSignal
) -> tuple[str, int]:
    """Atomically write ``content``; returns ``(display path, bytes)``."""
    segments = normalize_relative_path(path)
    data = encode_text(content, "INVALID_WRITE_INPUT")
    if len(data) > CODING_FILE_MAX_BYTES:
        raise too_large("content", len(data))
    check_signal(signal)
    with ws.parent_fd(segments, create=True, missing_code="WRITE_FAILED") as (fd, canon):
        async with target_lock(fd, canon[-1], signal):
            await _write_locked(ws, fd, canon, data, signal)
        return "/".join(canon), len(data)


def encode_text(text: str, code: CodingToolErrorCode) -> bytes:
    """``text`` as UTF-8; ``code`` (the operation's input code) for a lone surrogate."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        raise CodingToolError(code, "text contains a lone surrogate") from None


# --- edit ---------------------------------------------------------------------------------------


def _line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def _diff(display: str, before: str, after: str) -> str:
    import difflib  # here, not at import: only an edit needs it

    lines = list(
        difflib.unified_diff(
            before.splitlines(keepends=True),
            after.splitlines(keepends=True),
            fromfile=f"a/{display}",
            tofile=f"b/{display}",
            n=3,
        )
    )
    shown = [
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
    ]
    if len(shown) > EDIT_DIFF_MAX_LINES:
        rest = len(shown) - EDIT_DIFF_MAX_LINES
        shown = [*shown[:EDIT_DIFF_MAX_LINES], f"... ({rest} more diff lines)\n"]
    return "".join(shown)


async def edit_text(
    ws: Workspace, path: str, old: str, new: str, signal: AbortSignal
) -> tuple[str, str]:
    """Replace the one occurrence of ``old``; returns ``(display path, diff)``."""
    segments = normalize_relative_path(path)
    check_signal(signal)
    with ws.parent_fd(segments, create=False, missing_code="FILE_NOT_FOUND") as (fd, canon):
        async with target_lock(fd, canon[-1], signal):
            display, original = read_bytes(ws, "/".join(canon))
            before = decode_text(original, display)
            if display != "/".join(canon):
                raise CodingToolError(
                    "WRITE_TARGET_SYMLINK", f"{'/'.join(canon)} is a symlink; edit {display}"
                )
            count = before.count(old)
            if count == 0:
                raise CodingToolError(
                    "EDIT_NO_MATCH",
                    f"`old` was not found in {display}. Copy the exact text (whitespace and "
                    "indentation included) from read_file output and call edit_file again.",
                )
            if count > 1:
                lines: list[int] = []
                start = before.find(old)
                while start != -1 and len(lines) < 10:
                    lines.append(_line_of(before, start))
                    start = before.find(old, start + 1)
                raise CodingToolError(
                    "EDIT_AMBIGUOUS_MATCH",
                    f"`old` occurs {count} times in {display} (at lines "
                    f"{', '.join(map(str, lines))}). Include more surrounding lines in `old` "
                    "so that it matches exactly one place.",
                )
            after = before.replace(old, new, 1)
            data = encode_text(after, "INVALID_EDIT_INPUT")
            if len(data) > CODING_FILE_MAX_BYTES:
                raise too_large(display, len(data))
            await _write_locked(ws, fd, canon, data, signal, expected=original)
        return display, _diff(display, before, after)
