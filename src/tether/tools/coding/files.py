"""``read_file``, ``write_file`` and ``edit_file``: confined, atomic, race-aware (§08).

Reads open the target relative to a parent directory fd (see ``Workspace.parent_fd``) under
the workspace's one confinement rule (``open_for_reading``: no symlink followed, a regular
file, exactly one hard link, else ``PATH_OUTSIDE_WORKSPACE``), re-check the workspace and that
the path still names the opened file (``PATH_CHANGED_DURING_READ``), and decode strict UTF-8
(``FILE_NOT_UTF8``; one leading BOM is dropped).

Writes create a ``.pify-tmp-<16 hex digits>`` sibling exclusively (``0600``; short and of
fixed length, so any target name up to the file system's ``NAME_MAX`` works), write, fsync,
re-check the temp file's identity (``WRITE_TEMP_IDENTITY_CHANGED``), and ``os.replace`` it over
the target; the temp file is always removed when the rename did not happen (an attacker's
non-empty directory at the temp name is left alone). A target that is a symlink is refused
(``WRITE_TARGET_SYMLINK``, or ``PATH_OUTSIDE_WORKSPACE`` when it points out; a dangling link is
replaced). An existing target's permission bits are kept; a new file gets ``0644``. Writes to
one target are serialized by an in-process ``asyncio.Lock`` (FIFO: arrival order); waiting for
it races the abort signal.

``edit_file`` is a compare-and-swap: right before the rename it reads the target again and
fails with ``EDIT_CONFLICT`` (nothing written; the message says to read the file again) if it
is not byte for byte what the edit was computed from. The final compare and the rename run
under an exclusive ``flock`` of the parent directory, which every tether write takes (in any
process), so a concurrent tether edit or write can never slip in between. A program that
writes in place without that lock is caught unless it writes in the moment between the
compare and the rename.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import os
import stat
import threading
from collections.abc import AsyncGenerator, Callable, Generator
from typing import Final

from tether._dataclass import dataclass
from tether._race import check_signal, race
from tether.abort import AbortSignal
from tether.protocol import (
    MAX_IMAGE_BYTES,
    ImageError,
    Invalid,
    ToolExecutionContext,
    ToolValidation,
    Valid,
)
from tether.tools.coding.catalog import coding_tool_effects
from tether.tools.coding.read_image import image_limit, image_result, named_image_error
from tether.tools.coding.worker import run_in_worker
from tether.tools.coding.workspace import (
    CODING_FILE_MAX_BYTES,
    CodingToolError,
    CodingToolErrorCode,
    Workspace,
    invalid,
    invalid_from,
    normalize_relative_path,
    open_for_reading,
    record_of,
    require_workspace,
)
from tether.tools.contract import ToolDefinition, define_tool
from tether.tools.returns import ToolReturn

__all__ = [
    "EDIT_DIFF_MAX_LINES",
    "READ_OUTPUT_LIMIT",
    "EditInput",
    "ReadInput",
    "WriteInput",
    "edit_file_tool",
    "read_bytes",
    "read_file_tool",
    "read_text",
    "write_file_tool",
    "write_text",
]

READ_OUTPUT_LIMIT: Final = CODING_FILE_MAX_BYTES + 1_024
EDIT_DIFF_MAX_LINES: Final = 120

_NEW_FILE_MODE: Final = 0o644


# --- reading ----------------------------------------------------------------------------------


_LimitOf = Callable[[int, int], int]
"""``limit_of(descriptor, size)``: the most bytes a read of the opened file may take."""


def _read_at(
    ws: Workspace, fd: int, name: str, display: str, limit_of: _LimitOf | None = None
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
            raise _too_large(display, opened.st_size)
        chunks: list[bytes] = []
        total = 0
        while total <= limit:
            chunk = os.read(handle, limit + 1 - total)
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > limit:
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


def read_bytes(ws: Workspace, path: str, limit_of: _LimitOf | None = None) -> tuple[str, bytes]:
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
    return display, _decode(data, display)


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


class _DirectoryLock:
    """An exclusive ``flock`` of a directory, which every tether write in it takes, in any
    process, around its last checks and its rename.

    Taken at once when free; otherwise a worker thread waits for it, raced against the abort
    signal. ``release`` closes the descriptor (which releases the lock); if the worker still
    waits at that moment, it closes the descriptor itself once ``flock`` returns.
    """

    __slots__ = ("_busy", "_closed", "_fd", "_guard")

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._guard = threading.Lock()
        self._busy = False
        self._closed = False

    @classmethod
    async def take(
        cls, directory: int, signal: AbortSignal, waiting: Callable[[], None]
    ) -> _DirectoryLock:
        """The lock of ``directory``; ``waiting()`` is called when it has to be waited for."""
        lock = cls(os.open(".", os.O_RDONLY | os.O_DIRECTORY, dir_fd=directory))
        try:
            fcntl.flock(lock._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            waiting()
            try:
                await run_in_worker(signal, lock._wait, "write-lock")
            except BaseException:
                lock.release()
                raise
        except OSError:  # pragma: no cover - no flock here (some network file systems)
            pass  # the in-process order still holds
        return lock

    def _wait(self, stop: threading.Event) -> None:
        with self._guard:
            if self._closed:
                return
            self._busy = True
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX)
        finally:
            with self._guard:
                self._busy = False
                if self._closed:
                    os.close(self._fd)

    def release(self) -> None:
        with self._guard:
            if self._closed:
                return
            self._closed = True
            if not self._busy:
                os.close(self._fd)


def _unchanged(ws: Workspace, fd: int, name: str, display: str, expected: bytes) -> None:
    """``EDIT_CONFLICT`` unless ``name`` still holds exactly ``expected``."""
    try:
        now: bytes | None = _read_at(ws, fd, name, display)[0]
    except (CodingToolError, _Symlink):
        now = None
    if now != expected:
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
        lock = await _DirectoryLock.take(fd, signal, lambda: ws.notify("write:lock-wait", display))
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


def _encode(text: str, code: CodingToolErrorCode) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        raise CodingToolError(code, "text contains a lone surrogate") from None


# --- edit -------------------------------------------------------------------------------------


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
        async with _target_lock(_lock_key(fd, canon[-1]), signal):
            display, original = read_bytes(ws, "/".join(canon))
            before = _decode(original, display)
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
            await _write_locked(ws, fd, canon, data, signal, expected=original)
        return display, _diff(display, before, after)


@contextlib.contextmanager
def fallback(code: CodingToolErrorCode) -> Generator[None]:
    """Wrap an unexpected ``OSError`` in the operation's fallback code (§08)."""
    try:
        yield
    except OSError as error:
        raise CodingToolError(code, error.strerror or str(error)) from error


# --- tool definitions -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ReadInput:
    """The checked arguments of ``read``: the path and the optional line window."""

    path: str
    offset: int | None
    limit: int | None


@dataclass(frozen=True, slots=True)
class WriteInput:
    """The checked arguments of ``write``: the path and the new content."""

    path: str
    content: str


@dataclass(frozen=True, slots=True)
class EditInput:
    """The checked arguments of ``edit``: the path, the text to replace and its replacement."""

    path: str
    old: str
    new: str


def _invalid(code: CodingToolErrorCode, detail: str) -> Invalid:
    return invalid(code, detail)


def _path_invalid(path: str) -> Invalid | None:
    try:
        normalize_relative_path(path)
    except CodingToolError as error:
        return invalid_from(error)
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


def read_file_tool(ws: Workspace) -> ToolDefinition[ReadInput, str | ToolReturn]:
    """The ``read_file`` tool of workspace ``ws``: UTF-8 text, optionally a line range, or
    an image (PNG, JPEG, GIF, WebP; see ``tether.tools.coding.read_image``)."""
    require_workspace(ws, "read_file_tool")

    async def execute(value: ReadInput, context: ToolExecutionContext) -> str | ToolReturn:
        check_signal(context.signal)
        with fallback("READ_FAILED"):
            try:
                display, data = read_bytes(ws, value.path, image_limit)
            except ImageError as error:
                raise named_image_error(value.path, error) from None
        image = image_result(display, data)
        if image is not None:
            return image
        return _render_read(display, _decode(data, display), value.offset, value.limit)

    return define_tool(
        name="read_file",
        effects=coding_tool_effects("read_file"),
        description=(
            f"Read a UTF-8 text file (at most {CODING_FILE_MAX_BYTES} bytes) by its "
            "workspace-relative path. Optional `offset` (first line, 1-based) and `limit` "
            "(number of lines). The output starts with the path, the line range and the total "
            "number of lines, then the text exactly as stored. A PNG, JPEG, GIF or WebP image "
            f"(at most {MAX_IMAGE_BYTES} bytes) is returned as the image itself."
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
    require_workspace(ws, "write_file_tool")

    async def execute(value: WriteInput, context: ToolExecutionContext) -> str:
        with fallback("WRITE_FAILED"):
            display, size = await write_text(ws, value.path, value.content, context.signal)
        return f"Wrote {size} bytes to {display}."

    return define_tool(
        name="write_file",
        effects=coding_tool_effects("write_file"),
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
    require_workspace(ws, "edit_file_tool")

    async def execute(value: EditInput, context: ToolExecutionContext) -> str:
        with fallback("WRITE_FAILED"):
            display, diff = await edit_text(ws, value.path, value.old, value.new, context.signal)
        return f"Edited {display}:\n{diff}"

    return define_tool(
        name="edit_file",
        effects=coding_tool_effects("edit_file"),
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
