"""``SessionStore``: one session file, the options it is built with, and its writer: the
exclusive lock held for the store's lifetime, appends of whole lines made durable on a worker
thread, and the repair of a torn last line on load (see the package docstring)."""

# The package's modules share their underscore helpers with one another.
# pyright: reportPrivateUsage=false

from __future__ import annotations

import asyncio
import dataclasses
import os
import weakref
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any, Final, TypeVar, cast

from tether._text import LazyPattern, is_non_empty
from tether.agent.session.blobs import (
    UnavailableImage,
    _ImageLoader,
    _write_blobs,
    blob_directory_of,
)
from tether.agent.session.decoder import _snapshot_message
from tether.agent.session.files import (
    _canonical_key,
    _capture_root,
    _close_quietly,
    _Root,
    _session_path,
)
from tether.agent.session.format import (
    _check_line,
    _describe,
    _dumps,
    _encode,
    _entry_line,
    _header_line,
)
from tether.agent.session.journal import (
    _create_journal,
    _Journal,
    _open_journal,
    _read_snapshot,
)
from tether.agent.session.legacy import _is_regular, _marker_of, _remove_leftovers, _restore_marker
from tether.agent.session.linkage import _context_of, _Index, _Links
from tether.agent.session.off_loop import _off_loop, _release, _wait_out
from tether.agent.session.parse import _is_count, _parse
from tether.agent.session.records import (
    CompactionEntry,
    CompactionSummary,
    MessageEntry,
    SessionContext,
    SessionEntry,
    SessionHeader,
    SessionLimits,
    SessionRecovery,
    SessionStoreError,
    _fail,
    _short,
)
from tether.agent.session.store_options import SessionStoreOptions, _default_id, _snapshot_options
from tether.protocol import Message

__all__ = ["SessionStore", "SessionStoreOptions"]

_T = TypeVar("_T")

# --- the store ---------------------------------------------------------------------------------

_SAFE_SESSION_ID: Final = LazyPattern(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")

_Staged = tuple[list[SessionEntry], bytes, _Links, list[tuple[str, bytes]]]
"""Records ready to append: the records, their lines, the linkage after them, and the image
blobs the lines reference (written first)."""


class SessionStore:
    """One session file: its header and records, and durable appends to it.

    Build one with ``create`` (a new file), ``create_in`` (a new file in a sessions
    directory), ``load`` (an existing file, as its one writer) or ``read`` (a read-only
    snapshot); the constructor is private. A writer holds the file's exclusive lock until
    ``close()`` (or ``async with``). ``append``, ``append_many``, ``append_compaction`` and
    ``flush`` run one at a time in call order; each append writes only its own lines, and
    returns once they are on disk (fsynced). A failed call changes neither the file nor
    ``entries``. ``header`` and every record are frozen and stable.

    The methods are coroutines: the disk work runs on a worker thread, so the event loop
    never waits for the disk.
    """

    __slots__ = (
        "__weakref__",
        "_clock",
        "_finalizer",
        "_header",
        "_id_factory",
        "_index",
        "_journal",
        "_key",
        "_limits",
        "_path",
        "_queue",
        "_recovered",
        "_unavailable",
        "_unusable",
    )

    _path: str
    _key: str
    _journal: _Journal | None
    _finalizer: weakref.finalize[..., Any] | None
    _header: SessionHeader
    _index: _Index
    _clock: Callable[[], str]
    _id_factory: Callable[[], str]
    _limits: SessionLimits
    _recovered: SessionRecovery | None
    _unavailable: tuple[UnavailableImage, ...]
    _unusable: SessionStoreError | None
    _queue: asyncio.Lock

    def __init__(self) -> None:
        raise TypeError("use SessionStore.create(), SessionStore.create_in(), load() or read()")

    @classmethod
    def _new(
        cls,
        *,
        path: str,
        root: _Root,
        journal: _Journal | None,
        header: SessionHeader,
        index: _Index,
        options: SessionStoreOptions,
        recovered: SessionRecovery | None = None,
        unavailable: tuple[UnavailableImage, ...] = (),
    ) -> SessionStore:
        store = object.__new__(cls)
        store._path = path
        store._key = _canonical_key(path, root)
        store._journal = journal
        # A store dropped without close() still lets the file go when it is collected.
        store._finalizer = (
            None if journal is None else weakref.finalize(store, _close_quietly, journal.fd)
        )
        store._header = header
        store._index = index
        store._clock = options.clock
        store._id_factory = options.id_factory
        store._limits = options.limits
        store._recovered = recovered
        store._unavailable = unavailable
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
        """Create a new session file holding only its header (exclusively, mode ``0600``)
        and hold its lock.

        ``SESSION_ALREADY_EXISTS`` if the path exists (or an old version's recovery marker
        for it does: ``load`` puts that back); ``SESSION_INVALID_HEADER`` for a blank
        session ID or clock value (nothing is created). A create that fails after making
        the file removes it again (when it is still the file it made), so a retry can
        succeed.
        """
        absolute = _session_path(path)
        settings = _snapshot_options(options)
        session_id = _default_id() if settings.session_id is None else settings.session_id
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

        def work() -> tuple[_Root, _Journal]:
            root = _capture_root(os.path.dirname(absolute))
            if _is_regular(_marker_of(absolute)):
                raise _fail(
                    "SESSION_ALREADY_EXISTS",
                    "An old recovery marker of this session file exists (load puts it back)",
                )
            return root, _create_journal(absolute, data, root)

        root, journal = await _off_loop(work, lambda made: _release(made[1]))
        return cls._new(
            path=absolute,
            root=root,
            journal=journal,
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
        # Here, not at import: a store that is only loaded or created at a path never needs
        # the listing (nor ``pathlib``) (issue 30: importing the usable API).
        from pathlib import Path

        from tether.agent.session.listing import default_sessions_dir

        folder = default_sessions_dir() if directory is None else Path(directory)
        await asyncio.to_thread(os.makedirs, folder, mode=0o700, exist_ok=True)
        settings = dataclasses.replace(settings, session_id=session_id)
        return await cls.create(folder / f"{session_id}.jsonl", settings)

    @classmethod
    async def load(
        cls,
        path: str | os.PathLike[str],
        options: SessionStoreOptions | dict[str, Any] | None = None,
    ) -> SessionStore:
        """Open an existing session file as its one writer, checked by the loading rules.

        ``SESSION_IN_USE`` at once (naming the path) while another writer, in this process
        or another, holds it. A torn last line (a crash in the middle of a write) is cut off
        the file, which then ends with its last complete entry, and ``recovered`` says so;
        anything else wrong is an error and the file is left as it is:
        ``SESSION_FILE_CHANGED`` for a path that is not a regular file (a symlink included)
        or that changes while it is opened, ``SESSION_FILE_TOO_LARGE`` over the limit, then
        the parser's codes. The old format's leftovers beside the file are removed (see
        ``legacy``). A missing file raises ``FileNotFoundError``. ``session_id`` is ignored.
        """
        absolute = _session_path(path)
        settings = _snapshot_options(options)
        limits = settings.limits

        images = _ImageLoader(blob_directory_of(absolute))

        def work() -> tuple[_Root, _Journal, SessionHeader, _Index, SessionRecovery | None]:
            _restore_marker(absolute)
            root = _capture_root(os.path.dirname(absolute))
            journal, data = _open_journal(absolute, root, limits)
            try:
                header, index, torn = _parse(data, limits, images)
                recovered = None
                if torn:
                    journal.cut(len(data) - torn)
                    recovered = SessionRecovery(dropped_bytes=torn)
                journal.ends_line = data[journal.size - 1 : journal.size] == b"\n"
                _remove_leftovers(absolute)
            except BaseException:
                journal.close()
                raise
            return root, journal, header, index, recovered

        root, journal, header, index, recovered = await _off_loop(
            work, lambda made: _release(made[1])
        )
        return cls._new(
            path=absolute,
            root=root,
            journal=journal,
            header=header,
            index=index,
            options=settings,
            recovered=recovered,
            unavailable=tuple(images.unavailable),
        )

    @classmethod
    async def read(
        cls,
        path: str | os.PathLike[str],
        options: SessionStoreOptions | dict[str, Any] | None = None,
    ) -> SessionStore:
        """A read-only snapshot of a session file as it is now, taking no lock (so it never
        waits for, or refuses, a writer). It ignores a torn last line without cutting it
        and writes nothing; its appends and ``flush`` raise ``SESSION_CLOSED``. The loading
        rules and codes are ``load``'s."""
        absolute = _session_path(path)
        settings = _snapshot_options(options)
        limits = settings.limits

        images = _ImageLoader(blob_directory_of(absolute))

        def work() -> tuple[_Root, SessionHeader, _Index]:
            root = _capture_root(os.path.dirname(absolute))
            header, index, _ = _parse(_read_snapshot(absolute, limits), limits, images)
            return root, header, index

        root, header, index = await asyncio.to_thread(work)
        return cls._new(
            path=absolute,
            root=root,
            journal=None,
            header=header,
            index=index,
            options=settings,
            unavailable=tuple(images.unavailable),
        )

    @staticmethod
    def canonical_path_of(store: SessionStore) -> str:
        """The file's canonical key: the parent's real path joined with the file name
        (lower-cased on Windows). Two stores on one file have the same key."""
        if not isinstance(cast(object, store), SessionStore):
            raise TypeError("Expected a SessionStore")
        return store._key

    # -- closing -----------------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        """Whether this store no longer writes (closed, or a ``read`` snapshot)."""
        return self._journal is None

    async def close(self) -> None:
        """Let the file go (release its lock) once the append in progress, if any, is done.
        Idempotent; reading the store's records still works afterwards."""
        async with self._queue:
            journal = self._journal
            if journal is None:
                return
            self._journal = None
            finalizer = self._finalizer
            if finalizer is not None:  # pragma: no branch - made with the journal
                finalizer.detach()
            journal.close()

    async def __aenter__(self) -> SessionStore:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()

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
    def recovered(self) -> SessionRecovery | None:
        """What ``load`` repaired: the torn last line it cut off, or ``None``."""
        return self._recovered

    @property
    def blob_directory(self) -> str:
        """Where this session's images are stored: ``<path>.blobs`` (see
        ``tether.agent.session.blobs``; made at the first image)."""
        return blob_directory_of(self._path)

    @property
    def unavailable_images(self) -> tuple[UnavailableImage, ...]:
        """The images the file references that ``load`` or ``read`` could not load (a blob
        missing or corrupt): each left a marker in its message's text instead."""
        return self._unavailable

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
        """Append a message under ``parent_id`` (``None``: a new root); returns once its
        line is on disk.

        ``message`` is a protocol message (an exact ``UserMessage``, ``AssistantMessage`` or
        ``ToolResultMessage``) or its JSON form as an exact ``dict`` of plain JSON values; it
        is checked and snapshotted before the call waits its turn (``SESSION_PARENT_NOT_FOUND``
        for a blank parent ID, ``SESSION_INVALID_MESSAGE``). Then, in turn: the record limit,
        the parent, a fresh ID (``SESSION_INVALID_RECORD`` if blank,
        ``SESSION_DUPLICATE_ENTRY_ID`` if used), a timestamp, the branch's tool linkage, the
        file limit, and the write: the file's and its directory's identity
        (``SESSION_FILE_CHANGED``, ``SESSION_ROOT_CHANGED``), the line, one fsync. The ID
        factory and clock are consumed even when the write then fails.
        """
        (entry,) = await self.append_many(parent_id, (message,))
        return entry

    async def append_many(
        self,
        parent_id: str | None,
        messages: Sequence[Message | dict[str, Any]],
        *,
        on_commit: Callable[[tuple[MessageEntry, ...]], None] | None = None,
    ) -> tuple[MessageEntry, ...]:
        """Append ``messages`` as a chain under ``parent_id`` (each the parent of the next)
        with one write and one fsync: all of them, or none. The checks are ``append``'s.

        ``on_commit(entries)`` runs once they are on disk and in ``entries``, even if the
        awaiting task was cancelled meanwhile (the write cannot be taken back; the
        cancellation is raised afterwards), so a caller keeping its own view of the tree
        (``SessionTree``'s leaf) never misses an entry.
        """
        if parent_id is not None and not is_non_empty(parent_id):
            raise _fail("SESSION_PARENT_NOT_FOUND", "Parent ID must be a non-empty string")
        snapshots = [_snapshot_message(message) for message in messages]
        if not snapshots:
            return ()

        def stage() -> _Staged:
            self._check_room(parent_id, len(snapshots))
            chain: list[MessageEntry] = []
            lines: list[bytes] = []
            blobs: list[tuple[str, bytes]] = []
            previous = parent_id
            fresh: set[str] = set()
            for snapshot, body, images in snapshots:
                blobs.extend(images)
                entry_id, timestamp = self._fresh_id_and_time(fresh)
                entry = MessageEntry(
                    id=entry_id, parent_id=previous, timestamp=timestamp, message=snapshot
                )
                lines.append(_check_line(_entry_line(entry, body), self._limits))
                chain.append(entry)
                previous = entry_id
            links = self._index.check_chain(parent_id, chain)
            return cast("list[SessionEntry]", chain), b"".join(lines), links, blobs

        def committed(records: tuple[SessionEntry, ...]) -> None:
            if on_commit is not None:
                on_commit(cast("tuple[MessageEntry, ...]", records))

        return cast("tuple[MessageEntry, ...]", await self._commit(stage, committed))

    async def append_compaction(
        self,
        parent_id: str | None,
        *,
        summary_id: str,
        summary: str,
        first_kept_entry_id: str | None,
        units_before: int,
        units_after: int,
        on_commit: Callable[[CompactionEntry], None] | None = None,
    ) -> CompactionEntry:
        """Append a compaction record under ``parent_id`` (as ``append``; ``on_commit`` as
        ``append_many``'s, with the record).

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

        def stage() -> _Staged:
            self._check_room(parent_id, 1)
            entry_id, timestamp = self._fresh_id_and_time(set())
            entry = CompactionEntry(
                id=entry_id,
                parent_id=parent_id,
                timestamp=timestamp,
                summary=content,
                first_kept_entry_id=first_kept_entry_id,
                units_before=units_before,
                units_after=units_after,
            )
            line = _check_line(_entry_line(entry), self._limits)
            return [entry], line, self._index.check(entry, "SESSION_ENTRY_NOT_FOUND"), []

        def committed(records: tuple[SessionEntry, ...]) -> None:
            if on_commit is not None:
                on_commit(cast(CompactionEntry, records[0]))

        (entry,) = await self._commit(stage, committed)
        return cast(CompactionEntry, entry)

    async def flush(self) -> None:
        """Wait until every append started before this call is on disk, and check the file
        is still this store's (``SESSION_FILE_CHANGED``, ``SESSION_ROOT_CHANGED``). Appends
        are durable when they return, so there is nothing else to write."""
        async with self._queue:
            journal = self._writable()
            future = asyncio.get_running_loop().run_in_executor(None, journal.check)
            cancelled = await _wait_out(future)
            if cancelled:
                raise asyncio.CancelledError
            future.result()

    # -- the write path ---------------------------------------------------------------------

    def _writable(self) -> _Journal:
        if self._unusable is not None:
            raise self._unusable
        journal = self._journal
        if journal is None:
            raise _fail("SESSION_CLOSED", f"Session store of {self._path} is closed (read-only)")
        return journal

    def _check_room(self, parent_id: str | None, count: int) -> None:
        index = self._index
        if len(index.entries) + count > self._limits.max_records:
            raise _fail("SESSION_RECORD_LIMIT", "Session record limit reached")
        if parent_id is not None and parent_id not in index.by_id:
            raise _fail(
                "SESSION_PARENT_NOT_FOUND", f'Parent entry "{_short(parent_id)}" does not exist'
            )

    def _fresh_id_and_time(self, fresh: set[str]) -> tuple[str, str]:
        entry_id = self._id_factory()
        if not is_non_empty(entry_id):
            raise _fail("SESSION_INVALID_RECORD", "Entry ID must be a non-empty string")
        if entry_id in self._index.by_id or entry_id in fresh:
            raise _fail(
                "SESSION_DUPLICATE_ENTRY_ID", f'Entry ID "{_short(entry_id)}" already exists'
            )
        fresh.add(entry_id)
        timestamp = self._clock()
        if not is_non_empty(timestamp):
            raise _fail("SESSION_INVALID_RECORD", "Entry timestamp must be a non-empty string")
        return entry_id, timestamp

    async def _commit(
        self,
        stage: Callable[[], _Staged],
        on_commit: Callable[[tuple[SessionEntry, ...]], None],
    ) -> tuple[SessionEntry, ...]:
        """In turn: stage the records (checks, IDs, lines; nothing changes), write them on
        a worker thread, and only once they are on disk adopt them (and ``on_commit``)."""
        async with self._queue:
            journal = self._writable()
            records, data, links, blobs = stage()
            newline = 0 if journal.ends_line else 1
            if journal.size + newline + len(data) > self._limits.max_file_bytes:
                raise _fail("SESSION_FILE_TOO_LARGE", "Serialized session exceeds the file limit")

            def write() -> None:
                if blobs:  # durable before the line that references them
                    journal.check()
                    _write_blobs(blob_directory_of(self._path), blobs)
                journal.append(data)

            future = asyncio.get_running_loop().run_in_executor(None, write)
            cancelled = await _wait_out(future)
            error = future.exception()
            adopted = tuple(records)
            if error is None:
                index = self._index
                for record in records:
                    index.add(record, links)
                on_commit(adopted)
            elif isinstance(error, SessionStoreError) and error.code == "SESSION_WRITE_FAILED":
                self._unusable = error
            if cancelled:
                raise asyncio.CancelledError
            if error is not None:
                raise error
            return adopted
