"""The generated per-class ``__post_init__`` (``protocol._fields._install_fast_checks``) and
the fused ``__init__`` (``_install_fused_init``) accept, snapshot and reject exactly as the
generic, closure-per-field path does."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tether._base.strings import JS_WHITESPACE
from tether.jsonvalue import JsonObject
from tether.protocol import (
    AssistantMessage,
    ModelRequest,
    ModelUsage,
    ProtocolValue,
    TextBlock,
    ThinkingBlock,
    ToolCall,
    ToolCallDeltaChunk,
    ToolResultMessage,
    UserMessage,
)

TEXT = TextBlock(text="t")
CALL = ToolCall(id="c", name="n", arguments=JsonObject())

CASES: list[tuple[type, dict[str, Any]]] = [
    (TextBlock, {"text": "x"}),
    (TextBlock, {"text": 1}),
    (TextBlock, {"type": "txt", "text": "x"}),
    (ThinkingBlock, {"text": "x", "signature": None}),
    (ThinkingBlock, {"text": "x", "signature": 3}),
    (ThinkingBlock, {"text": "x", "redacted": 1}),
    (ToolCall, {"id": "c", "name": "n", "arguments": {"a": [1]}}),
    (ToolCall, {"id": " ", "name": "n", "arguments": {}}),
    (ToolCall, {"id": "c", "name": "n", "arguments": {1, 2}}),
    (AssistantMessage, {"id": "m", "content": [TEXT, CALL]}),
    (AssistantMessage, {"id": "m", "content": (TEXT, "x")}),
    (UserMessage, {"id": "u", "content": "hi"}),
    (ToolResultMessage, {"tool_call_id": "c", "tool_name": "n", "content": "", "is_error": 0}),
    (ModelRequest, {"id": "r", "messages": [UserMessage(content="x")], "system": 1}),
    (ModelUsage, {"input_tokens": 2**53, "output_tokens": 0}),
    (ModelUsage, {"input_tokens": True, "output_tokens": 0}),
    (ToolCallDeltaChunk, {"request_id": "r", "index": -1}),
    (ToolCallDeltaChunk, {"request_id": "r", "index": 0, "id": ""}),
]


def _generic(cls: type, kwargs: dict[str, Any]) -> object:
    """Construct through the closure-per-field path only."""
    new: Any = object.__new__
    value: Any = new(cls)
    for field in dataclasses.fields(cls):
        item: object
        if field.name in kwargs:
            item = kwargs[field.name]
        elif field.default is not dataclasses.MISSING:
            item = field.default
        else:
            factory: Any = field.default_factory
            item = factory()
        object.__setattr__(value, field.name, item)
    ProtocolValue.__post_init__(value)
    return value


def _outcome(make: Any) -> tuple[str, object]:
    try:
        return ("ok", make())
    except (TypeError, ValueError) as error:
        return ("error", f"{type(error).__name__}: {error}")


@pytest.mark.parametrize(("cls", "kwargs"), CASES, ids=lambda value: repr(value)[:40])
def test_the_generated_checks_agree_with_the_generic_ones(
    cls: type, kwargs: dict[str, Any]
) -> None:
    fast = _outcome(lambda: cls(**kwargs))
    generic = _outcome(lambda: _generic(cls, kwargs))
    assert fast[0] == generic[0]
    if fast[0] == "error":
        assert fast[1] == generic[1]
    else:
        fast_value: Any = fast[1]
        generic_value: Any = generic[1]
        for field in dataclasses.fields(cls):
            if field.name == "id" and "id" not in kwargs:
                continue  # generated IDs differ by design
            assert getattr(fast_value, field.name) == getattr(generic_value, field.name)
            assert type(getattr(fast_value, field.name)) is type(getattr(generic_value, field.name))


def test_the_generated_checks_are_installed_on_first_construction() -> None:
    TextBlock(text="warm")
    assert "__post_init__" in vars(TextBlock)
    assert vars(TextBlock)["__post_init__"] is not ProtocolValue.__post_init__


# Blank and non-blank IDs: JavaScript whitespace (every code point ``trim()`` removes), other
# text, and values that are not strings at all.
ID_TEXT = st.text(alphabet=st.sampled_from([*JS_WHITESPACE, "a", "\u00e9", "\u200b"]), max_size=4)
NON_EMPTY_CANDIDATES = st.one_of(ID_TEXT, st.integers(), st.none())


@given(call_id=NON_EMPTY_CANDIDATES, name=NON_EMPTY_CANDIDATES)
def test_the_inline_non_empty_test_agrees_with_is_non_empty(call_id: object, name: object) -> None:
    kwargs: dict[str, Any] = {"id": call_id, "name": name, "arguments": {}}
    fast = _outcome(lambda: ToolCall(**kwargs))
    generic = _outcome(lambda: _generic(ToolCall, kwargs))
    assert fast == generic


def _dataclass_init(cls: type, kwargs: dict[str, Any]) -> object:
    """Construct through the dataclass ``__init__`` and the generated ``__post_init__``: the
    path the fused ``__init__`` replaces."""
    cls(**_valid_kwargs(cls))  # installs both, if not yet
    plain: Any = vars(cls)["__init__"].__globals__["fused_plain"]
    new: Any = object.__new__
    value: Any = new(cls)
    plain(value, **kwargs)
    return value


def _valid_kwargs(cls: type) -> dict[str, Any]:
    return next(kwargs for kind, kwargs in VALID if kind is cls)


VALID: list[tuple[type, dict[str, Any]]] = [
    (TextBlock, {"text": "x"}),
    (ThinkingBlock, {"text": "x"}),
    (ToolCall, {"id": "c", "name": "n", "arguments": {}}),
    (AssistantMessage, {"id": "m", "content": ()}),
    (UserMessage, {"id": "u", "content": "hi"}),
    (ToolResultMessage, {"tool_call_id": "c", "tool_name": "n", "content": ""}),
    (ModelRequest, {"id": "r", "messages": ()}),
    (ModelUsage, {"input_tokens": 0, "output_tokens": 0}),
    (ToolCallDeltaChunk, {"request_id": "r", "index": 0}),
]

# Values for any field: valid and invalid ones of every kind a protocol field checks.
ANY_VALUE = st.one_of(
    ID_TEXT,
    st.sampled_from(["text", "thinking", "toolCall", "user", "assistant", "toolResult"]),
    st.integers(min_value=-2, max_value=2**53 + 1),
    st.booleans(),
    st.none(),
    st.sampled_from([TEXT, CALL, JsonObject({"a": 1}), (), (TEXT,), (TEXT, "x"), b"x"]),
    st.lists(st.sampled_from([TEXT, CALL, UserMessage(id="u", content="x")]), max_size=2),
    st.dictionaries(st.text(max_size=2), st.integers() | st.text(max_size=2), max_size=2),
    st.just({"a": {1, 2}}),
)


@given(
    case=st.sampled_from(VALID),
    changes=st.dictionaries(st.sampled_from(["a", "b", "c", "d", "e", "f", "g", "h"]), ANY_VALUE),
)
def test_the_fused_init_agrees_with_the_dataclass_init_and_the_generic_checks(
    case: tuple[type, dict[str, Any]], changes: dict[str, Any]
) -> None:
    cls, valid = case
    names = [field.name for field in dataclasses.fields(cls)]
    kwargs = {
        **valid,
        **{
            names[ord(key) - ord("a")]: value
            for key, value in changes.items()
            if ord(key) - ord("a") < len(names)
        },
    }
    fused = _outcome(lambda: cls(**kwargs))
    plain = _outcome(lambda: _dataclass_init(cls, kwargs))
    generic = _outcome(lambda: _generic(cls, kwargs))
    assert fused[0] == plain[0] == generic[0]
    if fused[0] == "error":
        assert fused[1] == plain[1] == generic[1]
        return
    values: list[Any] = [fused[1], plain[1], generic[1]]
    for field in dataclasses.fields(cls):
        if field.name == "id" and "id" not in kwargs:
            continue  # generated IDs differ by design
        first, *others = (getattr(value, field.name) for value in values)
        for other in others:
            assert other == first
            assert type(other) is type(first)


@pytest.mark.parametrize(("cls", "kwargs"), VALID, ids=lambda value: repr(value)[:30])
def test_the_fused_init_keeps_the_dataclass_signature_and_argument_errors(
    cls: type, kwargs: dict[str, Any]
) -> None:
    cls(**kwargs)
    fused: Any = vars(cls)["__init__"]
    plain: Any = fused.__globals__["fused_plain"]
    assert fused is not plain
    assert inspect.signature(fused) == inspect.signature(plain)
    assert fused.__qualname__ == plain.__qualname__
    assert fused.__annotations__ == plain.__annotations__
    for arguments in ({}, {**kwargs, "unknown": 1}):
        with pytest.raises(TypeError) as from_fused:
            cls(**arguments)
        with pytest.raises(TypeError) as from_plain:
            plain(object.__new__(cls), **arguments)
        assert str(from_fused.value) == str(from_plain.value)


def test_a_subclass_that_inherits_the_fused_init_takes_the_plain_path() -> None:
    seen: list[object] = []

    class Traced(TextBlock):
        __slots__ = ()

        def __post_init__(self) -> None:
            seen.append(self)
            super().__post_init__()

    TextBlock(text="warm")
    traced = Traced(text="x")
    assert seen == [traced]
    assert type(traced) is Traced
    wrong: Any = 1
    with pytest.raises(TypeError, match=r"Traced\.text must be a string"):
        Traced(text=wrong)


def _traced_subclasses(seen: list[object]) -> list[type[TextBlock]]:
    """Fresh subclasses of ``TextBlock`` with their own ``__post_init__``: one inheriting the
    dataclass ``__init__``, one that is itself a slotted dataclass (its own ``__init__``)."""

    class Traced(TextBlock):
        __slots__ = ()

        def __post_init__(self) -> None:
            seen.append(self.text)
            super().__post_init__()

    @dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
    class Tagged(TextBlock):
        tag: str = ""

        def __post_init__(self) -> None:
            seen.append(self.text)
            TextBlock.__post_init__(self)  # no zero-argument super(): slots=True made a new class

    return [Traced, Tagged]


@pytest.mark.parametrize("warm", [False, True], ids=["cold-base", "warm-base"])
@pytest.mark.parametrize("which", [0, 1], ids=["inherited-init", "own-dataclass-init"])
def test_a_subclass_keeps_its_own_post_init_on_every_construction(warm: bool, which: int) -> None:
    """Regression: the first construction compiled the subclass's checks and installed the
    generated ``__post_init__`` (and the fused ``__init__``) on it, over its own; from the
    second construction on, the subclass's ``__post_init__`` no longer ran."""
    seen: list[object] = []
    cls = _traced_subclasses(seen)[which]
    if warm:
        TextBlock(text="warm")
    first = cls(text="a")
    second = cls(text="b")
    third = cls(text="c")
    assert seen == ["a", "b", "c"]
    assert [type(value) for value in (first, second, third)] == [cls] * 3
    wrong: Any = 1
    for _ in range(2):  # the field checks still run, every time
        with pytest.raises(TypeError, match=rf"^{cls.__name__}\.text must be a string"):
            cls(text=wrong)
    assert seen == ["a", "b", "c", 1, 1]
    assert TextBlock(text="base") == TextBlock(text="base")  # the base class is unaffected


@pytest.mark.parametrize("warm", [False, True], ids=["cold-base", "warm-base"])
def test_a_subclass_keeps_its_own_init_on_every_construction(warm: bool) -> None:
    """Regression: a hand-written ``__init__`` with the fields' parameter names looked like
    the dataclass one, so the first construction replaced it by the fused ``__init__``."""
    seen: list[str] = []

    class Initialized(TextBlock):
        __slots__ = ()

        def __init__(self, type: Any = "text", text: Any = "", signature: Any = None) -> None:
            seen.append(text)
            super().__init__(type=type, text=text, signature=signature)

    if warm:
        TextBlock(text="warm")
    values = [Initialized(text=text) for text in ("a", "b", "c")]
    assert seen == ["a", "b", "c"]
    assert [value.text for value in values] == ["a", "b", "c"]
    wrong: Any = 1
    with pytest.raises(TypeError, match=r"^Initialized\.text must be a string"):
        Initialized(text=wrong)


def test_the_fused_init_calls_a_default_factory_once_per_value() -> None:
    first = UserMessage(content="a")
    second = UserMessage(content="a")
    assert first.id != second.id
    assert first.id.startswith("message-")


@dataclasses.dataclass(frozen=True, kw_only=True)
class _Unslotted(ProtocolValue):
    """A protocol class without ``slots=True``: its fields live in the instance dict."""

    text: str


def test_a_class_whose_fields_are_not_slots_keeps_the_plain_init() -> None:
    plain = vars(_Unslotted)["__init__"]
    assert _Unslotted(text="a").text == "a"
    assert vars(_Unslotted)["__init__"] is plain
    wrong: Any = 1
    with pytest.raises(TypeError, match=r"^_Unslotted\.text must be a string \(got int\)$"):
        _Unslotted(text=wrong)
