"""Every HTTP provider under a hostile network, over real loopback sockets.

The replay/fault server (``tests/servers/replay.py``) misbehaves the way real servers and
proxies do: it compresses bodies a client asked to get uncompressed, answers with redirects
to another origin, drips a byte at a time, delays the headers and then the body, and counts
the TCP connections it accepts. Each test here is one of those faults against
``OpenAIChatModel``, ``AnthropicModel``, ``OpenAIResponsesModel`` and ``GeminiModel``
alike: the body decoded
(bounded: a gzip bomb is a coded error), the redirect refused without the key or custom
headers reaching the second origin, idle time measured between events with an optional total
deadline, one first-byte deadline, a stream the consumer drops closing its connection, three
streams sharing one keep-alive connection, and a run that fails mid-stream returning only
after its response was closed (in a child process that exits right after, as a script would).

Time: the drip and delay tests use short real intervals (they are about time); everything
else waits on the server's events, under an outer bound.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import sys
import time
import tracemalloc
import zlib
from pathlib import Path
from typing import Any, Final, Literal

import httpx2
import pytest

import anthropic_bodies as anthropic
import gemini_bodies as gemini
import responses_bodies as responses
from cli_support import FAKE_KEY, assert_no_key, child_env
from openai_bodies import DONE, openai_chunk, openai_usage, sse
from servers.replay import (
    Encoding,
    ReplayServer,
    Script,
    json_response,
    redirect_response,
    sse_body,
    sse_response,
)
from support import missing_recordings, recorded_streams
from tether import (
    AbortController,
    FailedRunResult,
    ModelChunk,
    ModelRequest,
    ModelResponse,
    RunLimits,
    ToolRegistry,
    UserMessage,
    run_agent_loop,
)
from tether.providers._http import RetryPolicy, Timeouts
from tether.providers._streaming import HttpStreamModel
from tether.providers.anthropic import AnthropicModel
from tether.providers.errors import ProviderError
from tether.providers.gemini import GeminiModel
from tether.providers.openai_chat import OpenAIChatModel
from tether.providers.openai_responses import OpenAIResponsesModel

BOUND: Final = 20.0
"""Outer bound (seconds) on waits a regression could turn into a hang."""
SECRET: Final = "sk-test-NETWORK-SECRET-0123456789"
CUSTOM: Final = "custom-header-SECRET-value"
FAST_RETRY: Final = RetryPolicy(attempts=3, initial_backoff=0.0, max_backoff=0.0)

Kind = Literal["openai", "anthropic", "responses", "gemini"]
KINDS: Final[tuple[Kind, ...]] = ("openai", "anthropic", "responses", "gemini")
ENDED: Final[tuple[Kind, ...]] = ("openai", "anthropic", "responses")
"""The kinds whose stream has an end event (Gemini's just ends: its body is read to EOF)."""
WORDS: Final = ("The sum ", "is ", "42.")


def make_model(kind: Kind, server: ReplayServer, **options: Any) -> HttpStreamModel:
    options.setdefault("retry", FAST_RETRY)
    if kind == "openai":
        return OpenAIChatModel("gpt-test", base_url=server.url, api_key=SECRET, **options)
    if kind == "responses":
        return OpenAIResponsesModel("gpt-test", base_url=server.url, api_key=SECRET, **options)
    if kind == "gemini":
        return GeminiModel("gemini-test", base_url=server.origin, api_key=SECRET, **options)
    return AnthropicModel("claude-test", base_url=server.origin, api_key=SECRET, **options)


def endpoint(kind: Kind) -> str:
    if kind == "gemini":
        return "/v1beta/models/gemini-test:streamGenerateContent?alt=sse"
    paths = {"openai": "/v1/chat/completions", "responses": "/v1/responses"}
    return paths.get(kind, "/v1/messages")


def text_body(kind: Kind, words: tuple[str, ...] = WORDS) -> bytes:
    """A complete text answer in ``kind``'s streaming format."""
    if kind == "gemini":  # as Gemini 3 sends it: the finish reason on an empty last part
        return gemini.body(
            {"usageMetadata": gemini.usage(10)},
            *(gemini.chunk(gemini.text(word), usage=gemini.usage(10)) for word in words),
            gemini.chunk(gemini.text(""), finish="STOP", usage=gemini.usage(10, len(words))),
            crlf=False,
        )
    if kind == "openai":
        return sse(
            openai_chunk({"role": "assistant", "content": ""}),
            *(openai_chunk({"content": word}) for word in words),
            openai_chunk(finish="stop"),
            openai_chunk(choices=False, usage=openai_usage(10, len(words))),
            DONE,
        ).encode()
    if kind == "responses":
        return responses.text_body(*words)
    parts = [anthropic.text(0, word) for word in words]
    return anthropic.body(anthropic.text_start(0), *parts, anthropic.stop(0)).encode()


def request() -> ModelRequest:
    return ModelRequest(id="request-001", messages=(UserMessage(content="What is 20 + 22?"),))


async def collect(model: HttpStreamModel) -> tuple[list[ModelChunk], ModelResponse]:
    """One model turn read to its end: the chunks and the response (raises its error)."""
    stream = model.stream(request(), AbortController().signal)
    async with asyncio.timeout(BOUND):
        chunks = [chunk async for chunk in stream]
        return chunks, await stream.result


async def failure_of(model: HttpStreamModel) -> ProviderError:
    with pytest.raises(ProviderError) as caught:
        await collect(model)
    return caught.value


def text_of(chunks: list[ModelChunk]) -> str:
    return "".join(chunk.delta for chunk in chunks if chunk.type == "textDelta")


# --- 1. compressed bodies ---------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("encoding", ["gzip", "deflate", "deflate-raw"])
async def test_a_compressed_stream_is_decoded(kind: Kind, encoding: Encoding) -> None:
    async with ReplayServer() as server:
        server.respond(sse_response(text_body(kind), encoding=encoding, split=("random", 5)))
        async with make_model(kind, server) as model:
            chunks, response = await collect(model)
    assert text_of(chunks) == "".join(WORDS)
    assert response.stop_reason == "stop"
    assert server.requests[0].headers["accept-encoding"] == "identity"


@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
async def test_a_compressed_error_body_keeps_its_code(encoding: Encoding) -> None:
    overflow = {"error": {"message": "This model's maximum context length is 8192 tokens"}}
    async with ReplayServer() as server:
        server.respond(json_response(400, overflow, encoding=encoding))
        async with make_model("openai", server) as model:
            error = await failure_of(model)
    assert error.code == "PROVIDER_CONTEXT_OVERFLOW"
    assert "maximum context length" in error.message


def _recorded_gzip_streams() -> list[Path]:
    return [
        path
        for path in recorded_streams("anthropic-messages")
        if "gzip" in json.loads(path.read_text(encoding="utf-8"))["source"].get("note", "")
    ]


async def test_the_recorded_gzip_anthropic_streams_replay_compressed() -> None:
    """Anthropic's API sends gzip streams (the recordings say so): replayed compressed, each
    gives the answer it gives uncompressed."""
    paths = _recorded_gzip_streams()
    if not paths:
        missing_recordings()
    for path in paths:
        recorded: Any = json.loads(path.read_text(encoding="utf-8"))
        data = str(recorded["body"]).encode()
        answers: list[tuple[list[ModelChunk], ModelResponse]] = []
        async with ReplayServer() as server:
            for encoding in (None, "gzip"):
                server.respond(sse_response(data, encoding=encoding, split=("random", 11)))
            async with make_model("anthropic", server) as model:
                for _ in range(2):
                    answers.append(await collect(model))
        assert answers[0] == answers[1], path.name
        assert answers[0][0], path.name


def _gzip_bomb(plain_bytes: int) -> bytes:
    """A gzip body that inflates to ``plain_bytes`` of one unfinished SSE line (about 1000:1),
    compressed piece by piece so the test itself never holds the plain text."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    out = [compressor.compress(b"data: ")]
    piece = b"A" * (1 << 20)
    out += [compressor.compress(piece) for _ in range(plain_bytes >> 20)]
    out.append(compressor.flush())
    return b"".join(out)


@pytest.mark.parametrize("kind", ["stream", "error-body"])
async def test_a_gzip_bomb_is_a_coded_error_in_bounded_memory(kind: str) -> None:
    bomb = _gzip_bomb(64 << 20)
    assert len(bomb) < 256 << 10
    headers = [("content-encoding", "gzip")]
    async with ReplayServer() as server:
        if kind == "stream":
            server.respond(sse_response(bomb, headers=headers))
        else:  # a JSON error body that inflates far beyond what an error body may hold
            content = [("content-type", "application/json"), *headers]
            server.respond(Script(body=bomb, status=400, headers=content, framing="chunked"))
        async with make_model("openai", server) as model:
            tracemalloc.start()
            try:
                error = await failure_of(model)
                _, peak = tracemalloc.get_traced_memory()
            finally:
                tracemalloc.stop()
    if kind == "stream":
        assert error.code == "PROVIDER_PROTOCOL_ERROR"
    else:
        assert (error.code, error.status) == ("PROVIDER_BAD_REQUEST", 400)
    assert peak < 16 << 20, f"decoding the bomb took {peak / 2**20:.1f} MiB"


# --- 2. redirects -----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("status", [301, 302, 307, 308])
async def test_a_redirect_is_never_followed_and_names_its_location(kind: Kind, status: int) -> None:
    async with ReplayServer() as server, ReplayServer() as elsewhere:
        location = elsewhere.origin + endpoint(kind)
        server.respond(redirect_response(status, location))
        elsewhere.respond(sse_response(text_body(kind)))
        async with httpx2.AsyncClient(follow_redirects=True) as client:
            model = make_model(kind, server, http_client=client, headers={"x-custom": CUSTOM})
            error = await failure_of(model)
    assert error.code == "PROVIDER_REDIRECTED"
    assert error.status == status
    assert location in error.message
    assert elsewhere.requests == []  # neither the key nor the custom header went there
    assert len(server.requests) == 1  # a redirect is not retried
    assert SECRET not in error.message
    assert CUSTOM not in error.message


# --- 3. drips and the total deadline ----------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
async def test_a_server_dripping_bytes_times_out_on_the_idle_gap_between_events(
    kind: Kind,
) -> None:
    """A byte every 20 ms never leaves a 0.3 s gap between bytes, but no event completes
    within 0.3 s: the idle timeout is between events."""
    body = text_body(kind)
    async with ReplayServer() as server:
        server.respond(sse_response(body, split="bytes1", drip=0.02))
        timeouts = Timeouts(idle=0.3, first_byte=5)
        async with make_model(kind, server, timeouts=timeouts) as model:
            started = time.monotonic()
            async with asyncio.timeout(4):  # the whole drip would take ~len(body) / 50 s
                error = await failure_of(model)
            elapsed = time.monotonic() - started
    assert error.code == "PROVIDER_TIMEOUT"
    assert "0.3 s" in error.message
    assert elapsed < 2


@pytest.mark.parametrize("kind", KINDS)
async def test_keep_alive_comments_count_as_events_for_the_idle_gap(kind: Kind) -> None:
    """OpenRouter sends ``: OPENROUTER PROCESSING`` while the model thinks: four of them
    0.15 s apart, then the answer, never break a 0.3 s idle gap."""
    keep_alive = b": OPENROUTER PROCESSING\n\n"
    body = keep_alive * 4 + text_body(kind)
    cuts = [len(keep_alive) * number for number in range(1, 5)]
    async with ReplayServer() as server:
        server.respond(sse_response(body, split=cuts, drip=0.15))
        timeouts = Timeouts(idle=0.3, first_byte=5)
        async with make_model(kind, server, timeouts=timeouts) as model:
            chunks, _response = await collect(model)
    assert text_of(chunks) == "".join(WORDS)


@pytest.mark.parametrize("kind", KINDS)
async def test_the_total_deadline_bounds_a_stream_that_never_idles(kind: Kind) -> None:
    body = text_body(kind)
    events = [index + 2 for index in range(len(body) - 2) if body[index : index + 2] == b"\n\n"]
    async with ReplayServer() as server:
        server.respond(sse_response(body, split=events[:-1], drip=0.1))  # an event per 0.1 s
        timeouts = Timeouts(idle=1, first_byte=5, total=0.35)
        async with make_model(kind, server, timeouts=timeouts) as model:
            started = time.monotonic()
            error = await failure_of(model)
            elapsed = time.monotonic() - started
    assert error.code == "PROVIDER_TIMEOUT"
    assert "total" in error.message
    assert elapsed < 2


def test_the_total_deadline_is_checked() -> None:
    assert Timeouts().total is None
    assert Timeouts(total=30).total == 30
    for bad in (0, -1, float("inf"), "5", True):
        with pytest.raises(TypeError, match="total"):
            Timeouts(total=bad)  # pyright: ignore[reportArgumentType]


# --- 4. one first-byte deadline ---------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
async def test_first_byte_is_one_deadline_from_send_to_the_first_body_byte(kind: Kind) -> None:
    """Headers after 0.4 s and the body 0.4 s later each fit a 0.6 s limit; together they
    do not."""
    async with ReplayServer() as server:
        server.respond(sse_response(text_body(kind), header_delay=0.4, drip=0.4))
        timeouts = Timeouts(first_byte=0.6, idle=5)
        async with make_model(kind, server, timeouts=timeouts) as model:
            error = await failure_of(model)
    assert error.code == "PROVIDER_TIMEOUT"
    assert "0.6 s" in error.message


# --- 5. a dropped stream ----------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
async def test_a_dropped_stream_closes_its_connection(kind: Kind) -> None:
    """``async for ...: break`` and no reference left: the response is closed (the server sees
    the client leave) without ``aclose()``, and the producer task ends."""
    body = text_body(kind)
    first_word_sent = body.index(b"\n\n", body.index(WORDS[0].encode())) + 2
    async with ReplayServer() as server:
        script = server.respond(sse_response(body, stall_after=first_word_sent))
        async with make_model(kind, server) as model:
            stream = model.stream(request(), AbortController().signal)
            async with asyncio.timeout(BOUND):
                async for first in stream:
                    assert first.type == "textDelta"
                    break
                await script.stalled.wait()
            del stream
            async with asyncio.timeout(BOUND):
                (recorded,) = await server.wait_for_requests(1)
                await recorded.connection.closed.wait()
                await script.finished.wait()
    assert script.outcome == "client-gone"


# --- 6. connection reuse ----------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("encoding", [None, "gzip"])
async def test_three_streams_on_one_model_share_one_connection(
    kind: Kind, encoding: Encoding | None
) -> None:
    async with ReplayServer() as server:
        for _ in range(3):
            server.respond(sse_response(text_body(kind), encoding=encoding))
        async with make_model(kind, server) as model:
            for _ in range(3):
                chunks, _response = await collect(model)
                assert text_of(chunks) == "".join(WORDS)
    assert len(server.requests) == 3
    assert len(server.connections) == 1


@pytest.mark.parametrize("kind", ENDED)
async def test_a_body_that_lingers_after_its_end_event_is_dropped_after_a_short_drain(
    kind: Kind,
) -> None:
    """The end event arrived but the body's framing never ends: the stream still finishes
    promptly (the drain is bounded) and the connection is closed, not returned to the pool."""
    body = text_body(kind)
    async with ReplayServer() as server:
        script = server.respond(sse_response(body, stall_after=len(body)))
        async with make_model(kind, server) as model:
            started = time.monotonic()
            chunks, _response = await collect(model)
            elapsed = time.monotonic() - started
            assert text_of(chunks) == "".join(WORDS)
            async with asyncio.timeout(BOUND):
                (recorded,) = await server.wait_for_requests(1)
                await recorded.connection.closed.wait()
                await script.finished.wait()
    assert script.outcome == "client-gone"
    assert elapsed < 1.5


async def test_a_body_that_goes_on_after_its_end_event_is_not_drained_without_bound() -> None:
    padding = b": padding\n" * 100_000  # 1 MB of comments after [DONE]
    async with ReplayServer() as server:
        script = server.respond(sse_response(text_body("openai") + padding))
        server.respond(sse_response(text_body("openai")))
        async with make_model("openai", server) as model:
            for _ in range(2):
                chunks, _response = await collect(model)
                assert text_of(chunks) == "".join(WORDS)
            async with asyncio.timeout(BOUND):
                await script.finished.wait()
                await server.connections[0].closed.wait()
    assert len(server.connections) == 2  # the first connection was dropped, not reused


@pytest.mark.parametrize("phase", ["headers", "body"])
async def test_a_caller_s_client_with_its_own_read_timeout_is_a_provider_timeout(
    phase: str,
) -> None:
    body = text_body("openai")
    async with ReplayServer() as server:
        if phase == "headers":
            script = server.respond(sse_response(body, header_delay=0.5))
        else:
            script = server.respond(sse_response(body, stall_after=len(body) // 2))
        async with httpx2.AsyncClient(timeout=httpx2.Timeout(0.1)) as client:
            model = make_model("openai", server, http_client=client)
            error = await failure_of(model)
        script.release.set()
    assert error.code == "PROVIDER_TIMEOUT"
    assert "HTTP client timed out" in error.message


async def test_a_redirect_without_a_location_says_so() -> None:
    async with ReplayServer() as server:
        server.respond(Script(status=303, body=b"see other"))
        async with make_model("openai", server) as model:
            error = await failure_of(model)
    assert error.code == "PROVIDER_REDIRECTED"
    assert "without a Location" in error.message


@pytest.mark.parametrize("header", ["br", "gzip, br"])
async def test_an_encoding_tether_does_not_decode_is_a_protocol_error(header: str) -> None:
    async with ReplayServer() as server:
        server.respond(sse_response(text_body("openai"), headers=[("content-encoding", header)]))
        async with make_model("openai", server) as model:
            error = await failure_of(model)
    assert error.code == "PROVIDER_PROTOCOL_ERROR"
    assert "Content-Encoding" in error.message


# --- 10. a failed run returns after its response is closed ------------------------------------

CHILD: Final = """
import asyncio
import sys

from tether import OpenAIChatModel, RunLimits
from tether.agent import Agent


async def main() -> None:
    agent = Agent(
        model=OpenAIChatModel("gpt-test", base_url=sys.argv[1]),  # the key from OPENAI_API_KEY
        limits=RunLimits(max_chunks_per_step=3),
    )
    result = await agent.run("Count to fifty.")
    others = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
    error = getattr(result, "error", None)
    print(result.status, getattr(error, "code", None), len(others))


asyncio.run(main())
"""


@pytest.mark.parametrize("split", ["whole", "stall"])
async def test_a_run_that_breaks_a_limit_returns_after_its_response_is_closed(
    split: str, tmp_path: Path
) -> None:
    """The README's Agent pattern in a child process: the reply breaks ``max_chunks_per_step``
    (with the rest of the body already sent, or held back by the server). The run ends
    ``failed`` with no other task left, and the program exits without anyio's cancel-scope or
    lock errors on stderr (nor anything else: every warning is shown there)."""
    words = tuple(f"w{number} " for number in range(50))
    body = text_body("openai", words)
    async with ReplayServer() as server:
        stall = len(body) // 2 if split == "stall" else None
        script = server.respond(sse_response(body, stall_after=stall))
        child = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            CHILD,
            server.url,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=tmp_path,
            env=child_env(tmp_path),
        )
        async with asyncio.timeout(BOUND):
            out, err = await child.communicate()
            await script.finished.wait()
        script.release.set()
    assert_no_key(out, err)
    assert server.requests[0].headers["authorization"] == f"Bearer {FAKE_KEY}"
    stderr = err.decode()
    assert "cancel scope" not in stderr
    assert "not holding this lock" not in stderr
    assert stderr == ""
    assert out.decode().split() == ["failed", "MODEL_PROTOCOL_ERROR", "0"]
    assert child.returncode == 0


def test_the_bomb_helper_inflates_to_what_it_says() -> None:
    assert len(gzip.decompress(_gzip_bomb(2 << 20))) == 6 + (2 << 20)
    assert sse_body([{"a": 1}], done=False) == b'data: {"a":1}\n\n'


async def test_a_run_that_breaks_a_limit_has_closed_its_response_when_it_returns() -> None:
    """In process: when the failed run's result arrives, the model's producer task is gone
    (it closed the response before the stream settled); the server then sees the close."""
    words = tuple(f"w{number} " for number in range(50))
    body = text_body("openai", words)
    async with ReplayServer() as server:
        script = server.respond(sse_response(body, stall_after=len(body) // 2))
        async with make_model("openai", server) as model:
            run = run_agent_loop(
                messages=[UserMessage(content="Count.")],
                model=model,
                tools=ToolRegistry(),
                max_steps=2,
                limits=RunLimits(max_chunks_per_step=3),
            )
            async with asyncio.timeout(BOUND):
                result = await run.result
            others = _tether_tasks()
            async with asyncio.timeout(BOUND):
                await server.connections[0].closed.wait()
        script.release.set()
    assert isinstance(result, FailedRunResult)
    assert result.error.code == "MODEL_PROTOCOL_ERROR"
    assert others == []


def _tether_tasks() -> list[asyncio.Task[Any]]:
    """The tasks still running tether code (not the test's, not the replay server's)."""
    current = asyncio.current_task()
    found: list[asyncio.Task[Any]] = []
    for task in asyncio.all_tasks():
        code: Any = getattr(task.get_coro(), "cr_code", None)
        if task is not current and f"{os.sep}tether{os.sep}" in str(
            getattr(code, "co_filename", "")
        ):
            found.append(task)
    return found
