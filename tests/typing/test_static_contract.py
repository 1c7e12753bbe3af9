"""The compile-time contract, checked by running pyright (strict) on ``tests/typing/cases``.

The Python analogue of the workshop's ``@ts-expect-error`` block and its "add a fifth
``RunResult`` member" failure experiment:

* ``expected_errors.py`` carries one ``# pyright: ignore[rule]`` per forbidden operation and must
  type-check with zero diagnostics (``reportUnnecessaryTypeIgnoreComment`` makes every unneeded
  ignore an error). A second run on a copy with the comments stripped proves each marked line
  fails with exactly the marked rules.
* ``exhaustive_ok.py`` is the positive control: exhaustive matches and a correct tool.
* ``deferred_experiment.py`` must fail exactly once, at the forgotten ``assert_never``.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent
CASES = HERE / "cases"
REPO = HERE.parents[1]
PYRIGHT = Path(sys.executable).parent / "pyright"
CASE_FILES = ("expected_errors.py", "exhaustive_ok.py", "deferred_experiment.py")
IGNORE = re.compile(r"\s*# pyright: ignore\[(?P<rules>[^\]]+)\]\s*$")
EXPECTED_MARKER = re.compile(r"# EXPECTED-ERROR\((?P<rule>\w+)\) next line")

# Each operation the design says must be a type error, found by a fragment of its line.
REQUIRED_EXPECTED_ERRORS = {
    "assigning a field of a message": "user.id = ",
    "appending to assistant content": "assistant.content.append(",
    "writing into tool-call arguments": 'tool_call.arguments["x"] = 1',
    "a validator narrower than object": "= NarrowValidator()",
    "a synchronous execute": "= SynchronousExecute()",
    'a "running" status': 'CompletedRunResult(status="running"',
}


@dataclass(frozen=True)
class Diagnostic:
    file: str
    line: int  # 1-based
    severity: str
    rule: str | None
    message: str


@dataclass(frozen=True)
class PyrightReport:
    files_analyzed: int
    diagnostics: tuple[Diagnostic, ...]

    def in_file(self, name: str) -> list[Diagnostic]:
        return [diagnostic for diagnostic in self.diagnostics if diagnostic.file == name]


def _run_pyright(project: Path) -> PyrightReport:
    assert PYRIGHT.exists(), f"pyright is not installed next to {sys.executable}"
    completed = subprocess.run(
        [str(PYRIGHT), "-p", str(project), "--pythonpath", sys.executable, "--outputjson"],
        capture_output=True,
        text=True,
        check=False,
        cwd=project,
        timeout=600,
    )
    # 0: no errors, 1: errors reported; anything else is a crash or a configuration problem
    assert completed.returncode in (0, 1), completed.stdout + completed.stderr
    assert "unrecognized" not in completed.stderr.lower(), completed.stderr
    output: dict[str, Any] = json.loads(completed.stdout)
    diagnostics = tuple(
        Diagnostic(
            file=Path(raw["file"]).name,
            line=raw["range"]["start"]["line"] + 1,
            severity=raw["severity"],
            rule=raw.get("rule"),
            message=raw["message"],
        )
        for raw in output["generalDiagnostics"]
    )
    return PyrightReport(files_analyzed=output["summary"]["filesAnalyzed"], diagnostics=diagnostics)


def _ignored_rules_by_line(source: str) -> dict[int, set[str]]:
    """Line number (1-based) -> the rules its ``# pyright: ignore[...]`` names."""
    found: dict[int, set[str]] = {}
    for number, line in enumerate(source.splitlines(), start=1):
        match = IGNORE.search(line)
        if match:
            found[number] = {rule.strip() for rule in match["rules"].split(",")}
    return found


@pytest.fixture(scope="module")
def cases_report() -> PyrightReport:
    return _run_pyright(CASES)


@pytest.fixture(scope="module")
def stripped_report(tmp_path_factory: pytest.TempPathFactory) -> PyrightReport:
    """pyright on a copy of ``expected_errors.py`` without its ignore comments."""
    project = tmp_path_factory.mktemp("stripped")
    config = json.loads((CASES / "pyrightconfig.json").read_text(encoding="utf-8"))
    config["extraPaths"] = [str(REPO / "src")]
    (project / "pyrightconfig.json").write_text(json.dumps(config), encoding="utf-8")
    source = (CASES / "expected_errors.py").read_text(encoding="utf-8")
    stripped = "\n".join(IGNORE.sub("", line) for line in source.splitlines()) + "\n"
    assert "pyright: ignore" not in stripped.split('"""', 2)[2]
    (project / "expected_errors.py").write_text(stripped, encoding="utf-8")
    return _run_pyright(project)


# --- the run itself ---------------------------------------------------------------------------


def test_the_case_folder_holds_exactly_the_case_files() -> None:
    assert sorted(path.name for path in CASES.glob("*.py")) == sorted(CASE_FILES)


def test_pyright_analyzed_every_case_file(cases_report: PyrightReport) -> None:
    assert cases_report.files_analyzed == len(CASE_FILES)


def test_the_project_wide_pyright_run_excludes_the_cases() -> None:
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert "tests/typing/cases" in pyproject["tool"]["pyright"]["exclude"]


def test_the_case_config_is_strict_and_flags_unneeded_ignores() -> None:
    config = json.loads((CASES / "pyrightconfig.json").read_text(encoding="utf-8"))
    assert config["typeCheckingMode"] == "strict"
    assert config["pythonVersion"] == "3.11"
    assert config["reportUnnecessaryTypeIgnoreComment"] == "error"
    assert all(not Path(path).is_absolute() for path in config["extraPaths"])


# --- (a) expected errors ----------------------------------------------------------------------


def test_expected_errors_file_type_checks_with_zero_diagnostics(
    cases_report: PyrightReport,
) -> None:
    assert cases_report.in_file("expected_errors.py") == []


@pytest.mark.parametrize(
    "fragment", REQUIRED_EXPECTED_ERRORS.values(), ids=REQUIRED_EXPECTED_ERRORS.keys()
)
def test_each_required_violation_is_an_ignored_line(fragment: str) -> None:
    source = (CASES / "expected_errors.py").read_text(encoding="utf-8")
    ignored = _ignored_rules_by_line(source)
    lines = source.splitlines()
    matching = [number for number, line in enumerate(lines, start=1) if fragment in line]
    assert len(matching) == 1, fragment
    assert matching[0] in ignored, f"{fragment!r} carries no pyright ignore"


def test_without_the_comments_every_marked_line_fails_with_exactly_its_rules(
    stripped_report: PyrightReport,
) -> None:
    source = (CASES / "expected_errors.py").read_text(encoding="utf-8")
    expected = {
        (line, rule) for line, rules in _ignored_rules_by_line(source).items() for rule in rules
    }
    diagnostics = stripped_report.in_file("expected_errors.py")
    assert stripped_report.files_analyzed == 1
    assert len(expected) >= len(REQUIRED_EXPECTED_ERRORS)
    assert {(item.line, item.rule) for item in diagnostics} == expected
    assert {item.severity for item in diagnostics} == {"error"}


# --- (b) exhaustive matches -------------------------------------------------------------------


def test_exhaustive_matches_type_check_clean(cases_report: PyrightReport) -> None:
    assert cases_report.in_file("exhaustive_ok.py") == []


# --- (c) the failure experiment ---------------------------------------------------------------


def _expected_experiment_error() -> tuple[int, str]:
    lines = (CASES / "deferred_experiment.py").read_text(encoding="utf-8").splitlines()
    markers = [
        (number, match["rule"])
        for number, line in enumerate(lines, start=1)
        if (match := EXPECTED_MARKER.search(line))
    ]
    assert len(markers) == 1
    number, rule = markers[0]
    assert "assert_never(result)" in lines[number]  # the line after the marker
    return number + 1, rule


def test_a_fifth_run_result_breaks_the_exhaustive_match(cases_report: PyrightReport) -> None:
    line, rule = _expected_experiment_error()
    assert rule == "reportArgumentType"
    diagnostics = cases_report.in_file("deferred_experiment.py")
    assert [(item.line, item.rule, item.severity) for item in diagnostics] == [
        (line, rule, "error")
    ]
    assert "DeferredRunResult" in diagnostics[0].message
    assert "Never" in diagnostics[0].message


def test_no_case_file_outside_the_experiment_reports_anything(
    cases_report: PyrightReport,
) -> None:
    assert {item.file for item in cases_report.diagnostics} <= {"deferred_experiment.py"}
