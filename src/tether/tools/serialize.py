"""The bounded, deterministic serializer that turns tool output into result content.

The same value always gives the same string, byte for byte the workshop's: keys sorted by
UTF-16 code units, no spaces, control characters and lone surrogates escaped as ``\\u00XX``,
numbers formatted as ECMAScript ``Number#toString`` does (``tether.jsonvalue.js_number_text``:
``42.0`` -> ``42``, ``1e21`` -> ``1e+21``), ``-0`` -> ``0``, non-finite numbers -> ``null``,
integers beyond 2**53 - 1 quoted as ``"<digits>n"``. Only plain data is accepted: ``None``,
``bool``, ``int``, ``float``, ``str``, exact ``list``/``tuple``, exact ``dict`` with ``str``
keys and ``JsonObject``; functions become ``"[Function]"``, the ``UNDEFINED`` sentinel
``"[Undefined]"``, a container already on the current path ``"[Circular]"``. Anything else
raises ``SerializationError``.

Output is bounded: at most ``cap`` code points including the truncation marker (the
workshop's ``TOOL_OUTPUT_CAP_CHARACTERS``, 4,096, unless a tool's ``output_limit`` says
otherwise), and budgets on depth, visited values, collection entries and string code points;
exceeding any of them truncates the output (the prefix that fits, then the marker). A cap
above 4,096 raises the string budget to the cap, so strings can fill the output; the depth,
value, entry and big-integer budgets stay as they are. Collections are inspected lazily, so a
huge dict never gets fully enumerated or sorted.

``cap_text`` applies the same cap and marker rule to text that is sent as it is (a tool that
returns an exact ``str``), without JSON quoting. ``encodable_text`` makes such text something
a UTF-8 request body can carry: a ``str`` can hold lone surrogates (``os.listdir`` gives
``'caf\\udce9.txt'`` for the bytes ``caf\\xe9.txt``; ``surrogateescape`` decoding keeps
undecodable output bytes that way), and each becomes U+FFFD (a surrogate pair becomes the
character it encodes). The JSON the serializer writes escapes them instead (``\\udce9``),
which is valid JSON and encodable as it is.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Final

from tether._base.exact_types import type_of
from tether._base.strings import code_points, well_formed
from tether.jsonvalue import MAX_SAFE_INTEGER, JsonObject, js_number_text

__all__ = [
    "TOOL_OUTPUT_CAP_CHARACTERS",
    "TOOL_SERIALIZATION_MAX_BIGINT_BITS",
    "TOOL_SERIALIZATION_MAX_COLLECTION_ENTRIES",
    "TOOL_SERIALIZATION_MAX_DEPTH",
    "TOOL_SERIALIZATION_MAX_NODES",
    "TOOL_SERIALIZATION_MAX_STRING_CHARACTERS",
    "TOOL_TRUNCATION_MARKER",
    "UNDEFINED",
    "SerializationError",
    "cap_text",
    "encodable_text",
    "serialize_output",
]

TOOL_OUTPUT_CAP_CHARACTERS: Final = 4096
TOOL_TRUNCATION_MARKER: Final = "\n[Tool output truncated]"
TOOL_SERIALIZATION_MAX_DEPTH: Final = 32
TOOL_SERIALIZATION_MAX_NODES: Final = 128
TOOL_SERIALIZATION_MAX_COLLECTION_ENTRIES: Final = 256
TOOL_SERIALIZATION_MAX_STRING_CHARACTERS: Final = 4096
TOOL_SERIALIZATION_MAX_BIGINT_BITS: Final = 4096

_MARKER_LENGTH: Final = len(TOOL_TRUNCATION_MARKER)


class _Undefined:
    """JavaScript's ``undefined``, for outputs that need to say "no value" distinctly."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "UNDEFINED"


UNDEFINED: Final = _Undefined()


class SerializationError(Exception):
    """The output holds a value that is not plain data."""


class _Truncate(Exception):
    """Internal: a budget ran out; the output ends here."""


_ESCAPES: Final[dict[int, str]] = {code: f"\\u{code:04x}" for code in range(0x20)}
_ESCAPES[ord('"')] = '\\"'
_ESCAPES[ord("\\")] = "\\\\"


def escape_string(text: str) -> str:
    """The quoted JSON string the workshop writes for ``text``."""
    escaped = text.translate(_ESCAPES)
    try:
        escaped.encode("utf-8")
    except UnicodeEncodeError:
        escaped = _escape_surrogates(escaped)
    return f'"{escaped}"'


def _escape_surrogates(text: str) -> str:
    return _without_surrogates(text, lambda point: f"\\u{point:04x}")


def _without_surrogates(text: str, lone: Callable[[int], str]) -> str:
    """``text`` with each surrogate pair joined into its character and each lone surrogate
    replaced by ``lone(code point)``."""
    parts: list[str] = []
    index = 0
    length = len(text)
    while index < length:
        char = text[index]
        point = ord(char)
        if (
            0xD800 <= point <= 0xDBFF
            and index + 1 < length
            and 0xDC00 <= ord(text[index + 1]) <= 0xDFFF
        ):
            low = ord(text[index + 1])
            parts.append(chr(0x10000 + ((point - 0xD800) << 10) + (low - 0xDC00)))
            index += 2
            continue
        parts.append(lone(point) if 0xD800 <= point <= 0xDFFF else char)
        index += 1
    return "".join(parts)


def encodable_text(text: str) -> str:
    """``text`` as UTF-8 can carry it: each lone surrogate becomes U+FFFD and each surrogate
    pair the character it encodes; text without surrogates is returned as it is
    (``_base.strings.well_formed``, which a request body's encoding also uses)."""
    return well_formed(text)


class _Writer:
    __slots__ = ("active", "cap", "depth", "entries", "nodes", "parts", "size", "string_room")

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.parts: list[str] = []
        self.size = 0
        self.nodes = 0
        self.entries = 0
        # Strings longer than the cap would be cut by it anyway: the budget only spares
        # escaping them, so a cap above it raises it.
        self.string_room = max(cap, TOOL_SERIALIZATION_MAX_STRING_CHARACTERS)
        self.depth = 0
        self.active: set[int] = set()

    def write(self, text: str) -> None:
        count, _ = code_points(text)
        room = self.cap - self.size
        if count > room:
            self.parts.append(_prefix(text, room))
            self.size = self.cap
            raise _Truncate
        self.parts.append(text)
        self.size += count

    def string(self, text: str) -> None:
        count, _ = code_points(text)
        room = self.string_room
        if count > room:
            self.string_room = 0
            self.write(escape_string(_prefix(text, room))[:-1])
            raise _Truncate
        self.string_room = room - count
        self.write(escape_string(text))

    def value(self, value: Any) -> None:
        self.nodes += 1
        if self.nodes > TOOL_SERIALIZATION_MAX_NODES:
            raise _Truncate
        kind = type_of(value)
        if kind is str:
            self.string(value)
        elif value is None:
            self.write("null")
        elif kind is bool:
            self.write("true" if value else "false")
        elif kind is int:
            self.integer(value)
        elif kind is float:
            self.write(js_number_text(value) if math.isfinite(value) else "null")
        elif kind is dict or kind is JsonObject:
            self.container(value, self.mapping)
        elif kind is list or kind is tuple:
            self.container(value, self.array)
        elif value is UNDEFINED:
            self.write('"[Undefined]"')
        elif _is_function(value):
            self.write('"[Function]"')
        elif issubclass(kind, list | tuple):
            raise SerializationError("Tool output arrays must use a plain prototype")
        else:
            raise SerializationError("Tool output objects must be plain or have a null prototype")

    def integer(self, value: int) -> None:
        if -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
            self.write(str(value))
            return
        if value.bit_length() > TOOL_SERIALIZATION_MAX_BIGINT_BITS:  # |value| >= 2**4096
            raise _Truncate
        self.string(f"{value}n")

    def container(self, value: Any, body: Callable[[Any], None]) -> None:
        marker = id(value)
        if marker in self.active:
            self.write('"[Circular]"')
            return
        if self.depth > TOOL_SERIALIZATION_MAX_DEPTH:  # the root container is depth 0
            raise _Truncate
        self.active.add(marker)
        self.depth += 1
        try:
            body(value)
        finally:
            self.depth -= 1
            self.active.discard(marker)

    def mapping(self, value: Any) -> None:
        self.write("{")
        keys: list[str] = []
        for key in value:
            self.entries += 1
            if self.entries > TOOL_SERIALIZATION_MAX_COLLECTION_ENTRIES:
                raise _Truncate
            if type_of(key) is not str:
                raise SerializationError("Tool output object keys must be strings")
            keys.append(key)
        keys.sort(key=_utf16_order)
        for position, key in enumerate(keys):
            if position:
                self.write(",")
            self.string(key)
            self.write(":")
            self.value(value[key])
        self.write("}")

    def array(self, value: Any) -> None:
        self.write("[")
        for position, item in enumerate(value):
            self.entries += 1
            if self.entries > TOOL_SERIALIZATION_MAX_COLLECTION_ENTRIES:
                raise _Truncate
            if position:
                self.write(",")
            self.value(item)
        self.write("]")


def _is_function(value: object) -> bool:
    """Anything callable (functions, methods, classes): what JavaScript calls a function."""
    return callable(value)


def _utf16_order(key: str) -> bytes:
    return key.encode("utf-16-be", "surrogatepass")


def _prefix(text: str, count: int) -> str:
    """The first ``count`` code points of ``text`` under the workshop's counting rule."""
    if count <= 0:
        return ""
    head = text[:count]
    if head.isascii():  # no surrogates: every character counts one
        return head
    try:
        head.encode("utf-8")  # fails exactly when the head holds a surrogate code point
    except UnicodeEncodeError:
        pass
    else:
        return head
    taken = 0
    index = 0
    previous_high = False
    while index < len(text):
        point = ord(text[index])
        completes_pair = previous_high and 0xDC00 <= point <= 0xDFFF
        if not completes_pair:
            if taken == count:
                break
            taken += 1
        previous_high = 0xD800 <= point <= 0xDBFF and not completes_pair
        index += 1
    return text[:index]


def serialize_output(value: Any, *, cap: int = TOOL_OUTPUT_CAP_CHARACTERS) -> str:
    """Serialize a tool's output into result content of at most ``cap`` code points.

    See the module docstring for the rules. ``cap`` includes the truncation marker, so it must
    be at least ``len(TOOL_TRUNCATION_MARKER)``. Raises ``SerializationError`` for values that
    are not plain data.
    """
    kind = type_of(value)
    if kind is int and -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
        return str(value)  # at most 17 characters: within any valid cap
    # An ASCII string fits (and is within the string budget) even if every character needs
    # a six-character escape.
    if kind is str and 6 * len(value) + 2 <= cap and value.isascii():
        return escape_string(value)
    writer = _Writer(cap)
    try:
        writer.value(value)
    except _Truncate:
        return _prefix("".join(writer.parts), cap - _MARKER_LENGTH) + TOOL_TRUNCATION_MARKER
    except RecursionError as error:
        raise SerializationError("Tool output could not be serialized safely") from error
    return "".join(writer.parts)


def cap_text(text: str, cap: int = TOOL_OUTPUT_CAP_CHARACTERS) -> str:
    """``text`` as it is when it has at most ``cap`` code points, else its longest prefix that
    leaves room for the truncation marker, then the marker: exactly ``cap`` code points.

    Code points are counted as the serializer counts them (a surrogate pair written as two
    code points counts one, and is never split). ``cap`` must be at least
    ``len(TOOL_TRUNCATION_MARKER)``.
    """
    if len(text) <= cap or code_points(text)[0] <= cap:
        return text
    return _prefix(text, cap - _MARKER_LENGTH) + TOOL_TRUNCATION_MARKER
