"""An Agent whose conversation lives in a session file: record as it goes, resume later.

``SessionRecorder(tree)`` is the ``TranscriptRecorder`` that appends every message entering
an Agent's transcript to a ``SessionTree`` (the messages of one call, a turn's, with one write
and one fsync, see ``tether.agent.session``), and every automatic compaction as a compaction
entry whose
``first_kept_entry_id`` names the first retained message's entry. So the session's active
context (``SessionTree.active_context()``) is always what the Agent's model saw.

``resume_agent(tree, model=..., ...)`` builds an Agent from the active branch: the summary of
its last compaction (if any) and the messages after it, recording into the same tree. A branch
that ends with tool calls without results (the process died between a call and its result)
gets an ``is_error`` ``TOOL_CALL_NOT_RUN`` result for each, recorded first, so the Agent starts
from a valid transcript. To branch, ``await tree.move_to(entry_id)`` before resuming.

A caller that must not write yet (a runtime built to replace another on the same file, which
may still be discarded) passes its own ``recorder=SessionRecorder(tree)``: the closing results
are then *held* by it (``recorder.pending``) instead of written; ``record_pending()`` writes
them, and so does the recorder's next call (the Agent's first write of a run, or a
compaction), before anything else.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

from tether._base.exact_types import instance_of
from tether.agent.agent import Agent, unanswered_call_results
from tether.agent.compaction import ContextCompactionRecord, ContextSummary
from tether.agent.session import MessageEntry, SessionContext, SessionStoreError, SessionTree
from tether.protocol import Message

__all__ = ["SessionRecorder", "resume_agent", "session_summary"]


class SessionRecorder:
    """Appends an Agent's transcript to ``tree`` as it grows (a ``TranscriptRecorder``).

    ``last_error`` keeps why the latest write failed (the store's error, or the operating
    system's), so whoever sees the Agent's ``AGENT_RECORDING_FAILED`` can reach it;
    ``close()`` refuses every later write (``SESSION_CLOSED``): a runtime closes its Agent's
    recorder when it is disposed.
    """

    __slots__ = ("_closed", "_entries", "_last_error", "_lock", "_mine", "_pending", "_tree")

    def __init__(self, tree: SessionTree) -> None:
        if not instance_of(tree, SessionTree):
            raise TypeError("SessionRecorder needs a SessionTree")
        self._tree = tree
        # Message ID -> entry ID on the branch, for a compaction's first kept entry.
        self._entries: dict[str, str] = {
            entry.message.id: entry.id
            for entry in tree.active_entries
            if type(entry) is MessageEntry
        }
        self._mine: dict[str, str] = {}  # what this recorder wrote: the only thing it skips
        self._pending: list[Message] = []  # held, written before anything else
        self._lock = asyncio.Lock()  # one write at a time (record_pending may race a run)
        self._last_error: BaseException | None = None
        self._closed = False

    @property
    def tree(self) -> SessionTree:
        """The session tree written to."""
        return self._tree

    @property
    def pending(self) -> tuple[Message, ...]:
        """Messages held back (``resume_agent``'s closing results), not written yet."""
        return tuple(self._pending)

    @property
    def last_error(self) -> BaseException | None:
        """Why the latest write failed (``None`` once one succeeds again)."""
        return self._last_error

    @property
    def closed(self) -> bool:
        """Whether ``close()`` was called."""
        return self._closed

    def close(self) -> None:
        """Refuse every later write with ``SESSION_CLOSED`` (a write in progress finishes)."""
        self._closed = True

    def hold(self, messages: tuple[Message, ...]) -> None:
        """Hold ``messages`` (already in the Agent's transcript) until the next write."""
        self._pending.extend(messages)

    async def record_pending(self) -> None:
        """Write the held messages now (they leave ``pending`` once written)."""
        async with self._lock:
            await self._write(())

    async def record_messages(self, messages: tuple[Message, ...]) -> None:
        """Append the held messages, then ``messages``, under the active leaf in order, with
        one write; skipping any this recorder already wrote (so an Agent can retry after a
        failure without duplicates)."""
        async with self._lock:
            await self._write(messages)

    async def _write(self, messages: tuple[Message, ...]) -> None:
        held = len(self._pending)
        batch = [message for message in (*self._pending, *messages) if not self._written(message)]
        if not batch:
            del self._pending[:held]
            return

        def committed(entries: tuple[MessageEntry, ...]) -> None:
            for entry in entries:
                self._entries[entry.message.id] = entry.id
                self._mine[entry.message.id] = entry.id
            del self._pending[:held]

        await self._guarded(self._tree.append_many(batch, on_commit=committed))

    async def _guarded(self, write: Coroutine[Any, Any, object]) -> None:
        """Run ``write`` unless closed, keeping its failure in ``last_error``."""
        if self._closed:
            write.close()
            self._last_error = _closed()
            raise self._last_error
        try:
            await write
        except Exception as error:
            self._last_error = error
            raise
        self._last_error = None

    def _written(self, message: Message) -> bool:
        """Whether this recorder already wrote ``message`` (an Agent retrying a write)."""
        entry_id = self._mine.get(message.id)
        if entry_id is None:
            return False
        entry = self._tree.store.get(entry_id)
        return type(entry) is MessageEntry and entry.message == message

    async def record_compaction(
        self,
        summary: ContextSummary,
        kept: tuple[Message, ...],
        record: ContextCompactionRecord,
    ) -> None:
        """Append a compaction entry: ``summary`` stands for what precedes ``kept[0]`` (held
        messages are written first)."""
        async with self._lock:
            await self._write(())
            first = self._entries.get(kept[0].id) if kept else None
            await self._guarded(
                self._tree.append_compaction(
                    summary_id=summary.id,
                    summary=summary.content,
                    first_kept_entry_id=first,
                    units_before=record.units_before,
                    units_after=record.units_after,
                )
            )


def _closed() -> SessionStoreError:
    return SessionStoreError(
        "SESSION_CLOSED", "Session recorder is closed (its runtime was disposed)"
    )


async def resume_agent(
    tree: SessionTree, *, recorder: SessionRecorder | None = None, **options: Any
) -> Agent:
    """An Agent over ``tree``'s active context that records into ``tree``.

    ``options`` are the Agent's (``model`` is required; ``messages``, ``summary`` and
    ``history`` come from the tree). Unanswered tool calls at the end of the branch are
    closed first: recorded now, or, with a ``recorder`` of the caller's (a
    ``SessionRecorder`` over ``tree``), held by it (see the module docstring).
    """
    for name in ("messages", "summary", "history"):
        if name in options:
            raise TypeError(f"resume_agent() takes {name} from the session")
    hold = recorder is not None
    if recorder is None:
        recorder = SessionRecorder(tree)
    elif type(recorder) is not SessionRecorder or recorder.tree is not tree:
        raise TypeError("resume_agent() recorder must be a SessionRecorder over this tree")
    context = tree.active_context()
    messages = list(context.messages)
    closing = unanswered_call_results(messages, "The session ended before this tool call ran")
    if closing:
        if hold:
            recorder.hold(tuple(closing))
        else:
            await recorder.record_messages(tuple(closing))
        messages.extend(closing)
    return Agent(
        messages=messages,
        summary=session_summary(context),
        recorder=recorder,
        history=tree.active_messages,
        **options,
    )


def session_summary(context: SessionContext) -> ContextSummary | None:
    """The summary of a session context's last compaction as the Agent takes it (``None``
    when the context was never compacted)."""
    summary = context.summary
    return None if summary is None else ContextSummary(id=summary.id, content=summary.content)
