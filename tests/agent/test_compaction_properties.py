"""Property tests for context compaction (``tether.agent.compaction``).

Over random valid transcripts with interleaved and overlapping tool rounds: groups are exactly
the edges no tool round crosses, a selected boundary never splits a round (both sides validate
alone) and matches a brute-force reference, the unit estimate matches a reference written
independently over the JSON form, and ``compact_context`` either compacts correctly or
reports ``CONTEXT_BOUNDARY_UNAVAILABLE``. Over arbitrary JSON-ish input (and mutations of valid
transcripts), nothing but ``ContextCompactionError`` is ever raised.
"""

from __future__ import annotations

import json
from collections.abc import Coroutine
from decimal import Decimal
from typing import Any, cast

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from support import Impostor
from tether._base.strings import is_non_empty
from tether.abort import AbortSignal
from tether.agent.compaction import (
    ActiveContext,
    CompactContextOptions,
    ContextBoundaryOptions,
    ContextCompactionError,
    ContextLimits,
    ContextSummaryRequest,
    build_active_context,
    compact_context,
    estimate_context_units,
    estimate_tokens,
    group_tool_rounds,
    select_compaction_boundary,
)
from tether.jsonvalue import JsonObject
from tether.protocol import (
    AssistantBlock,
    AssistantMessage,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    to_json,
)
from tether.protocol.transcript import validate_transcript

# --- strategies -------------------------------------------------------------------------------

tricky_text = st.sampled_from(
    ["", " ", "😀", "\ud83d\ude00", "\ud83d", "\ude00\ud83d", "é", "\u200b", "a\nb", "\ufeff"]
)
texts = st.one_of(
    st.text(max_size=10),
    tricky_text,
    st.lists(tricky_text, max_size=3).map("".join),
)
# Not blank as the workshop's JavaScript trim() sees it (which also strips U+FEFF).
ids = st.text(min_size=1, max_size=6).filter(is_non_empty)
numbers = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([0.0, -0.0, 1e21, 1e-7, 1e-6, 0.1, 123e18, 5e-324, 2.0**53]),
)
json_values: st.SearchStrategy[Any] = st.recursive(
    st.one_of(st.none(), st.booleans(), numbers, texts),
    lambda children: st.one_of(
        st.lists(children, max_size=3), st.dictionaries(texts, children, max_size=3)
    ),
    max_leaves=8,
)
arguments = st.dictionaries(texts, json_values, max_size=3)


@st.composite
def transcripts(draw: st.DrawFn) -> list[Message]:
    """A valid transcript: user turns, assistant turns with 0-3 calls, and results that come
    later, in any order, interleaved with other turns and other rounds."""
    messages: list[Message] = []
    pending: list[tuple[str, str]] = []
    serial = 0

    def fresh(prefix: str) -> str:
        nonlocal serial
        serial += 1
        return f"{prefix}{serial}"

    for _ in range(draw(st.integers(0, 12))):
        kinds = ["user", "assistant", "result", "result"] if pending else ["user", "assistant"]
        kind = draw(st.sampled_from(kinds))
        if kind == "user":
            messages.append(UserMessage(id=fresh("u"), content=draw(texts)))
        elif kind == "assistant":
            blocks: list[AssistantBlock] = []
            for _ in range(draw(st.integers(0, 2))):
                if draw(st.booleans()):
                    blocks.append(TextBlock(text=draw(texts)))
                else:
                    blocks.append(
                        ThinkingBlock(text=draw(texts), signature=draw(st.none() | texts))
                    )
            for _ in range(draw(st.integers(0, 3))):
                call = ToolCall(
                    id=fresh("c"),
                    name=draw(st.sampled_from(["read", "grep"])),
                    arguments=JsonObject(draw(arguments)),
                )
                blocks.insert(draw(st.integers(0, len(blocks))), call)
                pending.append((call.id, call.name))
            messages.append(AssistantMessage(id=fresh("a"), content=tuple(blocks)))
        else:
            call_id, name = pending.pop(draw(st.integers(0, len(pending) - 1)))
            messages.append(
                ToolResultMessage(
                    id=fresh("r"),
                    tool_call_id=call_id,
                    tool_name=name,
                    content=draw(texts),
                    is_error=draw(st.booleans()),
                )
            )
    for call_id, name in draw(st.permutations(pending)):
        messages.append(
            ToolResultMessage(id=fresh("r"), tool_call_id=call_id, tool_name=name, content="")
        )
    assert validate_transcript(messages) == ()
    return messages


def intervals(messages: list[Message]) -> list[tuple[int, int]]:
    """``(call index, result index)`` for every tool call."""
    results = {m.tool_call_id: i for i, m in enumerate(messages) if m.role == "toolResult"}
    return [
        (index, results[block.id])
        for index, message in enumerate(messages)
        if message.role == "assistant"
        for block in message.content
        if block.type == "toolCall"
    ]


# --- an independent reference estimator over the JSON form ------------------------------------


def ref_cp(text: str) -> int:
    """Code points as JavaScript counts them: UTF-16 pairs are one, lone surrogates one."""
    return len(text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass"))


def ref_number(value: int | float) -> str:
    """JavaScript's ``String(n)``, via ``Decimal`` formatting of the shortest digits."""
    if isinstance(value, int) and abs(value) <= 2**53 - 1:
        return str(value)
    number = float(value)
    if number == 0:
        return "0"
    digits = Decimal(repr(number))
    if 1e-6 <= abs(number) < 1e21:
        text = format(digits, "f")
        return text.rstrip("0").rstrip(".") if "." in text else text
    return format(digits.normalize(), "e")


def ref_json(value: Any) -> int:
    if value is None:
        return 1
    if isinstance(value, bool):
        return 5 if value else 6
    if isinstance(value, int | float):
        return 1 + len(ref_number(value))
    if isinstance(value, str):
        return 1 + ref_cp(value)
    if isinstance(value, list):
        return 2 + sum(1 + ref_json(item) for item in cast("list[Any]", value))
    mapping = cast("dict[str, Any]", value)
    return 2 + sum(1 + ref_cp(key) + ref_json(mapping[key]) for key in sorted(mapping))


def ref_message(message: dict[str, Any]) -> int:
    role = message["role"]
    if role == "user":
        return 4 + ref_cp(message["id"]) + ref_cp(message["content"])
    if role == "toolResult":
        return (
            6
            + ref_cp(message["id"])
            + ref_cp(message["toolCallId"])
            + ref_cp(message["toolName"])
            + ref_cp(message["content"])
            + 1
        )
    units = 4 + ref_cp(message["id"])
    for block in message["content"]:
        if block["type"] in ("text", "thinking"):
            units += 2 + ref_cp(block["text"])
        else:
            units += 6 + ref_cp(block["id"]) + ref_cp(block["name"]) + ref_json(block["arguments"])
    return units


def ref_units(messages: list[Message]) -> list[int]:
    return [ref_message(cast("dict[str, Any]", to_json(message))) for message in messages]


def test_the_reference_number_format_matches_known_javascript_output() -> None:
    known = {
        1.0: "1",
        -0.0: "0",
        0.1: "0.1",
        1e-7: "1e-7",
        1e-6: "0.000001",
        1e21: "1e+21",
        1e20: "100000000000000000000",
        1.5e300: "1.5e+300",
        5e-324: "5e-324",
        123.456: "123.456",
        2**60: "1152921504606847000",
        -(2**53): "-9007199254740992",
        2**53 - 1: "9007199254740991",
    }
    for value, text in known.items():
        assert ref_number(value) == text, value
        assert estimate_context_units(_with_arguments({"n": value})) == estimate_context_units(
            _with_arguments({"n": 0})
        ) - 1 + len(text)


def _with_arguments(args: dict[str, Any]) -> list[Message]:
    return [
        AssistantMessage(id="a", content=(ToolCall(id="c", name="t", arguments=JsonObject(args)),)),
        ToolResultMessage(id="r", tool_call_id="c", tool_name="t", content=""),
    ]


# --- properties over valid transcripts --------------------------------------------------------


@given(transcripts())
def test_the_estimate_matches_the_reference_over_the_json_form(messages: list[Message]) -> None:
    expected = sum(ref_units(messages))
    assert estimate_context_units(messages) == expected
    as_json = [to_json(message) for message in messages]
    assert estimate_context_units({"messages": as_json}) == expected
    assert build_active_context({"messages": as_json}).messages == tuple(messages)
    assert estimate_tokens(messages) == -(-expected // 4)


@given(transcripts())
def test_groups_are_exactly_the_edges_no_tool_round_crosses(messages: list[Message]) -> None:
    groups = group_tool_rounds(messages)
    assert [m for group in groups for m in group.messages] == messages
    assert [group.start_index for group in groups[1:]] == [group.end_index for group in groups[:-1]]
    edges = {group.end_index for group in groups[:-1]}
    spans = intervals(messages)
    for edge in range(1, len(messages)):
        crossed = any(call < edge <= result for call, result in spans)
        assert (edge in edges) == (not crossed), edge
    for group in groups:
        first = group.messages[0]
        opens = first.role == "assistant" and any(b.type == "toolCall" for b in first.content)
        assert (group.kind == "toolRound") == opens
        assert validate_transcript(group.messages) == ()


def reference_boundary(messages: list[Message], fixed: int, target: int, retain: int) -> int | None:
    """Brute force over group edges, as the workshop states the rule."""
    latest = len(messages) - retain
    if latest <= 0:
        return None
    units = ref_units(messages)
    spans = intervals(messages)
    for edge in range(1, len(messages) + 1):
        if any(call < edge <= result for call, result in spans):
            continue  # not a group edge
        if edge > latest:
            return None
        if fixed + sum(units[edge:]) <= target:
            return edge
    return None


@given(
    transcripts(),
    st.integers(1, 400),
    st.integers(1, 60),
    st.integers(0, 6),
    st.lists(st.tuples(ids, ids), max_size=2, unique_by=lambda pair: pair[0]),
)
def test_the_boundary_never_splits_a_tool_round_and_matches_the_reference(
    messages: list[Message],
    target: int,
    summary_max: int,
    retain: int,
    requirements: list[tuple[str, str]],
) -> None:
    summary_max = min(summary_max, target)
    context = build_active_context(
        {
            "requirements": [{"id": rid, "content": content} for rid, content in requirements],
            "messages": messages,
        }
    )
    fixed = sum(3 + ref_cp(rid) + ref_cp(content) for rid, content in requirements) + summary_max
    boundary = select_compaction_boundary(
        context,
        ContextBoundaryOptions(
            target_units=target, summary_max_units=summary_max, retain_recent_messages=retain
        ),
    )
    assert boundary == reference_boundary(messages, fixed, target, retain)
    event("boundary found" if boundary is not None else "no boundary")
    if boundary is None:
        return
    assert 1 <= boundary <= len(messages) - retain
    assert boundary in {group.end_index for group in group_tool_rounds(messages)}
    assert validate_transcript(messages[:boundary]) == ()
    assert validate_transcript(messages[boundary:]) == ()


@given(transcripts(), st.integers(30, 99), st.integers(0, 3), st.integers(0, 30))
def test_compact_context_compacts_correctly_or_reports_no_boundary(
    messages: list[Message], percent: int, retain: int, summary_text: int
) -> None:
    context = build_active_context({"messages": messages})
    units = estimate_context_units(context)
    target = max(8, units * percent // 100)
    summary_max = min(target, 5 + len("s1") + summary_text)
    seen: list[ContextSummaryRequest] = []

    def summarize(request: ContextSummaryRequest, signal: AbortSignal) -> str:
        seen.append(request)
        return "x" * request.max_content_code_points

    async def run() -> None:
        if units <= target:
            event("compaction: within max_units")
            return
        chosen = CompactContextOptions(
            max_units=max(target, units - 1),
            target_units=target,
            summary_max_units=summary_max,
            retain_recent_messages=retain,
            summary_id="s1",
            record_id="r1",
            summarizer=summarize,
        )
        try:
            result = await compact_context(context, chosen)
        except ContextCompactionError as error:
            failures.append(error.code)
            return
        assert result.status == "compacted"
        record = result.record
        boundary = record.boundary
        assert record.compacted_message_ids == tuple(m.id for m in messages[:boundary])
        assert result.context.messages == tuple(messages[boundary:])
        assert record.units_before == units
        assert record.units_after == estimate_context_units(result.context) <= target
        assert validate_transcript(result.context.messages) == ()
        assert len(seen) == 1

    failures: list[str] = []
    settle_now(run())
    if units > target:
        event(f"compaction: {failures[0] if failures else 'compacted'}")
    if failures == ["CONTEXT_SUMMARY_INSUFFICIENT"]:
        assert seen[0].max_content_code_points == 0  # no summary text can fit
    else:
        assert failures in ([], ["CONTEXT_BOUNDARY_UNAVAILABLE"])
    assert context.messages == tuple(messages)
    assert context.summary is None
    assert context.compactions == ()


# --- limits: a transcript builds exactly when it fits every one ---------------------------------


def ref_needs(messages: list[Message]) -> dict[str, int]:
    """What a transcript needs of each ``ContextLimits`` field, measured over its JSON form."""
    strings: list[str] = []
    items = len(messages)
    depth = 0

    def walk(value: Any, level: int) -> None:
        nonlocal items, depth
        depth = max(depth, level)
        if isinstance(value, str):
            strings.append(value)
        elif isinstance(value, list):
            children = cast("list[Any]", value)
            items += len(children)
            for child in children:
                walk(child, level + 1)
        elif isinstance(value, dict):
            mapping = cast("dict[str, Any]", value)
            items += len(mapping)
            for key, child in mapping.items():
                strings.append(key)
                walk(child, level + 1)

    for message in messages:
        shape = cast("dict[str, Any]", to_json(message))
        keys = (
            ("id", "content", "toolCallId", "toolName") if shape["role"] != "assistant" else ("id",)
        )
        strings.extend(shape[key] for key in keys if key in shape)
        if shape["role"] != "assistant":
            continue
        items += len(shape["content"])
        for block in shape["content"]:
            if block["type"] == "toolCall":
                strings.extend((block["id"], block["name"]))
                walk(block["arguments"], 0)
            else:
                strings.extend(block[key] for key in ("text", "signature") if key in block)
    total = max(sum(map(ref_cp, strings)), sum(ref_units(messages)))
    return {
        "max_messages": len(messages),
        "max_collection_items": items,
        "max_depth": depth,
        "max_string_units": max(map(ref_cp, strings), default=0),
        "max_total_units": total,
    }


@given(transcripts(), st.data())
def test_a_transcript_builds_exactly_when_it_fits_every_limit(
    messages: list[Message], data: st.DataObject
) -> None:
    needs = ref_needs(messages)
    squeezed = data.draw(st.sampled_from([None, *needs]))
    chosen: dict[str, int] = {"max_requirements": 1, "max_records": 1, "max_async_depth": 1}
    for name, need in needs.items():
        if name == squeezed:
            chosen[name] = max(1, need - 1)
        else:
            chosen[name] = max(1, need + data.draw(st.integers(0, 1)))
    limits = ContextLimits(**chosen)
    fits = all(chosen[name] >= need for name, need in needs.items())
    event("fits" if fits else f"exceeds {squeezed}")
    as_json = [to_json(message) for message in messages]
    if not fits:
        for given_input in (messages, as_json):
            with pytest.raises(ContextCompactionError) as caught:
                estimate_context_units(given_input, limits=limits)
            assert caught.value.code == "CONTEXT_LIMIT_EXCEEDED", caught.value
        return
    context = ActiveContext(messages=tuple(messages), limits=limits)
    assert context.limits is limits
    assert build_active_context({"messages": as_json}, limits=limits) == context
    assert estimate_context_units(as_json, limits=limits) == sum(ref_units(messages))
    assert group_tool_rounds(messages, limits=limits) == group_tool_rounds(messages)
    assert build_active_context(context) is context


def settle_now(coroutine: Coroutine[Any, Any, None]) -> None:
    """Run a coroutine that must not suspend: ``compact_context`` with a synchronous
    summarizer never waits (so no event loop is needed per example)."""
    try:
        coroutine.send(None)
    except StopIteration:
        return
    coroutine.close()
    raise AssertionError("compact_context suspended although nothing it awaits can wait")


# --- properties over hostile input ------------------------------------------------------------


class HostileDict(dict[str, Any]):
    def __getitem__(self, key: str) -> Any:
        raise RuntimeError("hostile read")


class HostileList(list[Any]):
    def __iter__(self) -> Any:
        raise RuntimeError("hostile iteration")


def impostor_keyed(key: str, value: object) -> dict[Any, object]:
    """A dict whose key hashes like ``key`` and claims to equal anything."""
    return {Impostor(key): value}


hostile_leaves = st.sampled_from(
    [
        float("nan"),
        float("inf"),
        10**400,
        b"bytes",
        {1, 2},
        object(),
        HostileDict(role="user", id="x", content="y"),
        HostileList([1]),
        JsonObject({"a": 1}),
        UserMessage(id="u", content="x"),
        TextBlock(text="t"),
    ]
)
anything: st.SearchStrategy[Any] = st.recursive(
    st.one_of(st.none(), st.booleans(), numbers, texts, hostile_leaves),
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.tuples(children, children),
        st.dictionaries(texts, children, max_size=4),
        st.dictionaries(st.integers() | texts, children, max_size=3),
        st.builds(impostor_keyed, st.sampled_from(["role", "id"]), children),
    ),
    max_leaves=16,
)
field_values = {
    "role": st.sampled_from(["user", "assistant", "toolResult", "system"]) | anything,
    "type": st.sampled_from(["text", "thinking", "toolCall", "image"]) | anything,
    "id": ids | anything,
    "content": texts | anything,
    "text": texts | anything,
    "name": st.sampled_from(["read", ""]) | anything,
    "toolCallId": st.sampled_from(["c1", "c2"]) | anything,
    "toolName": st.sampled_from(["read", "grep"]) | anything,
    "isError": st.booleans() | anything,
    "arguments": arguments | anything,
    "summaryId": ids | anything,
    "boundary": st.integers(-1, 3) | anything,
    "compactedMessageIds": st.lists(ids, max_size=3) | anything,
    "unitsBefore": st.integers(-1, 10) | anything,
    "unitsAfter": st.integers(-1, 10) | anything,
}
shaped = st.fixed_dictionaries({}, optional=dict(field_values))


@st.composite
def mutated_transcripts(draw: st.DrawFn) -> Any:
    """The JSON form of a valid transcript, usually with one field deleted or replaced."""
    messages = [cast("dict[str, Any]", to_json(m)) for m in draw(transcripts())]
    if not messages or draw(st.integers(0, 3)) == 0:
        return messages
    target: dict[str, Any] = draw(st.sampled_from(messages))
    blocks = target.get("content")
    if isinstance(blocks, list) and blocks and draw(st.booleans()):
        target = draw(st.sampled_from(cast("list[dict[str, Any]]", blocks)))
    key = draw(st.sampled_from(sorted(target)))
    if draw(st.booleans()):
        del target[key]
    else:
        target[key] = draw(field_values.get(key, anything))
    return messages


def by_id(record: dict[str, Any]) -> object:
    return record["id"]


requirement_lists = st.lists(
    st.fixed_dictionaries({"id": ids, "content": ids}), max_size=2, unique_by=by_id
)
record_lists = st.lists(
    st.fixed_dictionaries(
        {
            "id": ids,
            "summaryId": ids,
            "boundary": st.just(1),
            "compactedMessageIds": st.lists(ids, min_size=1, max_size=1),
            "unitsBefore": st.integers(0, 9),
            "unitsAfter": st.integers(0, 9),
        }
    ),
    max_size=2,
    unique_by=by_id,
)
contexts: st.SearchStrategy[Any] = st.one_of(
    anything,
    st.fixed_dictionaries({}, optional={"messages": anything, "extra": anything}),
    # mostly well-formed parts, so the later parts (messages, records) are reached
    st.fixed_dictionaries(
        {"messages": mutated_transcripts() | st.lists(shaped, max_size=4)},
        optional={
            "requirements": requirement_lists | st.lists(shaped, max_size=2),
            "summary": st.none() | shaped | st.fixed_dictionaries({"id": ids, "content": texts}),
            "compactions": record_lists | st.lists(shaped, max_size=2),
        },
    ),
    st.fixed_dictionaries(
        {},
        optional={
            "requirements": anything,
            "summary": anything,
            "messages": anything,
            "compactions": anything,
        },
    ),
)


@given(contexts)
def test_build_active_context_raises_nothing_but_context_errors(value: Any) -> None:
    try:
        built = build_active_context(value)
    except ContextCompactionError as error:
        event(f"rejected: {error.code}")
        return
    event("built")
    assert type(built) is ActiveContext
    assert build_active_context(built) is built
    json.dumps([to_json(message) for message in built.messages])  # plain, finite JSON


@given(st.one_of(anything, mutated_transcripts(), st.lists(shaped, max_size=4)))
def test_transcript_functions_raise_nothing_but_context_errors(value: Any) -> None:
    codes: list[str] = []
    for action in (
        lambda: group_tool_rounds(value),
        lambda: estimate_context_units(value),
        lambda: select_compaction_boundary(
            {"messages": value},
            ContextBoundaryOptions(target_units=50, summary_max_units=5, retain_recent_messages=1),
        ),
    ):
        try:
            action()
        except ContextCompactionError as error:
            codes.append(error.code)
    assert set(codes) <= {
        "CONTEXT_INVALID_INPUT",
        "CONTEXT_INVALID_TRANSCRIPT",
        "CONTEXT_LIMIT_EXCEEDED",
    }
