"""``type_of``: the exact class of a value, typed so pyright does not narrow the value.

tether reads ``type(value)`` (never ``value.__class__``, which an object can fake) at every
boundary. Comparing ``type_of(value) is dict`` keeps ``value`` as declared, which suits code
that inspects untrusted data before it trusts any of it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

__all__ = ["real_items", "type_of"]

type_of: Callable[[object], type[Any]] = type


_list_copy: Callable[[Any], list[Any]] = cast(Any, list).copy
_tuple_items: Callable[[Any, slice], tuple[Any, ...]] = cast(Any, tuple).__getitem__


def real_items(value: list[Any] | tuple[Any, ...]) -> tuple[Any, ...]:
    """The items a list or tuple (or a subclass of one) really holds, read from its storage:
    a subclass's own ``__len__``, ``__iter__`` or ``__getitem__`` is never called, so one that
    lies about its length or raises costs nothing."""
    if isinstance(value, list):
        return tuple(_list_copy(value))
    return _tuple_items(value, slice(None))
