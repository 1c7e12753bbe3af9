"""Where a compaction may cut a transcript: tool rounds are never split
(``group_tool_rounds``), and the first cut that fits the budget is chosen
(``select_compaction_boundary``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

from tether._base.dataclass import dataclass
from tether.agent.compaction._context import ActiveContext, ActiveContextInput
from tether.agent.compaction._errors import fail
from tether.agent.compaction._limits import WORKSHOP_LIMITS, ContextLimits, limits_of
from tether.agent.compaction._options import (
    CompactContextOptions,
    ContextBoundaryOptions,
    boundary_of,
    context_for,
)
from tether.agent.compaction._snapshot import Budget, snapshot_messages
from tether.agent.compaction._units import message_units, requirements_units
from tether.protocol import Message


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


def group_tool_rounds(
    transcript: Sequence[Message | Mapping[str, object]], *, limits: ContextLimits | None = None
) -> tuple[ContextToolGroup, ...]:
    """Split a transcript into the groups a compaction boundary may fall between.

    The transcript is validated first against ``limits`` (the workshop's when omitted):
    ``CONTEXT_INVALID_TRANSCRIPT``, ``CONTEXT_LIMIT_EXCEEDED``; the groups cover it in order,
    without gaps. A transcript of an ``ActiveContext`` was checked under its limits: pass
    ``limits=context.limits`` to group ``context.messages``.
    """
    chosen = WORKSHOP_LIMITS if limits is None else limits_of(limits, "Transcript")
    return tool_groups(snapshot_messages(transcript, Budget(chosen)))


def select_compaction_boundary(
    context: ActiveContextInput, options: ContextBoundaryOptions | CompactContextOptions
) -> int | None:
    """The first group edge that brings the context within ``options.target_units``.

    ``requirements + summary_max_units + retained messages <= target_units`` (the existing
    summary is not counted: it is replaced), with at least ``retain_recent_messages``
    messages kept; ``None`` when no boundary qualifies. It works within the context's limits
    (see ``compact_context``), and checks the options against them.
    """
    built = context_for(context, options)
    target, summary_max, retain = boundary_of(options, built.limits)
    return select_boundary(built, target, summary_max, retain)


def tool_groups(messages: tuple[Message, ...]) -> tuple[ContextToolGroup, ...]:
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
                fail("CONTEXT_INVALID_TRANSCRIPT", f'Tool call "{block.id}" has no result')
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


def select_boundary(
    context: ActiveContext, target: int, summary_max: int, retain: int
) -> int | None:
    latest = len(context.messages) - retain
    if latest <= 0:
        return None
    fixed = requirements_units(context.requirements) + summary_max
    units = [message_units(message) for message in context.messages]
    retained = sum(units)
    for group in tool_groups(context.messages):
        retained -= sum(units[group.start_index : group.end_index])
        if group.end_index > latest:
            return None
        if fixed + retained <= target:
            return group.end_index
    return None
