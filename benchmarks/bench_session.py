"""Session files: append throughput at 1k, 10k and 50k entries and load time, each next to a
bare JSON-lines baseline in the same run, and the cost of one append with a 1 MB tool result.

    python benchmarks/bench_session.py            # 1k, 10k and 50k entries, 3 rounds
    python benchmarks/bench_session.py --quick    # fewer appends per size
    python benchmarks/bench_session.py --json     # also print the figures as JSON

One synthetic coding session is generated: tool rounds of a user prompt, an assistant turn
(thinking with a signature, text, one ``read_file`` call), the tool result (about 1.5 KB of
file text) and an assistant answer, in one chain (50,000 entries are about 35 MB, the size
issue 26 measured). Every contender works on a file of its own of the same bytes, in the same
directory, on the same disk.

* **appends/s**: ``SessionTree.append`` of the conversation's next messages (one entry, one
  fsync each, the write on a worker thread), against the baseline: a file opened
  ``O_APPEND``, each record ``json.dumps``-ed and written, then ``os.fsync`` (the floor of
  any durable JSON-lines log). Rounds alternate the order; the figure is the median. The
  goal is tether within 2x of the baseline at every size (flat: an append must not cost more
  as the file grows). CPU per append (all threads, ``time.process_time``) is shown too. A
  garbage collection runs before each timed series (the load's garbage is paid once per
  load, not by the appends after it).
* **load**: ``SessionStore.load`` (lock, read, every check of the loading rules, the tool
  linkage of every branch) against ``json.loads`` of every line of the file read into
  memory, both as CPU time (all threads); the goal is at most 2x.
* **1 MB tool result**: one ``append`` of a tool result carrying 1 MiB of text to the 50k
  session, against the baseline writing the same line with an fsync.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

try:
    from tether import Message, from_json
except ImportError:  # running from a checkout without an installed tether
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    from tether import Message, from_json

import goals
from tether.agent.session import SessionLimits, SessionStore, SessionStoreOptions, SessionTree

SIZES: Final = (1_000, 10_000, 50_000)
TIMESTAMP: Final = "2026-08-26T00:00:00.000Z"
FILE_TEXT: Final = (
    "def handler(request):\n    payload = json.loads(request.body)\n"
    "    return respond(payload['id'], status=200)\n"
) * 12
MEGABYTE_TEXT: Final = ("x = compute(value)  # a line of a large file\n" * 24_000)[: 1 << 20]


def message_json(index: int) -> dict[str, Any]:
    """The JSON form of the ``index``-th message of the synthetic session."""
    turn, kind = divmod(index, 4)
    call_id = f"call-{turn:06d}"
    if kind == 0:
        return {
            "id": f"user-{turn}",
            "role": "user",
            "content": f"Please look at src/module_{turn}.py and explain what handler() does.",
        }
    if kind == 1:
        return {
            "id": f"assistant-{turn}-a",
            "role": "assistant",
            "content": [
                {
                    "type": "thinking",
                    "text": "The user wants an explanation; read the file first.",
                    "signature": "EqQBCkYIARgCKkDm4Qk3Vd0v1nOQ5Kx2T0a9c8sYq" * 2,
                },
                {"type": "text", "text": "Let me read the file."},
                {
                    "type": "toolCall",
                    "id": call_id,
                    "name": "read_file",
                    "arguments": {"path": f"src/module_{turn}.py", "offset": 0},
                },
            ],
        }
    if kind == 2:
        return result_json(call_id, f"result-{turn}", FILE_TEXT)
    return {
        "id": f"assistant-{turn}-b",
        "role": "assistant",
        "content": [
            {
                "type": "text",
                "text": "handler() parses the JSON body and answers with the payload's id. " * 4,
            }
        ],
    }


def result_json(call_id: str, message_id: str, content: str) -> dict[str, Any]:
    return {
        "id": message_id,
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": "read_file",
        "content": content,
        "isError": False,
    }


def record(entry_id: str, parent: str | None, message: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "entry",
        "version": 1,
        "id": entry_id,
        "parentId": parent,
        "timestamp": TIMESTAMP,
        "message": message,
    }


def message_of(data: dict[str, Any]) -> Message:
    """The protocol message (what an Agent hands its recorder), built before any timing."""
    message: Message = from_json(data, Message)
    return message


def dumps(value: object) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


def write_session(path: Path, entries: int) -> None:
    """A session of ``entries`` chained messages, as the store writes them."""
    header = {"type": "session", "version": 1, "id": "bench-session", "createdAt": TIMESTAMP}
    with path.open("wb") as handle:
        handle.write(dumps(header))
        parent = None
        for index in range(entries):
            entry_id = f"seed-{index:06d}"
            handle.write(dumps(record(entry_id, parent, message_json(index))))
            parent = entry_id


def options() -> SessionStoreOptions:
    """Real-session limits; entry IDs are the default random UUIDs."""
    return SessionStoreOptions(clock=lambda: TIMESTAMP, limits=SessionLimits.for_coding())


# --- appends --------------------------------------------------------------------------------


def baseline_appends(path: Path, start: int, count: int) -> tuple[float, float]:
    """(wall seconds, CPU seconds) for ``count`` bare JSON-lines appends with fsync."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        gc.collect()
        wall = time.perf_counter()
        cpu = time.process_time()
        parent = None
        for index in range(start, start + count):
            entry_id = f"base-{index:07d}"
            os.write(fd, dumps(record(entry_id, parent, message_json(index))))
            os.fsync(fd)
            parent = entry_id
        return time.perf_counter() - wall, time.process_time() - cpu
    finally:
        os.close(fd)


async def tether_appends(path: Path, start: int, count: int) -> tuple[float, float]:
    """(wall seconds, CPU seconds) for ``count`` ``SessionTree.append`` calls."""
    messages = [message_of(message_json(index)) for index in range(start, start + count)]
    async with await SessionStore.load(path, options()) as store:
        tree = SessionTree(store)
        gc.collect()  # the load's garbage: paid once per load, not per append
        wall = time.perf_counter()
        cpu = time.process_time()
        for message in messages:
            await tree.append(message)
        return time.perf_counter() - wall, time.process_time() - cpu


def measure_appends(
    files: dict[str, Path], size: int, appends: int, rounds: int, runner: asyncio.Runner
) -> dict[str, Any]:
    rates: dict[str, list[float]] = {"baseline": [], "tether": []}
    cpus: dict[str, list[float]] = {"baseline": [], "tether": []}
    contenders: dict[str, Callable[[int], tuple[float, float]]] = {
        "baseline": lambda start: baseline_appends(files["baseline"], start, appends),
        "tether": lambda start: runner.run(tether_appends(files["tether"], start, appends)),
    }
    names = list(contenders)
    start = size  # the conversation goes on where the file ends
    for round_index in range(rounds):
        for name in names if round_index % 2 == 0 else names[::-1]:
            wall, cpu = contenders[name](start)
            rates[name].append(appends / wall)
            cpus[name].append(cpu / appends)
        start += appends
    baseline = statistics.median(rates["baseline"])
    tether = statistics.median(rates["tether"])
    return {
        "entries": size,
        "baseline_per_s": baseline,
        "tether_per_s": tether,
        "ratio": baseline / tether,
        "ratios": goals.ratios(rates["baseline"], rates["tether"]),
        "baseline_cpu_us": statistics.median(cpus["baseline"]) * 1e6,
        "tether_cpu_us": statistics.median(cpus["tether"]) * 1e6,
    }


# --- loading --------------------------------------------------------------------------------


def baseline_load(path: Path) -> int:
    loads = json.loads
    return len([loads(line) for line in path.read_bytes().split(b"\n") if line]) - 1


async def tether_load(path: Path) -> int:
    async with await SessionStore.load(path, options()) as store:
        return len(store.entries)


def measure_load(path: Path, size: int, rounds: int, runner: asyncio.Runner) -> dict[str, Any]:
    contenders: dict[str, Callable[[], int]] = {
        "baseline": lambda: baseline_load(path),
        "tether": lambda: runner.run(tether_load(path)),
    }
    samples: dict[str, list[float]] = {name: [] for name in contenders}
    names = list(contenders)
    for round_index in range(rounds + 1):  # the first round warms the page cache
        for name in names if round_index % 2 == 0 else names[::-1]:
            cpu = time.process_time()
            count = contenders[name]()
            elapsed = time.process_time() - cpu
            if count < size:
                raise AssertionError(f"{name} saw {count} entries, expected {size} or more")
            if round_index:
                samples[name].append(elapsed)
    baseline = statistics.median(samples["baseline"]) * 1e3
    tether = statistics.median(samples["tether"]) * 1e3
    return {
        "entries": size,
        "baseline_ms": baseline,
        "tether_ms": tether,
        "ratio": tether / baseline,
        "ratios": goals.ratios(samples["tether"], samples["baseline"]),
    }


# --- one large tool result -----------------------------------------------------------------


async def tether_large(path: Path, rounds: int) -> list[float]:
    async with await SessionStore.load(path, options()) as store:
        tree = SessionTree(store)
        times: list[float] = []
        for round_index in range(rounds):
            turn = 10**6 + round_index
            await tree.append(message_of(message_json(turn * 4 + 1)))
            result = message_of(result_json(f"call-{turn:06d}", f"large-{turn}", MEGABYTE_TEXT))
            start = time.perf_counter()
            await tree.append(result)
            times.append(time.perf_counter() - start)
        return times


def baseline_large(path: Path, rounds: int) -> list[float]:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        times: list[float] = []
        for round_index in range(rounds):
            turn = 10**6 + round_index
            result = result_json(f"call-{turn:06d}", f"large-{turn}", MEGABYTE_TEXT)
            start = time.perf_counter()
            os.write(fd, dumps(record(f"large-{turn}", None, result)))
            os.fsync(fd)
            times.append(time.perf_counter() - start)
        return times
    finally:
        os.close(fd)


def measure_large(files: dict[str, Path], rounds: int, runner: asyncio.Runner) -> dict[str, float]:
    tether = statistics.median(runner.run(tether_large(files["tether"], rounds))) * 1e3
    baseline = statistics.median(baseline_large(files["baseline"], rounds)) * 1e3
    return {"baseline_ms": baseline, "tether_ms": tether, "ratio": tether / baseline}


# --- the report ------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="15 appends per size (3 rounds)")
    parser.add_argument("--rounds", type=int, help="rounds per contender (default 3)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--json-out", help="also write the figures as JSON here")
    parser.add_argument("--dir", help="where the session files go (default: a temp directory)")
    arguments = parser.parse_args(argv)
    rounds: int = max(goals.MIN_REPEATS, arguments.rounds or goals.MIN_REPEATS)
    appends = 15 if arguments.quick else 40
    print(
        f"Session benchmark: Python {platform.python_version()} "
        f"({platform.python_implementation()}), {platform.machine()}"
    )
    figures: dict[str, Any] = {"rounds": rounds, "appends": appends}
    with (
        tempfile.TemporaryDirectory(dir=arguments.dir) as scratch,
        asyncio.Runner() as runner,  # one event loop (and worker thread) for every round
    ):
        folder = Path(scratch)
        append_rows: list[dict[str, Any]] = []
        load_rows: list[dict[str, Any]] = []
        print("\nappends/s (one entry, one fsync each), CPU µs per append (all threads)")
        print(
            f"  {'entries':>7} {'MB':>6} {'baseline/s':>11} {'tether/s':>9} {'ratio':>6} "
            f"{'base µs':>8} {'tether µs':>9}"
        )
        files: dict[str, Path] = {}
        for size in SIZES:
            source = folder / f"seed-{size}.jsonl"
            write_session(source, size)
            files = {name: folder / f"{name}-{size}.jsonl" for name in ("baseline", "tether")}
            for target in files.values():
                shutil.copyfile(source, target)
            row = measure_appends(files, size, appends, rounds, runner)
            row["megabytes"] = source.stat().st_size / 1e6
            append_rows.append(row)
            print(
                f"  {size:>7,} {row['megabytes']:>6.1f} {row['baseline_per_s']:>11.1f} "
                f"{row['tether_per_s']:>9.1f} {row['ratio']:>6.2f} "
                f"{row['baseline_cpu_us']:>8.0f} {row['tether_cpu_us']:>9.0f}"
            )
            load_rows.append(measure_load(source, size, rounds, runner))
            source.unlink()
        worst = max(row["ratio"] for row in append_rows)
        figures["append"] = append_rows
        figures["append_worst_ratio"] = worst
        print(f"  goal: within 2x of the baseline at every size: worst {worst:.2f}x")

        print("\nload (CPU ms, all threads)")
        print(f"  {'entries':>7} {'json.loads':>11} {'SessionStore.load':>18} {'ratio':>6}")
        for row in load_rows:
            print(
                f"  {row['entries']:>7,} {row['baseline_ms']:>11.1f} {row['tether_ms']:>18.1f} "
                f"{row['ratio']:>6.2f}"
            )
        figures["load"] = load_rows
        figures["load_worst_ratio"] = max(row["ratio"] for row in load_rows)
        print(f"  goal: at most 2x: worst {figures['load_worst_ratio']:.2f}x")

        large = measure_large(files, max(3, rounds), runner)
        figures["large"] = large
        print(
            f"\none append of a 1 MiB tool result to the {SIZES[-1]:,}-entry session: "
            f"{large['tether_ms']:.1f} ms (baseline {large['baseline_ms']:.1f} ms, "
            f"{large['ratio']:.2f}x)"
        )
    figures["goals"] = [
        goals.at_most(
            f"session appends, bare JSON lines + fsync vs SessionTree, {row['entries']:,} entries",
            row["ratios"],
            2,
        )
        for row in append_rows
    ] + [
        goals.at_most(
            f"SessionStore.load vs json.loads of every line, {row['entries']:,} entries",
            row["ratios"],
            2,
        )
        for row in load_rows
    ]
    for goal in figures["goals"]:
        print(goals.line(goal))
    if arguments.json_out:
        Path(arguments.json_out).write_text(json.dumps(figures, indent=2), encoding="utf-8")
    if arguments.json:
        print(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
