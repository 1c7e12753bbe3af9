"""The sessions directory: where sessions live by default (``default_sessions_dir``) and
what is in it (``list_sessions``, one ``SessionInfo`` per ``*.jsonl`` file)."""

# The package's modules share their underscore helpers with one another.
# pyright: reportPrivateUsage=false

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Final, Literal, TypeAlias

from tether._base.dataclass import dataclass
from tether.agent.session.files import session_io
from tether.agent.session.journal import _read_snapshot
from tether.agent.session.parse import parse_session
from tether.agent.session.records import (
    MessageEntry,
    SessionEntry,
    SessionLimits,
    SessionStoreError,
    SessionStoreErrorCode,
)
from tether.protocol import AssistantMessage, UserMessage

__all__ = ["SessionInfo", "SessionListError", "default_sessions_dir", "list_sessions"]


def default_sessions_dir() -> Path:
    """Where sessions live by default: ``<user data directory>/tether/sessions``.

    The data directory follows the XDG Base Directory rules: ``$XDG_DATA_HOME`` when it is
    set to an absolute path, else ``~/.local/share``; on macOS ``~/Library/Application
    Support``; on Windows ``%LOCALAPPDATA%``. Nothing is created.
    """
    if sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    elif os.name == "nt":  # pragma: no cover - exercised on Windows only
        local = os.environ.get("LOCALAPPDATA", "")
        base = Path(local) if os.path.isabs(local) else Path.home() / "AppData" / "Local"
    else:
        xdg = os.environ.get("XDG_DATA_HOME", "")
        base = Path(xdg) if os.path.isabs(xdg) else Path.home() / ".local" / "share"
    return base / "tether" / "sessions"


SessionListError: TypeAlias = SessionStoreErrorCode | Literal["SESSION_UNREADABLE"]
"""Why ``list_sessions`` could not read a file: a store code, or ``SESSION_UNREADABLE`` when
the operating system refused (permissions, a vanished file)."""

_TITLE_LENGTH: Final = 80


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionInfo:
    """One session file, as ``list_sessions`` saw it.

    ``title`` is the first line of the first non-blank user message, cut to 80 characters
    (``None`` if there is none); ``last_message`` the first line of the last message with
    text (a user's, or an assistant's text), cut the same way. When the file could not be
    read, ``error`` says why and the session fields are ``None``/0.
    """

    path: Path
    id: str | None
    created_at: str | None
    modified_at: float
    entry_count: int
    title: str | None
    error: SessionListError | None = None
    error_message: str | None = None
    last_message: str | None = None


def _title_of(entries: tuple[SessionEntry, ...]) -> str | None:
    for entry in entries:
        if type(entry) is MessageEntry and type(entry.message) is UserMessage:
            text = entry.message.content.strip()
            if text:
                return text.splitlines()[0].strip()[:_TITLE_LENGTH]
    return None


def _last_message_of(entries: tuple[SessionEntry, ...]) -> str | None:
    for entry in reversed(entries):
        if type(entry) is not MessageEntry:
            continue
        message = entry.message
        if type(message) is UserMessage:
            text = message.content.strip()
        elif type(message) is AssistantMessage:
            text = "".join(block.text for block in message.content if block.type == "text")
            text = text.strip()
        else:
            continue
        if text:
            return text.splitlines()[0].strip()[:_TITLE_LENGTH]
    return None


def _unreadable(path: Path, modified: float, code: SessionListError, message: str) -> SessionInfo:
    """The listing entry of a file that is not a readable session."""
    return SessionInfo(
        path=path,
        id=None,
        created_at=None,
        modified_at=modified,
        entry_count=0,
        title=None,
        error=code,
        error_message=message,
    )


def _inspect(path: Path, limits: SessionLimits) -> SessionInfo:
    name = str(path)
    modified = 0.0
    try:
        info = session_io.lstat(name)
        modified = info.st_mtime
        data = _read_snapshot(os.path.abspath(name), limits)
        parsed = parse_session(data, limits)
    except SessionStoreError as error:
        return _unreadable(path, modified, error.code, error.message)
    except OSError as error:
        return _unreadable(path, modified, "SESSION_UNREADABLE", str(error))
    return SessionInfo(
        path=path,
        id=parsed.header.id,
        created_at=parsed.header.created_at,
        modified_at=modified,
        entry_count=len(parsed.entries),
        title=_title_of(parsed.entries),
        last_message=_last_message_of(parsed.entries),
    )


def _created_seconds(info: SessionInfo) -> float | None:
    if info.created_at is None:
        return None
    import datetime  # here, not at import: only listing sessions needs it

    try:
        moment = datetime.datetime.fromisoformat(info.created_at)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return moment.timestamp()


def list_sessions(
    directory: str | os.PathLike[str] | None = None, *, limits: SessionLimits | None = None
) -> tuple[SessionInfo, ...]:
    """Every ``*.jsonl`` file in ``directory`` (default ``default_sessions_dir()``), newest
    first: by the header's ``createdAt`` (an ISO-8601 time; a file without a readable one
    sorts by its modification time), then modification time, then path.

    Each file is read and parsed in full by the loading rules (with ``limits``), without
    its lock: a session another process is writing is listed as it is (a line being written
    is not counted), never waited for. A file that cannot be read is listed with its
    ``error`` code (``SESSION_INVALID_JSON``, ``SESSION_UNREADABLE``, ...), never dropped. A
    missing directory lists nothing. The files are read here, synchronously: call it on a
    worker thread (``asyncio.to_thread``) from a busy event loop.
    """
    folder = default_sessions_dir() if directory is None else Path(directory)
    bounds = SessionLimits() if limits is None else limits
    try:
        names = sorted(os.listdir(folder))
    except FileNotFoundError:
        return ()
    found = [_inspect(folder / name, bounds) for name in names if name.endswith(".jsonl")]

    def newest(info: SessionInfo) -> tuple[float, float, str]:
        created = _created_seconds(info)
        return (info.modified_at if created is None else created, info.modified_at, str(info.path))

    return tuple(sorted(found, key=newest, reverse=True))
