"""``OpenAIChatModel`` over real loopback sockets: the replay/fault server of ``tests/servers``
and the real llm-katan. End to end through ``run_agent_loop``: text and tool runs, retries,
status codes, faults mid-stream, cancellation that closes the connection, and the API key
never leaving the request headers."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pytest

from factories import failure
from servers.katan import OPENAI_KEY, KatanFactory, KatanServer, KatanStartError, run_katan
from servers.replay import ReplayServer, Script, json_response, sse_response
from tether import (
    AbortController,
    AbortError,
    CompletedRunResult,
    ModelUsage,
    RunResult,
    ToolRegistry,
    UserMessage,
    run_agent_loop,
    to_json,
    tool,
)
from tether.providers._http import RetryPolicy, Timeouts
from tether.providers.openai_chat import OpenAIChatModel
from tether.providers.openai_wire import OpenAIChatCompat

BOUND = 20.0
SECRET = "sk-test-SECRET-0123456789abcdef"
FAST_RETRY = RetryPolicy(attempts=3, initial_backoff=0.0, max_backoff=0.0)


@tool
async def add(left: int, right: int) -> int:
    """Add two integers."""
    return left + right


def chunk(
    delta: dict[str, Any], finish: str | None = None, usage: dict[str, Any] | None = None
) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-test-2026",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        "usage": usage,
    }


def usage_chunk(prompt: int, completion: int, cached: int = 0) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-test-2026",
        "choices": [],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": cached},
        },
    }


def text_stream(*parts: str) -> list[dict[str, Any]]:
    return [
        chunk({"role": "assistant", "content": ""}),
        *(chunk({"content": part}) for part in parts),
        chunk({}, "stop"),
        usage_chunk(10, len(parts), cached=4),
    ]


def tool_stream(call_id: str, arguments: list[str]) -> list[dict[str, Any]]:
    first = {"index": 0, "id": call_id, "type": "function", "function": {"name": "add"}}
    return [
        chunk(
            {
                "role": "assistant",
                "tool_calls": [{**first, "function": {"name": "add", "arguments": ""}}],
            }
        ),
        *(
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": part}}]})
            for part in arguments
        ),
        chunk({}, "tool_calls"),
        usage_chunk(20, 5),
    ]


def model_for(server: ReplayServer, **options: Any) -> OpenAIChatModel:
    options.setdefault("retry", FAST_RETRY)
    return OpenAIChatModel("gpt-test", base_url=server.url, api_key=SECRET, **options)


async def run_once(
    model: OpenAIChatModel, *, tools: ToolRegistry | None = None, signal: Any = None
) -> tuple[list[Any], RunResult]:
    stream = run_agent_loop(
        messages=[UserMessage(id="user-1", content="What is 20 + 22?")],
        model=model,
        tools=tools or ToolRegistry(),
        max_steps=4,
        system="Be brief.",
        signal=signal,
    )
    async with asyncio.timeout(BOUND):
        events = [event async for event in stream]
        return events, await stream.result


async def test_a_streamed_text_answer_completes_with_its_usage() -> None:
    async with ReplayServer() as server:
        server.respond(sse_response(_body(text_stream("The sum ", "is 42."))))
        async with model_for(server) as model:
            events, result = await run_once(model)
    assert isinstance(result, CompletedRunResult)
    assert result.final_text == "The sum is 42."
    assert result.usage == ModelUsage(input_tokens=6, output_tokens=2, cache_read_tokens=4)
    request = server.requests[0]
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {SECRET}"
    body: Any = request.json
    assert body["model"] == "gpt-test"
    assert body["stream"] is True
    assert body["messages"][0] == {"role": "system", "content": "Be brief."}
    assert body["messages"][1] == {"role": "user", "content": "What is 20 + 22?"}
    deltas = [
        e.payload.chunk.delta
        for e in events
        if e.type == "model.chunk" and e.payload.chunk.type == "textDelta"
    ]
    assert "".join(deltas) == "The sum is 42."


async def test_a_coding_session_s_prompt_cache_key_goes_to_openai_only(tmp_path: Any) -> None:
    """Issue 33: the session builds its model with its key; an OpenAI preset sends it as
    ``prompt_cache_key`` with every request, the other compatible presets never do (some
    reject fields they do not know); cached tokens are priced at the cached-input price."""
    from tether.cli.config import load_config
    from tether.cli.models import choose_model
    from tether.coding import CodingSession
    from tether.coding.config import CodingSessionConfig, SessionPlace

    config = load_config(tmp_path / "missing.toml")
    env = {"OPENAI_API_KEY": SECRET, "GROQ_API_KEY": SECRET}
    sent: dict[str, Any] = {}
    for spec in ("openai/gpt-4o-mini", "groq/llama-3.3-70b-versatile"):
        async with ReplayServer() as server:
            server.respond(sse_response(_body(text_stream("one"))))
            server.respond(sse_response(_body(text_stream("two"))))
            choice = choose_model(spec, base_url=server.url, config=config, environ=env)
            session = CodingSession(
                CodingSessionConfig(
                    model=choice, cwd=tmp_path, tools="none", sessions=SessionPlace()
                )
            )
            try:
                async with asyncio.timeout(BOUND):
                    await (await session.prompt("first")).result
                    await (await session.prompt("second")).result
            finally:
                await session.close()
            bodies: list[Any] = [request.json for request in server.requests]
            sent[spec] = [body.get("prompt_cache_key") for body in bodies]
            if spec.startswith("openai/"):
                # 2 x (6 uncached in at $0.15, 4 cached at $0.075, 1 out at $0.60) per million
                assert session.cost == pytest.approx(2 * (6 * 0.15 + 4 * 0.075 + 0.6) / 1e6)
                assert SECRET not in str(sent[spec])
        key = session.prompt_cache_key
        if spec.startswith("openai/"):
            assert sent[spec] == [key, key]
    assert sent["groq/llama-3.3-70b-versatile"] == [None, None]


def test_prompt_cache_key_is_checked() -> None:
    with pytest.raises(TypeError, match="prompt_cache_key"):
        OpenAIChatModel("gpt-test", api_key="k", prompt_cache_key="")


@pytest.mark.parametrize("split", ["whole", "bytes1", ("random", 7)])
async def test_a_two_turn_tool_run_completes_and_sums_usage(split: Any) -> None:
    async with ReplayServer() as server:
        server.respond(
            sse_response(
                _body(tool_stream("call_1", ['{"left"', ":20,", '"right":22}'])), split=split
            )
        )
        server.respond(sse_response(_body(text_stream("42")), split=split))
        async with model_for(server) as model:
            events, result = await run_once(model, tools=ToolRegistry([add]))
    assert isinstance(result, CompletedRunResult), result
    assert result.final_text == "42"
    assert result.usage == ModelUsage(input_tokens=26, output_tokens=6, cache_read_tokens=4)
    results = [m for m in result.messages if m.role == "toolResult"]
    assert [m.content for m in results] == ["42"]
    second: Any = server.requests[1].json
    assert second["tools"][0]["function"]["name"] == "add"
    assistant = second["messages"][2]
    assert assistant["tool_calls"][0]["id"] == "call_1"
    assert json.loads(assistant["tool_calls"][0]["function"]["arguments"]) == {
        "left": 20,
        "right": 22,
    }
    assert second["messages"][3] == {"role": "tool", "tool_call_id": "call_1", "content": "42"}
    assert any(e.type == "model.chunk" and e.payload.chunk.type == "toolCallDelta" for e in events)


async def test_a_call_with_broken_json_arguments_goes_back_to_the_model() -> None:
    """A local model's broken arguments do not fail the turn: the loop answers the call with
    ``TOOL_ARGUMENTS_INVALID`` (never running it) and the next request shows the model the
    text it sent and the error."""
    broken = '{"left": 20 "right": 22}'
    async with ReplayServer() as server:
        server.respond(sse_response(_body(tool_stream("call_1", ['{"left": 20', ' "right": 22}']))))
        server.respond(sse_response(_body(tool_stream("call_2", ['{"left":20,"right":22}']))))
        server.respond(sse_response(_body(text_stream("42"))))
        async with model_for(server) as model:
            events, result = await run_once(model, tools=ToolRegistry([add]))
    assert isinstance(result, CompletedRunResult), result
    assert result.final_text == "42"
    results = [m for m in result.messages if m.role == "toolResult"]
    assert [m.is_error for m in results] == [True, False]
    assert results[0].content.startswith(
        "TOOL_ARGUMENTS_INVALID: not valid JSON at line 1 column 13 (Expecting ',' delimiter); "
        "send the call again with a JSON object"
    )
    assert results[1].content == "42"
    started = [e.payload.tool_call for e in events if e.type == "tool.started"]
    assert [call.raw_arguments for call in started] == [broken, None]
    second: Any = server.requests[1].json
    assistant = second["messages"][2]
    assert assistant["tool_calls"] == [
        {"id": "call_1", "type": "function", "function": {"name": "add", "arguments": broken}}
    ]
    assert second["messages"][3] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": results[0].content,
    }


@pytest.mark.parametrize(
    ("status", "headers"),
    [(429, [("retry-after", "0")]), (503, []), (529, [("retry-after-ms", "1")]), (500, [])],
)
async def test_retryable_statuses_are_retried_before_anything_streamed(
    status: int, headers: list[tuple[str, str]]
) -> None:
    async with ReplayServer() as server:
        server.respond(
            json_response(status, {"error": {"message": "busy", "type": "x"}}, headers=headers)
        )
        server.respond(sse_response(_body(text_stream("ok"))))
        async with model_for(server) as model:
            _, result = await run_once(model)
    assert isinstance(result, CompletedRunResult), result
    assert len(server.requests) == 2


@pytest.mark.parametrize(
    ("status", "body", "code"),
    [
        (
            401,
            {"error": {"message": "Incorrect API key provided: " + SECRET}},
            "PROVIDER_AUTH_FAILED",
        ),
        (403, {"error": {"message": "forbidden"}}, "PROVIDER_AUTH_FAILED"),
        (400, {"error": {"message": "bad", "code": "invalid_value"}}, "PROVIDER_BAD_REQUEST"),
        (
            400,
            {"error": {"message": "This model's maximum context length is 8192 tokens"}},
            "PROVIDER_CONTEXT_OVERFLOW",
        ),
        (404, {"error": {"message": "no such model"}}, "PROVIDER_BAD_REQUEST"),
    ],
)
async def test_a_non_retryable_status_fails_with_its_code_and_the_key_redacted(
    status: int, body: dict[str, Any], code: str
) -> None:
    async with ReplayServer() as server:
        server.respond(json_response(status, body))
        async with model_for(server) as model:
            events, result = await run_once(model)
            shown = repr(model)
    message = failure(result)
    assert message.startswith(f"{code}: HTTP {status}")
    assert len(server.requests) == 1
    dumped = json.dumps([to_json(event) for event in events]) + json.dumps(to_json(result))
    assert SECRET not in dumped
    assert SECRET not in shown
    assert SECRET not in message


async def test_a_retry_after_beyond_the_cap_fails_at_once() -> None:
    async with ReplayServer() as server:
        server.respond(
            json_response(
                429, {"error": {"message": "slow down"}}, headers=[("retry-after", "3600")]
            )
        )
        async with model_for(server) as model:
            _, result = await run_once(model)
    assert failure(result).startswith("PROVIDER_RATE_LIMITED: HTTP 429")
    assert len(server.requests) == 1


async def test_retries_stop_after_the_policy_s_attempts() -> None:
    async with ReplayServer() as server:
        for _ in range(3):
            server.respond(json_response(500, {"error": {"message": "boom"}}))
        async with model_for(server) as model:
            _, result = await run_once(model)
    assert failure(result).startswith("PROVIDER_SERVER_ERROR: HTTP 500")
    assert len(server.requests) == 3


async def test_a_connection_lost_mid_stream_is_stream_interrupted() -> None:
    body = _body(text_stream("partial", " answer"))
    async with ReplayServer() as server:
        server.respond(sse_response(body, reset_after=len(body) // 2))
        async with model_for(server) as model:
            _, result = await run_once(model)
    assert failure(result).startswith("PROVIDER_STREAM_INTERRUPTED")
    assert len(server.requests) == 1  # never retried once something streamed


async def test_eof_before_the_stream_ended_is_stream_interrupted() -> None:
    payloads = text_stream("partial")[:2]  # no finish_reason, no [DONE]
    async with ReplayServer() as server:
        server.respond(sse_response(_body(payloads, done=False)))
        async with model_for(server) as model:
            _, result = await run_once(model)
    assert failure(result).startswith("PROVIDER_STREAM_INTERRUPTED")


async def test_an_error_inside_the_stream_is_an_error_event() -> None:
    payloads: list[Any] = [
        chunk({"content": "x"}),
        {"error": {"message": "server melted", "type": "server_error"}},
    ]
    async with ReplayServer() as server:
        server.respond(sse_response(_body(payloads)))
        async with model_for(server) as model:
            _, result = await run_once(model)
    message = failure(result)
    assert message.startswith("PROVIDER_ERROR_EVENT")
    assert "server melted" in message


async def test_a_json_body_answered_to_a_streaming_request_is_parsed_whole() -> None:
    completion = {
        "id": "chatcmpl-9",
        "object": "chat.completion",
        "model": "gpt-test-2026",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "whole"},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
    }
    async with ReplayServer() as server:
        server.respond(json_response(200, completion))
        async with model_for(server) as model:
            _, result = await run_once(model)
    assert isinstance(result, CompletedRunResult), result
    assert result.final_text == "whole"


async def test_an_unexpected_content_type_is_a_protocol_error() -> None:
    async with ReplayServer() as server:
        server.respond(Script(body=b"<html>hi</html>", headers=[("content-type", "text/html")]))
        async with model_for(server) as model:
            _, result = await run_once(model)
    assert failure(result).startswith("PROVIDER_PROTOCOL_ERROR")


async def test_a_stall_after_the_headers_times_out_on_the_idle_gap() -> None:
    body = _body(text_stream("a", "b"))
    async with ReplayServer() as server:
        script = server.respond(sse_response(body, stall_after=len(body) // 2))
        async with model_for(server, timeouts=Timeouts(idle=0.2, first_byte=5)) as model:
            _, result = await run_once(model)
        script.release.set()
    assert failure(result).startswith("PROVIDER_TIMEOUT")


@pytest.mark.parametrize("phase", ["first-byte", "mid-stream"])
async def test_an_abort_closes_the_connection_at_once(phase: str) -> None:
    controller = AbortController()
    body = _body(text_stream("a", "b", "c"))
    async with ReplayServer() as server:
        if phase == "first-byte":
            gate = asyncio.Event()
            script = server.respond(sse_response(body, delay_headers=gate))
        else:
            script = server.respond(sse_response(body, stall_after=len(body) // 2))
        async with model_for(server) as model:
            task = asyncio.create_task(run_once(model, signal=controller.signal))
            async with asyncio.timeout(BOUND):
                (request,) = await server.wait_for_requests(1)
                if phase == "mid-stream":
                    await script.stalled.wait()
            aborted_at = time.monotonic()
            controller.abort("stop now")
            _, result = await task
            async with asyncio.timeout(BOUND):
                await request.connection.closed.wait()
        script.release.set()
    assert result.status == "cancelled"
    assert result.reason == "stop now"
    closed_at = request.connection.closed_at
    assert closed_at is not None
    assert closed_at - aborted_at < 0.1


async def test_an_abort_during_a_retry_sleep_cancels_the_run() -> None:
    controller = AbortController()
    async with ReplayServer() as server:
        script = server.respond(
            json_response(429, {"error": {"message": "wait"}}, headers=[("retry-after", "30")])
        )
        retry = RetryPolicy(attempts=2, max_retry_after=60)
        async with model_for(server, retry=retry) as model:
            task = asyncio.create_task(run_once(model, signal=controller.signal))
            async with asyncio.timeout(BOUND):
                await (
                    script.finished.wait()
                )  # the 429 is sent: the model reads it, then sleeps 30 s
            started = time.monotonic()
            controller.abort("enough")
            _, result = await task
    assert result.status == "cancelled"
    assert time.monotonic() - started < 5  # the 30 s sleep did not run out
    assert len(server.requests) == 1


async def test_the_model_repr_never_shows_the_key() -> None:
    model = OpenAIChatModel("gpt-test", api_key=SECRET)
    assert SECRET not in repr(model)
    assert "api_key=set" in repr(model)
    await model.aclose()


# --- llm-katan: a server nobody here wrote -----------------------------------------------------


@pytest.fixture(scope="module")
def katan_validating_keys(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KatanServer]:
    """One llm-katan with ``--validate-keys`` for this module's key tests (as ``katan_server``
    is shared: besides a request counter it keeps no state, so no answer depends on the order
    of the tests). If it cannot start, the test fails with its stderr."""
    with ExitStack() as stack:
        try:
            workdir = tmp_path_factory.mktemp("katan-keys")
            server = stack.enter_context(run_katan(workdir, "--validate-keys"))
        except KatanStartError as error:
            pytest.fail(str(error), pytrace=False)
        yield server


@pytest.mark.slow
async def test_llm_katan_streams_a_text_answer(katan_server: KatanServer) -> None:
    compat = OpenAIChatCompat(max_tokens_field="max_tokens")
    async with OpenAIChatModel(
        katan_server.model, base_url=katan_server.base_url, api_key="katan-key", compat=compat
    ) as model:
        _, result = await run_once(model)
    assert isinstance(result, CompletedRunResult), result
    assert result.final_text  # echo text: not snapshotted (it carries host and time)
    assert result.usage.output_tokens > 0


@pytest.mark.slow
async def test_llm_katan_rate_limit_is_retried_then_reported(katan_factory: KatanFactory) -> None:
    server = katan_factory("--rate-limit-after", "1")
    compat = OpenAIChatCompat(max_tokens_field="max_tokens")
    async with OpenAIChatModel(
        server.model, base_url=server.base_url, api_key="k", compat=compat, retry=FAST_RETRY
    ) as model:
        _, first = await run_once(model)
        _, second = await run_once(model)
    assert isinstance(first, CompletedRunResult), first
    assert failure(second).startswith("PROVIDER_RATE_LIMITED: HTTP 429")


@pytest.mark.slow
async def test_llm_katan_rejects_a_wrong_key_as_auth_failed(
    katan_validating_keys: KatanServer,
) -> None:
    server = katan_validating_keys
    async with OpenAIChatModel(server.model, base_url=server.base_url, api_key=SECRET) as model:
        _, result = await run_once(model)
    message = failure(result)
    assert message.startswith("PROVIDER_AUTH_FAILED: HTTP 401")
    assert SECRET not in message


@pytest.mark.slow
async def test_llm_katan_accepts_the_right_key_in_the_authorization_header(
    katan_validating_keys: KatanServer,
) -> None:
    server = katan_validating_keys
    compat = OpenAIChatCompat(max_tokens_field="max_tokens")
    async with OpenAIChatModel(
        server.model, base_url=server.base_url, api_key=OPENAI_KEY, compat=compat
    ) as model:
        _, result = await run_once(model)
    assert isinstance(result, CompletedRunResult), result


@pytest.mark.slow
async def test_llm_katan_server_errors_are_retried_then_reported(
    katan_factory: KatanFactory,
) -> None:
    server = katan_factory("--error-rate", "1.0")
    async with OpenAIChatModel(
        server.model, base_url=server.base_url, api_key="k", retry=FAST_RETRY
    ) as model:
        _, result = await run_once(model)
    assert failure(result).startswith("PROVIDER_SERVER_ERROR: HTTP 500")


def _body(payloads: list[Any], *, done: bool = True) -> bytes:
    from servers.replay import sse_body

    return sse_body(payloads, done=done)


async def test_a_model_from_a_spec_uses_the_catalog_preset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GROQ_API_KEY", SECRET)
    model = OpenAIChatModel.from_spec("groq/llama-3.3-70b")
    assert model.model == "llama-3.3-70b"
    assert model.base_url == "https://api.groq.com/openai/v1"
    assert SECRET not in repr(model)
    assert "api_key=set" in repr(model)
    local = OpenAIChatModel.from_spec("ollama/qwen3", base_url="http://127.0.0.1:9/v1")
    assert local.base_url == "http://127.0.0.1:9/v1"
    assert "api_key=none" in repr(local)
    with pytest.raises(ValueError, match="groq"):
        OpenAIChatModel.from_spec("nosuch/model")
    await model.aclose()
    await local.aclose()


async def test_closing_the_model_stream_early_closes_the_connection() -> None:
    from tether import ModelRequest

    body = _body(text_stream("a", "b", "c"))
    async with ReplayServer() as server:
        script = server.respond(sse_response(body, stall_after=len(body) // 2))
        async with model_for(server) as model:
            request = ModelRequest(id="request-001", messages=(UserMessage(content="hi"),))
            stream = model.stream(request, AbortController().signal)
            iterator = aiter(stream)
            async with asyncio.timeout(BOUND):
                first = await anext(iterator)
                await script.stalled.wait()
            assert first.type == "textDelta"
            closed_at_call = time.monotonic()
            await iterator.aclose()
            async with asyncio.timeout(BOUND):
                (recorded,) = await server.wait_for_requests(1)
                await recorded.connection.closed.wait()
                with pytest.raises(AbortError):
                    await stream.result
        script.release.set()
    closed_at = recorded.connection.closed_at
    assert closed_at is not None
    assert closed_at - closed_at_call < 0.1
