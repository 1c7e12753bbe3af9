"""Start and stop the real ``llm-katan`` server (echo backend) on 127.0.0.1 for tests.

Why: llm-katan is a real uvicorn process speaking the OpenAI and Anthropic wire formats, so
provider tests can exercise a genuine HTTP server (status mapping, auth header names, text
streaming, 429/5xx/504 injection, slow streams). See providers.md §10 for what it does not
model.

``run_katan(workdir, *extra_args)`` is a context manager that:

* picks a free port by binding a socket to 127.0.0.1:0, and runs
  ``llm-katan -m test-model --backend echo --providers openai,anthropic --host 127.0.0.1
  --port PORT --stats-file '' --disable-dashboard [extra_args...]`` with ``HOME`` and the
  working directory inside ``workdir`` (so nothing is written to the real home), stdout and
  stderr in ``workdir`` files, and without the ``LLM_KATAN_*`` variables (``LLM_KATAN_HOST``
  would override ``--host``), the dev-mode/asyncio-debug/warnings variables of the test run
  and the ``COVERAGE_*`` ones (a third-party server is not ours to measure);
* waits for readiness by polling ``GET /health`` over loopback: each attempt is a real
  connection, refused ones are retried after a short pause, and the probe gives up after
  ``startup_timeout`` seconds or as soon as the process exits (retrying on a fresh port a
  few times if the port was taken in between);
* always stops it on exit: SIGTERM, then SIGKILL after ``stop_timeout`` seconds, then reaps;
  if it had already exited by itself when the ``with`` body ended normally, that is an
  ``AssertionError`` with its output (a crash mid-test must not pass unnoticed).

If it cannot start, ``KatanStartError`` carries the command line, the exit status and the
captured stderr/stdout; the fixtures turn that into a test failure, never a skip.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Protocol

__all__ = [
    "ANTHROPIC_KEY",
    "OPENAI_KEY",
    "KatanFactory",
    "KatanServer",
    "KatanStartError",
    "free_port",
    "katan_executable",
    "run_katan",
    "stop_process",
]

HOST: Final = "127.0.0.1"
MODEL: Final = "test-model"

OPENAI_KEY: Final = "llm-katan-openai-key"
"""The key llm-katan expects for OpenAI under ``--validate-keys`` (its built-in default)."""
ANTHROPIC_KEY: Final = "llm-katan-anthropic-key"
"""The key llm-katan expects for Anthropic under ``--validate-keys`` (its built-in default)."""

_PORT_ATTEMPTS: Final = 3
_PROBE_PAUSE: Final = 0.02
_SCRUBBED: Final = ("PYTHONDEVMODE", "PYTHONASYNCIODEBUG", "PYTHONWARNINGS", "PYTHONTRACEMALLOC")


class KatanStartError(RuntimeError):
    """llm-katan could not be started (the message holds its stderr and stdout)."""


@dataclass(frozen=True)
class KatanServer:
    """A running llm-katan: ``base_url`` is ``http://127.0.0.1:PORT/v1`` (both the OpenAI
    ``/v1/chat/completions`` and the Anthropic ``/v1/messages`` live under it); ``origin`` is
    ``http://127.0.0.1:PORT`` (``/health``, ``/metrics``); ``args`` is the full argv used;
    ``startup_seconds`` is the time from spawn to the first healthy ``/health``."""

    base_url: str
    origin: str
    host: str
    port: int
    model: str
    args: tuple[str, ...]
    pid: int
    stdout_path: Path
    stderr_path: Path
    startup_seconds: float

    def output(self) -> str:
        """Its stderr and stdout so far (for assertion messages)."""
        return _read_output(self.stderr_path, self.stdout_path)


class KatanFactory(Protocol):
    """``katan_factory(*extra_args)`` starts one more llm-katan with extra CLI flags."""

    def __call__(self, *extra_args: str) -> KatanServer: ...


def katan_executable() -> Path:
    """The ``llm-katan`` script installed next to the running interpreter (the venv's)."""
    return Path(sys.executable).parent / "llm-katan"


def free_port() -> int:
    """A TCP port that was free on 127.0.0.1 a moment ago (bind to port 0, read, release)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


def _read_output(stderr_path: Path, stdout_path: Path) -> str:
    def tail(path: Path) -> str:
        try:
            text = path.read_text(errors="replace")
        except OSError as error:
            return f"<unreadable: {error}>"
        return text[-20_000:]

    return f"--- stderr ---\n{tail(stderr_path)}\n--- stdout ---\n{tail(stdout_path)}"


def _child_env(home: Path) -> dict[str, str]:
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("LLM_KATAN", "COVERAGE_")) and name not in _SCRUBBED
    }
    env["HOME"] = str(home)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _healthy(port: int) -> bool:
    """One readiness attempt: a real loopback connection and ``GET /health`` → 200 ok."""
    connection = http.client.HTTPConnection(HOST, port, timeout=2.0)
    try:
        connection.request("GET", "/health")
        response = connection.getresponse()
        body = response.read()
    except (OSError, http.client.HTTPException):
        return False
    finally:
        connection.close()
    if response.status != 200:
        return False
    try:
        return json.loads(body).get("status") == "ok"
    except (ValueError, AttributeError):
        return False


def stop_process(process: subprocess.Popen[bytes], stop_timeout: float) -> None:
    """SIGTERM, then SIGKILL after ``stop_timeout`` seconds; always reaps the process."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=stop_timeout)
        except subprocess.TimeoutExpired:
            process.kill()
    process.wait()


@contextlib.contextmanager
def run_katan(
    workdir: Path,
    *extra_args: str,
    model: str = MODEL,
    providers: str = "openai,anthropic",
    dashboard: bool = False,
    startup_timeout: float = 30.0,
    stop_timeout: float = 5.0,
) -> Generator[KatanServer, None, None]:
    """Run one llm-katan on a free 127.0.0.1 port for the ``with`` body (see module doc).

    ``extra_args`` are more CLI flags, e.g. ``"--rate-limit-after", "1"``. The dashboard
    (a buffering middleware plus a websocket broadcaster) is off unless ``dashboard``.
    """
    executable = katan_executable()
    if not executable.exists():
        raise KatanStartError(f"llm-katan is not installed at {executable} (a dev dependency)")
    home = workdir / "home"
    home.mkdir(parents=True, exist_ok=True)
    failures: list[str] = []
    for attempt in range(_PORT_ATTEMPTS):
        port = free_port()
        args = (
            str(executable),
            *("-m", model, "--backend", "echo", "--providers", providers),
            *("--host", HOST, "--port", str(port), "--stats-file", ""),
            *(() if dashboard else ("--disable-dashboard",)),
            *extra_args,
        )
        stdout_path = workdir / f"katan-{port}.stdout"
        stderr_path = workdir / f"katan-{port}.stderr"
        started = time.monotonic()
        with stdout_path.open("wb") as stdout, stderr_path.open("wb") as stderr:
            process = subprocess.Popen(
                args,
                stdin=subprocess.DEVNULL,
                stdout=stdout,
                stderr=stderr,
                cwd=workdir,
                env=_child_env(home),
            )
        exit_status: int | None = None
        try:
            deadline = started + startup_timeout
            ready = _healthy(port)
            while not ready and exit_status is None and time.monotonic() < deadline:
                time.sleep(_PROBE_PAUSE)  # between refused connections, inside the bound
                ready = _healthy(port)
                exit_status = process.poll()
            if ready:
                yield KatanServer(
                    base_url=f"http://{HOST}:{port}/v1",
                    origin=f"http://{HOST}:{port}",
                    host=HOST,
                    port=port,
                    model=model,
                    args=args,
                    pid=process.pid,
                    stdout_path=stdout_path,
                    stderr_path=stderr_path,
                    startup_seconds=time.monotonic() - started,
                )
                if process.poll() is not None:
                    raise AssertionError(
                        f"llm-katan exited during the test with status {process.returncode}\n"
                        + _read_output(stderr_path, stdout_path)
                    )
                return
        finally:
            stop_process(process, stop_timeout)
        output = _read_output(stderr_path, stdout_path)
        status = (
            f"not healthy within {startup_timeout} s"
            if exit_status is None
            else f"exited with status {exit_status}"
        )
        failures.append(f"attempt {attempt + 1}: `{' '.join(args)}` {status}\n{output}")
        if "address already in use" not in output.lower():
            break
    raise KatanStartError("llm-katan did not start:\n" + "\n".join(failures))
