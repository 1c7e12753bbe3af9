"""The ``tether`` command under hostile conditions, run as a real subprocess.

* Output: text that UTF-8 cannot encode (a lone surrogate from a fixture's ``"\\ud800"`` escape,
  or from a command-line byte that is not UTF-8) never stops a run: JSON lines stay valid UTF-8
  and human output escapes it. A closed, full or broken stdout is a one-line message on stderr
  and exit status 4 ("output failed"), never a traceback.
* Ctrl-C: the first SIGINT cancels the run (status ``cancelled``, exit 130) even while the
  command is blocked writing to a reader that does not keep up, or loading a fixture FIFO that
  never delivers; the second SIGINT exits at once.
* A fixture that never ends (``/dev/zero``) is refused by the size cap.

Every test that could hang is bounded: a watchdog kills the process, so a regression fails
(with the process's output) instead of hanging. Nothing waits by sleeping: the tests read the
process's output and its stderr notice to know where it is.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Generator
from pathlib import Path
from typing import IO, Any

import pytest

import tether.cli.main as cli

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals, FIFOs and /dev files"),
]

TETHER = Path(sys.executable).parent / "tether"
BUNDLED = Path(__file__).resolve().parents[2] / "fixtures" / "provider-tool-roundtrip.json"
WATCHDOG_SECONDS = 30
INTERRUPTED = 130
OUTPUT_FAILED = 4
NOTICE = b"tether run: interrupted"


# --- helpers --------------------------------------------------------------------------------


def tether(
    *arguments: str | bytes | Path,
    stdout: int | IO[Any] | None = subprocess.PIPE,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [str(TETHER), *arguments],
        stdout=stdout,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        env=env,
        check=False,
        timeout=WATCHDOG_SECONDS,
    )


def shell(script: str, *arguments: str | Path) -> subprocess.CompletedProcess[bytes]:
    """Run ``script`` with ``$0`` set to the installed script and ``$@`` to ``arguments``."""
    return subprocess.run(
        ["/bin/sh", "-c", script, str(TETHER), *map(str, arguments)],
        capture_output=True,
        stdin=subprocess.DEVNULL,
        check=False,
        timeout=WATCHDOG_SECONDS,
    )


@contextlib.contextmanager
def spawned(*arguments: str | Path) -> Generator[subprocess.Popen[bytes], None, None]:
    """Start ``tether`` with piped stdout and stderr; a watchdog kills it if it hangs."""
    process = subprocess.Popen(
        [str(TETHER), *map(str, arguments)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    watchdog = threading.Timer(WATCHDOG_SECONDS, process.kill)
    watchdog.start()
    try:
        yield process
    finally:
        watchdog.cancel()
        if process.poll() is None:
            process.kill()
        process.wait()
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()


def pipes(process: subprocess.Popen[bytes]) -> tuple[IO[bytes], IO[bytes]]:
    assert process.stdout is not None
    assert process.stderr is not None
    return process.stdout, process.stderr


def read_until(stream: IO[bytes], marker: bytes) -> bytes:
    """Read ``stream`` unbuffered until ``marker`` has appeared (EOF first fails the test).

    Unbuffered, so no more is taken from a pipe than needed, and a later ``read()`` of the
    same stream goes on exactly where this stopped.
    """
    seen = b""
    while marker not in seen:
        chunk = os.read(stream.fileno(), 4096)
        assert chunk, f"the process ended without writing {marker!r}; it wrote {seen[-300:]!r}"
        seen += chunk
    return seen


PIPE_BYTES = 65_536


def small_pipe(stream: IO[bytes]) -> None:
    """Hold the pipe to Linux's default 64 KiB, whatever the system's default is."""
    set_size = getattr(fcntl, "F_SETPIPE_SZ", None)
    if set_size is not None:
        fcntl.fcntl(stream.fileno(), set_size, PIPE_BYTES)


def is_one_clean_line(stderr: bytes) -> bool:
    return stderr.endswith(b"\n") and stderr.count(b"\n") == 1 and b"Traceback" not in stderr


def strict_lines(stdout: bytes) -> list[str]:
    """The output as lines, failing unless it is valid UTF-8."""
    return stdout.decode("utf-8", errors="strict").splitlines()


def bundled() -> dict[str, Any]:
    return json.loads(BUNDLED.read_text(encoding="utf-8"))


def write(directory: Path, data: dict[str, Any], *, ascii_only: bool = True) -> Path:
    path = directory / "fixture.json"
    path.write_bytes(json.dumps(data, ensure_ascii=ascii_only).encode("utf-8"))
    return path


def surrogate_fixture(directory: Path) -> Path:
    """The round trip with a lone surrogate as the tool-call ID and as the final text.

    ``json.dumps`` writes them as ``\\udc80`` and ``\\ud800`` escapes: a valid UTF-8 file."""
    data = bundled()
    data["responses"][0]["records"][1]["id"] = "call-\udc80"
    data["responses"][1]["records"][1]["text"] = "\ud800"
    return write(directory, data)


STEPS = 64
CHUNKS_PER_STEP = 60
CHUNK = "€" * 1000  # 3 bytes in UTF-8: a step streams 180 KB of text
# Once a step's text has begun (and a test read a few KB), more of it remains than the pipe
# holds, so a command that keeps writing it blocks.
assert CHUNKS_PER_STEP * len(CHUNK.encode()) > 2 * PIPE_BYTES


def long_fixture(directory: Path) -> Path:
    """64 steps (63 tool turns, then a stop), each streaming about 120 KB of text."""
    usage = {"inputTokens": 1, "outputTokens": 1}
    responses: list[dict[str, Any]] = []
    for step in range(STEPS - 1):
        response_id = f"response-{step}"
        responses.append(
            {
                "records": [
                    {"type": "response_start", "responseId": response_id, "role": "assistant"},
                    *[{"type": "text_delta", "text": CHUNK}] * CHUNKS_PER_STEP,
                    {
                        "type": "tool_call",
                        "id": f"call-{step}",
                        "name": "add",
                        "arguments": {"left": step, "right": 1},
                    },
                    {
                        "type": "response_end",
                        "responseId": response_id,
                        "stopReason": "tool_call",
                        "usage": usage,
                    },
                ]
            }
        )
    responses.append(
        {
            "records": [
                {"type": "response_start", "responseId": "response-last", "role": "assistant"},
                {"type": "text_delta", "text": "done"},
                {
                    "type": "response_end",
                    "responseId": "response-last",
                    "stopReason": "stop",
                    "usage": usage,
                },
            ]
        }
    )
    return write(directory, {"schemaVersion": 1, "responses": responses}, ascii_only=False)


def test_the_long_fixture_completes_when_nobody_interrupts(tmp_path: Path) -> None:
    completed = tether("run", "--fixture", long_fixture(tmp_path), "--max-steps", str(STEPS))

    assert completed.returncode == 0, completed.stderr
    lines = strict_lines(completed.stdout)
    assert sum(line.startswith("→ add") for line in lines) == STEPS - 1
    assert lines[-1].startswith("status: completed · model turns: 64")


# --- 6. output that cannot be encoded, and output that cannot be written ---------------------


def test_a_lone_surrogate_in_fixture_text_and_ids_is_escaped_for_a_person(tmp_path: Path) -> None:
    completed = tether("run", "--fixture", surrogate_fixture(tmp_path))

    assert completed.returncode == 0, completed.stderr
    assert completed.stderr == b""
    lines = strict_lines(completed.stdout)
    assert "[call-\\udc80]" in lines[1]
    assert "assistant: \\ud800" in lines
    assert lines[-1].startswith("status: completed")


def test_json_lines_stay_valid_utf8_with_lone_surrogates(tmp_path: Path) -> None:
    completed = tether("run", "--json", "--fixture", surrogate_fixture(tmp_path))

    assert completed.returncode == 0, completed.stderr
    assert completed.stderr == b""
    events = [json.loads(line) for line in strict_lines(completed.stdout)]
    assert events[1]["payload"]["chunk"]["toolCall"]["id"] == "call-\udc80"
    assert events[3]["payload"]["message"]["toolCallId"] == "call-\udc80"
    assert events[4]["payload"]["chunk"]["delta"] == "\ud800"
    assert events[-1]["payload"]["result"]["finalText"] == "\ud800"
    assert b"\\ud800" in completed.stdout  # the JSON escape, not bytes UTF-8 forbids


def test_other_non_ascii_text_is_still_written_as_utf8(tmp_path: Path) -> None:
    data = bundled()
    data["responses"][1]["records"][1]["text"] = "Die Summe ist 42 — ça fait 42 😀"
    path = write(tmp_path, data)

    human = tether("run", "--fixture", path)
    machine = tether("run", "--json", "--fixture", path)

    assert "assistant: Die Summe ist 42 — ça fait 42 😀" in strict_lines(human.stdout)
    assert "ça fait 42 😀".encode() in machine.stdout
    assert json.loads(strict_lines(machine.stdout)[-1])["payload"]["result"]["finalText"] == (
        "Die Summe ist 42 — ça fait 42 😀"
    )


@pytest.mark.parametrize("machine", [False, True], ids=["human", "json"])
def test_a_prompt_that_is_not_utf8_is_escaped_even_on_a_strict_stdout(machine: bool) -> None:
    env = {**os.environ, "PYTHONIOENCODING": "utf-8:strict"}
    options = ["--json"] if machine else []

    completed = tether("run", *options, "--prompt", b"\xff", env=env)

    assert completed.returncode == 0, completed.stderr
    assert completed.stderr == b""
    lines = strict_lines(completed.stdout)
    if machine:
        assert json.loads(lines[0])["payload"]["message"]["content"] == "\udcff"
    else:
        assert lines[0] == "user: \\udcff"


@pytest.mark.parametrize(
    "arguments", [["run"], ["run", "--json"], ["trace"]], ids=["run", "run-json", "trace"]
)
def test_a_closed_stdout_is_exit_4_with_one_line_on_stderr(arguments: list[str]) -> None:
    completed = shell('"$0" "$@" >&-', *arguments)

    assert completed.returncode == OUTPUT_FAILED, completed.stderr
    assert is_one_clean_line(completed.stderr), completed.stderr
    assert b"output" in completed.stderr


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize(
    "arguments", [["run"], ["run", "--json"], ["trace"]], ids=["run", "run-json", "trace"]
)
def test_a_full_stdout_is_exit_4_with_one_line_on_stderr(arguments: list[str]) -> None:
    with open("/dev/full", "wb") as full:
        completed = tether(*arguments, stdout=full)

    assert completed.returncode == OUTPUT_FAILED, completed.stderr
    assert is_one_clean_line(completed.stderr), completed.stderr
    assert b"No space left on device" in completed.stderr


def test_a_reader_that_went_away_is_exit_4_without_noise() -> None:
    reader, writer = os.pipe()
    os.close(reader)
    try:
        completed = tether("run", "--json", stdout=writer)
    finally:
        os.close(writer)

    assert completed.returncode == OUTPUT_FAILED
    assert completed.stderr == b""


def test_the_exit_statuses_are_documented_in_help_and_in_the_module() -> None:
    completed = tether("run", "--help")
    assert completed.returncode == 0
    text = completed.stdout.decode()
    docstring = " ".join((cli.__doc__ or "").lower().split())
    for status, meaning in [
        ("0", "completed"),
        ("1", "failed"),
        ("2", "usage"),
        ("3", "max"),
        ("4", "output"),
        ("130", "interrupted"),
    ]:
        assert any(
            line.split()[:1] == [status] and meaning in line.lower() for line in text.splitlines()
        ), f"--help does not document exit status {status} ({meaning})"
        assert f"{status} {meaning}" in docstring, f"the docstring lacks exit status {status}"


# --- 7. Ctrl-C ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "moment",
    [b"\n", b"assistant: "],
    ids=["before-the-first-turn", "blocked-writing-the-first-turn"],
)
def test_sigint_cancels_a_run_that_writes_to_a_slow_reader(tmp_path: Path, moment: bytes) -> None:
    path = long_fixture(tmp_path)
    with spawned("run", "--fixture", path, "--max-steps", str(STEPS)) as process:
        stdout, stderr = pipes(process)
        small_pipe(stdout)
        # Then stop reading: mid-turn, the command fills the pipe and blocks in a write.
        seen = read_until(stdout, moment)
        assert seen.startswith(b"user: What is 20 + 22?\n")
        process.send_signal(signal.SIGINT)
        notice = read_until(stderr, NOTICE)
        rest = stdout.read()  # now read everything, as a slow reader eventually does
        status = process.wait(timeout=WATCHDOG_SECONDS)
        errors = notice + stderr.read()

    assert status == INTERRUPTED, errors
    assert b"Traceback" not in errors
    lines = strict_lines(seen + rest)
    assert lines[-1].startswith("status: cancelled: Interrupted by the user · model turns: ")
    assert not [line for line in lines if line.startswith("status: completed")]
    # The run is never more than a turn ahead of what was written: it stopped at once.
    assert sum(line.startswith("→ add") for line in lines) <= 1


def test_sigint_cancels_a_json_run_and_its_events_stay_complete(tmp_path: Path) -> None:
    path = long_fixture(tmp_path)
    with spawned("run", "--json", "--fixture", path, "--max-steps", str(STEPS)) as process:
        stdout, stderr = pipes(process)
        small_pipe(stdout)
        seen = read_until(stdout, b'"type":"model.chunk"')  # the first turn is being written
        assert json.loads(seen.split(b"\n")[0])["type"] == "message.accepted"
        process.send_signal(signal.SIGINT)
        read_until(stderr, NOTICE)
        rest = stdout.read()
        status = process.wait(timeout=WATCHDOG_SECONDS)

    assert status == INTERRUPTED
    events = [json.loads(line) for line in strict_lines(seen + rest)]
    assert [event["sequence"] for event in events] == list(range(len(events)))
    assert events[-1]["type"] == "run.finished"
    result = events[-1]["payload"]["result"]
    assert result["status"] == "cancelled"
    assert result["reason"] == "Interrupted by the user"
    assert sum(event["type"] == "tool.finished" for event in events) <= 1


def test_a_second_sigint_exits_at_once_while_the_output_is_blocked(tmp_path: Path) -> None:
    path = long_fixture(tmp_path)
    with spawned("run", "--fixture", path, "--max-steps", str(STEPS)) as process:
        stdout, stderr = pipes(process)
        small_pipe(stdout)
        seen = read_until(stdout, b"assistant: ")  # then stop reading: the pipe fills
        process.send_signal(signal.SIGINT)
        read_until(stderr, NOTICE)  # the first one was handled; the write is still blocked
        process.send_signal(signal.SIGINT)
        status = process.wait(timeout=WATCHDOG_SECONDS)  # without reading another byte
        rest = stdout.read()
        errors = stderr.read()

    assert status == INTERRUPTED
    assert b"Traceback" not in errors
    assert b"status:" not in seen + rest  # it quit without writing the rest of the run


def open_fifo_writer(fifo: Path) -> int:
    """Open ``fifo`` for writing; returns once the command has opened it for reading."""
    opened: list[int] = []
    opener = threading.Thread(target=lambda: opened.append(os.open(fifo, os.O_WRONLY)))
    opener.start()
    opener.join(WATCHDOG_SECONDS)
    if not opened:  # release the blocked open, then fail
        release = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        opener.join()
        os.close(release)
        os.close(opened[0])
        pytest.fail("the command never opened the fixture FIFO")
    return opened[0]


def test_sigint_interrupts_a_fixture_fifo_that_never_delivers(tmp_path: Path) -> None:
    fifo = tmp_path / "fixture.fifo"
    os.mkfifo(fifo)
    with spawned("run", "--fixture", fifo) as process:
        writer = open_fifo_writer(fifo)  # a writer that stays silent: the read blocks
        try:
            process.send_signal(signal.SIGINT)
            status = process.wait(timeout=WATCHDOG_SECONDS)
        finally:
            os.close(writer)
        stdout, stderr = pipes(process)
        output, errors = stdout.read(), stderr.read()

    assert status == INTERRUPTED, errors
    assert output == b""
    assert b"Traceback" not in errors
    assert b"KeyboardInterrupt" not in errors


def blocked_opening_a_fifo(pid: int) -> bool:
    """Whether a thread of ``pid`` waits in the kernel for a FIFO's other end (Linux)."""
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):
            if (task / "wchan").read_text() == "wait_for_partner":
                return True
    return False


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux /proc")
def test_sigint_interrupts_opening_a_fixture_fifo_with_no_writer(tmp_path: Path) -> None:
    fifo = tmp_path / "fixture.fifo"
    os.mkfifo(fifo)
    with spawned("run", "--fixture", fifo) as process:
        while not blocked_opening_a_fifo(process.pid):  # bounded by the watchdog
            assert process.poll() is None, "the command ended before opening the FIFO"
            os.sched_yield()
        process.send_signal(signal.SIGINT)
        status = process.wait(timeout=WATCHDOG_SECONDS)
        _, stderr = pipes(process)
        errors = stderr.read()

    assert status == INTERRUPTED, errors
    assert b"Traceback" not in errors


# --- 8. a fixture that never ends -----------------------------------------------------------


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_an_endless_fixture_is_refused_by_the_size_cap() -> None:
    # Bounded memory (1 GiB of address space): before the cap this ended in a MemoryError.
    completed = shell('ulimit -v 1048576 && exec "$0" "$@"', "run", "--fixture", "/dev/zero")

    assert completed.returncode == 2, completed.stderr
    assert b"PROVIDER_INVALID_FIXTURE" in completed.stderr
    assert b"Traceback" not in completed.stderr
    assert completed.stdout == b""
