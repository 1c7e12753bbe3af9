"""Checkpoint 10: persistent, branchable session trees in JSON-lines files.

A session is one file. Line 1 is the header, every further line one record; each line is
compact JSON (``separators=(",", ":")``, UTF-8, no ASCII escaping, except a record whose
message or summary holds a surrogate code point: that line is ASCII with ``\\u`` escapes, see
``format._value_bytes``) ending in ``\\n``::

    {"type":"session","version":1,"id":"session-001","createdAt":"2026-08-26T00:00:01.000Z"}
    {"type":"entry","version":1,"id":"e1","parentId":null,"timestamp":"...","message":{...}}

Keys are written in that order; a message is written by ``tether.to_json`` (so protocol v2
blocks, a thinking block's ``signature`` and ``redacted``, persist and reload byte for byte)
and read back by ``tether.from_json``. The rules, in short:

* **A tree, append-only.** Every record has an ``id`` and a ``parentId`` (``null`` for a root;
  several roots are allowed) naming an *earlier* record. Nothing is edited or deleted.
  ``SessionTree`` keeps an active leaf (a pointer only: ``move_to`` writes nothing); its
  active branch is the path from a root to that leaf. A new tree starts at the last record.
* **Append-only, durable.** ``append`` writes one line per record at the end of the file and
  fsyncs before it returns (``append_many``: several records, one write, one fsync; the
  Agent's recorder writes a turn's messages that way). Nothing already written is read,
  re-serialized or rewritten, so an append costs time proportional to its own record. The
  disk work runs on a worker thread, one write at a time per store in call order, so the
  event loop never waits for the disk. A write that fails is cut off the file again (it
  ends with the last acknowledged record; the error propagates, later appends proceed); if
  even that fails the store is retired (``SESSION_WRITE_FAILED``, raised by every later
  call). Memory changes only once the lines are on disk.
* **Recovery without a person.** A crash in the middle of a write leaves, at most, a torn
  last line. ``load`` cuts it off (so the file ends with its last complete record; nothing
  acknowledged is ever in it) and says so in ``store.recovered`` (a ``SessionRecovery``).
  Nothing else is repaired: a broken line in the middle, broken links, a file changed
  behind the store stay errors with their codes. No marker, no temporary copies; the old
  format's leftovers (``<path>.pify-session-recovery``, ``<path>.pify-session-<pid>-<uuid>``)
  are removed when a writer meets them (see ``legacy``).
* **One writer per file**, across processes: a writer (``create``, ``load``) holds an
  exclusive ``fcntl.flock`` on the file until ``close()``; a second writer, in this process
  or another, gets ``SESSION_IN_USE`` at once, naming the path. Readers (``read``,
  ``list_sessions``, ``parse_session``) take no lock and never wait: a line being written is
  read as a torn tail and ignored. A store dropped without ``close()`` lets the file go when
  it is garbage-collected.
* **Identity checks.** The parent directory (device, inode, birth time where the platform has
  one, and its real path) and the file (identity, and the size this writer wrote) are
  checked before every write and by ``flush``: a directory swapped underneath is
  ``SESSION_ROOT_CHANGED``; a file replaced, or written or cut behind the store's back, is
  ``SESSION_FILE_CHANGED``.
* **Fail-closed loading.** The parser accepts CRLF line ends and a valid last record without
  a final newline, and ignores only an unterminated last line that is a syntactically valid,
  merely *incomplete* prefix of a JSON object (a torn write: ``{"type":"entry","id":"cut``),
  possibly cut inside a multi-byte character. Everything else is an error with a stable
  code: invalid UTF-8 (anywhere, the tail included, except a character the tear cut short),
  malformed JSON, ``NaN``/``Infinity``, a wrong header, unknown keys, an
  unsupported ``version``, a message ``from_json`` rejects or one missing a field the writer
  always writes, a lone surrogate in an ID or timestamp, duplicate IDs, a parent that does
  not precede its child,
  and a branch whose tool results do not link to calls *on that branch*
  (``validate_transcript`` over the branch, ``MISSING_TOOL_RESULT`` ignored: a pending call
  is fine). A last record without its newline is kept; the next append ends it first.
  Loading is linear in the file: messages go through a decoder compiled from the protocol's
  annotations (the same mapping as ``from_json``, checked against it by the property tests),
  and linkage is extended record by record (same verdict as ``validate_transcript``, which
  still names the diagnostic in the error), instead of revalidating every branch from its
  root as the workshop does.
* **Bounded.** ``SessionLimits`` caps line bytes, file bytes and records, on load and before
  any write touches the disk. The defaults are the workshop's (64 KiB, 4 MiB, 4,096);
  ``SessionLimits.for_coding()`` is the profile a real coding session needs.
* **Serialized.** Each store's appends, ``flush`` and ``close`` run one at a time in the
  order they start (a store-local ``asyncio.Lock``). A ``SessionTree`` serializes its own
  ``move_to``/``append`` calls the same way.

Every operating-system call goes through the module-level ``session_io`` adapter (``open``,
``read``, ``write``, ``fsync``, ``truncate``, ``lock``, ``fstat``, ``close``, ``lstat``,
``stat``, ``realpath``, ``listdir``, ``remove``, ``rename``, ``mkdir``), so tests inject
faults at any step. Errors the operating system raises while writing propagate as
``OSError``; everything wrong with a file's bytes or a caller's values is a
``SessionStoreError`` with a stable code.
Format version 1 is unchanged: files written before sessions were append-only load as they
are, and the workshop's ``SESSION_ROLLBACK_FAILED`` (and the generation and rollback
machinery behind it, ``SessionFileSystem``, ``RECOVERY_MARKER_SUFFIX``,
``SessionStore.recover``) is retired.

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

**Images: blobs beside the file.** A message's images (``UserMessage.images``,
``ToolResultMessage.images``) are not written into its line: each image's bytes go to
``<path>.blobs/<sha256 hex>`` (written to a temporary name, fsynced, renamed, the directory
fsynced, all before the line that references them is appended), and the line's ``images``
holds one reference each, ``{"type":"imageRef","sha256":...,"mediaType":...,"width":...,
"height":...,"size":...}``, so a screenshot costs a line some 200 bytes. Load and ``read``
verify each blob (size, SHA-256, the image's header); one that is missing or corrupt leaves a
marker in its message's text instead of the image, is listed in
``store.unavailable_images``, and never stops the rest of the session loading. A malformed
reference is a broken line (``SESSION_INVALID_MESSAGE``). See ``blobs``.

Also beyond the workshop: ``default_sessions_dir()`` (the user's data directory, XDG rules),
``SessionStore.create_in`` (one ``<session-id>.jsonl`` per session in a ``0700`` directory),
``list_sessions`` (newest first, every ``*.jsonl`` listed, a broken one with its error code),
``parse_session`` (the parser on bytes) and ``SessionStore.read`` (a read-only snapshot).

The package, one job a module, each depending only on those listed before it:

* ``records``: the header, message and compaction records, contexts, ``SessionLimits``,
  ``SessionRecovery``, ``SessionStoreError`` and its codes;
* ``format``: the JSON codec, the key sets, and the canonical line of each kind;
* ``blobs``: image blobs beside the file and the references lines carry;
* ``prefix``: the incomplete-prefix recognizer (a torn last line);
* ``decoder``: the file's layer of the one protocol decoder (``protocol._decoder``);
* ``linkage``: branch-local tool linkage, contexts, and the parser's record index;
* ``parse``: ``parse_session`` and the loading rules;
* ``files``: the ``session_io`` seam, identities, root checks, bounded reads and writes;
* ``journal``: the writer's locked file (create, open, append, cut) and the reader's snapshot;
* ``legacy``: the old format's leftovers;
* ``listing``: ``default_sessions_dir`` and ``list_sessions``;
* ``store_options``: ``SessionStoreOptions`` and the snapshot of a caller's options;
* ``off_loop``: disk work on a worker thread, waited out when the caller is cancelled;
* ``_opening``: the disk work of ``create``, ``load`` (the repair of a torn last line
  included) and ``read``;
* ``_staging``: an append's checks, fresh IDs and lines, before anything is written;
* ``store``: ``SessionStore``: the writer, its lock, its reads and appends;
* ``tree``: ``SessionTree``.
"""

# The tests reach a few private helpers through this package (``session_module._Links``).
# pyright: reportPrivateUsage=false

from tether._base.lazy import lazy_exports

TYPE_CHECKING = False  # not ``typing.TYPE_CHECKING``: this package's import must stay cheap

if TYPE_CHECKING:
    from tether.agent.session.blobs import UnavailableImage, blob_directory_of
    from tether.agent.session.decoder import _decoder_for as _decoder_for
    from tether.agent.session.decoder import _message_from_json as _message_from_json
    from tether.agent.session.files import SessionIO, session_io
    from tether.agent.session.linkage import _Links as _Links
    from tether.agent.session.listing import (
        SessionInfo,
        SessionListError,
        default_sessions_dir,
        list_sessions,
    )
    from tether.agent.session.parse import parse_session
    from tether.agent.session.prefix import (
        _is_incomplete_object_prefix as _is_incomplete_object_prefix,
    )
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
        SessionRecovery,
        SessionStoreError,
        SessionStoreErrorCode,
    )
    from tether.agent.session.records import _message_entry as _message_entry
    from tether.agent.session.store import SessionStore
    from tether.agent.session.store_options import SessionStoreOptions
    from tether.agent.session.tree import SessionTree

_MODULES = {
    "blobs": ("UnavailableImage", "blob_directory_of"),
    "decoder": ("_decoder_for", "_message_from_json"),
    "files": ("SessionIO", "session_io"),
    "linkage": ("_Links",),
    "listing": ("SessionInfo", "SessionListError", "default_sessions_dir", "list_sessions"),
    "parse": ("parse_session",),
    "prefix": ("_is_incomplete_object_prefix",),
    "records": (
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
        "_message_entry",
    ),
    "store": ("SessionStore",),
    "store_options": ("SessionStoreOptions",),
    "tree": ("SessionTree",),
}

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
    "SessionIO",
    "SessionInfo",
    "SessionLimits",
    "SessionListError",
    "SessionRecovery",
    "SessionStore",
    "SessionStoreError",
    "SessionStoreErrorCode",
    "SessionStoreOptions",
    "SessionTree",
    "UnavailableImage",
    "blob_directory_of",
    "default_sessions_dir",
    "list_sessions",
    "parse_session",
    "session_io",
]


# Each name loads its module on first use: a ``SessionStore`` does not load the parser, the
# decoder, the blobs or the listing (nor the ``pathlib`` it loads) until it opens a file
# (issue 30: importing the usable API).
__getattr__, __dir__ = lazy_exports(__name__, _MODULES, globals())
