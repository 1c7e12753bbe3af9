"""Reading a file a person named (a config file, an evaluation's tasks or baseline, the chat's
session index, a context file) without letting it hold or flood the command.

The file is opened read-only and non-blocking (a FIFO with no writer cannot hold the open),
checked with ``fstat`` before a byte is read (a FIFO, a device such as ``/dev/zero``, a
directory is refused), and read up to a limit (a larger file is refused, or, for
``read_file_head``, cut). Every problem is an ``UnreadableFile`` whose ``kind`` says which and
whose ``reason`` is a short phrase to show after the path.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Final, Literal, TypeAlias

__all__ = ["UnreadableFile", "UnreadableKind", "read_file_head", "read_regular_file"]

UnreadableKind: TypeAlias = Literal["missing", "not-regular", "too-large", "failed"]
"""Why a file was not read: nothing at the path, not a regular file, larger than the limit,
or the system refused (permissions, an I/O error, a name too long...)."""

_FLAGS: Final = (
    os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
)  # fmt: skip
_CHUNK: Final = 1 << 16


class UnreadableFile(Exception):
    """A file was not read: ``kind`` (``UnreadableKind``) and ``reason`` (a short phrase)."""

    def __init__(self, kind: UnreadableKind, reason: str) -> None:
        super().__init__(reason)
        self.kind: UnreadableKind = kind
        self.reason = reason


def _failed(error: OSError) -> UnreadableFile:
    if isinstance(error, FileNotFoundError):
        return UnreadableFile("missing", error.strerror or "not found")
    return UnreadableFile("failed", error.strerror or type(error).__name__)


def read_file_head(path: Path | str, *, limit: int) -> tuple[bytes, int]:
    """The first ``limit`` bytes of the regular file at ``path`` and its size. Raises
    ``UnreadableFile``."""
    try:
        descriptor = os.open(path, _FLAGS)
    except OSError as error:
        raise _failed(error) from None
    try:
        info = os.fstat(descriptor)
        size = info.st_size
        if not stat.S_ISREG(info.st_mode):
            raise UnreadableFile("not-regular", "not a regular file")
        chunks: list[bytes] = []
        wanted = limit
        while wanted > 0:
            chunk = os.read(descriptor, min(wanted, _CHUNK))
            if not chunk:
                break
            chunks.append(chunk)
            wanted -= len(chunk)
        return b"".join(chunks), size
    except OSError as error:
        raise _failed(error) from None
    finally:
        os.close(descriptor)


def read_regular_file(path: Path | str, *, limit: int) -> bytes:
    """All the bytes of the regular file at ``path``, at most ``limit`` of them (a larger one
    is ``too-large``). Raises ``UnreadableFile``."""
    data, size = read_file_head(path, limit=limit + 1)
    if size > limit or len(data) > limit:
        raise UnreadableFile("too-large", f"larger than {limit} bytes")
    return data
