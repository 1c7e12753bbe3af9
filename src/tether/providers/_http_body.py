"""The body half of ``tether.providers._http``: ``BodyReader`` reads a response body as it
arrives, through the request's ``RequestWatch`` (deadlines, abort) and decoding a
``Content-Encoding`` a server sent anyway (bounded); ``read_limited`` reads a whole bounded
body; ``close_response`` closes one."""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Final

from tether.providers._watch import RequestWatch
from tether.providers.errors import ProviderError

if TYPE_CHECKING:
    import httpx2

    from tether.providers._decoding import BodyDecoder

__all__ = ["DRAIN_SECONDS", "MAX_DRAIN_BYTES", "BodyReader", "close_response", "read_limited"]
DRAIN_SECONDS: Final = 0.1
"""How long the rest of a body is read after its end event, so the connection can be reused
(the openai SDK drains for at most 0.1 s too); a body still open after that is dropped."""

MAX_DRAIN_BYTES: Final = 65_536
"""Most bytes read (and ignored) after a body's end event."""


async def read_limited(
    response: httpx2.Response, limit: int, watch: RequestWatch, idle: float
) -> bytes:
    """At most ``limit`` (decoded) bytes of the body, more is a protocol error; the body is one
    event, so it must arrive whole within ``idle`` of its first byte."""
    parts: list[bytes] = []
    size = 0
    reader = BodyReader(response, watch, idle, limit)
    try:
        while part := await reader.read():
            size += len(part)
            if size > limit:
                raise ProviderError(
                    "PROVIDER_PROTOCOL_ERROR", f"The response body exceeds {limit} bytes"
                )
            parts.append(part)
    finally:
        await reader.aclose()
    return b"".join(parts)


_stream_errors: tuple[type[BaseException], ...] = ()
_timeout_errors: tuple[type[BaseException], ...] = ()


def _load_errors() -> None:
    """The httpx2 exception classes ``BodyReader`` maps, looked up once (httpx2 loads late)."""
    global _stream_errors, _timeout_errors
    import httpx2

    _stream_errors = (httpx2.NetworkError, httpx2.RemoteProtocolError)
    _timeout_errors = (httpx2.TimeoutException,)


class BodyReader:
    """Reads a response body as it arrives (``await reader.read()``; ``b""`` at its end).

    Every read goes through ``watch``: the first must come within the first-byte deadline
    (set by ``open_stream``), after which the idle deadline is ``idle`` from the first byte
    (the caller moves it on at each event). A ``Content-Encoding`` is decoded (at most
    ``limit`` decoded bytes, pieces of at most 64 KiB). A lost connection is
    ``PROVIDER_STREAM_INTERRUPTED``, a timeout ``PROVIDER_TIMEOUT``, an abort its reason.
    ``drain()`` reads what is left after the end event, briefly, so the connection is reused.
    """

    __slots__ = ("_chunks", "_decoder", "_idle", "_next", "_started", "_watch")

    def __init__(
        self, response: httpx2.Response, watch: RequestWatch, idle: float, limit: int
    ) -> None:
        if not _stream_errors:
            _load_errors()
        # Here, not at import: the decoders (and zlib) load with the first body (issue 30).
        from tether.providers._decoding import body_decoder

        self._chunks = response.aiter_raw()
        self._next = self._chunks.__anext__
        self._decoder: BodyDecoder | None = body_decoder(
            response.headers.get("content-encoding"), limit
        )
        self._watch = watch
        self._idle = idle
        self._started = False

    async def read(self) -> bytes:
        """The next non-empty piece of the (decoded) body, or ``b""`` once it has ended."""
        decoder = self._decoder
        if decoder is not None and decoder.pending:
            part = decoder.decode(b"")
            if part:
                return part
        while True:
            part = await self._raw()
            if not part:
                if decoder is not None:
                    while decoder.pending:
                        rest = decoder.decode(b"")
                        if rest:
                            return rest
                    decoder.finish()
                return b""
            if not self._started:
                self._started = True
                self._watch.expect(self._idle, "idle")
            if decoder is not None:
                part = decoder.decode(part)
            if part:
                return part

    async def _raw(self) -> bytes:
        """The next piece of the raw body (``b""`` at its end), through the watch."""
        watch = self._watch
        watch.enter()
        try:
            part = await self._next()
        except StopAsyncIteration:
            watch.leave()
            return b""
        except asyncio.CancelledError:
            error = watch.interrupted()
            if error is None:
                raise
            raise error from None
        except _timeout_errors as error:
            watch.leave()
            raise ProviderError(
                "PROVIDER_TIMEOUT", f"The HTTP client timed out: {error!r}"[:300]
            ) from error
        except _stream_errors as error:
            watch.leave()
            raise ProviderError(
                "PROVIDER_STREAM_INTERRUPTED",
                f"The connection was lost before the response ended: {error}"[:500],
            ) from error
        watch.leave()
        return part

    async def drain(self) -> None:
        """After the end event: read (and ignore) the rest of the raw body for at most
        ``DRAIN_SECONDS`` and ``MAX_DRAIN_BYTES``, so its end (a chunked terminator, a gzip
        trailer) arrives and the connection goes back to the pool; otherwise the response is
        simply closed. Never raises an ``Exception``."""
        self._watch.expect(DRAIN_SECONDS, "drain")
        size = 0
        with contextlib.suppress(Exception):
            while part := await self._raw():
                size += len(part)
                if size > MAX_DRAIN_BYTES:
                    return

    async def aclose(self) -> None:
        """Stop reading (the response itself is closed with ``close_response``)."""
        with contextlib.suppress(Exception):
            await self._chunks.aclose()


async def close_response(response: httpx2.Response) -> None:
    """Close ``response`` now (its connection is released or dropped); never raises
    anything but a ``BaseException`` that is not an ``Exception``."""
    with contextlib.suppress(Exception):
        await response.aclose()
