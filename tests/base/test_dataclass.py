"""``tether._base.dataclass.dataclass`` (issue 30) against ``dataclasses.dataclass``, the plain
path.

The same class body is decorated both ways and the two classes must agree: their fields,
parameters, signature, slots and ``__match_args__``; and their instances' repr, equality,
hash, pickling, ``replace``, ``asdict``, the frozen errors and the constructor's errors. Every
tether class the fast path built is also rebuilt by the standard decorator and compared.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pickle
import pkgutil
import sys
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tether
from tether._base import dataclass as _dataclass
from tether._base.dataclass import dataclass

NAMES = ("alpha", "beta", "gamma", "delta", "epsilon")
VALUES = st.one_of(st.none(), st.integers(-3, 3), st.text(max_size=3), st.tuples(st.integers()))
KINDS = st.sampled_from(["required", "default", "factory", "field-default", "metadata"])
_counter = iter(range(1_000_000))


def _post_init(self: object) -> None:
    """Does nothing: only its being called is compared (by the generated ``__init__``)."""


def body(spec: dict[str, Any]) -> dict[str, Any]:
    """A fresh class namespace for ``spec`` (decorated once per namespace)."""
    namespace: dict[str, Any] = {
        "__module__": __name__,
        "__annotations__": {name: annotation for name, annotation, _, _ in spec["fields"]},
    }
    if spec["doc"]:
        namespace["__doc__"] = "A generated class."
    if spec["post_init"]:
        namespace["__post_init__"] = _post_init
    for name, _, kind, value in spec["fields"]:
        if kind == "default":
            namespace[name] = value
        elif kind == "factory":
            namespace[name] = dataclasses.field(default_factory=lambda value=value: (value,))
        elif kind == "field-default":
            namespace[name] = dataclasses.field(default=value)
        elif kind == "metadata":
            namespace[name] = dataclasses.field(default=value, metadata={"tether.v2": True})
    return namespace


@st.composite
def specs(draw: st.DrawFn) -> dict[str, Any]:
    names = draw(st.lists(st.sampled_from(NAMES), unique=True, max_size=5))
    fields = [
        (
            name,
            draw(st.sampled_from(["int", "str | None", "tuple[int, ...]"])),
            draw(KINDS),
            draw(VALUES),
        )
        for name in names
    ]
    kw_only = draw(st.booleans())
    base = None
    if draw(st.booleans()):
        base_names = draw(st.lists(st.sampled_from(NAMES), unique=True, max_size=3))
        base = {
            "name": f"Base{next(_counter)}",
            "fields": [(name, "int", draw(KINDS), draw(VALUES)) for name in base_names],
            "kw_only": draw(st.sampled_from([kw_only, not kw_only])),
            "doc": True,
            "post_init": draw(st.booleans()),
            "base": None,
        }
    return {
        "name": f"Generated{next(_counter)}",
        "fields": fields,
        "kw_only": kw_only,
        "doc": draw(st.booleans()),
        "post_init": draw(st.booleans()),
        "base": base,
    }


def build(
    decorator: Callable[..., Callable[[type], type]], spec: dict[str, Any]
) -> type | BaseException:
    try:
        bases: tuple[type, ...] = ()
        if spec["base"] is not None:
            base = build(decorator, spec["base"])
            if isinstance(base, BaseException):
                return base
            bases = (base,)
        return decorator(frozen=True, slots=True, kw_only=spec["kw_only"])(
            type(spec["name"], bases, body(spec))
        )
    except Exception as error:  # the plain path raises: the fast path must raise the same
        return error


def outcome(action: Callable[[Any], object], instance: object) -> object:
    try:
        return ("value", repr(action(instance)))
    except Exception as error:
        return ("error", type(error), str(error))


def describe_class(cls: Any) -> dict[str, object]:
    fields = [
        (
            f.name,
            f.type,
            f.default,
            f.default_factory is dataclasses.MISSING,
            f.init,
            f.repr,
            f.hash,
            f.compare,
            dict(f.metadata),
            f.kw_only,
            getattr(f, "_field_type"),  # noqa: B009 - a private attribute of Field
        )
        for f in dataclasses.fields(cls)
    ]
    return {
        "fields": fields,
        "params": repr(cls.__dataclass_params__),
        "match_args": cls.__match_args__,
        "slots": cls.__dict__.get("__slots__"),
        "signature": str(inspect.signature(cls)),
        "init_annotations": cls.__init__.__annotations__,
        "keys": sorted(name for name in cls.__dict__),
        "doc": cls.__doc__,
        "names": (cls.__name__, cls.__qualname__, cls.__module__),
        "methods": {
            name: (getattr(cls, name).__qualname__, getattr(cls, name).__module__)
            for name in ("__init__", "__repr__", "__eq__", "__hash__", "__setattr__")
        },
        "state": (cls.__getstate__, cls.__setstate__),
        "mro": [base.__name__ for base in cls.__mro__],
    }


@settings(max_examples=150, deadline=None)
@given(spec=specs(), values=st.lists(VALUES, min_size=5, max_size=5), keep=st.booleans())
def test_the_fast_path_builds_what_the_standard_decorator_builds(
    spec: dict[str, Any], values: list[object], keep: bool
) -> None:
    plain = build(dataclasses.dataclass, spec)
    fast = build(dataclass, spec)
    if isinstance(plain, BaseException):
        assert isinstance(fast, BaseException)
        assert (type(fast), str(fast)) == (type(plain), str(plain))
        return
    assert isinstance(fast, type)
    assert describe_class(fast) == describe_class(plain)
    base_fields: list[tuple[str, str, str, object]] = (
        [] if spec["base"] is None else spec["base"]["fields"]
    )
    declared = [*base_fields, *spec["fields"]]
    arguments = {
        name: value
        for (name, _, kind, _), value in zip(declared, values * 2, strict=False)
        if kind == "required" or keep
    }
    made: list[tuple[object, object]] = []
    for cls in (plain, fast):
        instance = cls(**arguments)
        other = cls(**arguments)
        made.append((instance, other))
    (plain_one, plain_two), (fast_one, fast_two) = made
    assert repr(fast_one).replace(fast.__name__, "C") == repr(plain_one).replace(
        plain.__name__, "C"
    )
    assert (fast_one == fast_two, fast_one != fast_two) == (
        plain_one == plain_two,
        plain_one != plain_two,
    )
    assert outcome(hash, fast_one) == outcome(hash, plain_one)
    assert (fast_one == plain_one) is False
    assert dataclasses.asdict(fast_one) == dataclasses.asdict(plain_one)  # pyright: ignore[reportArgumentType]
    assert dataclasses.replace(fast_one) == fast_one  # pyright: ignore[reportArgumentType]
    actions: list[Callable[[Any], object]] = [
        lambda instance: setattr(instance, "alpha", 1),
        lambda instance: delattr(instance, "alpha"),
        lambda instance: setattr(instance, "other", 1),
        lambda instance: delattr(instance, "other"),
        lambda instance: type(instance)(**arguments, unexpected=1),
        lambda instance: type(instance)(),
        lambda instance: type(instance)(1, 2),
    ]
    for action in actions:
        assert outcome(action, fast_one) == outcome(action, plain_one)


def test_a_recursive_repr_shows_an_ellipsis_on_both_paths() -> None:
    spec: dict[str, Any] = {
        "name": "Holder",
        "fields": [("alpha", "object", "required", None)],
        "kw_only": True,
        "doc": True,
        "post_init": False,
        "base": None,
    }
    for decorator in (dataclasses.dataclass, dataclass):
        cls = build(decorator, spec)
        assert isinstance(cls, type)
        items: list[object] = []
        holder = cls(alpha=items)
        items.append(holder)
        assert repr(holder) == "Holder(alpha=[...])"


def test_a_subclass_reaches_the_compared_and_hashed_fields_through_super() -> None:
    """``__eq__`` and ``__hash__`` are compiled by their first call: reached through a
    subclass's ``super()`` before that, they still run their own class's code."""
    spec: dict[str, Any] = {
        "name": "Point",
        "fields": [("alpha", "int", "required", None), ("beta", "int", "required", None)],
        "kw_only": True,
        "doc": True,
        "post_init": False,
        "base": None,
    }
    outcomes: list[object] = []
    for decorator in (dataclasses.dataclass, dataclass):
        base: Any = build(decorator, spec)

        class Sub(base):
            def __eq__(self, other: object) -> bool:
                parent: Any = super()
                return bool(parent.__eq__(other))

            def __hash__(self) -> int:
                parent: Any = super()
                return int(parent.__hash__()) + 1

        one, two = Sub(alpha=1, beta=2), Sub(alpha=1, beta=3)
        outcomes.append((one == Sub(alpha=1, beta=2), one == two, hash(one), hash(two)))
    assert outcomes[0] == outcomes[1]


def test_instances_pickle_and_compare_as_on_the_plain_path() -> None:
    message = tether.UserMessage(id="user-001", content="hi")
    assert pickle.loads(pickle.dumps(message)) == message
    assert hash(message) == hash(tether.UserMessage(id="user-001", content="hi"))
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'content'"):
        message.content = "other"  # pyright: ignore[reportAttributeAccessIssue]


def fast_classes() -> list[type]:
    for info in pkgutil.walk_packages(tether.__path__, "tether."):
        if info.name.startswith(("tether.cli", "tether.evals.ray")):
            continue
        try:
            importlib.import_module(info.name)
        except ImportError:
            continue
    found: dict[int, type] = {}
    for name, module in list(sys.modules.items()):
        if not name.startswith("tether."):
            continue
        for value in vars(module).values():
            setter = getattr(value, "__setattr__", None)
            code = getattr(setter, "__code__", None)
            if (
                isinstance(value, type)
                and code is not None
                and code.co_filename == _dataclass.__file__
            ):
                found[id(value)] = value
    return list(found.values())


PRIVATE: frozenset[str] = _dataclass._GENERATED  # pyright: ignore[reportPrivateUsage]


def rebuilt(cls: Any) -> type:
    """``cls`` decorated again from its body by ``dataclasses.dataclass``."""
    generated = {"__dataclass_params__", "__dataclass_fields__", *PRIVATE}
    own: dict[str, Any] = {**cls.__dict__}
    body_repr = own.get("__repr__")
    if getattr(getattr(body_repr, "__code__", None), "co_filename", None) == (
        sys.modules[cls.__module__].__file__
    ):
        generated.discard("__repr__")  # the class's own, kept by both decorators
    fields = [f for f in dataclasses.fields(cls) if f.name in own.get("__annotations__", {})]
    namespace = {
        key: value
        for key, value in own.items()
        if key not in generated and key not in {f.name for f in fields}
    }
    for f in fields:
        if f.default_factory is not dataclasses.MISSING or f.metadata:
            namespace[f.name] = dataclasses.field(
                default=f.default, default_factory=f.default_factory, metadata=f.metadata
            )
        elif f.default is not dataclasses.MISSING:
            namespace[f.name] = f.default
    kw_only = all(f.kw_only for f in dataclasses.fields(cls)) and bool(dataclasses.fields(cls))
    plain = type(cls)(cls.__name__, cls.__bases__, namespace)
    plain.__qualname__ = cls.__qualname__
    return dataclasses.dataclass(frozen=True, slots=True, kw_only=kw_only)(plain)


@pytest.mark.skipif(not _dataclass._FAST, reason="the standard decorator is used as it is")  # pyright: ignore[reportPrivateUsage]
def test_every_class_the_fast_path_built_is_what_the_standard_decorator_builds() -> None:
    classes = fast_classes()
    assert len(classes) > 60
    for cls in classes:
        assert describe_class(cls) == describe_class(rebuilt(cls)), cls
