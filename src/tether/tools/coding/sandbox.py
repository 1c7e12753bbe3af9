"""A bubblewrap sandbox for ``bash`` and ``python_process``.

Without a sandbox those tools run as the user, with everything the user can do (see
``tether.tools.coding.process``). With ``Sandbox`` they run inside ``bwrap`` (bubblewrap, the
Debian package ``bubblewrap``), which builds a private view of the system for each command:

* the **workspace** is the one writable place (bound read-write at its own path, which is also
  the working directory);
* the rest of the file system is **read-only** (``/`` bound read-only), with the **secrets
  hidden**: every path of ``hidden_paths`` that exists (``~`` is the user's home) is covered
  by an empty directory, or for a file by ``/dev/null``; also at its real path when it is a
  symlink. ``DEFAULT_HIDDEN_PATHS`` lists SSH, GPG and cloud credentials, package-registry
  tokens and tether's own config and sessions;
* a private, size-bounded **/tmp** and **/dev/shm** (``tmp_bytes`` each: filling them fills
  only them), a read-only minimal ``/dev``, an empty ``/run`` (no Docker or D-Bus socket);
* **no network** (a new network namespace with nothing in it; even ``127.0.0.1`` is empty)
  unless ``network=True``;
* its own **PID namespace** with ``--die-with-parent`` and a new session: the command sees only
  its own processes (``/proc/1`` is the sandbox's init, not the system's), cannot push input
  into the terminal, and everything it starts dies when the sandbox does, ``setsid`` and
  double-forked daemons included;
* the environment is the unsandboxed tools' (the user's minus the API key variables).

``mode`` decides what happens where bubblewrap cannot run (not installed, user namespaces
disabled, a container without the needed privileges): ``"on"`` refuses to run the command
(``SANDBOX_UNAVAILABLE``, with the reason), ``"auto"`` runs it unsandboxed, ``"off"`` never
sandboxes. ``sandbox_status()`` says whether bubblewrap works here and why not; it runs
``bwrap`` once per executable and remembers the answer.

The supervisor of ``tether.tools.coding.process`` still starts and stops each command (the
sandboxed command is ``bwrap ... -- COMMAND``), so the tool results, time limits, output
bounds and abort behaviour are those of unsandboxed commands.
"""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Iterable, Mapping
from typing import Final, Literal, get_args

from tether._base.dataclass import dataclass

__all__ = [
    "DEFAULT_HIDDEN_PATHS",
    "SANDBOX_TMP_DEFAULT_BYTES",
    "Sandbox",
    "SandboxMode",
    "SandboxStatus",
    "sandbox_status",
]

SandboxMode = Literal["off", "auto", "on"]
"""``off``: never sandbox; ``auto``: sandbox where bubblewrap works, else run unsandboxed;
``on``: sandbox, or refuse to run the command (``SANDBOX_UNAVAILABLE``)."""

SANDBOX_MODES: Final[tuple[SandboxMode, ...]] = get_args(SandboxMode)

DEFAULT_HIDDEN_PATHS: Final[tuple[str, ...]] = (
    "~/.ssh",
    "~/.gnupg",
    "~/.aws",
    "~/.azure",
    "~/.config/gcloud",
    "~/.kube",
    "~/.docker",
    "~/.netrc",
    "~/.git-credentials",
    "~/.config/gh",
    "~/.pypirc",
    "~/.npmrc",
    "~/.cargo/credentials.toml",
    "~/.config/tether",
    "~/.local/share/tether",
)
"""What a sandboxed command never sees (each path that exists is covered): SSH and GPG keys,
cloud and cluster credentials, registry and forge tokens, and tether's own config (which may
hold keys) and sessions (every conversation). Extend it with ``Sandbox(hidden_paths=...)``."""

SANDBOX_TMP_DEFAULT_BYTES: Final = 256 << 20
"""The default size of the sandbox's private ``/tmp`` and ``/dev/shm`` (256 MiB each)."""

_PROBE_TIMEOUT_SECONDS: Final = 10.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Sandbox:
    """How ``bash`` and ``python_process`` are sandboxed (see the module docstring).

    Pass it as ``coding_tools(root, sandbox=Sandbox())``. ``mode`` is ``"on"`` (refuse to run
    unsandboxed), ``"auto"`` or ``"off"``; ``network`` lets commands reach the network;
    ``hidden_paths`` (``~`` for the home directory, or absolute) replaces the default list
    (``DEFAULT_HIDDEN_PATHS + ("~/secrets",)`` extends it); ``tmp_bytes`` bounds the private
    ``/tmp``; ``bwrap`` names the bubblewrap executable (looked up on ``PATH``).
    """

    mode: SandboxMode = "on"
    network: bool = False
    hidden_paths: tuple[str, ...] = DEFAULT_HIDDEN_PATHS
    tmp_bytes: int = SANDBOX_TMP_DEFAULT_BYTES
    bwrap: str = "bwrap"

    def __post_init__(self) -> None:
        if self.mode not in SANDBOX_MODES:
            raise ValueError(f"Sandbox.mode must be one of {', '.join(SANDBOX_MODES)}")
        if type(self.network) is not bool:
            raise TypeError("Sandbox.network must be a bool")
        if type(self.hidden_paths) is not tuple or not all(
            type(path) is str and path and "\0" not in path for path in self.hidden_paths
        ):
            raise TypeError("Sandbox.hidden_paths must be a tuple of non-empty path strings")
        for path in self.hidden_paths:
            if not (path.startswith(("/", "~/")) or path == "~"):
                raise ValueError(f"Sandbox.hidden_paths: {path!r} is neither absolute nor ~/…")
        if type(self.tmp_bytes) is not int or self.tmp_bytes < 1 << 20:
            raise ValueError("Sandbox.tmp_bytes must be an int of at least 1 MiB")
        if type(self.bwrap) is not str or not self.bwrap or "\0" in self.bwrap:
            raise TypeError("Sandbox.bwrap must be a non-empty string")

    def command(
        self, argv: list[str], workspace: str, environ: Mapping[str, str] | None = None
    ) -> list[str]:
        """``argv`` run inside the sandbox, in ``workspace`` (an absolute, real path).

        ``environ`` (default ``os.environ``) gives ``HOME`` for the ``~`` of ``hidden_paths``.
        The result starts with the resolved ``bwrap`` path; call ``sandbox_status`` first
        to know that it runs.
        """
        executable = _which(self.bwrap) or self.bwrap
        home = (os.environ if environ is None else environ).get("HOME") or os.path.expanduser("~")
        before: list[str] = []
        after: list[str] = []  # hidden paths inside the workspace: covered after its bind
        for path in _existing(_expand(self.hidden_paths, home)):
            target = after if _inside(path, workspace) else before
            if os.path.isdir(path):
                target += ["--tmpfs", path]
            else:
                target += ["--ro-bind", "/dev/null", path]
        size = str(self.tmp_bytes)
        return [
            executable,
            "--ro-bind", "/", "/",
            "--dev", "/dev",
            "--size", size, "--tmpfs", "/dev/shm",
            "--remount-ro", "/dev",
            "--proc", "/proc",
            "--size", size, "--tmpfs", "/tmp",
            "--tmpfs", "/run",
            *before,
            "--bind", workspace, workspace,
            *after,
            "--chdir", workspace,
            "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
            *(() if self.network else ("--unshare-net",)),
            "--die-with-parent",
            "--new-session",
            "--",
            *argv,
        ]  # fmt: skip


@dataclass(frozen=True, slots=True, kw_only=True)
class SandboxStatus:
    """Whether bubblewrap works on this machine: ``available``, else ``reason`` says why
    (in words a user can act on); ``executable`` is the path that was tried, if found."""

    available: bool
    reason: str | None = None
    executable: str | None = None


_STATUS: dict[str, SandboxStatus] = {}
_STATUS_LOCK = threading.Lock()


def sandbox_status(bwrap: str = "bwrap", *, refresh: bool = False) -> SandboxStatus:
    """Whether ``bwrap`` can build a sandbox here: it runs ``true`` in one (the namespaces and
    mounts ``Sandbox`` uses) once per executable name and remembers the answer (``refresh``
    asks again). Blocking (a few milliseconds): async code calls it from a worker thread."""
    with _STATUS_LOCK:
        if not refresh and bwrap in _STATUS:
            return _STATUS[bwrap]
        status = _probe(bwrap)
        _STATUS[bwrap] = status
        return status


def _probe(bwrap: str) -> SandboxStatus:
    import tempfile  # first needed here: it imports random, which most runs never use

    executable = _which(bwrap)
    if executable is None:
        return SandboxStatus(
            available=False,
            reason=f"{bwrap} (bubblewrap) is not installed: install the bubblewrap package",
        )
    try:
        with tempfile.TemporaryDirectory(prefix="tether-sandbox-probe-") as scratch:
            workspace = os.path.realpath(scratch)
            probe = Sandbox(bwrap=executable, hidden_paths=()).command(["true"], workspace)
            done = subprocess.run(
                probe,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=_PROBE_TIMEOUT_SECONDS,
                check=False,
            )
    except (OSError, subprocess.SubprocessError) as error:
        return SandboxStatus(
            available=False, reason=f"{executable} failed: {error}", executable=executable
        )
    if done.returncode != 0:
        detail = done.stderr.decode("utf-8", "replace").strip().splitlines()
        why = detail[-1] if detail else f"exit status {done.returncode}"
        return SandboxStatus(
            available=False,
            reason=f"{executable} cannot build a sandbox here: {why}",
            executable=executable,
        )
    return SandboxStatus(available=True, executable=executable)


def _which(name: str) -> str | None:
    """``shutil.which`` without importing ``shutil`` (which loads bz2 and lzma): the first
    executable ``name`` on ``PATH``, or ``name`` itself when it contains a ``/``."""
    candidates = (
        [name]
        if "/" in name
        else [os.path.join(d or ".", name) for d in os.environ.get("PATH", "").split(":")]
    )
    for candidate in candidates:
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return os.path.abspath(candidate)
    return None


def _expand(paths: Iterable[str], home: str) -> list[str]:
    expanded: list[str] = []
    for path in paths:
        if path == "~" or path.startswith("~/"):
            path = home + path[1:]
        expanded.append(os.path.normpath(path))
    return expanded


def _existing(paths: list[str]) -> list[str]:
    """The paths that exist (a missing one cannot be created: the file system is read-only),
    each also at its real path when a symlink leads there, without repeats."""
    found: list[str] = []
    for path in paths:
        for candidate in (path, os.path.realpath(path)):
            if os.path.exists(candidate) and candidate not in found:
                found.append(candidate)
    return found


def _inside(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip("/") + "/")
