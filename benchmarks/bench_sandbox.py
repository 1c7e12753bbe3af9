"""The sandbox's start-up cost: one ``bash`` call of ``true`` inside bubblewrap next to the
same call unsandboxed, in the same run (wall time per call, through ``execute_tool_call`` as
the agent loop runs it: supervisor, pipes, reaping, result).

    python benchmarks/bench_sandbox.py [--quick] [--json] [--json-out PATH]

Rounds alternate the order. The goal: a sandboxed call costs at most 25 ms more than an
unsandboxed one (a command a model runs takes far longer than that). SKIPPED where
bubblewrap cannot run (``apt-get install bubblewrap``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import goals
from tether import AbortController, JsonObject, ToolCall, execute_tool_call
from tether.tools.coding import Sandbox, coding_tools, sandbox_status


async def per_call_ms(root: Path, sandbox: Sandbox | None, calls: int) -> float:
    tools = coding_tools(root, sandbox=sandbox)
    call = ToolCall(id="c", name="bash", arguments=JsonObject({"command": "true"}))
    signal = AbortController().signal
    started = time.perf_counter()
    for _ in range(calls):
        result = await execute_tool_call(tools, call, signal)
        if not result.content.startswith("exit code 0"):
            raise SystemExit(f"bash true failed: {result.content}")
    return (time.perf_counter() - started) / calls * 1e3


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="fewer calls per round")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--json-out", help="also write the figures as JSON here")
    options = parser.parse_args(argv)
    calls = 10 if options.quick else 40
    rounds = goals.MIN_REPEATS if options.quick else 5
    what = "sandboxed bash call vs unsandboxed, ms added per call"
    status = sandbox_status()
    figures: dict[str, Any] = {"calls": calls, "rounds": rounds}
    print(f"sandbox start-up: bash 'true' through the tool, {calls} calls x {rounds} rounds")
    if not status.available:
        figures["goals"] = [goals.skipped(what, "≤ +25.0 ms", status.reason or "unavailable")]
    else:
        samples: dict[str, list[float]] = {"plain": [], "sandboxed": []}
        with tempfile.TemporaryDirectory() as scratch, asyncio.Runner() as runner:
            root = Path(scratch)
            contenders = {"plain": None, "sandboxed": Sandbox()}
            runner.run(per_call_ms(root, None, 2))  # warm up both paths
            runner.run(per_call_ms(root, Sandbox(), 2))
            for index in range(rounds):
                names = list(contenders) if index % 2 == 0 else list(contenders)[::-1]
                for name in names:
                    samples[name].append(runner.run(per_call_ms(root, contenders[name], calls)))
        plain = statistics.median(samples["plain"])
        boxed = statistics.median(samples["sandboxed"])
        print(f"  unsandboxed  {plain:7.2f} ms per call")
        print(f"  sandboxed    {boxed:7.2f} ms per call  ({boxed / plain:.2f}x)")
        added = [
            box - base for box, base in zip(samples["sandboxed"], samples["plain"], strict=True)
        ]
        figures.update(plain_ms=plain, sandboxed_ms=boxed, samples=samples)
        figures["goals"] = [goals.at_most(what, added, 25.0, unit="ms")]
    for goal in figures["goals"]:
        print(goals.line(goal))
    if options.json_out:
        Path(options.json_out).write_text(json.dumps(figures, indent=2), encoding="utf-8")
    if options.json:
        print(json.dumps(figures, indent=2))
    return figures


if __name__ == "__main__":
    main()
