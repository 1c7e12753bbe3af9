"""Checkpoint 11: context compaction at safe boundaries (``tether.agent.compaction``), and the
model-backed summarizer (``tether.agent.summarizer``).

The workshop's tests one by one (its ``toolTranscript`` fixture reproduced exactly: its units
are 31 + 119 + 30 + 29 + 28 = 237), then every error code, every failure path of
``compact_context`` (the input is never changed), cancellation before, during and after the
summarizer, the Python replacements of the JavaScript-only async cases, and the summarizer.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import pickle
from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Iterator
from typing import Any, cast

import pytest

import tether.agent.compaction as compaction
import tether.agent.compaction._compact as compact_module
import tether.agent.compaction._snapshot as snapshot_module
from support import Impostor
from tether._base.tether_error import TetherError
from tether.abort import AbortController, AbortError, AbortSignal
from tether.agent.compaction import (
    CODE_POINTS_PER_TOKEN,
    MAX_CONTEXT_ASYNC_DEPTH,
    MAX_CONTEXT_COLLECTION_ITEMS,
    MAX_CONTEXT_DEPTH,
    MAX_CONTEXT_MESSAGES,
    MAX_CONTEXT_RECORDS,
    MAX_CONTEXT_REQUIREMENTS,
    MAX_CONTEXT_STRING_UNITS,
    MAX_CONTEXT_TOTAL_UNITS,
    ActiveContext,
    CompactContextOptions,
    CompactedCompaction,
    ContextBoundaryOptions,
    ContextCompactionError,
    ContextCompactionErrorCode,
    ContextCompactionRecord,
    ContextCompactionResult,
    ContextLimits,
    ContextRequirement,
    ContextSummarizer,
    ContextSummary,
    ContextSummaryRequest,
    UnchangedCompaction,
    build_active_context,
    compact_context,
    estimate_context_units,
    estimate_tokens,
    group_tool_rounds,
    select_compaction_boundary,
)
from tether.agent.session import SessionLimits
from tether.agent.summarizer import (
    DEFAULT_SUMMARY_SYSTEM,
    model_summarizer,
    render_summary_prompt,
)
from tether.jsonvalue import JsonObject
from tether.models.limits import RunLimits
from tether.models.scripted import ScriptedModel, text_reply, tool_call_reply
from tether.protocol import (
    AssistantMessage,
    Message,
    ModelChunk,
    ModelRequest,
    ModelResponse,
    TextBlock,
    ThinkingBlock,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    assert_never,
    to_json,
)

# --- fixtures -------------------------------------------------------------------------------


def tool_transcript() -> tuple[Message, ...]:
    """The workshop's ``toolTranscript``: a user turn, one assistant turn with two calls
    between two texts, both results, and a recent user turn."""
    return (
        UserMessage(id="old-user", content="Inspect both files."),
        AssistantMessage(
            id="tool-round",
            content=(
                TextBlock(text="I will read both. "),
                ToolCall(id="call-a", name="read", arguments=JsonObject({"path": "a.txt"})),
                ToolCall(id="call-b", name="read", arguments=JsonObject({"path": "b.txt"})),
                TextBlock(text="Then I will compare them."),
            ),
        ),
        ToolResultMessage(id="result-a", tool_call_id="call-a", tool_name="read", content="alpha"),
        ToolResultMessage(id="result-b", tool_call_id="call-b", tool_name="read", content="beta"),
        UserMessage(id="recent-user", content="What changed?"),
    )


def tool_transcript_json() -> list[dict[str, Any]]:
    """The same transcript in its JSON form (camelCase dicts)."""
    return [cast("dict[str, Any]", to_json(message)) for message in tool_transcript()]


def summary_units(summary_id: str, content: str) -> int:
    return estimate_context_units({"summary": {"id": summary_id, "content": content}})


def options(
    context: ActiveContext,
    summarizer: ContextSummarizer,
    summary_max_units: int,
    signal: AbortSignal | None = None,
    **changes: Any,
) -> CompactContextOptions:
    """The workshop's ``compactionOptions``: compact (max one below the current size) down to
    the requirements, the last message and the summary budget, keeping one message."""
    target = (
        estimate_context_units(
            {"requirements": context.requirements, "messages": [context.messages[-1]]}
        )
        + summary_max_units
    )
    chosen = CompactContextOptions(
        max_units=estimate_context_units(context) - 1,
        target_units=target,
        summary_max_units=summary_max_units,
        retain_recent_messages=1,
        summary_id="summary-001",
        record_id="compaction-001",
        summarizer=summarizer,
        signal=signal,
    )
    return dataclasses.replace(chosen, **changes) if changes else chosen


def fixed(text: str) -> ContextSummarizer:
    """A summarizer that answers ``text`` asynchronously."""

    async def summarize(request: ContextSummaryRequest, signal: AbortSignal) -> str:
        return text

    return summarize


class Calls:
    """A summarizer that records its calls and answers synchronously."""

    def __init__(self, answer: object = "unused") -> None:
        self.requests: list[ContextSummaryRequest] = []
        self.signals: list[AbortSignal] = []
        self.answer = answer

    def __call__(self, request: ContextSummaryRequest, signal: AbortSignal) -> str:
        self.requests.append(request)
        self.signals.append(signal)
        return cast(str, self.answer)


def hostile(value: Callable[[Any, Any], object]) -> ContextSummarizer:
    """A summarizer that breaks its declared type (returns anything)."""
    return cast(ContextSummarizer, value)


def raises_code(
    code: ContextCompactionErrorCode, action: Callable[[], object]
) -> ContextCompactionError:
    with pytest.raises(ContextCompactionError) as caught:
        action()
    assert caught.value.code == code, caught.value
    return caught.value


async def fails_with(
    code: ContextCompactionErrorCode, pending: Awaitable[ContextCompactionResult]
) -> ContextCompactionError:
    with pytest.raises(ContextCompactionError) as caught:
        await pending
    assert caught.value.code == code, caught.value
    return caught.value


def base_context() -> ActiveContext:
    return build_active_context({"messages": tool_transcript()})


# --- grouping (workshop tests 1-2) ----------------------------------------------------------


def test_groups_every_tool_call_with_all_of_its_results_and_keeps_adjacent_text() -> None:
    groups = group_tool_rounds(tool_transcript())
    assert [
        (group.kind, group.start_index, group.end_index, [m.role for m in group.messages])
        for group in groups
    ] == [
        ("message", 0, 1, ["user"]),
        ("toolRound", 1, 4, ["assistant", "toolResult", "toolResult"]),
        ("message", 4, 5, ["user"]),
    ]
    assert type(groups) is tuple
    assert all(type(group.messages) is tuple for group in groups)
    with pytest.raises(dataclasses.FrozenInstanceError):
        groups[0].end_index = 2  # pyright: ignore[reportAttributeAccessIssue]


def test_merges_overlapping_tool_intervals_instead_of_exposing_an_unsafe_boundary() -> None:
    transcript: list[Message] = [
        AssistantMessage(
            id="assistant-a",
            content=(ToolCall(id="call-a", name="read", arguments=JsonObject({})),),
        ),
        AssistantMessage(
            id="assistant-b",
            content=(ToolCall(id="call-b", name="read", arguments=JsonObject({})),),
        ),
        ToolResultMessage(id="result-b", tool_call_id="call-b", tool_name="read", content="b"),
        ToolResultMessage(id="result-a", tool_call_id="call-a", tool_name="read", content="a"),
    ]
    groups = group_tool_rounds(transcript)
    assert [(g.kind, g.start_index, g.end_index) for g in groups] == [("toolRound", 0, 4)]


def test_a_round_starting_inside_another_extends_it_past_its_own_end() -> None:
    transcript: list[Message] = [
        AssistantMessage(id="a1", content=(ToolCall(id="c1", name="t", arguments=JsonObject({})),)),
        AssistantMessage(id="a2", content=(ToolCall(id="c2", name="t", arguments=JsonObject({})),)),
        ToolResultMessage(id="r1", tool_call_id="c1", tool_name="t", content=""),
        UserMessage(id="between", content="still inside round 2"),
        ToolResultMessage(id="r2", tool_call_id="c2", tool_name="t", content=""),
        UserMessage(id="after", content="free"),
    ]
    groups = group_tool_rounds(transcript)
    assert [(g.kind, g.start_index, g.end_index) for g in groups] == [
        ("toolRound", 0, 5),
        ("message", 5, 6),
    ]


def test_an_assistant_message_without_calls_is_its_own_message_group() -> None:
    transcript = [
        UserMessage(id="u", content="hi"),
        AssistantMessage(id="a", content=(TextBlock(text="hello"), ThinkingBlock(text="hm"))),
    ]
    assert [g.kind for g in group_tool_rounds(transcript)] == ["message", "message"]
    assert group_tool_rounds([]) == ()


def test_grouping_accepts_the_json_form() -> None:
    assert group_tool_rounds(tool_transcript_json()) == group_tool_rounds(tool_transcript())


# --- units (workshop test 3 and the worked examples) ----------------------------------------


def test_calculates_an_exact_deterministic_budget_in_unicode_code_points() -> None:
    ascii_context = build_active_context(
        {
            "requirements": [{"id": "r", "content": "AB"}],
            "messages": [UserMessage(id="u", content="a")],
        }
    )
    unicode_context = build_active_context(
        {
            "requirements": [ContextRequirement(id="r", content="AB")],
            "messages": [UserMessage(id="u", content="😀")],
        }
    )
    # requirement: 3 + 1 + 2; user: 4 + 1 + 1
    assert estimate_context_units(ascii_context) == 12
    assert estimate_context_units(unicode_context) == 12
    assert estimate_context_units(unicode_context) == estimate_context_units(
        build_active_context(unicode_context)
    )


def test_a_surrogate_pair_written_as_two_code_points_counts_one_and_a_lone_one_counts_one() -> None:
    pair = [UserMessage(id="u", content="\ud83d\ude00")]
    lone = [UserMessage(id="u", content="\ud83d")]
    assert estimate_context_units(pair) == 6
    assert estimate_context_units(lone) == 6


def test_the_tool_transcript_worked_example_is_237_units() -> None:
    messages = tool_transcript()
    assert estimate_context_units(messages) == 237
    assert estimate_context_units([messages[0]]) == 31
    assert estimate_context_units(messages[1:4]) == 119 + 30 + 29
    assert estimate_context_units([messages[4]]) == 28
    assert (
        estimate_context_units(
            [
                AssistantMessage(id="tool-round", content=(TextBlock(text="x" * 10),)),
            ]
        )
        == 4 + 10 + 2 + 10
    )
    # the JSON form, the dict input and a built context agree
    assert estimate_context_units(tool_transcript_json()) == 237
    assert estimate_context_units({"messages": tool_transcript_json()}) == 237
    assert estimate_context_units(base_context()) == 237


def test_summaries_and_requirements_count_and_records_do_not() -> None:
    record = ContextCompactionRecord(
        id="c0",
        summary_id="s0",
        boundary=1,
        compacted_message_ids=("gone",),
        units_before=10,
        units_after=5,
    )
    context = build_active_context(
        {
            "requirements": [{"id": "req", "content": "Be exact."}],
            "summary": {"id": "s0", "content": "Earlier."},
            "messages": tool_transcript(),
            "compactions": [record],
        }
    )
    assert estimate_context_units(context) == (3 + 3 + 9) + (5 + 2 + 8) + 237


def arguments_units(arguments: dict[str, Any]) -> int:
    """``json(arguments)`` measured through the public estimator."""

    def transcript(args: dict[str, Any]) -> list[Message]:
        return [
            AssistantMessage(
                id="a", content=(ToolCall(id="c", name="t", arguments=JsonObject(args)),)
            ),
            ToolResultMessage(id="r", tool_call_id="c", tool_name="t", content=""),
        ]

    return (
        estimate_context_units(transcript(arguments)) - estimate_context_units(transcript({})) + 2
    )


@pytest.mark.parametrize(
    ("value", "units"),
    [
        (None, 1),
        ("", 1),
        ("ab", 3),
        ("😀", 2),
        (True, 5),
        (False, 6),
        (0, 2),
        (-12, 4),
        (1.0, 2),
        (-0.0, 2),
        (0.1, 4),
        (1e-7, 5),
        (1e21, 6),
        (1e20, 22),
        (2**60, 20),
        (123.456, 8),
        ([], 2),
        ([1, "a"], 2 + (1 + 2) + (1 + 2)),
        ({"k": None}, 2 + 1 + 1 + 1),
        ({"b": 1, "a": [True]}, 2 + (1 + 1 + 2) + (1 + 1 + (2 + 1 + 5))),
    ],
)
def test_json_units_follow_javascript_string_of_numbers(value: Any, units: int) -> None:
    assert arguments_units({"v": value}) == 2 + 1 + 1 + units


def test_the_path_arguments_of_the_worked_example_cost_13() -> None:
    assert arguments_units({"path": "a.txt"}) == 13


def test_thinking_counts_like_text() -> None:
    thinking = [AssistantMessage(id="a", content=(ThinkingBlock(text="abc", signature="sig"),))]
    text = [AssistantMessage(id="a", content=(TextBlock(text="abc"),))]
    assert estimate_context_units(thinking) == estimate_context_units(text) == 4 + 1 + 2 + 3


def test_estimate_tokens_is_units_over_four_rounded_up() -> None:
    assert CODE_POINTS_PER_TOKEN == 4
    assert estimate_tokens(tool_transcript()) == 60  # ceil(237 / 4)
    assert estimate_tokens([UserMessage(id="u", content="abcd")]) == 3  # ceil(9 / 4)
    assert estimate_tokens({}) == 0
    assert estimate_tokens(base_context()) == -(-estimate_context_units(base_context()) // 4)


# --- boundary selection (workshop test 4) ---------------------------------------------------


def test_selects_the_first_safe_boundary_that_reaches_the_target_budget() -> None:
    context = build_active_context(
        {
            "requirements": [{"id": "system", "content": "Never invent file contents."}],
            "messages": tool_transcript(),
        }
    )
    summary_max = summary_units("summary-001", "summary")
    target = (
        estimate_context_units(
            {"requirements": context.requirements, "messages": [context.messages[4]]}
        )
        + summary_max
    )
    chosen = ContextBoundaryOptions(
        target_units=target, summary_max_units=summary_max, retain_recent_messages=1
    )
    assert select_compaction_boundary(context, chosen) == 4
    assert (
        select_compaction_boundary(
            context,
            ContextBoundaryOptions(
                target_units=summary_max,
                summary_max_units=summary_max,
                retain_recent_messages=len(context.messages),
            ),
        )
        is None
    )


def test_the_boundary_is_the_first_group_edge_whose_retained_suffix_fits() -> None:
    context = base_context()
    # fixed = summary_max; after group 0 the rest is 206 units, after the round 28
    assert (
        select_compaction_boundary(
            context,
            ContextBoundaryOptions(
                target_units=216, summary_max_units=10, retain_recent_messages=0
            ),
        )
        == 1
    )
    assert (
        select_compaction_boundary(
            context,
            ContextBoundaryOptions(
                target_units=215, summary_max_units=10, retain_recent_messages=0
            ),
        )
        == 4
    )
    # everything compacted when nothing needs to stay
    assert (
        select_compaction_boundary(
            context,
            ContextBoundaryOptions(target_units=10, summary_max_units=10, retain_recent_messages=0),
        )
        == 5
    )


def test_no_boundary_when_the_qualifying_group_would_reach_into_the_retained_messages() -> None:
    context = base_context()
    # the round ends at 4; keeping 2 messages allows boundaries up to 3 only
    assert (
        select_compaction_boundary(
            context,
            ContextBoundaryOptions(target_units=50, summary_max_units=10, retain_recent_messages=2),
        )
        is None
    )
    assert (
        select_compaction_boundary(
            build_active_context({}),
            ContextBoundaryOptions(target_units=5, summary_max_units=1, retain_recent_messages=0),
        )
        is None
    )


def test_no_boundary_when_requirements_and_the_summary_budget_alone_exceed_the_target() -> None:
    context = build_active_context(
        {"requirements": [{"id": "r", "content": "z" * 40}], "messages": tool_transcript()}
    )
    chosen = ContextBoundaryOptions(target_units=50, summary_max_units=10, retain_recent_messages=0)
    assert select_compaction_boundary(context, chosen) is None  # 44 + 10 > 50 even with nothing


def test_the_existing_summary_is_not_counted_but_requirements_are() -> None:
    with_summary = build_active_context(
        {"summary": {"id": "s", "content": "x" * 500}, "messages": tool_transcript()}
    )
    chosen = ContextBoundaryOptions(target_units=38, summary_max_units=10, retain_recent_messages=1)
    assert select_compaction_boundary(with_summary, chosen) == 4
    with_requirement = build_active_context(
        {"requirements": [{"id": "r", "content": "y"}], "messages": tool_transcript()}
    )
    assert select_compaction_boundary(with_requirement, chosen) is None  # 5 more units


def test_compact_options_also_serve_as_boundary_options() -> None:
    context = base_context()
    chosen = options(context, fixed("s"), 30)
    assert select_compaction_boundary(context, chosen) == 4


# --- compaction (workshop tests 5-8) --------------------------------------------------------


async def test_compacts_a_safe_prefix_retains_requirements_and_recent_messages() -> None:
    context = build_active_context(
        {
            "requirements": [{"id": "system", "content": "Never invent file contents."}],
            "messages": tool_transcript(),
        }
    )
    summary = ContextSummary(id="summary-001", content="Read a.txt and b.txt.")
    summary_max = summary_units(summary.id, summary.content)
    calls = Calls(summary.content)

    result = await compact_context(context, options(context, calls, summary_max))

    assert result.status == "compacted"
    assert isinstance(result, CompactedCompaction)
    assert result.context.requirements == context.requirements
    assert result.context.summary == summary
    assert [message.id for message in result.context.messages] == ["recent-user"]
    assert len(result.context.compactions) == 1
    assert result.record is result.context.compactions[-1]
    assert result.record == ContextCompactionRecord(
        id="compaction-001",
        summary_id="summary-001",
        boundary=4,
        compacted_message_ids=("old-user", "tool-round", "result-a", "result-b"),
        units_before=estimate_context_units(context),
        units_after=estimate_context_units(result.context),
    )
    assert len(calls.requests) == 1
    request = calls.requests[0]
    assert request.boundary == 4
    assert request.max_summary_units == summary_max
    assert request.max_content_code_points == summary_max - 5 - len("summary-001")
    assert request.previous_summary is None
    assert request.requirements is context.requirements
    assert [message.id for message in request.messages] == [
        "old-user",
        "tool-round",
        "result-a",
        "result-b",
    ]
    assert all(a is b for a, b in zip(request.messages, context.messages, strict=False))
    for frozen in (result, result.context, result.record, request):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(frozen, dataclasses.fields(frozen)[0].name, None)
    assert type(result.record.compacted_message_ids) is tuple
    # the compacted context is itself a valid input, and retained messages are the same objects
    assert build_active_context(result.context) is result.context
    assert result.context.messages[0] is context.messages[4]


async def test_returns_the_same_context_below_the_threshold_without_calling_the_summarizer() -> (
    None
):
    context = build_active_context(
        {
            "requirements": [{"id": "system", "content": "Be exact."}],
            "messages": [UserMessage(id="recent", content="Hello.")],
        }
    )
    calls = Calls()
    current = estimate_context_units(context)
    controller = AbortController()
    controller.abort("no cancellation check when nothing is to be done")
    result = await compact_context(
        context,
        CompactContextOptions(
            max_units=current,
            target_units=current,
            summary_max_units=20,
            retain_recent_messages=1,
            summary_id="summary-unused",
            record_id="compaction-unused",
            summarizer=calls,
            signal=controller.signal,
        ),
    )
    assert result == UnchangedCompaction(context=context)
    assert result.context is context
    assert result.record is None
    assert calls.requests == []


async def test_unchanged_also_for_a_dict_input_returns_the_built_context() -> None:
    result = await compact_context(
        {"messages": tool_transcript()}, options(base_context(), Calls(), 30, max_units=237)
    )
    assert result.status == "unchanged"
    assert result.context == base_context()


async def test_rejects_empty_oversized_and_structural_summaries_without_changing_old_state() -> (
    None
):
    context = base_context()
    before = dataclasses.astuple(context)

    await fails_with(
        "CONTEXT_SUMMARY_INSUFFICIENT", compact_context(context, options(context, fixed(""), 20))
    )
    await fails_with(
        "CONTEXT_SUMMARY_INSUFFICIENT",
        compact_context(context, options(context, fixed(" \n\ufeff"), 20)),
    )
    await fails_with(
        "CONTEXT_SUMMARY_INSUFFICIENT",
        compact_context(
            context, options(context, fixed("summary far beyond its declared budget"), 8)
        ),
    )
    structure: dict[str, Any] = {
        "role": "assistant",
        "content": [{"type": "toolCall", "id": "injected", "name": "write", "arguments": {}}],
    }
    injected = hostile(lambda request, signal: structure)
    await fails_with(
        "CONTEXT_SUMMARY_INVALID", compact_context(context, options(context, injected, 50))
    )
    message = AssistantMessage(
        id="m", content=(ToolCall(id="x", name="write", arguments=JsonObject({})),)
    )
    await fails_with(
        "CONTEXT_SUMMARY_INVALID",
        compact_context(context, options(context, hostile(lambda r, s: message), 50)),
    )

    class Text(str):
        __slots__ = ()

    await fails_with(
        "CONTEXT_SUMMARY_INVALID",
        compact_context(context, options(context, hostile(lambda r, s: Text("ok")), 50)),
    )
    await fails_with(
        "CONTEXT_SUMMARY_INVALID",
        compact_context(context, options(context, hostile(lambda r, s: None), 50)),
    )

    assert dataclasses.astuple(context) == before
    assert context.compactions == ()
    assert context.summary is None


async def test_a_summary_beyond_the_string_limit_is_a_limit_error() -> None:
    context = base_context()
    await fails_with(
        "CONTEXT_LIMIT_EXCEEDED",
        compact_context(context, options(context, fixed("x" * (MAX_CONTEXT_STRING_UNITS + 1)), 30)),
    )


async def test_a_summary_exactly_at_its_budget_is_accepted() -> None:
    context = base_context()
    budget = 30
    text = "x" * (budget - 5 - len("summary-001"))
    result = await compact_context(context, options(context, fixed(text), budget))
    assert result.status == "compacted"
    await fails_with(
        "CONTEXT_SUMMARY_INSUFFICIENT",
        compact_context(context, options(context, fixed(text + "x"), budget)),
    )


async def test_never_retains_a_result_without_its_caller_or_splits_a_call_from_results() -> None:
    context = base_context()
    summary_max = summary_units("summary-001", "Tools completed.")
    result = await compact_context(
        context, options(context, fixed("Tools completed."), summary_max)
    )
    retained = {message.id for message in result.context.messages}
    assert not retained & {"tool-round", "result-a", "result-b"}
    regrouped = [m for group in group_tool_rounds(result.context.messages) for m in group.messages]
    assert tuple(regrouped) == result.context.messages


# --- transcript validation (workshop tests 9-11) --------------------------------------------

ORPHAN: list[dict[str, Any]] = [
    {
        "id": "orphan",
        "role": "toolResult",
        "toolCallId": "missing",
        "toolName": "read",
        "content": "x",
        "isError": False,
    }
]
CALL: dict[str, Any] = {
    "id": "assistant",
    "role": "assistant",
    "content": [{"type": "toolCall", "id": "call", "name": "read", "arguments": {}}],
}


def result_json(result_id: str, name: str = "read", call_id: str = "call") -> dict[str, Any]:
    return {
        "id": result_id,
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": name,
        "content": "x",
        "isError": False,
    }


INVALID_TRANSCRIPTS: list[object] = [
    ORPHAN,
    [CALL, result_json("result-a"), result_json("result-b")],  # duplicate results
    [CALL, result_json("result", name="write")],  # name mismatch
    [None],  # the sparse-array case
    [CALL],  # missing result
    [result_json("early"), CALL],  # result before its call
    [CALL, CALL, result_json("r")],  # duplicate call IDs
    [{"id": "u", "role": "system", "content": "x"}],
    [{"id": "", "role": "user", "content": "x"}],
    [{"id": "u", "role": "user", "content": 1}],
    [{"id": "u", "role": "user"}],
    [{"role": "user", "content": "x"}],
    [{**result_json("r", call_id="c"), "isError": None}],
    [{**CALL, "content": [{"type": "image", "url": "x"}]}],
    [{**CALL, "content": [{"type": "toolCall", "id": "c", "name": "t", "arguments": []}]}],
    [{**CALL, "content": [{"type": "toolCall", "id": "c", "name": "", "arguments": {}}]}],
    [{**CALL, "content": [{"type": "thinking", "text": "t", "redacted": 1}]}],
    [{**CALL, "content": "not a list"}],
    "not a list",
    [UserMessage(id="u", content="x"), 42],
]


@pytest.mark.parametrize("messages", INVALID_TRANSCRIPTS)
def test_rejects_malformed_linkage_duplicates_mismatches_and_holes(messages: object) -> None:
    raises_code(
        "CONTEXT_INVALID_TRANSCRIPT",
        lambda: build_active_context({"messages": messages}),
    )
    raises_code("CONTEXT_INVALID_TRANSCRIPT", lambda: group_tool_rounds(messages))  # pyright: ignore[reportArgumentType]
    raises_code("CONTEXT_INVALID_TRANSCRIPT", lambda: ActiveContext(messages=messages))  # pyright: ignore[reportArgumentType]


def test_an_unexpected_failure_inside_the_transcript_is_an_invalid_transcript(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def explode(messages: object) -> None:
        raise RuntimeError("validator failed")

    monkeypatch.setattr(snapshot_module, "validate_transcript", explode)
    error = raises_code("CONTEXT_INVALID_TRANSCRIPT", lambda: group_tool_rounds(tool_transcript()))
    assert isinstance(error.__cause__, RuntimeError)


def test_a_tampered_protocol_message_is_still_checked() -> None:
    result = ToolResultMessage(id="r", tool_call_id="c", tool_name="t", content="")
    object.__setattr__(result, "is_error", "yes")  # bypassing the frozen dataclass
    call = AssistantMessage(id="a", content=(ToolCall(id="c", name="t", arguments=JsonObject()),))
    raises_code("CONTEXT_INVALID_TRANSCRIPT", lambda: group_tool_rounds([call, result]))
    user = UserMessage(id="u", content="x")
    object.__setattr__(user, "content", 42)
    raises_code("CONTEXT_INVALID_TRANSCRIPT", lambda: group_tool_rounds([user]))


def test_protocol_messages_are_checked_for_linkage_too() -> None:
    messages = tool_transcript()
    error = raises_code("CONTEXT_INVALID_TRANSCRIPT", lambda: group_tool_rounds(messages[:2]))
    assert "MISSING_TOOL_RESULT" in str(error)
    raises_code(
        "CONTEXT_INVALID_TRANSCRIPT", lambda: build_active_context({"messages": messages[2:]})
    )


def test_rejects_subclassed_containers_without_invoking_them() -> None:
    reads: list[str] = []

    class Spy(dict[str, Any]):
        def __getitem__(self, key: str) -> Any:
            reads.append(key)
            return super().__getitem__(key)

        def get(self, key: str, default: Any = None) -> Any:
            reads.append(key)
            return super().get(key, default)

    class SpyList(list[Any]):
        def __iter__(self) -> Iterator[Any]:
            reads.append("iter")
            return super().__iter__()

        def __len__(self) -> int:
            reads.append("len")
            return super().__len__()

    message = Spy(id="hostile", role="user", content="hidden")
    raises_code("CONTEXT_INVALID_TRANSCRIPT", lambda: build_active_context({"messages": [message]}))
    raises_code(
        "CONTEXT_INVALID_TRANSCRIPT",
        lambda: build_active_context({"messages": SpyList([UserMessage(content="x")])}),
    )
    raises_code("CONTEXT_INVALID_INPUT", lambda: build_active_context(Spy(messages=[])))
    raises_code(
        "CONTEXT_INVALID_INPUT",
        lambda: build_active_context({"requirements": SpyList([{"id": "r", "content": "c"}])}),
    )
    raises_code(
        "CONTEXT_INVALID_INPUT",
        lambda: build_active_context({"requirements": [Spy(id="r", content="c")]}),
    )
    arguments = Spy(path="a")
    call = {
        **CALL,
        "content": [{"type": "toolCall", "id": "call", "name": "read", "arguments": arguments}],
    }
    raises_code(
        "CONTEXT_INVALID_TRANSCRIPT",
        lambda: build_active_context({"messages": [call, result_json("r")]}),
    )
    assert reads == []


def test_rejects_non_string_keys_without_comparing_them() -> None:
    impostor = Impostor("role")
    message: dict[Any, Any] = {"id": "u", impostor: "user", "role": "user", "content": "x"}
    raises_code("CONTEXT_INVALID_TRANSCRIPT", lambda: build_active_context({"messages": [message]}))
    arguments: dict[Any, Any] = {Impostor("path"): "a"}
    call = {
        **CALL,
        "content": [{"type": "toolCall", "id": "call", "name": "read", "arguments": arguments}],
    }
    raises_code(
        "CONTEXT_INVALID_TRANSCRIPT",
        lambda: build_active_context({"messages": [call, result_json("r")]}),
    )
    raises_code("CONTEXT_INVALID_INPUT", lambda: build_active_context(cast(Any, {impostor: []})))


def test_rejects_subclassed_protocol_values_and_records() -> None:
    class Requirement(ContextRequirement):
        __slots__ = ()

    raises_code(
        "CONTEXT_INVALID_INPUT",
        lambda: build_active_context({"requirements": [Requirement(id="r", content="c")]}),
    )

    class Context(ActiveContext):
        __slots__ = ()

    subclassed = Context(messages=tool_transcript())
    raises_code("CONTEXT_INVALID_INPUT", lambda: build_active_context(subclassed))


def nested(depth: int) -> dict[str, Any]:
    """Arguments whose deepest value sits at ``depth`` (the arguments object is depth 0)."""
    value: Any = True
    for _ in range(depth - 1):
        value = {"nested": value}
    return {"nested": value}


def deep_transcript(arguments: Any) -> list[Any]:
    return [
        {
            "id": "deep",
            "role": "assistant",
            "content": [
                {"type": "toolCall", "id": "deep-call", "name": "inspect", "arguments": arguments}
            ],
        },
        {
            "id": "deep-result",
            "role": "toolResult",
            "toolCallId": "deep-call",
            "toolName": "inspect",
            "content": "done",
            "isError": False,
        },
    ]


def test_rejects_excessively_deep_arguments_as_a_limit() -> None:
    build_active_context({"messages": deep_transcript(nested(MAX_CONTEXT_DEPTH))})
    raises_code(
        "CONTEXT_LIMIT_EXCEEDED",
        lambda: build_active_context({"messages": deep_transcript(nested(MAX_CONTEXT_DEPTH + 1))}),
    )
    # the workshop's case: 33 wrappers around {leaf: true}
    value: dict[str, Any] = {"leaf": True}
    for _ in range(MAX_CONTEXT_DEPTH + 1):
        value = {"nested": value}
    raises_code(
        "CONTEXT_LIMIT_EXCEEDED", lambda: build_active_context({"messages": deep_transcript(value)})
    )
    # protocol messages are measured too (tether allows deeper arguments elsewhere)
    protocol = [
        AssistantMessage(
            id="a",
            content=(
                ToolCall(id="c", name="t", arguments=JsonObject(nested(MAX_CONTEXT_DEPTH + 1))),
            ),
        ),
        ToolResultMessage(id="r", tool_call_id="c", tool_name="t", content=""),
    ]
    raises_code("CONTEXT_LIMIT_EXCEEDED", lambda: build_active_context({"messages": protocol}))


def test_circular_and_non_json_arguments_are_invalid_transcripts() -> None:
    circular: dict[str, Any] = {}
    circular["self"] = circular
    looped: list[Any] = []
    looped.append(looped)
    for arguments in (
        circular,
        {"list": looped},
        {"nan": float("nan")},
        {"inf": float("-inf")},
        {"set": {1}},
        {"bytes": b"x"},
        {"huge": 10**400},
    ):
        raises_code(
            "CONTEXT_INVALID_TRANSCRIPT",
            lambda a=arguments: build_active_context({"messages": deep_transcript(a)}),
        )
    # a shared (not circular) value is fine, as are big but finite integers
    shared = {"k": 1}
    build_active_context({"messages": deep_transcript({"a": shared, "b": shared, "big": 10**300})})


def test_enforces_the_aggregate_string_budget_before_inspecting_later_messages() -> None:
    touched: list[str] = []

    class Late(dict[str, Any]):
        def __getitem__(self, key: str) -> Any:
            touched.append(key)
            raise RuntimeError("late hostile getter")

    content = "x" * (MAX_CONTEXT_TOTAL_UNITS // 16 + 1)
    messages: list[Any] = [
        {"id": f"large-{i}", "role": "user", "content": content} for i in range(16)
    ]
    messages.append(Late(id="late", role="user", content="must not be reached"))
    raises_code("CONTEXT_LIMIT_EXCEEDED", lambda: build_active_context({"messages": messages}))
    assert touched == []


def test_string_collection_and_count_limits() -> None:
    too_long = "x" * (MAX_CONTEXT_STRING_UNITS + 1)
    raises_code(
        "CONTEXT_LIMIT_EXCEEDED",
        lambda: build_active_context({"messages": [UserMessage(content=too_long)]}),
    )
    raises_code(
        "CONTEXT_LIMIT_EXCEEDED",
        lambda: build_active_context({"requirements": [{"id": "r", "content": too_long}]}),
    )
    raises_code(
        "CONTEXT_LIMIT_EXCEEDED",
        lambda: build_active_context(
            {"messages": deep_transcript({"k": ["x"] * MAX_CONTEXT_COLLECTION_ITEMS})}
        ),
    )
    users = [UserMessage(id=f"u{i}", content="") for i in range(MAX_CONTEXT_MESSAGES + 1)]
    raises_code("CONTEXT_LIMIT_EXCEEDED", lambda: build_active_context({"messages": users}))
    assert len(build_active_context({"messages": users[:-1]}).messages) == MAX_CONTEXT_MESSAGES
    requirements = [{"id": f"r{i}", "content": "c"} for i in range(MAX_CONTEXT_REQUIREMENTS + 1)]
    raises_code(
        "CONTEXT_LIMIT_EXCEEDED", lambda: build_active_context({"requirements": requirements})
    )
    records = [
        {
            "id": f"c{i}",
            "summaryId": "s",
            "boundary": 1,
            "compactedMessageIds": ["m"],
            "unitsBefore": 1,
            "unitsAfter": 1,
        }
        for i in range(MAX_CONTEXT_RECORDS + 1)
    ]
    raises_code("CONTEXT_LIMIT_EXCEEDED", lambda: build_active_context({"compactions": records}))
    assert (
        len(build_active_context({"compactions": records[:-1]}).compactions) == MAX_CONTEXT_RECORDS
    )


def test_total_units_beyond_the_cap_are_a_limit_even_when_strings_fit() -> None:
    messages = [UserMessage(id=f"m{i:03}", content="x" * 995) for i in range(1000)]
    # strings: 1000 * 999 code points (within the string budget); units 4 more per message
    raises_code("CONTEXT_LIMIT_EXCEEDED", lambda: build_active_context({"messages": messages}))


# --- requirements, summary, records, top level ------------------------------------------------


@pytest.mark.parametrize(
    "requirements",
    [
        [{"id": "", "content": "c"}],
        [{"id": " ", "content": "c"}],
        [{"id": "r", "content": "\t"}],
        [{"id": "r"}],
        [{"id": 1, "content": "c"}],
        [{"id": "r", "content": "a"}, {"id": "r", "content": "b"}],
        [ContextRequirement(id="r", content="")],
        ["r"],
        {"id": "r"},
        None,
    ],
)
def test_invalid_requirements_are_invalid_input(requirements: object) -> None:
    raises_code(
        "CONTEXT_INVALID_INPUT", lambda: build_active_context({"requirements": requirements})
    )


def test_summary_rules() -> None:
    raises_code(
        "CONTEXT_SUMMARY_INVALID",
        lambda: build_active_context({"summary": {"id": "s", "content": " "}}),
    )
    raises_code(
        "CONTEXT_SUMMARY_INVALID", lambda: ActiveContext(summary=ContextSummary(id="s", content=""))
    )
    raises_code(
        "CONTEXT_INVALID_INPUT",
        lambda: build_active_context({"summary": {"id": "", "content": "x"}}),
    )
    raises_code(
        "CONTEXT_INVALID_INPUT",
        lambda: build_active_context({"summary": {"id": "s", "content": 3}}),
    )
    raises_code("CONTEXT_INVALID_INPUT", lambda: build_active_context({"summary": "text"}))
    assert build_active_context({"summary": None}).summary is None
    summary = ContextSummary(id="s", content="x")
    assert build_active_context({"summary": summary}).summary is summary


def record_json(**changes: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "id": "c0",
        "summaryId": "s0",
        "boundary": 2,
        "compactedMessageIds": ["a", "b"],
        "unitsBefore": 10,
        "unitsAfter": 0,
    }
    record.update(changes)
    return record


@pytest.mark.parametrize(
    "record",
    [
        record_json(id=""),
        record_json(summaryId=" "),
        record_json(boundary=0),
        record_json(boundary=True),
        record_json(boundary=1.0),
        record_json(boundary=2**53),
        record_json(unitsBefore=-1),
        record_json(unitsAfter=None),
        record_json(compactedMessageIds=[]),
        record_json(compactedMessageIds=["a"]),
        record_json(compactedMessageIds=["a", ""]),
        record_json(compactedMessageIds=["a", 2]),
        record_json(compactedMessageIds="ab"),
        {k: v for k, v in record_json().items() if k != "unitsAfter"},
    ],
)
def test_invalid_compaction_records_are_invalid_input(record: dict[str, Any]) -> None:
    raises_code("CONTEXT_INVALID_INPUT", lambda: build_active_context({"compactions": [record]}))


def test_duplicate_record_ids_are_invalid_and_records_are_snapshotted() -> None:
    raises_code(
        "CONTEXT_INVALID_INPUT",
        lambda: build_active_context({"compactions": [record_json(), record_json()]}),
    )
    built = build_active_context({"compactions": [record_json()]})
    assert built.compactions == (
        ContextCompactionRecord(
            id="c0",
            summary_id="s0",
            boundary=2,
            compacted_message_ids=("a", "b"),
            units_before=10,
            units_after=0,
        ),
    )
    listed = ContextCompactionRecord(
        id="c1",
        summary_id="s",
        boundary=1,
        compacted_message_ids=cast(Any, ["m"]),
        units_before=1,
        units_after=1,
    )
    stored = build_active_context({"compactions": [listed]}).compactions[0]
    assert stored == dataclasses.replace(listed, compacted_message_ids=("m",))
    assert type(stored.compacted_message_ids) is tuple


def test_the_top_level_must_be_a_context_or_a_dict_with_known_keys() -> None:
    values: list[object] = [None, [], "context", ("messages",), 3]
    for value in values:
        raises_code("CONTEXT_INVALID_INPUT", lambda v=value: build_active_context(cast(Any, v)))
    raises_code("CONTEXT_INVALID_INPUT", lambda: build_active_context({"message": []}))
    assert build_active_context({}) == ActiveContext()


def test_a_built_context_is_returned_as_is_and_inputs_are_snapshotted() -> None:
    source = tool_transcript_json()
    built = build_active_context(
        {"messages": source, "requirements": [{"id": "r", "content": "c"}]}
    )
    assert build_active_context(built) is built
    assert type(built.messages) is tuple
    assert all(
        type(m) in (UserMessage, AssistantMessage, ToolResultMessage) for m in built.messages
    )
    assert built.requirements == (ContextRequirement(id="r", content="c"),)
    source[0]["content"] = "changed later"
    assert built.messages[0] == tool_transcript()[0]
    assert built.messages == tool_transcript()
    # replace() builds (and checks) a new context
    raises_code(
        "CONTEXT_INVALID_TRANSCRIPT",
        lambda: dataclasses.replace(built, messages=built.messages[2:]),
    )
    assert dataclasses.replace(built, messages=built.messages[4:]).messages == (
        tool_transcript()[4],
    )


def test_an_unexpected_failure_while_inspecting_is_invalid_input(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def explode(*args: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(snapshot_module, "_snapshot_requirements", explode)
    error = raises_code("CONTEXT_INVALID_INPUT", lambda: build_active_context({}))
    assert str(error) == "Context could not be inspected safely"
    assert isinstance(error.__cause__, RuntimeError)
    raises_code("CONTEXT_INVALID_INPUT", lambda: ActiveContext())


# --- options ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "changes",
    [
        {"target_units": 0},
        {"target_units": True},
        {"target_units": 1.5},
        {"summary_max_units": 0},
        {"retain_recent_messages": -1},
        {"target_units": MAX_CONTEXT_TOTAL_UNITS + 1},
        {"summary_max_units": 11},
        {"retain_recent_messages": MAX_CONTEXT_MESSAGES + 1},
        {"retain_recent_messages": 2**53},
    ],
)
def test_invalid_boundary_budgets(changes: dict[str, Any]) -> None:
    arguments: dict[str, Any] = {
        "target_units": 10,
        "summary_max_units": 5,
        "retain_recent_messages": 0,
    }
    arguments.update(changes)
    raises_code("CONTEXT_INVALID_BUDGET", lambda: ContextBoundaryOptions(**arguments))


def compact_arguments(**changes: Any) -> dict[str, Any]:
    arguments: dict[str, Any] = {
        "max_units": 100,
        "target_units": 50,
        "summary_max_units": 20,
        "retain_recent_messages": 1,
        "summary_id": "s",
        "record_id": "r",
        "summarizer": fixed("x"),
    }
    arguments.update(changes)
    return arguments


@pytest.mark.parametrize(
    ("changes", "code"),
    [
        ({"max_units": 0}, "CONTEXT_INVALID_BUDGET"),
        ({"max_units": MAX_CONTEXT_TOTAL_UNITS + 1}, "CONTEXT_INVALID_BUDGET"),
        ({"max_units": 49}, "CONTEXT_INVALID_BUDGET"),
        ({"max_units": False}, "CONTEXT_INVALID_BUDGET"),
        ({"target_units": 0}, "CONTEXT_INVALID_BUDGET"),
        ({"summary_max_units": 51}, "CONTEXT_INVALID_BUDGET"),
        ({"summary_id": ""}, "CONTEXT_INVALID_INPUT"),
        ({"summary_id": None}, "CONTEXT_INVALID_INPUT"),
        ({"record_id": " "}, "CONTEXT_INVALID_INPUT"),
        ({"record_id": "x" * (MAX_CONTEXT_STRING_UNITS + 1)}, "CONTEXT_LIMIT_EXCEEDED"),
        ({"summarizer": "not callable"}, "CONTEXT_INVALID_INPUT"),
        ({"signal": AbortController()}, "CONTEXT_INVALID_INPUT"),
        ({"signal": object.__new__(AbortSignal)}, "CONTEXT_INVALID_INPUT"),
    ],
)
def test_invalid_compaction_options(
    changes: dict[str, Any], code: ContextCompactionErrorCode
) -> None:
    raises_code(code, lambda: CompactContextOptions(**compact_arguments(**changes)))


async def test_options_must_be_the_options_classes_and_are_checked_again_when_used() -> None:
    context = base_context()
    await fails_with(
        "CONTEXT_INVALID_INPUT", compact_context(context, cast(Any, compact_arguments()))
    )
    raises_code(
        "CONTEXT_INVALID_INPUT",
        lambda: select_compaction_boundary(
            context,
            cast(Any, {"target_units": 5, "summary_max_units": 1, "retain_recent_messages": 0}),
        ),
    )
    chosen = options(context, fixed("x"), 30)
    object.__setattr__(chosen, "target_units", 0)  # bypassing the frozen dataclass
    await fails_with("CONTEXT_INVALID_BUDGET", compact_context(context, chosen))
    raises_code("CONTEXT_INVALID_BUDGET", lambda: select_compaction_boundary(context, chosen))


async def test_the_context_is_checked_before_the_options() -> None:
    await fails_with(
        "CONTEXT_INVALID_TRANSCRIPT",
        compact_context({"messages": [None]}, cast(Any, None)),
    )


# --- compact_context failure paths ------------------------------------------------------------


async def test_rejects_a_missing_safe_boundary_without_calling_the_summarizer() -> None:
    context = base_context()
    calls = Calls()
    await fails_with(
        "CONTEXT_BOUNDARY_UNAVAILABLE",
        compact_context(
            context, options(context, calls, 30, retain_recent_messages=len(context.messages))
        ),
    )
    assert calls.requests == []


async def test_a_record_id_already_present_is_invalid_input_before_the_summarizer() -> None:
    context = build_active_context(
        {
            "messages": tool_transcript(),
            "compactions": [
                record_json(id="compaction-001", boundary=1, compactedMessageIds=["x"])
            ],
        }
    )
    calls = Calls()
    await fails_with("CONTEXT_INVALID_INPUT", compact_context(context, options(context, calls, 30)))
    assert calls.requests == []


async def test_carries_the_prior_summary_into_a_later_compaction_and_appends_one_record() -> None:
    first = ContextCompactionRecord(
        id="compaction-000",
        summary_id="summary-000",
        boundary=1,
        compacted_message_ids=("earlier",),
        units_before=100,
        units_after=50,
    )
    context = build_active_context(
        {
            "summary": {"id": "summary-000", "content": "Earlier work."},
            "messages": tool_transcript(),
            "compactions": [first],
        }
    )
    calls = Calls("All prior work.")
    result = await compact_context(
        context, options(context, calls, summary_units("summary-001", "All prior work."))
    )
    assert calls.requests[0].previous_summary == context.summary
    assert [record.id for record in result.context.compactions] == [
        "compaction-000",
        "compaction-001",
    ]
    assert result.context.compactions[0] is first
    assert [record.id for record in context.compactions] == ["compaction-000"]
    assert result.context.summary == ContextSummary(id="summary-001", content="All prior work.")


async def test_options_changed_while_the_summarizer_runs_change_nothing() -> None:
    context = base_context()
    holder: list[CompactContextOptions] = []

    def summarize(request: ContextSummaryRequest, signal: AbortSignal) -> str:
        object.__setattr__(holder[0], "target_units", 1)  # caller code bending the rules
        object.__setattr__(holder[0], "record_id", "swapped")
        return "s"

    holder.append(options(context, summarize, 30))
    result = await compact_context(context, holder[0])
    assert result.status == "compacted"
    assert result.record.id == "compaction-001"


async def test_a_full_record_list_cannot_take_another_record() -> None:
    records = [
        record_json(id=f"c{i}", boundary=1, compactedMessageIds=["m"])
        for i in range(MAX_CONTEXT_RECORDS)
    ]
    context = build_active_context({"messages": tool_transcript(), "compactions": records})
    await fails_with(
        "CONTEXT_LIMIT_EXCEEDED", compact_context(context, options(context, fixed("s"), 30))
    )


def selector(boundary: int) -> Callable[..., int]:
    def select(*args: object) -> int:
        return boundary

    return select


async def test_defensive_checks_after_the_summary(monkeypatch: pytest.MonkeyPatch) -> None:
    """Steps 9 and 10 cannot fail with the real selector; a broken one shows they still hold."""
    context = base_context()
    calls = Calls("ok")
    monkeypatch.setattr(compact_module, "select_boundary", selector(2))
    await fails_with(
        "CONTEXT_INVALID_TRANSCRIPT", compact_context(context, options(context, calls, 30))
    )
    monkeypatch.setattr(compact_module, "select_boundary", selector(1))
    await fails_with(
        "CONTEXT_SUMMARY_INSUFFICIENT", compact_context(context, options(context, calls, 30))
    )
    monkeypatch.setattr(compact_module, "select_boundary", selector(0))
    await fails_with(
        "CONTEXT_BOUNDARY_UNAVAILABLE", compact_context(context, options(context, calls, 30))
    )
    assert len(calls.requests) == 2
    assert context == base_context()


# --- summarizer values --------------------------------------------------------------------------


async def test_a_synchronous_summarizer_and_nested_awaitables_are_adopted() -> None:
    context = base_context()
    result = await compact_context(context, options(context, Calls("sync"), 30))
    assert result.context.summary == ContextSummary(id="summary-001", content="sync")

    async def inner() -> str:
        return "nested"

    async def outer() -> Any:
        return inner()

    result = await compact_context(context, options(context, hostile(lambda r, s: outer()), 30))
    assert result.context.summary is not None
    assert result.context.summary.content == "nested"

    done: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    done.set_result("from a future")
    result = await compact_context(context, options(context, hostile(lambda r, s: done), 30))
    assert result.context.summary is not None
    assert result.context.summary.content == "from a future"


class Chain:
    """An awaitable that resolves to the next link, ``links`` deep, then to a string."""

    def __init__(self, links: int) -> None:
        self.links = links

    def __await__(self) -> Generator[Any, Any, Any]:
        if False:
            yield
        return Chain(self.links - 1) if self.links > 1 else "deep enough"


async def test_nested_awaitables_are_adopted_up_to_64_levels() -> None:
    context = base_context()
    result = await compact_context(
        context, options(context, hostile(lambda r, s: Chain(MAX_CONTEXT_ASYNC_DEPTH)), 30)
    )
    assert result.status == "compacted"
    await fails_with(
        "CONTEXT_SUMMARIZER_FAILED",
        compact_context(
            context, options(context, hostile(lambda r, s: Chain(MAX_CONTEXT_ASYNC_DEPTH + 1)), 30)
        ),
    )
    await fails_with(
        "CONTEXT_SUMMARIZER_FAILED",
        compact_context(context, options(context, hostile(lambda r, s: Chain(80)), 30)),
    )


async def test_a_coroutine_left_over_at_the_depth_limit_is_closed_without_a_warning() -> None:
    async def never_run() -> str:
        raise AssertionError("must not run")

    class Deep:
        def __init__(self, links: int) -> None:
            self.links = links

        def __await__(self) -> Generator[Any, Any, Any]:
            if False:
                yield
            return Deep(self.links - 1) if self.links > 1 else never_run()

    context = base_context()
    await fails_with(
        "CONTEXT_SUMMARIZER_FAILED",
        compact_context(
            context, options(context, hostile(lambda r, s: Deep(MAX_CONTEXT_ASYNC_DEPTH)), 30)
        ),
    )


async def test_normalizes_thrown_rejected_and_malformed_awaitable_failures() -> None:
    context = base_context()

    def thrown(request: ContextSummaryRequest, signal: AbortSignal) -> str:
        raise ValueError("thrown")

    async def rejected(request: ContextSummaryRequest, signal: AbortSignal) -> str:
        raise ValueError("rejected")

    class BadAwait:
        def __await__(self) -> Generator[Any, Any, str]:
            raise ValueError("malformed awaitable")

    class Rejecting:
        def __await__(self) -> Generator[Any, Any, str]:
            yield None
            raise ValueError("rejected later")

    for summarizer in (
        thrown,
        rejected,
        hostile(lambda r, s: BadAwait()),
        hostile(lambda r, s: Rejecting()),
    ):
        error = await fails_with(
            "CONTEXT_SUMMARIZER_FAILED", compact_context(context, options(context, summarizer, 30))
        )
        assert isinstance(error.__cause__, ValueError)
        assert str(error.__cause__) in str(error)
    assert context.compactions == ()


async def test_a_summarizer_cannot_forge_a_context_code() -> None:
    context = base_context()
    forged = ContextCompactionError("CONTEXT_CANCELLED", "forged")

    def sync_forged(request: ContextSummaryRequest, signal: AbortSignal) -> str:
        raise forged

    async def async_forged(request: ContextSummaryRequest, signal: AbortSignal) -> str:
        raise forged

    for summarizer in (sync_forged, async_forged):
        error = await fails_with(
            "CONTEXT_SUMMARIZER_FAILED", compact_context(context, options(context, summarizer, 30))
        )
        assert error.__cause__ is forged


async def test_an_awaitable_returning_itself_is_a_cycle() -> None:
    class Itself:
        def __await__(self) -> Generator[Any, Any, Any]:
            if False:
                yield
            return self

    context = base_context()
    error = await fails_with(
        "CONTEXT_SUMMARIZER_FAILED",
        compact_context(context, options(context, hostile(lambda r, s: Itself()), 30)),
    )
    assert "cycle" in str(error)


async def test_an_await_method_that_returns_no_iterator_is_unobservable() -> None:
    class NotAnIterator:
        def __await__(self) -> Any:
            return 42

    async def stray() -> str:
        return "never awaited"

    class ReturnsCoroutine:
        def __await__(self) -> Any:
            return stray()

    context = base_context()
    for value in (NotAnIterator(), ReturnsCoroutine()):
        await fails_with(
            "CONTEXT_ASYNC_VALUE_UNOBSERVABLE",
            compact_context(context, options(context, hostile(lambda r, s, v=value: v), 30)),
        )


class PlainSteps:
    """A plain iterator (no ``send``/``throw``): one bare step, then the value."""

    def __init__(self) -> None:
        self.steps = 0

    def __iter__(self) -> PlainSteps:
        return self

    def __next__(self) -> None:
        self.steps += 1
        if self.steps == 1:
            return
        raise StopIteration("plain text")


async def test_an_iterator_whose_class_cannot_be_inspected_is_unobservable() -> None:
    class Opaque(type):
        def __getattribute__(cls, name: str) -> Any:
            if name == "__next__":
                raise RuntimeError("hostile metaclass")
            return super().__getattribute__(name)

    class Steps(metaclass=Opaque):
        pass

    class Awaitable:
        def __await__(self) -> Any:
            return Steps()

    context = base_context()
    await fails_with(
        "CONTEXT_ASYNC_VALUE_UNOBSERVABLE",
        compact_context(context, options(context, hostile(lambda r, s: Awaitable()), 30)),
    )


async def test_an_await_method_returning_a_plain_iterator_is_driven_like_await() -> None:
    class Plain:
        def __await__(self) -> Any:
            return PlainSteps()

    context = base_context()
    assert await Plain() == "plain text"  # what Python's own await does
    result = await compact_context(context, options(context, hostile(lambda r, s: Plain()), 30))
    assert result.context.summary is not None
    assert result.context.summary.content == "plain text"


async def test_a_cancelled_error_raised_on_its_own_is_a_summarizer_failure() -> None:
    context = base_context()

    def sync_cancelled(request: ContextSummaryRequest, signal: AbortSignal) -> str:
        raise asyncio.CancelledError

    async def async_cancelled(request: ContextSummaryRequest, signal: AbortSignal) -> str:
        raise asyncio.CancelledError

    for summarizer in (sync_cancelled, async_cancelled):
        await fails_with(
            "CONTEXT_SUMMARIZER_FAILED", compact_context(context, options(context, summarizer, 30))
        )


class Bare(BaseException):
    """A bare ``BaseException`` (not an ``Exception``) from untrusted code."""


async def test_a_bare_base_exception_is_never_swallowed_or_rewrapped() -> None:
    context = base_context()
    bare = Bare()

    def sync_bare(request: ContextSummaryRequest, signal: AbortSignal) -> str:
        raise bare

    async def async_bare(request: ContextSummaryRequest, signal: AbortSignal) -> str:
        raise bare

    for summarizer in (sync_bare, async_bare):
        with pytest.raises(Bare) as caught:
            await compact_context(context, options(context, summarizer, 30))
        assert caught.value is bare


async def test_the_summarizer_gets_the_callers_signal_or_one_that_never_aborts() -> None:
    context = base_context()
    calls = Calls("s")
    await compact_context(context, options(context, calls, 30))
    assert type(calls.signals[0]) is AbortSignal
    assert not calls.signals[0].aborted
    controller = AbortController()
    await compact_context(context, options(context, calls, 30, signal=controller.signal))
    assert calls.signals[1] is controller.signal


# --- cancellation -------------------------------------------------------------------------------


async def test_rejects_cancellation_before_the_summarizer_and_does_not_call_it() -> None:
    context = base_context()
    controller = AbortController()
    controller.abort("stop before summary")
    calls = Calls()
    error = await fails_with(
        "CONTEXT_CANCELLED",
        compact_context(context, options(context, calls, 30, signal=controller.signal)),
    )
    assert str(error) == "stop before summary"
    assert calls.requests == []
    assert context.compactions == ()


async def test_a_reason_that_is_not_a_non_empty_string_gives_the_default_message() -> None:
    context = base_context()
    for reason in (None, "", TimeoutError("late"), 42):
        controller = AbortController()
        controller.abort(reason)
        error = await fails_with(
            "CONTEXT_CANCELLED",
            compact_context(context, options(context, Calls(), 30, signal=controller.signal)),
        )
        assert str(error) == "Context compaction cancelled"
        if isinstance(reason, BaseException):
            assert error.__cause__ is reason
        elif reason is None:
            assert isinstance(error.__cause__, AbortError)


async def test_cancellation_is_checked_before_the_boundary_and_the_record_id() -> None:
    context = base_context()
    controller = AbortController()
    controller.abort("first")
    await fails_with(
        "CONTEXT_CANCELLED",
        compact_context(
            context,
            options(
                context,
                Calls(),
                30,
                signal=controller.signal,
                retain_recent_messages=len(context.messages),
            ),
        ),
    )


async def test_settles_cancellation_during_the_summarizer_and_cancels_the_abandoned_work() -> None:
    context = base_context()
    controller = AbortController()
    entered = asyncio.Event()
    cleaned = asyncio.Event()

    async def summarize(request: ContextSummaryRequest, signal: AbortSignal) -> str:
        entered.set()
        try:
            await asyncio.Event().wait()
        finally:
            cleaned.set()
        return "never"

    operation = asyncio.ensure_future(
        compact_context(context, options(context, summarize, 30, signal=controller.signal))
    )
    await entered.wait()
    controller.abort("stop during summary")
    error = await fails_with("CONTEXT_CANCELLED", operation)
    assert str(error) == "stop during summary"
    assert cleaned.is_set()
    assert context.compactions == ()


async def test_a_returned_future_is_cancelled_when_abandoned() -> None:
    context = base_context()
    controller = AbortController()
    pending: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    entered = asyncio.Event()

    def summarize(request: ContextSummaryRequest, signal: AbortSignal) -> Awaitable[str]:
        entered.set()
        return pending

    operation = asyncio.ensure_future(
        compact_context(context, options(context, summarize, 30, signal=controller.signal))
    )
    await entered.wait()
    controller.abort("stop")
    await fails_with("CONTEXT_CANCELLED", operation)
    assert pending.cancelled()


async def test_an_abandoned_failing_task_leaves_no_never_retrieved_log() -> None:
    """The harness fails a test whose loop logged "Task exception was never retrieved"."""
    context = base_context()
    controller = AbortController()
    started = asyncio.Event()
    tasks: list[asyncio.Task[str]] = []

    async def work() -> str:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            raise RuntimeError("late summary failure") from None
        return "never"

    def summarize(request: ContextSummaryRequest, signal: AbortSignal) -> Awaitable[str]:
        task = asyncio.ensure_future(work())
        tasks.append(task)
        return task

    operation = asyncio.ensure_future(
        compact_context(context, options(context, summarize, 30, signal=controller.signal))
    )
    await started.wait()
    controller.abort("stop")
    await fails_with("CONTEXT_CANCELLED", operation)
    await asyncio.wait(tasks)  # waits without retrieving the exception
    assert isinstance(tasks[0].exception(), RuntimeError)
    del tasks[:]


async def test_an_abandoned_task_failing_on_its_own_leaves_no_log_either() -> None:
    context = base_context()
    controller = AbortController()
    release = asyncio.Event()
    tasks: list[asyncio.Task[str]] = []

    async def work() -> str:
        try:
            await asyncio.Event().wait()
        finally:
            await release.wait()  # cleanup that outlives the abort, then fails
            raise RuntimeError("cleanup failure")

    def summarize(request: ContextSummaryRequest, signal: AbortSignal) -> Awaitable[str]:
        task = asyncio.ensure_future(work())
        tasks.append(task)
        controller.abort("stop right away")
        return task

    await fails_with(
        "CONTEXT_CANCELLED",
        compact_context(context, options(context, summarize, 30, signal=controller.signal)),
    )
    release.set()
    await asyncio.wait(tasks)
    del tasks[:]


async def test_honors_cancellation_selected_while_an_awaitable_resolves() -> None:
    context = base_context()
    controller = AbortController()

    class AbortsThenResolves:
        def __await__(self) -> Generator[Any, Any, str]:
            if False:
                yield
            controller.abort("stop after summary")
            return "summary"

    error = await fails_with(
        "CONTEXT_CANCELLED",
        compact_context(
            context,
            options(
                context, hostile(lambda r, s: AbortsThenResolves()), 30, signal=controller.signal
            ),
        ),
    )
    assert str(error) == "stop after summary"
    assert context.compactions == ()


async def test_an_abort_during_a_synchronous_call_wins_over_its_failure_and_its_value() -> None:
    context = base_context()
    for answer in ("text", ValueError("failed after aborting")):
        controller = AbortController()

        def summarize(
            request: ContextSummaryRequest,
            signal: AbortSignal,
            answer: object = answer,
            controller: AbortController = controller,
        ) -> str:
            controller.abort("aborted inside")
            if isinstance(answer, BaseException):
                raise answer
            return cast(str, answer)

        await fails_with(
            "CONTEXT_CANCELLED",
            compact_context(context, options(context, summarize, 30, signal=controller.signal)),
        )


async def test_a_raw_abort_reason_raised_by_the_summarizer_is_a_cancellation() -> None:
    context = base_context()
    controller = AbortController()

    def summarize(request: ContextSummaryRequest, signal: AbortSignal) -> str:
        controller.abort(Bare())
        signal.throw_if_aborted()  # raises the bare reason itself
        return "never"

    await fails_with(
        "CONTEXT_CANCELLED",
        compact_context(context, options(context, summarize, 30, signal=controller.signal)),
    )

    controller = AbortController()

    async def raises_later(request: ContextSummaryRequest, signal: AbortSignal) -> str:
        controller.abort(Bare())
        signal.throw_if_aborted()
        return "never"

    await fails_with(
        "CONTEXT_CANCELLED",
        compact_context(context, options(context, raises_later, 30, signal=controller.signal)),
    )


async def test_cancelling_the_task_propagates_cancelled_error_unchanged() -> None:
    context = base_context()
    entered = asyncio.Event()
    cleaned = asyncio.Event()

    async def summarize(request: ContextSummaryRequest, signal: AbortSignal) -> str:
        entered.set()
        try:
            await asyncio.Event().wait()
        finally:
            cleaned.set()
        return "never"

    operation = asyncio.ensure_future(compact_context(context, options(context, summarize, 30)))
    await entered.wait()
    operation.cancel()
    with pytest.raises(asyncio.CancelledError):
        await operation
    assert operation.cancelled()
    assert cleaned.is_set()


def aborted_signal() -> AbortSignal:
    controller = AbortController()
    controller.abort("stopped")
    return controller.signal


FAILURE_PATHS: list[tuple[str, dict[str, Any], ContextCompactionErrorCode]] = [
    ("cancelled first", {"signal": aborted_signal()}, "CONTEXT_CANCELLED"),
    ("duplicate record", {"record_id": "c0"}, "CONTEXT_INVALID_INPUT"),
    ("no boundary", {"retain_recent_messages": 5}, "CONTEXT_BOUNDARY_UNAVAILABLE"),
    ("summarizer raises", {"summarizer": hostile(lambda r, s: 1 / 0)}, "CONTEXT_SUMMARIZER_FAILED"),
    ("not text", {"summarizer": hostile(lambda r, s: ["text"])}, "CONTEXT_SUMMARY_INVALID"),
    ("blank", {"summarizer": fixed(" ")}, "CONTEXT_SUMMARY_INSUFFICIENT"),
    ("too long", {"summarizer": fixed("x" * 100)}, "CONTEXT_SUMMARY_INSUFFICIENT"),
    ("huge", {"summarizer": fixed("x" * 70_000)}, "CONTEXT_LIMIT_EXCEEDED"),
]


@pytest.mark.parametrize(
    ("changes", "code"),
    [(changes, code) for _, changes, code in FAILURE_PATHS],
    ids=[name for name, _, _ in FAILURE_PATHS],
)
async def test_every_failure_path_leaves_a_json_input_untouched(
    changes: dict[str, Any], code: ContextCompactionErrorCode
) -> None:
    given: dict[str, Any] = {
        "requirements": [{"id": "r", "content": "Keep it."}],
        "summary": {"id": "s0", "content": "Before."},
        "messages": tool_transcript_json(),
        "compactions": [record_json(id="c0", boundary=1, compactedMessageIds=["m"])],
    }
    before = copy.deepcopy(given)
    built = build_active_context(given)
    rest = dict(changes)
    chosen = options(built, rest.pop("summarizer", fixed("ok")), 30, **rest)
    await fails_with(code, compact_context(given, chosen))
    assert given == before
    assert build_active_context(given) == built


def test_the_error_pickles_with_its_code() -> None:
    error = ContextCompactionError("CONTEXT_SUMMARIZER_FAILED", "failed")
    copied = pickle.loads(pickle.dumps(error))
    assert type(copied) is ContextCompactionError
    assert (copied.code, copied.message) == ("CONTEXT_SUMMARIZER_FAILED", "failed")


# --- typing -------------------------------------------------------------------------------------


async def test_the_result_is_an_exhaustively_matchable_union() -> None:
    context = base_context()
    result = await compact_context(context, options(context, fixed("s"), 30))

    def describe(outcome: ContextCompactionResult) -> str:
        if outcome.status == "unchanged":
            return "same"
        if outcome.status != "compacted":
            assert_never(outcome)
        return outcome.record.id

    assert describe(result) == "compaction-001"
    assert describe(UnchangedCompaction(context=context)) == "same"


def test_the_error_carries_a_read_only_code_and_derives_from_tether_error() -> None:
    error = ContextCompactionError("CONTEXT_INVALID_INPUT", "bad")
    assert isinstance(error, TetherError)
    assert (error.code, error.message, error.name, str(error)) == (
        "CONTEXT_INVALID_INPUT",
        "bad",
        "ContextCompactionError",
        "bad",
    )
    with pytest.raises(AttributeError):
        error.code = "CONTEXT_CANCELLED"  # pyright: ignore[reportAttributeAccessIssue]


# --- limits (tether's extension: ContextLimits) ---------------------------------------------------

WORKSHOP = ContextLimits()
CODING = ContextLimits.for_coding()
LIMIT_FIELDS = tuple(field.name for field in dataclasses.fields(ContextLimits))


def test_the_default_limits_are_the_workshop_constants() -> None:
    assert (
        ContextLimits(
            max_messages=MAX_CONTEXT_MESSAGES,
            max_requirements=MAX_CONTEXT_REQUIREMENTS,
            max_records=MAX_CONTEXT_RECORDS,
            max_depth=MAX_CONTEXT_DEPTH,
            max_collection_items=MAX_CONTEXT_COLLECTION_ITEMS,
            max_string_units=MAX_CONTEXT_STRING_UNITS,
            max_total_units=MAX_CONTEXT_TOTAL_UNITS,
            max_async_depth=MAX_CONTEXT_ASYNC_DEPTH,
        )
        == WORKSHOP
    )
    assert (MAX_CONTEXT_MESSAGES, MAX_CONTEXT_STRING_UNITS, MAX_CONTEXT_TOTAL_UNITS) == (
        4_096,
        65_536,
        1_000_000,
    )
    assert "ContextLimits" in compaction.__all__
    assert ActiveContext().limits == WORKSHOP
    assert build_active_context({}).limits == WORKSHOP
    assert ContextBoundaryOptions(
        target_units=1, summary_max_units=1, retain_recent_messages=0
    ).limits == (WORKSHOP)
    assert CompactContextOptions(**compact_arguments()).limits == WORKSHOP
    with pytest.raises(dataclasses.FrozenInstanceError):
        WORKSHOP.max_messages = 1  # pyright: ignore[reportAttributeAccessIssue]
    assert not hasattr(WORKSHOP, "__dict__")
    with pytest.raises(TypeError):
        ContextLimits(4096)  # pyright: ignore[reportCallIssue]
    assert hash(CODING) == hash(ContextLimits.for_coding())
    assert pickle.loads(pickle.dumps(CODING)) == CODING


def test_for_coding_is_sized_like_the_real_model_run_and_session_limits() -> None:
    assert (
        ContextLimits(
            max_messages=131_072,
            max_requirements=1_024,
            max_records=262_144,
            max_depth=64,
            max_collection_items=8_388_608,
            max_string_units=4_194_304,
            max_total_units=67_108_864,
            max_async_depth=64,
        )
        == CODING
    )
    run = RunLimits.for_real_models()
    session = SessionLimits.for_coding()
    assert CODING.max_messages == run.max_initial_messages
    assert CODING.max_depth == run.max_argument_depth
    assert CODING.max_string_units == run.max_text_code_points
    assert CODING.max_string_units == run.max_argument_string_code_points
    assert CODING.max_collection_items >= 4 * run.max_argument_entries
    assert CODING.max_collection_items >= session.max_records  # every message ever compacted
    assert CODING.max_records * 4 == session.max_records  # one compaction per tool turn
    # a whole window of the largest models (1M tokens), plus a whole maximal turn
    assert (
        CODING.max_total_units >= 1_000_000 * CODE_POINTS_PER_TOKEN + 2 * run.max_text_code_points
    )
    for name in LIMIT_FIELDS:
        assert getattr(CODING, name) >= getattr(WORKSHOP, name), name


@pytest.mark.parametrize("name", LIMIT_FIELDS)
@pytest.mark.parametrize("value", [0, -1, True, 1.0, "8", None, 2**53])
def test_every_limit_must_be_a_positive_safe_integer(name: str, value: object) -> None:
    with pytest.raises(
        TypeError, match=rf"^ContextLimits\.{name} must be a positive safe integer$"
    ):
        ContextLimits(**cast("dict[str, Any]", {name: value}))


def test_every_limit_accepts_one_and_the_largest_safe_integer() -> None:
    for name in LIMIT_FIELDS:
        assert getattr(ContextLimits(**{name: 1}), name) == 1
        assert getattr(ContextLimits(**{name: 2**53 - 1}), name) == 2**53 - 1


def test_limits_must_be_exactly_context_limits() -> None:
    class Looser(ContextLimits):
        __slots__ = ()

    bads: list[Any] = [None, {"max_messages": 1}, Looser(), RunLimits()]
    base = base_context()
    for bad in bads:
        raises_code("CONTEXT_INVALID_INPUT", lambda b=bad: ActiveContext(limits=b))
        raises_code(
            "CONTEXT_INVALID_INPUT",
            lambda b=bad: ContextBoundaryOptions(
                target_units=1, summary_max_units=1, retain_recent_messages=0, limits=b
            ),
        )
        raises_code(
            "CONTEXT_INVALID_INPUT",
            lambda b=bad: CompactContextOptions(**compact_arguments(limits=b)),
        )
        if bad is None:  # an omitted argument
            continue
        raises_code("CONTEXT_INVALID_INPUT", lambda b=bad: build_active_context({}, limits=b))
        raises_code("CONTEXT_INVALID_INPUT", lambda b=bad: build_active_context(base, limits=b))
        raises_code("CONTEXT_INVALID_INPUT", lambda b=bad: estimate_context_units([], limits=b))
        raises_code("CONTEXT_INVALID_INPUT", lambda b=bad: estimate_tokens(base, limits=b))
        raises_code("CONTEXT_INVALID_INPUT", lambda b=bad: group_tool_rounds([], limits=b))
    error = raises_code("CONTEXT_INVALID_INPUT", lambda: ActiveContext(limits=cast(Any, None)))
    assert str(error) == "Context limits must be ContextLimits"
    error = raises_code(
        "CONTEXT_INVALID_INPUT", lambda: CompactContextOptions(**compact_arguments(limits=1))
    )
    assert str(error) == "Compaction options limits must be ContextLimits"
    # the JSON form has no limits: they are an argument
    raises_code("CONTEXT_INVALID_INPUT", lambda: build_active_context({"limits": CODING}))


def users(count: int, content: str = "") -> tuple[Message, ...]:
    return tuple(UserMessage(id=f"u{i}", content=content) for i in range(count))


def requirement_list(count: int) -> tuple[ContextRequirement, ...]:
    return tuple(ContextRequirement(id=f"r{i}", content="c") for i in range(count))


def record_list(count: int, ids: int = 1) -> tuple[ContextCompactionRecord, ...]:
    return tuple(
        ContextCompactionRecord(
            id=f"c{i}",
            summary_id="s",
            boundary=ids,
            compacted_message_ids=tuple(f"m{j}" for j in range(ids)),
            units_before=1,
            units_after=1,
        )
        for i in range(count)
    )


def limited(**fields: int) -> ContextLimits:
    """Small limits for one field, the others generous enough not to interfere."""
    generous = dict.fromkeys(LIMIT_FIELDS, 1_000_000)
    return ContextLimits(**{**generous, **fields})


def test_each_count_limit_is_enforced_at_exactly_its_value() -> None:
    limits = limited(max_messages=3, max_requirements=2, max_records=2)
    assert len(ActiveContext(messages=users(3), limits=limits).messages) == 3
    error = raises_code(
        "CONTEXT_LIMIT_EXCEEDED", lambda: ActiveContext(messages=users(4), limits=limits)
    )
    assert str(error) == "Context messages exceeds its 3-item limit"
    ActiveContext(requirements=requirement_list(2), limits=limits)
    raises_code(
        "CONTEXT_LIMIT_EXCEEDED",
        lambda: ActiveContext(requirements=requirement_list(3), limits=limits),
    )
    ActiveContext(compactions=record_list(2, ids=3), limits=limits)
    raises_code(
        "CONTEXT_LIMIT_EXCEEDED", lambda: ActiveContext(compactions=record_list(3), limits=limits)
    )
    # one record names at most max_messages compacted messages
    raises_code(
        "CONTEXT_LIMIT_EXCEEDED",
        lambda: ActiveContext(compactions=record_list(1, 4), limits=limits),
    )


def test_the_depth_limit_is_enforced_at_exactly_its_value() -> None:
    limits = limited(max_depth=3)
    build_active_context({"messages": deep_transcript(nested(3))}, limits=limits)
    error = raises_code(
        "CONTEXT_LIMIT_EXCEEDED",
        lambda: build_active_context({"messages": deep_transcript(nested(4))}, limits=limits),
    )
    assert "nested deeper than 3" in str(error)
    # a deeper workshop limit than the default is honoured too
    deeper = deep_transcript(nested(MAX_CONTEXT_DEPTH + 1))
    build_active_context({"messages": deeper}, limits=limited(max_depth=MAX_CONTEXT_DEPTH + 1))


def test_the_collection_item_limit_is_enforced_at_exactly_its_value() -> None:
    # items: 2 messages + 1 block + 1 argument key + the list's length
    limits = limited(max_collection_items=10)
    build_active_context({"messages": deep_transcript({"k": [1] * 6})}, limits=limits)
    error = raises_code(
        "CONTEXT_LIMIT_EXCEEDED",
        lambda: build_active_context({"messages": deep_transcript({"k": [1] * 7})}, limits=limits),
    )
    assert str(error) == "Context exceeds 10 collection items"
    # records' message IDs count too
    ActiveContext(messages=users(4), compactions=record_list(2, 2), limits=limits)
    raises_code(
        "CONTEXT_LIMIT_EXCEEDED",
        lambda: ActiveContext(messages=users(5), compactions=record_list(2, 2), limits=limits),
    )


def test_the_string_limit_is_enforced_at_exactly_its_value() -> None:
    limits = limited(max_string_units=5)
    ActiveContext(messages=(UserMessage(id="u", content="x" * 5),), limits=limits)
    ActiveContext(messages=(UserMessage(id="u", content="😀" * 5),), limits=limits)
    error = raises_code(
        "CONTEXT_LIMIT_EXCEEDED",
        lambda: ActiveContext(messages=(UserMessage(id="u", content="x" * 6),), limits=limits),
    )
    assert str(error) == "Context messages[0].content exceeds 5 code points"
    raises_code(
        "CONTEXT_LIMIT_EXCEEDED",
        lambda: ActiveContext(
            requirements=(ContextRequirement(id="r" * 6, content="c"),), limits=limits
        ),
    )
    raises_code(
        "CONTEXT_LIMIT_EXCEEDED",
        lambda: CompactContextOptions(**compact_arguments(record_id="r" * 6, limits=limits)),
    )
    CompactContextOptions(**compact_arguments(record_id="r" * 5, limits=limits))


def test_the_total_limit_is_enforced_at_exactly_its_value_for_strings_and_units() -> None:
    # strings: "u0".."u9" and 10 * 3 code points = 50; units 10 * (4 + 2 + 3) = 90
    messages = users(10, "abc")
    assert estimate_context_units(messages) == 90
    ActiveContext(messages=messages, limits=limited(max_total_units=90))
    error = raises_code(
        "CONTEXT_LIMIT_EXCEEDED",
        lambda: ActiveContext(messages=messages, limits=limited(max_total_units=89)),
    )
    assert str(error) == "Context must not exceed 89 units"
    error = raises_code(
        "CONTEXT_LIMIT_EXCEEDED",
        lambda: ActiveContext(messages=messages, limits=limited(max_total_units=49)),
    )
    assert str(error) == "Context input exceeds 49 string code points"
    # budgets are capped by the same limit
    limits = limited(max_total_units=90)
    ContextBoundaryOptions(
        target_units=90, summary_max_units=1, retain_recent_messages=0, limits=limits
    )
    raises_code(
        "CONTEXT_INVALID_BUDGET",
        lambda: ContextBoundaryOptions(
            target_units=91, summary_max_units=1, retain_recent_messages=0, limits=limits
        ),
    )
    CompactContextOptions(**compact_arguments(max_units=90, limits=limits))
    error = raises_code(
        "CONTEXT_INVALID_BUDGET",
        lambda: CompactContextOptions(**compact_arguments(max_units=91, limits=limits)),
    )
    assert str(error) == "max_units must not exceed 90"


def test_retain_recent_messages_is_capped_at_exactly_the_message_limit() -> None:
    limits = limited(max_messages=3)
    ContextBoundaryOptions(
        target_units=10, summary_max_units=1, retain_recent_messages=3, limits=limits
    )
    error = raises_code(
        "CONTEXT_INVALID_BUDGET",
        lambda: ContextBoundaryOptions(
            target_units=10, summary_max_units=1, retain_recent_messages=4, limits=limits
        ),
    )
    assert str(error) == "retain_recent_messages must not exceed 3"
    CompactContextOptions(**compact_arguments(retain_recent_messages=3, limits=limits))
    raises_code(
        "CONTEXT_INVALID_BUDGET",
        lambda: CompactContextOptions(**compact_arguments(retain_recent_messages=4, limits=limits)),
    )
    big = ContextBoundaryOptions(
        target_units=10,
        summary_max_units=1,
        retain_recent_messages=MAX_CONTEXT_MESSAGES + 1,
        limits=CODING,
    )
    assert big.retain_recent_messages == MAX_CONTEXT_MESSAGES + 1


async def test_the_summary_and_async_depth_limits_are_the_contexts() -> None:
    limits = limited(max_string_units=60, max_async_depth=3)
    context = ActiveContext(messages=tool_transcript(), limits=limits)
    # summary text: exactly 60 code points passes the string limit, 61 does not
    ok = await compact_context(context, options(context, fixed("x" * 60), 80, limits=limits))
    assert ok.context.summary is not None
    assert len(ok.context.summary.content) == 60
    error = await fails_with(
        "CONTEXT_LIMIT_EXCEEDED",
        compact_context(context, options(context, fixed("x" * 61), 80, limits=limits)),
    )
    assert str(error) == "Context summary exceeds 60 code points"
    result = await compact_context(
        context, options(context, hostile(lambda r, s: Chain(3)), 30, limits=limits)
    )
    assert result.status == "compacted"
    # (options with the workshop's limits: the context's limits are the ones that apply)
    error = await fails_with(
        "CONTEXT_SUMMARIZER_FAILED",
        compact_context(context, options(context, hostile(lambda r, s: Chain(4)), 30)),
    )
    assert str(error) == "Context summarizer nested more than 3 awaitables"
    # the default context's 64 levels still hold
    workshop = base_context()
    await compact_context(workshop, options(workshop, hostile(lambda r, s: Chain(64)), 30))


def coding_transcript(messages: int, result: str) -> tuple[Message, ...]:
    """``messages`` messages: user turns, then one tool round whose result is ``result``."""
    return (
        *users(messages - 3, "Please look at the next file."),
        AssistantMessage(
            id="read",
            content=(
                ToolCall(id="call", name="read_file", arguments=JsonObject({"path": "a.py"})),
            ),
        ),
        ToolResultMessage(id="file", tool_call_id="call", tool_name="read_file", content=result),
        UserMessage(id="latest", content="Now fix it."),
    )


async def test_for_coding_accepts_a_megabyte_tool_result_and_10000_messages() -> None:
    megabyte = "x" * 1_048_576
    transcript = coding_transcript(10_000, megabyte)
    for given in ({"messages": transcript}, transcript):
        raises_code("CONTEXT_LIMIT_EXCEEDED", lambda g=given: estimate_context_units(g))
    raises_code("CONTEXT_LIMIT_EXCEEDED", lambda: ActiveContext(messages=transcript[-3:]))
    raises_code("CONTEXT_LIMIT_EXCEEDED", lambda: ActiveContext(messages=transcript[:-3]))

    context = ActiveContext(messages=transcript, limits=CODING)
    assert build_active_context({"messages": transcript}, limits=CODING) == context
    units = estimate_context_units(context)
    assert units > MAX_CONTEXT_TOTAL_UNITS
    assert estimate_context_units(transcript, limits=CODING) == units
    assert estimate_tokens(transcript, limits=CODING) == -(-units // CODE_POINTS_PER_TOKEN)
    assert len(group_tool_rounds(transcript, limits=CODING)) == 9_999
    raises_code("CONTEXT_LIMIT_EXCEEDED", lambda: group_tool_rounds(transcript))

    # options sized for such a context must carry (or be used with) the coding limits
    def chosen(limits: ContextLimits = CODING, **changes: Any) -> CompactContextOptions:
        arguments: dict[str, Any] = {
            "max_units": 200_000,
            "target_units": 100_000,
            "summary_max_units": 4_000,
            "retain_recent_messages": 1,
            "summary_id": "summary-1",
            "record_id": "compaction-1",
            "summarizer": fixed("The agent read a.py."),
            "limits": limits,
            **changes,
        }
        return CompactContextOptions(**arguments)

    result = await compact_context(context, chosen())
    assert isinstance(result, CompactedCompaction)
    assert result.context.limits is CODING
    assert [message.id for message in result.context.messages] == ["latest"]
    assert result.record.boundary == 9_999
    assert result.record.units_before == units
    # the same compaction from the JSON form, built with the options' limits
    again = await compact_context({"messages": transcript}, chosen())
    assert again.context == result.context
    # workshop options fit this context too (they are checked against its limits when used)
    workshop = await compact_context(context, chosen(WORKSHOP))
    assert workshop.context == result.context
    # ... but the JSON form built with workshop limits does not fit them
    await fails_with(
        "CONTEXT_LIMIT_EXCEEDED", compact_context({"messages": transcript}, chosen(WORKSHOP))
    )
    # and a budget above the workshop's is rejected when built without the coding limits
    raises_code("CONTEXT_INVALID_BUDGET", lambda: chosen(WORKSHOP, max_units=2_000_000))
    big = await compact_context(context, chosen(max_units=1_200_000, target_units=1_100_000))
    assert isinstance(big, CompactedCompaction)
    assert big.record.units_after <= 1_100_000
    assert [message.id for message in big.context.messages][-3:] == ["read", "file", "latest"]


async def test_options_are_checked_against_the_limits_the_compaction_runs_with() -> None:
    context = base_context()  # workshop limits
    too_big = CompactContextOptions(
        **compact_arguments(max_units=2_000_000, target_units=1_500_000, limits=CODING)
    )
    error = await fails_with("CONTEXT_INVALID_BUDGET", compact_context(context, too_big))
    assert str(error) == f"target_units must not exceed {MAX_CONTEXT_TOTAL_UNITS}"
    # a dict is built with the options' limits, so the JSON form of the context fits them
    assert (await compact_context({"messages": tool_transcript()}, too_big)).status == "unchanged"
    raises_code("CONTEXT_INVALID_BUDGET", lambda: select_compaction_boundary(context, too_big))
    retain = ContextBoundaryOptions(
        target_units=100, summary_max_units=10, retain_recent_messages=5_000, limits=CODING
    )
    raises_code("CONTEXT_INVALID_BUDGET", lambda: select_compaction_boundary(context, retain))
    long_id = CompactContextOptions(
        **compact_arguments(max_units=200, target_units=100, record_id="r" * 70_000, limits=CODING)
    )
    await fails_with("CONTEXT_LIMIT_EXCEEDED", compact_context(context, long_id))
    # the same options are fine for a context with the coding limits, or a dict built with them
    coding = dataclasses.replace(context, limits=CODING)
    assert select_compaction_boundary(coding, retain) is None  # 5,000 > its 5 messages
    assert select_compaction_boundary({"messages": tool_transcript()}, retain) is None
    result = await compact_context(coding, options(coding, fixed("s"), 30, limits=CODING))
    assert result.context.limits is CODING


async def test_limits_survive_replace_and_compaction() -> None:
    limits = limited(max_messages=5)
    context = ActiveContext(messages=tool_transcript(), limits=limits)
    shorter = dataclasses.replace(context, messages=context.messages[:1])
    assert shorter.limits is limits
    raises_code(
        "CONTEXT_LIMIT_EXCEEDED",
        lambda: dataclasses.replace(
            context, messages=(*context.messages, UserMessage(id="x", content=""))
        ),
    )
    result = await compact_context(context, options(context, fixed("s"), 30))
    assert result.context.limits is limits
    assert dataclasses.replace(result.context, summary=None).limits is limits
    # changing the limits checks the context again
    raises_code(
        "CONTEXT_LIMIT_EXCEEDED",
        lambda: dataclasses.replace(context, limits=limited(max_messages=4)),
    )
    unchanged = await compact_context(context, options(context, fixed("s"), 30, max_units=1_000))
    assert unchanged.context is context
    # a context equals another only with the same limits
    assert context != ActiveContext(messages=tool_transcript())
    assert context == ActiveContext(messages=tool_transcript(), limits=limited(max_messages=5))


def test_build_active_context_keeps_a_context_or_checks_it_under_other_limits() -> None:
    context = base_context()
    assert build_active_context(context) is context
    assert build_active_context(context, limits=ContextLimits()) is context
    coding = build_active_context(context, limits=CODING)
    assert coding.limits is CODING
    assert coding.messages == context.messages
    assert build_active_context(coding) is coding
    assert build_active_context(coding, limits=ContextLimits.for_coding()) is coding
    raises_code(
        "CONTEXT_LIMIT_EXCEEDED",
        lambda: build_active_context(context, limits=limited(max_messages=4)),
    )
    # estimators and grouping take a context with any limits, and follow the same rule
    assert estimate_context_units(coding) == 237
    assert estimate_context_units(coding, limits=WORKSHOP) == 237
    raises_code(
        "CONTEXT_LIMIT_EXCEEDED", lambda: estimate_tokens(coding, limits=limited(max_messages=4))
    )
    assert group_tool_rounds(coding.messages, limits=coding.limits) == group_tool_rounds(
        context.messages
    )


def test_for_coding_limits_at_their_boundaries() -> None:
    # one string of exactly 4,194,304 code points, and one more
    largest = "x" * CODING.max_string_units
    ActiveContext(messages=(UserMessage(id="u", content=largest),), limits=CODING)
    raises_code(
        "CONTEXT_LIMIT_EXCEEDED",
        lambda: ActiveContext(
            messages=(UserMessage(id="u", content=largest + "x"),), limits=CODING
        ),
    )
    # exactly 64 Mi units: 16 messages of 4 + 3 + 4,194,297 units
    content = "x" * (CODING.max_string_units - 7)
    messages: list[Message] = [UserMessage(id=f"m{i:02}", content=content) for i in range(16)]
    assert estimate_context_units(ActiveContext(messages=tuple(messages), limits=CODING)) == (
        CODING.max_total_units
    )
    messages[0] = UserMessage(id="m00", content=content + "x")
    raises_code(
        "CONTEXT_LIMIT_EXCEEDED", lambda: ActiveContext(messages=tuple(messages), limits=CODING)
    )
    # depth 64, and 65
    build_active_context({"messages": deep_transcript(nested(64))}, limits=CODING)
    raises_code(
        "CONTEXT_LIMIT_EXCEEDED",
        lambda: build_active_context({"messages": deep_transcript(nested(65))}, limits=CODING),
    )
    # 1,024 requirements, and 1,025
    ActiveContext(requirements=requirement_list(1_024), limits=CODING)
    raises_code(
        "CONTEXT_LIMIT_EXCEEDED",
        lambda: ActiveContext(requirements=requirement_list(1_025), limits=CODING),
    )
    # one past each count limit is refused before any item is read (the same object repeated)
    message = UserMessage(id="u", content="")
    raises_code(
        "CONTEXT_LIMIT_EXCEEDED",
        lambda: ActiveContext(messages=(message,) * (CODING.max_messages + 1), limits=CODING),
    )
    record = record_list(1)[0]
    raises_code(
        "CONTEXT_LIMIT_EXCEEDED",
        lambda: ActiveContext(compactions=(record,) * (CODING.max_records + 1), limits=CODING),
    )
    # 8,388,608 collection items: a list argument taking the count one past the limit
    past = [None] * (CODING.max_collection_items - 3)  # + 2 messages, 1 block, 1 key
    raises_code(
        "CONTEXT_LIMIT_EXCEEDED",
        lambda: build_active_context({"messages": deep_transcript({"k": past})}, limits=CODING),
    )


# --- the model summarizer -------------------------------------------------------------------------


def summarizer_context() -> ActiveContext:
    return build_active_context(
        {
            "requirements": [{"id": "facts", "content": "Never invent file contents."}],
            "summary": {"id": "summary-000", "content": "Earlier: set up the repository."},
            "messages": [
                *tool_transcript()[:3],
                ToolResultMessage(
                    id="result-b",
                    tool_call_id="call-b",
                    tool_name="read",
                    content="beta",
                    is_error=True,
                ),
                tool_transcript()[4],
            ],
        }
    )


async def test_model_summarizer_asks_the_model_with_a_rendered_bounded_prompt() -> None:
    context = summarizer_context()
    model = ScriptedModel([text_reply("Read a.txt ", "(alpha); b.txt failed.")])
    result = await compact_context(context, options(context, model_summarizer(model), 80))
    assert result.context.summary == ContextSummary(
        id="summary-001", content="Read a.txt (alpha); b.txt failed."
    )
    (request,) = model.requests
    assert request.system == DEFAULT_SUMMARY_SYSTEM
    assert request.tools == ()
    (prompt_message,) = request.messages
    assert prompt_message.role == "user"
    prompt = prompt_message.content
    for expected in (
        "- facts: Never invent file contents.",
        "Earlier: set up the repository.",
        "[user] Inspect both files.",
        "[assistant] I will read both. ",
        '[tool call read #call-a] {"path":"a.txt"}',
        "[tool result read #call-a] alpha",
        "[tool error read #call-b] beta",
        f"at most {80 - 5 - len('summary-001')} characters",
        '<conversation messages="4">',
    ):
        assert expected in prompt, expected
    assert "What changed?" not in prompt  # retained, not summarized


async def test_model_summarizer_takes_a_system_prompt_and_cuts_a_long_answer_to_fit() -> None:
    context = summarizer_context()
    model = ScriptedModel([text_reply("word " * 100)])
    summarizer = model_summarizer(model, system="Be brief.")
    result = await compact_context(context, options(context, summarizer, 60))
    assert result.context.summary is not None
    content = result.context.summary.content
    assert content.endswith("…")
    assert len(content) <= 60 - 5 - len("summary-001")
    assert model.requests[0].system == "Be brief."


@pytest.mark.parametrize(
    "reply",
    [
        None,  # the script is exhausted: the run fails
        tool_call_reply(("read", {"path": "a.txt"})),  # asked for a tool
        text_reply("   "),  # no text
        text_reply("cut off", stop_reason="length"),
        text_reply("no", stop_reason="refusal"),
    ],
)
async def test_model_summarizer_failures_become_summarizer_failed(reply: Any) -> None:
    context = summarizer_context()
    model = ScriptedModel([] if reply is None else [reply])
    error = await fails_with(
        "CONTEXT_SUMMARIZER_FAILED",
        compact_context(context, options(context, model_summarizer(model), 80)),
    )
    assert isinstance(error.__cause__, ContextCompactionError)
    assert context.summary is not None
    assert context.summary.id == "summary-000"


async def test_model_summarizer_does_not_ask_when_no_summary_can_fit() -> None:
    context = summarizer_context()
    model = ScriptedModel([text_reply("x")])
    await fails_with(
        "CONTEXT_SUMMARIZER_FAILED",
        compact_context(context, options(context, model_summarizer(model), 16)),
    )
    assert model.call_count == 0


async def test_model_summarizer_is_cancelled_with_the_compaction() -> None:
    context = summarizer_context()
    controller = AbortController()
    entered = asyncio.Event()

    async def blocking(
        request: ModelRequest, signal: AbortSignal
    ) -> AsyncIterator[ModelChunk | ModelResponse]:
        entered.set()
        await asyncio.Event().wait()
        for item in ():
            yield item

    model = ScriptedModel([blocking])
    operation = asyncio.ensure_future(
        compact_context(
            context, options(context, model_summarizer(model), 80, signal=controller.signal)
        )
    )
    await entered.wait()
    controller.abort("user pressed escape")
    error = await fails_with("CONTEXT_CANCELLED", operation)
    assert str(error) == "user pressed escape"


async def test_model_summarizer_used_alone_raises_for_a_cancelled_run() -> None:
    model = ScriptedModel([text_reply("unused")])
    summarize = model_summarizer(model)
    request = summary_request(list(tool_transcript()[:1]))
    with pytest.raises(ContextCompactionError) as caught:
        await cast(Awaitable[str], summarize(request, aborted_signal()))
    assert caught.value.code == "CONTEXT_SUMMARIZER_FAILED"
    assert "cancelled" in str(caught.value)
    assert await cast(Awaitable[str], summarize(request, AbortController().signal)) == "unused"


@pytest.mark.parametrize(
    ("reply", "room", "expected"),
    [
        ("x" * 200, 1, "…"),
        ("x" * 200, 10, "x" * 9 + "…"),  # no word boundary near the end: a hard cut
        ("alpha beta gamma delta", 12, "alpha beta…"),
        ("short", 10, "short"),
    ],
)
async def test_model_summarizer_fits_the_answer_to_the_room_left(
    reply: str, room: int, expected: str
) -> None:
    summarize = model_summarizer(ScriptedModel([text_reply(reply)]))
    request = summary_request(
        list(tool_transcript()[:1]), max_summary_units=room + 16, max_content_code_points=room
    )
    assert await cast(Awaitable[str], summarize(request, AbortController().signal)) == expected


def test_model_summarizer_checks_its_arguments() -> None:
    model = ScriptedModel()
    with pytest.raises(TypeError):
        model_summarizer(cast(Any, object()))
    with pytest.raises(TypeError):
        model_summarizer(model, system=cast(Any, 3))
    for bad in (0, -1, True, 1.5):
        with pytest.raises(TypeError):
            model_summarizer(model, max_prompt_units=cast(Any, bad))
        with pytest.raises(TypeError):
            model_summarizer(model, max_item_code_points=cast(Any, bad))
    with pytest.raises(TypeError):
        model_summarizer(model, limits=cast(Any, {}))


def summary_request(messages: list[Message], **changes: Any) -> ContextSummaryRequest:
    request = ContextSummaryRequest(
        requirements=(),
        previous_summary=None,
        messages=tuple(messages),
        boundary=len(messages),
        max_summary_units=100,
        max_content_code_points=80,
    )
    return dataclasses.replace(request, **changes) if changes else request


def test_render_summary_prompt_cuts_long_items_and_leaves_out_the_middle() -> None:
    long = "y" * 500
    messages: list[Message] = [
        UserMessage(id=f"u{i}", content=f"message {i} {long}") for i in range(40)
    ]
    prompt = render_summary_prompt(
        summary_request(messages), max_prompt_units=3_000, max_item_code_points=100
    )
    assert len(prompt) <= 3_000
    assert "[user] message 0 " in prompt
    assert "[user] message 39 " in prompt
    assert "message 20 " not in prompt
    assert "messages left out" in prompt
    assert "more characters]" in prompt
    # everything fits: nothing is left out
    small = render_summary_prompt(summary_request(messages[:3]), max_item_code_points=10_000)
    assert "left out" not in small
    assert long in small


def test_render_summary_prompt_is_bounded_even_by_a_tiny_budget() -> None:
    request = summary_request(
        [UserMessage(id="u", content="z" * 1_000)],
        requirements=(ContextRequirement(id="r", content="q" * 1_000),),
        previous_summary=ContextSummary(id="s", content="p" * 1_000),
    )
    for bound in (1, 50, 400):
        assert len(render_summary_prompt(request, max_prompt_units=bound)) <= bound
    thinking = AssistantMessage(
        id="a",
        content=(
            ThinkingBlock(text="plan"),
            ThinkingBlock(text="", signature="opaque", redacted=True),
            TextBlock(text=" "),
        ),
    )
    rendered = render_summary_prompt(
        summary_request([thinking, AssistantMessage(id="b", content=())])
    )
    assert "[assistant thinking] plan" in rendered
    assert "opaque" not in rendered
    assert "[assistant] (no text)" in rendered


async def test_a_summarizer_returning_an_awaitable_whose_await_raises_failed() -> None:
    """Python awaits a value whose class defines ``__await__`` (even as a property); awaiting
    this one raises, so the summarizer failed: it did not return an invalid summary."""

    class AwaitRaises:
        @property
        def __await__(self) -> Callable[[], Any]:
            raise RuntimeError("await refused")

    context = base_context()
    error = await fails_with(
        "CONTEXT_SUMMARIZER_FAILED",
        compact_context(context, options(context, hostile(lambda r, s: AwaitRaises()), 50)),
    )
    assert isinstance(error.__cause__, RuntimeError)
    assert str(error.__cause__) == "await refused"
