"""``docs/mcp.md``: its config example is what ``tether`` reads, its Python example runs
against the real ``mcp-server-time`` and prints what the page shows, and the README links
the page."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import get_args

import pytest

from tether.cli.config import load_config
from tether.mcp import McpErrorCode, McpHttpServer, McpStdioServer

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "mcp.md"


def blocks(kind: str) -> list[str]:
    return re.findall(rf"```{kind}\n(.*?)```", PAGE.read_text(encoding="utf-8"), flags=re.S)


def test_the_config_example_loads(tmp_path: Path) -> None:
    (example,) = blocks("toml")
    path = tmp_path / "config.toml"
    path.write_text(example, encoding="utf-8")
    time, git, docs = load_config(path).mcp_servers
    assert isinstance(time, McpStdioServer)
    assert (time.name, time.command, time.approval) == ("time", "mcp-server-time", "auto")
    assert isinstance(git, McpStdioServer)
    assert dict(git.tool_approval) == {"git_status": "auto", "git_log": "auto"}
    assert isinstance(docs, McpHttpServer)
    assert (docs.enabled, docs.startup_timeout, docs.bearer_token_env_var) == (
        False,
        10.0,
        "DOCS_TOKEN",
    )


@pytest.mark.slow
def test_the_python_example_runs_and_prints_what_the_page_shows() -> None:
    (example,) = blocks("python")
    outputs = blocks("text")
    environ = dict(os.environ)
    environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{environ.get('PATH', '')}"
    completed = subprocess.run(
        [sys.executable, "-c", example],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=environ,
        cwd=ROOT,
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == outputs[-1]


def test_the_error_table_lists_every_code() -> None:
    table = re.findall(r"^\| `(MCP_[A-Z_]+)` \|", PAGE.read_text(encoding="utf-8"), flags=re.M)
    assert tuple(table) == get_args(McpErrorCode)


def test_the_readme_links_the_page() -> None:
    assert "(docs/mcp.md)" in (ROOT / "README.md").read_text(encoding="utf-8")
