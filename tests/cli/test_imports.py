"""The CLI's modules import each other without a cycle, and each imports alone.

The graph counts every ``tether.cli.*`` and ``tether.coding.*`` import of a module, those
inside functions included (a deferred import is still a dependency). ``tether.coding`` (the
session service) must never import a mode (``tether.cli.chat``, ``run``, ``rpc``, ``main``),
nor anything else of ``tether.cli``. ``tether --help`` imports no command's modules.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

SOURCE = Path(__file__).resolve().parents[2] / "src" / "tether"
PACKAGES = ("cli", "coding")
MODES = frozenset(
    {"tether.cli.chat", "tether.cli.run_command", "tether.cli.rpc", "tether.cli.main"}
)


def modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((SOURCE / package).glob("*.py")):
            name = (
                f"tether.{package}" if path.stem == "__init__" else f"tether.{package}.{path.stem}"
            )
            found[name] = path
    return found


def imports_of(path: Path, known: set[str]) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module is not None and node.level == 0:
            names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        found |= {name for name in names if name in known}
    return found


def graph() -> dict[str, set[str]]:
    found = modules()
    known = set(found)
    return {
        name: imports_of(path, known) - {name, "tether.cli", "tether.coding"}
        for name, path in found.items()
    }


def cycle(edges: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, str] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = "open"
        stack.append(node)
        for target in sorted(edges.get(node, ())):
            if state.get(target) == "open":
                return [*stack[stack.index(target) :], target]
            if target not in state:
                found = visit(target)
                if found is not None:
                    return found
        stack.pop()
        state[node] = "done"
        return None

    for node in sorted(edges):
        if node not in state:
            found = visit(node)
            if found is not None:
                return found
    return None


def test_the_graph_finds_a_cycle_when_there_is_one() -> None:
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert cycle({"a": {"b"}, "b": set()}) is None


def test_the_cli_and_the_service_import_each_other_without_a_cycle() -> None:
    edges = graph()
    assert "tether.cli.run_command" in edges
    assert cycle(edges) is None


def test_the_service_imports_no_mode() -> None:
    for name, targets in graph().items():
        if name.startswith("tether.coding"):
            assert not targets & MODES, (name, targets & MODES)


def test_the_service_imports_nothing_of_the_cli() -> None:
    for name, targets in graph().items():
        if name.startswith("tether.coding"):
            cli = {target for target in targets if target.startswith("tether.cli")}
            assert not cli, (name, cli)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(set(modules()) - {"tether.cli.__main__"}))
def test_each_module_imports_alone(name: str) -> None:
    completed = subprocess.run(
        [sys.executable, "-c", f"import {name}"], capture_output=True, text=True, check=False
    )
    assert completed.returncode == 0, completed.stderr


_HELP_PROBE = """
import contextlib, io, json, sys
from tether.cli.main import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
    main(["--help"])
heavy = ["asyncio", "tether.providers.thinking", "tether.cli.config"]
if "coverage" not in sys.modules:  # coverage (make check) imports these itself
    heavy += ["dataclasses", "tomllib"]
print(json.dumps([name for name in heavy if name in sys.modules]))
"""


@pytest.mark.slow
def test_the_top_level_help_loads_no_command() -> None:
    """``tether --help`` lists the commands without building their arguments (the
    ``--thinking`` levels load the dataclass machinery) or importing asyncio or the config
    file's reader: it is the CLI's startup floor (``benchmarks/bench_cli_startup.py``)."""
    completed = subprocess.run(
        [sys.executable, "-c", _HELP_PROBE], capture_output=True, text=True, check=False
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == "[]"
