"""Branch-local tool linkage and contexts: what a branch's model sees, and whether its tool
results answer calls on that branch, kept per record in the ``_Index`` the parser and the
store extend."""

# The package's modules share their underscore helpers with one another.
# pyright: reportPrivateUsage=false, reportUnusedClass=false

from __future__ import annotations

from typing import Final, cast

from tether.agent.session.records import (
    CompactionEntry,
    MessageEntry,
    SessionContext,
    SessionEntry,
    SessionStoreError,
    SessionStoreErrorCode,
    _fail,
)
from tether.protocol import AssistantMessage, Message, ToolCall, ToolResultMessage
from tether.protocol.transcript import validate_transcript

__all__: list[str] = []


class _Links:
    """The tool calls (ID → name) and answered call IDs of one context.

    Extending a valid context by one message and asking ``problem`` gives the same verdict
    as ``validate_transcript`` over the whole context with ``MISSING_TOOL_RESULT`` ignored
    (the property tests check this), in time proportional to that one message.
    """

    __slots__ = ("answered", "calls")

    def __init__(self) -> None:
        self.calls: dict[str, str] = {}
        self.answered: set[str] = set()

    def problem(
        self,
        message: Message,
        calls: dict[str, str] | None = None,
        answered: set[str] | None = None,
    ) -> str | None:
        """The diagnostic code adding ``message`` would cause, or ``None``; ``calls`` and
        ``answered``: more of the context, not in these links yet (a batch's earlier
        messages)."""
        if type(message) is AssistantMessage:
            seen: set[str] = set()
            for block in message.content:
                if type(block) is ToolCall:
                    call_id = block.id
                    if (
                        call_id in self.calls
                        or call_id in seen
                        or (calls is not None and call_id in calls)
                    ):
                        return "DUPLICATE_TOOL_CALL_ID"
                    seen.add(call_id)
            return None
        if type(message) is ToolResultMessage:
            call_id = message.tool_call_id
            if call_id in self.answered or (answered is not None and call_id in answered):
                return "DUPLICATE_TOOL_RESULT"
            name = self.calls.get(call_id)
            if name is None and calls is not None:
                name = calls.get(call_id)
            if name is None:
                return "ORPHAN_TOOL_RESULT"
            if name != message.tool_name:
                return "TOOL_NAME_MISMATCH"
        return None

    def add(
        self,
        message: Message,
        calls: dict[str, str] | None = None,
        answered: set[str] | None = None,
    ) -> None:
        """Record ``message`` (which ``problem`` accepted), here or in ``calls`` and
        ``answered`` when they are given."""
        if calls is None or answered is None:
            calls, answered = self.calls, self.answered
        if type(message) is AssistantMessage:
            for block in message.content:
                if type(block) is ToolCall:
                    calls[block.id] = block.name
        elif type(message) is ToolResultMessage:
            answered.add(message.tool_call_id)


def _linkage_error(messages: list[Message], fallback: str) -> SessionStoreError:
    codes = [d.code for d in validate_transcript(messages) if d.code != "MISSING_TOOL_RESULT"]
    return _fail(
        "SESSION_INVALID_TOOL_LINKAGE",
        f"Session branch has invalid Tool linkage: {codes[0] if codes else fallback}",
    )


def _context_of(path: list[SessionEntry]) -> SessionContext:
    """The context of a branch (root first): see the package docstring."""
    last = None
    for position in range(len(path) - 1, -1, -1):
        if type(path[position]) is CompactionEntry:
            last = position
            break
    if last is None:
        messages = [entry.message for entry in path if type(entry) is MessageEntry]
        return SessionContext(summary=None, messages=tuple(messages))
    compaction = cast(CompactionEntry, path[last])
    start = last
    if compaction.first_kept_entry_id is not None:
        for position in range(last):
            if path[position].id == compaction.first_kept_entry_id:
                start = position
                break
    messages = [
        entry.message
        for entry in path[start:]
        if type(entry) is MessageEntry  # the compaction itself is skipped
    ]
    return SessionContext(
        summary=compaction.summary, messages=tuple(messages), compaction=compaction
    )


_CACHED_TIPS: Final = 16


class _Index:
    """Records in file order, by ID, and the tool linkage of recent branch tips.

    Appending under a cached tip (the usual case: the active leaf, or one of a few branches
    used in turn) costs time proportional to the new message. Appending anywhere else (a
    fork) rebuilds that branch's linkage once, in time proportional to its length, so a
    file with F forks loads in O(records + F x depth) instead of the workshop's
    O(records x depth).
    """

    __slots__ = ("by_id", "entries", "tips")

    def __init__(self) -> None:
        self.entries: list[SessionEntry] = []
        self.by_id: dict[str, SessionEntry] = {}
        self.tips: dict[str, _Links] = {}  # least recently extended first

    def path(self, leaf_id: str | None) -> list[SessionEntry]:
        """The records from a root to ``leaf_id`` (which must exist), root first."""
        path: list[SessionEntry] = []
        current = leaf_id
        while current is not None:
            entry = self.by_id[current]
            path.append(entry)
            current = entry.parent_id
        path.reverse()
        return path

    def _links_for(self, parent_id: str | None) -> _Links:
        if parent_id is None:
            return _Links()
        cached = self.tips.get(parent_id)
        if cached is not None:
            return cached
        links = _Links()
        for message in _context_of(self.path(parent_id)).messages:
            links.add(message)
        return links

    def check(self, entry: SessionEntry, missing_kept: SessionStoreErrorCode) -> _Links:
        """The linkage after adding ``entry`` (whose parent exists); raises
        ``SESSION_INVALID_TOOL_LINKAGE``, or ``missing_kept`` for a compaction whose first
        kept record is not on its branch. Nothing is changed."""
        if type(entry) is MessageEntry:
            links = self._links_for(entry.parent_id)
            code = links.problem(entry.message)
            if code is not None:
                context = list(_context_of(self.path(entry.parent_id)).messages)
                raise _linkage_error([*context, entry.message], code)
            return links
        compaction = cast(CompactionEntry, entry)
        path = self.path(compaction.parent_id)
        kept: list[Message] = []
        if compaction.first_kept_entry_id is not None:
            ids = [record.id for record in path]
            if compaction.first_kept_entry_id not in ids:
                raise _fail(
                    missing_kept,
                    f'First kept entry "{compaction.first_kept_entry_id}" is not on the '
                    "compaction's branch",
                )
            start = ids.index(compaction.first_kept_entry_id)
            kept = [record.message for record in path[start:] if type(record) is MessageEntry]
        links = _Links()
        for position, message in enumerate(kept):
            code = links.problem(message)
            if code is not None:
                raise _linkage_error(kept[: position + 1], code)
            links.add(message)
        return links

    def check_chain(self, parent_id: str | None, chain: list[MessageEntry]) -> _Links:
        """The linkage after adding ``chain`` under ``parent_id`` (each record the parent of
        the next, the first's parent existing), for ``add`` of each in turn; raises
        ``SESSION_INVALID_TOOL_LINKAGE``. Nothing is changed: the batch's own calls and
        results are checked against a small overlay, in time proportional to the batch."""
        links = self._links_for(parent_id)
        calls: dict[str, str] = {}
        answered: set[str] = set()
        for position, entry in enumerate(chain):
            code = links.problem(entry.message, calls, answered)
            if code is not None:
                context = list(_context_of(self.path(parent_id)).messages)
                earlier = [record.message for record in chain[:position]]
                raise _linkage_error([*context, *earlier, entry.message], code)
            links.add(entry.message, calls, answered)
        return links

    def extend(self, entry: SessionEntry, missing_kept: SessionStoreErrorCode) -> None:
        """``add(entry, check(entry, missing_kept))``, in one pass for the usual record: a
        message under no parent or under a cached tip (the parser's every chained line).

        That record's linkage is its parent's links, checked by ``problem`` and extended in
        place, which is what ``check`` returns and ``add`` adopts; written out here it costs
        one call instead of five (``check``, ``_links_for``, ``add`` and their look-ups), a
        few percent of loading a session. Any other record, and every failure, takes
        ``check`` and ``add`` themselves, so the errors are theirs. The property tests
        check it against them on random trees.
        """
        if type(entry) is MessageEntry:
            parent_id = entry.parent_id
            tips = self.tips
            links = _Links() if parent_id is None else tips.get(parent_id)
            message = entry.message
            if links is not None and links.problem(message) is None:
                links.add(message)
                self.entries.append(entry)
                self.by_id[entry.id] = entry
                if parent_id is not None:
                    del tips[parent_id]  # extended in place: the new record's linkage now
                tips[entry.id] = links
                if len(tips) > _CACHED_TIPS:
                    del tips[next(iter(tips))]
                return
        self.add(entry, self.check(entry, missing_kept))

    def add(self, entry: SessionEntry, links: _Links) -> None:
        """Adopt ``entry`` and the linkage ``check`` returned for it."""
        if type(entry) is MessageEntry:
            links.add(entry.message)
        self.entries.append(entry)
        self.by_id[entry.id] = entry
        tips = self.tips
        parent_id = entry.parent_id
        if parent_id is not None and tips.get(parent_id) is links:
            del tips[parent_id]  # extended in place: it is the new record's linkage now
        tips[entry.id] = links
        if len(tips) > _CACHED_TIPS:
            del tips[next(iter(tips))]
