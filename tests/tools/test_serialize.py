"""Checkpoint 06 (6.D, 6.F): the bounded deterministic serializer behind tool-result content.

Exact output for every value kind (ECMAScript number formatting, JSON escaping with
``\\u00XX``, UTF-16 key order), the plain-data boundary (``SerializationError`` for anything
else), cycles, and each truncation budget: the output cap, depth, nodes, collection entries,
string code points and big integers; the same rules under a custom ``cap``, and ``cap_text``
for text sent as it is.
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import fractions
import functools
import json
import operator
import uuid
from collections import OrderedDict, UserDict, UserList, defaultdict, deque
from pathlib import PurePosixPath
from types import MappingProxyType, SimpleNamespace
from typing import Any, NamedTuple

import pytest

from tether._base.strings import code_points
from tether.jsonvalue import JsonObject, freeze_json, js_number_text
from tether.tools import (
    TOOL_OUTPUT_CAP_CHARACTERS,
    TOOL_SERIALIZATION_MAX_BIGINT_BITS,
    TOOL_SERIALIZATION_MAX_COLLECTION_ENTRIES,
    TOOL_SERIALIZATION_MAX_DEPTH,
    TOOL_SERIALIZATION_MAX_NODES,
    TOOL_SERIALIZATION_MAX_STRING_CHARACTERS,
    TOOL_TRUNCATION_MARKER,
    UNDEFINED,
)
from tether.tools.serialize import SerializationError, cap_text, serialize_output

MARKER = "\n[Tool output truncated]"
KEEP = 4096 - 24
PLAIN_OBJECTS = "Tool output objects must be plain or have a null prototype"
PLAIN_ARRAYS = "Tool output arrays must use a plain prototype"
STRING_KEYS = "Tool output object keys must be strings"


def reference_json(value: object) -> str:
    """What the serializer must write for plain, budget-fitting, ASCII-keyed JSON data."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def nested_lists(levels: int) -> list[Any]:
    """``levels`` lists nested inside each other; the innermost is at depth ``levels - 1``."""
    value: list[Any] = []
    for _ in range(levels - 1):
        value = [value]
    return value


def assert_truncated(output: str) -> None:
    assert output.endswith(MARKER)
    assert output.count(MARKER) == 1
    assert output.count("\n") == 1
    assert code_points(output)[0] <= TOOL_OUTPUT_CAP_CHARACTERS


# --- constants ----------------------------------------------------------------------------------


def test_limit_constants_match_the_workshop() -> None:
    assert TOOL_OUTPUT_CAP_CHARACTERS == 4096
    assert TOOL_TRUNCATION_MARKER == MARKER
    assert len(TOOL_TRUNCATION_MARKER) == 24
    assert TOOL_SERIALIZATION_MAX_DEPTH == 32
    assert TOOL_SERIALIZATION_MAX_NODES == 128
    assert TOOL_SERIALIZATION_MAX_COLLECTION_ENTRIES == 256
    assert TOOL_SERIALIZATION_MAX_STRING_CHARACTERS == 4096
    assert TOOL_SERIALIZATION_MAX_BIGINT_BITS == 4096


# --- scalars ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, "null"),
        (True, "true"),
        (False, "false"),
        (0, "0"),
        (42, "42"),
        (-7, "-7"),
        (2**53 - 1, "9007199254740991"),
        (-(2**53 - 1), "-9007199254740991"),
        (2**53, '"9007199254740992n"'),
        (-(2**53), '"-9007199254740992n"'),
        (10**30, '"1000000000000000000000000000000n"'),
        (UNDEFINED, '"[Undefined]"'),
    ],
)
def test_scalar_output(value: object, expected: str) -> None:
    assert serialize_output(value) == expected


# Expected strings are ECMAScript ``String(n)`` as printed by Node.js.
JS_NUMBER_STRINGS = [
    (42.0, "42"),
    (-0.0, "0"),
    (0.0, "0"),
    (100.0, "100"),
    (-1.5, "-1.5"),
    (0.1, "0.1"),
    (0.1 + 0.2, "0.30000000000000004"),
    (1 / 3, "0.3333333333333333"),
    (4.35, "4.35"),
    (1e21, "1e+21"),
    (-1e21, "-1e+21"),
    (1.23e21, "1.23e+21"),
    (1e20, "100000000000000000000"),
    (999999999999999900000.0, "999999999999999900000"),
    (123456789012345680000.0, "123456789012345680000"),
    (1e16, "10000000000000000"),
    (2.0**53, "9007199254740992"),
    (2.0**53 + 2, "9007199254740994"),
    (2.0**60, "1152921504606847000"),
    (2.0**63, "9223372036854776000"),
    (1e-7, "1e-7"),
    (1.5e-7, "1.5e-7"),
    (-2.5e-8, "-2.5e-8"),
    (123e-20, "1.23e-18"),
    (0.000001, "0.000001"),
    (1.2345e-6, "0.0000012345"),
    (0.00001, "0.00001"),
    (1e-5 * 1.1, "0.000011000000000000001"),
    (5e-324, "5e-324"),
    (1.7976931348623157e308, "1.7976931348623157e+308"),
    (1e301, "1e+301"),
]


@pytest.mark.parametrize(("value", "expected"), JS_NUMBER_STRINGS)
def test_js_number_text_matches_ecmascript_number_to_string(value: float, expected: str) -> None:
    assert js_number_text(value) == expected


@pytest.mark.parametrize(("value", "expected"), JS_NUMBER_STRINGS)
def test_float_output_uses_ecmascript_formatting(value: float, expected: str) -> None:
    assert serialize_output(value) == expected
    assert serialize_output([value]) == f"[{expected}]"


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_non_finite_floats_become_null(value: float) -> None:
    assert serialize_output(value) == "null"
    assert serialize_output({"n": value}) == '{"n":null}'


def test_int_and_integral_float_write_the_same_digits() -> None:
    assert serialize_output([3, 3.0, -0.0, 0]) == "[3,3,0,0]"


# --- strings ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", '""'),
        ("plain", '"plain"'),
        ('say "hi"', '"say \\"hi\\""'),
        ("back\\slash", '"back\\\\slash"'),
        ("line\nbreak", '"line\\u000abreak"'),
        ("tab\there", '"tab\\u0009here"'),
        ("\r", '"\\u000d"'),
        ("\x00", '"\\u0000"'),
        ("\x1b", '"\\u001b"'),
        ("\x1f", '"\\u001f"'),
        ("\x7f", '"\x7f"'),
        ("/", '"/"'),
        ("é ü ß", '"é ü ß"'),
        ("\u2028\u2029", '"\u2028\u2029"'),
        ("日本", '"日本"'),
        ("😀", '"😀"'),
        ("\ud83d\ude00", '"😀"'),
        ("a\ud83d\ude00b", '"a😀b"'),
        ("\ud83d", '"\\ud83d"'),
        ("\ude00", '"\\ude00"'),
        ("\ude00\ud83d", '"\\ude00\\ud83d"'),
        ("x\ud83dy", '"x\\ud83dy"'),
        ("\ud83d\ud83d\ude00", '"\\ud83d😀"'),
        ("\ud83d\ude00\ude00", '"😀\\ude00"'),
        ("\udbff\udfff", '"\U0010ffff"'),
    ],
)
def test_string_escaping(text: str, expected: str) -> None:
    assert serialize_output(text) == expected


def test_newline_is_escaped_as_unicode_not_backslash_n() -> None:
    output = serialize_output("a\nb")
    assert "\\n" not in output
    assert "\n" not in output
    assert output == '"a\\u000ab"'


def test_escape_hex_digits_are_lowercase() -> None:
    assert serialize_output("\x1a\x0b\udabc") == '"\\u001a\\u000b\\udabc"'


# --- containers ---------------------------------------------------------------------------------


def test_containers_have_no_spaces_and_keys_are_sorted() -> None:
    value: dict[str, Any] = {"b": [1, 2, {"z": None, "a": True}], "a": "x", "c": {}}
    assert serialize_output(value) == '{"a":"x","b":[1,2,{"a":true,"z":null}],"c":{}}'


def test_empty_containers() -> None:
    assert serialize_output([]) == "[]"
    assert serialize_output(()) == "[]"
    assert serialize_output({}) == "{}"


def test_tuples_are_arrays() -> None:
    assert serialize_output((1, ("a",), [()])) == '[1,["a"],[[]]]'


def test_frozen_json_objects_serialize_like_dicts() -> None:
    value = {"b": [1, {"d": 2.5, "c": None}], "a": "x"}
    assert serialize_output(freeze_json(value)) == serialize_output(value)
    assert serialize_output(JsonObject({"k": 1})) == '{"k":1}'


def test_keys_are_sorted_by_utf16_code_units_not_code_points() -> None:
    keys = ["\uffff", "😀", "a", "\ud7ff", "\ue000", "\U00010000"]
    output = serialize_output(dict.fromkeys(keys, 0))
    # ECMAScript ["\uffff","😀","a","\ud7ff","\ue000","\u{10000}"].sort():
    expected_order = ["a", "\ud7ff", "\U00010000", "😀", "\ue000", "\uffff"]
    assert output == "{" + ",".join(f'"{key}":0' for key in expected_order) + "}"
    # Python's own code-point order would differ (the astral keys would come last).
    assert sorted(keys) != expected_order


def test_key_order_does_not_depend_on_insertion_order() -> None:
    forward = {"b": 1, "a": 2, "c": 3}
    backward = {"c": 3, "a": 2, "b": 1}
    assert serialize_output(forward) == serialize_output(backward) == '{"a":2,"b":1,"c":3}'


def test_keys_are_escaped_like_strings() -> None:
    assert serialize_output({'q"\n': 1, "\ud800": 2}) == '{"q\\"\\u000a":1,"\\ud800":2}'


def test_keys_that_look_special_are_ordinary() -> None:
    value = {"__proto__": 1, "toJSON": 2, "constructor": 3}
    assert serialize_output(value) == '{"__proto__":1,"constructor":3,"toJSON":2}'


def test_nested_structure_output() -> None:
    value = {"rows": [{"id": 1, "tags": ("a", "b")}, {"id": 2, "tags": ()}], "total": 2.0}
    expected = '{"rows":[{"id":1,"tags":["a","b"]},{"id":2,"tags":[]}],"total":2}'
    assert serialize_output(value) == expected


# --- cycles and sharing -------------------------------------------------------------------------


def test_self_containing_list_is_circular() -> None:
    value: list[Any] = [1]
    value.append(value)
    assert serialize_output(value) == '[1,"[Circular]"]'


def test_self_containing_dict_is_circular() -> None:
    value: dict[str, Any] = {"x": 1}
    value["self"] = value
    assert serialize_output(value) == '{"self":"[Circular]","x":1}'


def test_indirect_cycle_through_a_tuple() -> None:
    inner: list[Any] = []
    outer = (inner,)
    inner.append(outer)
    assert serialize_output(outer) == '[["[Circular]"]]'


def test_shared_non_cyclic_object_is_written_each_time() -> None:
    shared = {"v": [1, 2]}
    value = {"a": shared, "b": shared, "c": [shared, shared]}
    expected = '{"a":{"v":[1,2]},"b":{"v":[1,2]},"c":[{"v":[1,2]},{"v":[1,2]}]}'
    assert serialize_output(value) == expected


def test_cycle_below_the_root_points_at_the_nearest_ancestor() -> None:
    child: dict[str, Any] = {}
    root = {"child": child}
    child["up"] = root
    child["me"] = child
    assert serialize_output(root) == '{"child":{"me":"[Circular]","up":"[Circular]"}}'


# --- functions and placeholders -----------------------------------------------------------------


class _Sample:
    def method(self) -> None:
        return None

    @staticmethod
    def static() -> None:
        return None


def _plain_function() -> None:
    return None


async def _async_function() -> None:
    return None


FUNCTION_LIKE: list[object] = [
    _plain_function,
    _async_function,
    len,
    print,
    _Sample().method,
    _Sample.method,
    _Sample.static,
    list[int]().append,
    str.upper,
    (1).__add__,
    object.__init__,
    functools.partial(len),
    int,
    type,
    _Sample,
]


@pytest.mark.parametrize("value", FUNCTION_LIKE)
def test_functions_methods_and_classes_become_function_placeholder(value: object) -> None:
    assert serialize_output(value) == '"[Function]"'
    assert serialize_output({"f": value}) == '{"f":"[Function]"}'


def test_lambda_is_a_function_and_is_never_called() -> None:
    calls: list[int] = []

    def spy() -> int:
        calls.append(1)
        return 1

    assert serialize_output({"toJSON": spy, "x": 1}) == '{"toJSON":"[Function]","x":1}'
    assert calls == []


class _CallableInstance:
    def __call__(self) -> None:
        return None


@functools.cache
def _cached_function() -> int:
    return 1


@pytest.mark.parametrize("value", [_cached_function, operator.itemgetter(1), _CallableInstance()])
def test_other_callables_become_function_placeholder(value: object) -> None:
    assert serialize_output(value) == '"[Function]"'


def test_undefined_placeholder_inside_containers() -> None:
    assert serialize_output([UNDEFINED, {"u": UNDEFINED}]) == '["[Undefined]",{"u":"[Undefined]"}]'


def test_placeholders_are_distinct_from_their_literal_strings() -> None:
    # A placeholder serializes like the string it names; only the kind of value differs.
    assert serialize_output("[Function]") == serialize_output(len)
    assert serialize_output(None) != serialize_output(UNDEFINED)


# --- values that are not plain data -------------------------------------------------------------


@dataclasses.dataclass
class _Point:
    x: int = 1


class _Color(enum.Enum):
    RED = 1


class _Pair(NamedTuple):
    left: int
    right: int


class _ListSubclass(list[int]):
    pass


class _TupleSubclass(tuple[int, ...]):
    pass


class _DictSubclass(dict[str, int]):
    pass


class _StrSubclass(str):
    pass


class _IntSubclass(int):
    pass


class _FloatSubclass(float):
    pass


NOT_PLAIN_OBJECTS: list[tuple[str, object]] = [
    ("set", {1, 2}),
    ("empty set", set[int]()),
    ("frozenset", frozenset({1})),
    ("bytes", b"abc"),
    ("bytearray", bytearray(b"x")),
    ("memoryview", memoryview(b"x")),
    ("datetime", datetime.datetime(2024, 1, 1, tzinfo=datetime.UTC)),
    ("date", datetime.date(2024, 1, 1)),
    ("timedelta", datetime.timedelta(seconds=1)),
    ("Decimal", decimal.Decimal("1.5")),
    ("Fraction", fractions.Fraction(1, 3)),
    ("complex", 1j),
    ("dataclass instance", _Point()),
    ("object", object()),
    ("SimpleNamespace", SimpleNamespace(a=1)),
    ("enum member", _Color.RED),
    ("UUID", uuid.UUID(int=0)),
    ("path", PurePosixPath("/tmp")),
    ("dict subclass", _DictSubclass(a=1)),
    ("OrderedDict", OrderedDict(a=1)),
    ("defaultdict", defaultdict[str, int](int)),
    ("MappingProxyType", MappingProxyType({"a": 1})),
    ("UserDict", UserDict({"a": 1})),
    ("UserList", UserList([1])),
    ("deque", deque([1])),
    ("range", range(3)),
    ("generator", (index for index in range(0))),
    ("str subclass", _StrSubclass("x")),
    ("int subclass", _IntSubclass(1)),
    ("float subclass", _FloatSubclass(1.5)),
    ("Ellipsis", ...),
    ("exception", ValueError("x")),
]


@pytest.mark.parametrize(
    "value", [value for _, value in NOT_PLAIN_OBJECTS], ids=[name for name, _ in NOT_PLAIN_OBJECTS]
)
def test_non_plain_objects_raise_serialization_error(value: object) -> None:
    with pytest.raises(SerializationError) as caught:
        serialize_output(value)
    assert str(caught.value) == PLAIN_OBJECTS


@pytest.mark.parametrize(
    "value",
    [_ListSubclass([1]), _TupleSubclass((1,)), _Pair(1, 2)],
    ids=["list subclass", "tuple subclass", "namedtuple"],
)
def test_list_and_tuple_subclasses_raise_array_prototype_error(value: object) -> None:
    with pytest.raises(SerializationError) as caught:
        serialize_output(value)
    assert str(caught.value) == PLAIN_ARRAYS


@pytest.mark.parametrize(
    "value",
    [{1: "a"}, {None: 1}, {("a",): 1}, {"ok": 1, 2: 2}, {_StrSubclass("k"): 1}],
    ids=["int key", "None key", "tuple key", "mixed keys", "str subclass key"],
)
def test_dict_with_non_string_keys_raises(value: dict[Any, Any]) -> None:
    with pytest.raises(SerializationError) as caught:
        serialize_output(value)
    assert str(caught.value) == STRING_KEYS


def test_non_plain_value_deep_inside_raises() -> None:
    with pytest.raises(SerializationError):
        serialize_output({"a": [1, {"b": (2, {3})}]})


def test_serialization_error_is_an_ordinary_exception() -> None:
    assert issubclass(SerializationError, Exception)


# --- truncation at the output cap ---------------------------------------------------------------


def test_output_that_exactly_fits_the_cap_is_not_truncated() -> None:
    value = "a" * (TOOL_OUTPUT_CAP_CHARACTERS - 2)
    output = serialize_output(value)
    assert output == f'"{value}"'
    assert len(output) == TOOL_OUTPUT_CAP_CHARACTERS


def test_container_output_that_exactly_fits_the_cap_is_not_truncated() -> None:
    value = ["a" * 2000, "b" * 2000, "c" * 86]  # 4086 + 6 quotes + 2 commas + 2 brackets
    output = serialize_output(value)
    assert output == reference_json(value)
    assert len(output) == TOOL_OUTPUT_CAP_CHARACTERS


def test_one_code_point_over_the_cap_truncates() -> None:
    value = ["a" * 2000, "b" * 2000, "c" * 87]  # 4087 + 6 quotes + 2 commas + 2 brackets
    assert len(reference_json(value)) == TOOL_OUTPUT_CAP_CHARACTERS + 1
    output = serialize_output(value)
    assert output == reference_json(value)[:KEEP] + MARKER
    assert len(output) == TOOL_OUTPUT_CAP_CHARACTERS


def test_truncation_keeps_the_first_4072_code_points_then_the_marker() -> None:
    value = {"items": [f"entry-{index:03}" * 6 for index in range(100)]}
    full = reference_json(value)
    assert len(full) > TOOL_OUTPUT_CAP_CHARACTERS
    output = serialize_output(value)
    assert output == full[:KEEP] + MARKER
    assert len(output) == TOOL_OUTPUT_CAP_CHARACTERS
    assert_truncated(output)


def test_truncation_counts_astral_characters_as_one_code_point() -> None:
    value = ["😀" * 100] * 45
    output = serialize_output(value)
    assert output == reference_json(value)[:KEEP] + MARKER
    assert len(output) == TOOL_OUTPUT_CAP_CHARACTERS


def test_truncation_counts_surrogate_pairs_written_as_two_code_points_as_one() -> None:
    value = ["\ud83d\ude00" * 100] * 45
    normalized = ["😀" * 100] * 45
    output = serialize_output(value)
    assert output == reference_json(normalized)[:KEEP] + MARKER
    assert len(output) == TOOL_OUTPUT_CAP_CHARACTERS


def test_escapes_count_toward_the_output_cap() -> None:
    value = "\n" * 1000  # 1000 string code points, 6000 output code points
    output = serialize_output(value)
    assert output == ('"' + "\\u000a" * 1000)[:KEEP] + MARKER
    assert_truncated(output)


def test_marker_text_inside_a_value_is_escaped_and_not_a_truncation() -> None:
    output = serialize_output({"m": MARKER})
    assert output == '{"m":"\\u000a[Tool output truncated]"}'
    assert not output.endswith(MARKER)


def test_marker_text_inside_a_truncated_value_appears_only_once_raw() -> None:
    output = serialize_output([MARKER] * 400)
    assert_truncated(output)


# --- truncation by budget -----------------------------------------------------------------------


def test_depth_limit_nesting_within_limit_is_complete() -> None:
    value = nested_lists(TOOL_SERIALIZATION_MAX_DEPTH)  # innermost at depth 31
    assert serialize_output(value) == "[" * 32 + "]" * 32


def test_depth_limit_container_at_depth_32_is_allowed() -> None:
    value = nested_lists(TOOL_SERIALIZATION_MAX_DEPTH + 1)  # innermost at depth 32
    assert serialize_output(value) == "[" * 33 + "]" * 33


def test_depth_limit_container_deeper_than_32_truncates() -> None:
    output = serialize_output(nested_lists(TOOL_SERIALIZATION_MAX_DEPTH + 2))  # depth 33
    head = output.removesuffix(MARKER)
    assert set(head) == {"["}
    assert len(head) >= TOOL_SERIALIZATION_MAX_DEPTH
    assert_truncated(output)


def test_depth_limit_applies_to_dicts_too() -> None:
    value: dict[str, Any] = {}
    for _ in range(200):
        value = {"k": value}
    output = serialize_output(value)
    assert output.startswith('{"k":' * 30)
    assert_truncated(output)


def test_deep_nesting_far_beyond_recursion_limit_truncates_without_recursion_error() -> None:
    output = serialize_output(nested_lists(100_000))
    assert_truncated(output)


def test_node_budget_128_values_fit() -> None:
    value = list(range(TOOL_SERIALIZATION_MAX_NODES - 1))  # the array + 127 items = 128 values
    assert serialize_output(value) == reference_json(value)


def test_node_budget_129th_value_truncates() -> None:
    value = list(range(TOOL_SERIALIZATION_MAX_NODES))  # 129 values
    output = serialize_output(value)
    assert output == "[" + ",".join(str(index) for index in range(127)) + "," + MARKER
    assert_truncated(output)


def test_node_budget_counts_nested_values() -> None:
    value = [[index] for index in range(64)]  # 1 + 64 * 2 = 129 values
    output = serialize_output(value)
    assert output.startswith("[[0],[1],")
    assert "[63]" not in output
    assert_truncated(output)


def _keys(count: int) -> dict[str, int]:
    return {f"k{index:03}": 0 for index in range(count)}


def test_collection_budget_256_dict_keys_are_enumerated() -> None:
    # 256 keys fit the collection budget; their values then hit the node budget.
    output = serialize_output(_keys(TOOL_SERIALIZATION_MAX_COLLECTION_ENTRIES))
    assert output.startswith('{"k000":0,"k001":0,')
    assert_truncated(output)


def test_collection_budget_257th_dict_key_truncates_before_any_key_is_written() -> None:
    output = serialize_output(_keys(TOOL_SERIALIZATION_MAX_COLLECTION_ENTRIES + 1))
    assert '"k' not in output
    assert_truncated(output)


def test_collection_budget_is_shared_across_containers() -> None:
    entries = TOOL_SERIALIZATION_MAX_COLLECTION_ENTRIES
    assert serialize_output([_keys(entries - 1)]).startswith('[{"k000":0,')
    output = serialize_output([_keys(entries)])  # 1 array slot + 256 keys
    assert output.startswith("[")
    assert '"k' not in output
    assert_truncated(output)


def test_dict_with_a_million_keys_truncates_without_enumerating_everything() -> None:
    value = {f"key-{index}": index for index in range(1_000_000)}
    output = serialize_output(value)
    assert "key-" not in output
    assert_truncated(output)
    nested = serialize_output([value])
    assert nested.startswith("[")
    assert "key-" not in nested
    assert_truncated(nested)


def test_object_exceeding_the_collection_budget_keeps_its_opening_brace() -> None:
    assert serialize_output(_keys(TOOL_SERIALIZATION_MAX_COLLECTION_ENTRIES + 1)) == "{" + MARKER


def test_nested_object_exceeding_the_collection_budget_keeps_its_opening_brace() -> None:
    value = [_keys(TOOL_SERIALIZATION_MAX_COLLECTION_ENTRIES)]
    assert serialize_output(value) == "[{" + MARKER


def test_million_key_object_output_matches_the_workshop() -> None:
    value = {f"key-{index}": index for index in range(1_000_000)}
    assert serialize_output(value) == "{" + MARKER


def test_huge_list_truncates() -> None:
    value = list(range(1_000_000))
    output = serialize_output(value)
    assert output.startswith("[0,1,2,")
    assert_truncated(output)


def test_string_budget_truncates_a_long_string() -> None:
    value = "a" * (TOOL_SERIALIZATION_MAX_STRING_CHARACTERS + 1)
    assert serialize_output(value) == '"' + "a" * (KEEP - 1) + MARKER


def test_string_budget_truncates_a_huge_string() -> None:
    output = serialize_output({"text": "x" * 10_000_000})
    assert output == ('{"text":"' + "x" * KEEP)[:KEEP] + MARKER


def test_string_budget_includes_keys() -> None:
    value = {"k" * 3000: "v" * 1200}
    output = serialize_output(value)
    assert output == ('{"' + "k" * 3000 + '":"' + "v" * 1200)[:KEEP] + MARKER


def test_big_integer_below_2_pow_4095_is_quoted() -> None:
    value = 2**4095 - 1
    assert serialize_output(value) == f'"{value}n"'
    assert serialize_output(-value) == f'"-{value}n"'


@pytest.mark.parametrize(
    "value", [2**4095, 2**4096 - 1, -(2**4096 - 1)], ids=["2**4095", "2**4096-1", "-(2**4096-1)"]
)
def test_big_integer_below_2_pow_4096_is_quoted(value: int) -> None:
    assert serialize_output(value) == f'"{value}n"'


@pytest.mark.parametrize(
    "value",
    [2**4096, -(2**4096), 2**100_000, -(10**5000)],
    ids=["2**4096", "-2**4096", "2**100000", "-10**5000"],
)
def test_big_integer_with_magnitude_at_least_2_pow_4096_truncates(value: int) -> None:
    assert serialize_output(value) == MARKER
    assert serialize_output(["x", value]) == '["x",' + MARKER


def test_big_integer_digits_count_against_the_string_budget() -> None:
    big = 10**1200  # below 2**4096; 1201 digits + "n" each
    assert serialize_output([big, big, big]) == f'["{big}n","{big}n","{big}n"]'
    output = serialize_output([big, big, big, big])  # 4808 string code points
    assert output.startswith(f'["{big}n","{big}n","{big}n","')
    assert_truncated(output)


# --- determinism --------------------------------------------------------------------------------


def _sample_values() -> list[object]:
    cyclic: list[Any] = ["c"]
    cyclic.append(cyclic)
    return [
        {"b": [1, 2.5, None], "a": {"y": "\ud83d", "x": True}},
        ["😀", 2**60, float("nan"), -0.0, UNDEFINED, len],
        cyclic,
        {f"k{index}": index for index in range(300)},
        "q" * 10_000,
    ]


@pytest.mark.parametrize("value", _sample_values())
def test_same_value_serializes_identically_twice(value: object) -> None:
    assert serialize_output(value) == serialize_output(value)


def test_serializing_does_not_mutate_the_value() -> None:
    value = {"b": [3, 1, 2], "a": {"d": 1, "c": 2}}
    before = repr(value)
    serialize_output(value)
    assert repr(value) == before


def test_output_is_valid_json_when_not_truncated() -> None:
    value = {"s": "\x00\n\ud800", "n": [1, 2.5, 1e21, None], "o": {"t": True}}
    parsed: Any = json.loads(serialize_output(value))
    assert parsed == {"n": [1, 2.5, 1e21, None], "o": {"t": True}, "s": "\x00\n\ud800"}


# --- a custom cap ---------------------------------------------------------------------------------


@pytest.mark.parametrize("cap", [24, 25, 100, 4095, 4097, 10_000])
def test_custom_cap_exactly_fits_and_one_more_truncates(cap: int) -> None:
    fits = ["a" * (cap - 4)]  # 2 brackets + 2 quotes
    assert serialize_output(fits, cap=cap) == reference_json(fits)
    if cap - 3 > TOOL_SERIALIZATION_MAX_STRING_CHARACTERS:
        return  # the string budget, not the cap, would cut a longer string
    over = ["a" * (cap - 3)]
    output = serialize_output(over, cap=cap)
    assert output == reference_json(over)[: cap - len(MARKER)] + MARKER
    assert len(output) == cap


def test_the_smallest_cap_truncates_to_the_marker_alone() -> None:
    assert serialize_output(["ab"] * 10, cap=len(MARKER)) == MARKER
    assert serialize_output("x" * 23, cap=len(MARKER)) == MARKER
    assert serialize_output("x" * 22, cap=len(MARKER)) == '"' + "x" * 22 + '"'


def test_the_default_cap_is_the_workshop_cap() -> None:
    value = {"items": [f"entry-{index:03}" * 6 for index in range(100)]}
    assert serialize_output(value) == serialize_output(value, cap=TOOL_OUTPUT_CAP_CHARACTERS)
    assert len(serialize_output(value)) == TOOL_OUTPUT_CAP_CHARACTERS


def test_a_larger_cap_raises_the_string_budget_with_it() -> None:
    value = "a" * 10_000
    assert serialize_output(value, cap=10_002) == f'"{value}"'
    output = serialize_output("a" * 1_000_000, cap=10_002)
    assert output == '"' + "a" * (10_002 - 1 - len(MARKER)) + MARKER
    assert code_points(output)[0] == 10_002


def test_a_larger_cap_keeps_the_node_entry_depth_and_big_integer_budgets() -> None:
    cap = 1_000_000
    nodes = list(range(TOOL_SERIALIZATION_MAX_NODES))  # 129 values
    assert serialize_output(nodes, cap=cap).endswith(MARKER)
    entries = _keys(TOOL_SERIALIZATION_MAX_COLLECTION_ENTRIES + 1)
    assert serialize_output(entries, cap=cap) == "{" + MARKER
    assert serialize_output(nested_lists(TOOL_SERIALIZATION_MAX_DEPTH + 2), cap=cap).endswith(
        MARKER
    )
    assert serialize_output(2**4096, cap=cap) == MARKER


def test_a_larger_cap_lets_longer_output_through_untruncated() -> None:
    value = ["a" * 4000, "b" * 4000, "c" * 4000]
    assert len(reference_json(value)) > TOOL_OUTPUT_CAP_CHARACTERS
    assert serialize_output(value, cap=20_000) == reference_json(value)


def test_short_ascii_fast_path_agrees_with_the_writer_under_small_caps() -> None:
    for cap in (24, 30, 60):
        for text in ("", "abc", "a" * 20, "\n" * 3, '"' * 10, "a\tb" * 5):
            output = serialize_output(text, cap=cap)
            assert code_points(output)[0] <= cap
            full = serialize_output(text)
            assert output == full or output == full[: cap - len(MARKER)] + MARKER


def test_custom_cap_counts_astral_characters_as_one_code_point() -> None:
    value = ["😀" * 100] * 3
    output = serialize_output(value, cap=100)
    assert output == reference_json(value)[: 100 - len(MARKER)] + MARKER
    assert code_points(output)[0] == 100


# --- cap_text: text sent as it is -----------------------------------------------------------------


def test_cap_text_returns_text_that_fits_unchanged() -> None:
    assert cap_text("a\nb") == "a\nb"
    assert cap_text("") == ""
    text = "x" * TOOL_OUTPUT_CAP_CHARACTERS
    assert cap_text(text) is text


def test_cap_text_never_escapes_or_quotes() -> None:
    text = 'say "hi"\\ \x00\ud800 \u2028'
    assert cap_text(text) == text


def test_cap_text_one_code_point_over_cuts_to_exactly_the_cap() -> None:
    text = "y" * (TOOL_OUTPUT_CAP_CHARACTERS + 1)
    output = cap_text(text)
    assert output == "y" * KEEP + MARKER
    assert len(output) == TOOL_OUTPUT_CAP_CHARACTERS


@pytest.mark.parametrize("cap", [24, 25, 50, 4096])
def test_cap_text_with_a_custom_cap(cap: int) -> None:
    assert cap_text("z" * cap, cap) == "z" * cap
    assert cap_text("z" * (cap + 1), cap) == "z" * (cap - len(MARKER)) + MARKER


def test_cap_text_counts_a_pair_written_as_two_code_points_as_one() -> None:
    pair = "\ud83d\ude00"
    text = pair * 30  # 60 Python code points, 30 by the workshop's count
    assert cap_text(text, 30) == text
    output = cap_text(text, 29)
    assert output == pair * (29 - len(MARKER)) + MARKER
    assert code_points(output)[0] == 29


def test_cap_text_never_splits_a_pair_written_as_two_code_points() -> None:
    text = "a" + "\ud83d\ude00" * 40
    output = cap_text(text, 30)
    head = output.removesuffix(MARKER)
    assert head == "a" + "\ud83d\ude00" * 5
    assert code_points(head)[0] == 30 - len(MARKER)


def test_cap_text_counts_lone_surrogates_as_one() -> None:
    text = "\ud83d" * 30
    assert cap_text(text, 30) == text
    assert cap_text(text, 29) == "\ud83d" * 5 + MARKER


def test_cap_text_marker_inside_text_is_not_special() -> None:
    assert cap_text(MARKER) == MARKER
    output = cap_text(MARKER * 200)
    assert output.endswith(MARKER)
    assert code_points(output)[0] == TOOL_OUTPUT_CAP_CHARACTERS


def test_cap_text_of_a_huge_text_is_fast_and_exact() -> None:
    output = cap_text("é" * 10_000_000)
    assert output == "é" * KEEP + MARKER
