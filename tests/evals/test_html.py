"""The evaluation report a person reads (``tether.evals.html``).

The page is parsed for what it says (header, totals per candidate and per task, bars) and laid
out by a real headless Chromium (installed by the test where it can be, as tmux is) to check
what a reader sees: no chart label cut off by the edge of the chart, no identifier broken over
two lines, and a bar for every rate, 0% included.
"""

from __future__ import annotations

import json
import re
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from support import debian_binary
from tether.evals.html import CandidateDescription, ReportHeader, render_html
from tether.evals.report import capture_report
from tether.evals.types import (
    EvaluationAggregateMetrics,
    EvaluationReport,
    EvaluationRunReport,
    EvaluationVerdict,
)

LONG_TASK = "held-out-" + "very-long-task-name-" * 2 + "with-a-tail-x"
"""A 58-character task ID: longer than any margin a fixed layout would leave."""


def _run(
    task_id: str,
    run_id: str,
    verdict: EvaluationVerdict,
    candidate_id: str,
    *,
    duration_ms: float = 100.0,
    metrics: dict[str, float] | None = None,
) -> EvaluationRunReport:
    return EvaluationRunReport(
        task_id=task_id,
        run_id=run_id,
        candidate_id=candidate_id,
        verdict=verdict,
        public_metrics=metrics or {},
        duration_ms=duration_ms,
        error_code="TOOL_FAILED" if verdict == "error" else None,
    )


def _report(candidate_id: str, runs: list[EvaluationRunReport]) -> EvaluationReport:
    passed = sum(1 for run in runs if run.verdict == "pass")
    failed = sum(1 for run in runs if run.verdict == "fail")
    errors = len(runs) - passed - failed
    total = len(runs)
    return capture_report(
        EvaluationReport(
            candidate_id=candidate_id,
            runs=tuple(runs),
            public_metrics=EvaluationAggregateMetrics(
                total_runs=total,
                passed_runs=passed,
                failed_runs=failed,
                error_runs=errors,
                pass_rate=passed / total,
                fail_rate=failed / total,
                error_rate=errors / total,
            ),
        )
    )


def _model_report() -> EvaluationReport:
    tokens = {"inputTokens": 1200.0, "outputTokens": 30.0}
    return _report(
        "openai-gpt-test",
        [
            _run(LONG_TASK, "run-000001", "fail", "openai-gpt-test",
                 duration_ms=1500, metrics=tokens),
            _run(LONG_TASK, "run-000002", "fail", "openai-gpt-test",
                 duration_ms=500, metrics=tokens),
            _run("held-out-arithmetic-pass", "run-000003", "pass", "openai-gpt-test",
                 duration_ms=250, metrics={**tokens, "costUsd": 0.0125}),
        ],
    )  # fmt: skip


def _fixture_report() -> EvaluationReport:
    return _report(
        "fixture-candidate",
        [
            _run(LONG_TASK, "run-000001", "pass", "fixture-candidate"),
            _run(LONG_TASK, "run-000002", "pass", "fixture-candidate"),
            _run("held-out-arithmetic-pass", "run-000003", "error", "fixture-candidate"),
        ],
    )


HEADER = ReportHeader(
    tether_version="9.8.7",
    generated_at="2026-12-02 05:40 UTC",
    candidates=(
        CandidateDescription(
            candidate_id="openai-gpt-test", model="openai/gpt-test", tools="coding"
        ),
        CandidateDescription(candidate_id="fixture-candidate", model=None, tools="none"),
    ),
)


class _Page(HTMLParser):
    """Text per table row, the bars and the header's definition list."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self.bars: list[dict[str, str]] = []
        self.tags: list[str] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        values = {name: value or "" for name, value in attrs}
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self._cell = []
        elif tag == "rect" and "bar" in values.get("class", "").split():
            self.bars.append(values)

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def _parse(page: str) -> _Page:
    parsed = _Page()
    parsed.feed(page)
    parsed.close()
    return parsed


def test_the_header_names_each_candidate_model_tools_version_and_date() -> None:
    page = render_html([_model_report(), _fixture_report()], header=HEADER)
    parsed = _parse(page)

    assert "tether 9.8.7" in page
    assert "2026-12-02 05:40 UTC" in page
    assert ["openai-gpt-test", "openai/gpt-test", "coding"] in parsed.rows
    assert ["fixture-candidate", "offline fixture", "none"] in parsed.rows
    assert "script" not in parsed.tags


def test_totals_per_candidate_carry_tokens_cost_and_latency() -> None:
    parsed = _parse(render_html([_model_report(), _fixture_report()], header=HEADER))
    totals = {
        row[0]: row
        for row in parsed.rows
        if row and row[0] in ("openai-gpt-test", "fixture-candidate") and len(row) > 8
    }

    model = totals["openai-gpt-test"]
    # runs, pass, fail, error, pass rate, input tokens, output tokens, cost, mean, total
    assert model[1:5] == ["3", "1", "2", "0"]
    assert model[6:8] == ["3,600", "90"]
    assert model[8] == "$0.0125 + unknown"  # one run priced, two not: never a silent 0
    assert model[9:11] == ["750 ms", "2.25 s"]
    fixture = totals["fixture-candidate"]
    assert fixture[6:9] == ["n/a", "n/a", "unknown"]


def test_totals_per_task_and_candidate() -> None:
    parsed = _parse(render_html([_model_report(), _fixture_report()], header=HEADER))
    per_task = [row for row in parsed.rows if row[:1] == [LONG_TASK]]

    assert [row[1] for row in per_task] == ["openai-gpt-test", "fixture-candidate"]
    assert per_task[0][2:] == ["2", "0.0%", "2,400", "60", "unknown", "1.00 s", "2.00 s"]
    assert per_task[1][2:4] == ["2", "100.0%"]


def test_every_rate_has_a_visible_bar_and_a_label_zero_included() -> None:
    parsed = _parse(render_html([_model_report(), _fixture_report()], header=HEADER))

    rates = {(bar["data-task"], bar["data-candidate"]): bar for bar in parsed.bars}
    zero = rates[(LONG_TASK, "openai-gpt-test")]
    assert zero["data-pass-rate"] == "0"
    assert float(zero["width"]) >= 2
    assert float(zero["height"]) >= 2
    assert "zero" in zero["class"].split()
    full = rates[(LONG_TASK, "fixture-candidate")]
    assert float(full["width"]) > 100 * float(zero["width"])


def test_without_a_header_the_page_still_renders() -> None:
    page = render_html([_fixture_report()])

    assert 'class="meta"' not in page
    assert 'class="candidates"' not in page
    assert _parse(page).rows[1][:6] == ["fixture-candidate", "3", "2", "0", "1", "66.7%"]


# -- laid out by a real browser ------------------------------------------------------------------

_PROBE = """<script>
const svg = document.querySelector("svg.chart").getBoundingClientRect();
const clipped = [];
for (const text of document.querySelectorAll("svg.chart text")) {
  const box = text.getBoundingClientRect();
  if (box.left < svg.left - 0.5 || box.right > svg.right + 0.5 ||
      box.top < svg.top - 0.5 || box.bottom > svg.bottom + 0.5) clipped.push(text.textContent);
}
const broken = [];
for (const cell of document.querySelectorAll("td.id")) {
  const range = document.createRange();
  range.selectNodeContents(cell);
  const lines = new Set([...range.getClientRects()].map((r) => Math.round(r.top)));
  if (lines.size > 1) broken.push(cell.textContent);
}
const bars = [...document.querySelectorAll("rect.bar")].map((bar) => {
  const box = bar.getBoundingClientRect();
  return [bar.dataset.passRate, box.width, box.height];
});
document.body.setAttribute("data-probe", JSON.stringify({clipped, broken, bars}));
</script>"""


def _chromium() -> str:
    program = debian_binary("chromium-headless-shell", "chromium-headless-shell")
    if program is None:
        pytest.skip(
            "chromium-headless-shell is not installed and cannot be (not root, or no apt-get)"
        )
    return program


@pytest.mark.slow
@pytest.mark.parametrize("width", [480, 1280])
def test_a_browser_shows_every_label_whole_and_every_id_on_one_line(
    tmp_path: Path, width: int
) -> None:
    program = _chromium()
    page = render_html([_model_report(), _fixture_report()], header=HEADER)
    assert "<script" not in page
    probe = tmp_path / "probe.html"
    probe.write_text(page.replace("</body>", _PROBE + "</body>"), encoding="utf-8")

    dumped = subprocess.run(
        [program, "--no-sandbox", "--disable-gpu", f"--window-size={width},900",
         "--dump-dom", probe.as_uri()],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip

    found = re.search(r'data-probe="([^"]*)"', dumped.stdout)
    assert found is not None, dumped.stdout[:500]
    result = json.loads(found.group(1).replace("&quot;", '"'))
    assert result["clipped"] == []
    assert result["broken"] == []
    assert len(result["bars"]) == 4
    assert all(box_width >= 2 and height >= 2 for _, box_width, height in result["bars"])
