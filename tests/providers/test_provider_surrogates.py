"""A transcript holding a lone surrogate (U+D800..U+DFFF unpaired: what a provider's JSON
escape ``"\\ud800"`` decodes to) still makes a request, in each of the four wire APIs, on a
real loopback socket: the body the server receives is valid UTF-8 with U+FFFD where each lone
surrogate was (what a JavaScript ``fetch`` body does via ``TextEncoder``), and a pair written
as two code points arrives as the one character it spells. Before, encoding the body raised
``UnicodeEncodeError`` and every later request of that Agent failed the same way.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Final

import pytest

import anthropic_bodies
import gemini_bodies
import responses_bodies
from openai_bodies import text_chunks
from servers.replay import ReplayServer, sse_body, sse_response
from support import succeed
from tether import AbortController, JsonObject
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
