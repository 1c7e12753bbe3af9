"""The one decoder of protocol values from their JSON form, compiled from the annotations.

``decoder(hint, layer)`` returns a function ``decode(data)`` for values annotated ``hint`` (a
protocol class, a union of them, ``tuple[X, ...]``, ``list[X]``, ``X | None``, ``JsonObject``,
a scalar), generated once per ``(hint, layer)`` from ``dataclasses.fields``, ``field_hints``
and the unions' discriminants (``_fields``). Nothing in it names a class: a new field, block
or union member is decoded with no edit here, by every layer.

The mapping is the codec's: camelCase keys (``tool_call_id`` → ``toolCallId``), unions by
their discriminant (``type``, ``role``, ``status``), tuples from JSON arrays, ``bytes`` from
canonical base64 text, a v2 field's default when its key is absent. The slots are filled
directly and the class's own ``__post_init__`` then runs, so every construction check
(``_fields``) applies exactly as in the constructor. Only exact ``dict``/``list`` are read,
as ``json`` builds them (a subclass could run caller code).

A ``Layer`` is what differs from one boundary to another, and nothing else:

* which keys must be present: ``written_required`` (a file: every key ``to_json`` always
  writes) or only fields without a default (the library's ``from_json``);
* whether an exact instance of the class is taken as it is (``accept_values``);
* limits: items per array, code points per string, nesting of JSON object fields;
* the order in which a key mismatch is explained (``keys_first``);
* ``fail(path, problem)``: the layer's own exception, code and message for a ``Problem``.

A failure is a ``Problem`` (what was wrong, as data) at a path; the layer turns it into its
error. Nesting is bounded by the types (a value deeper than its type is a ``Problem`` at the
first level that does not fit) and JSON object fields by ``freeze_json``'s depth limit, so
arbitrary JSON never raises ``RecursionError``, ``KeyError`` or ``TypeError`` from here.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
from collections.abc import Callable
from typing import Annotated, Any, Literal, NoReturn, TypeVar, cast, get_args, get_origin

from tether._base.dataclass import dataclass
from tether.jsonvalue import JsonObject
from tether.protocol._fields import (
    ProtocolValue,
    bind_default,
    discriminant_of,
    field_hints,
    is_python_only,
    members_of,
    omitted_while_default,
)

__all__ = [
    "Decode",
    "Layer",
    "Problem",
    "ProblemKind",
    "Rest",
    "camel_case",
    "decoder",
    "json_type",
    "limit_text",
]

_T = TypeVar("_T")

Decode = Callable[[object], Any]
"""A compiled decoder: the value, or the layer's error."""

ProblemKind = Literal[
    "not_array",
    "not_object",
    "unknown_tag",
    "missing",
    "unexpected",
    "invalid",
    "too_many_items",
    "too_long",
    "too_deep",
    "unsupported",
]
"""What was wrong: the value is not an array / not an object; a union's discriminant names no
member; required keys are absent / unknown keys present; the class's checks refused a field
(``invalid``, ``text`` is the check's message; also a ``bytes`` field that is not canonical
base64); an array, a string or a JSON object field is
over the layer's limit; the annotation has no JSON form (``unsupported``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Problem:
    """One reason a value does not decode, as data, for the layer to put in its words.

    ``value``: the offending JSON value (for ``not_array``/``not_object``: what was given;
    ``unknown_tag``: the discriminant found). ``cls``: the class being decoded, when there is
    one. ``keys``: the missing or unexpected keys (in field order, or in the source's order),
    or the ``key=value`` discriminants a union accepts. ``text``: the check's message.
    ``limit``: the limit exceeded.
    """

    kind: ProblemKind
    value: object = None
    cls: type | None = None
    key: str = ""
    keys: tuple[object, ...] = ()
    text: str = ""
    limit: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class Layer:
    """One boundary's configuration of the decoder (see the module docstring).

    ``fail(path, problem)`` returns the exception to raise; ``path`` is ``$``-rooted
    (``$.content[1].arguments``). The limits are ``None`` when the layer sets none.
    """

    name: str
    fail: Callable[[str, Problem], BaseException]
    written_required: bool = False
    accept_values: bool = False
    keys_first: bool = False
    max_items: int | None = None
    max_string: int | None = None
    max_json_depth: int | None = None


class _Rejected(Exception):
    """Internal: a compiled decoder refused a value. ``segments`` is the path, innermost
    first, added as the exception leaves each container (the happy path pays nothing)."""

    __slots__ = ("problem", "segments")

    def __init__(self, problem: Problem) -> None:
        super().__init__(problem.kind)
        self.problem = problem
        self.segments: list[str] = []


def _reject(problem: Problem) -> NoReturn:
    raise _Rejected(problem)


def limit_text(problem: Problem) -> str:
    """Words for a limit problem (``too_many_items``, ``too_long``, ``too_deep``) that a layer
    may use as they are: ``has more than 3 items``."""
    if problem.kind == "too_many_items":
        return f"has more than {problem.limit} items"
    if problem.kind == "too_long":
        return f"is longer than {problem.limit} code points"
    return f"nests deeper than {problem.limit}" if problem.limit else "nests too deeply"


def camel_case(name: str) -> str:
    """``tool_call_id`` → ``toolCallId``: the JSON key of a field."""
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def json_type(value: object) -> str:
    """The JSON name of a value's type (``object``, ``array``, ``null``...), for messages."""
    if value is None:
        return "null"
    names: dict[type, str] = {dict: "object", list: "array", str: "string", bool: "boolean"}
    kind: type = type(value)
    return names.get(kind, "number" if kind in (int, float) else kind.__name__)


_CACHE: dict[tuple[object, Layer], Decode] = {}
_COMPILERS: dict[Layer, _Compiler] = {}


def decoder(hint: Any, layer: Layer) -> Decode:
    """The decoder of values annotated ``hint`` at ``layer``: ``decode(data)`` returns the
    value or raises ``layer.fail(path, problem)``. Compiled on first use, then cached (one
    decoder per class and layer, shared by every hint that holds the class)."""
    key = (hint, layer)
    try:
        found = _CACHE.get(key)
    except TypeError:  # an unhashable annotation: compiled for this call only
        key, found = None, None
    if found is None:
        inner = _compiler(layer).compile(hint)
        fail = layer.fail

        def decode(data: object) -> Any:
            try:
                return inner(data)
            except _Rejected as rejected:
                path = "$" + "".join(reversed(rejected.segments))
                raise fail(path, rejected.problem) from rejected.__cause__
            except RecursionError:  # only a protocol type that holds itself nests so deep
                raise fail("$", Problem(kind="too_deep")) from None

        found = decode
        if key is not None:
            _CACHE[key] = decode
    return found


def _compiler(layer: Layer) -> _Compiler:
    compiler = _COMPILERS.get(layer)
    if compiler is None:
        compiler = _COMPILERS[layer] = _Compiler(layer)
    return compiler


def _pass(value: object) -> object:
    return value


class Rest:
    """The fields of a class that a hand-written layer does not read itself, decoded by the
    one decoder: a layer that words its own checks of ``id`` and ``content`` still takes
    every other field (``errorCode``, a signature, a new ``images``) with no edit.

    ``decode(read, absent)`` reads each remaining key with ``read(key)`` (``absent`` when
    the source has none: the field keeps its default) and returns the decoded values by
    field name, for the class's constructor; a problem is ``layer.fail`` with the path
    from the key (``$.images[0].data``). ``handled``: the JSON keys the layer reads itself.
    """

    __slots__ = ("fail", "fields", "names")

    def __init__(self, cls: type, handled: frozenset[str], layer: Layer) -> None:
        compiler = _compiler(layer)
        hints = field_hints(cls)
        self.fail = layer.fail
        self.names = tuple(field.name for field in dataclasses.fields(cls))
        self.fields = tuple(
            (camel_case(field.name), field.name, compiler.compile(hints[field.name]))
            for field in dataclasses.fields(cls)
            if camel_case(field.name) not in handled and not is_python_only(field)
        )

    def decode(
        self, read: Callable[[str], object], absent: object, root: str = "$"
    ) -> dict[str, Any]:
        """The remaining fields present in the source, decoded (see the class docstring);
        ``root`` begins the path of a problem (the layer's own name for the source)."""
        found: dict[str, Any] = {}
        for key, name, decode in self.fields:
            value = read(key)
            if value is absent:
                continue
            try:
                found[name] = decode(value)
            except _Rejected as rejected:
                path = f"{root}.{key}" + "".join(reversed(rejected.segments))
                raise self.fail(path, rejected.problem) from rejected.__cause__
        return found

    def onto(self, value: _T, read: Callable[[str], object], absent: object, root: str = "$") -> _T:
        """``value`` with the remaining fields read from its source (``decode``), rebuilt by
        its constructor (whose checks raise ``TypeError``/``ValueError``); ``value`` itself
        when the source has none of them."""
        found = self.decode(read, absent, root) if self.fields else None
        if not found:
            return value
        build = cast("Callable[..., _T]", type(value))
        current = {name: getattr(value, name) for name in self.names}
        return build(**(current | found))


class _Compiler:
    """Compiles the decoders of one layer; one decoder per class, shared by every use."""

    __slots__ = ("classes", "layer")

    def __init__(self, layer: Layer) -> None:
        self.layer = layer
        self.classes: dict[type, Decode] = {}

    def compile(self, hint: Any) -> Decode:
        if get_origin(hint) is Annotated:
            hint = get_args(hint)[0]
        members = members_of(hint)
        if len(members) > 1:
            rest = [member for member in members if member is not type(None)]
            inner = self.compile(rest[0]) if len(rest) == 1 else self.union(rest, hint)
            if len(rest) == len(members) or inner is _pass:
                return inner  # no None member, or one whose decoder passes None through
            return lambda value: None if value is None else inner(value)
        origin = get_origin(hint)
        if origin is tuple or origin is list:  # tuple[X, ...] (the protocol's) or list[X]
            arguments = get_args(hint)
            return self.array(self.compile(arguments[0] if arguments else object), origin)
        if isinstance(hint, type) and issubclass(hint, ProtocolValue):
            return self.value_class(hint)
        if isinstance(origin, type) and issubclass(origin, ProtocolValue):  # Result[X]
            return self.value_class(origin)
        if hint is JsonObject:
            return self.json_object()
        if hint is bytes:
            return _decode_base64
        if hint is str and self.layer.max_string is not None:
            return self.string(self.layer.max_string)
        if get_origin(hint) is Literal or hint in (str, int, bool, float, object, Any):
            return _pass  # scalars: the class's checks judge them
        if isinstance(hint, TypeVar):
            return _pass
        problem = Problem(kind="unsupported", text=repr(cast(object, hint)))
        return lambda value: _reject(problem)

    def array(self, item: Decode, origin: type) -> Decode:
        limit = self.layer.max_items
        as_tuple = origin is tuple

        def decode_array(value: Any) -> object:
            parts: list[object] = value  # declared, not cast(): no call a value
            if type(parts) is not list:
                _reject(Problem(kind="not_array", value=value))
            if limit is not None and len(parts) > limit:
                _reject(Problem(kind="too_many_items", limit=limit))
            if item is _pass:
                return tuple(parts) if as_tuple else list(parts)
            try:
                decoded = [item(part) for part in parts]
            except _Rejected:
                _locate(item, parts)
                raise
            return tuple(decoded) if as_tuple else decoded

        return decode_array

    def json_object(self) -> Decode:
        depth = self.layer.max_json_depth

        def decode_object(value: object) -> object:
            if type(value) is not dict:
                _reject(Problem(kind="not_object", value=value))
            source = cast(object, value)
            if depth is not None and _nests_deeper(source, depth):
                _reject(Problem(kind="too_deep", limit=depth))
            return source  # the class's check freezes it

        return decode_object

    def string(self, limit: int) -> Decode:
        def decode_string(value: object) -> object:
            if type(value) is str and len(value) > limit:
                _reject(Problem(kind="too_long", limit=limit))
            return value

        return decode_string

    def union(self, members: list[Any], hint: Any) -> Decode:
        """Members by their discriminant: ``{key: {value: decoder}}``, one key as a rule."""
        tables: dict[str, dict[object, Decode]] = {}
        accepted: list[str] = []
        for member in members:
            found = discriminant_of(member) if isinstance(member, type) else None
            if found is None:
                problem = Problem(kind="unsupported", text=repr(hint))
                return lambda value: _reject(problem)
            key = camel_case(found[0])
            tables.setdefault(key, {})[found[1]] = self.compile(member)
            accepted.append(f"{key}={found[1]!r}")
        options = tuple(accepted)
        classes = frozenset(member for member in members if self.layer.accept_values)
        tag_types = frozenset(type(tag) for table in tables.values() for tag in table)
        if len(tables) == 1:
            ((only, table),) = tables.items()

            def decode_one_key(value: Any) -> object:
                source: dict[object, object] = value  # declared, not cast(): no call a value
                if type(source) is not dict:
                    if type(value) in classes:
                        return value
                    _reject(Problem(kind="not_object", value=value))
                tag = source.get(only)
                chosen = table.get(tag) if type(tag) in tag_types else None
                if chosen is None:
                    _reject(Problem(kind="unknown_tag", value=tag, key=only, keys=options))
                return chosen(source)

            return decode_one_key
        pairs = tuple(tables.items())

        def decode_union(value: object) -> object:
            if type(value) is not dict:
                if type(value) in classes:
                    return value
                _reject(Problem(kind="not_object", value=value))
            source = cast("dict[object, object]", value)
            for key, table in pairs:
                tag = source.get(key)
                chosen = table.get(tag) if type(tag) in tag_types else None
                if chosen is not None:
                    return chosen(source)
            _reject(Problem(kind="unknown_tag", key=pairs[0][0], keys=options))

        return decode_union

    def value_class(self, cls: type) -> Decode:
        found = self.classes.get(cls)
        if found is not None:
            return found
        # A class that (indirectly) holds itself: the cell is filled once compiled.
        cell: list[Decode] = []
        self.classes[cls] = lambda value: cell[0](value)
        compiled = _class_decoder(cls, self)
        cell.append(compiled)
        self.classes[cls] = compiled
        return compiled


def _decode_base64(value: object) -> bytes:
    """The bytes of canonical standard base64 text (padded, no whitespace), as ``to_json``
    writes a ``bytes`` field (an image's ``data``); anything else is ``invalid``."""
    if type(value) is not str:
        _reject(Problem(kind="invalid", text=f"must be a base64 string (got {json_type(value)})"))
    text: str = value
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        _reject(Problem(kind="invalid", text="must be standard base64 with padding"))
    if base64.b64encode(raw) != text.encode("ascii"):  # non-zero unused bits: not canonical
        _reject(Problem(kind="invalid", text="must be canonical base64 (unused bits set)"))
    return raw


def _locate(item: Decode, parts: list[object]) -> None:
    """Add ``[index]`` of the first item that fails to its ``_Rejected`` (decoding is pure:
    the failing item fails again)."""
    for index, part in enumerate(parts):
        try:
            item(part)
        except _Rejected as rejected:
            rejected.segments.append(f"[{index}]")
            raise


def _nests_deeper(value: object, limit: int) -> bool:
    """Whether containers in ``value`` (an exact dict, depth 0) nest deeper than ``limit``;
    iterative, so any depth is measured without recursion."""
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack:
        current, depth = stack.pop()
        if depth > limit:
            return True
        kind = type(current)
        if kind is dict:
            children = cast("dict[object, object]", current).values()
        elif kind is list:
            children = cast("list[object]", current)
        else:
            continue
        stack.extend((child, depth + 1) for child in children if type(child) in (dict, list))
    return False


def _class_decoder(cls: type, compiler: _Compiler) -> Decode:
    """The decoder of one protocol class, generated from its fields: the key set checked
    at once, the slots filled, then the class's own ``__post_init__`` (its constructor's
    checks after filling them)."""
    layer = compiler.layer
    namespace: dict[str, Any] = {
        "cls": cls,
        "new": object.__new__,
        "dict_": dict,
        "Rejected": _Rejected,
        "reject": _reject,
        "explain": _explain_keys,
        "problem": Problem,
        "layer": layer,
    }
    hints = field_hints(cls)
    known: list[str] = []
    required: list[str] = []
    fields: list[tuple[str, dataclasses.Field[Any], Decode]] = []
    body: list[str] = []
    for position, field in enumerate(dataclasses.fields(cls)):
        namespace[f"set_{position}"] = _slot_setter(cls, field.name)
        has_default, has_factory = bind_default(namespace, field, position)
        fallback = f"default_{position}" if has_default else f"factory_{position}()"
        if is_python_only(field):
            body.append(f"    set_{position}(made, {fallback})")
            continue
        key = camel_case(field.name)
        known.append(key)
        decode = compiler.compile(hints[field.name])
        fields.append((key, field, decode))
        must = (layer.written_required and not omitted_while_default(field)) or not (
            has_default or has_factory
        )
        if must:
            required.append(key)
        read = f"value[{key!r}]"
        if decode is not _pass:
            namespace[f"decode_{position}"] = decode
            read = f"decode_{position}({read})"
        if not must:
            read = f"{read} if {key!r} in value else {fallback}"
        if decode is _pass:
            body.append(f"    set_{position}(made, {read})")
        else:
            body += [
                "    try:",
                f"        set_{position}(made, {read})",
                "    except Rejected as rejected:",
                f"        rejected.segments.append({'.' + key!r})",
                "        raise",
            ]
    namespace["known"] = frozenset(known)
    namespace["required"] = frozenset(required)
    namespace["fields"] = tuple(fields)
    accept = ["    if type(value) is cls:", "        return value"] if layer.accept_values else []
    lines = [
        "def decode(value):",
        *accept,
        "    if type(value) is not dict_:",
        "        reject(problem(kind='not_object', value=value, cls=cls))",
        "    keys = value.keys()",
        # The usual value has exactly the required keys: one comparison says it is fine
        # (``required`` is a subset of ``known``), two otherwise.
        "    if keys != required and not (keys <= known and keys >= required):",
        "        explain(layer, cls, value, fields, required)",
        "    made = new(cls)",
        *body,
        "    try:",
        "        made.__post_init__()",
        "    except (TypeError, ValueError) as error:",
        "        raise Rejected(problem(kind='invalid', cls=cls, text=str(error))) from error",
        "    return made",
    ]
    exec("\n".join(lines), namespace)  # generated from the dataclass fields, see above
    decode: Decode = namespace["decode"]
    decode.__qualname__ = decode.__name__ = f"decode_{cls.__name__}_{layer.name}"
    return decode


def _slot_setter(cls: type, name: str) -> Callable[[object, object], None]:
    slot = next(klass.__dict__[name] for klass in cls.__mro__ if name in klass.__dict__)
    return slot.__set__


def _explain_keys(
    layer: Layer,
    cls: type,
    value: dict[object, object],
    fields: tuple[tuple[str, dataclasses.Field[Any], Decode], ...],
    required: frozenset[str],
) -> NoReturn:
    """Raise the problem of a key set that does not fit ``cls``.

    ``keys_first``: every unexpected key, else every missing one. Otherwise the fields are
    walked in order, each present one decoded (its own problem comes first), and the first
    missing required field is the problem; then the first unexpected key in the source.
    """
    known = {key for key, _, _ in fields}
    unexpected = tuple(key for key in value if key not in known)
    if layer.keys_first:
        if unexpected:
            _reject(Problem(kind="unexpected", cls=cls, keys=unexpected))
        missing = tuple(key for key, _, _ in fields if key in required and key not in value)
        _reject(Problem(kind="missing", cls=cls, keys=missing))
    for key, _, decode in fields:
        if key in value:
            try:
                decode(value[key])
            except _Rejected as rejected:
                rejected.segments.append(f".{key}")
                raise
        elif key in required:
            _reject(Problem(kind="missing", cls=cls, keys=(key,)))
    _reject(Problem(kind="unexpected", cls=cls, keys=unexpected))
