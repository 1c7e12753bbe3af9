"""``tether eval`` as a real subprocess: the installed console script, offline and against the
loopback ``ReplayServer``.

Offline, the bundled fixture runs with no key: the summary table, one progress line per run
on a non-terminal stderr, the report and the HTML page. Against the replay server, two
configurations of a model candidate whose verdicts flip (one run improves, one regresses):
``--out`` then ``--compare`` (exit status 1 for the regression), the HTML page with both
candidates. A fake API key is set for every child and must appear in no byte written: not
on stdout, not on stderr, not in any report file. Every error a person can act on has its
stable code and exit status 2. The progress bar of a terminal is checked in-process.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
from collections.abc import Mapping
from html.parser import HTMLParser
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import tether
from cli_support import (
    FAKE_KEY,
    TETHER,
    Completed,
    assert_no_key,
    assert_quiet,
    child_env,
    run_tether,
    spawned,
)
from openai_bodies import minimal_chunk, minimal_usage
from servers.replay import ReplayServer, Script, sse_body, sse_response
from tether.cli.eval import Progress, add_parser, candidate_id_for
from tether.cli.eval import main as eval_main
from tether.evals.errors import EvaluationInfrastructureError
from tether.evals.types import EvaluationReport, EvaluationRunReport

pytestmark = [pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
TASKS = ROOT / "fixtures" / "eval-tasks.json"
BOUND = 60.0

SUMMARY = """\
candidate: fixture-candidate
runs: 2  pass: 1 (50.0%)  fail: 1 (50.0%)  error: 0 (0.0%)

TASK                      RUNS  PASS  FAIL ERROR  VERDICTS
held-out-arithmetic-pass     1     1     0     0  P
held-out-arithmetic-fail     1     0     1     0  F
"""


async def tether_eval(*arguments: str, env: Mapping[str, str], cwd: Path) -> Completed:
    """Run ``tether eval ...`` to its end (bounded), stdin from ``/dev/null``."""
    return await run_tether("eval", *arguments, env=env, cwd=cwd, stdin=None, bound=BOUND)


def text_reply(text: str) -> Script:
    payloads = [
        minimal_chunk({"role": "assistant", "content": text}),
        minimal_chunk({}, "stop"),
        minimal_usage(20, 1),
    ]
    return sse_response(sse_body(payloads))


class Page(HTMLParser):
    """Collects the tags, the bars of the chart and the text of an HTML page."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.bars: list[dict[str, str | None]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        classes = dict(attrs).get("class") or ""
        if tag == "rect" and "bar" in classes.split():
            self.bars.append(dict(attrs))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse_page(path: Path) -> Page:
    page = Page()
    page.feed(path.read_text(encoding="utf-8"))
    page.close()
    return page


# --- offline ----------------------------------------------------------------------------------


async def test_the_bundled_fixture_runs_offline(tmp_path: Path) -> None:
    env = child_env(tmp_path)
    del env["OPENAI_API_KEY"]
    completed = await tether_eval(
        str(TASKS),
        "--out",
        "report.json",
        "--html",
        "report.html",
        env=env,
        cwd=tmp_path,
    )

    assert completed.returncode == 0, completed.err
    assert completed.out == SUMMARY
    assert completed.err == (
        "[1/2] held-out-arithmetic-pass run-000001 pass\n"
        "[2/2] held-out-arithmetic-fail run-000002 fail\n"
    )
    report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    assert report["candidateId"] == "fixture-candidate"
    assert [run["verdict"] for run in report["runs"]] == ["pass", "fail"]
    assert all(run["durationMs"] >= 0 for run in report["runs"])
    page = parse_page(tmp_path / "report.html")
    assert page.tags[:2] == ["html", "head"]
    assert "script" not in page.tags
    assert [(bar["data-task"], bar["data-candidate"]) for bar in page.bars] == [
        ("held-out-arithmetic-pass", "fixture-candidate"),
        ("held-out-arithmetic-fail", "fixture-candidate"),
    ]
    words = " ".join(" ".join(page.text).split())
    assert f"tether {tether.__version__} · " in words
    assert "fixture-candidate offline fixture none" in words
    assert sorted(os.listdir(tmp_path)) == ["report.html", "report.json"]


async def test_repetitions_concurrency_and_comparing_with_itself(tmp_path: Path) -> None:
    env = child_env(tmp_path)
    first = await tether_eval(
        str(TASKS),
        "--repetitions",
        "3",
        "--concurrency",
        "4",
        "--out",
        "a.json",
        env=env,
        cwd=tmp_path,
    )
    second = await tether_eval(
        str(TASKS), "--repetitions", "3", "--compare", "a.json", env=env, cwd=tmp_path
    )

    assert first.returncode == 0, first.err
    assert "held-out-arithmetic-pass     3     3     0     0  PPP" in first.out
    assert len(first.err.splitlines()) == 6
    assert second.returncode == 0, second.err
    assert second.out.endswith(
        "compared with: fixture-candidate (baseline)\n"
        "pass rate +0.0 pts  fail rate +0.0 pts  error rate +0.0 pts\n"
        "improved: 0  regressed: 0  unchanged: 6\n"
    )


# --- a model candidate, compared ------------------------------------------------------------


async def test_out_then_compare_shows_improved_and_regressed_runs(tmp_path: Path) -> None:
    env = child_env(tmp_path)
    async with ReplayServer() as server:
        common = ["--model", "openai/gpt-test", "--base-url", server.url]
        server.respond(text_reply("42"))  # pass
        server.respond(text_reply("16"))  # fail
        baseline = await tether_eval(
            str(TASKS), *common, "--candidate-id", "before", "--out", "base.json",
            env=env, cwd=tmp_path,
        )  # fmt: skip
        server.respond(text_reply("41"))  # regressed: pass -> fail
        server.respond(text_reply("15"))  # improved: fail -> pass
        after = await tether_eval(
            str(TASKS), *common, "--system", "Answer with the number only.",
            "--compare", "base.json", "--out", "new.json", "--html", "page.html",
            env=env, cwd=tmp_path,
        )  # fmt: skip

    assert baseline.returncode == 0, baseline.err
    assert_quiet(baseline.stderr)
    assert after.returncode == 1, after.err
    assert_quiet(after.stderr)
    assert all(
        request.headers["authorization"] == f"Bearer {FAKE_KEY}" for request in server.requests
    )
    assert server.requests[2].json["messages"][0] == {
        "role": "system",
        "content": "Answer with the number only.",
    }
    lines = after.out.splitlines()
    assert lines[0] == "candidate: openai-gpt-test"
    assert lines[-5:] == [
        "compared with: before (baseline)",
        "pass rate +0.0 pts  fail rate +0.0 pts  error rate +0.0 pts",
        "improved: 1  regressed: 1  unchanged: 0",
        "  regressed held-out-arithmetic-pass run-000001  pass -> fail",
        "  improved  held-out-arithmetic-fail run-000002  fail -> pass",
    ]
    new = json.loads((tmp_path / "new.json").read_text(encoding="utf-8"))
    assert [run["verdict"] for run in new["runs"]] == ["fail", "pass"]
    assert new["runs"][0]["publicMetrics"] == {
        "inputTokens": 20,
        "matchedEvidence": 0,
        "outputTokens": 1,
        "requiredEvidence": 1,
        "steps": 1,
    }
    page = parse_page(tmp_path / "page.html")
    assert [(bar["data-task"], bar["data-candidate"]) for bar in page.bars] == [
        ("held-out-arithmetic-pass", "before"),
        ("held-out-arithmetic-pass", "openai-gpt-test"),
        ("held-out-arithmetic-fail", "before"),
        ("held-out-arithmetic-fail", "openai-gpt-test"),
    ]
    assert "regressed" in page.text
    assert "openai-gpt-test openai/gpt-test none" in " ".join(" ".join(page.text).split())
    assert "improved" in page.text
    for name in ("base.json", "new.json", "page.html"):
        data = (tmp_path / name).read_bytes()
        assert_no_key(data)
        assert b"Add 20 and 22" not in data  # no prompt in any report


# --- errors a person can act on ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "files", "line"),
    [
        (
            ["missing.json"],
            {},
            "tether eval: [CLI_EVAL_TASKS_UNREADABLE] cannot read missing.json: "
            "No such file or directory",
        ),
        (
            ["bad.json"],
            {"bad.json": "{not json"},
            "tether eval: [CLI_EVAL_TASKS_INVALID] bad.json: not valid JSON",
        ),
        (
            ["bad.json"],
            {"bad.json": '{"schemaVersion": 1, "tasks": [{"split": "train"}]}'},
            "tether eval: [CLI_EVAL_TASKS_INVALID] bad.json: ",
        ),
        (
            ["deep.json"],
            {"deep.json": "[" * 200_000 + "]" * 200_000},
            "tether eval: [CLI_EVAL_TASKS_INVALID] deep.json: not valid JSON (nested too deeply)",
        ),
        (
            ["deep.json"],
            {
                "deep.json": '{"schemaVersion": 1, "tasks": [], "x": '
                + "[" * 200_000
                + "]" * 200_000
                + "}"
            },
            "tether eval: [CLI_EVAL_TASKS_INVALID] deep.json: not valid JSON (nested too deeply)",
        ),
        (
            [str(TASKS), "--compare", "base.json"],
            {"base.json": '{"candidateId": "x"}'},
            "tether eval: [EVALUATION_INVALID_REPORT] base.json: ",
        ),
        (
            [str(TASKS), "--compare", "base.json"],
            {"base.json": ""},
            "tether eval: [EVALUATION_INVALID_REPORT] base.json: ",
        ),
        (
            [str(TASKS), "--model", "openai/gpt-test", "--judge", "model"],
            {},
            "tether eval: [CLI_MISSING_API_KEY] no API key for provider 'openai': set the "
            "environment variable OPENAI_API_KEY",
        ),
        (
            [str(TASKS), "--model", "nowhere/model"],
            {},
            "tether eval: [CLI_UNKNOWN_PROVIDER] unknown provider 'nowhere'",
        ),
        (
            [str(TASKS), "--out", "no/such/dir/report.json"],
            {},
            "tether eval: [CLI_EVAL_WRITE_FAILED] cannot write no/such/dir/report.json: ",
        ),
    ],
)
async def test_setup_problems_are_one_line_with_a_code(
    tmp_path: Path, arguments: list[str], files: dict[str, str], line: str
) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    env = child_env(tmp_path)
    del env["OPENAI_API_KEY"]
    completed = await tether_eval(*arguments, env=env, cwd=tmp_path)

    assert completed.returncode == 2
    assert_quiet(completed.stderr)
    problem = completed.err.splitlines()[-1]
    assert problem.startswith(line), problem


async def test_a_baseline_of_other_runs_cannot_be_compared(tmp_path: Path) -> None:
    env = child_env(tmp_path)
    first = await tether_eval(str(TASKS), "--out", "one.json", env=env, cwd=tmp_path)
    second = await tether_eval(
        str(TASKS), "--repetitions", "2", "--compare", "one.json", "--out", "two.json",
        env=env, cwd=tmp_path,
    )  # fmt: skip

    assert first.returncode == 0
    assert second.returncode == 2
    assert second.err.splitlines() == [
        "tether eval: [EVALUATION_INVALID_REPORT] one.json: the baseline holds 2 runs, not the "
        "4 runs of these tasks with --repetitions 2 (or other task IDs): nothing was run; "
        "compare with a report of the same tasks and repetitions (tether eval --out)"
    ]  # checked before any run: no progress line
    assert second.out == ""
    assert not (tmp_path / "two.json").exists()


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--base-url", "http://127.0.0.1:1/v1"], "--base-url needs --model"),
        (["--tools", "coding"], "--tools needs --model"),
        (["--ray-address", "auto"], "--ray-address needs --executor ray"),
        (["--judge-model", "openai/x"], "--judge-model needs --judge model"),
        (["--judge", "model"], "--judge model needs --judge-model"),
        (["--repetitions", "65"], "--repetitions must be between 1 and 64"),
        (["--concurrency", "0"], "--concurrency must be between 1 and 8"),
        (["--candidate-id", "Bad"], "argument --candidate-id: must be 1-64"),
    ],
)
async def test_usage_errors_exit_2(tmp_path: Path, arguments: list[str], message: str) -> None:
    completed = await tether_eval(str(TASKS), *arguments, env=child_env(tmp_path), cwd=tmp_path)

    assert completed.returncode == 2
    assert message in completed.err
    assert completed.stdout == b""


async def test_an_unreachable_model_is_an_error_verdict_not_a_crash(tmp_path: Path) -> None:
    completed = await tether_eval(
        str(TASKS), "--model", "openai/gpt-test", "--base-url", "http://127.0.0.1:9/v1",
        env=child_env(tmp_path), cwd=tmp_path,
    )  # fmt: skip

    assert completed.returncode == 0, completed.err
    assert "error: 2 (100.0%)" in completed.out
    assert "PROVIDER_CONNECTION_FAILED x1" in completed.out


# --- in-process: the progress display and candidate IDs ----------------------------------------


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def run_report(verdict: Any, code: str | None = None) -> EvaluationRunReport:
    return EvaluationRunReport(
        task_id="t",
        run_id="run-000001",
        candidate_id="c",
        verdict=verdict,
        public_metrics={},
        duration_ms=0.0,
        error_code=code,
    )


def test_a_terminal_gets_a_bar_redrawn_in_place() -> None:
    stream = Terminal()
    progress = Progress(4, stream)
    for _ in range(3):
        progress(run_report("pass"))
    progress.close()
    progress.close()

    assert stream.getvalue() == (
        "\r[#####...............] 1/4\r[##########..........] 2/4\r[###############.....] 3/4\n"
    )


def test_a_pipe_gets_one_line_per_run_and_failures_by_code() -> None:
    stream = io.StringIO()
    progress = Progress(2, stream)
    progress(run_report("error", "PROVIDER_TIMEOUT"))
    progress(EvaluationInfrastructureError("EVALUATION_CANCELLED", "Evaluation was cancelled"))
    progress.close()

    assert stream.getvalue() == (
        "[1/2] t run-000001 error PROVIDER_TIMEOUT\n[2/2] EVALUATION_CANCELLED\n"
    )


def test_progress_never_raises() -> None:
    closed = io.StringIO()
    closed.close()
    progress = Progress(1, closed)
    progress(run_report("pass"))
    Progress(1, None)(run_report("pass"))
    assert progress.done == 1


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("openai/gpt-4o-mini", "openai-gpt-4o-mini"),
        ("openrouter/anthropic/Claude-Sonnet-4.5", "openrouter-anthropic-claude-sonnet-4.5"),
        ("///", "candidate"),
        ("x/" + "a" * 80, "x-" + "a" * 62),
    ],
)
def test_candidate_ids_are_made_from_model_specs(spec: str, expected: str) -> None:
    assert candidate_id_for(spec) == expected


# --- in-process: the HTML page and the summary -------------------------------------------------


def report_of(candidate: str, verdicts: list[tuple[str, str]]) -> EvaluationReport:
    from tether.evals.report import aggregate_metrics

    runs = tuple(
        EvaluationRunReport(
            task_id=task,
            run_id=f"run-{index + 1:06d}",
            candidate_id=candidate,
            verdict=verdict,  # pyright: ignore[reportArgumentType]
            public_metrics={"steps": 1.0} if verdict != "error" else {},
            duration_ms=1.5,
            error_code="PROVIDER_TIMEOUT" if verdict == "error" else None,
        )
        for index, (task, verdict) in enumerate(verdicts)
    )
    return EvaluationReport(
        candidate_id=candidate, runs=runs, public_metrics=aggregate_metrics(runs)
    )


BASE = report_of("base", [("alpha", "pass"), ("alpha", "fail"), ("beta", "error")])
NEW = report_of("new", [("alpha", "pass"), ("alpha", "pass"), ("beta", "fail")])


def test_the_page_is_self_contained_with_one_bar_per_task_and_candidate() -> None:
    from tether.evals.html import render_html
    from tether.evals.report import compare_evaluations

    text = render_html([BASE, NEW], compare_evaluations(BASE, NEW))
    page = Page()
    page.feed(text)
    page.close()

    assert text.startswith('<!DOCTYPE html>\n<html lang="en">')
    assert "script" not in page.tags
    assert "http" not in text.lower().replace("http-equiv", "")
    assert page.tags.count("svg") == 1
    assert [
        (bar["data-task"], bar["data-candidate"], bar["data-pass-rate"]) for bar in page.bars
    ] == [
        ("alpha", "base", "0.5"),
        ("alpha", "new", "1"),
        ("beta", "base", "0"),
        ("beta", "new", "0"),
    ]
    assert page.tags.count("table") == 5  # totals, per task, comparison metrics and runs, runs
    assert "PROVIDER_TIMEOUT" in page.text
    assert "+33.3 pts" in text


def test_the_page_of_one_report_has_no_comparison() -> None:
    from tether.evals.html import render_html

    page = Page()
    page.feed(render_html([NEW]))
    assert len(page.bars) == 2
    assert page.tags.count("table") == 3  # totals, per task, runs


def test_every_text_is_escaped_and_reports_are_validated() -> None:
    from tether.evals import html

    escape = html._e  # pyright: ignore[reportPrivateUsage]
    assert escape('<a href="x">&\'') == "&lt;a href=&quot;x&quot;&gt;&amp;&#x27;"
    with pytest.raises(ValueError, match="at least one report"):
        html.render_html([])
    broken = EvaluationReport(candidate_id="<b>", runs=NEW.runs, public_metrics=NEW.public_metrics)
    with pytest.raises(EvaluationInfrastructureError) as caught:
        html.render_html([broken])
    assert caught.value.code == "EVALUATION_INVALID_REPORT"


def test_the_summary_counts_verdicts_per_task_and_lists_changes() -> None:
    from tether.evals.report import compare_evaluations
    from tether.evals.summary import format_summary

    assert format_summary(BASE, compare_evaluations(BASE, NEW)) == (
        "candidate: base\n"
        "runs: 3  pass: 1 (33.3%)  fail: 1 (33.3%)  error: 1 (33.3%)\n"
        "\n"
        "TASK   RUNS  PASS  FAIL ERROR  VERDICTS\n"
        "alpha     2     1     1     0  PF\n"
        "beta      1     0     0     1  E PROVIDER_TIMEOUT x1\n"
        "\n"
        "compared with: base (baseline)\n"
        "pass rate +33.3 pts  fail rate +0.0 pts  error rate -33.3 pts\n"
        "improved: 2  regressed: 0  unchanged: 1\n"
        "  improved  alpha run-000002  fail -> pass\n"
        "  improved  beta  run-000003  error -> fail\n"
    )


def test_long_runs_of_marks_are_cut() -> None:
    from tether.evals.summary import format_summary

    many = report_of("many", [("alpha", "pass")] * 70)
    line = format_summary(many).splitlines()[-1]
    assert line.endswith("P" * 64 + "...")


# --- more of the command: judges, Ray, Ctrl-C, stdout ------------------------------------------


async def test_a_model_judge_grades_the_answers(tmp_path: Path) -> None:
    env = child_env(tmp_path)
    async with ReplayServer() as server:
        for reply in ("42", "PASS", "16", "FAIL"):  # candidate, judge, candidate, judge
            server.respond(text_reply(reply))
        completed = await tether_eval(
            str(TASKS), "--model", "openai/gpt-test", "--base-url", server.url,
            "--judge", "model", env=env, cwd=tmp_path,
        )  # fmt: skip

    assert completed.returncode == 0, completed.err
    assert "runs: 2  pass: 1 (50.0%)  fail: 1 (50.0%)" in completed.out
    judge_request = server.requests[1].json
    assert judge_request["messages"][0]["content"].startswith("You grade the answer")
    assert "- 42" in judge_request["messages"][1]["content"]


async def test_a_judge_model_that_does_not_answer_pass_or_fail_stops_the_evaluation(
    tmp_path: Path,
) -> None:
    env = child_env(tmp_path)
    async with ReplayServer() as server:
        (tmp_path / "config.toml").write_text(
            f'[providers.judges]\nbase_url = "{server.url}"\napi_key_env = "OPENAI_API_KEY"\n',
            encoding="utf-8",
        )
        server.respond(text_reply("Yes, that is right."))
        completed = await tether_eval(
            str(TASKS), "--judge", "model", "--judge-model", "judges/strict",
            "--candidate-id", "fixture", env=env, cwd=tmp_path,
        )  # fmt: skip

    assert completed.returncode == 2
    assert completed.err.splitlines()[-1] == (
        "tether eval: [EVALUATION_JUDGE_FAILED] Evaluation judge failed (caused by "
        "MODEL_JUDGE_INVALID_ANSWER): the judge gave no verdict (with --judge model, the judge "
        "model must answer exactly PASS or FAIL)"
    )
    assert "Yes, that is right" not in completed.err
    (request,) = server.requests
    assert request.json["model"] == "strict"
    assert request.headers["authorization"] == f"Bearer {FAKE_KEY}"


@pytest.mark.ray
async def test_the_ray_executor_gives_the_same_report(tmp_path: Path) -> None:
    env = child_env(tmp_path)
    local = await tether_eval(str(TASKS), "--repetitions", "2", "--out", "l.json",
                              env=env, cwd=tmp_path)  # fmt: skip
    remote = await tether_eval(
        str(TASKS), "--repetitions", "2", "--concurrency", "2", "--executor", "ray",
        "--out", "r.json", env=env, cwd=tmp_path,
    )  # fmt: skip

    assert local.returncode == 0, local.err
    assert remote.returncode == 0, remote.err
    assert local.out == remote.out

    def verdicts(name: str) -> list[tuple[str, str]]:
        runs = json.loads((tmp_path / name).read_text(encoding="utf-8"))["runs"]
        return [(run["runId"], run["verdict"]) for run in runs]

    assert verdicts("l.json") == verdicts("r.json")


@pytest.mark.parametrize("stage", ["start", "put"])
def test_ray_that_cannot_start_or_join_has_its_own_code(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], stage: str
) -> None:
    pytest.importorskip("ray", reason="Ray is not installed (the tether[ray] extra)")
    import tether.evals.ray_executor as ray_executor

    calls: list[str] = []

    def init(**_options: Any) -> None:
        calls.append("init")
        raise ConnectionError("Could not connect to the Ray cluster at 10.0.0.1:6379")

    def put(_value: object) -> object:
        calls.append("put")
        raise TypeError("cannot pickle the job")

    fake = SimpleNamespace(
        is_initialized=lambda: stage == "put",
        init=init,
        put=put,
        shutdown=lambda: calls.append("shutdown"),
    )
    monkeypatch.setattr(ray_executor, "_ray", lambda: fake)
    parser = argparse.ArgumentParser(prog="tether")
    add_parser(parser.add_subparsers())
    args = parser.parse_args(
        ["eval", str(TASKS), "--executor", "ray", "--ray-address", "10.0.0.1:6379"]
    )

    assert eval_main(args) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    kind, message = {
        "start": ("ConnectionError", "Ray could not be started or joined"),
        "put": ("TypeError", "the evaluation job could not be put in Ray"),
    }[stage]
    assert captured.err.splitlines()[-1] == (
        f"tether eval: [CLI_EVAL_RAY_FAILED] Evaluation infrastructure failed: {message} "
        f"({kind}): could not start or join Ray (check --ray-address)"
    )
    assert calls == (["init", "shutdown"] if stage == "start" else ["put"])


async def test_ctrl_c_cancels_the_runs_and_exits_130(tmp_path: Path) -> None:
    import signal as signals

    async with ReplayServer() as server:
        body = sse_body([minimal_chunk({"content": "4"})], done=False)
        script = server.respond(sse_response(body, stall_after=len(body)))
        async with spawned(
            "eval", str(TASKS), "--model", "openai/gpt-test", "--base-url", server.url,
            env=child_env(tmp_path), cwd=tmp_path, stdin=asyncio.subprocess.DEVNULL,
        ) as process:  # fmt: skip
            async with asyncio.timeout(BOUND):
                await script.stalled.wait()
            process.send_signal(signals.SIGINT)
            async with asyncio.timeout(BOUND):
                stdout, stderr = await process.communicate()

    assert process.returncode == 130, stderr
    assert stdout == b""
    assert b"tether eval: cancelling the runs" in stderr
    assert_no_key(stdout, stderr)


async def test_stdout_that_cannot_be_written_exits_4(tmp_path: Path) -> None:
    with open("/dev/full", "wb") as full:  # noqa: ASYNC230 - opening a device, no I/O wait
        process = await asyncio.create_subprocess_exec(
            str(TETHER), "eval", str(TASKS), stdin=asyncio.subprocess.DEVNULL, stdout=full,
            stderr=asyncio.subprocess.PIPE, env=child_env(tmp_path), cwd=tmp_path,
        )  # fmt: skip
        async with asyncio.timeout(BOUND):
            _, stderr = await process.communicate()
    reader, writer = os.pipe()
    os.close(reader)
    try:
        gone = await asyncio.create_subprocess_exec(
            str(TETHER), "eval", str(TASKS), stdin=asyncio.subprocess.DEVNULL, stdout=writer,
            stderr=asyncio.subprocess.PIPE, env=child_env(tmp_path), cwd=tmp_path,
        )  # fmt: skip
    finally:
        os.close(writer)
    async with asyncio.timeout(BOUND):
        _, gone_stderr = await gone.communicate()

    assert process.returncode == 4
    assert stderr.decode().splitlines()[-1].startswith("tether eval: cannot write output: ")
    assert gone.returncode == 4
    assert not any(line.startswith(b"tether eval:") for line in gone_stderr.splitlines())


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--repetitions", "two"], "not an integer: 'two'"),
        (["--out", ""], "argument --out: must not be empty"),
        (["--model", "openai/x", "--base-url", "ftp://x"], "must be an http:// or https:// URL"),
        (["--model", "openai/x", "--system", ""], "argument --system: must not be empty"),
    ],
)
async def test_bad_option_values_exit_2(tmp_path: Path, arguments: list[str], message: str) -> None:
    completed = await tether_eval(str(TASKS), *arguments, env=child_env(tmp_path), cwd=tmp_path)

    assert completed.returncode == 2
    assert message in completed.err


def test_the_parser_limits_are_the_library_limits() -> None:
    from tether.cli import eval as eval_cli
    from tether.evals.types import MAX_CONCURRENCY, MAX_REPETITIONS

    limits = (eval_cli._MAX_REPETITIONS, eval_cli._MAX_CONCURRENCY)  # pyright: ignore[reportPrivateUsage]
    assert limits == (MAX_REPETITIONS, MAX_CONCURRENCY)
