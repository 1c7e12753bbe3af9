"""The filesystem seams (the per-store ``SessionFileSystem``, the module-level
``session_io``) and the helpers built on them: file and directory identities, the root
capture and checks, owned cleanup, bounded reads and writes, directory sync, the marker
check, and the exclusive create and checked read of a session file."""

# The package's modules share their underscore helpers with one another.
# pyright: reportPrivateUsage=false, reportUnusedFunction=false

from __future__ import annotations

import contextlib
import dataclasses
import errno
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, cast

from tether._text import is_non_empty
from tether.agent.session.records import SessionLimits, _fail

__all__ = ["RECOVERY_MARKER_SUFFIX", "SessionFileSystem", "SessionIO", "session_io"]

RECOVERY_MARKER_SUFFIX: Final = ".pify-session-recovery"
"""Appended to a session path to name its recovery marker (the workshop's name, kept so
files interoperate with the TypeScript tools)."""

_TEMP_INFIX: Final = ".pify-session-"
_RESTORE_INFIX: Final = ".pify-session-restore-"


def _force_remove(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.remove(path)


def _check_callable(owner: str, name: str, value: object) -> None:
    if not callable(value):
        raise TypeError(f"{owner}.{name} must be callable (got {type(value).__name__})")


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionFileSystem:
    """The filesystem operations a store's commits and recovery use; replace any of them to
    inject faults (the workshop's ``fileSystem`` seam).

    * ``lstat(path)``: marker detection, and checks of the marker and the installed file;
    * ``link(source, destination)``: hard-links the live file to the recovery marker (must
      raise ``FileExistsError`` when the destination exists);
    * ``rename(source, destination)``: installs a generation (replacing the destination);
    * ``remove(path)``: deletes a temp or marker (a missing path is not an error).

    Calls are synchronous. The defaults are ``os.lstat``, ``os.link``, ``os.replace`` and a
    force-remove.
    """

    lstat: Callable[[str], os.stat_result] = os.lstat
    link: Callable[[str, str], None] = os.link
    rename: Callable[[str, str], None] = os.replace
    remove: Callable[[str], None] = _force_remove

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            _check_callable("SessionFileSystem", field.name, getattr(self, field.name))


_DEFAULT_FILE_SYSTEM: Final = SessionFileSystem()


class SessionIO:
    """Every operating-system call a store makes outside ``SessionFileSystem``.

    The store looks up the module-level ``session_io`` instance at each call, so a test can
    patch one method (``monkeypatch.setattr(session_io, "fsync", failing)``) to make that
    step fail. Each method is a thin wrapper over the ``os`` function of the same name.
    """

    def open(self, path: str, flags: int, mode: int = 0o777) -> int:
        """``os.open``."""
        return os.open(path, flags, mode)

    def read(self, fd: int, size: int) -> bytes:
        """``os.read``."""
        return os.read(fd, size)

    def write(self, fd: int, data: bytes | memoryview) -> int:
        """``os.write``: returns how many bytes were written."""
        return os.write(fd, data)

    def fsync(self, fd: int) -> None:
        """``os.fsync`` (also of a directory's descriptor)."""
        os.fsync(fd)

    def fstat(self, fd: int) -> os.stat_result:
        """``os.fstat``."""
        return os.fstat(fd)

    def close(self, fd: int) -> None:
        """``os.close``."""
        os.close(fd)

    def lstat(self, path: str) -> os.stat_result:
        """``os.lstat``: identity checks of the session file and temp files."""
        return os.lstat(path)

    def stat(self, path: str) -> os.stat_result:
        """``os.stat``: identity checks of the parent directory (a symlink is followed)."""
        return os.stat(path)

    def realpath(self, path: str) -> str:
        """``os.path.realpath(path, strict=True)``."""
        return os.path.realpath(path, strict=True)


session_io: Final = SessionIO()
"""The I/O adapter every store routes its ``os`` calls through (patch it in tests)."""


# --- filesystem helpers -------------------------------------------------------------------------

_Identity = tuple[int, int, object]
"""(device, inode, birth time or None): a file's identity."""

_O_CLOEXEC: Final = getattr(os, "O_CLOEXEC", 0)
_O_NOFOLLOW: Final = getattr(os, "O_NOFOLLOW", 0)
_O_BINARY: Final = getattr(os, "O_BINARY", 0)
_CREATE_FLAGS: Final = os.O_CREAT | os.O_EXCL | os.O_WRONLY | _O_CLOEXEC | _O_BINARY
_READ_FLAGS: Final = os.O_RDONLY | _O_CLOEXEC | _O_NOFOLLOW | _O_BINARY
_IGNORED_DIRECTORY_SYNC: Final = frozenset({errno.EINVAL, errno.EPERM, errno.ENOTSUP})


def _identity(info: os.stat_result) -> _Identity:
    birth: object = getattr(info, "st_birthtime_ns", None)
    if birth is None:  # pragma: no branch - per platform
        birth = getattr(info, "st_birthtime", None)
    return (info.st_dev, info.st_ino, birth)


@dataclass(frozen=True, slots=True)
class _Root:
    path: str
    real_path: str
    identity: _Identity


def _capture_root(directory: str) -> _Root:
    info = session_io.stat(directory)
    if not stat.S_ISDIR(info.st_mode):
        raise _fail("SESSION_ROOT_CHANGED", "Session parent must be a directory")
    return _Root(directory, session_io.realpath(directory), _identity(info))


def _assert_root(root: _Root) -> None:
    try:
        info = session_io.stat(root.path)
        resolved = session_io.realpath(root.path)
    except OSError as error:
        raise _fail("SESSION_ROOT_CHANGED", "Session parent directory changed") from error
    if (
        not stat.S_ISDIR(info.st_mode)
        or resolved != root.real_path
        or _identity(info) != root.identity
    ):
        raise _fail("SESSION_ROOT_CHANGED", "Session parent directory changed")


def _assert_path_identity(path: str, expected: _Identity, size: int | None) -> None:
    try:
        info = session_io.lstat(path)
    except OSError as error:
        raise _fail("SESSION_FILE_CHANGED", "Session file identity changed") from error
    if (
        not stat.S_ISREG(info.st_mode)
        or _identity(info) != expected
        or (size is not None and info.st_size != size)
    ):
        raise _fail("SESSION_FILE_CHANGED", "Session file identity changed")


def _path_matches(fs: SessionFileSystem, path: str, expected: _Identity, size: int) -> bool:
    try:
        info = fs.lstat(path)
    except Exception:
        return False
    return stat.S_ISREG(info.st_mode) and _identity(info) == expected and info.st_size == size


def _cleanup_owned(fs: SessionFileSystem, path: str, expected: _Identity, size: int | None) -> bool:
    """Remove ``path`` if it is still the file we made; True when it is gone."""
    for _ in range(3):
        try:
            info = fs.lstat(path)
            if (
                not stat.S_ISREG(info.st_mode)
                or _identity(info) != expected
                or (size is not None and info.st_size != size)
            ):
                return False
            fs.remove(path)
            return True
        except FileNotFoundError:
            return True
        except Exception:
            continue
    return False


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    offset = 0
    total = len(data)
    while offset < total:
        written = session_io.write(fd, view[offset:])
        if type(written) is not int or not 0 < written <= total - offset:
            raise OSError(errno.EIO, "Session write made invalid progress")
        offset += written


def _read_all(fd: int, limit: int) -> bytes:
    chunks: list[bytes] = []
    total = 0
    while total <= limit:
        chunk = session_io.read(fd, min(limit + 1 - total, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


def _close_quietly(fd: int) -> None:
    with contextlib.suppress(OSError):
        session_io.close(fd)


def _sync_directory(path: str) -> None:
    """fsync a directory so a rename in it is durable (ignored where unsupported)."""
    if os.name == "nt":  # pragma: no cover - directories cannot be opened on Windows
        return
    fd: int | None = None
    try:
        fd = session_io.open(path, os.O_RDONLY | _O_CLOEXEC)
        session_io.fsync(fd)
    except OSError as error:
        if error.errno not in _IGNORED_DIRECTORY_SYNC:
            raise
    finally:
        if fd is not None:
            _close_quietly(fd)


def _session_path(path: object) -> str:
    text: object = (
        os.fspath(cast("os.PathLike[str]", path)) if isinstance(path, os.PathLike) else path
    )
    if not is_non_empty(text):
        raise TypeError("Session path is required")
    if "\0" in text:
        raise ValueError("Session path must not contain NUL")
    return os.path.abspath(text)


def _canonical_key(path: str, root: _Root) -> str:
    key = os.path.join(root.real_path, os.path.basename(path))
    return key.lower() if os.name == "nt" else key


def _assert_no_marker(path: str, fs: SessionFileSystem) -> None:
    try:
        fs.lstat(path + RECOVERY_MARKER_SUFFIX)
    except FileNotFoundError:
        return
    raise _fail(
        "SESSION_ROLLBACK_FAILED", "Session recovery is required before this file can be opened"
    )


def _create_file(path: str, data: bytes, root: _Root, fs: SessionFileSystem) -> _Identity:
    """Write a new file exclusively (``0600``) and check it; remove it again on failure."""
    try:
        fd = session_io.open(path, _CREATE_FLAGS, 0o600)
    except FileExistsError as error:
        raise _fail("SESSION_ALREADY_EXISTS", "Session file already exists") from error
    identity: _Identity | None = None
    try:
        try:
            info = session_io.fstat(fd)
            if not stat.S_ISREG(info.st_mode):  # pragma: no cover - O_EXCL made a file
                raise _fail("SESSION_FILE_CHANGED", "Session path is not a regular file")
            identity = _identity(info)
            _write_all(fd, data)
            session_io.fsync(fd)
        finally:
            _close_quietly(fd)
        _assert_root(root)
        _assert_path_identity(path, identity, len(data))
        _sync_directory(root.path)
    except BaseException:
        if identity is not None:
            _cleanup_owned(fs, path, identity, None)
        raise
    assert identity is not None
    return identity


def _read_file(path: str, root: _Root, limits: SessionLimits) -> tuple[_Identity, bytes]:
    before = session_io.lstat(path)
    if not stat.S_ISREG(before.st_mode):
        raise _fail("SESSION_FILE_CHANGED", "Session path is not a regular file")
    if before.st_size > limits.max_file_bytes:
        raise _fail("SESSION_FILE_TOO_LARGE", "Session file exceeds the byte limit")
    expected = _identity(before)
    try:
        fd = session_io.open(path, _READ_FLAGS)
    except OSError as error:
        if error.errno == errno.ELOOP:  # O_NOFOLLOW met a symlink swapped in
            raise _fail("SESSION_FILE_CHANGED", "Session path is not a regular file") from error
        raise
    try:
        if _identity(session_io.fstat(fd)) != expected:
            raise _fail("SESSION_FILE_CHANGED", "Session file changed while it was opened")
        data = _read_all(fd, limits.max_file_bytes)
    finally:
        _close_quietly(fd)
    if len(data) > limits.max_file_bytes:
        raise _fail("SESSION_FILE_TOO_LARGE", "Session file exceeds the byte limit")
    _assert_root(root)
    _assert_path_identity(path, expected, len(data))
    return expected, data
