"""``SessionStore``: one session file, the options it is built with, the per-path locks
every store in this process shares, and the crash-safe commit with its rollback and
recovery (see the package docstring)."""

# The package's modules share their underscore helpers with one another.
# pyright: reportPrivateUsage=false

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime
import errno
import os
import re
import stat
import uuid
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, TypeVar, cast

from tether._text import is_non_empty
from tether.agent.session.decoder import _snapshot_message
from tether.agent.session.files import (
    _CREATE_FLAGS,
    _DEFAULT_FILE_SYSTEM,
    _READ_FLAGS,
    _RESTORE_INFIX,
    _TEMP_INFIX,
    RECOVERY_MARKER_SUFFIX,
    SessionFileSystem,
    _assert_no_marker,
    _assert_path_identity,
    _assert_root,
    _canonical_key,
    _capture_root,
    _check_callable,
    _cleanup_owned,
    _close_quietly,
    _create_file,
    _Identity,
    _identity,
    _path_matches,
    _read_all,
    _read_file,
    _Root,
    _session_path,
    _sync_directory,
    _write_all,
    session_io,
)
from tether.agent.session.format import (
    _check_line,
    _describe,
    _dumps,
    _encode,
    _entry_line,
    _header_line,
)
from tether.agent.session.linkage import _context_of, _Index
from tether.agent.session.listing import default_sessions_dir
from tether.agent.session.parse import _is_count, _parse
from tether.agent.session.records import (
    CompactionEntry,
    CompactionSummary,
    MessageEntry,
    SessionContext,
    SessionEntry,
    SessionHeader,
    SessionLimits,
    SessionStoreError,
    _fail,
    _short,
)
from tether.protocol import Message

__all__ = ["SessionStore", "SessionStoreOptions"]

_T = TypeVar("_T")

# --- options -----------------------------------------------------------------------------------


def _default_clock() -> str:
    now = datetime.datetime.now(datetime.UTC)
    return now.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _default_id() -> str:
    return str(uuid.uuid4())


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionStoreOptions:
    """How a store names, stamps and bounds what it writes.

    * ``session_id``: the header ID ``create`` writes (default: a random UUID); checked by
      ``create``: blank or not a string is ``SESSION_INVALID_HEADER``;
    * ``clock``: returns each timestamp (default: ISO-8601 UTC with milliseconds, ``Z``);
    * ``id_factory``: returns each new record ID (default: a random UUID);
    * ``file_system``: the ``SessionFileSystem`` seam;
    * ``limits``: the ``SessionLimits`` (default: the workshop's).

    ``create``/``load`` also accept a plain ``dict`` with these keys.
    """

    session_id: str | None = None
    clock: Callable[[], str] = _default_clock
    id_factory: Callable[[], str] = _default_id
    file_system: SessionFileSystem = _DEFAULT_FILE_SYSTEM
    limits: SessionLimits = SessionLimits()  # noqa: RUF009 (frozen: one shared default is safe)

    def __post_init__(self) -> None:
        _check_callable("SessionStoreOptions", "clock", self.clock)
        _check_callable("SessionStoreOptions", "id_factory", self.id_factory)
        if type(self.file_system) is not SessionFileSystem:
            raise TypeError("SessionStoreOptions.file_system must be a SessionFileSystem")
        if type(self.limits) is not SessionLimits:
            raise TypeError("SessionStoreOptions.limits must be a SessionLimits")


_OPTION_KEYS: Final = frozenset(field.name for field in dataclasses.fields(SessionStoreOptions))


def _snapshot_options(options: object) -> SessionStoreOptions:
    """Options as a ``SessionStoreOptions``, reading a ``dict`` without running caller code.

    A ``dict`` subclass or an options subclass may run code on every read (the workshop's
    accessor properties), so it is refused as ``SESSION_INVALID_HEADER`` without a read.
    """
    if options is None:
        return SessionStoreOptions()
    kind = type(options)
    if kind is SessionStoreOptions:
        return cast(SessionStoreOptions, options)
    if kind is dict:
        source = cast("dict[object, object]", options)
        for key in source:
            if type(key) is not str:
                raise TypeError(f"unknown session option of type {type(key).__name__}")
            if key not in _OPTION_KEYS:
                raise TypeError(f"unknown session option {key!r}")
        return SessionStoreOptions(**cast("dict[str, Any]", source))
    if isinstance(options, dict | SessionStoreOptions):
        raise _fail(
            "SESSION_INVALID_HEADER",
            f"Session options must be a plain dict or SessionStoreOptions (got {kind.__name__})",
        )
    raise TypeError(f"Session options must be a dict or SessionStoreOptions (got {kind.__name__})")


# --- per-path locks ----------------------------------------------------------------------------


class _PathLock:
    __slots__ = ("lock", "users")

    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.users = 0


_PATH_LOCKS: Final[dict[str, _PathLock]] = {}
"""One lock per canonical session path, shared by every store in this process; an entry
lives only while some operation holds or awaits it."""


@contextlib.asynccontextmanager
async def _locked_path(key: str) -> AsyncGenerator[None]:
    entry = _PATH_LOCKS.get(key)
    if entry is None:
        entry = _PATH_LOCKS[key] = _PathLock()
    entry.users += 1
    try:
        async with entry.lock:
            yield
    finally:
        entry.users -= 1
        if entry.users == 0 and _PATH_LOCKS.get(key) is entry:
            del _PATH_LOCKS[key]


# --- the store ---------------------------------------------------------------------------------

_SAFE_SESSION_ID: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


class SessionStore:
    """One session file: its header and records, and crash-safe appends to it.

    Build one with ``create`` (a new file), ``create_in`` (a new file in a sessions
    directory) or ``load`` (an existing file); the constructor is private. ``append``,
    ``append_compaction`` and ``flush`` are serialized (see the package docstring) and each
    commits a whole new generation atomically; a failed call changes neither the file nor
    ``entries``. ``header`` and every record are frozen and stable.

    The methods are coroutines so they can wait their turn on the locks; the file I/O inside
    them is synchronous (small local files; see the package docstring), so an operation, once
    it holds its locks, finishes without yielding to the event loop.
    """

    __slots__ = (
        "_clock",
        "_fs",
        "_header",
        "_header_line",
        "_id_factory",
        "_identity",
        "_index",
        "_limits",
        "_lines",
        "_lock_key",
        "_path",
        "_queue",
        "_root",
        "_size",
        "_unusable",
    )

    _path: str
    _root: _Root
    _lock_key: str
    _identity: _Identity
    _size: int
    _header: SessionHeader
    _header_line: bytes
    _index: _Index
    _lines: list[bytes | None]
    _clock: Callable[[], str]
    _id_factory: Callable[[], str]
    _fs: SessionFileSystem
    _limits: SessionLimits
    _unusable: SessionStoreError | None
    _queue: asyncio.Lock

    def __init__(self) -> None:
        raise TypeError("use SessionStore.create(), SessionStore.create_in() or load()")

    @classmethod
    def _new(
        cls,
        *,
        path: str,
        root: _Root,
        identity: _Identity,
        size: int,
        header: SessionHeader,
        index: _Index,
        options: SessionStoreOptions,
    ) -> SessionStore:
        store = object.__new__(cls)
        store._path = path
        store._root = root
        store._lock_key = _canonical_key(path, root)
        store._identity = identity
        store._size = size
        store._header = header
        store._header_line = _header_line(header)
        store._index = index
        store._lines = [None] * len(index.entries)
        store._clock = options.clock
        store._id_factory = options.id_factory
        store._fs = options.file_system
        store._limits = options.limits
        store._unusable = None
        store._queue = asyncio.Lock()
        return store

    # -- construction ------------------------------------------------------------------------

    @classmethod
    async def create(
        cls,
        path: str | os.PathLike[str],
        options: SessionStoreOptions | dict[str, Any] | None = None,
    ) -> SessionStore:
        """Create a new session file holding only its header (exclusively, mode ``0600``).

        ``SESSION_ALREADY_EXISTS`` if the path exists; ``SESSION_INVALID_HEADER`` for a
        blank session ID or clock value (nothing is created); ``SESSION_ROLLBACK_FAILED``
        while a recovery marker exists. A create that fails after making the file removes
        it again (when it is still the file it made), so a retry can succeed.
        """
        absolute = _session_path(path)
        root = _capture_root(os.path.dirname(absolute))
        settings = _snapshot_options(options)
        session_id = _default_id() if settings.session_id is None else settings.session_id
        _assert_no_marker(absolute, settings.file_system)
        if not is_non_empty(session_id):
            raise _fail("SESSION_INVALID_HEADER", "Session ID must be a non-empty string")
        created_at = settings.clock()
        if not is_non_empty(created_at):
            raise _fail(
                "SESSION_INVALID_HEADER", "Session creation timestamp must be a non-empty string"
            )
        header = SessionHeader(id=session_id, created_at=created_at)
        data = _check_line(_header_line(header), settings.limits)
        if len(data) > settings.limits.max_file_bytes:
            raise _fail("SESSION_FILE_TOO_LARGE", "Serialized session exceeds the file limit")
        async with _locked_path(_canonical_key(absolute, root)):
            identity = _create_file(absolute, data, root, settings.file_system)
        return cls._new(
            path=absolute,
            root=root,
            identity=identity,
            size=len(data),
            header=header,
            index=_Index(),
            options=settings,
        )

    @classmethod
    async def create_in(
        cls,
        directory: str | os.PathLike[str] | None = None,
        options: SessionStoreOptions | dict[str, Any] | None = None,
    ) -> SessionStore:
        """Create ``<directory>/<session-id>.jsonl``, making the directory first if needed
        (mode ``0700``; missing parents get the default mode). ``directory`` defaults to
        ``default_sessions_dir()``. The session ID (given or generated) must be a safe file
        name: 1-128 characters of ``A-Z a-z 0-9 . _ -`` starting with a letter or digit
        (``SESSION_INVALID_HEADER`` otherwise)."""
        settings = _snapshot_options(options)
        session_id = _default_id() if settings.session_id is None else settings.session_id
        if type(session_id) is not str or _SAFE_SESSION_ID.fullmatch(session_id) is None:
            raise _fail(
                "SESSION_INVALID_HEADER",
                f"Session ID {_describe(session_id)} cannot name a session file",
            )
        folder = default_sessions_dir() if directory is None else Path(directory)
        os.makedirs(folder, mode=0o700, exist_ok=True)
        settings = dataclasses.replace(settings, session_id=session_id)
        return await cls.create(folder / f"{session_id}.jsonl", settings)

    @classmethod
    async def load(
        cls,
        path: str | os.PathLike[str],
        options: SessionStoreOptions | dict[str, Any] | None = None,
    ) -> SessionStore:
        """Open an existing session file, checked by the loading rules.

        ``SESSION_ROLLBACK_FAILED`` while its recovery marker exists; ``SESSION_FILE_CHANGED``
        for a path that is not a regular file (a symlink included) or that changes while it
        is read; ``SESSION_FILE_TOO_LARGE`` over the limit; then the parser's codes. A
        missing file raises ``FileNotFoundError``. ``session_id`` is ignored.
        """
        absolute = _session_path(path)
        settings = _snapshot_options(options)
        _assert_no_marker(absolute, settings.file_system)
        root = _capture_root(os.path.dirname(absolute))
        limits = settings.limits
        async with _locked_path(_canonical_key(absolute, root)):
            identity, data = _read_file(absolute, root, limits)
        header, index = _parse(data, limits)
        return cls._new(
            path=absolute,
            root=root,
            identity=identity,
            size=len(data),
            header=header,
            index=index,
            options=settings,
        )

    @classmethod
    async def recover(
        cls,
        path: str | os.PathLike[str],
        options: SessionStoreOptions | dict[str, Any] | None = None,
    ) -> bool:
        """Finish a commit that a crash or a failed rollback left behind.

        If ``<path>.pify-session-recovery`` exists, the generation it holds (the last one a
        call returned successfully for) is put back at ``path`` and the marker is gone
        afterwards; returns True. Returns False when there is no marker. Call it only when
        no other process is writing the session: the marker might be that process's.
        """
        absolute = _session_path(path)
        fs = _snapshot_options(options).file_system
        marker = absolute + RECOVERY_MARKER_SUFFIX
        try:
            info = fs.lstat(marker)
        except FileNotFoundError:
            return False
        if not stat.S_ISREG(info.st_mode):
            raise _fail("SESSION_ROLLBACK_FAILED", "Session recovery marker is not a regular file")
        root = _capture_root(os.path.dirname(absolute))
        async with _locked_path(_canonical_key(absolute, root)):
            try:
                current = fs.lstat(absolute)
            except FileNotFoundError:
                current = None
            if current is not None and _identity(current) == _identity(info):
                fs.remove(marker)  # the crash came before the rename: the path is the marker
            else:
                fs.rename(marker, absolute)
            _sync_directory(root.path)
        return True

    @staticmethod
    def canonical_path_of(store: SessionStore) -> str:
        """The file's canonical key: the parent's real path joined with the file name
        (lower-cased on Windows). Two stores on one file have the same key."""
        if not isinstance(cast(object, store), SessionStore):
            raise TypeError("Expected a SessionStore")
        return store._lock_key

    # -- reading ----------------------------------------------------------------------------

    @property
    def path(self) -> str:
        """The session file's absolute path."""
        return self._path

    @property
    def limits(self) -> SessionLimits:
        """The limits this store enforces."""
        return self._limits

    @property
    def header(self) -> SessionHeader:
        """The frozen header."""
        return self._header

    @property
    def entries(self) -> tuple[SessionEntry, ...]:
        """Every record in file order (a new tuple each call; the records are stable)."""
        return tuple(self._index.entries)

    def get(self, entry_id: str) -> SessionEntry | None:
        """The record with this ID, or ``None``."""
        return self._index.by_id.get(entry_id) if type(entry_id) is str else None

    def branch(self, leaf_id: str | None) -> tuple[SessionEntry, ...]:
        """The records from a root to ``leaf_id``, root first (empty for ``None``).

        ``SESSION_ENTRY_NOT_FOUND`` for an unknown ID.
        """
        if leaf_id is not None and self.get(leaf_id) is None:
            raise _fail(
                "SESSION_ENTRY_NOT_FOUND", f'Session entry "{_short(str(leaf_id))}" does not exist'
            )
        return tuple(self._index.path(leaf_id))

    def context(self, leaf_id: str | None) -> SessionContext:
        """The context of the branch ending at ``leaf_id`` (see the package docstring)."""
        return _context_of(list(self.branch(leaf_id)))

    # -- writing ----------------------------------------------------------------------------

    async def append(
        self, parent_id: str | None, message: Message | dict[str, Any]
    ) -> MessageEntry:
        """Append a message under ``parent_id`` (``None``: a new root) and commit.

        ``message`` is a protocol message (an exact ``UserMessage``, ``AssistantMessage`` or
        ``ToolResultMessage``) or its JSON form as an exact ``dict`` of plain JSON values; it
        is checked and snapshotted before the call waits its turn (``SESSION_PARENT_NOT_FOUND``
        for a blank parent ID, ``SESSION_INVALID_MESSAGE``). Then, in turn: the store's and
        file's identity, the record limit, the parent, a fresh ID (``SESSION_INVALID_RECORD``
        if blank, ``SESSION_DUPLICATE_ENTRY_ID`` if used), a timestamp, the branch's tool
        linkage, and the atomic commit. The ID factory and clock are consumed even when the
        commit then fails.
        """
        if parent_id is not None and not is_non_empty(parent_id):
            raise _fail("SESSION_PARENT_NOT_FOUND", "Parent ID must be a non-empty string")
        snapshot, body = _snapshot_message(message)

        def build(entry_id: str, timestamp: str) -> tuple[SessionEntry, bytes]:
            entry = MessageEntry(
                id=entry_id, parent_id=parent_id, timestamp=timestamp, message=snapshot
            )
            return entry, _entry_line(entry, body)

        return cast(MessageEntry, await self._serialized(lambda: self._append(parent_id, build)))

    async def append_compaction(
        self,
        parent_id: str | None,
        *,
        summary_id: str,
        summary: str,
        first_kept_entry_id: str | None,
        units_before: int,
        units_after: int,
    ) -> CompactionEntry:
        """Append a compaction record under ``parent_id`` and commit (as ``append``).

        ``summary_id`` must be non-blank, ``summary`` a string, the units non-negative
        integers (``SESSION_INVALID_RECORD``); ``first_kept_entry_id`` must name a record on
        the new record's branch (``SESSION_ENTRY_NOT_FOUND``) or be ``None``, and the kept
        messages must have valid tool linkage on their own.
        """
        if parent_id is not None and not is_non_empty(parent_id):
            raise _fail("SESSION_PARENT_NOT_FOUND", "Parent ID must be a non-empty string")
        if not is_non_empty(summary_id) or type(summary) is not str:
            raise _fail(
                "SESSION_INVALID_RECORD",
                "Compaction summary needs a non-empty summary_id and a string summary",
            )
        if first_kept_entry_id is not None and not is_non_empty(first_kept_entry_id):
            raise _fail(
                "SESSION_ENTRY_NOT_FOUND", "first_kept_entry_id must be None or a non-empty string"
            )
        if not _is_count(units_before) or not _is_count(units_after):
            raise _fail("SESSION_INVALID_RECORD", "Compaction units must be non-negative integers")
        content = CompactionSummary(id=summary_id, content=summary)
        _encode(_dumps([summary_id, summary]), "SESSION_INVALID_RECORD", "Compaction summary")

        def build(entry_id: str, timestamp: str) -> tuple[SessionEntry, bytes]:
            entry = CompactionEntry(
                id=entry_id,
                parent_id=parent_id,
                timestamp=timestamp,
                summary=content,
                first_kept_entry_id=first_kept_entry_id,
                units_before=units_before,
                units_after=units_after,
            )
            return entry, _entry_line(entry)

        return cast(CompactionEntry, await self._serialized(lambda: self._append(parent_id, build)))

    async def flush(self) -> None:
        """Rewrite the current generation atomically (canonical lines, every one ending in
        a newline), e.g. to clean up a recovered torn tail without appending."""
        await self._serialized(lambda: self._commit(None))

    async def _serialized(self, operation: Callable[[], _T]) -> _T:
        async with self._queue, _locked_path(self._lock_key):
            return operation()

    def _append(
        self, parent_id: str | None, build: Callable[[str, str], tuple[SessionEntry, bytes]]
    ) -> SessionEntry:
        self._assert_storage()
        index = self._index
        if len(index.entries) >= self._limits.max_records:
            raise _fail("SESSION_RECORD_LIMIT", "Session record limit reached")
        if parent_id is not None and parent_id not in index.by_id:
            raise _fail(
                "SESSION_PARENT_NOT_FOUND", f'Parent entry "{_short(parent_id)}" does not exist'
            )
        entry_id = self._id_factory()
        if not is_non_empty(entry_id):
            raise _fail("SESSION_INVALID_RECORD", "Entry ID must be a non-empty string")
        if entry_id in index.by_id:
            raise _fail(
                "SESSION_DUPLICATE_ENTRY_ID", f'Entry ID "{_short(entry_id)}" already exists'
            )
        timestamp = self._clock()
        if not is_non_empty(timestamp):
            raise _fail("SESSION_INVALID_RECORD", "Entry timestamp must be a non-empty string")
        entry, line = build(entry_id, timestamp)
        links = index.check(entry, "SESSION_ENTRY_NOT_FOUND")
        self._commit(_check_line(line, self._limits))
        index.add(entry, links)
        self._lines.append(line)
        return entry

    def _assert_storage(self) -> None:
        if self._unusable is not None:
            raise self._unusable
        _assert_root(self._root)
        _assert_path_identity(self._path, self._identity, self._size)

    def _serialize(self, extra: bytes | None) -> bytes:
        lines = self._lines
        limits = self._limits
        for position, line in enumerate(lines):
            if line is None:
                lines[position] = _check_line(_entry_line(self._index.entries[position]), limits)
        parts = cast("list[bytes]", [self._header_line, *lines])
        if extra is not None:
            parts.append(extra)
        if sum(map(len, parts)) > limits.max_file_bytes:
            raise _fail("SESSION_FILE_TOO_LARGE", "Serialized session exceeds the file limit")
        return b"".join(parts)

    def _commit(self, line: bytes | None) -> None:
        """Install the generation of every record (plus ``line``) atomically; see the module
        docstring. On success the recorded file identity and size are the new ones."""
        self._assert_storage()
        data = self._serialize(line)
        fs = self._fs
        path = self._path
        temp = f"{path}{_TEMP_INFIX}{os.getpid()}-{uuid.uuid4()}"
        marker = path + RECOVERY_MARKER_SUFFIX
        old_identity = self._identity
        old_size = self._size
        temp_identity: _Identity | None = None
        marker_owned = False
        keep_marker = False
        fd: int | None = None
        try:
            fd = session_io.open(temp, _CREATE_FLAGS, 0o600)
            info = session_io.fstat(fd)
            if not stat.S_ISREG(info.st_mode):  # pragma: no cover - O_EXCL made a file
                raise _fail("SESSION_FILE_CHANGED", "Session temporary is not a regular file")
            temp_identity = _identity(info)
            _write_all(fd, data)
            session_io.fsync(fd)
            session_io.close(fd)
            fd = None
            self._assert_storage()
            _assert_path_identity(temp, temp_identity, len(data))
            try:
                fs.link(path, marker)
            except FileExistsError as error:
                collision = _fail(
                    "SESSION_ROLLBACK_FAILED", "A session recovery marker already exists"
                )
                self._unusable = collision
                raise collision from error
            marker_owned = True
            info = fs.lstat(marker)
            if (
                not stat.S_ISREG(info.st_mode)
                or _identity(info) != old_identity
                or info.st_size != old_size
            ):
                raise _fail(
                    "SESSION_FILE_CHANGED", "Session rollback link has an unexpected identity"
                )
            self._assert_storage()
            fs.rename(temp, path)
            try:
                installed = fs.lstat(path)
                new_identity = _identity(installed)
                if (
                    not stat.S_ISREG(installed.st_mode)
                    or new_identity[:2] != temp_identity[:2]
                    or installed.st_size != len(data)
                ):
                    raise _fail(
                        "SESSION_FILE_CHANGED", "Installed session file identity is unexpected"
                    )
                _sync_directory(self._root.path)
            except Exception as primary:
                try:
                    restored, marker_owned = self._restore(marker, old_identity, old_size)
                    self._identity = restored
                    self._size = old_size
                except Exception as rollback:
                    keep_marker = True
                    raise self._retire(
                        "Session rollback failed; the recovery backup was retained"
                    ) from ExceptionGroup(
                        "Session commit and rollback both failed", [primary, rollback]
                    )
                with contextlib.suppress(OSError):
                    _sync_directory(self._root.path)
                raise
            removed = _cleanup_owned(fs, marker, old_identity, old_size)
            marker_owned = not removed
            if not removed:
                cleanup = OSError(errno.EIO, "Session recovery marker cleanup failed")
                try:
                    restored, marker_owned = self._restore(marker, old_identity, old_size)
                    self._identity = restored
                    self._size = old_size
                    if marker_owned:
                        marker_owned = not _cleanup_owned(fs, marker, old_identity, old_size)
                        if marker_owned:
                            raise OSError(
                                errno.EIO,
                                "Recovery marker remained after the old generation was restored",
                            )
                except Exception as rollback:
                    keep_marker = marker_owned
                    raise self._retire(
                        "Session finalization and rollback failed; recovery is required"
                    ) from ExceptionGroup(
                        "Session marker cleanup and rollback both failed", [cleanup, rollback]
                    )
                with contextlib.suppress(OSError):
                    _sync_directory(self._root.path)
                raise _fail(
                    "SESSION_ROLLBACK_FAILED",
                    "Session commit was rolled back because its recovery marker could not be "
                    "removed",
                ) from cleanup
            self._identity = new_identity
            self._size = len(data)
            with contextlib.suppress(OSError):
                _sync_directory(self._root.path)
        finally:
            if fd is not None:
                _close_quietly(fd)
            if temp_identity is not None:
                _cleanup_owned(fs, temp, temp_identity, None)
            if marker_owned and not keep_marker:
                _cleanup_owned(fs, marker, old_identity, old_size)

    def _retire(self, message: str) -> SessionStoreError:
        """``SESSION_ROLLBACK_FAILED``: a commit and its rollback both failed, so this store
        refuses every later operation with that error."""
        failure = _fail("SESSION_ROLLBACK_FAILED", message)
        self._unusable = failure
        return failure

    def _restore(self, marker: str, identity: _Identity, size: int) -> tuple[_Identity, bool]:
        """Put the old generation back: ``(its identity now, whether the marker remains)``."""
        fs = self._fs
        path = self._path
        if not _path_matches(fs, marker, identity, size):
            raise OSError(errno.EIO, "Session recovery marker identity changed")
        failures: list[Exception] = []
        for _ in range(3):
            try:
                fs.rename(marker, path)
                return identity, False
            except Exception as error:
                failures.append(error)
                if _path_matches(fs, path, identity, size):
                    return identity, False
        restore = f"{path}{_RESTORE_INFIX}{os.getpid()}-{uuid.uuid4()}"
        restore_identity: _Identity | None = None
        restore_owned = False
        try:
            reader = session_io.open(marker, _READ_FLAGS)
            try:
                info = session_io.fstat(reader)
                if (
                    not stat.S_ISREG(info.st_mode)
                    or _identity(info) != identity
                    or info.st_size != size
                ):
                    raise OSError(errno.EIO, "Recovery backup identity changed")
                data = _read_all(reader, size)
            finally:
                _close_quietly(reader)
            if len(data) != size:
                raise OSError(errno.EIO, "Recovery backup changed while it was read")
            writer = session_io.open(restore, _CREATE_FLAGS, 0o600)
            restore_owned = True
            try:
                info = session_io.fstat(writer)
                if not stat.S_ISREG(info.st_mode):  # pragma: no cover - O_EXCL made a file
                    raise OSError(errno.EIO, "Recovery temporary is not a regular file")
                restore_identity = _identity(info)
                _write_all(writer, data)
                session_io.fsync(writer)
            finally:
                _close_quietly(writer)
            fs.rename(restore, path)
            restore_owned = False
            with contextlib.suppress(OSError):
                _sync_directory(self._root.path)
            return restore_identity, True
        except Exception as error:
            failures.append(error)
            raise ExceptionGroup(
                "All bounded session rollback strategies failed", failures
            ) from None
        finally:
            if restore_owned and restore_identity is not None:
                _cleanup_owned(fs, restore, restore_identity, None)
