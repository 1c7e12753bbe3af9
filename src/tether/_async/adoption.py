"""Adopting what an awaitable resolves to, through nested awaitables: ``adopt_nested``.

Caller code (an extension callback, a runtime factory, a compaction summarizer) may return a
plain value or an awaitable, whose result may be an awaitable again. The workshop's promises
adopt such a chain level by level; tether does the same, boundedly: at most ``max_depth``
levels are awaited. Each layer keeps its own words for the two ways a chain goes wrong (it
nests too deep; it comes back to an awaitable it already gave, a cycle) and its own way of
awaiting one level (racing an abort signal, shielding a future whose value may come late),
and passes them here; the walk itself is this one loop.

The awaitables met are held strongly while the chain is walked, so their identities stay
unique while they are compared (only when cycles are checked).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from tether._base.exact_types import is_awaitable

__all__ = ["adopt_nested"]


async def _await(value: Awaitable[Any], level: int) -> object:
    return await value


async def adopt_nested(
    value: object,
    *,
    max_depth: int,
    too_deep: Callable[[Awaitable[Any]], BaseException],
    cycle: Callable[[], BaseException] | None = None,
    await_level: Callable[[Awaitable[Any], int], Awaitable[object]] = _await,
) -> object:
    """``value`` once no longer awaitable: each awaitable is given to ``await_level`` with its
    level (1 for ``value`` itself), which awaits it (plain ``await`` by default).

    An awaitable still there after ``max_depth`` levels is given to ``too_deep`` (never
    awaited: ``too_deep`` disposes of it as its layer does) and the error it returns is
    raised. With ``cycle``, an awaitable seen before at an earlier level raises the error
    ``cycle`` returns (the depth is checked first); without it, a cycle ends at the bound.
    """
    seen: list[object] = []
    depth = 0
    while is_awaitable(value):
        if depth >= max_depth:
            raise too_deep(value)
        if cycle is not None:
            if any(earlier is value for earlier in seen):
                raise cycle()
            seen.append(value)
        depth += 1
        value = await await_level(value, depth)
    return value
