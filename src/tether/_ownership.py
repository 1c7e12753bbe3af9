"""The process-wide registry of iterators already consumed by a model call.

A response iterator (a scripted generator, an async fixture record source) may feed exactly
one model call. Both ``ScriptedModel`` and ``FixtureProviderAdapter`` claim iterators here, so
an iterator consumed by one call can never feed another, across instances and across the two
classes. Identity is what counts: an iterator's own ``__eq__``/``__hash__`` are never called.
The registry survives ``importlib.reload`` of this module.
"""

from __future__ import annotations

import weakref
from typing import Any

__all__ = ["claim_iterator_once"]

_UNCLAIMABLE = (type(None), bool, int, float, complex, str, bytes)


class _Registry:
    __slots__ = ("_strong", "_weak")

    def __init__(self) -> None:
        self._weak: dict[int, weakref.ref[Any]] = {}
        self._strong: dict[int, object] = {}

    def claim(self, iterator: object) -> bool:
        if type(iterator) in _UNCLAIMABLE:
            return False
        key = id(iterator)
        existing = self._weak.get(key)
        if existing is not None and existing() is iterator:
            return False
        if self._strong.get(key) is iterator:
            return False
        try:
            self._weak[key] = weakref.ref(iterator, self._forget_callback(key))
        except TypeError:  # not weak-referenceable: keep it alive so its id is never reused
            self._strong[key] = iterator
        return True

    def _forget_callback(self, key: int) -> Any:
        weak = self._weak

        def forget(reference: weakref.ref[Any]) -> None:
            if weak.get(key) is reference:
                del weak[key]

        return forget


_REGISTRY: _Registry = globals().get("_REGISTRY") or _Registry()


def claim_iterator_once(iterator: object) -> bool:
    """Record ``iterator`` as consumed; ``False`` if it was claimed before or cannot be."""
    return _REGISTRY.claim(iterator)
