"""An Agent's context compaction: its ``AutoCompaction`` policy, the summary the context starts
with, the compactions made so far, and what the last model usage says about the context."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable
from operator import attrgetter
from typing import Final, cast

from tether.abort import AbortSignal
from tether.agent.agent._recording import Recording
from tether.agent.agent._state import AgentState
from tether.agent.auto_compaction import (
    AutoCompaction,
    context_tokens,
    forced_options,
    summary_message,
)
from tether.agent.compaction import (
    MAX_CONTEXT_MESSAGES,
    ActiveContext,
    ContextCompactionError,
    ContextCompactionRecord,
    ContextLimits,
    ContextSummary,
    compact_context,
)
from tether.agent.summarizer import model_summarizer
from tether.models.base import ModelStream
from tether.protocol import ModelRequest, ModelUsage, UserMessage

__all__ = ["Compaction"]

_USAGE_FIELDS: Final = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
_usage_counts: Final = attrgetter(*_USAGE_FIELDS)


class _Bound:
    """A model made of a bound ``stream`` method (for the default summarizer)."""

    __slots__ = ("_open",)

    def __init__(self, open_stream: Callable[[ModelRequest, AbortSignal], object]) -> None:
        self._open = open_stream

    def stream(self, request: ModelRequest, signal: AbortSignal) -> ModelStream:
        """Open the bound model's stream."""
        # The model's own ``stream`` (an untyped callable): the summarizer's run checks
        # everything it reads of what it returns, as a run checks any model's stream.
        return cast(ModelStream, self._open(request, signal))


def _context_limits(cap: int) -> ContextLimits:
    """The compaction limits for a transcript cap: the workshop's when it fits them."""
    return ContextLimits() if cap <= MAX_CONTEXT_MESSAGES else ContextLimits.for_coding()


class Compaction:
    """The compaction state of an Agent and the compactions it makes on its transcript."""

    __slots__ = (
        "error",
        "last_usage",
        "policy",
        "recording",
        "records",
        "state",
        "summary",
        "usage_seen",
    )

    def __init__(
        self,
        state: AgentState,
        recording: Recording,
        policy: AutoCompaction | None,
        summary: ContextSummary | None,
    ) -> None:
        self.state = state
        self.recording = recording
        self.policy = policy
        self.summary = summary
        self.records: list[ContextCompactionRecord] = []
        self.error: ContextCompactionError | None = None
        self.last_usage: ModelUsage | None = None
        self.usage_seen = 0

    def note_usage(self, usage: ModelUsage, before: int) -> None:
        """A turn over the first ``before`` messages answered with ``usage``: when it reports
        tokens, they measure the transcript up to its answer."""
        if any(_usage_counts(usage)):  # one C call, not a generator per turn (issue 30)
            self.last_usage = usage  # covers the transcript up to its answer
            self.usage_seen = before + 1

    async def compact_if_due(
        self, policy: AutoCompaction, signal: AbortSignal
    ) -> UserMessage | None:
        """Compact before a turn when the context nears the window (see auto_compaction);
        returns the summary message that now starts the transcript, if it compacted. A
        failure is kept in ``error``; the turn goes ahead."""
        tokens = context_tokens(self.state.transcript, self.last_usage, self.usage_seen)
        if not policy.due(tokens):
            return None
        try:
            return await self.compact(policy, tokens, signal)
        except ContextCompactionError as error:
            if error.code != "CONTEXT_CANCELLED":
                self.error = error
            return None

    async def compact(
        self, policy: AutoCompaction, tokens: int | None, signal: AbortSignal
    ) -> UserMessage | None:
        """One compaction (``tokens`` of context now; ``None``: asked for, whatever the
        size); on success the transcript starts with the returned summary message and the
        compaction is recorded. Raises ``ContextCompactionError``."""
        state = self.state
        limits = _context_limits(state.cap)
        offset = 1 if self.summary is not None else 0
        context = ActiveContext(
            summary=self.summary,
            messages=tuple(state.transcript[offset:]),
            compactions=tuple(self.records),
            limits=limits,
        )
        summarizer = policy.summarizer or model_summarizer(_Bound(state.open_stream))
        summary_id = f"context-summary-{uuid.uuid4().hex[:12]}"
        record_id = f"compaction-{len(self.records) + 1:06d}"
        if tokens is None:
            chosen = forced_options(
                policy, context, summarizer=summarizer, summary_id=summary_id, record_id=record_id
            )
            if chosen is None:
                return None
        else:
            chosen = policy.options(
                context,
                tokens=tokens,
                summarizer=summarizer,
                summary_id=summary_id,
                record_id=record_id,
            )
        outcome = await compact_context(context, dataclasses.replace(chosen, signal=signal))
        if outcome.status == "unchanged":
            return None
        compacted = outcome.context
        summary = compacted.summary
        assert summary is not None  # a compacted context always has one
        await self.recording.record_compaction(summary, compacted.messages, outcome.record)
        message = summary_message(summary)
        self.summary = summary
        self.records.append(outcome.record)
        self.error = None
        state.transcript = [message, *compacted.messages]
        self.last_usage = None
        return message
