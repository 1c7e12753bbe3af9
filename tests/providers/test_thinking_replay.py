"""The one thinking level on the two newer APIs: ``OpenAIResponsesModel`` sends it as
``reasoning.effort`` and ``GeminiModel`` as ``thinkingConfig``, clamped per model, checked in
the request bodies a loopback server receives."""

from __future__ import annotations

from typing import Any

import pytest

from servers.replay import ReplayServer, json_response
from tether import GeminiModel, OpenAIResponsesModel, ToolRegistry, UserMessage, run_agent_loop
from tether.providers.thinking import ThinkingModel

SECRET = "sk-test-THINKING-0123456789abcdef"
CLAMPED = "thinking: gpt-5 has no 'off' level; using 'minimal'"


async def _body(model: Any, server: ReplayServer) -> Any:
    server.respond(json_response(400, {"error": {"message": "no", "code": 400}}))
    async with model:
        run = run_agent_loop(
            messages=[UserMessage(content="hi")], model=model, tools=ToolRegistry([]), max_steps=1
        )
        result = await run.result
    assert result.status == "failed"
    return server.requests[-1].json


@pytest.mark.parametrize(
    ("model", "level", "sent", "notice"),
    [
        ("gpt-5", "high", {"effort": "high"}, None),
        (
            "gpt-5",
            "off",
            {"effort": "minimal"},
            "thinking: gpt-5 has no 'off' level; using 'minimal'",
        ),
        ("o3", "minimal", {"effort": "low"}, "thinking: o3 has no 'minimal' level; using 'low'"),
    ],
)
async def test_responses_sends_the_level_as_its_effort(
    model: str, level: Any, sent: dict[str, str], notice: str | None
) -> None:
    async with ReplayServer() as server:
        built = OpenAIResponsesModel(
            model, base_url=server.url + "/v1", api_key=SECRET, thinking=level
        )
        assert isinstance(built, ThinkingModel)
        choice = built.thinking_choice
        assert choice is not None
        assert choice.notice == notice
        body = await _body(built, server)
    assert body["reasoning"] == sent


async def test_responses_with_thinking_switches_the_next_request() -> None:
    async with ReplayServer() as server:
        base = OpenAIResponsesModel("gpt-5", base_url=server.url + "/v1", api_key=SECRET)
        assert base.thinking is None
        body = await _body(base.with_thinking("low"), server)
    assert body["reasoning"] == {"effort": "low"}


@pytest.mark.parametrize(
    ("model", "level", "config"),
    [
        ("gemini-2.5-flash", "high", {"thinkingBudget": 24576, "includeThoughts": True}),
        ("gemini-2.5-flash", "off", {"thinkingBudget": 0}),
        ("gemini-3-pro-preview", "minimal", {"thinkingLevel": "low", "includeThoughts": True}),
    ],
)
async def test_gemini_sends_the_level_as_its_thinking_config(
    model: str, level: Any, config: dict[str, object]
) -> None:
    async with ReplayServer() as server:
        built = GeminiModel(model, base_url=server.origin, api_key=SECRET, thinking=level)
        body = await _body(built, server)
    assert body["generationConfig"]["thinkingConfig"] == config


def test_a_level_and_the_precise_option_together_are_refused() -> None:
    with pytest.raises(TypeError, match="not both"):
        GeminiModel("gemini-2.5-flash", api_key=SECRET, thinking="low", thinking_budget=1024)
    with pytest.raises(TypeError, match="not both"):
        OpenAIResponsesModel("gpt-5", api_key=SECRET, thinking="low", reasoning_effort="high")
    with pytest.raises(TypeError, match="thinking must be one of"):
        OpenAIResponsesModel("gpt-5", api_key=SECRET, thinking="max")  # type: ignore[arg-type]
