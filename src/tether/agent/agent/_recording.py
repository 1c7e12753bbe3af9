"""Where an Agent writes what enters its transcript (a session), and the messages a failed
write left behind."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Generator, Sequence
from typing import Protocol, runtime_checkable

from tether._async.race import reraise_task_cancellation
from tether.agent.agent._errors import AgentRecordingError
from tether.agent.compaction import ContextCompactionRecord, ContextSummary
from tether.protocol import Message

__all__ = ["Recording", "TranscriptRecorder"]


@runtime_checkable
class TranscriptRecorder(Protocol):
    """Where an Agent writes what enters its transcript, as it enters (a session).

    The Agent awaits each call on its run's task before going on, so a recorded transcript
    is never behind by more than the message being written. A recorder that raises ends the
    run ``failed`` with ``AGENT_RECORDING_FAILED`` (the message says why); the Agent keeps
    its state. A cancelled turn is never recorded (it is never adopted), unless the Agent
    keeps interrupted turns (``interrupted_turns="keep"``): then what it adopted is recorded.
    """

    async def record_messages(self, messages: tuple[Message, ...]) -> None:
        """Messages appended to the transcript, in order."""
        ...

    async def record_compaction(
        self,
        summary: ContextSummary,
        kept: tuple[Message, ...],
        record: ContextCompactionRecord,
    ) -> None:
        """The context was compacted: ``summary`` now stands for everything before ``kept``
        (the retained messages, already recorded), as ``record`` describes."""
        ...


class Recording:
    """An Agent's recorder (``None``: nowhere) and the messages it has not written yet."""

    __slots__ = ("recorder", "unrecorded")

    def __init__(self, recorder: TranscriptRecorder | None) -> None:
        self.recorder = recorder
        self.unrecorded: list[Message] = []

    async def persist(self, messages: Sequence[Message]) -> None:
        """Hand messages that entered the transcript to the recorder (a session).

        Messages a failed call did not get written stay pending and go first next time, so
        a recorder that recovers (a disk that had filled up) catches up in order; the
        recorder must skip messages it already wrote (``SessionRecorder`` does).
        """
        recorder = self.recorder
        if recorder is None:
            return
        pending = self.unrecorded
        pending.extend(messages)
        if not pending:
            return
        with _recorder_failures():
            await recorder.record_messages(tuple(pending))
        pending.clear()

    async def record_compaction(
        self,
        summary: ContextSummary,
        kept: tuple[Message, ...],
        record: ContextCompactionRecord,
    ) -> None:
        """Record a compaction, after the messages a failed write left behind; raises
        ``AgentRecordingError``. Nothing happens without a recorder."""
        recorder = self.recorder
        if recorder is None:
            return
        # The session first: what it holds must always be what the model sees, so the
        # Agent takes the compacted context only once the session recorded it.
        with _recorder_failures():
            await self.persist(())  # messages a failed write left behind come first
            await recorder.record_compaction(summary, kept, record)


@contextlib.contextmanager
def _recorder_failures() -> Generator[None]:
    """What the recorder raises in the block, as ``AgentRecordingError`` (from it); a
    ``CancelledError`` too, unless the run's task itself is being cancelled: that one passes."""
    try:
        yield
    except asyncio.CancelledError as error:
        reraise_task_cancellation(error)
        raise AgentRecordingError(error) from error
    except Exception as error:
        raise AgentRecordingError(error) from error
