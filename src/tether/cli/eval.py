"""``tether eval TASKS``: run an evaluation suite, show progress and a summary, write reports.

``TASKS`` is an evaluation fixture (``{"schemaVersion": 1, "tasks": [...]}``, e.g. the bundled
``fixtures/eval-tasks.json``). Without ``--model`` the offline fixture candidate answers
(no key, no network); with ``--model PROVIDER/MODEL`` a tether ``Agent`` on that model does
(``tether.evals.candidates.AgentCandidate``: ``--base-url``, ``--system``, ``--tools coding``
rooted at each run's temporary workspace, ``--max-steps``). ``--candidate-id`` names the
candidate in the report (default: the fixture candidate's ID, or the model spec made an ID:
``openai/gpt-4o-mini`` → ``openai-gpt-4o-mini``).

``--repetitions N`` runs every task N times (1-64), ``--concurrency N`` at most N at once
(1-8), ``--executor ray`` on Ray (``--ray-address`` to join a cluster; a local instance
otherwise; needs the ``tether[ray]`` extra). ``--judge model`` grades with a model
(``--judge-model``, default the ``--model``) instead of exact evidence matching. Durations are
measured (wall clock, per run, on the machine that ran it).

Output: a progress bar on stderr while runs finish (``\\r[#####.....] 3/10`` redrawn in place
when stderr is a terminal; otherwise one line per finished run), then the summary table on
stdout (``tether.evals.summary``). ``--out REPORT.json`` writes the canonical report JSON,
``--compare BASELINE.json`` compares with an earlier report (improved / regressed runs, rate
deltas), ``--html REPORT.html`` writes a self-contained page (``tether.evals.html``). Nothing
but report data (IDs, verdicts, codes, numbers) is written: no prompt, evidence, transcript or
key. A report replaces a regular file only: a FIFO, a device or a directory at ``--out`` or
``--html`` is refused before anything runs (``CLI_EVAL_WRITE_FAILED``). ``TASKS`` and the
baseline must be regular files of at most 64 MiB (``/dev/zero`` is refused unread).

Exit status:

* 0: the evaluation ran (failed and error verdicts included: they are results);
* 1: ``--compare`` found at least one regressed run (the summary and reports are written);
* 2: a usage error, or a setup a person must fix, with one line ``tether eval: [CODE]
  message`` on stderr: tasks that cannot be read (``CLI_EVAL_TASKS_UNREADABLE``) or are
  invalid (``CLI_EVAL_TASKS_INVALID``), a baseline that cannot be read
  (``CLI_EVAL_BASELINE_UNREADABLE``) or is invalid or does not match the runs
  (``EVALUATION_INVALID_REPORT``), Ray not installed (``CLI_EVAL_RAY_MISSING``) or not
  usable (``CLI_EVAL_RAY_FAILED``: Ray could not be started, the cluster of ``--ray-address``
  could not be joined, or it would not take the job), a report
  file that cannot be written (``CLI_EVAL_WRITE_FAILED``), a model selection problem
  (``CLI_MISSING_API_KEY``, ``CLI_UNKNOWN_PROVIDER``...), or an evaluation that could not be
  carried out (an ``EVALUATION_...`` code, e.g. ``EVALUATION_JUDGE_FAILED``);
* 4: stdout could not be written;
* 130: interrupted (Ctrl-C cancels the runs, their cleanups still run; a second Ctrl-C quits
  at once).
"""

from __future__ import annotations

import argparse
import contextlib
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TextIO

from tether.cli.arguments import bounded_integer, needs_model, non_empty_path, non_empty_text, url
from tether.cli.eval_files import (
    EvalProblem,
    check_alignment,
    check_target,
    load_baseline,
    load_tasks,
    write_report,
)
from tether.cli.exit_codes import EXIT_INTERRUPTED, EXIT_OUTPUT_FAILED, EXIT_USAGE
from tether.cli.render import Output, OutputError, warn

if TYPE_CHECKING:
    from tether.cli.models import ModelChoice
    from tether.evals.errors import EvaluationInfrastructureError
    from tether.evals.executors import EvaluationExecutor, ItemOutcome
    from tether.evals.html import ReportHeader
    from tether.evals.types import (
        EvaluationCandidate,
        EvaluationComparison,
        EvaluationJudge,
        EvaluationReport,
        EvaluationTask,
    )

__all__ = [
    "EXIT_EVAL_OK",
    "EXIT_EVAL_REGRESSED",
    "Progress",
    "add_parser",
    "candidate_id_for",
    "main",
]

EXIT_EVAL_OK: Final = 0
"""The evaluation ran (whatever its verdicts)."""
EXIT_EVAL_REGRESSED: Final = 1
"""``--compare`` found a regressed run."""
_COMMAND: Final = "tether eval"
_BAR: Final = 20
# tether.evals.types.MAX_REPETITIONS and MAX_CONCURRENCY, spelled out so that building the
# parser (every `tether --help`) does not import tether.evals; a test keeps them equal.
_MAX_REPETITIONS: Final = 64
_MAX_CONCURRENCY: Final = 8
_MAX_STEPS: Final = 1024
_DEFAULT_STEPS: Final = 16
"""Model turns per task when ``--max-steps`` is not given."""
_ID_CHARACTERS: Final = re.compile(r"[^a-z0-9._-]+")

EXIT_HELP: Final = """\
exit status:
  0    the evaluation ran (fail and error verdicts are results, not errors)
  1    --compare found at least one regressed run
  2    usage or setup error: tasks or baseline unreadable or invalid, a bad option, a
       missing API key, Ray not installed or not startable, a report that cannot be
       written, or an evaluation that could not be carried out (EVALUATION_... code on stderr)
  4    stdout could not be written
  130  interrupted (Ctrl-C): the runs were cancelled
"""

_HINTS: Final = {
    "EVALUATION_RUNTIME_FACTORY_FAILED": "the candidate could not be set up for a run "
    "(check --model and --base-url)",
    "EVALUATION_RUNTIME_FAILED": "the candidate's runtime misbehaved",
    "EVALUATION_JUDGE_FAILED": "the judge gave no verdict (with --judge model, the judge "
    "model must answer exactly PASS or FAIL)",
    "EVALUATION_WORKSPACE_FAILED": "a run's temporary workspace could not be created "
    "(is the temporary directory writable?)",
    "EVALUATION_CLEANUP_FAILED": "a run's cleanup failed",
    "EVALUATION_CLEANUP_TIMEOUT": "a run's cleanup took too long",
    "EVALUATION_INVALID_REPORT": "the baseline must be a report of the same tasks and "
    "repetitions (tether eval --out)",
}
_RAY_FAILED: Final = "CLI_EVAL_RAY_FAILED"
_RAY_HINT: Final = "could not start or join Ray (check --ray-address)"


def _candidate_id(text: str) -> str:
    from tether.evals.types import ID_PATTERN

    if ID_PATTERN.fullmatch(text) is None:
        raise argparse.ArgumentTypeError(
            "must be 1-64 of a-z 0-9 . _ - starting with a letter or digit"
        )
    return text


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``tether eval`` on ``subparsers`` (the ``add_subparsers()`` of ``tether``);
    returns its parser."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "eval",
        help="run an evaluation suite: the offline fixture candidate, or a model with --model",
        description=(
            "Run the tasks of an evaluation fixture and summarize the verdicts. Without\n"
            "--model the offline fixture candidate answers; with --model an agent on that\n"
            "model does. Reports hold only IDs, verdicts, error codes and numbers."
        ),
        epilog=EXIT_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "tasks", type=non_empty_path, metavar="TASKS", help="the evaluation fixture (JSON)"
    )
    parser.add_argument("--model", metavar="PROVIDER/MODEL", help="evaluate an agent on this model")
    parser.add_argument("--base-url", type=url, metavar="URL", help="the model's server")
    parser.add_argument(
        "--system", type=non_empty_text, metavar="TEXT", help="the agent's system prompt"
    )
    parser.add_argument(
        "--tools",
        choices=["none", "coding"],
        help="coding: the coding tools in each run's temporary workspace (default: none)",
    )
    parser.add_argument(
        "--max-steps",
        type=bounded_integer(1, _MAX_STEPS, "--max-steps"),
        metavar="N",
        help=f"model turns per task (1-{_MAX_STEPS}, default {_DEFAULT_STEPS})",
    )
    parser.add_argument(
        "--candidate-id", type=_candidate_id, metavar="ID", help="the candidate's ID in reports"
    )
    for option, most, what in (
        ("--repetitions", _MAX_REPETITIONS, "runs per task"),
        ("--concurrency", _MAX_CONCURRENCY, "runs at once"),
    ):
        parser.add_argument(
            option,
            type=bounded_integer(1, most, option),
            default=1,
            metavar="N",
            help=f"{what} (1-{most}, default 1)",
        )
    parser.add_argument(
        "--executor", choices=["local", "ray"], default="local", help="where runs execute"
    )
    parser.add_argument(
        "--ray-address",
        type=non_empty_text,
        metavar="ADDR",
        help="join this Ray cluster (--executor ray)",
    )
    parser.add_argument(
        "--judge",
        choices=["deterministic", "model"],
        default="deterministic",
        help="exact evidence matching (default), or ask a model",
    )
    parser.add_argument(
        "--judge-model", metavar="PROVIDER/MODEL", help="the judge's model (--judge model)"
    )
    parser.add_argument(
        "--compare", type=non_empty_path, metavar="BASELINE.json", help="compare with this report"
    )
    parser.add_argument(
        "--out", type=non_empty_path, metavar="REPORT.json", help="write the report"
    )
    parser.add_argument(
        "--html", type=non_empty_path, metavar="REPORT.html", help="write an HTML page"
    )
    parser.set_defaults(eval_parser=parser)
    return parser


def candidate_id_for(spec: str) -> str:
    """A candidate ID made from a model spec: lower-cased, runs of other characters as
    ``-``, at most 64 characters (``openai/gpt-4o-mini`` → ``openai-gpt-4o-mini``)."""
    text = _ID_CHARACTERS.sub("-", spec.lower()).strip("-._")[:64].rstrip("-._")
    return text or "candidate"


def main(args: argparse.Namespace) -> int:
    """Run ``tether eval`` with parsed ``args``; returns the exit status."""
    parser: argparse.ArgumentParser = args.eval_parser
    _check_usage(args, parser)
    try:
        return _evaluate(args)
    except EvalProblem as problem:
        warn(f"{_COMMAND}: [{problem.code}] {problem}")
        return EXIT_USAGE


def _check_usage(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    if args.model is None:
        fixture = "without it, the fixture candidate runs"
        needs_model(parser, args, ("--base-url", "--system", "--tools", "--max-steps"), fixture)
    if args.ray_address is not None and args.executor != "ray":
        parser.error("--ray-address needs --executor ray")
    if args.judge_model is not None and args.judge != "model":
        parser.error("--judge-model needs --judge model")
    if args.judge == "model" and args.judge_model is None and args.model is None:
        parser.error("--judge model needs --judge-model PROVIDER/MODEL (or --model)")


def _evaluate(args: argparse.Namespace) -> int:
    import asyncio

    check_target(args.out)
    check_target(args.html)
    source, tasks = load_tasks(args.tasks)
    baseline_path: Path | None = args.compare
    baseline = None if baseline_path is None else load_baseline(baseline_path)
    if baseline_path is not None and baseline is not None:
        check_alignment(baseline_path, baseline, tasks, args.repetitions)
    candidate = _candidate(args, tasks)
    judge = _judge(args)
    executor = _executor(args)
    total = len(tasks) * args.repetitions
    progress = Progress(total, sys.stderr)
    report = asyncio.run(_run(args, source, candidate, judge, executor, progress))
    if report is None:
        return EXIT_INTERRUPTED
    if args.out is not None:
        from tether.evals.report import serialize_evaluation_report

        write_report(args.out, serialize_evaluation_report(report) + "\n")
    comparison = None if baseline is None else _compare(baseline, report)
    try:
        _summary(report, comparison)
    except OutputError as error:
        if not error.reader_gone:
            warn(f"{_COMMAND}: cannot write output: {error}")
        return EXIT_OUTPUT_FAILED
    if args.html is not None:
        from tether.evals.html import render_html

        reports = [report] if baseline is None else [baseline, report]
        write_report(args.html, render_html(reports, comparison, header=_header(args, report)))
    if comparison is not None and comparison.public_metrics.regressed_runs > 0:
        return EXIT_EVAL_REGRESSED
    return EXIT_EVAL_OK


def _choose(spec: str | None, base_url: str | None) -> ModelChoice:
    from tether.cli.config import CliError, load_config
    from tether.cli.models import choose_model

    try:
        return choose_model(spec, base_url=base_url, config=load_config())
    except CliError as error:
        raise EvalProblem(error.code, str(error)) from None


def _candidate(args: argparse.Namespace, tasks: tuple[EvaluationTask, ...]) -> EvaluationCandidate:
    if args.model is None:
        from tether.evals.fixture_candidate import fixture_candidate

        if args.candidate_id is None:
            return fixture_candidate(tasks)
        return fixture_candidate(tasks, id=args.candidate_id)
    from tether.evals.candidates import AgentCandidate

    choice = _choose(args.model, args.base_url)
    return AgentCandidate(
        id=args.candidate_id or candidate_id_for(choice.spec),
        model_spec=choice.spec,
        base_url=choice.base_url,
        system=args.system,
        tools=args.tools or "none",
        max_steps=args.max_steps or _DEFAULT_STEPS,
        model_factory=choice.build,
        prices=choice.prices,
    )


def _header(args: argparse.Namespace, report: EvaluationReport) -> ReportHeader:
    """The HTML page's header: this tether, the time now (UTC, to the minute) and the
    candidate that ran (a baseline read from a file is described by its report alone)."""
    from datetime import UTC, datetime

    from tether import __version__
    from tether.evals.html import CandidateDescription, ReportHeader

    model = None if args.model is None else _choose(args.model, args.base_url).spec
    return ReportHeader(
        tether_version=__version__,
        generated_at=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        candidates=(
            CandidateDescription(
                candidate_id=report.candidate_id, model=model, tools=args.tools or "none"
            ),
        ),
    )


def _judge(args: argparse.Namespace) -> EvaluationJudge | None:
    if args.judge == "deterministic":
        return None
    from tether.evals.candidates import ModelJudge

    if args.judge_model is None:
        choice = _choose(args.model, args.base_url)
    else:
        choice = _choose(args.judge_model, None)
    return ModelJudge(
        model_spec=choice.spec,
        base_url=choice.base_url,
        model_factory=choice.build,
        prices=choice.prices,
    )


def _executor(args: argparse.Namespace) -> EvaluationExecutor | None:
    if args.executor == "local":
        return None
    import importlib.util

    if importlib.util.find_spec("ray") is None:
        raise EvalProblem(
            "CLI_EVAL_RAY_MISSING",
            "--executor ray needs Ray: install the tether[ray] extra (pip install 'tether[ray]')",
        )
    from tether.evals.ray_executor import RayExecutor

    return RayExecutor(address=args.ray_address)


async def _run(
    args: argparse.Namespace,
    source: object,
    candidate: EvaluationCandidate,
    judge: EvaluationJudge | None,
    executor: EvaluationExecutor | None,
    progress: Progress,
) -> EvaluationReport | None:
    """The evaluation, with Ctrl-C cancelling it; ``None`` when it was interrupted."""
    import asyncio

    from tether.abort import AbortController
    from tether.cli.interrupts import Interrupts
    from tether.evals.errors import EvaluationInfrastructureError
    from tether.evals.runner import MonotonicClock, run_evaluation

    controller = AbortController()
    notice = b"\ntether eval: cancelling the runs (Ctrl-C again quits at once)\n"
    options: dict[str, Any] = {} if judge is None else {"judge": judge}
    with Interrupts(asyncio.get_running_loop(), controller, notice):
        try:
            return await run_evaluation(
                candidate=candidate,
                tasks=source,
                repetitions=args.repetitions,
                concurrency=args.concurrency,
                signal=controller.signal,
                clock=MonotonicClock(),
                executor=executor,
                on_run=progress,
                **options,
            )
        except EvaluationInfrastructureError as error:
            if controller.signal.aborted and error.code == "EVALUATION_CANCELLED":
                return None
            if executor is not None and _ray_failed(error):
                raise EvalProblem(_RAY_FAILED, _ray_message(error)) from None
            raise EvalProblem(error.code, _message(error)) from None
        finally:
            progress.close()


def _ray_failed(error: EvaluationInfrastructureError) -> bool:
    from tether.evals.ray_executor import RayExecutorError

    return isinstance(error, RayExecutorError)


def _ray_message(error: EvaluationInfrastructureError) -> str:
    """``error``'s message, the kind of Ray's exception, and the hint (Ray's own text is left
    out: it can be long, and it is Ray's to print)."""
    cause = error.__cause__
    kind = "" if cause is None else f" ({type(cause).__name__})"
    return f"{error}{kind}: {_RAY_HINT}"


def _message(error: EvaluationInfrastructureError) -> str:
    message = str(error)
    cause = error.__cause__
    codes: list[str] = []
    for failure in (*error.errors, cause):
        code = getattr(failure, "code", None)
        if isinstance(code, str) and code != error.code and code not in codes:
            codes.append(code)
    if codes:
        message += f" (caused by {', '.join(codes)})"
    hint = _HINTS.get(error.code)
    return message if hint is None else f"{message}: {hint}"


def _compare(baseline: EvaluationReport, report: EvaluationReport) -> EvaluationComparison:
    from tether.evals.errors import EvaluationInfrastructureError
    from tether.evals.report import compare_evaluations

    try:
        return compare_evaluations(baseline, report)
    except EvaluationInfrastructureError as error:
        raise EvalProblem(error.code, _message(error)) from None


def _summary(report: EvaluationReport, comparison: EvaluationComparison | None) -> None:
    from tether.evals.summary import format_summary

    Output.for_people(sys.stdout).write(format_summary(report, comparison))


class Progress:
    """The progress of the runs on ``stream`` (stderr): a bar redrawn in place on a terminal,
    else one line per finished run. Called with each run's outcome; never raises."""

    def __init__(self, total: int, stream: TextIO | None) -> None:
        self.total = total
        self.done = 0
        self._stream = stream
        try:
            self._tty = stream is not None and stream.isatty()
        except (OSError, ValueError):
            self._tty = False
        self._drawn = False

    def __call__(self, outcome: ItemOutcome) -> None:
        from tether.evals.types import EvaluationRunReport

        self.done += 1
        if self._tty:
            filled = _BAR * self.done // self.total if self.total else _BAR
            self._emit(f"\r[{'#' * filled}{'.' * (_BAR - filled)}] {self.done}/{self.total}")
            self._drawn = True
            return
        if isinstance(outcome, EvaluationRunReport):
            verdict = outcome.verdict
            if outcome.error_code is not None:
                verdict += f" {outcome.error_code}"
            line = f"[{self.done}/{self.total}] {outcome.task_id} {outcome.run_id} {verdict}"
        else:
            line = f"[{self.done}/{self.total}] {outcome.code}"
        self._emit(line + "\n")

    def close(self) -> None:
        """End the bar's line (on a terminal)."""
        if self._drawn:
            self._drawn = False
            self._emit("\n")

    def _emit(self, text: str) -> None:
        stream = self._stream
        if stream is None:
            return
        with contextlib.suppress(OSError, ValueError):
            stream.write(text)
            stream.flush()
