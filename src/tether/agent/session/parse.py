"""Loading: ``parse_session`` and the fail-closed rules that turn a file's bytes into its
header and checked records (see the package docstring)."""

# The package's modules share their underscore helpers with one another.
# pyright: reportPrivateUsage=false

from __future__ import annotations

import os
from typing import Any, Final, TypeGuard, cast

from tether._base.exact_types import type_of
from tether._base.strings import JS_WHITESPACE, is_non_empty
from tether.agent.session.blobs import _ImageLoader
from tether.agent.session.decoder import _entry_message, _role_decoders
from tether.agent.session.format import (
    _COMPACTION_KEYS,
    _ENTRY_KEYS,
    _HEADER_KEYS,
    _LONE_ESCAPE,
    _SUMMARY_KEYS,
    _decode_json,
    _describe,
    _dumps,
    _scan_once,
)
from tether.agent.session.linkage import _Index
from tether.agent.session.prefix import _is_incomplete_object_prefix
from tether.agent.session.records import (
    CompactionEntry,
    CompactionSummary,
    MessageEntry,
    ParsedSession,
    SessionEntry,
    SessionHeader,
    SessionLimits,
    SessionStoreError,
    _fail,
    _message_entry,
    _short,
)
from tether.protocol import MAX_SAFE_INTEGER
from tether.protocol._decoder import Decode

__all__ = ["parse_session"]

# --- header and record values ------------------------------------------------------------------


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


def _parse_record(value: Any, surrogates: bool, images: _ImageLoader) -> SessionEntry:
    """A record from its JSON value; ``surrogates``: the file has an escape that could
    stand for a lone surrogate, so the record's names (IDs, timestamp), which the writer
    never escapes, must be checked for one (a message or a summary may hold one: the
    writer escapes it, see ``format._value_bytes``); ``images`` loads the images its
    message references."""
    if type_of(value) is not dict:
        raise _fail("SESSION_INVALID_RECORD", "Session entry has an invalid shape")
    record: dict[str, object] = value
    kind = record.get("type")
    if kind == "entry" and record.keys() == _ENTRY_KEYS:
        entry_id, parent_id, timestamp = _record_fields(record)
        if surrogates and _has_lone_surrogate([entry_id, parent_id, timestamp]):
            raise _fail("SESSION_INVALID_RECORD", "Session record contains a lone surrogate")
        message = _entry_message(entry_id, record["message"], images)  # may hold surrogates
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
        if surrogates and _has_lone_surrogate([entry_id, parent_id, timestamp, first_kept]):
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


_LEADING_SPACE: Final = frozenset(JS_WHITESPACE)


def _quick_entry(value: Any, decoders: dict[str, Decode]) -> MessageEntry | None:
    """The usual line's record, by a shorter route than ``_parse_record``; ``None`` for any
    other value, which ``_parse_record`` then judges (its checks and errors, unchanged).

    The usual line is what the store writes: an ``entry`` record with exactly its keys,
    ``version`` the integer 1, an ID and a timestamp that are strings not starting with
    white space (so not blank), a parent that is ``null`` or such a string, and a message
    object without ``images`` (no image references to resolve) whose ``role`` names a
    message class. Those are the checks ``_parse_record`` makes, written out once with no
    call per field, and the message goes straight to its class's compiled decoder
    (``decoders``: ``decoder._role_decoders()``), the one the ``Message`` decoder would
    choose by that role, so its errors are the plain path's. The caller takes it only when
    the file has no escape that could stand for a lone surrogate (the plain path's extra
    scan). With the index's one-pass ``extend`` and the decoder's cheaper key check, it
    took loading 1,000 entries from 1.93x to 1.75x ``json.loads`` of every line
    (``benchmarks/bench_session.py``); the property tests check it against
    ``_parse_record`` on mutated records.
    """
    record: dict[str, Any] = value  # declared, not cast(): no call a line
    if type(record) is not dict:
        return None
    if record.keys() != _ENTRY_KEYS or record["type"] != "entry":
        return None
    version = record["version"]
    entry_id = record["id"]
    parent_id = record["parentId"]
    timestamp = record["timestamp"]
    message: dict[str, object] = record["message"]
    if type(version) is not int or version != 1:
        return None
    if type(entry_id) is not str or not entry_id or entry_id[0] in _LEADING_SPACE:
        return None
    if type(timestamp) is not str or not timestamp or timestamp[0] in _LEADING_SPACE:
        return None
    if parent_id is not None and (
        type(parent_id) is not str or not parent_id or parent_id[0] in _LEADING_SPACE
    ):
        return None
    if type(message) is not dict or "images" in message:
        return None
    role = message.get("role")
    decode = decoders.get(role) if type(role) is str else None
    if decode is None:
        return None
    return _message_entry(entry_id, parent_id, timestamp, decode(message))


# --- parsing -----------------------------------------------------------------------------------


def _line_too_large(number: int) -> SessionStoreError:
    return _fail("SESSION_LINE_TOO_LARGE", f"Session line {number} exceeds the byte limit")


def _invalid_json(number: int) -> SessionStoreError:
    return _fail("SESSION_INVALID_JSON", f"Session line {number} is not valid JSON")


def _line_values(body: bytes, limits: SessionLimits) -> list[object]:
    """The JSON value of every newline-terminated line of ``body`` (which ends in one)."""
    # Decoding all lines at once is faster and, since "\n" cannot occur inside a UTF-8
    # sequence, valid exactly when every line is; only an invalid body is decoded line by
    # line, so its errors come in line order like every other error.
    try:
        texts: list[str] | None = body.decode("utf-8").split("\n")
        lines: list[bytes] = []
        count = len(texts) - 1  # the empty segment after the final newline
    except UnicodeDecodeError:
        texts = None
        lines = body.split(b"\n")
        count = len(lines) - 1
    max_line = limits.max_line_bytes
    quick = max_line // 4  # a line of at most this many code points has at most max_line bytes
    values: list[object] = []
    scan = _scan_once
    for number in range(count):
        if texts is not None:
            text = texts[number]
            size = len(text)
            if size > quick:
                stripped = text[:-1] if text[-1:] == "\r" else text
                if len(stripped) > max_line or len(stripped.encode("utf-8")) > max_line:
                    raise _line_too_large(number + 1)
            value: object = None
            try:
                value, end = scan(text, 0)
            except (StopIteration, ValueError, RecursionError):
                end = -1
            if end == size:  # the usual line: one value, nothing around it
                values.append(value)
                continue
            if text[-1:] == "\r":
                text = text[:-1]
        else:
            line = lines[number]
            if line[-1:] == b"\r":
                line = line[:-1]
            if len(line) > max_line:
                raise _line_too_large(number + 1)
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
            raise _invalid_json(number + 1) from None
    return values


_TORN: Final = object()
"""``_tail_value``'s answer for a torn last line."""


def _tail_value(tail: bytes, number: int, limits: SessionLimits) -> object:
    """The value of a last line without a newline, or ``_TORN`` when it is the start of a
    line a crash cut short: a valid but incomplete prefix of a JSON object, possibly cut
    inside a multi-byte character. Anything else wrong with it is an error."""
    if tail[-1:] == b"\r":
        tail = tail[:-1]
    if len(tail) > limits.max_line_bytes:
        raise _line_too_large(number)
    cut_character = False
    try:
        text = tail.decode("utf-8")
    except UnicodeDecodeError as error:
        if error.end != len(tail) or error.reason != "unexpected end of data":
            raise _fail(
                "SESSION_INVALID_UTF8", f"Session line {number} is not valid UTF-8"
            ) from None
        text = tail[: error.start].decode("utf-8")  # valid: the first error starts there
        cut_character = True
    if text[:1] == "\ufeff":
        text = text[1:]
    if cut_character:
        # Only a string can hold a non-ASCII character, and the recognizer treats them all
        # alike: the tear is in a string exactly when the text goes on with any one of them.
        if _is_incomplete_object_prefix(text + "\u00e9"):
            return _TORN
        raise _fail("SESSION_INVALID_UTF8", f"Session line {number} is not valid UTF-8")
    try:
        value = _decode_json(text)
    except (ValueError, RecursionError):
        if _is_incomplete_object_prefix(text):
            return _TORN
        raise _invalid_json(number) from None
    return value


def _parse(
    data: bytes, limits: SessionLimits, images: _ImageLoader | None = None
) -> tuple[SessionHeader, _Index, int]:
    """The header, the checked records, and how many bytes of a torn last line were
    ignored (0 when the file ends with a complete line). ``images`` loads the images the
    records reference (``None``: none are loaded; each is marked unavailable)."""
    loader = _ImageLoader(None) if images is None else images
    if not data:
        raise _fail("SESSION_INVALID_HEADER", "Session file is empty")
    end = data.rfind(b"\n") + 1  # the end of the last newline-terminated line
    values = _line_values(data[:end], limits) if end else []
    torn = 0
    if end < len(data):
        value = _tail_value(data[end:], data.count(b"\n", 0, end) + 1, limits)
        if value is _TORN:
            torn = len(data) - end
        else:
            values.append(value)
    if not values:
        raise _fail("SESSION_INVALID_HEADER", "Session header is missing or incomplete")
    escapes = _LONE_ESCAPE.search(data) is not None  # only then can a value hold a surrogate
    header = _parse_header(values[0], escapes)
    index = _Index()
    by_id = index.by_id
    max_records = limits.max_records
    decoders = _role_decoders()
    for position in range(1, len(values)):
        if len(index.entries) >= max_records:
            raise _fail("SESSION_RECORD_LIMIT", "Session record limit exceeded")
        value = values[position]
        entry = None if escapes else _quick_entry(value, decoders)
        if entry is None:
            entry = _parse_record(value, escapes, loader)
        values[position] = None  # its JSON is garbage now: fewer live objects, less GC work
        if entry.id in by_id:
            raise _fail("SESSION_DUPLICATE_ENTRY_ID", f'Duplicate entry ID "{_short(entry.id)}"')
        if entry.parent_id is not None and entry.parent_id not in by_id:
            raise _fail(
                "SESSION_PARENT_NOT_FOUND",
                f'Parent entry "{_short(entry.parent_id)}" must precede its child',
            )
        index.extend(entry, "SESSION_INVALID_RECORD")
    return header, index, torn


def parse_session(
    data: bytes,
    limits: SessionLimits | None = None,
    *,
    blobs: str | os.PathLike[str] | None = None,
) -> ParsedSession:
    """Parse a session file's bytes by the loading rules (see the package docstring).

    The parser ``SessionStore.load`` uses: for tools that inspect session files. A torn
    last line is ignored (``load`` also cuts it off the file). Images are read from the
    blob directory ``blobs`` (``blob_directory_of(path)``); without it none are read and
    each is replaced by its marker (``tether.agent.session.blobs``). Raises only
    ``SessionStoreError`` (and ``TypeError`` for non-bytes).
    """
    if type(data) is not bytes:
        raise TypeError(f"parse_session() needs bytes (got {type(data).__name__})")
    loader = _ImageLoader(None if blobs is None else os.fspath(blobs))
    header, index, _ = _parse(data, SessionLimits() if limits is None else limits, loader)
    return ParsedSession(header=header, entries=tuple(index.entries))
