"""The writer's open session file (``_Journal``): the descriptor that holds the file's
exclusive lock for the store's lifetime, how it is made or opened, the append (the lines
written at the acknowledged end of the file, then one fsync; a failed write cut off again),
and the reader's unlocked snapshot. Everything here blocks on the disk: the store calls it on
a worker thread, one call at a time per store."""

# The package's modules share their underscore helpers with one another.
# pyright: reportPrivateUsage=false, reportUnusedFunction=false

from __future__ import annotations

import errno
import os
import stat

from tether.agent.session.files import (
    _CREATE_FLAGS,
    _READ_FLAGS,
    _WRITE_FLAGS,
    _assert_path_identity,
    _assert_root,
    _close_quietly,
    _Identity,
    _identity,
    _read_all,
    _Root,
    _sync_directory,
    _write_all,
    session_io,
)
from tether.agent.session.records import SessionLimits, SessionStoreError, _fail

__all__: list[str] = []


def _in_use(path: str) -> SessionStoreError:
    return _fail(
        "SESSION_IN_USE",
        f"Session file {path} is in use by another writer (another process, or another "
        "store in this one); it can be read, not written",
    )


class _Journal:
    """An open, locked session file and what the store knows of it: its identity, the size
    of everything acknowledged, and whether that ends with a newline."""

    __slots__ = ("ends_line", "fd", "identity", "path", "root", "size")

    def __init__(self, fd: int, path: str, root: _Root, identity: _Identity, size: int) -> None:
        self.fd = fd
        self.path = path
        self.root = root
        self.identity = identity
        self.size = size
        self.ends_line = True

    def check(self) -> None:
        """``SESSION_ROOT_CHANGED`` if the parent directory changed; ``SESSION_FILE_CHANGED``
        if the path no longer names this file, or the file's size is not what this writer
        wrote (someone else wrote or cut it)."""
        _assert_root(self.root)
        _assert_path_identity(self.path, self.identity)
        if session_io.fstat(self.fd).st_size != self.size:
            raise _fail("SESSION_FILE_CHANGED", "Session file was changed behind the store")

    def append(self, data: bytes) -> None:
        """Write ``data`` (whole lines) at the end and fsync. If that fails the file is cut
        back to its acknowledged size and the error raised; if even that fails,
        ``SESSION_WRITE_FAILED`` (the caller retires the store)."""
        self.check()
        if not self.ends_line:
            data = b"\n" + data  # a last entry loaded without its newline gets one first
        try:
            _write_all(self.fd, data, self.size)
            session_io.fsync(self.fd)
        except Exception as primary:
            try:
                self.cut(self.size)
            except Exception as repair:
                raise _fail(
                    "SESSION_WRITE_FAILED",
                    "A session write failed and the file could not be put back to its last "
                    "acknowledged entry; load it again to continue",
                ) from ExceptionGroup("Session write and repair both failed", [primary, repair])
            raise
        self.size += len(data)
        self.ends_line = True

    def cut(self, size: int) -> None:
        """Truncate the file to ``size`` bytes and fsync."""
        session_io.truncate(self.fd, size)
        session_io.fsync(self.fd)
        self.size = size

    def close(self) -> None:
        """Close the descriptor, which releases the lock."""
        session_io.close(self.fd)


def _regular_before_open(path: str, limits: SessionLimits) -> os.stat_result:
    info = session_io.lstat(path)
    if not stat.S_ISREG(info.st_mode):
        raise _fail("SESSION_FILE_CHANGED", "Session path is not a regular file")
    if info.st_size > limits.max_file_bytes:
        raise _fail("SESSION_FILE_TOO_LARGE", "Session file exceeds the byte limit")
    return info


def _open_checked(path: str, flags: int, expected: _Identity) -> int:
    try:
        fd = session_io.open(path, flags)
    except OSError as error:
        if error.errno == errno.ELOOP:  # O_NOFOLLOW met a symlink swapped in
            raise _fail("SESSION_FILE_CHANGED", "Session path is not a regular file") from error
        raise
    try:
        info = session_io.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or _identity(info) != expected:
            raise _fail("SESSION_FILE_CHANGED", "Session file changed while it was opened")
    except BaseException:
        _close_quietly(fd)
        raise
    return fd


def _open_journal(path: str, root: _Root, limits: SessionLimits) -> tuple[_Journal, bytes]:
    """Open ``path`` as its one writer (``SESSION_IN_USE`` at once if another holds it) and
    read it all; the journal's size is the bytes read."""
    expected = _identity(_regular_before_open(path, limits))
    fd = _open_checked(path, _WRITE_FLAGS, expected)
    try:
        try:
            session_io.lock(fd)
        except BlockingIOError:
            raise _in_use(path) from None
        data = _read_all(fd, limits.max_file_bytes)
        if len(data) > limits.max_file_bytes:
            raise _fail("SESSION_FILE_TOO_LARGE", "Session file exceeds the byte limit")
        if session_io.fstat(fd).st_size != len(data):  # pragma: no cover - locked: no writer
            raise _fail("SESSION_FILE_CHANGED", "Session file changed while it was read")
        _assert_root(root)
        _assert_path_identity(path, expected)
    except BaseException:
        _close_quietly(fd)
        raise
    return _Journal(fd, path, root, expected, len(data)), data


def _create_journal(path: str, header: bytes, root: _Root) -> _Journal:
    """Create ``path`` exclusively (``0600``) holding ``header``, locked, fsynced, its
    directory fsynced. A failure removes the file again (while it is still the one made)."""
    try:
        fd = session_io.open(path, _CREATE_FLAGS, 0o600)
    except FileExistsError as error:
        raise _fail("SESSION_ALREADY_EXISTS", "Session file already exists") from error
    identity: _Identity | None = None
    try:
        identity = _identity(session_io.fstat(fd))
        try:
            session_io.lock(fd)
        except BlockingIOError:  # pragma: no cover - another writer opened it at once
            raise _in_use(path) from None
        _write_all(fd, header, 0)
        session_io.fsync(fd)
        _assert_root(root)
        _assert_path_identity(path, identity)
        _sync_directory(root.path)
    except BaseException:
        if identity is not None:
            try:
                _assert_path_identity(path, identity)
                session_io.remove(path)
            except (OSError, SessionStoreError):
                pass  # no longer ours, or already gone
        _close_quietly(fd)
        raise
    return _Journal(fd, path, root, identity, len(header))


def _read_snapshot(path: str, limits: SessionLimits) -> bytes:
    """The bytes of ``path`` as they are now, without the lock (a writer may be appending:
    what it adds after this read starts is not read, and a line it is writing may be
    incomplete, which the parser ignores as a torn tail)."""
    before = _regular_before_open(path, limits)
    fd = _open_checked(path, _READ_FLAGS, _identity(before))
    try:
        size = min(session_io.fstat(fd).st_size, limits.max_file_bytes + 1)
        chunks: list[bytes] = []
        total = 0
        while total < size:
            chunk = session_io.read(fd, size - total, total)
            if not chunk:
                break  # cut meanwhile (a writer repaired a torn line)
            chunks.append(chunk)
            total += len(chunk)
    finally:
        _close_quietly(fd)
    if total > limits.max_file_bytes:
        raise _fail("SESSION_FILE_TOO_LARGE", "Session file exceeds the byte limit")
    return b"".join(chunks)
