"""The plain values a context holds besides its messages: requirements, the summary and the
compaction records. They are checked when a context holding them is built (``_snapshot``)."""

from __future__ import annotations

from tether._base.dataclass import dataclass


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
