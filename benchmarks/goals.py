"""The project's performance goals, as every benchmark reports them.

A goal is one figure measured several times in the same run (a ratio of tether to a baseline
timed in the same round, or milliseconds above one), with the bound it must keep. The median
decides: ``met`` when it is within the bound, ``missed`` otherwise; min and max show the
spread. A goal whose baseline could not run (a peer that is not installed, recordings that
are not there) is ``SKIPPED`` with the reason: it is printed and counted, never left out.

Each benchmark puts its goals in its JSON figures under ``"goals"``; ``run_all.py`` prints
them all in one table at the top of the report.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any, Literal

Status = Literal["met", "missed", "SKIPPED"]

MIN_REPEATS = 3
"""Every goal is measured at least this many times in one run."""


def at_most(what: str, samples: Sequence[float], bound: float, unit: str = "x") -> dict[str, Any]:
    """A goal whose figure must stay at or below ``bound`` (a cost ratio, a time)."""
    return _goal(what, samples, bound, "at most", unit)


def at_least(what: str, samples: Sequence[float], bound: float, unit: str = "x") -> dict[str, Any]:
    """A goal whose figure must reach ``bound`` (a speed-up over a peer, a throughput)."""
    return _goal(what, samples, bound, "at least", unit)


def skipped(what: str, bound: str, why: str) -> dict[str, Any]:
    """A goal that could not be measured in this run, and why."""
    return {"what": what, "target": bound, "status": "SKIPPED", "why": why}


def _goal(
    what: str, samples: Sequence[float], bound: float, side: str, unit: str
) -> dict[str, Any]:
    values = [float(value) for value in samples]
    if len(values) < MIN_REPEATS:
        raise ValueError(f"{what}: {len(values)} repeats, at least {MIN_REPEATS} are needed")
    median = statistics.median(values)
    ok = median <= bound if side == "at most" else median >= bound
    sign = "≤" if side == "at most" else "≥"
    return {
        "what": what,
        "samples": values,
        "min": min(values),
        "median": median,
        "max": max(values),
        "unit": unit,
        "target": f"{sign} {_number(bound, unit)}",
        "status": "met" if ok else "missed",
    }


def _number(value: float, unit: str) -> str:
    if unit == "µs":
        return f"{value:,.0f} µs"
    if unit == "ms":
        return f"{value:+.1f} ms" if value < 0 else f"{value:.1f} ms"
    return f"{value:.3g}x"


def spread(goal: dict[str, Any]) -> str:
    """``min / median / max`` of a measured goal, in its unit."""
    if goal["status"] == "SKIPPED":
        return "—"
    unit = goal.get("unit", "x")
    if unit == "µs":
        return f"{goal['min']:,.0f} / {goal['median']:,.0f} / {goal['max']:,.0f} µs"
    if unit == "ms":
        return f"{goal['min']:.1f} / {goal['median']:.1f} / {goal['max']:.1f} ms"
    return f"{goal['min']:.2f} / {goal['median']:.2f} / {goal['max']:.2f}x"


def line(goal: dict[str, Any]) -> str:
    """One goal as a line of a benchmark's own output."""
    if goal["status"] == "SKIPPED":
        return f"  goal: {goal['what']} ({goal['target']}): SKIPPED ({goal['why']})"
    return (
        f"  goal: {goal['what']}: {spread(goal)} (min/median/max of {len(goal['samples'])}), "
        f"target {goal['target']}: {goal['status']}"
    )


def ratios(numerators: Sequence[float], denominators: Sequence[float]) -> list[float]:
    """Round-by-round ratios of two contenders timed in the same rounds."""
    if len(numerators) != len(denominators):
        raise ValueError("both contenders need the same rounds")
    return [top / bottom for top, bottom in zip(numerators, denominators, strict=True)]


def sdk_goal(what: str, samples: dict[str, Any], sdk: str, missing: str) -> dict[str, Any]:
    """The "official SDK at least 3x slower than tether" goal of a stream benchmark: the SDK's
    samples over tether's when it ran, else SKIPPED saying why (``missing``)."""
    if sdk in samples:
        return at_least(what, ratios(samples[sdk], samples["tether"]), 3)
    return skipped(what, "≥ 3x", missing)
