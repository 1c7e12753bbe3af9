"""An opt-in knob for programs that keep thousands of runs in flight at once.

A finished run is freed by reference counting alone (no run leaves cyclic garbage), yet the
wall time of many concurrent runs grows faster than their number: CPython's cycle collector
makes a full pass every ~70,000 objects the heap grows by (default thresholds ``(700, 10,
10)``) and each pass walks every live object, so while the runs pile up the passes' total work
grows with the square of the objects in flight. ``benchmarks/bench_scale.py`` measured 10,000
concurrent 8-step runs at ~14x the wall time of 1,000 with the default thresholds (11 full
passes, a third of the wall), and with no full pass under ``relaxed_cycle_collector()``.

tether never changes the collector's settings by itself: importing it or running a run leaves
``gc.get_threshold()`` as it was. This module is the documented way for a program to ask.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Generator
from typing import Final

__all__ = ["relaxed_cycle_collector"]

DEFAULT_FACTOR: Final = 100
"""How many times the first-generation threshold is raised by default: every collection comes a
hundredth as often, a full pass every ~7 million objects the heap grows by instead of ~70,000
(10,000 runs in flight hold ~1 million: a factor of 10 still left one full pass over them)."""


@contextlib.contextmanager
def relaxed_cycle_collector(factor: int = DEFAULT_FACTOR) -> Generator[tuple[int, int, int]]:
    """While active, run CPython's cycle collector ``factor`` times less often.

    Use it around a batch of many concurrent runs (``with relaxed_cycle_collector():
    asyncio.run(main())``, or inside a coroutine around the ``asyncio.gather`` of the runs).
    On entry the first-generation threshold is multiplied by ``factor`` (the other two are
    kept), so every collection, the full passes over all live objects included, comes
    ``factor`` times less often; on exit, also when the body raises, the exact thresholds
    found on entry are restored. It yields the thresholds in force inside.

    Why: a full pass walks every object in flight, so with thousands of runs in flight their
    total work grows with the square of the runs (10,000 concurrent 8-step runs cost ~14x the
    wall of 1,000 with the default thresholds, 11 full passes; none under this, and the wall
    outside the collector grows ~10x; ``benchmarks/README.md``).
    tether's runs leave no cyclic garbage, so collecting less often costs only the cycles the
    program itself makes, which then wait longer to be freed.

    The thresholds are process-wide, not scoped to a thread or a task: while this is active,
    every thread and every other code in the process sees them. Nested uses restore correctly
    when they exit in the reverse order they entered (as ``with`` blocks do); two concurrent
    tasks that each enter it and exit in another order would restore each other's thresholds,
    so enter it once, around the whole batch. A threshold of 0 (automatic collection off)
    stays 0.

    Raises ``TypeError`` when ``factor`` is not an integer of at least 1.
    """
    if type(factor) is not int or factor < 1:
        raise TypeError("factor must be an integer of at least 1")
    previous = gc.get_threshold()
    first, second, third = previous
    gc.set_threshold(first * factor, second, third)
    try:
        yield gc.get_threshold()
    finally:
        gc.set_threshold(*previous)
