"""Scale: thousands of concurrent 8-step agent runs on one event loop.

Each run is 7 tool turns and a final text answer (8 model steps). The tool awaits once per
call, as real I/O would, so every run gives way to the others and all of them are in flight
at the same time. Each size runs in its own process (peak RSS is per process): the figures are
wall time, peak RSS, and the RSS the runs added over the process before it started them. The
report compares 10,000 runs with 1,000: linear growth means the 10x size costs about 10x.

Every size runs twice: with the process's default collector settings (an informational row:
the cycle collector's full passes over the objects in flight grow with their square), and
under the opt-in ``tether.loop.relaxed_cycle_collector()``, the setting a program with
thousands of runs in flight is documented to use, which the goals are measured with
(benchmarks/README.md, "The scale goal and the cycle collector").

    python benchmarks/bench_scale.py [--quick] [--json-out PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import goals

TOOL_TURNS = 7
SIZES = (1_000, 2_500, 5_000, 10_000)
SETTINGS = ("default", "relaxed")
"""The collector's settings each size runs with: the process's defaults, and under
``relaxed_cycle_collector()`` (the goals' setting)."""


def _peak_rss_kib() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


async def _runs(count: int) -> dict[str, Any]:
    from tether import (
        AbortController,
        ScriptedModel,
        ToolRegistry,
        run_agent_loop,
        text_reply,
        tool,
        tool_call_reply,
    )
    from tether.protocol.transcript import user_message

    @tool
    async def add(left: int, right: int) -> int:
        """Add two integers, after one turn of the event loop (as I/O would)."""
        await asyncio.sleep(0)
        return left + right

    registry = ToolRegistry([add])
    replies = [tool_call_reply(("add", {"left": n, "right": 1})) for n in range(TOOL_TURNS)]
    replies.append(text_reply("done"))
    prompt = [user_message(id="user-001", content="go")]

    async def one() -> str:
        stream = run_agent_loop(
            messages=prompt,
            model=ScriptedModel(replies),
            tools=registry,
            max_steps=TOOL_TURNS + 1,
            signal=AbortController().signal,
        )
        async for _ in stream:
            pass
        return (await stream.result).status

    await one()  # warm up
    collector = _CollectorClock()
    before = _peak_rss_kib()
    gc.callbacks.append(collector)
    started, cpu_started = time.perf_counter(), time.process_time()
    statuses = await asyncio.gather(*(one() for _ in range(count)))
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    gc.callbacks.remove(collector)
    if set(statuses) != {"completed"}:
        raise SystemExit(f"unexpected statuses: {set(statuses)}")
    peak = _peak_rss_kib()
    return {
        "runs": count,
        "thresholds": gc.get_threshold(),
        "wall_s": wall,
        "cpu_s": cpu,
        "collector_s": collector.seconds,
        "full_passes": collector.full_passes,
        "peak_rss_mib": peak / 1024,
        "added_rss_mib": (peak - before) / 1024,
    }


class _CollectorClock:
    """A ``gc.callbacks`` entry that times the cycle collector's passes (and counts the full
    ones) while the runs are in flight: for insight only, it changes no setting."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.full_passes = 0
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
            return
        self.seconds += time.perf_counter() - self._started
        self.full_passes += info["generation"] == 2


def _child(count: int, setting: str) -> None:
    with _collector_setting(setting):
        print(json.dumps({"setting": setting, **asyncio.run(_runs(count))}))


def _collector_setting(setting: str) -> contextlib.AbstractContextManager[object]:
    if setting == "default":
        return contextlib.nullcontext()
    try:
        from tether.loop import relaxed_cycle_collector
    except ImportError:  # an older tree (PYTHONPATH): the same setting, by hand (a child exits)
        first, second, third = gc.get_threshold()
        gc.set_threshold(first * 100, second, third)
        return contextlib.nullcontext()
    return relaxed_cycle_collector()


def child(size: int, setting: str) -> dict[str, Any]:
    completed = subprocess.run(
        [sys.executable, __file__, "--child", str(size), "--setting", setting],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(completed.stdout)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="sizes 1,000 and 10,000 only")
    parser.add_argument("--json-out", help="also write the figures as JSON here")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--setting", choices=SETTINGS, default="default", help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    if options.child:
        _child(options.child, options.setting)
        return {}
    small_size, large_size = SIZES[0], SIZES[-1]
    print(f"scale: concurrent {TOOL_TURNS + 1}-step runs on one event loop (one process per size)")
    pairs: dict[str, list[tuple[dict[str, Any], dict[str, Any]]]] = {key: [] for key in SETTINGS}
    rows: list[dict[str, Any]] = []
    middle = () if options.quick else SIZES[1:-1]
    for repeat in range(goals.MIN_REPEATS):  # the smallest and largest alternate, 3 times
        for setting in SETTINGS:
            pair = (child(small_size, setting), child(large_size, setting))
            pairs[setting].append(pair)
            if repeat == 0:
                rows.append(pair[0])
                rows.extend(child(size, setting) for size in middle)
                rows.append(pair[1])
    _print_rows(rows)
    growth = {setting: _growth(pairs[setting]) for setting in SETTINGS}
    factor = large_size / small_size
    for setting, label in (
        ("default", "default collector settings (informational)"),
        ("relaxed", "under relaxed_cycle_collector() (the goals)"),
    ):
        found = growth[setting]
        print(
            f"  {label}: {small_size:,} -> {large_size:,} runs ({factor:.0f}x): wall "
            f"{found['wall_factor']:.1f}x, added RSS {found['added_rss_factor']:.1f}x, wall "
            f"outside the collector's passes {found['wall_outside_collector_factor']:.1f}x "
            f"(medians of {len(pairs[setting])} pairs)"
        )
        if found["cpu_factors"]:
            cpu = found["cpu_factors"]
            print(
                f"    CPU time (the process's, for insight: what other processes' load does "
                f"not add): {min(cpu):.2f} / {statistics.median(cpu):.2f} / {max(cpu):.2f}x"
            )
    print(
        "  insight: with the default thresholds a full pass of the cycle collector comes per "
        "~70,000 objects the heap grows by and walks every object in flight, so their total "
        "grows with the square of the objects in flight; relaxed_cycle_collector() makes every "
        "collection a hundredth as frequent (benchmarks/README.md)"
    )
    relaxed = growth["relaxed"]
    found = [
        goals.at_most(
            f"{large_size:,} vs {small_size:,} concurrent 8-step runs, wall "
            "(relaxed_cycle_collector)",
            relaxed["wall_factors"],
            factor * 1.1,
        ),
        goals.at_most(
            f"{large_size:,} vs {small_size:,} concurrent runs, RSS the runs added",
            relaxed["added_rss_factors"],
            factor * 1.25,
        ),
    ]
    for goal in found:
        print(goals.line(goal))
    figures = {
        "rows": rows,
        "growth": relaxed,
        "growth_default": growth["default"],
        "goals": found,
    }
    if options.json_out:
        Path(options.json_out).write_text(json.dumps(figures, indent=2), encoding="utf-8")
    return figures


def _print_rows(rows: list[dict[str, Any]]) -> None:
    print(
        f"  {'collector':>9} {'runs':>7} {'wall s':>8} {'us/run':>8} {'collector s':>12} "
        f"{'full passes':>12} {'peak RSS MiB':>13} {'added MiB':>10}"
    )
    for row in rows:
        size = row["runs"]
        print(
            f"  {row['setting']:>9} {size:>7,} {row['wall_s']:>8.2f} "
            f"{row['wall_s'] / size * 1e6:>8.0f} {row['collector_s']:>12.2f} "
            f"{row['full_passes']:>12} {row['peak_rss_mib']:>13.1f} {row['added_rss_mib']:>10.1f}"
        )


def _growth(pairs: list[tuple[dict[str, Any], dict[str, Any]]]) -> dict[str, Any]:
    """How the largest size's figures compare with the smallest's, pair by pair (medians)."""
    small_size, large_size = pairs[0][0]["runs"], pairs[0][1]["runs"]
    walls = [large["wall_s"] / small["wall_s"] for small, large in pairs]
    memory = [large["added_rss_mib"] / max(small["added_rss_mib"], 1e-9) for small, large in pairs]
    outside = [
        (large["wall_s"] - large["collector_s"]) / (small["wall_s"] - small["collector_s"])
        for small, large in pairs
    ]
    cpu = [large["cpu_s"] / small["cpu_s"] for small, large in pairs if "cpu_s" in small]
    return {
        "size_factor": large_size / small_size,
        "wall_factor": statistics.median(walls),
        "added_rss_factor": statistics.median(memory),
        "wall_factors": walls,
        "added_rss_factors": memory,
        "wall_outside_collector_factor": statistics.median(outside),
        "cpu_factors": cpu,
    }


if __name__ == "__main__":
    main()
