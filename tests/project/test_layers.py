"""The layering of ``src/tether``: every import points down the layer order, none back.

``LAYERS`` lists tether's packages from the bottom up (docs/architecture.md draws the same
picture). A module may import from its own layer package and from the layers below it; an
import of a layer above is a back arrow, wherever it stands: at module level, inside a
function (a lazy import is still a dependency) or under ``TYPE_CHECKING``. Peers in one row
may import each other, but the packages' graph has no cycle. The lazy package root
(``tether/__init__.py``) re-exports from every layer and is the one module outside the order.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest

SOURCE: Final = Path(__file__).resolve().parents[2] / "src" / "tether"

LAYERS: Final = (
    ("tether._base",),
    ("tether.abort", "tether.stream", "tether.jsonvalue"),
    ("tether._async",),
    ("tether.protocol",),
    ("tether.tracing", "tether.models"),
    ("tether.providers",),
    ("tether.tools",),
    ("tether.mcp", "tether.loop"),
    ("tether.agent",),
    ("tether.coding", "tether.evals"),
    ("tether.cli",),
)
"""tether's layer packages, bottom first; one row is one layer."""

RANK: Final = {package: rank for rank, row in enumerate(LAYERS) for package in row}


def package_of(module: str) -> str | None:
    """The layer package ``module`` belongs to (``tether.loop`` for ``tether.loop.agent_loop``)."""
    parts = module.split(".")
    for size in (2, 1):
        name = ".".join(parts[:size])
        if name in RANK:
            return name
    return None


def module_name(path: Path) -> str:
    parts = path.relative_to(SOURCE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> Iterator[tuple[int, str]]:
    """Every ``tether`` module that ``path`` imports, anywhere in it, with its line."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "tether":
                for alias in node.names:
                    yield node.lineno, f"tether.{alias.name}"
            elif node.module.startswith("tether."):
                yield node.lineno, node.module
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("tether."):
                    yield node.lineno, alias.name


def edges() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {package: set() for package in RANK}
    for path in sorted(SOURCE.rglob("*.py")):
        source = package_of(module_name(path))
        if source is None:
            continue
        for _line, imported in imports(path):
            target = package_of(imported)
            if target is not None and target != source:
                graph[source].add(target)
    return graph


def test_every_module_belongs_to_a_layer() -> None:
    homeless = [
        module_name(path)
        for path in sorted(SOURCE.rglob("*.py"))
        if module_name(path) != "tether" and package_of(module_name(path)) is None
    ]
    assert homeless == [], "modules outside every layer package (add them to LAYERS)"


def test_no_import_points_up_the_layers() -> None:
    back_arrows: list[str] = []
    for path in sorted(SOURCE.rglob("*.py")):
        source = package_of(module_name(path))
        if source is None:
            continue
        for line, imported in imports(path):
            target = package_of(imported)
            if target is not None and RANK[target] > RANK[source]:
                where = f"{path.relative_to(SOURCE.parent)}:{line}"
                back_arrows.append(f"{where}: {source} imports {imported}")
    assert back_arrows == []


def test_the_layer_packages_have_no_cycle() -> None:
    graph = edges()
    done: set[str] = set()
    path: list[str] = []

    def visit(package: str) -> None:
        if package in path:
            cycle = [*path[path.index(package) :], package]
            pytest.fail("import cycle: " + " -> ".join(cycle))
        if package in done:
            return
        path.append(package)
        for target in sorted(graph[package]):
            visit(target)
        path.pop()
        done.add(package)

    for package in sorted(graph):
        visit(package)


def test_the_check_sees_a_back_arrow(tmp_path: Path) -> None:
    """The import reader finds lazy and ``TYPE_CHECKING`` imports (so the tests above can
    fail): a function-level import of the CLI from the protocol layer is reported."""
    module = tmp_path / "probe.py"
    module.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from tether.agent import Agent\n"
        "def later():\n    from tether import cli\n    import tether.loop.run\n"
    )
    found = [name for _line, name in imports(module)]
    assert found == ["tether.agent", "tether.cli", "tether.loop.run"]
    ranks = [RANK[package] for name in found if (package := package_of(name)) is not None]
    assert min(ranks) > RANK["tether.protocol"]
