"""Images over the four wire APIs, on real loopback sockets: a user message's image and a tool
result's image reach each server in that API's documented form, and the checks before any
network call (too many images, a model the catalog knows cannot see them).

The forms (checked here key by key; each image block also against the official SDK's type
for it, which pydantic validates: the ``Literal`` media types and kinds, the required keys;
Gemini's contents against ``google.genai.types.Content``, which forbids unknown keys):

* OpenAI Chat Completions: ``image_url`` parts with a ``data:`` URL in user content; a
  ``tool`` message holds text only, so a tool result's images follow in a ``user`` message
  naming the result;
* OpenAI Responses: ``input_image`` parts (``image_url`` a data URL) in user content and in
  a ``function_call_output``'s ``output`` array;
* Anthropic: ``image`` blocks with a ``base64`` source in user content and in ``tool_result``
  content;
* Gemini: ``inlineData`` parts; a tool result's inside ``functionResponse.parts`` (Gemini 3)
  or after the turn's function responses (Gemini 2.5).
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections import Counter
from collections.abc import Callable
from typing import Any, Final, cast

import httpx2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter

import anthropic_bodies
import gemini_bodies
import responses_bodies
from image_support import IMAGES, gif, jpeg, png
from openai_bodies import text_chunks
from servers.replay import ReplayServer, sse_body, sse_response
from support import examples, fail, succeed
from tether import AbortController, FailedRunResult, JsonObject, ToolRegistry, run_agent_loop
from tether.protocol import (
    AssistantMessage,
    ImageBlock,
    ModelRequest,
    TextBlock,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from tether.providers._http import RetryPolicy
from tether.providers.anthropic import AnthropicModel
from tether.providers.anthropic_wire import build_messages_request
from tether.providers.catalog import PRESETS
from tether.providers.errors import ProviderError
from tether.providers.gemini import GeminiModel
from tether.providers.gemini_request import build_gemini_request, nests_tool_images
from tether.providers.openai_chat import OpenAIChatModel
from tether.providers.openai_compat import OpenAIChatCompat
from tether.providers.openai_responses import OpenAIResponsesModel
from tether.providers.openai_wire import build_chat_request
from tether.providers.responses_request import build_responses_request

SECRET: Final = "sk-images-test"
FAST_RETRY: Final = RetryPolicy(attempts=1, initial_backoff=0.0, max_backoff=0.0)
BOUND: Final = 10.0

SCREENSHOT: Final = ImageBlock.from_bytes(png(4, 3))
PHOTO: Final = ImageBlock.from_bytes(jpeg(640, 480))
CHART: Final = ImageBlock.from_bytes(gif(2, 2))


def b64(image: ImageBlock) -> str:
    return base64.b64encode(image.data).decode()


def url(image: ImageBlock) -> str:
    return f"data:{image.media_type};base64,{b64(image)}"


def request(*, tool_text: str = "a chart") -> ModelRequest:
    """A user message with two images and text, a call, its result with an image, then a user
    message without images."""
    call = ToolCall(id="call_1", name="render", arguments=JsonObject({"what": "sales"}))
    return ModelRequest(
        id="request-1",
        messages=(
            UserMessage(id="u1", content="What is on these?", images=(SCREENSHOT, PHOTO)),
            AssistantMessage(id="a1", content=(TextBlock(text="Let me render."), call)),
            ToolResultMessage(
                id="r1",
                tool_call_id="call_1",
                tool_name="render",
                content=tool_text,
                images=(CHART,),
            ),
            UserMessage(id="u2", content="And now?"),
        ),
    )


def oracle(kind: Any, values: list[Any]) -> None:
    """Validate ``values`` against an official SDK's request type (pydantic checks its
    required keys and ``Literal`` values; a whole message list is too loose a union)."""
    adapter: TypeAdapter[Any] = TypeAdapter(kind)
    assert values
    for value in values:
        adapter.validate_python(value, strict=True)


async def stream_once(model: Any, sent: ModelRequest) -> None:
    async with asyncio.timeout(BOUND):
        await succeed(model.stream(sent, AbortController().signal))


# --- OpenAI Chat Completions ---------------------------------------------------------------------


def test_a_chat_tool_message_without_text_points_at_its_images() -> None:
    body: Any = build_chat_request(
        request(tool_text=""),
        model="m",
        compat=OpenAIChatCompat(),
        max_output_tokens=None,
        temperature=None,
        reasoning_effort=None,
    )
    assert body["messages"][2]["content"] == "(see the attached images)"


async def test_openai_chat_sends_image_url_parts_and_tool_images_in_a_user_message() -> None:
    async with ReplayServer() as server:
        server.respond(sse_response(sse_body(text_chunks("ok", prompt_tokens=5))))
        async with OpenAIChatModel(
            "gpt-test", base_url=server.url, api_key=SECRET, retry=FAST_RETRY
        ) as model:
            await stream_once(model, request())
    sent: Any = server.requests[0].json
    messages = sent["messages"]
    assert messages[0] == {
        "role": "user",
        "content": [
            {"type": "image_url", "image_url": {"url": url(SCREENSHOT)}},
            {"type": "image_url", "image_url": {"url": url(PHOTO)}},
            {"type": "text", "text": "What is on these?"},
        ],
    }
    assert messages[1]["role"] == "assistant"
    assert messages[2] == {"role": "tool", "tool_call_id": "call_1", "content": "a chart"}
    assert messages[3] == {
        "role": "user",
        "content": [
            {"type": "text", "text": "Attached image(s) from tool result call_1 (render):"},
            {"type": "image_url", "image_url": {"url": url(CHART)}},
        ],
    }
    assert messages[4] == {"role": "user", "content": "And now?"}
    from openai.types.chat import ChatCompletionContentPartImageParam

    oracle(
        ChatCompletionContentPartImageParam,
        [*messages[0]["content"][:2], messages[3]["content"][1]],
    )


# --- OpenAI Responses --------------------------------------------------------------------------


async def test_openai_responses_sends_input_image_parts_and_an_output_array() -> None:
    async with ReplayServer() as server:
        server.respond(sse_response(responses_bodies.text_body("ok")))
        async with OpenAIResponsesModel(
            "gpt-5", base_url=server.url, api_key=SECRET, retry=FAST_RETRY
        ) as model:
            await stream_once(model, request())
    sent: Any = server.requests[0].json
    items = sent["input"]
    assert items[0] == {
        "role": "user",
        "content": [
            {"type": "input_image", "image_url": url(SCREENSHOT), "detail": "auto"},
            {"type": "input_image", "image_url": url(PHOTO), "detail": "auto"},
            {"type": "input_text", "text": "What is on these?"},
        ],
    }
    output = next(item for item in items if item.get("type") == "function_call_output")
    assert output == {
        "type": "function_call_output",
        "call_id": "call_1",
        "output": [
            {"type": "input_text", "text": "a chart"},
            {"type": "input_image", "image_url": url(CHART), "detail": "auto"},
        ],
    }
    assert items[-1] == {"role": "user", "content": "And now?"}
    from openai.types.responses import ResponseInputImageContentParam, ResponseInputImageParam

    oracle(ResponseInputImageParam, items[0]["content"][:2])
    oracle(ResponseInputImageContentParam, output["output"][1:])


# --- Anthropic ---------------------------------------------------------------------------------


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


def source(image: ImageBlock) -> dict[str, Any]:
    return {"type": "base64", "media_type": image.media_type, "data": b64(image)}


async def test_anthropic_sends_base64_image_blocks_in_user_and_tool_result_content() -> None:
    async with ReplayServer() as server:
        server.respond(sse_response(anthropic_text()))
        async with AnthropicModel(
            "claude-test",
            base_url=server.origin,
            api_key=SECRET,
            retry=FAST_RETRY,
            prompt_caching=False,
        ) as model:
            await stream_once(model, request(tool_text=""))
    sent: Any = server.requests[0].json
    messages = sent["messages"]
    assert messages[0] == {
        "role": "user",
        "content": [
            {"type": "image", "source": source(SCREENSHOT)},
            {"type": "image", "source": source(PHOTO)},
            {"type": "text", "text": "What is on these?"},
        ],
    }
    assert messages[2] == {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "call_1",
                "content": [{"type": "image", "source": source(CHART)}],  # no empty text
            },
            {"type": "text", "text": "And now?"},
        ],
    }
    from anthropic.types import ImageBlockParam, ToolResultBlockParam

    oracle(ImageBlockParam, messages[0]["content"][:2])
    oracle(ToolResultBlockParam, messages[2]["content"][:1])
    oracle(ImageBlockParam, messages[2]["content"][0]["content"])


# --- Gemini ------------------------------------------------------------------------------------


def inline(image: ImageBlock) -> dict[str, Any]:
    return {"inlineData": {"mimeType": image.media_type, "data": b64(image)}}


@pytest.mark.parametrize("name", ["gemini-3-pro-preview", "gemini-2.5-flash"])
async def test_gemini_sends_inline_data_parts(name: str) -> None:
    async with ReplayServer() as server:
        server.respond(sse_response(gemini_bodies.text_body("ok")))
        async with GeminiModel(
            name, base_url=server.origin, api_key=SECRET, retry=FAST_RETRY
        ) as model:
            await stream_once(model, request())
    sent: Any = server.requests[0].json
    contents = sent["contents"]
    assert contents[0] == {
        "role": "user",
        "parts": [inline(SCREENSHOT), inline(PHOTO), {"text": "What is on these?"}],
    }
    response = {"name": "render", "id": "call_1", "response": {"output": "a chart"}}
    if nests_tool_images(name):
        parts = [{"functionResponse": {**response, "parts": [inline(CHART)]}}]
    else:
        note = {"text": "Attached image(s) from tool result call_1 (render):"}
        parts = [{"functionResponse": response}, note, inline(CHART)]
    assert contents[2] == {"role": "user", "parts": [*parts, {"text": "And now?"}]}
    from google.genai import types

    for content in contents:
        types.Content.model_validate(content)  # camelCase aliases, as the REST API reads them
    checked = types.Content.model_validate(contents[2])
    assert checked.parts is not None
    first = checked.parts[0].function_response
    assert first is not None
    if nests_tool_images(name):
        assert first.parts is not None
        assert first.parts[0].inline_data is not None
        assert first.parts[0].inline_data.data == CHART.data


def test_which_gemini_models_nest_tool_images() -> None:
    assert nests_tool_images("gemini-3-pro-preview")
    assert nests_tool_images("models/gemini-3.1-flash")
    assert nests_tool_images("gemini-exp-1206")  # not gemini-N: the current form
    assert not nests_tool_images("gemini-2.5-flash")
    assert not nests_tool_images("models/gemini-1.5-pro")
    # A model name is the user's (or an RPC client's): more digits than int() converts
    # raised ValueError out of building the request.
    assert nests_tool_images("gemini-" + "9" * 5000)
    assert not nests_tool_images("gemini-" + "0" * 5000 + "2")
    assert nests_tool_images("gemini-" + "0" * 5000 + "10")


# --- the checks before anything is sent ---------------------------------------------------------


class NoNetwork(httpx2.AsyncBaseTransport):
    """A transport that fails the test if a request ever reaches it."""

    def __init__(self) -> None:
        self.calls = 0

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        self.calls += 1
        raise AssertionError(f"no request may be sent: {request.url}")


async def refused(model: Any, sent: ModelRequest) -> ProviderError:
    async with asyncio.timeout(BOUND):
        _, error = await fail(model.stream(sent, AbortController().signal))
    assert isinstance(error, ProviderError), error
    return error


async def test_a_model_the_catalog_knows_is_blind_refuses_images_before_sending() -> None:
    transport = NoNetwork()
    async with httpx2.AsyncClient(transport=transport) as client:
        model = OpenAIChatModel(
            "deepseek-chat",
            base_url=PRESETS["deepseek"].base_url,
            api_key=SECRET,
            http_client=client,
            retry=FAST_RETRY,
        )
        error = await refused(model, request())
    assert error.code == "MODEL_CANNOT_SEE_IMAGES"
    assert "deepseek/deepseek-chat does not read images" in error.message
    assert "Hint: switch to a model that reads images" in error.message
    assert transport.calls == 0


async def test_a_model_the_catalog_does_not_know_gets_the_images() -> None:
    async with ReplayServer() as server:
        server.respond(sse_response(sse_body(text_chunks("ok", prompt_tokens=5))))
        async with OpenAIChatModel(
            "deepseek-chat", base_url=server.url, api_key=SECRET, retry=FAST_RETRY
        ) as model:
            await stream_once(model, request())  # a server of its own: not the preset's
    assert len(server.requests) == 1


async def test_more_than_twenty_images_are_refused_before_sending() -> None:
    many = ModelRequest(
        id="request-2",
        messages=(UserMessage(id="u", content="all of them", images=(SCREENSHOT,) * 21),),
    )
    at_limit = ModelRequest(
        id="request-3",
        messages=(UserMessage(id="u", content="all of them", images=(SCREENSHOT,) * 20),),
    )
    async with ReplayServer() as server:
        server.respond(sse_response(anthropic_text()))
        async with AnthropicModel(
            "claude-test", base_url=server.origin, api_key=SECRET, retry=FAST_RETRY
        ) as model:
            error = await refused(model, many)
            assert error.code == "PROVIDER_TOO_MANY_IMAGES"
            assert "21 images; at most 20" in error.message
            assert server.requests == []
            await stream_once(model, at_limit)
    assert len(server.requests) == 1


# --- every image reaches every API's body (Hypothesis) ------------------------------------------


@st.composite
def image_requests(draw: st.DrawFn) -> ModelRequest:
    """Rounds of a user message with images, an assistant turn of calls, and their results
    with images (some with empty text)."""
    messages: list[Any] = []
    for round_ in range(draw(st.integers(1, 3))):
        messages.append(
            UserMessage(
                id=f"u{round_}",
                content=draw(st.sampled_from(["", "look"])),
                images=tuple(draw(st.lists(IMAGES, max_size=2))),
            )
        )
        calls = [
            ToolCall(id=f"c{round_}-{index}", name="shot", arguments=JsonObject())
            for index in range(draw(st.integers(0, 2)))
        ]
        if not calls:
            continue
        messages.append(AssistantMessage(id=f"a{round_}", content=tuple(calls)))
        messages.extend(
            ToolResultMessage(
                id=f"r-{call.id}",
                tool_call_id=call.id,
                tool_name=call.name,
                content=draw(st.sampled_from(["", "done"])),
                images=tuple(draw(st.lists(IMAGES, max_size=2))),
            )
            for call in calls
        )
    return ModelRequest(id="request-p", messages=tuple(messages))


def sent_images(body: Any) -> Counter[str]:
    """The base64 text of every image anywhere in a body, whichever API's form it has."""
    found: Counter[str] = Counter()

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            item = cast("dict[str, Any]", value)
            kind = item.get("type")
            if kind == "image_url":
                found[item["image_url"]["url"].partition("base64,")[2]] += 1
            elif kind == "input_image":
                found[item["image_url"].partition("base64,")[2]] += 1
            elif kind == "image":
                found[item["source"]["data"]] += 1
            elif "inlineData" in item:
                found[item["inlineData"]["data"]] += 1
            for child in item.values():
                walk(child)
        elif isinstance(value, list):
            for child in cast("list[Any]", value):
                walk(child)

    walk(body)
    return found


BUILDERS: Final[dict[str, Callable[[ModelRequest], object]]] = {
    "openai-chat": lambda sent: build_chat_request(
        sent,
        model="m",
        compat=OpenAIChatCompat(),
        max_output_tokens=None,
        temperature=None,
        reasoning_effort=None,
    ),
    "openai-responses": lambda sent: build_responses_request(
        sent, model="m", max_output_tokens=None, temperature=None, reasoning_effort=None
    ),
    "anthropic": lambda sent: build_messages_request(
        sent, model="m", max_output_tokens=64, temperature=None, thinking_budget=None, cache=True
    ),
    "gemini-3": lambda sent: build_gemini_request(sent, nest_tool_images=True),
    "gemini-2": lambda sent: build_gemini_request(sent, nest_tool_images=False),
}


@settings(max_examples=examples(60))
@given(sent=image_requests(), api=st.sampled_from(sorted(BUILDERS)))
def test_every_image_is_sent_once_in_every_api(sent: ModelRequest, api: str) -> None:
    body = json.loads(json.dumps(BUILDERS[api](sent)))
    expected = Counter(
        base64.b64encode(image.data).decode()
        for message in sent.messages
        if message.role != "assistant"
        for image in message.images
    )
    assert sent_images(body) == expected


async def test_a_run_with_an_image_for_a_blind_model_fails_with_the_code() -> None:
    transport = NoNetwork()
    async with httpx2.AsyncClient(transport=transport) as client:
        model = OpenAIChatModel(
            "llama-3.3-70b-versatile",
            base_url=PRESETS["groq"].base_url,
            api_key=SECRET,
            http_client=client,
            retry=FAST_RETRY,
        )
        run = run_agent_loop(
            messages=[UserMessage(content="What is this?", images=(SCREENSHOT,))],
            model=model,
            tools=ToolRegistry(),
            max_steps=1,
        )
        async with asyncio.timeout(BOUND):
            result = await run.result
    assert isinstance(result, FailedRunResult), result
    assert result.error.message.startswith("MODEL_CANNOT_SEE_IMAGES"), result.error.message
    assert transport.calls == 0
