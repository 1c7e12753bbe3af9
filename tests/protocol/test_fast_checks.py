"""The generated per-class ``__post_init__`` (``protocol._fields._install_fast_checks``)
accepts, snapshots and rejects exactly as the generic, closure-per-field path does."""

from __future__ import annotations

import dataclasses
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
    except TypeError as error:
        return ("error", str(error))


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
