"""How an extension instance's functions are read: statically, as a call would see them.

``read_function(instance, name)`` looks the name up with ``inspect.getattr_static`` (an exact
``dict`` instance by key), so no ``__getattr__``, ``__getattribute__`` override, property or
other descriptor code of the caller's runs. What a normal attribute access would bind is
bound here the same way: a plain function found on the class becomes a bound method, a
``staticmethod`` its function, a ``classmethod`` a method of the class; an instance's (or a
module's) own attribute is used as it is. Any other descriptor is an accessor (``ACCESSOR``),
which the host treats as "not a function" without calling it.
"""

from __future__ import annotations

import inspect
import types
from typing import Any, Final, cast

from tether._base.exact_types import type_of

__all__ = ["ACCESSOR", "MISSING", "read_function"]

MISSING: Final = object()
"""The name is absent."""
ACCESSOR: Final = object()
"""The name is a property or another descriptor whose code would run."""


def _own_dict(value: object) -> dict[str, Any] | None:
    try:
        own = object.__getattribute__(value, "__dict__")
    except AttributeError:
        return None
    return own if type_of(own) is dict else None


def read_function(instance: object, name: str) -> object:
    """``instance.name`` as a normal call would see it, read statically: ``MISSING`` when
    absent, ``ACCESSOR`` for a property or any other descriptor whose code would run."""
    if type_of(instance) is dict:
        return cast("dict[str, object]", instance).get(name, MISSING)
    value = inspect.getattr_static(instance, name, MISSING)
    if value is MISSING:
        return MISSING
    own = _own_dict(instance)
    if own is not None and own.get(name, MISSING) is value and not isinstance(instance, type):
        return value  # an instance's (or a module's) own attribute: not bound
    kind = type_of(value)
    owner = instance if isinstance(instance, type) else type_of(instance)
    if kind is types.FunctionType:
        return value if isinstance(instance, type) else types.MethodType(value, instance)
    if kind is staticmethod:
        return value.__func__
    if kind is classmethod:
        return types.MethodType(value.__func__, owner)
    if hasattr(kind, "__get__"):
        return ACCESSOR
    return value
