"""The loopback test servers themselves: ``ReplayServer`` and the llm-katan fixtures.

Provider tests rely on these servers to do exactly what a script says on a real 127.0.0.1
socket (split writes, RST vs FIN, stalls, first-byte delays, compressed bodies, timed header
delays and drips, redirects, keep-alive and the connection count, request recording, noticing
a client's early close), so each behaviour is checked here with plain asyncio
streams or ``httpx2`` before anything is built on it. The llm-katan tests (``slow``) check the
real process: plain and streamed OpenAI chat, its 429 after ``--rate-limit-after 1``, key
validation, and that it listens on 127.0.0.1 only.

No test sleeps to wait: they wait on the servers' events (the header-delay and drip modes are
short real intervals the tests measure), and every test runs under a bounded
``asyncio.timeout`` so a regression fails instead of hanging.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import subprocess
import sys
import time
from collections.abc import AsyncGenerator, AsyncIterator
from pathlib import Path
from typing import Any, Final

import httpx2
import pytest

from servers.katan import (
    OPENAI_KEY,
    KatanFactory,
    KatanServer,
    KatanStartError,
    free_port,
    run_katan,
    stop_process,
)
from servers.replay import (
    SSE_CONTENT_TYPE,
    Encoding,
    ReplayServer,
    Script,
    Split,
    SseEvent,
    encode_body,
    json_response,
    redirect_response,
    sse_body,
    sse_response,
)
from support import turns

BOUND: Final = 10.0
"""Outer timeout (seconds) of every async test: far above the real durations (~ms)."""

# A body that trips naive decoders: CRLF and lone CR, multi-byte UTF-8, U+2028, a comment.
TRICKY_BODY: Final = (
    b'data: {"text":"h\xc3\xa9llo \xe2\x80\xa8 \xf0\x9f\x98\x80"}\r\n\r\n'
    b": keep-alive\r"
    b'data: {"n":2}\r\r'
    b"data: [DONE]\n\n"
) * 3


def client() -> httpx2.AsyncClient:
    """A client that never consults proxy variables: traffic stays on 127.0.0.1."""
    return httpx2.AsyncClient(trust_env=False, timeout=httpx2.Timeout(BOUND))


async def read_raw(response: httpx2.Response) -> bytes:
    return b"".join([chunk async for chunk in response.aiter_raw()])


async def collect(chunks: AsyncIterator[bytes], into: bytearray) -> None:
    """Append every chunk to ``into``, so a test can see what arrived before a failure."""
    async for chunk in chunks:
        into += chunk


async def reads(reader: asyncio.StreamReader) -> AsyncIterator[bytes]:
    while data := await reader.read(65536):
        yield data


async def fetch(http: httpx2.AsyncClient, url: str) -> bytes:
    async with http.stream("GET", url) as response:
        return await response.aread()


@contextlib.asynccontextmanager
async def raw_connection(
    server: ReplayServer,
) -> AsyncGenerator[tuple[asyncio.StreamReader, asyncio.StreamWriter]]:
    """A plain asyncio stream connection to the server, always closed afterwards."""
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    try:
        yield reader, writer
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()


def raw_request(path: str = "/v1/x", *, close: bool = True) -> bytes:
    connection = "connection: close\r\n" if close else ""
    return f"GET {path} HTTP/1.1\r\nhost: 127.0.0.1\r\n{connection}\r\n".encode()


async def read_until_eof(reader: asyncio.StreamReader) -> tuple[bytes, list[bytes]]:
    """Everything until EOF, and the separate reads it arrived in."""
    reads: list[bytes] = []
    while data := await reader.read(65536):
        reads.append(data)
    return b"".join(reads), reads


# -- ReplayServer: body delivery --------------------------------------------------------------

SPLITS: Final[list[Split]] = ["whole", "bytes1", ("random", 1), ("random", 2024), [1, 17, 18]]


@pytest.mark.parametrize("split", SPLITS, ids=str)
@pytest.mark.parametrize("framing", ["chunked", "length", "close"])
async def test_every_split_mode_delivers_the_same_bytes(split: Split, framing: Any) -> None:
    """Whatever the split and framing, the client receives exactly the scripted body."""
    async with asyncio.timeout(BOUND), ReplayServer() as server, client() as http:
        script = server.respond(sse_response(TRICKY_BODY, split=split, framing=framing))
        async with http.stream("GET", server.url + "/stream") as response:
            assert response.status_code == 200
            assert response.headers["content-type"] == SSE_CONTENT_TYPE
            assert await read_raw(response) == TRICKY_BODY
        assert script.outcome == "sent"
        expected = {"chunked": "transfer-encoding", "length": "content-length"}.get(framing)
        if expected is not None:
            assert expected in response.headers


async def test_chunked_split_is_visible_on_the_wire() -> None:
    """``bytes1`` writes one chunk per byte, flushed separately; the client on the same loop
    does see several separate reads (not a single coalesced one)."""
    async with asyncio.timeout(BOUND), ReplayServer() as server:
        server.respond(sse_response(b"abc", split="bytes1"))
        async with raw_connection(server) as (reader, writer):
            writer.write(raw_request())
            wire, reads = await read_until_eof(reader)
        head, _, body = wire.partition(b"\r\n\r\n")
        assert b"transfer-encoding: chunked" in head
        assert body == b"1\r\na\r\n1\r\nb\r\n1\r\nc\r\n0\r\n\r\n"
        assert len(reads) > 1


async def test_auto_framing_is_length_for_json() -> None:
    """JSON answers get Content-Length by default; SSE answers get chunked (checked above)."""
    async with asyncio.timeout(BOUND), ReplayServer() as server, client() as http:
        server.respond(
            json_response(429, {"error": {"message": "slow down"}}, headers={"retry-after": "2"})
        )
        response = await http.post(server.url + "/chat/completions", json={})
        assert response.status_code == 429
        assert response.headers["content-length"] == str(len(response.content))
        assert response.headers["retry-after"] == "2"
        assert response.json() == {"error": {"message": "slow down"}}


# -- ReplayServer: faults ---------------------------------------------------------------------


@pytest.mark.parametrize("framing", ["chunked", "length"])
async def test_reset_after_aborts_the_connection_mid_body(framing: Any) -> None:
    """``reset_after=N``: N body bytes arrive, then the read fails with a connection error."""
    async with asyncio.timeout(BOUND), ReplayServer() as server, client() as http:
        script = server.respond(sse_response(TRICKY_BODY, reset_after=40, framing=framing))
        received = bytearray()
        async with http.stream("GET", server.url + "/stream") as response:
            assert response.status_code == 200
            with pytest.raises(httpx2.ReadError):
                await collect(response.aiter_raw(), received)
        assert bytes(received) == TRICKY_BODY[:40]
        assert script.outcome == "reset"
        assert not server.connections[0].closed.is_set(), "the server, not the client, closed"


async def test_reset_is_an_rst_not_a_fin() -> None:
    """A raw client sees ECONNRESET (an RST), not a clean EOF, after the N bytes."""
    async with asyncio.timeout(BOUND), ReplayServer() as server:
        server.respond(Script(b"0123456789", reset_after=4))
        async with raw_connection(server) as (reader, writer):
            writer.write(raw_request())
            received = bytearray()
            with pytest.raises(ConnectionResetError):
                await collect(reads(reader), received)
        assert received.endswith(b"\r\n\r\n0123")


async def test_reset_before_headers_fails_the_request() -> None:
    """``reset_before_headers``: the request is read, then RST with no status line at all."""
    async with asyncio.timeout(BOUND), ReplayServer() as server, client() as http:
        script = server.respond(Script(b"unused", reset_before_headers=True))
        with pytest.raises(httpx2.TransportError):
            await http.post(server.url + "/chat/completions", json={"a": 1})
        assert script.outcome == "reset"
        assert server.requests[0].json == {"a": 1}


async def test_close_after_is_a_clean_eof_without_the_terminator() -> None:
    """``close_after=N``: N bytes, then FIN; chunked framing never gets its zero chunk, so the
    client reports an incomplete body; a raw client sees a plain EOF (no reset)."""
    async with asyncio.timeout(BOUND), ReplayServer() as server, client() as http:
        server.respond(sse_response(TRICKY_BODY, close_after=len(TRICKY_BODY)))
        received = bytearray()
        async with http.stream("GET", server.url + "/stream") as response:
            with pytest.raises(httpx2.RemoteProtocolError):
                await collect(response.aiter_raw(), received)
        assert bytes(received) == TRICKY_BODY

        script = server.respond(Script(b"0123456789", close_after=3))
        async with raw_connection(server) as (reader, writer):
            writer.write(raw_request())
            wire, _ = await read_until_eof(reader)
        assert wire.endswith(b"\r\n\r\n012")
        assert script.outcome == "closed"


async def test_stall_then_release_delivers_the_rest() -> None:
    """``stall_after=N``: N bytes arrive, nothing more until ``release``, then the rest."""
    async with asyncio.timeout(BOUND), ReplayServer() as server, client() as http:
        script = server.respond(sse_response(TRICKY_BODY, stall_after=25))
        received = bytearray()
        async with http.stream("GET", server.url + "/stream") as response:
            chunks = response.aiter_raw()
            while len(received) < 25:
                received += await anext(chunks)
            assert bytes(received) == TRICKY_BODY[:25]
            assert script.stalled.is_set()
            await turns(20)
            assert not script.finished.is_set()
            script.release.set()
            async for chunk in chunks:
                received += chunk
        assert bytes(received) == TRICKY_BODY
        assert script.outcome == "sent"


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "deflate-raw"])
async def test_encoding_compresses_the_body_on_the_wire(encoding: Encoding) -> None:
    """``encoding``: the wire bytes are the compressed body, with its ``Content-Encoding``;
    a decoding client gets the body back."""
    async with asyncio.timeout(BOUND), ReplayServer() as server, client() as http:
        script = server.respond(sse_response(TRICKY_BODY, encoding=encoding, split="bytes1"))
        server.respond(sse_response(TRICKY_BODY, encoding=encoding))
        async with http.stream("GET", server.url + "/gz") as response:
            assert response.headers["content-encoding"] == encoding.removesuffix("-raw")
            wire = await read_raw(response)
        assert wire == script.wire_body == encode_body(TRICKY_BODY, encoding)
        assert wire != TRICKY_BODY
        assert (await http.get(server.url + "/gz")).content == TRICKY_BODY


async def test_header_delay_and_drip_are_short_real_intervals() -> None:
    """``header_delay`` holds the status line, ``drip`` every body piece, for that long."""
    async with asyncio.timeout(BOUND), ReplayServer() as server, client() as http:
        server.respond(Script(b"abc", split="bytes1", header_delay=0.1, drip=0.05))
        started = time.monotonic()
        async with http.stream("GET", server.url + "/drip") as response:
            headers_at = time.monotonic() - started
            arrivals: list[float] = []
            async for _ in response.aiter_raw():
                arrivals.append(time.monotonic() - started)
    assert headers_at >= 0.1
    assert len(arrivals) == 3
    assert arrivals[-1] >= 0.1 + 3 * 0.05


async def test_a_drip_ends_when_the_client_leaves() -> None:
    async with asyncio.timeout(BOUND), ReplayServer() as server:
        script = server.respond(Script(b"0123456789", split="bytes1", drip=5))
        async with raw_connection(server) as (reader, writer):
            writer.write(raw_request())
            await reader.readuntil(b"\r\n\r\n")
        await script.finished.wait()
    assert script.outcome == "client-gone"


async def test_redirect_response_names_its_location() -> None:
    async with asyncio.timeout(BOUND), ReplayServer() as server, client() as http:
        server.respond(redirect_response(307, "http://127.0.0.1:9/elsewhere"))
        response = await http.get(server.url + "/moved")
    assert response.status_code == 307
    assert response.headers["location"] == "http://127.0.0.1:9/elsewhere"


async def test_connections_counts_what_the_server_accepted() -> None:
    async with asyncio.timeout(BOUND), ReplayServer() as server:
        for _ in range(3):
            server.respond(json_response(200, {"ok": True}))
        async with client() as http:
            for _ in range(2):
                assert (await http.get(server.url + "/a")).json() == {"ok": True}
        async with client() as other:
            assert (await other.get(server.url + "/b")).json() == {"ok": True}
    assert len(server.connections) == 2  # one kept alive for two requests, then a new client


async def test_delay_headers_holds_the_first_byte() -> None:
    """``delay_headers``: the request is received, but no status line until the event."""
    async with asyncio.timeout(BOUND), ReplayServer() as server, client() as http:
        gate = asyncio.Event()
        script = server.respond(json_response(200, {"ok": True}, delay_headers=gate))
        sending = asyncio.create_task(http.get(server.url + "/slow"))
        await script.started.wait()
        await turns(20)
        assert not sending.done(), "headers arrived before the gate opened"
        gate.set()
        response = await sending
        assert response.json() == {"ok": True}


async def test_stall_ends_when_the_client_leaves() -> None:
    """A stall never released still ends, as ``client-gone``, once the client disconnects."""
    async with asyncio.timeout(BOUND), ReplayServer() as server:
        script = server.respond(Script(b"0123456789", stall_after=0))
        async with raw_connection(server) as (reader, writer):
            writer.write(raw_request())
            await script.stalled.wait()
            await reader.readuntil(b"\r\n\r\n")  # nothing unread left: the close is a FIN
        await script.finished.wait()
        assert script.outcome == "client-gone"
        assert server.connections[0].closed_by == "client-eof"


async def test_exit_cancels_connections_still_being_served() -> None:
    """Leaving the ``async with`` while a response is stalled cancels and awaits its tasks
    (the harness fails the test if any task is left pending); the client sees the drop."""
    async with asyncio.timeout(BOUND), client() as http:
        async with ReplayServer() as server:
            script = server.respond(sse_response(TRICKY_BODY, stall_after=5))
            response = await http.send(http.build_request("GET", server.url), stream=True)
            await script.stalled.wait()
        assert script.outcome == "cancelled"
        with pytest.raises(httpx2.TransportError):
            await response.aread()
        await response.aclose()


async def test_unreleased_stall_is_bounded_and_reported() -> None:
    """With nobody releasing it, a stall gives up after ``max_hold`` and the exit says so."""

    async def unreleased(http: httpx2.AsyncClient) -> None:
        async with ReplayServer(max_hold=0.01) as server:
            server.respond(sse_response(b"data: 1\n\n", stall_after=0))
            with pytest.raises(httpx2.RemoteProtocolError):
                await fetch(http, server.url)

    async with asyncio.timeout(BOUND), client() as http:
        with pytest.raises(AssertionError, match="was not released"):
            await unreleased(http)


# -- ReplayServer: recording, keep-alive, the empty queue -------------------------------------


async def test_records_method_path_headers_and_json_body() -> None:
    """Each request is recorded with its headers (case-insensitive names) and JSON body."""
    async with asyncio.timeout(BOUND), ReplayServer() as server, client() as http:
        server.respond(json_response(200, {"id": "x"}))
        payload = {"model": "m", "messages": [{"role": "user", "content": "hé\u2028"}]}
        await http.post(
            server.url + "/chat/completions",
            json=payload,
            headers={"Authorization": "Bearer sk-test", "X-Extra": "1"},
        )
        (request,) = server.requests
        assert request.method == "POST"
        assert request.path == "/v1/chat/completions"
        assert request.headers["authorization"] == "Bearer sk-test"
        assert ("X-Extra", "1") in request.raw_headers or ("x-extra", "1") in request.raw_headers
        assert request.json == payload
        assert request.connection is server.connections[0]
        assert request.script is not None
        assert request.script.request is request


async def test_chunked_request_bodies_are_decoded() -> None:
    """A request body sent with chunked transfer encoding is recorded de-chunked."""
    async with asyncio.timeout(BOUND), ReplayServer() as server:
        server.respond(Script(b"ok"))
        async with raw_connection(server) as (reader, writer):
            writer.write(
                b"POST /v1/p HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n"
                b'connection: close\r\n\r\n3\r\n{"a\r\n4;ext=1\r\n":1}\r\n0\r\n\r\n'
            )
            wire, _ = await read_until_eof(reader)
        assert wire.endswith(b"\r\n\r\nok")
        assert server.requests[0].json == {"a": 1}


async def test_closed_event_fires_promptly_after_an_early_aclose() -> None:
    """Closing a response early closes the connection, and the server notices in < 100 ms."""
    async with asyncio.timeout(BOUND), ReplayServer() as server, client() as http:
        script = server.respond(sse_response(TRICKY_BODY, stall_after=10))
        response = await http.send(http.build_request("GET", server.url), stream=True)
        await script.stalled.wait()  # 10 body bytes are on their way; the rest is held back
        connection = server.connections[0]
        assert not connection.closed.is_set()
        started = time.monotonic()
        await response.aclose()
        await connection.closed.wait()
        assert connection.closed_at is not None
        elapsed = connection.closed_at - started
        assert 0 <= elapsed < 0.1, f"closed seen {elapsed * 1000:.1f} ms after aclose()"
        # A FIN, or an RST if some of the 10 bytes were still unread in the client's socket.
        assert connection.closed_by in ("client-eof", "client-reset")
        await script.finished.wait()
        assert script.outcome == "client-gone"


@pytest.mark.parametrize("first", ["sse", "json"])
async def test_keep_alive_serves_sequential_requests_on_one_connection(first: str) -> None:
    """httpx2 reuses the connection for a second request once the first body was read."""
    async with asyncio.timeout(BOUND), ReplayServer() as server, client() as http:
        body = sse_body([{"n": 1}])
        server.respond(sse_response(body) if first == "sse" else json_response(200, {"n": 1}))
        server.respond(json_response(200, {"n": 2}))
        one = await http.get(server.url + "/one")
        two = await http.get(server.url + "/two")
        assert (one.status_code, two.status_code) == (200, 200)
        assert two.json() == {"n": 2}
        assert len(server.connections) == 1
        assert [r.path for r in server.connections[0].requests] == ["/v1/one", "/v1/two"]


async def test_empty_queue_answers_500_with_a_json_error() -> None:
    """An unscripted request gets a 500 whose JSON error says the test scripted nothing."""
    async with asyncio.timeout(BOUND), ReplayServer() as server, client() as http:
        response = await http.post(server.url + "/chat/completions", json={})
        assert response.status_code == 500
        assert response.headers["content-type"] == "application/json"
        message = response.json()["error"]["message"]
        assert "scripted no response" in message
        assert "POST /v1/chat/completions" in message
        assert server.unscripted == server.requests
        # The connection stays usable: the next scripted answer arrives on it.
        server.respond(json_response(200, {}))
        assert (await http.get(server.url)).status_code == 200
        assert len(server.connections) == 1


async def test_wait_for_requests_is_event_driven() -> None:
    """``wait_for_requests(n)`` returns once n requests arrived (no polling)."""
    async with asyncio.timeout(BOUND), ReplayServer() as server, client() as http:
        gate = asyncio.Event()
        server.respond(json_response(200, {}, delay_headers=gate))
        sending = asyncio.create_task(http.get(server.url + "/a"))
        (request,) = await server.wait_for_requests(1)
        assert request.path == "/v1/a"
        gate.set()
        await sending


async def test_listens_on_loopback_only() -> None:
    """The listening socket is 127.0.0.1 (never a wildcard or another address)."""
    async with asyncio.timeout(BOUND), ReplayServer() as server:
        assert server.url == f"http://127.0.0.1:{server.port}/v1"
        assert listening_addresses(server.port) == ["127.0.0.1"]


def test_script_rejects_contradictions() -> None:
    """Scripts fail fast on framing headers, double faults and offsets outside the body."""
    with pytest.raises(ValueError, match="framing"):
        Script(b"x", headers={"Content-Length": "1"})
    with pytest.raises(ValueError, match="at most one"):
        Script(b"xy", reset_after=1, close_after=1)
    with pytest.raises(ValueError, match="outside the body"):
        Script(b"xy", stall_after=3)
    with pytest.raises(ValueError, match="after the fault"):
        Script(b"xyz", stall_after=2, reset_after=1)
    with pytest.raises(ValueError, match="strictly inside"):
        Script(b"xyz", split=[0, 1])
    with pytest.raises(ValueError, match="from `encoding`"):
        Script(b"x", headers={"Content-Encoding": "gzip"}, encoding="gzip")
    with pytest.raises(ValueError, match="short real intervals"):
        Script(b"x", drip=10)
    with pytest.raises(ValueError, match="outside the body"):
        Script(b"x" * 1000, encoding="gzip", stall_after=900)  # offsets count wire bytes


# -- sse_body ---------------------------------------------------------------------------------


def test_sse_body_default_framing() -> None:
    """Mappings become compact JSON ``data:`` lines; ``[DONE]`` closes the stream."""
    assert sse_body([{"a": 1}, "raw"]) == b'data: {"a":1}\n\ndata: raw\n\ndata: [DONE]\n\n'


def test_sse_body_options() -> None:
    """BOM, CRLF, comments, event names, multi-line data and a missing final blank line."""
    body = sse_body(
        [{"type": "ping"}, SseEvent("l1\nl2", event="e", id="7"), "ü\u2028"],
        done=False,
        line_ending="\r\n",
        bom=True,
        comments=["OPENROUTER PROCESSING"],
        comment_between="ka",
        event_from_type=True,
        final_blank_line=False,
    )
    assert body == (
        b"\xef\xbb\xbf: OPENROUTER PROCESSING\r\n"
        b'event: ping\r\ndata: {"type":"ping"}\r\n\r\n'
        b": ka\r\nevent: e\r\nid: 7\r\ndata: l1\r\ndata: l2\r\n\r\n"
        b": ka\r\ndata: \xc3\xbc\xe2\x80\xa8\r\n"
    )


# -- llm-katan --------------------------------------------------------------------------------


def listening_addresses(port: int) -> list[str]:
    """Local addresses of TCP sockets listening on ``port``, from /proc/net/tcp{,6} (Linux):
    a check of the bind address that connects nowhere."""
    found: list[str] = []
    for table, family in (("/proc/net/tcp", socket.AF_INET), ("/proc/net/tcp6", socket.AF_INET6)):
        path = Path(table)
        if not path.exists():
            continue
        for line in path.read_text().splitlines()[1:]:
            fields = line.split()
            address_hex, _, port_hex = fields[1].rpartition(":")
            if fields[3] != "0A" or int(port_hex, 16) != port:  # 0A: LISTEN
                continue
            raw = bytes.fromhex(address_hex)
            # The kernel prints each 32-bit word in host (little-endian) order.
            packed = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
            found.append(socket.inet_ntop(family, packed))
    return found


def chat(content: str, **extra: object) -> dict[str, object]:
    return {"model": "test-model", "messages": [{"role": "user", "content": content}], **extra}


def auth(key: str = "sk-anything") -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@pytest.mark.slow
async def test_katan_plain_chat_completion(katan_server: KatanServer) -> None:
    """A non-streamed OpenAI chat request returns a ``chat.completion`` echoing the prompt."""
    async with asyncio.timeout(BOUND), client() as http:
        response = await http.post(
            katan_server.base_url + "/chat/completions", json=chat("hello katan"), headers=auth()
        )
        assert response.status_code == 200, response.text
        assert response.headers["content-type"].startswith("application/json")
        data = response.json()
        assert data["object"] == "chat.completion"
        assert "hello katan" in data["choices"][0]["message"]["content"]
        assert data["choices"][0]["finish_reason"] == "stop"


@pytest.mark.slow
async def test_katan_streamed_chat_completion(katan_server: KatanServer) -> None:
    """``stream: true`` gives SSE (``text/event-stream``) content chunks ending ``[DONE]``."""
    async with asyncio.timeout(BOUND), client() as http:
        async with http.stream(
            "POST",
            katan_server.base_url + "/chat/completions",
            json=chat("stream me", stream=True),
            headers=auth(),
        ) as response:
            assert response.status_code == 200
            assert response.headers["content-type"] == SSE_CONTENT_TYPE
            body = await read_raw(response)
        events = [e for e in body.decode().split("\n\n") if e]
        assert events[-1] == "data: [DONE]"
        chunks = [json.loads(e.removeprefix("data: ")) for e in events[:-1]]
        assert chunks[0]["choices"][0]["delta"] == {"role": "assistant"}
        text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks)
        assert "stream me" in text
        assert chunks[-1]["choices"][0]["finish_reason"] == "stop"


@pytest.mark.slow
async def test_katan_rate_limit_after_one(katan_factory: KatanFactory) -> None:
    """``--rate-limit-after 1``: the first request succeeds, the second is a 429."""
    server = katan_factory("--rate-limit-after", "1")
    assert server.args[-2:] == ("--rate-limit-after", "1")
    async with asyncio.timeout(BOUND), client() as http:
        url = server.base_url + "/chat/completions"
        first = await http.post(url, json=chat("one"), headers=auth())
        second = await http.post(url, json=chat("two"), headers=auth())
        assert first.status_code == 200, first.text
        assert second.status_code == 429, second.text
        assert "retry-after" not in second.headers  # llm-katan sends none (providers.md §10)


@pytest.mark.slow
async def test_katan_validate_keys(katan_factory: KatanFactory) -> None:
    """``--validate-keys`` accepts only llm-katan's default OpenAI key (``OPENAI_KEY``)."""
    server = katan_factory("--validate-keys")
    async with asyncio.timeout(BOUND), client() as http:
        url = server.base_url + "/chat/completions"
        wrong = await http.post(url, json=chat("x"), headers=auth("sk-wrong"))
        right = await http.post(url, json=chat("x"), headers=auth(OPENAI_KEY))
        assert wrong.status_code == 401, wrong.text
        assert right.status_code == 200, right.text


@pytest.mark.slow
def test_katan_listens_on_loopback_only(katan_server: KatanServer) -> None:
    """llm-katan's listening socket is 127.0.0.1 only (its default would be 0.0.0.0)."""
    assert katan_server.base_url == f"http://127.0.0.1:{katan_server.port}/v1"
    assert listening_addresses(katan_server.port) == ["127.0.0.1"]
    host_flag = katan_server.args.index("--host")
    assert katan_server.args[host_flag : host_flag + 2] == ("--host", "127.0.0.1")
    assert katan_server.startup_seconds < 30


def test_free_port_is_a_loopback_port() -> None:
    """``free_port`` returns a port that can be bound on 127.0.0.1 right away."""
    port = free_port()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", port))


@pytest.mark.slow
def test_katan_start_failure_carries_its_stderr(tmp_path: Path) -> None:
    """A llm-katan that cannot start raises ``KatanStartError`` with its stderr (which the
    fixtures turn into a failure, not a skip)."""
    with (
        pytest.raises(KatanStartError, match="Unknown provider 'nope'"),
        run_katan(tmp_path, providers="nope"),
    ):
        pass


@pytest.mark.slow
def test_katan_is_stopped_and_reaped(tmp_path: Path) -> None:
    """After the ``with``, the process is gone (no zombie) and nothing listens on its port;
    its HOME and stats stay inside the tmp dir."""
    with run_katan(tmp_path) as server:
        assert listening_addresses(server.port) == ["127.0.0.1"]
        assert "--stats-file" in server.args
    assert not Path(f"/proc/{server.pid}").exists()
    assert listening_addresses(server.port) == []
    assert list((tmp_path / "home").iterdir()) == []


def test_stop_process_escalates_to_sigkill() -> None:
    """A child that ignores SIGTERM is killed after the bound and reaped."""
    code = (
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "print('ready', flush=True); time.sleep(60)"
    )
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    try:
        assert child.stdout is not None
        assert child.stdout.readline() == b"ready\n"  # SIGTERM is ignored from here on
    finally:
        stop_process(child, 0.2)
        if child.stdout is not None:
            child.stdout.close()
    assert child.returncode == -9
