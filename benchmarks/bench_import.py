"""Import cost: ``import tether`` next to the peers, as fresh processes, against ``python -c pass``.

Each statement runs in a new interpreter many times; the median wall time is reported, with
the ratio to ``python -c pass`` and the milliseconds above it. ``import tether`` loads the
package root only (its public names load on first use); ``tether (all layers)`` also touches
``run_agent_loop``, which loads every layer, asyncio included. ``import asyncio`` is shown for
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
    "tether (all layers)": "import tether; tether.run_agent_loop",
    "import pydantic_ai": "import pydantic_ai",
    "import agents": "import agents",
}
OPTIONAL = {"import pydantic_ai": "pydantic_ai", "import agents": "agents"}

# Bytecode is written and used as it is on an installed package: PYTHONDONTWRITEBYTECODE in
# the caller's environment would make every process compile tether from source.
ENVIRONMENT = {
    name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"
}


def time_statement(code: str) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, env=ENVIRONMENT)
    return (time.perf_counter() - started) * 1000


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--json-out", help="also write the figures as JSON here")
    options = parser.parse_args(argv)
    repetitions = 7 if options.quick else 21
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
    samples: dict[str, list[float]] = {label: [] for label in statements}
    for code in statements.values():  # warm the file cache (and write the bytecode) once
        time_statement(code)
    for index in range(repetitions):
        order = list(statements) if index % 2 == 0 else list(reversed(statements))
        for label in order:
            samples[label].append(time_statement(statements[label]))
    base = statistics.median(samples["python -c pass"])
    figures: dict[str, Any] = {}
    print(f"import cost: median of {repetitions} fresh processes")
    for label, values in samples.items():
        median = statistics.median(values)
        figures[label] = {"ms": median, "ratio": median / base, "above_ms": median - base}
        print(f"  {label:<22} {median:8.1f} ms   {median / base:6.2f}x   {median - base:+8.1f} ms")
    above = [
        tether - bare
        for tether, bare in zip(samples["import tether"], samples["python -c pass"], strict=True)
    ]
    usable = [
        api - asyncio
        for api, asyncio in zip(samples["the usable API"], samples["import asyncio"], strict=True)
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
