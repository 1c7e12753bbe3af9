"""The bounds a context is built and compacted within: the workshop's constants, and
``ContextLimits``, which carries them (or a coding session's larger ones) with a context."""

from __future__ import annotations

from typing import Final

from tether._base.dataclass import dataclass
from tether._base.exact_types import exactly
from tether.agent.compaction._errors import fail
from tether.models.limits import check_positive_fields

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
        check_positive_fields(self, "ContextLimits")

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


WORKSHOP_LIMITS: Final = ContextLimits()
"""The workshop's limits: every ``limits`` field's default."""


def limits_of(value: object, owner: str) -> ContextLimits:
    """``value`` when it is exactly a ``ContextLimits`` (never a subclass)."""
    if not exactly(value, ContextLimits):
        fail("CONTEXT_INVALID_INPUT", f"{owner} limits must be ContextLimits")
    return value
