"""``OpenAIResponsesModel`` over real loopback sockets: the replay/fault server end to end,
through the model and ``run_agent_loop``: the recorded Responses streams replayed whole and
in small pieces, a two-turn tool run sending the reasoning's encrypted content back verbatim,
retries (statuses and first error events), error bodies and events, a whole JSON body, an
abort, and the key only in ``Authorization``.

The recorded streams are read from the shared folder's ``recorded/`` at test time (never
copied here; a missing folder is a skip, and a failure under CI).
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any, Final

import pytest

import responses_bodies as rb
from factories import failure
from servers.replay import ReplayServer, Split, json_response, sse_response
from support import missing_recordings, recorded_streams
from tether import (
    AbortController,
    CompletedRunResult,
    ModelChunk,
    ModelRequest,
    ModelResponse,
    ModelUsage,
    RunResult,
    ToolRegistry,
    UserMessage,
    run_agent_loop,
    to_json,
    tool,
)
from tether.providers._http import RetryPolicy
from tether.providers._sse import SSEDecoder
from tether.providers.errors import ProviderError
from tether.providers.openai_responses import OpenAIResponsesModel
from tether.providers.responses_wire import ResponsesStreamParser

BOUND: Final = 20.0
SECRET: Final = "sk-test-RESPONSES-SECRET-0123456789"
FAST_RETRY: Final = RetryPolicy(attempts=3, initial_backoff=0.0, max_backoff=0.0)


@tool
async def add(left: int, right: int) -> int:
    """Add two integers."""
    return left + right


@tool
async def weather(location: str) -> str:
    """Get weather information for a location."""
    return "40 C"


def model_for(server: ReplayServer, **options: Any) -> OpenAIResponsesModel:
    options.setdefault("retry", FAST_RETRY)
    return OpenAIResponsesModel("gpt-5", base_url=server.url, api_key=SECRET, **options)


async def run_once(
    model: OpenAIResponsesModel,
    *,
    tools: ToolRegistry | None = None,
    signal: Any = None,
    prompt: str = "What is 20 + 22?",
) -> tuple[list[Any], RunResult]:
    stream = run_agent_loop(
        messages=[UserMessage(id="user-1", content=prompt)],
        model=model,
        tools=tools or ToolRegistry(),
        max_steps=4,
        system="Be brief.",
        signal=signal,
    )
    async with asyncio.timeout(BOUND):
        events = [event async for event in stream]
        return events, await stream.result


async def collect(model: OpenAIResponsesModel) -> tuple[list[ModelChunk], ModelResponse]:
    request = ModelRequest(id="request-001", messages=(UserMessage(content="hi"),))
    stream = model.stream(request, AbortController().signal)
    async with asyncio.timeout(BOUND):
        chunks = [chunk async for chunk in stream]
        return chunks, await stream.result


def no_key_in(events: list[Any], result: RunResult) -> None:
    dumped = json.dumps([to_json(event) for event in events]) + json.dumps(to_json(result))
    assert SECRET not in dumped


# --- the request and a text answer ----------------------------------------------------------------


@pytest.mark.parametrize("split", ["whole", "bytes1", ("random", 3)])
async def test_a_streamed_text_answer(split: Split) -> None:
    async with ReplayServer() as server:
        server.respond(sse_response(rb.text_body("The sum ", "is 42."), split=split))
        async with model_for(server, reasoning_effort="low", max_output_tokens=500) as model:
            events, result = await run_once(model)
    assert isinstance(result, CompletedRunResult), result
    assert result.final_text == "The sum is 42."
    assert result.usage == ModelUsage(input_tokens=20, output_tokens=10)
    request = server.requests[0]
    assert request.path == "/v1/responses"
    assert request.headers["authorization"] == f"Bearer {SECRET}"
    sent: Any = request.json
    assert sent["model"] == "gpt-5"
    assert sent["instructions"] == "Be brief."
    assert sent["input"] == [{"role": "user", "content": "What is 20 + 22?"}]
    assert sent["store"] is False
    assert sent["include"] == ["reasoning.encrypted_content"]
    assert sent["stream"] is True
    assert sent["reasoning"] == {"effort": "low"}
    assert sent["max_output_tokens"] == 500
    assert SECRET not in request.body.decode()
    no_key_in(events, result)


def test_the_constructor_checks_its_arguments() -> None:
    bad: list[dict[str, Any]] = [
        {"max_output_tokens": 0},
        {"reasoning_effort": ""},
        {"reasoning_summary": "all"},
        {"api_key": ""},
        {"base_url": "ftp://x"},
    ]
    for options in bad:
        with pytest.raises(TypeError):
            OpenAIResponsesModel("gpt-5", **options)
    with pytest.raises(TypeError):
        OpenAIResponsesModel("")
    model = OpenAIResponsesModel("gpt-5", api_key=SECRET)
    assert SECRET not in repr(model)
    assert (
        repr(model)
        == "OpenAIResponsesModel('gpt-5', base_url='https://api.openai.com/v1', api_key=set)"
    )


def test_the_key_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TETHER_TEST_RESPONSES_KEY", SECRET)
    model = OpenAIResponsesModel("gpt-5", api_key_env="TETHER_TEST_RESPONSES_KEY")
    assert model._headers()["authorization"] == f"Bearer {SECRET}"  # pyright: ignore[reportPrivateUsage]
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert "authorization" not in OpenAIResponsesModel("gpt-5")._headers()  # pyright: ignore[reportPrivateUsage]


# --- the recorded streams over loopback -----------------------------------------------------------


def _recorded() -> list[Path]:
    return recorded_streams("openai-responses")


def parsed_directly(body: bytes) -> tuple[list[ModelChunk], ModelResponse] | ProviderError:
    """The same bytes through the decoder and parser alone (no HTTP)."""
    decoder = SSEDecoder()
    parser = ResponsesStreamParser("request-001")
    chunks: list[ModelChunk] = []
    try:
        for event in [*decoder.feed(body), *decoder.close()]:
            chunks += parser.feed(json.loads(event.data), event=event.event)
            if parser.stopped:
                break
        tail, response = parser.finish(done=parser.stopped)
    except ProviderError as error:
        return error
    return [*chunks, *tail], response


@pytest.mark.parametrize(
    "path", _recorded() or [None], ids=lambda path: getattr(path, "stem", "none")
)
@pytest.mark.parametrize("split", ["whole", ("random", 7)])
async def test_the_recorded_streams_replay_over_loopback(path: Path | None, split: Split) -> None:
    """Every recorded body, served whole and in 1-32 byte pieces, gives exactly what the
    parser gives on the same bytes (or the same coded error)."""
    if path is None:
        missing_recordings()
    body = recorded_body(path)
    expected = parsed_directly(body)
    async with ReplayServer() as server:
        server.respond(sse_response(body, split=split))
        async with model_for(server, retry=RetryPolicy(attempts=1)) as model:
            if isinstance(expected, ProviderError):
                with pytest.raises(ProviderError) as caught:
                    await collect(model)
                assert caught.value.code == expected.code
                assert caught.value.provider_code == expected.provider_code
                return
            chunks, response = await collect(model)
    assert chunks == expected[0]
    assert response == expected[1]


def recorded_body(path: Path) -> bytes:
    recording: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return recording["body"].encode()


def _recording(name: str) -> dict[str, Any]:
    for path in _recorded():
        if path.stem == name:
            recording: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
            return recording
    return missing_recordings()


def _reasoning_done(body: str) -> dict[str, Any]:
    for frame in body.split("\n\n"):
        data = frame.partition("data: ")[2]
        if '"response.output_item.done"' in data and '"type":"reasoning"' in data:
            payload: dict[str, Any] = json.loads(data)
            return payload["item"]
    raise AssertionError("no reasoning item in the recording")


async def test_a_two_turn_tool_run_sends_the_recorded_reasoning_back_verbatim() -> None:
    """gpt-5's recorded turn (a reasoning summary, then a ``weather`` call), the tool's
    result, then gpt-5's recorded answer: the second request carries the reasoning item with
    the very ``rs_`` id and encrypted content the first stream's ``output_item.done`` had,
    right before its call, and the call and its output as the recorded follow-up request
    sent them."""
    first = _recording("openai-responses-reasoning-summary")
    second = _recording("openai-responses-tool-result-turn")
    reasoning = _reasoning_done(first["body"])
    async with ReplayServer() as server:
        server.respond(sse_response(first["body"].encode(), split=("random", 5)))
        server.respond(sse_response(second["body"].encode()))
        async with model_for(server, reasoning_effort="high", reasoning_summary="auto") as model:
            events, result = await run_once(
                model,
                tools=ToolRegistry([weather]),
                prompt="What's the weather in Florence, Italy?",
            )
    assert isinstance(result, CompletedRunResult), result
    assert result.final_text.startswith("Right now in Florence, Italy")
    assert len(server.requests) == 2
    sent: Any = server.requests[1].json
    recorded_input: list[dict[str, Any]] = second["request"]["input"]
    recorded_call = next(item for item in recorded_input if item.get("type") == "function_call")
    recorded_output = next(
        item for item in recorded_input if item.get("type") == "function_call_output"
    )
    assert sent["input"] == [
        {"role": "user", "content": "What's the weather in Florence, Italy?"},
        {
            "type": "reasoning",
            "id": reasoning["id"],
            "encrypted_content": reasoning["encrypted_content"],
            "summary": [],
        },
        {key: recorded_call[key] for key in ("type", "call_id", "name", "arguments")},
        recorded_output,
    ]
    assert sent["reasoning"] == second["request"]["reasoning"]
    assert sent["store"] is False
    assert sent["include"] == ["reasoning.encrypted_content"]
    assert sent["tools"][0]["name"] == "weather"
    thinking = [event for event in events if event.type == "model.chunk"]
    assert any(event.payload.chunk.type == "thinkingDelta" for event in thinking)
    no_key_in(events, result)


async def test_a_tool_run_with_an_invalid_call_sends_the_raw_arguments_back() -> None:
    broken = rb.body(
        *(rb.created(), rb.in_progress()),
        *rb.call(0, "add", '{"left": 20', ' "right": 22}'),
        rb.completed(),
    )
    async with ReplayServer() as server:
        server.respond(sse_response(broken))
        server.respond(sse_response(rb.text_body("42")))
        async with model_for(server) as model:
            _, result = await run_once(model, tools=ToolRegistry([add]))
    assert isinstance(result, CompletedRunResult), result
    (answer,) = [message for message in result.messages if message.role == "toolResult"]
    assert answer.is_error
    assert answer.content.startswith("TOOL_ARGUMENTS_INVALID")
    items: Any = server.requests[1].json["input"]
    assert items[1] == {
        "type": "function_call",
        "call_id": "call_1",
        "name": "add",
        "arguments": '{"left": 20 "right": 22}',
    }
    assert items[2]["type"] == "function_call_output"
    assert items[2]["call_id"] == "call_1"


# --- retries and errors ---------------------------------------------------------------------------


@pytest.mark.parametrize("status", [429, 500, 503])
async def test_overloaded_and_rate_limited_answers_are_retried(status: int) -> None:
    error = {"error": {"message": "busy", "type": "server_error", "code": None}}
    async with ReplayServer() as server:
        server.respond(json_response(status, error, headers=[("retry-after", "0")]))
        server.respond(sse_response(rb.text_body("ok")))
        async with model_for(server) as model:
            _, result = await run_once(model)
    assert isinstance(result, CompletedRunResult), result
    assert len(server.requests) == 2


@pytest.mark.parametrize("code", ["server_is_overloaded", "rate_limit_exceeded"])
async def test_an_overloaded_or_rate_limited_first_event_is_retried(code: str) -> None:
    first = rb.body(rb.created(), rb.in_progress(), {"type": "error", "code": code, "message": "m"})
    async with ReplayServer() as server:
        server.respond(sse_response(first))
        server.respond(sse_response(rb.text_body("ok")))
        async with model_for(server) as model:
            _, result = await run_once(model)
    assert isinstance(result, CompletedRunResult), result
    assert result.final_text == "ok"
    assert len(server.requests) == 2


async def test_an_error_event_after_content_fails_the_run() -> None:
    events = rb.message(0, "partial")[:3]
    body = rb.body(
        rb.created(), *events, {"type": "error", "code": "server_is_overloaded", "message": "m"}
    )
    async with ReplayServer() as server:
        server.respond(sse_response(body))
        async with model_for(server) as model:
            _, result = await run_once(model)
    assert failure(result).startswith("PROVIDER_OVERLOADED")
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    ("status", "error", "code"),
    [
        (
            401,
            {
                "message": "Incorrect API key",
                "type": "invalid_request_error",
                "code": "invalid_api_key",
            },
            "PROVIDER_AUTH_FAILED",
        ),
        (
            404,
            {"message": "The model does not exist", "code": "model_not_found"},
            "PROVIDER_BAD_REQUEST",
        ),
        (
            400,
            {"message": "Item with id 'rs_1' not found.", "code": None, "param": "input"},
            "PROVIDER_BAD_REQUEST",
        ),
        (
            400,
            {"message": "context_length_exceeded: too long", "code": "context_length_exceeded"},
            "PROVIDER_CONTEXT_OVERFLOW",
        ),
    ],
)
async def test_http_errors_keep_the_vendor_code(
    status: int, error: dict[str, Any], code: str
) -> None:
    async with ReplayServer() as server:
        server.respond(json_response(status, {"error": error}))
        async with model_for(server) as model:
            with pytest.raises(ProviderError) as caught:
                await collect(model)
    assert caught.value.code == code
    assert caught.value.status == status
    assert caught.value.provider_code == error.get("code")
    assert error["message"] in caught.value.message


async def test_eof_before_the_terminal_event_is_stream_interrupted() -> None:
    body = rb.body(rb.created(), *rb.message(0, "partial"))
    async with ReplayServer() as server:
        server.respond(sse_response(body))
        async with model_for(server) as model:
            _, result = await run_once(model)
    assert failure(result).startswith("PROVIDER_STREAM_INTERRUPTED")


async def test_a_whole_json_response_is_parsed() -> None:
    whole = rb.response(
        "completed",
        output=[rb.message_done(0, "whole answer")["item"]],
        usage=rb.usage(5, 2),
    )
    async with ReplayServer() as server:
        server.respond(json_response(200, whole))
        async with model_for(server) as model:
            _, result = await run_once(model)
    assert isinstance(result, CompletedRunResult), result
    assert result.final_text == "whole answer"
    assert result.usage == ModelUsage(input_tokens=5, output_tokens=2)


async def test_an_abort_mid_stream_closes_the_connection_at_once() -> None:
    controller = AbortController()
    data = rb.text_body("a", "b", "c")
    async with ReplayServer() as server:
        script = server.respond(sse_response(data, stall_after=len(data) // 2))
        async with model_for(server) as model:
            task = asyncio.create_task(run_once(model, signal=controller.signal))
            async with asyncio.timeout(BOUND):
                (request,) = await server.wait_for_requests(1)
                await script.stalled.wait()
            aborted_at = time.monotonic()
            controller.abort("stop")
            _, result = await task
            async with asyncio.timeout(BOUND):
                await request.connection.closed.wait()
        script.release.set()
    assert result.status == "cancelled"
    closed_at = request.connection.closed_at
    assert closed_at is not None
    assert closed_at - aborted_at < 0.1


async def test_list_models_asks_the_openai_models_endpoint() -> None:
    async with ReplayServer() as server:
        server.respond(json_response(200, {"object": "list", "data": [{"id": "gpt-5"}]}))
        async with model_for(server) as model:
            assert await model.list_models() == ("gpt-5",)
        (request,) = server.requests
    assert (request.method, request.path) == ("GET", "/v1/models")
    assert request.headers["authorization"] == f"Bearer {SECRET}"


def test_model_from_spec_builds_it_from_the_registry_preset() -> None:
    from tether import model_from_spec

    model = model_from_spec("openai-responses/gpt-5", api_key=SECRET, reasoning_effort="low")
    assert isinstance(model, OpenAIResponsesModel)
    assert (model.model, model.base_url) == ("gpt-5", "https://api.openai.com/v1")
