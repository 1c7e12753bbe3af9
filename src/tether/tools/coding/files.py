"""``read_file``, ``write_file`` and ``edit_file``: confined, atomic, race-aware (§08).

Reads open the target with ``O_NOFOLLOW`` relative to a parent directory fd (see
``Workspace.parent_fd``), check that it is a regular file, re-check the workspace and that the
path still names the opened file (``PATH_CHANGED_DURING_READ``), and decode strict UTF-8
(``FILE_NOT_UTF8``; one leading BOM is dropped). A file with more than one hard link is refused
(``PATH_OUTSIDE_WORKSPACE``): its other names may lie outside the workspace and that cannot be
ruled out.

Writes create a ``.<name>.pify-tmp-<pid>-<uuid>`` sibling exclusively (``0600``), write, fsync,
re-check the temp file's identity (``WRITE_TEMP_IDENTITY_CHANGED``), and ``os.replace`` it over
the target; the temp file is always removed when the rename did not happen (an attacker's
non-empty directory at the temp name is left alone). A target that is a symlink is refused
(``WRITE_TARGET_SYMLINK``, or ``PATH_OUTSIDE_WORKSPACE`` when it points out; a dangling link is
replaced). An existing target's permission bits are kept; a new file gets ``0644``. Writes to
one target are serialized by an in-process ``asyncio.Lock`` (FIFO: arrival order); waiting for
it races the abort signal.
"""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import errno
import os
import stat
import uuid
from collections.abc import AsyncGenerator, Generator
from dataclasses import dataclass
from typing import Final

from tether._race import check_signal, race
from tether.abort import AbortSignal
from tether.protocol import Invalid, ToolExecutionContext, ToolValidation, Valid
from tether.tools.coding.workspace import (
    CODING_FILE_MAX_BYTES,
    CodingToolError,
    Workspace,
    normalize_relative_path,
    record_of,
)
from tether.tools.contract import ToolDefinition, define_tool

__all__ = [
    "EDIT_DIFF_MAX_LINES",
    "READ_OUTPUT_LIMIT",
    "EditInput",
    "ReadInput",
    "WriteInput",
    "edit_file_tool",
    "read_file_tool",
    "read_text",
    "write_file_tool",
    "write_text",
]

READ_OUTPUT_LIMIT: Final = CODING_FILE_MAX_BYTES + 1_024
EDIT_DIFF_MAX_LINES: Final = 120

_NEW_FILE_MODE: Final = 0o644


# --- reading ----------------------------------------------------------------------------------


def _read_at(ws: Workspace, fd: int, name: str, display: str) -> tuple[bytes, os.stat_result]:
    """Read ``name`` in directory ``fd`` (no symlink followed), checked per §08 read steps."""
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
        handle = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=fd)
    except FileNotFoundError:
        raise CodingToolError("PATH_CHANGED_DURING_READ", f"{display} disappeared") from None
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise CodingToolError(
                "PATH_CHANGED_DURING_READ", f"{display} became a symlink"
            ) from None
        raise
    try:
        opened = os.fstat(handle)
        if not stat.S_ISREG(opened.st_mode):
            raise CodingToolError("FILE_NOT_REGULAR", f"{display} is not a regular file")
        ws.check()
        try:
            now = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except OSError:
            raise CodingToolError("PATH_CHANGED_DURING_READ", f"{display} changed") from None
        if (now.st_dev, now.st_ino) != (opened.st_dev, opened.st_ino):
            raise CodingToolError("PATH_CHANGED_DURING_READ", f"{display} was replaced")
        if opened.st_nlink > 1:
            raise CodingToolError(
                "PATH_OUTSIDE_WORKSPACE",
                f"{display} has {opened.st_nlink} hard links; its other names may be outside",
            )
        if opened.st_size > CODING_FILE_MAX_BYTES:
            raise _too_large(display, opened.st_size)
        chunks: list[bytes] = []
        total = 0
        while total <= CODING_FILE_MAX_BYTES:
            chunk = os.read(handle, CODING_FILE_MAX_BYTES + 1 - total)
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > CODING_FILE_MAX_BYTES:
            raise _too_large(display, total)
        return b"".join(chunks), opened
    finally:
        os.close(handle)


class _Symlink(Exception):
    """Internal: the last segment is a symlink; resolve it and retry."""


def _too_large(display: str, size: int) -> CodingToolError:
    return CodingToolError(
        "FILE_TOO_LARGE", f"{display} has {size} bytes; the limit is {CODING_FILE_MAX_BYTES}"
    )


def _decode(data: bytes, display: str) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise CodingToolError(
            "FILE_NOT_UTF8", f"{display} is not UTF-8 text (byte {error.start})"
        ) from None
    return text[1:] if text.startswith("\ufeff") else text


def read_text(ws: Workspace, path: str) -> tuple[str, str, os.stat_result]:
    """``(display path, text, stat)`` of a workspace file, symlinks inside followed."""
    segments = normalize_relative_path(path)
    for _ in range(40):
        with ws.parent_fd(segments, create=False, missing_code="FILE_NOT_FOUND") as (fd, canon):
            display = "/".join(canon)
            try:
                data, info = _read_at(ws, fd, canon[-1], display)
            except _Symlink:
                target = os.path.realpath(os.path.join(ws.root, *canon))
                segments = ws.canonical_segments(target)
                if not segments:
                    raise CodingToolError("FILE_NOT_REGULAR", f"{path} is a directory") from None
                continue
        return display, _decode(data, display), info
    raise CodingToolError("PATH_OUTSIDE_WORKSPACE", f"{path}: too many symlinks")


# --- writing ----------------------------------------------------------------------------------

_LOCKS: dict[tuple[int, int, str], tuple[asyncio.Lock, list[int]]] = {}
"""Per-target locks keyed by (parent dev, parent ino, name), with a user count."""


@contextlib.asynccontextmanager
async def _target_lock(key: tuple[int, int, str], signal: AbortSignal) -> AsyncGenerator[None]:
    entry = _LOCKS.get(key)
    if entry is None:
        entry = _LOCKS[key] = (asyncio.Lock(), [0])
    lock, users = entry
    users[0] += 1
    try:
        await race(signal, lock.acquire())
        try:
            yield
        finally:
            lock.release()
    finally:
        users[0] -= 1
        if users[0] == 0 and _LOCKS.get(key) is entry:
            del _LOCKS[key]


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


async def _write_locked(
    ws: Workspace, fd: int, canon: tuple[str, ...], data: bytes, signal: AbortSignal
) -> None:
    """Steps 3-7 of §08 write, the target lock held."""
    name = canon[-1]
    ws.check()
    mode = _target_symlink_check(ws, fd, name, canon)
    temp = f".{name}.pify-tmp-{os.getpid()}-{uuid.uuid4().hex}"
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
        after = os.stat(name, dir_fd=fd, follow_symlinks=False)
        if (after.st_dev, after.st_ino) != identity:
            with contextlib.suppress(OSError):
                again = os.stat(name, dir_fd=fd, follow_symlinks=False)
                if (again.st_dev, again.st_ino) == (after.st_dev, after.st_ino):
                    os.unlink(name, dir_fd=fd)
            raise CodingToolError("WRITE_TEMP_IDENTITY_CHANGED", "the renamed file was replaced")
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


def _lock_key(fd: int, name: str) -> tuple[int, int, str]:
    info = os.fstat(fd)
    return (info.st_dev, info.st_ino, name)


async def write_text(
    ws: Workspace, path: str, content: str, signal: AbortSignal
) -> tuple[str, int]:
    """Atomically write ``content``; returns ``(display path, bytes)``."""
    segments = normalize_relative_path(path)
    data = _encode(content, "INVALID_WRITE_INPUT")
    if len(data) > CODING_FILE_MAX_BYTES:
        raise _too_large("content", len(data))
    check_signal(signal)
    with ws.parent_fd(segments, create=True, missing_code="WRITE_FAILED") as (fd, canon):
        async with _target_lock(_lock_key(fd, canon[-1]), signal):
            await _write_locked(ws, fd, canon, data, signal)
        return "/".join(canon), len(data)


def _encode(text: str, code: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        raise CodingToolError(code, "text contains a lone surrogate") from None


# --- edit -------------------------------------------------------------------------------------


def _line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def _diff(display: str, before: str, after: str) -> str:
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
        async with _target_lock(_lock_key(fd, canon[-1]), signal):
            display, before, _ = read_text(ws, "/".join(canon))
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
            data = _encode(after, "INVALID_EDIT_INPUT")
            if len(data) > CODING_FILE_MAX_BYTES:
                raise _too_large(display, len(data))
            await _write_locked(ws, fd, canon, data, signal)
        return display, _diff(display, before, after)


@contextlib.contextmanager
def fallback(code: str) -> Generator[None]:
    """Wrap an unexpected ``OSError`` in the operation's fallback code (§08)."""
    try:
        yield
    except OSError as error:
        raise CodingToolError(code, error.strerror or str(error)) from error


# --- tool definitions -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ReadInput:
    path: str
    offset: int | None
    limit: int | None


@dataclass(frozen=True, slots=True)
class WriteInput:
    path: str
    content: str


@dataclass(frozen=True, slots=True)
class EditInput:
    path: str
    old: str
    new: str


def _invalid(code: str, detail: str) -> Invalid:
    return Invalid(error=f"{code}: {detail}")


def _path_invalid(path: str) -> Invalid | None:
    try:
        normalize_relative_path(path)
    except CodingToolError as error:
        return Invalid(error=str(error))
    return None


def _positive(value: object) -> bool:
    return value is None or (type(value) is int and value >= 1)


def _validate_read(value: object) -> ToolValidation[ReadInput]:
    record = record_of(value, ("path",), ("offset", "limit"))
    if record is None or type(record["path"]) is not str:
        return _invalid("INVALID_READ_INPUT", "expected {path: string, offset?: int, limit?: int}")
    offset, limit = record.get("offset"), record.get("limit")
    if not _positive(offset) or not _positive(limit):
        return _invalid("INVALID_READ_INPUT", "offset and limit must be integers >= 1")
    invalid = _path_invalid(record["path"])
    if invalid is not None:
        return invalid
    return Valid(value=ReadInput(record["path"], offset, limit))


def _validate_write(value: object) -> ToolValidation[WriteInput]:
    record = record_of(value, ("path", "content"))
    if record is None or type(record["path"]) is not str or type(record["content"]) is not str:
        return _invalid("INVALID_WRITE_INPUT", "expected {path: string, content: string}")
    invalid = _path_invalid(record["path"])
    if invalid is not None:
        return invalid
    try:
        size = len(record["content"].encode("utf-8"))
    except UnicodeEncodeError:
        return _invalid("INVALID_WRITE_INPUT", "content contains a lone surrogate")
    if size > CODING_FILE_MAX_BYTES:
        return _invalid(
            "FILE_TOO_LARGE", f"content has {size} bytes; the limit is {CODING_FILE_MAX_BYTES}"
        )
    return Valid(value=WriteInput(record["path"], record["content"]))


def _validate_edit(value: object) -> ToolValidation[EditInput]:
    record = record_of(value, ("path", "old", "new"))
    if record is None or not all(type(record[key]) is str for key in ("path", "old", "new")):
        return _invalid("INVALID_EDIT_INPUT", "expected {path: string, old: string, new: string}")
    if not record["old"]:
        return _invalid("INVALID_EDIT_INPUT", "`old` must not be empty; use write_file to create")
    if record["old"] == record["new"]:
        return _invalid("INVALID_EDIT_INPUT", "`old` and `new` are identical; nothing to change")
    invalid = _path_invalid(record["path"])
    if invalid is not None:
        return invalid
    return Valid(value=EditInput(record["path"], record["old"], record["new"]))


def _render_read(display: str, text: str, offset: int | None, limit: int | None) -> str:
    lines = text.splitlines(keepends=True)
    total = len(lines)
    if total == 0:
        return f"{display} (empty file)\n"
    start = (offset or 1) - 1
    if start >= total:
        raise CodingToolError(
            "INVALID_READ_INPUT", f"offset {offset} is past the end: {display} has {total} lines"
        )
    end = total if limit is None else min(total, start + limit)
    body = "".join(lines[start:end])
    header = f"{display} (lines {start + 1}-{end} of {total})\n"
    if not body.endswith("\n"):
        body += "\n\\ No newline at end of file\n"
    footer = ""
    if end < total:
        footer = f"[{total - end} more lines; call read_file with offset={end + 1} to continue]\n"
    return header + body + footer


def read_file_tool(ws: Workspace) -> ToolDefinition[ReadInput, str]:
    """The ``read_file`` tool of workspace ``ws``: UTF-8 text, optionally a line range."""

    async def execute(value: ReadInput, context: ToolExecutionContext) -> str:
        check_signal(context.signal)
        with fallback("READ_FAILED"):
            display, text, _ = read_text(ws, value.path)
        return _render_read(display, text, value.offset, value.limit)

    return define_tool(
        name="read_file",
        description=(
            f"Read a UTF-8 text file (at most {CODING_FILE_MAX_BYTES} bytes) by its "
            "workspace-relative path. Optional `offset` (first line, 1-based) and `limit` "
            "(number of lines). The output starts with the path, the line range and the total "
            "number of lines, then the text exactly as stored."
        ),
        validate=_validate_read,
        execute=execute,
        parameters={
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "workspace-relative path"},
                "offset": {"type": "integer", "minimum": 1, "description": "first line, 1-based"},
                "limit": {"type": "integer", "minimum": 1, "description": "number of lines"},
            },
            "required": ["path"],
            "additionalProperties": False,
        },
        output_limit=READ_OUTPUT_LIMIT,
    )


def write_file_tool(ws: Workspace) -> ToolDefinition[WriteInput, str]:
    """The ``write_file`` tool of ``ws``: an atomic, confined write (temp, fsync, rename)."""

    async def execute(value: WriteInput, context: ToolExecutionContext) -> str:
        with fallback("WRITE_FAILED"):
            display, size = await write_text(ws, value.path, value.content, context.signal)
        return f"Wrote {size} bytes to {display}."

    return define_tool(
        name="write_file",
        description=(
            "Create or replace a workspace file with `content` (UTF-8, at most "
            f"{CODING_FILE_MAX_BYTES} bytes), atomically. Missing parent directories are "
            "created. Prefer edit_file to change part of an existing file."
        ),
        validate=_validate_write,
        execute=execute,
        parameters={
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "workspace-relative path"},
                "content": {"type": "string", "description": "the complete new file content"},
            },
            "required": ["path", "content"],
            "additionalProperties": False,
        },
        output_limit=1_024,
    )


def edit_file_tool(ws: Workspace) -> ToolDefinition[EditInput, str]:
    """The ``edit_file`` tool of ``ws``: replace one exact occurrence; the result is a diff."""

    async def execute(value: EditInput, context: ToolExecutionContext) -> str:
        with fallback("WRITE_FAILED"):
            display, diff = await edit_text(ws, value.path, value.old, value.new, context.signal)
        return f"Edited {display}:\n{diff}"

    return define_tool(
        name="edit_file",
        description=(
            "Replace exactly one occurrence of `old` with `new` in a workspace file. `old` must "
            "match the file exactly (whitespace included) and occur exactly once; if it occurs "
            "several times, include more surrounding lines. Returns a unified diff."
        ),
        validate=_validate_edit,
        execute=execute,
        parameters={
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "workspace-relative path"},
                "old": {"type": "string", "description": "exact text to replace (unique)"},
                "new": {"type": "string", "description": "replacement text"},
            },
            "required": ["path", "old", "new"],
            "additionalProperties": False,
        },
        output_limit=16_384,
    )
