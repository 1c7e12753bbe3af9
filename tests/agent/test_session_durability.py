"""Sessions that survive kill -9: append-only writes, recovery of a torn last line without a
person, one writer per file across processes. Real files, real processes, real SIGKILLs.

The crash tests drive ``tests/session_crash_child.py``: a zygote that imports tether once and
forks one appending worker per round; the worker reports every acknowledged batch over its
stdout pipe, the test SIGKILLs it at a random point and then checks the file: it loads (its
torn last line, if any, repaired), every acknowledged message is in it, and nothing but the
session file is in the directory.
"""

# Tests inspect real temp directories synchronously on purpose.
# ruff: noqa: ASYNC240

from __future__ import annotations

import asyncio
import errno
import json
import os
import random
import selectors
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final

import pytest

from session_support import rejects
from tether import ScriptedModel, UserMessage, text_reply
from tether.agent.persistence import SessionRecorder
from tether.agent.runtime import TetherRuntimeError, create_runtime
from tether.agent.session import (
    MessageEntry,
    SessionEntry,
    SessionLimits,
    SessionRecovery,
    SessionStore,
    SessionStoreError,
    SessionStoreOptions,
    SessionTree,
    list_sessions,
    parse_session,
    session_io,
)

GUARD: Final = 60.0
"""Seconds any one wait on a child may take before the test fails (never reached when the
code works; it only keeps a broken child from hanging the suite)."""
CHILD: Final = Path(__file__).resolve().parents[1] / "session_crash_child.py"
HEADER: Final = b'{"type":"session","version":1,"id":"s1","createdAt":"2026-08-26T00:00:01.000Z"}\n'


def line(entry_id: str, parent: str | None, message_id: str, content: str = "hi") -> bytes:
    record = {
        "type": "entry",
        "version": 1,
        "id": entry_id,
        "parentId": parent,
        "timestamp": "2026-08-26T00:00:02.000Z",
        "message": {"id": message_id, "role": "user", "content": content},
    }
    return json.dumps(record, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


def ids_of(entries: tuple[SessionEntry, ...]) -> list[str]:
    """The message IDs of ``entries`` (compactions skipped)."""
    return [entry.message.id for entry in entries if type(entry) is MessageEntry]


def message_ids(data: bytes) -> list[str]:
    return ids_of(parse_session(data, SessionLimits.for_coding()).entries)


def stray(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.iterdir() if path.name != "session.jsonl")


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "session.jsonl"


# --- append-only -------------------------------------------------------------------------------


async def test_an_append_writes_only_its_own_line(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Bytes the store would not write itself (CRLF line ends): an append keeps every one of
    # them and the file's inode, and writes nothing but the new line.
    original = (HEADER + line("e1", None, "m1")).replace(b"\n", b"\r\n")
    path.write_bytes(original)
    inode = path.stat().st_ino
    store = await SessionStore.load(path)
    written: list[int] = []
    real_write = session_io.write

    def write(*args: Any) -> int:
        written.append(len(args[1]))
        return real_write(*args)

    monkeypatch.setattr(session_io, "write", write)
    entry = await store.append("e1", {"id": "m2", "role": "user", "content": "more"})
    data = path.read_bytes()
    assert data.startswith(original)
    assert path.stat().st_ino == inode
    assert sum(written) == len(data) - len(original)
    assert message_ids(data) == ["m1", "m2"]
    assert parse_session(data).entries[-1].id == entry.id
    await store.close()


async def test_the_disk_work_runs_off_the_event_loop(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    threads: list[int] = []
    real_fsync = session_io.fsync

    def fsync(fd: int) -> None:
        threads.append(threading.get_ident())
        real_fsync(fd)

    monkeypatch.setattr(session_io, "fsync", fsync)
    store = await SessionStore.create(path)
    await store.append(None, {"id": "m1", "role": "user", "content": "hi"})
    assert threads
    assert threading.get_ident() not in threads
    await store.close()


async def test_one_fsync_covers_the_messages_of_one_turn(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = await SessionStore.create(path)
    recorder = SessionRecorder(SessionTree(store))
    calls: list[int] = []
    real_fsync = session_io.fsync

    def fsync(fd: int) -> None:
        calls.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(session_io, "fsync", fsync)
    turn = tuple(UserMessage(id=f"m{n}", content="x") for n in range(3))
    await recorder.record_messages(turn)
    assert len(calls) == 1
    assert message_ids(path.read_bytes()) == ["m0", "m1", "m2"]
    await store.close()


async def test_a_failed_write_keeps_every_acknowledged_entry(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = await SessionStore.create(path)
    first = await store.append(None, {"id": "m1", "role": "user", "content": "kept"})
    acknowledged = path.read_bytes()
    real_write = session_io.write

    def full_disk(fd: int, data: bytes | memoryview, offset: int) -> int:
        real_write(fd, data[: len(data) // 2], offset)
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(session_io, "write", full_disk)
    with pytest.raises(OSError, match="No space left"):
        await store.append(first.id, {"id": "m2", "role": "user", "content": "lost" * 100})
    assert path.read_bytes() == acknowledged
    assert [entry.id for entry in store.entries] == [first.id]
    monkeypatch.undo()
    await store.append(first.id, {"id": "m3", "role": "user", "content": "after"})
    assert message_ids(path.read_bytes()) == ["m1", "m3"]
    await store.close()


async def test_a_failed_write_that_cannot_be_undone_retires_the_store(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = await SessionStore.create(path)
    await store.append(None, {"id": "m1", "role": "user", "content": "kept"})

    def fail(*args: Any) -> None:
        raise OSError(errno.EIO, "I/O error")

    monkeypatch.setattr(session_io, "fsync", fail)
    monkeypatch.setattr(session_io, "truncate", fail)
    retired = await rejects(
        "SESSION_WRITE_FAILED", store.append(None, {"id": "m2", "role": "user", "content": "x"})
    )
    assert isinstance(retired.__cause__, ExceptionGroup)
    monkeypatch.undo()
    again = await rejects(
        "SESSION_WRITE_FAILED", store.append(None, {"id": "m3", "role": "user", "content": "y"})
    )
    assert again is retired
    await store.close()
    reopened = await SessionStore.load(path)
    assert ids_of(reopened.entries)[:1] == ["m1"]
    await reopened.close()


# --- recovery without a person -------------------------------------------------------------------


async def test_a_torn_last_line_is_truncated_on_load_and_reported(path: Path) -> None:
    intact = HEADER + line("e1", None, "m1") + line("e2", "e1", "m2")
    torn = b'{"type":"entry","version":1,"id":"e3","parentId":"e2","timest'
    path.write_bytes(intact + torn)
    store = await SessionStore.load(path)
    assert path.read_bytes() == intact
    assert store.recovered == SessionRecovery(dropped_bytes=len(torn))
    assert str(store.recovered) == "dropped an incomplete last entry"
    assert [entry.id for entry in store.entries] == ["e1", "e2"]
    await store.append("e2", {"id": "m3", "role": "user", "content": "next"})
    assert message_ids(path.read_bytes()) == ["m1", "m2", "m3"]
    await store.close()
    again = await SessionStore.load(path)
    assert again.recovered is None  # reported once: the file is whole now
    await again.close()


async def test_a_tear_inside_a_multibyte_character_is_recovered(path: Path) -> None:
    intact = HEADER + line("e1", None, "m1")
    whole = line("e2", "e1", "m2", "é" * 10)
    cut = whole[: whole.index("é".encode()) + 1]  # the first of the character's two bytes
    path.write_bytes(intact + cut)
    store = await SessionStore.load(path)
    assert store.recovered == SessionRecovery(dropped_bytes=len(cut))
    assert path.read_bytes() == intact
    await store.close()


async def test_a_reader_ignores_a_torn_line_and_changes_nothing(path: Path) -> None:
    data = HEADER + line("e1", None, "m1") + b'{"type":"entry","id":"cu'
    path.write_bytes(data)
    snapshot = await SessionStore.read(path)
    assert [entry.id for entry in snapshot.entries] == ["e1"]
    assert snapshot.recovered is None
    assert path.read_bytes() == data
    await rejects(
        "SESSION_CLOSED", snapshot.append("e1", {"id": "x", "role": "user", "content": ""})
    )


async def test_a_complete_last_line_without_newline_is_kept_and_ended(path: Path) -> None:
    path.write_bytes(HEADER + line("e1", None, "m1").rstrip(b"\n"))
    store = await SessionStore.load(path)
    assert store.recovered is None
    await store.append("e1", {"id": "m2", "role": "user", "content": "next"})
    assert message_ids(path.read_bytes()) == ["m1", "m2"]
    await store.close()


@pytest.mark.parametrize(
    ("data", "code"),
    [
        (HEADER + b"not json\n" + line("e1", None, "m1"), "SESSION_INVALID_JSON"),
        (HEADER + line("e1", None, "m1") + b"not json", "SESSION_INVALID_JSON"),
        (HEADER + line("e1", None, "m1") + b'{"type":"entry",,"id"', "SESSION_INVALID_JSON"),
        (HEADER + line("e1", None, "m1") + b"\xff\xfe{", "SESSION_INVALID_UTF8"),
        (HEADER + line("e2", "e1", "m2"), "SESSION_PARENT_NOT_FOUND"),
        (b'{"type":"session","ver', "SESSION_INVALID_HEADER"),
    ],
)
async def test_everything_else_wrong_stays_a_coded_error_and_the_file_is_kept(
    path: Path, data: bytes, code: str
) -> None:
    path.write_bytes(data)
    await rejects(code, SessionStore.load(path))
    assert path.read_bytes() == data
    assert stray(path.parent) == []
    with pytest.raises(SessionStoreError) as caught:
        await SessionStore.load(path)
    assert caught.value.code == code  # not SESSION_IN_USE: a failed load holds nothing


async def test_a_file_changed_behind_the_store_is_still_an_error(path: Path) -> None:
    store = await SessionStore.create(path)
    with path.open("ab") as handle:
        handle.write(line("x1", None, "outsider"))
    await rejects(
        "SESSION_FILE_CHANGED", store.append(None, {"id": "m1", "role": "user", "content": "x"})
    )
    await store.close()


async def test_the_old_formats_leftovers_are_cleaned_up(path: Path) -> None:
    data = HEADER + line("e1", None, "m1")
    path.write_bytes(data)
    os.link(path, f"{path}.pify-session-recovery")  # a crash between link and cleanup
    Path(f"{path}.pify-session-999999999-0b1e6c1a-5d7c-4a59-9a55-0f3f2a8e2c11").write_bytes(data)
    Path(f"{path}.pify-session-restore-999999999-1c2d").write_bytes(data)
    (path.parent / "unrelated.txt").write_text("kept")
    store = await SessionStore.load(path)
    assert [entry.id for entry in store.entries] == ["e1"]
    assert stray(path.parent) == ["unrelated.txt"]
    await store.close()


async def test_an_old_marker_without_its_file_is_put_back(path: Path) -> None:
    data = HEADER + line("e1", None, "m1")
    marker = Path(f"{path}.pify-session-recovery")
    marker.write_bytes(data)
    store = await SessionStore.load(path)
    assert [entry.id for entry in store.entries] == ["e1"]
    assert path.read_bytes() == data
    assert not marker.exists()
    await store.close()


# --- one writer per file -----------------------------------------------------------------------


async def test_a_second_writer_in_this_process_is_refused_at_once(path: Path) -> None:
    first = await SessionStore.create(path)
    error = await rejects("SESSION_IN_USE", SessionStore.load(path))
    assert str(path) in str(error)
    await first.append(None, {"id": "m1", "role": "user", "content": "still mine"})
    await first.close()
    await first.close()  # idempotent
    assert first.closed
    await rejects("SESSION_CLOSED", first.append(None, {"id": "m2", "role": "user", "content": ""}))
    async with await SessionStore.load(path) as second:
        assert ids_of(second.entries) == ["m1"]
    assert second.closed


async def test_readers_never_wait_for_the_writer(path: Path) -> None:
    store = await SessionStore.create(path)
    await store.append(None, {"id": "m1", "role": "user", "content": "listed"})
    (listed,) = list_sessions(path.parent)
    assert listed.entry_count == 1
    assert listed.error is None
    snapshot = await SessionStore.read(path)
    assert [entry.id for entry in snapshot.entries] == [entry.id for entry in store.entries]
    await store.close()


HOLDER: Final = """
import asyncio, sys
from tether.agent.session import SessionStore

async def main():
    store = await SessionStore.load(sys.argv[1])
    parent = store.entries[-1].id if store.entries else None
    for number in range(5):
        message = {"id": f"c{number}", "role": "user", "content": "x"}
        parent = (await store.append(parent, message)).id
        print(f"ack c{number}", flush=True)
    print("holding", flush=True)
    await asyncio.to_thread(sys.stdin.readline)
    await store.close()

asyncio.run(main())
"""

PROBE: Final = """
import asyncio, sys
from tether.agent.session import SessionStore, SessionStoreError

async def main():
    try:
        store = await SessionStore.load(sys.argv[1])
    except SessionStoreError as error:
        print(error.code, error.message)
    else:
        print("loaded")
        await store.close()

asyncio.run(main())
"""


async def test_a_second_process_is_refused_at_once_and_no_entry_is_lost(path: Path) -> None:
    path.write_bytes(HEADER)
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-c", HOLDER, str(path),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert child.stdin is not None
    assert child.stdout is not None
    acknowledged: list[str] = []
    async with asyncio.timeout(GUARD):
        while (text := (await child.stdout.readline()).decode().strip()) != "holding":
            assert text.startswith("ack "), text
            acknowledged.append(text.removeprefix("ack "))
        error = await rejects("SESSION_IN_USE", SessionStore.load(path))
        assert str(path) in error.message
        runtime_error: TetherRuntimeError | None = None
        try:
            await create_runtime(
                {
                    "cwd": path.parent,
                    "session": {"path": path.name, "mode": "resume"},
                    "model": ScriptedModel([text_reply("hi")]),
                }
            )
        except TetherRuntimeError as caught:
            runtime_error = caught
        assert runtime_error is not None
        assert runtime_error.code == "RUNTIME_SESSION_IN_USE"
        assert str(path) in str(runtime_error)
        child.stdin.write(b"done\n")
        await child.stdin.drain()
        assert await child.wait() == 0
    assert acknowledged == [f"c{n}" for n in range(5)]
    store = await SessionStore.load(path)
    assert ids_of(store.entries) == acknowledged
    await store.close()


async def test_a_writer_here_refuses_another_process(path: Path) -> None:
    store = await SessionStore.create(path)
    async with asyncio.timeout(GUARD):
        probe = await asyncio.create_subprocess_exec(
            sys.executable, "-c", PROBE, str(path), stdout=asyncio.subprocess.PIPE
        )
        output, _ = await probe.communicate()
    assert output.decode().startswith("SESSION_IN_USE ")
    assert str(path) in output.decode()
    await store.close()
    async with asyncio.timeout(GUARD):
        probe = await asyncio.create_subprocess_exec(
            sys.executable, "-c", PROBE, str(path), stdout=asyncio.subprocess.PIPE
        )
        output, _ = await probe.communicate()
    assert output.decode().strip() == "loaded"


# --- kill -9 -----------------------------------------------------------------------------------


class Zygote:
    """The crash child (``tests/session_crash_child.py``) and its stdout, read line by line
    with a guard."""

    def __init__(self, path: Path) -> None:
        # Not measured by coverage (the store's code is measured in this process): tracing
        # would only slow the workers down.
        env = {name: value for name, value in os.environ.items() if "COVERAGE" not in name}
        self.process = subprocess.Popen(
            [sys.executable, str(CHILD), str(path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
        )
        assert self.process.stdout is not None
        self._out = self.process.stdout.fileno()
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._out, selectors.EVENT_READ)
        self._buffer = b""

    def send(self, command: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(command.encode() + b"\n")
        self.process.stdin.flush()

    def line(self) -> str:
        deadline = time.monotonic() + GUARD
        while b"\n" not in self._buffer:
            if not self._selector.select(max(0.0, deadline - time.monotonic())):
                pytest.fail("the crash child went quiet")
            chunk = os.read(self._out, 65536)
            if not chunk:
                pytest.fail("the crash child exited")
            self._buffer += chunk
        text, _, self._buffer = self._buffer.partition(b"\n")
        return text.decode()

    def close(self) -> None:
        self._selector.close()
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(GUARD)
        assert self.process.stdout is not None
        self.process.stdout.close()


@contextmanager
def zygote(path: Path) -> Generator[Zygote]:
    child = Zygote(path)
    try:
        yield child
    finally:
        child.close()


def worker_round(
    child: Zygote, command: str, kill_after: int | None, delay: float = 0.0
) -> tuple[list[str], bool]:
    """Start a worker; SIGKILL it ``delay`` seconds after its ``kill_after``-th
    acknowledgement (``None``: it dies on its own). Returns every acknowledged message ID
    and whether its load repaired a tear.

    The delay is not a wait for anything: it only picks where in its next batch (staging,
    the write, the fsync) the worker dies, so the kills land at random points."""
    child.send(command)
    text = child.line()
    assert text.startswith("pid "), text
    pid = int(text.removeprefix("pid "))
    acknowledged: list[str] = []
    repaired = False
    killed = False
    while True:
        if not killed and kill_after is not None and len(acknowledged) >= kill_after:
            time.sleep(delay)
            os.kill(pid, signal.SIGKILL)
            killed = True
        text = child.line()
        if text == f"dead {pid}":
            return acknowledged, repaired
        kind, _, rest = text.partition(" ")
        if kind == "ack":
            acknowledged.extend(rest.split())
        elif kind == "loaded":
            repaired = rest == "1"
        else:
            os.kill(pid, signal.SIGKILL)
            pytest.fail(f"the worker failed: {text}")


def check_file(path: Path, acknowledged: list[str]) -> bool:
    """The file loads (as the writer: a torn last line is repaired), holds every acknowledged
    message in order, and is alone in its directory; whether a tear was repaired."""

    async def load() -> tuple[list[str], bool]:
        store = await SessionStore.load(
            path, SessionStoreOptions(limits=SessionLimits.for_coding())
        )
        try:
            found = ids_of(store.entries)
            return found, store.recovered is not None
        finally:
            await store.close()

    found, repaired = asyncio.run(load())
    position = {message_id: index for index, message_id in enumerate(found)}
    missing = [message_id for message_id in acknowledged if message_id not in position]
    assert not missing, f"acknowledged but lost: {missing[:5]}"
    order = [position[message_id] for message_id in acknowledged]
    assert order == sorted(order)
    assert stray(path.parent) == []
    return repaired


MODES: Final = ("go",) * 5 + ("die-in-write",) * 3 + ("die-before-fsync", "die-after-fsync")
"""How a round's worker dies: killed by the test at a random moment (``go``), or by itself
at a random byte of a write, or around an fsync (see ``tests/session_crash_child.py``)."""


def crash_rounds(folder: Path, rounds: int, seed: int) -> dict[str, int]:
    rng = random.Random(seed)
    counts = {"rounds": 0, "repaired": 0, "acknowledged": 0}
    files = 0
    while counts["rounds"] < rounds:
        files += 1
        directory = folder / f"file-{files}"
        directory.mkdir()
        path = directory / "session.jsonl"
        path.write_bytes(HEADER)
        acknowledged: list[str] = []
        with zygote(path) as child:
            for _ in range(min(10, rounds - counts["rounds"])):
                counts["rounds"] += 1
                mode = rng.choice(MODES)
                acked, worker_repaired = worker_round(
                    child,
                    f"{mode} {seed}-{counts['rounds']}",
                    rng.randint(0, 3) if mode == "go" else None,
                    rng.uniform(0, 0.004),
                )
                acknowledged.extend(acked)
                counts["acknowledged"] += len(acked)
                counts["repaired"] += worker_repaired + check_file(path, acknowledged)
    return counts


def test_kill_9_at_random_points_loses_no_acknowledged_entry(tmp_path: Path) -> None:
    counts = crash_rounds(tmp_path, 200, seed=26)
    assert counts["rounds"] == 200
    assert counts["acknowledged"] >= 200  # the kills came after real work, not only at start
    assert counts["repaired"] >= 20  # and many inside a write: their torn lines were cut


@pytest.mark.soak
def test_kill_9_soak(tmp_path: Path) -> None:
    counts = crash_rounds(tmp_path, 5_000, seed=int(time.time()))
    print(counts)
    assert counts["rounds"] == 5_000


@pytest.mark.parametrize("mode", ["die-in-write", "die-before-fsync", "die-after-fsync"])
def test_a_death_inside_a_write_or_around_its_fsync_is_repaired(tmp_path: Path, mode: str) -> None:
    path = tmp_path / "session.jsonl"
    path.write_bytes(HEADER)
    with zygote(path) as child:
        acknowledged, _ = worker_round(child, f"{mode} 1", None)
        before = path.read_bytes()
        repaired = check_file(path, acknowledged)
    assert len(acknowledged) >= 1
    if mode == "die-in-write":
        assert repaired  # half a batch was on disk: its torn last line was dropped
        assert len(path.read_bytes()) < len(before)
    else:
        assert not repaired  # whole lines (not acknowledged, but complete) are kept
