"""``GeminiModel`` over real loopback sockets: the replay/fault server plays the recorded Gemini
streams (whole, a byte at a time and in random pieces) and written ones, end to end through
``run_agent_loop`` (text, thinking, a two-turn tool run sending the thought signature back
verbatim), retries, error bodies, a cut stream, and the key only in ``x-goog-api-key``."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, Final

import pytest

import gemini_bodies as g
from gemini_sdk import assert_same_as_sdk, sdk_described
from servers.replay import ReplayServer, json_response, sse_response
from support import missing_recordings, recorded_streams
from tether import (
    AbortController,
    CompletedRunResult,
    FailedRunResult,
    ModelChunk,
    ModelRequest,
    ModelResponse,
    RunResult,
    ThinkingBlock,
    ToolRegistry,
    UserMessage,
    run_agent_loop,
    to_json,
    tool,
)
from tether.providers._http import RetryPolicy
from tether.providers.errors import ProviderError
from tether.providers.gemini import GeminiModel
from tether.providers.gemini_wire import GeminiStreamParser

BOUND: Final = 20.0
SECRET: Final = "AIza-test-GEMINI-SECRET-0123456789"
FAST_RETRY: Final = RetryPolicy(attempts=3, initial_backoff=0.0, max_backoff=0.0)
BYTE_BY_BYTE: Final = 8192
"""Most body bytes a replay sends one per write (a 27 kB recording byte by byte takes seconds
on a loaded machine; the wire tests parse every recording one byte at a time in-process)."""
ENDPOINT: Final = "/v1beta/models/gemini-test:streamGenerateContent?alt=sse"


@tool
async def get_country() -> str:
    """The user's country."""
    return "Mexico"


def model_for(server: ReplayServer, **options: Any) -> GeminiModel:
    options.setdefault("retry", FAST_RETRY)
    return GeminiModel("gemini-test", base_url=server.origin, api_key=SECRET, **options)


def request(content: str = "What is 20 + 22?") -> ModelRequest:
    return ModelRequest(id="request-001", messages=(UserMessage(content=content),))


async def collect(model: GeminiModel) -> tuple[list[ModelChunk], ModelResponse]:
    stream = model.stream(request(), AbortController().signal)
    async with asyncio.timeout(BOUND):
        chunks = [chunk async for chunk in stream]
        return chunks, await stream.result


async def failure_of(model: GeminiModel) -> ProviderError:
    with pytest.raises(ProviderError) as caught:
        await collect(model)
    return caught.value


async def run_once(
    model: GeminiModel, content: str, *, tools: ToolRegistry | None = None
) -> tuple[list[Any], RunResult]:
    stream = run_agent_loop(
        messages=[UserMessage(id="user-1", content=content)],
        model=model,
        tools=tools or ToolRegistry(),
        max_steps=4,
        system="Be brief.",
    )
    async with asyncio.timeout(BOUND):
        events = [event async for event in stream]
        return events, await stream.result


def recorded(name: str) -> bytes:
    found = {path.stem: path for path in recorded_streams("gemini")}
    if name not in found:
        missing_recordings()
    return str(json.loads(found[name].read_text(encoding="utf-8"))["body"]).encode()


def in_process(body: bytes) -> tuple[list[ModelChunk], ModelResponse]:
    """The same body parsed without HTTP: what the loopback run must give."""
    from tether.providers._sse import SSEDecoder

    decoder = SSEDecoder()
    parser = GeminiStreamParser("request-001")
    chunks: list[ModelChunk] = []
    for event in [*decoder.feed(body), *decoder.close()]:
        chunks += parser.feed(json.loads(event.data))
    tail, response = parser.finish(done=False)
    return chunks + tail, response


def _recorded_paths() -> list[Path]:
    return recorded_streams("gemini")


@pytest.mark.parametrize(
    "path", _recorded_paths() or [None], ids=lambda path: getattr(path, "stem", "none")
)
@pytest.mark.parametrize("split", ["whole", "bytes1", ("random", 7)])
async def test_the_recorded_streams_over_loopback(path: Path | None, split: Any) -> None:
    if path is None:
        missing_recordings()
    body = recorded(path.stem)
    if split == "bytes1" and len(body) > BYTE_BY_BYTE:  # the rest in one write: bounded time
        split = list(range(1, BYTE_BY_BYTE))
    async with ReplayServer() as server:
        server.respond(sse_response(body, split=split))
        async with model_for(server) as model:
            chunks, response = await collect(model)
    assert (chunks, response) == in_process(body)
    sent = server.requests[0]
    assert sent.method == "POST"
    assert sent.path == ENDPOINT
    assert sent.headers["x-goog-api-key"] == SECRET
    assert SECRET not in sent.path
    assert "authorization" not in sent.headers
    assert sent.json == {"contents": [{"role": "user", "parts": [{"text": "What is 20 + 22?"}]}]}


@pytest.mark.parametrize(
    "path", _recorded_paths() or [None], ids=lambda path: getattr(path, "stem", "none")
)
async def test_the_official_sdk_reading_the_same_bytes_over_loopback_agrees(
    path: Path | None,
) -> None:
    """google-genai's own client (its HTTP, its SSE reading) and ``GeminiModel`` each stream
    the same recorded body, cut into random pieces, from the replay server."""
    genai: Any = pytest.importorskip("google.genai")
    types: Any = pytest.importorskip("google.genai.types")
    if path is None:
        missing_recordings()
    body = recorded(path.stem)
    async with ReplayServer() as server:
        server.respond(sse_response(body, split=("random", 11)))
        server.respond(sse_response(body, split=("random", 13)))
        client = genai.Client(
            api_key=SECRET, http_options=types.HttpOptions(base_url=server.origin)
        )
        try:
            async with asyncio.timeout(BOUND):
                stream = await client.aio.models.generate_content_stream(
                    model="gemini-test", contents="What is 20 + 22?"
                )
                responses = [response async for response in stream]
        finally:
            await client.aio.aclose()
        async with model_for(server) as model:
            _, ours = await collect(model)
    assert_same_as_sdk(ours, sdk_described(responses))
    sdk_request, our_request = server.requests
    assert sdk_request.headers["x-goog-api-key"] == our_request.headers["x-goog-api-key"]
    assert sdk_request.path.endswith(":streamGenerateContent?alt=sse")


async def test_a_text_run_with_thinking_through_the_loop() -> None:
    body = recorded("gemini-thought-parts")
    async with ReplayServer() as server:
        server.respond(sse_response(body, split=("random", 3)))
        async with model_for(server, thinking_budget=1024, max_output_tokens=4000) as model:
            events, result = await run_once(model, "How do I cross the street?")
    assert isinstance(result, CompletedRunResult), result
    assert result.final_text.startswith("This is a great question!")
    assistant: Any = result.messages[-1]
    assert isinstance(assistant.content[0], ThinkingBlock)
    assert assistant.content[1].signature  # kept on the answer text it came with
    sent: Any = server.requests[0].json
    assert sent["systemInstruction"] == {"parts": [{"text": "Be brief."}]}
    assert sent["generationConfig"] == {
        "maxOutputTokens": 4000,
        "thinkingConfig": {"includeThoughts": True, "thinkingBudget": 1024},
    }
    dumped = json.dumps([to_json(event) for event in events]) + json.dumps(to_json(result))
    assert SECRET not in dumped


async def test_a_two_turn_tool_run_sends_the_thought_signature_back_verbatim() -> None:
    """The recorded pair: a ``get_country`` call with its signature, then the answer. The
    second request carries the model turn as received, its signature byte for byte, and the
    result linked to the synthesized call ID."""
    first = recorded("gemini-tool-call-thought-signature")
    second = recorded("gemini-thought-signature-replay")
    payload = json.loads(first.split(b"\r\n\r\n")[0].removeprefix(b"data: "))
    signature = payload["candidates"][0]["content"]["parts"][0]["thoughtSignature"]
    async with ReplayServer() as server:
        server.respond(sse_response(first, split="bytes1"))
        server.respond(sse_response(second, split=("random", 5)))
        async with model_for(server) as model:
            _, result = await run_once(
                model,
                "What is the capital of the user country? Call the tool",
                tools=ToolRegistry([get_country]),
            )
    assert isinstance(result, CompletedRunResult), result
    assert result.final_text == "The capital of Mexico is Mexico City."
    call_id = f"{payload['responseId']}-call-0"
    replay: Any = server.requests[1].json
    user, model_turn, results = replay["contents"]
    assert user["role"] == "user"
    assert model_turn == {
        "role": "model",
        "parts": [
            {
                "functionCall": {"name": "get_country", "args": {}, "id": call_id},
                "thoughtSignature": signature,
            }
        ],
    }
    assert results == {
        "role": "user",
        "parts": [
            {
                "functionResponse": {
                    "name": "get_country",
                    "id": call_id,
                    "response": {"output": "Mexico"},
                }
            }
        ],
    }
    declaration = replay["tools"][0]["functionDeclarations"][0]
    assert declaration["name"] == "get_country"
    assert declaration["parameters"]["type"] == "OBJECT"
    assert result.usage.input_tokens == 29 + 257


async def test_parallel_calls_run_and_their_results_go_back_in_order() -> None:
    @tool
    async def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    @tool
    async def multiply(a: int, b: int) -> int:
        """Multiply."""
        return a * b

    async with ReplayServer() as server:
        server.respond(sse_response(recorded("gemini-parallel-function-calls-split")))
        server.respond(sse_response(g.text_body("5 and 6.")))
        async with model_for(server) as model:
            _, result = await run_once(
                model, "Add and multiply", tools=ToolRegistry([add, multiply])
            )
    assert isinstance(result, CompletedRunResult), result
    replay: Any = server.requests[1].json
    calls = [part["functionCall"] for part in replay["contents"][1]["parts"]]
    assert [(c["name"], c["id"]) for c in calls] == [("add", "8hd01vsf"), ("multiply", "k0srpqrc")]
    answers = [part["functionResponse"] for part in replay["contents"][2]["parts"]]
    assert answers == [
        {"name": "add", "id": "8hd01vsf", "response": {"output": "5"}},
        {"name": "multiply", "id": "k0srpqrc", "response": {"output": "6"}},
    ]
    first_part = replay["contents"][1]["parts"][0]
    assert "thoughtSignature" in first_part
    assert "thoughtSignature" not in replay["contents"][1]["parts"][1]


async def test_a_503_and_an_unavailable_first_event_are_retried() -> None:
    unavailable = {"error": {"code": 503, "message": "overloaded", "status": "UNAVAILABLE"}}
    async with ReplayServer() as server:
        server.respond(json_response(503, unavailable))
        server.respond(sse_response(g.body(unavailable)))
        server.respond(sse_response(g.text_body("ok")))
        async with model_for(server) as model:
            chunks, response = await collect(model)
    assert [chunk.type for chunk in chunks] == ["textDelta"]
    assert response.stop_reason == "stop"
    assert len(server.requests) == 3


@pytest.mark.parametrize(
    ("status", "error", "code", "provider_code"),
    [
        (
            400,
            {"code": 400, "message": "Bad schema", "status": "INVALID_ARGUMENT"},
            "PROVIDER_BAD_REQUEST",
            "INVALID_ARGUMENT",
        ),
        (
            403,
            {"code": 403, "message": "Key rejected", "status": "PERMISSION_DENIED"},
            "PROVIDER_AUTH_FAILED",
            "PERMISSION_DENIED",
        ),
        (
            400,
            {
                "code": 400,
                "message": "The input token count exceeds the maximum number of tokens allowed",
                "status": "INVALID_ARGUMENT",
            },
            "PROVIDER_BAD_REQUEST",
            "INVALID_ARGUMENT",
        ),
    ],
)
async def test_http_errors_keep_the_vendor_message_and_status_name(
    status: int, error: dict[str, Any], code: str, provider_code: str
) -> None:
    async with ReplayServer() as server:
        server.respond(json_response(status, [{"error": error}]))  # the array-wrapped form
        async with model_for(server) as model:
            failure = await failure_of(model)
    assert (failure.code, failure.status, failure.provider_code) == (code, status, provider_code)
    assert error["message"] in failure.message


async def test_a_429_names_its_retry_delay_and_a_long_one_is_not_waited_for() -> None:
    error = {
        "code": 429,
        "message": "Quota exceeded",
        "status": "RESOURCE_EXHAUSTED",
        "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "3600s"}],
    }
    async with ReplayServer() as server:
        server.respond(json_response(429, {"error": error}))
        async with model_for(server) as model:
            failure = await failure_of(model)
    assert failure.code == "PROVIDER_RATE_LIMITED"
    assert failure.retry_after == 3600
    assert len(server.requests) == 1


async def test_a_stream_cut_before_its_finish_reason_is_interrupted() -> None:
    body = g.text_body("one ", "two ", "three")
    cut = body.index(b"two")
    async with ReplayServer() as server:
        server.respond(sse_response(body, close_after=cut))
        async with model_for(server) as model:
            failure = await failure_of(model)
    assert failure.code == "PROVIDER_STREAM_INTERRUPTED"


async def test_a_json_array_answer_instead_of_sse_is_a_protocol_error() -> None:
    """Without ``alt=sse`` (a proxy that drops it) Gemini streams a JSON array: refused, not
    read as something else."""
    async with ReplayServer() as server:
        server.respond(json_response(200, [g.chunk(g.text("x"), finish="STOP")]))
        async with model_for(server) as model:
            failure = await failure_of(model)
    assert failure.code == "PROVIDER_PROTOCOL_ERROR"


async def test_an_error_that_echoes_the_key_never_carries_it() -> None:
    echo = {"code": 400, "message": f"API key {SECRET} not valid", "status": f"BAD_{SECRET}"}
    async with ReplayServer() as server:
        server.respond(json_response(400, {"error": echo}))
        server.respond(sse_response(g.body(g.chunk(g.text("x")), {"error": echo})))
        async with model_for(server) as model:
            errors = [await failure_of(model), await failure_of(model)]
    for error in errors:
        shown = " ".join([str(error), error.message, repr(error), str(error.provider_code)])
        assert SECRET not in shown
        assert SECRET[:12] not in shown
        assert "[redacted]" in error.message


def test_the_constructor_checks_its_arguments_and_hides_the_key() -> None:
    model = GeminiModel("models/gemini-2.5-flash", api_key=SECRET)
    assert model.model == "gemini-2.5-flash"
    assert SECRET not in repr(model)
    assert "api_key=set" in repr(model)
    for bad in (
        {"model": ""},
        {"model": "models/"},
        {"base_url": "ftp://x"},
        {"api_key": ""},
        {"api_version": "v1/x"},
    ):
        arguments: dict[str, Any] = {"model": "m", **bad}
        with pytest.raises(TypeError):
            GeminiModel(**arguments)
    options: list[dict[str, Any]] = [
        {"thinking_budget": -5},
        {"thinking_level": "huge"},
        {"temperature": 3},
    ]
    for bad_option in options:
        with pytest.raises(ValueError, match="must be"):
            GeminiModel("m", **bad_option)


def test_the_key_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", SECRET)
    assert "api_key=set" in repr(GeminiModel("m"))
    monkeypatch.delenv("GEMINI_API_KEY")
    assert "api_key=none" in repr(GeminiModel("m"))


async def test_a_failed_run_reports_a_model_stream_failure() -> None:
    async with ReplayServer() as server:
        server.respond(sse_response(g.body(g.chunk(finish="MALFORMED_FUNCTION_CALL"))))
        async with model_for(server) as model:
            _, result = await run_once(model, "hi")
    assert isinstance(result, FailedRunResult), result
    assert result.error.code == "MODEL_STREAM_FAILED"
    assert "MALFORMED_FUNCTION_CALL" in result.error.message


# --- the registry entry and the model list --------------------------------------------------------


async def test_google_in_the_catalog_builds_a_gemini_model(monkeypatch: pytest.MonkeyPatch) -> None:
    from tether.providers.catalog import PRESETS, model_from_spec

    monkeypatch.setenv("GEMINI_API_KEY", SECRET)
    preset = PRESETS["google"]
    assert (preset.api, preset.api_key_env) == ("gemini", "GEMINI_API_KEY")
    async with ReplayServer() as server:
        server.respond(sse_response(g.text_body("hi")))
        model = model_from_spec("google/gemini-test", base_url=server.origin, retry=FAST_RETRY)
        assert isinstance(model, GeminiModel)
        assert model.model == "gemini-test"
        async with model:
            chunks, _ = await collect(model)
    assert [chunk.type for chunk in chunks] == ["textDelta"]
    assert server.requests[0].headers["x-goog-api-key"] == SECRET
    assert GeminiModel("m").base_url == preset.base_url


async def test_list_models_follows_googles_pages() -> None:
    pages = [
        {
            "models": [{"name": "models/gemini-2.5-flash"}, {"name": "models/gemini-2.5-pro"}],
            "nextPageToken": "next/token",
        },
        {"models": [{"name": "models/gemini-3-pro-preview"}]},
    ]
    async with ReplayServer() as server:
        for page in pages:
            server.respond(json_response(200, page))
        async with model_for(server) as model:
            async with asyncio.timeout(BOUND):
                ids = await model.list_models()
    assert ids == ("gemini-2.5-flash", "gemini-2.5-pro", "gemini-3-pro-preview")
    first, second = server.requests
    assert first.path == "/v1beta/models?pageSize=1000"
    assert second.path == "/v1beta/models?pageSize=1000&pageToken=next%2Ftoken"
    assert all(request.headers["x-goog-api-key"] == SECRET for request in server.requests)
    assert all(SECRET not in request.path for request in server.requests)


@pytest.mark.parametrize(
    "page",
    [
        {"models": [1]},
        {"models": [{"name": 5}]},
        {"models": [{"name": "models/"}]},
        {"models": [], "nextPageToken": 3},
    ],
)
def test_a_malformed_google_model_page_is_a_protocol_error(page: object) -> None:
    from tether.providers.model_list import parse_model_page

    with pytest.raises(ProviderError) as caught:
        parse_model_page(page)
    assert caught.value.code == "PROVIDER_PROTOCOL_ERROR"


def test_tool_processes_never_see_the_gemini_key() -> None:
    from tether.tools.coding.environment import catalog_key_variables

    assert "GEMINI_API_KEY" in catalog_key_variables()
