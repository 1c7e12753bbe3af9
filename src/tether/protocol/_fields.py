"""Field checks derived from annotations: the one place protocol construction rules live.

Every protocol dataclass derives from ``ProtocolValue``. Its ``__post_init__`` runs a checker
compiled, on first construction, from the class's resolved type hints:

* ``Literal["x"]`` fields (the discriminants) accept exactly their values;
* ``str`` accepts an exact ``str``; ``Annotated[str, NON_EMPTY]`` also rejects blank strings
  (JavaScript ``trim()`` rules, as every workshop ID);
* ``int`` accepts an exact ``int`` (never ``bool``); ``COUNT`` bounds it to 0..2**53-1,
  ``POSITIVE`` to >= 1, ``NON_NEGATIVE`` to >= 0; ``bool`` accepts an exact ``bool``;
* ``bytes`` accepts exact ``bytes`` or copies a ``bytearray`` into ``bytes`` (an image's data);
* ``JsonObject`` accepts a ``JsonObject`` or freezes a ``dict`` (a snapshot; the caller's
  object is not kept);
* ``tuple[X, ...]`` accepts a ``tuple`` or ``list`` (copied into a tuple) whose items are
  exact instances of ``X`` (a protocol class or a union of them);
* a protocol class or a union of them accepts exact instances; ``X | None`` also ``None``;
* ``Callable[...]`` accepts anything callable (a context's ``progress``);
* anything else (``object``, a ``TypeVar``) accepts any value.

A rule that spans fields of one value (``ToolCall``: ``raw_arguments`` set means
``arguments`` is ``{}``) is the class's ``_invariant(self)`` method, run after the field
checks; it raises ``ValueError`` naming the fields.

So adding a field, a block type or a union member is one edit: the checks (and the codecs in
``codec.py`` and the fast builders in ``_trusted.py``) follow from the annotations. Errors are
``TypeError``/``ValueError`` naming the field in snake_case with what was given:
``ToolCall.arguments must be a JSON object (got set)``.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Final, Literal, TypeVar, Union, cast, get_args, get_origin

from tether._base.exact_types import is_array, is_dict
from tether._base.strings import JS_WHITESPACE, is_non_empty
from tether.jsonvalue import (
    MAX_SAFE_INTEGER,
    JsonObject,
    JsonValueError,
    freeze_json,
    freeze_measured,
)

__all__ = [
    "COUNT",
    "MAX_SAFE_INTEGER",
    "NON_EMPTY",
    "NON_NEGATIVE",
    "POSITIVE",
    "NonEmpty",
    "ProtocolValue",
    "bind_default",
    "describe",
    "discriminant_of",
    "field_hints",
    "members_of",
    "omitted_while_default",
    "python_only",
    "v2",
    "writable_twin",
]


class _Marker:
    """A constraint carried in ``Annotated[...]`` metadata."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


NON_EMPTY: Final = _Marker("NON_EMPTY")
"""A string that is not blank under JavaScript ``trim()``."""
COUNT: Final = _Marker("COUNT")
"""An integer from 0 to 2**53 - 1 (a token count)."""
POSITIVE: Final = _Marker("POSITIVE")
"""An integer >= 1."""
NON_NEGATIVE: Final = _Marker("NON_NEGATIVE")
"""An integer >= 0 (an event sequence, a position)."""

NonEmpty = Annotated[str, NON_EMPTY]
"""A non-blank string: IDs, names, codes."""

_Check = Callable[[object], object]
"""Returns the value to store (the given one, or a snapshot of it); raises when invalid."""


_V2: Final = "tether.v2"


def v2(default: Any) -> Any:
    """A field added by protocol v2: ``to_json`` omits it while it holds ``default``, so a
    value built only from workshop data keeps its workshop JSON byte for byte."""
    return dataclasses.field(default=default, metadata={_V2: True})


def omitted_while_default(field: dataclasses.Field[Any]) -> bool:
    """True for a v2 field (see ``v2``)."""
    return bool(field.metadata.get(_V2))


_PYTHON_ONLY: Final = "tether.python_only"


def python_only(default: Any) -> Any:
    """A field that holds a Python value with no JSON form (a run's structured ``output``):
    ``to_json`` never writes it and ``from_json`` leaves it at ``default``."""
    return dataclasses.field(default=default, metadata={_V2: True, _PYTHON_ONLY: True})


def is_python_only(field: dataclasses.Field[Any]) -> bool:
    """True for a ``python_only`` field."""
    return bool(field.metadata.get(_PYTHON_ONLY))


def bind_default(
    namespace: dict[str, Any], field: dataclasses.Field[Any], key: object
) -> tuple[bool, bool]:
    """For code generated from a dataclass's fields (the decoders of ``_decoder`` and the
    builders of ``_trusted``): bind ``field``'s default as ``default_KEY`` and its default
    factory as ``factory_KEY`` in ``namespace``; return whether it has each."""
    has_default = field.default is not dataclasses.MISSING
    has_factory = field.default_factory is not dataclasses.MISSING
    if has_default:
        namespace[f"default_{key}"] = field.default
    if has_factory:
        namespace[f"factory_{key}"] = field.default_factory
    return has_default, has_factory


class ProtocolValue:
    """Base of every protocol dataclass: construction runs the derived field checks."""

    __slots__ = ()

    def __post_init__(self) -> None:
        cls = type(self)
        checks = _CHECKS.get(cls)
        if checks is None:
            checks = _compile(cls)
            if _runs_no_own_post_init(cls):
                _install_fast_checks(cls, checks)
                _install_fused_init(cls, checks)
        for name, check in checks:
            value = getattr(self, name)
            stored = check(value)
            if stored is not value:
                object.__setattr__(self, name, stored)
        invariant = getattr(cls, "_invariant", None)
        if invariant is not None:
            invariant(self)


_GENERIC_POST_INIT: Final = ProtocolValue.__post_init__
_CHECKS: dict[type, tuple[tuple[str, _Check], ...]] = {}

_GENERATED: Final = "_tether_generated"
"""Set on a generated ``__post_init__`` (``_install_fast_checks``)."""


def _runs_no_own_post_init(cls: type) -> bool:
    """Whether the ``__post_init__`` that ``cls`` resolves to is the generic one or a generated
    one, never code of its own: only then may ``cls`` get a generated ``__post_init__`` and a
    fused ``__init__`` (which calls none). A subclass that defines ``__post_init__`` (it
    should call ``super().__post_init__()`` for the field checks) keeps it, so it runs on
    every construction, not only on the first one that compiled the checks."""
    post_init: object = getattr(cls, "__post_init__", None)
    return post_init is _GENERIC_POST_INIT or bool(getattr(post_init, _GENERATED, False))


def _install_fast_checks(cls: type, checks: tuple[tuple[str, _Check], ...]) -> None:
    """Give ``cls`` its own ``__post_init__``, generated from the same checks.

    The generic ``ProtocolValue.__post_init__`` calls one closure per field. The generated
    one tests the common fields inline (``type(v) is str``, a literal's value, an exact
    class) and calls the closure only when that test fails (to raise its message) or when
    the field may be snapshotted (tuples, JSON objects). It is the same rule, written out;
    ``tests/protocol/test_codec.py`` checks both paths against each other. A subclass that
    inherits it falls back to the generic path; a class that defines its own
    ``__post_init__`` never gets one (``_runs_no_own_post_init``).
    """
    namespace: dict[str, Any] = {
        "cls": cls,
        "generic": ProtocolValue.__post_init__,
        "setattr_": object.__setattr__,
    }
    lines = [
        "def __post_init__(self):",
        "    if type(self) is not cls:",
        "        return generic(self)",
    ]
    hints = field_hints(cls)
    for index, (name, check) in enumerate(checks):
        namespace[f"check_{index}"] = check
        test = _inline_test(hints[name], index, namespace)
        lines.append(f"    v = self.{name}")
        if test is None:
            lines.append(f"    w = check_{index}(v)")
            lines.append(f"    if w is not v: setattr_(self, {name!r}, w)")
        else:
            lines.append(f"    if not ({test}):")
            lines.append(f"        w = check_{index}(v)")
            lines.append(f"        if w is not v: setattr_(self, {name!r}, w)")
    invariant = getattr(cls, "_invariant", None)
    if invariant is not None:
        namespace["invariant"] = invariant
        lines.append("    invariant(self)")
    exec("\n".join(lines), namespace)  # generated from the annotations, see the docstring
    generated = namespace["__post_init__"]
    setattr(generated, _GENERATED, True)
    cls.__post_init__ = generated


_FUSED_PREFIX: Final = "fused_"
_GENERATED_FILE: Final = "<string>"
"""The ``co_filename`` of code ``dataclasses`` generates (it ``exec``s its source): an
``__init__`` from any other file is a class's own, which the fused one must not replace."""
_VARIADIC: Final = 0x04 | 0x08
"""``inspect.CO_VARARGS | inspect.CO_VARKEYWORDS``, without importing ``inspect``."""


def _install_fused_init(cls: type, checks: tuple[tuple[str, _Check], ...]) -> None:
    """Give ``cls`` an ``__init__`` that checks its arguments and then fills the slots.

    The dataclass ``__init__`` stores every argument (``object.__setattr__`` per field), calls
    ``__post_init__``, which reads each field back, checks it and stores its snapshot again
    when it made one. This one, generated from the same checks and the same inline tests
    (``_inline_test``), checks the arguments first, in field order, and stores each field
    once; then it runs ``_invariant``. The stores: ``self`` becomes a ``writable_twin`` of
    ``cls`` (one call), each field is an ordinary attribute store (the interpreter's slot
    store, where calling each slot's setter packed and unpacked an argument tuple per
    field), then ``self`` gets ``cls`` back, all after the checks, so nothing can fail
    between (issue 30: ~600 machine instructions per field before, ~30 now, for ~1k per
    value for the two class changes). Same parameters, defaults, default
    factories, annotations and qualified name (so the same signature and the same errors for
    a missing or unknown argument), same checks in the same order, so the same values and
    the same errors; ``tests/protocol/test_fast_checks.py`` compares it with the generic path.
    The one difference: when a check fails nothing was stored yet (the dataclass one fails
    after storing), which only an explicit second ``__init__`` call on a built value could
    see. A subclass that inherits it, a class with a ``__post_init__`` of its own (the fused
    ``__init__`` calls none), a class whose ``__init__`` is not the dataclass one (written
    by hand, even with the fields' parameter names), a
    field that is not a slot or whose name clashes with the generated names keeps the plain
    path.
    """
    plain: Any = cls.__dict__.get("__init__")
    code: types.CodeType | None = getattr(plain, "__code__", None)
    names = [name for name, _ in checks]
    if (
        code is None
        or code.co_filename != _GENERATED_FILE  # written by hand, not by ``dataclasses``
        or code.co_flags & _VARIADIC
        or code.co_posonlyargcount
        or list(code.co_varnames[1 : 1 + code.co_argcount + code.co_kwonlyargcount]) != names
        or any(name.startswith(_FUSED_PREFIX) or name == "self" for name in names)
    ):
        return
    positional = names[: code.co_argcount - 1]
    keyword = names[code.co_argcount - 1 :]
    namespace: dict[str, Any] = {
        "fused_cls": cls,
        "fused_plain": plain,
        "fused_type": type,
        "fused_sentinel": _FACTORY_SENTINEL,
        "fused_invariant": getattr(cls, "_invariant", None),
    }
    parameters = ["self", *positional, *(["*", *keyword] if keyword else [])]
    forwarded = ", ".join(f"{name}={name}" for name in names)
    lines = [
        f"def __init__({', '.join(parameters)}):",
        "    if fused_type(self) is not fused_cls:",
        f"        return fused_plain(self, {forwarded})",
    ]
    hints = field_hints(cls)
    for index, field in enumerate(dataclasses.fields(cls)):
        name = field.name
        if field.default_factory is not dataclasses.MISSING:
            defaults: dict[str, Any] = plain.__kwdefaults__ or {}
            if defaults.get(name) is not _FACTORY_SENTINEL:
                return  # not the dataclass's marker for "call the factory": keep the plain path
            namespace[f"fused_factory_{index}"] = field.default_factory
            lines.append(f"    if {name} is fused_sentinel: {name} = fused_factory_{index}()")
    for index, (name, check) in enumerate(checks):
        namespace[f"fused_check_{index}"] = check
        slot = next((klass.__dict__[name] for klass in cls.__mro__ if name in klass.__dict__), None)
        if type(slot) is not _SLOT:
            return  # not a slotted field (a class without ``slots=True``): keep the plain path
        test = _inline_test(hints[name], index, namespace, subject=name, prefix=_FUSED_PREFIX)
        if test is None:
            lines.append(f"    {name} = fused_check_{index}({name})")
        else:
            lines.append(f"    if not ({test}): {name} = fused_check_{index}({name})")
    try:
        namespace["fused_twin"] = writable_twin(cls)
    except TypeError:
        return  # a layout a twin cannot share: keep the plain path
    namespace["fused_set_class"] = _SET_CLASS
    lines.append("    fused_set_class(self, fused_twin)")  # see the docstring: one call
    lines.extend(f"    self.{name} = {name}" for name in names)
    lines.append("    self.__class__ = fused_cls")
    if namespace["fused_invariant"] is not None:
        lines.append("    fused_invariant(self)")
    exec("\n".join(lines), namespace)  # generated from the annotations, see the docstring
    fused: types.FunctionType = namespace["__init__"]
    fused.__code__ = fused.__code__.replace(co_qualname=code.co_qualname)
    fused.__defaults__ = plain.__defaults__
    fused.__kwdefaults__ = plain.__kwdefaults__
    fused.__annotations__ = plain.__annotations__
    fused.__qualname__ = plain.__qualname__
    fused.__module__ = plain.__module__
    fused.__doc__ = plain.__doc__
    cls.__init__ = fused


_FACTORY_SENTINEL: Final[Any] = getattr(dataclasses, "_HAS_DEFAULT_FACTORY", object())
_SLOT: Final = types.MemberDescriptorType
_SET_CLASS: Final[Any] = vars(object)["__class__"].__set__
"""Sets an object's class without its class's ``__setattr__`` (a frozen one refuses)."""


_TWINS: dict[type, type] = {}


def writable_twin(cls: type) -> type:
    """A class with ``cls``'s bases and slots and no ``__setattr__`` of its own, whose
    instances may become ``cls`` instances (``value.__class__ = cls``).

    Why: a frozen dataclass refuses attribute stores, so a builder used to fill each slot
    through its descriptor (``slot.__set__(value, x)``), a call that packs and unpacks an
    argument tuple: most of the cost of building a small value. A builder now makes a twin,
    stores each field as an ordinary attribute (the interpreter's slot store, no call) and
    then gives the value its class, one layout check for the whole value. The twin never
    escapes a builder: the value is ``cls``'s before the builder returns, and a builder that
    fails drops it. ``TypeError`` now when the two layouts differ (``cls`` is not a slotted
    class whose slots are its fields). ``tests/protocol/test_codec.py`` checks every
    builder against the public constructor; the fused ``__init__`` fills one too
    (``_install_fused_init``), checked against the plain path in ``test_fast_checks.py``.
    """
    twin = _TWINS.get(cls)
    if twin is None:
        slots: object = cls.__dict__.get("__slots__")
        if type(slots) is not tuple:
            raise TypeError(f"{cls.__name__} is not a slotted class")
        # ``object``'s own attribute store, also where a base class refuses stores (a frozen
        # dataclass's subclass): the interpreter's plain slot store
        body: dict[str, object] = {
            "__slots__": slots,
            "__module__": __name__,
            "__setattr__": object.__setattr__,
        }
        # the bases as written (``Generic[T]`` for a generic class, which ``type`` refuses)
        bases: tuple[Any, ...] = cls.__dict__.get("__orig_bases__", cls.__bases__)
        made: type[Any] = types.new_class(
            cls.__name__, bases, exec_body=lambda space: space.update(body)
        )
        made.__qualname__ = f"writable_twin({cls.__qualname__})"
        probe: Any = object.__new__(made)
        probe.__class__ = cls  # a layout that differs raises TypeError here, not in a builder
        twin = _TWINS[cls] = made
    return twin


def _inline_test(
    hint: Any, index: int, namespace: dict[str, Any], *, subject: str = "v", prefix: str = ""
) -> str | None:
    """A Python expression over ``subject`` that is true exactly when the field's check would
    accept it unchanged, or ``None`` when there is no such cheap test. The names it reads
    start with ``prefix`` and are put in ``namespace`` here (a prefix keeps them apart from
    parameters named like a field, ``type`` among them)."""
    v = subject
    kind = f"{prefix}type"
    namespace[kind] = type
    base, metadata = _split(hint)
    members = members_of(base)
    if len(members) > 1:
        rest = [member for member in members if member is not type(None)]
        if all(_is_protocol_class(member) for member in rest) and len(rest) == len(members):
            namespace[f"{prefix}types_{index}"] = frozenset(members)
            return f"{kind}({v}) in {prefix}types_{index}"
        if len(rest) == 1 and len(members) == 2:
            inner = _inline_test(rest[0], index, namespace, subject=subject, prefix=prefix)
            return None if inner is None else f"{v} is None or ({inner})"
        return None
    if get_origin(base) is Literal:
        options = get_args(base)
        namespace[f"{prefix}options_{index}"] = options
        namespace[f"{prefix}option_types_{index}"] = frozenset(map(type, options))
        return f"{kind}({v}) in {prefix}option_types_{index} and {v} in {prefix}options_{index}"
    if base is str:
        if NON_EMPTY not in metadata:
            return f"{kind}({v}) is str"
        # ``is_non_empty(v)`` written out (no call per ID and name): not blank under ``trim()``
        namespace[f"{prefix}WHITESPACE"] = frozenset(JS_WHITESPACE)
        namespace[f"{prefix}JS_WHITESPACE"] = JS_WHITESPACE
        return (
            f'{kind}({v}) is str and {v} != "" '
            f'and ({v}[0] not in {prefix}WHITESPACE or {v}.strip({prefix}JS_WHITESPACE) != "")'
        )
    if base is bool:
        return f"{kind}({v}) is bool"
    if base is bytes:
        return f"{kind}({v}) is bytes"
    if base is int:
        namespace[f"{prefix}MAX"] = MAX_SAFE_INTEGER
        if COUNT in metadata:
            return f"{kind}({v}) is int and 0 <= {v} <= {prefix}MAX"
        if POSITIVE in metadata:
            return f"{kind}({v}) is int and {v} >= 1"
        if NON_NEGATIVE in metadata:
            return f"{kind}({v}) is int and {v} >= 0"
        return f"{kind}({v}) is int"
    if base is JsonObject:
        namespace[f"{prefix}JsonObject"] = JsonObject
        return f"{kind}({v}) is {prefix}JsonObject"
    if get_origin(base) is tuple:
        item = get_args(base)[0]
        namespace[f"{prefix}items_{index}"] = frozenset(
            member for member in members_of(item) if isinstance(member, type)
        )
        return f"{kind}({v}) is tuple and {prefix}items_{index}.issuperset(map({kind}, {v}))"
    if _is_protocol_class(base):
        namespace[f"{prefix}class_{index}"] = base
        return f"{kind}({v}) is {prefix}class_{index}"
    return None


_HINTS: dict[type, dict[str, Any]] = {}


def field_hints(cls: type) -> dict[str, Any]:
    """The resolved annotations of a protocol dataclass's fields (``Annotated`` kept)."""
    hints = _HINTS.get(cls)
    if hints is None:
        resolved = typing.get_type_hints(cls, include_extras=True)
        hints = {field.name: resolved[field.name] for field in dataclasses.fields(cls)}
        _HINTS[cls] = hints
    return hints


def _compile(cls: type) -> tuple[tuple[str, _Check], ...]:
    owner = cls.__name__
    checks = tuple(
        (name, _check_for(hint, f"{owner}.{name}")) for name, hint in field_hints(cls).items()
    )
    _CHECKS[cls] = checks
    return checks


def _split(hint: Any) -> tuple[Any, tuple[object, ...]]:
    if get_origin(hint) is Annotated:
        base, *metadata = get_args(hint)
        return base, tuple(metadata)
    return hint, ()


def members_of(hint: Any) -> tuple[Any, ...]:
    """The members of a union (``A | B`` or ``Union[A, B]``); ``(hint,)`` for anything else."""
    if get_origin(hint) in (Union, types.UnionType):
        return get_args(hint)
    return (hint,)


def _is_protocol_class(value: object) -> bool:
    return isinstance(value, type) and issubclass(value, ProtocolValue)


def describe(hint: Any) -> str:
    """How an annotation reads in an error message: ``a non-empty string``, ``a ToolCall``."""
    base, metadata = _split(hint)
    members = members_of(base)
    if len(members) > 1:
        names = [describe(member) for member in members if member is not type(None)]
        text = _joined(names)
        return f"{text} or None" if type(None) in members else text
    if get_origin(base) is Literal:
        return _joined([repr(value) for value in get_args(base)])
    if base is str:
        return "a non-empty string" if NON_EMPTY in metadata else "a string"
    if base is int:
        if COUNT in metadata:
            return "a non-negative safe integer"
        if POSITIVE in metadata:
            return "a positive int"
        return "a non-negative int" if NON_NEGATIVE in metadata else "an int"
    if base is bool:
        return "a bool"
    if base is bytes:
        return "bytes"
    if base is JsonObject:
        return "a JSON object"
    if get_origin(base) is tuple:
        return f"a sequence of {_plural(get_args(base)[0])}"
    if isinstance(base, type):
        name = base.__name__
        return f"an {name}" if name[0] in "AEIOU" else f"a {name}"
    return "a value"


def _plural(hint: Any) -> str:
    names = [member.__name__ for member in members_of(hint) if isinstance(member, type)]
    return _joined(names) if names else "values"


def _joined(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


def _got(value: object) -> str:
    return f"(got {type(value).__name__})"


def _check_for(hint: Any, where: str) -> _Check:
    """The check of one field (or item) annotated ``hint``; ``where`` names it in errors."""
    base, metadata = _split(hint)
    expected = describe(hint)
    members = members_of(base)
    if len(members) > 1 and all(_is_protocol_class(member) for member in members):
        return _exact_types(frozenset(members), where, expected)
    if len(members) > 1:
        optional = type(None) in members
        rest = tuple(member for member in members if member is not type(None))
        if optional and len(rest) == 1:
            inner = _check_for(rest[0], where)
            return lambda value: value if value is None else inner(value)
        raise TypeError(f"unsupported protocol annotation {hint!r} for {where}")
    if get_origin(base) is Literal:
        options = get_args(base)
        option_types = frozenset(map(type, options))  # exact: True is not 1, no str subclasses

        def check_literal(value: object) -> object:
            if type(value) not in option_types or value not in options:
                raise TypeError(f"{where} must be {expected}")
            return value

        return check_literal
    if base is str:
        return _string(where, expected, NON_EMPTY in metadata)
    if base is bool:

        def check_bool(value: object) -> object:
            if type(value) is not bool:
                raise TypeError(f"{where} must be {expected} {_got(value)}")
            return value

        return check_bool
    if base is int:
        return _integer(where, expected, metadata)
    if base is bytes:
        return _bytes(where, expected)
    if base is JsonObject:
        return _json_object(where, expected)
    if get_origin(base) is tuple:
        return _tuple(get_args(base)[0], where, expected)
    if _is_protocol_class(base):
        return _exact_types(frozenset({base}), where, expected)
    if get_origin(base) is Callable:

        def check_callable(value: object) -> object:
            if not callable(value):
                raise TypeError(f"{where} must be a function {_got(value)}")
            return value

        return check_callable
    if isinstance(base, type) and base is not object:
        cls: type = base

        def check_instance(value: object) -> object:
            if not isinstance(value, cls):
                raise TypeError(f"{where} must be {expected} {_got(value)}")
            return value

        return check_instance
    if base is object or base is Any or isinstance(base, TypeVar):
        return _accept
    raise TypeError(f"unsupported protocol annotation {hint!r} for {where}")


def _accept(value: object) -> object:
    return value


def _string(where: str, expected: str, non_empty: bool) -> _Check:
    if non_empty:

        def check_non_empty(value: object) -> object:
            if not is_non_empty(value):
                if type(value) is str:
                    raise TypeError(f"{where} must be {expected} (got a blank string)")
                raise TypeError(f"{where} must be {expected} {_got(value)}")
            return value

        return check_non_empty

    def check_str(value: object) -> object:
        if type(value) is not str:
            raise TypeError(f"{where} must be {expected} {_got(value)}")
        return value

    return check_str


def _integer(where: str, expected: str, metadata: tuple[object, ...]) -> _Check:
    low = (
        1
        if POSITIVE in metadata
        else 0
        if (COUNT in metadata or NON_NEGATIVE in metadata)
        else None
    )
    high = MAX_SAFE_INTEGER if COUNT in metadata else None

    def check_int(value: object) -> object:
        if type(value) is not int:
            raise TypeError(f"{where} must be {expected} {_got(value)}")
        if (low is not None and value < low) or (high is not None and value > high):
            raise TypeError(f"{where} must be {expected} (got {value})")
        return value

    return check_int


def _bytes(where: str, expected: str) -> _Check:
    def check_bytes(value: object) -> object:
        if type(value) is bytes:
            return value
        if type(value) is bytearray:
            return bytes(value)  # a snapshot: the caller's buffer is not kept
        raise TypeError(f"{where} must be {expected} {_got(value)}")

    return check_bytes


def _json_object(where: str, expected: str) -> _Check:
    def check_json(value: object) -> object:
        if type(value) is JsonObject:
            return value
        if is_dict(value):  # no Mapping check (an ABC look-up) for the common case
            frozen = freeze_measured(value)  # a flat object carries its size to the loop
            if frozen is not None:
                return frozen
            source: dict[Any, Any] = value
        elif isinstance(value, Mapping):
            source = _plain_dict(value)
        else:
            raise TypeError(f"{where} must be {expected} {_got(value)}")
        try:
            return freeze_json(source, path=where)
        except JsonValueError as error:
            raise TypeError(f"{where} must be {expected}: {error}") from error

    return check_json


def _plain_dict(value: Any) -> dict[Any, Any]:
    if type(value) is dict:
        return cast("dict[Any, Any]", value)
    return dict(value)


def _tuple(item_hint: Any, where: str, expected: str) -> _Check:
    members = tuple(member for member in members_of(item_hint) if isinstance(member, type))
    allowed = frozenset(members)
    item_names = _plural(item_hint)

    def check_items(value: object) -> object:
        if is_array(value):  # tuple() of an exact tuple is that tuple: no copy
            items: tuple[object, ...] = tuple(value)
        else:
            raise TypeError(f"{where} must be {expected} {_got(value)}")
        if not allowed.issuperset(map(type, items)):
            for position, item in enumerate(items):
                if type(item) not in allowed:
                    raise TypeError(f"{where}[{position}] must be {item_names} {_got(item)}")
        return items

    return check_items


def _exact_types(allowed: frozenset[type], where: str, expected: str) -> _Check:
    def check_type(value: object) -> object:
        if type(value) not in allowed:
            raise TypeError(f"{where} must be {expected} {_got(value)}")
        return value

    return check_type


def discriminant_of(cls: type) -> tuple[str, str] | None:
    """``(field, value)`` of the class's single-valued ``Literal`` field with a default
    (``("type", "text")`` for ``TextBlock``), or ``None`` for a class without one."""
    for field in dataclasses.fields(cls):
        base, _ = _split(field_hints(cls)[field.name])
        if get_origin(base) is Literal and len(get_args(base)) == 1:
            return field.name, get_args(base)[0]
    return None
