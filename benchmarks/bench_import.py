"""Import cost: ``import tether`` next to the peers, as fresh processes, against ``python -c pass``.

Each statement runs in a new interpreter many times, the statements interleaved round by round
(in alternating order); the rounds are grouped in blocks and a block's figure for a statement
is its fastest process. A fresh import does the same work every time, and what a loaded
machine adds (waiting for a core another process holds, its caches) only ever makes a process
slower, so a block's minimum is that work and the blocks' spread shows how well it was seen;
a median of single processes measured the load as much as the code. The median over blocks
is reported, with the ratio to ``python -c pass`` and the milliseconds above it, and each
goal's samples are the blocks' differences of minima. The child's CPU time (user + system) is
printed beside it, for insight. ``import tether`` loads the
package root only (its public names load on first use). The usable API's four names load
what each needs only when it is used (a run, a request, a store opened, the tools built), so
``tether (all layers)`` imports what a first run loads (``tether.loop._run_steps``: every
layer below the loop, the protocol included, asyncio too). ``import asyncio`` is shown for
scale. Peers that are not installed are skipped.

    python benchmarks/bench_import.py [--quick] [--json-out PATH]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import goals

USABLE_API = (
    "import tether; tether.run_agent_loop; tether.OpenAIChatModel; tether.coding_tools; "
    "tether.SessionStore"
)
STATEMENTS: dict[str, str] = {
    "python -c pass": "pass",
    "import asyncio": "import asyncio",
    "import tether": "import tether",
    "the usable API": USABLE_API,
    "tether (all layers)": (
        "import tether; tether.run_agent_loop; import tether.loop._run_steps, tether.loop.collector"
    ),
    "import pydantic_ai": "import pydantic_ai",
    "import agents": "import agents",
}
OPTIONAL = {"import pydantic_ai": "pydantic_ai", "import agents": "agents"}

# Bytecode is written and used as it is on an installed package: PYTHONDONTWRITEBYTECODE in
# the caller's environment would make every process compile tether from source.
ENVIRONMENT = {
    name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"
}


def time_statement(code: str) -> tuple[float, float]:
    """Wall and CPU (user + system) milliseconds of ``code`` in a fresh interpreter."""
    started = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-c", code], env=ENVIRONMENT)
    _, status, usage = os.wait4(process.pid, 0)
    wall = (time.perf_counter() - started) * 1000
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise subprocess.CalledProcessError(process.returncode, code)
    return wall, (usage.ru_utime + usage.ru_stime) * 1000


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--json-out", help="also write the figures as JSON here")
    options = parser.parse_args(argv)
    blocks, rounds = (goals.MIN_REPEATS, 3) if options.quick else (7, 5)
    statements = {
        label: code
        for label, code in STATEMENTS.items()
        if label not in OPTIONAL or importlib.util.find_spec(OPTIONAL[label]) is not None
    }
    for label in set(STATEMENTS) - set(statements):
        print(
            f"SKIPPED: {label}: not installed (pip install -r requirements/bench.txt)",
            file=sys.stderr,
        )
    for code in statements.values():  # warm the file cache (and write the bytecode) once
        time_statement(code)
    fastest: dict[str, list[float]] = {label: [] for label in statements}
    cpu: dict[str, list[float]] = {label: [] for label in statements}
    index = 0
    for _ in range(blocks):
        walls: dict[str, list[float]] = {label: [] for label in statements}
        for _ in range(rounds):
            order = list(statements) if index % 2 == 0 else list(reversed(statements))
            index += 1
            for label in order:
                wall, used = time_statement(statements[label])
                walls[label].append(wall)
                cpu[label].append(used)
        for label, values in walls.items():
            fastest[label].append(min(values))
    base = statistics.median(fastest["python -c pass"])
    cpu_base = statistics.median(cpu["python -c pass"])
    figures: dict[str, Any] = {}
    print(
        f"import cost: median over {blocks} blocks of the fastest of {rounds} fresh processes "
        "(wall); CPU: median of every process"
    )
    for label, values in fastest.items():
        median = statistics.median(values)
        used = statistics.median(cpu[label])
        figures[label] = {
            "ms": median,
            "ratio": median / base,
            "above_ms": median - base,
            "cpu_ms": used,
            "cpu_above_ms": used - cpu_base,
        }
        print(
            f"  {label:<22} {median:8.1f} ms   {median / base:6.2f}x   {median - base:+8.1f} ms"
            f"   CPU {used:7.1f} ms ({used - cpu_base:+.1f})"
        )
    above = [
        tether - bare
        for tether, bare in zip(fastest["import tether"], fastest["python -c pass"], strict=True)
    ]
    usable = [
        api - asyncio
        for api, asyncio in zip(fastest["the usable API"], fastest["import asyncio"], strict=True)
    ]
    figures["goals"] = [
        goals.at_most("`import tether` above `python -c pass`", above, 50, unit="ms"),
        goals.at_most(
            "importing the usable API (run_agent_loop, OpenAIChatModel, coding_tools, "
            "SessionStore) above `import asyncio`",
            usable,
            30,
            unit="ms",
        ),
    ]
    for goal in figures["goals"]:
        print(goals.line(goal))
    if options.json_out:
        Path(options.json_out).write_text(json.dumps(figures, indent=2), encoding="utf-8")
    return figures


if __name__ == "__main__":
    main()
