"""``ActiveContext``, what a model sees, valid by construction; and building one from its
JSON form (``build_active_context``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, Final, TypeAlias

from tether._base.dataclass import dataclass
from tether._base.exact_types import exactly, is_array, type_of
from tether.agent.compaction._errors import fail
from tether.agent.compaction._limits import WORKSHOP_LIMITS, ContextLimits, limits_of
from tether.agent.compaction._records import (
    ContextCompactionRecord,
    ContextRequirement,
    ContextSummary,
)
from tether.agent.compaction._snapshot import record_fields, snapshot_context
from tether.protocol import Message


@dataclass(frozen=True, slots=True, kw_only=True)
class ActiveContext:
    """What a model sees: requirements, an optional summary, the transcript, and the record
    of compactions so far. Valid by construction (see the package docstring); sequences may
    be given as lists and are stored as tuples, messages may be given in their JSON form.
    ``limits`` are the bounds it is checked against (the workshop's by default); they travel
    with it: ``dataclasses.replace`` and ``compact_context`` keep them.
    """

    requirements: tuple[ContextRequirement, ...] = ()
    summary: ContextSummary | None = None
    messages: tuple[Message, ...] = ()
    compactions: tuple[ContextCompactionRecord, ...] = ()
    limits: ContextLimits = WORKSHOP_LIMITS

    def __post_init__(self) -> None:
        limits = limits_of(self.limits, "Context")
        snapshot = snapshot_context(
            self.requirements, self.summary, self.messages, self.compactions, limits
        )
        for name, value in zip(CONTEXT_FIELDS, snapshot, strict=True):
            if value is not getattr(self, name):
                object.__setattr__(self, name, value)


CONTEXT_FIELDS: Final = ("requirements", "summary", "messages", "compactions")

ActiveContextInput: TypeAlias = ActiveContext | Mapping[str, object]
"""An ``ActiveContext``, or its JSON form: an exact ``dict`` with any of the keys
``requirements``, ``summary``, ``messages``, ``compactions`` (camelCase record fields)."""

ContextInput: TypeAlias = ActiveContextInput | Sequence[Message | Mapping[str, object]]
"""What the estimators accept: a context input, or a bare transcript (an exact list/tuple)."""


def build_active_context(
    context: ActiveContextInput, *, limits: ContextLimits | None = None
) -> ActiveContext:
    """Validate and snapshot ``context`` (see the package docstring).

    A ``dict`` is the JSON form: its keys are ``requirements``, ``summary``, ``messages`` and
    ``compactions`` (each optional; an unknown key is ``CONTEXT_INVALID_INPUT``, like an
    unknown keyword); it is checked against ``limits`` (the workshop's when omitted). An
    ``ActiveContext`` is returned as it is (it is valid by construction) when ``limits`` is
    omitted or equal to its own; other ``limits`` check it again under them
    (``dataclasses.replace(context, limits=limits)``).
    """
    return build_context(context, limits=limits)


def build_context(context: object, *, limits: ContextLimits | None) -> ActiveContext:
    """``build_active_context`` for any value (an operation's input is checked here)."""
    chosen = None if limits is None else limits_of(limits, "Context")
    if exactly(context, ActiveContext):
        if chosen is None or chosen == context.limits:
            return context
        return dataclasses.replace(context, limits=chosen)
    if type_of(context) is not dict:
        fail("CONTEXT_INVALID_INPUT", "Context must be an ActiveContext or a dict")
    fields = record_fields(context, "Context")  # exact string keys: no caller code runs
    unknown = [key for key in fields if key not in CONTEXT_FIELDS]
    if unknown:
        fail("CONTEXT_INVALID_INPUT", f'Context has an unknown field "{unknown[0]}"')
    built: Any = ActiveContext  # checks (and wraps any unexpected failure) in __post_init__
    return built(**fields, limits=WORKSHOP_LIMITS if chosen is None else chosen)


def context_of(context: object, limits: ContextLimits | None) -> ActiveContext:
    if is_array(context):
        chosen = WORKSHOP_LIMITS if limits is None else limits_of(limits, "Context")
        # a bare transcript (its messages, or their JSON forms): checked and snapshotted into
        # a tuple of messages by __post_init__, as every context input is
        return ActiveContext(messages=tuple(context), limits=chosen)
    return build_context(context, limits=limits)
