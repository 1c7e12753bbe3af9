"""Property tests for the message IR: the validator never raises, the constructors only ever
raise ``TypeError``, and generated valid transcripts validate clean (also after JSON)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any, get_args

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

import tether
from tether import AssistantMessage, JsonObject, TextBlock, ToolCall, ToolResultMessage, UserMessage
from tether.protocol.transcript import (
    TranscriptDiagnostic,
    TranscriptDiagnosticCode,
    assistant_message,
    parse_message,
    tool_result_message,
    user_message,
    validate_transcript,
)

SPEC_CODES = frozenset(
    {
        "INVALID_TRANSCRIPT",
        "INVALID_MESSAGE",
        "DUPLICATE_TOOL_CALL_ID",
        "DUPLICATE_TOOL_RESULT",
        "ORPHAN_TOOL_RESULT",
        "TOOL_RESULT_BEFORE_CALL",
        "MISSING_TOOL_RESULT",
        "TOOL_NAME_MISMATCH",
        "EMPTY_TOOL_NAME",
        "INVALID_TOOL_ARGUMENTS",
    }
)

# --- strategies -----------------------------------------------------------------------------

scalars: st.SearchStrategy[Any] = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),  # includes nan and +-inf
    st.text(max_size=8),
    st.binary(max_size=8),
)
hashable_keys: st.SearchStrategy[Any] = st.one_of(
    st.text(max_size=6),
    st.integers(),
    st.none(),
    st.booleans(),
    st.floats(allow_nan=False),
    st.tuples(st.integers()),
)
anything: st.SearchStrategy[Any] = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.tuples(children, children),
        st.dictionaries(st.text(max_size=6), children, max_size=4),
        st.dictionaries(hashable_keys, children, max_size=4),
    ),
    max_leaves=20,
)
id_like: st.SearchStrategy[Any] = st.one_of(
    st.sampled_from(["c1", "c2", "u1", "", " ", "\ufeff", "\t\n", "x y"]),
    st.text(max_size=5),
    scalars,
)
name_like: st.SearchStrategy[Any] = st.one_of(
    st.sampled_from(["add", "mul", "", "  "]), st.text(max_size=5), scalars
)
block_like: st.SearchStrategy[Any] = st.one_of(
    st.fixed_dictionaries(
        {"type": st.sampled_from(["text", "toolCall", "image", "", "Text"])},
        optional={
            "text": st.one_of(st.text(max_size=5), scalars),
            "id": id_like,
            "name": name_like,
            "arguments": anything,
        },
    ),
    st.builds(TextBlock, text=st.text(max_size=5)),
    anything,
)
message_like: st.SearchStrategy[Any] = st.fixed_dictionaries(
    {},
    optional={
        "role": st.one_of(
            st.sampled_from(["user", "assistant", "toolResult", "system", ""]), scalars
        ),
        "id": id_like,
        "content": st.one_of(st.text(max_size=5), st.lists(block_like, max_size=4), anything),
        "toolCallId": id_like,
        "toolName": name_like,
        "isError": st.one_of(st.booleans(), scalars),
    },
)
protocol_message: st.SearchStrategy[Any] = st.sampled_from(
    [
        UserMessage(id="u1", content="hi"),
        AssistantMessage(
            id="a1", content=(ToolCall(id="c1", name="add", arguments=JsonObject({"a": 1})),)
        ),
        ToolResultMessage(
            id="r1", tool_call_id="c1", tool_name="add", content="ok", is_error=False
        ),
    ]
)
transcripts: st.SearchStrategy[Any] = st.one_of(
    anything,
    st.lists(st.one_of(message_like, protocol_message, anything), max_size=8),
    st.lists(message_like, max_size=8).map(tuple),
)


# --- (a) the validator never raises ---------------------------------------------------------


def test_spec_codes_match_the_published_code_type() -> None:
    assert frozenset(get_args(TranscriptDiagnosticCode)) == SPEC_CODES


@given(transcripts)
def test_validate_transcript_never_raises_and_returns_known_codes(transcript: Any) -> None:
    diagnostics = validate_transcript(transcript)

    assert validate_transcript(transcript) == diagnostics
    assert type(diagnostics) is tuple
    event(f"{len(diagnostics)} diagnostics" if len(diagnostics) < 3 else "3+ diagnostics")
    for code in sorted({d.code for d in diagnostics}):
        event(code)
    for diagnostic in diagnostics:
        assert type(diagnostic) is TranscriptDiagnostic
        assert diagnostic.code in SPEC_CODES
        assert type(diagnostic.message) is str
        assert diagnostic.message
    if type(transcript) is list or type(transcript) is tuple:
        entries: list[object] = list(transcript)  # pyright: ignore[reportUnknownArgumentType]
        assert all(0 <= d.message_index < len(entries) for d in diagnostics)
    else:
        assert [(d.code, d.message_index) for d in diagnostics] == [("INVALID_TRANSCRIPT", -1)]


# --- (b) constructors return a frozen message or raise TypeError ------------------------------


json_values: st.SearchStrategy[Any] = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=8),
    ),
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.text(max_size=6), children, max_size=4),
    ),
    max_leaves=12,
)
json_objects = st.dictionaries(st.text(max_size=6), json_values, max_size=4)
valid_ids = st.text(max_size=5).map(lambda suffix: "i" + suffix)


@st.composite
def keywords(
    draw: st.DrawFn,
    valid: dict[str, st.SearchStrategy[Any]],
    arbitrary: dict[str, st.SearchStrategy[Any]],
) -> dict[str, Any]:
    """Keyword values where a drawn subset of the fields (possibly all, possibly none) is
    arbitrary and the rest is valid, so both outcomes are exercised."""
    names = sorted(valid)
    wild = draw(st.sets(st.sampled_from(names)))
    return {name: draw(arbitrary[name] if name in wild else valid[name]) for name in names}


tool_call_blocks = keywords(
    {"id": valid_ids, "name": valid_ids, "arguments": json_objects},
    {"id": id_like, "name": name_like, "arguments": anything},
).map(lambda fields: {"type": "toolCall", **fields})


def text_block(text: object) -> dict[str, object]:
    return {"type": "text", "text": text}


text_blocks = st.one_of(st.text(max_size=5), scalars).map(text_block)
constructor_blocks = st.one_of(tool_call_blocks, text_blocks, block_like)
valid_blocks = st.one_of(
    st.text(max_size=5).map(text_block),
    st.fixed_dictionaries(
        {"type": st.just("toolCall"), "id": valid_ids, "name": valid_ids, "arguments": json_objects}
    ),
)


def assert_frozen(message: object) -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(message, "id", "changed")  # noqa: B010


@given(
    keywords(
        {"id": valid_ids, "content": st.text(max_size=5)},
        {"id": id_like, "content": anything},
    )
)
def test_user_message_returns_a_message_or_raises_type_error(kwargs: dict[str, Any]) -> None:
    try:
        message = user_message(**kwargs)
    except TypeError:
        event("rejected with TypeError")
        return
    event("accepted")
    assert type(message) is UserMessage
    given_id = kwargs.get("id")  # omitted or None: generated, as by UserMessage
    assert message.id == given_id or (given_id is None and message.id)
    assert message.content == kwargs["content"]
    assert_frozen(message)


@given(
    keywords(
        {"id": valid_ids, "content": st.lists(valid_blocks, max_size=4)},
        {
            "id": id_like,
            "content": st.one_of(
                st.lists(constructor_blocks, max_size=4),
                st.tuples(constructor_blocks),
                anything,
            ),
        },
    )
)
def test_assistant_message_returns_a_message_or_raises_type_error(kwargs: dict[str, Any]) -> None:
    try:
        message = assistant_message(**kwargs)
    except TypeError:
        event("rejected with TypeError")
        return
    event("accepted")
    content = kwargs["content"]
    assert type(message) is AssistantMessage
    given_id = kwargs.get("id")  # omitted or None: generated, as by AssistantMessage
    assert message.id == given_id or (given_id is None and message.id)
    assert type(message.content) is tuple
    assert len(message.content) == len(content)
    for block, source in zip(message.content, content, strict=True):
        if type(block) is ToolCall:
            assert type(block.arguments) is JsonObject
            assert (block.id, block.name) == (source["id"], source["name"])
            assert block.arguments == source["arguments"]
        else:
            assert type(block) is TextBlock
            expected = source.text if type(source) is TextBlock else source["text"]
            assert block.text == expected
    assert_frozen(message)


@given(
    keywords(
        {
            "id": valid_ids,
            "tool_call_id": valid_ids,
            "tool_name": valid_ids,
            "content": st.text(max_size=5),
            "is_error": st.one_of(st.booleans(), st.none()),
        },
        {
            "id": id_like,
            "tool_call_id": id_like,
            "tool_name": name_like,
            "content": anything,
            "is_error": anything,
        },
    )
)
def test_tool_result_message_returns_a_message_or_raises_type_error(
    kwargs: dict[str, Any],
) -> None:
    try:
        message = tool_result_message(**kwargs)
    except TypeError:
        event("rejected with TypeError")
        return
    event("accepted")
    assert type(message) is ToolResultMessage
    given_id = kwargs.get("id")  # omitted or None: generated, as by ToolResultMessage
    assert message.id == given_id or (given_id is None and message.id)
    assert (message.id, message.tool_call_id, message.tool_name, message.content) == (
        message.id,
        kwargs["tool_call_id"],
        kwargs["tool_name"],
        kwargs["content"],
    )
    assert message.is_error is (kwargs["is_error"] is True)
    assert_frozen(message)


# --- (c) generated valid transcripts validate clean -----------------------------------------

tool_names = st.one_of(st.sampled_from(["add", "lookup", "__proto__"]), st.text(max_size=6))


@st.composite
def valid_transcripts(draw: st.DrawFn) -> list[tether.Message]:
    """User turns, assistant turns with uniquely named calls, and each call's result later."""
    messages: list[tether.Message] = []
    serial = 0
    for _ in range(draw(st.integers(min_value=0, max_value=5))):
        serial += 1
        kind = draw(st.sampled_from(["user", "assistant"]))
        if kind == "user":
            messages.append(user_message(id=f"u{serial}", content=draw(st.text(max_size=10))))
            continue
        blocks: list[dict[str, object]] = []
        calls: list[tuple[str, str]] = []
        for position in range(draw(st.integers(min_value=0, max_value=3))):
            if draw(st.booleans()):
                blocks.append({"type": "text", "text": draw(st.text(max_size=10))})
                continue
            call_id = f"call-{serial}-{position}:{draw(st.text(max_size=4))}"
            name = "t" + draw(tool_names)
            arguments = draw(json_objects)
            blocks.append({"type": "toolCall", "id": call_id, "name": name, "arguments": arguments})
            calls.append((call_id, name))
        messages.append(assistant_message(id=f"a{serial}", content=blocks))
        for call_id, name in draw(st.permutations(calls)):
            if draw(st.booleans()):
                messages.append(user_message(id=f"u{serial}-between", content=""))
            messages.append(
                tool_result_message(
                    id=f"tool-result-{call_id}",
                    tool_call_id=call_id,
                    tool_name=name,
                    content=draw(st.text(max_size=10)),
                    is_error=draw(st.booleans()),
                )
            )
    return messages


@given(valid_transcripts())
def test_valid_transcripts_validate_clean_before_and_after_json(
    transcript: list[tether.Message],
) -> None:
    encoded = json.dumps(tether.to_json(transcript))
    decoded: list[object] = json.loads(encoded)

    assert validate_transcript(transcript) == ()
    assert validate_transcript(tuple(transcript)) == ()
    assert validate_transcript(decoded) == ()
    assert [parse_message(entry) for entry in decoded] == transcript


@given(valid_transcripts(), st.data())
def test_dropping_a_result_from_a_valid_transcript_is_reported_missing(
    transcript: list[tether.Message], data: st.DataObject
) -> None:
    results = [i for i, m in enumerate(transcript) if type(m) is ToolResultMessage]
    if not results:
        return
    dropped = data.draw(st.sampled_from(results))
    removed = transcript[dropped]
    assert type(removed) is ToolResultMessage

    diagnostics = validate_transcript(transcript[:dropped] + transcript[dropped + 1 :])

    assert [d.code for d in diagnostics] == ["MISSING_TOOL_RESULT"]
    assert diagnostics[0].message == f'Tool call "{removed.tool_call_id}" has no later result'
