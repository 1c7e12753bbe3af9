"""A self-contained HTML page for one or more evaluation reports (``tether eval --html``).

``render_html(reports, comparison=None, header=None)`` returns one document: inline CSS, a
header naming each candidate's model and tools, the tether version and the date (when a
``ReportHeader`` is given: a report itself carries only IDs and numbers), a totals table per
candidate, an inline SVG bar chart of the pass rate of each task for each candidate (one
``<rect class="bar">`` per pair that has runs, grouped by task, one colour per report), the
totals per task and candidate, the comparison (rate deltas and the runs whose verdict
changed) when given, and a table of every run. No JavaScript, no external URL, no font or
image to fetch: the file opens anywhere, offline.

What a reader sees is laid out to be read, and a test checks it in headless Chromium:

* the chart is horizontal, its task labels in a column as wide as the longest label (in a
  monospace font, so the width is known without a browser), so no label is cut off at any
  window width; every bar carries its rate as text, and a 0% bar is still drawn
  (``class="bar zero"``, 2 px wide), so "none passed" never looks like "no data";
* identifiers (candidate, task and run IDs) never break over lines (``td.id``); wide tables
  scroll sideways instead;
* tokens are the runs' ``inputTokens`` / ``outputTokens`` metrics (``n/a`` when a candidate
  reports none); cost is the ``costUsd`` metric, summed, and shown as ``unknown`` where a run
  has no price (``$0.01 + unknown`` when only some do), never as a silent 0; latency is the
  runs' measured durations (mean and total).

Every text taken from a report is HTML-escaped (IDs match a safe pattern, but the page does
not rely on it), and the reports are validated first (``capture_report``), so only report data
(IDs, verdicts, error codes, metric names and numbers) and the header's descriptions appear.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from typing import Final

from tether.evals.report import capture_report
from tether.evals.summary import task_summaries
from tether.evals.types import EvaluationComparison, EvaluationReport, EvaluationRunReport

__all__ = ["CHART_COLORS", "CandidateDescription", "ReportHeader", "render_html"]

CHART_COLORS: Final = ("#2f6fdf", "#e07b28", "#2a9d62", "#b8407a", "#7a5bd0", "#8c8c2a")
"""Bar colours, one per report (cycled)."""

COST_METRIC: Final = "costUsd"
"""The run metric holding what a run cost, in US dollars."""

_INPUT_TOKENS: Final = "inputTokens"
_OUTPUT_TOKENS: Final = "outputTokens"


@dataclass(frozen=True, slots=True, kw_only=True)
class CandidateDescription:
    """What a candidate was: ``model`` is its ``PROVIDER/MODEL`` spec (``None`` for the
    offline fixture candidate) and ``tools`` the tools it had (``"none"``, ``"coding"``)."""

    candidate_id: str
    model: str | None
    tools: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ReportHeader:
    """The page's header: the ``tether_version`` that ran, when the page was made
    (``generated_at``, as text: the caller picks the clock and format) and a description of
    each candidate it knows (a baseline read from a file may have none)."""

    tether_version: str
    generated_at: str
    candidates: tuple[CandidateDescription, ...] = ()


_CSS: Final = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:2rem;color:#1d1d1f;
background:#fff;line-height:1.4}
h1{font-size:1.5rem;margin-bottom:.2rem}h2{font-size:1.15rem;margin-top:2rem}
p.meta{color:#55555c;margin-top:0}
.scroll{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;margin:.5rem 0;font-size:.9rem}
th,td{border:1px solid #d0d0d5;padding:.25rem .6rem;text-align:left}
th{background:#f3f3f6}td.num{text-align:right;font-variant-numeric:tabular-nums;
white-space:nowrap}
td.id{white-space:nowrap;font-family:ui-monospace,"DejaVu Sans Mono",monospace;font-size:.85rem}
.pass{color:#1f7a4a}.fail{color:#b3261e}.error{color:#8a5a00}
.improved{color:#1f7a4a}.regressed{color:#b3261e}
svg text{font-family:inherit;font-size:11px;fill:#1d1d1f}
svg text.label{font-family:"DejaVu Sans Mono",ui-monospace,monospace}
.legend span{display:inline-block;width:.8rem;height:.8rem;margin:0 .3rem 0 1rem;
vertical-align:middle}
"""

_CHAR_WIDTH: Final = 7.0
"""Width of one character of the chart's 11 px monospace labels, rounded up (0.6 em)."""
_BAR_HEIGHT: Final = 14
_BAR_GAP: Final = 3
_GROUP_GAP: Final = 12
_PLOT_WIDTH: Final = 320
_MIN_BAR: Final = 2
"""A 0% bar is this wide, so it is seen."""
_RATE_LABEL: Final = 52
"""Room right of a bar for its rate (``100.0%``) and of the plot for the last tick."""
_PAD: Final = 8
_AXIS: Final = 22


def _e(value: object) -> str:
    return escape(str(value), quote=True)


def _percent(rate: float) -> str:
    return f"{rate * 100:.1f}%"


def _number(value: float) -> str:
    return f"{value:g}"


def _count(value: float) -> str:
    return f"{round(value):,}"


def _duration(ms: float) -> str:
    if ms < 1000:
        return f"{ms:.0f} ms"
    return f"{ms / 1000:.2f} s"


def _id(value: str) -> str:
    return f'<td class="id">{_e(value)}</td>'


def _num(text: str) -> str:
    return f'<td class="num">{_e(text)}</td>'


def render_html(
    reports: Sequence[EvaluationReport],
    comparison: EvaluationComparison | None = None,
    *,
    header: ReportHeader | None = None,
) -> str:
    """The HTML document for ``reports`` (at least one; ``ValueError`` otherwise), an
    optional ``comparison`` and an optional ``header`` (see the module docstring). Raises
    ``EVALUATION_INVALID_REPORT`` for an invalid report."""
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
    ]
    if header is not None:
        parts.append(_header(header))
    parts += [
        "<h2>Totals</h2>",
        _totals(captured),
        "<h2>Pass rate per task</h2>",
        _legend(captured),
        _chart(captured),
        "<h2>Per task</h2>",
        _per_task(captured),
    ]
    if comparison is not None:
        parts.append(_comparison(comparison))
    parts += [_runs(captured), "</body>", "</html>", ""]
    return "\n".join(parts)


def _color(index: int) -> str:
    return CHART_COLORS[index % len(CHART_COLORS)]


def _header(header: ReportHeader) -> str:
    parts = [f'<p class="meta">tether {_e(header.tether_version)} · {_e(header.generated_at)}</p>']
    if header.candidates:
        parts.append(
            '<div class="scroll"><table class="candidates"><thead><tr><th>candidate</th>'
            "<th>model</th><th>tools</th></tr></thead><tbody>"
        )
        for candidate in header.candidates:
            model = candidate.model if candidate.model is not None else "offline fixture"
            parts.append(
                f"<tr>{_id(candidate.candidate_id)}{_id(model)}<td>{_e(candidate.tools)}</td></tr>"
            )
        parts.append("</tbody></table></div>")
    return "".join(parts)


@dataclass(frozen=True, slots=True)
class _Usage:
    """Tokens, cost and latency of some runs."""

    runs: int
    input_tokens: float | None
    output_tokens: float | None
    cost: float
    priced: int
    total_ms: float

    def cost_text(self) -> str:
        if self.priced == 0:
            return "unknown"
        known = f"${self.cost:.4f}".rstrip("0").rstrip(".") if self.cost else "$0"
        return known if self.priced == self.runs else f"{known} + unknown"

    def cells(self) -> str:
        tokens = [
            "n/a" if value is None else _count(value)
            for value in (self.input_tokens, self.output_tokens)
        ]
        mean = self.total_ms / self.runs if self.runs else 0.0
        return "".join(
            _num(text)
            for text in (*tokens, self.cost_text(), _duration(mean), _duration(self.total_ms))
        )


def _sum_metric(runs: Sequence[EvaluationRunReport], name: str) -> float | None:
    values = [run.public_metrics[name] for run in runs if name in run.public_metrics]
    return sum(values) if values else None


def _usage(runs: Sequence[EvaluationRunReport]) -> _Usage:
    costs = [run.public_metrics[COST_METRIC] for run in runs if COST_METRIC in run.public_metrics]
    return _Usage(
        runs=len(runs),
        input_tokens=_sum_metric(runs, _INPUT_TOKENS),
        output_tokens=_sum_metric(runs, _OUTPUT_TOKENS),
        cost=sum(costs),
        priced=len(costs),
        total_ms=sum(run.duration_ms for run in runs),
    )


_USAGE_HEADINGS: Final = (
    "<th>input tokens</th><th>output tokens</th><th>cost</th><th>mean latency</th>"
    "<th>total time</th>"
)


def _totals(reports: list[EvaluationReport]) -> str:
    rows = [
        '<div class="scroll"><table class="totals"><thead><tr><th>candidate</th><th>runs</th>'
        "<th>pass</th><th>fail</th><th>error</th><th>pass rate</th>"
        f"{_USAGE_HEADINGS}</tr></thead><tbody>"
    ]
    for report in reports:
        totals = report.public_metrics
        rows.append(
            f"<tr>{_id(report.candidate_id)}{_num(str(totals.total_runs))}"
            f"{_num(str(totals.passed_runs))}{_num(str(totals.failed_runs))}"
            f"{_num(str(totals.error_runs))}{_num(_percent(totals.pass_rate))}"
            f"{_usage(report.runs).cells()}</tr>"
        )
    rows.append("</tbody></table></div>")
    return "".join(rows)


def _per_task(reports: list[EvaluationReport]) -> str:
    rows = [
        '<div class="scroll"><table class="tasks"><thead><tr><th>task</th><th>candidate</th>'
        f"<th>runs</th><th>pass rate</th>{_USAGE_HEADINGS}</tr></thead><tbody>"
    ]
    for task_id in _task_order(reports):
        for report in reports:
            runs = [run for run in report.runs if run.task_id == task_id]
            if not runs:
                continue
            passed = sum(1 for run in runs if run.verdict == "pass")
            rows.append(
                f"<tr>{_id(task_id)}{_id(report.candidate_id)}{_num(str(len(runs)))}"
                f"{_num(_percent(passed / len(runs)))}{_usage(runs).cells()}</tr>"
            )
    rows.append("</tbody></table></div>")
    return "".join(rows)


def _task_order(reports: list[EvaluationReport]) -> list[str]:
    """Task IDs in order of first appearance across the reports."""
    return list(dict.fromkeys(run.task_id for report in reports for run in report.runs))


def _legend(reports: list[EvaluationReport]) -> str:
    items = "".join(
        f'<span style="background:{_color(index)}"></span>{_e(report.candidate_id)}'
        for index, report in enumerate(reports)
    )
    return f'<p class="legend">{items}</p>'


def _chart(reports: list[EvaluationReport]) -> str:
    """Horizontal grouped bars: per task (in order of first appearance), one bar per report
    with runs of it, the task's label left of its group."""
    rates: dict[tuple[str, int], float] = {}
    for index, report in enumerate(reports):
        for summary in task_summaries(report):
            rates[(summary.task_id, index)] = summary.pass_rate
    tasks = _task_order(reports)
    label_width = _PAD + max(len(task) for task in tasks) * _CHAR_WIDTH + _PAD
    left = label_width
    group_heights = [
        sum(1 for index in range(len(reports)) if (task, index) in rates) * (_BAR_HEIGHT + _BAR_GAP)
        for task in tasks
    ]
    plot_height = sum(group_heights) + _GROUP_GAP * (len(tasks) + 1)
    width = left + _PLOT_WIDTH + _RATE_LABEL
    height = plot_height + _AXIS
    parts = [
        f'<div class="scroll"><svg class="chart" width="{width:g}" height="{height}" '
        f'viewBox="0 0 {width:g} {height}" role="img" '
        'aria-label="pass rate per task and candidate">'
    ]
    for tick in (0, 25, 50, 75, 100):
        x = left + _PLOT_WIDTH * tick / 100
        anchor = "start" if tick == 0 else "middle"
        parts.append(
            f'<line x1="{x:g}" y1="0" x2="{x:g}" y2="{plot_height}" stroke="#e2e2e8"/>'
            f'<text x="{x:g}" y="{plot_height + 15}" text-anchor="{anchor}">{tick}%</text>'
        )
    top = _GROUP_GAP
    for task_id, group_height in zip(tasks, group_heights, strict=True):
        parts.append(
            f'<text class="label" x="{_PAD}" y="{top + group_height / 2 + 4:g}">'
            f"{_e(task_id)}</text>"
        )
        y = top
        for index, report in enumerate(reports):
            rate = rates.get((task_id, index))
            if rate is None:
                continue
            bar = max(_MIN_BAR, _PLOT_WIDTH * rate)
            label = f"{task_id} / {report.candidate_id}: {_percent(rate)} pass"
            kind = "bar zero" if rate == 0 else "bar"
            parts.append(
                f'<rect class="{kind}" data-task="{_e(task_id)}" '
                f'data-candidate="{_e(report.candidate_id)}" data-pass-rate="{rate:g}" '
                f'x="{left:g}" y="{y}" width="{bar:g}" height="{_BAR_HEIGHT}" '
                f'fill="{_color(index)}"><title>{_e(label)}</title></rect>'
                f'<text x="{left + bar + 4:g}" y="{y + _BAR_HEIGHT - 3}">{_percent(rate)}</text>'
            )
            y += _BAR_HEIGHT + _BAR_GAP
        top += group_height + _GROUP_GAP
    parts.append(
        f'<line x1="{left:g}" y1="0" x2="{left:g}" y2="{plot_height}" stroke="#1d1d1f"/>'
        "</svg></div>"
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
        '<div class="scroll"><table class="comparison-runs"><thead><tr><th>task</th><th>run</th>'
        f"<th>{_e(comparison.baseline_candidate_id)}</th>"
        f"<th>{_e(comparison.candidate_candidate_id)}</th><th>outcome</th></tr></thead><tbody>",
    ]
    for run in comparison.runs:
        parts.append(
            f'<tr class="{_e(run.outcome)}">{_id(run.task_id)}{_id(run.run_id)}'
            f'<td class="{_e(run.baseline_verdict)}">{_e(run.baseline_verdict)}</td>'
            f'<td class="{_e(run.candidate_verdict)}">{_e(run.candidate_verdict)}</td>'
            f'<td class="{_e(run.outcome)}">{_e(run.outcome)}</td></tr>'
        )
    parts.append("</tbody></table></div>")
    return "".join(parts)


def _runs(reports: list[EvaluationReport]) -> str:
    parts = [
        "<h2>Runs</h2>",
        '<div class="scroll"><table class="runs"><thead><tr><th>candidate</th><th>task</th>'
        "<th>run</th><th>verdict</th><th>error code</th><th>duration (ms)</th><th>metrics</th>"
        "</tr></thead><tbody>",
    ]
    for report in reports:
        for run in report.runs:
            metrics = ", ".join(
                f"{_e(name)}={_number(value)}" for name, value in run.public_metrics.items()
            )
            parts.append(
                f"<tr>{_id(run.candidate_id)}{_id(run.task_id)}{_id(run.run_id)}"
                f'<td class="{_e(run.verdict)}">{_e(run.verdict)}</td>'
                f'<td class="id">{_e(run.error_code or "")}</td>'
                f"{_num(_number(run.duration_ms))}<td>{metrics}</td></tr>"
            )
    parts.append("</tbody></table></div>")
    return "".join(parts)
