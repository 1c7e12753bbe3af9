"""Per-event cost of ``tether.EventStream`` next to an async generator and ``asyncio.Queue``.

    python benchmarks/bench_stream.py            # full run (N = 200_000 batch events, 9 rounds)
    python benchmarks/bench_stream.py --quick    # a few seconds

Two scenarios, every contender measured in the same process and event loop:

* batch: the producer emits all N events first, then the consumer drains them
  (async generator consumed with ``async for``; ``Queue.put_nowait`` x N then ``await get()``
  x N; ``EventStream.push`` x N, ``finish``, then ``async for``).
* interleaved: a producer task emits one event per loop turn (``await asyncio.sleep(0)``)
  while the consumer is already waiting, so every event wakes the consumer
  (``EventStream`` vs ``Queue`` vs an async generator awaiting a per-event future).

Each round runs every contender once; the order alternates between rounds (forward, then
reversed) so warm-up and drift do not favour one contender. The table reports, per event, the
median and best wall-clock time and the median CPU time of this thread (``thread_time``,
which stays meaningful on a busy machine where wall time includes waiting for a CPU). The
garbage collector is paused inside each timed region (as ``timeit`` does). The loop runs
without asyncio debug mode.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import platform
import statistics
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Final

import goals

try:
    from tether import EventStream
except ImportError:  # running from a checkout without an installed tether
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    from tether import EventStream

Scenario = Callable[[int], Awaitable[int]]
"""Consumes ``n`` events and returns their sum (checked, so nothing is optimised away)."""

_END: Final = -1


# --- batch: produce everything, then consume ----------------------------------------------------


async def batch_generator(n: int) -> int:
    async def numbers() -> AsyncIterator[int]:
        for i in range(n):
            yield i

    total = 0
    async for value in numbers():
        total += value
    return total


async def batch_queue(n: int) -> int:
    queue: asyncio.Queue[int] = asyncio.Queue()
    for i in range(n):
        queue.put_nowait(i)
    total = 0
    for _ in range(n):
        total += await queue.get()
    return total


async def batch_event_stream(n: int) -> int:
    stream: EventStream[int, None] = EventStream()
    for i in range(n):
        stream.push(i)
    stream.finish(None)
    total = 0
    async for value in stream:
        total += value
    return total


# --- interleaved: one event per loop turn, consumer waiting -------------------------------------


async def interleaved_event_stream(n: int) -> int:
    stream: EventStream[int, None] = EventStream()

    async def produce() -> None:
        for i in range(n):
            stream.push(i)
            await asyncio.sleep(0)
        stream.finish(None)

    producer = asyncio.ensure_future(produce())
    total = 0
    async for value in stream:
        total += value
    await producer
    return total


async def interleaved_queue(n: int) -> int:
    queue: asyncio.Queue[int] = asyncio.Queue()

    async def produce() -> None:
        for i in range(n):
            queue.put_nowait(i)
            await asyncio.sleep(0)
        queue.put_nowait(_END)

    producer = asyncio.ensure_future(produce())
    total = 0
    while (value := await queue.get()) != _END:
        total += value
    await producer
    return total


async def interleaved_generator(n: int) -> int:
    """An async generator that awaits one future per event, set by the producer task."""
    loop = asyncio.get_running_loop()
    slot: list[asyncio.Future[int]] = [loop.create_future()]

    async def numbers() -> AsyncIterator[int]:
        while True:
            value = await slot[0]
            if value == _END:
                return
            slot[0] = loop.create_future()
            yield value

    async def produce() -> None:
        for i in range(n):
            slot[0].set_result(i)
            await asyncio.sleep(0)
        slot[0].set_result(_END)

    producer = asyncio.ensure_future(produce())
    total = 0
    async for value in numbers():
        total += value
    await producer
    return total


# --- measurement ----------------------------------------------------------------------------

BATCH: Final[dict[str, Scenario]] = {
    "async generator": batch_generator,
    "asyncio.Queue": batch_queue,
    "EventStream": batch_event_stream,
}
INTERLEAVED: Final[dict[str, Scenario]] = {
    "async gen + future": interleaved_generator,
    "asyncio.Queue": interleaved_queue,
    "EventStream": interleaved_event_stream,
}


class Sample:
    """One timed run: wall-clock and this thread's CPU time, in ns per event."""

    __slots__ = ("cpu", "wall")

    def __init__(self, wall: float, cpu: float) -> None:
        self.wall = wall
        self.cpu = cpu


async def time_once(scenario: Scenario, n: int) -> Sample:
    """Time one run of ``scenario`` over ``n`` events."""
    expected = n * (n - 1) // 2
    gc.collect()
    gc.disable()
    try:
        cpu_start = time.thread_time_ns()
        start = time.perf_counter_ns()
        total = await scenario(n)
        wall = time.perf_counter_ns() - start
        cpu = time.thread_time_ns() - cpu_start
    finally:
        gc.enable()
    if total != expected:
        raise AssertionError(f"{scenario.__name__} consumed the wrong events ({total})")
    return Sample(wall / n, cpu / n)


async def measure(contenders: dict[str, Scenario], n: int, rounds: int) -> dict[str, list[Sample]]:
    names = list(contenders)
    for name in names:  # warm-up, not recorded
        await time_once(contenders[name], min(n, 10_000))
    samples: dict[str, list[Sample]] = {name: [] for name in names}
    for round_index in range(rounds):
        order = names if round_index % 2 == 0 else names[::-1]
        for name in order:
            samples[name].append(await time_once(contenders[name], n))
    return samples


def report(title: str, n: int, samples: dict[str, list[Sample]], baseline: str) -> None:
    wall = {name: statistics.median(s.wall for s in runs) for name, runs in samples.items()}
    cpu = {name: statistics.median(s.cpu for s in runs) for name, runs in samples.items()}
    best = {name: min(s.wall for s in runs) for name, runs in samples.items()}
    print(f"\n{title} (N = {n:,} events, {len(samples['EventStream'])} rounds, ns/event)")
    print(f"  {'contender':<20} {'median wall':>12} {'best wall':>10} {'median CPU':>11}")
    for name in samples:
        print(f"  {name:<20} {wall[name]:>12.1f} {best[name]:>10.1f} {cpu[name]:>11.1f}")
    for other in (baseline, "asyncio.Queue"):
        print(
            f"  EventStream / {other + ':':<19} {wall['EventStream'] / wall[other]:>5.2f}x wall"
            f"   {cpu['EventStream'] / cpu[other]:>5.2f}x CPU"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="small N and 3 rounds")
    parser.add_argument("--events", type=int, help="events per batch run (default 200000)")
    parser.add_argument("--rounds", type=int, help="rounds per contender (default 9)")
    parser.add_argument("--json-out", help="also write the medians (ns/event) as JSON here")
    options = parser.parse_args(argv)
    batch_n: int = options.events or (20_000 if options.quick else 200_000)
    interleaved_n = max(batch_n // 4, 1_000)
    rounds: int = options.rounds or (3 if options.quick else 9)

    print(
        f"EventStream benchmark: Python {platform.python_version()} "
        f"({platform.python_implementation()}), {platform.machine()}"
    )
    if sys.flags.dev_mode:
        print("note: Python dev mode is on; numbers are slower than usual")

    with asyncio.Runner(debug=False) as runner:
        batch = runner.run(measure(BATCH, batch_n, rounds))
        interleaved = runner.run(measure(INTERLEAVED, interleaved_n, rounds))

    report("batch: push all, then consume", batch_n, batch, "async generator")
    report("interleaved: one event per loop turn", interleaved_n, interleaved, "async gen + future")
    found = [
        goals.at_most(
            "EventStream per event vs a bare async generator (batch, CPU)",
            goals.ratios(
                [sample.cpu for sample in batch["EventStream"]],
                [sample.cpu for sample in batch["async generator"]],
            ),
            2,
        )
    ]
    for goal in found:
        print(goals.line(goal))
    if options.json_out:
        figures = {
            "batch": {"events": batch_n, "cpu_ns": _medians(batch)},
            "interleaved": {"events": interleaved_n, "cpu_ns": _medians(interleaved)},
            "goals": found,
        }
        Path(options.json_out).write_text(json.dumps(figures, indent=2), encoding="utf-8")
    return 0


def _medians(samples: dict[str, list[Sample]]) -> dict[str, float]:
    return {name: statistics.median(s.cpu for s in runs) for name, runs in samples.items()}


if __name__ == "__main__":
    sys.exit(main())
