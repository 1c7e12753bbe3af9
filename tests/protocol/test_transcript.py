"""Checkpoint 03: message constructors, ``parse_message``, ``text_from_assistant`` and
``validate_transcript`` (diagnostic codes, messages, indexes and order)."""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import json
import math
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import Any, overload

import pytest

import tether
from tether import AssistantMessage, JsonObject, TextBlock, ToolCall, ToolResultMessage, UserMessage
from tether.protocol.transcript import (
    TranscriptDiagnostic,
    assistant_message,
    parse_message,
    text_from_assistant,
    tool_result_message,
    user_message,
    validate_transcript,
)

# --- helpers --------------------------------------------------------------------------------

Triple = tuple[str, int, str]

BLANK_IDS = ["", " ", "\t\n\r", "\u00a0", "\u2028", "\u3000", "\ufeff", " \ufeff\t"]
BLANK_ID_NAMES = ["empty", "space", "tab-newline", "nbsp", "line-sep", "ideographic", "bom", "mix"]
NON_STRING_IDS: list[object] = [None, 1, b"id", ["id"]]


def triples(diagnostics: Sequence[TranscriptDiagnostic]) -> list[Triple]:
    return [(d.code, d.message_index, d.message) for d in diagnostics]


def check(transcript: object) -> list[Triple]:
    return triples(validate_transcript(transcript))


def user(id: object = "u1", content: object = "hi") -> dict[str, object]:
    return {"role": "user", "id": id, "content": content}


def call(call_id: object, name: object = "add", arguments: object = None) -> dict[str, object]:
    return {
        "type": "toolCall",
        "id": call_id,
        "name": name,
        "arguments": {"left": 1, "right": 2} if arguments is None else arguments,
    }


def text(value: object = "ok") -> dict[str, object]:
    return {"type": "text", "text": value}


def assistant(id: object, *blocks: object) -> dict[str, object]:
    return {"role": "assistant", "id": id, "content": list(blocks)}


def result(
    id: object,
    call_id: object,
    name: object = "add",
    content: object = "3",
    is_error: object = False,
) -> dict[str, object]:
    return {
        "role": "toolResult",
        "id": id,
        "toolCallId": call_id,
        "toolName": name,
        "content": content,
        "isError": is_error,
    }


class Recorded(Mapping[str, object]):
    """A read-only mapping that counts every ``__getitem__`` per key."""

    def __init__(self, data: dict[str, object]) -> None:
        self._data = data
        self.reads: Counter[str] = Counter()

    def __getitem__(self, key: str) -> object:
        self.reads[key] += 1
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


class Hostile(Mapping[str, object]):
    """A mapping whose reads of the ``exploding`` keys raise (a revoked-Proxy stand-in)."""

    def __init__(self, data: dict[str, object], exploding: frozenset[str] | None = None) -> None:
        self._data = data
        self._exploding = exploding

    def __getitem__(self, key: str) -> object:
        if self._exploding is None or key in self._exploding:
            raise RuntimeError(f"cannot read {key}")
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


class LyingSequence(Sequence[object]):
    """A sequence whose ``__len__`` exceeds its items (the port of a sparse array)."""

    @overload
    def __getitem__(self, index: int) -> object: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[object]: ...
    def __getitem__(self, index: int | slice) -> object:
        raise IndexError(index)

    def __len__(self) -> int:
        return 3


class RaisingList(list[object]):
    """A list subclass whose every inspection raises (a revoked-Proxy array)."""

    def __len__(self) -> int:
        raise RuntimeError("revoked")

    def __iter__(self) -> Iterator[object]:
        raise RuntimeError("revoked")

    def __getitem__(self, index: Any) -> Any:
        raise RuntimeError("revoked")


class Interrupt(BaseException):
    """A bare ``BaseException``: never swallowed."""


def cyclic_dict() -> dict[str, object]:
    value: dict[str, object] = {}
    value["self"] = value
    return value


def cyclic_list() -> list[object]:
    value: list[object] = []
    value.append(value)
    return value


def raises_type_error(function: Callable[[], object]) -> str:
    with pytest.raises(TypeError) as raised:
        function()
    return str(raised.value)


# --- user_message ---------------------------------------------------------------------------


def test_user_message_builds_a_frozen_user_message() -> None:
    message = user_message(id="u1", content="hello")

    assert type(message) is UserMessage
    assert (message.id, message.role, message.content) == ("u1", "user", "hello")
    with pytest.raises(dataclasses.FrozenInstanceError):
        message.content = "changed"  # pyright: ignore[reportAttributeAccessIssue]


def test_user_message_allows_empty_content() -> None:
    assert user_message(id="u1", content="").content == ""


def test_user_message_generates_an_id_when_none_is_given() -> None:
    generated = user_message(content="x")
    assert generated.id
    assert user_message(id=None, content="x").id != generated.id


@pytest.mark.parametrize("bad_id", [*BLANK_IDS, *(i for i in NON_STRING_IDS if i is not None)])
def test_user_message_rejects_a_blank_or_non_string_id(bad_id: object) -> None:
    message = raises_type_error(lambda: user_message(id=bad_id, content="x"))  # pyright: ignore[reportArgumentType]
    assert message == "userMessage: id must be a non-empty string"


@pytest.mark.parametrize("good_id", ["a", " a ", "\u200b", "\x1c", "\u0085", "\ufeffa"])
def test_ids_that_javascript_trim_keeps_are_accepted(good_id: str) -> None:
    assert user_message(id=good_id, content="x").id == good_id


@pytest.mark.parametrize("bad_content", [None, 1, b"x", ["x"]])
def test_user_message_rejects_non_string_content(bad_content: object) -> None:
    message = raises_type_error(lambda: user_message(id="u1", content=bad_content))  # pyright: ignore[reportArgumentType]
    assert message == "userMessage: content must be a string"


def test_constructors_take_keyword_arguments_only() -> None:
    positional: Any = user_message
    with pytest.raises(TypeError):
        positional("u1", "hi")


# --- assistant_message ------------------------------------------------------------------------

A = "assistantMessage: "

ASSISTANT_ERRORS: list[tuple[str, object, object, str]] = [
    ("blank-id", " ", [], A + "id must be a non-empty string"),
    ("bom-id", "\ufeff", [], A + "id must be a non-empty string"),
    ("int-id", 5, [], A + "id must be a non-empty string"),
    ("content-none", "a1", None, A + "content must be an array"),
    ("content-str", "a1", "text", A + "content must be an array"),
    ("content-dict", "a1", {"0": text()}, A + "content must be an array"),
    ("content-lying-sequence", "a1", LyingSequence(), A + "content must be an array"),
    ("block-none", "a1", [None], A + "content[0] must be an object"),
    ("block-str", "a1", [text(), "hi"], A + "content[1] must be an object"),
    ("block-list", "a1", [["text", "hi"]], A + "content[0] must be an object"),
    ("text-missing", "a1", [{"type": "text"}], A + "content[0].text must be a string"),
    ("text-int", "a1", [text(), text(), text(3)], A + "content[2].text must be a string"),
    (
        "type-image",
        "a1",
        [text(), {"type": "image"}],
        A + 'content[1].type must be "text", "thinking" or "toolCall"',
    ),
    (
        "type-missing",
        "a1",
        [{"text": "x"}],
        A + 'content[0].type must be "text", "thinking" or "toolCall"',
    ),
    (
        "type-case",
        "a1",
        [{"type": "Text", "text": "x"}],
        A + 'content[0].type must be "text", "thinking" or "toolCall"',
    ),
    (
        "type-none",
        "a1",
        [{"type": None}],
        A + 'content[0].type must be "text", "thinking" or "toolCall"',
    ),
    (
        "call-id-missing",
        "a1",
        [{"type": "toolCall", "name": "n", "arguments": {}}],
        A + "content[0].id must be a non-empty string",
    ),
    ("call-id-blank", "a1", [call("\ufeff ")], A + "content[0].id must be a non-empty string"),
    ("call-id-int", "a1", [call(1)], A + "content[0].id must be a non-empty string"),
    (
        "call-name-blank",
        "a1",
        [call("c1", name="  ")],
        A + "content[0].name must be a non-empty string",
    ),
    (
        "call-name-missing",
        "a1",
        [{"type": "toolCall", "id": "c1", "arguments": {}}],
        A + "content[0].name must be a non-empty string",
    ),
    (
        "args-missing",
        "a1",
        [{"type": "toolCall", "id": "c", "name": "n"}],
        A + "content[0].arguments must be a non-null object and not an array",
    ),
    (
        "args-none",
        "a1",
        [{"type": "toolCall", "id": "c", "name": "n", "arguments": None}],
        A + "content[0].arguments must be a non-null object and not an array",
    ),
    (
        "args-list",
        "a1",
        [call("c", arguments=[])],
        A + "content[0].arguments must be a non-null object and not an array",
    ),
    (
        "args-tuple",
        "a1",
        [call("c", arguments=(1,))],
        A + "content[0].arguments must be a non-null object and not an array",
    ),
    (
        "args-str",
        "a1",
        [call("c", arguments="{}")],
        A + "content[0].arguments must be a non-null object and not an array",
    ),
    (
        "args-int",
        "a1",
        [text(), call("c", arguments=0)],
        A + "content[1].arguments must be a non-null object and not an array",
    ),
    (
        "nested-nan",
        "a1",
        [call("c", arguments={"a": [1, math.nan]})],
        A + "content[0].arguments.a[1] must contain only JSON-compatible values",
    ),
    (
        "nested-inf",
        "a1",
        [call("c", arguments={"a": math.inf})],
        A + "content[0].arguments.a must contain only JSON-compatible values",
    ),
    (
        "nested-minus-inf",
        "a1",
        [call("c", arguments={"a": {"b": -math.inf}})],
        A + "content[0].arguments.a.b must contain only JSON-compatible values",
    ),
    (
        "nested-datetime",
        "a1",
        [call("c", arguments={"when": datetime.datetime(2024, 1, 1)})],
        A + "content[0].arguments.when must contain only JSON-compatible values",
    ),
    (
        "nested-decimal",
        "a1",
        [call("c", arguments={"n": [decimal.Decimal(1)]})],
        A + "content[0].arguments.n[0] must contain only JSON-compatible values",
    ),
    (
        "nested-bytes",
        "a1",
        [call("c", arguments={"b": b"x"})],
        A + "content[0].arguments.b must contain only JSON-compatible values",
    ),
    (
        "nested-function",
        "a1",
        [call("c", arguments={"f": len})],
        A + "content[0].arguments.f must contain only JSON-compatible values",
    ),
    (
        "nested-object",
        "a1",
        [call("c", arguments={"o": object()})],
        A + "content[0].arguments.o must contain only JSON-compatible values",
    ),
    (
        "nested-dict-subclass",
        "a1",
        [call("c", arguments={"a": OrderedDict[str, object]()})],
        A + "content[0].arguments.a must contain only JSON objects and arrays",
    ),
    (
        "nested-mapping-proxy",
        "a1",
        [call("c", arguments={"a": [MappingProxyType[str, object]({})]})],
        A + "content[0].arguments.a[0] must contain only JSON objects and arrays",
    ),
    (
        "cyclic-dict",
        "a1",
        [call("c", arguments=cyclic_dict())],
        A + "content[0].arguments.self must not contain circular references",
    ),
    (
        "cyclic-list",
        "a1",
        [call("c", arguments={"l": cyclic_list()})],
        A + "content[0].arguments.l[0] must not contain circular references",
    ),
]


@pytest.mark.parametrize(
    ("id", "content", "expected"),
    [case[1:] for case in ASSISTANT_ERRORS],
    ids=[case[0] for case in ASSISTANT_ERRORS],
)
def test_assistant_message_rejects_invalid_input_with_the_exact_message(
    id: object, content: object, expected: str
) -> None:
    assert raises_type_error(lambda: assistant_message(id=id, content=content)) == expected  # pyright: ignore[reportArgumentType]


@pytest.mark.parametrize(
    "arguments",
    [
        {1: "non-string key"},
        {"s": {1, 2}},
        {"f": frozenset[int]()},
        {"deep": [[[[[[[[[[{"x": math.nan}]]]]]]]]]]},
    ],
    ids=["int-key", "set", "frozenset", "deep-nan"],
)
def test_assistant_message_rejects_other_non_json_arguments(arguments: object) -> None:
    message = raises_type_error(
        lambda: assistant_message(id="a", content=[call("c", "n", arguments)])
    )
    assert message.startswith("assistantMessage: content[0].arguments")


def test_assistant_message_rejects_very_deep_arguments_with_type_error() -> None:
    deep: dict[str, object] = {}
    node = deep
    for _ in range(5000):
        child: dict[str, object] = {}
        node["x"] = child
        node = child

    message = raises_type_error(lambda: assistant_message(id="a", content=[call("c", "n", deep)]))
    assert message.startswith("assistantMessage: content[0].arguments")


def test_assistant_message_snapshots_and_freezes_everything() -> None:
    arguments: dict[str, Any] = {"list": [1, {"x": "y"}], "obj": {"k": None}, "flag": True}
    block = call("c1", "search", arguments)
    content: list[object] = [text("before"), block]

    message = assistant_message(id="a1", content=content)  # pyright: ignore[reportArgumentType]
    arguments["list"][1]["x"] = "mutated"
    arguments["list"].append(2)
    arguments["new"] = 1
    block["name"] = "other"
    content.append(text("late"))

    assert type(message) is AssistantMessage
    assert message.content == (
        TextBlock(text="before"),
        ToolCall(
            id="c1",
            name="search",
            arguments=JsonObject({"list": [1, {"x": "y"}], "obj": {"k": None}, "flag": True}),
        ),
    )
    tool_call = message.content[1]
    assert isinstance(tool_call, ToolCall)
    assert type(tool_call.arguments) is JsonObject
    assert type(tool_call.arguments["list"]) is tuple
    frozen_arguments: Any = tool_call.arguments
    with pytest.raises(TypeError):
        frozen_arguments["new"] = 1
    with pytest.raises(TypeError):
        frozen_arguments["obj"]["k"] = 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        message.id = "other"  # pyright: ignore[reportAttributeAccessIssue]
    with pytest.raises(dataclasses.FrozenInstanceError):
        tool_call.name = "other"  # pyright: ignore[reportAttributeAccessIssue]
    assert type(message.content) is tuple


def test_assistant_message_keeps_prototype_like_keys_as_ordinary_keys() -> None:
    arguments = {"__proto__": {"polluted": True}, "constructor": "c", "__class__": 1}

    message = assistant_message(id="a1", content=[call("c1", "n", arguments)])

    tool_call = message.content[0]
    assert isinstance(tool_call, ToolCall)
    assert dict(tool_call.arguments) == {
        "__proto__": {"polluted": True},
        "constructor": "c",
        "__class__": 1,
    }
    assert type(tool_call.arguments) is JsonObject


def test_assistant_message_accepts_a_shared_non_cyclic_sub_object_twice() -> None:
    shared = {"v": [1, 2]}

    message = assistant_message(id="a1", content=[call("c1", "n", {"a": shared, "b": [shared]})])

    tool_call = message.content[0]
    assert isinstance(tool_call, ToolCall)
    assert tool_call.arguments == {"a": {"v": [1, 2]}, "b": [{"v": [1, 2]}]}


def test_assistant_message_accepts_protocol_blocks_and_camel_case_dicts() -> None:
    protocol_call = ToolCall(id="c1", name="add", arguments=JsonObject({"left": 1}))
    protocol_text = TextBlock(text="a")

    message = assistant_message(
        id="a1",
        content=(protocol_text, protocol_call, {"type": "text", "text": "b"}, call("c2", "mul")),
    )

    assert message.content == (
        protocol_text,
        protocol_call,
        TextBlock(text="b"),
        ToolCall(id="c2", name="mul", arguments=JsonObject({"left": 1, "right": 2})),
    )


def test_assistant_message_allows_empty_content() -> None:
    assert assistant_message(id="a1", content=[]).content == ()


def test_assistant_message_does_not_check_call_id_uniqueness() -> None:
    message = assistant_message(id="a1", content=[call("same"), call("same", "mul")])

    assert [block.id for block in message.content if isinstance(block, ToolCall)] == [
        "same",
        "same",
    ]


@pytest.mark.parametrize("kind", ["text", "toolCall"])
def test_assistant_message_reads_each_block_field_once(kind: str) -> None:
    block = Recorded(
        text("hello") if kind == "text" else call("c1", "add", {"left": 1, "right": 2})
    )

    message = assistant_message(id="a1", content=[block])

    assert len(message.content) == 1
    expected_keys = (
        {"type", "text", "signature"}
        if kind == "text"
        else {"type", "id", "name", "arguments", "rawArguments", "signature"}
    )
    assert set(block.reads) == expected_keys
    assert all(count == 1 for count in block.reads.values()), block.reads


def test_assistant_message_turns_a_failing_block_read_into_type_error() -> None:
    block = Hostile(call("c1"), exploding=frozenset({"arguments"}))

    with pytest.raises(TypeError):
        assistant_message(id="a1", content=[block])


# --- tool_result_message --------------------------------------------------------------------

T = "toolResultMessage: "
GOOD_RESULT: dict[str, object] = {
    "id": "r1",
    "tool_call_id": "c1",
    "tool_name": "add",
    "content": "3",
}

TOOL_RESULT_ERRORS: list[tuple[str, str, object, str]] = [
    ("id-blank", "id", "  ", T + "id must be a non-empty string"),
    ("id-bom", "id", "\ufeff", T + "id must be a non-empty string"),
    ("call-id-empty", "tool_call_id", "", T + "toolCallId must be a non-empty string"),
    ("call-id-int", "tool_call_id", 1, T + "toolCallId must be a non-empty string"),
    ("name-blank", "tool_name", "\u3000", T + "toolName must be a non-empty string"),
    ("name-none", "tool_name", None, T + "toolName must be a non-empty string"),
    ("content-none", "content", None, T + "content must be a string"),
    ("content-bytes", "content", b"3", T + "content must be a string"),
    ("is-error-int", "is_error", 1, T + "isError must be a boolean"),
    ("is-error-zero", "is_error", 0, T + "isError must be a boolean"),
    ("is-error-str", "is_error", "false", T + "isError must be a boolean"),
]


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [case[1:] for case in TOOL_RESULT_ERRORS],
    ids=[case[0] for case in TOOL_RESULT_ERRORS],
)
def test_tool_result_message_rejects_invalid_fields(
    field: str, value: object, expected: str
) -> None:
    fields: dict[str, Any] = {**GOOD_RESULT, field: value}

    assert raises_type_error(lambda: tool_result_message(**fields)) == expected


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ({}, False),
        ({"is_error": None}, False),
        ({"is_error": True}, True),
        ({"is_error": False}, False),
    ],
    ids=["absent", "none", "true", "false"],
)
def test_tool_result_message_is_error_defaults_to_false(
    given: dict[str, Any], expected: bool
) -> None:
    message = tool_result_message(id="r1", tool_call_id="c1", tool_name="add", content="", **given)

    assert type(message) is ToolResultMessage
    assert message.is_error is expected
    assert (message.role, message.tool_call_id, message.tool_name, message.content) == (
        "toolResult",
        "c1",
        "add",
        "",
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        message.is_error = not expected  # pyright: ignore[reportAttributeAccessIssue]


# --- parse_message --------------------------------------------------------------------------


def test_parse_message_builds_each_role_from_camel_case_json() -> None:
    parsed = [
        parse_message(user("u1", "hi")),
        parse_message(assistant("a1", text("x"), call("c1", "add", {"n": [1]}))),
        parse_message(result("r1", "c1", "add", "3", True)),
    ]

    assert parsed == [
        user_message(id="u1", content="hi"),
        assistant_message(id="a1", content=[text("x"), call("c1", "add", {"n": [1]})]),
        tool_result_message(
            id="r1", tool_call_id="c1", tool_name="add", content="3", is_error=True
        ),
    ]


@pytest.mark.parametrize("is_error", ["absent", None], ids=["absent", "null"])
def test_parse_message_defaults_is_error_to_false(is_error: object) -> None:
    data = result("r1", "c1")
    if is_error == "absent":
        del data["isError"]
    else:
        data["isError"] = is_error

    message = parse_message(data)

    assert isinstance(message, ToolResultMessage)
    assert message.is_error is False


def test_parse_message_returns_protocol_messages_unchanged() -> None:
    messages = [
        user_message(id="u1", content="hi"),
        assistant_message(id="a1", content=[call("c1")]),
        tool_result_message(id="r1", tool_call_id="c1", tool_name="add", content="3"),
    ]

    for message in messages:
        assert parse_message(message) is message


def test_parse_message_round_trips_to_json() -> None:
    messages = [
        user_message(id="u1", content="hi"),
        assistant_message(id="a1", content=[text("t"), call("c1", "add", {"a": {"b": [None]}})]),
        tool_result_message(id="r1", tool_call_id="c1", tool_name="add", content="3"),
    ]

    for message in messages:
        assert parse_message(json.loads(json.dumps(tether.to_json(message)))) == message


@pytest.mark.parametrize(
    "value",
    [None, "user", 1, [("role", "user")], ("role", "user"), UserMessage],
    ids=["None", "str", "int", "list", "tuple", "class"],
)
def test_parse_message_rejects_non_mappings(value: object) -> None:
    with pytest.raises(TypeError):
        parse_message(value)


@pytest.mark.parametrize("role", ["system", "User", "", None, 1, "absent"], ids=repr)
def test_parse_message_rejects_unknown_roles(role: object) -> None:
    data: dict[str, object] = {"id": "m1", "content": "x"}
    if role != "absent":
        data["role"] = role

    with pytest.raises(TypeError):
        parse_message(data)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (user(" "), "userMessage: id must be a non-empty string"),
        (
            assistant("a1", {"type": "image"}),
            A + 'content[0].type must be "text", "thinking" or "toolCall"',
        ),
        (result("r1", "c1", is_error=1), T + "isError must be a boolean"),
    ],
    ids=["user", "assistant", "toolResult"],
)
def test_parse_message_reports_field_errors_like_the_constructors(
    data: dict[str, object], expected: str
) -> None:
    assert raises_type_error(lambda: parse_message(data)) == expected


def test_parse_message_reads_each_field_once() -> None:
    entries = [
        Recorded(user()),
        Recorded(assistant("a1", call("c1"))),
        Recorded(result("r1", "c1")),
    ]

    for entry in entries:
        parse_message(entry)

    for entry in entries:
        # every field present is read, and an absent optional one (``errorCode``, ``images``)
        # may be read to learn it is absent: each once
        assert set(entry) <= set(entry.reads) <= set(entry) | {"errorCode", "images"}
        assert all(count == 1 for count in entry.reads.values()), entry.reads


def test_parse_message_turns_a_failing_read_into_type_error() -> None:
    with pytest.raises(TypeError):
        parse_message(Hostile(user(), exploding=frozenset({"content"})))


# --- text_from_assistant --------------------------------------------------------------------


def test_text_from_assistant_joins_text_blocks_in_order_and_skips_tool_calls() -> None:
    message = assistant_message(
        id="a1", content=[text("Hel"), call("c1"), text(""), text("lo"), call("c2"), text("!")]
    )

    assert text_from_assistant(message) == "Hello!"


def test_text_from_assistant_of_tool_calls_only_is_empty() -> None:
    assert text_from_assistant(assistant_message(id="a1", content=[call("c1")])) == ""
    assert text_from_assistant(assistant_message(id="a2", content=[])) == ""


# --- validate_transcript: shape diagnostics -------------------------------------------------

SHAPE_CASES: list[tuple[str, object, list[Triple]]] = [
    ("none", None, [("INVALID_TRANSCRIPT", -1, "Transcript must be an array")]),
    ("str", "[]", [("INVALID_TRANSCRIPT", -1, "Transcript must be an array")]),
    ("dict", {"0": user()}, [("INVALID_TRANSCRIPT", -1, "Transcript must be an array")]),
    ("one-message", user(), [("INVALID_TRANSCRIPT", -1, "Transcript must be an array")]),
    ("set", {1}, [("INVALID_TRANSCRIPT", -1, "Transcript must be an array")]),
    (
        "lying-sequence",
        LyingSequence(),
        [("INVALID_TRANSCRIPT", -1, "Transcript must be an array")],
    ),
    ("empty", [], []),
    ("empty-tuple", (), []),
    ("entry-none", [None], [("INVALID_MESSAGE", 0, "Transcript entry must be a message object")]),
    (
        "entry-str",
        [user(), "hi"],
        [("INVALID_MESSAGE", 1, "Transcript entry must be a message object")],
    ),
    (
        "entry-list",
        [[user()]],
        [("INVALID_MESSAGE", 0, "Transcript entry must be a message object")],
    ),
    (
        "role-missing",
        [{"id": "m", "content": "x"}],
        [("INVALID_MESSAGE", 0, "Message role must be a string")],
    ),
    (
        "role-none",
        [user(), {"role": None, "id": "m"}],
        [("INVALID_MESSAGE", 1, "Message role must be a string")],
    ),
    (
        "role-int",
        [{"role": 1, "id": "m"}],
        [("INVALID_MESSAGE", 0, "Message role must be a string")],
    ),
    (
        "id-missing",
        [{"role": "user", "content": "x"}],
        [("INVALID_MESSAGE", 0, "Message ID must be a non-empty string")],
    ),
    ("id-blank", [user("  ")], [("INVALID_MESSAGE", 0, "Message ID must be a non-empty string")]),
    ("id-bom", [user("\ufeff")], [("INVALID_MESSAGE", 0, "Message ID must be a non-empty string")]),
    ("id-int", [user(7)], [("INVALID_MESSAGE", 0, "Message ID must be a non-empty string")]),
    (
        "id-before-role",
        [{"role": "system", "id": ""}],
        [("INVALID_MESSAGE", 0, "Message ID must be a non-empty string")],
    ),
    (
        "user-content-int",
        [user(content=1)],
        [("INVALID_MESSAGE", 0, "User message content must be a string")],
    ),
    (
        "user-content-missing",
        [{"role": "user", "id": "u"}],
        [("INVALID_MESSAGE", 0, "User message content must be a string")],
    ),
    ("user-content-empty-ok", [user(content="")], []),
    (
        "assistant-content-str",
        [{"role": "assistant", "id": "a", "content": "x"}],
        [("INVALID_MESSAGE", 0, "Assistant message content must be an array")],
    ),
    (
        "assistant-content-missing",
        [{"role": "assistant", "id": "a"}],
        [("INVALID_MESSAGE", 0, "Assistant message content must be an array")],
    ),
    (
        "assistant-content-lying",
        [{"role": "assistant", "id": "a", "content": LyingSequence()}],
        [("INVALID_MESSAGE", 0, "Assistant message content must be an array")],
    ),
    (
        "block-int",
        [assistant("a", text(), 5)],
        [("INVALID_MESSAGE", 0, "Assistant content[1] must be an object")],
    ),
    (
        "block-none",
        [user(), assistant("a", None)],
        [("INVALID_MESSAGE", 1, "Assistant content[0] must be an object")],
    ),
    (
        "text-int",
        [assistant("a", text(1))],
        [("INVALID_MESSAGE", 0, "Assistant content[0].text must be a string")],
    ),
    (
        "text-missing",
        [assistant("a", text(), {"type": "text"})],
        [("INVALID_MESSAGE", 0, "Assistant content[1].text must be a string")],
    ),
    (
        "block-image",
        [assistant("a", {"type": "image"})],
        [("INVALID_MESSAGE", 0, "Assistant content[0] has an unsupported type")],
    ),
    (
        "block-no-type",
        [assistant("a", {"text": "x"})],
        [("INVALID_MESSAGE", 0, "Assistant content[0] has an unsupported type")],
    ),
    (
        "block-type-none",
        [assistant("a", {"type": None})],
        [("INVALID_MESSAGE", 0, "Assistant content[0] has an unsupported type")],
    ),
    (
        "every-block-reported",
        [assistant("a", 1, text(2), {"type": "x"})],
        [
            ("INVALID_MESSAGE", 0, "Assistant content[0] must be an object"),
            ("INVALID_MESSAGE", 0, "Assistant content[1].text must be a string"),
            ("INVALID_MESSAGE", 0, "Assistant content[2] has an unsupported type"),
        ],
    ),
    (
        "role-system",
        [{"role": "system", "id": "s", "content": "x"}],
        [("INVALID_MESSAGE", 0, 'Unsupported message role "system"')],
    ),
    (
        "role-empty",
        [user(), {"role": "", "id": "s"}],
        [("INVALID_MESSAGE", 1, 'Unsupported message role ""')],
    ),
    (
        "result-call-id-empty",
        [result("r", "")],
        [("INVALID_MESSAGE", 0, "Tool result call ID must be a non-empty string")],
    ),
    (
        "result-call-id-missing",
        [{"role": "toolResult", "id": "r", "toolName": "n", "content": "", "isError": False}],
        [("INVALID_MESSAGE", 0, "Tool result call ID must be a non-empty string")],
    ),
    (
        "result-name-blank",
        [result("r", "c", name=" ")],
        [("EMPTY_TOOL_NAME", 0, "Tool result name must be a non-empty string")],
    ),
    (
        "result-name-int",
        [result("r", "c", name=1)],
        [("EMPTY_TOOL_NAME", 0, "Tool result name must be a non-empty string")],
    ),
    (
        "result-content-none",
        [result("r", "c", content=None)],
        [("INVALID_MESSAGE", 0, "Tool result content must be a string")],
    ),
    (
        "result-is-error-none",
        [result("r", "c", is_error=None)],
        [("INVALID_MESSAGE", 0, "Tool result isError must be a boolean")],
    ),
    (
        "result-is-error-int",
        [result("r", "c", is_error=0)],
        [("INVALID_MESSAGE", 0, "Tool result isError must be a boolean")],
    ),
    (
        "result-is-error-missing",
        [{"role": "toolResult", "id": "r", "toolCallId": "c", "toolName": "n", "content": ""}],
        [("INVALID_MESSAGE", 0, "Tool result isError must be a boolean")],
    ),
]


@pytest.mark.parametrize(
    ("transcript", "expected"),
    [case[1:] for case in SHAPE_CASES],
    ids=[case[0] for case in SHAPE_CASES],
)
def test_validate_transcript_reports_shape_problems(
    transcript: object, expected: list[Triple]
) -> None:
    assert check(transcript) == expected


BAD_ARGUMENTS: list[tuple[str, object]] = [
    ("missing", "absent"),
    ("none", None),
    ("list", []),
    ("str", "{}"),
    ("nan", {"a": math.nan}),
    ("set", {"a": {1}}),
    ("int-key", {1: "x"}),
    ("dict-subclass", OrderedDict[str, object]()),
    ("mapping-proxy", MappingProxyType[str, object]({})),
    ("nested-subclass", {"a": [OrderedDict[str, object]()]}),
    ("cyclic", cyclic_dict()),
]
INVALID_ARGUMENTS = (
    "INVALID_TOOL_ARGUMENTS",
    0,
    "Tool call arguments must be a non-null JSON object and not an array",
)


@pytest.mark.parametrize(
    "arguments", [case[1] for case in BAD_ARGUMENTS], ids=[case[0] for case in BAD_ARGUMENTS]
)
def test_validate_transcript_rejects_non_json_tool_arguments(arguments: object) -> None:
    block = call("c1", "add", {})
    if arguments == "absent":
        del block["arguments"]
    else:
        block["arguments"] = arguments

    assert check([assistant("a", block)]) == [INVALID_ARGUMENTS]


@pytest.mark.parametrize(
    ("block", "expected"),
    [
        (call("", "add"), [("INVALID_MESSAGE", 0, "Tool call ID must be a non-empty string")]),
        (
            call("\ufeff", "add"),
            [("INVALID_MESSAGE", 0, "Tool call ID must be a non-empty string")],
        ),
        (call(None, "add"), [("INVALID_MESSAGE", 0, "Tool call ID must be a non-empty string")]),
        (call("c1", ""), [("EMPTY_TOOL_NAME", 0, "Tool call name must be a non-empty string")]),
        (call("c1", 3), [("EMPTY_TOOL_NAME", 0, "Tool call name must be a non-empty string")]),
        (
            {"type": "toolCall", "id": " ", "name": None, "arguments": []},
            [
                ("INVALID_MESSAGE", 0, "Tool call ID must be a non-empty string"),
                ("EMPTY_TOOL_NAME", 0, "Tool call name must be a non-empty string"),
                INVALID_ARGUMENTS,
            ],
        ),
        (
            {"type": "toolCall"},
            [
                ("INVALID_MESSAGE", 0, "Tool call ID must be a non-empty string"),
                ("EMPTY_TOOL_NAME", 0, "Tool call name must be a non-empty string"),
                INVALID_ARGUMENTS,
            ],
        ),
    ],
    ids=["id-empty", "id-bom", "id-none", "name-empty", "name-int", "all-three", "all-missing"],
)
def test_validate_transcript_reports_tool_call_fields_independently(
    block: dict[str, object], expected: list[Triple]
) -> None:
    assert check([assistant("a", block)]) == expected


# --- validate_transcript: linkage -----------------------------------------------------------

LINKAGE_CASES: list[tuple[str, list[object], list[Triple]]] = [
    (
        "valid",
        [user(), assistant("a1", text(), call("c1")), result("r1", "c1"), assistant("a2", text())],
        [],
    ),
    (
        "duplicate-call-across-messages",
        [
            assistant("a1", call("c1")),
            result("r1", "c1"),
            assistant("a2", call("c1")),
            result("r2", "c1"),
        ],
        [
            ("DUPLICATE_TOOL_CALL_ID", 2, 'Tool call ID "c1" is not unique'),
            ("DUPLICATE_TOOL_RESULT", 3, 'Tool call "c1" has more than one result'),
        ],
    ),
    (
        "duplicate-call-within-message",
        [assistant("a1", call("c1"), call("c1")), result("r1", "c1")],
        [("DUPLICATE_TOOL_CALL_ID", 0, 'Tool call ID "c1" is not unique')],
    ),
    (
        "duplicate-result",
        [assistant("a1", call("c1")), result("r1", "c1"), user(), result("r2", "c1")],
        [("DUPLICATE_TOOL_RESULT", 3, 'Tool call "c1" has more than one result')],
    ),
    (
        "orphan",
        [user(), result("r1", "ghost")],
        [("ORPHAN_TOOL_RESULT", 1, 'Tool result references unknown call ID "ghost"')],
    ),
    (
        "orphan-twice",
        [result("r1", "ghost"), result("r2", "ghost")],
        [
            ("DUPLICATE_TOOL_RESULT", 1, 'Tool call "ghost" has more than one result'),
            ("ORPHAN_TOOL_RESULT", 0, 'Tool result references unknown call ID "ghost"'),
            ("ORPHAN_TOOL_RESULT", 1, 'Tool result references unknown call ID "ghost"'),
        ],
    ),
    (
        "result-before-call",
        [user(), result("r1", "c1"), assistant("a1", call("c1"))],
        [
            ("TOOL_RESULT_BEFORE_CALL", 1, 'Tool result for "c1" appears before its call'),
            ("MISSING_TOOL_RESULT", 2, 'Tool call "c1" has no later result'),
        ],
    ),
    (
        "result-before-and-after-call",
        [result("r1", "c1"), assistant("a1", call("c1")), result("r2", "c1")],
        [
            ("DUPLICATE_TOOL_RESULT", 2, 'Tool call "c1" has more than one result'),
            ("TOOL_RESULT_BEFORE_CALL", 0, 'Tool result for "c1" appears before its call'),
        ],
    ),
    (
        "name-mismatch",
        [assistant("a1", call("c1", "add")), result("r1", "c1", "sub")],
        [("TOOL_NAME_MISMATCH", 1, 'Tool result name "sub" does not match call name "add"')],
    ),
    (
        "missing-result",
        [user(), assistant("a1", call("c1"), call("c2")), result("r2", "c2")],
        [("MISSING_TOOL_RESULT", 1, 'Tool call "c1" has no later result')],
    ),
    (
        "error-result-still-links",
        [assistant("a1", call("c1")), result("r1", "c1", is_error=True)],
        [],
    ),
]


@pytest.mark.parametrize(
    ("transcript", "expected"),
    [case[1:] for case in LINKAGE_CASES],
    ids=[case[0] for case in LINKAGE_CASES],
)
def test_validate_transcript_reports_linkage_problems(
    transcript: list[object], expected: list[Triple]
) -> None:
    assert check(transcript) == expected


def test_validate_transcript_orders_shape_then_linkage_then_missing() -> None:
    transcript = [
        result("r0", "z"),  # before its call (pass A)
        result("r1", "ghost"),  # orphan (pass A)
        user(""),  # shape
        assistant("a3", call("z"), call("y"), call("m", "mul")),
        result("r4", "m", "add"),  # name mismatch (pass A)
        {"role": "system", "id": "s", "content": "x"},  # shape
        assistant("a6", call("x")),
    ]

    assert check(transcript) == [
        ("INVALID_MESSAGE", 2, "Message ID must be a non-empty string"),
        ("INVALID_MESSAGE", 5, 'Unsupported message role "system"'),
        ("TOOL_RESULT_BEFORE_CALL", 0, 'Tool result for "z" appears before its call'),
        ("ORPHAN_TOOL_RESULT", 1, 'Tool result references unknown call ID "ghost"'),
        ("TOOL_NAME_MISMATCH", 4, 'Tool result name "add" does not match call name "mul"'),
        ("MISSING_TOOL_RESULT", 3, 'Tool call "z" has no later result'),
        ("MISSING_TOOL_RESULT", 3, 'Tool call "y" has no later result'),
        ("MISSING_TOOL_RESULT", 6, 'Tool call "x" has no later result'),
    ]


def test_linkage_pass_groups_results_by_first_seen_result_id() -> None:
    transcript = [result("r1", "p"), result("r2", "q"), result("r3", "p")]

    assert check(transcript) == [
        ("DUPLICATE_TOOL_RESULT", 2, 'Tool call "p" has more than one result'),
        ("ORPHAN_TOOL_RESULT", 0, 'Tool result references unknown call ID "p"'),
        ("ORPHAN_TOOL_RESULT", 2, 'Tool result references unknown call ID "p"'),
        ("ORPHAN_TOOL_RESULT", 1, 'Tool result references unknown call ID "q"'),
    ]


def test_missing_result_pass_follows_first_seen_call_order() -> None:
    transcript = [assistant("a1", call("later-name"), call("earlier")), assistant("a2", call("b"))]

    assert [d.message for d in validate_transcript(transcript)] == [
        'Tool call "later-name" has no later result',
        'Tool call "earlier" has no later result',
        'Tool call "b" has no later result',
    ]


# --- validate_transcript: ambiguity suppression ---------------------------------------------

SUPPRESSION_CASES: list[tuple[str, list[object], list[Triple]]] = [
    (
        "malformed-call-name-no-orphan",
        [assistant("a1", call("c1", "")), result("r1", "c1")],
        [("EMPTY_TOOL_NAME", 0, "Tool call name must be a non-empty string")],
    ),
    (
        "malformed-call-arguments-no-orphan",
        [assistant("a1", call("c1", "add", [])), result("r1", "c1")],
        [INVALID_ARGUMENTS],
    ),
    (
        "malformed-call-hides-valid-twin",
        [
            assistant("a1", call("c1")),
            assistant("a2", call("c1", "add", [])),
            result("r1", "c1", "other"),
        ],
        [
            (
                "INVALID_TOOL_ARGUMENTS",
                1,
                "Tool call arguments must be a non-null JSON object and not an array",
            )
        ],
    ),
    (
        "malformed-call-without-results-not-missing",
        [assistant("a1", call("c1", " "))],
        [("EMPTY_TOOL_NAME", 0, "Tool call name must be a non-empty string")],
    ),
    (
        "duplicate-call-hides-mismatch-and-missing",
        [assistant("a1", call("c1")), assistant("a2", call("c1")), result("r1", "c1", "sub")],
        [("DUPLICATE_TOOL_CALL_ID", 1, 'Tool call ID "c1" is not unique')],
    ),
    (
        "duplicate-call-hides-before-call",
        [result("r1", "c1"), assistant("a1", call("c1")), assistant("a2", call("c1"))],
        [("DUPLICATE_TOOL_CALL_ID", 2, 'Tool call ID "c1" is not unique')],
    ),
    (
        "malformed-result-name-hides-missing",
        [assistant("a1", call("c1")), result("r1", "c1", "")],
        [("EMPTY_TOOL_NAME", 1, "Tool result name must be a non-empty string")],
    ),
    (
        "malformed-result-content-hides-missing",
        [assistant("a1", call("c1")), result("r1", "c1", content=1)],
        [("INVALID_MESSAGE", 1, "Tool result content must be a string")],
    ),
    (
        "malformed-result-is-error-hides-missing",
        [assistant("a1", call("c1")), result("r1", "c1", is_error="no")],
        [("INVALID_MESSAGE", 1, "Tool result isError must be a boolean")],
    ),
    (
        "unreadable-result-id-does-not-hide-missing",
        [assistant("a1", call("c1")), result("r1", " ")],
        [
            ("INVALID_MESSAGE", 1, "Tool result call ID must be a non-empty string"),
            ("MISSING_TOOL_RESULT", 0, 'Tool call "c1" has no later result'),
        ],
    ),
    (
        "blank-call-id-does-not-hide-orphan",
        [assistant("a1", call(" ")), result("r1", "c1")],
        [
            ("INVALID_MESSAGE", 0, "Tool call ID must be a non-empty string"),
            ("ORPHAN_TOOL_RESULT", 1, 'Tool result references unknown call ID "c1"'),
        ],
    ),
]


@pytest.mark.parametrize(
    ("transcript", "expected"),
    [case[1:] for case in SUPPRESSION_CASES],
    ids=[case[0] for case in SUPPRESSION_CASES],
)
def test_validate_transcript_suppresses_ambiguous_linkage(
    transcript: list[object], expected: list[Triple]
) -> None:
    assert check(transcript) == expected


# --- validate_transcript: hostile input -------------------------------------------------------


def test_validate_transcript_reads_every_field_at_most_once() -> None:
    blocks = [Recorded(text("hi")), Recorded(call("c1"))]
    entries = [
        Recorded(user()),
        Recorded({"role": "assistant", "id": "a1", "content": blocks}),
        Recorded(result("r1", "c1")),
    ]

    assert check(entries) == []

    for recorded in [*entries, *blocks]:
        assert set(recorded.reads) <= {*recorded, "rawArguments", "images", "errorCode"}  # optional
        assert all(count == 1 for count in recorded.reads.values()), recorded.reads
    assert set(entries[2].reads) == {
        "role",
        "id",
        "toolCallId",
        "toolName",
        "content",
        "isError",
        "images",
        "errorCode",
    }
    assert set(blocks[1].reads) == {"type", "id", "name", "arguments", "rawArguments"}


def test_entry_that_cannot_be_inspected_is_reported_and_others_still_checked() -> None:
    transcript = [
        user(content=1),
        Hostile(user()),
        {"role": 3},
        Hostile(result("r1", "c9"), exploding=frozenset({"content"})),
        result("r2", "ghost"),
    ]

    assert check(transcript) == [
        ("INVALID_MESSAGE", 0, "User message content must be a string"),
        ("INVALID_MESSAGE", 1, "Transcript entry could not be inspected safely"),
        ("INVALID_MESSAGE", 2, "Message role must be a string"),
        ("INVALID_MESSAGE", 3, "Transcript entry could not be inspected safely"),
        ("ORPHAN_TOOL_RESULT", 4, 'Tool result references unknown call ID "ghost"'),
    ]


def test_result_whose_later_read_raises_hides_the_missing_result() -> None:
    transcript = [
        assistant("a1", call("c1")),
        Hostile(result("r1", "c1"), exploding=frozenset({"isError"})),
    ]

    assert check(transcript) == [
        ("INVALID_MESSAGE", 1, "Transcript entry could not be inspected safely")
    ]


def test_block_that_cannot_be_inspected_is_reported_and_other_blocks_still_checked() -> None:
    transcript = [
        user(),
        assistant("a1", text(), Hostile(text()), text(5), call("c1")),
        result("r1", "c1"),
    ]

    assert check(transcript) == [
        ("INVALID_MESSAGE", 1, "Assistant content[1] could not be inspected safely"),
        ("INVALID_MESSAGE", 1, "Assistant content[2].text must be a string"),
    ]


def test_call_whose_later_read_raises_is_malformed_and_hides_the_orphan() -> None:
    transcript = [
        assistant("a1", Hostile(call("c1"), exploding=frozenset({"arguments"}))),
        result("r1", "c1"),
    ]

    assert check(transcript) == [
        ("INVALID_MESSAGE", 0, "Assistant content[0] could not be inspected safely")
    ]


def test_a_hostile_list_subclass_is_read_from_its_real_contents() -> None:
    # Its own __len__/__getitem__/__iter__ raise (or lie); the validator never calls them.
    assert validate_transcript(RaisingList()) == ()


def test_a_list_subclass_claiming_ten_million_items_costs_nothing() -> None:
    class Huge(list[object]):
        def __len__(self) -> int:
            return 10**7

        def __getitem__(self, index: object) -> object:  # pyright: ignore[reportIncompatibleMethodOverride]
            return {"role": "user", "id": "u", "content": "x"}

    assert validate_transcript(Huge()) == ()


def test_a_bare_base_exception_from_an_entry_is_not_swallowed() -> None:
    class Interrupting(Hostile):
        def __getitem__(self, key: str) -> object:
            raise Interrupt

    with pytest.raises(Interrupt):
        validate_transcript([Interrupting({"role": "user"})])


# --- validate_transcript: protocol values, JSON round trip, immutability ----------------------


def built_transcript() -> tuple[tether.Message, ...]:
    return (
        user_message(id="u1", content="Add 2 and 3, then look up “π”."),
        assistant_message(
            id="a1",
            content=[
                text("Working on it."),
                call("c1", "add", {"left": 2, "right": 3.5, "tags": ["x", None, True]}),
                call("c2", "lookup", {"query": {"term": "π", "limit": 1}, "__proto__": {}}),
            ],
        ),
        tool_result_message(id="r1", tool_call_id="c1", tool_name="add", content="5.5"),
        tool_result_message(
            id="r2", tool_call_id="c2", tool_name="lookup", content="not found", is_error=True
        ),
        assistant_message(id="a2", content=[text("2 + 3.5 = 5.5")]),
    )


def test_constructed_transcript_validates_clean_directly_and_after_json_round_trip() -> None:
    transcript = built_transcript()
    decoded: list[object] = json.loads(json.dumps(tether.to_json(transcript)))

    assert validate_transcript(transcript) == ()
    assert validate_transcript(list(transcript)) == ()
    assert type(decoded) is list
    assert validate_transcript(decoded) == ()
    assert tuple(parse_message(entry) for entry in decoded) == transcript


def test_protocol_messages_and_json_dicts_can_be_mixed() -> None:
    protocol_call = assistant_message(id="a1", content=[call("c1", "add")])
    protocol_result = tool_result_message(id="r2", tool_call_id="c2", tool_name="mul", content="")

    assert check([user(), protocol_call, result("r1", "c1", "add")]) == []
    assert check([assistant("a2", call("c2", "mul")), protocol_result]) == []
    assert (
        check(
            [
                assistant("a0", ToolCall(id="c3", name="add", arguments=JsonObject())),
                result("r3", "c3"),
            ]
        )
        == []
    )
    assert check([protocol_call, result("r1", "c1", "sub"), protocol_result]) == [
        ("TOOL_NAME_MISMATCH", 1, 'Tool result name "sub" does not match call name "add"'),
        ("ORPHAN_TOOL_RESULT", 2, 'Tool result references unknown call ID "c2"'),
    ]
    assert check([protocol_call, protocol_call, result("r1", "c1")]) == [
        ("DUPLICATE_TOOL_CALL_ID", 1, 'Tool call ID "c1" is not unique')
    ]


def test_validate_transcript_result_and_diagnostics_are_immutable() -> None:
    diagnostics = validate_transcript([user(""), result("r1", "ghost")])

    assert type(diagnostics) is tuple
    assert len(diagnostics) == 2
    assert all(type(d) is TranscriptDiagnostic for d in diagnostics)
    with pytest.raises(dataclasses.FrozenInstanceError):
        diagnostics[0].code = "INVALID_TRANSCRIPT"  # pyright: ignore[reportAttributeAccessIssue]
    with pytest.raises(dataclasses.FrozenInstanceError):
        diagnostics[1].message_index = 0  # pyright: ignore[reportAttributeAccessIssue]
    assert check([user(""), result("r1", "ghost")]) == triples(diagnostics)


def test_validate_transcript_does_not_mutate_its_input() -> None:
    transcript: list[object] = [user(), assistant("a1", call("c1", "add", {"a": [1]}))]
    before = json.dumps(transcript)

    validate_transcript(transcript)

    assert json.dumps(transcript) == before
