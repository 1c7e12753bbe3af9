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
  fsync each, the write on a worker thread), against the same durability work done bare: a
  file opened ``O_APPEND``, each record ``json.dumps``-ed and written, then ``os.fsync``,
  the write and fsync on a worker thread awaited from the loop (as tether's are), and, for
  insight, the same written on the loop. The files are fsynced before timing, each
  contender is opened once and warmed up, and short rounds rotate the order; the figure is
  the median. The goal is tether within 2x of the off-loop bare file at every size (see
  "Session appends and fsync" in ``benchmarks/README.md``). CPU per append (all threads,
  ``time.process_time``) is shown too.
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


def settle(paths: list[Path]) -> None:
    """fsync the freshly written files (and their directory) before any timing: otherwise the
    first fsync of each contender writes back its whole copied file (35 MB at 50k entries)
    and the kernel's background writeback of the copies runs during the timed rounds."""
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    fd = os.open(paths[0].parent, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class Baseline:
    """Bare JSON lines: a file opened ``O_APPEND``, each record ``json.dumps``-ed and
    written, then ``os.fsync``; with ``off_loop`` the write and the fsync run on a worker
    thread, awaited from the event loop (``run_in_executor``), as a log must that keeps its
    loop free while the disk works (what ``SessionStore`` does)."""

    def __init__(self, path: Path, *, off_loop: bool) -> None:
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        self.off_loop = off_loop
        self.parent: str | None = None
        self.prefix = "loop" if off_loop else "base"

    def write(self, line: bytes) -> None:
        os.write(self.fd, line)
        os.fsync(self.fd)

    async def appends(self, start: int, count: int) -> None:
        loop = asyncio.get_running_loop()
        for index in range(start, start + count):
            entry_id = f"{self.prefix}-{index:07d}"
            line = dumps(record(entry_id, self.parent, message_json(index)))
            if self.off_loop:
                await loop.run_in_executor(None, self.write, line)
            else:
                self.write(line)
            self.parent = entry_id

    async def close(self) -> None:
        os.close(self.fd)


class Tether:
    """``SessionTree.append`` of the conversation's next messages (one entry, one fsync each,
    the write on a worker thread); the store is loaded once, before any timing."""

    def __init__(self, store: SessionStore) -> None:
        self.store = store
        self.tree = SessionTree(store)

    async def appends(self, start: int, count: int) -> None:
        messages = [message_of(message_json(index)) for index in range(start, start + count)]
        for message in messages:
            await self.tree.append(message)

    async def close(self) -> None:
        await self.store.close()


CONTENDERS: Final = ("baseline", "off_loop", "tether")


async def measure_appends(
    files: dict[str, Path], size: int, appends: int, rounds: int
) -> dict[str, Any]:
    """Every contender on a file of its own, opened (or loaded) once; after a warm-up series
    each, ``rounds`` rounds of ``appends`` appends per contender, the order rotating, so one
    round's contenders run milliseconds apart (the disk's fsync time drifts by several times
    within a minute on these machines)."""
    settle(list(files.values()))
    store = await SessionStore.load(files["tether"], options())
    contenders: dict[str, Baseline | Tether] = {
        "baseline": Baseline(files["baseline"], off_loop=False),
        "off_loop": Baseline(files["off_loop"], off_loop=True),
        "tether": Tether(store),
    }
    rates: dict[str, list[float]] = {name: [] for name in CONTENDERS}
    cpus: dict[str, list[float]] = {name: [] for name in CONTENDERS}
    start = size  # the conversation goes on where the file ends
    try:
        for name in CONTENDERS:  # warm-up: the first fsync after the load, the worker thread
            await contenders[name].appends(start, 4)
        start += 4
        gc.collect()  # the load's garbage: paid once per load, not by the appends
        for round_index in range(rounds):
            shift = round_index % len(CONTENDERS)
            for name in CONTENDERS[shift:] + CONTENDERS[:shift]:
                wall = time.perf_counter()
                cpu = time.process_time()
                await contenders[name].appends(start, appends)
                cpus[name].append((time.process_time() - cpu) / appends)
                rates[name].append(appends / (time.perf_counter() - wall))
            start += appends
    finally:
        for contender in contenders.values():
            await contender.close()
    tether = statistics.median(rates["tether"])
    return {
        "entries": size,
        "baseline_per_s": statistics.median(rates["baseline"]),
        "off_loop_per_s": statistics.median(rates["off_loop"]),
        "tether_per_s": tether,
        "ratio": statistics.median(rates["off_loop"]) / tether,
        "ratios": goals.ratios(rates["off_loop"], rates["tether"]),
        "sync_ratio": statistics.median(rates["baseline"]) / tether,
        "sync_ratios": goals.ratios(rates["baseline"], rates["tether"]),
        "baseline_cpu_us": statistics.median(cpus["baseline"]) * 1e6,
        "off_loop_cpu_us": statistics.median(cpus["off_loop"]) * 1e6,
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
    parser.add_argument(
        "--quick", action="store_true", help="5 rounds of 6 appends per size (else 9 of 10)"
    )
    parser.add_argument("--rounds", type=int, help="rounds per contender (default 3)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--json-out", help="also write the figures as JSON here")
    parser.add_argument("--dir", help="where the session files go (default: a temp directory)")
    arguments = parser.parse_args(argv)
    rounds: int = max(goals.MIN_REPEATS, arguments.rounds or goals.MIN_REPEATS)
    appends = 6 if arguments.quick else 10
    append_rounds = max(rounds, 5 if arguments.quick else 9)
    print(
        f"Session benchmark: Python {platform.python_version()} "
        f"({platform.python_implementation()}), {platform.machine()}"
    )
    figures: dict[str, Any] = {"rounds": rounds, "appends": appends, "append_rounds": append_rounds}
    with (
        tempfile.TemporaryDirectory(dir=arguments.dir) as scratch,
        asyncio.Runner() as runner,  # one event loop (and worker thread) for every round
    ):
        folder = Path(scratch)
        append_rows: list[dict[str, Any]] = []
        load_rows: list[dict[str, Any]] = []
        print(
            f"\nappends/s (one entry, one fsync each; {append_rounds} interleaved rounds of "
            f"{appends}), CPU µs per append (all threads)"
        )
        print(
            f"  {'entries':>7} {'MB':>6} {'bare/s':>8} {'off-loop/s':>10} {'tether/s':>9} "
            f"{'ratio':>6} {'sync':>5} {'bare µs':>8} {'off µs':>7} {'tether µs':>9}"
        )
        files: dict[str, Path] = {}
        for size in SIZES:
            source = folder / f"seed-{size}.jsonl"
            write_session(source, size)
            files = {name: folder / f"{name}-{size}.jsonl" for name in CONTENDERS}
            for target in files.values():
                shutil.copyfile(source, target)
            row = runner.run(measure_appends(files, size, appends, append_rounds))
            row["megabytes"] = source.stat().st_size / 1e6
            append_rows.append(row)
            print(
                f"  {size:>7,} {row['megabytes']:>6.1f} {row['baseline_per_s']:>8.1f} "
                f"{row['off_loop_per_s']:>10.1f} {row['tether_per_s']:>9.1f} "
                f"{row['ratio']:>6.2f} {row['sync_ratio']:>5.2f} {row['baseline_cpu_us']:>8.0f} "
                f"{row['off_loop_cpu_us']:>7.0f} {row['tether_cpu_us']:>9.0f}"
            )
            load_rows.append(measure_load(source, size, rounds, runner))
            source.unlink()
        worst = max(row["ratio"] for row in append_rows)
        figures["append"] = append_rows
        figures["append_worst_ratio"] = worst
        print(
            f"  goal: within 2x of the bare file written off the loop at every size: worst "
            f"{worst:.2f}x (the bare file written on the loop, for insight: worst "
            f"{max(row['sync_ratio'] for row in append_rows):.2f}x)"
        )

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
            f"session appends, bare JSON lines + fsync off the loop vs SessionTree, "
            f"{row['entries']:,} entries",
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
