"""Staging an append: the checks, fresh IDs, timestamps and canonical lines of the records
``SessionStore.append_many`` and ``append_compaction`` are about to write, and the linkage
after them. Nothing here changes the store or the file: the store writes what is staged and
adopts it only once it is on disk."""

# The package's modules share their underscore helpers with one another.
# pyright: reportPrivateUsage=false, reportUnusedFunction=false

from __future__ import annotations

from typing import cast

from tether._base.strings import is_non_empty
from tether.agent.session.format import _check_line, _entry_line
from tether.agent.session.linkage import _Index, _Links
from tether.agent.session.parse import _is_count
from tether.agent.session.records import (
    CompactionEntry,
    CompactionSummary,
    MessageEntry,
    SessionEntry,
    _fail,
    _short,
)
from tether.agent.session.store_options import SessionStoreOptions
from tether.protocol import Message

__all__: list[str] = []

_Staged = tuple[list[SessionEntry], bytes, _Links, list[tuple[str, bytes]]]
"""Records ready to append: the records, their lines, the linkage after them, and the image
blobs the lines reference (written first)."""

_Snapshot = tuple[Message, bytes, list[tuple[str, bytes]]]
"""A message checked for appending: the message, its line bytes and its images' blobs."""


def _check_parent(parent_id: str | None) -> None:
    """``SESSION_PARENT_NOT_FOUND`` for a parent ID that is neither ``None`` nor a non-blank
    string (checked before an append waits its turn)."""
    if parent_id is not None and not is_non_empty(parent_id):
        raise _fail("SESSION_PARENT_NOT_FOUND", "Parent ID must be a non-empty string")


def _check_room(
    index: _Index, options: SessionStoreOptions, parent: str | None, count: int
) -> None:
    """The record limit for ``count`` more records, then the parent's existence."""
    if len(index.entries) + count > options.limits.max_records:
        raise _fail("SESSION_RECORD_LIMIT", "Session record limit reached")
    if parent is not None and parent not in index.by_id:
        raise _fail("SESSION_PARENT_NOT_FOUND", f'Parent entry "{_short(parent)}" does not exist')


def _fresh_id_and_time(
    index: _Index, options: SessionStoreOptions, fresh: set[str]
) -> tuple[str, str]:
    """A new record's ID (from the factory: non-blank, unused here and in ``fresh``, which
    it joins) and timestamp (from the clock: non-blank)."""
    entry_id = options.id_factory()
    if not is_non_empty(entry_id):
        raise _fail("SESSION_INVALID_RECORD", "Entry ID must be a non-empty string")
    if entry_id in index.by_id or entry_id in fresh:
        raise _fail("SESSION_DUPLICATE_ENTRY_ID", f'Entry ID "{_short(entry_id)}" already exists')
    fresh.add(entry_id)
    timestamp = options.clock()
    if not is_non_empty(timestamp):
        raise _fail("SESSION_INVALID_RECORD", "Entry timestamp must be a non-empty string")
    return entry_id, timestamp


def _stage_messages(
    index: _Index, options: SessionStoreOptions, parent_id: str | None, snapshots: list[_Snapshot]
) -> _Staged:
    """The chain of message records under ``parent_id`` (each the parent of the next)."""
    _check_room(index, options, parent_id, len(snapshots))
    chain: list[MessageEntry] = []
    lines: list[bytes] = []
    blobs: list[tuple[str, bytes]] = []
    previous = parent_id
    fresh: set[str] = set()
    for snapshot, body, images in snapshots:
        blobs.extend(images)
        entry_id, timestamp = _fresh_id_and_time(index, options, fresh)
        entry = MessageEntry(id=entry_id, parent_id=previous, timestamp=timestamp, message=snapshot)
        lines.append(_check_line(_entry_line(entry, body), options.limits))
        chain.append(entry)
        previous = entry_id
    links = index.check_chain(parent_id, chain)
    return cast("list[SessionEntry]", chain), b"".join(lines), links, blobs


def _compaction_summary(
    summary_id: str,
    summary: str,
    first_kept_entry_id: str | None,
    units_before: int,
    units_after: int,
) -> CompactionSummary:
    """The summary of a compaction about to be appended, its arguments checked (before the
    append waits its turn)."""
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
    return CompactionSummary(id=summary_id, content=summary)


def _stage_compaction(
    index: _Index,
    options: SessionStoreOptions,
    parent_id: str | None,
    summary: CompactionSummary,
    first_kept_entry_id: str | None,
    units: tuple[int, int],
) -> _Staged:
    """The compaction record under ``parent_id`` (``units``: before and after)."""
    _check_room(index, options, parent_id, 1)
    entry_id, timestamp = _fresh_id_and_time(index, options, set())
    entry = CompactionEntry(
        id=entry_id,
        parent_id=parent_id,
        timestamp=timestamp,
        summary=summary,
        first_kept_entry_id=first_kept_entry_id,
        units_before=units[0],
        units_after=units[1],
    )
    line = _check_line(_entry_line(entry), options.limits)
    return [entry], line, index.check(entry, "SESSION_ENTRY_NOT_FOUND"), []
