"""``SessionStore``: one session file's state, its reads, and its write path: the exclusive
lock held for the store's lifetime, and appends of whole lines made durable on a worker
thread, one at a time (see the package docstring). Opening a file (``_opening``) and staging
an append (``_staging``) live beside it.

Those, the parser, the decoder, the blobs, the journal and the protocol load when a store is
first opened (``create``, ``load``, ``read``), not with this module: resolving
``tether.SessionStore`` loads none of them (issue 30: importing the usable API). A store's
other methods import the helpers they use too; by then each is a lookup in ``sys.modules``.
"""

# The package's modules share their underscore helpers with one another.
# pyright: reportPrivateUsage=false

from __future__ import annotations

import asyncio
import dataclasses
import os
import weakref
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from tether.agent.session._opening import _Opened
    from tether.agent.session._staging import _Staged
    from tether.agent.session.blobs import UnavailableImage
    from tether.agent.session.journal import _Journal
    from tether.agent.session.linkage import _Index
    from tether.agent.session.records import (
        CompactionEntry,
        MessageEntry,
        SessionContext,
        SessionEntry,
        SessionHeader,
        SessionLimits,
        SessionRecovery,
        SessionStoreError,
    )
    from tether.agent.session.store_options import SessionStoreOptions
    from tether.protocol import Message

__all__ = ["SessionStore", "SessionStoreOptions"]


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
        "_finalizer",
        "_header",
        "_index",
        "_journal",
        "_key",
        "_options",
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
    _options: SessionStoreOptions
    _recovered: SessionRecovery | None
    _unavailable: tuple[UnavailableImage, ...]
    _unusable: SessionStoreError | None
    _queue: asyncio.Lock

    def __init__(self) -> None:
        raise TypeError("use SessionStore.create(), SessionStore.create_in(), load() or read()")

    @classmethod
    def _new(cls, path: str, opened: _Opened, options: SessionStoreOptions) -> SessionStore:
        from tether.agent.session.files import _canonical_key, _close_quietly

        store = object.__new__(cls)
        journal = opened.journal
        store._path = path
        store._key = _canonical_key(path, opened.root)
        store._journal = journal
        # A store dropped without close() still lets the file go when it is collected.
        store._finalizer = (
            None if journal is None else weakref.finalize(store, _close_quietly, journal.fd)
        )
        store._header = opened.header
        store._index = opened.index
        store._options = options
        store._recovered = opened.recovered
        store._unavailable = opened.unavailable
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
        from tether.agent.session._opening import _create_file, _new_header, _release
        from tether.agent.session.files import _session_path
        from tether.agent.session.off_loop import _off_loop
        from tether.agent.session.store_options import _snapshot_options

        absolute = _session_path(path)
        settings = _snapshot_options(options)
        header, data = _new_header(settings)
        opened = await _off_loop(lambda: _create_file(absolute, header, data), _release)
        return cls._new(absolute, opened, settings)

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
        from tether.agent.session._opening import _file_session_id
        from tether.agent.session.store_options import _snapshot_options

        settings = _snapshot_options(options)
        session_id = _file_session_id(settings)
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
        from tether.agent.session._opening import _load_file, _release
        from tether.agent.session.files import _session_path
        from tether.agent.session.off_loop import _off_loop
        from tether.agent.session.store_options import _snapshot_options

        absolute = _session_path(path)
        settings = _snapshot_options(options)
        opened = await _off_loop(lambda: _load_file(absolute, settings.limits), _release)
        return cls._new(absolute, opened, settings)

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
        from tether.agent.session._opening import _read_file
        from tether.agent.session.files import _session_path
        from tether.agent.session.store_options import _snapshot_options

        absolute = _session_path(path)
        settings = _snapshot_options(options)
        opened = await asyncio.to_thread(_read_file, absolute, settings.limits)
        return cls._new(absolute, opened, settings)

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
        return self._options.limits

    @property
    def recovered(self) -> SessionRecovery | None:
        """What ``load`` repaired: the torn last line it cut off, or ``None``."""
        return self._recovered

    @property
    def blob_directory(self) -> str:
        """Where this session's images are stored: ``<path>.blobs`` (see
        ``tether.agent.session.blobs``; made at the first image)."""
        from tether.agent.session.blobs import blob_directory_of

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
        from tether.agent.session.records import _fail, _short

        if leaf_id is not None and self.get(leaf_id) is None:
            raise _fail(
                "SESSION_ENTRY_NOT_FOUND", f'Session entry "{_short(str(leaf_id))}" does not exist'
            )
        return tuple(self._index.path(leaf_id))

    def context(self, leaf_id: str | None) -> SessionContext:
        """The context of the branch ending at ``leaf_id`` (see the package docstring)."""
        from tether.agent.session.linkage import _context_of

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
        from tether.agent.session._staging import _check_parent, _stage_messages
        from tether.agent.session.decoder import _snapshot_message

        _check_parent(parent_id)
        snapshots = [_snapshot_message(message) for message in messages]
        if not snapshots:
            return ()

        def stage() -> _Staged:
            return _stage_messages(self._index, self._options, parent_id, snapshots)

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
        from tether.agent.session._staging import (
            _check_parent,
            _compaction_summary,
            _stage_compaction,
        )

        _check_parent(parent_id)
        content = _compaction_summary(
            summary_id, summary, first_kept_entry_id, units_before, units_after
        )
        units = (units_before, units_after)

        def stage() -> _Staged:
            return _stage_compaction(
                self._index, self._options, parent_id, content, first_kept_entry_id, units
            )

        def committed(records: tuple[SessionEntry, ...]) -> None:
            if on_commit is not None:
                on_commit(cast("CompactionEntry", records[0]))

        (entry,) = await self._commit(stage, committed)
        return cast("CompactionEntry", entry)

    async def flush(self) -> None:
        """Wait until every append started before this call is on disk, and check the file
        is still this store's (``SESSION_FILE_CHANGED``, ``SESSION_ROOT_CHANGED``). Appends
        are durable when they return, so there is nothing else to write."""
        from tether._async.race import wait_out

        async with self._queue:
            journal = self._writable()
            future = asyncio.get_running_loop().run_in_executor(None, journal.check)
            cancelled = await wait_out(future)
            if cancelled:
                raise asyncio.CancelledError
            future.result()

    # -- the write path ---------------------------------------------------------------------

    def _writable(self) -> _Journal:
        from tether.agent.session.records import _fail

        if self._unusable is not None:
            raise self._unusable
        journal = self._journal
        if journal is None:
            raise _fail("SESSION_CLOSED", f"Session store of {self._path} is closed (read-only)")
        return journal

    async def _commit(
        self,
        stage: Callable[[], _Staged],
        on_commit: Callable[[tuple[SessionEntry, ...]], None],
    ) -> tuple[SessionEntry, ...]:
        """In turn: stage the records (checks, IDs, lines; nothing changes), write them on
        a worker thread, and only once they are on disk adopt them (and ``on_commit``)."""
        from tether._async.race import wait_out
        from tether.agent.session.blobs import _write_blobs, blob_directory_of
        from tether.agent.session.records import SessionStoreError, _fail

        async with self._queue:
            journal = self._writable()
            records, data, links, blobs = stage()
            newline = 0 if journal.ends_line else 1
            if journal.size + newline + len(data) > self._options.limits.max_file_bytes:
                raise _fail("SESSION_FILE_TOO_LARGE", "Serialized session exceeds the file limit")

            def write() -> None:
                if blobs:  # durable before the line that references them
                    journal.check()
                    _write_blobs(blob_directory_of(self._path), blobs)
                journal.append(data)

            future = asyncio.get_running_loop().run_in_executor(None, write)
            cancelled = await wait_out(future)
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


def __getattr__(name: str) -> object:
    """``SessionStoreOptions`` (``store_options``'s, re-exported) loads on first use."""
    if name == "SessionStoreOptions":
        from tether.agent.session.store_options import SessionStoreOptions

        return SessionStoreOptions
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
