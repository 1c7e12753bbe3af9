"""The index of where each chat session was started: ``<sessions dir>/cwd-index.json``.

``tether chat -c`` continues the last session started in the current directory, and
``/sessions`` shows each session's directory; both read this index (the format: the
``tether.cli.chat`` docstring, "Sessions"). Imports nothing heavy.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from pathlib import Path
from typing import Final, cast

__all__ = [
    "INDEX_NAME",
    "MAX_INDEXED_DIRECTORIES",
    "MAX_INDEX_BYTES",
    "chat_data_dir",
    "last_session",
    "remember_session",
    "session_directories",
]

INDEX_NAME: Final = "cwd-index.json"
"""The index's file name, in the sessions directory."""
MAX_INDEX_BYTES: Final = 4 << 20
"""The largest ``cwd-index.json`` read (a larger one is ignored, then rewritten)."""
MAX_INDEXED_DIRECTORIES: Final = 2000
"""The most sessions whose directory the index remembers (the newest)."""


def chat_data_dir(environ: dict[str, str] | None = None) -> Path:
    """``<user data directory>/tether``: the parent of ``default_sessions_dir()``, computed
    here by the same XDG rules so that the first prompt needs no session module."""
    env = os.environ if environ is None else environ
    if sys.platform == "darwin":  # pragma: no cover - macOS only
        base = Path.home() / "Library" / "Application Support"
    elif os.name == "nt":  # pragma: no cover - Windows only
        local = env.get("LOCALAPPDATA", "")
        base = Path(local) if os.path.isabs(local) else Path.home() / "AppData" / "Local"
    else:
        xdg = env.get("XDG_DATA_HOME", "")
        base = Path(xdg) if os.path.isabs(xdg) else Path.home() / ".local" / "share"
    return base / "tether"


def _strings(value: object) -> dict[str, str]:
    if not isinstance(value, dict):
        return {}
    return {
        str(key): item
        for key, item in cast("dict[object, object]", value).items()
        if isinstance(item, str)
    }


def _read_index_file(path: Path) -> tuple[dict[str, str], dict[str, str]]:
    """The index's sessions by directory and directories by session; empty when it is
    missing, is not a regular file (a FIFO cannot hold the chat: ``tether.coding.reading``), is
    larger than ``MAX_INDEX_BYTES``, or is not the JSON it should be (nested too deeply
    included)."""
    from tether.coding.reading import UnreadableFile, read_regular_file

    try:
        data: object = json.loads(read_regular_file(path, limit=MAX_INDEX_BYTES))
    except (UnreadableFile, ValueError, RecursionError):
        return {}, {}
    if not isinstance(data, dict):
        return {}, {}
    index = cast("dict[str, object]", data)
    return _strings(index.get("sessions")), _strings(index.get("directories"))


def _read_index(path: Path) -> dict[str, str]:
    return _read_index_file(path)[0]


def last_session(sessions_dir: Path, cwd: Path) -> str | None:
    """The ID of the last session started in ``cwd`` (by the index), if its file exists."""
    found = _read_index(sessions_dir / INDEX_NAME).get(os.path.abspath(cwd))
    if found is None or not (sessions_dir / f"{found}.jsonl").is_file():
        return None
    return found


def session_directories(sessions_dir: Path) -> dict[str, str]:
    """The directory each session was started in, by session ID, as far as the index knows
    (its ``directories``: the last ``MAX_INDEXED_DIRECTORIES`` sessions a chat created)."""
    return _read_index_file(sessions_dir / INDEX_NAME)[1]


def remember_session(sessions_dir: Path, cwd: Path, session_id: str) -> None:
    """Make ``session_id`` the last session of ``cwd`` in the index, and ``cwd`` its
    directory (an atomic rewrite, mode 0600); a failure to write is ignored (``-c`` then
    finds the previous one)."""
    path = sessions_dir / INDEX_NAME
    sessions, directories = _read_index_file(path)
    sessions[os.path.abspath(cwd)] = session_id
    directories.pop(session_id, None)
    directories[session_id] = os.path.abspath(cwd)
    kept = dict(list(directories.items())[-MAX_INDEXED_DIRECTORIES:])
    temporary = path.with_name(f".{INDEX_NAME}.{os.getpid()}.tmp")
    try:
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            index = {"version": 1, "sessions": sessions, "directories": kept}
            json.dump(index, file, indent=1)  # directories oldest first: the order is kept
            file.write("\n")
        os.replace(temporary, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
