"""``type_of``: the exact class of a value, typed so pyright does not narrow the value; the
rules built on it: ``exactly``, ``instance_of``, and ``is_awaitable`` / ``await_steps``.

tether reads ``type(value)`` (never ``value.__class__``, which an object can fake) at every
boundary. Comparing ``type_of(value) is dict`` keeps ``value`` as declared, which suits code
that inspects untrusted data before it trusts any of it.

**The awaitable rule** (the one copy tether keeps; every module that decides whether to await
caller code uses it): a value is awaitable when ``await`` would take it. That is a coroutine,
a generator-based coroutine (``types.coroutine``), or a value whose class defines
``__await__`` in its MRO, unless the first definition found is ``None``: what
``inspect.isawaitable`` answers, except that the class is ``type(value)`` and the MRO and
class dictionaries are read through ``type`` itself, so no ``__class__``, ``__getattr__`` or
metaclass code runs. An ``__await__`` that is a property counts, as it does for ``await``;
``await_steps`` then binds it the way ``await`` does, so a property that raises raises its own
error where the value is awaited.
"""

from __future__ import annotations

import types
from collections.abc import Awaitable, Callable
from typing import Any, Final, TypeGuard, TypeVar, cast

__all__ = [
    "await_steps",
    "exactly",
    "instance_of",
    "is_array",
    "is_awaitable",
    "is_dict",
    "is_list",
    "is_list_or_tuple",
    "is_number",
    "real_items",
    "type_of",
]

T = TypeVar("T")

type_of: Callable[[object], type[Any]] = type

_mro_of: Callable[[type[Any]], tuple[type[Any], ...]] = type.__dict__["__mro__"].__get__
_namespace_of: Callable[[type[Any]], Any] = type.__dict__["__dict__"].__get__
_ITERABLE_COROUTINE: Final = 0x100
"""``inspect.CO_ITERABLE_COROUTINE`` (a test keeps them equal), without importing ``inspect``."""
_ABSENT: Final = object()


def instance_of(value: object, kind: type[T]) -> TypeGuard[T]:
    """Whether ``value`` is an instance of ``kind`` or a subclass, by its real class:
    ``isinstance`` would also believe a faked ``__class__`` (and run its code)."""
    return issubclass(type_of(value), kind)


def exactly(value: object, kind: type[T]) -> TypeGuard[T]:
    """Whether ``value``'s real class is ``kind`` itself (a subclass is not), read as
    ``type_of(value) is kind`` is; unlike that comparison it narrows ``value`` to ``kind``, so
    code that checks an exact class needs no cast or ignore to use what it checked. A
    ``TypeGuard``, not a ``TypeIs``: ``False`` does not mean "not a ``kind``" (a subclass
    instance is one), so the other branch is not narrowed. The same holds for ``is_dict``,
    ``is_list`` and ``is_array`` (the generic containers, whose items it cannot name)."""
    return type_of(value) is kind


def is_dict(value: object) -> TypeGuard[dict[Any, Any]]:
    """Whether ``value``'s real class is exactly ``dict`` (a subclass's methods are caller
    code), narrowed to a ``dict`` whose keys and values are not read yet (so ``Any``)."""
    return type_of(value) is dict


def is_list(value: object) -> TypeGuard[list[Any]]:
    """Whether ``value``'s real class is exactly ``list``, narrowed to a ``list`` whose items
    are not read yet (so ``Any``)."""
    return type_of(value) is list


def is_array(value: object) -> TypeGuard[list[Any] | tuple[Any, ...]]:
    """Whether ``value``'s real class is exactly ``list`` or ``tuple`` (a JSON array, as
    parsed or as frozen), narrowed with its items not read yet (so ``Any``)."""
    kind = type_of(value)
    return kind is list or kind is tuple


def is_list_or_tuple(value: object) -> TypeGuard[list[Any] | tuple[Any, ...]]:
    """Whether ``value``'s real class is ``list``, ``tuple`` or a subclass of one (whose own
    methods may lie: ``real_items`` reads what it really holds)."""
    return issubclass(type_of(value), list | tuple)


def is_number(value: object) -> TypeGuard[int | float]:
    """Whether ``value``'s real class is exactly ``int`` or ``float`` (a ``bool`` is not a
    number here, nor is a subclass); finiteness is the caller's to check."""
    kind = type_of(value)
    return kind is int or kind is float


def _generator_coroutine(value: object) -> bool:
    return type_of(value) is types.GeneratorType and bool(
        cast("types.GeneratorType[Any, Any, Any]", value).gi_code.co_flags & _ITERABLE_COROUTINE
    )


def _await_attribute(kind: type[Any]) -> object:
    """The first ``__await__`` of ``kind``'s MRO (``_ABSENT`` when none), read statically."""
    for klass in _mro_of(kind):
        found = _namespace_of(klass).get("__await__", _ABSENT)
        if found is not _ABSENT:
            return found
    return _ABSENT


def is_awaitable(value: object) -> TypeGuard[Awaitable[Any]]:
    """Whether ``await value`` would take ``value`` (see the module docstring)."""
    kind = type_of(value)
    if kind is types.CoroutineType:
        return True
    if _generator_coroutine(value):
        return True
    found = _await_attribute(kind)
    return found is not _ABSENT and found is not None


def await_steps(value: object) -> Any:
    """The iterator ``await value`` drives: a coroutine (or generator-based one) itself, else
    what the class's ``__await__`` returns, bound as ``await`` binds it (a function gets the
    value, a descriptor's ``__get__`` runs). Raises ``TypeError`` for a value that is not
    awaitable, and whatever the ``__await__`` (or its property) raises."""
    kind = type_of(value)
    if kind is types.CoroutineType or _generator_coroutine(value):
        return value
    found = _await_attribute(kind)
    if found is _ABSENT or found is None:
        raise TypeError(f"{kind.__name__} object can't be awaited")
    if type_of(found) is types.FunctionType:
        return cast(Callable[[object], Any], found)(value)
    bind = getattr(type_of(found), "__get__", None)
    method: Any = found if bind is None else bind(found, value, kind)
    return method()


_list_copy: Callable[[Any], list[Any]] = cast(Any, list).copy
_tuple_items: Callable[[Any, slice], tuple[Any, ...]] = cast(Any, tuple).__getitem__


def real_items(value: list[Any] | tuple[Any, ...]) -> tuple[Any, ...]:
    """The items a list or tuple (or a subclass of one) really holds, read from its storage:
    a subclass's own ``__len__``, ``__iter__`` or ``__getitem__`` is never called, so one that
    lies about its length or raises costs nothing."""
    if isinstance(value, list):
        return tuple(_list_copy(value))
    return _tuple_items(value, slice(None))
