"""Property tests for tool output: the serializer and ``execute_tool_call`` on arbitrary values.

Whatever a tool returns (JSON-like data, sets, bytes, objects, functions, huge integers, NaN,
lone surrogates, cycles, oversized collections, deep nesting), the serializer either returns
the same bounded string every time, with the truncation marker exactly once at the end when
it truncates, or raises ``SerializationError``; nothing else. Through ``execute_tool_call`` the
same values always give a linked result within the cap, an error only for
``TOOL_OUTPUT_SERIALIZATION_FAILED``; an exact ``str`` is sent as it is when it fits the cap,
else as its longest fitting prefix and the marker, exactly the cap long (any cap).
"""

from __future__ import annotations

import asyncio
import datetime
import json
from typing import Any, cast

from hypothesis import assume, given
from hypothesis import strategies as st

from support import run_async
from tether._base.strings import code_points
from tether.abort import AbortController
from tether.jsonvalue import JsonObject, js_number_text
from tether.protocol import ToolCall, ToolExecutionContext, Valid
from tether.tools import UNDEFINED, ToolRegistry, execute_tool_call
from tether.tools.contract import TOOL_OUTPUT_LIMIT_MIN
from tether.tools.serialize import (
    SerializationError,
    cap_text,
    encodable_text,
    serialize_output,
)

MARKER = "\n[Tool output truncated]"
CAP = 4096
MAX_SAFE_INTEGER = 2**53 - 1

# --- strategies ---------------------------------------------------------------------------------


def _repeat(char: str, count: int) -> str:
    return char * count


def _int_range(count: int) -> list[int]:
    return list(range(count))


def _many_keys(count: int) -> dict[str, int]:
    return {f"k{index}": index for index in range(count)}


def _many_objects(count: int) -> list[dict[str, int]]:
    return [{"n": index} for index in range(count)]


def _with_pair(halves: tuple[str, str]) -> str:
    """Insert a surrogate pair written as two code points (how JS strings hold astral text)."""
    return halves[0] + "\ud83d\ude00" + halves[1]


_CHARACTERS: st.SearchStrategy[str] = st.one_of(
    st.characters(),
    st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF, categories=["Cs"]),
    st.sampled_from(["😀", "\n", '"', "\\", "\x00", "\u2028", "\ufeff"]),
)
_TEXT: st.SearchStrategy[str] = st.one_of(
    st.text(_CHARACTERS, max_size=20),
    st.tuples(st.text(_CHARACTERS, max_size=4), st.text(_CHARACTERS, max_size=4)).map(_with_pair),
    st.builds(_repeat, _CHARACTERS, st.integers(0, 5000)),
)
# Keys around the BMP/astral boundary order differently by UTF-16 code unit and by code point.
_ORDER_SENSITIVE = st.sampled_from(["a", "\ud7ff", "\ue000", "\uffff", "😀", "\U00010000"])
_KEYS: st.SearchStrategy[str] = st.one_of(
    st.text(_CHARACTERS, max_size=6), st.text(_ORDER_SENSITIVE, min_size=1, max_size=3)
)

_JSON_SCALARS: st.SearchStrategy[Any] = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**60), 2**60),
    st.floats(allow_nan=False, allow_infinity=False),
    _TEXT,
)


def _plain_function() -> None:
    return None


class _Opaque:
    pass


_EXOTIC_SCALARS: st.SearchStrategy[Any] = st.one_of(
    st.floats(),
    st.integers(-(2**5000), 2**5000),
    st.sampled_from([UNDEFINED, len, _plain_function, _Opaque, print, str.upper]),
    st.binary(max_size=4),
    st.sets(st.integers(), max_size=3),
    st.frozensets(st.integers(), max_size=3),
    st.builds(_Opaque),
    st.builds(object),
    st.just(datetime.date(2024, 1, 1)),
)


def _nested_lists(levels: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(levels - 1):
        value = [value]
    return value


def _cyclic_list(items: list[Any]) -> list[Any]:
    items.append(items)
    return items


def _cyclic_dict(items: dict[str, Any]) -> dict[str, Any]:
    items["self"] = items
    return items


_BIG_SHAPES: st.SearchStrategy[Any] = st.one_of(
    st.builds(_nested_lists, st.integers(1, 60)),
    st.builds(_int_range, st.integers(0, 600)),
    st.builds(_many_keys, st.integers(0, 400)),
    st.builds(_many_objects, st.integers(0, 100)),
)


def _extend_json(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.lists(children, max_size=6),
        st.lists(children, max_size=6).map(tuple),
        st.dictionaries(_KEYS, children, max_size=6),
    )


def _extend_any(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        _extend_json(children),
        st.builds(_cyclic_list, st.lists(children, max_size=4)),
        st.builds(_cyclic_dict, st.dictionaries(_KEYS, children, max_size=4)),
        st.dictionaries(st.integers(), children, min_size=1, max_size=2),
    )


JSON_VALUES: st.SearchStrategy[Any] = st.recursive(_JSON_SCALARS, _extend_json, max_leaves=20)
ANY_VALUES: st.SearchStrategy[Any] = st.recursive(
    st.one_of(_JSON_SCALARS, _EXOTIC_SCALARS, _BIG_SHAPES), _extend_any, max_leaves=20
)


# --- reference model ----------------------------------------------------------------------------


def _utf16(text: str) -> bytes:
    return text.encode("utf-16-be", "surrogatepass")


def _normal_text(text: str) -> str:
    """Merge surrogate pairs written as two code points into one character (as JS sees it)."""
    return _utf16(text).decode("utf-16-be", "surrogatepass")


def _items(value: object) -> list[Any] | tuple[Any, ...]:
    assert isinstance(value, list | tuple)
    return cast(list[Any] | tuple[Any, ...], value)


def _entries(value: object) -> dict[str, Any]:
    assert isinstance(value, dict)
    return cast(dict[str, Any], value)


def _expected(value: Any) -> Any:
    """What parsing the serializer's (untruncated) output must give for JSON-like data."""
    if isinstance(value, str):
        return _normal_text(value)
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return value if abs(value) <= MAX_SAFE_INTEGER else f"{value}n"
    if isinstance(value, float):
        return value if value == value and abs(value) != float("inf") else None
    if type(value) in (list, tuple):
        return [_expected(item) for item in _items(value)]
    return {_normal_text(key): _expected(item) for key, item in _entries(value).items()}


def _quote(text: str) -> str:
    parts: list[str] = []
    for char in _normal_text(text):
        point = ord(char)
        if char == '"':
            parts.append('\\"')
        elif char == "\\":
            parts.append("\\\\")
        elif point < 0x20 or 0xD800 <= point <= 0xDFFF:
            parts.append(f"\\u{point:04x}")
        else:
            parts.append(char)
    return '"' + "".join(parts) + '"'


def _reference(value: Any) -> str:
    """A direct, unbounded encoding of the spec's rules for JSON-like data."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value) if abs(value) <= MAX_SAFE_INTEGER else _quote(f"{value}n")
    if isinstance(value, float):
        finite = value == value and abs(value) != float("inf")
        return js_number_text(value) if finite else "null"
    if isinstance(value, str):
        return _quote(value)
    if type(value) in (list, tuple):
        return "[" + ",".join(_reference(item) for item in _items(value)) + "]"
    entries = _entries(value)
    keys = sorted(entries, key=_utf16)
    return "{" + ",".join(f"{_quote(key)}:{_reference(entries[key])}" for key in keys) + "}"


def _has_colliding_keys(value: Any) -> bool:
    if type(value) in (list, tuple):
        return any(_has_colliding_keys(item) for item in _items(value))
    if type(value) is dict:
        entries = _entries(cast(object, value))
        keys = [_normal_text(key) for key in entries]
        if len(set(keys)) != len(keys):
            return True
        return any(_has_colliding_keys(item) for item in entries.values())
    return False


def _js_int(text: str) -> int | float:
    """Parse an integer literal as JavaScript would: beyond 2**53 it is just a double."""
    value = int(text)
    return value if abs(value) <= MAX_SAFE_INTEGER else float(text)


def _keys_in_utf16_order(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [key for key, _ in pairs]
    assert keys == sorted(keys, key=_utf16), keys
    return dict(pairs)


def _check_bounded(output: str) -> None:
    assert code_points(output)[0] <= CAP
    if "\n" in output:  # the serializer escapes every raw newline; only the marker has one
        assert output.endswith(MARKER)
        assert output.count(MARKER) == 1
        assert output.count("\n") == 1
    else:
        json.loads(output)


# --- serializer properties ----------------------------------------------------------------------


@given(ANY_VALUES)
def test_any_value_serializes_deterministically_within_the_cap_or_fails_cleanly(
    value: Any,
) -> None:
    try:
        first = serialize_output(value)
    except SerializationError:
        try:
            serialize_output(value)
        except SerializationError:
            return
        raise AssertionError("the second attempt did not fail the same way") from None
    assert serialize_output(value) == first
    _check_bounded(first)


@given(JSON_VALUES)
def test_json_values_never_fail_and_round_trip_when_not_truncated(value: Any) -> None:
    output = serialize_output(value)
    _check_bounded(output)
    assume(not output.endswith(MARKER))
    assume(not _has_colliding_keys(value))
    parsed = json.loads(output, object_pairs_hook=_keys_in_utf16_order, parse_int=_js_int)
    assert parsed == _expected(value)


@given(JSON_VALUES)
def test_untruncated_output_matches_a_reference_encoder(value: Any) -> None:
    output = serialize_output(value)
    assume(not output.endswith(MARKER))
    assert output == _reference(value)


@given(
    st.dictionaries(
        _KEYS, st.one_of(_JSON_SCALARS, st.lists(_JSON_SCALARS, max_size=3)), max_size=8
    )
)
def test_dict_output_does_not_depend_on_insertion_order(value: dict[str, Any]) -> None:
    reordered = dict(reversed(list(value.items())))
    assert serialize_output(reordered) == serialize_output(value)


# --- execute_tool_call properties ---------------------------------------------------------------


def accept(arguments: object) -> Valid[object]:
    return Valid(value=arguments)


def _run_with_outputs(values: list[Any], output_limit: int | None = None) -> list[tuple[bool, str]]:
    """Run one tool per value on one harness loop; each returns its value as output."""

    async def scenario() -> list[tuple[bool, str]]:
        outcomes: list[tuple[bool, str]] = []
        for index, value in enumerate(values):

            async def execute(_: object, context: ToolExecutionContext, value: Any = value) -> Any:
                await asyncio.sleep(0)
                return value

            definition: dict[str, object] = {
                "name": "emit",
                "description": "Emits",
                "validate": accept,
                "execute": execute,
            }
            if output_limit is not None:
                definition["output_limit"] = output_limit
            registry = ToolRegistry([definition])
            call = ToolCall(id=f"call-{index}", name="emit", arguments=JsonObject({}))
            result = await execute_tool_call(registry, call, AbortController().signal)
            assert result.id == f"tool-result-call-{index}"
            assert result.tool_call_id == f"call-{index}"
            assert result.tool_name == "emit"
            outcomes.append((result.is_error, result.content))
        return outcomes

    outcomes: list[tuple[bool, str]] = run_async(scenario)
    return outcomes


@given(st.lists(ANY_VALUES, min_size=1, max_size=4))
def test_any_tool_output_gives_a_bounded_linked_result(values: list[Any]) -> None:
    for value, (is_error, content) in zip(values, _run_with_outputs(values), strict=True):
        assert code_points(content)[0] <= CAP
        if is_error:
            parsed: Any = json.loads(content)
            assert parsed["error"]["code"] == "TOOL_OUTPUT_SERIALIZATION_FAILED"
            try:
                serialize_output(value)
            except SerializationError:
                continue
            raise AssertionError("an error result for output the serializer accepts")
        if type(value) is str:  # text is sent as it is, only made encodable and capped
            assert content == cap_text(encodable_text(value))
            continue
        assert content == serialize_output(value)
        _check_bounded(content)


# --- text output ---------------------------------------------------------------------------------


def _joined(head: str, tail: str) -> str:
    return head + tail


_CAPS: st.SearchStrategy[int] = st.one_of(
    st.integers(TOOL_OUTPUT_LIMIT_MIN, 200), st.just(CAP), st.integers(TOOL_OUTPUT_LIMIT_MIN, 9000)
)
_LONG_TEXT: st.SearchStrategy[str] = st.one_of(
    _TEXT,
    st.builds(
        _repeat, st.sampled_from(["x", "😀", "\ud83d\ude00", "\ud83d", "é"]), st.integers(0, 300)
    ),
    st.builds(
        _joined,
        st.text(_CHARACTERS, max_size=200),
        st.text(st.sampled_from(["\ud83d", "\ude00", "a"]), max_size=60),
    ),
)


def _check_capped(text: str, content: str, cap: int) -> None:
    """The text-output rule: the text itself if it fits, else prefix + marker, exactly ``cap``."""
    length = code_points(text)[0]
    if length <= cap:
        assert content == text
        return
    assert content.endswith(MARKER)
    head = content[: -len(MARKER)]
    assert text.startswith(head)
    assert code_points(content)[0] == cap
    assert code_points(head)[0] == cap - len(MARKER)
    rest = text[len(head) :]
    # The cut never separates the halves of a surrogate pair written as two code points.
    assert not (head and "\ud800" <= head[-1] <= "\udbff" and "\udc00" <= rest[0] <= "\udfff")


@given(_LONG_TEXT, _CAPS)
def test_cap_text_keeps_text_within_the_cap_or_cuts_it_to_exactly_the_cap(
    text: str, cap: int
) -> None:
    _check_capped(text, cap_text(text, cap), cap)


@given(_LONG_TEXT)
def test_cap_text_with_the_default_cap_agrees_with_the_workshop_cap(text: str) -> None:
    assert cap_text(text) == cap_text(text, CAP)
    _check_capped(text, cap_text(text), CAP)


@given(st.lists(_LONG_TEXT, min_size=1, max_size=3), _CAPS)
def test_text_output_is_sent_as_it_is_within_the_tool_output_limit(
    texts: list[str], cap: int
) -> None:
    for text, (is_error, content) in zip(texts, _run_with_outputs(texts, cap), strict=True):
        assert is_error is False
        _check_capped(encodable_text(text), content, cap)
        content.encode("utf-8")


@given(st.lists(ANY_VALUES, min_size=1, max_size=3), _CAPS)
def test_any_output_respects_the_tool_output_limit(values: list[Any], cap: int) -> None:
    for value, (is_error, content) in zip(values, _run_with_outputs(values, cap), strict=True):
        if is_error:
            assert code_points(content)[0] <= CAP  # error results keep the workshop's cap
            assert json.loads(content)["error"]["code"] == "TOOL_OUTPUT_SERIALIZATION_FAILED"
            continue
        assert code_points(content)[0] <= cap
        expected = (
            cap_text(encodable_text(value), cap)
            if type(value) is str
            else serialize_output(value, cap=cap)
        )
        assert content == expected


@given(JSON_VALUES, _CAPS)
def test_a_larger_or_smaller_cap_only_moves_the_cut(value: Any, cap: int) -> None:
    """Under any cap the output is the uncapped output itself or a prefix of it plus the marker."""
    full = serialize_output(value, cap=10**9)
    output = serialize_output(value, cap=cap)
    assert code_points(output)[0] <= cap
    if output == full:
        return
    assert output.endswith(MARKER)
    head = output[: -len(MARKER)]
    assert full.startswith(head)
    assert code_points(output)[0] == cap or full.endswith(MARKER)
