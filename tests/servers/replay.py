"""``ReplayServer``: a scripted HTTP/1.1 server on 127.0.0.1 for provider transport tests.

Why: provider adapters must be tested against real sockets (connection reuse, resets,
stalls, a closed connection after an abort), which neither ``MockTransport`` nor llm-katan
can script. This server is built on raw asyncio streams, runs on the test's own event loop,
and answers each request with the next queued ``Script`` (FIFO)::

    async with ReplayServer() as server:
        script = server.respond(sse_response(sse_body([{"choices": []}]), split="bytes1"))
        ...  # point a client at server.url ("http://127.0.0.1:PORT/v1")
        assert server.requests[0].headers["authorization"] == "Bearer k"

What a ``Script`` controls: the status, the headers, the body bytes, how the body is cut into
writes (``split``), the framing (chunked, Content-Length or close-delimited), a
``Content-Encoding`` the server compresses the body with (``encoding``: gzip, zlib deflate or
raw deflate), and the faults: ``reset_after`` (TCP RST after N body bytes), ``close_after`` (a
clean FIN after N body bytes, no terminator), ``stall_after`` (N bytes, then wait for
``script.release`` or the client leaving), ``delay_headers`` (an event awaited before the
status line: a first-byte stall) and ``reset_before_headers``. Two faults are about time and
use short real intervals (the tests that use them are about timeouts): ``header_delay``
(seconds before the status line) and ``drip`` (seconds before every body piece: with
``split="bytes1"`` a server that drips one byte at a time). ``redirect_response`` builds a
3xx answer naming a ``Location``.

``connections`` counts the TCP connections the server accepted: a client that reuses its
keep-alive connection for sequential requests opens one.

Rules that keep the suite's loop checks green: the listening socket is bound to 127.0.0.1 port
0; every connection is served by tasks the server owns, all cancelled and awaited on exit;
every wait ends when its event is set, when the client goes away, when the server exits, or
after ``max_hold`` seconds (then the exit raises, naming the stuck wait). A request that finds
the queue empty gets a 500 with a JSON error body saying the test scripted no response.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import random
import socket
import struct
import time
import zlib
from collections import deque
from collections.abc import Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from types import TracebackType
from typing import Any, Final, Literal, TypedDict, Unpack

__all__ = [
    "SSE_CONTENT_TYPE",
    "Connection",
    "Encoding",
    "Framing",
    "HeaderItems",
    "Outcome",
    "ReplayServer",
    "Request",
    "Script",
    "ScriptOptions",
    "Split",
    "SseEvent",
    "encode_body",
    "json_response",
    "redirect_response",
    "sse_body",
    "sse_response",
]

HOST: Final = "127.0.0.1"
SSE_CONTENT_TYPE: Final = "text/event-stream; charset=utf-8"
JSON_CONTENT_TYPE: Final = "application/json"

MAX_REQUEST_HEAD: Final = 64 * 1024
MAX_REQUEST_BODY: Final = 16 * 1024 * 1024

Split = Literal["whole", "bytes1"] | tuple[Literal["random"], int] | list[int]
"""How the body is cut into separate socket writes.

``"whole"``: one write. ``"bytes1"``: one write per byte. ``("random", seed)``: pieces of 1 to
32 bytes from ``random.Random(seed)`` (reproducible). ``[o1, o2, ...]``: cut at these body
offsets (e.g. between a CR and its LF). Each piece is flushed to the kernel and followed by
one event-loop turn, so a client on the same loop usually, but not provably, reads the pieces
separately; the bytes delivered are the same in every mode.
"""

Framing = Literal["auto", "chunked", "length", "close"]
"""``"auto"``: chunked for ``text/event-stream``, Content-Length otherwise. ``"close"``: no
length, the server closes the connection after the body (an EOF-delimited HTTP/1.1 body)."""

Outcome = Literal["sent", "reset", "closed", "client-gone", "cancelled"]
"""How the server finished a script: sent completely; reset (RST, by ``reset_after`` or
``reset_before_headers``); closed (FIN, by ``close_after``); the client left first; the server
exited while still playing it."""

HeaderItems = Mapping[str, str] | Sequence[tuple[str, str]]

Encoding = Literal["gzip", "deflate", "deflate-raw"]
"""How ``Script.encoding`` compresses the body: ``"gzip"`` (``Content-Encoding: gzip``),
``"deflate"`` (the zlib format RFC 9110 names ``deflate``) or ``"deflate-raw"`` (a raw deflate
stream sent as ``Content-Encoding: deflate``, as some servers do)."""


def encode_body(body: bytes, encoding: Encoding) -> bytes:
    """``body`` compressed as ``encoding`` would send it."""
    wbits = {"gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS, "deflate-raw": -zlib.MAX_WBITS}
    compressor = zlib.compressobj(6, zlib.DEFLATED, wbits[encoding])
    return compressor.compress(body) + compressor.flush()


def _now() -> float:
    return time.monotonic()


@dataclass(eq=False)
class Script:
    """One scripted response. Create it inside the test (its events bind to the running loop).

    Offsets count body bytes as sent (not chunked framing; with ``encoding``, the compressed
    bytes: ``wire_body``). A fault offset may equal ``len(body)``:
    then the whole body is sent but not the end of the framing (the zero-length chunk), so a
    chunked client sees an incomplete body; with Content-Length the body is already complete.
    ``stall_after`` may be combined with one fault at the same or a later offset.

    The server fills in the observation fields: ``started`` (set when a request takes this
    script; ``request`` is that request), ``stalled`` (set once the first ``stall_after``
    bytes were flushed and the server is waiting on ``release``), ``finished`` (set when the
    server is done with it; ``outcome`` says how).
    """

    body: bytes = b""
    status: int = 200
    headers: HeaderItems = ()
    split: Split = "whole"
    framing: Framing = "auto"
    reset_after: int | None = None
    close_after: int | None = None
    stall_after: int | None = None
    delay_headers: asyncio.Event | None = None
    reset_before_headers: bool = False
    encoding: Encoding | None = None
    header_delay: float = 0.0
    drip: float = 0.0
    release: asyncio.Event = field(default_factory=asyncio.Event)
    wire_body: bytes = field(default=b"", init=False, repr=False)
    started: asyncio.Event = field(default_factory=asyncio.Event, init=False)
    stalled: asyncio.Event = field(default_factory=asyncio.Event, init=False)
    finished: asyncio.Event = field(default_factory=asyncio.Event, init=False)
    outcome: Outcome | None = field(default=None, init=False)
    request: Request | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if not 100 <= self.status <= 999:
            raise ValueError(f"status {self.status} is not a 3-digit HTTP status")
        self.wire_body = (
            self.body if self.encoding is None else encode_body(self.body, self.encoding)
        )
        for seconds in (self.header_delay, self.drip):
            if not 0 <= seconds <= 5:
                raise ValueError("header_delay and drip are short real intervals (0 to 5 s)")
        for name, value in _header_items(self.headers):
            if name.lower() in ("content-length", "transfer-encoding"):
                raise ValueError(f"{name!r} is set by the server from `framing`")
            if name.lower() == "content-encoding" and self.encoding is not None:
                raise ValueError("content-encoding is set by the server from `encoding`")
            if any(c in name + value for c in "\r\n") or not name or ":" in name:
                raise ValueError(f"malformed header {name!r}: {value!r}")
        if self.reset_after is not None and self.close_after is not None:
            raise ValueError("give at most one of reset_after and close_after")
        for label, offset in (
            ("reset_after", self.reset_after),
            ("close_after", self.close_after),
            ("stall_after", self.stall_after),
        ):
            if offset is not None and not 0 <= offset <= len(self.wire_body):
                raise ValueError(f"{label}={offset} is outside the body (0..{len(self.wire_body)})")
        fault = self.fault_offset
        if self.stall_after is not None and fault is not None and self.stall_after > fault:
            raise ValueError("stall_after must not come after the fault offset")
        if isinstance(self.split, list) and any(
            not 0 < o < len(self.wire_body) for o in self.split
        ):
            raise ValueError("split offsets must lie strictly inside the body")

    @property
    def fault_offset(self) -> int | None:
        """Where the body is cut short by a reset or a close, if anywhere."""
        return self.reset_after if self.reset_after is not None else self.close_after

    @property
    def resolved_framing(self) -> Literal["chunked", "length", "close"]:
        if self.framing != "auto":
            return self.framing
        content_type = _header_items_dict(self.headers).get("content-type", "")
        return "chunked" if content_type.startswith("text/event-stream") else "length"


class ScriptOptions(TypedDict, total=False):
    """The ``Script`` fields the builders pass through (all but body, status and headers)."""

    split: Split
    framing: Framing
    reset_after: int | None
    close_after: int | None
    stall_after: int | None
    delay_headers: asyncio.Event | None
    reset_before_headers: bool
    encoding: Encoding | None
    header_delay: float
    drip: float
    release: asyncio.Event


@dataclass(eq=False)
class Request:
    """One request as received: ``headers`` has lower-cased names (repeats joined by ", ");
    ``raw_headers`` keeps the order and spelling; ``path`` is the request target as sent."""

    method: str
    path: str
    headers: dict[str, str]
    raw_headers: list[tuple[str, str]]
    body: bytes
    connection: Connection
    received_at: float
    script: Script | None

    @property
    def json(self) -> Any:
        """The body parsed as JSON (raises ``ValueError`` if it is not JSON)."""
        return json.loads(self.body)


@dataclass(eq=False)
class Connection:
    """One accepted TCP connection, as the server saw it.

    ``closed`` is set (and ``closed_at``, a ``time.monotonic()`` value, recorded) when the
    *client* closed (``closed_by="client-eof"``) or reset (``"client-reset"``) the
    connection. It is not set when the server itself closed it (a fault, ``close`` framing,
    a malformed request, server exit); ``ended`` is set whenever the connection is gone,
    whoever closed it.
    """

    index: int
    peer: tuple[str, int]
    opened_at: float
    closed: asyncio.Event = field(default_factory=asyncio.Event)
    closed_at: float | None = None
    closed_by: Literal["client-eof", "client-reset"] | None = None
    ended: asyncio.Event = field(default_factory=asyncio.Event)
    requests: list[Request] = field(default_factory=list[Request])
    _buffer: bytearray = field(default_factory=bytearray, repr=False)
    _changed: asyncio.Event = field(default_factory=asyncio.Event, repr=False)
    _eof: bool = field(default=False, repr=False)
    _server_closing: bool = field(default=False, repr=False)

    def _client_left(self, how: Literal["client-eof", "client-reset"]) -> None:
        self._eof = True
        if not self._server_closing and not self.closed.is_set():
            self.closed_at = _now()
            self.closed_by = how
            self.closed.set()
        self._changed.set()


class _BadRequest(Exception):
    """The client sent something this server does not accept as an HTTP/1.1 request."""


class _Abandon(Exception):
    """The client went away while the server was waiting or writing."""


class ReplayServer:
    """A scripted HTTP/1.1 server on 127.0.0.1; see the module docstring.

    Attributes after ``__aenter__``: ``port``, ``origin`` (``http://127.0.0.1:PORT``), ``url``
    (``origin + base_path``, default ``/v1``). Records: ``requests`` (every request, in
    arrival order), ``connections`` (every accepted connection), ``unscripted`` (requests
    answered with the empty-queue 500), ``protocol_errors`` (malformed requests, answered
    400). ``pending`` holds the scripts not used yet.
    """

    def __init__(self, *, base_path: str = "/v1", max_hold: float = 30.0) -> None:
        self.base_path = base_path
        self.max_hold = max_hold
        self.requests: list[Request] = []
        self.connections: list[Connection] = []
        self.unscripted: list[Request] = []
        self.protocol_errors: list[str] = []
        self._queue: deque[Script] = deque()
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._failures: list[str] = []
        self._closing = False
        self._arrived: asyncio.Condition | None = None
        self.port = 0

    # -- lifecycle ---------------------------------------------------------------------------

    async def __aenter__(self) -> ReplayServer:
        self._arrived = asyncio.Condition()
        self._server = await asyncio.start_server(self._accept, HOST, 0)
        sockets = self._server.sockets
        assert len(sockets) == 1, sockets
        address = sockets[0].getsockname()
        assert address[0] == HOST, address
        self.port = int(address[1])
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()
        if exc is None and self._failures:
            raise AssertionError("ReplayServer: " + "; ".join(self._failures))

    async def aclose(self) -> None:
        """Stop listening, cancel every connection task and wait for all of them."""
        self._closing = True
        server, self._server = self._server, None
        if server is not None:
            server.close()
        while self._tasks:
            tasks = list(self._tasks)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            self._tasks.difference_update(tasks)
        if server is not None:
            await server.wait_closed()

    @property
    def origin(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def url(self) -> str:
        return self.origin + self.base_path

    # -- scripting ---------------------------------------------------------------------------

    def respond(self, script: Script) -> Script:
        """Queue ``script`` as the answer to the next request not yet answered; return it."""
        self._queue.append(script)
        return script

    @property
    def pending(self) -> list[Script]:
        return list(self._queue)

    async def wait_for_requests(self, count: int) -> list[Request]:
        """Wait (event-driven, no polling) until ``count`` requests have arrived."""
        assert self._arrived is not None, "the server is not running"
        async with self._arrived:
            await self._arrived.wait_for(lambda: len(self.requests) >= count)
        return self.requests[:count]

    # -- connection handling -----------------------------------------------------------------

    def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        # A plain callback (not a coroutine) so the task is registered before any await: the
        # exit path can then never miss a connection accepted just before it.
        if self._closing:
            writer.transport.abort()
            return
        peer = writer.get_extra_info("peername")
        connection = Connection(len(self.connections), (str(peer[0]), int(peer[1])), _now())
        self.connections.append(connection)
        # Drain only returns once everything written was handed to the kernel, so a reset
        # never discards bytes the script said to send.
        writer.transport.set_write_buffer_limits(high=0)
        self._spawn(self._pump(connection, reader))
        self._spawn(self._serve(connection, writer))

    def _spawn(self, coroutine: Coroutine[Any, Any, None]) -> None:
        task: asyncio.Task[None] = asyncio.get_running_loop().create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _pump(self, connection: Connection, reader: asyncio.StreamReader) -> None:
        """Read everything the client sends into the connection's buffer; notice EOF/reset."""
        try:
            while True:
                data = await reader.read(65536)
                if not data:
                    connection._client_left("client-eof")  # pyright: ignore[reportPrivateUsage]
                    return
                connection._buffer += data  # pyright: ignore[reportPrivateUsage]
                connection._changed.set()  # pyright: ignore[reportPrivateUsage]
                if len(connection._buffer) > MAX_REQUEST_HEAD + MAX_REQUEST_BODY:  # pyright: ignore[reportPrivateUsage]
                    self.protocol_errors.append("client sent more than the buffer bound")
                    connection._client_left("client-eof")  # pyright: ignore[reportPrivateUsage]
                    return
        except ConnectionError:
            connection._client_left("client-reset")  # pyright: ignore[reportPrivateUsage]

    async def _serve(self, connection: Connection, writer: asyncio.StreamWriter) -> None:
        cancelled = False
        try:
            while True:
                try:
                    request = await self._read_request(connection)
                except _BadRequest as error:
                    self.protocol_errors.append(str(error))
                    await self._send_simple(writer, 400, {"error": {"message": str(error)}})
                    return
                if request is None:
                    return
                if not await self._answer(connection, writer, request):
                    return
        except (_Abandon, ConnectionError):
            return
        except asyncio.CancelledError:
            cancelled = True
            raise
        except Exception as error:  # a bug in this server: report it at exit, never hide it
            self._failures.append(f"connection {connection.index} crashed: {error!r}")
        finally:
            await self._teardown(connection, writer, abort=cancelled)

    async def _teardown(
        self, connection: Connection, writer: asyncio.StreamWriter, *, abort: bool
    ) -> None:
        connection._server_closing = True  # pyright: ignore[reportPrivateUsage]
        transport = writer.transport
        if abort:
            transport.abort()
        elif not transport.is_closing():
            writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()
        connection.ended.set()

    async def _read_request(self, connection: Connection) -> Request | None:
        head = await self._read_until(connection, b"\r\n\r\n", MAX_REQUEST_HEAD)
        if head is None:
            return None
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            raise _BadRequest(f"bad request line {lines[0]!r}")
        method, path, _version = parts
        raw_headers: list[tuple[str, str]] = []
        for line in lines[1:]:
            name, colon, value = line.partition(":")
            if not colon or not name or name != name.strip() or line[0] in " \t":
                raise _BadRequest(f"bad header line {line!r}")
            raw_headers.append((name, value.strip(" \t")))
        headers = _header_items_dict(raw_headers)
        if "chunked" in headers.get("transfer-encoding", "").lower():
            body = await self._read_chunked(connection)
        elif "content-length" in headers:
            try:
                length = int(headers["content-length"])
            except ValueError:
                raise _BadRequest("bad content-length") from None
            if not 0 <= length <= MAX_REQUEST_BODY:
                raise _BadRequest(f"content-length {length} out of bounds")
            body = await self._read_exactly(connection, length)
        else:
            body = b""
        return Request(method, path, headers, raw_headers, body, connection, _now(), None)

    async def _read_chunked(self, connection: Connection) -> bytes:
        body = bytearray()
        while True:
            line = await self._read_until(connection, b"\r\n", 1024)
            if line is None:
                raise _Abandon
            try:
                size = int(line.split(b";", 1)[0].strip(), 16)
            except ValueError:
                raise _BadRequest(f"bad chunk size line {line!r}") from None
            if size == 0:
                while True:  # trailers, bounded by MAX_REQUEST_HEAD per line and the buffer
                    trailer = await self._read_until(connection, b"\r\n", MAX_REQUEST_HEAD)
                    if trailer is None:
                        raise _Abandon
                    if not trailer:
                        return bytes(body)
            if len(body) + size > MAX_REQUEST_BODY:
                raise _BadRequest("chunked request body too large")
            body += await self._read_exactly(connection, size)
            if await self._read_exactly(connection, 2) != b"\r\n":
                raise _BadRequest("chunk not followed by CRLF")

    async def _read_until(self, connection: Connection, marker: bytes, limit: int) -> bytes | None:
        """Bytes before ``marker`` (consumed); None on EOF before any byte of a new message."""
        buffer = connection._buffer  # pyright: ignore[reportPrivateUsage]
        while True:
            index = buffer.find(marker)
            if index >= 0:
                if index > limit:
                    raise _BadRequest(f"line or head longer than {limit} bytes")
                data = bytes(buffer[:index])
                del buffer[: index + len(marker)]
                return data
            if len(buffer) > limit:
                raise _BadRequest(f"line or head longer than {limit} bytes")
            if connection._eof:  # pyright: ignore[reportPrivateUsage]
                if buffer:
                    raise _Abandon
                return None
            await self._wait_for_data(connection)

    async def _read_exactly(self, connection: Connection, count: int) -> bytes:
        buffer = connection._buffer  # pyright: ignore[reportPrivateUsage]
        while len(buffer) < count:
            if connection._eof:  # pyright: ignore[reportPrivateUsage]
                raise _Abandon
            await self._wait_for_data(connection)
        data = bytes(buffer[:count])
        del buffer[:count]
        return data

    @staticmethod
    async def _wait_for_data(connection: Connection) -> None:
        # Single consumer: clearing right before waiting cannot lose a wake-up, as the pump
        # only runs while this task is suspended.
        connection._changed.clear()  # pyright: ignore[reportPrivateUsage]
        await connection._changed.wait()  # pyright: ignore[reportPrivateUsage]

    # -- answering ---------------------------------------------------------------------------

    async def _answer(
        self, connection: Connection, writer: asyncio.StreamWriter, request: Request
    ) -> bool:
        """Answer one request; True if the connection stays open for the next one."""
        script = self._queue.popleft() if self._queue else None
        request.script = script
        self.requests.append(request)
        connection.requests.append(request)
        assert self._arrived is not None
        async with self._arrived:
            self._arrived.notify_all()
        keep_alive = request.headers.get("connection", "").lower() != "close"
        if script is None:
            self.unscripted.append(request)
            message = (
                f"ReplayServer: the test scripted no response for {request.method} "
                f"{request.path} (request #{len(self.requests)})"
            )
            error = {"message": message, "type": "replay_unscripted", "param": None, "code": None}
            await self._send_simple(writer, 500, {"error": error}, keep_alive=keep_alive)
            return keep_alive
        script.request = request
        script.started.set()
        outcome: Outcome = "cancelled"
        try:
            outcome = await self._play(connection, writer, script)
        except (_Abandon, ConnectionError):
            outcome = "client-gone"
            raise
        finally:
            script.outcome = outcome
            script.finished.set()
        wants_close = _header_items_dict(script.headers).get("connection", "").lower() == "close"
        return (
            outcome == "sent"
            and keep_alive
            and not wants_close
            and script.resolved_framing != "close"
        )

    async def _play(
        self, connection: Connection, writer: asyncio.StreamWriter, script: Script
    ) -> Outcome:
        if script.delay_headers is not None:
            await self._hold(connection, script.delay_headers, "delay_headers")
        await self._pause(connection, script.header_delay)
        if script.reset_before_headers:
            self._reset(connection, writer)
            return "reset"
        framing = script.resolved_framing
        head = [f"HTTP/1.1 {script.status} {_reason(script.status)}"]
        head += [f"{name}: {value}" for name, value in _header_items(script.headers)]
        if script.encoding is not None:
            head.append(f"content-encoding: {script.encoding.removesuffix('-raw')}")
        body = script.wire_body
        if framing == "chunked":
            head.append("transfer-encoding: chunked")
        elif framing == "length":
            head.append(f"content-length: {len(body)}")
        else:
            head.append("connection: close")
        await self._write(connection, writer, ("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))

        fault = script.fault_offset
        stops = {o for o in (fault, script.stall_after) if o is not None}
        for start, piece in _pieces(body, script.split, stops):
            if start == script.stall_after and not script.stalled.is_set():
                await self._stall(connection, script)
            if start == fault:
                return self._fault(connection, writer, script)
            await self._pause(connection, script.drip)
            if framing == "chunked":
                piece = b"%x\r\n%b\r\n" % (len(piece), piece)
            await self._write(connection, writer, piece)
        if script.stall_after == len(body) and not script.stalled.is_set():
            await self._stall(connection, script)
        if fault == len(body):
            return self._fault(connection, writer, script)
        if framing == "chunked":
            await self._write(connection, writer, b"0\r\n\r\n")
        return "sent"

    @staticmethod
    async def _pause(connection: Connection, seconds: float) -> None:
        """Wait ``seconds`` (a script's short real interval); ``_Abandon`` if the client
        leaves first."""
        if seconds <= 0:
            return
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                await connection.closed.wait()
        if connection.closed.is_set():
            raise _Abandon

    async def _stall(self, connection: Connection, script: Script) -> None:
        script.stalled.set()
        await self._hold(connection, script.release, "stall_after (script.release)")

    def _fault(
        self, connection: Connection, writer: asyncio.StreamWriter, script: Script
    ) -> Outcome:
        if script.reset_after is not None:
            self._reset(connection, writer)
            return "reset"
        connection._server_closing = True  # pyright: ignore[reportPrivateUsage]
        writer.close()  # a clean FIN: the framing terminator is never sent
        return "closed"

    @staticmethod
    def _reset(connection: Connection, writer: asyncio.StreamWriter) -> None:
        """Abort the connection with a TCP RST (SO_LINGER 0), not a FIN."""
        connection._server_closing = True  # pyright: ignore[reportPrivateUsage]
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        writer.transport.abort()

    async def _hold(self, connection: Connection, event: asyncio.Event, what: str) -> None:
        """Wait for ``event``; raise ``_Abandon`` if the client leaves first or on the bound."""
        if connection.closed.is_set():
            raise _Abandon
        if event.is_set():
            return
        loop = asyncio.get_running_loop()
        waiters = [loop.create_task(event.wait()), loop.create_task(connection.closed.wait())]
        try:
            await asyncio.wait(waiters, timeout=self.max_hold, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in waiters:
                waiter.cancel()
            await asyncio.wait(waiters)
        if connection.closed.is_set():
            raise _Abandon
        if not event.is_set():
            self._failures.append(f"{what} was not released within {self.max_hold} s")
            raise _Abandon

    async def _write(
        self, connection: Connection, writer: asyncio.StreamWriter, data: bytes
    ) -> None:
        if connection.closed.is_set():
            raise _Abandon
        writer.write(data)
        await writer.drain()
        # One loop turn, so that a client on this loop gets to read this piece on its own.
        await asyncio.sleep(0)

    async def _send_simple(
        self, writer: asyncio.StreamWriter, status: int, obj: object, *, keep_alive: bool = False
    ) -> None:
        body = json.dumps(obj).encode()
        head = (
            f"HTTP/1.1 {status} {_reason(status)}\r\ncontent-type: {JSON_CONTENT_TYPE}\r\n"
            f"content-length: {len(body)}\r\n"
            + ("" if keep_alive else "connection: close\r\n")
            + "\r\n"
        )
        writer.write(head.encode("latin-1") + body)
        await writer.drain()


# -- helpers ---------------------------------------------------------------------------------


def _header_items(headers: HeaderItems) -> list[tuple[str, str]]:
    if isinstance(headers, Mapping):
        return list(headers.items())
    return list(headers)


def _header_items_dict(headers: HeaderItems) -> dict[str, str]:
    result: dict[str, str] = {}
    for name, value in _header_items(headers):
        key = name.lower()
        result[key] = f"{result[key]}, {value}" if key in result else value
    return result


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Overloaded" if status == 529 else "Unknown"


def _pieces(body: bytes, split: Split, stops: set[int]) -> list[tuple[int, bytes]]:
    """Cut ``body`` into ``(offset, bytes)`` pieces per ``split``, also cutting at ``stops``."""
    if split == "whole":
        cuts: set[int] = set()
    elif split == "bytes1":
        cuts = set(range(1, len(body)))
    elif isinstance(split, tuple):
        rng = random.Random(split[1])
        cuts = set()
        offset = rng.randint(1, 32)
        while offset < len(body):
            cuts.add(offset)
            offset += rng.randint(1, 32)
    else:
        cuts = set(split)
    bounds = sorted({0, len(body)} | cuts | {s for s in stops if 0 < s < len(body)})
    return [(a, body[a:b]) for a, b in itertools.pairwise(bounds) if b > a]


@dataclass(frozen=True)
class SseEvent:
    """One SSE event with optional ``event:``/``id:``/``retry:`` fields.

    ``data`` is a str (multi-line text becomes several ``data:`` lines), a mapping (compact
    JSON, non-ASCII kept raw) or None (no ``data:`` line at all).
    """

    data: str | Mapping[str, object] | None = None
    event: str | None = None
    id: str | None = None
    retry: int | None = None


def _data_text(data: str | Mapping[str, object]) -> str:
    if isinstance(data, str):
        return data
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False)


def sse_body(
    payloads: Sequence[str | Mapping[str, object] | SseEvent],
    *,
    done: bool = True,
    line_ending: Literal["\n", "\r\n", "\r"] = "\n",
    bom: bool = False,
    comments: Sequence[str] = (),
    comment_between: str | None = None,
    event_from_type: bool = False,
    final_blank_line: bool = True,
) -> bytes:
    """Encode ``payloads`` as an SSE body: ``data: <json>`` + blank line per event.

    ``done`` appends ``data: [DONE]``. ``bom`` prefixes a UTF-8 BOM. ``comments`` are
    ``: text`` lines before the first event (OpenRouter-style keep-alives);
    ``comment_between`` is a comment line written between events. ``event_from_type`` adds
    ``event: <payload["type"]>`` to mapping payloads (Anthropic's framing).
    ``final_blank_line=False`` leaves the last event unterminated (EOF mid-event).
    """
    eol = line_ending
    events: list[SseEvent] = []
    for payload in payloads:
        if isinstance(payload, SseEvent):
            events.append(payload)
        elif isinstance(payload, str):
            events.append(SseEvent(payload))
        else:
            kind = payload.get("type") if event_from_type else None
            events.append(SseEvent(payload, event=kind if isinstance(kind, str) else None))
    if done:
        events.append(SseEvent("[DONE]"))
    out = "\ufeff" if bom else ""
    out += "".join(f": {comment}{eol}" for comment in comments)
    for position, event in enumerate(events):
        if position and comment_between is not None:
            out += f": {comment_between}{eol}"
        lines: list[str] = []
        if event.event is not None:
            lines.append(f"event: {event.event}")
        if event.id is not None:
            lines.append(f"id: {event.id}")
        if event.retry is not None:
            lines.append(f"retry: {event.retry}")
        if event.data is not None:
            lines += [f"data: {line}" for line in _data_text(event.data).split("\n")]
        last = position == len(events) - 1
        out += "".join(line + eol for line in lines)
        if not last or final_blank_line:
            out += eol
    return out.encode("utf-8")


def sse_response(
    body: bytes, *, status: int = 200, headers: HeaderItems = (), **options: Unpack[ScriptOptions]
) -> Script:
    """A ``Script`` with ``content-type: text/event-stream; charset=utf-8`` (chunked), plus
    ``headers``; ``options`` are the other ``Script`` fields (split, faults...)."""
    items = [("content-type", SSE_CONTENT_TYPE), *_header_items(headers)]
    return Script(body=body, status=status, headers=items, **options)


def redirect_response(
    status: int, location: str, *, headers: HeaderItems = (), **options: Unpack[ScriptOptions]
) -> Script:
    """A ``Script`` answering ``status`` (a 3xx) with ``Location: location`` and a short
    plain-text body, plus ``headers`` and the other ``Script`` fields."""
    items = [("content-type", "text/plain"), ("location", location), *_header_items(headers)]
    return Script(body=b"moved", status=status, headers=items, **options)


def json_response(
    status: int, obj: object, *, headers: HeaderItems = (), **options: Unpack[ScriptOptions]
) -> Script:
    """A ``Script`` whose body is ``json.dumps(obj)`` as ``application/json`` (Content-Length
    unless ``framing`` says otherwise), plus ``headers`` and the other ``Script`` fields."""
    items = [("content-type", JSON_CONTENT_TYPE), *_header_items(headers)]
    return Script(body=json.dumps(obj).encode(), status=status, headers=items, **options)
