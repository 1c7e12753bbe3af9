"""``compact_context``: replace an old prefix of the transcript with a summary, failing
closed (the steps are in the package docstring), and what it returns."""

from __future__ import annotations

from typing import Literal, TypeAlias

from tether._base.dataclass import dataclass
from tether._base.exact_types import exactly
from tether._base.strings import is_non_empty
from tether.abort import AbortController
from tether.agent.compaction._boundaries import select_boundary
from tether.agent.compaction._context import ActiveContext, ActiveContextInput
from tether.agent.compaction._errors import fail
from tether.agent.compaction._options import (
    CompactContextOptions,
    check_compact_options,
    context_for,
)
from tether.agent.compaction._records import ContextCompactionRecord, ContextSummary
from tether.agent.compaction._snapshot import check_transcript
from tether.agent.compaction._summarizer import ContextSummaryRequest, check_cancelled, summarize
from tether.agent.compaction._units import context_units, cp


@dataclass(frozen=True, slots=True, kw_only=True)
class UnchangedCompaction:
    """The context was within ``max_units``: ``context`` is the very object given."""

    status: Literal["unchanged"] = "unchanged"
    context: ActiveContext
    record: None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactedCompaction:
    """A prefix was replaced by a summary; ``record`` is ``context.compactions[-1]``."""

    status: Literal["compacted"] = "compacted"
    context: ActiveContext
    record: ContextCompactionRecord


ContextCompactionResult: TypeAlias = UnchangedCompaction | CompactedCompaction
"""What ``compact_context`` returns; match on ``status`` with ``assert_never`` last."""


async def compact_context(
    context: ActiveContextInput, options: CompactContextOptions
) -> ContextCompactionResult:
    """Compact ``context`` if it exceeds ``options.max_units`` (see the package docstring).

    Returns ``UnchangedCompaction`` (the same context object, summarizer not called) or
    ``CompactedCompaction``; raises ``ContextCompactionError``. The summarizer is called at
    most once, with the caller's signal (or one that never aborts).

    The compaction runs with the context's limits: an ``ActiveContext``'s own, or for a
    ``dict`` the options' ``limits`` (it is built with them). The options are checked against
    those limits here, and the compacted context carries them.
    """
    built = context_for(context, options)
    if not exactly(options, CompactContextOptions):
        fail("CONTEXT_INVALID_INPUT", "Context compaction options must be CompactContextOptions")
    limits = built.limits
    check_compact_options(options, limits)
    max_string_units, max_async_depth = limits.max_string_units, limits.max_async_depth
    # a snapshot: the summarizer runs caller code, which must not change the rules mid-way
    max_units, target_units = options.max_units, options.target_units
    summary_max_units, retain = options.summary_max_units, options.retain_recent_messages
    summary_id, record_id = options.summary_id, options.record_id
    summarizer, given_signal = options.summarizer, options.signal
    units_before = context_units(built)
    if units_before <= max_units:
        return UnchangedCompaction(context=built)
    signal = given_signal if given_signal is not None else AbortController().signal
    check_cancelled(signal)
    if any(record.id == record_id for record in built.compactions):
        fail(
            "CONTEXT_INVALID_INPUT",
            f'Context compaction ID "{record_id}" is already present',
        )
    boundary = select_boundary(built, target_units, summary_max_units, retain)
    if boundary is None or boundary <= 0:
        fail(
            "CONTEXT_BOUNDARY_UNAVAILABLE",
            "No complete tool-round boundary can satisfy the context budget",
        )
    compacted = built.messages[:boundary]
    fixed = 5 + cp(summary_id)
    request = ContextSummaryRequest(
        requirements=built.requirements,
        previous_summary=built.summary,
        messages=compacted,
        boundary=boundary,
        max_summary_units=summary_max_units,
        max_content_code_points=max(0, summary_max_units - fixed),
    )
    content = await summarize(summarizer, request, signal, max_async_depth)
    check_cancelled(signal)

    if not exactly(content, str):
        fail("CONTEXT_SUMMARY_INVALID", "Context summarizer must return plain text (a str)")
    text = content
    size = cp(text)
    if size > max_string_units:
        fail("CONTEXT_LIMIT_EXCEEDED", f"Context summary exceeds {max_string_units} code points")
    if not is_non_empty(text):
        fail("CONTEXT_SUMMARY_INSUFFICIENT", "Context summary must contain non-whitespace text")
    if fixed + size > summary_max_units:
        fail(
            "CONTEXT_SUMMARY_INSUFFICIENT",
            f"Context summary exceeds its {summary_max_units}-unit budget",
        )
    summary = ContextSummary(id=summary_id, content=text)

    retained = built.messages[boundary:]
    check_transcript(retained)  # a safe boundary leaves a transcript that is valid alone
    prospective = ActiveContext(
        requirements=built.requirements,
        summary=summary,
        messages=retained,
        compactions=built.compactions,
        limits=limits,
    )
    units_after = context_units(prospective)
    if units_after > target_units:
        fail(
            "CONTEXT_SUMMARY_INSUFFICIENT",
            "The validated summary does not bring the context within its target budget",
        )
    record = ContextCompactionRecord(
        id=record_id,
        summary_id=summary_id,
        boundary=boundary,
        compacted_message_ids=tuple(message.id for message in compacted),
        units_before=units_before,
        units_after=units_after,
    )
    final = ActiveContext(
        requirements=prospective.requirements,
        summary=summary,
        messages=retained,
        compactions=(*built.compactions, record),
        limits=limits,
    )
    check_cancelled(signal)
    return CompactedCompaction(context=final, record=final.compactions[-1])
