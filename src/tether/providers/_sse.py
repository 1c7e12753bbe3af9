"""tether's own Server-Sent Events decoder: bytes in, ``SSEEvent`` values out.

Real providers (OpenAI Chat Completions, Anthropic Messages, OpenAI Responses) stream their
answers as ``text/event-stream``. None of the common Python decoders
(docs/providers.md) follows the WHATWG rules exactly: they drop the first event after a
UTF-8 BOM, dispatch empty events, or split on U+2028 and corrupt the JSON. So tether decodes
the stream itself, on bytes, from the rules alone:

* lines end with CRLF, LF or a lone CR; a CR that ends one chunk may have its LF at the start
  of the next, so the decoder remembers it and skips that LF. Only these bytes end a line:
  U+2028, U+2029 and U+0085 are ordinary characters (the decoder works on bytes, and CR/LF
  never occur inside a UTF-8 multi-byte sequence, so each complete line is decoded on its
  own);
* every complete line must be UTF-8, or the stream is a ``PROVIDER_PROTOCOL_ERROR``;
* one UTF-8 BOM at the very start of the stream is stripped, even when its three bytes arrive
  in separate chunks;
* a line starting with ``:`` is a comment (``: OPENROUTER PROCESSING`` keep-alives);
* ``field:value`` splits at the first ``:`` and strips **one** leading space from the value; a
  line with no ``:`` is a field with an empty value;
* ``data`` lines accumulate, joined with ``\\n``; ``event`` sets the type (``"message"`` when
  none or an empty one was given); ``id`` sets the last event ID, which persists across events
  (an ``id`` containing NUL is ignored; an empty ``id`` resets it to ``""``); ``retry`` is kept
  only when it is ASCII digits, and also persists; other fields are ignored;
* a blank line dispatches the event, unless no ``data`` line was seen since the last one: then
  nothing is dispatched and the event type resets (the last event ID is still kept);
* at the end of the stream an incomplete event (no final blank line) is dropped, so a final
  ``data: [DONE]`` with no blank line after it vanishes: callers treat EOF as a normal end.

Every chunk is scanned with ``bytes.rfind``/``split``/``replace`` (C loops), never byte by
byte in Python; the common line, ``data: {...}`` ended by LF, takes the shortest path. Memory is
bounded: one event (the bytes of its lines since the previous blank line, line ends not
counted) is at most ``max_event_bytes``; an unfinished line longer than that fails at once
instead of being buffered; all the bytes fed are at most ``max_response_bytes``. Breaking a
bound is a ``PROVIDER_PROTOCOL_ERROR`` naming it. After any error the decoder stays failed.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import suppress
from typing import Any, Final, NoReturn, TypeAlias

from tether._base.dataclass import dataclass
from tether._base.exact_types import type_of
from tether.providers.errors import ProviderError

__all__ = [
    "DEFAULT_MAX_EVENT_BYTES",
    "DEFAULT_MAX_RESPONSE_BYTES",
    "EventFields",
    "SSEDecoder",
    "SSEEvent",
    "is_event_stream",
]

DEFAULT_MAX_EVENT_BYTES: Final = 1 << 20
"""Default bound on one event's bytes (1 MiB, the bound httpx2's own parser uses)."""

DEFAULT_MAX_RESPONSE_BYTES: Final = 64 << 20
"""Default bound on all the bytes of one streamed response (64 MiB)."""

_BOM: Final = b"\xef\xbb\xbf"
_DATA_SPACE: Final = b"data: "
_EVENT_SPACE: Final = b"event: "


EventFields: TypeAlias = tuple[str, str, str | None, int | None]
"""An event's fields as ``SSEDecoder.feed_fields`` returns them: ``(event, data, id, retry)``,
the values of the ``SSEEvent`` ``feed`` would return."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SSEEvent:
    """One dispatched event.

    ``event`` is the type (``"message"`` when the event named none); ``data`` is its ``data``
    lines joined with ``"\\n"``; ``id`` is the last event ID in force when it was dispatched
    (``None`` if the stream never set one, ``""`` after an empty ``id`` line); ``retry`` is the
    reconnection time in milliseconds last set by a valid ``retry`` line, if any.
    """

    event: str = "message"
    data: str
    id: str | None = None
    retry: int | None = None


def _slot_setter(name: str) -> Callable[[SSEEvent, object], None]:
    """The setter of ``SSEEvent``'s slot ``name`` (its member descriptor's ``__set__``)."""
    descriptor: Any = SSEEvent.__dict__[name]  # the slot's member descriptor
    setter: Callable[[SSEEvent, object], None] = descriptor.__set__
    return setter


# The decoder builds each SSEEvent by filling its slots directly: the frozen dataclass's
# __init__ (four object.__setattr__ calls behind keyword arguments) is three to four times
# slower and alone costs about as much as decoding the event. The result is the same frozen
# value (tests compare the two).
_new_object: Final[Callable[[type[SSEEvent]], SSEEvent]] = object.__new__
_set_event: Final = _slot_setter("event")
_set_data: Final = _slot_setter("data")
_set_id: Final = _slot_setter("id")
_set_retry: Final = _slot_setter("retry")


def is_event_stream(content_type: str | None) -> bool:
    """Whether a ``Content-Type`` header value is ``text/event-stream``.

    Parameters (``; charset=utf-8``) and case are ignored. Callers check this before decoding:
    an error response, or a server that ignored ``stream: true``, answers ``application/json``
    and must not be fed to ``SSEDecoder``.
    """
    if content_type is None:
        return False
    media_type = content_type.partition(";")[0]
    return media_type.strip(" \t").lower() == "text/event-stream"


class SSEDecoder:
    """Incremental ``text/event-stream`` decoder for one response.

    Call ``feed`` with each chunk of the body, in order and however it is split, and handle the
    events it returns; call ``close`` at the end of the body. The same bytes give the same
    events for every split. Every malformed stream is a ``ProviderError`` with code
    ``PROVIDER_PROTOCOL_ERROR``; once one is raised, ``feed`` raises again.
    """

    __slots__ = (
        "_check_head",
        "_comments",
        "_data",
        "_event_bytes",
        "_event_type",
        "_failure",
        "_halted",
        "_last_id",
        "_max_event_bytes",
        "_max_response_bytes",
        "_retry",
        "_skip_lf",
        "_started",
        "_tail",
        "_total_bytes",
    )

    def __init__(
        self,
        *,
        max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    ) -> None:
        """Bound one event to ``max_event_bytes`` and the whole stream to
        ``max_response_bytes`` (positive ints: ``TypeError``/``ValueError`` otherwise)."""
        for name, value in (
            ("max_event_bytes", max_event_bytes),
            ("max_response_bytes", max_response_bytes),
        ):
            if type_of(value) is not int:
                raise TypeError(f"{name} must be an int, not {type_of(value).__name__}")
            if value < 1:
                raise ValueError(f"{name} must be positive, not {value}")
        self._max_event_bytes = max_event_bytes
        self._max_response_bytes = max_response_bytes
        # The unfinished last line, without CR or LF (a bytearray while it grows over several
        # chunks with no line end), or the first bytes while they may still start a BOM.
        self._tail: bytes | bytearray = b""
        self._started = False  # the BOM check is done
        self._skip_lf = False  # the last line ended with CR: skip an LF that comes next
        self._check_head = True  # either of the two above needs a look at the next chunk
        self._total_bytes = 0
        # The event being read: its data lines, its bytes so far, its type ("" = message).
        self._data: list[str] = []
        self._event_bytes = 0
        self._event_type = ""
        self._last_id: str | None = None
        self._retry: int | None = None
        self._comments = 0
        self._halted = False  # failed or closed: feed() refuses
        self._failure: str | None = None  # the message of the error raised, if any

    @property
    def last_event_id(self) -> str | None:
        """The last event ID set so far (the ``Last-Event-ID`` to send on reconnection)."""
        return self._last_id

    @property
    def comments(self) -> int:
        """How many comment lines were decoded: keep-alives (``: OPENROUTER PROCESSING``),
        which a caller may count as the server being alive although they dispatch nothing."""
        return self._comments

    @property
    def retry(self) -> int | None:
        """The reconnection time (ms) last set by a valid ``retry`` line, if any."""
        return self._retry

    def feed(self, data: bytes) -> list[SSEEvent]:
        """Decode the next chunk of the body and return the events it completes.

        ``TypeError`` unless ``data`` is ``bytes``; ``RuntimeError`` after ``close``;
        ``ProviderError`` (``PROVIDER_PROTOCOL_ERROR``) on invalid UTF-8, a broken bound, or a
        decoder that already failed.
        """
        events: list[SSEEvent] = []
        append = events.append
        new_object, set_event, set_data = _new_object, _set_event, _set_data
        set_id, set_retry = _set_id, _set_retry
        for kind, text, last_id, retry in self.feed_fields(data):
            event = new_object(SSEEvent)  # see _new_object
            set_event(event, kind)
            set_data(event, text)
            set_id(event, last_id)
            set_retry(event, retry)
            append(event)
        return events

    def feed_fields(self, data: bytes) -> list[EventFields]:
        """``feed``, with each event as the plain tuple ``(event, data, id, retry)`` of its
        fields instead of an ``SSEEvent``: the same events, errors and state, for the
        providers' hot path, where building a frozen value per event cost about as much as
        decoding it (``feed`` builds its events from these tuples)."""
        if type_of(data) is not bytes:
            raise TypeError(f"SSEDecoder.feed() takes bytes, not {type_of(data).__name__}")
        if self._halted:
            self._refuse()
        if not data:
            return []
        total = self._total_bytes + len(data)
        self._total_bytes = total
        if total > self._max_response_bytes:
            self._fail(
                f"SSE response exceeds max_response_bytes ({self._max_response_bytes} bytes)"
            )
        if self._check_head:
            data = self._head(data)
            if not data:
                return []
        cr = data.rfind(b"\r")
        if cr < 0:
            # The common case, LF only: split the chunk itself (no copy of it first); the last
            # piece is the unfinished line (b"" when the chunk ends with its LF).
            lines = data.split(b"\n")
            if len(lines) == 1:
                return self._extend(data)
            tail = lines.pop()
        else:
            lf = data.rfind(b"\n")
            # Leave out the final line end (CR, LF or CRLF), then normalise the others to LF.
            if cr > lf:
                end = stop = cr
                if cr == len(data) - 1:  # its LF, if any, is in the next chunk
                    self._skip_lf = self._check_head = True
            else:
                end = lf
                stop = cr if cr == lf - 1 else lf
            lines = data[:stop].replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
            tail = data[end + 1 :]
        head = self._tail
        if head:  # the unfinished line of earlier chunks starts the first line
            lines[0] = b"".join((head, lines[0]))
        self._tail = tail
        if len(tail) > self._max_event_bytes:
            self._fail_line()
        return self._lines(lines)

    def close(self) -> list[SSEEvent]:
        """End of the body: drop any incomplete event and return the events left (always
        ``[]``: by the rules only a blank line dispatches). Calling it again, or after an
        error, is harmless."""
        self._halted = True
        self._tail = b""
        self._data.clear()
        self._event_bytes = 0
        self._event_type = ""
        return []

    def close_fields(self) -> list[EventFields]:
        """``close``, typed like ``feed_fields`` (also always ``[]``)."""
        self.close()
        return []

    # --- internals ---------------------------------------------------------------------------

    def _head(self, data: bytes) -> bytes:
        """Skip an LF that completes a CRLF split across chunks, and strip a BOM at the start
        of the stream, holding the first bytes until they show whether one is there. Returns
        what is left of ``data`` to decode."""
        self._check_head = False
        if self._skip_lf:
            self._skip_lf = False
            if data[0] == 0x0A:
                data = data[1:]
        if not self._started:
            head = bytes(self._tail) + data
            if len(head) < len(_BOM) and _BOM.startswith(head):
                self._tail = head
                self._check_head = True
                return b""
            self._started = True
            self._tail = b""
            data = head[len(_BOM) :] if head.startswith(_BOM) else head
        return data

    def _extend(self, data: bytes) -> list[EventFields]:
        """Add a chunk with no line end to the unfinished line (a bytearray, so a long line
        fed in tiny chunks costs linear time), within ``max_event_bytes``."""
        tail = self._tail
        if type_of(tail) is bytes:
            tail = self._tail = bytearray(tail)
        tail += data
        if len(tail) > self._max_event_bytes:
            self._fail_line()
        return []

    def _lines(self, lines: list[bytes]) -> list[EventFields]:
        """Apply complete lines (line ends removed) in order; return the dispatched events.

        The event being read is kept in locals while the lines are applied: its type, its
        first data line (``data``) and any further ones (``self._data``), its bytes so far;
        they are saved for the next chunk at the end. ``data: ...`` and ``event: ...`` lines
        (all that OpenAI and Anthropic send) are applied here; every other line in
        ``_field``."""
        events: list[EventFields] = []
        append = events.append
        parts = self._data
        data: str | None = parts.pop(0) if parts else None
        kind = self._event_type
        size = self._event_bytes
        limit = self._max_event_bytes
        data_space, event_space = _DATA_SPACE, _EVENT_SPACE
        try:
            for line in lines:
                if not line:  # a blank line: dispatch
                    size = 0
                    if data is not None:
                        if parts:
                            data = "\n".join((data, *parts))
                            parts.clear()
                        append((kind or "message", data, self._last_id, self._retry))
                        data = None
                    kind = ""
                    continue
                size += len(line)
                if size > limit:
                    self._fail(f"SSE event exceeds max_event_bytes ({limit} bytes)")
                # A slice compared, not ``startswith``: its argument parsing cost more than
                # the six-byte copy (about 200 machine instructions per line)
                if line[:6] == data_space:
                    value = line[6:].decode()
                elif line[:7] == event_space:
                    kind = line[7:].decode()
                    continue
                else:
                    self._event_type = kind
                    value = self._field(line.decode())
                    kind = self._event_type
                    if value is None:
                        continue
                if data is None:
                    data = value
                else:
                    parts.append(value)
        except UnicodeDecodeError as error:
            self._fail(f"SSE line is not valid UTF-8 ({error.reason} at byte {error.start})")
        if data is not None:
            parts.insert(0, data)
        self._event_type = kind
        self._event_bytes = size
        return events

    def _field(self, line: str) -> str | None:
        """Apply one non-blank line other than ``data: ...`` or ``event: ...`` (already
        decoded); returns the value of a ``data`` field, for the caller to add."""
        name, colon, value = line.partition(":")
        if colon:
            if not name:
                self._comments += 1  # a comment
                return None
            if value.startswith(" "):
                value = value[1:]
        if name == "data":
            return value
        if name == "event":
            self._event_type = value
        elif name == "id":
            if "\0" not in value:
                self._last_id = value
        elif name == "retry" and value.isascii() and value.isdigit():
            # More digits than int() accepts is no sane delay: ignored too.
            with suppress(ValueError):
                self._retry = int(value)
        return None

    def _refuse(self) -> NoReturn:
        """``feed`` on a failed or closed decoder."""
        if self._failure is not None:
            raise ProviderError("PROVIDER_PROTOCOL_ERROR", self._failure)
        raise RuntimeError("SSEDecoder.feed() called after close()")

    def _fail_line(self) -> NoReturn:
        """The unfinished line is longer than ``max_event_bytes``: fail now, unbuffered."""
        self._fail(
            f"SSE line exceeds max_event_bytes ({self._max_event_bytes} bytes) before its line end"
        )

    def _fail(self, message: str) -> NoReturn:
        """Raise ``PROVIDER_PROTOCOL_ERROR`` and keep the decoder failed."""
        self._failure = message
        self._halted = True
        raise ProviderError("PROVIDER_PROTOCOL_ERROR", message)
