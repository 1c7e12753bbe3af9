"""Opening a session file: the disk work behind ``SessionStore.create``, ``load`` and
``read``, each run on a worker thread, and what it hands the store (``_Opened``). Kept apart
from the store so the store holds only its state, its reads and its write path."""

# The package's modules share their underscore helpers with one another.
# pyright: reportPrivateUsage=false, reportUnusedFunction=false

from __future__ import annotations

import os
from typing import Final

from tether._base.dataclass import dataclass
from tether._base.strings import LazyPattern, is_non_empty
from tether.agent.session.blobs import (
    UnavailableImage,
    _ImageLoader,
    _remove_temporaries,
    blob_directory_of,
)
from tether.agent.session.files import _capture_root, _Root
from tether.agent.session.format import _check_line, _describe, _header_line
from tether.agent.session.journal import (
    _create_journal,
    _Journal,
    _open_journal,
    _read_snapshot,
)
from tether.agent.session.legacy import _is_regular, _marker_of, _remove_leftovers, _restore_marker
from tether.agent.session.linkage import _Index
from tether.agent.session.parse import _parse
from tether.agent.session.records import SessionHeader, SessionLimits, SessionRecovery, _fail
from tether.agent.session.store_options import SessionStoreOptions, _default_id

__all__: list[str] = []

_SAFE_SESSION_ID: Final = LazyPattern(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


@dataclass(frozen=True, slots=True, kw_only=True)
class _Opened:
    """A session file as opened: its folder, the writer's journal (``None`` for a read-only
    snapshot), the header and records, what a load repaired and the images it could not
    load."""

    root: _Root
    journal: _Journal | None
    header: SessionHeader
    index: _Index
    recovered: SessionRecovery | None = None
    unavailable: tuple[UnavailableImage, ...] = ()


def _release(opened: _Opened) -> None:
    """Let go of what an open made (a cancelled caller never sees it)."""
    if opened.journal is not None:  # pragma: no branch - only writers are released
        opened.journal.close()


def _new_header(options: SessionStoreOptions) -> tuple[SessionHeader, bytes]:
    """The header a ``create`` writes and its line: the given or a fresh session ID and the
    clock's time, both non-blank (``SESSION_INVALID_HEADER``), within the limits."""
    session_id = _default_id() if options.session_id is None else options.session_id
    if not is_non_empty(session_id):
        raise _fail("SESSION_INVALID_HEADER", "Session ID must be a non-empty string")
    created_at = options.clock()
    if not is_non_empty(created_at):
        raise _fail(
            "SESSION_INVALID_HEADER", "Session creation timestamp must be a non-empty string"
        )
    header = SessionHeader(id=session_id, created_at=created_at)
    data = _check_line(_header_line(header), options.limits)
    if len(data) > options.limits.max_file_bytes:
        raise _fail("SESSION_FILE_TOO_LARGE", "Serialized session exceeds the file limit")
    return header, data


def _file_session_id(options: SessionStoreOptions) -> str:
    """The given or a fresh session ID, which must be a safe file name (``create_in``):
    1-128 characters of ``A-Z a-z 0-9 . _ -`` starting with a letter or digit."""
    session_id = _default_id() if options.session_id is None else options.session_id
    if type(session_id) is not str or _SAFE_SESSION_ID.fullmatch(session_id) is None:
        raise _fail(
            "SESSION_INVALID_HEADER",
            f"Session ID {_describe(session_id)} cannot name a session file",
        )
    return session_id


def _create_file(path: str, header: SessionHeader, data: bytes) -> _Opened:
    """Create ``path`` holding the header line ``data``, locked (``create``'s disk work)."""
    root = _capture_root(os.path.dirname(path))
    if _is_regular(_marker_of(path)):
        raise _fail(
            "SESSION_ALREADY_EXISTS",
            "An old recovery marker of this session file exists (load puts it back)",
        )
    return _Opened(
        root=root, journal=_create_journal(path, data, root), header=header, index=_Index()
    )


def _load_file(path: str, limits: SessionLimits) -> _Opened:
    """Open ``path`` as its one writer and parse it; a torn last line is cut off the file
    (``load``'s disk work)."""
    images = _ImageLoader(blob_directory_of(path))
    _restore_marker(path)
    root = _capture_root(os.path.dirname(path))
    journal, data = _open_journal(path, root, limits)
    try:
        header, index, torn = _parse(data, limits, images)
        recovered = None
        if torn:
            journal.cut(len(data) - torn)
            recovered = SessionRecovery(dropped_bytes=torn)
        journal.ends_line = data[journal.size - 1 : journal.size] == b"\n"
        _remove_leftovers(path)
        _remove_temporaries(blob_directory_of(path))
    except BaseException:
        journal.close()
        raise
    return _Opened(
        root=root,
        journal=journal,
        header=header,
        index=index,
        recovered=recovered,
        unavailable=tuple(images.unavailable),
    )


def _read_file(path: str, limits: SessionLimits) -> _Opened:
    """Parse ``path`` as it is now, without the lock (``read``'s disk work)."""
    images = _ImageLoader(blob_directory_of(path))
    root = _capture_root(os.path.dirname(path))
    header, index, _ = _parse(_read_snapshot(path, limits), limits, images)
    return _Opened(
        root=root,
        journal=None,
        header=header,
        index=index,
        unavailable=tuple(images.unavailable),
    )
