"""``bash`` and ``python_process`` inside bubblewrap: escape attempts, each refused or
contained, next to the same command unsandboxed (which gets through, so each test can fail).

bubblewrap is installed by the test itself where it can be (root with apt-get, as on CI);
elsewhere these tests skip and say why.
"""

# ruff: noqa: ASYNC240

from __future__ import annotations

import itertools
import os
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from process_support import call, error_message, wait_dead
from support import debian_binary
from tether import ToolRegistry, ToolResultMessage
from tether.tools.coding import (
    DEFAULT_HIDDEN_PATHS,
    Sandbox,
    Workspace,
    coding_tools,
    sandbox_status,
)

_ids = itertools.count()


@pytest.fixture(scope="module")
def bwrap() -> str:
    found = debian_binary("bwrap", "bubblewrap")
    if found is None:
        pytest.skip("bubblewrap is not installed and cannot be (not root, or no apt-get)")
    status = sandbox_status(found, refresh=True)
    if not status.available:
        pytest.skip(f"bubblewrap cannot build a sandbox on this machine: {status.reason}")
    return found


@pytest.fixture
def outside() -> Iterator[Path]:
    """A directory outside the workspace and outside /tmp (the sandbox's /tmp is private, so
    a file there would be out of sight anyway and prove nothing)."""
    path = Path(tempfile.mkdtemp(prefix="tether-sandbox-test-", dir="/var/tmp"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def tools(root: Path, bwrap: str, **settings: object) -> ToolRegistry:
    return coding_tools(root, sandbox=Sandbox(bwrap=bwrap, **settings))  # type: ignore[arg-type]


def description_of(registry: ToolRegistry, name: str) -> str:
    tool = registry.get(name)
    assert tool is not None
    return tool.description


def exit_code(result: ToolResultMessage) -> int:
    first = result.content.split("\n", 1)[0]
    assert first.startswith("exit code "), result.content
    return int(first.removeprefix("exit code "))


async def test_the_workspace_is_writable_and_the_rest_read_only(
    tmp_path: Path, outside: Path, bwrap: str
) -> None:
    target = outside / "escaped.txt"
    command = f"echo inside > made.txt && echo out > {target}"
    sandboxed = await call(tools(tmp_path, bwrap), "bash", command=command)
    assert exit_code(sandboxed) != 0
    assert "Read-only file system" in sandboxed.content
    assert (tmp_path / "made.txt").read_text() == "inside\n"
    assert not target.exists()
    plain = await call(coding_tools(tmp_path), "bash", command=command)
    assert exit_code(plain) == 0
    assert target.read_text() == "out\n"  # the control gets out


async def test_secrets_are_hidden(
    tmp_path: Path, outside: Path, bwrap: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = outside / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE-KEY\n")
    (home / ".netrc").write_text("machine x password NETRC-SECRET\n")
    (home / "notes.txt").write_text("visible\n")
    monkeypatch.setenv("HOME", str(home))
    command = f"cat {home}/.ssh/id_* {home}/.netrc {home}/notes.txt; ls -a {home}/.ssh"
    sandboxed = await call(tools(tmp_path, bwrap), "bash", command=command)
    assert "PRIVATE-KEY" not in sandboxed.content
    assert "NETRC-SECRET" not in sandboxed.content
    assert "visible" in sandboxed.content  # the rest of the home stays readable
    plain = await call(coding_tools(tmp_path), "bash", command=command)
    assert "PRIVATE-KEY" in plain.content
    assert "NETRC-SECRET" in plain.content


async def test_a_symlinked_secret_is_hidden_at_its_real_path(
    tmp_path: Path, outside: Path, bwrap: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    keys = outside / "keys"
    keys.mkdir()
    (keys / "id_rsa").write_text("LINKED-KEY\n")
    home = outside / "home"
    home.mkdir()
    (home / ".ssh").symlink_to(keys)
    (tmp_path / "key").symlink_to(keys / "id_rsa")  # and one from inside the workspace
    monkeypatch.setenv("HOME", str(home))
    command = f"cat {keys}/id_rsa key {home}/.ssh/id_rsa; echo x > key"
    sandboxed = await call(tools(tmp_path, bwrap), "bash", command=command)
    assert "LINKED-KEY" not in sandboxed.content
    assert (keys / "id_rsa").read_text() == "LINKED-KEY\n"


async def test_writing_through_a_symlink_out_of_the_workspace_is_refused(
    tmp_path: Path, outside: Path, bwrap: str
) -> None:
    (outside / "config").write_text("original\n")
    (tmp_path / "link").symlink_to(outside / "config")
    result = await call(tools(tmp_path, bwrap), "bash", command="echo changed > link")
    assert exit_code(result) != 0
    assert (outside / "config").read_text() == "original\n"


async def test_no_network_unless_allowed(tmp_path: Path, bwrap: str) -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        port = server.getsockname()[1]
        command = f"exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected"
        closed = await call(tools(tmp_path, bwrap), "bash", command=command)
        assert "connected" not in closed.content
        assert exit_code(closed) != 0
        opened = await call(tools(tmp_path, bwrap, network=True), "bash", command=command)
        assert "connected" in opened.content


async def test_nothing_it_starts_survives(tmp_path: Path, bwrap: str) -> None:
    marker = f"{os.getpid()}{next(_ids)}7"
    command = (
        f"setsid sleep 3{marker} >/dev/null 2>&1 & nohup sleep 4{marker} >/dev/null 2>&1 & "
        f"sh -c 'sleep 5{marker} </dev/null >/dev/null 2>&1 &' ; echo started"
    )
    result = await call(tools(tmp_path, bwrap), "bash", command=command)
    assert "started" in result.content
    await wait_gone(marker)


async def test_a_timeout_kills_everything_inside(tmp_path: Path, bwrap: str) -> None:
    marker = f"{os.getpid()}{next(_ids)}9"
    command = f"setsid sleep 6{marker} & sleep 7{marker}"
    result = await call(tools(tmp_path, bwrap), "bash", command=command, timeout_seconds=0.5)
    assert error_message(result).startswith("PROCESS_TIMEOUT")
    await wait_gone(marker)


async def test_a_private_bounded_tmp(tmp_path: Path, bwrap: str) -> None:
    name = f"tether-fill-{os.getpid()}-{next(_ids)}"
    command = f"head -c 50000000 /dev/zero > /tmp/{name}; echo status $?; ls -l /tmp/{name}"
    result = await call(tools(tmp_path, bwrap, tmp_bytes=4 << 20), "bash", command=command)
    assert "No space left on device" in result.content
    assert "status 1" in result.content
    assert not Path("/tmp", name).exists()  # the machine's /tmp never saw it


async def test_proc_shows_only_the_sandbox(tmp_path: Path, bwrap: str) -> None:
    command = (
        f"test -e /proc/{os.getpid()} && echo host-visible; "
        "echo x > /proc/1/root/etc/tether-escape; echo count $(ls /proc | grep -c '^[0-9]')"
    )
    result = await call(tools(tmp_path, bwrap), "bash", command=command)
    assert "host-visible" not in result.content
    assert not Path("/etc/tether-escape").exists()
    count = int(result.content.split("count ", 1)[1].split()[0])
    assert count < 10  # bwrap, bash, ls, grep: not the machine's processes


async def test_python_process_in_the_sandbox(tmp_path: Path, outside: Path, bwrap: str) -> None:
    source = (
        "import sys, pathlib\n"
        "pathlib.Path('ok.txt').write_text('in')\n"
        "try:\n"
        f"    pathlib.Path({str(outside / 'py.txt')!r}).write_text('out')\n"
        "except OSError as error:\n"
        "    print('refused', error.errno)\n"
    )
    result = await call(tools(tmp_path, bwrap), "python_process", source=source, arguments=[])
    assert exit_code(result) == 0, result.content
    assert "refused" in result.content
    assert (tmp_path / "ok.txt").read_text() == "in"
    assert not (outside / "py.txt").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".pify-py-")]


async def test_on_refuses_to_run_without_bubblewrap(tmp_path: Path) -> None:
    registry = coding_tools(tmp_path, sandbox=Sandbox(bwrap="tether-no-such-bwrap"))
    result = await call(registry, "bash", command="echo ran > ran.txt")
    message = error_message(result)
    assert message.startswith("SANDBOX_UNAVAILABLE: tether-no-such-bwrap (bubblewrap) is not")
    assert "install bubblewrap" in message
    assert not (tmp_path / "ran.txt").exists()
    script = await call(registry, "python_process", source="print(1)", arguments=[])
    assert error_message(script).startswith("SANDBOX_UNAVAILABLE")
    assert list(tmp_path.iterdir()) == []  # the script was never written
    description = description_of(registry, "bash")
    assert "cannot run here" in description


async def test_auto_runs_unsandboxed_without_bubblewrap(tmp_path: Path, outside: Path) -> None:
    sandbox = Sandbox(mode="auto", bwrap="tether-no-such-bwrap")
    target = outside / "auto.txt"
    result = await call(coding_tools(tmp_path, sandbox=sandbox), "bash", command=f"echo > {target}")
    assert exit_code(result) == 0
    assert target.exists()
    assert not sandbox_status("tether-no-such-bwrap").available


async def test_descriptions_say_where_commands_run(tmp_path: Path, bwrap: str) -> None:
    sandboxed = coding_tools(Workspace(tmp_path), sandbox=Sandbox(bwrap=bwrap))
    for name in ("bash", "python_process"):
        description = description_of(sandboxed, name)
        assert "only the workspace is writable" in description
    plain = description_of(coding_tools(tmp_path), "bash")
    assert "NOT a sandbox" in plain


def test_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="mode"):
        Sandbox(mode="sometimes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="neither absolute"):
        Sandbox(hidden_paths=("relative/path",))
    with pytest.raises(TypeError, match="hidden_paths"):
        Sandbox(hidden_paths=["~/.ssh"])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="tmp_bytes"):
        Sandbox(tmp_bytes=10)
    with pytest.raises(TypeError, match="network"):
        Sandbox(network=1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="Sandbox or None"):
        coding_tools("/", sandbox="on")  # type: ignore[arg-type]
    assert "~/.ssh" in DEFAULT_HIDDEN_PATHS


_PATHS = st.lists(
    st.one_of(
        st.sampled_from(["~", "~/.ssh", "/etc/shadow", "~/a b", "/var/tmp"]),
        st.text(alphabet="ab/~. \0", max_size=8),
    ),
    max_size=4,
)


@given(paths=_PATHS, network=st.booleans())
def test_any_accepted_setting_builds_a_command_ending_in_argv(
    paths: list[str], network: bool
) -> None:
    try:
        sandbox = Sandbox(hidden_paths=tuple(paths), network=network)
    except (TypeError, ValueError):
        assert any(not p or "\0" in p or not (p.startswith(("/", "~/")) or p == "~") for p in paths)
        return
    argv = ["/bin/bash", "-c", "echo --"]
    command = sandbox.command(argv, "/var/tmp/ws", {"HOME": "/nonexistent-home"})
    assert command[-4:] == ["--", *argv]
    assert ("--unshare-net" in command) is not network
    assert command.index("--bind") < command.index("--chdir")


async def wait_gone(marker: str) -> None:
    """Wait (through pidfds, bounded) until no process on the machine has ``marker`` in its
    command line: SIGKILL is delivered asynchronously."""
    for pid in processes_with(marker):
        await wait_dead(pid)
    assert processes_with(marker) == []


def processes_with(marker: str) -> list[int]:
    found: list[int] = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as handle:
                if marker.encode() in handle.read():
                    found.append(int(name))
        except OSError:
            continue
    return found
