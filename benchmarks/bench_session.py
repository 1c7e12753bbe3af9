"""Session files: load time of a 4,096-record session next to ``json.loads``, and append latency.

    python benchmarks/bench_session.py            # 4,096 records, 15 load rounds
    python benchmarks/bench_session.py --quick    # 3 load rounds, fewer appends
    python benchmarks/bench_session.py --json     # also print the figures as JSON

One synthetic coding session is generated: tool rounds of a user prompt, an assistant turn
(thinking with a signature, text, one ``read_file`` call), the tool result (about 1.5 KB of
file text) and an assistant answer, 4,096 records in one chain (about 2.7 MB, within the
workshop's 4 MiB). It is written once with ``SessionStore`` and the file's bytes are read back;
every load contender starts from those bytes:

* baseline: ``json.loads`` of every line (``bytes.split(b"\\n")``) into a list, building
  nothing else and checking nothing: the floor of any JSON-lines loader;
* parse_session: tether's parser on the bytes: UTF-8 and JSON per line, exact record checks,
  every message through ``from_json``, duplicate/parent checks and the branch-local tool
  linkage of every record;
* SessionStore.load: ``parse_session`` plus the file work (marker check, directory and file
  identity, read), from the page cache.

Load figures are medians (and minima) of this thread's CPU time with the garbage collector
paused inside each timed region; rounds alternate the contender order. The goal is
``SessionStore.load`` within 3x of the baseline.

Append latency is wall time per ``append`` on a store that already holds N records (N = 0,
1,024 and 4,095), each a full crash-safe commit: the whole file is rewritten to a temp file,
fsynced, linked, renamed and the directory fsynced (so the figure depends on the disk), and
the same with ``fsync`` patched out (``session_io.fsync``) to show the CPU part.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Generator
from pathlib import Path
from typing import Any, Final

try:
    from tether.agent import session as session_module
except ImportError:  # running from a checkout without an installed tether
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    from tether.agent import session as session_module

from tether.agent.session import (
    SessionLimits,
    SessionStore,
    SessionStoreOptions,
    parse_session,
)

RECORDS: Final = 4_096
APPEND_SIZES: Final = (0, 1_024, 4_095)
FILE_TEXT: Final = (
    "def handler(request):\n    payload = json.loads(request.body)\n"
    "    return respond(payload['id'], status=200)\n"
) * 12


def message_json(index: int) -> dict[str, Any]:
    """The JSON form of the ``index``-th message of the synthetic session."""
    turn, kind = divmod(index, 4)
    call_id = f"call-{turn:05d}"
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
        return {
            "id": f"result-{turn}",
            "role": "toolResult",
            "toolCallId": call_id,
            "toolName": "read_file",
            "content": FILE_TEXT,
            "isError": False,
        }
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


def deterministic_options(limits: SessionLimits | None = None) -> SessionStoreOptions:
    counter = iter(range(10**9))
    return SessionStoreOptions(
        session_id="bench-session",
        id_factory=lambda: f"entry-{next(counter):06d}",
        clock=lambda: "2026-08-26T00:00:00.000Z",
        limits=SessionLimits() if limits is None else limits,
    )


@contextlib.contextmanager
def no_fsync() -> Generator[None]:
    """Patch ``session_io.fsync`` out (through the seam the tests use)."""
    io = session_module.session_io

    def skip(fd: int) -> None:
        del fd

    io.fsync = skip
    try:
        yield
    finally:
        del io.fsync  # the class's method again


def write_lines(path: Path, records: int) -> None:
    """A session of ``records`` chained messages, as JSON lines (not yet canonical)."""
    lines = [
        json.dumps(
            {
                "type": "session",
                "version": 1,
                "id": "bench-session",
                "createdAt": "2026-08-26T00:00:00.000Z",
            },
            separators=(",", ":"),
        )
    ]
    parent = None
    for index in range(records):
        entry_id = f"seed-{index:06d}"
        lines.append(
            json.dumps(
                {
                    "type": "entry",
                    "version": 1,
                    "id": entry_id,
                    "parentId": parent,
                    "timestamp": "2026-08-26T00:00:00.000Z",
                    "message": message_json(index),
                },
                separators=(",", ":"),
                ensure_ascii=False,
            )
        )
        parent = entry_id
    path.write_bytes(("\n".join(lines) + "\n").encode())


async def build_file(path: Path, records: int, limits: SessionLimits | None = None) -> None:
    """Write a session of ``records`` chained messages in the store's canonical form."""
    await asyncio.to_thread(write_lines, path, records)
    store = await SessionStore.load(path, deterministic_options(limits))
    await store.flush()  # canonical form, as the store writes it


def json_lines(data: bytes) -> int:
    """The baseline: a naive JSON-lines loader, ``json.loads`` of every line into a list."""
    loads = json.loads
    values = [loads(line) for line in data.split(b"\n") if line]
    return len(values) - 1  # the header


def tether_parse(data: bytes) -> int:
    return len(parse_session(data).entries)


def store_load(path: Path, runner: asyncio.Runner) -> Callable[[bytes], int]:
    def load(_: bytes) -> int:
        store = runner.run(SessionStore.load(path))
        return len(store.entries)

    return load


def time_once(contender: Callable[[bytes], int], data: bytes) -> tuple[float, int]:
    gc.collect()
    gc.disable()
    try:
        start = time.thread_time()
        count = contender(data)
        cpu = time.thread_time() - start
    finally:
        gc.enable()
    return cpu, count


def measure_load(path: Path, rounds: int, runner: asyncio.Runner) -> dict[str, list[float]]:
    data = path.read_bytes()
    contenders: dict[str, Callable[[bytes], int]] = {
        "json.loads": json_lines,
        "parse_session": tether_parse,
        "SessionStore.load": store_load(path, runner),
    }
    names = list(contenders)
    for name in names:  # warm-up and cross-check
        _, count = time_once(contenders[name], data)
        if count != RECORDS:
            raise AssertionError(f"{name} saw {count} records, expected {RECORDS}")
    samples: dict[str, list[float]] = {name: [] for name in names}
    for round_index in range(rounds):
        for name in names if round_index % 2 == 0 else names[::-1]:
            cpu, _ = time_once(contenders[name], data)
            samples[name].append(cpu)
    return samples


async def append_latency(folder: Path, size: int, appends: int, fsync: bool) -> float:
    """Median wall seconds per append to a store holding ``size`` records."""
    path = folder / f"append-{size}-{int(fsync)}.jsonl"
    limits = SessionLimits(max_records=size + appends + 1)
    await build_file(path, size, limits)
    store = await SessionStore.load(path, deterministic_options(limits))
    parent = store.entries[-1].id if store.entries else None
    await store.flush()  # every line serialized once, as in a long-running store
    times: list[float] = []
    for index in range(appends):
        message = {"id": f"extra-{index}", "role": "user", "content": "and one more thing"}
        start = time.perf_counter()
        entry = await store.append(parent, message)
        times.append(time.perf_counter() - start)
        parent = entry.id
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="3 load rounds, 5 appends per size")
    parser.add_argument("--rounds", type=int, help="load rounds per contender (default 15)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--json-out", help="also write the figures as JSON here")
    options = parser.parse_args(argv)
    rounds: int = options.rounds or (3 if options.quick else 15)
    appends = 5 if options.quick else 20
    print(
        f"Session benchmark: Python {platform.python_version()} "
        f"({platform.python_implementation()}), {platform.machine()}"
    )
    figures: dict[str, Any] = {"records": RECORDS, "rounds": rounds}
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        path = folder / "session.jsonl"
        asyncio.run(build_file(path, RECORDS))
        size = path.stat().st_size
        figures["bytes"] = size
        with asyncio.Runner() as runner:  # one event loop for every load round
            samples = measure_load(path, rounds, runner)
        print(f"\nload: {RECORDS:,} records, {size / 1e6:.2f} MB; medians of CPU time")
        load: dict[str, float] = {}
        fastest: dict[str, float] = {}
        print(f"  {'contender':<18} {'median ms':>10} {'min ms':>8}")
        for name, values in samples.items():
            load[name] = statistics.median(values) * 1e3
            fastest[name] = min(values) * 1e3
            print(f"  {name:<18} {load[name]:>10.2f} {fastest[name]:>8.2f}")
        figures["load_ms"] = load
        figures["load_min_ms"] = fastest
        ratio = load["SessionStore.load"] / load["json.loads"]
        figures["load_ratio"] = ratio
        figures["parse_ratio"] = load["parse_session"] / load["json.loads"]
        figures["load_ratio_min"] = fastest["SessionStore.load"] / fastest["json.loads"]
        verdict = "met" if ratio <= 3 else "NOT met"
        print(f"  SessionStore.load / json.loads: {ratio:.2f}x (goal <= 3x: {verdict})")
        print(f"  parse_session / json.loads: {figures['parse_ratio']:.2f}x")
        print(
            f"  the same from the fastest rounds (least disturbed by other load): "
            f"{figures['load_ratio_min']:.2f}x"
        )

        print(f"\nappend: wall ms per append (median of {appends}), one commit each")
        rows: list[dict[str, float]] = []
        for existing in APPEND_SIZES:
            with_fsync = asyncio.run(append_latency(folder, existing, appends, True))
            with no_fsync():
                without = asyncio.run(append_latency(folder, existing, appends, False))
            rows.append({"records": existing, "ms": with_fsync * 1e3, "ms_no_fsync": without * 1e3})
            print(
                f"  {existing:>5,} records: {with_fsync * 1e3:>7.2f} ms "
                f"({without * 1e3:.2f} ms without fsync)"
            )
        figures["append"] = rows
    if options.json_out:
        Path(options.json_out).write_text(json.dumps(figures, indent=2), encoding="utf-8")
    if options.json:
        print(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
