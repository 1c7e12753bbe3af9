"""Sessions with images survive ``kill -9``: a real child process appends messages with
images and is killed (by the test, at an arbitrary point, or by itself in the middle of a
blob's write or just before its rename); the file then loads, every acknowledged message has
its images, and no line ever names a blob that is not there (``unavailable_images`` is
empty): the blobs are durable before the line that references them."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path
from typing import Final

import pytest

from tether.agent.session import MessageEntry, SessionStore
from tether.protocol import UserMessage

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

TESTS: Final = Path(__file__).resolve().parents[1]
BOUND: Final = 60.0

CHILD: Final = """
import asyncio, os, signal, sys
sys.path.insert(0, sys.argv[3])
from image_support import png
from tether.agent.session import SessionStore, session_io
from tether.protocol import ImageBlock, UserMessage

path, mode = sys.argv[1], sys.argv[2]
real_write, real_rename = session_io.write, session_io.rename

def write(fd, data, offset):
    if mode == "die-in-blob-write" and bytes(data[:4]) == b"\\x89PNG":
        real_write(fd, data[: max(1, len(data) // 2)], offset)
        os.kill(os.getpid(), signal.SIGKILL)
    return real_write(fd, data, offset)

def rename(source, destination):
    if mode == "die-before-rename":
        os.kill(os.getpid(), signal.SIGKILL)
    return real_rename(source, destination)

async def main():
    store = await SessionStore.create(path, {"session_id": "s"})
    parent = None
    for number in range(1, 10_000):
        if number == 3:
            session_io.write, session_io.rename = write, rename
        image = ImageBlock.from_bytes(png(number, 7) + b"\\0" * 50_000)
        message = UserMessage(id=f"u{number}", content=f"m{number}", images=(image,))
        parent = (await store.append(parent, message)).id
        os.write(1, f"ack {number}\\n".encode())

asyncio.run(main())
"""


async def run_child(path: Path, mode: str, kill_after: int | None) -> list[int]:
    """The acknowledged message numbers of a child killed after ``kill_after`` acks (or
    that killed itself)."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        CHILD,
        str(path),
        mode,
        str(TESTS),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stdout is not None
    acked: list[int] = []
    async with asyncio.timeout(BOUND):
        while True:
            line = await process.stdout.readline()
            if not line:
                break
            acked.append(int(line.split()[1]))
            if kill_after is not None and len(acked) == kill_after:
                os.kill(process.pid, signal.SIGKILL)
                break
        status = await process.wait()
        stderr = await process.communicate()
    assert status == -signal.SIGKILL, stderr
    return acked


@pytest.mark.parametrize(
    ("mode", "kill_after"),
    [("run", 5), ("run", 9), ("die-in-blob-write", None), ("die-before-rename", None)],
)
async def test_a_killed_writer_leaves_a_session_whose_images_all_load(
    tmp_path: Path, mode: str, kill_after: int | None
) -> None:
    path = tmp_path / "s.jsonl"
    acked = await run_child(path, mode, kill_after)
    if kill_after is None:
        assert acked == [1, 2]  # the third append died inside its blob
        names = os.listdir(f"{path}.blobs")
        assert len([name for name in names if name.startswith(".tmp-")]) == 1  # harmless
        assert len(path.read_text().splitlines()) == 3  # the header and two lines
    async with await SessionStore.load(path) as store:
        assert store.unavailable_images == ()
        messages = [e.message for e in store.entries if isinstance(e, MessageEntry)]
        numbers = [int(m.id[1:]) for m in messages]
        assert numbers[: len(acked)] == acked  # every acknowledged message is there
        assert len(numbers) <= len(acked) + 1  # at most the one being written besides
        for message, number in zip(messages, numbers, strict=True):
            assert type(message) is UserMessage
            (image,) = message.images
            assert (image.width, image.height) == (number, 7)
        await store.append(store.entries[-1].id, UserMessage(id="after", content="goes on"))
    names = os.listdir(f"{path}.blobs")
    assert [name for name in names if name.startswith(".tmp-")] == []  # load removed them
