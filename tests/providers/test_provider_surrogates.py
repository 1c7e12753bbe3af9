"""A transcript holding a lone surrogate (U+D800..U+DFFF unpaired: what a provider's JSON
escape ``"\\ud800"`` decodes to) still makes a request, in each of the four wire APIs, on a
real loopback socket: the body the server receives is valid UTF-8 with U+FFFD where each lone
surrogate was (what a JavaScript ``fetch`` body does via ``TextEncoder``), and a pair written
as two code points arrives as the one character it spells. Before, encoding the body raised
``UnicodeEncodeError`` and every later request of that Agent failed the same way.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import pytest

import anthropic_bodies
import gemini_bodies
import responses_bodies
from openai_bodies import call, minimal_chunk, minimal_usage, text_chunks
from servers.replay import ReplayServer, Script, sse_body, sse_response
from support import succeed
from tether import AbortController, JsonObject, ToolRegistry, tool
from tether.agent import Agent
from tether.agent.persistence import SessionRecorder
from tether.agent.session import SessionStore, SessionTree
from tether.protocol import (
    AssistantMessage,
    ModelRequest,
    TextBlock,
    ThinkingBlock,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from tether.providers._http import RetryPolicy
from tether.providers.anthropic import AnthropicModel
from tether.providers.gemini import GeminiModel
from tether.providers.openai_chat import OpenAIChatModel
from tether.providers.openai_responses import OpenAIResponsesModel

SECRET: Final = "sk-surrogate-test"
FAST_RETRY: Final = RetryPolicy(attempts=1, initial_backoff=0.0, max_backoff=0.0)
BOUND: Final = 10.0


def request() -> ModelRequest:
    """Lone surrogates where a model's reply, a tool's result and a compaction summary put
    them (the system prompt, assistant text and thinking, call arguments, a result), plus a
    surrogate pair written as two code points."""
    call = ToolCall(id="call_1", name="look", arguments=JsonObject({"q": "x\udfffy"}))
    return ModelRequest(
        id="request-1",
        system="summary: lone \ud800 high",
        messages=(
            UserMessage(id="u1", content="hello"),
            AssistantMessage(
                id="a1",
                content=(
                    ThinkingBlock(text="think \udc00"),
                    TextBlock(text="reply \ud83d\ude00 pair, lone \udbff"),
                    call,
                ),
            ),
            ToolResultMessage(
                id="r1", tool_call_id="call_1", tool_name="look", content="out \ud800\ud800 two"
            ),
        ),
    )


def anthropic_text() -> bytes:
    events = [
        anthropic_bodies.message_start(),
        anthropic_bodies.text_start(0),
        anthropic_bodies.text(0, "ok"),
        anthropic_bodies.stop(0),
        anthropic_bodies.message_delta("end_turn"),
        {"type": "message_stop"},
    ]
    return sse_body(events, done=False, event_from_type=True)


def openai_chat(server: ReplayServer) -> Any:
    server.respond(sse_response(sse_body(text_chunks("ok", prompt_tokens=5))))
    return OpenAIChatModel("gpt-test", base_url=server.url, api_key=SECRET, retry=FAST_RETRY)


def openai_responses(server: ReplayServer) -> Any:
    server.respond(sse_response(responses_bodies.text_body("ok")))
    return OpenAIResponsesModel("gpt-5", base_url=server.url, api_key=SECRET, retry=FAST_RETRY)


def anthropic(server: ReplayServer) -> Any:
    server.respond(sse_response(anthropic_text()))
    return AnthropicModel(
        "claude-test",
        base_url=server.origin,
        api_key=SECRET,
        retry=FAST_RETRY,
        prompt_caching=False,
    )


def gemini(server: ReplayServer) -> Any:
    server.respond(sse_response(gemini_bodies.text_body("ok")))
    return GeminiModel("gemini-2.5-flash", base_url=server.origin, api_key=SECRET, retry=FAST_RETRY)


MODELS: Final[dict[str, Callable[[ReplayServer], Any]]] = {
    "openai-chat": openai_chat,
    "openai-responses": openai_responses,
    "anthropic": anthropic,
    "gemini": gemini,
}


@pytest.mark.parametrize("api", list(MODELS))
async def test_a_lone_surrogate_in_the_history_reaches_the_server_as_u_fffd(api: str) -> None:
    async with ReplayServer() as server, MODELS[api](server) as model, asyncio.timeout(BOUND):
        await succeed(model.stream(request(), AbortController().signal))
    body = server.requests[0].body
    text = body.decode("utf-8")  # strict: valid UTF-8, no surrogate encoded in it
    for sent in [
        "summary: lone \ufffd high",
        "reply \U0001f600 pair, lone \ufffd",
        "out \ufffd\ufffd two",
    ]:
        assert sent in text, (api, sent)
    if api == "gemini":  # unsigned thinking: Gemini sends it back, the others drop it
        assert "think \ufffd" in text
    # The call's arguments: an object (Anthropic, Gemini) holding U+FFFD, or (OpenAI) JSON
    # text whose own \u escape keeps the lone surrogate for the model to read.
    escaped = api.startswith("openai")
    assert ("x\\\\udfffy" if escaped else "x\ufffdy") in text, api


# --- an Agent with a session, end to end -------------------------------------------------------


def escaped(payloads: list[dict[str, Any]]) -> Script:
    """An OpenAI stream whose JSON spells non-ASCII as ``\\u`` escapes, as a provider may: a
    lone surrogate arrives as ``"\\ud800"``, which ``json.loads`` decodes to one."""
    return sse_response(sse_body([json.dumps(payload) for payload in payloads]))


def calling_peek() -> Script:
    return escaped(
        [
            minimal_chunk({"role": "assistant", "content": "look \udbff"}),
            minimal_chunk({"tool_calls": [call(0, "call_1", "peek", '{"at":"x\\ud800"}')]}),
            minimal_chunk({}, "tool_calls"),
            minimal_usage(5, 3),
        ]
    )


async def test_an_agent_whose_model_and_tool_send_lone_surrogates_keeps_running(
    tmp_path: Path,
) -> None:
    """A model's reply and arguments and a tool's output holding lone surrogates: the run
    completes (the second request carries them as U+FFFD), the next run completes, and the
    session file reloads them as they were (a tool's ``str`` output is made U+FFFD by
    ``execute_tool_call`` itself, ``encodable_text``). Regression: the second request raised
    ``UnicodeEncodeError``, and so did every later request of that Agent."""

    @tool
    async def peek(at: str) -> str:
        """Peek at a thing."""
        return f"saw {at} and \udc00"

    path = tmp_path / "session.jsonl"
    tree = SessionTree(await SessionStore.create(path))
    async with ReplayServer() as server:
        server.respond(calling_peek())
        server.respond(escaped(text_chunks("done \ud800", prompt_tokens=9)))
        server.respond(escaped(text_chunks("again", prompt_tokens=9)))
        async with OpenAIChatModel(
            "gpt-test", base_url=server.url, api_key=SECRET, retry=FAST_RETRY
        ) as model:
            agent = Agent(model=model, tools=ToolRegistry([peek]), recorder=SessionRecorder(tree))
            async with asyncio.timeout(BOUND):
                assert (await agent.run("go")).status == "completed"
                assert (await agent.run("and now?")).status == "completed"
    kept = agent.messages
    await tree.store.close()
    assert len(server.requests) == 3
    third = server.requests[2].body.decode("utf-8")  # strict: valid UTF-8
    for sent in ['"look \ufffd"', '"saw x\ufffd and \ufffd"', '"done \ufffd"']:
        assert sent in third, sent
    texts = [
        block.text
        for m in kept
        if m.role == "assistant"
        for block in m.content
        if block.type == "text"
    ]
    assert texts == ["look \udbff", "done \ud800", "again"]
    calls = [block for m in kept if m.role == "assistant" for block in m.content]
    assert [c.arguments for c in calls if c.type == "toolCall"] == [{"at": "x\ud800"}]
    result = next(m for m in kept if m.role == "toolResult")
    assert result.content == "saw x\ufffd and \ufffd"  # a str output: the tool layer's U+FFFD
    reopened = SessionTree(await SessionStore.load(path))
    try:
        assert reopened.active_context().messages == kept
    finally:
        await reopened.store.close()
