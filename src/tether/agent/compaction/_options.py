"""The options of boundary selection and compaction, and the checks that keep their budgets
within the limits they run with (their own when built, the context's when used)."""

from __future__ import annotations

from tether._async.race import signal_aborted
from tether._base.dataclass import dataclass
from tether._base.exact_types import exactly, instance_of
from tether._base.strings import is_non_empty
from tether.abort import AbortSignal
from tether.agent.compaction._context import ActiveContext, build_context
from tether.agent.compaction._errors import ContextCompactionError, fail
from tether.agent.compaction._limits import WORKSHOP_LIMITS, ContextLimits, limits_of
from tether.agent.compaction._summarizer import ContextSummarizer
from tether.agent.compaction._units import cp
from tether.protocol import MAX_SAFE_INTEGER


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
    limits: ContextLimits = WORKSHOP_LIMITS

    def __post_init__(self) -> None:
        limits = limits_of(self.limits, "Boundary options")
        check_budget(self.target_units, self.summary_max_units, self.retain_recent_messages, limits)


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
    limits: ContextLimits = WORKSHOP_LIMITS

    def __post_init__(self) -> None:
        check_compact_options(self, limits_of(self.limits, "Compaction options"))


def budget_integer(name: str, value: object, minimum: int) -> int:
    if not (exactly(value, int) and minimum <= value <= MAX_SAFE_INTEGER):
        fail("CONTEXT_INVALID_BUDGET", f"{name} must be a safe integer >= {minimum}")
    return value


def check_budget(
    target: object, summary_max: object, retain: object, limits: ContextLimits
) -> None:
    target_units = budget_integer("target_units", target, 1)
    summary_units = budget_integer("summary_max_units", summary_max, 1)
    retained = budget_integer("retain_recent_messages", retain, 0)
    if target_units > limits.max_total_units:
        fail("CONTEXT_INVALID_BUDGET", f"target_units must not exceed {limits.max_total_units}")
    if summary_units > target_units:
        fail("CONTEXT_INVALID_BUDGET", "summary_max_units must not exceed target_units")
    if retained > limits.max_messages:
        fail(
            "CONTEXT_INVALID_BUDGET",
            f"retain_recent_messages must not exceed {limits.max_messages}",
        )


def check_compact_options(options: CompactContextOptions, limits: ContextLimits) -> None:
    check_budget(
        options.target_units, options.summary_max_units, options.retain_recent_messages, limits
    )
    max_units = budget_integer("max_units", options.max_units, 1)
    if max_units > limits.max_total_units:
        fail("CONTEXT_INVALID_BUDGET", f"max_units must not exceed {limits.max_total_units}")
    if options.target_units > max_units:
        fail("CONTEXT_INVALID_BUDGET", "target_units must not exceed max_units")
    for name in ("summary_id", "record_id"):
        value: object = getattr(options, name)
        if not is_non_empty(value):
            fail("CONTEXT_INVALID_INPUT", f"{name} must be a non-empty string")
        if cp(value) > limits.max_string_units:
            fail("CONTEXT_LIMIT_EXCEEDED", f"{name} exceeds {limits.max_string_units} code points")
    if not callable(options.summarizer):
        fail("CONTEXT_INVALID_INPUT", "summarizer must be callable")
    signal = options.signal
    if signal is not None:
        if not instance_of(signal, AbortSignal):
            fail("CONTEXT_INVALID_INPUT", "signal must be an AbortSignal or None")
        try:
            signal_aborted(signal)
        except Exception as error:
            raise ContextCompactionError(
                "CONTEXT_INVALID_INPUT", "signal must be a genuine AbortSignal"
            ) from error


def boundary_of(options: object, limits: ContextLimits) -> tuple[int, int, int]:
    if not (exactly(options, ContextBoundaryOptions) or exactly(options, CompactContextOptions)):
        fail(
            "CONTEXT_INVALID_INPUT",
            "Boundary options must be ContextBoundaryOptions or CompactContextOptions",
        )
    target, summary_max = options.target_units, options.summary_max_units
    retain = options.retain_recent_messages
    check_budget(target, summary_max, retain, limits)
    return target, summary_max, retain


def context_for(context: object, options: object) -> ActiveContext:
    """The context an operation with ``options`` runs on: an ``ActiveContext`` as it is (with
    its own limits), any other input built with the options' ``limits`` (the workshop's when
    the options are not options at all: they are rejected next)."""
    if exactly(context, ActiveContext):
        return context
    chosen: ContextLimits | None = None
    if (
        exactly(options, ContextBoundaryOptions) or exactly(options, CompactContextOptions)
    ) and exactly(options.limits, ContextLimits):
        chosen = options.limits
    return build_context(context, limits=chosen)
