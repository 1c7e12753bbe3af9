"""The confined, iterative walk of ``list_files`` and ``grep``, and the budget it spends.

``walk(ws, start, include_ignored=..., budget=...)`` yields ``(path, name, dir_fd)`` for every
entry under the workspace directory ``start`` that is not a directory, in order: a
directory's entries sorted by name, then its subdirectories, each the same way. ``path`` is
workspace-relative (segments joined by ``/``); ``dir_fd`` is an open descriptor of the
entry's directory, valid until the next entry is asked for.

Confinement: the walk starts from the verified root descriptor (``Workspace.open_root``) and
opens every directory relative to its parent with ``O_NOFOLLOW | O_DIRECTORY``, checking that
it is the directory that was listed (same ``(st_dev, st_ino)``), so a symlink or another
directory swapped in meanwhile is skipped, never followed. A symlink to a directory is
neither entered nor listed; a symlink to anything else is listed (``grep`` never reads it).

Depth: the walk keeps its own stack (no recursion, so a tree thousands of levels deep is no
``RecursionError``) and at most ``WALK_OPEN_DIRECTORIES`` descriptors open: a deeper
directory's ancestors are closed and reopened, one checked level at a time, when the walk
comes back to them.

Budget: ``SearchBudget`` counts entries visited, glob steps and bytes read; the walk ends at
the first entry after it ran out or after ``stop`` was set (an abort), and ``note`` says
which limit ended it. The observer's ``"search:entry"`` stage is called (on the walking
thread) before each entry is yielded.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

from tether.tools.coding.workspace import CodingToolError, Workspace

__all__ = [
    "IGNORED_DIRECTORIES",
    "WALK_OPEN_DIRECTORIES",
    "SearchBudget",
    "walk",
]

IGNORED_DIRECTORIES: Final = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "node_modules",
        ".venv",
        "venv",
        "__pycache__",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".tox",
        ".nox",
        ".idea",
        ".cache",
    }
)
WALK_OPEN_DIRECTORIES: Final = 64
"""Directory descriptors one walk keeps open at most (besides the root's)."""

_DIRECTORY_FLAGS: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK


class SearchBudget:
    """What one search may spend before it stops, and what it has spent.

    ``spend_entry``, ``spend_steps`` and ``spend_bytes`` add to a counter and return whether
    the search may go on: ``False`` once a counter is over its limit (``note`` then says
    which) or once ``stop`` is set (an abort).
    """

    __slots__ = (
        "bytes",
        "entries",
        "max_bytes",
        "max_entries",
        "max_steps",
        "note",
        "steps",
        "stop",
    )

    def __init__(self, stop: threading.Event, *, entries: int, steps: int, bytes: int) -> None:
        self.stop = stop
        self.max_entries = entries
        self.max_steps = steps
        self.max_bytes = bytes
        self.entries = 0
        self.steps = 0
        self.bytes = 0
        self.note: str | None = None

    def spend_entry(self) -> bool:
        self.entries += 1
        if self.entries > self.max_entries and self.note is None:
            self.note = f"visited {self.max_entries} entries"
        return self.note is None and not self.stop.is_set()

    def spend_steps(self, steps: int) -> bool:
        self.steps += steps
        if self.steps > self.max_steps and self.note is None:
            self.note = f"took {self.max_steps} pattern-matching steps"
        return self.note is None and not self.stop.is_set()

    def spend_bytes(self, count: int) -> bool:
        self.bytes += count
        if self.bytes > self.max_bytes and self.note is None:
            self.note = f"read {self.max_bytes} bytes"
        return self.note is None and not self.stop.is_set()


@dataclass(slots=True)
class _Frame:
    """A directory being walked: its descriptor (``-1`` while closed), identity, segments
    from the root and the subdirectories still to enter (last first)."""

    fd: int
    identity: tuple[int, int]
    segments: tuple[str, ...]
    pending: list[tuple[str, tuple[int, int]]]


def _identity(info: os.stat_result) -> tuple[int, int]:
    return (info.st_dev, info.st_ino)


def _open_checked(name: str, parent: int, identity: tuple[int, int] | None) -> int:
    """``name`` in ``parent`` as a directory, not through a symlink; ``-1`` when it is gone
    or is no longer the directory ``identity`` names."""
    try:
        fd = os.open(name, _DIRECTORY_FLAGS, dir_fd=parent)
    except OSError:
        return -1
    if identity is not None and _identity(os.fstat(fd)) != identity:
        os.close(fd)
        return -1
    return fd


class _Walk:
    """The stack of one walk. ``frames[first_open:]`` have open descriptors, the ones below
    were closed to stay within ``WALK_OPEN_DIRECTORIES``."""

    __slots__ = ("budget", "first_open", "frames", "include_ignored", "root", "ws")

    def __init__(
        self, ws: Workspace, root: int, include_ignored: bool, budget: SearchBudget
    ) -> None:
        self.ws = ws
        self.root = root
        self.include_ignored = include_ignored
        self.budget = budget
        self.frames: list[_Frame] = []
        self.first_open = 0

    def close(self) -> None:
        for frame in self.frames:
            if frame.fd >= 0:
                os.close(frame.fd)
                frame.fd = -1
        self.frames.clear()

    def push(self, frame: _Frame) -> list[str]:
        """Enter ``frame``: list it, keep its subdirectories for later; returns the names of
        its other entries, sorted."""
        self.frames.append(frame)
        if len(self.frames) - self.first_open > WALK_OPEN_DIRECTORIES:
            shallow = self.frames[self.first_open]
            os.close(shallow.fd)
            shallow.fd = -1
            self.first_open += 1
        files: list[str] = []
        directories: list[tuple[str, tuple[int, int]]] = []
        try:
            with os.scandir(frame.fd) as entries:
                for entry in entries:
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            if self.include_ignored or entry.name not in IGNORED_DIRECTORIES:
                                info = entry.stat(follow_symlinks=False)
                                directories.append((entry.name, _identity(info)))
                        elif not (entry.is_symlink() and entry.is_dir()):
                            files.append(entry.name)
                    except OSError:  # gone meanwhile
                        continue
        except OSError:  # unreadable: nothing to list
            pass
        directories.sort(reverse=True)
        frame.pending = directories
        files.sort()
        return files

    def pop(self) -> None:
        frame = self.frames.pop()
        if frame.fd >= 0:
            os.close(frame.fd)
        self.first_open = min(self.first_open, len(self.frames))

    def _levels(self) -> list[tuple[str, tuple[int, int] | None]]:
        """The names (and identities to check) from the root down to the top frame."""
        first = self.frames[0]
        levels: list[tuple[str, tuple[int, int] | None]] = [(s, None) for s in first.segments]
        if levels:
            levels[-1] = (levels[-1][0], first.identity)
        levels += [(frame.segments[-1], frame.identity) for frame in self.frames[1:]]
        return levels

    def reopen(self) -> int:
        """Reopen the top frame and up to half a window of frames below it, from the root,
        one checked level at a time. Returns ``-1``, or the index of the first frame that is
        gone or is not the directory that was listed (it and all below it are unreachable)."""
        top = len(self.frames) - 1
        keep = max(0, top - WALK_OPEN_DIRECTORIES // 2 + 1)
        below = len(self.frames[0].segments)  # levels above frame 0 (its start segments)
        fd = self.root
        for level, (name, identity) in enumerate(self._levels()):
            child = _open_checked(name, fd, identity)
            position = level - below  # the frame the parent descriptor belongs to
            if fd != self.root and position < keep:
                os.close(fd)
            if child < 0:
                self.close_from(keep)
                return max(0, position + 1)
            fd = child
            if position + 1 >= keep:
                self.frames[position + 1].fd = fd
        if not self.frames[0].segments and keep == 0:
            self.frames[0].fd = os.dup(self.root)
        self.first_open = keep
        return -1

    def entries(self, files: list[str], frame: _Frame) -> Iterator[tuple[str, str, int]]:
        """``files`` of ``frame`` as the walk yields them, each entry charged to the budget.

        Without an observer (every search outside tests) a loop that never looks for one
        runs: a ``grep`` of a large tree spends a few microseconds per file, so a test per
        entry shows; ``tests/tools/test_search.py`` checks both loops yield the same entries.
        """
        prefix = "".join(f"{segment}/" for segment in frame.segments)
        spend, observer, fd = self.budget.spend_entry, self.ws.observer, frame.fd
        if observer is None:  # the usual case: one test per directory, not one per entry
            for name in files:
                if not spend():
                    return
                yield prefix + name, name, fd
            return
        for name in files:
            if not spend():
                return
            path = prefix + name
            observer("search:entry", path)
            yield path, name, fd

    def run(self, top: _Frame) -> Iterator[tuple[str, str, int]]:
        yield from self.entries(self.push(top), top)
        while self.frames and self.budget.note is None and not self.budget.stop.is_set():
            frame = self.frames[-1]
            if not frame.pending:
                self.pop()
                continue
            if frame.fd < 0:
                lost = self.reopen()
                if lost >= 0:  # gone, or not the directory that was listed: leave it
                    while len(self.frames) > lost:
                        self.pop()
                    continue
            name, identity = frame.pending.pop()
            if not self.budget.spend_entry():
                return
            fd = _open_checked(name, frame.fd, identity)
            if fd >= 0:
                child = _Frame(fd, identity, (*frame.segments, name), [])
                yield from self.entries(self.push(child), child)

    def close_from(self, index: int) -> None:
        """Close the descriptors of ``frames[index:]`` (a reopen that failed half way)."""
        for frame in self.frames[index:]:
            if frame.fd >= 0:
                os.close(frame.fd)
                frame.fd = -1
        self.first_open = len(self.frames)


def walk(
    ws: Workspace, start: tuple[str, ...], *, include_ignored: bool, budget: SearchBudget
) -> Iterator[tuple[str, str, int]]:
    """Every non-directory under ``start`` (see the module docstring); ``FILE_NOT_FOUND``
    when ``start`` is not a directory of the workspace (a symlinked one included)."""
    root = ws.open_root()
    walker = _Walk(ws, root, include_ignored, budget)
    try:
        fd = root
        for segment in start:
            child = _open_checked(segment, fd, None)
            if fd != root:
                os.close(fd)
            fd = child
            if fd < 0:
                raise CodingToolError(
                    "FILE_NOT_FOUND", f"{'/'.join(start)} is not a directory in the workspace"
                )
        if fd == root:
            fd = os.dup(root)
        top = _Frame(fd, _identity(os.fstat(fd)), start, [])
        yield from walker.run(top)
    finally:
        walker.close()
        os.close(root)
