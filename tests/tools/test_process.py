"""Coding tools, processes: ``bash`` and ``python_process`` with real processes.

Progress is observed through the documented ``Workspace.observer`` seam (``process:started``,
``process:stdout``), never with sleeps. A killed grandchild is re-parented to the system's
init, which reaps it on its own schedule: ``assert_not_running`` accepts "no such process" or a
zombie (dead, not yet reaped by init); our own direct child must be fully reaped.
"""

# Tests inspect real temp directories synchronously on purpose.
# ruff: noqa: ASYNC240

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal as signals
import subprocess
import sys
from pathlib import Path

import pytest

from process_support import CALL_IDS, assert_not_running, call, error_message, wait_dead
from tether import AbortController, JsonObject, ToolCall, ToolRegistry, ToolResultMessage
from tether.tools.coding import (
    PROCESS_OUTPUT_MAX_BYTES,
    CodingToolError,
    Workspace,
    bash_tool,
    coding_tools,
    process,
    python_process,
    supervisor,
)
from tether.tools.coding.environment import catalog_key_variables
from tether.tools.coding.process import processes_settled, run_process
from tether.tools.execution import execute_tool_call


async def call_with(
    registry: ToolRegistry, name: str, arguments: dict[str, object]
) -> ToolResultMessage:
    tool_call = ToolCall(id=f"call-{next(CALL_IDS)}", name=name, arguments=JsonObject(arguments))
    async with asyncio.timeout(30):
        return await execute_tool_call(registry, tool_call, AbortController().signal)


def assert_code(result: ToolResultMessage, code: str) -> None:
    message = error_message(result)
    assert message.split(":", 1)[0] == code, message
    assert result.error_code == code, message  # the same code as a field, not only in prose


def assert_reaped(pid: int) -> None:
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


class Watch:
    """Collects stdout chunks and the child pid; fires ``ready`` when ``marker`` appears."""

    def __init__(self, marker: bytes) -> None:
        self.marker = marker
        self.stdout = b""
        self.pid = 0
        self.ready = asyncio.Event()
        self.on_ready: list[AbortController] = []

    def __call__(self, stage: str, value: object) -> None:
        if stage == "process:started":
            assert isinstance(value, int)
            self.pid = value
        elif stage == "process:stdout":
            assert isinstance(value, bytes)
            self.stdout += value
            if self.marker in self.stdout and not self.ready.is_set():
                self.ready.set()
                for controller in self.on_ready:
                    controller.abort(RuntimeError("user pressed stop"))

    def pids(self) -> list[int]:
        match = re.search(rb"pids (\d+) (\d+)", self.stdout)
        assert match is not None, self.stdout
        return [int(match.group(1)), int(match.group(2))]


def leftovers(root: Path) -> list[str]:
    return [p.name for p in root.iterdir() if p.name.startswith(".pify-")]


# --- bash ----------------------------------------------------------------------------------------


async def test_bash_runs_in_the_workspace(tmp_path: Path) -> None:
    tools = coding_tools(tmp_path)
    result = await call(tools, "bash", command="pwd; echo err >&2; exit 3")
    assert not result.is_error
    assert result.content == (
        f"exit code 3\n--- stdout ---\n{os.path.realpath(tmp_path)}\n--- stderr ---\nerr\n"
    )
    quiet = await call(tools, "bash", command="true")
    assert quiet.content == "exit code 0\nstdout: (empty)\nstderr: (empty)\n"
    killed = await call(tools, "bash", command="kill -9 $$")
    assert killed.content.startswith("killed by SIGKILL\n")


async def test_bash_validation(tmp_path: Path) -> None:
    tools = coding_tools(tmp_path)
    assert_code(await call(tools, "bash", command=""), "INVALID_BASH_INPUT")
    assert_code(await call(tools, "bash", command="x", timeout_seconds=601), "INVALID_BASH_INPUT")
    assert_code(await call(tools, "bash", command="x", timeout_seconds=0), "INVALID_BASH_INPUT")
    assert_code(await call(tools, "bash", command="x", extra=True), "INVALID_BASH_INPUT")


async def test_bash_timeout_kills_a_grandchild_holding_the_pipes(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)
    watch = Watch(b"pids")
    ws.observer = watch
    tools = coding_tools(ws)
    result = await call(
        tools, "bash", command='sleep 60 & echo "pids $$ $!"; wait', timeout_seconds=1
    )
    assert_code(result, "PROCESS_TIMEOUT")
    assert "pids" in error_message(result)
    shell, grandchild = watch.pids()
    assert_reaped(watch.pid)  # the supervisor tether started
    assert_reaped(shell)
    assert_reaped(grandchild)  # the supervisor reaped it too, before it exited


async def test_bash_background_job_does_not_outlive_the_call(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)
    watch = Watch(b"pids")
    ws.observer = watch
    tools = coding_tools(ws)
    # the background job closes its pipes, so the call completes; the group is still killed
    result = await call(tools, "bash", command='sleep 60 >/dev/null 2>&1 & echo "pids $$ $!"')
    assert result.content.startswith("exit code 0\n")
    shell, background = watch.pids()
    assert_reaped(shell)
    await wait_dead(background)  # it was sent SIGKILL before the call returned
    assert_not_running(background)


async def test_bash_ten_megabytes_cut_at_the_cap(tmp_path: Path) -> None:
    tools = coding_tools(tmp_path)
    result = await call(
        tools, "bash", command="head -c 10000000 /dev/zero | tr '\\0' a; echo done >&2"
    )
    assert not result.is_error
    stdout = result.content.split("--- stdout ---\n", 1)[1].split("\n", 1)[0]
    assert stdout == "a" * PROCESS_OUTPUT_MAX_BYTES
    assert "[stdout truncated: 10000000 bytes written, first 32768 kept]" in result.content
    assert result.content.endswith("--- stderr ---\ndone\n")


async def test_output_cut_never_breaks_a_character(tmp_path: Path) -> None:
    tools = coding_tools(tmp_path)
    result = await call(
        tools,
        "python_process",
        source="import sys; sys.stdout.write('a' + 'é' * 20000)",
        arguments=[],
    )
    stdout = result.content.split("--- stdout ---\n", 1)[1].split("\n", 1)[0]
    assert stdout == "a" + "é" * 16383
    assert "\ufffd" not in result.content
    assert len(stdout.encode()) <= PROCESS_OUTPUT_MAX_BYTES


async def test_abort_mid_run_leaves_no_process(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)
    watch = Watch(b"pids")
    controller = AbortController()
    watch.on_ready.append(controller)
    ws.observer = watch
    tools = coding_tools(ws)
    with pytest.raises(RuntimeError, match="user pressed stop"):
        await call(tools, "bash", controller.signal, command='sleep 60 & echo "pids $$ $!"; wait')
    shell, grandchild = watch.pids()
    # SIGKILL is sent synchronously on abort; dying and reaping finish in the background
    async with asyncio.timeout(20):
        await processes_settled()
    assert_reaped(shell)
    await wait_dead(grandchild)  # SIGKILL was sent; under load it may still be running a moment
    assert_not_running(grandchild)


async def test_task_cancellation_kills_and_reaps(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)
    watch = Watch(b"pids")
    ws.observer = watch
    tools = coding_tools(ws)
    task = asyncio.ensure_future(call(tools, "bash", command='echo "pids $$ $$"; sleep 60'))
    async with asyncio.timeout(20):
        await watch.ready.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert_reaped(watch.pids()[0])


# --- python_process ------------------------------------------------------------------------------


async def test_python_process_argv_cwd_and_exit(tmp_path: Path) -> None:
    tools = coding_tools(tmp_path)
    source = (
        "import json, os, sys\n"
        "print(json.dumps([sys.executable, sys.argv[1:], os.getcwd()]))\n"
        "sys.exit(7)\n"
    )
    result = await call(tools, "python_process", source=source, arguments=["--help", "a b", ""])
    assert not result.is_error
    assert result.content.startswith("exit code 7\n--- stdout ---\n")
    line = result.content.split("--- stdout ---\n", 1)[1].split("\n", 1)[0]
    assert json.loads(line) == [sys.executable, ["--help", "a b", ""], os.path.realpath(tmp_path)]
    assert leftovers(tmp_path) == []


async def test_python_process_validation(tmp_path: Path) -> None:
    tools = coding_tools(tmp_path)
    cases: list[tuple[dict[str, object], str]] = [
        ({"source": "x"}, "INVALID_PROCESS_INPUT"),
        ({"source": 1, "arguments": []}, "INVALID_PROCESS_INPUT"),
        ({"source": "x", "arguments": "--help"}, "INVALID_PROCESS_INPUT"),
        ({"source": "x", "arguments": [1]}, "INVALID_PROCESS_INPUT"),
        ({"source": "x" * 32_769, "arguments": "bad"}, "PROCESS_SOURCE_TOO_LARGE"),
        ({"source": "x", "arguments": ["a"] * 33}, "TOO_MANY_PROCESS_ARGUMENTS"),
        ({"source": "x", "arguments": ["a" * 2_049]}, "PROCESS_ARGUMENT_TOO_LARGE"),
        ({"source": "x", "arguments": ["a" * 2_048] * 5}, "PROCESS_ARGUMENTS_TOO_LARGE"),
    ]
    for arguments, code in cases:
        assert_code(await call_with(tools, "python_process", arguments), code)
    assert not (
        await call(tools, "python_process", source="pass", arguments=["a" * 2_048] * 4)
    ).is_error
    assert leftovers(tmp_path) == []


async def test_python_process_timeout_kills_grandchild(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)
    watch = Watch(b"pids")
    ws.observer = watch
    tools = coding_tools(ws)
    source = (
        "import os, subprocess, sys\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        "print('pids', os.getpid(), child.pid, flush=True)\n"
        "child.wait()\n"
    )
    result = await call(tools, "python_process", source=source, arguments=[])
    assert_code(result, "PROCESS_TIMEOUT")
    parent, grandchild = watch.pids()
    assert_reaped(parent)
    assert_not_running(grandchild)
    assert leftovers(tmp_path) == []


async def test_python_process_abort_removes_script(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)
    watch = Watch(b"pids")
    controller = AbortController()
    watch.on_ready.append(controller)
    ws.observer = watch
    tools = coding_tools(ws)
    source = (
        "import os, time\nprint('pids', os.getpid(), os.getpid(), flush=True)\ntime.sleep(60)\n"
    )
    with pytest.raises(RuntimeError, match="user pressed stop"):
        await call(tools, "python_process", controller.signal, source=source, arguments=[])
    async with asyncio.timeout(20):
        await processes_settled()
    assert_reaped(watch.pids()[0])
    assert leftovers(tmp_path) == []


async def test_python_process_cannot_shadow_stdlib(tmp_path: Path) -> None:
    (tmp_path / "json.py").write_text("raise SystemExit('shadowed')\n")
    tools = coding_tools(tmp_path)
    result = await call(
        tools, "python_process", source="import json; print(json.dumps(1))", arguments=[]
    )
    assert result.content.startswith("exit code 0\n--- stdout ---\n1\n")


# --- hostile input (issue 25) --------------------------------------------------------------------


def kill_quietly(*pids: int) -> None:
    """Cleanup for a test that fails: never leave a stray ``sleep`` behind."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signals.SIGKILL)


def open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


async def test_jobs_that_leave_the_group_do_not_survive_the_timeout(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)
    watch = Watch(b"pids")
    ws.observer = watch
    tools = coding_tools(ws)
    before = open_fds()
    # `setsid` starts a new session; `set -m` puts a background job in its own group
    command = 'setsid sleep 300 & a=$!; set -m; sleep 300 & b=$!; echo "pids $a $b"; wait'
    result = await call(tools, "bash", command=command, timeout_seconds=2)
    escaped = watch.pids()
    try:
        assert_code(result, "PROCESS_TIMEOUT")
        for pid in escaped:
            assert_reaped(pid)  # killed and reaped before the call returned
        assert_reaped(watch.pid)
        assert open_fds() == before  # no pipe left open in tether
    finally:
        kill_quietly(*escaped)


async def test_a_double_forked_daemon_is_killed_when_the_call_completes(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)
    watch = Watch(b"pids")
    ws.observer = watch
    tools = coding_tools(ws)
    # the daemon's parent exits at once: it is an orphan in another session, pipes closed
    command = "setsid --wait sh -c 'sleep 300 </dev/null >/dev/null 2>&1 & echo \"pids $$ $!\"'"
    result = await call(tools, "bash", command=command)
    middle, daemon = watch.pids()
    try:
        assert result.content.startswith("exit code 0\n")
        assert_reaped(daemon)
        assert_reaped(middle)
    finally:
        kill_quietly(daemon)


_AT_EXIT = """
import asyncio, sys
from tether import AbortController, JsonObject, ToolCall
from tether.tools.coding import coding_tools
from tether.tools.execution import execute_tool_call

async def main():
    tools = coding_tools(sys.argv[1])
    command = 'setsid sleep 300 & echo "pids $!"; wait'
    arguments = JsonObject({"command": command, "timeout_seconds": 1})
    call = ToolCall(id="c1", name="bash", arguments=arguments)
    result = await execute_tool_call(tools, call, AbortController().signal)
    print(result.content, flush=True)

asyncio.run(main())
"""


def test_no_event_loop_is_closed_traceback_at_exit(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _AT_EXIT, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    match = re.search(r"pids (\d+)", done.stdout)
    assert match is not None, (done.stdout, done.stderr)
    escaped = int(match.group(1))
    try:
        assert done.returncode == 0, done.stderr
        assert "PROCESS_TIMEOUT" in done.stdout
        assert "Traceback" not in done.stderr
        assert "Event loop is closed" not in done.stderr
        assert_not_running(escaped)
    finally:
        kill_quietly(escaped)


_SHOW_ENV = 'echo "[${OPENAI_API_KEY-}][${ANTHROPIC_API_KEY-}][${GPU_BOX_KEY-}][${KEEP_ME-}]"'
_PY_ENV = (
    "import os\n"
    "names = ('OPENAI_API_KEY', 'ANTHROPIC_API_KEY', 'GPU_BOX_KEY', 'KEEP_ME')\n"
    "print(''.join('[' + os.environ.get(n, '') + ']' for n in names))\n"
)


async def test_tool_processes_never_see_provider_keys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-test-secret")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-secret")
    monkeypatch.setenv("GPU_BOX_KEY", "gpu-test-secret")  # the active model's api_key_env
    monkeypatch.setenv("KEEP_ME", "kept")
    # what is checked is the environment, not the 0.5 s limit (a loaded machine's Python
    # start alone has gone past it)
    monkeypatch.setattr(python_process, "PYTHON_PROCESS_TIMEOUT_SECONDS", 30.0)
    default = coding_tools(tmp_path)
    shown = await call(default, "bash", command=_SHOW_ENV)
    assert "stdout ---\n[][][gpu-test-secret][kept]\n" in shown.content
    hidden = coding_tools(tmp_path, hide_env=("GPU_BOX_KEY",))
    for result in (
        await call(hidden, "bash", command=_SHOW_ENV),
        await call(hidden, "python_process", source=_PY_ENV, arguments=[]),
    ):
        assert "stdout ---\n[][][][kept]\n" in result.content, result.content
        assert "secret" not in result.content
    passed = coding_tools(tmp_path, hide_env=("GPU_BOX_KEY",), pass_env=("OPENAI_API_KEY",))
    through = await call(passed, "bash", command=_SHOW_ENV)
    assert "stdout ---\n[sk-openai-test-secret][][][kept]\n" in through.content
    single = bash_tool(Workspace(tmp_path), pass_env=("ANTHROPIC_API_KEY",))
    alone = await call(ToolRegistry([single]), "bash", command=_SHOW_ENV)
    assert "stdout ---\n[][sk-ant-test-secret][gpu-test-secret][kept]\n" in alone.content
    with pytest.raises(TypeError, match="hide_env"):
        coding_tools(tmp_path, hide_env="OPENAI_API_KEY")


def test_the_guide_names_every_variable_tool_processes_never_see() -> None:
    guide = Path(__file__).resolve().parents[2] / "docs" / "coding-tools.md"
    marker = "Which environment variables tool processes never see:"
    section = guide.read_text(encoding="utf-8").split(marker, 1)[1]
    for name in sorted(catalog_key_variables()):
        assert f"`{name}`" in section.split("\n\n", 1)[0], name


async def test_a_supervisor_that_cannot_start_leaves_no_descriptor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tools = coding_tools(tmp_path)
    before = open_fds()
    monkeypatch.setattr(sys, "executable", str(tmp_path / "no-such-python"))
    assert_code(await call(tools, "bash", command="true"), "PROCESS_START_FAILED")
    assert open_fds() == before


async def test_a_command_that_cannot_be_executed_is_process_start_failed(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)
    before = open_fds()
    missing = str(tmp_path / "no-such-program")
    with pytest.raises(CodingToolError) as info:
        await run_process(ws, [missing], time_limit=5, signal=AbortController().signal)
    assert info.value.code == "PROCESS_START_FAILED"
    assert "No such file or directory" in str(info.value)
    assert open_fds() == before
    assert process._STARTED == supervisor.STARTED  # pyright: ignore[reportPrivateUsage]
