"""CLI startup: ``tether --help`` and the time until ``tether chat`` shows its first prompt.

Each figure is the median wall time of fresh processes, next to ``python -c pass``:

* ``tether --help``: the console script run to its end (argparse only, no command module);
* ``tether chat: first prompt``: ``tether chat`` started on a pseudo-terminal (it needs one)
  until the prompt ``chat>`` is written (the benchmark answers the cursor position request
  as a terminal would); then Ctrl-D ends it. The model is
  ``openai/gpt-test`` with a fake key and a base URL nobody listens on: no request is made
  before the first prompt is sent. Data and config directories are temporary.

Goals: ``--help`` at most 150 ms, the first prompt at most 400 ms.

    python benchmarks/bench_cli_startup.py [--quick] [--json-out PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import pty
import select
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import goals

TETHER = str(Path(sys.executable).parent / "tether")
GOALS = {"tether --help": 150.0, "tether chat: first prompt": 400.0}


def time_command(command: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return (time.perf_counter() - started) * 1000


def time_first_prompt(env: dict[str, str], cwd: str) -> float:
    """Milliseconds from spawning ``tether chat`` on a pty until ``chat>`` is written."""
    master, slave = pty.openpty()
    started = time.perf_counter()
    process = subprocess.Popen(
        [TETHER, "chat", "--model", "openai/gpt-test", "--base-url", "http://127.0.0.1:9/v1"],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        cwd=cwd,
        start_new_session=True,
    )
    os.close(slave)
    seen = b""
    elapsed = float("nan")
    try:
        deadline = started + 20
        while time.perf_counter() < deadline:
            ready, _, _ = select.select([master], [], [], 0.5)
            if not ready:
                continue
            try:
                seen += os.read(master, 65536)
            except OSError:
                break
            if b"\x1b[6n" in seen:  # answer the cursor position request, as a terminal does
                os.write(master, b"\x1b[1;1R")
                seen = seen.replace(b"\x1b[6n", b"")
            if b"chat>" in seen:
                elapsed = (time.perf_counter() - started) * 1000
                break
        os.write(master, b"\x04")  # Ctrl-D: quit
        end = time.perf_counter() + 10
        while process.poll() is None and time.perf_counter() < end:
            if select.select([master], [], [], 0.05)[0]:
                try:
                    os.read(master, 65536)
                except OSError:
                    break
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()
        os.close(master)
    if elapsed != elapsed:
        raise RuntimeError(f"no prompt; the screen was {seen[-500:]!r}")
    return elapsed


def main(argv: list[str] | None = None) -> dict[str, dict[str, float]]:
    parser = argparse.ArgumentParser(description=(__doc__ or "").strip().splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--json-out", help="also write the figures as JSON here")
    options = parser.parse_args(argv)
    repetitions = 5 if options.quick else 15
    with tempfile.TemporaryDirectory() as scratch:
        env = {name: value for name, value in os.environ.items() if not name.endswith("_API_KEY")}
        env.update(
            OPENAI_API_KEY="sk-bench-fake",
            XDG_DATA_HOME=f"{scratch}/data",
            XDG_CONFIG_HOME=f"{scratch}/config",
            TETHER_CONFIG=f"{scratch}/config.toml",
            TERM=env.get("TERM", "xterm") or "xterm",
        )
        runs = {
            "python -c pass": lambda: time_command([sys.executable, "-c", "pass"]),
            "tether --help": lambda: time_command([TETHER, "--help"]),
            "tether chat: first prompt": lambda: time_first_prompt(env, scratch),
        }
        for run in runs.values():  # warm the file cache (and the .pyc files) once
            run()
        samples: dict[str, list[float]] = {label: [] for label in runs}
        for index in range(repetitions):
            order = list(runs) if index % 2 == 0 else list(reversed(runs))
            for label in order:
                samples[label].append(runs[label]())
    base = statistics.median(samples["python -c pass"])
    figures: dict[str, dict[str, float]] = {}
    print(f"CLI startup: median of {repetitions} fresh processes")
    for label, values in samples.items():
        median = statistics.median(values)
        figures[label] = {"ms": median, "ratio": median / base, "above_ms": median - base}
        goal = GOALS.get(label)
        verdict = (
            ""
            if goal is None
            else f"   goal ≤ {goal:.0f} ms: {'ok' if median <= goal else 'MISSED'}"
        )
        ratio = median / base
        print(f"  {label:<26} {median:8.1f} ms   {ratio:6.2f}x   {median - base:+8.1f} ms{verdict}")
        if goal is not None:
            figures[label]["goal_ms"] = goal
    found = [
        goals.at_most(f"`{label}`, wall", samples[label], goal, unit="ms")
        for label, goal in GOALS.items()
    ]
    for goal in found:
        print(goals.line(goal))
    if options.json_out:
        output: dict[str, Any] = {**figures, "goals": found}
        Path(options.json_out).write_text(json.dumps(output, indent=2), encoding="utf-8")
    return figures


if __name__ == "__main__":
    main()
