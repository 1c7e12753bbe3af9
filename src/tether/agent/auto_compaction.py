"""Automatic compaction: when an Agent's context nears the model's window, summarize a prefix.

``AutoCompaction`` is the policy an ``Agent`` takes (``Agent(compaction=...)``). Before each
model turn the Agent asks ``context_tokens``: the last response's reported usage (input,
cached reads and writes, output: everything the model saw and said) plus a chars/4 estimate
(``tether.agent.compaction.estimate_tokens``) of the messages added since; with no usage yet,
the estimate of the whole context. When that exceeds ``context_window - reserve_tokens``, the
Agent compacts with ``compact_context`` (checkpoint 11: a boundary never splits a tool round;
any failure changes nothing) to a target of ``target_ratio`` of the usable window, keeping at
least ``keep_recent_messages``.

The summary becomes the first message the model sees: a user message with the summary's ID
whose content is ``SUMMARY_PREFIX`` + the summary. A failed compaction does not stop the
run: the turn goes ahead with the full context (the model may then refuse it as too long), and
the error is kept on the Agent (``Agent.last_compaction_error``). Units are the deterministic
estimate's (about one per character); tokens are converted at ``CODE_POINTS_PER_TOKEN``.
"""

from __future__ import annotations

from typing import Final

from tether._base.dataclass import dataclass
from tether._base.exact_types import type_of
from tether.agent.compaction import (
    CODE_POINTS_PER_TOKEN,
    ActiveContext,
    CompactContextOptions,
    ContextSummarizer,
    ContextSummary,
    estimate_context_units,
    group_tool_rounds,
    message_units,
)
from tether.models.limits import check_positive
from tether.protocol import MAX_SAFE_INTEGER, Message, ModelUsage, UserMessage

__all__ = ["SUMMARY_PREFIX", "AutoCompaction", "forced_options", "summary_message"]

SUMMARY_PREFIX: Final = (
    "The conversation before this point was compacted to save context. Summary of it:\n\n"
)
"""What the summary message's content starts with, so the model reads it as a summary."""


@dataclass(frozen=True, slots=True, kw_only=True)
class AutoCompaction:
    """When and how far an Agent compacts its context (see the module docstring).

    * ``context_window``: the model's context in tokens (e.g. 128_000);
    * ``reserve_tokens``: room kept free for the next answer (at most half the window;
      default 16,384, or a quarter of a window smaller than 65,536);
    * ``target_ratio``: the share of the usable window a compacted context aims at (0.5);
    * ``keep_recent_messages``: messages that always stay verbatim (default 2);
    * ``summary_max_tokens``: the summary's budget (default 4,096 tokens);
    * ``summarizer``: writes summaries; ``None`` asks the Agent's own model
      (``tether.agent.summarizer.model_summarizer``).
    """

    context_window: int
    reserve_tokens: int | None = None
    target_ratio: float = 0.5
    keep_recent_messages: int = 2
    summary_max_tokens: int = 4_096
    summarizer: ContextSummarizer | None = None

    def __post_init__(self) -> None:
        if self.reserve_tokens is None and type_of(self.context_window) is int:
            object.__setattr__(self, "reserve_tokens", min(16_384, self.context_window // 4) or 1)
        for name in ("context_window", "reserve_tokens", "summary_max_tokens"):
            check_positive(getattr(self, name), f"AutoCompaction.{name}")
        keep = self.keep_recent_messages
        if type_of(keep) is not int or not 0 <= keep <= MAX_SAFE_INTEGER:
            raise TypeError("AutoCompaction.keep_recent_messages must be a non-negative integer")
        if self.reserve * 2 > self.context_window:
            raise TypeError("AutoCompaction.reserve_tokens must be at most half the window")
        ratio = self.target_ratio
        if type_of(ratio) is not float or not 0.0 < ratio < 1.0:
            raise TypeError("AutoCompaction.target_ratio must be a float between 0 and 1")
        if self.summarizer is not None and not callable(self.summarizer):
            raise TypeError("AutoCompaction.summarizer must be callable or None")

    @property
    def reserve(self) -> int:
        """``reserve_tokens`` as settled at construction (never ``None``)."""
        reserve = self.reserve_tokens
        assert reserve is not None  # set in __post_init__
        return reserve

    @property
    def threshold_tokens(self) -> int:
        """Compaction starts above this many tokens of context."""
        return self.context_window - self.reserve

    def due(self, tokens: int) -> bool:
        """Whether a context of ``tokens`` should be compacted before the next turn."""
        return tokens > self.threshold_tokens

    def options(
        self,
        context: ActiveContext,
        *,
        tokens: int,
        summarizer: ContextSummarizer,
        summary_id: str,
        record_id: str,
    ) -> CompactContextOptions:
        """``compact_context`` options that shrink ``context``, now ``tokens`` tokens, to the
        target. The target in units keeps the context's own ratio of units to tokens, so a
        model whose reported usage is far from the chars/4 estimate still gets the share of
        its window it asked for."""
        units = estimate_context_units(context)
        goal = int(self.threshold_tokens * self.target_ratio)
        target = max(2, min(units - 1, units * goal // max(tokens, 1)))
        summary_units = max(1, min(self.summary_max_tokens * CODE_POINTS_PER_TOKEN, target // 2))
        return CompactContextOptions(
            limits=context.limits,
            max_units=target,
            target_units=target,
            summary_max_units=summary_units,
            retain_recent_messages=min(self.keep_recent_messages, len(context.messages)),
            summary_id=summary_id,
            record_id=record_id,
            summarizer=summarizer,
        )


def forced_options(
    policy: AutoCompaction,
    context: ActiveContext,
    *,
    summarizer: ContextSummarizer,
    summary_id: str,
    record_id: str,
) -> CompactContextOptions | None:
    """Options for a compaction asked for now (``/compact``): everything but the last
    ``keep_recent_messages`` (extended to whole tool rounds) goes into the summary, whatever
    the context's size. ``None`` when that would not make the context smaller."""
    messages = context.messages
    keep = min(policy.keep_recent_messages, len(messages))
    groups = group_tool_rounds(list(messages), limits=context.limits) if messages else ()
    retained = 0
    kept = 0
    for group in reversed(groups):
        if kept >= keep:
            break
        kept += len(group.messages)
        retained += sum(map(message_units, group.messages))
    units = estimate_context_units(context)
    requirements = units - sum(map(message_units, messages))
    if context.summary is not None:
        requirements -= 5 + len(context.summary.id) + len(context.summary.content)
    summary_units = min(policy.summary_max_tokens * CODE_POINTS_PER_TOKEN, max(256, units // 4))
    target = requirements + retained + summary_units
    if kept >= len(messages) or target >= units:
        return None
    return CompactContextOptions(
        limits=context.limits,
        max_units=target,
        target_units=target,
        summary_max_units=summary_units,
        retain_recent_messages=kept,
        summary_id=summary_id,
        record_id=record_id,
        summarizer=summarizer,
    )


def context_tokens(messages: list[Message], last_usage: ModelUsage | None, seen: int) -> int:
    """Tokens of context the next request carries: ``last_usage`` (the last response's) for
    the first ``seen`` messages plus a chars/4 estimate of the rest; the whole estimate
    without it. The messages are the Agent's own (valid), so they are counted unchecked."""
    if last_usage is None:
        return _estimate(messages)
    reported = (
        last_usage.input_tokens
        + last_usage.cache_read_tokens
        + last_usage.cache_write_tokens
        + last_usage.output_tokens
    )
    return reported + _estimate(messages[seen:])


def _estimate(messages: list[Message]) -> int:
    units = sum(map(message_units, messages))
    return -(-units // CODE_POINTS_PER_TOKEN)


def summary_message(summary: ContextSummary) -> UserMessage:
    """The user message that carries ``summary`` to the model."""
    return UserMessage(id=summary.id, content=SUMMARY_PREFIX + summary.content)
