"""The plain-text summary of an evaluation, as ``tether eval`` prints it on stdout.

``format_summary(report, comparison=None)`` gives: the candidate and its pass / fail / error
counts and rates; one row per task (in report order) with its counts and the verdict of each
run (``P`` pass, ``F`` fail, ``E`` error, in run order) and the error codes seen; and, with a
comparison, the rate deltas, the improved / regressed / unchanged counts and one line per run
whose verdict changed. Only report data appears (IDs, verdicts, codes, numbers), so a summary
is as privacy-bounded as the report it shows. Plain ASCII, fixed-width columns.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import field
from typing import Final

from tether._base.dataclass import dataclass
from tether.evals.types import (
    EvaluationComparison,
    EvaluationReport,
    EvaluationRunReport,
    EvaluationVerdict,
)

__all__ = ["TaskSummary", "format_summary", "task_summaries"]

_MARKS: Final[dict[EvaluationVerdict, str]] = {"pass": "P", "fail": "F", "error": "E"}
_MAX_MARKS: Final = 64
"""Run marks shown per task; more are cut with ``...``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskSummary:
    """One task's runs in a report: counts, the verdicts in run order and the error codes."""

    task_id: str
    verdicts: tuple[EvaluationVerdict, ...]
    error_codes: tuple[tuple[str, int], ...] = field(default=())

    @property
    def runs(self) -> int:
        """Runs of the task."""
        return len(self.verdicts)

    def count(self, verdict: EvaluationVerdict) -> int:
        """Runs with ``verdict``."""
        return sum(1 for seen in self.verdicts if seen == verdict)

    @property
    def pass_rate(self) -> float:
        """Passed runs / runs."""
        return self.count("pass") / self.runs


def task_summaries(report: EvaluationReport) -> tuple[TaskSummary, ...]:
    """The report's runs grouped by task, tasks in order of their first run."""
    groups: dict[str, list[EvaluationRunReport]] = {}
    for run in report.runs:
        groups.setdefault(run.task_id, []).append(run)
    summaries: list[TaskSummary] = []
    for task_id, runs in groups.items():
        codes = Counter(run.error_code for run in runs if run.error_code is not None)
        summaries.append(
            TaskSummary(
                task_id=task_id,
                verdicts=tuple(run.verdict for run in runs),
                error_codes=tuple(sorted(codes.items())),
            )
        )
    return tuple(summaries)


def _percent(rate: float) -> str:
    return f"{rate * 100:.1f}%"


def _points(delta: float) -> str:
    points = delta * 100
    if abs(points) < 0.05:  # no "-0.0"
        points = 0.0
    return f"{points:+.1f} pts"


def _marks(verdicts: tuple[EvaluationVerdict, ...]) -> str:
    marks = "".join(_MARKS[verdict] for verdict in verdicts)
    if len(marks) > _MAX_MARKS:
        return marks[:_MAX_MARKS] + "..."
    return marks


def format_summary(report: EvaluationReport, comparison: EvaluationComparison | None = None) -> str:
    """The summary text (ends with a newline); see the module docstring."""
    totals = report.public_metrics
    lines = [
        f"candidate: {report.candidate_id}",
        f"runs: {totals.total_runs}  pass: {totals.passed_runs} ({_percent(totals.pass_rate)})"
        f"  fail: {totals.failed_runs} ({_percent(totals.fail_rate)})"
        f"  error: {totals.error_runs} ({_percent(totals.error_rate)})",
        "",
    ]
    tasks = task_summaries(report)
    header = ("TASK", "RUNS", "PASS", "FAIL", "ERROR", "VERDICTS")
    rows = [
        (
            task.task_id,
            str(task.runs),
            str(task.count("pass")),
            str(task.count("fail")),
            str(task.count("error")),
            _marks(task.verdicts)
            + "".join(f" {code} x{count}" for code, count in task.error_codes),
        )
        for task in tasks
    ]
    width = max(len(row[0]) for row in [header, *rows])
    for row in [header, *rows]:
        numbers = "".join(cell.rjust(6) for cell in row[1:5])
        lines.append(f"{row[0].ljust(width)}{numbers}  {row[5]}".rstrip())
    if comparison is not None:
        lines += ["", *_comparison_lines(comparison)]
    return "\n".join(lines) + "\n"


def _comparison_lines(comparison: EvaluationComparison) -> list[str]:
    metrics = comparison.public_metrics
    lines = [
        f"compared with: {comparison.baseline_candidate_id} (baseline)",
        f"pass rate {_points(metrics.pass_rate_delta)}  fail rate "
        f"{_points(metrics.fail_rate_delta)}  error rate {_points(metrics.error_rate_delta)}",
        f"improved: {metrics.improved_runs}  regressed: {metrics.regressed_runs}"
        f"  unchanged: {metrics.unchanged_runs}",
    ]
    changed = [run for run in comparison.runs if run.outcome != "unchanged"]
    if changed:
        width = max(len(run.task_id) for run in changed)
        for run in changed:
            lines.append(
                f"  {run.outcome.ljust(9)} {run.task_id.ljust(width)} {run.run_id}"
                f"  {run.baseline_verdict} -> {run.candidate_verdict}"
            )
    return lines
