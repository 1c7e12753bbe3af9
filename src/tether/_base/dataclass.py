"""``dataclass``: the standard decorator, cheaper to apply to tether's frozen slotted values.

Importing the usable API defines some 80 frozen slotted dataclasses, and on Python 3.11 and
3.12 ``dataclasses.dataclass`` compiles six functions from source for each of them
(``__init__``, ``__repr__``, ``__eq__``, ``__hash__``, ``__setattr__``, ``__delattr__``):
that compiling was most of the import time (issue 30). This decorator takes the same
arguments, and pyright reads it as the standard one (``dataclass_transform``). For
``frozen=True, slots=True`` with the other options at their defaults, on those versions, it
builds the class it would get from ``dataclasses.dataclass`` without compiling per class:

* ``__init__`` comes from a template compiled once per shape (keyword-only or not, the
  number of fields, which of them have a default factory, whether ``__post_init__`` is
  called), its parameter names and field-name constants renamed for the class
  (``CodeType.replace``);
  its defaults, annotations, globals (the class's module) and qualified name are those the
  standard one has, so its signature, its errors and ``typing.get_type_hints`` agree;
* ``__eq__``, ``__hash__`` and the body of ``__repr__`` are the code the standard decorator
  generates, compiled once per number of fields with placeholder names and renamed the same
  way (attribute names and repr labels), at their first call (``_lazy_method``: most classes
  are never compared or hashed); ``__setattr__`` and ``__delattr__`` are closures
  over the field names (the same ``FrozenInstanceError`` messages), and ``__repr__`` shows
  ``...`` for an object it is already showing, as the standard one does;
* the fields are real ``dataclasses.Field`` objects, ``__dataclass_params__``,
  ``__getstate__`` and ``__setstate__`` are taken from a class the standard decorator made,
  and the slotted class is recreated as the standard decorator recreates it; so
  ``dataclasses.fields``, ``replace``, ``asdict``, pickling and ``match`` work unchanged.

Anything outside that common case (other options, a dataclass base that is not frozen or
whose fields are not all keyword-only or all positional like the class's own, ``ClassVar``,
``InitVar`` or ``KW_ONLY`` annotations, ``field(init=False)`` and the other per-field
switches, a class that defines one of the generated methods, no docstring, a mutable
default, Python 3.13+ where the standard decorator compiles once per class) goes to
``dataclasses.dataclass`` itself, which also raises its own errors. ``tests/base/test_dataclass.py``
builds classes both ways and checks they agree.
"""

from __future__ import annotations

import abc
import dataclasses
import re
import sys
import types
import typing
from collections.abc import Callable
from threading import get_ident
from typing import Any, Final, TypeVar, cast, dataclass_transform

__all__ = ["dataclass"]

_T = TypeVar("_T")
_MISSING: Final[Any] = dataclasses.MISSING
_FAST: Final = sys.version_info < (3, 13)
_GENERATED: Final = frozenset(
    {
        "__init__",
        "__repr__",
        "__eq__",
        "__hash__",
        "__setattr__",
        "__delattr__",
        "__match_args__",
        "__slots__",
        "__getstate__",
        "__setstate__",
    }
)
_PSEUDO_NAMES: Final = frozenset({"ClassVar", "InitVar", "KW_ONLY"})
_IDENTIFIER: Final = re.compile(r"^(?:\s*(\w+)\s*\.)?\s*(\w+)")


@dataclass_transform(field_specifiers=(dataclasses.field, dataclasses.Field))
def dataclass(
    *,
    init: bool = True,
    repr: bool = True,
    eq: bool = True,
    order: bool = False,
    unsafe_hash: bool = False,
    frozen: bool = False,
    match_args: bool = True,
    kw_only: bool = False,
    slots: bool = False,
    weakref_slot: bool = False,
) -> Callable[[type[_T]], type[_T]]:
    """``dataclasses.dataclass`` with the same arguments and the same result; see the module
    docstring for how it builds frozen slotted classes without compiling per class."""
    plain: Callable[[type[_T]], type[_T]] = dataclasses.dataclass(
        init=init,
        repr=repr,
        eq=eq,
        order=order,
        unsafe_hash=unsafe_hash,
        frozen=frozen,
        match_args=match_args,
        kw_only=kw_only,
        slots=slots,
        weakref_slot=weakref_slot,
    )
    common = init and repr and eq and match_args and not (order or unsafe_hash or weakref_slot)
    if not (_FAST and frozen and slots and common):
        return plain

    def wrap(cls: type[_T]) -> type[_T]:
        built = _build(cls, kw_only)
        return plain(cls) if built is None else built

    return wrap


_PROTOTYPES: dict[bool, type] = {}


def _prototype(kw_only: bool) -> type:
    """A one-field class as the standard decorator makes it with these options: the source of
    ``__dataclass_params__``, ``__getstate__``, ``__setstate__`` and the field marker."""
    prototype = _PROTOTYPES.get(kw_only)
    if prototype is None:
        prototype = _assembled_prototype(kw_only)
        if prototype is None:
            namespace = {"__annotations__": {"x": "int"}, "__module__": __name__, "__doc__": "x"}
            options = {"frozen": True, "slots": True, "kw_only": kw_only}
            prototype = dataclasses.dataclass(**options)(type("_Prototype", (), namespace))
        _PROTOTYPES[kw_only] = prototype
    return prototype


def _assembled_prototype(kw_only: bool) -> type | None:
    """The prototype assembled from the objects the standard decorator puts on a class
    (``_DataclassParams``, ``_FIELD``, ``_dataclass_getstate``, ``_dataclass_setstate``), on
    the versions that have them (3.11, 3.12); ``None`` elsewhere. Decorating a class instead
    compiles its six methods: for both prototypes, a sixth of what importing the usable API
    compiled (issue 30). ``tests/base/test_dataclass.py`` checks the parts against a standard
    class."""
    kind: Any = getattr(dataclasses, "_DataclassParams", None)
    marker: object = getattr(dataclasses, "_FIELD", None)
    getstate: object = getattr(dataclasses, "_dataclass_getstate", None)
    setstate: object = getattr(dataclasses, "_dataclass_setstate", None)
    values = {
        **dict.fromkeys(("init", "repr", "eq", "frozen", "match_args", "slots"), True),
        **dict.fromkeys(("order", "unsafe_hash", "weakref_slot"), False),
        "kw_only": kw_only,
    }
    names: object = getattr(kind, "__slots__", None)
    if marker is None or getstate is None or setstate is None or type(names) is not tuple:
        return None
    if not set(cast("tuple[str, ...]", names)) <= values.keys():
        return None
    params: object = object.__new__(kind)
    for name in cast("tuple[str, ...]", names):
        object.__setattr__(params, name, values[name])
    field: Any = dataclasses.field()
    field.name, field.type, field._field_type, field.kw_only = "x", "int", marker, kw_only
    namespace = {
        "__dataclass_params__": params,
        "__dataclass_fields__": {"x": field},
        "__getstate__": getstate,
        "__setstate__": setstate,
    }
    return type("_Prototype", (), namespace)


def _params_like(prototype: type) -> object:
    """A copy of the prototype's ``__dataclass_params__`` (each class has its own, as the
    standard decorator gives it): its slots copied one by one, cheaper than ``copy.copy``."""
    params: Any = getattr(prototype, "__dataclass_params__")  # noqa: B009 - set by the decorator
    kind: Any = params.__class__
    made: object = object.__new__(kind)
    names: tuple[str, ...] = kind.__slots__
    for name in names:
        object.__setattr__(made, name, getattr(params, name))
    return made


def _is_pseudo_field(annotation: object, module: dict[str, Any]) -> bool:
    """True when the standard decorator could read ``annotation`` as ``ClassVar``,
    ``InitVar`` or ``KW_ONLY`` (a superset of its test: such a class takes the plain path)."""
    if isinstance(annotation, str):
        match = _IDENTIFIER.match(annotation)
        if match is None:
            return False
        qualifier, name = match.groups()
        if name in _PSEUDO_NAMES:
            return True
        namespace = module
        if qualifier is not None:
            named = module.get(qualifier)
            if named is not typing and named is not dataclasses:
                return False
            namespace = vars(named)
        annotation = namespace.get(name)
    return (
        annotation is typing.ClassVar
        or typing.get_origin(annotation) is typing.ClassVar
        or annotation is dataclasses.InitVar
        or isinstance(annotation, dataclasses.InitVar)
        or annotation is dataclasses.KW_ONLY
    )


def _plain_field(value: dataclasses.Field[Any]) -> bool:
    """A ``field()`` with only ``default``, ``default_factory`` and ``metadata`` set."""
    return (
        value.init
        and value.repr
        and value.hash is None
        and value.compare
        and value.kw_only is _MISSING
        and getattr(value, "_field_type", None) is None
    )


def _inherited_slots(cls: type) -> set[str] | None:
    slots: set[str] = set()
    for base in cls.__mro__[1:-1]:
        declared = base.__dict__.get("__slots__")
        if declared is None:
            continue
        if isinstance(declared, str):
            slots.add(declared)
        elif hasattr(declared, "__next__"):
            return None
        else:
            slots.update(declared)
    return slots


def _build(cls: type[_T], kw_only: bool) -> type[_T] | None:
    """The frozen slotted dataclass of ``cls``, or ``None`` when it is outside the common case
    (then nothing was changed and the standard decorator takes it)."""
    own = cls.__dict__
    module = sys.modules.get(cls.__module__)
    if (
        module is None
        or not getattr(cls, "__doc__", None)
        or not _GENERATED.isdisjoint(own.keys() - {"__repr__"})
    ):
        return None
    prototype = _prototype(kw_only)
    marker = next(iter(prototype.__dataclass_fields__.values()))._field_type  # type: ignore[attr-defined]
    fields: dict[str, dataclasses.Field[Any]] = {}
    for base in cls.__mro__[-1:0:-1]:  # the standard order: the fields of the bases first
        inherited_fields = getattr(base, "__dataclass_fields__", None)
        if inherited_fields is None:
            continue
        if not base.__dataclass_params__.frozen:  # type: ignore[attr-defined]
            return None
        for field in cast("dict[str, dataclasses.Field[Any]]", inherited_fields).values():
            if getattr(field, "_field_type", None) is not marker or field.kw_only != kw_only:
                return None
            fields[field.name] = field
    inherited = _inherited_slots(cls)
    if inherited is None:
        return None
    namespace = vars(module)
    annotations: dict[str, Any] = own.get("__annotations__", {})
    if any(isinstance(v, dataclasses.Field) and k not in annotations for k, v in own.items()):
        return None
    found: list[tuple[str, Any, dataclasses.Field[Any]]] = []
    for name, annotation in annotations.items():
        if name == "self" or name.startswith("__tether") or _is_pseudo_field(annotation, namespace):
            return None
        value: Any = getattr(cls, name, _MISSING)
        if value is not _MISSING and name not in own:
            return None  # a default inherited from a base: left to the standard decorator
        if isinstance(value, dataclasses.Field):
            field: dataclasses.Field[Any] = cast("dataclasses.Field[Any]", value)
            if not _plain_field(field):
                return None
        elif isinstance(value, types.MemberDescriptorType):
            return None
        else:
            field = dataclasses.field(default=value)
        if field.default.__class__.__hash__ is None:
            return None  # a mutable default: the standard decorator raises
        found.append((name, annotation, field))
    if not kw_only:
        order = {**fields, **{name: field for name, _, field in found}}
        seen_default = False
        for field in order.values():
            has_default = field.default is not _MISSING or field.default_factory is not _MISSING
            if seen_default and not has_default:
                return None  # a required field after a default: the standard decorator raises
            seen_default = seen_default or has_default

    cls.__dataclass_params__ = _params_like(prototype)  # type: ignore[attr-defined]
    for name, annotation, field in found:
        field.name = name
        field.type = annotation
        field._field_type = marker
        field.kw_only = kw_only
        fields[name] = field
        if isinstance(own.get(name), dataclasses.Field):
            if field.default is _MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, field.default)
    cls.__dataclass_fields__ = fields  # type: ignore[attr-defined]
    names = tuple(fields)
    qualname = cls.__qualname__
    methods: list[Callable[..., Any]] = [
        _init(cls, tuple(fields.values()), kw_only, namespace),
        *(() if "__repr__" in own else (_repr(names),)),  # the body's own, as the standard keeps
        _lazy_method("__eq__", names),
        *_frozen(cls, names),
    ]
    for method in methods:
        method.__module__ = cls.__module__
        method.__qualname__ = f"{qualname}.{method.__name__}"
        setattr(cls, method.__name__, method)
    hash_method = _lazy_method("__hash__", names)
    hash_method.__module__ = cls.__module__
    hash_method.__qualname__ = f"{qualname}.__hash__"
    cls.__hash__ = hash_method
    cls.__match_args__ = () if kw_only else names  # type: ignore[attr-defined]

    body = dict(own)
    body["__slots__"] = tuple(name for name in names if name not in inherited)
    for name in names:
        body.pop(name, None)
    body.pop("__dict__", None)
    body.pop("__weakref__", None)
    slotted = type(cls)(cls.__name__, cls.__bases__, body)
    slotted.__qualname__ = qualname
    slotted.__getstate__ = prototype.__dict__["__getstate__"]
    slotted.__setstate__ = prototype.__dict__["__setstate__"]
    abc.update_abstractmethods(slotted)
    return slotted


_INIT_CODE: dict[tuple[bool, tuple[bool, ...], bool], types.CodeType] = {}
_FACTORY_SENTINEL: Final[Any] = getattr(dataclasses, "_HAS_DEFAULT_FACTORY", object())


def _placeholder(index: int) -> str:
    return f"__tether_p{index}__"


def _init_template(kw_only: bool, factories: tuple[bool, ...], post_init: bool) -> types.CodeType:
    """The code of an ``__init__`` for these fields (true where a field has a default
    factory), compiled once per shape; its parameters and field names are placeholders
    (``_placeholder``) renamed per class. Which parameters have defaults is not part of the
    code (the function's ``__kwdefaults__`` or ``__defaults__`` say), so one template serves
    every class with as many fields and factories in the same places."""
    key = (kw_only, factories, post_init)
    code = _INIT_CODE.get(key)
    if code is not None:
        return code
    parameters = ["self"]
    if kw_only and factories:
        parameters.append("*")
    body: list[str] = []
    for index, factory in enumerate(factories):
        name = _placeholder(index)
        parameters.append(name)
        value = (
            f"__tether_factory_{index}__() if {name} is __tether_sentinel__ else {name}"
            if factory
            else name
        )
        body.append(f"  __tether_setattr__(self,{name!r},{value})")
    if post_init:
        body.append("  self.__post_init__()")
    free = ["__tether_setattr__", "__tether_sentinel__"]
    free += [f"__tether_factory_{index}__" for index, factory in enumerate(factories) if factory]
    source = (
        f"def __create_fn__({', '.join(free)}):\n"
        f" def __init__({', '.join(parameters)}):\n"
        + ("\n".join(body) or "  pass")
        + "\n return __init__\n"
    )
    namespace: dict[str, Any] = {}
    exec(compile(source, "<string>", "exec"), {}, namespace)  # generated above, per shape
    code = namespace["__create_fn__"](*free).__code__
    _INIT_CODE[key] = code
    return code


def _init(
    cls: type,
    fields: tuple[dataclasses.Field[Any], ...],
    kw_only: bool,
    namespace: dict[str, Any],
) -> Callable[..., None]:
    kinds = tuple(
        "f" if field.default_factory is not _MISSING else "r" if field.default is _MISSING else "d"
        for field in fields
    )
    factories = tuple(kind == "f" for kind in kinds)
    template = _init_template(kw_only, factories, hasattr(cls, "__post_init__"))
    renamed = {_placeholder(index): field.name for index, field in enumerate(fields)}
    code = template.replace(
        co_varnames=tuple(renamed.get(name, name) for name in template.co_varnames),
        co_consts=tuple(
            renamed.get(value, value) if type(value) is str else value
            for value in template.co_consts
        ),
    )
    cells: dict[str, Any] = {
        "__tether_setattr__": object.__setattr__,
        "__tether_sentinel__": _FACTORY_SENTINEL,
    }
    for index, field in enumerate(fields):
        if field.default_factory is not _MISSING:
            cells[f"__tether_factory_{index}__"] = field.default_factory
    closure = tuple(types.CellType(cells[name]) for name in code.co_freevars)
    function = types.FunctionType(code, namespace, "__init__", None, closure)
    defaults = {
        field.name: _FACTORY_SENTINEL if kind == "f" else field.default
        for field, kind in zip(fields, kinds, strict=True)
        if kind != "r"
    }
    if kw_only:
        function.__kwdefaults__ = defaults or None
    elif defaults:
        function.__defaults__ = tuple(defaults.values())
    annotations: dict[str, Any] = {field.name: field.type for field in fields}
    annotations["return"] = None
    function.__annotations__ = annotations
    return function


_METHOD_CODE: dict[tuple[str, int], types.CodeType] = {}
_PLACEHOLDER: Final = re.compile(r"__tether_p([0-9]+)__")


def _tuple_of(owner: str, count: int) -> str:
    """``(owner.f0,owner.f1,)`` over placeholders, ``()`` for no fields (the standard
    decorator's tuples)."""
    if not count:
        return "()"
    return "(" + ",".join(f"{owner}.{_placeholder(index)}" for index in range(count)) + ",)"


def _method_code(kind: str, names: tuple[str, ...]) -> types.CodeType:
    """The code of ``__eq__``, ``__hash__`` or the body of ``__repr__`` for these fields: the
    code the standard decorator generates, compiled once per kind and number of fields with
    placeholder names, the attribute names (``co_names``) and repr labels renamed here."""
    key = (kind, len(names))
    template = _METHOD_CODE.get(key)
    if template is None:
        count = len(names)
        if kind == "__eq__":
            source = (
                "def __eq__(self, other):\n"
                " if other.__class__ is self.__class__:\n"
                f"  return {_tuple_of('self', count)}=={_tuple_of('other', count)}\n"
                " return NotImplemented\n"
            )
        elif kind == "__hash__":
            source = f"def __hash__(self):\n return hash({_tuple_of('self', count)})\n"
        else:
            labels = [_placeholder(index) for index in range(count)]
            shown = ", ".join(f"{label}={{self.{label}!r}}" for label in labels)
            source = f'def __repr__(self):\n return self.__class__.__qualname__ + f"({shown})"\n'
        compiled: dict[str, Any] = {}
        exec(compile(source, "<string>", "exec"), {}, compiled)  # generated above, per shape
        template = cast("types.FunctionType", compiled[kind]).__code__
        _METHOD_CODE[key] = template

    def rename(text: str) -> str:
        return _PLACEHOLDER.sub(lambda match: names[int(match.group(1))], text)

    return template.replace(
        co_names=tuple(rename(name) for name in template.co_names),
        co_consts=tuple(
            rename(value) if type(value) is str else value for value in template.co_consts
        ),
    )


_LAZY: list[list[Any]] = []
"""By key: ``[function, kind, names]`` for each ``__eq__`` and ``__hash__`` (``names`` is
``None`` once the function has its compiled code)."""


def _compiled(key: int) -> Callable[..., Any]:
    """The lazy method ``key``, given its compiled code if it had not been called yet (it
    then runs that code, through every reference to it, from now on)."""
    entry = _LAZY[key]
    names: tuple[str, ...] | None = entry[2]
    if names is not None:
        entry[0].__code__ = _method_code(entry[1], names)
        entry[2] = None
    function: Callable[..., Any] = entry[0]
    return function


def _uncompiled_eq(self: object, other: object) -> object:
    return _compiled(-1)(self, other)  # -1: the function's key, set by _lazy_method


def _uncompiled_hash(self: object) -> int:
    return _compiled(-1)(self)  # -1: the function's key, set by _lazy_method


_STUBS: Final = {
    "__eq__": _uncompiled_eq.__code__.replace(co_name="__eq__"),
    "__hash__": _uncompiled_hash.__code__.replace(co_name="__hash__"),
}


def _lazy_method(kind: str, names: tuple[str, ...]) -> Callable[..., Any]:
    """``__eq__`` or ``__hash__`` for these fields, compiled by its first call (most classes
    are never compared or hashed; compiling each one made importing dearer). Until then its
    code is a stub that knows the function by its key (a constant of its own code object),
    never by the instance's class: a subclass's ``super().__eq__`` reaches this one."""
    key = len(_LAZY)
    stub = _STUBS[kind]
    code = stub.replace(
        co_consts=tuple(
            key if type(value) is int and value == -1 else value for value in stub.co_consts
        )
    )
    function = types.FunctionType(code, globals(), kind)
    _LAZY.append([function, kind, names])
    return function


def _repr(names: tuple[str, ...]) -> Callable[[object], str]:
    """``__repr__`` as the standard decorator makes it: the generated body (compiled at the
    first repr) behind a guard that shows ``...`` for an object already being shown on this
    thread."""
    running: set[tuple[int, int]] = set()
    body: Callable[[object], str] | None = None

    def __repr__(self: object) -> str:
        nonlocal body
        key = (id(self), get_ident())
        if key in running:
            return "..."
        running.add(key)
        try:
            if body is None:
                body = types.FunctionType(_method_code("__repr__", names), globals())
            return body(self)
        finally:
            running.discard(key)

    return __repr__


def _frozen(cls: type, names: tuple[str, ...]) -> tuple[Callable[..., None], Callable[..., None]]:
    """``__setattr__`` and ``__delattr__`` as the standard decorator makes them: closed over
    the class it was given (not the slotted class it returns)."""
    error = dataclasses.FrozenInstanceError

    def __setattr__(self: object, name: str, value: object) -> None:
        if type(self) is cls or name in names:
            raise error(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    def __delattr__(self: object, name: str) -> None:
        if type(self) is cls or name in names:
            raise error(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)

    return __setattr__, __delattr__
