"""``docs/library.md``: every Python example runs, prints what the page shows under it, and
type-checks under pyright strict."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from servers.replay import ReplayServer, sse_response

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "library.md"
PYRIGHT = Path(sys.executable).parent / "pyright"
BOUND = 60.0


def examples() -> list[tuple[str, str]]:
    """Each ``python`` block with the ``text`` block that follows it (its output)."""
    text = PAGE.read_text(encoding="utf-8")
    return re.findall(r"```python\n(.*?)```\s*```text\n(.*?)```", text, flags=re.S)


def test_the_page_has_every_example_with_its_output() -> None:
    found = examples()
    assert len(found) == 14
    assert len(re.findall(r"```python\n", PAGE.read_text(encoding="utf-8"))) == len(found)


def _answer(text: str) -> bytes:
    chunks: list[dict[str, Any]] = [
        {"choices": [{"index": 0, "delta": {"role": "assistant", "content": text}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    ]
    body = "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in chunks)
    return (body + "data: [DONE]\n\n").encode()


async def _run(code: str, env: dict[str, str]) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        code,
        cwd=ROOT,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    async with asyncio.timeout(BOUND):
        stdout, stderr = await process.communicate()
    assert process.returncode is not None
    return process.returncode, stdout.decode(), stderr.decode()


@pytest.mark.slow
@pytest.mark.parametrize("index", range(len(examples())))
async def test_each_example_prints_what_the_page_shows(index: int) -> None:
    code, expected = examples()[index]
    env = {**os.environ, "PYTHONWARNINGS": "error"}
    async with ReplayServer() as server:
        server.respond(sse_response(_answer("Paris")))
        env["LOCAL_LLM_URL"] = server.url
        returncode, stdout, stderr = await _run(code, env)
    assert returncode == 0, stderr
    assert stdout == expected


@pytest.mark.slow
def test_the_examples_type_check_under_pyright_strict(tmp_path: Path) -> None:
    assert PYRIGHT.exists(), f"pyright is not installed next to {sys.executable}"
    for index, (code, _) in enumerate(examples()):
        (tmp_path / f"example_{index}.py").write_text(code, encoding="utf-8")
    config = {
        "typeCheckingMode": "strict",
        "pythonVersion": "3.11",
        "reportUnnecessaryTypeIgnoreComment": "error",
        "extraPaths": [str(ROOT / "src")],
    }
    (tmp_path / "pyrightconfig.json").write_text(json.dumps(config), encoding="utf-8")
    completed = subprocess.run(
        [str(PYRIGHT), "-p", str(tmp_path), "--pythonpath", sys.executable, "--outputjson"],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
        timeout=600,
    )
    report: dict[str, Any] = json.loads(completed.stdout)
    problems = [
        f"{Path(item['file']).name}:{item['range']['start']['line'] + 1}: {item['message']}"
        for item in report["generalDiagnostics"]
    ]
    assert problems == []
    assert report["summary"]["filesAnalyzed"] == len(examples())
