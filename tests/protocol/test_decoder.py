"""The one protocol decoder (``tether.protocol._decoder``) and its layers.

* a protocol value type defined here, which tether knows nothing about, decodes at every
  layer with no edit (the decoder derives from the annotations);
* a layer's limits (items per array, code points per string, nesting of JSON objects) are
  problems with a path, in the layer's own error;
* exact-type strictness: a layer that takes protocol values takes exact instances only;
* arbitrary JSON, however deep, is a value or the layer's error: never a raw ``KeyError``,
  ``RecursionError`` or ``TypeError`` (Hypothesis);
* the codec's and the session file's configurations keep their messages.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from support import examples
from tether._base.dataclass import dataclass
from tether.agent.compaction import build_active_context
from tether.agent.session import SessionStoreError
from tether.agent.session import decoder as session_decoder
from tether.jsonvalue import JsonObject
from tether.loop.checks import snapshot_transcript
from tether.models.limits import RunLimits
from tether.protocol import (
    AgentEvent,
    AssistantBlock,
    AssistantMessage,
    Message,
    ModelChunk,
    ModelRequest,
    ProtocolJsonError,
    ProtocolValue,
    RunResult,
    TextBlock,
    ThinkingBlock,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    from_json,
    to_json,
)
from tether.protocol._decoder import Layer, Problem, Rest, decoder
from tether.protocol._fields import NonEmpty, v2
from tether.protocol.transcript import parse_message

session_message_from_json = session_decoder._message_from_json  # pyright: ignore[reportPrivateUsage]


class Refused(Exception):
    """The test layer's error: the path and the problem, as given."""

    def __init__(self, path: str, problem: Problem) -> None:
        super().__init__(f"{path}: {problem.kind}")
        self.path = path
        self.problem = problem


LIMITED = Layer(
    name="test-limited",
    fail=Refused,
    written_required=True,
    accept_values=True,
    max_items=3,
    max_string=8,
    max_json_depth=2,
)
"""A layer with every limit set, as compaction or the loop would configure one."""


# --- a value type tether knows nothing about --------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class StickerBlock(ProtocolValue):
    """A scratch block: a discriminant, a required field, and a v2 field with a default."""

    type: Literal["sticker"] = "sticker"
    name: NonEmpty
    tags: tuple[TextBlock, ...] = v2(())


@dataclass(frozen=True, slots=True, kw_only=True)
class Album(ProtocolValue):
    """A scratch container whose items are a union with the scratch block in it."""

    id: NonEmpty
    pages: tuple[TextBlock | StickerBlock, ...]
    note: str | None = v2(None)


@dataclass(frozen=True, slots=True, kw_only=True)
class Tree(ProtocolValue):
    """A scratch type that holds itself: only such a type can nest as deep as its data."""

    type: Literal["tree"] = "tree"
    children: tuple[Tree, ...]


def test_a_new_value_type_decodes_at_every_layer_with_no_edit() -> None:
    album = Album(
        id="a",
        pages=(TextBlock(text="hi"), StickerBlock(name="cat", tags=(TextBlock(text="x"),))),
    )
    data = to_json(album)
    assert data == {
        "id": "a",
        "pages": [
            {"type": "text", "text": "hi"},
            {"type": "sticker", "name": "cat", "tags": [{"type": "text", "text": "x"}]},
        ],
    }
    assert from_json(data, Album) == album
    assert decoder(Album, LIMITED)(data) == album
    session = session_decoder._decoder_for(Album)  # pyright: ignore[reportPrivateUsage]
    assert session(data) == album
    plain = {"id": "a", "pages": [{"type": "sticker", "name": "dog"}]}
    assert from_json(plain, Album) == Album(id="a", pages=(StickerBlock(name="dog"),))
    with pytest.raises(ProtocolJsonError, match=r"^\$\.pages\[0\]: StickerBlock\.name must be"):
        from_json({"id": "a", "pages": [{"type": "sticker", "name": " "}]}, Album)
    with pytest.raises(ProtocolJsonError, match=r"^\$\.pages\[1\]: must have one of type='text'"):
        from_json({"id": "a", "pages": [{"type": "text", "text": ""}, {"type": "x"}]}, Album)
    with pytest.raises(SessionStoreError, match=r"has an unknown type string\(\"x\"\)"):
        session({"id": "a", "pages": [{"type": "x"}]})


def test_the_written_keys_rule_is_the_layer_s() -> None:
    """``from_json`` fills in a defaulted discriminant; a file layer requires it written."""
    data = {"id": "a", "pages": [{"name": "cat"}]}
    with pytest.raises(ProtocolJsonError, match=r"^\$\.pages\[0\]: must have one of"):
        from_json(data, Album)
    assert from_json({"name": "cat"}, StickerBlock) == StickerBlock(name="cat")
    with pytest.raises(Refused) as info:
        decoder(StickerBlock, LIMITED)({"name": "cat"})
    assert (info.value.path, info.value.problem.kind, info.value.problem.keys) == (
        "$",
        "missing",
        ("type",),
    )


# --- limits -----------------------------------------------------------------------------------


def refusal(data: object, hint: Any = Album) -> tuple[str, str, int]:
    with pytest.raises(Refused) as info:
        decoder(hint, LIMITED)(data)
    return info.value.path, info.value.problem.kind, info.value.problem.limit


def test_a_layer_s_limits_are_problems_with_a_path() -> None:
    text = {"type": "text", "text": "t"}
    assert refusal({"id": "a", "pages": [text] * 4}) == ("$.pages", "too_many_items", 3)
    assert refusal({"id": "a", "pages": [text, {"type": "text", "text": "x" * 9}]}) == (
        "$.pages[1].text",
        "too_long",
        8,
    )
    assert decoder(Album, LIMITED)({"id": "a", "pages": [{**text, "text": "x" * 8}]})
    call: dict[str, Any] = {
        "type": "toolCall",
        "id": "c",
        "name": "n",
        "arguments": {"a": {"b": {}}},
    }
    assert decoder(AssistantBlock, LIMITED)(call) == ToolCall(
        id="c", name="n", arguments=JsonObject({"a": {"b": {}}})
    )
    call["arguments"] = {"a": {"b": {"c": {}}}}
    assert refusal(call, AssistantBlock) == ("$.arguments", "too_deep", 2)


def test_a_layer_that_takes_values_takes_exact_instances_only() -> None:
    class Special(TextBlock):
        __slots__ = ()

    block = TextBlock(text="t")
    assert decoder(AssistantBlock, LIMITED)(block) is block
    assert decoder(TextBlock, LIMITED)(block) is block
    assert refusal(Special(text="t"), AssistantBlock)[1] == "not_object"
    with pytest.raises(ProtocolJsonError, match=r"^\$: must be an object \(got TextBlock\)$"):
        from_json(block, AssistantBlock)


def test_a_type_that_holds_itself_is_refused_when_too_deep_not_a_recursion_error() -> None:
    deep: dict[str, Any] = {"type": "tree", "children": []}
    for _ in range(5_000):
        deep = {"type": "tree", "children": [deep]}
    with pytest.raises(ProtocolJsonError, match=r"^\$: nests too deeply$"):
        from_json(deep, Tree)
    shallow: dict[str, Any] = {"type": "tree", "children": [{"type": "tree", "children": []}]}
    assert from_json(shallow, Tree) == Tree(children=(Tree(children=()),))


# --- arbitrary JSON ---------------------------------------------------------------------------

LEAVES = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=10)
    | st.sampled_from(["user", "assistant", "toolResult", "text", "thinking", "toolCall"])
)
KEYS = st.text(max_size=6) | st.sampled_from(
    ["id", "role", "type", "status", "content", "arguments", "name", "text", "pages"]
)
ARBITRARY: st.SearchStrategy[Any] = st.recursive(
    LEAVES,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=5),
    max_leaves=20,
)
HINTS: list[Any] = [
    *(Message, AssistantBlock, ModelChunk, ModelRequest, RunResult, AgentEvent),
    *(Album, Tree, tuple[Message, ...], list[AssistantBlock], UserMessage | None),
]


def nested(depth: int, leaf: object) -> object:
    for _ in range(depth):
        leaf = [leaf] if depth % 2 else {"content": leaf}
    return leaf


def outcome(decode: Any, data: object) -> Any:
    """The decoded value, or the ``ProtocolJsonError``/``Refused``/``SessionStoreError`` it
    raised (any other exception fails the test)."""
    try:
        return decode(data)
    except (ProtocolJsonError, Refused, SessionStoreError) as error:
        return error


@settings(max_examples=examples(300), suppress_health_check=[HealthCheck.too_slow])
@given(data=ARBITRARY, hint=st.sampled_from(HINTS), depth=st.sampled_from([0, 3, 200, 3_000]))
def test_arbitrary_json_is_a_value_or_the_layer_s_error(
    data: object, hint: Any, depth: int
) -> None:
    data = nested(depth, data) if depth else data

    def library(value: object) -> Any:
        return from_json(value, hint)

    layers: list[tuple[Any, type[Exception]]] = [
        (library, ProtocolJsonError),
        (decoder(hint, LIMITED), Refused),
        (session_decoder._decoder_for(hint), SessionStoreError),  # pyright: ignore[reportPrivateUsage]
    ]
    for decode, error in layers:
        decoded = outcome(decode, data)
        if isinstance(decoded, Exception):
            assert type(decoded) is error
            assert str(decoded)
        else:
            assert from_json(to_json(decoded), hint) == decoded


@given(data=ARBITRARY)
def test_arbitrary_messages_are_session_errors_with_the_session_code(data: object) -> None:
    found = outcome(session_message_from_json, {"id": "m", "role": "assistant", "content": [data]})
    if isinstance(found, Exception):
        assert type(found) is SessionStoreError
        assert found.code == "SESSION_INVALID_MESSAGE"
        assert found.message.startswith("Session message is invalid: ")


# --- the layers' messages ---------------------------------------------------------------------


def test_the_session_layer_keeps_its_messages() -> None:
    cases: list[tuple[object, str]] = [
        ([], "must be a JSON object"),
        ({"role": "admin"}, 'has an unknown role string("admin")'),
        ({"id": "u", "role": "user"}, "UserMessage is missing ['content']"),
        ({"id": "u", "role": "user", "content": "", "x": 1, "a": 2}, "UserMessage has unexpected"),
        ({"id": "a", "role": "assistant", "content": {}}, "must be an array"),
        ({"id": "a", "role": "assistant", "content": [[]]}, "must be a JSON object"),
        ({"id": "u", "role": "user", "content": 1}, "UserMessage.content must be a string"),
    ]
    for data, text in cases:
        with pytest.raises(SessionStoreError) as info:
            session_message_from_json(data)
        assert info.value.code == "SESSION_INVALID_MESSAGE"
        assert info.value.message.startswith(f"Session message is invalid: {text}"), (
            info.value.message
        )
    with pytest.raises(SessionStoreError, match=r"unexpected keys \['a', 'x'\]$"):
        session_message_from_json({"id": "u", "role": "user", "content": "", "x": 1, "a": 2})


def test_the_codec_explains_a_key_mismatch_in_field_order() -> None:
    """A field's own problem comes before a later missing field, as ``from_json`` always
    reported it; then the first unexpected key in the source."""
    data = {"id": "a", "role": "assistant", "content": [{"type": "text"}], "extra": 1}
    with pytest.raises(ProtocolJsonError, match=r"^\$\.content\[0\]: missing 'text'$"):
        from_json(data, Message)
    with pytest.raises(ProtocolJsonError, match=r"^\$: unexpected key 'extra' for Assistant"):
        from_json({**data, "content": []}, Message)
    assert from_json({"role": "assistant", "content": []}, AssistantMessage).content == ()


# --- every boundary keeps every field -----------------------------------------------------------

SIGNED_TRANSCRIPT: tuple[Message, ...] = (
    UserMessage(id="u", content="read it"),
    AssistantMessage(
        id="a",
        content=(
            ThinkingBlock(text="", signature="opaque", redacted=True),
            TextBlock(text="reading", signature="text-signature"),
            ToolCall(id="c", name="read", arguments=JsonObject({"p": 1}), signature="call-sig"),
        ),
    ),
    ToolResultMessage(
        id="r",
        tool_call_id="c",
        tool_name="read",
        content="no such file",
        is_error=True,
        error_code="FILE_NOT_FOUND",
    ),
)


def test_every_boundary_keeps_every_field_of_a_message_s_json_form() -> None:
    """The hand-written boundaries read the fields they word themselves and take the rest
    from the one decoder: a tool result's ``errorCode`` and a text block's or call's
    ``signature`` (Gemini's, required back verbatim) are no longer dropped."""
    data = [to_json(message) for message in SIGNED_TRANSCRIPT]
    assert tuple(from_json(item, Message) for item in data) == SIGNED_TRANSCRIPT
    assert tuple(session_message_from_json(item) for item in data) == SIGNED_TRANSCRIPT
    assert tuple(parse_message(item) for item in data) == SIGNED_TRANSCRIPT
    assert snapshot_transcript(data, RunLimits()) == SIGNED_TRANSCRIPT
    assert build_active_context({"messages": data}).messages == SIGNED_TRANSCRIPT


def test_rest_decodes_the_fields_a_layer_does_not_read_itself() -> None:
    """A hand-written layer reads ``type`` and ``name``; the new ``tags`` field comes from
    the one decoder, with its problems at a path under the layer's root."""
    rest = Rest(StickerBlock, frozenset({"type", "name"}), LIMITED)
    assert [key for key, _, _ in rest.fields] == ["tags"]
    source: dict[str, Any] = {"name": "cat", "tags": [{"type": "text", "text": "x"}]}
    built = rest.onto(StickerBlock(name="cat"), source.get, None, "sticker")
    assert built == StickerBlock(name="cat", tags=(TextBlock(text="x"),))
    plain = StickerBlock(name="dog")
    assert rest.onto(plain, {"name": "dog"}.get, None) is plain
    with pytest.raises(Refused) as info:
        rest.onto(plain, {"tags": [{"type": "text"}]}.get, None, "sticker")
    assert (info.value.path, info.value.problem.kind) == ("sticker.tags[0]", "missing")


def test_an_unhashable_annotation_is_decoded_uncached() -> None:
    hint: Any = Annotated[str, ["metadata"]]
    with pytest.raises(TypeError):
        hash(hint)
    assert from_json("text", hint) == "text"
    assert from_json(["a"], tuple[hint, ...]) == ("a",)
