"""The stateful ``Agent`` driving ``OpenAIChatModel`` over real loopback sockets.

Against the replay server (``tests/servers/replay.py``): three prompts with a ``steer()`` while
the second is busy (from a subscriber at its first ``model.chunk``, or while a tool call waits
on an event the test controls). The captured HTTP request bodies show the transcript growing:
each request's ``messages`` is the system prompt plus every earlier user, assistant and tool
message in order, the steering message its own user message right after the tool results of
the turn it interrupted, and the tools sent every time. The fake API key is sent in the
``Authorization`` header and appears nowhere else: not in an event, a result, a ``repr`` or an
error's text. Against the real llm-katan: two prompts, the second request carrying the first
exchange.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Sequence
from typing import Any, Literal

import httpx2
import pytest

from servers.katan import KatanServer
from servers.replay import ReplayServer, json_response, sse_body, sse_response
from tether import (
    AbortSignal,
    AgentEvent,
    CompletedRunResult,
    FailedRunResult,
    ModelUsage,
    RunResult,
    ToolExecutionContext,
    ToolRegistry,
    UserMessage,
    to_json,
    tool,
)
from tether.agent.agent import Agent
from tether.jsonvalue import thaw_json
from tether.providers._http import RetryPolicy
from tether.providers.openai_chat import OpenAIChatModel
from tether.providers.openai_wire import OpenAIChatCompat
from tether.tools import FunctionTool

BOUND = 20.0  # seconds: an outer bound on awaits that a regression could turn into a hang
SECRET = "sk-test-AGENT-SECRET-0123456789abcdef"
SYSTEM = "Be brief."
FAST_RETRY = RetryPolicy(attempts=3, initial_backoff=0.0, max_backoff=0.0)

FIRST = "Hi."
SECOND = "What is 20 + 22, and 1 + 2?"
STEER = "Also greet me in French."
THIRD = "Thanks."


# --- wire payloads ------------------------------------------------------------------------------


def chunk(response_id: str, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": response_id,
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-test-2026",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def usage_chunk(response_id: str, prompt: int, completion: int) -> dict[str, Any]:
    return {
        "id": response_id,
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-test-2026",
        "choices": [],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }


def text_body(response_id: str, *parts: str, prompt: int = 10) -> bytes:
    return sse_body(
        [
            chunk(response_id, {"role": "assistant", "content": ""}),
            *(chunk(response_id, {"content": part}) for part in parts),
            chunk(response_id, {}, "stop"),
            usage_chunk(response_id, prompt, len(parts)),
        ]
    )


def tools_body(response_id: str, calls: Sequence[tuple[str, str]], *, prompt: int = 20) -> bytes:
    """A response asking for ``add`` calls: ``(call_id, arguments JSON)`` each."""
    payloads: list[dict[str, Any]] = [chunk(response_id, {"role": "assistant", "content": None})]
    for index, (call_id, arguments) in enumerate(calls):
        start = {"index": index, "id": call_id, "type": "function"}
        payloads.append(
            chunk(
                response_id,
                {"tool_calls": [{**start, "function": {"name": "add", "arguments": ""}}]},
            )
        )
        middle = len(arguments) // 2
        for part in (arguments[:middle], arguments[middle:]):
            payloads.append(
                chunk(
                    response_id, {"tool_calls": [{"index": index, "function": {"arguments": part}}]}
                )
            )
    payloads.append(chunk(response_id, {}, "tool_calls"))
    payloads.append(usage_chunk(response_id, prompt, 5))
    return sse_body(payloads)


def wire_call(call_id: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": "add", "arguments": arguments}}


# --- the tool -----------------------------------------------------------------------------------


class Adder:
    """``add``; with ``hold`` the call with ``left == 20`` waits for ``release``."""

    def __init__(self, *, hold: bool) -> None:
        self.waiting = asyncio.Event()
        self.release = asyncio.Event()
        if not hold:
            self.release.set()
        self.calls: list[str] = []
        waiting, release, calls = self.waiting, self.release, self.calls

        @tool
        async def add(left: int, right: int, context: ToolExecutionContext) -> int:
            """Add two integers.

            Args:
                left: The first addend.
                right: The second addend.
            """
            calls.append(context.tool_call_id)
            if left == 20:
                waiting.set()
                await release.wait()
            return left + right

        self.tool: FunctionTool[Any, Any, Any] = add

    def wire_spec(self) -> dict[str, Any]:
        parameters = self.tool.parameters
        assert parameters is not None
        return {
            "type": "function",
            "function": {
                "name": "add",
                "description": "Add two integers.",
                "parameters": thaw_json(parameters),
            },
        }


# --- helpers ----------------------------------------------------------------------------------


def model_for(server: ReplayServer) -> OpenAIChatModel:
    return OpenAIChatModel("gpt-test", base_url=server.url, api_key=SECRET, retry=FAST_RETRY)


async def drain(stream: Any) -> RunResult:
    async with asyncio.timeout(BOUND):
        async for _ in stream:
            pass
        result: RunResult = await stream.result
        return result


def dumped(events: Sequence[AgentEvent], results: Sequence[RunResult]) -> str:
    """Every event and result as JSON and as repr, in one text to search."""
    parts = [json.dumps(to_json(event)) for event in events]
    parts += [json.dumps(to_json(result)) for result in results]
    parts += [repr(event) for event in events] + [repr(result) for result in results]
    return "\n".join(parts)


def completed(result: RunResult, text: str) -> CompletedRunResult:
    assert isinstance(result, CompletedRunResult), result
    assert result.final_text == text
    return result


# --- three prompts and a steer ------------------------------------------------------------------


@pytest.mark.parametrize("steer_at", ["first-chunk", "tool-waiting"])
async def test_three_prompts_with_a_steer_grow_the_transcript_request_by_request(
    steer_at: Literal["first-chunk", "tool-waiting"],
) -> None:
    adder = Adder(hold=steer_at == "tool-waiting")
    events: list[AgentEvent] = []
    signals: list[AbortSignal] = []
    steered: list[UserMessage] = []
    phase = {"prompt": 0}

    async with ReplayServer() as server:
        server.respond(sse_response(text_body("chatcmpl-1", "Hello", ".")))
        server.respond(
            sse_response(
                tools_body(
                    "chatcmpl-2",
                    [("call_a", '{"left":20,"right":22}'), ("call_b", '{"left":1,"right":2}')],
                )
            )
        )
        server.respond(sse_response(text_body("chatcmpl-3", "42 and 3. ", "Bonjour!")))
        server.respond(sse_response(text_body("chatcmpl-4", "You're welcome.")))
        async with model_for(server) as model:
            agent = Agent(model=model, tools=ToolRegistry([adder.tool]), system=SYSTEM)

            def subscriber(event: AgentEvent, signal: AbortSignal) -> None:
                events.append(event)
                signals.append(signal)
                if (
                    steer_at == "first-chunk"
                    and phase["prompt"] == 2
                    and event.type == "model.chunk"
                    and not steered
                ):
                    assert agent.is_running
                    assert len(server.requests) == 2  # the second request is streaming
                    steered.append(agent.steer(STEER))

            agent.subscribe(subscriber)

            phase["prompt"] = 1
            first = completed(await drain(agent.prompt(FIRST)), "Hello.")

            phase["prompt"] = 2
            task = asyncio.create_task(drain(agent.prompt(SECOND)))
            if steer_at == "tool-waiting":
                async with asyncio.timeout(BOUND):
                    await adder.waiting.wait()
                assert agent.is_running
                steered.append(agent.steer(STEER))
                assert agent.queued_steering == (steered[0],)
                adder.release.set()
            second = completed(await task, "42 and 3. Bonjour!")
            assert agent.queued_steering == ()

            phase["prompt"] = 3
            third = completed(await drain(agent.prompt(THIRD)), "You're welcome.")
            shown = [repr(agent), repr(model), str(agent.messages)]
        bodies: list[Any] = [request.json for request in server.requests]
        headers = [request.headers for request in server.requests]

    assert server.unscripted == []
    assert adder.calls == ["call_a", "call_b"]
    (steering,) = steered
    assert steering == UserMessage(id="agent-user-000003", content=STEER)

    # --- the request bodies: the transcript grows, in order, one request per model turn.
    system = {"role": "system", "content": SYSTEM}
    user1 = {"role": "user", "content": FIRST}
    assistant1 = {"role": "assistant", "content": "Hello."}
    user2 = {"role": "user", "content": SECOND}
    assistant2 = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            wire_call("call_a", '{"left":20,"right":22}'),
            wire_call("call_b", '{"left":1,"right":2}'),
        ],
    }
    result_a = {"role": "tool", "tool_call_id": "call_a", "content": "42"}
    result_b = {"role": "tool", "tool_call_id": "call_b", "content": "3"}
    steer = {"role": "user", "content": STEER}
    assistant3 = {"role": "assistant", "content": "42 and 3. Bonjour!"}
    user3 = {"role": "user", "content": THIRD}
    assert [body["messages"] for body in bodies] == [
        [system, user1],
        [system, user1, assistant1, user2],
        [system, user1, assistant1, user2, assistant2, result_a, result_b, steer],
        [
            system,
            user1,
            assistant1,
            user2,
            assistant2,
            result_a,
            result_b,
            steer,
            assistant3,
            user3,
        ],
    ]
    for earlier, later in itertools.pairwise(bodies):
        assert later["messages"][: len(earlier["messages"])] == earlier["messages"]
    for body in bodies:
        assert body["model"] == "gpt-test"
        assert body["stream"] is True
        assert body["tools"] == [adder.wire_spec()]
    assert bodies[0]["tools"][0]["function"]["parameters"]["required"] == ["left", "right"]

    # --- the Agent's own view agrees with what was sent.
    assert third.messages == agent.messages
    assert [message.role for message in agent.messages] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "toolResult",
        "toolResult",
        "user",
        "assistant",
        "user",
        "assistant",
    ]
    assert [message.id for message in agent.messages if message.role == "user"] == [
        "agent-user-000001",
        "agent-user-000002",
        "agent-user-000003",
        "agent-user-000004",
    ]
    assert [message.id for message in agent.messages if message.role == "assistant"] == [
        "message-chatcmpl-1",
        "message-chatcmpl-2",
        "message-chatcmpl-3",
        "message-chatcmpl-4",
    ]
    assert first.messages == agent.messages[:2]
    assert second.messages == agent.messages[:8]
    assert second.usage == ModelUsage(input_tokens=30, output_tokens=7)
    assert agent.usage == ModelUsage(input_tokens=50, output_tokens=10)

    # --- the second run's events: the steer is accepted after both results, before request 3.
    runs: list[list[AgentEvent]] = [[]]
    for event in events:
        runs[-1].append(event)
        if event.type == "run.finished":
            runs.append([])
    assert runs[-1] == []
    assert len(runs) == 4
    kinds = [event.type for event in runs[1] if event.type != "model.chunk"]
    assert kinds == [
        "message.accepted",
        "tool.started",
        "tool.finished",
        "tool.started",
        "tool.finished",
        "message.accepted",
        "run.finished",
    ]
    accepted = [event.payload.message for event in runs[1] if event.type == "message.accepted"]
    assert accepted == [agent.messages[2], steering]
    for run in runs[:3]:
        assert [event.sequence for event in run] == list(range(len(run)))
    assert all(signal is signals[0] for signal in signals[: len(runs[0])])

    # --- the key: sent in the header of every request, and nowhere else.
    assert [header["authorization"] for header in headers] == [f"Bearer {SECRET}"] * 4
    assert SECRET not in dumped(events, [first, second, third])
    for text in shown:
        assert SECRET not in text
    assert "api_key=set" in shown[1]
    assert agent.subscriber_errors == ()


async def test_a_failed_turn_keeps_the_key_out_and_the_next_prompt_carries_the_transcript() -> None:
    adder = Adder(hold=False)
    events: list[AgentEvent] = []
    async with ReplayServer() as server:
        server.respond(
            json_response(401, {"error": {"message": f"Incorrect API key provided: {SECRET}"}})
        )
        server.respond(sse_response(text_body("chatcmpl-9", "Fine now.")))
        async with model_for(server) as model:
            agent = Agent(model=model, tools=ToolRegistry([adder.tool]), system=SYSTEM)
            agent.subscribe(lambda event, signal: events.append(event))
            failed = await drain(agent.prompt(FIRST))
            after_failure = repr(agent)
            retried = completed(await drain(agent.prompt(SECOND)), "Fine now.")
        bodies: list[Any] = [request.json for request in server.requests]

    assert isinstance(failed, FailedRunResult), failed
    assert failed.error.code == "MODEL_STREAM_FAILED"
    assert failed.error.message.startswith("PROVIDER_AUTH_FAILED: HTTP 401")
    assert "[redacted]" in failed.error.message
    assert SECRET not in failed.error.message
    assert SECRET not in str(failed.error)
    assert SECRET not in dumped(events, [failed, retried])
    assert SECRET not in after_failure
    # The failed turn left only the prompt; the next request carries it, then the new prompt.
    assert [message.role for message in failed.messages] == ["user"]
    assert bodies[1]["messages"] == [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": FIRST},
        {"role": "user", "content": SECOND},
    ]
    assert [message.role for message in retried.messages] == ["user", "user", "assistant"]


@pytest.mark.parametrize("where", ["sse-error-event", "json-error-body"])
async def test_a_vendor_error_echoing_the_key_after_a_200_is_redacted(where: str) -> None:
    # The 401 above is redacted (the HTTP status path); a vendor error that arrives with a 200,
    # as an SSE error event or as a whole JSON body, must be redacted the same way.
    error = {"error": {"message": f"Key {SECRET} was revoked", "type": "invalid_request_error"}}
    events: list[AgentEvent] = []
    async with ReplayServer() as server:
        if where == "sse-error-event":
            opening = chunk("chatcmpl-5", {"role": "assistant", "content": "x"})
            server.respond(sse_response(sse_body([opening, error])))
        else:
            server.respond(json_response(200, error))
        async with model_for(server) as model:
            agent = Agent(model=model, system=SYSTEM)
            agent.subscribe(lambda event, signal: events.append(event))
            failed = await drain(agent.prompt(FIRST))
    assert isinstance(failed, FailedRunResult), failed
    assert failed.error.code == "MODEL_STREAM_FAILED"
    assert failed.error.message.startswith("PROVIDER_ERROR_EVENT: ")
    assert "was revoked" in failed.error.message  # the vendor's text is kept ...
    assert SECRET not in failed.error.message  # ... but never the key
    assert SECRET not in dumped(events, [failed])


# --- llm-katan: a server nobody here wrote ------------------------------------------------------


@pytest.mark.slow
async def test_llm_katan_sees_the_first_exchange_in_the_second_request(
    katan_server: KatanServer,
) -> None:
    sent: list[Any] = []

    async def record(request: httpx2.Request) -> None:
        sent.append(json.loads(request.content))

    compat = OpenAIChatCompat(max_tokens_field="max_tokens")
    async with (
        httpx2.AsyncClient(
            timeout=httpx2.Timeout(BOUND), event_hooks={"request": [record]}
        ) as client,
        OpenAIChatModel(
            katan_server.model,
            base_url=katan_server.base_url,
            api_key="katan-key",
            compat=compat,
            http_client=client,
        ) as model,
    ):
        agent = Agent(model=model, system=SYSTEM)
        first = await drain(agent.prompt("first question"))
        second = await drain(agent.prompt("second question"))

    assert isinstance(first, CompletedRunResult), first
    assert isinstance(second, CompletedRunResult), second
    # The echo backend reports how many messages it got and the last user message.
    assert "messages=2" in first.final_text
    assert "User: first question" in first.final_text
    assert "messages=4" in second.final_text
    assert "User: second question" in second.final_text
    assert len(sent) == 2
    assert sent[0]["messages"] == [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "first question"},
    ]
    assert sent[1]["messages"] == [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "first question"},
        {"role": "assistant", "content": first.final_text},
        {"role": "user", "content": "second question"},
    ]
    assert [message.role for message in agent.messages] == ["user", "assistant"] * 2
