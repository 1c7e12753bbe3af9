"""Checkpoint 11: context compaction at safe boundaries.

A long conversation outgrows any model's context. Compaction replaces an old prefix of the
transcript with a summary, without ever separating a tool call from its results and without
ever changing the old state when something fails. The rules:

* **An ``ActiveContext`` is valid by construction.** It holds ``requirements`` (instructions
  that always stay verbatim), an optional ``summary`` of compacted work, the transcript
  ``messages`` and the ``compactions`` records so far. Constructing one (directly, from a
  JSON-shaped ``dict`` with ``build_active_context``, or with ``dataclasses.replace``)
  validates and snapshots everything into tuples and frozen values; an invalid one raises
  ``ContextCompactionError``. ``build_active_context`` returns an ``ActiveContext`` it is
  given as it is (the same object; unless asked to check it under other limits).
* **Hostile input is bounded.** Only exact ``dict``/``list``/``tuple``/``str`` and tether's own
  classes are read (a subclass is ``CONTEXT_INVALID_INPUT``; inside ``messages``
  ``CONTEXT_INVALID_TRANSCRIPT``). Budgets over the whole input (the workshop's, each a
  ``ContextLimits`` field): 16,384 collection items (array lengths plus tool-argument keys),
  65,536 code points per string, 1,000,000 string code points in total (counted as they are
  read, so later items are never inspected), tool arguments nested at most 32 deep (the
  arguments object is depth 0), 128 requirements, 4,096 messages, 256 records, 1,000,000
  context units: ``CONTEXT_LIMIT_EXCEEDED``. Every problem in a message is
  ``CONTEXT_INVALID_TRANSCRIPT`` (linkage included, by ``validate_transcript``), a blank
  summary ``CONTEXT_SUMMARY_INVALID``, anything else ``CONTEXT_INVALID_INPUT``.
* **Limits travel with the context** (tether's extension: the workshop has constants).
  ``ActiveContext.limits`` (a ``ContextLimits``, the workshop's values by default) are what
  it is checked against; ``dataclasses.replace`` keeps them and ``compact_context`` gives
  them to the compacted context. ``build_active_context``, the estimators and
  ``group_tool_rounds`` take ``limits=`` for a ``dict`` or a bare transcript.
  ``ContextLimits.for_coding()`` is the profile real coding sessions need (the workshop's
  reject a single 100 KB tool result). The rule for the option bounds that depend on a limit
  (``target_units`` and ``max_units`` within the total units, ``retain_recent_messages``
  within the messages, the IDs within a string's code points): they must hold under the
  limits the operation runs with, which are the context's (for a ``dict``: the options'
  ``limits``, which it is built with). Options are checked against their own ``limits``
  (the workshop's by default) when built, and against the context's when used.
* **Units are deterministic.** ``cp(s)`` counts code points as the workshop does (a surrogate
  pair written as two code points counts one). Requirement ``3 + cp(id) + cp(content)``;
  summary ``5 + cp(id) + cp(content)``; user message ``4 + cp(id) + cp(content)``; assistant
  message ``4 + cp(id)`` plus per block: text ``2 + cp(text)``, thinking (protocol v2) counted
  like text ``2 + cp(text)``, tool call ``6 + cp(id) + cp(name) + json(arguments)``; tool
  result ``6 + cp(id) + cp(toolCallId) + cp(toolName) + cp(content) + 1``. ``json``: null 1,
  string ``1 + cp``, number ``1 + len(JavaScript String(n))``, true 5, false 6, array
  ``2 + sum(1 + json(item))``, object ``2 + sum(1 + cp(key) + json(value))``. An image of a
  user message or tool result (protocol v2) adds ``4 * min(ceil(width * height / 750), 1600)``:
  Anthropic's token estimate of an image, four units a token. Records are not
  counted. ``estimate_tokens`` is the rough real-model figure: ``ceil(units / 4)``.
* **Boundaries never split a tool round.** ``group_tool_rounds`` makes each assistant message
  with tool calls, together with everything up to its last result (overlapping rounds merged),
  one group; every other message is its own group. ``select_compaction_boundary`` returns the
  end of the first group after which requirements + ``summary_max_units`` + the retained
  messages fit ``target_units``, keeping at least ``retain_recent_messages``; else ``None``.
* **``compact_context`` fails closed.** Below ``max_units`` it returns the same context
  (``unchanged``) without calling the summarizer. Otherwise it checks cancellation, picks a
  boundary (``CONTEXT_BOUNDARY_UNAVAILABLE``), calls the summarizer once and awaits what it
  returns while racing the signal, adopting nested awaitables up to 64 levels
  (``max_async_depth``); checks the summary (``CONTEXT_SUMMARY_INVALID`` /
  ``CONTEXT_LIMIT_EXCEEDED`` / ``CONTEXT_SUMMARY_INSUFFICIENT``) and the retained suffix,
  appends one record and checks cancellation a last time. Any summarizer failure is
  ``CONTEXT_SUMMARIZER_FAILED`` (its own ``ContextCompactionError`` included: it cannot forge
  a code); an abort observed at any point is ``CONTEXT_CANCELLED``. On failure nothing
  changes: contexts are immutable.

Cancellation follows the runtime's rules: abandoned summarizer work is cancelled (as
``asyncio.wait_for`` would), its late failure is consumed, and a ``CancelledError`` of the
task running ``compact_context`` propagates unchanged.

The package's modules, one job each: ``_errors`` (the error and its codes), ``_limits`` (the
bounds), ``_records`` (requirements, summaries, compaction records), ``_units`` (the unit
weights), ``_snapshot`` (reading untrusted input within the budgets), ``_context``
(``ActiveContext`` and building one), ``_estimate`` (the size estimates), ``_options`` (the
options and their budget checks), ``_summarizer`` (calling the summarizer under the abort
signal), ``_boundaries`` (tool rounds and the boundary choice) and ``_compact``
(``compact_context``).
"""

from __future__ import annotations

from tether.agent.compaction._boundaries import (
    ContextToolGroup,
    group_tool_rounds,
    select_compaction_boundary,
)
from tether.agent.compaction._compact import (
    CompactedCompaction,
    ContextCompactionResult,
    UnchangedCompaction,
    compact_context,
)
from tether.agent.compaction._context import (
    ActiveContext,
    ActiveContextInput,
    ContextInput,
    build_active_context,
)
from tether.agent.compaction._errors import ContextCompactionError, ContextCompactionErrorCode
from tether.agent.compaction._estimate import estimate_context_units, estimate_tokens
from tether.agent.compaction._limits import (
    CODE_POINTS_PER_TOKEN,
    MAX_CONTEXT_ASYNC_DEPTH,
    MAX_CONTEXT_COLLECTION_ITEMS,
    MAX_CONTEXT_DEPTH,
    MAX_CONTEXT_MESSAGES,
    MAX_CONTEXT_RECORDS,
    MAX_CONTEXT_REQUIREMENTS,
    MAX_CONTEXT_STRING_UNITS,
    MAX_CONTEXT_TOTAL_UNITS,
    ContextLimits,
)
from tether.agent.compaction._options import CompactContextOptions, ContextBoundaryOptions
from tether.agent.compaction._records import (
    ContextCompactionRecord,
    ContextRequirement,
    ContextSummary,
)
from tether.agent.compaction._summarizer import ContextSummarizer, ContextSummaryRequest
from tether.agent.compaction._units import message_units

__all__ = [
    "CODE_POINTS_PER_TOKEN",
    "MAX_CONTEXT_ASYNC_DEPTH",
    "MAX_CONTEXT_COLLECTION_ITEMS",
    "MAX_CONTEXT_DEPTH",
    "MAX_CONTEXT_MESSAGES",
    "MAX_CONTEXT_RECORDS",
    "MAX_CONTEXT_REQUIREMENTS",
    "MAX_CONTEXT_STRING_UNITS",
    "MAX_CONTEXT_TOTAL_UNITS",
    "ActiveContext",
    "ActiveContextInput",
    "CompactContextOptions",
    "CompactedCompaction",
    "ContextBoundaryOptions",
    "ContextCompactionError",
    "ContextCompactionErrorCode",
    "ContextCompactionRecord",
    "ContextCompactionResult",
    "ContextInput",
    "ContextLimits",
    "ContextRequirement",
    "ContextSummarizer",
    "ContextSummary",
    "ContextSummaryRequest",
    "ContextToolGroup",
    "UnchangedCompaction",
    "build_active_context",
    "compact_context",
    "estimate_context_units",
    "estimate_tokens",
    "group_tool_rounds",
    "message_units",
    "select_compaction_boundary",
]
