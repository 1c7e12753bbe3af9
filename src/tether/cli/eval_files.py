"""The files of ``tether eval``: the tasks and the baseline read (regular files of at most
``MAX_EVAL_FILE_BYTES``, checked), a report written through a temporary file, never over
something else than a regular file; and ``EvalProblem``, what the command reports as
``tether eval: [CODE] message`` with exit status 2."""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from tether.coding.reading import UnreadableFile, read_regular_file
from tether.jsonvalue import loads_strict

if TYPE_CHECKING:
    from tether.evals.types import EvaluationReport, EvaluationTask

__all__ = [
    "MAX_EVAL_FILE_BYTES",
    "EvalProblem",
    "check_alignment",
    "check_target",
    "load_baseline",
    "load_tasks",
    "write_report",
]
MAX_EVAL_FILE_BYTES: Final = 64 << 20
"""The largest tasks or baseline file read."""


class EvalProblem(Exception):
    """A problem to report as ``tether eval: [CODE] message`` with exit status 2."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def _read(path: Path, code: str) -> str:
    """The UTF-8 text of the regular file ``path``, at most ``MAX_EVAL_FILE_BYTES`` (a FIFO or
    a device such as ``/dev/zero`` is refused at once: ``tether.coding.reading``)."""
    try:
        return read_regular_file(path, limit=MAX_EVAL_FILE_BYTES).decode("utf-8")
    except UnreadableFile as problem:
        raise EvalProblem(code, f"cannot read {path}: {problem.reason}") from None
    except UnicodeDecodeError:
        raise EvalProblem(code, f"cannot read {path}: not UTF-8") from None


def check_target(path: Path | None) -> None:
    """A report is written only where nothing is, or over a regular file: never over a FIFO,
    a device or a directory (``os.replace`` would replace it with a file)."""
    if path is None:
        return
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return
    except OSError as error:
        raise EvalProblem(
            "CLI_EVAL_WRITE_FAILED", f"cannot write {path}: {error.strerror or error}"
        ) from None
    if not stat.S_ISREG(info.st_mode):
        raise EvalProblem(
            "CLI_EVAL_WRITE_FAILED", f"cannot write {path}: it exists and is not a regular file"
        )


def load_tasks(path: Path) -> tuple[Any, tuple[EvaluationTask, ...]]:
    """The tasks file's JSON and its tasks, checked (``CLI_EVAL_TASKS_UNREADABLE``,
    ``CLI_EVAL_TASKS_INVALID``)."""
    from tether.evals.tasks import load_evaluation_tasks

    text = _read(path, "CLI_EVAL_TASKS_UNREADABLE")
    try:
        source = loads_strict(text)
    except ValueError as error:
        raise EvalProblem("CLI_EVAL_TASKS_INVALID", f"{path}: not valid JSON ({error})") from None
    try:
        return source, load_evaluation_tasks(source)
    except (TypeError, ValueError) as error:
        raise EvalProblem("CLI_EVAL_TASKS_INVALID", f"{path}: {error}") from None


def load_baseline(path: Path) -> EvaluationReport:
    """The ``--compare`` report, parsed (``CLI_EVAL_BASELINE_UNREADABLE``,
    ``EVALUATION_INVALID_REPORT``)."""
    from tether.evals.errors import EvaluationInfrastructureError
    from tether.evals.report import parse_evaluation_report

    text = _read(path, "CLI_EVAL_BASELINE_UNREADABLE")
    try:
        return parse_evaluation_report(text)
    except EvaluationInfrastructureError as error:
        raise EvalProblem(
            error.code, f"{path}: {error} (--compare takes a report written by tether eval --out)"
        ) from None


def check_alignment(path: Path, baseline: EvaluationReport, tasks: Any, repetitions: int) -> None:
    """Before anything runs: the baseline must hold exactly the runs this evaluation will
    make (the same task and run IDs), or ``--compare`` could not align them afterwards."""
    from tether.evals.runner import work_items

    expected = {(item.task.id, item.run_id) for item in work_items(tasks, repetitions)}
    found = {(run.task_id, run.run_id) for run in baseline.runs}
    if found == expected:
        return
    raise EvalProblem(
        "EVALUATION_INVALID_REPORT",
        f"{path}: the baseline holds {len(found)} runs, not the {len(expected)} runs of these "
        f"tasks with --repetitions {repetitions} (or other task IDs): nothing was run; "
        "compare with a report of the same tasks and repetitions (tether eval --out)",
    )


def write_report(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same directory (a reader
    never sees half a report), unless ``path`` is something else than a regular file."""
    check_target(path)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        temporary.write_text(text, encoding="utf-8")
        os.replace(temporary, path)
    except OSError as error:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise EvalProblem(
            "CLI_EVAL_WRITE_FAILED", f"cannot write {path}: {error.strerror or error}"
        ) from None
