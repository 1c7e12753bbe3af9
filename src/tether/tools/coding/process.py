"""Running a process in the workspace for ``bash`` (``tether.tools.coding.bash``) and
``python_process`` (``tether.tools.coding.python_process``). NOT a sandbox, unless given a
``Sandbox`` (``tether.tools.coding.sandbox``: bubblewrap, the workspace the one writable place,
no network, secrets hidden).

Both tools start a real process as the current user, with the workspace as the working
directory and the user's environment minus the variables that hold API keys (see
``tether.tools.coding.environment``: every catalog key variable and the names given as
``hide_env``; ``pass_env`` keeps some on purpose): the process can read and write anything
the user can, open network connections, and so on. They are a *process boundary* (bounded
time, bounded output, nothing left running), not a security boundary.

Process handling (both): the command runs under a small supervisor process
(``tether.tools.coding.supervisor``, its own session), which on Linux is a child subreaper:
whatever the command starts stays below it, even a job that calls ``setsid``, a ``set -m``
background job in its own process group, or a daemon that double-forks. stdin is
``/dev/null``. stdout and stderr are read independently and at most
``PROCESS_OUTPUT_MAX_BYTES`` (32,768) bytes of each are kept (the rest is read and dropped, so
the child never blocks on a full pipe); the kept bytes are decoded with an incremental UTF-8
decoder (``errors="replace"``) so a character cut at the limit is dropped, never broken.
Normal completion is the command's exit and EOF on both pipes; on completion, timeout or
abort, tether closes the supervisor's stdin and the supervisor kills with ``SIGKILL`` the
command's process group and every process left below it, reaps them all and exits (a
background job never outlives the call). tether then reaps the supervisor (``SIGKILL`` after
``SUPERVISOR_GRACE_SECONDS`` if it has not exited), gives the pipes
``PROCESS_KILL_GRACE_SECONDS`` to deliver what they hold and closes them, even if something
outside its reach still holds their other ends.

Out of reach: a process that left the supervisor's tree, which without a subreaper (not
Linux) is any orphan, e.g. a double-forked daemon; and a process below another subreaper or
in another PID namespace the command created. The time limit counts from the moment the
supervisor reports that the command runs (its own start is not the command's time).

Codes: ``PROCESS_TIMEOUT`` (the message carries the output so far), ``PROCESS_START_FAILED``,
``PROCESS_FAILED`` (fallback); the tools' own are in their modules (``NODE_CODE_ALIASES`` maps
each ``PROCESS_*`` code to the §08 ``NODE_*`` name). Abort is never a result: the
abort reason is raised at once; killing and reaping finish in the background
(``processes_settled``). A command that cannot be started (no supervisor, or its ``exec``
failed) is ``PROCESS_START_FAILED``.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import io
import os
import signal as signals
import sys
from collections.abc import Callable
from typing import Final

from tether._async.race import check_signal, race
from tether._base.dataclass import dataclass
from tether.abort import AbortSignal
from tether.tools.coding.environment import ProcessEnvironment, process_environment
from tether.tools.coding.sandbox import Sandbox, sandbox_status
from tether.tools.coding.worker import Unsettled
from tether.tools.coding.workspace import (
    CodingToolError,
    Workspace,
    require_workspace,
)

__all__ = [
    "NODE_CODE_ALIASES",
    "PROCESS_KILL_GRACE_SECONDS",
    "PROCESS_OUTPUT_LIMIT",
    "PROCESS_OUTPUT_MAX_BYTES",
    "SUPERVISOR_GRACE_SECONDS",
    "ProcessOutcome",
    "describe_processes",
    "process_tool_setup",
    "processes_settled",
    "render_outcome",
    "run_process",
    "sandbox_active",
    "sandboxed",
]

PROCESS_OUTPUT_MAX_BYTES: Final = 32_768
PROCESS_KILL_GRACE_SECONDS: Final = 0.25
"""After the supervisor is reaped: how long the pipes may take to deliver what they hold."""
SUPERVISOR_GRACE_SECONDS: Final = 5.0
"""How long the supervisor may take to start the command (``PROCESS_START_FAILED`` after
that), and to kill and reap everything at the end (it is killed after that)."""
_STARTED: Final = b"started\n"
"""What the supervisor writes on the status pipe once the command runs (its ``STARTED``)."""

PROCESS_OUTPUT_LIMIT: Final = 2 * PROCESS_OUTPUT_MAX_BYTES + 1_024
"""The tools' ``output_limit``: both streams whole, plus the headers."""

NODE_CODE_ALIASES: Final = {
    "INVALID_PROCESS_INPUT": "INVALID_NODE_PROCESS_INPUT",
    "PROCESS_SOURCE_TOO_LARGE": "NODE_SOURCE_TOO_LARGE",
    "TOO_MANY_PROCESS_ARGUMENTS": "TOO_MANY_NODE_ARGUMENTS",
    "PROCESS_ARGUMENT_TOO_LARGE": "NODE_ARGUMENT_TOO_LARGE",
    "PROCESS_ARGUMENTS_TOO_LARGE": "NODE_ARGUMENTS_TOO_LARGE",
    "PROCESS_SCRIPT_NOT_REGULAR": "NODE_SCRIPT_NOT_REGULAR",
    "PROCESS_SCRIPT_IDENTITY_CHANGED": "NODE_SCRIPT_IDENTITY_CHANGED",
    "PROCESS_SCRIPT_CLEANUP_FAILED": "NODE_SCRIPT_CLEANUP_FAILED",
    "PROCESS_START_FAILED": "NODE_PROCESS_START_FAILED",
    "PROCESS_OUTPUT_FAILED": "NODE_PROCESS_OUTPUT_FAILED",
    "PROCESS_TIMEOUT": "NODE_PROCESS_TIMEOUT",
    "PROCESS_FAILED": "NODE_PROCESS_FAILED",
}
"""Our neutral ``PROCESS_*`` codes and the §08 ``NODE_*`` names they stand for."""

_READ_CHUNK: Final = 65_536
_SUPERVISOR: Final = os.path.join(os.path.dirname(os.path.abspath(__file__)), "supervisor.py")
_SUPERVISE: Final = (
    "import runpy, sys; "
    "runpy.run_path(sys.argv[1], run_name='tether.tools.coding.supervisor')['main'](sys.argv[2:])"
)
"""How the supervisor is started: its file run by path (``import tether`` would cost a quarter
of a second per command), under its module name (which tracebacks and coverage then show)."""

_PROCESSES = Unsettled()
"""One future per started process, done once it was killed if needed and reaped."""


async def processes_settled() -> None:
    """Wait until every process these tools started so far has been reaped.

    An aborted tool call raises the abort reason at once (the tool contract races the call),
    while stopping is synchronous and reaping finishes in the background; await this (tests,
    orderly shutdown) to know no child is left, not even a zombie.
    """
    await _PROCESSES.wait()


@dataclass(frozen=True, slots=True)
class ProcessOutcome:
    """A finished process: ``exit_code`` (``None`` when killed by ``signal``), both streams."""

    exit_code: int | None
    signal: str | None
    stdout: str
    stderr: str
    stdout_truncated: bool
    stderr_truncated: bool
    stdout_bytes: int
    stderr_bytes: int


class _Collector:
    """Keeps the first ``cap`` bytes of a stream and counts the rest."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.kept = bytearray()
        self.total = 0

    def text(self) -> tuple[str, bool]:
        truncated = self.total > len(self.kept)
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        # A cut stream: an incomplete character at the end stays in the decoder and is dropped.
        text = decoder.decode(bytes(self.kept), final=not truncated)
        if not truncated and len(text.encode("utf-8", "surrogatepass")) > self.cap:
            truncated = True
        while len(text.encode("utf-8", "surrogatepass")) > self.cap:
            text = text[:-1]
        return text, truncated


async def _collect(
    stream: asyncio.StreamReader,
    collector: _Collector,
    ws: Workspace,
    stage: str,
    progress: Callable[[str], None] | None = None,
) -> None:
    """Read ``stream`` to its end into ``collector``; what is kept is also reported, decoded
    as it arrives, to ``progress`` (a function that never blocks: the loop's reporter)."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    while True:
        chunk = await stream.read(_READ_CHUNK)
        if not chunk:
            if progress is not None and len(collector.kept) < collector.cap:
                _report(progress, decoder.decode(b"", final=True))
            return
        ws.notify(stage, chunk)
        room = collector.cap - len(collector.kept)
        if room > 0:
            kept = chunk[:room]
            collector.kept += kept
            if progress is not None:
                _report(progress, decoder.decode(kept))
        collector.total += len(chunk)


def _report(progress: Callable[[str], None], text: str) -> None:
    """Hand ``text`` to a tool context's ``progress``; what it raises is not the command's
    failure (the loop's reporter never raises; a hand-built one might)."""
    if text:
        with contextlib.suppress(Exception):
            progress(text)


def _kill_group(proc: asyncio.subprocess.Process) -> None:
    """The last resort: ``SIGKILL`` the supervisor (its group is itself alone)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signals.SIGKILL)
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()


class _Pipes:
    """The supervised process's four pipes: its stdin (the "stop" channel: closing our end
    tells the supervisor to kill everything); stdout and stderr; and the status pipe, on
    which the supervisor says whether the command started. The last three are read through
    transports of our own, so they can be closed at once whoever else holds their other
    ends."""

    __slots__ = ("child_ends", "control", "files", "readers", "transports")

    def __init__(self) -> None:
        self.control = -1
        self.child_ends: list[int] = []
        self.files: list[io.FileIO] = []
        self.readers: list[asyncio.StreamReader] = []
        self.transports: list[asyncio.BaseTransport] = []

    async def open(self) -> None:
        loop = asyncio.get_running_loop()
        stdin, self.control = os.pipe()
        self.child_ends.append(stdin)
        for _ in range(3):  # stdout, stderr, status
            read, write = os.pipe()
            self.child_ends.append(write)
            pipe = io.FileIO(read, "rb")
            self.files.append(pipe)
            reader = asyncio.StreamReader(limit=_READ_CHUNK)
            try:
                transport, _ = await loop.connect_read_pipe(
                    lambda reader=reader: asyncio.StreamReaderProtocol(reader), pipe
                )
            except BaseException:
                self.close()
                raise
            self.readers.append(reader)
            self.transports.append(transport)

    def started(self) -> None:
        """The child has its ends: close ours of them."""
        for fd in self.child_ends:
            os.close(fd)
        self.child_ends.clear()

    @property
    def status(self) -> asyncio.StreamReader:
        return self.readers[2]

    def stop(self) -> None:
        """Tell the supervisor to kill everything (idempotent)."""
        if self.control >= 0:
            os.close(self.control)
            self.control = -1

    def close(self) -> None:
        """Close everything now (a transport would close its pipe one loop turn later)."""
        self.started()
        self.stop()
        for transport in self.transports:
            transport.close()
        for file in self.files:
            file.close()


async def _settle(
    proc: asyncio.subprocess.Process, readers: list[asyncio.Task[None]], pipes: _Pipes
) -> None:
    """After ``stop``: reap the supervisor (it exits once all below it is dead and reaped),
    let the readers drain what the pipes hold (bounded), then close the pipes."""
    waiting = asyncio.ensure_future(proc.wait())
    try:
        _, late = await asyncio.wait([waiting], timeout=SUPERVISOR_GRACE_SECONDS)
        if late:
            _kill_group(proc)
        await waiting
        pending = [task for task in readers if not task.done()]
        if pending:
            _, still = await asyncio.wait(pending, timeout=PROCESS_KILL_GRACE_SECONDS)
            for task in still:
                task.cancel()
            if still:
                await asyncio.gather(*still, return_exceptions=True)
        for task in readers:
            if task.done() and not task.cancelled():
                task.exception()  # observed: an output failure was already reported or is moot
    finally:
        waiting.cancel()  # cancelled while settling: asyncio's child watcher still reaps it
        pipes.close()


async def _finish(proc: asyncio.subprocess.Process, readers: list[asyncio.Task[None]]) -> int:
    await asyncio.wait(readers)
    for task in readers:
        error = task.exception()
        if error is not None:
            raise CodingToolError("PROCESS_OUTPUT_FAILED", str(error)) from error
    return await proc.wait()


async def _spawn(
    ws: Workspace, argv: list[str], env: ProcessEnvironment, pipes: _Pipes
) -> asyncio.subprocess.Process:
    await pipes.open()
    stdin, stdout, stderr, status = pipes.child_ends
    try:
        return await asyncio.create_subprocess_exec(
            sys.executable,
            "-I",
            "-c",
            _SUPERVISE,
            _SUPERVISOR,
            str(status),
            *argv,
            stdin=stdin,
            stdout=stdout,
            stderr=stderr,
            pass_fds=(status,),
            cwd=ws.root,
            env=env.build(),
            start_new_session=True,
        )
    except OSError as error:
        raise CodingToolError("PROCESS_START_FAILED", str(error)) from error
    finally:
        pipes.started()


async def _command_started(pipes: _Pipes, command: str, signal: AbortSignal) -> None:
    """Wait (bounded) until the supervisor reports that the command runs, so that the time
    limit measures the command and not the supervisor's start; ``PROCESS_START_FAILED``
    when it could not be started."""
    try:
        async with asyncio.timeout(SUPERVISOR_GRACE_SECONDS):
            line = await race(signal, pipes.status.readline())
    except TimeoutError:
        raise CodingToolError(
            "PROCESS_START_FAILED",
            f"{command} was not started within {SUPERVISOR_GRACE_SECONDS:g} s",
        ) from None
    if line != _STARTED:
        reason = line.decode("utf-8", "replace").strip() or "its supervisor ended first"
        raise CodingToolError("PROCESS_START_FAILED", f"cannot run {command}: {reason}")


async def run_process(
    ws: Workspace,
    argv: list[str],
    *,
    time_limit: float,
    signal: AbortSignal,
    env: ProcessEnvironment | None = None,
    cap: int = PROCESS_OUTPUT_MAX_BYTES,
    sandbox: Sandbox | None = None,
    progress: Callable[[str], None] | None = None,
) -> ProcessOutcome:
    """Run ``argv`` in the workspace with the handling described in the module docstring,
    in the environment ``env`` builds (default: the user's without the key variables),
    inside ``sandbox`` when it is given and on (``tether.tools.coding.sandbox``).
    ``progress`` (a tool context's) receives stdout and stderr as they arrive, decoded, up
    to ``cap`` bytes of each: the part the outcome keeps.

    Raises ``PROCESS_TIMEOUT`` (with the output so far), ``PROCESS_START_FAILED``, or the abort
    reason when ``signal`` aborts; in every case everything the command started is killed and
    reaped first (in the background after an abort: ``processes_settled``).
    """
    check_signal(signal)
    ws.check()
    argv = sandboxed(sandbox, argv, ws)
    pipes = _Pipes()
    try:
        proc = await _spawn(ws, argv, env or ProcessEnvironment(), pipes)
    except BaseException:
        pipes.close()
        raise
    out, err = _Collector(cap), _Collector(cap)
    stdout, stderr, _ = pipes.readers
    readers = [
        asyncio.ensure_future(_collect(stdout, out, ws, "process:stdout", progress)),
        asyncio.ensure_future(_collect(stderr, err, ws, "process:stderr", progress)),
    ]
    returncode: int | None = None
    timed_out = False
    settled = _PROCESSES.begin()
    stop_on_abort = signal.add_listener(pipes.stop)
    try:
        ws.notify("process:started", proc.pid)
        await _command_started(pipes, argv[0], signal)
        try:
            async with asyncio.timeout(time_limit):
                returncode = await race(signal, _finish(proc, readers))
        except TimeoutError:
            timed_out = True
    finally:
        stop_on_abort()
        pipes.stop()
        try:
            await _settle(proc, readers, pipes)
        finally:
            if not settled.done():
                settled.set_result(None)
    stdout_text, stdout_truncated = out.text()
    stderr_text, stderr_truncated = err.text()
    if timed_out:
        raise CodingToolError(
            "PROCESS_TIMEOUT",
            f"killed after {time_limit:g} s (with everything it started).\n"
            + _render_streams(
                stdout_text,
                stdout_truncated,
                out.total,
                stderr_text,
                stderr_truncated,
                err.total,
                tail=1_500,
            ),
        )
    assert returncode is not None
    exit_code, signal_name = (
        (None, signals.Signals(-returncode).name) if returncode < 0 else (returncode, None)
    )
    return ProcessOutcome(
        exit_code,
        signal_name,
        stdout_text,
        stderr_text,
        stdout_truncated,
        stderr_truncated,
        out.total,
        err.total,
    )


def sandbox_active(sandbox: Sandbox | None) -> bool:
    """Whether commands run inside ``sandbox``: it is given, not ``off``, and bubblewrap works
    here (``sandbox_status``, asked once per process)."""
    if sandbox is None or sandbox.mode == "off":
        return False
    return sandbox_status(sandbox.bwrap).available


def sandboxed(sandbox: Sandbox | None, argv: list[str], ws: Workspace) -> list[str]:
    """``argv`` as it runs under ``sandbox``: inside bubblewrap, as given (``off``, or ``auto``
    where bubblewrap does not work), or ``SANDBOX_UNAVAILABLE`` (``on`` where it does not)."""
    if sandbox is None or sandbox.mode == "off":
        return argv
    status = sandbox_status(sandbox.bwrap)
    if status.available:
        return sandbox.command(argv, ws.root)
    if sandbox.mode == "auto":
        return argv
    raise CodingToolError(
        "SANDBOX_UNAVAILABLE",
        f"{status.reason}. The sandbox is on, so the command was not run; install bubblewrap, "
        "or turn the sandbox off (or to auto) to run commands unsandboxed",
    )


def describe_processes(sandbox: Sandbox | None) -> str:
    """What the process tools' descriptions say about where their commands run."""
    if not sandbox_active(sandbox):
        if sandbox is not None and sandbox.mode == "on":
            return "sandboxed, but the sandbox cannot run here: every call fails"
        return "NOT a sandbox: it runs as the user, with the user's environment minus API keys"
    assert sandbox is not None
    network = "with network access" if sandbox.network else "without network access"
    return (
        "in a sandbox: only the workspace is writable, the rest of the file system is "
        f"read-only with credentials hidden, a private /tmp, {network}"
    )


def _render_stream(name: str, text: str, truncated: bool, total: int, tail: int | None) -> str:
    if tail is not None and len(text) > tail:
        text = "…" + text[-tail:]
    if not text:
        return f"{name}: (empty)\n"
    body = text if text.endswith("\n") else text + "\n"
    note = f"[{name} truncated: {total} bytes written, first {PROCESS_OUTPUT_MAX_BYTES} kept]\n"
    return f"--- {name} ---\n{body}" + (note if truncated else "")


def _render_streams(
    stdout: str,
    out_t: bool,
    out_n: int,
    stderr: str,
    err_t: bool,
    err_n: int,
    tail: int | None = None,
) -> str:
    return _render_stream("stdout", stdout, out_t, out_n, tail) + _render_stream(
        "stderr", stderr, err_t, err_n, tail
    )


def render_outcome(outcome: ProcessOutcome) -> str:
    """The text a model reads: the exit status, then both streams."""
    status = (
        f"exit code {outcome.exit_code}"
        if outcome.exit_code is not None
        else f"killed by {outcome.signal}"
    )
    return f"{status}\n" + _render_streams(
        outcome.stdout,
        outcome.stdout_truncated,
        outcome.stdout_bytes,
        outcome.stderr,
        outcome.stderr_truncated,
        outcome.stderr_bytes,
    )


def process_tool_setup(
    ws: object, hide_env: object, pass_env: object, sandbox: object, factory: str
) -> tuple[ProcessEnvironment, Sandbox | None]:
    """What a process tool's ``factory`` checks before it builds the tool: ``ws`` is a
    ``Workspace``, ``hide_env``/``pass_env`` name variables (``process_environment``) and
    ``sandbox`` is a ``Sandbox`` or ``None`` (``TypeError`` naming the parameter otherwise).
    Returns the environment its processes get and the sandbox they run in."""
    require_workspace(ws, factory)
    env = process_environment(hide_env, pass_env, factory)
    if sandbox is not None and type(sandbox) is not Sandbox:
        raise TypeError(f"{factory}(sandbox=...) must be a Sandbox or None")
    return env, sandbox
