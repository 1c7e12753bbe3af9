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
  ``2 + sum(1 + json(item))``, object ``2 + sum(1 + cp(key) + json(value))``. Records are not
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
"""

from __future__ import annotations

import asyncio
import dataclasses
import types
from collections.abc import Awaitable, Callable, Generator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, NoReturn, TypeAlias, TypeVar

from tether._errors import TetherError
from tether._race import (
    is_raw_abort_reason,
    neutralize,
    observe,
    race,
    reraise_task_cancellation,
    signal_aborted,
    signal_reason,
)
from tether._text import code_points, is_non_empty, message_of
from tether._types import await_steps, instance_of, is_awaitable, type_of
from tether.abort import AbortController, AbortSignal
from tether.jsonvalue import JsonObject, JsonValue
from tether.messages import validate_transcript
from tether.protocol import (
    MAX_SAFE_INTEGER,
    AssistantBlock,
    AssistantMessage,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    assert_never,
)

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

MAX_CONTEXT_MESSAGES: Final = 4_096
"""Workshop cap on messages one context may hold (also on ``retain_recent_messages``):
``ContextLimits.max_messages``."""
MAX_CONTEXT_REQUIREMENTS: Final = 128
"""Workshop cap on requirements one context may hold: ``ContextLimits.max_requirements``."""
MAX_CONTEXT_RECORDS: Final = 256
"""Workshop cap on compaction records one context may hold: ``ContextLimits.max_records``."""
MAX_CONTEXT_DEPTH: Final = 32
"""Workshop cap on tool-argument nesting (the arguments object is depth 0):
``ContextLimits.max_depth``."""
MAX_CONTEXT_COLLECTION_ITEMS: Final = 16_384
"""Workshop cap on array items plus tool-argument object keys, over the whole input:
``ContextLimits.max_collection_items``."""
MAX_CONTEXT_STRING_UNITS: Final = 65_536
"""Workshop cap on code points one string may hold (a summary included):
``ContextLimits.max_string_units``."""
MAX_CONTEXT_TOTAL_UNITS: Final = 1_000_000
"""Workshop cap on string code points over the whole input, and on a context's units and
budgets: ``ContextLimits.max_total_units``."""
MAX_CONTEXT_ASYNC_DEPTH: Final = 64
"""Workshop cap on nested awaitables adopted from one summarizer call:
``ContextLimits.max_async_depth``."""
CODE_POINTS_PER_TOKEN: Final = 4
"""The rule of thumb ``estimate_tokens`` divides by (see there)."""

ContextCompactionErrorCode: TypeAlias = Literal[
    "CONTEXT_INVALID_INPUT",
    "CONTEXT_INVALID_TRANSCRIPT",
    "CONTEXT_LIMIT_EXCEEDED",
    "CONTEXT_INVALID_BUDGET",
    "CONTEXT_BOUNDARY_UNAVAILABLE",
    "CONTEXT_SUMMARY_INVALID",
    "CONTEXT_SUMMARY_INSUFFICIENT",
    "CONTEXT_SUMMARIZER_FAILED",
    "CONTEXT_ASYNC_VALUE_UNOBSERVABLE",
    "CONTEXT_CANCELLED",
]
"""Every code a ``ContextCompactionError`` carries."""


class ContextCompactionError(TetherError):
    """Every fail-closed context operation raises this; ``code`` says which rule failed.

    Codes: ``CONTEXT_INVALID_INPUT``, ``CONTEXT_INVALID_TRANSCRIPT``,
    ``CONTEXT_LIMIT_EXCEEDED``, ``CONTEXT_INVALID_BUDGET``, ``CONTEXT_BOUNDARY_UNAVAILABLE``,
    ``CONTEXT_SUMMARY_INVALID``, ``CONTEXT_SUMMARY_INSUFFICIENT``,
    ``CONTEXT_SUMMARIZER_FAILED``, ``CONTEXT_ASYNC_VALUE_UNOBSERVABLE`` (reserved: an awaitable
    whose ``__await__`` does not return an iterator), ``CONTEXT_CANCELLED``. The cause, when
    there is one, is ``__cause__``.
    """

    def __init__(self, code: ContextCompactionErrorCode, message: str) -> None:
        super().__init__(code, message)

    @property
    def code(self) -> ContextCompactionErrorCode:
        """The stable error code."""
        return self._code  # pyright: ignore[reportReturnType]


def _fail(code: ContextCompactionErrorCode, message: str) -> NoReturn:
    raise ContextCompactionError(code, message)


# --- limits ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextLimits:
    """The bounds a context is built and compacted within. Every field is a positive safe
    ``int``; the defaults are the workshop's values exactly (the ``MAX_CONTEXT_*`` constants).

    * ``max_messages``: messages one context holds (also the cap on
      ``retain_recent_messages`` and on one record's ``compacted_message_ids``);
    * ``max_requirements`` / ``max_records``: requirements / compaction records one context
      holds;
    * ``max_depth``: the deepest tool-argument value (the arguments object is depth 0);
    * ``max_collection_items``: array items plus tool-argument object keys over the input;
    * ``max_string_units``: code points of one string (a new summary and its IDs included);
    * ``max_total_units``: string code points over the input, and the cap on a context's
      units and on every unit budget (``target_units``, ``max_units``);
    * ``max_async_depth``: nested awaitables adopted from one summarizer call.

    See ``for_coding`` for real coding sessions.
    """

    max_messages: int = MAX_CONTEXT_MESSAGES
    max_requirements: int = MAX_CONTEXT_REQUIREMENTS
    max_records: int = MAX_CONTEXT_RECORDS
    max_depth: int = MAX_CONTEXT_DEPTH
    max_collection_items: int = MAX_CONTEXT_COLLECTION_ITEMS
    max_string_units: int = MAX_CONTEXT_STRING_UNITS
    max_total_units: int = MAX_CONTEXT_TOTAL_UNITS
    max_async_depth: int = MAX_CONTEXT_ASYNC_DEPTH

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if type(value) is not int or not 1 <= value <= MAX_SAFE_INTEGER:
                raise TypeError(f"ContextLimits.{field.name} must be a positive safe integer")

    @classmethod
    def for_coding(cls) -> ContextLimits:
        """Limits sized for real coding sessions, where compaction is needed most: the
        workshop's reject a context holding one 100 KB file, or a session past 4,096
        messages. They agree with ``RunLimits.for_real_models()`` (what a run accepts can be
        compacted) and ``SessionLimits.for_coding()`` (what a session stores can be).

        * 131,072 messages: ``RunLimits.for_real_models().max_initial_messages``, so any
          transcript a real-model run may start from can be compacted.
        * 1,024 requirements: instruction files (an ``AGENTS.md`` per directory of a
          monorepo), skills and tool guides, one requirement each; their text is counted in
          the units too, so this cap only refuses a runaway list.
        * 262,144 records: records are kept for a session's whole life; that is one
          compaction per tool turn (four session records) for a session at
          ``SessionLimits.for_coding()``'s 1,048,576 records.
        * Depth 64: ``RunLimits.for_real_models().max_argument_depth``.
        * 8,388,608 collection items: a run's tool call may carry 1,048,576 argument entries
          (``RunLimits.for_real_models()``), and the records name every message ever
          compacted (up to 1,048,576 for such a session); this holds both several times
          over, besides 131,072 messages and their blocks.
        * 4,194,304 code points per string: ``RunLimits.for_real_models()``'s text per
          message and tool-argument strings per call, so a tool result or a ``write_file``
          call carrying a multi-megabyte file fits (and a summary may be that long).
        * 67,108,864 (64 Mi) total units (string code points, and units): the largest
          context windows are about 1M tokens, 4M units at four code points a token, and a
          context must exceed its trigger by a whole turn (4,194,304 code points of text, and
          as much again per tool call or result); the records also name every message ever
          compacted (for a 1,048,576-record session, tens of millions of code points of IDs).
          The checks are linear: 64 Mi code points take about 0.3 s (text holding lone
          surrogates is counted a character at a time, about 0.5 s per Mi).
        * 64 nested awaitables: unchanged; a real summarizer (``model_summarizer``) returns
          one coroutine, and the cap exists for hostile ones, not for session size.
        """
        return cls(
            max_messages=131_072,
            max_requirements=1_024,
            max_records=262_144,
            max_depth=64,
            max_collection_items=8_388_608,
            max_string_units=4_194_304,
            max_total_units=67_108_864,
            max_async_depth=64,
        )


_WORKSHOP_LIMITS: Final = ContextLimits()
"""The workshop's limits: every ``limits`` field's default."""


def _limits_of(value: object, owner: str) -> ContextLimits:
    """``value`` when it is exactly a ``ContextLimits`` (never a subclass)."""
    if type_of(value) is not ContextLimits:
        _fail("CONTEXT_INVALID_INPUT", f"{owner} limits must be ContextLimits")
    return value  # pyright: ignore[reportReturnType]


# --- records --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextRequirement:
    """An instruction that stays in the context verbatim through every compaction.

    ``id`` and ``content`` must be non-blank; checked when a context holding it is built.
    """

    id: str
    content: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextSummary:
    """The text that stands for every compacted message; ``content`` must not be blank."""

    id: str
    content: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextCompactionRecord:
    """What one compaction did: which messages (by ID, in order) a summary replaced.

    ``boundary`` is the number of messages compacted (``len(compacted_message_ids)``);
    ``units_before``/``units_after`` are the context's units around it. Checked when a
    context holding it is built; ``compacted_message_ids`` may be given as a list.
    """

    id: str
    summary_id: str
    boundary: int
    compacted_message_ids: tuple[str, ...]
    units_before: int
    units_after: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ActiveContext:
    """What a model sees: requirements, an optional summary, the transcript, and the record
    of compactions so far. Valid by construction (see the module docstring); sequences may
    be given as lists and are stored as tuples, messages may be given in their JSON form.
    ``limits`` are the bounds it is checked against (the workshop's by default); they travel
    with it: ``dataclasses.replace`` and ``compact_context`` keep them.
    """

    requirements: tuple[ContextRequirement, ...] = ()
    summary: ContextSummary | None = None
    messages: tuple[Message, ...] = ()
    compactions: tuple[ContextCompactionRecord, ...] = ()
    limits: ContextLimits = _WORKSHOP_LIMITS

    def __post_init__(self) -> None:
        limits = _limits_of(self.limits, "Context")
        snapshot = _snapshot_context(
            self.requirements, self.summary, self.messages, self.compactions, limits
        )
        for name, value in zip(_CONTEXT_FIELDS, snapshot, strict=True):
            if value is not getattr(self, name):
                object.__setattr__(self, name, value)


_CONTEXT_FIELDS: Final = ("requirements", "summary", "messages", "compactions")

ActiveContextInput: TypeAlias = ActiveContext | Mapping[str, object]
"""An ``ActiveContext``, or its JSON form: an exact ``dict`` with any of the keys
``requirements``, ``summary``, ``messages``, ``compactions`` (camelCase record fields)."""

ContextInput: TypeAlias = ActiveContextInput | Sequence[Message | Mapping[str, object]]
"""What the estimators accept: a context input, or a bare transcript (an exact list/tuple)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextToolGroup:
    """A contiguous run of messages that a boundary never splits.

    ``kind`` is ``"toolRound"`` for an assistant message with tool calls and everything up to
    its last result, ``"message"`` for any other single message. ``end_index`` is exclusive.
    """

    kind: Literal["message", "toolRound"]
    start_index: int
    end_index: int
    messages: tuple[Message, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextBoundaryOptions:
    """The budget ``select_compaction_boundary`` works to.

    ``target_units`` (1..``limits.max_total_units``): what the compacted context should fit;
    ``summary_max_units`` (1..``target_units``): the units reserved for the new summary;
    ``retain_recent_messages`` (0..``limits.max_messages``): messages that always stay.
    Invalid values raise ``CONTEXT_INVALID_BUDGET`` here, checked against ``limits`` (the
    workshop's by default: 1,000,000 and 4,096); when the options are used they are checked
    again against the context's limits, the ones the compaction runs with.
    """

    target_units: int
    summary_max_units: int
    retain_recent_messages: int
    limits: ContextLimits = _WORKSHOP_LIMITS

    def __post_init__(self) -> None:
        limits = _limits_of(self.limits, "Boundary options")
        _check_budget(
            self.target_units, self.summary_max_units, self.retain_recent_messages, limits
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextSummaryRequest:
    """What a summarizer is asked to summarize.

    ``messages`` is the compacted prefix (``boundary`` messages); ``previous_summary`` is the
    summary being replaced, to be folded in. The summary must cost at most
    ``max_summary_units`` (``5 + cp(summary_id) + cp(text)``), which leaves the text
    ``max_content_code_points`` code points (possibly 0: no summary can fit; an addition to
    the workshop's request, so a summarizer need not know the summary's ID).
    """

    requirements: tuple[ContextRequirement, ...]
    previous_summary: ContextSummary | None
    messages: tuple[Message, ...]
    boundary: int
    max_summary_units: int
    max_content_code_points: int


ContextSummarizer: TypeAlias = Callable[[ContextSummaryRequest, AbortSignal], str | Awaitable[str]]
"""Turns a request into summary text, synchronously or as an awaitable (a coroutine, a
``Future``, any object with ``__await__``). It should stop promptly when the signal aborts."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactContextOptions:
    """Everything ``compact_context`` needs.

    The three budget fields are those of ``ContextBoundaryOptions``; ``max_units``
    (``target_units``..``limits.max_total_units``) is the size above which the context is
    compacted; ``summary_id`` and ``record_id`` (at most ``limits.max_string_units`` code
    points) name the new summary and record; ``summarizer`` writes the summary; ``signal``
    (optional) cancels. Invalid values raise here: ``CONTEXT_INVALID_BUDGET`` for numbers,
    ``CONTEXT_LIMIT_EXCEEDED`` for an ID too long, ``CONTEXT_INVALID_INPUT`` for the rest.
    As with ``ContextBoundaryOptions``, ``limits`` (the workshop's by default) are what they
    are checked against here, and the context's limits what they are checked against when
    ``compact_context`` runs: pass ``limits=context.limits`` to fail early.
    """

    max_units: int
    target_units: int
    summary_max_units: int
    retain_recent_messages: int
    summary_id: str
    record_id: str
    summarizer: ContextSummarizer
    signal: AbortSignal | None = None
    limits: ContextLimits = _WORKSHOP_LIMITS

    def __post_init__(self) -> None:
        _check_compact_options(self, _limits_of(self.limits, "Compaction options"))


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


# --- public functions -----------------------------------------------------------------------


def build_active_context(
    context: ActiveContextInput, *, limits: ContextLimits | None = None
) -> ActiveContext:
    """Validate and snapshot ``context`` (see the module docstring).

    A ``dict`` is the JSON form: its keys are ``requirements``, ``summary``, ``messages`` and
    ``compactions`` (each optional; an unknown key is ``CONTEXT_INVALID_INPUT``, like an
    unknown keyword); it is checked against ``limits`` (the workshop's when omitted). An
    ``ActiveContext`` is returned as it is (it is valid by construction) when ``limits`` is
    omitted or equal to its own; other ``limits`` check it again under them
    (``dataclasses.replace(context, limits=limits)``).
    """
    chosen = None if limits is None else _limits_of(limits, "Context")
    if type_of(context) is ActiveContext:
        given: ActiveContext = context  # pyright: ignore[reportAssignmentType]
        if chosen is None or chosen == given.limits:
            return given
        return dataclasses.replace(given, limits=chosen)
    if type_of(context) is not dict:
        _fail("CONTEXT_INVALID_INPUT", "Context must be an ActiveContext or a dict")
    fields = _record_fields(context, "Context")  # exact string keys: no caller code runs
    unknown = [key for key in fields if key not in _CONTEXT_FIELDS]
    if unknown:
        _fail("CONTEXT_INVALID_INPUT", f'Context has an unknown field "{unknown[0]}"')
    built: Any = ActiveContext  # checks (and wraps any unexpected failure) in __post_init__
    return built(**fields, limits=_WORKSHOP_LIMITS if chosen is None else chosen)


def group_tool_rounds(
    transcript: Sequence[Message | Mapping[str, object]], *, limits: ContextLimits | None = None
) -> tuple[ContextToolGroup, ...]:
    """Split a transcript into the groups a compaction boundary may fall between.

    The transcript is validated first against ``limits`` (the workshop's when omitted):
    ``CONTEXT_INVALID_TRANSCRIPT``, ``CONTEXT_LIMIT_EXCEEDED``; the groups cover it in order,
    without gaps. A transcript of an ``ActiveContext`` was checked under its limits: pass
    ``limits=context.limits`` to group ``context.messages``.
    """
    chosen = _WORKSHOP_LIMITS if limits is None else _limits_of(limits, "Transcript")
    return _groups(_snapshot_messages(transcript, _Budget(chosen)))


def estimate_context_units(context: ContextInput, *, limits: ContextLimits | None = None) -> int:
    """The deterministic size of a context (or of a bare transcript) in units.

    See the module docstring for the weights; compaction records are not counted. The input
    is validated as ``build_active_context(context, limits=limits)`` does: an
    ``ActiveContext`` under its own limits unless ``limits`` says otherwise, a ``dict`` or a
    bare transcript under ``limits`` (the workshop's when omitted).
    """
    return _context_units(_context_of(context, limits))


def estimate_tokens(context: ContextInput, *, limits: ContextLimits | None = None) -> int:
    """A rough token count for a real model: ``ceil(estimate_context_units(context) / 4)``.

    Units are the code points of every string a model is sent plus small structural
    weights, so this is the common "four characters per token" rule of thumb applied to the
    same text the unit estimator counts. No tokenizer is involved (tether has no tokenizer
    dependency): expect it to be off by tens of percent, high for plain English and low for
    CJK text, emoji or dense JSON. Use it to choose budgets (``CODE_POINTS_PER_TOKEN`` units
    per token of context window), never to bill. ``limits`` as for ``estimate_context_units``.
    """
    units = estimate_context_units(context, limits=limits)
    return -(-units // CODE_POINTS_PER_TOKEN)


def message_units(message: Message) -> int:
    """The units of one protocol message, by the rules above, with no checks at all: for a
    caller that already holds valid messages and counts a part of a transcript (a part need
    not be a valid transcript on its own, so ``estimate_context_units`` would refuse it)."""
    return _message_units(message)


def select_compaction_boundary(
    context: ActiveContextInput, options: ContextBoundaryOptions | CompactContextOptions
) -> int | None:
    """The first group edge that brings the context within ``options.target_units``.

    ``requirements + summary_max_units + retained messages <= target_units`` (the existing
    summary is not counted: it is replaced), with at least ``retain_recent_messages``
    messages kept; ``None`` when no boundary qualifies. It works within the context's limits
    (see ``compact_context``), and checks the options against them.
    """
    built = _context_for(context, options)
    target, summary_max, retain = _boundary_of(options, built.limits)
    return _select(built, target, summary_max, retain)


async def compact_context(
    context: ActiveContextInput, options: CompactContextOptions
) -> ContextCompactionResult:
    """Compact ``context`` if it exceeds ``options.max_units`` (see the module docstring).

    Returns ``UnchangedCompaction`` (the same context object, summarizer not called) or
    ``CompactedCompaction``; raises ``ContextCompactionError``. The summarizer is called at
    most once, with the caller's signal (or one that never aborts).

    The compaction runs with the context's limits: an ``ActiveContext``'s own, or for a
    ``dict`` the options' ``limits`` (it is built with them). The options are checked against
    those limits here, and the compacted context carries them.
    """
    built = _context_for(context, options)
    if type_of(options) is not CompactContextOptions:
        _fail("CONTEXT_INVALID_INPUT", "Context compaction options must be CompactContextOptions")
    limits = built.limits
    _check_compact_options(options, limits)
    max_string_units, max_async_depth = limits.max_string_units, limits.max_async_depth
    # a snapshot: the summarizer runs caller code, which must not change the rules mid-way
    max_units, target_units = options.max_units, options.target_units
    summary_max_units, retain = options.summary_max_units, options.retain_recent_messages
    summary_id, record_id = options.summary_id, options.record_id
    summarizer, given_signal = options.summarizer, options.signal
    units_before = _context_units(built)
    if units_before <= max_units:
        return UnchangedCompaction(context=built)
    signal = given_signal if given_signal is not None else AbortController().signal
    _check_cancelled(signal)
    if any(record.id == record_id for record in built.compactions):
        _fail(
            "CONTEXT_INVALID_INPUT",
            f'Context compaction ID "{record_id}" is already present',
        )
    boundary = _select(built, target_units, summary_max_units, retain)
    if boundary is None or boundary <= 0:
        _fail(
            "CONTEXT_BOUNDARY_UNAVAILABLE",
            "No complete tool-round boundary can satisfy the context budget",
        )
    compacted = built.messages[:boundary]
    fixed = 5 + _cp(summary_id)
    request = ContextSummaryRequest(
        requirements=built.requirements,
        previous_summary=built.summary,
        messages=compacted,
        boundary=boundary,
        max_summary_units=summary_max_units,
        max_content_code_points=max(0, summary_max_units - fixed),
    )
    content = await _summarize(summarizer, request, signal, max_async_depth)
    _check_cancelled(signal)

    if type_of(content) is not str:
        _fail("CONTEXT_SUMMARY_INVALID", "Context summarizer must return plain text (a str)")
    text: str = content  # pyright: ignore[reportAssignmentType]
    size = _cp(text)
    if size > max_string_units:
        _fail("CONTEXT_LIMIT_EXCEEDED", f"Context summary exceeds {max_string_units} code points")
    if not is_non_empty(text):
        _fail("CONTEXT_SUMMARY_INSUFFICIENT", "Context summary must contain non-whitespace text")
    if fixed + size > summary_max_units:
        _fail(
            "CONTEXT_SUMMARY_INSUFFICIENT",
            f"Context summary exceeds its {summary_max_units}-unit budget",
        )
    summary = ContextSummary(id=summary_id, content=text)

    retained = built.messages[boundary:]
    _check_transcript(retained)  # a safe boundary leaves a transcript that is valid alone
    prospective = ActiveContext(
        requirements=built.requirements,
        summary=summary,
        messages=retained,
        compactions=built.compactions,
        limits=limits,
    )
    units_after = _context_units(prospective)
    if units_after > target_units:
        _fail(
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
    _check_cancelled(signal)
    return CompactedCompaction(context=final, record=final.compactions[-1])


# --- option checks --------------------------------------------------------------------------


def _budget_integer(name: str, value: object, minimum: int) -> int:
    if type_of(value) is not int or not minimum <= value <= MAX_SAFE_INTEGER:  # pyright: ignore[reportOperatorIssue]
        _fail("CONTEXT_INVALID_BUDGET", f"{name} must be a safe integer >= {minimum}")
    return value  # pyright: ignore[reportReturnType]


def _check_budget(
    target: object, summary_max: object, retain: object, limits: ContextLimits
) -> None:
    target_units = _budget_integer("target_units", target, 1)
    summary_units = _budget_integer("summary_max_units", summary_max, 1)
    retained = _budget_integer("retain_recent_messages", retain, 0)
    if target_units > limits.max_total_units:
        _fail("CONTEXT_INVALID_BUDGET", f"target_units must not exceed {limits.max_total_units}")
    if summary_units > target_units:
        _fail("CONTEXT_INVALID_BUDGET", "summary_max_units must not exceed target_units")
    if retained > limits.max_messages:
        _fail(
            "CONTEXT_INVALID_BUDGET",
            f"retain_recent_messages must not exceed {limits.max_messages}",
        )


def _check_compact_options(options: CompactContextOptions, limits: ContextLimits) -> None:
    _check_budget(
        options.target_units, options.summary_max_units, options.retain_recent_messages, limits
    )
    max_units = _budget_integer("max_units", options.max_units, 1)
    if max_units > limits.max_total_units:
        _fail("CONTEXT_INVALID_BUDGET", f"max_units must not exceed {limits.max_total_units}")
    if options.target_units > max_units:
        _fail("CONTEXT_INVALID_BUDGET", "target_units must not exceed max_units")
    for name in ("summary_id", "record_id"):
        value: object = getattr(options, name)
        if not is_non_empty(value):
            _fail("CONTEXT_INVALID_INPUT", f"{name} must be a non-empty string")
        if _cp(value) > limits.max_string_units:
            _fail("CONTEXT_LIMIT_EXCEEDED", f"{name} exceeds {limits.max_string_units} code points")
    if not callable(options.summarizer):
        _fail("CONTEXT_INVALID_INPUT", "summarizer must be callable")
    signal = options.signal
    if signal is not None:
        if not instance_of(signal, AbortSignal):
            _fail("CONTEXT_INVALID_INPUT", "signal must be an AbortSignal or None")
        try:
            signal_aborted(signal)
        except Exception as error:
            raise ContextCompactionError(
                "CONTEXT_INVALID_INPUT", "signal must be a genuine AbortSignal"
            ) from error


def _boundary_of(options: object, limits: ContextLimits) -> tuple[int, int, int]:
    kind = type_of(options)
    if kind is not ContextBoundaryOptions and kind is not CompactContextOptions:
        _fail(
            "CONTEXT_INVALID_INPUT",
            "Boundary options must be ContextBoundaryOptions or CompactContextOptions",
        )
    chosen: ContextBoundaryOptions = options  # pyright: ignore[reportAssignmentType]
    target, summary_max = chosen.target_units, chosen.summary_max_units
    retain = chosen.retain_recent_messages
    _check_budget(target, summary_max, retain, limits)
    return target, summary_max, retain


def _context_for(context: object, options: object) -> ActiveContext:
    """The context an operation with ``options`` runs on: an ``ActiveContext`` as it is (with
    its own limits), any other input built with the options' ``limits`` (the workshop's when
    the options are not options at all: they are rejected next)."""
    if type_of(context) is ActiveContext:
        return context  # pyright: ignore[reportReturnType]
    kind = type_of(options)
    chosen: ContextLimits | None = None
    if kind is ContextBoundaryOptions or kind is CompactContextOptions:
        given: ContextBoundaryOptions | CompactContextOptions = options  # pyright: ignore[reportAssignmentType]
        if type_of(given.limits) is ContextLimits:
            chosen = given.limits
    return build_active_context(context, limits=chosen)  # pyright: ignore[reportArgumentType]


# --- cancellation and the summarizer ----------------------------------------------------------

_CANCELLED: Final = "Context compaction cancelled"


def _cancelled(signal: AbortSignal) -> ContextCompactionError:
    """``CONTEXT_CANCELLED``: the reason's text when it is a non-empty string (the workshop's
    rule), else the default message; an exception reason is kept as ``__cause__``."""
    reason = signal_reason(signal)
    message = reason if type_of(reason) is str and reason else _CANCELLED
    error = ContextCompactionError("CONTEXT_CANCELLED", message)  # pyright: ignore[reportArgumentType]
    if isinstance(reason, BaseException):
        error.__cause__ = reason
    return error


def _check_cancelled(signal: AbortSignal) -> None:
    if signal_aborted(signal):
        raise _cancelled(signal)


def _summarizer_failed(
    signal: AbortSignal, what: str, error: BaseException
) -> ContextCompactionError:
    """The error for a summarizer failure (its cause set); an abort observed first wins."""
    if signal_aborted(signal):
        return _cancelled(signal)
    failure = ContextCompactionError(
        "CONTEXT_SUMMARIZER_FAILED", f"{what}: {message_of(error, type(error).__name__)}"
    )
    failure.__cause__ = error
    return failure


def _raise(error: ContextCompactionError) -> NoReturn:
    """Raise an error whose ``__cause__`` is already set (``raise ... from`` would reset it)."""
    raise error


async def _summarize(
    summarizer: ContextSummarizer,
    request: ContextSummaryRequest,
    signal: AbortSignal,
    max_depth: int,
) -> object:
    """Call the summarizer once and adopt what it returns (steps 6 and 7)."""
    try:
        value: object = summarizer(request, signal)
    except Exception as error:
        _raise(_summarizer_failed(signal, "Context summarizer raised", error))
    except asyncio.CancelledError as error:
        reraise_task_cancellation(error)
        _raise(_summarizer_failed(signal, "Context summarizer raised", error))
    except BaseException as error:
        if is_raw_abort_reason(signal, error):
            _raise(_cancelled(signal))
        raise
    seen: list[object] = []  # strong references, so identities stay unique while compared
    depth = 0
    while is_awaitable(value):
        if depth >= max_depth:
            _discard(value)
            _fail(
                "CONTEXT_SUMMARIZER_FAILED",
                f"Context summarizer nested more than {max_depth} awaitables",
            )
        if any(earlier is value for earlier in seen):
            _fail("CONTEXT_SUMMARIZER_FAILED", "Context summarizer returned an awaitable cycle")
        seen.append(value)
        depth += 1
        value = await _adopt(value, signal)
    return value


def _discard(value: object) -> None:
    """Dispose of an awaitable that will not be awaited: a coroutine is closed (its
    ``finally`` blocks run), a ``Future`` cancelled and its outcome observed."""
    if issubclass(type_of(value), asyncio.Future):
        future: asyncio.Future[object] = value  # pyright: ignore[reportAssignmentType]
        observe(future)
        future.cancel()
    else:
        neutralize(value)


async def _adopt(value: object, signal: AbortSignal) -> object:
    """Await one awaitable while racing ``signal``; failures become context errors.

    Work abandoned on abort is cancelled: before it started (here) or while it runs
    (``race``)."""
    if signal_aborted(signal):
        _discard(value)
        raise _cancelled(signal)
    awaitable: Awaitable[object]
    if type_of(value) is types.CoroutineType:
        awaitable = value  # pyright: ignore[reportAssignmentType]
    elif issubclass(type_of(value), asyncio.Future):
        future: asyncio.Future[object] = value  # pyright: ignore[reportAssignmentType]
        observe(future)  # abandoned or not, its failure is never logged as unretrieved
        awaitable = future
    else:
        try:
            steps: object = await_steps(value)
        except Exception as error:
            _raise(_summarizer_failed(signal, "Context summarizer awaitable failed", error))
        if not _is_iterator(steps):
            neutralize(steps)
            _fail(
                "CONTEXT_ASYNC_VALUE_UNOBSERVABLE",
                "Context summarizer awaitable's __await__ did not return an iterator",
            )
        awaitable = _Steps(steps)  # pyright: ignore[reportArgumentType]
    try:
        return await race(signal, awaitable)
    except Exception as error:
        _raise(_summarizer_failed(signal, "Context summarizer failed", error))
    except asyncio.CancelledError as error:
        reraise_task_cancellation(error)
        _raise(_summarizer_failed(signal, "Context summarizer failed", error))


def _is_iterator(value: object) -> bool:
    try:
        return callable(getattr(type_of(value), "__next__", None))
    except Exception:
        return False


class _Steps:
    """An awaitable over the iterator an ``__await__`` already returned (called only once)."""

    __slots__ = ("_steps",)

    def __init__(self, steps: Generator[Any, Any, Any]) -> None:
        self._steps = steps

    def __await__(self) -> Generator[Any, Any, Any]:
        return _delegate(self._steps)


def _delegate(steps: Generator[Any, Any, Any]) -> Generator[Any, Any, Any]:
    """Drive the iterator as ``await`` does: ``yield from`` passes ``send``, ``throw`` and
    ``close`` on when it has them, and stands in for them when it has not."""
    return (yield from steps)


# --- units ----------------------------------------------------------------------------------


def _cp(text: str) -> int:
    return code_points(text)[0]


def _context_of(context: object, limits: ContextLimits | None) -> ActiveContext:
    kind = type_of(context)
    if kind is list or kind is tuple:
        chosen = _WORKSHOP_LIMITS if limits is None else _limits_of(limits, "Context")
        return ActiveContext(messages=context, limits=chosen)  # pyright: ignore[reportArgumentType]
    return build_active_context(context, limits=limits)  # pyright: ignore[reportArgumentType]


def _context_units(context: ActiveContext) -> int:
    units = _requirements_units(context.requirements)
    if context.summary is not None:
        units += 5 + _cp(context.summary.id) + _cp(context.summary.content)
    for message in context.messages:
        units += _message_units(message)
    return units


def _requirements_units(requirements: tuple[ContextRequirement, ...]) -> int:
    return sum(3 + _cp(requirement.id) + _cp(requirement.content) for requirement in requirements)


def _message_units(message: Message) -> int:
    if message.role == "user":
        return 4 + _cp(message.id) + _cp(message.content)
    if message.role == "assistant":
        return 4 + _cp(message.id) + sum(_block_units(block) for block in message.content)
    if message.role != "toolResult":
        assert_never(message)
    return (
        7
        + _cp(message.id)
        + _cp(message.tool_call_id)
        + _cp(message.tool_name)
        + _cp(message.content)
    )


def _block_units(block: AssistantBlock) -> int:
    if block.type == "text":
        return 2 + _cp(block.text)
    if block.type == "thinking":
        return 2 + _cp(block.text)
    if block.type != "toolCall":
        assert_never(block)
    raw = block.raw_arguments
    raw_units = 0 if raw is None else 1 + _cp(raw)
    return 6 + _cp(block.id) + _cp(block.name) + _json_units(block.arguments) + raw_units


def _json_units(value: JsonValue) -> int:
    if value is None:
        return 1
    kind = type_of(value)
    if kind is str:
        return 1 + _cp(value)  # pyright: ignore[reportArgumentType]
    if kind is bool:  # before int: bool is an int subclass
        return 5 if value else 6
    if kind is int or kind is float:
        return 1 + len(_js_number_text(value))  # pyright: ignore[reportArgumentType]
    if kind is tuple:
        items: tuple[JsonValue, ...] = value  # pyright: ignore[reportAssignmentType]
        return 2 + sum(1 + _json_units(item) for item in items)
    mapping: JsonObject = value  # pyright: ignore[reportAssignmentType]
    # The workshop sums over sorted keys; a sum does not depend on the order.
    return 2 + sum(1 + _cp(key) + _json_units(item) for key, item in mapping.items())


def _js_number_text(value: int | float) -> str:
    """JavaScript's ``String(n)`` for a finite number (a safe ``int`` exactly; anything else
    as the double it would be in JavaScript: ``1.0 -> "1"``, ``1e21 -> "1e+21"``)."""
    if type_of(value) is int and -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
        return str(value)
    number = float(value)
    if number == 0:
        return "0"
    sign = "-" if number < 0 else ""
    text = repr(abs(number))  # the shortest round-trip digits, as JavaScript chooses them
    mantissa, _, exponent = text.partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = whole + fraction
    point = len(whole) + (int(exponent) if exponent else 0)
    stripped = digits.lstrip("0")
    point -= len(digits) - len(stripped)
    digits = stripped.rstrip("0")
    k = len(digits)
    n = point
    if k <= n <= 21:
        body = digits + "0" * (n - k)
    elif 0 < n <= 21:
        body = f"{digits[:n]}.{digits[n:]}"
    elif -6 < n <= 0:
        body = "0." + "0" * -n + digits
    else:
        power = n - 1
        mark = "+" if power >= 0 else "-"
        head = digits if k == 1 else f"{digits[0]}.{digits[1:]}"
        body = f"{head}e{mark}{abs(power)}"
    return sign + body


# --- boundaries -----------------------------------------------------------------------------


def _groups(messages: tuple[Message, ...]) -> tuple[ContextToolGroup, ...]:
    result_index: dict[str, int] = {}
    for index, message in enumerate(messages):
        if message.role == "toolResult":
            result_index[message.tool_call_id] = index
    interval_end: dict[int, int] = {}
    for index, message in enumerate(messages):
        if message.role != "assistant":
            continue
        end = index + 1
        has_call = False
        for block in message.content:
            if block.type != "toolCall":
                continue
            has_call = True
            found = result_index.get(block.id)
            if found is None:
                _fail("CONTEXT_INVALID_TRANSCRIPT", f'Tool call "{block.id}" has no result')
            end = max(end, found + 1)
        if has_call:
            interval_end[index] = end
    groups: list[ContextToolGroup] = []
    index = 0
    while index < len(messages):
        end = interval_end.get(index)
        if end is None:
            groups.append(
                ContextToolGroup(
                    kind="message",
                    start_index=index,
                    end_index=index + 1,
                    messages=messages[index : index + 1],
                )
            )
            index += 1
            continue
        inner = index + 1
        while inner < end:  # a round that starts inside this one extends it
            end = max(end, interval_end.get(inner, end))
            inner += 1
        groups.append(
            ContextToolGroup(
                kind="toolRound", start_index=index, end_index=end, messages=messages[index:end]
            )
        )
        index = end
    return tuple(groups)


def _select(context: ActiveContext, target: int, summary_max: int, retain: int) -> int | None:
    latest = len(context.messages) - retain
    if latest <= 0:
        return None
    fixed = _requirements_units(context.requirements) + summary_max
    units = [_message_units(message) for message in context.messages]
    retained = sum(units)
    for group in _groups(context.messages):
        retained -= sum(units[group.start_index : group.end_index])
        if group.end_index > latest:
            return None
        if fixed + retained <= target:
            return group.end_index
    return None


# --- snapshots ------------------------------------------------------------------------------


class _Budget:
    """What the input spent so far (collection items and string code points), and the
    limits it is checked against."""

    __slots__ = ("items", "limits", "max_depth", "max_items", "max_string", "max_total", "units")

    def __init__(self, limits: ContextLimits) -> None:
        self.items = 0
        self.units = 0
        self.limits = limits
        self.max_depth = limits.max_depth
        self.max_items = limits.max_collection_items
        self.max_string = limits.max_string_units
        self.max_total = limits.max_total_units

    def add_items(self, count: int) -> None:
        self.items += count
        if self.items > self.max_items:
            _fail("CONTEXT_LIMIT_EXCEEDED", f"Context exceeds {self.max_items} collection items")

    def text(self, value: object, path: str) -> str:
        """``value`` as a bounded string; counts its code points. Not a string: invalid."""
        if type_of(value) is not str:
            _fail("CONTEXT_INVALID_INPUT", f"{path} must be a string")
        text: str = value  # pyright: ignore[reportAssignmentType]
        size = _cp(text)
        if size > self.max_string:
            _fail("CONTEXT_LIMIT_EXCEEDED", f"{path} exceeds {self.max_string} code points")
        self.units += size
        if self.units > self.max_total:
            _fail(
                "CONTEXT_LIMIT_EXCEEDED",
                f"Context input exceeds {self.max_total} string code points",
            )
        return text

    def name(self, value: object, path: str) -> str:
        """A bounded, non-blank string (an ID or a name)."""
        text = self.text(value, path)
        if not is_non_empty(text):
            _fail("CONTEXT_INVALID_INPUT", f"{path} must be a non-empty string")
        return text


_MISSING: Final = object()
_T = TypeVar("_T")


def _exact(value: object, cls: type[_T]) -> _T | None:
    """``value`` when it is exactly a ``cls`` (never a subclass), else ``None``."""
    return value if type_of(value) is cls else None  # pyright: ignore[reportReturnType]


def _uninspectable() -> ContextCompactionError:
    return ContextCompactionError("CONTEXT_INVALID_INPUT", "Context could not be inspected safely")


def _record_fields(value: object, path: str) -> dict[str, object]:
    """An exact ``dict`` whose keys are all exact strings (so no lookup runs caller code)."""
    if type_of(value) is not dict:
        _fail("CONTEXT_INVALID_INPUT", f"{path} must be an object")
    record: dict[object, object] = value  # pyright: ignore[reportAssignmentType]
    for key in record:
        if type_of(key) is not str:
            _fail("CONTEXT_INVALID_INPUT", f"{path} keys must be strings")
    return record  # pyright: ignore[reportReturnType]


def _required(record: dict[str, object], key: str, path: str) -> object:
    value = record.get(key, _MISSING)
    if value is _MISSING:
        _fail("CONTEXT_INVALID_INPUT", f"{path}.{key} is required")
    return value


def _array(value: object, path: str, limit: int) -> tuple[object, ...]:
    kind = type_of(value)
    if kind is not list and kind is not tuple:
        _fail("CONTEXT_INVALID_INPUT", f"{path} must be a list or tuple")
    items: tuple[object, ...] = tuple(value)  # pyright: ignore[reportArgumentType]
    if len(items) > limit:
        _fail("CONTEXT_LIMIT_EXCEEDED", f"{path} exceeds its {limit}-item limit")
    return items


def _snapshot_context(
    requirements: object,
    summary: object,
    messages: object,
    compactions: object,
    limits: ContextLimits,
) -> tuple[
    tuple[ContextRequirement, ...],
    ContextSummary | None,
    tuple[Message, ...],
    tuple[ContextCompactionRecord, ...],
]:
    try:
        budget = _Budget(limits)
        snapshot = (
            _snapshot_requirements(requirements, budget),
            _snapshot_summary(summary, budget),
            _snapshot_messages(messages, budget),
            _snapshot_records(compactions, budget),
        )
        units = _requirements_units(snapshot[0])
        if snapshot[1] is not None:
            units += 5 + _cp(snapshot[1].id) + _cp(snapshot[1].content)
        units += sum(_message_units(message) for message in snapshot[2])
        if units > limits.max_total_units:
            _fail(
                "CONTEXT_LIMIT_EXCEEDED", f"Context must not exceed {limits.max_total_units} units"
            )
        return snapshot
    except ContextCompactionError:
        raise
    except Exception as error:
        raise _uninspectable() from error


def _snapshot_requirements(value: object, budget: _Budget) -> tuple[ContextRequirement, ...]:
    entries = _array(value, "Context requirements", budget.limits.max_requirements)
    budget.add_items(len(entries))
    seen: set[str] = set()
    requirements: list[ContextRequirement] = []
    for index, entry in enumerate(entries):
        path = f"Context requirements[{index}]"
        given = _exact(entry, ContextRequirement)
        if given is not None:
            raw_id, raw_content = given.id, given.content
        else:
            record = _record_fields(entry, path)
            raw_id, raw_content = _required(record, "id", path), _required(record, "content", path)
        requirement_id = budget.name(raw_id, f"{path}.id")
        content = budget.name(raw_content, f"{path}.content")
        if requirement_id in seen:
            _fail(
                "CONTEXT_INVALID_INPUT", f'Context requirement ID "{requirement_id}" is duplicated'
            )
        seen.add(requirement_id)
        requirements.append(
            given if given is not None else ContextRequirement(id=requirement_id, content=content)
        )
    return tuple(requirements)


def _snapshot_summary(value: object, budget: _Budget) -> ContextSummary | None:
    if value is None:
        return None
    path = "Context summary"
    given = _exact(value, ContextSummary)
    if given is not None:
        raw_id, raw_content = given.id, given.content
    else:
        record = _record_fields(value, path)
        raw_id, raw_content = _required(record, "id", path), _required(record, "content", path)
    summary_id = budget.name(raw_id, f"{path}.id")
    content = budget.text(raw_content, f"{path}.content")
    if not is_non_empty(content):
        _fail("CONTEXT_SUMMARY_INVALID", "Context summary content must not be blank")
    return given if given is not None else ContextSummary(id=summary_id, content=content)


def _snapshot_records(value: object, budget: _Budget) -> tuple[ContextCompactionRecord, ...]:
    entries = _array(value, "Context compactions", budget.limits.max_records)
    budget.add_items(len(entries))
    seen: set[str] = set()
    records: list[ContextCompactionRecord] = []
    for index, entry in enumerate(entries):
        path = f"Context compactions[{index}]"
        given = _exact(entry, ContextCompactionRecord)
        if given is not None:
            raw = (
                given.id,
                given.summary_id,
                given.boundary,
                given.compacted_message_ids,
                given.units_before,
                given.units_after,
            )
        else:
            record = _record_fields(entry, path)
            raw = tuple(_required(record, key, path) for key in _RECORD_KEYS)
        record_id = budget.name(raw[0], f"{path}.id")
        summary_id = budget.name(raw[1], f"{path}.summaryId")
        boundary = _record_integer(raw[2], f"{path}.boundary", 1)
        ids_path = f"{path}.compactedMessageIds"
        id_values = _array(raw[3], ids_path, budget.limits.max_messages)
        budget.add_items(len(id_values))
        if not id_values or len(id_values) != boundary:
            _fail("CONTEXT_INVALID_INPUT", f"{ids_path} must hold exactly boundary message IDs")
        message_ids = tuple(
            budget.name(item, f"{ids_path}[{position}]") for position, item in enumerate(id_values)
        )
        units_before = _record_integer(raw[4], f"{path}.unitsBefore", 0)
        units_after = _record_integer(raw[5], f"{path}.unitsAfter", 0)
        if record_id in seen:
            _fail("CONTEXT_INVALID_INPUT", f'Context compaction ID "{record_id}" is duplicated')
        seen.add(record_id)
        if given is None or type_of(given.compacted_message_ids) is not tuple:
            given = ContextCompactionRecord(
                id=record_id,
                summary_id=summary_id,
                boundary=boundary,
                compacted_message_ids=message_ids,
                units_before=units_before,
                units_after=units_after,
            )
        records.append(given)
    return tuple(records)


_RECORD_KEYS: Final = (
    "id",
    "summaryId",
    "boundary",
    "compactedMessageIds",
    "unitsBefore",
    "unitsAfter",
)


def _record_integer(value: object, path: str, minimum: int) -> int:
    if type_of(value) is not int or not minimum <= value <= MAX_SAFE_INTEGER:  # pyright: ignore[reportOperatorIssue]
        _fail("CONTEXT_INVALID_INPUT", f"{path} must be a safe integer >= {minimum}")
    return value  # pyright: ignore[reportReturnType]


def _snapshot_messages(value: object, budget: _Budget) -> tuple[Message, ...]:
    """Snapshot and validate a transcript; every problem is ``CONTEXT_INVALID_TRANSCRIPT``
    except ``CONTEXT_LIMIT_EXCEEDED``."""
    try:
        entries = _array(value, "Context messages", budget.limits.max_messages)
        budget.add_items(len(entries))
        messages = tuple(
            _snapshot_message(entry, index, budget) for index, entry in enumerate(entries)
        )
        _check_transcript(messages)
        return messages
    except ContextCompactionError as error:
        if error.code in ("CONTEXT_LIMIT_EXCEEDED", "CONTEXT_INVALID_TRANSCRIPT"):
            raise
        raise ContextCompactionError("CONTEXT_INVALID_TRANSCRIPT", error.message) from error
    except Exception as error:
        raise ContextCompactionError(
            "CONTEXT_INVALID_TRANSCRIPT", "Context messages could not be inspected safely"
        ) from error


def _check_transcript(messages: tuple[Message, ...]) -> None:
    problems = validate_transcript(messages)
    if problems:
        first = problems[0]
        _fail(
            "CONTEXT_INVALID_TRANSCRIPT",
            f"Context transcript is invalid: {first.code} at message {first.message_index}"
            f" ({first.message})",
        )


def _snapshot_message(value: object, index: int, budget: _Budget) -> Message:
    path = f"Context messages[{index}]"
    kind = type_of(value)
    if kind is UserMessage:
        user: UserMessage = value  # pyright: ignore[reportAssignmentType]
        budget.name(user.id, f"{path}.id")
        budget.text(user.content, f"{path}.content")
        return user
    if kind is AssistantMessage:
        assistant: AssistantMessage = value  # pyright: ignore[reportAssignmentType]
        budget.name(assistant.id, f"{path}.id")
        blocks = _array(assistant.content, f"{path}.content", budget.max_items)
        budget.add_items(len(blocks))
        for position, block in enumerate(blocks):
            _snapshot_block(block, f"{path}.content[{position}]", budget)
        return assistant
    if kind is ToolResultMessage:
        result: ToolResultMessage = value  # pyright: ignore[reportAssignmentType]
        budget.name(result.id, f"{path}.id")
        budget.name(result.tool_call_id, f"{path}.toolCallId")
        budget.name(result.tool_name, f"{path}.toolName")
        budget.text(result.content, f"{path}.content")
        if type_of(result.is_error) is not bool:
            _fail("CONTEXT_INVALID_TRANSCRIPT", f"{path}.isError must be a boolean")
        return result
    record = _record_fields(value, path)
    role = _required(record, "role", path)
    message_id = budget.name(_required(record, "id", path), f"{path}.id")
    if type_of(role) is str and role == "user":
        content = budget.text(_required(record, "content", path), f"{path}.content")
        return UserMessage(id=message_id, content=content)
    if type_of(role) is str and role == "assistant":
        raw_blocks = _array(_required(record, "content", path), f"{path}.content", budget.max_items)
        budget.add_items(len(raw_blocks))
        return AssistantMessage(
            id=message_id,
            content=tuple(
                _snapshot_block(block, f"{path}.content[{position}]", budget)
                for position, block in enumerate(raw_blocks)
            ),
        )
    if type_of(role) is str and role == "toolResult":
        call_id = budget.name(_required(record, "toolCallId", path), f"{path}.toolCallId")
        name = budget.name(_required(record, "toolName", path), f"{path}.toolName")
        content = budget.text(_required(record, "content", path), f"{path}.content")
        is_error = _required(record, "isError", path)
        if type_of(is_error) is not bool:
            _fail("CONTEXT_INVALID_TRANSCRIPT", f"{path}.isError must be a boolean")
        return ToolResultMessage(
            id=message_id,
            tool_call_id=call_id,
            tool_name=name,
            content=content,
            is_error=is_error,  # pyright: ignore[reportArgumentType]
        )
    _fail("CONTEXT_INVALID_TRANSCRIPT", f'{path}.role must be "user", "assistant" or "toolResult"')


def _snapshot_block(value: object, path: str, budget: _Budget) -> AssistantBlock:
    kind = type_of(value)
    if kind is TextBlock:
        text_block: TextBlock = value  # pyright: ignore[reportAssignmentType]
        budget.text(text_block.text, f"{path}.text")
        return text_block
    if kind is ThinkingBlock:
        thinking: ThinkingBlock = value  # pyright: ignore[reportAssignmentType]
        budget.text(thinking.text, f"{path}.text")
        if thinking.signature is not None:
            budget.text(thinking.signature, f"{path}.signature")
        return thinking
    if kind is ToolCall:
        call: ToolCall = value  # pyright: ignore[reportAssignmentType]
        budget.name(call.id, f"{path}.id")
        budget.name(call.name, f"{path}.name")
        _check_json(call.arguments, 0, f"{path}.arguments", budget, set())
        if call.raw_arguments is not None:
            budget.text(call.raw_arguments, f"{path}.rawArguments")
        return call
    record = _record_fields(value, path)
    block_type = _required(record, "type", path)
    if type_of(block_type) is str and block_type == "text":
        return TextBlock(text=budget.text(_required(record, "text", path), f"{path}.text"))
    if type_of(block_type) is str and block_type == "thinking":
        text = budget.text(_required(record, "text", path), f"{path}.text")
        signature = record.get("signature")
        if signature is not None:
            signature = budget.text(signature, f"{path}.signature")
        redacted = record.get("redacted", False)
        if type_of(redacted) is not bool:
            _fail("CONTEXT_INVALID_TRANSCRIPT", f"{path}.redacted must be a boolean")
        return ThinkingBlock(text=text, signature=signature, redacted=redacted)  # pyright: ignore[reportArgumentType]
    if type_of(block_type) is str and block_type == "toolCall":
        call_id = budget.name(_required(record, "id", path), f"{path}.id")
        name = budget.name(_required(record, "name", path), f"{path}.name")
        arguments = _required(record, "arguments", path)
        if type_of(arguments) is not dict and type_of(arguments) is not JsonObject:
            _fail("CONTEXT_INVALID_TRANSCRIPT", f"{path}.arguments must be a JSON object")
        _check_json(arguments, 0, f"{path}.arguments", budget, set())
        raw = record.get("rawArguments")
        if raw is not None:
            raw = budget.text(raw, f"{path}.rawArguments")
        try:
            return ToolCall(id=call_id, name=name, arguments=arguments, raw_arguments=raw)  # pyright: ignore[reportArgumentType]
        except ValueError as error:
            _fail("CONTEXT_INVALID_TRANSCRIPT", f"{path}: {error}")
    _fail("CONTEXT_INVALID_TRANSCRIPT", f'{path}.type must be "text", "thinking" or "toolCall"')


_MAX_FLOAT: Final = float.fromhex("0x1.fffffffffffffp+1023")


def _check_json(value: object, depth: int, path: str, budget: _Budget, active: set[int]) -> None:
    """Check a JSON value within the budget: depth first, then cycles, then its items."""
    if depth > budget.max_depth:
        _fail("CONTEXT_LIMIT_EXCEEDED", f"{path} is nested deeper than {budget.max_depth}")
    kind = type_of(value)
    if value is None or kind is bool:
        return
    if kind is str:
        budget.text(value, path)
        return
    if kind is int:
        if not -_MAX_FLOAT <= value <= _MAX_FLOAT:  # pyright: ignore[reportOperatorIssue]
            _fail("CONTEXT_INVALID_TRANSCRIPT", f"{path} is not a finite JSON number")
        return
    if kind is float:
        if not -_MAX_FLOAT <= value <= _MAX_FLOAT:  # pyright: ignore[reportOperatorIssue]
            _fail("CONTEXT_INVALID_TRANSCRIPT", f"{path} is not a finite JSON number")
        return
    if kind is not dict and kind is not JsonObject and kind is not list and kind is not tuple:
        _fail("CONTEXT_INVALID_TRANSCRIPT", f"{path} is not a JSON value")
    marker = id(value)
    if marker in active:
        _fail("CONTEXT_INVALID_TRANSCRIPT", f"{path} must not be circular")
    active.add(marker)
    try:
        if kind is list or kind is tuple:
            items: tuple[object, ...] = tuple(value)  # pyright: ignore[reportArgumentType]
            budget.add_items(len(items))
            for position, item in enumerate(items):
                _check_json(item, depth + 1, f"{path}[{position}]", budget, active)
            return
        mapping: Mapping[object, object] = value  # pyright: ignore[reportAssignmentType]
        budget.add_items(len(mapping))
        pairs = list(mapping.items())
        for key, _ in pairs:  # every key first: no lookup below may run caller code
            if type_of(key) is not str:
                _fail("CONTEXT_INVALID_TRANSCRIPT", f"{path} keys must be strings")
        for key, item in pairs:
            name: str = key  # pyright: ignore[reportAssignmentType]
            budget.text(name, f"{path} key")
            _check_json(item, depth + 1, f"{path}.{name}", budget, active)
    finally:
        active.discard(marker)
