"""The JSON-lines format: the strict JSON codec, the exact key sets of each line kind, and
the canonical bytes of a header and of every record (see the package docstring's layout)."""

# The package's modules share their underscore helpers with one another.
# pyright: reportPrivateUsage=false, reportUnusedFunction=false

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable
from typing import Final

from tether.agent.session.blobs import ImageRef, image_digest
from tether.agent.session.records import (
    CompactionEntry,
    CompactionSummary,
    MessageEntry,
    SessionEntry,
    SessionHeader,
    SessionLimits,
    SessionStoreErrorCode,
    _fail,
    _short,
)
from tether.jsonvalue import STRICT_DECODER
from tether.protocol import ImageBlock, Message, assert_never, to_json
from tether.protocol._decoder import camel_case

__all__: list[str] = []

# --- JSON lines --------------------------------------------------------------------------------

_ENCODER: Final = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
_dumps: Final = _ENCODER.encode
_ASCII_ENCODER: Final = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"), allow_nan=False)
_dumps_ascii: Final = _ASCII_ENCODER.encode


_DECODER: Final = STRICT_DECODER
_raw_decode: Final = _DECODER.raw_decode
_scan_once: Final[Callable[[str, int], tuple[object, int]]] = getattr(  # noqa: B009
    _DECODER,
    "scan_once",  # an attribute __init__ sets, missing from the stubs
)
"""The decoder's scanner: ``(value, end)`` of the JSON value at an index, ``StopIteration``
when there is none (the loader's fast path for a line that is exactly one value)."""
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


def _json_keys(cls: type) -> frozenset[str]:
    """The keys of a record kind's JSON object: its fields, camelCased (as the protocol's
    codec names them), so a field added to the dataclass is a key the parser expects."""
    return frozenset(camel_case(field.name) for field in dataclasses.fields(cls))


_HEADER_KEYS: Final = _json_keys(SessionHeader)
_ENTRY_KEYS: Final = _json_keys(MessageEntry)
_COMPACTION_KEYS: Final = _json_keys(CompactionEntry)
_SUMMARY_KEYS: Final = _json_keys(CompactionSummary)


def _encode(text: str, code: SessionStoreErrorCode, what: str) -> bytes:
    """``text`` as UTF-8, or ``code`` when it holds a surrogate: for the store's own names
    (the header, entry IDs, timestamps), which are never written escaped."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        raise _fail(code, f"{what} contains a lone surrogate") from None


def _value_bytes(text: str, value: object) -> bytes:
    """The bytes of ``text``, which is ``_dumps(value)``: protocol text (a message, a
    compaction summary), which may hold a surrogate code point, e.g. from a provider's
    ``"\\ud800"`` escape, which ``json.loads`` decodes to a lone surrogate.

    The usual text is written as it is (UTF-8, no ASCII escaping: the fast path, one
    ``encode``). Only text UTF-8 cannot encode (it holds a surrogate) is written again with
    ``ensure_ascii=True``: valid ASCII JSON whose ``\\uXXXX`` escapes ``json.loads`` (the
    loader) decodes back to the same string, so the record is kept, losslessly. The one
    change: a surrogate pair written as two code points (``"\\ud83d\\ude00"``) reloads as
    the one character it encodes (``"\U0001f600"``), the same UTF-16 text; JSON has no
    spelling that keeps the halves apart. The property tests check both paths."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return _dumps_ascii(value).encode("ascii")


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
    """The canonical JSON of a message (``to_json``), encoded (``_value_bytes``: text with a
    surrogate is written escaped). Its images are written as references (``blobs``), never
    as base64."""
    return _message_body(message)[0]


def _message_body(message: Message) -> tuple[bytes, list[tuple[str, bytes]]]:
    """A message's line bytes (as ``_message_bytes``) and the blobs its image references
    name, ``(sha256, bytes)`` each, which must be on disk before the line is."""
    blobs: list[tuple[str, bytes]] = []
    try:
        if message.role == "assistant" or not message.images:
            data = to_json(message)
        else:
            data = to_json(dataclasses.replace(message, images=()))
            refs: list[object] = []
            for image in message.images:
                digest = image_digest(image.data)
                blobs.append((digest, image.data))
                refs.append(_ref_of(digest, image))
            data["images"] = refs
        text = _dumps(data)
    except (TypeError, ValueError) as error:  # pragma: no cover - protocol values are JSON
        raise _fail("SESSION_INVALID_MESSAGE", f"Session message is invalid: {error}") from None
    return _value_bytes(text, data), blobs


def _ref_of(digest: str, image: ImageBlock) -> dict[str, object]:
    """An image's reference in a line (``blobs.ImageRef``'s JSON form)."""
    ref = ImageRef(
        sha256=digest,
        media_type=image.media_type,
        width=image.width,
        height=image.height,
        size=len(image.data),
    )
    return ref.to_json()


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
    """A compaction's line: its names refuse a surrogate (``_encode``), its summary (a
    model's text) is written as ``_value_bytes`` writes a message."""
    first_kept = compaction.first_kept_entry_id
    head = (
        _record_prefix("compaction", compaction.id, compaction.parent_id, compaction.timestamp)
        + ',"summary":'
    )
    summary = {"id": compaction.summary.id, "content": compaction.summary.content}
    tail = (
        f',"firstKeptEntryId":{"null" if first_kept is None else _dumps(first_kept)},'
        f'"unitsBefore":{compaction.units_before},"unitsAfter":{compaction.units_after}}}\n'
    )
    what = "Session compaction record"
    return (
        _encode(head, "SESSION_INVALID_RECORD", what)
        + _value_bytes(_dumps(summary), summary)
        + _encode(tail, "SESSION_INVALID_RECORD", what)
    )


def _check_line(line: bytes, limits: SessionLimits) -> bytes:
    if len(line) - 1 > limits.max_line_bytes:
        raise _fail("SESSION_LINE_TOO_LARGE", "Serialized session record exceeds the line limit")
    return line


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
