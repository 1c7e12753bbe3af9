"""The workspace every coding tool is confined to (checkpoint 08, §08.2).

``Workspace(root)`` captures the root once: the absolute entry path, its realpath and the
``(st_dev, st_ino)`` identity. ``check()`` re-verifies all three before every effect, so a
root that was deleted and recreated, or a root symlink that was repointed, fails with
``WORKSPACE_ROOT_CHANGED``: a tool never adopts a replacement.

Paths given by a model go through ``normalize_relative_path`` (the §08 grammar) and are then
resolved *through directory file descriptors*: the root is opened, checked against the captured
identity, and every parent segment is opened with ``os.open(segment, O_DIRECTORY | O_NOFOLLOW,
dir_fd=parent)``. A symlinked segment is resolved explicitly (``realpath``), checked for
containment (``PATH_OUTSIDE_WORKSPACE``) and the walk restarts from the root along the canonical
segments, so a symlinked parent pointing out can never be followed by accident and a symlink
swapped in between a check and an open makes the open fail instead of escaping.

Errors are ``CodingToolError``: ``code`` is one of the stable §08 strings and ``str(error)``
starts with the code (``"FILE_NOT_FOUND: notes.txt does not exist"``), so a tool result's text
names the code a caller can match on.

One confinement rule for every tool that reads a file (``read_file``, ``edit_file``, ``grep``):
``open_for_reading`` opens it relative to its directory's descriptor without following a
symlink and accepts only a regular file with exactly one hard link. A file with more links is
refused (``PATH_OUTSIDE_WORKSPACE``): its other names may lie outside the workspace, and that
cannot be ruled out.

Test seam: ``Workspace.observer`` (default ``None``) is called as ``observer(stage, value)`` at a
few points between steps, so tests can inject races deterministically. Stages:
``"read:before-open"`` (value: the display path), ``"write:before-rename"`` (value: the temp
file's absolute path), ``"write:lock-wait"`` (value: the display path; the directory's write
lock is held elsewhere and is about to be waited for), ``"process:started"`` (value: the pid
of the process tether started)
and ``"process:stdout"`` / ``"process:stderr"`` (value: a chunk of bytes as read), all on the
event loop, where an observer must not block; and ``"search:entry"`` (value: the path of the
entry a ``list_files`` or ``grep`` walk is at), on the search's worker thread, which an
observer may block to hold the walk there.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
from collections.abc import Callable, Generator
from typing import Any, Final, Literal, TypeAlias

from tether._base.exact_types import is_dict
from tether._base.strings import LazyPattern
from tether._base.tether_error import TetherError
from tether.jsonvalue import JsonObject
from tether.protocol.tools import Invalid

__all__ = [
    "CODING_FILE_MAX_BYTES",
    "CodingToolError",
    "CodingToolErrorCode",
    "Observer",
    "Workspace",
    "invalid",
    "invalid_from",
    "normalize_relative_path",
    "open_for_reading",
    "record_of",
    "require_workspace",
    "shown",
    "utf8_size",
]

CODING_FILE_MAX_BYTES: Final = 65_536
"""Max UTF-8 bytes ``read_file``, ``write_file`` and ``edit_file`` handle (§08)."""

_MAX_SYMLINK_HOPS: Final = 40

Observer = Callable[[str, object], None]


CodingToolErrorCode: TypeAlias = Literal[
    "EDIT_AMBIGUOUS_MATCH",
    "EDIT_CONFLICT",
    "EDIT_NO_MATCH",
    "FILE_NOT_FOUND",
    "FILE_NOT_REGULAR",
    "FILE_NOT_UTF8",
    "FILE_TOO_LARGE",
    "INVALID_BASH_INPUT",
    "INVALID_EDIT_INPUT",
    "INVALID_GREP_INPUT",
    "INVALID_GREP_PATTERN",
    "INVALID_LIST_INPUT",
    "INVALID_PROCESS_INPUT",
    "INVALID_READ_INPUT",
    "INVALID_RELATIVE_PATH",
    "INVALID_WORKSPACE_ROOT",
    "INVALID_WRITE_INPUT",
    "PATH_CHANGED_DURING_READ",
    "PATH_OUTSIDE_WORKSPACE",
    "PROCESS_ARGUMENTS_TOO_LARGE",
    "PROCESS_ARGUMENT_TOO_LARGE",
    "PROCESS_FAILED",
    "PROCESS_OUTPUT_FAILED",
    "PROCESS_SCRIPT_CLEANUP_FAILED",
    "PROCESS_SCRIPT_IDENTITY_CHANGED",
    "PROCESS_SCRIPT_NOT_REGULAR",
    "PROCESS_SOURCE_TOO_LARGE",
    "PROCESS_START_FAILED",
    "PROCESS_TIMEOUT",
    "READ_FAILED",
    "SANDBOX_UNAVAILABLE",
    "TOO_MANY_PROCESS_ARGUMENTS",
    "WORKSPACE_ROOT_CHANGED",
    "WORKSPACE_ROOT_NOT_DIRECTORY",
    "WORKSPACE_ROOT_NOT_FOUND",
    "WRITE_FAILED",
    "WRITE_PARENT_NOT_DIRECTORY",
    "WRITE_TARGET_SYMLINK",
    "WRITE_TEMP_CLEANUP_FAILED",
    "WRITE_TEMP_IDENTITY_CHANGED",
    "WRITE_TEMP_NOT_REGULAR",
]
"""Every code a coding tool failure carries (``CodingToolError.code``, and the prefix of an
argument error's text)."""


class CodingToolError(TetherError[CodingToolErrorCode]):
    """A coding tool failed with a stable ``code``; ``str(error)`` starts with the code."""

    def __init__(self, code: CodingToolErrorCode, detail: str | None = None) -> None:
        super().__init__(code, code if not detail else f"{code}: {detail}")
        self.detail = detail


def invalid(code: CodingToolErrorCode, detail: str) -> Invalid:
    """The argument error a coding tool's ``validate`` returns: the text the model reads
    (``CODE: detail``) and the code as a field (the result's ``error_code``)."""
    return Invalid(error=f"{code}: {detail}", code=code)


def invalid_from(error: CodingToolError) -> Invalid:
    """``error`` as an argument error (its text and its code)."""
    return Invalid(error=str(error), code=error.code)


_DRIVE: Final = LazyPattern(r"^[A-Za-z]:")
_RESERVED: Final = LazyPattern(r"^(con|prn|aux|nul|com[1-9]|lpt[1-9])(\..*)?$", re.IGNORECASE)


def normalize_relative_path(path: object) -> tuple[str, ...]:
    """The segments of a workspace-relative path, or ``INVALID_RELATIVE_PATH`` (§08 grammar).

    Rejected: non-strings, empty, NUL, absolute by POSIX or Windows rules (``/``, ``\\``, UNC,
    ``C:``), ``~`` as a first segment (home expansion is never performed, so it is refused
    rather than silently meaning a directory named ``~``), ``..`` anywhere, a segment with
    ``:``, ending with ``.`` or a space, or a Windows device name; and a path with no segment
    left after dropping empty and ``.`` segments.
    """
    if type(path) is not str or not path:
        raise CodingToolError("INVALID_RELATIVE_PATH", "path must be a non-empty string")
    if "\0" in path:
        raise CodingToolError("INVALID_RELATIVE_PATH", "path must not contain NUL")
    if path.startswith(("/", "\\")) or _DRIVE.match(path) or os.path.isabs(path):
        raise CodingToolError(
            "INVALID_RELATIVE_PATH", f"{path!r} is absolute; give a path relative to the workspace"
        )
    segments = [s for s in path.replace("\\", "/").split("/") if s not in ("", ".")]
    if not segments:
        raise CodingToolError("INVALID_RELATIVE_PATH", f"{path!r} names no file")
    if segments[0].startswith("~"):
        raise CodingToolError("INVALID_RELATIVE_PATH", f"{path!r}: '~' is not expanded")
    for segment in segments:
        if (
            segment == ".."
            or ":" in segment
            or segment.endswith((".", " "))
            or _RESERVED.match(segment)
        ):
            raise CodingToolError(
                "INVALID_RELATIVE_PATH", f"{path!r}: segment {segment!r} is not allowed"
            )
    return tuple(segments)


def record_of(
    value: object, required: tuple[str, ...], optional: tuple[str, ...] = ()
) -> dict[str, Any] | None:
    """A copy of tool arguments with exactly ``required`` and maybe ``optional`` keys, else
    ``None``. Only a plain ``dict`` or a ``JsonObject`` (what the loop passes) is accepted."""
    if type(value) is JsonObject:
        record: dict[str, Any] = dict(value.items())
    elif is_dict(value):
        record = dict(value)
    else:
        return None
    keys = set(record)
    if not set(required) <= keys or not keys <= set(required) | set(optional):
        return None
    return record


def utf8_size(text: str) -> int | None:
    """How many bytes ``text`` takes in UTF-8, or ``None`` when it has no UTF-8 form (a lone
    surrogate): what the tools' size limits on their arguments count."""
    try:
        return len(text.encode("utf-8"))
    except UnicodeEncodeError:
        return None


def shown(name: str) -> str:
    """A name from the file system as the model reads it: bytes that are not UTF-8 (held as
    lone surrogates by ``os.fsdecode``) become U+FFFD, so the text can always be encoded."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return os.fsencode(name).decode("utf-8", "replace")
    return name


def open_for_reading(name: str, dir_fd: int, display: str) -> tuple[int, os.stat_result]:
    """Open ``name`` in the directory ``dir_fd`` for reading, as every reading tool does.

    No symlink is followed (``O_NOFOLLOW``), the open never blocks (a FIFO cannot hold the
    call), and the file must be regular (``FILE_NOT_REGULAR``) with exactly one hard link
    (``PATH_OUTSIDE_WORKSPACE``). Returns the descriptor, which the caller closes, and its
    ``fstat``; ``OSError`` from the open itself is the caller's to map.
    """
    handle = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dir_fd)
    try:
        info = os.fstat(handle)
        if not stat.S_ISREG(info.st_mode):
            raise CodingToolError("FILE_NOT_REGULAR", f"{display} is not a regular file")
        if info.st_nlink > 1:
            raise CodingToolError(
                "PATH_OUTSIDE_WORKSPACE",
                f"{display} has {info.st_nlink} hard links; its other names may be outside",
            )
    except BaseException:
        os.close(handle)
        raise
    return handle, info


def require_workspace(ws: object, factory: str) -> None:
    """``TypeError`` naming the parameter unless ``ws`` is a ``Workspace`` (its exact class
    or a subclass, read with ``type()``: an object cannot pretend to be one)."""
    if not issubclass(type(ws), Workspace):
        raise TypeError(
            f"{factory}(ws): ws must be a Workspace, not {type(ws).__name__} "
            "(Workspace(root) captures a root; coding_tools(root) takes a path too)"
        )


def _inside(root: str, candidate: str) -> bool:
    relative = os.path.relpath(candidate, root)
    if relative == ".":
        return True
    return not (relative == ".." or relative.startswith(("../", "..\\")) or os.path.isabs(relative))


class Workspace:
    """A captured workspace root; see the module docstring.

    Raises ``CodingToolError`` with ``INVALID_WORKSPACE_ROOT``, ``WORKSPACE_ROOT_NOT_FOUND`` or
    ``WORKSPACE_ROOT_NOT_DIRECTORY``. A symlink root is allowed and canonicalized.
    """

    __slots__ = ("entry", "identity", "observer", "root")

    def __init__(self, root: str | os.PathLike[str]) -> None:
        try:
            text = os.fspath(root)
        except TypeError:
            raise CodingToolError("INVALID_WORKSPACE_ROOT", "root must be a path") from None
        if type(text) is not str or not text or "\0" in text:
            raise CodingToolError("INVALID_WORKSPACE_ROOT", "root must be a non-empty path")
        self.entry: str = os.path.abspath(text)
        try:
            self.root: str = os.path.realpath(self.entry, strict=True)
            info = os.stat(self.root)
        except FileNotFoundError:
            raise CodingToolError("WORKSPACE_ROOT_NOT_FOUND", self.entry) from None
        except OSError as error:
            raise CodingToolError("INVALID_WORKSPACE_ROOT", str(error)) from None
        if not stat.S_ISDIR(info.st_mode):
            raise CodingToolError("WORKSPACE_ROOT_NOT_DIRECTORY", self.entry)
        self.identity: tuple[int, int] = (info.st_dev, info.st_ino)
        self.observer: Observer | None = None

    def __repr__(self) -> str:
        return f"<Workspace {self.root!r}>"

    def notify(self, stage: str, value: object) -> None:
        """Call the test observer, if any."""
        observer = self.observer
        if observer is not None:
            observer(stage, value)

    def check(self) -> None:
        """Re-verify the root: same realpath, still a directory, same identity."""
        try:
            current = os.path.realpath(self.entry, strict=True)
            info = os.stat(current)
        except OSError:
            raise CodingToolError("WORKSPACE_ROOT_CHANGED", "the workspace root is gone") from None
        if (
            current != self.root
            or not stat.S_ISDIR(info.st_mode)
            or (info.st_dev, info.st_ino) != self.identity
        ):
            raise CodingToolError("WORKSPACE_ROOT_CHANGED", "the workspace root was replaced")

    def open_root(self) -> int:
        """An ``O_DIRECTORY`` fd of the root, after ``check()``, verified by ``fstat``."""
        self.check()
        try:
            fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        except OSError:
            raise CodingToolError("WORKSPACE_ROOT_CHANGED", "the root cannot be opened") from None
        info = os.fstat(fd)
        if (info.st_dev, info.st_ino) != self.identity:
            os.close(fd)
            raise CodingToolError("WORKSPACE_ROOT_CHANGED", "the workspace root was replaced")
        return fd

    def display(self, segments: tuple[str, ...]) -> str:
        """How a path inside the workspace is shown to the model: its segments joined by ``/``."""
        return "/".join(segments)

    def canonical_segments(self, absolute: str) -> tuple[str, ...]:
        """Segments of a canonical path inside the root, or ``PATH_OUTSIDE_WORKSPACE``."""
        if not _inside(self.root, absolute):
            raise CodingToolError("PATH_OUTSIDE_WORKSPACE", "the path resolves outside")
        relative = os.path.relpath(absolute, self.root)
        return () if relative == "." else tuple(relative.split(os.sep))

    def resolve(self, segments: tuple[str, ...], *, follow_last: bool) -> tuple[str, ...]:
        """The canonical segments of ``segments`` (symlinks resolved, containment checked).

        The last segment is resolved only when ``follow_last``. Missing segments are kept as
        they are (a file to be created).
        """
        path = os.path.join(self.root, *segments)
        if follow_last:
            resolved = os.path.realpath(path)
        else:
            resolved = os.path.join(os.path.realpath(os.path.dirname(path)), segments[-1])
        return self.canonical_segments(resolved)

    @contextlib.contextmanager
    def parent_fd(
        self, segments: tuple[str, ...], *, create: bool, missing_code: CodingToolErrorCode
    ) -> Generator[tuple[int, tuple[str, ...]]]:
        """Open the parent directory of ``segments`` by walking dir fds from the root.

        Yields ``(fd, canonical_segments)`` where ``canonical_segments`` is the canonical
        workspace path of the *target* (parent canonical + the last segment). ``create``
        makes missing directories (single-level ``mkdir``, ``EEXIST`` tolerated). A
        non-directory parent raises ``WRITE_PARENT_NOT_DIRECTORY`` when creating, else
        ``missing_code``.
        """
        fd = self.open_root()
        try:
            parents = list(segments[:-1])
            done: list[str] = []
            hops = 0
            while parents:
                segment = parents.pop(0)
                try:
                    info = os.stat(segment, dir_fd=fd, follow_symlinks=False)
                except FileNotFoundError:
                    if not create:
                        raise CodingToolError(
                            missing_code, f"{self.display(segments)} does not exist"
                        ) from None
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(segment, 0o755, dir_fd=fd)
                    info = os.stat(segment, dir_fd=fd, follow_symlinks=False)
                if stat.S_ISLNK(info.st_mode):
                    hops += 1
                    if hops > _MAX_SYMLINK_HOPS:
                        raise CodingToolError("PATH_OUTSIDE_WORKSPACE", "too many symlinks")
                    target = os.path.realpath(os.path.join(self.root, *done, segment))
                    canonical = self.canonical_segments(target)
                    # restart from the root along the canonical path
                    os.close(fd)
                    fd = -1
                    fd = self.open_root()
                    parents = list(canonical) + parents
                    done = []
                    continue
                if not stat.S_ISDIR(info.st_mode):
                    code = "WRITE_PARENT_NOT_DIRECTORY" if create else missing_code
                    raise CodingToolError(code, f"{'/'.join((*done, segment))} is not a directory")
                try:
                    child = os.open(
                        segment, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd
                    )
                except OSError as error:
                    if error.errno in (errno.ELOOP, errno.ENOTDIR, errno.ENOENT):
                        raise CodingToolError(
                            "PATH_OUTSIDE_WORKSPACE"
                            if error.errno == errno.ELOOP
                            else missing_code,
                            "a parent directory changed while it was opened",
                        ) from None
                    raise
                os.close(fd)
                fd = child
                done.append(segment)
            yield fd, (*done, segments[-1])
        finally:
            if fd >= 0:
                os.close(fd)
