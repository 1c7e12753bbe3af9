"""Coding tools on a 10,000-file tree: ``list_files`` and ``grep`` against ``find`` and
``grep -rn`` (and ``rg`` when it is on PATH), in the same run, wall time.

The tree: 100 directories of 100 small Python files, a few of which hold the searched token
and match the searched name, so every contender walks the whole tree and finds the same few
files. tether runs its tools through ``execute_tool_call`` (as the agent loop does); the
command-line tools run as processes, so their figures include a process start.

    python benchmarks/bench_coding.py [--quick] [--json] [--json-out PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import goals
from tether import AbortController, ToolCall, coding_tools, execute_tool_call

DIRECTORIES = 100
FILES_PER_DIRECTORY = 100
NEEDLE = "needle_token_42"


def build_tree(root: Path) -> int:
    """Write the tree; returns how many files hold the needle (and match ``needle*.py``)."""
    found = 0
    for d in range(DIRECTORIES):
        folder = root / f"pkg{d:03d}"
        folder.mkdir()
        for f in range(FILES_PER_DIRECTORY):
            special = d % 25 == 0 and f == 7
            name = f"needle{d}.py" if special else f"mod{f:03d}.py"
            body = f"def f{f}():\n    return {f}\n" * 3
            if special:
                body += f"# {NEEDLE}\n"
                found += 1
            (folder / name).write_text(body, encoding="utf-8")
    return found


def timed_rounds(runners: dict[str, Any], rounds: int) -> dict[str, list[float]]:
    """Wall milliseconds of each runner, one sample per round, the runners interleaved.

    Every round times each runner once, in alternating order, so a ratio of two runners'
    samples of one round compares runs a few milliseconds apart: the load other processes put
    on a shared machine shifts between rounds, and timing one runner's rounds all before the
    other's measured that shift as much as the code.
    """
    samples: dict[str, list[float]] = {name: [] for name in runners}
    for index in range(rounds):
        order = list(runners) if index % 2 == 0 else list(reversed(runners))
        for name in order:
            started = time.perf_counter()
            runners[name]()
            samples[name].append((time.perf_counter() - started) * 1e3)
    return samples


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--json-out", help="also write the figures as JSON here")
    options = parser.parse_args(argv)
    rounds = 3 if options.quick else 9
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        expected = build_tree(root)
        tools = coding_tools(root)
        loop = asyncio.new_event_loop()
        signal = AbortController().signal

        def tool(name: str, arguments: dict[str, Any]) -> str:
            call = ToolCall(id="bench", name=name, arguments=arguments)
            result = loop.run_until_complete(execute_tool_call(tools, call, signal))
            assert not result.is_error, result.content
            return result.content

        def tether_list() -> None:
            out = tool("list_files", {"pattern": "**/needle*.py", "limit": 2000})
            assert out.count("needle") >= expected, out

        def tether_grep() -> None:
            out = tool("grep", {"pattern": NEEDLE, "limit": 1000})
            assert out.count(NEEDLE) == expected, out

        def command(*args: str) -> Any:
            def run() -> None:
                done = subprocess.run(args, cwd=root, capture_output=True, text=True, check=False)
                assert done.stdout.count("needle") >= expected, done.stdout[:200]

            return run

        contenders: dict[str, dict[str, Any]] = {
            "list_files": {
                "tether": tether_list,
                "find": command("find", ".", "-name", "needle*.py"),
            },
            "grep": {
                "tether": tether_grep,
                "grep -rn": command("grep", "-rn", NEEDLE, "."),
            },
        }
        if shutil.which("rg"):
            contenders["list_files"]["rg --files"] = command("rg", "--files", "-g", "needle*.py")
            contenders["grep"]["rg"] = command("rg", "-n", NEEDLE)
            contenders["grep"]["rg -j1 -n"] = command("rg", "-j1", "-n", NEEDLE)
        figures: dict[str, Any] = {"files": DIRECTORIES * FILES_PER_DIRECTORY, "ms": {}}
        samples: dict[str, dict[str, list[float]]] = {}
        try:
            for task, runners in contenders.items():
                for run in runners.values():
                    run()  # warm up, and check every contender finds the same files
                runs = timed_rounds(runners, rounds)
                samples[task] = runs
                figures["ms"][task] = {name: statistics.median(v) for name, v in runs.items()}
        finally:
            loop.close()
    figures["ratios"] = {
        task: {
            f"tether/{name}": values["tether"] / value
            for name, value in values.items()
            if name != "tether"
        }
        for task, values in figures["ms"].items()
    }
    what = "grep over the tree vs rg -j1 -n (wall, rg as a process)"
    grep = samples["grep"]
    if "rg -j1 -n" in grep:
        figures["goals"] = [
            goals.at_most(what, goals.ratios(grep["tether"], grep["rg -j1 -n"]), 1.5)
        ]
    else:
        figures["goals"] = [goals.skipped(what, "≤ 1.5x", "rg (ripgrep) is not on PATH")]
    if options.json_out:
        Path(options.json_out).write_text(json.dumps(figures, indent=2), encoding="utf-8")
    if options.json:
        print(json.dumps(figures, indent=2))
    else:
        print(f"coding tools on {figures['files']:,} files, median wall ms")
        for task, values in figures["ms"].items():
            for name, value in values.items():
                print(f"  {task:<11} {name:<12} {value:8.1f} ms")
        for task, ratios in figures["ratios"].items():
            for label, ratio in ratios.items():
                print(f"  {task:<11} {label:<20} {ratio:6.2f}x")
        for goal in figures["goals"]:
            print(goals.line(goal))
    return figures


if __name__ == "__main__":
    main()
