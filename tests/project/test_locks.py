"""The committed lock files (``requirements/*.txt``) can install what tether needs.

Every lock a ``make`` target installs from must pin each runtime dependency of
``pyproject.toml`` (a stale lock made ``make bench`` fail once: its venv lacked a new runtime
dependency), pin every package with hashes, and record no download host.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LOCKS = sorted((ROOT / "requirements").glob("*.txt"))
PROJECT_LOCKS = [path for path in LOCKS if path.name != "pip.txt"]
"""The locks a venv installs tether's own dependencies from (``pip.txt`` pins only pip)."""
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==\S+", re.M)


def canonical(name: str) -> str:
    """A distribution name as pip compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def runtime_dependencies() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    names: set[str] = set()
    for requirement in project["dependencies"]:
        match = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement)
        assert match is not None, requirement
        names.add(canonical(match.group()))
    return names


def test_there_are_the_four_locks() -> None:
    assert [path.name for path in LOCKS] == ["bench.txt", "build.txt", "dev.txt", "pip.txt"]


def test_every_venv_upgrades_pip_from_its_lock_before_installing() -> None:
    """The pip ``python3 -m venv`` brings (23.x) rejects the hash-pinned dev lock once a newer
    release exists of a package required with extras (``uvicorn[standard]``): every venv the
    Makefile creates installs the pinned pip first."""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipes = re.findall(r"-m venv (\S+)\n((?:\t.*\n)*)", makefile)
    venvs = {venv for venv, _ in recipes}
    assert {"$(VENV)", "$(BENCH_VENV)"} <= venvs, venvs
    for venv, recipe in recipes:
        if venv.endswith("lock-tool"):
            continue
        first = recipe.splitlines()[0] if recipe else ""
        assert "install --require-hashes -r requirements/pip.txt" in first, (venv, recipe)
    assert "pip==" in (ROOT / "requirements" / "pip.txt").read_text(encoding="utf-8")


@pytest.mark.parametrize("lock", PROJECT_LOCKS, ids=lambda path: path.name)
def test_every_lock_pins_the_runtime_dependencies(lock: Path) -> None:
    pinned = {canonical(name) for name in PIN.findall(lock.read_text(encoding="utf-8"))}
    assert runtime_dependencies() <= pinned, runtime_dependencies() - pinned


@pytest.mark.parametrize("lock", LOCKS, ids=lambda path: path.name)
def test_every_pin_has_a_hash_and_no_host(lock: Path) -> None:
    text = lock.read_text(encoding="utf-8")
    requirements = re.split(r"\n(?=[A-Za-z0-9])", text.strip())
    for requirement in requirements:
        if requirement.startswith("#"):
            continue
        assert "--hash=sha256:" in requirement, requirement.splitlines()[0]
    assert re.search(r"https?://|--index-url|--extra-index-url|--find-links", text) is None
