"""The operating-system seam (``session_io``) and the helpers built on it: file and directory
identities, the parent-directory capture and check, bounded reads and writes, and directory
sync."""

# The package's modules share their underscore helpers with one another.
# pyright: reportPrivateUsage=false, reportUnusedFunction=false

from __future__ import annotations

import contextlib
import errno
import os
import stat
from typing import Final, cast

from tether._base.dataclass import dataclass
from tether._base.strings import is_non_empty
from tether.agent.session.records import _fail

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no advisory locks
    fcntl = None

__all__ = ["SessionIO", "session_io"]


def _check_callable(owner: str, name: str, value: object) -> None:
    if not callable(value):
        raise TypeError(f"{owner}.{name} must be callable (got {type(value).__name__})")


class SessionIO:
    """Every operating-system call a store makes.

    The store looks up the module-level ``session_io`` instance at each call, so a test can
    patch one method (``monkeypatch.setattr(session_io, "fsync", failing)``) to make that
    step fail. Each method is a thin wrapper over the ``os`` (or ``fcntl``) function named.
    Writers call them on a worker thread, never on the event loop.
    """

    def open(self, path: str, flags: int, mode: int = 0o777) -> int:
        """``os.open``."""
        return os.open(path, flags, mode)

    def read(self, fd: int, size: int, offset: int) -> bytes:
        """``os.pread``."""
        return os.pread(fd, size, offset)

    def write(self, fd: int, data: bytes | memoryview, offset: int) -> int:
        """``os.pwrite``: returns how many bytes were written."""
        return os.pwrite(fd, data, offset)

    def fsync(self, fd: int) -> None:
        """``os.fsync`` (also of a directory's descriptor)."""
        os.fsync(fd)

    def truncate(self, fd: int, size: int) -> None:
        """``os.ftruncate``: cuts a torn last line, or a failed write, off the file."""
        os.ftruncate(fd, size)

    def lock(self, fd: int) -> None:
        """``fcntl.flock(fd, LOCK_EX | LOCK_NB)``: raises ``BlockingIOError`` at once when
        another open file (in any process) holds the lock. Nothing where the platform has
        no ``fcntl``."""
        if fcntl is not None:  # pragma: no branch - per platform
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)

    def fstat(self, fd: int) -> os.stat_result:
        """``os.fstat``."""
        return os.fstat(fd)

    def close(self, fd: int) -> None:
        """``os.close`` (which releases the lock)."""
        os.close(fd)

    def lstat(self, path: str) -> os.stat_result:
        """``os.lstat``: identity checks of the session file."""
        return os.lstat(path)

    def stat(self, path: str) -> os.stat_result:
        """``os.stat``: identity checks of the parent directory (a symlink is followed)."""
        return os.stat(path)

    def realpath(self, path: str) -> str:
        """``os.path.realpath(path, strict=True)``."""
        return os.path.realpath(path, strict=True)

    def listdir(self, path: str) -> list[str]:
        """``os.listdir``: finds the old format's leftovers beside a session file."""
        return os.listdir(path)

    def remove(self, path: str) -> None:
        """``os.remove``: removes the old format's leftovers, or a failed create's file."""
        os.remove(path)

    def mkdir(self, path: str, mode: int) -> None:
        """``os.mkdir``: makes a session's blob directory (``tether.agent.session.blobs``)."""
        os.mkdir(path, mode)

    def rename(self, source: str, destination: str) -> None:
        """``os.replace``: puts an old recovery marker back when its file is missing, and
        moves a written image blob to its name."""
        os.replace(source, destination)


session_io: Final = SessionIO()
"""The I/O adapter every store routes its operating-system calls through (patch it in
tests)."""


# --- filesystem helpers -------------------------------------------------------------------------

_Identity = tuple[int, int, object]
"""(device, inode, birth time or None): a file's identity."""

_O_CLOEXEC: Final = getattr(os, "O_CLOEXEC", 0)
_O_NOFOLLOW: Final = getattr(os, "O_NOFOLLOW", 0)
_O_NONBLOCK: Final = getattr(os, "O_NONBLOCK", 0)
_O_BINARY: Final = getattr(os, "O_BINARY", 0)
_CREATE_FLAGS: Final = os.O_CREAT | os.O_EXCL | os.O_RDWR | _O_CLOEXEC | _O_BINARY
_WRITE_FLAGS: Final = os.O_RDWR | _O_CLOEXEC | _O_NOFOLLOW | _O_NONBLOCK | _O_BINARY
_READ_FLAGS: Final = os.O_RDONLY | _O_CLOEXEC | _O_NOFOLLOW | _O_NONBLOCK | _O_BINARY
_IGNORED_DIRECTORY_SYNC: Final = frozenset({errno.EINVAL, errno.EPERM, errno.ENOTSUP})


def _identity(info: os.stat_result) -> _Identity:
    birth: object = getattr(info, "st_birthtime_ns", None)
    if birth is None:  # pragma: no branch - per platform
        birth = getattr(info, "st_birthtime", None)
    return (info.st_dev, info.st_ino, birth)


@dataclass(frozen=True, slots=True)
class _Root:
    """The sessions folder as given, as resolved, and the identity of what was found there."""

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


def _assert_path_identity(path: str, expected: _Identity) -> None:
    try:
        info = session_io.lstat(path)
    except OSError as error:
        raise _fail("SESSION_FILE_CHANGED", "Session file identity changed") from error
    if not stat.S_ISREG(info.st_mode) or _identity(info) != expected:
        raise _fail("SESSION_FILE_CHANGED", "Session file identity changed")


def _write_all(fd: int, data: bytes, offset: int) -> None:
    view = memoryview(data)
    done = 0
    total = len(data)
    while done < total:
        written = session_io.write(fd, view[done:], offset + done)
        if type(written) is not int or not 0 < written <= total - done:
            raise OSError(errno.EIO, "Session write made invalid progress")
        done += written


def _read_all(fd: int, limit: int) -> bytes:
    """Up to ``limit + 1`` bytes from the start (one more than allowed shows a file that
    is too large)."""
    chunks: list[bytes] = []
    total = 0
    while total <= limit:
        chunk = session_io.read(fd, min(limit + 1 - total, 1 << 24), total)
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


def _close_quietly(fd: int) -> None:
    with contextlib.suppress(OSError):
        session_io.close(fd)


def _sync_directory(path: str) -> None:
    """fsync a directory so a new or removed name in it is durable (ignored where
    unsupported)."""
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
