"""The old format's leftovers: before sessions were append-only, every commit wrote a whole
new file to ``<path>.pify-session-<pid>-<uuid>``, hard-linked the live file to the recovery
marker ``<path>.pify-session-recovery`` and renamed the new file over the live one. A crash
could leave the marker and a temporary copy behind (and the old version then refused the
file). Every rename was atomic and every copy was fsynced first, so the live file is always
a complete generation: the leftovers are removed when a writer meets them, and a marker
whose live file is missing is put back in its place."""

# The package's modules share their underscore helpers with one another.
# pyright: reportPrivateUsage=false, reportUnusedFunction=false

from __future__ import annotations

import contextlib
import os
import stat
from typing import Final

from tether._base.strings import LazyPattern
from tether.agent.session.files import _sync_directory, session_io

__all__: list[str] = []

_MARKER_SUFFIX: Final = ".pify-session-recovery"
_TEMPORARY: Final = LazyPattern(r"\.pify-session-(?:restore-)?([0-9]+)-[0-9A-Fa-f-]+")


def _marker_of(path: str) -> str:
    return path + _MARKER_SUFFIX


def _is_regular(path: str) -> bool:
    try:
        return stat.S_ISREG(session_io.lstat(path).st_mode)
    except OSError:
        return False


def _restore_marker(path: str) -> bool:
    """Put an old recovery marker back where its session file is missing; whether it did."""
    marker = _marker_of(path)
    if not _is_regular(marker):
        return False
    try:
        session_io.lstat(path)
    except FileNotFoundError:
        session_io.rename(marker, path)
        _sync_directory(os.path.dirname(path))
        return True
    return False


def _process_gone(pid: int) -> bool:
    if pid == os.getpid():
        return True  # this version never makes them: an old process's, with our number
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):  # no such process (or no such number)
        return True
    except PermissionError:  # another user's live process
        return False
    return False


def _remove_leftovers(path: str) -> None:
    """Remove the marker and the temporaries of ``path`` that an old version left (only
    regular files; a temporary only when the process that made it is gone). Best effort:
    a leftover that cannot be removed stays, harmless."""
    folder, name = os.path.split(path)
    removed = False
    try:
        names = session_io.listdir(folder)
    except OSError:
        return
    for other in names:
        if not other.startswith(name + ".pify-session-"):
            continue
        suffix = other[len(name) :]
        found = _TEMPORARY.fullmatch(suffix)
        if suffix != _MARKER_SUFFIX and (found is None or not _process_gone(int(found[1]))):
            continue
        candidate = os.path.join(folder, other)
        if _is_regular(candidate):
            try:
                session_io.remove(candidate)
            except OSError:  # best effort: gone meanwhile, or not ours to remove
                continue
            removed = True
    if removed:
        with contextlib.suppress(OSError):
            _sync_directory(folder)
