"""Process-wide identity registries: consumed iterators and trusted error instances.

A response iterator (a scripted generator, an async fixture record source) may feed exactly
one model call. Both ``ScriptedModel`` and ``FixtureProviderAdapter`` claim iterators here, so
an iterator consumed by one call can never feed another, across instances and across the two
classes. The same identity registry records which error instances tether itself created, so
a look-alike (or a replayed instance built without the constructor) is never trusted.

Identity is what counts: an object's own ``__eq__``/``__hash__`` are never called. The
registries survive ``importlib.reload`` of this module.

How long a claim lasts depends on the object. One that can be weakly referenced stays claimed
for its whole life, and the registry does not keep it alive. One that cannot (``__slots__``
without ``__weakref__``) has to be held strongly while it is registered, or its id could be
reused by a new object; so its consumer calls ``release_claim`` once it is done with it (the
call ended and no abandoned step of it still runs), and from then on the object may be
claimed again. Without the release, every such iterator, with all it refers to, would stay
alive for good.
"""

from __future__ import annotations

import weakref
from typing import Any

__all__ = ["IdentitySet", "claim_iterator_once", "release_claim", "trusted_errors"]

_UNCLAIMABLE = (type(None), bool, int, float, complex, str, bytes)


class _Entry(weakref.ref[Any]):
    """A member's weak reference, carrying the member's key (its ``id``), so one callback
    per set can forget any dead member."""

    __slots__ = ("key",)
    key: int


class IdentitySet:
    """A set of live objects compared by identity. Entries vanish when their object dies;
    objects that cannot be weakly referenced are kept alive until ``discard``-ed, so their ids
    are never reused while they are members."""

    __slots__ = ("_forget", "_strong", "_weak")

    def __init__(self) -> None:
        weak: dict[int, _Entry] = {}
        self._weak = weak
        self._strong: dict[int, object] = {}

        def forget(entry: _Entry) -> None:
            """A member died: drop its entry (unless its key already names a newer one)."""
            if weak.get(entry.key) is entry:
                del weak[entry.key]

        # One callback for every entry, not a closure made per member: a claim is made per
        # scripted turn (bench_loop, generator factories). It refers to the dict, not to the
        # set, so no cycle ties them.
        self._forget = forget

    def __contains__(self, item: object) -> bool:
        key = id(item)
        entry = self._weak.get(key)
        if entry is not None and entry() is item:
            return True
        return self._strong.get(key) is item

    def add(self, item: object) -> bool:
        """Add ``item``; ``False`` if it was already present."""
        key = id(item)
        entry = self._weak.get(key)
        if entry is not None and entry() is item:
            return False
        if self._strong.get(key) is item:
            return False
        try:
            entry = _Entry(item, self._forget)
        except TypeError:
            self._strong[key] = item
            return True
        entry.key = key
        self._weak[key] = entry
        return True

    def discard(self, item: object) -> None:
        """Remove ``item`` if it is a member (by identity); otherwise do nothing."""
        key = id(item)
        if self._strong.get(key) is item:
            del self._strong[key]
            return
        entry = self._weak.get(key)
        if entry is not None and entry() is item:
            del self._weak[key]


_CLAIMED: IdentitySet = globals().get("_CLAIMED") or IdentitySet()
_TRUSTED_ERRORS: IdentitySet = globals().get("_TRUSTED_ERRORS") or IdentitySet()


def claim_iterator_once(iterator: object) -> bool:
    """Record ``iterator`` as consumed; ``False`` if it was claimed before or cannot be."""
    if type(iterator) in _UNCLAIMABLE:
        return False
    return _CLAIMED.add(iterator)


def release_claim(iterator: object) -> None:
    """The consumer is done with ``iterator``: forget its claim if the registry holds it
    strongly (it cannot be weakly referenced; see the module docstring). A weakly held claim
    lasts as long as its object and is kept."""
    strong = _CLAIMED._strong  # pyright: ignore[reportPrivateUsage] - the module reads its own registry's strong set
    key = id(iterator)
    if strong.get(key) is iterator:
        del strong[key]


def trusted_errors() -> IdentitySet:
    """The errors tether created itself (``FixtureProviderError``, ``NonRecoverableToolError``)."""
    return _TRUSTED_ERRORS
