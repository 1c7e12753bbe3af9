"""Coding tools end to end: a scripted model fixes a file in a temp git repository through
``read_file`` -> ``edit_file`` -> ``bash`` (``git diff`` and ``python -c``), driven by the real
agent loop with ``coding_tools(tmp_path)``."""

# Tests inspect real temp directories synchronously on purpose.
# ruff: noqa: ASYNC240

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tether import (
    CompletedRunResult,
    ScriptedModel,
    ToolResultMessage,
    UserMessage,
    run_agent_loop,
    text_reply,
    tool_call_reply,
)
from tether.tools.coding import coding_tools
from tether.tools.coding.process import processes_settled

BUGGY = "def add(left, right):\n    return left - right\n"
FIXED = "def add(left, right):\n    return left + right\n"


def git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=root,
        check=True,
        capture_output=True,
        timeout=30,
    )


async def test_scripted_model_edits_a_file_in_a_git_repository(tmp_path: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    (tmp_path / "calc.py").write_text(BUGGY)
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", "calc.py")
    git(tmp_path, "commit", "-q", "-m", "initial")
    check = f"{sys.executable} -c 'import calc; print(calc.add(20, 22))'"
    model = ScriptedModel(
        [
            tool_call_reply(("read_file", {"path": "calc.py"})),
            tool_call_reply(
                ("edit_file", {"path": "calc.py", "old": "left - right", "new": "left + right"})
            ),
            tool_call_reply(("bash", {"command": f"git diff --stat && {check}"})),
            text_reply("Fixed add()."),
        ]
    )
    stream = run_agent_loop(
        messages=[UserMessage(content="Fix calc.add")],
        model=model,
        tools=coding_tools(tmp_path),
        max_steps=8,
    )
    async with asyncio.timeout(60):
        result = await stream.result
        await processes_settled()
    assert isinstance(result, CompletedRunResult)
    assert result.final_text == "Fixed add()."
    tool_results = [m for m in result.messages if isinstance(m, ToolResultMessage)]
    assert [m.tool_name for m in tool_results] == ["read_file", "edit_file", "bash"]
    assert not any(m.is_error for m in tool_results)
    assert tool_results[0].content == "calc.py (lines 1-2 of 2)\n" + BUGGY
    assert "-    return left - right\n+    return left + right\n" in tool_results[1].content
    bash = tool_results[2].content
    assert bash.startswith("exit code 0\n--- stdout ---\n")
    assert "1 file changed, 1 insertion(+), 1 deletion(-)" in bash
    assert "\n42\n" in bash
    assert (tmp_path / "calc.py").read_text() == FIXED
    assert not [p for p in tmp_path.iterdir() if ".pify-" in p.name]
    # the model was told about all seven tools
    specs = model.requests[0].tools
    assert [spec.name for spec in specs] == [
        "read_file",
        "write_file",
        "edit_file",
        "list_files",
        "grep",
        "bash",
        "python_process",
    ]
