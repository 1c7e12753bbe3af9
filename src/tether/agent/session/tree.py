"""``SessionTree``: a branch pointer over a ``SessionStore`` (the active leaf), with its own
serialized ``move_to`` and appends."""

# The package's modules share their underscore helpers with one another.
# pyright: reportPrivateUsage=false

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any, cast

from tether.agent.session.records import (
    CompactionEntry,
    MessageEntry,
    SessionContext,
    SessionEntry,
    _fail,
    _short,
)
from tether.agent.session.store import SessionStore
from tether.protocol import Message

__all__ = ["SessionTree"]


class SessionTree:
    """A branch pointer over a ``SessionStore``: the active leaf and the branch it ends.

    ``move_to`` and the appends run one at a time in the order they start, on the tree's own
    lock; a failed one does not block later ones. ``move_to`` checks membership when it runs,
    so it may name a record an earlier queued append created. The leaf advances only once
    the entries are on disk (and then even if the appending task was cancelled meanwhile).
    A new tree starts at the store's last record (``None`` when empty). Several trees may
    share one store (each with its own leaf); ``close()`` ends this one's writing only.
    """

    __slots__ = ("_closed", "_leaf", "_queue", "_store")

    def __init__(self, store: SessionStore) -> None:
        if not isinstance(cast(object, store), SessionStore):
            raise TypeError("SessionTree needs a SessionStore")
        self._store = store
        entries = store.entries
        self._leaf: str | None = entries[-1].id if entries else None
        self._queue = asyncio.Lock()
        self._closed = False

    @property
    def store(self) -> SessionStore:
        """The store this tree reads and appends to."""
        return self._store

    @property
    def active_leaf_id(self) -> str | None:
        """The active leaf's ID (``None``: the next append makes a new root)."""
        return self._leaf

    @property
    def entries(self) -> tuple[SessionEntry, ...]:
        """Every record of the store, in file order (inactive branches included)."""
        return self._store.entries

    @property
    def active_entries(self) -> tuple[SessionEntry, ...]:
        """The records from a root to the active leaf, root first."""
        return self._store.branch(self._leaf)

    @property
    def active_messages(self) -> tuple[Message, ...]:
        """The messages of the active branch, in order (compaction records skipped)."""
        return tuple(entry.message for entry in self.active_entries if type(entry) is MessageEntry)

    def active_context(self) -> SessionContext:
        """What a model should see for the active branch (see the package docstring)."""
        return self._store.context(self._leaf)

    @property
    def closed(self) -> bool:
        """Whether ``close()`` was called: the tree still reads, but no longer writes."""
        return self._closed

    def close(self) -> None:
        """Refuse every later ``move_to`` and append of this tree (``SESSION_CLOSED``); an
        append already writing finishes. The store stays open (other trees may use it).
        A runtime closes its tree when it is disposed, so an Agent that outlives it cannot
        write into the session any more."""
        self._closed = True

    def _check_open(self) -> None:
        if self._closed:
            raise _fail("SESSION_CLOSED", "Session tree is closed (its runtime was disposed)")

    async def move_to(self, entry_id: str | None) -> None:
        """Make ``entry_id`` the active leaf (``None``: no branch). Writes nothing.

        ``SESSION_ENTRY_NOT_FOUND`` for an unknown ID (checked when the call runs).
        """
        async with self._queue:
            self._check_open()
            if entry_id is not None and self._store.get(entry_id) is None:
                raise _fail(
                    "SESSION_ENTRY_NOT_FOUND",
                    f'Session entry "{_short(str(entry_id))}" does not exist',
                )
            self._leaf = entry_id

    async def append(self, message: Message | dict[str, Any]) -> MessageEntry:
        """Append a message under the active leaf, then make it the leaf."""
        (entry,) = await self.append_many((message,))
        return entry

    async def append_many(
        self,
        messages: Sequence[Message | dict[str, Any]],
        *,
        on_commit: Callable[[tuple[MessageEntry, ...]], None] | None = None,
    ) -> tuple[MessageEntry, ...]:
        """Append ``messages`` as a chain under the active leaf with one write and one fsync
        (``SessionStore.append_many``, ``on_commit`` as there), then make the last one the
        leaf."""

        def advance(entries: tuple[MessageEntry, ...]) -> None:
            self._moved(entries[-1])
            if on_commit is not None:
                on_commit(entries)

        async with self._queue:
            self._check_open()
            return await self._store.append_many(self._leaf, messages, on_commit=advance)

    async def append_compaction(
        self,
        *,
        summary_id: str,
        summary: str,
        first_kept_entry_id: str | None,
        units_before: int,
        units_after: int,
    ) -> CompactionEntry:
        """Append a compaction record under the active leaf, then make it the leaf."""
        async with self._queue:
            self._check_open()
            return await self._store.append_compaction(
                self._leaf,
                summary_id=summary_id,
                summary=summary,
                first_kept_entry_id=first_kept_entry_id,
                units_before=units_before,
                units_after=units_after,
                on_commit=self._moved,
            )

    def _moved(self, entry: SessionEntry) -> None:
        self._leaf = entry.id
