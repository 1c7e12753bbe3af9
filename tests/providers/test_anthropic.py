"""``AnthropicModel`` over real loopback sockets: the replay/fault server and llm-katan, end to
end through ``run_agent_loop`` (text, thinking, tools and their replay, retries, faults,
cancellation, the key only in ``x-api-key``)."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest

from factories import failure
from servers.katan import ANTHROPIC_KEY, KatanFactory, KatanServer
from servers.replay import ReplayServer, json_response, sse_body, sse_response
from tether import (
    AbortController,
    CompletedRunResult,
    ModelUsage,
    RunResult,
    ToolRegistry,
    UserMessage,
    run_agent_loop,
    to_json,
    tool,
)
from tether.providers._http import RetryPolicy
from tether.providers.anthropic import AnthropicModel

BOUND = 20.0
SECRET = "sk-ant-test-SECRET-0123456789"
FAST_RETRY = RetryPolicy(attempts=3, initial_backoff=0.0, max_backoff=0.0)


@tool
async def add(left: int, right: int) -> int:
    """Add two integers."""
    return left + right


def start(message_id: str = "msg_1", input_tokens: int = 10) -> dict[str, Any]:
    return {
        "type": "message_start",
        "message": {
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "model": "claude-test-2026",
            "content": [],
            "stop_reason": None,
            "usage": {"input_tokens": input_tokens, "output_tokens": 1},
        },
    }


def text_events(*parts: str) -> list[dict[str, Any]]:
    return [
        start(),
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "ping"},
        *(
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": p}}
            for p in parts
        ),
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn", "stop_sequence": None},
            "usage": {"input_tokens": 12, "output_tokens": 7, "cache_read_input_tokens": 3},
        },
        {"type": "message_stop"},
    ]


def tool_events(
    parts: tuple[str, ...] = ("", '{"left": 20,', ' "right": 22}'),
) -> list[dict[str, Any]]:
    return [
        start("msg_2", 20),
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "thinking", "thinking": "", "signature": ""},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "thinking_delta", "thinking": "Add them."},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "signature_delta", "signature": "SIG-abc"},
        },
        {"type": "content_block_stop", "index": 0},
        {
            "type": "content_block_start",
            "index": 1,
            "content_block": {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {}},
        },
        *(
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "input_json_delta", "partial_json": part},
            }
            for part in parts
        ),
        {"type": "content_block_stop", "index": 1},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use", "stop_sequence": None},
            "usage": {"output_tokens": 30},
        },
        {"type": "message_stop"},
    ]


def body(events: list[dict[str, Any]]) -> bytes:
    return sse_body(events, done=False, event_from_type=True)


def model_for(server: ReplayServer, **options: Any) -> AnthropicModel:
    options.setdefault("retry", FAST_RETRY)
    return AnthropicModel("claude-test", base_url=server.origin, api_key=SECRET, **options)


async def run_once(
    model: AnthropicModel, *, tools: ToolRegistry | None = None, signal: Any = None
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


@pytest.mark.parametrize("split", ["whole", "bytes1", ("random", 3)])
async def test_a_streamed_text_answer_completes_with_overwritten_usage(split: Any) -> None:
    async with ReplayServer() as server:
        server.respond(sse_response(body(text_events("The sum ", "is 42.")), split=split))
        async with model_for(server) as model:
            events, result = await run_once(model)
    assert isinstance(result, CompletedRunResult), result
    assert result.final_text == "The sum is 42."
    assert result.usage == ModelUsage(input_tokens=12, output_tokens=7, cache_read_tokens=3)
    request = server.requests[0]
    assert request.path == "/v1/messages"
    assert request.headers["x-api-key"] == SECRET
    assert "authorization" not in request.headers
    assert request.headers["anthropic-version"]
    sent: Any = request.json
    assert sent["system"] == [
        {"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}
    ]
    assert sent["max_tokens"] == 4096
    assert sent["stream"] is True
    dumped = json.dumps([to_json(event) for event in events]) + json.dumps(to_json(result))
    assert SECRET not in dumped


async def test_a_tool_run_replays_the_signed_thinking_and_links_the_result() -> None:
    async with ReplayServer() as server:
        server.respond(sse_response(body(tool_events())))
        server.respond(sse_response(body(text_events("42"))))
        async with model_for(server) as model:
            _, result = await run_once(model, tools=ToolRegistry([add]))
    assert isinstance(result, CompletedRunResult), result
    assert result.final_text == "42"
    second: Any = server.requests[1].json
    assistant, results = second["messages"][1], second["messages"][2]
    assert assistant["role"] == "assistant"
    assert assistant["content"][0] == {
        "type": "thinking",
        "thinking": "Add them.",
        "signature": "SIG-abc",
    }
    use = assistant["content"][1]
    assert use["type"] == "tool_use"
    assert use["id"] == "toolu_1"
    assert use["input"] == {"left": 20, "right": 22}
    assert results["role"] == "user"
    assert results["content"][0]["type"] == "tool_result"
    assert results["content"][0]["tool_use_id"] == "toolu_1"
    assert second["tools"][0]["name"] == "add"
    assert "input_schema" in second["tools"][0]


def cached_text_events(text: str, *, read: int, write: int) -> list[dict[str, Any]]:
    """A text answer whose usage reports ``read`` tokens read from the cache and ``write``
    written to it."""
    events = text_events(text)
    events[-2]["usage"] = {
        "input_tokens": 40,
        "output_tokens": 10,
        "cache_read_input_tokens": read,
        "cache_creation_input_tokens": write,
    }
    return events


EPHEMERAL = {"type": "ephemeral"}


def breakpoints(sent: Any) -> list[str]:
    """Where the request body has ``cache_control``: ``system``, ``tool:NAME`` or
    ``message:INDEX:BLOCK-INDEX``."""
    system: list[Any] = sent["system"] if isinstance(sent.get("system"), list) else []
    found = ["system" for block in system if block.get("cache_control") == EPHEMERAL]
    found += [
        f"tool:{entry['name']}"
        for entry in sent.get("tools", [])
        if entry.get("cache_control") == EPHEMERAL
    ]
    for turn, message in enumerate(sent["messages"]):
        for index, block in enumerate(message["content"]):
            if block.get("cache_control") == EPHEMERAL:
                found.append(f"message:{turn}:{index}")
    return found


def unmarked(messages: list[Any]) -> list[Any]:
    return [
        {
            **message,
            "content": [
                {key: value for key, value in block.items() if key != "cache_control"}
                for block in message["content"]
            ],
        }
        for message in messages
    ]


async def test_the_second_turn_of_a_long_conversation_marks_the_cache_and_costs_it() -> None:
    """Issue 33: the breakpoints are on the system prompt, the last tool, the last turn and
    the user turn before it (where the first request wrote); the cached tokens the server
    reports are priced at the catalog's cache prices, not the input price."""
    from tether import AssistantMessage, TextBlock
    from tether.providers.model_catalog import cost_of, model_info

    history = [
        UserMessage(content="Let us talk about sums. " * 200),
        AssistantMessage(content=(TextBlock(text="Sure."),)),
        UserMessage(content="What is 20 + 22?"),
    ]
    async with ReplayServer() as server:
        server.respond(sse_response(body(tool_events())))
        server.respond(sse_response(body(cached_text_events("42", read=5_000, write=300))))
        async with model_for(server) as model:
            stream = run_agent_loop(
                messages=history,
                model=model,
                tools=ToolRegistry([add]),
                max_steps=4,
                system="Be brief.",
            )
            async with asyncio.timeout(BOUND):
                result = await stream.result
    assert isinstance(result, CompletedRunResult), result
    first: Any = server.requests[0].json
    second: Any = server.requests[1].json
    assert breakpoints(first) == ["system", "tool:add", "message:0:0", "message:2:0"]
    # turn 3 is the assistant's tool call, turn 4 the tool result: the last turn and the user
    # turn before it (the first request's last breakpoint) are marked, four in all
    roles = [m["role"] for m in second["messages"]]
    assert roles == ["user", "assistant", "user", "assistant", "user"]
    assert breakpoints(second) == ["system", "tool:add", "message:2:0", "message:4:0"]
    assert second["messages"][4]["content"][0]["type"] == "tool_result"
    # the first request's messages start the second's (the markers aside)
    assert unmarked(second["messages"][:3]) == unmarked(first["messages"])
    assert result.usage == ModelUsage(
        input_tokens=60, output_tokens=40, cache_read_tokens=5_000, cache_write_tokens=300
    )
    info = model_info("anthropic/claude-sonnet-4-5")
    assert info is not None
    cost = cost_of(result.usage, info.prices)
    assert cost is not None
    assert cost.cache_read == pytest.approx(5_000 * 0.30 / 1e6)  # $0.30 per million
    assert cost.cache_write == pytest.approx(300 * 3.75 / 1e6)  # $3.75 per million
    assert cost.input == pytest.approx(60 * 3 / 1e6)
    assert cost.total == pytest.approx((60 * 3 + 40 * 15 + 5_000 * 0.3 + 300 * 3.75) / 1e6)


async def test_prompt_caching_can_be_turned_off() -> None:
    async with ReplayServer() as server:
        server.respond(sse_response(body(tool_events())))
        server.respond(sse_response(body(text_events("42"))))
        async with model_for(server, prompt_caching=False) as model:
            _, result = await run_once(model, tools=ToolRegistry([add]))
    assert isinstance(result, CompletedRunResult), result
    for request in server.requests:
        sent: Any = request.json
        assert sent["system"] == "Be brief."
        assert breakpoints(sent) == []
    with pytest.raises(TypeError, match="prompt_caching"):
        AnthropicModel("claude-test", api_key="k", prompt_caching=1)  # pyright: ignore[reportArgumentType]


async def test_a_call_with_broken_json_arguments_goes_back_to_the_model() -> None:
    """The call is kept as an invalid call and answered with ``TOOL_ARGUMENTS_INVALID``; the
    next request sends it back with ``input: {}`` (Anthropic requires an object), so the error
    result is where the model sees what it sent."""
    async with ReplayServer() as server:
        server.respond(sse_response(body(tool_events(("", '{"left": 20', ' "right": 22}')))))
        server.respond(sse_response(body(text_events("42"))))
        async with model_for(server, prompt_caching=False) as model:
            events, result = await run_once(model, tools=ToolRegistry([add]))
    assert isinstance(result, CompletedRunResult), result
    (answer,) = [m for m in result.messages if m.role == "toolResult"]
    assert answer.is_error
    expected = (
        "TOOL_ARGUMENTS_INVALID: not valid JSON at line 1 column 13 (Expecting ',' delimiter); "
        "send the call again with a JSON object. The arguments received were: "
        '"{\\"left\\": 20 \\"right\\": 22}"'
    )
    assert answer.content == expected
    assert not any(e.type == "tool.started" and e.payload.tool_call.arguments for e in events)
    second: Any = server.requests[1].json
    assistant, results = second["messages"][1], second["messages"][2]
    assert assistant["content"][1] == {
        "type": "tool_use",
        "id": "toolu_1",
        "name": "add",
        "input": {},
    }
    assert results == {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": expected, "is_error": True}
        ],
    }


@pytest.mark.parametrize("status", [529, 503, 429])
async def test_overloaded_and_rate_limited_answers_are_retried(status: int) -> None:
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    async with ReplayServer() as server:
        server.respond(json_response(status, error, headers=[("retry-after", "0")]))
        server.respond(sse_response(body(text_events("ok"))))
        async with model_for(server) as model:
            _, result = await run_once(model)
    assert isinstance(result, CompletedRunResult), result
    assert len(server.requests) == 2


async def test_an_error_event_after_content_fails_the_run() -> None:
    events = [
        *text_events("partial")[:4],
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
    ]
    async with ReplayServer() as server:
        server.respond(sse_response(body(events)))
        async with model_for(server) as model:
            _, result = await run_once(model)
    assert failure(result).startswith("PROVIDER_OVERLOADED")


async def test_eof_before_message_stop_is_stream_interrupted() -> None:
    async with ReplayServer() as server:
        server.respond(sse_response(body(text_events("partial")[:-2])))
        async with model_for(server) as model:
            _, result = await run_once(model)
    assert failure(result).startswith("PROVIDER_STREAM_INTERRUPTED")


async def test_a_bad_key_is_auth_failed_and_never_shown() -> None:
    error = {"type": "error", "error": {"type": "authentication_error", "message": "bad key"}}
    async with ReplayServer() as server:
        server.respond(json_response(401, error))
        async with model_for(server) as model:
            _, result = await run_once(model)
            shown = repr(model)
    message = failure(result)
    assert message.startswith("PROVIDER_AUTH_FAILED: HTTP 401")
    assert SECRET not in message
    assert SECRET not in shown


async def test_an_abort_mid_stream_closes_the_connection_at_once() -> None:
    controller = AbortController()
    data = body(text_events("a", "b", "c"))
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


@pytest.mark.slow
async def test_llm_katan_streams_text_with_the_x_api_key(katan_factory: KatanFactory) -> None:
    server = katan_factory("--validate-keys")
    async with AnthropicModel(server.model, base_url=server.origin, api_key=ANTHROPIC_KEY) as model:
        _, result = await run_once(model)
    assert isinstance(result, CompletedRunResult), result
    assert result.final_text


@pytest.mark.slow
async def test_llm_katan_streams_a_tool_use(katan_server: KatanServer) -> None:
    seen: list[dict[str, Any]] = []

    @tool
    async def lookup(query: str) -> str:
        """Look something up."""
        seen.append({"query": query})
        return "found"

    async with AnthropicModel(
        katan_server.model, base_url=katan_server.origin, api_key="k"
    ) as model:
        stream = run_agent_loop(
            messages=[UserMessage(content="look it up")],
            model=model,
            tools=ToolRegistry([lookup]),
            max_steps=1,
        )
        async with asyncio.timeout(BOUND):
            result = await stream.result
    assert result.status == "maxSteps", result  # llm-katan always answers with a tool call
    assert len(seen) == 1


async def test_model_from_spec_picks_the_class_for_the_provider_s_api() -> None:
    from tether import OpenAIChatModel, model_from_spec

    anthropic = model_from_spec("anthropic/claude-sonnet-4-5")
    assert isinstance(anthropic, AnthropicModel)
    assert anthropic.base_url == "https://api.anthropic.com"
    openai = model_from_spec("openai/gpt-4o-mini", base_url="http://127.0.0.1:9/v1")
    assert isinstance(openai, OpenAIChatModel)
    assert openai.base_url == "http://127.0.0.1:9/v1"
    with pytest.raises(ValueError, match="does not speak OpenAI Chat Completions"):
        OpenAIChatModel.from_spec("anthropic/claude-sonnet-4-5")
    await anthropic.aclose()
    await openai.aclose()


@pytest.mark.parametrize("after_start", [False, True])
async def test_an_overloaded_error_as_the_first_event_is_retried(after_start: bool) -> None:
    """``overloaded_error`` before anything reached the consumer (as the very first event, or
    right after ``message_start``, which yields nothing) is retried like a 529."""
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    first = [start(), overloaded] if after_start else [overloaded]
    async with ReplayServer() as server:
        server.respond(sse_response(body(first)))
        server.respond(sse_response(body(text_events("ok"))))
        async with model_for(server) as model:
            _, result = await run_once(model)
    assert isinstance(result, CompletedRunResult), result
    assert result.final_text == "ok"
    assert len(server.requests) == 2


async def test_an_overloaded_first_event_counts_against_the_retry_attempts() -> None:
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    async with ReplayServer() as server:
        for _ in range(3):
            server.respond(sse_response(body([overloaded])))
        async with model_for(server) as model:
            _, result = await run_once(model)
    assert failure(result).startswith("PROVIDER_OVERLOADED")
    assert len(server.requests) == 3
