"""The writer the crash tests kill: a zygote that forks one appending worker per request.

Run as ``python tests/session_crash_child.py PATH``. The zygote imports tether once, then reads
commands from stdin, one a line:

* ``go SEED``: fork a worker and print ``pid N`` (before the worker prints anything). The
  worker loads ``PATH`` as the one writer
  (``SessionStore.load``, which repairs a torn last line), prints ``loaded R`` (R: 1 when
  it repaired one), then appends in a loop: batches of one to three user messages with IDs
  ``SEED-K`` and sizes from 100 bytes to 256 KiB, each batch one ``append_many`` (one
  fsync). After each batch is acknowledged (the call returned) it prints ``ack ID ...``.
  Any failure prints ``error TEXT`` and ends the worker.
* ``die-in-write SEED`` / ``die-before-fsync SEED`` / ``die-after-fsync SEED``: a worker
  that appends zero to two acknowledged batches (chosen by the seed), then kills itself with
  SIGKILL inside the next one's write (after a random part of its bytes, at least one),
  just before its fsync, or just after it.

When a worker ends (killed by the test, or on its own) the zygote reaps it and prints
``dead N``. Every line is shorter than ``PIPE_BUF``, so lines from the zygote and a worker
never interleave. ``quit`` (or end of input) ends the zygote.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import sys
from typing import Final

from tether.agent.session import (
    SessionLimits,
    SessionStore,
    SessionStoreOptions,
    SessionTree,
    session_io,
)
from tether.protocol import UserMessage

SIZES: Final = (100, 100, 100, 100, 100, 100, 2_000, 16_000, 16_000, 262_144)


def say(line: str) -> None:
    os.write(1, (line + "\n").encode())


def batch(rng: random.Random, seed: str, counter: list[int]) -> list[UserMessage]:
    messages: list[UserMessage] = []
    for _ in range(rng.randint(1, 3)):
        counter[0] += 1
        text = "é" * (rng.choice(SIZES) // 2)  # two UTF-8 bytes each: tears can split one
        messages.append(UserMessage(id=f"{seed}-{counter[0]}", content=text))
    return messages


def arm(mode: str, rng: random.Random) -> None:
    """Make the next write (or fsync) of this process kill it, as ``mode`` says."""
    real_write = session_io.write
    real_fsync = session_io.fsync

    def write(fd: int, data: bytes | memoryview, offset: int) -> int:
        if mode == "die-in-write":
            real_write(fd, data[: rng.randint(1, len(data))], offset)
            os.kill(os.getpid(), signal.SIGKILL)
        return real_write(fd, data, offset)

    def fsync(fd: int) -> None:
        if mode == "die-before-fsync":
            os.kill(os.getpid(), signal.SIGKILL)
        real_fsync(fd)
        if mode == "die-after-fsync":
            os.kill(os.getpid(), signal.SIGKILL)

    setattr(session_io, "write", write)  # noqa: B010 (the seam the tests patch)
    setattr(session_io, "fsync", fsync)  # noqa: B010


async def work(path: str, mode: str, seed: str) -> None:
    rng = random.Random(seed)
    options = SessionStoreOptions(limits=SessionLimits.for_coding())
    store = await SessionStore.load(path, options)
    say(f"loaded {int(store.recovered is not None)}")
    tree = SessionTree(store)
    counter = [0]
    armed_after = 0 if mode == "go" else rng.randint(1, 3)
    while True:
        if armed_after:
            armed_after -= 1
            if not armed_after:
                arm(mode, rng)
        messages = batch(rng, seed, counter)
        await tree.append_many(messages)
        say("ack " + " ".join(message.id for message in messages))


def worker(path: str, mode: str, seed: str) -> None:
    try:
        asyncio.run(work(path, mode, seed))
    except BaseException as error:  # report anything: the test fails on it
        say(f"error {type(error).__name__}: {str(error)[:200]}")
    os._exit(1)


def main() -> None:
    path = sys.argv[1]
    for line in sys.stdin:
        command, _, seed = line.strip().partition(" ")
        if command == "quit":
            break
        # The worker waits until "pid N" is out: the test reads that line first, and after a
        # fork either process may run first.
        ready, go = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(go)
            os.read(ready, 1)
            os.close(ready)
            worker(path, command, seed)
        os.close(ready)
        say(f"pid {pid}")
        os.write(go, b"!")
        os.close(go)
        os.waitpid(pid, 0)
        say(f"dead {pid}")


if __name__ == "__main__":
    main()
