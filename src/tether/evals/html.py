"""A self-contained HTML page for one or more evaluation reports (``tether eval --html``).

``render_html(reports, comparison=None)`` returns one document: inline CSS, an inline SVG bar
chart of the pass rate of each task for each candidate (one ``<rect class="bar">`` per pair
that has runs, grouped by task, one colour per report), a totals table, the comparison (rate
deltas and the runs whose verdict changed) when given, and a table of every run. No
JavaScript, no external URL, no font or image to fetch: the file opens anywhere, offline.

Every text taken from a report is HTML-escaped (IDs match a safe pattern, but the page does
not rely on it), and the reports are validated first (``capture_report``), so only report data
(IDs, verdicts, error codes, metric names and numbers) can appear.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import Final

from tether.evals.report import capture_report
from tether.evals.summary import task_summaries
from tether.evals.types import EvaluationComparison, EvaluationReport

__all__ = ["CHART_COLORS", "render_html"]

CHART_COLORS: Final = ("#2f6fdf", "#e07b28", "#2a9d62", "#b8407a", "#7a5bd0", "#8c8c2a")
"""Bar colours, one per report (cycled)."""

_CSS: Final = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:2rem;color:#1d1d1f;
background:#fff;line-height:1.4}
h1{font-size:1.5rem}h2{font-size:1.15rem;margin-top:2rem}
table{border-collapse:collapse;margin:.5rem 0;font-size:.9rem}
th,td{border:1px solid #d0d0d5;padding:.25rem .6rem;text-align:left}
th{background:#f3f3f6}td.num{text-align:right;font-variant-numeric:tabular-nums}
.pass{color:#1f7a4a}.fail{color:#b3261e}.error{color:#8a5a00}
.improved{color:#1f7a4a}.regressed{color:#b3261e}
svg text{font-family:inherit;font-size:11px;fill:#1d1d1f}
.legend span{display:inline-block;width:.8rem;height:.8rem;margin:0 .3rem 0 1rem;
vertical-align:middle}
"""

_CHART_HEIGHT: Final = 200
_BAR_WIDTH: Final = 22
_BAR_GAP: Final = 4
_GROUP_GAP: Final = 28
_LEFT: Final = 44
_TOP: Final = 12
_BOTTOM: Final = 80


def _e(value: object) -> str:
    return escape(str(value), quote=True)


def _percent(rate: float) -> str:
    return f"{rate * 100:.1f}%"


def _number(value: float) -> str:
    return f"{value:g}"


def render_html(
    reports: Sequence[EvaluationReport], comparison: EvaluationComparison | None = None
) -> str:
    """The HTML document for ``reports`` (at least one; ``ValueError`` otherwise) and an
    optional ``comparison`` (see the module docstring). Raises ``EVALUATION_INVALID_REPORT``
    for an invalid report."""
    captured = [capture_report(report) for report in reports]
    if not captured:
        raise ValueError("render_html needs at least one report")
    title = "tether evaluation: " + ", ".join(report.candidate_id for report in captured)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        '<head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_e(title)}</title>",
        f"<style>{_CSS}</style></head>",
        "<body>",
        f"<h1>{_e(title)}</h1>",
        _totals(captured),
        "<h2>Pass rate per task</h2>",
        _legend(captured),
        _chart(captured),
    ]
    if comparison is not None:
        parts.append(_comparison(comparison))
    parts += [_runs(captured), "</body>", "</html>", ""]
    return "\n".join(parts)


def _color(index: int) -> str:
    return CHART_COLORS[index % len(CHART_COLORS)]


def _totals(reports: list[EvaluationReport]) -> str:
    rows = [
        '<table class="totals"><thead><tr><th>candidate</th><th>runs</th><th>pass</th>'
        "<th>fail</th><th>error</th><th>pass rate</th><th>fail rate</th><th>error rate</th>"
        "</tr></thead><tbody>"
    ]
    for report in reports:
        totals = report.public_metrics
        rows.append(
            f'<tr><td>{_e(report.candidate_id)}</td><td class="num">{totals.total_runs}</td>'
            f'<td class="num">{totals.passed_runs}</td><td class="num">{totals.failed_runs}</td>'
            f'<td class="num">{totals.error_runs}</td>'
            f'<td class="num">{_percent(totals.pass_rate)}</td>'
            f'<td class="num">{_percent(totals.fail_rate)}</td>'
            f'<td class="num">{_percent(totals.error_rate)}</td></tr>'
        )
    rows.append("</tbody></table>")
    return "".join(rows)


def _legend(reports: list[EvaluationReport]) -> str:
    items = "".join(
        f'<span style="background:{_color(index)}"></span>{_e(report.candidate_id)}'
        for index, report in enumerate(reports)
    )
    return f'<p class="legend">{items}</p>'


def _chart(reports: list[EvaluationReport]) -> str:
    """Grouped bars: per task (in order of first appearance), one bar per report with runs."""
    tasks: list[str] = []
    rates: dict[tuple[str, int], float] = {}
    for index, report in enumerate(reports):
        for summary in task_summaries(report):
            if summary.task_id not in tasks:
                tasks.append(summary.task_id)
            rates[(summary.task_id, index)] = summary.pass_rate
    group = len(reports) * (_BAR_WIDTH + _BAR_GAP)
    width = _LEFT + len(tasks) * (group + _GROUP_GAP) + _GROUP_GAP
    height = _TOP + _CHART_HEIGHT + _BOTTOM
    base = _TOP + _CHART_HEIGHT
    parts = [
        f'<svg class="chart" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
        'aria-label="pass rate per task and candidate">'
    ]
    for tick in (0, 25, 50, 75, 100):
        y = base - _CHART_HEIGHT * tick / 100
        parts.append(
            f'<line x1="{_LEFT}" y1="{y:g}" x2="{width}" y2="{y:g}" stroke="#e2e2e8"/>'
            f'<text x="{_LEFT - 6}" y="{y + 4:g}" text-anchor="end">{tick}%</text>'
        )
    for position, task_id in enumerate(tasks):
        left = _LEFT + _GROUP_GAP + position * (group + _GROUP_GAP)
        for index, report in enumerate(reports):
            rate = rates.get((task_id, index))
            if rate is None:
                continue
            bar = _CHART_HEIGHT * rate
            x = left + index * (_BAR_WIDTH + _BAR_GAP)
            label = f"{task_id} / {report.candidate_id}: {_percent(rate)} pass"
            parts.append(
                f'<rect class="bar" data-task="{_e(task_id)}" '
                f'data-candidate="{_e(report.candidate_id)}" data-pass-rate="{rate:g}" '
                f'x="{x}" y="{base - bar:g}" width="{_BAR_WIDTH}" height="{bar:g}" '
                f'fill="{_color(index)}"><title>{_e(label)}</title></rect>'
            )
        middle = left + group / 2
        parts.append(
            f'<text x="{middle:g}" y="{base + 14}" text-anchor="end" '
            f'transform="rotate(-30 {middle:g} {base + 14})">{_e(task_id)}</text>'
        )
    parts.append(
        f'<line x1="{_LEFT}" y1="{base}" x2="{width}" y2="{base}" stroke="#1d1d1f"/></svg>'
    )
    return "".join(parts)


def _comparison(comparison: EvaluationComparison) -> str:
    metrics = comparison.public_metrics
    parts = [
        f"<h2>Comparison with {_e(comparison.baseline_candidate_id)} (baseline)</h2>",
        '<table class="comparison-metrics"><thead><tr><th>pass rate</th><th>fail rate</th>'
        "<th>error rate</th><th>improved</th><th>regressed</th><th>unchanged</th></tr>"
        "</thead><tbody><tr>",
        f'<td class="num">{metrics.pass_rate_delta * 100:+.1f} pts</td>',
        f'<td class="num">{metrics.fail_rate_delta * 100:+.1f} pts</td>',
        f'<td class="num">{metrics.error_rate_delta * 100:+.1f} pts</td>',
        f'<td class="num">{metrics.improved_runs}</td>',
        f'<td class="num">{metrics.regressed_runs}</td>',
        f'<td class="num">{metrics.unchanged_runs}</td>',
        "</tr></tbody></table>",
        '<table class="comparison-runs"><thead><tr><th>task</th><th>run</th>'
        f"<th>{_e(comparison.baseline_candidate_id)}</th>"
        f"<th>{_e(comparison.candidate_candidate_id)}</th><th>outcome</th></tr></thead><tbody>",
    ]
    for run in comparison.runs:
        parts.append(
            f'<tr class="{_e(run.outcome)}"><td>{_e(run.task_id)}</td><td>{_e(run.run_id)}</td>'
            f'<td class="{_e(run.baseline_verdict)}">{_e(run.baseline_verdict)}</td>'
            f'<td class="{_e(run.candidate_verdict)}">{_e(run.candidate_verdict)}</td>'
            f'<td class="{_e(run.outcome)}">{_e(run.outcome)}</td></tr>'
        )
    parts.append("</tbody></table>")
    return "".join(parts)


def _runs(reports: list[EvaluationReport]) -> str:
    parts = [
        "<h2>Runs</h2>",
        '<table class="runs"><thead><tr><th>candidate</th><th>task</th><th>run</th>'
        "<th>verdict</th><th>error code</th><th>duration (ms)</th><th>metrics</th></tr>"
        "</thead><tbody>",
    ]
    for report in reports:
        for run in report.runs:
            metrics = ", ".join(
                f"{_e(name)}={_number(value)}" for name, value in run.public_metrics.items()
            )
            parts.append(
                f"<tr><td>{_e(run.candidate_id)}</td><td>{_e(run.task_id)}</td>"
                f"<td>{_e(run.run_id)}</td>"
                f'<td class="{_e(run.verdict)}">{_e(run.verdict)}</td>'
                f"<td>{_e(run.error_code or '')}</td>"
                f'<td class="num">{_number(run.duration_ms)}</td><td>{metrics}</td></tr>'
            )
    parts.append("</tbody></table>")
    return "".join(parts)
