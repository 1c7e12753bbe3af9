"""The README's Python example runs and prints what the README says it does; the guides in
``docs/`` compile (their real-model examples) or run (the ones that need no model), and point at
nothing outside the repository."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def fenced(path: Path, language: str) -> list[str]:
    """The ``language`` fenced blocks of the Markdown file at ``path``, in order."""
    text = path.read_text(encoding="utf-8")
    return re.findall(rf"```{language}\n(.*?)```", text, flags=re.S)


def readme_python_blocks() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def test_readme_has_exactly_the_two_setup_commands() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    setup = re.search(r"```sh\n(.*?)```", text, flags=re.S)
    assert setup is not None
    commands = [line.split("#")[0].strip() for line in setup.group(1).splitlines()]
    assert [command for command in commands if command] == ["make run", "make check"]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "make check" in ci


@pytest.mark.slow
def test_readme_python_example_runs_the_fixture_round_trip() -> None:
    (example,) = readme_python_blocks()  # the offline example; the real-model one is ``py``
    completed = subprocess.run(
        [sys.executable, "-c", example],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    lines = completed.stdout.splitlines()
    assert lines[0] == "0 message.accepted"
    assert lines[-3] == "5 run.finished"
    assert lines[-2] == "completed The sum is 42."
    assert lines[-1] == (
        "ModelUsage(input_tokens=32, output_tokens=14, cache_read_tokens=0, cache_write_tokens=0)"
    )


def test_the_real_model_examples_compile() -> None:
    # ``py`` blocks need a real model (or a machine's paths): they are compiled, not run.
    expected = {
        "library.md": 3,  # real models, an image to a real model, the Agent with approvals
        "coding-tools.md": 3,  # the sandbox, a tool returning an image, real-model limits
        "sessions.md": 1,
        "extensions.md": 1,
    }
    found = {path.name: fenced(path, "py") for path in sorted(DOCS.glob("*.md"))}
    assert {name: len(blocks) for name, blocks in found.items() if blocks} == expected
    assert fenced(ROOT / "README.md", "py") == []
    for name, blocks in found.items():
        for example in blocks:
            compile(example, name, "exec")


def test_the_sandbox_example_runs(tmp_path: Path) -> None:
    [example] = [e for e in fenced(DOCS / "coding-tools.md", "py") if "Sandbox(" in e]
    done = subprocess.run(
        [sys.executable, "-c", example], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert done.stdout.startswith("SandboxStatus(available=")


def test_the_readme_is_a_front_page_linking_every_guide() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 150
    linked = set(re.findall(r"\]\(docs/([^)#]+\.md)\)", text))
    assert linked == {path.name for path in DOCS.glob("*.md")}


def tracked_files() -> list[Path]:
    """Every file git tracks in the repository, as paths."""
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.decode()
    return [ROOT / name for name in listed.split("\0") if name]


# Built from parts so that this file does not match itself.
MACHINE_PATH = re.compile("(?<![\\w.])/(?:" + "work|root|tmp/" + "bash_jobs)/")
OUTSIDE = re.compile(r"\.\./shared|shared/spec|spec/(?:providers|DESIGN|course)|DESIGN\.md")


def test_no_file_names_an_absolute_machine_path() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in tracked_files()
        if path.is_file() and path.suffix not in (".png", ".gz")
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if MACHINE_PATH.search(line)
    ]
    assert found == []


def test_readme_docs_and_docstrings_point_at_nothing_outside_the_repository() -> None:
    sources = [*sorted((ROOT / "src").rglob("*.py")), *sorted((ROOT / "benchmarks").glob("*.py"))]
    for source in sources:
        assert OUTSIDE.search(source.read_text(encoding="utf-8")) is None, source.name
    documents = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    for document in documents:
        text = document.read_text(encoding="utf-8")
        assert OUTSIDE.search(text) is None, document.name
        for target in re.findall(r"\]\(([^)#]+)\)", text):
            if "://" not in target:
                assert (document.parent / target).exists(), f"{document.name}: {target}"


def test_the_config_examples_load_as_written(tmp_path: Path) -> None:
    from tether.cli import config as config_module

    readme = (DOCS / "cli.md").read_text(encoding="utf-8")
    docstring = config_module.__doc__ or ""
    block = docstring.split("::\n\n", 1)[1].split("\n\n``", 1)[0]
    examples = [
        next(
            text
            for text in re.findall(r"```toml\n(.*?)```", readme, flags=re.S)
            if "[tools]" in text
        ),
        "\n".join(line.removeprefix("    ") for line in block.splitlines()),
    ]
    for number, example in enumerate(examples):
        path = tmp_path / f"config-{number}.toml"
        path.write_text(example, encoding="utf-8")
        config = config_module.load_config(path)
        assert config.default_model == "openai/gpt-4o-mini"
        assert config.extensions == ("hello",)
        assert config.extension_timeout == 30
        assert config.providers["gpu-box"].api_key_env == "GPU_BOX_KEY"
        assert config.models["openai/gpt-4o-mini"].context_window == 128000
        assert config.tools.pass_env == ("GITHUB_TOKEN",)
