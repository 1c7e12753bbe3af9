"""Scale: thousands of concurrent 8-step agent runs on one event loop.

Each run is 7 tool turns and a final text answer (8 model steps). The tool awaits once per
call, as real I/O would, so every run gives way to the others and all of them are in flight
at the same time. Each size runs in its own process (peak RSS is per process): the figures are
wall time, peak RSS, and the RSS the runs added over the process before it started them. The
report compares 10,000 runs with 1,000: linear growth means the 10x size costs about 10x.

    python benchmarks/bench_scale.py [--quick] [--json-out PATH]
"""

from __future__ import annotations

import argparse
import asyncio
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
    started = time.perf_counter()
    statuses = await asyncio.gather(*(one() for _ in range(count)))
    wall = time.perf_counter() - started
    gc.callbacks.remove(collector)
    if set(statuses) != {"completed"}:
        raise SystemExit(f"unexpected statuses: {set(statuses)}")
    peak = _peak_rss_kib()
    return {
        "runs": count,
        "wall_s": wall,
        "collector_s": collector.seconds,
        "full_passes": collector.full_passes,
        "peak_rss_mib": peak / 1024,
        "added_rss_mib": (peak - before) / 1024,
    }


class _CollectorClock:
    """A ``gc.callbacks`` entry that times the cycle collector's passes (and counts the full
    ones) while the runs are in flight: for insight only, the collector's settings are the
    process's defaults."""

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


def _child(count: int) -> None:
    print(json.dumps(asyncio.run(_runs(count))))


def child(size: int) -> dict[str, Any]:
    completed = subprocess.run(
        [sys.executable, __file__, "--child", str(size)],
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
    options = parser.parse_args(argv)
    if options.child:
        _child(options.child)
        return {}
    small_size, large_size = SIZES[0], SIZES[-1]
    print(f"scale: concurrent {TOOL_TURNS + 1}-step runs on one event loop (one process per size)")
    print(
        f"  {'runs':>7} {'wall s':>8} {'us/run':>8} {'collector s':>12} {'full passes':>12} "
        f"{'peak RSS MiB':>13} {'added MiB':>10}"
    )
    rows: list[dict[str, Any]] = []
    pairs: list[tuple[dict[str, Any], dict[str, Any]]] = []
    middle = () if options.quick else SIZES[1:-1]
    for repeat in range(goals.MIN_REPEATS):  # the smallest and largest alternate, 3 times
        pair = (child(small_size), child(large_size))
        pairs.append(pair)
        if repeat == 0:
            rows.append(pair[0])
            rows.extend(child(size) for size in middle)
            rows.append(pair[1])
    for row in rows:
        size = row["runs"]
        print(
            f"  {size:>7,} {row['wall_s']:>8.2f} {row['wall_s'] / size * 1e6:>8.0f} "
            f"{row['collector_s']:>12.2f} {row['full_passes']:>12} "
            f"{row['peak_rss_mib']:>13.1f} {row['added_rss_mib']:>10.1f}"
        )
    factor = large_size / small_size
    walls = [large["wall_s"] / small["wall_s"] for small, large in pairs]
    memory = [large["added_rss_mib"] / max(small["added_rss_mib"], 1e-9) for small, large in pairs]
    outside = [
        (large["wall_s"] - large["collector_s"]) / (small["wall_s"] - small["collector_s"])
        for small, large in pairs
    ]
    growth = {
        "size_factor": factor,
        "wall_factor": statistics.median(walls),
        "added_rss_factor": statistics.median(memory),
        "wall_factors": walls,
        "wall_outside_collector_factor": statistics.median(outside),
    }
    print(
        f"  {small_size:,} -> {large_size:,} runs ({factor:.0f}x): wall "
        f"{growth['wall_factor']:.1f}x, added RSS {growth['added_rss_factor']:.1f}x "
        f"(medians of {len(pairs)} pairs)"
    )
    print(
        f"  insight: wall outside the cycle collector's passes "
        f"{growth['wall_outside_collector_factor']:.1f}x; the collector's full passes each walk "
        "every object in flight, and one comes per ~70,000 objects the heap grows by, so their "
        "total grows with the square of the objects in flight (benchmarks/README.md)"
    )
    found = [
        goals.at_most(
            f"{large_size:,} vs {small_size:,} concurrent 8-step runs, wall", walls, factor * 1.1
        ),
        goals.at_most(
            f"{large_size:,} vs {small_size:,} concurrent runs, RSS the runs added",
            memory,
            factor * 1.25,
        ),
    ]
    for goal in found:
        print(goals.line(goal))
    figures = {"rows": rows, "growth": growth, "goals": found}
    if options.json_out:
        Path(options.json_out).write_text(json.dumps(figures, indent=2), encoding="utf-8")
    return figures


if __name__ == "__main__":
    main()
