"""Deeply immutable JSON values, and the boundary that snapshots untrusted data into them.

``freeze_json`` trusts only exact built-in containers: a ``dict`` with ``str`` keys becomes a
``JsonObject`` (an immutable mapping), a ``list`` or ``tuple`` becomes a ``tuple``; ``str``,
``bool``, ``int``, finite ``float`` and ``None`` are kept. Anything else (subclasses, other
mappings, sets, bytes, ``Decimal``, ``datetime``, NaN/infinity, cycles, nesting deeper than
``MAX_JSON_DEPTH``) is rejected with a ``JsonValueError``, never a raw ``RecursionError``.
Keys such as ``"__proto__"`` or ``"__class__"`` are ordinary keys.

JSON text, written once for every layer: ``loads_strict`` is ``json.loads`` without the
constants JSON lacks (``NaN``, ``Infinity``), optionally refusing duplicate keys, and with
too-deep nesting as a ``ValueError`` like any other invalid text (each caller wraps that in
its own stable code); ``STRICT_DECODER`` is its decoder, for callers that scan text
themselves. ``js_number_text`` writes a number as JavaScript's ``String(n)`` does, so that
text computed in Python matches the workshop's byte for byte.
"""

from __future__ import annotations

import json
import math
from collections.abc import ItemsView, Iterator, KeysView, Mapping, ValuesView
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias, TypeGuard, final

from tether._base.exact_types import is_dict, type_of
from tether._base.strings import code_points
from tether._base.tether_error import TetherError

if TYPE_CHECKING:
    from typing_extensions import TypeIs

__all__ = [
    "MAX_JSON_DEPTH",
    "STRICT_DECODER",
    "JsonArray",
    "JsonObject",
    "JsonPrimitive",
    "JsonValue",
    "JsonValueError",
    "freeze_json",
    "freeze_json_object",
    "is_json_array",
    "is_json_object",
    "js_number_text",
    "loads_strict",
    "thaw_json",
]

MAX_JSON_DEPTH: Final = 128
"""Containers nested deeper than this (the root is depth 0) are rejected."""

MAX_SAFE_INTEGER: Final = 2**53 - 1
"""The largest integer a JavaScript number (an IEEE double) holds exactly (exported by
``tether.protocol``, whose limits it bounds; defined here, in the lowest layer using it)."""


JsonValueErrorReason = Literal["container", "value", "key", "circular", "depth"]

_REASON_TEXT: Final[dict[str, str]] = {
    "container": "must contain only JSON objects and arrays",
    "value": "must contain only JSON-compatible values",
    "key": "must have only string keys",
    "circular": "must not contain circular references",
    "depth": f"must not nest containers deeper than {MAX_JSON_DEPTH}",
}


class JsonValueError(TetherError, TypeError):
    """Raised by ``freeze_json`` for a value that is not plain, finite, acyclic JSON.

    ``code`` is ``"INVALID_JSON_VALUE"``; ``path`` names the offending place
    (``value.tags[2]``) and ``reason`` says what was wrong.
    """

    def __init__(self, path: str, reason: JsonValueErrorReason) -> None:
        super().__init__("INVALID_JSON_VALUE", f"{path} {_REASON_TEXT[reason]}")
        self.path = path
        self.reason: JsonValueErrorReason = reason


@final
class JsonObject(Mapping[str, "JsonValue"]):
    """An immutable JSON object: a read-only ``str``-keyed mapping of frozen JSON values.

    It compares equal to a ``dict`` with the same items (arrays compare by content, so
    ``JsonObject({"a": [1]}) == {"a": [1]}``), is hashable, pickles, and deep-copies to
    itself. Item assignment raises ``TypeError``. ``JsonObject(d)`` freezes ``d`` through
    ``freeze_json``.
    """

    __slots__ = ("_data", "_hash", "_size")
    _data: dict[str, JsonValue]
    _hash: int | None
    # ``_hash`` and ``_size`` are caches, ``None`` until computed (``_hash`` may also be
    # unset: see ``_wrap``).

    def __init__(self, value: object = None, /) -> None:
        if value is None:
            data: dict[str, JsonValue] = {}
        else:
            data = freeze_json_object(value)._data
        _set_data(self, data)
        _set_hash(self, None)  # a second __init__ on a value forgets what it had cached
        _set_size(self, None)

    def __getitem__(self, key: str) -> JsonValue:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def keys(self) -> KeysView[str]:
        return self._data.keys()

    def values(self) -> ValuesView[JsonValue]:
        return self._data.values()

    def items(self) -> ItemsView[str, JsonValue]:
        return self._data.items()

    def get(self, key: str, default: Any = None) -> Any:
        return self._data.get(key, default)

    def __eq__(self, other: object) -> bool:
        if other is self:
            return True
        if _is_mapping(other):
            return _json_equal(self, other)
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    def __hash__(self) -> int:
        try:
            cached = self._hash
        except AttributeError:  # not computed yet (see ``_wrap``)
            cached = None
        if cached is None:
            cached = hash(frozenset(self._data.items()))
            _set_hash(self, cached)
        return cached

    def __repr__(self) -> str:
        return f"JsonObject({self._data!r})"

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"JsonObject is immutable; cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"JsonObject is immutable; cannot delete {name!r}")

    def __copy__(self) -> JsonObject:
        return self

    def __deepcopy__(self, memo: dict[int, object]) -> JsonObject:
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (_unpickle_object, (dict(self._data),))


JsonPrimitive: TypeAlias = str | int | float | bool | None
"""A JSON scalar."""
JsonValue: TypeAlias = str | int | float | bool | JsonObject | tuple["JsonValue", ...] | None
"""A deeply immutable JSON value: scalars, ``JsonObject`` and tuples of JSON values."""
JsonArray: TypeAlias = tuple[JsonValue, ...]
"""An immutable JSON array."""

_set_data = JsonObject.__dict__["_data"].__set__
_get_data = JsonObject.__dict__["_data"].__get__
_set_hash = JsonObject.__dict__["_hash"].__set__
_set_size = JsonObject.__dict__["_size"].__set__
_get_size = JsonObject.__dict__["_size"].__get__
_new_object = object.__new__


def cached_size(value: JsonObject) -> tuple[int, int, int] | None:
    """The ``(entries, string code points, depth)`` a caller measured and stored with
    ``store_size``, or ``None``. A ``JsonObject`` never changes, so its size never does;
    the agent loop uses this to check a reused tool-call argument object only once."""
    return _get_size(value, JsonObject)


def store_size(value: JsonObject, size: tuple[int, int, int]) -> None:
    """Remember ``value``'s measured size (see ``cached_size``)."""
    _set_size(value, size)


def _wrap(data: dict[str, JsonValue]) -> JsonObject:
    """Wrap a dict whose values are already frozen JSON. The dict must not escape.

    The hash cache (``_hash``) stays unset until the first ``hash``, which takes the unset
    slot's ``AttributeError`` for "not computed yet", as it takes ``None``: storing ``None``
    there was a sixth of the cost of freezing a small object (every record, tool-argument
    object and usage a provider parses), and few values are ever hashed.
    ``tests/base/test_jsonvalue.py`` checks the hashes of wrapped values against those of
    constructed ones. The size cache (``_size``) is still set: the loop reads it for every
    tool call's arguments, and reading an unset slot (an exception) costs more than the
    store.
    """
    obj = _new_object(JsonObject)
    _set_data(obj, data)
    _set_size(obj, None)
    return obj


def _unpickle_object(data: dict[str, JsonValue]) -> JsonObject:
    # Values were frozen when pickled and unpickle to frozen values (tuples, JsonObjects).
    return _wrap(data)


def _json_equal(left: object, right: object) -> bool:
    """JSON equality: mappings by items, arrays (tuple or list) by content, scalars by ==."""
    if _is_mapping(left):
        if not _is_mapping(right) or len(left) != len(right):
            return False
        return all(key in right and _json_equal(value, right[key]) for key, value in left.items())
    if _is_sequence(left):
        if not _is_sequence(right):
            return False
        return len(left) == len(right) and all(
            _json_equal(a, b) for a, b in zip(left, right, strict=True)
        )
    if _is_mapping(right) or _is_sequence(right):
        return False
    return left == right


def _is_mapping(value: object) -> TypeGuard[Mapping[object, object]]:
    """``isinstance(value, Mapping)``, narrowed to what equality reads of it."""
    return isinstance(value, Mapping)


def _is_sequence(value: object) -> TypeGuard[tuple[object, ...] | list[object]]:
    """``isinstance(value, tuple | list)``, narrowed to what equality reads of it."""
    return isinstance(value, tuple | list)


class _Rejected(Exception):
    """Internal: carries a rejection outwards while the path is rebuilt, segment by segment."""

    def __init__(self, reason: JsonValueErrorReason) -> None:
        super().__init__(reason)
        self.reason: JsonValueErrorReason = reason
        self.segments: list[str] = []


def freeze_json(value: object, *, path: str = "value") -> JsonValue:
    """Snapshot untrusted data into a deeply immutable JSON value.

    Only exact built-in containers are trusted; see the module docstring for the rules.
    Raises ``JsonValueError`` (a ``TypeError`` with ``code == "INVALID_JSON_VALUE"``) whose
    message starts with ``path``. Already-frozen ``JsonObject`` values are returned as they are.
    """
    if is_dict(value):  # the common case, plain parsed JSON: no cycle tracking, no paths
        plain = _freeze_plain(value, 0)
        if plain is not None:
            return plain
    try:
        return _freeze(value, 0, set())
    except _Rejected as rejected:
        raise JsonValueError(path + "".join(reversed(rejected.segments)), rejected.reason) from None
    except RecursionError:
        raise JsonValueError(path, "depth") from None


def freeze_plain_object(value: dict[Any, Any]) -> JsonObject | None:
    r"""``freeze_json(value)`` for a plain JSON object (an exact ``dict``), or ``None`` where
    the general walk must decide: ``freeze_json``'s own fast path, and the fixture parser's
    (which then hands the record to its checked path for the error).

    Why: most of ``freeze_json``'s general walk tracks the containers being walked (to find
    cycles) and the path of a rejected value. Data parsed from JSON text has neither cycles
    nor rejected values in the common case, so this walk keeps only what decides the result:
    exact ``str`` keys, exact scalar types, finite floats, already-frozen ``JsonObject``\ s
    and ``MAX_JSON_DEPTH``. Any other value, a cycle (which ends at the depth limit) and every
    failure give ``None``. A dict held twice (not a cycle) is frozen twice, to equal values,
    as the general walk does. ``tests/base/test_jsonvalue.py`` and
    ``tests/providers/test_fixture.py`` check it against the general walk.
    """
    return _freeze_plain(value, 0)


def _freeze_plain(value: dict[Any, Any], depth: int) -> JsonObject | None:
    if depth > MAX_JSON_DEPTH:
        return None
    frozen: dict[str, JsonValue] = {}
    scalars = _SCALARS
    for key, item in value.items():
        if type_of(key) is not str:
            return None
        kind = type_of(item)
        if kind in scalars:
            frozen[key] = item
        elif kind is dict:  # a nested object, the common non-scalar: no detour
            inner = _freeze_plain(item, depth + 1)
            if inner is None:
                return None
            frozen[key] = inner
        else:
            inner = _freeze_plain_value(item, kind, depth + 1)
            if inner is _NOT_PLAIN:
                return None
            frozen[key] = inner
    wrapped = _new_object(JsonObject)  # ``_wrap(frozen)``, inline: a call less per object
    _set_data(wrapped, frozen)
    _set_size(wrapped, None)
    return wrapped


def freeze_measured(value: dict[Any, Any]) -> JsonObject | None:
    """``freeze_plain_object(value)`` that, for a flat object (no nested object or array),
    also stores the size the agent loop checks tool arguments against (``cached_size``:
    ``(entries, string code points, 0)``), measured in the same pass over the items.

    Why: a tool call built with fresh arguments (a model's, a scripted factory's) was frozen
    by one walk and measured by a second one when the loop checked its bounds; carrying the
    measurement from the freeze makes the loop's check a look-up (``bench_loop``, generator
    factories). The count is the loop's own (``tether.loop.checks._bounds``: every key and
    string value in code points, surrogate pairs as one); a nested container leaves the
    size unset (the loop measures it then) and freezes as ``freeze_plain_object`` does.
    ``tests/base/test_jsonvalue.py`` checks both the value and the size against the plain
    path on any JSON object.
    """
    frozen: dict[str, JsonValue] = {}
    strings = 0
    for key, item in value.items():
        if type_of(key) is not str:
            return None
        text: str = key
        strings += len(text) if text.isascii() else code_points(text)[0]
        kind = type_of(item)
        if kind is str:
            strings += len(item) if item.isascii() else code_points(item)[0]
        elif kind is int or kind is bool or item is None or (kind is float and math.isfinite(item)):
            pass
        else:  # a nested container (or a value the plain walk refuses): no size carried
            return _freeze_plain(value, 0)
        frozen[key] = item
    wrapped = _new_object(JsonObject)
    _set_data(wrapped, frozen)
    _set_size(wrapped, (len(frozen), strings, 0))
    return wrapped


_NOT_PLAIN: Final = object()


def _freeze_plain_value(item: Any, kind: type[Any], depth: int) -> Any:
    """A non-scalar item of ``_freeze_plain``'s walk frozen, or ``_NOT_PLAIN``."""
    if kind is float:
        return item if math.isfinite(item) else _NOT_PLAIN
    if kind is JsonObject:
        return item
    if kind is dict:
        inner = _freeze_plain(item, depth)
        return _NOT_PLAIN if inner is None else inner
    if kind is list and depth <= MAX_JSON_DEPTH:
        items: list[JsonValue] = []
        scalars = _SCALARS
        for element in item:
            element_kind = type_of(element)
            if element_kind not in scalars:
                element = _freeze_plain_value(element, element_kind, depth + 1)
                if element is _NOT_PLAIN:
                    return _NOT_PLAIN
            items.append(element)
        return tuple(items)
    return _NOT_PLAIN


def freeze_json_object(value: object, *, path: str = "value") -> JsonObject:
    """``freeze_json`` for a place that must hold a JSON object: the same rules and errors,
    and a ``JsonValueError`` (reason ``"container"``) for any other JSON value."""
    frozen = freeze_json(value, path=path)
    if type(frozen) is not JsonObject:
        raise JsonValueError(path, "container")
    return frozen


def is_json_object(value: object) -> TypeIs[JsonObject]:
    """Whether ``value`` is a ``JsonObject`` (a final class: the exact check and
    ``isinstance`` agree, so both branches narrow)."""
    return type(value) is JsonObject


def is_json_array(value: JsonValue) -> TypeIs[tuple[JsonValue, ...]]:
    """Whether a frozen JSON value is an array: exactly a ``tuple``, which is all that
    ``freeze_json`` makes of one (so the other branch narrows too)."""
    return type(value) is tuple


def _freeze(value: Any, depth: int, active: set[int]) -> JsonValue:
    """``value`` frozen, at nesting ``depth``, inside the containers ``active`` (by ``id``).

    One shortcut: a ``tuple`` whose items are all ``str``, ``int``, ``bool`` or ``None`` is
    already frozen JSON (the array ``freeze_json`` would make of it, with no container inside
    to walk and none that could be circular), so it is returned as it is, after the depth
    check, instead of copied item by item; ``tests/base/test_jsonvalue.py`` checks it against
    the item-by-item path (``_freeze_sequence``).
    """
    kind = type_of(value)
    if kind is str or kind is int or kind is bool or value is None:
        return value
    if kind is float:
        if math.isfinite(value):
            return value
        raise _Rejected("value")
    if kind is JsonObject:
        return value
    if kind is dict or kind is list or kind is tuple:
        if depth > MAX_JSON_DEPTH:  # the root container is depth 0
            raise _Rejected("depth")
        if kind is tuple and _SCALARS.issuperset(map(type_of, value)):
            return value  # already frozen: see the docstring
        marker = id(value)
        if marker in active:
            raise _Rejected("circular")
        active.add(marker)
        try:
            if kind is dict:
                return _freeze_dict(value, depth + 1, active)
            return _freeze_sequence(value, depth + 1, active)
        finally:
            active.discard(marker)
    raise _Rejected("container" if _looks_like_container(kind) else "value")


def _looks_like_container(kind: type) -> bool:
    try:
        return issubclass(kind, dict | list | tuple | Mapping)
    except Exception:  # a hostile __subclasshook__ says nothing trustworthy
        return False


_SCALARS: Final = frozenset({str, int, bool, type(None)})


def _freeze_dict(source: dict[Any, Any], depth: int, active: set[int]) -> JsonObject:
    frozen: dict[str, JsonValue] = {}
    for key, item in source.items():
        if type(key) is not str:
            raise _Rejected("key")
        if type(item) in _SCALARS:  # the common case, without a call
            frozen[key] = item
            continue
        try:
            frozen[key] = _freeze(item, depth, active)
        except _Rejected as rejected:
            rejected.segments.append(f".{key}")
            raise
    return _wrap(frozen)


def _freeze_sequence(
    source: list[Any] | tuple[Any, ...], depth: int, active: set[int]
) -> tuple[JsonValue, ...]:
    frozen: list[JsonValue] = []
    for index, item in enumerate(source):
        if type(item) in _SCALARS:
            frozen.append(item)
            continue
        try:
            frozen.append(_freeze(item, depth, active))
        except _Rejected as rejected:
            rejected.segments.append(f"[{index}]")
            raise
    return tuple(frozen)


def entries(value: JsonObject) -> dict[str, JsonValue]:
    """The dict inside a ``JsonObject``, for tether's own readers. Never mutate it."""
    return _get_data(value)


def thaw_json(value: JsonValue) -> Any:
    """Return a plain, mutable copy of a frozen JSON value (``dict``/``list``/scalars)."""
    if type(value) is JsonObject:
        return {key: thaw_json(item) for key, item in value.items()}
    if type(value) is tuple:
        return [thaw_json(item) for item in value]
    return value


# --- JSON text ---------------------------------------------------------------------------------


def _reject_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise ValueError(f"duplicate key {key!r}")
            seen.add(key)
    return result


STRICT_DECODER: Final = json.JSONDecoder(parse_constant=_reject_constant)
"""A ``json.JSONDecoder`` that refuses ``NaN``, ``Infinity`` and ``-Infinity``."""
_UNIQUE_DECODER: Final = json.JSONDecoder(
    parse_constant=_reject_constant, object_pairs_hook=_unique_keys
)


def loads_strict(text: str, *, unique_keys: bool = False) -> Any:
    """``json.loads(text)``, strictly: ``ValueError`` for text that is not JSON, for the
    constants JSON does not have (``NaN``, ``Infinity``), for nesting too deep for the
    parser (never a raw ``RecursionError``) and, with ``unique_keys``, for an object that
    repeats a key. The message says what was wrong; the caller adds its code."""
    decoder = _UNIQUE_DECODER if unique_keys else STRICT_DECODER
    try:
        return decoder.decode(text)
    except RecursionError:
        raise ValueError("nested too deeply") from None


def js_number_text(value: float) -> str:
    """JavaScript's ``String(n)`` for a finite number: ``1.0 -> "1"``, ``-0.0 -> "0"``,
    ``0.5 -> "0.5"``, ``1e21 -> "1e+21"``, ``1e-7 -> "1e-7"``. An ``int`` is written as the
    double it would be in JavaScript (exactly, when it is a safe integer). ``ValueError``
    for a non-finite number."""
    if type(value) is int and -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
        return str(value)
    number = float(value)
    if not math.isfinite(number):
        raise ValueError("non-finite numbers have no JSON form")
    if number == 0:
        return "0"
    if number.is_integer() and abs(number) <= MAX_SAFE_INTEGER:
        return str(int(number))  # exact, and below 2**53 also the shortest digits
    sign = "-" if number < 0 else ""
    # repr gives the shortest digits that round-trip, the digits JavaScript chooses too
    mantissa, _, exponent = repr(abs(number)).partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = whole + fraction
    stripped = digits.lstrip("0")
    # number = 0.<digits> * 10**point
    point = len(whole) + (int(exponent) if exponent else 0) - (len(digits) - len(stripped))
    digits = stripped.rstrip("0")
    count = len(digits)
    if count <= point <= 21:
        text = digits + "0" * (point - count)
    elif 0 < point <= 21:
        text = f"{digits[:point]}.{digits[point:]}"
    elif -6 < point <= 0:
        text = "0." + "0" * -point + digits
    else:
        power = point - 1
        head = digits if count == 1 else f"{digits[0]}.{digits[1:]}"
        text = f"{head}e{'+' if power >= 0 else '-'}{abs(power)}"
    return sign + text
