"""Retry notices (issue 28): a provider's retry before anything streamed is a ``model.retry``
event, emitted before the wait, over a real loopback server (``ReplayServer``).
"""

from __future__ import annotations

import asyncio
from typing import Any

from servers.replay import ReplayServer, json_response, sse_body, sse_response
from tether import (
    AbortController,
    Agent,
    AgentEvent,
    CancelledRunResult,
    CompletedRunResult,
    ToolRegistry,
    UserMessage,
    run_agent_loop,
    to_json,
)
from tether.abort import AbortSignal
from tether.models.base import retry_listener
from tether.protocol import AssistantMessage as Assistant
from tether.protocol import (
    ModelRequest,
    ModelResponse,
    ModelRetryEvent,
    ModelRetryPayload,
    ModelUsage,
    TextDeltaChunk,
)
from tether.protocol import TextBlock as Text
from tether.providers._http import RetryPolicy
from tether.providers.anthropic import AnthropicModel
from tether.providers.openai_chat import OpenAIChatModel
from tether.stream import EventStream

SECRET = "sk-test-retry-0123456789"
RETRY = RetryPolicy(attempts=4, initial_backoff=0.0, max_backoff=0.0)


def openai_text(text: str) -> bytes:
    payloads: list[dict[str, Any]] = [
        {"id": "c", "choices": [{"index": 0, "delta": {"role": "assistant", "content": text}}]},
        {"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    ]
    return sse_body(payloads)


def retries_of(events: list[AgentEvent]) -> list[ModelRetryEvent]:
    return [event for event in events if event.type == "model.retry"]


async def run_events(model: Any, signal: AbortSignal | None = None) -> tuple[list[AgentEvent], Any]:
    stream = run_agent_loop(
        messages=[UserMessage(content="hi")],
        model=model,
        tools=ToolRegistry(),
        max_steps=2,
        signal=signal,
    )
    async with asyncio.timeout(20):
        events = [event async for event in stream]
        return events, await stream.result


async def test_each_retry_is_an_event_before_the_response() -> None:
    async with ReplayServer() as server:
        server.respond(
            json_response(
                503, {"error": {"message": "busy " + SECRET}}, headers={"retry-after-ms": "7"}
            )
        )
        server.respond(
            json_response(429, {"error": {"message": "slow down"}}, headers={"retry-after": "0"})
        )
        server.respond(sse_response(openai_text("ok")))
        async with OpenAIChatModel("m", base_url=server.url, api_key=SECRET, retry=RETRY) as model:
            events, result = await run_events(model)
    assert isinstance(result, CompletedRunResult)
    assert result.final_text == "ok"
    retries = retries_of(events)
    assert [event.payload for event in retries] == [
        ModelRetryPayload(
            request_id="request-001",
            attempt=1,
            delay_ms=7,
            code="PROVIDER_OVERLOADED",
            reason="HTTP 503",
        ),
        ModelRetryPayload(
            request_id="request-001",
            attempt=2,
            delay_ms=0,
            code="PROVIDER_RATE_LIMITED",
            reason="HTTP 429",
        ),
    ]
    types = [event.type for event in events]
    assert types.index("model.chunk") > events.index(retries[-1])
    assert [event.sequence for event in events] == list(range(len(events)))
    assert to_json(retries[0]) == {
        "type": "model.retry",
        "sequence": retries[0].sequence,
        "payload": {
            "requestId": "request-001",
            "attempt": 1,
            "delayMs": 7,
            "code": "PROVIDER_OVERLOADED",
            "reason": "HTTP 503",
        },
    }
    assert SECRET not in repr(events)


async def test_the_event_comes_before_the_wait() -> None:
    """A 30 s wait: the run sees ``model.retry`` at once and aborts during the wait."""
    controller = AbortController()
    async with ReplayServer() as server:
        server.respond(
            json_response(503, {"error": {"message": "busy"}}, headers={"retry-after": "30"})
        )
        async with OpenAIChatModel("m", base_url=server.url, api_key=SECRET, retry=RETRY) as model:
            stream = run_agent_loop(
                messages=[UserMessage(content="hi")],
                model=model,
                tools=ToolRegistry(),
                max_steps=1,
                signal=controller.signal,
            )
            seen: list[AgentEvent] = []
            async with asyncio.timeout(10):
                async for event in stream:
                    seen.append(event)
                    if event.type == "model.retry":
                        controller.abort("user gave up")
                result = await stream.result
    assert isinstance(result, CancelledRunResult)
    assert [event.payload.delay_ms for event in retries_of(seen)] == [30_000]
    assert len(server.requests) == 1


async def test_an_overloaded_first_event_says_overloaded() -> None:
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    ok = [
        {
            "type": "message_start",
            "message": {"id": "msg", "usage": {"input_tokens": 1, "output_tokens": 0}},
        },
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "ok"}},
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn"},
            "usage": {"output_tokens": 1},
        },
        {"type": "message_stop"},
    ]
    async with ReplayServer() as server:
        server.respond(sse_response(sse_body([overloaded], done=False)))
        server.respond(sse_response(sse_body(ok, done=False)))
        async with AnthropicModel(
            "claude", base_url=server.url, api_key=SECRET, retry=RETRY
        ) as model:
            events, result = await run_events(model)
    assert isinstance(result, CompletedRunResult), result
    assert [(e.payload.code, e.payload.reason) for e in retries_of(events)] == [
        ("PROVIDER_OVERLOADED", "overloaded")
    ]


async def test_agent_subscribers_see_the_retry() -> None:
    async with ReplayServer() as server:
        server.respond(json_response(500, {"error": {"message": "oops"}}))
        server.respond(sse_response(openai_text("ok")))
        async with OpenAIChatModel("m", base_url=server.url, api_key=SECRET, retry=RETRY) as model:
            agent = Agent(model=model)
            seen: list[AgentEvent] = []
            agent.subscribe(lambda event, _signal: seen.append(event))
            async with asyncio.timeout(20):
                await agent.prompt("hi").result
    assert [(e.payload.attempt, e.payload.reason) for e in retries_of(seen)] == [(1, "HTTP 500")]


class NoisyModel:
    """A model of one's own that reports retries, some of which the loop must not believe."""

    def stream(self, request: ModelRequest, signal: AbortSignal) -> EventStream[Any, Any]:
        listener = retry_listener()
        assert listener is not None
        stream: EventStream[Any, Any] = EventStream()

        def notice(request_id: str, attempt: int) -> Any:
            return ModelRetryPayload(
                request_id=request_id, attempt=attempt, delay_ms=1, code="X", reason="x"
            )

        listener(notice(request.id, 1))
        listener(notice("request-999", 2))  # another request's
        listener({"requestId": request.id})  # pyright: ignore[reportArgumentType]
        for attempt in range(2, 200):
            listener(notice(request.id, attempt))  # more than any policy allows

        async def produce() -> None:
            await asyncio.sleep(0)
            stream.push(TextDeltaChunk(request_id=request.id, delta="ok"))
            listener(notice(request.id, 500))  # after the first chunk
            stream.finish(
                ModelResponse(
                    id="r",
                    request_id=request.id,
                    message=Assistant(id="a", content=(Text(text="ok"),)),
                    stop_reason="stop",
                    usage=ModelUsage(input_tokens=1, output_tokens=1),
                )
            )

        tasks.add(asyncio.ensure_future(produce()))
        return stream


tasks: set[asyncio.Future[None]] = set()


async def test_only_the_turns_own_notices_before_its_first_chunk_count() -> None:
    events, result = await run_events(NoisyModel())
    await asyncio.gather(*tasks)
    assert isinstance(result, CompletedRunResult)
    attempts = [event.payload.attempt for event in retries_of(events)]
    assert attempts == list(range(1, 101))
    assert retry_listener() is None  # the loop's listener is gone after the turn
