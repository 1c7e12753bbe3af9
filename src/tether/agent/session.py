"""Checkpoint 10: persistent, branchable session trees in JSON-lines files.

A session is one file. Line 1 is the header, every further line one record; each line is
compact JSON (``separators=(",", ":")``, UTF-8, no ASCII escaping) ending in ``\\n``::

    {"type":"session","version":1,"id":"session-001","createdAt":"2026-08-26T00:00:01.000Z"}
    {"type":"entry","version":1,"id":"e1","parentId":null,"timestamp":"...","message":{...}}

Keys are written in that order; a message is written by ``tether.to_json`` (so protocol v2
blocks, a thinking block's ``signature`` and ``redacted``, persist and reload byte for byte)
and read back by ``tether.from_json``. The rules, in short:

* **A tree, append-only.** Every record has an ``id`` and a ``parentId`` (``null`` for a root;
  several roots are allowed) naming an *earlier* record. Nothing is edited or deleted.
  ``SessionTree`` keeps an active leaf (a pointer only: ``move_to`` writes nothing); its
  active branch is the path from a root to that leaf. A new tree starts at the last record.
* **Crash-safe commits.** ``append`` and ``flush`` never write into the live file. They write
  the whole next generation to an exclusive temp sibling ``<path>.pify-session-<pid>-<uuid>``
  (``0600``), fsync it, hard-link the live file to the recovery marker
  ``<path>.pify-session-recovery``, rename the temp over the path, check what was installed,
  fsync the directory and remove the marker. A failure after the rename rolls the old
  generation back from the marker. If even that fails, the marker is kept, the store is
  poisoned (every later call raises the same ``SESSION_ROLLBACK_FAILED``) and ``load``
  refuses the file while the marker exists; ``SessionStore.recover`` restores it. Memory
  changes only after a commit succeeded, so a failed call leaves file and memory on the old
  generation, and later calls proceed.
* **Identity checks.** The parent directory (device, inode, birth time where the platform has
  one, and its real path) and the file (identity and size) are recorded, and checked before
  and during every commit: a directory swapped underneath is ``SESSION_ROOT_CHANGED``, a file
  rewritten behind the store's back (another writer, another store on the same file) is
  ``SESSION_FILE_CHANGED``. Cleanup removes only paths whose identity still matches.
* **Fail-closed loading.** The parser accepts CRLF line ends and a valid last record without
  a final newline, and ignores only an unterminated last line that is a syntactically valid,
  merely *incomplete* prefix of a JSON object (a torn write: ``{"type":"entry","id":"cut``).
  Everything else is an error with a stable code: invalid UTF-8 (anywhere, the tail
  included), malformed JSON, ``NaN``/``Infinity``, a wrong header, unknown keys, an
  unsupported ``version``, a message ``from_json`` rejects or one missing a field the writer
  always writes, lone surrogates, duplicate IDs, a parent that does not precede its child,
  and a branch whose tool results do not link to calls *on that branch*
  (``validate_transcript`` over the branch, ``MISSING_TOOL_RESULT`` ignored: a pending call
  is fine). The next commit rewrites the file canonically, which drops a recovered tail.
  Loading is linear in the file: messages go through a decoder compiled from the protocol's
  annotations (the same mapping as ``from_json``, checked against it by the property tests),
  and linkage is extended record by record (same verdict as ``validate_transcript``, which
  still names the diagnostic in the error), instead of revalidating every branch from its
  root as the workshop does.
* **Bounded.** ``SessionLimits`` caps line bytes, file bytes and records, on load and before
  any commit touches the disk. The defaults are the workshop's (64 KiB, 4 MiB, 4,096);
  ``SessionLimits.for_coding()`` is the profile a real coding session needs.
* **Serialized.** Each store's operations run one at a time in the order they start (a
  store-local ``asyncio.Lock``), and all stores on one file in this process share a lock keyed
  by the file's canonical path (``SessionStore.canonical_path_of``), so two stores on one file
  never interleave: the second sees ``SESSION_FILE_CHANGED`` instead of overwriting the first.
  A ``SessionTree`` serializes its own ``move_to``/``append`` calls the same way.

File I/O is synchronous inside the ``async`` methods: session files are small and local, and
an operation holding both locks then runs from start to finish in one event-loop step (an
append to a 4,096-record session takes a few milliseconds, most of it fsync). Every
operating-system call goes through two seams, so tests inject faults at any step: the
per-store ``SessionFileSystem`` (``lstat``, ``link``, ``rename``, ``remove``: marker detection,
marker link and checks, renames, removals) and the module-level ``session_io`` adapter
(``open``, ``read``, ``write``, ``fsync``, ``fstat``, ``close``, ``lstat``, ``stat``,
``realpath``: everything else). Errors the operating system raises while writing propagate
as ``OSError``; everything wrong with a file's bytes or a caller's values is a
``SessionStoreError`` with one of the seventeen workshop codes.

**tether's extension of format version 1: compaction records.** A second record kind stores a
context compaction in the same tree::

    {"type":"compaction","version":1,"id":"c1","parentId":"e9","timestamp":"...",
     "summary":{"id":"summary-1","content":"..."},"firstKeptEntryId":"e7",
     "unitsBefore":9000,"unitsAfter":1200}

``firstKeptEntryId`` names a record on the compaction's own branch (its ancestors), or is
``null`` when nothing is kept. ``SessionTree.active_context()`` walks the active branch: at the
*last* compaction on it, the context is that compaction's summary plus the messages from
``firstKeptEntryId`` (inclusive) up to the compaction plus every message after it; with no
compaction it is every message on the branch (``active_messages``). Tool linkage is checked
over that context: the kept messages must link among themselves, and later results must
answer calls the context still holds. A reader that knows only the workshop's format rejects
such a file (``SESSION_INVALID_RECORD``) rather than misreading it.

Also beyond the workshop: ``default_sessions_dir()`` (the user's data directory, XDG rules),
``SessionStore.create_in`` (one ``<session-id>.jsonl`` per session in a ``0700`` directory),
``list_sessions`` (newest first, every ``*.jsonl`` listed, a broken one with its error code),
``parse_session`` (the parser on bytes) and ``SessionStore.recover``.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime
import errno
import json
import os
import re
import stat
import sys
import uuid
from collections.abc import AsyncGenerator, Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import (
    Annotated,
    Any,
    Final,
    Literal,
    NoReturn,
    TypeAlias,
    TypeGuard,
    TypeVar,
    cast,
    get_args,
    get_origin,
)

from tether._errors import TetherError
from tether._text import is_non_empty
from tether._types import type_of
from tether.jsonvalue import JsonObject, JsonValueError, freeze_json, thaw_json
from tether.messages import validate_transcript
from tether.protocol import (
    MAX_SAFE_INTEGER,
    AssistantMessage,
    Message,
    ProtocolValue,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    assert_never,
    to_json,
)
from tether.protocol._fields import (
    discriminant_of,
    field_hints,
    members_of,
    omitted_while_default,
)
from tether.protocol.codec import camel_case

__all__ = [
    "MAX_SESSION_FILE_BYTES",
    "MAX_SESSION_LINE_BYTES",
    "MAX_SESSION_RECORDS",
    "RECOVERY_MARKER_SUFFIX",
    "SESSION_FORMAT_VERSION",
    "CompactionEntry",
    "CompactionSummary",
    "MessageEntry",
    "ParsedSession",
    "SessionContext",
    "SessionEntry",
    "SessionFileSystem",
    "SessionHeader",
    "SessionIO",
    "SessionInfo",
    "SessionLimits",
    "SessionListError",
    "SessionStore",
    "SessionStoreError",
    "SessionStoreErrorCode",
    "SessionStoreOptions",
    "SessionTree",
    "default_sessions_dir",
    "list_sessions",
    "parse_session",
    "session_io",
]

_T = TypeVar("_T")

SESSION_FORMAT_VERSION: Final = 1
"""The ``version`` of every header and record this module reads and writes."""
MAX_SESSION_LINE_BYTES: Final = 65_536
"""Workshop cap on one line's bytes (without its ``\\n``; a CR before it is not counted)."""
MAX_SESSION_FILE_BYTES: Final = 4_194_304
"""Workshop cap on a session file's bytes."""
MAX_SESSION_RECORDS: Final = 4_096
"""Workshop cap on the records (entries and compactions) after the header."""
RECOVERY_MARKER_SUFFIX: Final = ".pify-session-recovery"
"""Appended to a session path to name its recovery marker (the workshop's name, kept so
files interoperate with the TypeScript tools)."""

_TEMP_INFIX: Final = ".pify-session-"
_RESTORE_INFIX: Final = ".pify-session-restore-"


# --- errors ------------------------------------------------------------------------------------

SessionStoreErrorCode: TypeAlias = Literal[
    "SESSION_ALREADY_EXISTS",
    "SESSION_DUPLICATE_ENTRY_ID",
    "SESSION_ENTRY_NOT_FOUND",
    "SESSION_FILE_CHANGED",
    "SESSION_FILE_TOO_LARGE",
    "SESSION_INVALID_HEADER",
    "SESSION_INVALID_JSON",
    "SESSION_INVALID_MESSAGE",
    "SESSION_INVALID_RECORD",
    "SESSION_INVALID_TOOL_LINKAGE",
    "SESSION_INVALID_UTF8",
    "SESSION_LINE_TOO_LARGE",
    "SESSION_PARENT_NOT_FOUND",
    "SESSION_RECORD_LIMIT",
    "SESSION_ROLLBACK_FAILED",
    "SESSION_ROOT_CHANGED",
    "SESSION_UNSUPPORTED_VERSION",
]
"""The seventeen stable codes of ``SessionStoreError`` (the workshop's, exactly)."""


class SessionStoreError(TetherError):
    """A session file, record or call was rejected, with a stable ``code``.

    Raised for everything wrong with a file's bytes or a caller's values, never a raw
    ``KeyError``, ``UnicodeError`` or ``RecursionError``. A commit or rollback failure keeps
    the underlying errors as ``__cause__`` (an ``ExceptionGroup`` when there are several).
    """

    def __init__(self, code: SessionStoreErrorCode, message: str) -> None:
        super().__init__(code, message)

    @property
    def code(self) -> SessionStoreErrorCode:
        """The stable error code (one of ``SessionStoreErrorCode``)."""
        return cast("SessionStoreErrorCode", self._code)


def _fail(code: SessionStoreErrorCode, message: str) -> SessionStoreError:
    return SessionStoreError(code, message)


def _short(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else f"{text[:limit]}..."


# --- records -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionHeader:
    """Line 1 of a session file: ``{"type":"session","version":1,"id":...,"createdAt":...}``.

    ``created_at`` is what the store's clock said when the file was created (ISO-8601 UTC
    by default; any non-blank string is kept as written).
    """

    type: Literal["session"] = "session"
    version: Literal[1] = 1
    id: str
    created_at: str


@dataclass(frozen=True, slots=True, kw_only=True)
class MessageEntry:
    """A record holding one transcript message (the workshop's ``type:"entry"`` record).

    ``parent_id`` is ``None`` for a root, else the ID of an earlier record.
    """

    type: Literal["entry"] = "entry"
    version: Literal[1] = 1
    id: str
    parent_id: str | None
    timestamp: str
    message: Message


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionSummary:
    """The text that stands for the messages a compaction replaced (``{"id","content"}``)."""

    id: str
    content: str


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionEntry:
    """A record of one context compaction (tether's extension of format version 1).

    ``first_kept_entry_id`` names a record on this compaction's own branch (an ancestor)
    from which messages stay verbatim, or ``None`` when none do; ``units_before`` and
    ``units_after`` are the context's size around the compaction (see
    ``tether.agent.compaction``). See the module docstring for how contexts are built.
    """

    type: Literal["compaction"] = "compaction"
    version: Literal[1] = 1
    id: str
    parent_id: str | None
    timestamp: str
    summary: CompactionSummary
    first_kept_entry_id: str | None
    units_before: int
    units_after: int


SessionEntry: TypeAlias = MessageEntry | CompactionEntry
"""Every record kind a session tree holds."""


def _slot_filler(cls: type, *names: str) -> Callable[..., Any]:
    """A function ``fill(*values)`` that builds ``cls`` by setting its slots directly: the
    named fields from the arguments, every other field its default. Generated from the
    dataclass fields (as ``tether.protocol._trusted`` does), so a new field cannot be left
    unset: a required field that is not named is an error when the module loads. Only for
    values whose parts are already checked; the tests compare it with the constructor."""
    namespace: dict[str, Any] = {"new": object.__new__, "cls": cls}
    lines = [f"def fill({', '.join(names)}):", "    made = new(cls)"]
    for field in dataclasses.fields(cls):
        namespace[f"set_{field.name}"] = cls.__dict__[field.name].__set__
        if field.name in names:
            value = field.name
        elif field.default is not dataclasses.MISSING:
            namespace[f"default_{field.name}"] = field.default
            value = f"default_{field.name}"
        else:  # pragma: no cover - a programming error, raised at import
            raise TypeError(f"{cls.__name__}.{field.name} must be filled")
        lines.append(f"    set_{field.name}(made, {value})")
    lines.append("    return made")
    exec("\n".join(lines), namespace)  # generated from the dataclass fields, see above
    fill: Callable[..., Any] = namespace["fill"]
    return fill


_message_entry: Callable[[str, str | None, str, Message], MessageEntry] = _slot_filler(
    MessageEntry, "id", "parent_id", "timestamp", "message"
)
"""A ``MessageEntry`` from parts the parser has checked (the constructor's result, faster)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionContext:
    """What a model should see for a branch: an optional summary and the messages.

    ``compaction`` is the last compaction on the branch (``None`` when there is none, and
    then ``summary`` is ``None`` and ``messages`` is every message on the branch).
    """

    summary: CompactionSummary | None
    messages: tuple[Message, ...]
    compaction: CompactionEntry | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ParsedSession:
    """A session file's header and records, as ``parse_session`` read them."""

    header: SessionHeader
    entries: tuple[SessionEntry, ...]


# --- options -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionLimits:
    """The bounds a store enforces on load and before every commit. Positive ``int`` fields.

    * ``max_line_bytes``: bytes of one line, without its ``\\n``;
    * ``max_file_bytes``: bytes of the whole file;
    * ``max_records``: records after the header.

    The defaults are the workshop's values exactly; see ``for_coding`` for real sessions.
    """

    max_line_bytes: int = MAX_SESSION_LINE_BYTES
    max_file_bytes: int = MAX_SESSION_FILE_BYTES
    max_records: int = MAX_SESSION_RECORDS

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if type(value) is not int or not 1 <= value <= MAX_SAFE_INTEGER:
                raise TypeError(f"SessionLimits.{field.name} must be a positive safe integer")

    @classmethod
    def for_coding(cls) -> SessionLimits:
        """Limits sized for real coding sessions (the workshop's are too small for them).

        * 64 MiB per line: one record holds one message, and a message the real-model loop
          accepts (``RunLimits.for_real_models()``) may carry 4,194,304 code points of text
          and thinking plus tool-argument strings of 4,194,304 code points (a whole file in a
          ``write_file`` call). At up to 4 UTF-8 bytes per code point, or 6 for a control
          character JSON escapes as ``\\u00XX``, that is at most 24 MiB each; 64 MiB holds
          both with room for the record around them. A 64 KiB line cannot even hold a tool
          result carrying a 64 KiB file (JSON escaping makes it longer).
        * 1 GiB per file: a long session of hundreds of turns with large tool results reaches
          tens to hundreds of MiB; the cap exists to refuse a runaway file, not to cut a
          session short. Note that every commit rewrites the whole file (that is what makes
          it crash-safe), so an append costs time linear in the file's size;
          ``benchmarks/bench_session.py`` measures it.
        * 1,048,576 records: four records a tool turn for 250,000 turns.
        """
        return cls(
            max_line_bytes=64 * 1024 * 1024,
            max_file_bytes=1024 * 1024 * 1024,
            max_records=1_048_576,
        )


def _force_remove(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.remove(path)


def _check_callable(owner: str, name: str, value: object) -> None:
    if not callable(value):
        raise TypeError(f"{owner}.{name} must be callable (got {type(value).__name__})")


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionFileSystem:
    """The filesystem operations a store's commits and recovery use; replace any of them to
    inject faults (the workshop's ``fileSystem`` seam).

    * ``lstat(path)``: marker detection, and checks of the marker and the installed file;
    * ``link(source, destination)``: hard-links the live file to the recovery marker (must
      raise ``FileExistsError`` when the destination exists);
    * ``rename(source, destination)``: installs a generation (replacing the destination);
    * ``remove(path)``: deletes a temp or marker (a missing path is not an error).

    Calls are synchronous. The defaults are ``os.lstat``, ``os.link``, ``os.replace`` and a
    force-remove.
    """

    lstat: Callable[[str], os.stat_result] = os.lstat
    link: Callable[[str, str], None] = os.link
    rename: Callable[[str, str], None] = os.replace
    remove: Callable[[str], None] = _force_remove

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            _check_callable("SessionFileSystem", field.name, getattr(self, field.name))


_DEFAULT_FILE_SYSTEM: Final = SessionFileSystem()


class SessionIO:
    """Every operating-system call a store makes outside ``SessionFileSystem``.

    The store looks up the module-level ``session_io`` instance at each call, so a test can
    patch one method (``monkeypatch.setattr(session_io, "fsync", failing)``) to make that
    step fail. Each method is a thin wrapper over the ``os`` function of the same name.
    """

    def open(self, path: str, flags: int, mode: int = 0o777) -> int:
        """``os.open``."""
        return os.open(path, flags, mode)

    def read(self, fd: int, size: int) -> bytes:
        """``os.read``."""
        return os.read(fd, size)

    def write(self, fd: int, data: bytes | memoryview) -> int:
        """``os.write``: returns how many bytes were written."""
        return os.write(fd, data)

    def fsync(self, fd: int) -> None:
        """``os.fsync`` (also of a directory's descriptor)."""
        os.fsync(fd)

    def fstat(self, fd: int) -> os.stat_result:
        """``os.fstat``."""
        return os.fstat(fd)

    def close(self, fd: int) -> None:
        """``os.close``."""
        os.close(fd)

    def lstat(self, path: str) -> os.stat_result:
        """``os.lstat``: identity checks of the session file and temp files."""
        return os.lstat(path)

    def stat(self, path: str) -> os.stat_result:
        """``os.stat``: identity checks of the parent directory (a symlink is followed)."""
        return os.stat(path)

    def realpath(self, path: str) -> str:
        """``os.path.realpath(path, strict=True)``."""
        return os.path.realpath(path, strict=True)


session_io: Final = SessionIO()
"""The I/O adapter every store routes its ``os`` calls through (patch it in tests)."""


def _default_clock() -> str:
    now = datetime.datetime.now(datetime.UTC)
    return now.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _default_id() -> str:
    return str(uuid.uuid4())


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionStoreOptions:
    """How a store names, stamps and bounds what it writes.

    * ``session_id``: the header ID ``create`` writes (default: a random UUID); checked by
      ``create``: blank or not a string is ``SESSION_INVALID_HEADER``;
    * ``clock``: returns each timestamp (default: ISO-8601 UTC with milliseconds, ``Z``);
    * ``id_factory``: returns each new record ID (default: a random UUID);
    * ``file_system``: the ``SessionFileSystem`` seam;
    * ``limits``: the ``SessionLimits`` (default: the workshop's).

    ``create``/``load`` also accept a plain ``dict`` with these keys.
    """

    session_id: str | None = None
    clock: Callable[[], str] = _default_clock
    id_factory: Callable[[], str] = _default_id
    file_system: SessionFileSystem = _DEFAULT_FILE_SYSTEM
    limits: SessionLimits = SessionLimits()

    def __post_init__(self) -> None:
        _check_callable("SessionStoreOptions", "clock", self.clock)
        _check_callable("SessionStoreOptions", "id_factory", self.id_factory)
        if type(self.file_system) is not SessionFileSystem:
            raise TypeError("SessionStoreOptions.file_system must be a SessionFileSystem")
        if type(self.limits) is not SessionLimits:
            raise TypeError("SessionStoreOptions.limits must be a SessionLimits")


_OPTION_KEYS: Final = frozenset(field.name for field in dataclasses.fields(SessionStoreOptions))


def _snapshot_options(options: object) -> SessionStoreOptions:
    """Options as a ``SessionStoreOptions``, reading a ``dict`` without running caller code.

    A ``dict`` subclass or an options subclass may run code on every read (the workshop's
    accessor properties), so it is refused as ``SESSION_INVALID_HEADER`` without a read.
    """
    if options is None:
        return SessionStoreOptions()
    kind = type(options)
    if kind is SessionStoreOptions:
        return cast(SessionStoreOptions, options)
    if kind is dict:
        source = cast("dict[object, object]", options)
        for key in source:
            if type(key) is not str:
                raise TypeError(f"unknown session option of type {type(key).__name__}")
            if key not in _OPTION_KEYS:
                raise TypeError(f"unknown session option {key!r}")
        return SessionStoreOptions(**cast("dict[str, Any]", source))
    if isinstance(options, dict | SessionStoreOptions):
        raise _fail(
            "SESSION_INVALID_HEADER",
            f"Session options must be a plain dict or SessionStoreOptions (got {kind.__name__})",
        )
    raise TypeError(f"Session options must be a dict or SessionStoreOptions (got {kind.__name__})")


# --- JSON lines --------------------------------------------------------------------------------

_ENCODER: Final = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
_dumps: Final = _ENCODER.encode


def _reject_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


_DECODER: Final = json.JSONDecoder(parse_constant=_reject_constant)
_raw_decode: Final = _DECODER.raw_decode
_JSON_SPACE: Final = " \t\n\r"


def _decode_json(text: str) -> object:
    """``json.loads(text)`` (``NaN``/``Infinity`` refused), skipping ``JSONDecoder.decode``'s
    two whitespace scans in the usual case of a line without surrounding whitespace."""
    if text[:1] in _JSON_SPACE:  # "" included: let decode() report it
        return _DECODER.decode(text)
    value, end = _raw_decode(text)
    if end != len(text) and text[end:].strip(_JSON_SPACE):
        raise ValueError("Extra data after the JSON value")
    return value


_LONE_ESCAPE: Final = re.compile(rb"\\u[dD][89a-fA-F]")
_HEADER_KEYS: Final = frozenset({"type", "version", "id", "createdAt"})
_ENTRY_KEYS: Final = frozenset({"type", "version", "id", "parentId", "timestamp", "message"})
_COMPACTION_KEYS: Final = frozenset(
    {
        "type",
        "version",
        "id",
        "parentId",
        "timestamp",
        "summary",
        "firstKeptEntryId",
        "unitsBefore",
        "unitsAfter",
    }
)
_SUMMARY_KEYS: Final = frozenset({"id", "content"})


def _encode(text: str, code: SessionStoreErrorCode, what: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        raise _fail(code, f"{what} contains a lone surrogate") from None


def _header_line(header: SessionHeader) -> bytes:
    text = (
        f'{{"type":"session","version":1,"id":{_dumps(header.id)},'
        f'"createdAt":{_dumps(header.created_at)}}}\n'
    )
    return _encode(text, "SESSION_INVALID_HEADER", "Session header")


def _record_prefix(kind: str, entry_id: str, parent_id: str | None, timestamp: str) -> str:
    parent = "null" if parent_id is None else _dumps(parent_id)
    return (
        f'{{"type":"{kind}","version":1,"id":{_dumps(entry_id)},"parentId":{parent},'
        f'"timestamp":{_dumps(timestamp)}'
    )


def _message_bytes(message: Message) -> bytes:
    """The canonical JSON of a message (``to_json``), encoded; rejects lone surrogates."""
    try:
        text = _dumps(to_json(message))
    except (TypeError, ValueError) as error:  # pragma: no cover - protocol values are JSON
        raise _fail("SESSION_INVALID_MESSAGE", f"Session message is invalid: {error}") from None
    return _encode(text, "SESSION_INVALID_MESSAGE", "Session message")


def _entry_line(entry: SessionEntry, message: bytes | None = None) -> bytes:
    """The canonical line of a record (``message``: its message's bytes, when known)."""
    match entry:
        case MessageEntry():
            prefix = _record_prefix("entry", entry.id, entry.parent_id, entry.timestamp)
            head = _encode(prefix + ',"message":', "SESSION_INVALID_RECORD", "Session record")
            body = _message_bytes(entry.message) if message is None else message
            return head + body + b"}\n"
        case CompactionEntry():
            return _compaction_line(entry)
        case _:  # pragma: no cover - exhaustive
            return assert_never(entry)


def _compaction_line(compaction: CompactionEntry) -> bytes:
    first_kept = compaction.first_kept_entry_id
    text = (
        _record_prefix("compaction", compaction.id, compaction.parent_id, compaction.timestamp)
        + f',"summary":{{"id":{_dumps(compaction.summary.id)},'
        f'"content":{_dumps(compaction.summary.content)}}},'
        f'"firstKeptEntryId":{"null" if first_kept is None else _dumps(first_kept)},'
        f'"unitsBefore":{compaction.units_before},"unitsAfter":{compaction.units_after}}}\n'
    )
    return _encode(text, "SESSION_INVALID_RECORD", "Session compaction record")


def _check_line(line: bytes, limits: SessionLimits) -> bytes:
    if len(line) - 1 > limits.max_line_bytes:
        raise _fail("SESSION_LINE_TOO_LARGE", "Serialized session record exceeds the line limit")
    return line


# --- the incomplete-prefix recognizer ------------------------------------------------------------

_INCOMPLETE: Final = 0
_INVALID: Final = 1
_COMPLETE: Final = 2
_JSON_WHITESPACE: Final = frozenset(" \t\r\n")
_DIGITS: Final = frozenset("0123456789")
_NONZERO_DIGITS: Final = frozenset("123456789")
_HEX_DIGITS: Final = frozenset("0123456789abcdefABCDEF")
_SIMPLE_ESCAPES: Final = frozenset('"\\/bfnrt')
_STRING_RUN: Final = re.compile(r'[^"\\\x00-\x1f]*')
_DIGIT_RUN: Final = re.compile(r"[0-9]*")


def _run_end(pattern: re.Pattern[str], text: str, index: int) -> int:
    found = pattern.match(text, index)
    return index if found is None else found.end()


def _skip_whitespace(text: str, index: int) -> int:
    end = len(text)
    while index < end and text[index] in _JSON_WHITESPACE:
        index += 1
    return index


def _scan_string(text: str, index: int) -> tuple[int, int]:
    """Scan a string whose opening quote is at ``index``: ``(status, index after it)``."""
    end = len(text)
    index += 1
    while True:
        index = _run_end(_STRING_RUN, text, index)
        if index >= end:
            return _INCOMPLETE, index
        character = text[index]
        index += 1
        if character == '"':
            return _COMPLETE, index
        if character != "\\":
            return _INVALID, index  # a raw control character
        if index >= end:
            return _INCOMPLETE, index
        escape = text[index]
        index += 1
        if escape in _SIMPLE_ESCAPES:
            continue
        if escape != "u":
            return _INVALID, index
        for _ in range(4):
            if index >= end:
                return _INCOMPLETE, index
            if text[index] not in _HEX_DIGITS:
                return _INVALID, index
            index += 1


def _scan_literal(text: str, index: int, expected: str) -> tuple[int, int]:
    end = len(text)
    for character in expected:
        if index >= end:
            return _INCOMPLETE, index
        if text[index] != character:
            return _INVALID, index
        index += 1
    return _COMPLETE, index


def _scan_number(text: str, index: int) -> tuple[int, int]:
    end = len(text)
    if text[index] == "-":
        index += 1
        if index >= end:
            return _INCOMPLETE, index
    if text[index] == "0":
        index += 1
        if index < end and text[index] in _DIGITS:
            return _INVALID, index
    elif text[index] in _NONZERO_DIGITS:
        index = _run_end(_DIGIT_RUN, text, index)
    else:
        return _INVALID, index
    if index < end and text[index] == ".":
        index += 1
        if index >= end:
            return _INCOMPLETE, index
        if text[index] not in _DIGITS:
            return _INVALID, index
        index = _run_end(_DIGIT_RUN, text, index)
    if index < end and text[index] in "eE":
        index += 1
        if index < end and text[index] in "+-":
            index += 1
        if index >= end:
            return _INCOMPLETE, index
        if text[index] not in _DIGITS:
            return _INVALID, index
        index = _run_end(_DIGIT_RUN, text, index)
    return _COMPLETE, index


def _scan_key(text: str, index: int) -> tuple[int, int]:
    """A member's key and colon, ``index`` at the key's quote; stops before the value."""
    end = len(text)
    if text[index] != '"':
        return _INVALID, index
    status, index = _scan_string(text, index)
    if status != _COMPLETE:
        return status, index
    index = _skip_whitespace(text, index)
    if index >= end:
        return _INCOMPLETE, index
    if text[index] != ":":
        return _INVALID, index
    return _COMPLETE, index + 1


def _scan_object(text: str, index: int) -> int:
    """Scan the JSON object starting at ``text[index] == "{"``: ``_COMPLETE`` when it is a
    whole object, ``_INCOMPLETE`` when the text ends inside a valid prefix of one, else
    ``_INVALID``. The workshop's recursive recognizer with an explicit stack, so nesting as
    deep as a line allows cannot overflow Python's stack."""
    end = len(text)
    closers: list[str] = []  # "}" or "]" per open container
    while True:  # scan one value (the "{" at index is the first)
        index = _skip_whitespace(text, index)
        if index >= end:
            return _INCOMPLETE
        character = text[index]
        if character == "{" or character == "[":
            closer = "}" if character == "{" else "]"
            index = _skip_whitespace(text, index + 1)
            if index >= end:
                return _INCOMPLETE
            if text[index] != closer:
                closers.append(closer)
                if closer == "}":
                    status, index = _scan_key(text, index)
                    if status != _COMPLETE:
                        return status
                continue  # scan the container's first value
            index += 1  # an empty container: a complete value
        else:
            if character == '"':
                status, index = _scan_string(text, index)
            elif character == "t":
                status, index = _scan_literal(text, index, "true")
            elif character == "f":
                status, index = _scan_literal(text, index, "false")
            elif character == "n":
                status, index = _scan_literal(text, index, "null")
            elif character == "-" or character in _DIGITS:
                status, index = _scan_number(text, index)
            else:
                return _INVALID
            if status != _COMPLETE:
                return status
        # a value just completed: close containers or move to the next member
        while True:
            if not closers:
                return _COMPLETE
            index = _skip_whitespace(text, index)
            if index >= end:
                return _INCOMPLETE
            closer = closers[-1]
            delimiter = text[index]
            if delimiter == closer:
                closers.pop()
                index += 1
                continue
            if delimiter != ",":
                return _INVALID
            index = _skip_whitespace(text, index + 1)
            if index >= end:
                return _INCOMPLETE
            if text[index] == closer:
                return _INVALID  # a trailing comma
            if closer == "}":
                status, index = _scan_key(text, index)
                if status != _COMPLETE:
                    return status
            break


def _is_incomplete_object_prefix(text: str) -> bool:
    """True when ``text`` is a syntactically valid but unfinished prefix of a JSON object
    (a torn last line), False for a complete object, garbage, or an impossible prefix."""
    index = _skip_whitespace(text, 0)
    if index >= len(text) or text[index] != "{":
        return False
    return _scan_object(text, index) == _INCOMPLETE


# --- snapshots of messages and records ----------------------------------------------------------


class _Rejected(Exception):
    """Internal: a message's JSON form does not decode (the text says why)."""


_Decoder = Callable[[object], object]


def _reject(problem: str) -> NoReturn:
    raise _Rejected(problem)


def _pass(value: object) -> object:
    return value


def _decoder_for(hint: Any) -> _Decoder:
    """A decoder for values annotated ``hint``, derived from the protocol's annotations.

    The same mapping as ``tether.from_json`` (discriminated unions, tuples from lists,
    camelCase keys, the constructors' checks), compiled once per type instead of interpreted
    per value, and stricter in one rule of the file format: every field ``to_json`` always
    writes (every field but a v2 one) must be present, where ``from_json`` would fill in a
    default (a generated message ``id``, ``isError=False``). The property tests check it
    against ``from_json``.
    """
    if get_origin(hint) is Annotated:
        hint = get_args(hint)[0]
    members = members_of(hint)
    if len(members) > 1:
        optional = type(None) in members
        rest = [member for member in members if member is not type(None)]
        inner = _decoder_for(rest[0]) if len(rest) == 1 else _union_decoder(rest)
        if not optional:
            return inner
        return lambda value: None if value is None else inner(value)
    if get_origin(hint) is tuple:
        item = _decoder_for(get_args(hint)[0])

        def decode_tuple(value: Any) -> object:
            if type_of(value) is not list:
                _reject("must be an array")
            parts: list[object] = value
            return tuple([item(part) for part in parts])

        return decode_tuple
    if isinstance(hint, type) and issubclass(hint, ProtocolValue):
        return _class_decoder(hint)
    if hint is JsonObject:

        def decode_object(value: object) -> object:
            if type_of(value) is not dict:
                _reject("must be a JSON object")
            return value  # the constructor freezes it

        return decode_object
    return _pass  # scalars: the constructor checks them


def _union_decoder(members: list[Any]) -> _Decoder:
    table: dict[object, _Decoder] = {}
    keys: set[str] = set()
    for member in members:
        found = discriminant_of(member)
        if found is None:  # pragma: no cover - every protocol union is discriminated
            raise TypeError(f"{member!r} has no discriminant")
        keys.add(camel_case(found[0]))
        table[found[1]] = _class_decoder(member)
    if len(keys) != 1:  # pragma: no cover - every protocol union shares one key
        raise TypeError(f"union members disagree on their discriminant: {sorted(keys)}")
    (key,) = keys

    def decode_union(value: Any) -> object:
        if type_of(value) is not dict:
            _reject("must be a JSON object")
        source: dict[str, object] = value
        tag = source.get(key)
        decoder = table.get(tag) if type(tag) is str else None
        if decoder is None:
            _reject(f"has an unknown {key} {_describe(tag)}")
        return decoder(value)

    return decode_union


def _class_decoder(cls: type) -> _Decoder:
    """The decoder of one protocol class, generated from its fields (as ``_fields``
    generates the checks): the exact key set, then the slots are filled and the class's own
    ``__post_init__`` runs, which is what its constructor does after filling them."""
    name = cls.__name__
    namespace: dict[str, Any] = {
        "cls": cls,
        "new": object.__new__,
        "dict_": dict,
        "reject": _reject,
        "bad_keys": _bad_keys,
        "NAME": name,
    }
    hints = field_hints(cls)
    known: set[str] = set()
    always: set[str] = set()
    body: list[str] = []
    for position, field in enumerate(dataclasses.fields(cls)):
        key = camel_case(field.name)
        known.add(key)
        namespace[f"set_{position}"] = cls.__dict__[field.name].__set__
        decoder = _decoder_for(hints[field.name])
        read = f"value[{key!r}]"
        if decoder is not _pass:
            namespace[f"decode_{position}"] = decoder
            read = f"decode_{position}({read})"
        if not omitted_while_default(field):
            always.add(key)
        elif field.default is not dataclasses.MISSING:
            namespace[f"default_{position}"] = field.default
            read = f"{read} if {key!r} in value else default_{position}"
        else:  # pragma: no cover - no v2 field has a default factory
            namespace[f"factory_{position}"] = field.default_factory
            read = f"{read} if {key!r} in value else factory_{position}()"
        body.append(f"    set_{position}(made, {read})")
    namespace["known"] = frozenset(known)
    namespace["always"] = frozenset(always)
    lines = [
        "def decode(value):",
        "    if type(value) is not dict_:",
        "        reject(NAME + ' must be a JSON object')",
        "    keys = value.keys()",
        "    if not (keys <= known and keys >= always):",
        "        bad_keys(NAME, keys, known, always)",
        "    made = new(cls)",
        *body,
        "    try:",
        "        made.__post_init__()",
        "    except (TypeError, ValueError) as error:",
        "        reject(str(error))",
        "    return made",
    ]
    exec("\n".join(lines), namespace)  # generated from the dataclass fields, see above
    decode: _Decoder = namespace["decode"]
    decode.__qualname__ = decode.__name__ = f"decode_{name}"
    return decode


def _bad_keys(
    name: str, keys: Iterable[str], known: frozenset[str], always: frozenset[str]
) -> NoReturn:
    present = set(keys)
    if present - known:
        _reject(f"{name} has unexpected keys {sorted(present - known)!r}")
    _reject(f"{name} is missing {sorted(always - present)!r}")


_MESSAGE_TYPES: Final = frozenset({UserMessage, AssistantMessage, ToolResultMessage})
_MESSAGE_DECODER: list[_Decoder] = []  # compiled on first use


def _message_from_json(data: object) -> Message:
    """A message from its JSON form (exact ``dict``/``list``/``str``... as ``json`` builds)."""
    if not _MESSAGE_DECODER:
        _MESSAGE_DECODER.append(_decoder_for(Message))
    try:
        message = _MESSAGE_DECODER[0](data)
    except _Rejected as error:
        raise _fail(
            "SESSION_INVALID_MESSAGE", f"Session message is invalid: {_short(str(error))}"
        ) from None
    except RecursionError:  # pragma: no cover - nesting is bounded by the protocol's types
        raise _fail("SESSION_INVALID_MESSAGE", "Session message nests too deeply") from None
    return message  # pyright: ignore[reportReturnType]  # the decoder of ``Message``


def _snapshot_message(value: object) -> tuple[Message, bytes]:
    """A caller's message and its canonical JSON bytes, or ``SESSION_INVALID_MESSAGE``.

    Accepted: a protocol message (exact class), or its JSON form as an exact ``dict`` whose
    containers are exact ``dict``/``list`` with ``str`` keys (snapshotted through
    ``freeze_json``, which runs no caller code). Lone surrogates are refused here, since
    the line could never be written.
    """
    if type(value) in _MESSAGE_TYPES:
        message = cast(Message, value)
    elif type(value) is dict:
        try:
            plain = thaw_json(freeze_json(cast(object, value), path="message"))
        except JsonValueError as error:
            raise _fail("SESSION_INVALID_MESSAGE", f"Session message is invalid: {error}") from None
        message = _message_from_json(plain)
    else:
        raise _fail(
            "SESSION_INVALID_MESSAGE",
            "Session message must be a protocol message or its JSON object "
            f"(got {type(value).__name__})",
        )
    return message, _message_bytes(message)


def _describe(value: object) -> str:
    """A value for an error message, without calling any of its methods."""
    if value is None:
        return "null"
    kind = type(value)
    if kind is bool:
        return "true" if value else "false"
    if kind is int or kind is float:
        return f"number({value!r})"
    if kind is str:
        return f"string({_short(_dumps(value), 40)})"
    return "non-primitive"


def _is_version_one(value: object) -> bool:
    kind = type(value)
    return (kind is int or kind is float) and value == 1


def _has_lone_surrogate(value: object) -> bool:
    try:
        _dumps(value).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _parse_header(value: object, escapes: bool) -> SessionHeader:
    if type(value) is not dict:
        raise _fail("SESSION_INVALID_HEADER", "First session record must be a header")
    record = cast("dict[str, object]", value)
    if record.keys() != _HEADER_KEYS or record["type"] != "session":
        raise _fail("SESSION_INVALID_HEADER", "First session record must be a header")
    if not _is_version_one(record["version"]):
        raise _fail(
            "SESSION_UNSUPPORTED_VERSION",
            f"Unsupported session version {_describe(record['version'])}",
        )
    session_id = record["id"]
    created_at = record["createdAt"]
    if not is_non_empty(session_id):
        raise _fail("SESSION_INVALID_HEADER", "Session ID must be a non-empty string")
    if not is_non_empty(created_at):
        raise _fail(
            "SESSION_INVALID_HEADER", "Session creation timestamp must be a non-empty string"
        )
    if escapes and _has_lone_surrogate(record):
        raise _fail("SESSION_INVALID_HEADER", "Session header contains a lone surrogate")
    return SessionHeader(id=session_id, created_at=created_at)


def _record_fields(record: dict[str, Any]) -> tuple[str, str | None, str]:
    version = record["version"]
    if version != 1 or (type(version) is not int and type(version) is not float):
        raise _fail(
            "SESSION_UNSUPPORTED_VERSION",
            f"Unsupported entry version {_describe(record['version'])}",
        )
    entry_id = record["id"]
    if not is_non_empty(entry_id):
        raise _fail("SESSION_INVALID_RECORD", "Entry ID must be a non-empty string")
    parent_id = record["parentId"]
    if parent_id is not None and not is_non_empty(parent_id):
        raise _fail("SESSION_INVALID_RECORD", "Entry parent ID must be null or a non-empty string")
    timestamp = record["timestamp"]
    if not is_non_empty(timestamp):
        raise _fail("SESSION_INVALID_RECORD", "Entry timestamp must be a non-empty string")
    return entry_id, parent_id, timestamp


def _is_count(value: object) -> TypeGuard[int]:
    return type(value) is int and 0 <= value <= MAX_SAFE_INTEGER


def _parse_record(value: Any, surrogates: bool) -> SessionEntry:
    """A record from its JSON value; ``surrogates``: the file has an escape that could
    stand for a lone surrogate, so values must be checked for one."""
    if type_of(value) is not dict:
        raise _fail("SESSION_INVALID_RECORD", "Session entry has an invalid shape")
    record: dict[str, object] = value
    kind = record.get("type")
    if kind == "entry" and record.keys() == _ENTRY_KEYS:
        entry_id, parent_id, timestamp = _record_fields(record)
        if surrogates and _has_lone_surrogate([entry_id, parent_id, timestamp]):
            raise _fail("SESSION_INVALID_RECORD", "Session record contains a lone surrogate")
        message = _message_from_json(record["message"])
        if surrogates and _has_lone_surrogate(record["message"]):
            raise _fail("SESSION_INVALID_MESSAGE", "Session message contains a lone surrogate")
        return _message_entry(entry_id, parent_id, timestamp, message)
    if kind == "compaction" and record.keys() == _COMPACTION_KEYS:
        entry_id, parent_id, timestamp = _record_fields(record)
        summary = record["summary"]
        first_kept = record["firstKeptEntryId"]
        before = record["unitsBefore"]
        after = record["unitsAfter"]
        if type(summary) is not dict or cast("dict[str, object]", summary).keys() != _SUMMARY_KEYS:
            raise _fail("SESSION_INVALID_RECORD", "Compaction summary must be {id, content}")
        summary_data = cast("dict[str, object]", summary)
        summary_id = summary_data["id"]
        content = summary_data["content"]
        if not is_non_empty(summary_id) or type(content) is not str:
            raise _fail("SESSION_INVALID_RECORD", "Compaction summary must be {id, content}")
        if first_kept is not None and not is_non_empty(first_kept):
            raise _fail(
                "SESSION_INVALID_RECORD", "firstKeptEntryId must be null or a non-empty string"
            )
        if not _is_count(before) or not _is_count(after):
            raise _fail("SESSION_INVALID_RECORD", "Compaction units must be non-negative integers")
        if surrogates and _has_lone_surrogate(record):
            raise _fail("SESSION_INVALID_RECORD", "Session record contains a lone surrogate")
        return CompactionEntry(
            id=entry_id,
            parent_id=parent_id,
            timestamp=timestamp,
            summary=CompactionSummary(id=summary_id, content=content),
            first_kept_entry_id=first_kept,
            units_before=before,
            units_after=after,
        )
    raise _fail("SESSION_INVALID_RECORD", "Session entry has an invalid shape")


# --- branch-local tool linkage ------------------------------------------------------------------


class _Links:
    """The tool calls (ID → name) and answered call IDs of one context.

    Extending a valid context by one message and asking ``problem`` gives the same verdict
    as ``validate_transcript`` over the whole context with ``MISSING_TOOL_RESULT`` ignored
    (the property tests check this), in time proportional to that one message.
    """

    __slots__ = ("answered", "calls")

    def __init__(self) -> None:
        self.calls: dict[str, str] = {}
        self.answered: set[str] = set()

    def problem(self, message: Message) -> str | None:
        """The diagnostic code adding ``message`` would cause, or ``None``."""
        if type(message) is AssistantMessage:
            seen: set[str] = set()
            for block in message.content:
                if type(block) is ToolCall:
                    if block.id in self.calls or block.id in seen:
                        return "DUPLICATE_TOOL_CALL_ID"
                    seen.add(block.id)
            return None
        if type(message) is ToolResultMessage:
            if message.tool_call_id in self.answered:
                return "DUPLICATE_TOOL_RESULT"
            name = self.calls.get(message.tool_call_id)
            if name is None:
                return "ORPHAN_TOOL_RESULT"
            if name != message.tool_name:
                return "TOOL_NAME_MISMATCH"
        return None

    def add(self, message: Message) -> None:
        """Record ``message`` (which ``problem`` accepted)."""
        if type(message) is AssistantMessage:
            for block in message.content:
                if type(block) is ToolCall:
                    self.calls[block.id] = block.name
        elif type(message) is ToolResultMessage:
            self.answered.add(message.tool_call_id)


def _linkage_error(messages: list[Message], fallback: str) -> SessionStoreError:
    codes = [d.code for d in validate_transcript(messages) if d.code != "MISSING_TOOL_RESULT"]
    return _fail(
        "SESSION_INVALID_TOOL_LINKAGE",
        f"Session branch has invalid Tool linkage: {codes[0] if codes else fallback}",
    )


def _context_of(path: list[SessionEntry]) -> SessionContext:
    """The context of a branch (root first): see the module docstring."""
    last = None
    for position in range(len(path) - 1, -1, -1):
        if type(path[position]) is CompactionEntry:
            last = position
            break
    if last is None:
        messages = [entry.message for entry in path if type(entry) is MessageEntry]
        return SessionContext(summary=None, messages=tuple(messages))
    compaction = cast(CompactionEntry, path[last])
    start = last
    if compaction.first_kept_entry_id is not None:
        for position in range(last):
            if path[position].id == compaction.first_kept_entry_id:
                start = position
                break
    messages = [
        entry.message
        for entry in path[start:]
        if type(entry) is MessageEntry  # the compaction itself is skipped
    ]
    return SessionContext(
        summary=compaction.summary, messages=tuple(messages), compaction=compaction
    )


_CACHED_TIPS: Final = 16


class _Index:
    """Records in file order, by ID, and the tool linkage of recent branch tips.

    Appending under a cached tip (the usual case: the active leaf, or one of a few branches
    used in turn) costs time proportional to the new message. Appending anywhere else (a
    fork) rebuilds that branch's linkage once, in time proportional to its length, so a
    file with F forks loads in O(records + F x depth) instead of the workshop's
    O(records x depth).
    """

    __slots__ = ("by_id", "entries", "tips")

    def __init__(self) -> None:
        self.entries: list[SessionEntry] = []
        self.by_id: dict[str, SessionEntry] = {}
        self.tips: dict[str, _Links] = {}  # least recently extended first

    def path(self, leaf_id: str | None) -> list[SessionEntry]:
        """The records from a root to ``leaf_id`` (which must exist), root first."""
        path: list[SessionEntry] = []
        current = leaf_id
        while current is not None:
            entry = self.by_id[current]
            path.append(entry)
            current = entry.parent_id
        path.reverse()
        return path

    def _links_for(self, parent_id: str | None) -> _Links:
        if parent_id is None:
            return _Links()
        cached = self.tips.get(parent_id)
        if cached is not None:
            return cached
        links = _Links()
        for message in _context_of(self.path(parent_id)).messages:
            links.add(message)
        return links

    def check(self, entry: SessionEntry, missing_kept: SessionStoreErrorCode) -> _Links:
        """The linkage after adding ``entry`` (whose parent exists); raises
        ``SESSION_INVALID_TOOL_LINKAGE``, or ``missing_kept`` for a compaction whose first
        kept record is not on its branch. Nothing is changed."""
        if type(entry) is MessageEntry:
            links = self._links_for(entry.parent_id)
            code = links.problem(entry.message)
            if code is not None:
                context = list(_context_of(self.path(entry.parent_id)).messages)
                raise _linkage_error([*context, entry.message], code)
            return links
        compaction = cast(CompactionEntry, entry)
        path = self.path(compaction.parent_id)
        kept: list[Message] = []
        if compaction.first_kept_entry_id is not None:
            ids = [record.id for record in path]
            if compaction.first_kept_entry_id not in ids:
                raise _fail(
                    missing_kept,
                    f'First kept entry "{compaction.first_kept_entry_id}" is not on the '
                    "compaction's branch",
                )
            start = ids.index(compaction.first_kept_entry_id)
            kept = [record.message for record in path[start:] if type(record) is MessageEntry]
        links = _Links()
        for position, message in enumerate(kept):
            code = links.problem(message)
            if code is not None:
                raise _linkage_error(kept[: position + 1], code)
            links.add(message)
        return links

    def add(self, entry: SessionEntry, links: _Links) -> None:
        """Adopt ``entry`` and the linkage ``check`` returned for it."""
        if type(entry) is MessageEntry:
            links.add(entry.message)
        self.entries.append(entry)
        self.by_id[entry.id] = entry
        tips = self.tips
        parent_id = entry.parent_id
        if parent_id is not None and tips.get(parent_id) is links:
            del tips[parent_id]  # extended in place: it is the new record's linkage now
        tips[entry.id] = links
        if len(tips) > _CACHED_TIPS:
            del tips[next(iter(tips))]


# --- parsing -----------------------------------------------------------------------------------


def _parse(data: bytes, limits: SessionLimits) -> tuple[SessionHeader, _Index]:
    if not data:
        raise _fail("SESSION_INVALID_HEADER", "Session file is empty")
    terminated = data[-1:] == b"\n"
    # Decoding the whole file at once is faster and, since "\n" cannot occur inside a UTF-8
    # sequence, valid exactly when every line is; only an invalid file is decoded line by
    # line, so its errors come in line order like every other error.
    try:
        texts: list[str] | None = data.decode("utf-8").split("\n")
        lines: list[bytes] = []
        count = len(texts)
    except UnicodeDecodeError:
        texts = None
        lines = data.split(b"\n")
        count = len(lines)
    if terminated:
        count -= 1  # the empty segment after the final newline
    max_line = limits.max_line_bytes
    quick = max_line // 4  # a line of at most this many code points has at most max_line bytes
    values: list[object] = []
    for number in range(count):
        if texts is not None:
            text = texts[number]
            if text[-1:] == "\r":
                text = text[:-1]
            size = len(text)
            if size > quick and (size > max_line or len(text.encode("utf-8")) > max_line):
                raise _fail(
                    "SESSION_LINE_TOO_LARGE", f"Session line {number + 1} exceeds the byte limit"
                )
        else:
            line = lines[number]
            if line[-1:] == b"\r":
                line = line[:-1]
            if len(line) > max_line:
                raise _fail(
                    "SESSION_LINE_TOO_LARGE", f"Session line {number + 1} exceeds the byte limit"
                )
            try:
                text = line.decode("utf-8")
            except UnicodeDecodeError:
                raise _fail(
                    "SESSION_INVALID_UTF8", f"Session line {number + 1} is not valid UTF-8"
                ) from None
        if text[:1] == "\ufeff":
            text = text[1:]  # a UTF-8 BOM, dropped as the workshop's TextDecoder does
        try:
            values.append(_decode_json(text))
        except (ValueError, RecursionError):
            if number == count - 1 and not terminated and _is_incomplete_object_prefix(text):
                break
            raise _fail(
                "SESSION_INVALID_JSON", f"Session line {number + 1} is not valid JSON"
            ) from None
    if not values:
        raise _fail("SESSION_INVALID_HEADER", "Session header is missing or incomplete")
    escapes = _LONE_ESCAPE.search(data) is not None  # only then can a value hold a surrogate
    header = _parse_header(values[0], escapes)
    index = _Index()
    by_id = index.by_id
    max_records = limits.max_records
    for position in range(1, len(values)):
        if len(index.entries) >= max_records:
            raise _fail("SESSION_RECORD_LIMIT", "Session record limit exceeded")
        entry = _parse_record(values[position], escapes)
        if entry.id in by_id:
            raise _fail("SESSION_DUPLICATE_ENTRY_ID", f'Duplicate entry ID "{_short(entry.id)}"')
        if entry.parent_id is not None and entry.parent_id not in by_id:
            raise _fail(
                "SESSION_PARENT_NOT_FOUND",
                f'Parent entry "{_short(entry.parent_id)}" must precede its child',
            )
        index.add(entry, index.check(entry, "SESSION_INVALID_RECORD"))
    return header, index


def parse_session(data: bytes, limits: SessionLimits | None = None) -> ParsedSession:
    """Parse a session file's bytes by the loading rules (see the module docstring).

    The parser ``SessionStore.load`` uses, without the filesystem: for tools that inspect
    session files. Raises only ``SessionStoreError`` (and ``TypeError`` for non-bytes).
    """
    if type(data) is not bytes:
        raise TypeError(f"parse_session() needs bytes (got {type(data).__name__})")
    header, index = _parse(data, SessionLimits() if limits is None else limits)
    return ParsedSession(header=header, entries=tuple(index.entries))


# --- filesystem helpers -------------------------------------------------------------------------

_Identity = tuple[int, int, object]
"""(device, inode, birth time or None): a file's identity."""

_O_CLOEXEC: Final = getattr(os, "O_CLOEXEC", 0)
_O_NOFOLLOW: Final = getattr(os, "O_NOFOLLOW", 0)
_O_BINARY: Final = getattr(os, "O_BINARY", 0)
_CREATE_FLAGS: Final = os.O_CREAT | os.O_EXCL | os.O_WRONLY | _O_CLOEXEC | _O_BINARY
_READ_FLAGS: Final = os.O_RDONLY | _O_CLOEXEC | _O_NOFOLLOW | _O_BINARY
_IGNORED_DIRECTORY_SYNC: Final = frozenset({errno.EINVAL, errno.EPERM, errno.ENOTSUP})


def _identity(info: os.stat_result) -> _Identity:
    birth: object = getattr(info, "st_birthtime_ns", None)
    if birth is None:  # pragma: no branch - per platform
        birth = getattr(info, "st_birthtime", None)
    return (info.st_dev, info.st_ino, birth)


@dataclass(frozen=True, slots=True)
class _Root:
    path: str
    real_path: str
    identity: _Identity


def _capture_root(directory: str) -> _Root:
    info = session_io.stat(directory)
    if not stat.S_ISDIR(info.st_mode):
        raise _fail("SESSION_ROOT_CHANGED", "Session parent must be a directory")
    return _Root(directory, session_io.realpath(directory), _identity(info))


def _assert_root(root: _Root) -> None:
    try:
        info = session_io.stat(root.path)
        resolved = session_io.realpath(root.path)
    except OSError as error:
        raise _fail("SESSION_ROOT_CHANGED", "Session parent directory changed") from error
    if (
        not stat.S_ISDIR(info.st_mode)
        or resolved != root.real_path
        or _identity(info) != root.identity
    ):
        raise _fail("SESSION_ROOT_CHANGED", "Session parent directory changed")


def _assert_path_identity(path: str, expected: _Identity, size: int | None) -> None:
    try:
        info = session_io.lstat(path)
    except OSError as error:
        raise _fail("SESSION_FILE_CHANGED", "Session file identity changed") from error
    if (
        not stat.S_ISREG(info.st_mode)
        or _identity(info) != expected
        or (size is not None and info.st_size != size)
    ):
        raise _fail("SESSION_FILE_CHANGED", "Session file identity changed")


def _path_matches(fs: SessionFileSystem, path: str, expected: _Identity, size: int) -> bool:
    try:
        info = fs.lstat(path)
    except Exception:
        return False
    return stat.S_ISREG(info.st_mode) and _identity(info) == expected and info.st_size == size


def _cleanup_owned(fs: SessionFileSystem, path: str, expected: _Identity, size: int | None) -> bool:
    """Remove ``path`` if it is still the file we made; True when it is gone."""
    for _ in range(3):
        try:
            info = fs.lstat(path)
            if (
                not stat.S_ISREG(info.st_mode)
                or _identity(info) != expected
                or (size is not None and info.st_size != size)
            ):
                return False
            fs.remove(path)
            return True
        except FileNotFoundError:
            return True
        except Exception:
            continue
    return False


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    offset = 0
    total = len(data)
    while offset < total:
        written = session_io.write(fd, view[offset:])
        if type(written) is not int or not 0 < written <= total - offset:
            raise OSError(errno.EIO, "Session write made invalid progress")
        offset += written


def _read_all(fd: int, limit: int) -> bytes:
    chunks: list[bytes] = []
    total = 0
    while total <= limit:
        chunk = session_io.read(fd, min(limit + 1 - total, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


def _close_quietly(fd: int) -> None:
    with contextlib.suppress(OSError):
        session_io.close(fd)


def _sync_directory(path: str) -> None:
    """fsync a directory so a rename in it is durable (ignored where unsupported)."""
    if os.name == "nt":  # pragma: no cover - directories cannot be opened on Windows
        return
    fd: int | None = None
    try:
        fd = session_io.open(path, os.O_RDONLY | _O_CLOEXEC)
        session_io.fsync(fd)
    except OSError as error:
        if error.errno not in _IGNORED_DIRECTORY_SYNC:
            raise
    finally:
        if fd is not None:
            _close_quietly(fd)


def _session_path(path: object) -> str:
    text: object = (
        os.fspath(cast("os.PathLike[str]", path)) if isinstance(path, os.PathLike) else path
    )
    if not is_non_empty(text):
        raise TypeError("Session path is required")
    if "\0" in text:
        raise ValueError("Session path must not contain NUL")
    return os.path.abspath(text)


def _canonical_key(path: str, root: _Root) -> str:
    key = os.path.join(root.real_path, os.path.basename(path))
    return key.lower() if os.name == "nt" else key


def _assert_no_marker(path: str, fs: SessionFileSystem) -> None:
    try:
        fs.lstat(path + RECOVERY_MARKER_SUFFIX)
    except FileNotFoundError:
        return
    raise _fail(
        "SESSION_ROLLBACK_FAILED", "Session recovery is required before this file can be opened"
    )


class _PathLock:
    __slots__ = ("lock", "users")

    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.users = 0


_PATH_LOCKS: Final[dict[str, _PathLock]] = {}
"""One lock per canonical session path, shared by every store in this process; an entry
lives only while some operation holds or awaits it."""


@contextlib.asynccontextmanager
async def _locked_path(key: str) -> AsyncGenerator[None]:
    entry = _PATH_LOCKS.get(key)
    if entry is None:
        entry = _PATH_LOCKS[key] = _PathLock()
    entry.users += 1
    try:
        async with entry.lock:
            yield
    finally:
        entry.users -= 1
        if entry.users == 0 and _PATH_LOCKS.get(key) is entry:
            del _PATH_LOCKS[key]


# --- the store ---------------------------------------------------------------------------------

_SAFE_SESSION_ID: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


class SessionStore:
    """One session file: its header and records, and crash-safe appends to it.

    Build one with ``create`` (a new file), ``create_in`` (a new file in a sessions
    directory) or ``load`` (an existing file); the constructor is private. ``append``,
    ``append_compaction`` and ``flush`` are serialized (see the module docstring) and each
    commits a whole new generation atomically; a failed call changes neither the file nor
    ``entries``. ``header`` and every record are frozen and stable.

    The methods are coroutines so they can wait their turn on the locks; the file I/O inside
    them is synchronous (small local files; see the module docstring), so an operation, once
    it holds its locks, finishes without yielding to the event loop.
    """

    __slots__ = (
        "_clock",
        "_fs",
        "_header",
        "_header_line",
        "_id_factory",
        "_identity",
        "_index",
        "_limits",
        "_lines",
        "_lock_key",
        "_path",
        "_queue",
        "_root",
        "_size",
        "_unusable",
    )

    _path: str
    _root: _Root
    _lock_key: str
    _identity: _Identity
    _size: int
    _header: SessionHeader
    _header_line: bytes
    _index: _Index
    _lines: list[bytes | None]
    _clock: Callable[[], str]
    _id_factory: Callable[[], str]
    _fs: SessionFileSystem
    _limits: SessionLimits
    _unusable: SessionStoreError | None
    _queue: asyncio.Lock

    def __init__(self) -> None:
        raise TypeError("use SessionStore.create(), SessionStore.create_in() or load()")

    @classmethod
    def _new(
        cls,
        *,
        path: str,
        root: _Root,
        identity: _Identity,
        size: int,
        header: SessionHeader,
        index: _Index,
        options: SessionStoreOptions,
    ) -> SessionStore:
        store = object.__new__(cls)
        store._path = path
        store._root = root
        store._lock_key = _canonical_key(path, root)
        store._identity = identity
        store._size = size
        store._header = header
        store._header_line = _header_line(header)
        store._index = index
        store._lines = [None] * len(index.entries)
        store._clock = options.clock
        store._id_factory = options.id_factory
        store._fs = options.file_system
        store._limits = options.limits
        store._unusable = None
        store._queue = asyncio.Lock()
        return store

    # -- construction ------------------------------------------------------------------------

    @classmethod
    async def create(
        cls,
        path: str | os.PathLike[str],
        options: SessionStoreOptions | dict[str, Any] | None = None,
    ) -> SessionStore:
        """Create a new session file holding only its header (exclusively, mode ``0600``).

        ``SESSION_ALREADY_EXISTS`` if the path exists; ``SESSION_INVALID_HEADER`` for a
        blank session ID or clock value (nothing is created); ``SESSION_ROLLBACK_FAILED``
        while a recovery marker exists. A create that fails after making the file removes
        it again (when it is still the file it made), so a retry can succeed.
        """
        absolute = _session_path(path)
        root = _capture_root(os.path.dirname(absolute))
        settings = _snapshot_options(options)
        session_id = _default_id() if settings.session_id is None else settings.session_id
        _assert_no_marker(absolute, settings.file_system)
        if not is_non_empty(session_id):
            raise _fail("SESSION_INVALID_HEADER", "Session ID must be a non-empty string")
        created_at = settings.clock()
        if not is_non_empty(created_at):
            raise _fail(
                "SESSION_INVALID_HEADER", "Session creation timestamp must be a non-empty string"
            )
        header = SessionHeader(id=session_id, created_at=created_at)
        data = _check_line(_header_line(header), settings.limits)
        if len(data) > settings.limits.max_file_bytes:
            raise _fail("SESSION_FILE_TOO_LARGE", "Serialized session exceeds the file limit")
        async with _locked_path(_canonical_key(absolute, root)):
            identity = _create_file(absolute, data, root, settings.file_system)
        return cls._new(
            path=absolute,
            root=root,
            identity=identity,
            size=len(data),
            header=header,
            index=_Index(),
            options=settings,
        )

    @classmethod
    async def create_in(
        cls,
        directory: str | os.PathLike[str] | None = None,
        options: SessionStoreOptions | dict[str, Any] | None = None,
    ) -> SessionStore:
        """Create ``<directory>/<session-id>.jsonl``, making the directory first if needed
        (mode ``0700``; missing parents get the default mode). ``directory`` defaults to
        ``default_sessions_dir()``. The session ID (given or generated) must be a safe file
        name: 1-128 characters of ``A-Z a-z 0-9 . _ -`` starting with a letter or digit
        (``SESSION_INVALID_HEADER`` otherwise)."""
        settings = _snapshot_options(options)
        session_id = _default_id() if settings.session_id is None else settings.session_id
        if type(session_id) is not str or _SAFE_SESSION_ID.fullmatch(session_id) is None:
            raise _fail(
                "SESSION_INVALID_HEADER",
                f"Session ID {_describe(session_id)} cannot name a session file",
            )
        folder = default_sessions_dir() if directory is None else Path(directory)
        os.makedirs(folder, mode=0o700, exist_ok=True)
        settings = dataclasses.replace(settings, session_id=session_id)
        return await cls.create(folder / f"{session_id}.jsonl", settings)

    @classmethod
    async def load(
        cls,
        path: str | os.PathLike[str],
        options: SessionStoreOptions | dict[str, Any] | None = None,
    ) -> SessionStore:
        """Open an existing session file, checked by the loading rules.

        ``SESSION_ROLLBACK_FAILED`` while its recovery marker exists; ``SESSION_FILE_CHANGED``
        for a path that is not a regular file (a symlink included) or that changes while it
        is read; ``SESSION_FILE_TOO_LARGE`` over the limit; then the parser's codes. A
        missing file raises ``FileNotFoundError``. ``session_id`` is ignored.
        """
        absolute = _session_path(path)
        settings = _snapshot_options(options)
        _assert_no_marker(absolute, settings.file_system)
        root = _capture_root(os.path.dirname(absolute))
        limits = settings.limits
        async with _locked_path(_canonical_key(absolute, root)):
            identity, data = _read_file(absolute, root, limits)
        header, index = _parse(data, limits)
        return cls._new(
            path=absolute,
            root=root,
            identity=identity,
            size=len(data),
            header=header,
            index=index,
            options=settings,
        )

    @classmethod
    async def recover(
        cls,
        path: str | os.PathLike[str],
        options: SessionStoreOptions | dict[str, Any] | None = None,
    ) -> bool:
        """Finish a commit that a crash or a failed rollback left behind.

        If ``<path>.pify-session-recovery`` exists, the generation it holds (the last one a
        call returned successfully for) is put back at ``path`` and the marker is gone
        afterwards; returns True. Returns False when there is no marker. Call it only when
        no other process is writing the session: the marker might be that process's.
        """
        absolute = _session_path(path)
        fs = _snapshot_options(options).file_system
        marker = absolute + RECOVERY_MARKER_SUFFIX
        try:
            info = fs.lstat(marker)
        except FileNotFoundError:
            return False
        if not stat.S_ISREG(info.st_mode):
            raise _fail("SESSION_ROLLBACK_FAILED", "Session recovery marker is not a regular file")
        root = _capture_root(os.path.dirname(absolute))
        async with _locked_path(_canonical_key(absolute, root)):
            try:
                current = fs.lstat(absolute)
            except FileNotFoundError:
                current = None
            if current is not None and _identity(current) == _identity(info):
                fs.remove(marker)  # the crash came before the rename: the path is the marker
            else:
                fs.rename(marker, absolute)
            _sync_directory(root.path)
        return True

    @staticmethod
    def canonical_path_of(store: SessionStore) -> str:
        """The file's canonical key: the parent's real path joined with the file name
        (lower-cased on Windows). Two stores on one file have the same key."""
        if not isinstance(cast(object, store), SessionStore):
            raise TypeError("Expected a SessionStore")
        return store._lock_key

    # -- reading ----------------------------------------------------------------------------

    @property
    def path(self) -> str:
        """The session file's absolute path."""
        return self._path

    @property
    def limits(self) -> SessionLimits:
        """The limits this store enforces."""
        return self._limits

    @property
    def header(self) -> SessionHeader:
        """The frozen header."""
        return self._header

    @property
    def entries(self) -> tuple[SessionEntry, ...]:
        """Every record in file order (a new tuple each call; the records are stable)."""
        return tuple(self._index.entries)

    def get(self, entry_id: str) -> SessionEntry | None:
        """The record with this ID, or ``None``."""
        return self._index.by_id.get(entry_id) if type(entry_id) is str else None

    def branch(self, leaf_id: str | None) -> tuple[SessionEntry, ...]:
        """The records from a root to ``leaf_id``, root first (empty for ``None``).

        ``SESSION_ENTRY_NOT_FOUND`` for an unknown ID.
        """
        if leaf_id is not None and self.get(leaf_id) is None:
            raise _fail(
                "SESSION_ENTRY_NOT_FOUND", f'Session entry "{_short(str(leaf_id))}" does not exist'
            )
        return tuple(self._index.path(leaf_id))

    def context(self, leaf_id: str | None) -> SessionContext:
        """The context of the branch ending at ``leaf_id`` (see the module docstring)."""
        return _context_of(list(self.branch(leaf_id)))

    # -- writing ----------------------------------------------------------------------------

    async def append(
        self, parent_id: str | None, message: Message | dict[str, Any]
    ) -> MessageEntry:
        """Append a message under ``parent_id`` (``None``: a new root) and commit.

        ``message`` is a protocol message (an exact ``UserMessage``, ``AssistantMessage`` or
        ``ToolResultMessage``) or its JSON form as an exact ``dict`` of plain JSON values; it
        is checked and snapshotted before the call waits its turn (``SESSION_PARENT_NOT_FOUND``
        for a blank parent ID, ``SESSION_INVALID_MESSAGE``). Then, in turn: the store's and
        file's identity, the record limit, the parent, a fresh ID (``SESSION_INVALID_RECORD``
        if blank, ``SESSION_DUPLICATE_ENTRY_ID`` if used), a timestamp, the branch's tool
        linkage, and the atomic commit. The ID factory and clock are consumed even when the
        commit then fails.
        """
        if parent_id is not None and not is_non_empty(parent_id):
            raise _fail("SESSION_PARENT_NOT_FOUND", "Parent ID must be a non-empty string")
        snapshot, body = _snapshot_message(message)

        def build(entry_id: str, timestamp: str) -> tuple[SessionEntry, bytes]:
            entry = MessageEntry(
                id=entry_id, parent_id=parent_id, timestamp=timestamp, message=snapshot
            )
            return entry, _entry_line(entry, body)

        return cast(MessageEntry, await self._serialized(lambda: self._append(parent_id, build)))

    async def append_compaction(
        self,
        parent_id: str | None,
        *,
        summary_id: str,
        summary: str,
        first_kept_entry_id: str | None,
        units_before: int,
        units_after: int,
    ) -> CompactionEntry:
        """Append a compaction record under ``parent_id`` and commit (as ``append``).

        ``summary_id`` must be non-blank, ``summary`` a string, the units non-negative
        integers (``SESSION_INVALID_RECORD``); ``first_kept_entry_id`` must name a record on
        the new record's branch (``SESSION_ENTRY_NOT_FOUND``) or be ``None``, and the kept
        messages must have valid tool linkage on their own.
        """
        if parent_id is not None and not is_non_empty(parent_id):
            raise _fail("SESSION_PARENT_NOT_FOUND", "Parent ID must be a non-empty string")
        if not is_non_empty(summary_id) or type(summary) is not str:
            raise _fail(
                "SESSION_INVALID_RECORD",
                "Compaction summary needs a non-empty summary_id and a string summary",
            )
        if first_kept_entry_id is not None and not is_non_empty(first_kept_entry_id):
            raise _fail(
                "SESSION_ENTRY_NOT_FOUND", "first_kept_entry_id must be None or a non-empty string"
            )
        if not _is_count(units_before) or not _is_count(units_after):
            raise _fail("SESSION_INVALID_RECORD", "Compaction units must be non-negative integers")
        content = CompactionSummary(id=summary_id, content=summary)
        _encode(_dumps([summary_id, summary]), "SESSION_INVALID_RECORD", "Compaction summary")

        def build(entry_id: str, timestamp: str) -> tuple[SessionEntry, bytes]:
            entry = CompactionEntry(
                id=entry_id,
                parent_id=parent_id,
                timestamp=timestamp,
                summary=content,
                first_kept_entry_id=first_kept_entry_id,
                units_before=units_before,
                units_after=units_after,
            )
            return entry, _entry_line(entry)

        return cast(CompactionEntry, await self._serialized(lambda: self._append(parent_id, build)))

    async def flush(self) -> None:
        """Rewrite the current generation atomically (canonical lines, every one ending in
        a newline), e.g. to clean up a recovered torn tail without appending."""
        await self._serialized(lambda: self._commit(None))

    async def _serialized(self, operation: Callable[[], _T]) -> _T:
        async with self._queue, _locked_path(self._lock_key):
            return operation()

    def _append(
        self, parent_id: str | None, build: Callable[[str, str], tuple[SessionEntry, bytes]]
    ) -> SessionEntry:
        self._assert_storage()
        index = self._index
        if len(index.entries) >= self._limits.max_records:
            raise _fail("SESSION_RECORD_LIMIT", "Session record limit reached")
        if parent_id is not None and parent_id not in index.by_id:
            raise _fail(
                "SESSION_PARENT_NOT_FOUND", f'Parent entry "{_short(parent_id)}" does not exist'
            )
        entry_id = self._id_factory()
        if not is_non_empty(entry_id):
            raise _fail("SESSION_INVALID_RECORD", "Entry ID must be a non-empty string")
        if entry_id in index.by_id:
            raise _fail(
                "SESSION_DUPLICATE_ENTRY_ID", f'Entry ID "{_short(entry_id)}" already exists'
            )
        timestamp = self._clock()
        if not is_non_empty(timestamp):
            raise _fail("SESSION_INVALID_RECORD", "Entry timestamp must be a non-empty string")
        entry, line = build(entry_id, timestamp)
        links = index.check(entry, "SESSION_ENTRY_NOT_FOUND")
        self._commit(_check_line(line, self._limits))
        index.add(entry, links)
        self._lines.append(line)
        return entry

    def _assert_storage(self) -> None:
        if self._unusable is not None:
            raise self._unusable
        _assert_root(self._root)
        _assert_path_identity(self._path, self._identity, self._size)

    def _serialize(self, extra: bytes | None) -> bytes:
        lines = self._lines
        limits = self._limits
        for position, line in enumerate(lines):
            if line is None:
                lines[position] = _check_line(_entry_line(self._index.entries[position]), limits)
        parts = cast("list[bytes]", [self._header_line, *lines])
        if extra is not None:
            parts.append(extra)
        if sum(map(len, parts)) > limits.max_file_bytes:
            raise _fail("SESSION_FILE_TOO_LARGE", "Serialized session exceeds the file limit")
        return b"".join(parts)

    def _commit(self, line: bytes | None) -> None:
        """Install the generation of every record (plus ``line``) atomically; see the module
        docstring. On success the recorded file identity and size are the new ones."""
        self._assert_storage()
        data = self._serialize(line)
        fs = self._fs
        path = self._path
        temp = f"{path}{_TEMP_INFIX}{os.getpid()}-{uuid.uuid4()}"
        marker = path + RECOVERY_MARKER_SUFFIX
        old_identity = self._identity
        old_size = self._size
        temp_identity: _Identity | None = None
        marker_owned = False
        keep_marker = False
        fd: int | None = None
        try:
            fd = session_io.open(temp, _CREATE_FLAGS, 0o600)
            info = session_io.fstat(fd)
            if not stat.S_ISREG(info.st_mode):  # pragma: no cover - O_EXCL made a file
                raise _fail("SESSION_FILE_CHANGED", "Session temporary is not a regular file")
            temp_identity = _identity(info)
            _write_all(fd, data)
            session_io.fsync(fd)
            session_io.close(fd)
            fd = None
            self._assert_storage()
            _assert_path_identity(temp, temp_identity, len(data))
            try:
                fs.link(path, marker)
            except FileExistsError as error:
                collision = _fail(
                    "SESSION_ROLLBACK_FAILED", "A session recovery marker already exists"
                )
                self._unusable = collision
                raise collision from error
            marker_owned = True
            info = fs.lstat(marker)
            if (
                not stat.S_ISREG(info.st_mode)
                or _identity(info) != old_identity
                or info.st_size != old_size
            ):
                raise _fail(
                    "SESSION_FILE_CHANGED", "Session rollback link has an unexpected identity"
                )
            self._assert_storage()
            fs.rename(temp, path)
            try:
                installed = fs.lstat(path)
                new_identity = _identity(installed)
                if (
                    not stat.S_ISREG(installed.st_mode)
                    or new_identity[:2] != temp_identity[:2]
                    or installed.st_size != len(data)
                ):
                    raise _fail(
                        "SESSION_FILE_CHANGED", "Installed session file identity is unexpected"
                    )
                _sync_directory(self._root.path)
            except Exception as primary:
                try:
                    restored, marker_owned = self._restore(marker, old_identity, old_size)
                    self._identity = restored
                    self._size = old_size
                except Exception as rollback:
                    keep_marker = True
                    failure = _fail(
                        "SESSION_ROLLBACK_FAILED",
                        "Session rollback failed; the recovery backup was retained",
                    )
                    group = ExceptionGroup(
                        "Session commit and rollback both failed", [primary, rollback]
                    )
                    self._unusable = failure
                    raise failure from group
                with contextlib.suppress(OSError):
                    _sync_directory(self._root.path)
                raise
            removed = _cleanup_owned(fs, marker, old_identity, old_size)
            marker_owned = not removed
            if not removed:
                cleanup = OSError(errno.EIO, "Session recovery marker cleanup failed")
                try:
                    restored, marker_owned = self._restore(marker, old_identity, old_size)
                    self._identity = restored
                    self._size = old_size
                    if marker_owned:
                        marker_owned = not _cleanup_owned(fs, marker, old_identity, old_size)
                        if marker_owned:
                            raise OSError(
                                errno.EIO,
                                "Recovery marker remained after the old generation was restored",
                            )
                except Exception as rollback:
                    keep_marker = marker_owned
                    failure = _fail(
                        "SESSION_ROLLBACK_FAILED",
                        "Session finalization and rollback failed; recovery is required",
                    )
                    group = ExceptionGroup(
                        "Session marker cleanup and rollback both failed", [cleanup, rollback]
                    )
                    self._unusable = failure
                    raise failure from group
                with contextlib.suppress(OSError):
                    _sync_directory(self._root.path)
                raise _fail(
                    "SESSION_ROLLBACK_FAILED",
                    "Session commit was rolled back because its recovery marker could not be "
                    "removed",
                ) from cleanup
            self._identity = new_identity
            self._size = len(data)
            with contextlib.suppress(OSError):
                _sync_directory(self._root.path)
        finally:
            if fd is not None:
                _close_quietly(fd)
            if temp_identity is not None:
                _cleanup_owned(fs, temp, temp_identity, None)
            if marker_owned and not keep_marker:
                _cleanup_owned(fs, marker, old_identity, old_size)

    def _restore(self, marker: str, identity: _Identity, size: int) -> tuple[_Identity, bool]:
        """Put the old generation back: ``(its identity now, whether the marker remains)``."""
        fs = self._fs
        path = self._path
        if not _path_matches(fs, marker, identity, size):
            raise OSError(errno.EIO, "Session recovery marker identity changed")
        failures: list[Exception] = []
        for _ in range(3):
            try:
                fs.rename(marker, path)
                return identity, False
            except Exception as error:
                failures.append(error)
                if _path_matches(fs, path, identity, size):
                    return identity, False
        restore = f"{path}{_RESTORE_INFIX}{os.getpid()}-{uuid.uuid4()}"
        restore_identity: _Identity | None = None
        restore_owned = False
        try:
            reader = session_io.open(marker, _READ_FLAGS)
            try:
                info = session_io.fstat(reader)
                if (
                    not stat.S_ISREG(info.st_mode)
                    or _identity(info) != identity
                    or info.st_size != size
                ):
                    raise OSError(errno.EIO, "Recovery backup identity changed")
                data = _read_all(reader, size)
            finally:
                _close_quietly(reader)
            if len(data) != size:
                raise OSError(errno.EIO, "Recovery backup changed while it was read")
            writer = session_io.open(restore, _CREATE_FLAGS, 0o600)
            restore_owned = True
            try:
                info = session_io.fstat(writer)
                if not stat.S_ISREG(info.st_mode):  # pragma: no cover - O_EXCL made a file
                    raise OSError(errno.EIO, "Recovery temporary is not a regular file")
                restore_identity = _identity(info)
                _write_all(writer, data)
                session_io.fsync(writer)
            finally:
                _close_quietly(writer)
            fs.rename(restore, path)
            restore_owned = False
            with contextlib.suppress(OSError):
                _sync_directory(self._root.path)
            return restore_identity, True
        except Exception as error:
            failures.append(error)
            raise ExceptionGroup(
                "All bounded session rollback strategies failed", failures
            ) from None
        finally:
            if restore_owned and restore_identity is not None:
                _cleanup_owned(fs, restore, restore_identity, None)


def _create_file(path: str, data: bytes, root: _Root, fs: SessionFileSystem) -> _Identity:
    """Write a new file exclusively (``0600``) and check it; remove it again on failure."""
    try:
        fd = session_io.open(path, _CREATE_FLAGS, 0o600)
    except FileExistsError as error:
        raise _fail("SESSION_ALREADY_EXISTS", "Session file already exists") from error
    identity: _Identity | None = None
    try:
        try:
            info = session_io.fstat(fd)
            if not stat.S_ISREG(info.st_mode):  # pragma: no cover - O_EXCL made a file
                raise _fail("SESSION_FILE_CHANGED", "Session path is not a regular file")
            identity = _identity(info)
            _write_all(fd, data)
            session_io.fsync(fd)
        finally:
            _close_quietly(fd)
        _assert_root(root)
        _assert_path_identity(path, identity, len(data))
        _sync_directory(root.path)
    except BaseException:
        if identity is not None:
            _cleanup_owned(fs, path, identity, None)
        raise
    assert identity is not None
    return identity


def _read_file(path: str, root: _Root, limits: SessionLimits) -> tuple[_Identity, bytes]:
    before = session_io.lstat(path)
    if not stat.S_ISREG(before.st_mode):
        raise _fail("SESSION_FILE_CHANGED", "Session path is not a regular file")
    if before.st_size > limits.max_file_bytes:
        raise _fail("SESSION_FILE_TOO_LARGE", "Session file exceeds the byte limit")
    expected = _identity(before)
    try:
        fd = session_io.open(path, _READ_FLAGS)
    except OSError as error:
        if error.errno == errno.ELOOP:  # O_NOFOLLOW met a symlink swapped in
            raise _fail("SESSION_FILE_CHANGED", "Session path is not a regular file") from error
        raise
    try:
        if _identity(session_io.fstat(fd)) != expected:
            raise _fail("SESSION_FILE_CHANGED", "Session file changed while it was opened")
        data = _read_all(fd, limits.max_file_bytes)
    finally:
        _close_quietly(fd)
    if len(data) > limits.max_file_bytes:
        raise _fail("SESSION_FILE_TOO_LARGE", "Session file exceeds the byte limit")
    _assert_root(root)
    _assert_path_identity(path, expected, len(data))
    return expected, data


# --- the tree ----------------------------------------------------------------------------------


class SessionTree:
    """A branch pointer over a ``SessionStore``: the active leaf and the branch it ends.

    ``move_to`` and the appends run one at a time in the order they start, on the tree's own
    lock; a failed one does not block later ones. ``move_to`` checks membership when it runs,
    so it may name a record an earlier queued append created. The leaf advances only after a
    commit succeeded. A new tree starts at the store's last record (``None`` when empty).
    """

    __slots__ = ("_leaf", "_queue", "_store")

    def __init__(self, store: SessionStore) -> None:
        if not isinstance(cast(object, store), SessionStore):
            raise TypeError("SessionTree needs a SessionStore")
        self._store = store
        entries = store.entries
        self._leaf: str | None = entries[-1].id if entries else None
        self._queue = asyncio.Lock()

    @property
    def store(self) -> SessionStore:
        """The store this tree reads and appends to."""
        return self._store

    @property
    def active_leaf_id(self) -> str | None:
        """The active leaf's ID (``None``: the next append makes a new root)."""
        return self._leaf

    @property
    def entries(self) -> tuple[SessionEntry, ...]:
        """Every record of the store, in file order (inactive branches included)."""
        return self._store.entries

    @property
    def active_entries(self) -> tuple[SessionEntry, ...]:
        """The records from a root to the active leaf, root first."""
        return self._store.branch(self._leaf)

    @property
    def active_messages(self) -> tuple[Message, ...]:
        """The messages of the active branch, in order (compaction records skipped)."""
        return tuple(entry.message for entry in self.active_entries if type(entry) is MessageEntry)

    def active_context(self) -> SessionContext:
        """What a model should see for the active branch (see the module docstring)."""
        return self._store.context(self._leaf)

    async def move_to(self, entry_id: str | None) -> None:
        """Make ``entry_id`` the active leaf (``None``: no branch). Writes nothing.

        ``SESSION_ENTRY_NOT_FOUND`` for an unknown ID (checked when the call runs).
        """
        async with self._queue:
            if entry_id is not None and self._store.get(entry_id) is None:
                raise _fail(
                    "SESSION_ENTRY_NOT_FOUND",
                    f'Session entry "{_short(str(entry_id))}" does not exist',
                )
            self._leaf = entry_id

    async def append(self, message: Message | dict[str, Any]) -> MessageEntry:
        """Append a message under the active leaf, then make it the leaf."""
        async with self._queue:
            entry = await self._store.append(self._leaf, message)
            self._leaf = entry.id
            return entry

    async def append_compaction(
        self,
        *,
        summary_id: str,
        summary: str,
        first_kept_entry_id: str | None,
        units_before: int,
        units_after: int,
    ) -> CompactionEntry:
        """Append a compaction record under the active leaf, then make it the leaf."""
        async with self._queue:
            entry = await self._store.append_compaction(
                self._leaf,
                summary_id=summary_id,
                summary=summary,
                first_kept_entry_id=first_kept_entry_id,
                units_before=units_before,
                units_after=units_after,
            )
            self._leaf = entry.id
            return entry


# --- the sessions directory --------------------------------------------------------------------


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
    (``None`` if there is none). When the file could not be read, ``error`` says why and
    the session fields are ``None``/0.
    """

    path: Path
    id: str | None
    created_at: str | None
    modified_at: float
    entry_count: int
    title: str | None
    error: SessionListError | None = None
    error_message: str | None = None


def _title_of(entries: tuple[SessionEntry, ...]) -> str | None:
    for entry in entries:
        if type(entry) is MessageEntry and type(entry.message) is UserMessage:
            text = entry.message.content.strip()
            if text:
                return text.splitlines()[0].strip()[:_TITLE_LENGTH]
    return None


def _inspect(path: Path, limits: SessionLimits) -> SessionInfo:
    name = str(path)
    modified = 0.0
    try:
        info = session_io.lstat(name)
        modified = info.st_mtime
        _assert_no_marker(name, _DEFAULT_FILE_SYSTEM)
        root = _capture_root(os.path.dirname(os.path.abspath(name)))
        _, data = _read_file(os.path.abspath(name), root, limits)
        parsed = parse_session(data, limits)
    except SessionStoreError as error:
        return SessionInfo(
            path=path,
            id=None,
            created_at=None,
            modified_at=modified,
            entry_count=0,
            title=None,
            error=error.code,
            error_message=error.message,
        )
    except OSError as error:
        return SessionInfo(
            path=path,
            id=None,
            created_at=None,
            modified_at=modified,
            entry_count=0,
            title=None,
            error="SESSION_UNREADABLE",
            error_message=str(error),
        )
    return SessionInfo(
        path=path,
        id=parsed.header.id,
        created_at=parsed.header.created_at,
        modified_at=modified,
        entry_count=len(parsed.entries),
        title=_title_of(parsed.entries),
    )


def _created_seconds(info: SessionInfo) -> float | None:
    if info.created_at is None:
        return None
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

    Each file is read and parsed in full by the loading rules (with ``limits``). A file that
    cannot be read is listed with its ``error`` code (``SESSION_INVALID_JSON``,
    ``SESSION_ROLLBACK_FAILED`` while a recovery marker exists, ``SESSION_UNREADABLE``, ...),
    never dropped. A missing directory lists nothing.
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
