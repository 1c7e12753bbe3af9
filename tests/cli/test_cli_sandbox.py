"""``--sandbox auto|on|off`` and ``[tools] sandbox`` on ``tether run``, ``rpc`` and ``chat``
(issue 35): commands run inside bubblewrap, ``on`` refuses to start where it cannot, ``auto``
says once why it runs them unsandboxed, and a sandboxed session does not ask about them."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from cli_support import BOUND, bash_reply, child_env, spawned, text_reply
from servers.replay import ReplayServer
from support import debian_binary
from tether.cli.config import load_config
from tether.tools.coding import sandbox_status

MODEL = "openai/gpt-4o-mini"


@pytest.fixture(scope="module")
def bwrap() -> str:
    found = debian_binary("bwrap", "bubblewrap")
    if found is None or not sandbox_status(found).available:
        pytest.skip("bubblewrap cannot run here (not installed, or no namespaces)")
    return found


@pytest.fixture
def outside() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="tether-cli-sandbox-", dir="/var/tmp"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


async def run_tether(*arguments: str, env: dict[str, str], cwd: Path) -> tuple[int, bytes, bytes]:
    async with spawned(*arguments, env=env, cwd=cwd, stdin=asyncio.subprocess.DEVNULL) as process:
        async with asyncio.timeout(BOUND):
            out, err = await process.communicate()
    assert process.returncode is not None
    return process.returncode, out, err


async def sandboxed_write(
    tmp_path: Path, outside: Path, *flags: str, env: dict[str, str] | None = None
) -> tuple[int, bytes, str]:
    """``tether run --tools coding`` where the model runs a command that writes outside the
    workspace; (exit status, stderr, what the tool result told the model)."""
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    async with ReplayServer() as server:
        server.respond(bash_reply("c1", f"echo escaped > {outside}/out.txt; echo done"))
        server.respond(text_reply("ok", prompt_tokens=9))
        status, _, err = await run_tether(
            "run", "--model", MODEL, "--base-url", server.url, "--tools", "coding",
            *flags, "-p", "write it",
            env=env or child_env(tmp_path), cwd=workspace,
        )  # fmt: skip
        result = ""
        if len(server.requests) > 1:
            result = server.requests[1].json["messages"][-1]["content"]
    return status, err, result


async def test_run_with_the_sandbox_on_contains_the_command(
    tmp_path: Path, outside: Path, bwrap: str
) -> None:
    status, err, result = await sandboxed_write(tmp_path, outside, "--sandbox", "on")
    assert status == 0, err
    assert "Read-only file system" in result
    assert not (outside / "out.txt").exists()
    status, err, result = await sandboxed_write(tmp_path, outside, "--sandbox", "off")
    assert status == 0, err
    assert (outside / "out.txt").read_text() == "escaped\n"  # the control gets out


async def test_the_config_setting_turns_it_on_and_the_flag_wins(
    tmp_path: Path, outside: Path, bwrap: str
) -> None:
    (tmp_path / "config.toml").write_text('[tools]\nsandbox = "on"\n')
    status, err, result = await sandboxed_write(tmp_path, outside)
    assert status == 0, err
    assert "Read-only file system" in result
    status, err, _ = await sandboxed_write(tmp_path, outside, "--sandbox", "off")
    assert (outside / "out.txt").exists()


async def test_on_refuses_to_start_without_bubblewrap(tmp_path: Path, outside: Path) -> None:
    env = child_env(tmp_path, PATH="/nonexistent")  # no bwrap to be found
    status, err, result = await sandboxed_write(tmp_path, outside, "--sandbox", "on", env=env)
    assert status == 2
    assert b"[CLI_SANDBOX_UNAVAILABLE]" in err
    assert b"bubblewrap" in err
    assert result == ""
    assert not (outside / "out.txt").exists()


async def test_auto_says_once_why_it_runs_unsandboxed(tmp_path: Path, outside: Path) -> None:
    env = child_env(tmp_path, PATH="/nonexistent")  # no bwrap; bash's builtins suffice
    status, err, _ = await sandboxed_write(tmp_path, outside, "--sandbox", "auto", env=env)
    assert status == 0, err
    assert err.count(b"\n") == 1  # one line, once
    assert err.startswith(b"tether run: the sandbox cannot run here (")
    assert b"commands run unsandboxed" in err
    assert (outside / "out.txt").exists()


def test_a_sandboxed_session_does_not_ask_about_commands(tmp_path: Path) -> None:
    from tether.cli.models import choose_model
    from tether.cli.session_config import coding_config
    from tether.coding import SessionPlace

    def policy(text: str) -> frozenset[str]:
        config_file = tmp_path / "config.toml"
        config_file.write_text(text)
        config = load_config(config_file)
        choice = choose_model(MODEL, base_url=None, config=config, environ={"OPENAI_API_KEY": "k"})
        made = coding_config(
            choice, config, cwd=tmp_path, tools="coding", introduction=None,
            sessions=SessionPlace(), config_dir=None, sandbox_available=True,
        )  # fmt: skip
        return made.approval.tools

    assert {"bash", "python_process"} <= policy("")
    sandboxed = policy('[tools]\nsandbox = "on"\n')
    assert "bash" not in sandboxed
    assert "python_process" not in sandboxed
    assert {"write_file", "edit_file"} <= sandboxed
