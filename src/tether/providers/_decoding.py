"""A response body's ``Content-Encoding``, decoded incrementally and bounded.

tether asks for ``Accept-Encoding: identity``, but a proxy may compress anyway, and Anthropic's
API sends gzip streams (recorded traffic says "recorded with Content-Encoding: gzip"). Reading
those bytes raw fails the SSE decoder ("not valid UTF-8") and turns an error body into
garbage, so ``body_decoder`` returns a ``BodyDecoder`` for ``gzip`` (``x-gzip``; several
members in a row too) and ``deflate`` (the zlib format RFC 9110 names, or the raw deflate
stream some servers send instead, told apart by the zlib header), and ``None`` for
``identity`` or no header.

Bounds, because compressed bytes are untrusted (a gzip bomb inflates about 1000:1): one call
returns at most ``MAX_PIECE`` decoded bytes (the rest waits in zlib's unconsumed input until
the next call, ``pending`` says so), so one small network read never becomes a huge string; the
whole decoded body is at most ``limit`` bytes. Breaking the bound, a corrupt stream, or an
encoding tether does not decode (``br``, ``zstd``, stacked encodings) is a
``PROVIDER_PROTOCOL_ERROR``; a compressed stream cut off before its end is
``PROVIDER_STREAM_INTERRUPTED``.
"""

from __future__ import annotations

import zlib
from typing import Final, Literal, Protocol

from tether.providers.errors import ProviderError

__all__ = ["MAX_PIECE", "BodyDecoder", "body_decoder"]

MAX_PIECE: Final = 64 << 10
"""Most decoded bytes one ``BodyDecoder.decode`` call returns."""

Coding = Literal["gzip", "deflate"]

_CODINGS: Final[dict[str, Coding]] = {"gzip": "gzip", "x-gzip": "gzip", "deflate": "deflate"}
_GZIP_WBITS: Final = 16 + zlib.MAX_WBITS
_ZLIB_WBITS: Final = zlib.MAX_WBITS
_RAW_WBITS: Final = -zlib.MAX_WBITS


class _Inflater(Protocol):
    """What ``BodyDecoder`` uses of a ``zlib.decompressobj()``."""

    @property
    def eof(self) -> bool: ...
    @property
    def unconsumed_tail(self) -> bytes: ...
    @property
    def unused_data(self) -> bytes: ...
    def decompress(self, data: bytes, /, max_length: int = 0) -> bytes: ...


def body_decoder(content_encoding: str | None, limit: int) -> BodyDecoder | None:
    """The decoder for a ``Content-Encoding`` header value, ``None`` when the body is sent as
    it is; ``PROVIDER_PROTOCOL_ERROR`` for an encoding tether does not decode."""
    if content_encoding is None:
        return None
    codings = [
        part.strip(" \t").lower() for part in content_encoding.split(",") if part.strip(" \t")
    ]
    codings = [coding for coding in codings if coding != "identity"]
    if not codings:
        return None
    coding = _CODINGS.get(codings[0]) if len(codings) == 1 else None
    if coding is None:
        shown = content_encoding[:100]
        raise ProviderError(
            "PROVIDER_PROTOCOL_ERROR",
            f"The server sent a body with Content-Encoding {shown!r}; tether asks for identity "
            "and decodes only gzip and deflate",
        )
    return BodyDecoder(coding, limit)


class BodyDecoder:
    """Inflates one response body (see the module docstring).

    ``decode(data)`` takes the next compressed bytes and returns decoded bytes (possibly
    none yet); while ``pending`` is true, decoded output is still waiting: call
    ``decode(b"")`` before reading more. ``finish()`` at the end of the body.
    """

    __slots__ = ("_coding", "_head", "_inflater", "_limit", "_more", "_size", "_tail")

    def __init__(self, coding: Coding, limit: int) -> None:
        self._coding: Coding = coding
        self._limit = limit
        self._size = 0
        self._tail = b""  # compressed input not decoded yet (output was bounded)
        self._more = False  # the last output was cut at MAX_PIECE: zlib may hold more
        self._head = b""  # deflate: the first bytes, until the zlib header can be checked
        self._inflater: _Inflater | None = (
            zlib.decompressobj(_GZIP_WBITS) if coding == "gzip" else None
        )

    @property
    def pending(self) -> bool:
        """Whether decoded output is waiting for the next ``decode(b"")``."""
        return bool(self._tail) or self._more

    def decode(self, data: bytes) -> bytes:
        """Decoded bytes for ``data`` (at most ``MAX_PIECE``; the rest stays ``pending``)."""
        inflater = self._inflater
        if inflater is None:  # deflate, format not known yet
            self._head += data
            if len(self._head) < 2:
                return b""
            inflater = self._inflater = zlib.decompressobj(_deflate_wbits(self._head))
            data, self._head = self._head, b""
        if self._tail:
            data = self._tail + data
        out = b""
        try:
            while True:
                if inflater.eof:
                    if self._coding != "gzip" or not data:
                        break  # bytes after a deflate stream's end are ignored
                    # a gzip body may hold several members in a row
                    inflater = self._inflater = zlib.decompressobj(_GZIP_WBITS)
                elif not data and not self._more:
                    break
                room = MAX_PIECE - len(out)
                piece = inflater.decompress(data, room)
                out += piece
                self._more = len(piece) == room and not inflater.eof
                data = inflater.unconsumed_tail or inflater.unused_data
                if len(out) >= MAX_PIECE:
                    break
        except zlib.error as error:
            raise self._corrupt(error) from None
        self._tail = b"" if inflater.eof and self._coding != "gzip" else data
        self._size += len(out)
        if self._size > self._limit:
            raise ProviderError(
                "PROVIDER_PROTOCOL_ERROR",
                f"The {self._coding} response body inflates beyond {self._limit} bytes",
            )
        return out

    def finish(self) -> None:
        """The body ended: its compressed stream must have ended too."""
        inflater = self._inflater
        if inflater is None and not self._head:
            return  # deflate with no byte at all: an empty body
        if inflater is None or not inflater.eof or self.pending:
            raise ProviderError(
                "PROVIDER_STREAM_INTERRUPTED",
                f"The {self._coding} response body ended before its compressed stream did",
            )

    def _corrupt(self, error: zlib.error) -> ProviderError:
        return ProviderError(
            "PROVIDER_PROTOCOL_ERROR", f"The {self._coding} response body is corrupt: {error}"
        )


def _deflate_wbits(head: bytes) -> int:
    """The zlib format when ``head`` starts with a valid zlib header, else raw deflate."""
    cmf, flg = head[0], head[1]
    is_zlib = cmf & 0x0F == 8 and cmf >> 4 <= 7 and (cmf << 8 | flg) % 31 == 0
    return _ZLIB_WBITS if is_zlib else _RAW_WBITS
