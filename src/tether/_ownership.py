"""Process-wide identity registries: consumed iterators and trusted error instances.

A response iterator (a scripted generator, an async fixture record source) may feed exactly
one model call. Both ``ScriptedModel`` and ``FixtureProviderAdapter`` claim iterators here, so
an iterator consumed by one call can never feed another, across instances and across the two
classes. The same identity registry records which error instances tether itself created, so
a look-alike (or a replayed instance built without the constructor) is never trusted.

Identity is what counts: an object's own ``__eq__``/``__hash__`` are never called. The
registries survive ``importlib.reload`` of this module.
"""

from __future__ import annotations

import weakref
from typing import Any

__all__ = ["IdentitySet", "claim_iterator_once", "trusted_errors"]

_UNCLAIMABLE = (type(None), bool, int, float, complex, str, bytes)


class IdentitySet:
    """A set of live objects compared by identity. Entries vanish when their object dies;
    objects that cannot be weakly referenced are kept alive, so their ids are never reused."""

    __slots__ = ("_strong", "_weak")

    def __init__(self) -> None:
        self._weak: dict[int, weakref.ref[Any]] = {}
        self._strong: dict[int, object] = {}

    def __contains__(self, item: object) -> bool:
        key = id(item)
        reference = self._weak.get(key)
        if reference is not None and reference() is item:
            return True
        return self._strong.get(key) is item

    def add(self, item: object) -> bool:
        """Add ``item``; ``False`` if it was already present."""
        if item in self:
            return False
        key = id(item)
        try:
            self._weak[key] = weakref.ref(item, self._forget(key))
        except TypeError:
            self._strong[key] = item
        return True

    def _forget(self, key: int) -> Any:
        weak = self._weak

        def forget(reference: weakref.ref[Any]) -> None:
            if weak.get(key) is reference:
                del weak[key]

        return forget


_CLAIMED: IdentitySet = globals().get("_CLAIMED") or IdentitySet()
_TRUSTED_ERRORS: IdentitySet = globals().get("_TRUSTED_ERRORS") or IdentitySet()


def claim_iterator_once(iterator: object) -> bool:
    """Record ``iterator`` as consumed; ``False`` if it was claimed before or cannot be."""
    if type(iterator) in _UNCLAIMABLE:
        return False
    return _CLAIMED.add(iterator)


def trusted_errors() -> IdentitySet:
    """The errors tether created itself (``FixtureProviderError``, ``NonRecoverableToolError``)."""
    return _TRUSTED_ERRORS
