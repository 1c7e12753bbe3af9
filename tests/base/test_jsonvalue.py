"""``tether.jsonvalue``: the boundary that snapshots untrusted data into immutable JSON.

Only exact built-in containers are trusted; everything else is rejected with a
``JsonValueError`` (a ``TypeError`` with code ``INVALID_JSON_VALUE``) whose message names the
offending path. ``JsonObject`` is the immutable mapping that frozen JSON objects become.
"""

from __future__ import annotations

import collections
import contextlib
import copy
import datetime
import enum
import json
import math
import pickle
import types
from collections.abc import Iterator, Mapping
from decimal import Decimal
from fractions import Fraction
from typing import Any, NamedTuple, cast

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tether import jsonvalue
from tether.jsonvalue import (
    MAX_JSON_DEPTH,
    JsonObject,
    JsonValue,
    JsonValueError,
    freeze_json,
    freeze_json_object,
    loads_strict,
    thaw_json,
)


def _unchecked(value: object) -> Any:
    """The same object, typed ``Any`` so a test can attempt what the types forbid."""
    return value


def _rejection(value: object, *, path: str = "value") -> JsonValueError:
    with pytest.raises(JsonValueError) as caught:
        freeze_json(value, path=path)
    return caught.value


# --- hostile and exotic inputs ------------------------------------------------------------


class SubDict(dict[str, object]):
    pass


class SubList(list[object]):
    pass


class SubStr(str):
    pass


class SubInt(int):
    pass


class SubFloat(float):
    pass


class Color(enum.IntEnum):
    RED = 1


class CustomMapping(Mapping[str, object]):
    """A well-behaved read-only Mapping that is still not a plain ``dict``."""

    def __init__(self, data: dict[str, object]) -> None:
        self._data = data

    def __getitem__(self, key: str) -> object:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


class RaisingEq:
    """Hashable, but any comparison explodes."""

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("__eq__ must not be called")

    __hash__ = object.__hash__


class RaisingHash:
    def __hash__(self) -> int:
        raise RuntimeError("__hash__ must not be called")


class RaisingClass:
    @property
    def __class__(self) -> type:  # pyright: ignore[reportIncompatibleMethodOverride]
        raise RuntimeError("__class__ must not be read")


class RaisingAttributes:
    def __getattribute__(self, name: str) -> Any:
        raise RuntimeError(f"attribute {name!r} must not be read")


class HostileMeta(type):
    def __instancecheck__(cls, instance: object) -> bool:
        raise RuntimeError("__instancecheck__ must not be called")

    def __subclasscheck__(cls, subclass: type) -> bool:
        raise RuntimeError("__subclasscheck__ must not be called")


class HostileMetaInstance(metaclass=HostileMeta):
    pass


class Point(NamedTuple):
    x: int
    y: int


class LyingLength(list[object]):
    """A list subclass (the closest thing to a sparse array) whose length lies."""

    def __len__(self) -> int:
        return 10


# (value, expected reason or None for "any reason", expected path)
REJECTED: list[tuple[str, object, str | None, str]] = [
    ("dict subclass", {"a": SubDict()}, "container", "value.a"),
    ("OrderedDict", collections.OrderedDict(a=1), "container", "value"),
    ("defaultdict", collections.defaultdict(list), "container", "value"),
    ("Counter", [collections.Counter("ab")], "container", "value[0]"),
    ("list subclass", [1, SubList([1])], "container", "value[1]"),
    ("lying list subclass", LyingLength(), "container", "value"),
    ("namedtuple", [(), Point(1, 2)], "container", "value[1]"),
    ("MappingProxyType", types.MappingProxyType({"a": 1}), "container", "value"),
    ("custom Mapping", {"a": [CustomMapping({"b": 1})]}, "container", "value.a[0]"),
    ("UserDict", collections.UserDict(a=1), "container", "value"),
    ("ChainMap", collections.ChainMap({"a": 1}), "container", "value"),
    ("str subclass", {"s": SubStr("x")}, "value", "value.s"),
    ("int subclass", {"i": SubInt(1)}, "value", "value.i"),
    ("float subclass", [SubFloat(1.0)], "value", "value[0]"),
    ("IntEnum", {"c": Color.RED}, "value", "value.c"),
    ("set", {"tags": {1, 2}}, None, "value.tags"),
    ("frozenset", frozenset({"a"}), None, "value"),
    ("bytes", {"raw": b"x"}, "value", "value.raw"),
    ("bytearray", bytearray(b"x"), "value", "value"),
    ("memoryview", [memoryview(b"x")], "value", "value[0]"),
    ("Decimal", {"n": Decimal("1.5")}, "value", "value.n"),
    ("Fraction", Fraction(1, 3), "value", "value"),
    ("complex", 1j, "value", "value"),
    ("datetime", {"at": datetime.datetime(2024, 1, 1)}, "value", "value.at"),
    ("date", [datetime.date(2024, 1, 1)], "value", "value[0]"),
    ("NaN", {"a": [0, math.nan]}, "value", "value.a[1]"),
    ("+inf", [math.inf], "value", "value[0]"),
    ("-inf", {"x": -math.inf}, "value", "value.x"),
    ("object", object(), "value", "value"),
    ("function", [len], "value", "value[0]"),
    ("class", [dict], "value", "value[0]"),
    ("range", range(3), None, "value"),
    ("generator", {"g": (item for item in [1])}, None, "value.g"),
    ("int key", {1: "a"}, "key", "value"),
    ("nested int key", {"a": [1, {2: "b"}]}, "key", "value.a[1]"),
    ("None key", {None: 1}, "key", "value"),
    ("tuple key", {("a",): 1}, "key", "value"),
    ("bool key", {True: 1}, "key", "value"),
    ("str subclass key", {SubStr("k"): 1}, "key", "value"),
    ("raising __eq__ key", {RaisingEq(): 1}, "key", "value"),
    ("raising __eq__ value", [RaisingEq()], "value", "value[0]"),
    ("raising __hash__ value", {"h": RaisingHash()}, "value", "value.h"),
    ("raising __class__", [RaisingClass()], "value", "value[0]"),
    ("raising attributes", {"a": RaisingAttributes()}, "value", "value.a"),
    ("hostile metaclass", [HostileMetaInstance()], "value", "value[0]"),
]


@pytest.mark.parametrize(
    ("value", "reason", "path"),
    [case[1:] for case in REJECTED],
    ids=[case[0] for case in REJECTED],
)
def test_untrusted_values_are_rejected_with_a_path(
    value: object, reason: str | None, path: str
) -> None:
    error = _rejection(value)
    assert error.code == "INVALID_JSON_VALUE"
    assert error.path == path
    assert str(error).startswith(path + " ")
    if reason is not None:
        assert error.reason == reason


def test_rejection_error_is_a_coded_type_error() -> None:
    error = _rejection({"a": [0, {1: "b"}]})
    assert isinstance(error, TypeError)
    assert error.name == "JsonValueError"
    assert error.code == "INVALID_JSON_VALUE"
    assert str(error) == "value.a[1] must have only string keys"
    assert error.__cause__ is None
    assert error.__suppress_context__


def test_rejection_path_starts_with_the_caller_supplied_root() -> None:
    error = _rejection({"left": [1, math.nan]}, path="arguments")
    assert error.path == "arguments.left[1]"
    assert str(error).startswith("arguments.left[1] ")


def test_error_code_is_read_only() -> None:
    error = _rejection(b"x")
    attribute = "code"
    with pytest.raises(AttributeError):
        setattr(error, attribute, "OTHER")
    assert error.code == "INVALID_JSON_VALUE"


def test_error_pickles() -> None:
    error = _rejection({"a": {1: 2}})
    restored = pickle.loads(pickle.dumps(error))
    assert type(restored) is JsonValueError
    assert (restored.code, restored.path, restored.reason, str(restored)) == (
        error.code,
        error.path,
        error.reason,
        str(error),
    )


# --- cycles and depth ---------------------------------------------------------------------


def test_self_containing_list_is_circular() -> None:
    value: list[object] = [1]
    value.append(value)
    error = _rejection(value)
    assert error.reason == "circular"
    assert error.path == "value[1]"
    assert "circular" in str(error)


def test_self_containing_dict_is_circular() -> None:
    value: dict[str, object] = {}
    value["again"] = {"list": [value]}
    error = _rejection(value)
    assert error.reason == "circular"
    assert error.path == "value.again.list[0]"
    assert "circular" in str(error)


def test_mutual_cycle_is_circular() -> None:
    first: list[object] = []
    second: list[object] = [first]
    first.append(second)
    assert _rejection({"x": first}).reason == "circular"


def test_a_shared_acyclic_sub_object_is_fine() -> None:
    shared = {"a": [1, 2]}
    frozen = freeze_json({"left": shared, "right": [shared, shared]})
    assert frozen == {"left": shared, "right": [shared, shared]}


def _nested_lists(depth: int) -> list[object]:
    value: list[object] = []
    for _ in range(depth - 1):
        value = [value]
    return value


def _nested_dicts(depth: int) -> dict[str, object]:
    value: dict[str, object] = {}
    for _ in range(depth - 1):
        value = {"k": value}
    return value


@pytest.mark.parametrize("make", [_nested_lists, _nested_dicts], ids=["lists", "dicts"])
def test_ten_thousand_levels_are_rejected_as_too_deep_not_recursion_error(make: Any) -> None:
    error = _rejection(make(10_000))
    assert error.reason == "depth"
    assert error.code == "INVALID_JSON_VALUE"


def test_deep_nesting_inside_a_list_is_rejected_too() -> None:
    error = _rejection([1, {"deep": _nested_lists(10_000)}])
    assert error.reason == "depth"
    assert error.path.startswith("value[1].deep[0]")


def test_max_depth_containers_are_accepted() -> None:
    # MAX_JSON_DEPTH containers: the root at depth 0 ... the innermost at depth MAX - 1.
    frozen = freeze_json(_nested_lists(MAX_JSON_DEPTH))
    for _ in range(MAX_JSON_DEPTH - 1):
        assert type(frozen) is tuple
        frozen = frozen[0]
    assert frozen == ()


def test_a_container_at_exactly_max_depth_is_accepted_as_documented() -> None:
    freeze_json(_nested_lists(MAX_JSON_DEPTH + 1))  # innermost container at depth 128


def test_one_level_past_the_documented_limit_is_rejected() -> None:
    assert _rejection(_nested_lists(MAX_JSON_DEPTH + 2)).reason == "depth"


# --- accepted values ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [None, True, False, 0, -1, 2**64, 1.5, -0.0, "", "text", "\ud800"],
    ids=repr,
)
def test_scalars_are_kept_as_is(value: object) -> None:
    frozen = freeze_json(value)
    assert frozen is value


def test_dicts_become_json_objects_and_arrays_become_tuples() -> None:
    frozen = freeze_json({"a": [1, {"b": (2, [3])}], "c": ()})
    assert type(frozen) is JsonObject
    a = frozen["a"]
    assert type(a) is tuple
    inner = a[1]
    assert type(inner) is JsonObject
    b = inner["b"]
    assert b == (2, (3,))
    assert type(b) is tuple
    assert type(b[1]) is tuple
    assert frozen["c"] == ()


def test_a_frozen_object_is_returned_as_it_is() -> None:
    frozen = JsonObject({"a": 1})
    assert freeze_json(frozen) is frozen
    nested = freeze_json({"inner": frozen})
    assert type(nested) is JsonObject
    assert nested["inner"] is frozen


@pytest.mark.parametrize("key", ["__proto__", "__class__", "__dict__", "constructor", "__init__"])
def test_dunder_and_prototype_keys_are_ordinary_keys(key: str) -> None:
    frozen = freeze_json({key: {"polluted": True}, "other": 1})
    assert type(frozen) is JsonObject
    assert list(frozen) == [key, "other"]
    assert frozen[key] == {"polluted": True}
    assert thaw_json(frozen) == {key: {"polluted": True}, "other": 1}
    assert frozen.__class__ is JsonObject
    assert not hasattr(frozen, "polluted")


def test_keys_keep_their_insertion_order() -> None:
    assert list(cast(JsonObject, freeze_json({"b": 1, "a": 2, "c": 3}))) == ["b", "a", "c"]


def test_freezing_does_not_alias_the_callers_containers() -> None:
    source: dict[str, Any] = {"list": [1, {"x": 1}], "dict": {"y": [2]}}
    frozen = freeze_json(source)
    source["list"].append(99)
    source["list"][1]["x"] = 2
    source["dict"]["y"].clear()
    source["new"] = True
    assert frozen == {"list": [1, {"x": 1}], "dict": {"y": [2]}}


# --- JsonObject ---------------------------------------------------------------------------


def test_json_object_equals_a_dict_with_the_same_items() -> None:
    frozen = JsonObject({"a": [1, {"b": None}], "c": "d"})
    assert frozen == {"a": [1, {"b": None}], "c": "d"}
    assert frozen == {"a": (1, {"b": None}), "c": "d"}
    assert {"c": "d", "a": [1, {"b": None}]} == frozen  # noqa: SIM300 - dict on the left
    assert frozen == types.MappingProxyType({"a": [1, {"b": None}], "c": "d"})
    assert frozen == JsonObject({"c": "d", "a": [1, {"b": None}]})


@pytest.mark.parametrize(
    "other",
    [
        {"a": [1, {"b": None}]},
        {"a": [1, {"b": None}], "c": "d", "e": 1},
        {"a": [1], "c": "d"},
        {"a": [1, {"b": 0}], "c": "d"},
        {"a": "[1, {'b': None}]", "c": "d"},
        {"a": {"0": 1, "1": {"b": None}}, "c": "d"},
        {"x": [1, {"b": None}], "c": "d"},
        [("a", [1, {"b": None}]), ("c", "d")],
        None,
        "a",
    ],
    ids=repr,
)
def test_json_object_differs_from_other_values(other: object) -> None:
    frozen = JsonObject({"a": [1, {"b": None}], "c": "d"})
    assert frozen != other
    assert not (frozen == other)  # noqa: SIM201 - exercising __eq__ itself
    assert other != frozen


def test_json_object_item_assignment_and_deletion_raise_type_error() -> None:
    frozen = _unchecked(JsonObject({"a": 1}))
    with pytest.raises(TypeError):
        frozen["a"] = 2
    with pytest.raises(TypeError):
        frozen["b"] = 2
    with pytest.raises(TypeError):
        del frozen["a"]
    assert frozen == {"a": 1}


@pytest.mark.parametrize(
    "method", ["__setitem__", "__delitem__", "pop", "popitem", "update", "clear", "setdefault"]
)
def test_json_object_has_no_mutating_methods(method: str) -> None:
    assert not hasattr(JsonObject({"a": 1}), method)


@pytest.mark.parametrize("attribute", ["anything", "_data", "_hash", "__dict__"])
def test_json_object_attribute_assignment_raises_attribute_error(attribute: str) -> None:
    frozen = JsonObject({"a": 1})
    with pytest.raises(AttributeError):
        setattr(frozen, attribute, {"b": 2})
    with pytest.raises(AttributeError):
        delattr(frozen, attribute)
    assert frozen == {"a": 1}
    assert not hasattr(frozen, "__dict__")


def test_json_object_read_api() -> None:
    frozen = JsonObject({"a": 1, "b": [2]})
    assert len(frozen) == 2
    assert "a" in frozen
    assert "z" not in frozen
    assert 1 not in frozen
    assert list(frozen.keys()) == ["a", "b"]
    assert list(frozen.values()) == [1, (2,)]
    assert list(frozen.items()) == [("a", 1), ("b", (2,))]
    assert frozen.get("a") == 1
    assert frozen.get("z") is None
    assert frozen.get("z", 0) == 0
    with pytest.raises(KeyError):
        frozen["z"]


def test_json_object_views_cannot_mutate_it() -> None:
    frozen = JsonObject({"a": 1})
    assert not hasattr(frozen.keys(), "add")
    with pytest.raises((TypeError, AttributeError)):
        _unchecked(frozen.items()).mapping["b"] = 2
    assert frozen == {"a": 1}


def test_json_object_construction_freezes_its_argument() -> None:
    source: dict[str, Any] = {"a": [1]}
    frozen = JsonObject(source)
    source["a"].append(2)
    assert frozen["a"] == (1,)
    assert JsonObject() == {}
    assert len(JsonObject()) == 0


@pytest.mark.parametrize("value", [[1], "x", 1, (), SubDict(a=1), {"a": math.nan}], ids=repr)
def test_json_object_rejects_anything_but_a_json_object(value: object) -> None:
    with pytest.raises(JsonValueError):
        JsonObject(value)


def test_json_object_pickles_round_trip() -> None:
    frozen = JsonObject({"a": [1, {"b": [True, None, 1.5]}], "__proto__": "x"})
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        restored = pickle.loads(pickle.dumps(frozen, protocol=protocol))
        assert type(restored) is JsonObject
        assert restored == frozen
        assert hash(restored) == hash(frozen)
        a = restored["a"]
        assert type(a) is tuple
        assert type(a[1]) is JsonObject
        with pytest.raises(TypeError):
            _unchecked(restored)["a"] = 1


def test_json_object_copies_are_itself() -> None:
    frozen = JsonObject({"a": [1, {"b": 2}]})
    assert copy.copy(frozen) is frozen
    assert copy.deepcopy(frozen) is frozen
    holder = copy.deepcopy({"x": frozen})
    assert holder["x"] is frozen


def test_json_object_is_hashable_and_equal_objects_hash_equal() -> None:
    first = JsonObject({"a": [1, {"b": "c"}], "d": None})
    second = JsonObject({"d": None, "a": [1, {"b": "c"}]})
    assert first == second
    assert hash(first) == hash(second)
    assert len({first, second}) == 1
    assert {first: "value"}[second] == "value"


def test_json_object_repr_shows_its_items() -> None:
    assert repr(JsonObject({"a": [1]})) == "JsonObject({'a': (1,)})"


# --- thaw ---------------------------------------------------------------------------------


def test_thaw_returns_plain_mutable_copies() -> None:
    frozen = freeze_json({"a": [1, {"b": [2]}], "c": None})
    thawed = thaw_json(frozen)
    assert thawed == {"a": [1, {"b": [2]}], "c": None}
    a = thawed["a"]
    inner = a[1]
    assert (type(thawed), type(a), type(inner), type(inner["b"])) == (dict, list, dict, list)


def test_thawed_copies_are_independent_of_the_frozen_value() -> None:
    frozen = freeze_json({"a": [1, {"b": [2]}]})
    thawed = thaw_json(frozen)
    thawed["a"][1]["b"].append(3)
    thawed["a"].append(4)
    thawed["new"] = True
    assert frozen == {"a": [1, {"b": [2]}]}
    again = thaw_json(frozen)
    assert again == {"a": [1, {"b": [2]}]}
    assert again is not thawed


def test_thaw_of_scalars_and_arrays() -> None:
    assert thaw_json(None) is None
    assert thaw_json("x") == "x"
    assert thaw_json((1, (2,), JsonObject({"a": ()}))) == [1, [2], {"a": []}]


# --- properties ---------------------------------------------------------------------------

json_scalars: st.SearchStrategy[object] = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(),
)


def _json_containers(children: st.SearchStrategy[object]) -> st.SearchStrategy[object]:
    return st.one_of(st.lists(children), st.dictionaries(st.text(), children))


json_values: st.SearchStrategy[object] = st.recursive(json_scalars, _json_containers, max_leaves=25)


def _same_json(left: object, right: object) -> bool:
    """Structural equality with exact types (``1 != True``, ``1 != 1.0``, list order kept)."""
    if type(left) is not type(right):
        return False
    if type(left) is dict:
        left_dict = cast(dict[str, object], left)
        right_dict = cast(dict[str, object], right)
        return list(left_dict) == list(right_dict) and all(
            _same_json(left_dict[key], right_dict[key]) for key in left_dict
        )
    if type(left) is list:
        left_list = cast(list[object], left)
        right_list = cast(list[object], right)
        return len(left_list) == len(right_list) and all(
            _same_json(a, b) for a, b in zip(left_list, right_list, strict=True)
        )
    return left == right


@given(json_values)
def test_freeze_then_thaw_round_trips_json(value: object) -> None:
    frozen = freeze_json(value)
    assert _same_json(thaw_json(frozen), value)
    assert hash(frozen) == hash(freeze_json(copy.deepcopy(value)))


@given(json_values)
def test_frozen_values_are_hashable_and_equal_to_their_source(value: object) -> None:
    frozen = freeze_json(value)
    hash(frozen)
    if type(frozen) is JsonObject:
        assert frozen == value


hostile_leaves: st.SearchStrategy[object] = st.one_of(
    st.sampled_from(
        [
            math.nan,
            math.inf,
            -math.inf,
            b"bytes",
            bytearray(b"x"),
            Decimal("1.0"),
            Fraction(1, 2),
            1j,
            datetime.datetime(2024, 1, 1),
            Color.RED,
            SubStr("s"),
            SubInt(1),
            SubFloat(0.5),
            object(),
            len,
        ]
    ),
    # built lazily: hypothesis itself must never need to inspect these objects
    st.builds(RaisingEq),
    st.builds(RaisingHash),
    st.builds(RaisingClass),
    st.builds(RaisingAttributes),
    st.builds(HostileMetaInstance),
    st.frozensets(st.integers(), max_size=3),
    st.sets(st.text(max_size=3), max_size=3),
)

hostile_keys: st.SearchStrategy[object] = st.one_of(
    st.integers(),
    st.none(),
    st.booleans(),
    st.tuples(st.text(max_size=2)),
    st.builds(SubStr, st.text(max_size=3)),
    st.builds(RaisingEq),
    st.binary(max_size=3),
)


def _sub_dict(items: dict[str, object]) -> object:
    return SubDict(items)


def _ordered_dict(items: dict[str, object]) -> object:
    return collections.OrderedDict(items)


def _mapping_proxy(items: dict[str, object]) -> object:
    return types.MappingProxyType(items)


def _custom_mapping(items: dict[str, object]) -> object:
    return CustomMapping(items)


def _tuple(items: list[object]) -> object:
    return tuple(items)


def _sub_list(items: list[object]) -> object:
    return SubList(items)


def _hostile_containers(children: st.SearchStrategy[object]) -> st.SearchStrategy[object]:
    plain_dicts = st.dictionaries(st.text(max_size=5), children, max_size=4)
    plain_lists = st.lists(children, max_size=4)
    return st.one_of(
        plain_lists,
        plain_lists.map(_tuple),
        plain_dicts,
        st.dictionaries(st.one_of(st.text(max_size=3), hostile_keys), children, max_size=3),
        plain_dicts.map(_sub_dict),
        plain_dicts.map(_ordered_dict),
        plain_dicts.map(_mapping_proxy),
        plain_dicts.map(_custom_mapping),
        plain_lists.map(_sub_list),
    )


untrusted_values: st.SearchStrategy[object] = st.recursive(
    st.one_of(json_scalars, hostile_leaves), _hostile_containers, max_leaves=20
)


def _is_plain_json(value: object) -> bool:
    """Reference oracle, reading only exact types (never the value's own methods)."""
    kind = type(value)
    if value is None or kind is str or kind is int or kind is bool:
        return True
    if kind is float:
        return math.isfinite(cast(float, value))
    if kind is list or kind is tuple:
        return all(_is_plain_json(item) for item in cast(list[object], value))
    if kind is dict:
        return all(
            type(key) is str and _is_plain_json(item)
            for key, item in cast(dict[object, object], value).items()
        )
    return False


def _as_lists(value: object) -> object:
    """The thawed shape of plain JSON input: tuples read as lists."""
    if type(value) is list or type(value) is tuple:
        return [_as_lists(item) for item in cast(list[object], value)]
    if type(value) is dict:
        return {key: _as_lists(item) for key, item in cast(dict[str, object], value).items()}
    return value


@given(untrusted_values)
def test_freeze_accepts_exactly_plain_json_and_only_ever_raises_json_value_error(
    value: object,
) -> None:
    if _is_plain_json(value):
        frozen = freeze_json(value)
        assert _same_json(thaw_json(frozen), _as_lists(value))
    else:
        # Any exception other than JsonValueError escapes pytest.raises and fails the test.
        with pytest.raises(JsonValueError) as caught:
            freeze_json(value)
        assert caught.value.code == "INVALID_JSON_VALUE"
        assert caught.value.path.startswith("value")


def test_json_value_alias_accepts_frozen_values() -> None:
    value: JsonValue = freeze_json({"a": [1]})
    assert thaw_json(value) == {"a": [1]}


# --- the flat-object fast path of freeze_json -------------------------------------------------

_FLAT_VALUES = st.none() | st.booleans() | st.integers() | st.text(max_size=5)
_ANY_VALUES = st.recursive(
    _FLAT_VALUES | st.floats(allow_nan=True, allow_infinity=True),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=3), children, max_size=3)
    ),
    max_leaves=8,
)


def _plain_freeze(value: object) -> object:
    """The plain path, the general walk: the frozen value, or ``None`` when it rejects."""
    try:
        return jsonvalue._freeze(value, 0, set())  # pyright: ignore[reportPrivateUsage]
    except jsonvalue._Rejected:  # pyright: ignore[reportPrivateUsage]
        return None


@given(
    value=st.dictionaries(st.text(max_size=4) | st.integers(), _FLAT_VALUES | _ANY_VALUES)
    | st.dictionaries(st.text(max_size=4), _FLAT_VALUES, max_size=8)
)
def test_the_flat_object_fast_path_matches_the_general_walk(value: dict[Any, Any]) -> None:
    plain = _plain_freeze(value)
    if plain is None:
        with pytest.raises(JsonValueError):
            freeze_json(value)
        return
    fast = freeze_json(value)
    assert type(fast) is JsonObject
    assert type(plain) is JsonObject
    assert list(fast.items()) == list(plain.items())
    assert [type(item) for item in fast.values()] == [type(item) for item in plain.values()]


# --- the already-frozen tuple shortcut of _freeze -----------------------------------------------

_ANY_ITEMS = st.recursive(
    _FLAT_VALUES | st.floats(allow_nan=True, allow_infinity=True),
    lambda children: (
        st.lists(children, max_size=3).map(tuple)
        | st.lists(children, max_size=3)
        | st.dictionaries(st.text(max_size=3), children, max_size=3)
    ),
    max_leaves=8,
)


def _item_by_item(value: tuple[Any, ...], depth: int) -> object:
    """The tuple frozen by ``_freeze_sequence`` (no shortcut), or how it refused."""
    try:
        return jsonvalue._freeze_sequence(value, depth + 1, set())  # pyright: ignore[reportPrivateUsage]
    except jsonvalue._Rejected as rejected:  # pyright: ignore[reportPrivateUsage]
        return ("rejected", rejected.reason, rejected.segments)


@given(
    value=st.lists(_FLAT_VALUES, max_size=6).map(tuple)
    | st.lists(_ANY_ITEMS, max_size=4).map(tuple),
    depth=st.sampled_from([0, 1, MAX_JSON_DEPTH, MAX_JSON_DEPTH + 1]),
)
def test_the_frozen_tuple_shortcut_matches_the_item_by_item_walk(
    value: tuple[Any, ...], depth: int
) -> None:
    try:
        fast: object = jsonvalue._freeze(value, depth, set())  # pyright: ignore[reportPrivateUsage]
    except jsonvalue._Rejected as rejected:  # pyright: ignore[reportPrivateUsage]
        fast = ("rejected", rejected.reason, rejected.segments)
    if depth > MAX_JSON_DEPTH:
        assert fast == ("rejected", "depth", [])
        return
    plain = _item_by_item(value, depth)
    assert fast == plain
    if type(plain) is tuple:
        assert [type(item) for item in cast(tuple[Any, ...], fast)] == [
            type(item) for item in cast(tuple[Any, ...], plain)
        ]


def test_a_tuple_of_scalars_is_kept_and_any_other_is_copied() -> None:
    scalars = ("a", 1, True, None)
    assert freeze_json(scalars) is scalars
    assert freeze_json_object({"k": scalars})["k"] is scalars
    nested = ("a", [1])
    assert freeze_json(nested) == ("a", (1,))
    with pytest.raises(JsonValueError):
        freeze_json((1.0, math.nan))


# --- the hash cache a wrapped JsonObject leaves unset ------------------------------------------


@given(st.dictionaries(st.text(max_size=4), _ANY_VALUES.filter(lambda v: v == v), max_size=4))
def test_a_wrapped_object_hashes_and_sizes_as_a_constructed_one(value: dict[str, Any]) -> None:
    try:
        wrapped = freeze_json(value)
    except JsonValueError:
        return  # an infinity somewhere: nothing to compare
    assert type(wrapped) is JsonObject
    constructed = JsonObject(value)
    assert jsonvalue.cached_size(wrapped) is None
    assert jsonvalue.cached_size(constructed) is None
    assert hash(wrapped) == hash(constructed)
    assert hash(wrapped) == hash(wrapped)  # the second read is the cached one
    jsonvalue.store_size(wrapped, (1, 2, 3))
    assert jsonvalue.cached_size(wrapped) == (1, 2, 3)
    JsonObject.__init__(wrapped, {"other": 1})  # a second __init__ forgets the caches
    assert jsonvalue.cached_size(wrapped) is None
    assert hash(wrapped) == hash(JsonObject({"other": 1}))


class _Refused(NamedTuple):
    path: str
    reason: str


def _outcome(freeze: Any, value: object) -> object:
    """What ``freeze(value, path="args")`` returns, or how it refused."""
    try:
        return freeze(value, path="args")
    except JsonValueError as error:
        return _Refused(error.path, error.reason)


@given(untrusted_values)
def test_freeze_json_object_is_freeze_json_for_objects_and_refuses_the_rest(
    value: object,
) -> None:
    expected = _outcome(freeze_json, value)
    if type(expected) is not JsonObject and type(expected) is not _Refused:
        expected = _Refused("args", "container")
    got = _outcome(freeze_json_object, value)
    assert (type(got), got) == (type(expected), expected)


# --- JSON text: loads_strict --------------------------------------------------------------------


@pytest.mark.parametrize("text", ["NaN", "[Infinity]", '{"a": -Infinity}'])
def test_loads_strict_refuses_the_constants_json_lacks(text: str) -> None:
    with pytest.raises(ValueError, match="is not JSON"):
        loads_strict(text)


def test_loads_strict_refuses_repeated_keys_only_when_asked() -> None:
    text = '{"a": 1, "b": {"c": 2, "c": 3}}'
    assert loads_strict(text) == {"a": 1, "b": {"c": 3}}
    with pytest.raises(ValueError, match="duplicate key 'c'"):
        loads_strict(text, unique_keys=True)


@pytest.mark.parametrize("unique_keys", [False, True])
def test_loads_strict_turns_too_deep_nesting_into_a_value_error(unique_keys: bool) -> None:
    with pytest.raises(ValueError, match="nested too deeply"):
        loads_strict("[" * 200_000 + "]" * 200_000, unique_keys=unique_keys)
    with pytest.raises(ValueError, match="nested too deeply"):
        loads_strict('{"a":' * 200_000 + "1" + "}" * 200_000, unique_keys=unique_keys)


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(JSON_VALUES, st.booleans())
def test_loads_strict_reads_what_json_loads_reads(value: object, unique_keys: bool) -> None:
    text = json.dumps(value, allow_nan=False)
    assert loads_strict(text, unique_keys=unique_keys) == json.loads(text)


@given(st.text(max_size=40), st.booleans())
def test_loads_strict_raises_only_value_errors(text: str, unique_keys: bool) -> None:
    with contextlib.suppress(ValueError):
        loads_strict(text, unique_keys=unique_keys)
