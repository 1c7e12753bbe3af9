"""Evaluation executors: per-run overhead of ``LocalExecutor`` and ``RayExecutor``, and where
Ray starts to pay off.

* Overhead: 1,000 scripted runs (250 fixture-like tasks x 4 repetitions, the offline fixture
  candidate, the deterministic judge) through ``LocalExecutor`` (concurrency 8) and
  ``RayExecutor`` (a local Ray with 2 CPUs, started once before timing, concurrency 8).
  Reported: wall-clock microseconds per run (median of rounds).
* Crossover: a candidate that takes ``T`` ms per run, either CPU-bound (a busy loop: one
  event loop runs one at a time, Ray runs two at once on 2 CPUs) or waiting
  (``asyncio.sleep``: the local loop overlaps 8, Ray runs 2 per CPU slot). Reported: ms per
  run for each executor and each ``T``, and the estimated CPU-bound crossover
  ``T* = 2 x (ray overhead - local overhead)`` (local costs ``o_l + T`` per run, Ray with 2
  CPUs ``o_r + T/2``).

Needs Ray (the ``tether[ray]`` extra); without it only the local figures are reported.

    python benchmarks/bench_eval.py [--quick] [--json] [--json-out FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tether.evals.executors import EvaluationExecutor, LocalExecutor
from tether.evals.fixture_candidate import fixture_candidate
from tether.evals.runner import run_evaluation
from tether.evals.types import (
    EvaluationCompleted,
    EvaluationRuntimeInput,
    RuntimeFactoryInput,
)

CONCURRENCY = 8
RAY_CPUS = 2


def suite(tasks: int) -> dict[str, Any]:
    """``tasks`` fixture-like tasks (alternating pass and fail answers)."""
    return {
        "schemaVersion": 1,
        "tasks": [
            {
                "id": f"task-{n:04d}",
                "split": "held-out",
                "prompt": f"Add {n} and 1, then report the result as a decimal number.",
                "expectedPublicEvidence": {"includes": [str(n + 1)]},
                "candidatePublicEvidence": [str(n + 1 if n % 2 == 0 else n)],
                "expectedVerdict": "pass" if n % 2 == 0 else "fail",
            }
            for n in range(tasks)
        ],
    }


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkRuntime:
    """Answers after ``ms`` milliseconds of busy CPU (``cpu``) or of waiting."""

    ms: float
    cpu: bool

    async def run(self, input: EvaluationRuntimeInput, /) -> EvaluationCompleted:
        if self.cpu:
            end = time.perf_counter() + self.ms / 1000
            while time.perf_counter() < end:
                pass
        else:
            await asyncio.sleep(self.ms / 1000)
        return EvaluationCompleted(public_evidence=("1",))

    def dispose(self) -> None:
        return None


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkCandidate:
    id: str = "work"
    ms: float
    cpu: bool

    def create_runtime(self, input: RuntimeFactoryInput, /) -> WorkRuntime:
        return WorkRuntime(ms=self.ms, cpu=self.cpu)


async def timed(candidate: Any, source: dict[str, Any], repetitions: int, executor: Any) -> float:
    started = time.perf_counter()
    report = await run_evaluation(
        candidate=candidate,
        tasks=source,
        repetitions=repetitions,
        concurrency=CONCURRENCY,
        executor=executor,
    )
    elapsed = time.perf_counter() - started
    return elapsed / len(report.runs)


def overhead(executors: dict[str, EvaluationExecutor], runs: int, rounds: int) -> dict[str, float]:
    """Median wall microseconds per run of the fixture candidate, for each executor."""
    source = suite(runs // 4)
    candidate = fixture_candidate(source)
    samples: dict[str, list[float]] = {name: [] for name in executors}
    for index in range(rounds):
        order = list(executors) if index % 2 == 0 else list(reversed(executors))
        for name in order:
            per_run = asyncio.run(timed(candidate, source, 4, executors[name]))
            samples[name].append(per_run * 1e6)
    return {name: statistics.median(values) for name, values in samples.items()}


def crossover(
    executors: dict[str, EvaluationExecutor], values: tuple[float, ...], runs: int
) -> list[dict[str, Any]]:
    """ms per run for each T (CPU-bound and waiting), for each executor."""
    source = suite(runs)
    rows: list[dict[str, Any]] = []
    for ms in values:
        for cpu in (True, False):
            candidate = WorkCandidate(ms=ms, cpu=cpu)
            row: dict[str, Any] = {"T_ms": ms, "kind": "cpu" if cpu else "sleep"}
            for name, executor in executors.items():
                row[name] = asyncio.run(timed(candidate, source, 1, executor)) * 1e3
            rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs and rounds")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--json-out", help="also write the figures as JSON here")
    args = parser.parse_args(argv)
    runs = 200 if args.quick else 1000
    rounds = 1 if args.quick else 3
    values = (1.0, 10.0, 50.0) if args.quick else (0.5, 2.0, 5.0, 10.0, 25.0, 50.0)
    crossover_runs = 16 if args.quick else 48
    executors: dict[str, EvaluationExecutor] = {"local": LocalExecutor()}
    have_ray = importlib.util.find_spec("ray") is not None
    ray: Any = None
    if have_ray:
        import logging

        import ray

        from tether.evals.ray_executor import RayExecutor

        ray.init(
            num_cpus=RAY_CPUS,
            include_dashboard=False,
            log_to_driver=False,
            logging_level=logging.ERROR,
        )
        executors["ray"] = RayExecutor()
    try:
        if have_ray:  # warm the workers up (imports, function export)
            overhead(executors, 40, 1)
        per_run = overhead(executors, runs, rounds)
        rows = crossover(executors, values, crossover_runs)
    finally:
        if ray is not None:
            ray.shutdown()
    report: dict[str, Any] = {
        "runs": runs,
        "concurrency": CONCURRENCY,
        "ray_cpus": RAY_CPUS if have_ray else None,
        "us_per_run": per_run,
        "crossover": rows,
    }
    if have_ray:
        estimate = 2 * (per_run["ray"] - per_run["local"]) / 1000
        report["estimated_cpu_crossover_ms"] = estimate
        measured = [
            row["T_ms"] for row in rows if row["kind"] == "cpu" and row["ray"] < row["local"]
        ]
        report["measured_cpu_crossover_ms"] = min(measured) if measured else None
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(report, indent=2), encoding="utf-8")
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        for name, value in per_run.items():
            print(f"{name:<6} {value:9.1f} us per run ({runs} runs, concurrency {CONCURRENCY})")
        for row in rows:
            cells = "  ".join(
                f"{name} {row[name]:7.2f} ms/run" for name in executors if name in row
            )
            print(f"T={row['T_ms']:5.1f} ms {row['kind']:<5}  {cells}")
        if have_ray:
            print(
                f"estimated CPU-bound crossover: T* = {report['estimated_cpu_crossover_ms']:.1f}"
                f" ms per run; measured: ray faster from T = "
                f"{report['measured_cpu_crossover_ms']} ms"
            )
    return report


if __name__ == "__main__":
    main()
