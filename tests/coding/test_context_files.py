"""The context files of ``tether chat``'s system prompt, on real temporary directories."""

from __future__ import annotations

import datetime
import os
import sys
from pathlib import Path

import pytest

from tether.coding.context_files import (
    DEFAULT_INTRODUCTION,
    MAX_FILE_BYTES,
    context_directories,
    load_context_files,
    system_prompt,
    user_config_dir,
)


def tree(tmp_path: Path) -> tuple[Path, Path, Path]:
    """config/, and project/sub/ under tmp_path."""
    config = tmp_path / "config" / "tether"
    config.mkdir(parents=True)
    cwd = tmp_path / "project" / "sub"
    cwd.mkdir(parents=True)
    return config, tmp_path / "project", cwd


def test_files_come_outermost_first_config_dir_before_all(tmp_path: Path) -> None:
    config, project, cwd = tree(tmp_path)
    (config / "AGENTS.md").write_text("user rules\n", encoding="utf-8")
    (project / "AGENTS.md").write_text("project rules\n", encoding="utf-8")
    (cwd / "AGENTS.md").write_text("sub rules\n", encoding="utf-8")

    files, omitted = load_context_files(cwd, config_dir=config)

    assert [file.path for file in files] == [
        config / "AGENTS.md",
        project / "AGENTS.md",
        cwd / "AGENTS.md",
    ]
    assert [file.text for file in files] == ["user rules\n", "project rules\n", "sub rules\n"]
    assert omitted == []
    assert not any(file.cut for file in files)


def test_claude_md_only_where_there_is_no_agents_md(tmp_path: Path) -> None:
    config, project, cwd = tree(tmp_path)
    (project / "AGENTS.md").write_text("agents\n", encoding="utf-8")
    (project / "CLAUDE.md").write_text("claude, shadowed\n", encoding="utf-8")
    (cwd / "CLAUDE.md").write_text("claude here\n", encoding="utf-8")

    files, _ = load_context_files(cwd, config_dir=config)

    assert [(file.path.name, file.text) for file in files] == [
        ("AGENTS.md", "agents\n"),
        ("CLAUDE.md", "claude here\n"),
    ]


def test_directories_include_every_ancestor_once(tmp_path: Path) -> None:
    config, project, cwd = tree(tmp_path)
    directories = context_directories(cwd, config_dir=config)
    assert directories[0] == config
    assert directories[1] == Path("/")
    assert directories[-2:] == [project, cwd]
    assert len({os.path.realpath(path) for path in directories}) == len(directories)
    inside = context_directories(cwd, config_dir=project)  # met twice: read at its first place
    assert inside.count(project) == 1
    assert inside[0] == project


def test_a_big_file_is_cut_with_a_note(tmp_path: Path) -> None:
    config, project, cwd = tree(tmp_path)
    big = "é" * MAX_FILE_BYTES  # two bytes each: the cut falls inside the text
    (project / "AGENTS.md").write_text(big, encoding="utf-8")

    (file,), _ = load_context_files(cwd, config_dir=config)

    assert file.cut
    assert file.size == 2 * MAX_FILE_BYTES
    body, note = file.text.rsplit("\n", 1)
    assert body == "é" * (MAX_FILE_BYTES // 2)
    assert note.startswith(f"[... {project / 'AGENTS.md'} was cut at {MAX_FILE_BYTES} of")
    assert "file limit" in note


def test_a_character_cut_in_half_is_dropped_and_bad_bytes_replaced(tmp_path: Path) -> None:
    config, project, cwd = tree(tmp_path)
    (project / "AGENTS.md").write_bytes(b"ok \xff then " + "é".encode() * 10)

    (file,), _ = load_context_files(cwd, config_dir=config, max_file_bytes=13)

    assert file.text.split("\n")[0] == "ok \ufffd then é"  # 10 bytes, one é, half of the next


def test_the_total_is_bounded_and_the_rest_named(tmp_path: Path) -> None:
    config, project, cwd = tree(tmp_path)
    (config / "AGENTS.md").write_text("a" * 60, encoding="utf-8")
    (project / "AGENTS.md").write_text("b" * 60, encoding="utf-8")
    (cwd / "CLAUDE.md").write_text("c" * 10, encoding="utf-8")

    files, omitted = load_context_files(
        cwd, config_dir=config, max_file_bytes=64, max_total_bytes=100
    )

    assert [file.path for file in files] == [config / "AGENTS.md", project / "AGENTS.md"]
    assert files[0].text == "a" * 60
    assert files[1].cut
    assert files[1].text.startswith("b" * 40 + "\n[... ")
    assert "total limit" in files[1].text
    assert omitted == [cwd / "CLAUDE.md"]
    prompt = system_prompt(
        cwd, tool_names=["read_file"], config_dir=config, max_file_bytes=64, max_total_bytes=100
    )
    assert f"[Context files left out: the 100-byte total was reached: {cwd / 'CLAUDE.md'}]" in (
        prompt
    )


@pytest.mark.skipif(sys.platform == "win32", reason="FIFOs")
def test_only_regular_files_are_read(tmp_path: Path) -> None:
    config, project, cwd = tree(tmp_path)
    os.mkfifo(project / "AGENTS.md")  # would block a plain open()
    (project / "CLAUDE.md").write_text("not read: AGENTS.md exists but is no file\n")
    (cwd / "AGENTS.md").mkdir()

    files, _ = load_context_files(cwd, config_dir=config)

    assert [file.path for file in files] == [project / "CLAUDE.md"]


def test_the_system_prompt_has_tools_date_and_files(tmp_path: Path) -> None:
    config, _, cwd = tree(tmp_path)
    (config / "AGENTS.md").write_text("Prefer tabs.\n", encoding="utf-8")
    (cwd / "AGENTS.md").write_text("Run make test.\n", encoding="utf-8")

    prompt = system_prompt(
        cwd,
        tool_names=["read_file", "bash"],
        today=datetime.date(2026, 3, 4),
        config_dir=config,
    )

    assert prompt.startswith(DEFAULT_INTRODUCTION + "\n\n")
    assert "Tools: read_file, bash.\n" in prompt
    assert "Today's date: 2026-03-04." in prompt
    assert f"Project directory: {cwd}" in prompt
    first = prompt.index(f"# Context from {config / 'AGENTS.md'}\n\nPrefer tabs.")
    second = prompt.index(f"# Context from {cwd / 'AGENTS.md'}\n\nRun make test.")
    assert first < second
    custom = system_prompt(cwd, tool_names=[], introduction="Be terse.", config_dir=config)
    assert custom.startswith("Be terse.\n\nTools: none.")


def test_the_user_config_dir_follows_xdg(tmp_path: Path) -> None:
    assert user_config_dir({"XDG_CONFIG_HOME": str(tmp_path)}) == tmp_path / "tether"
    assert user_config_dir({"XDG_CONFIG_HOME": "relative"}) == Path.home() / ".config" / "tether"
    assert user_config_dir({}) == Path.home() / ".config" / "tether"
