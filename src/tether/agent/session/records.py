"""The values a session holds: the header, the message and compaction records, contexts,
the ``SessionLimits`` bounds, what a load repaired (``SessionRecovery``), and
``SessionStoreError`` with its stable codes."""

# The package's modules share their underscore helpers with one another.
# pyright: reportUnusedFunction=false

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, Final, Literal, TypeAlias, cast

from tether._base.dataclass import dataclass
from tether._base.tether_error import TetherError
from tether.models.limits import check_positive_fields
from tether.protocol import Message

__all__ = [
    "MAX_SESSION_FILE_BYTES",
    "MAX_SESSION_LINE_BYTES",
    "MAX_SESSION_RECORDS",
    "SESSION_FORMAT_VERSION",
    "CompactionEntry",
    "CompactionSummary",
    "MessageEntry",
    "ParsedSession",
    "SessionContext",
    "SessionEntry",
    "SessionHeader",
    "SessionLimits",
    "SessionRecovery",
    "SessionStoreError",
    "SessionStoreErrorCode",
]

SESSION_FORMAT_VERSION: Final = 1
"""The ``version`` of every header and record this package reads and writes."""
MAX_SESSION_LINE_BYTES: Final = 65_536
"""Workshop cap on one line's bytes (without its ``\\n``; a CR before it is not counted)."""
MAX_SESSION_FILE_BYTES: Final = 4_194_304
"""Workshop cap on a session file's bytes."""
MAX_SESSION_RECORDS: Final = 4_096
"""Workshop cap on the records (entries and compactions) after the header."""


# --- errors ------------------------------------------------------------------------------------

SessionStoreErrorCode: TypeAlias = Literal[
    "SESSION_ALREADY_EXISTS",
    "SESSION_CLOSED",
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
    "SESSION_IN_USE",
    "SESSION_LINE_TOO_LARGE",
    "SESSION_PARENT_NOT_FOUND",
    "SESSION_RECORD_LIMIT",
    "SESSION_ROOT_CHANGED",
    "SESSION_UNSUPPORTED_VERSION",
    "SESSION_WRITE_FAILED",
]
"""The stable codes of ``SessionStoreError``: the workshop's, without
``SESSION_ROLLBACK_FAILED`` (append-only files have no generations to roll back), and three of
tether's: ``SESSION_IN_USE`` (another writer holds the file), ``SESSION_CLOSED`` (the store or
tree was closed, or is a read-only snapshot) and ``SESSION_WRITE_FAILED`` (a write failed and
the file could not be put back to its last acknowledged entry: the store is retired)."""


class SessionStoreError(TetherError):
    """A session file, record or call was rejected, with a stable ``code``.

    Raised for everything wrong with a file's bytes or a caller's values, never a raw
    ``KeyError``, ``UnicodeError`` or ``RecursionError``. ``SESSION_WRITE_FAILED`` keeps the
    failed write's error and the failed repair's as an ``ExceptionGroup`` in ``__cause__``.
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
    ``tether.agent.compaction``). See the package docstring for how contexts are built.
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


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionRecovery:
    """What ``SessionStore.load`` repaired: the incomplete last line a crash left in the
    middle of a write (``dropped_bytes`` of it), cut off so the file ends with its last
    complete entry. Nothing acknowledged is in such a line (an append is acknowledged only
    once its whole line is on disk). ``str()`` is the note the CLI shows."""

    dropped_bytes: int

    def __str__(self) -> str:
        return "dropped an incomplete last entry"


# --- limits ------------------------------------------------------------------------------------


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
        check_positive_fields(self, "SessionLimits")

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
          session short. An append writes only its own line, so its cost does not grow
          with the file (``benchmarks/bench_session.py`` measures it); loading reads it all.
        * 1,048,576 records: four records a tool turn for 250,000 turns.
        """
        return cls(
            max_line_bytes=64 * 1024 * 1024,
            max_file_bytes=1024 * 1024 * 1024,
            max_records=1_048_576,
        )
