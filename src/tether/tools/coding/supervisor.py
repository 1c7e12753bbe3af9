"""The small process between tether and a tool's command: it kills what the command started.

``bash`` and ``python_process`` run ``main([STATUS_FD, COMMAND...])`` of this file in a new
``python -I`` instead of the command itself (standard library only; run by path, so starting
it imports no part of tether). The supervisor:

1. makes itself a *child subreaper* on Linux (``prctl(PR_SET_CHILD_SUBREAPER)``): a process
   the command starts that is orphaned (a daemon that double-forks, a ``setsid`` job whose
   parent exited) is re-parented to the supervisor instead of the system's init;
2. starts the command in a new session (``setsid``), stdin ``/dev/null``, stdout and stderr
   its own (tether's pipes), and writes ``started`` (or why it could not start it) on the
   status descriptor, which it then closes (the command never inherits it);
3. waits until the command exits, or until its own stdin (a pipe from tether) reaches EOF,
   which is how tether says "stop" (timeout, abort; also if tether dies);
4. then kills everything that is left: the command's process group, and every process below
   the supervisor (found in ``/proc``), with ``SIGKILL``, again and again until it has no
   child left to reap; and exits with the command's status (killed by a signal: the same
   signal, so tether sees it as the command's).

Kept: a process that left the supervisor's tree before the supervisor could adopt it, which
only happens without a subreaper (not Linux), or when it joined another subreaper below.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import resource
import select
import signal
import sys
from typing import Final

_PR_SET_CHILD_SUBREAPER: Final = 36
EXIT_START_FAILED: Final = 127
"""The supervisor's status when the command could not be started (as a shell's)."""
STARTED: Final = b"started\n"
"""What the status descriptor gets once the command runs."""


def become_subreaper() -> bool:
    """Ask Linux to re-parent orphaned descendants to this process; ``False`` elsewhere."""
    if not sys.platform.startswith("linux"):
        return False  # pragma: no cover - Linux only
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):  # pragma: no cover - no prctl in this libc
        return False


def descendants(root: int) -> list[int]:
    """Every process below ``root``, from ``/proc`` (empty where there is no ``/proc``)."""
    children: dict[int, list[int]] = {}
    try:
        names = os.listdir("/proc")
    except OSError:  # pragma: no cover - no /proc on this system
        return []
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):  # gone meanwhile
            continue
        children.setdefault(int(fields[1]), []).append(int(name))
    found: list[int] = []
    queue = [root]
    while queue:
        for child in children.get(queue.pop(), ()):
            found.append(child)
            queue.append(child)
    return found


def kill_all(command: int) -> int:
    """Kill the command's group and every descendant, reap children until none is left, and
    return the command's status (as ``os.waitpid`` gives it)."""
    with contextlib.suppress(OSError):
        os.killpg(command, signal.SIGKILL)
    status = signal.SIGKILL.value  # what it is unless its own status is reaped below
    while True:
        for pid in descendants(os.getpid()):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        try:
            pid, reaped = os.waitpid(-1, 0)
        except ChildProcessError:
            return status
        if pid == command:
            status = reaped


def wait_for(command: int, wake: int) -> None:
    """Until ``command`` exits or stdin reaches EOF; orphans that exit meanwhile are reaped
    (each ``SIGCHLD`` writes a byte to ``wake``). The command itself is left unreaped, so its
    process group cannot be reused before ``kill_all``."""
    while True:
        readable, _, _ = select.select([0, wake], [], [])
        if 0 in readable and not os.read(0, 4096):
            return
        if wake in readable:
            os.read(wake, 4096)
            while True:
                info = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
                if info is None:
                    break
                if info.si_pid == command:
                    return
                os.waitpid(info.si_pid, 0)  # an adopted orphan: reap it now


def exit_like(status: int) -> None:
    """End this process the way the command ended."""
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        with contextlib.suppress(OSError, ValueError):  # SIGKILL and SIGSTOP have no handler
            signal.signal(number, signal.SIG_DFL)
        os.kill(os.getpid(), number)
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)


def main(argv: list[str]) -> None:
    """Run ``argv[1:]`` supervised, reporting on descriptor ``argv[0]`` (see the module
    docstring)."""
    status = int(argv[0])
    os.set_inheritable(status, False)
    command_argv = argv[1:]
    become_subreaper()
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write, warn_on_full_buffer=False)
    signal.signal(signal.SIGCHLD, lambda number, frame: None)
    try:
        command = os.posix_spawn(
            command_argv[0],
            command_argv,
            os.environ,
            setsid=True,
            file_actions=[(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0)],
            setsigdef=(signal.SIGPIPE, signal.SIGXFSZ),  # Python ignores them; bash must not
        )
    except OSError as error:
        os.write(status, f"{error.strerror}\n".encode())
        os._exit(EXIT_START_FAILED)
    os.write(status, STARTED)
    os.close(status)
    wait_for(command, wake_read)
    exit_like(kill_all(command))
