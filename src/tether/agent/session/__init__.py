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

The package, one job a module, each depending only on those listed before it:

* ``records``: the header, message and compaction records, contexts, ``SessionLimits``,
  ``SessionStoreError`` and its codes;
* ``format``: the JSON codec, the key sets, and the canonical line of each kind;
* ``prefix``: the incomplete-prefix recognizer (a torn last line);
* ``decoder``: the message decoder compiled from the protocol's annotations;
* ``linkage``: branch-local tool linkage, contexts, and the parser's record index;
* ``parse``: ``parse_session`` and the loading rules;
* ``files``: the ``SessionFileSystem`` and ``session_io`` seams, identities, root checks,
  exclusive create and checked read;
* ``listing``: ``default_sessions_dir`` and ``list_sessions``;
* ``store``: ``SessionStore``, its options, the per-path locks, commits and rollback;
* ``tree``: ``SessionTree``.
"""

# The tests reach a few private helpers through this package (``session_module._Links``).
# pyright: reportPrivateUsage=false

from tether.agent.session.decoder import _decoder_for as _decoder_for
from tether.agent.session.decoder import _message_from_json as _message_from_json
from tether.agent.session.files import (
    RECOVERY_MARKER_SUFFIX,
    SessionFileSystem,
    SessionIO,
    session_io,
)
from tether.agent.session.linkage import _Links as _Links
from tether.agent.session.listing import (
    SessionInfo,
    SessionListError,
    default_sessions_dir,
    list_sessions,
)
from tether.agent.session.parse import parse_session
from tether.agent.session.prefix import _is_incomplete_object_prefix as _is_incomplete_object_prefix
from tether.agent.session.records import (
    MAX_SESSION_FILE_BYTES,
    MAX_SESSION_LINE_BYTES,
    MAX_SESSION_RECORDS,
    SESSION_FORMAT_VERSION,
    CompactionEntry,
    CompactionSummary,
    MessageEntry,
    ParsedSession,
    SessionContext,
    SessionEntry,
    SessionHeader,
    SessionLimits,
    SessionStoreError,
    SessionStoreErrorCode,
)
from tether.agent.session.records import _message_entry as _message_entry
from tether.agent.session.store import _PATH_LOCKS as _PATH_LOCKS
from tether.agent.session.store import SessionStore, SessionStoreOptions
from tether.agent.session.store import _locked_path as _locked_path
from tether.agent.session.tree import SessionTree

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
