"""One thinking level for every API: the pure mapping of ``tether.providers.thinking``."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from anthropic_bodies import TEXT as ANTHROPIC_TEXT
from openai_bodies import OPENAI_TEXT
from servers.replay import ReplayServer, sse_response
from tether import CompletedRunResult, ToolRegistry, UserMessage, run_agent_loop
from tether.providers.anthropic import AnthropicModel
from tether.providers.openai_chat import OpenAIChatModel
from tether.providers.thinking import (
    THINKING_LEVELS,
    ThinkingLevel,
    anthropic_levels,
    anthropic_thinking,
    clamp_level,
    gemini_levels,
    gemini_thinking_config,
    next_level,
    openai_chat_effort,
    openai_levels,
    openai_responses_reasoning,
    parse_thinking_level,
)

levels = st.sampled_from(THINKING_LEVELS)


def test_next_level_cycles_through_every_level() -> None:
    seen: list[ThinkingLevel] = []
    level: ThinkingLevel | None = None
    for _ in range(6):
        level = next_level(level)
        seen.append(level)
    assert seen == ["off", "minimal", "low", "medium", "high", "off"]


@given(st.one_of(st.text(max_size=12), st.integers(), st.none(), levels))
def test_parse_thinking_level_takes_exactly_the_levels(value: object) -> None:
    if value in THINKING_LEVELS:
        assert parse_thinking_level(value) == value
    else:
        with pytest.raises(ValueError, match="off, minimal, low, medium, high"):
            parse_thinking_level(value)


@given(levels, st.sets(levels, min_size=1))
def test_clamp_picks_a_supported_level_nearest_to_the_request(
    requested: ThinkingLevel, supported: set[ThinkingLevel]
) -> None:
    ordered: tuple[ThinkingLevel, ...] = tuple(
        each for each in THINKING_LEVELS if each in supported
    )
    choice = clamp_level(requested, ordered, model="m")
    assert choice.level in supported
    at = THINKING_LEVELS.index(requested)
    distance = abs(THINKING_LEVELS.index(choice.level) - at)
    assert all(abs(THINKING_LEVELS.index(other) - at) >= distance for other in supported)
    assert (choice.notice is None) == (requested in supported)


def test_clamp_ties_go_to_more_thinking_and_the_notice_names_both() -> None:
    choice = clamp_level("minimal", ("off", "low", "medium", "high"), model="gpt-5.1")
    assert choice.level == "low"
    assert choice.notice == "thinking: gpt-5.1 has no 'minimal' level; using 'low'"
    with pytest.raises(ValueError, match="at least one"):
        clamp_level("minimal", (), model="m")


# --- Anthropic ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("level", "fields"),
    [
        ("off", {"max_tokens": 4096}),
        ("minimal", {"max_tokens": 5120, "thinking": {"type": "enabled", "budget_tokens": 1024}}),
        ("low", {"max_tokens": 6144, "thinking": {"type": "enabled", "budget_tokens": 2048}}),
        ("medium", {"max_tokens": 12288, "thinking": {"type": "enabled", "budget_tokens": 8192}}),
        ("high", {"max_tokens": 20480, "thinking": {"type": "enabled", "budget_tokens": 16384}}),
    ],
)
def test_anthropic_budget_per_level(level: ThinkingLevel, fields: dict[str, object]) -> None:
    mapped = anthropic_thinking(level, model="claude-sonnet-4-5", max_output_tokens=4096)
    assert mapped.fields() == fields


@given(levels, st.integers(min_value=1, max_value=200_000))
def test_anthropic_budget_is_always_below_max_tokens(level: ThinkingLevel, asked: int) -> None:
    mapped = anthropic_thinking(level, model="claude-opus-4-1", max_output_tokens=asked)
    assert mapped.max_tokens >= asked
    if mapped.budget_tokens is not None:
        assert 1024 <= mapped.budget_tokens < mapped.max_tokens


def test_claude_3_without_extended_thinking_is_off_only() -> None:
    assert anthropic_levels("claude-3-5-haiku-latest") == ("off",)
    assert anthropic_levels("claude-3-7-sonnet-latest") == THINKING_LEVELS
    assert anthropic_thinking("high", model="claude-3-haiku", max_output_tokens=100).fields() == {
        "max_tokens": 100
    }


# --- OpenAI ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        # model: the reasoning_effort sent for off, minimal, low, medium, high
        ("gpt-5", ("minimal", "minimal", "low", "medium", "high")),
        ("gpt-5-mini", ("minimal", "minimal", "low", "medium", "high")),
        ("gpt-5.1", ("none", "low", "low", "medium", "high")),
        ("o4-mini", ("low", "low", "low", "medium", "high")),
        ("gpt-4o-mini", (None, None, None, None, None)),
        ("gpt-5-chat-latest", (None, None, None, None, None)),
        ("qwen3:8b", (None, "low", "low", "medium", "high")),
        ("openai/gpt-5", ("minimal", "minimal", "low", "medium", "high")),
    ],
)
def test_openai_chat_effort_per_model(model: str, expected: tuple[str | None, ...]) -> None:
    assert tuple(openai_chat_effort(level, model=model) for level in THINKING_LEVELS) == expected


def test_openai_responses_reasoning() -> None:
    assert openai_responses_reasoning("medium", model="gpt-5") == {
        "effort": "medium",
        "summary": "auto",
    }
    assert openai_responses_reasoning("off", model="gpt-5") == {
        "effort": "minimal",
        "summary": "auto",
    }
    assert openai_responses_reasoning("off", model="gpt-5.2") == {"effort": "none"}
    assert openai_responses_reasoning("off", model="gpt-4.1") is None
    assert openai_responses_reasoning("high", model="gpt-4.1") is None
    assert openai_responses_reasoning("low", model="o3", summary=None) == {"effort": "low"}
    assert openai_levels("o3") == ("low", "medium", "high")


# --- Gemini ------------------------------------------------------------------------------------


def test_gemini_25_budgets() -> None:
    flash = [gemini_thinking_config(level, model="gemini-2.5-flash") for level in THINKING_LEVELS]
    assert flash == [
        {"thinkingBudget": 0},
        {"thinkingBudget": 512, "includeThoughts": True},
        {"thinkingBudget": 2048, "includeThoughts": True},
        {"thinkingBudget": 8192, "includeThoughts": True},
        {"thinkingBudget": 24576, "includeThoughts": True},
    ]
    # 2.5 Pro cannot turn thinking off: off is its least level; high is its larger maximum.
    assert gemini_levels("gemini-2.5-pro") == ("minimal", "low", "medium", "high")
    assert gemini_thinking_config("off", model="gemini-2.5-pro") == {
        "thinkingBudget": 512,
        "includeThoughts": True,
    }
    assert gemini_thinking_config("high", model="gemini-2.5-pro") == {
        "thinkingBudget": 32768,
        "includeThoughts": True,
    }


def test_gemini_3_levels() -> None:
    assert [
        gemini_thinking_config(level, model="gemini-3-pro-preview") for level in THINKING_LEVELS
    ] == [
        {"thinkingLevel": level, "includeThoughts": True} for level in ("low",) * 3 + ("high",) * 2
    ]
    assert gemini_thinking_config("off", model="gemini-3-flash-preview") == {
        "thinkingLevel": "minimal",
        "includeThoughts": True,
    }
    assert gemini_thinking_config("medium", model="gemini-3-flash-preview") == {
        "thinkingLevel": "medium",
        "includeThoughts": True,
    }
    assert gemini_levels("gemini-2.0-flash") == ("off",)
    assert gemini_thinking_config("high", model="gemini-2.0-flash") is None


# --- request bodies over loopback ----------------------------------------------------------------


async def _sent_bodies(model: Any, server: ReplayServer, body: bytes, count: int) -> list[Any]:
    """Run ``count`` one-step prompts through ``model`` and return the JSON bodies sent."""
    for _ in range(count):
        server.respond(sse_response(body))
    for number in range(count):
        stream = run_agent_loop(
            messages=[UserMessage(id=f"user-{number}", content="Hi")],
            model=model,
            tools=ToolRegistry(),
            max_steps=1,
        )
        async with asyncio.timeout(20):
            result = await stream.result
        assert isinstance(result, CompletedRunResult), result
    return [request.json for request in server.requests]


@pytest.mark.parametrize("level", THINKING_LEVELS)
async def test_anthropic_model_sends_the_level_s_budget(level: ThinkingLevel) -> None:
    async with (
        ReplayServer() as server,
        AnthropicModel(
            "claude-sonnet-4-5", base_url=server.origin, api_key="k", thinking=level
        ) as model,
    ):
        (sent,) = await _sent_bodies(model, server, ANTHROPIC_TEXT.encode(), 1)
    expected = anthropic_thinking(level, model="claude-sonnet-4-5", max_output_tokens=4096)
    assert sent["max_tokens"] == expected.max_tokens
    assert sent.get("thinking") == expected.fields().get("thinking")
    assert model.thinking == level


@pytest.mark.parametrize("level", THINKING_LEVELS)
async def test_openai_chat_model_sends_the_level_s_effort(level: ThinkingLevel) -> None:
    async with (
        ReplayServer() as server,
        OpenAIChatModel("gpt-5", base_url=server.url, api_key="k", thinking=level) as model,
    ):
        (sent,) = await _sent_bodies(model, server, OPENAI_TEXT.encode(), 1)
    assert sent["reasoning_effort"] == ("minimal" if level == "off" else level)
    choice = model.thinking_choice
    assert choice is not None
    assert (choice.notice is not None) == (level == "off")


async def test_with_thinking_switches_the_level_on_the_same_connection() -> None:
    async with ReplayServer() as server:
        async with OpenAIChatModel("o4-mini", base_url=server.url, api_key="k") as model:
            high = model.with_thinking("high")
            off = high.with_thinking("off")
            sent = [
                (await _sent_bodies(each, server, OPENAI_TEXT.encode(), 1))[-1]
                for each in (model, high, off)
            ]
        assert [body.get("reasoning_effort") for body in sent] == [None, "high", "low"]
        assert off.thinking_choice is not None
        assert off.thinking_choice.notice == "thinking: o4-mini has no 'off' level; using 'low'"
        assert len(server.connections) == 1  # one pooled client, shared by the copies
        assert model.thinking is None


async def test_a_claude_3_model_clamps_to_off_and_the_precise_forms_still_work() -> None:
    async with (
        ReplayServer() as server,
        AnthropicModel(
            "claude-3-5-haiku-latest", base_url=server.origin, api_key="k", thinking="high"
        ) as model,
    ):
        (sent,) = await _sent_bodies(model, server, ANTHROPIC_TEXT.encode(), 1)
        precise = AnthropicModel(
            "claude-3-5-haiku-latest", base_url=server.origin, api_key="k", thinking_budget=2048
        )
        async with precise:
            (budget,) = (await _sent_bodies(precise, server, ANTHROPIC_TEXT.encode(), 1))[1:]
            # None: back to the model as constructed (the precise budget)
            again = precise.with_thinking("low").with_thinking(None)
            assert again.thinking is None
    assert "thinking" not in sent
    choice = model.thinking_choice
    assert choice is not None
    assert choice.level == "off"
    assert choice.notice == "thinking: claude-3-5-haiku-latest has no 'high' level; using 'off'"
    assert budget["thinking"] == {"type": "enabled", "budget_tokens": 2048}


@pytest.mark.parametrize(
    ("make", "named"),
    [
        (lambda: AnthropicModel("m", thinking="max"), "thinking"),  # type: ignore[arg-type]
        (lambda: AnthropicModel("m", thinking="low", thinking_budget=2048), "not both"),
        (lambda: AnthropicModel("m", thinking="low", temperature=0.2), "temperature"),
        (lambda: OpenAIChatModel("m", thinking="low", reasoning_effort="low"), "not both"),
        (lambda: OpenAIChatModel("m", thinking=""), "thinking"),  # type: ignore[arg-type]
    ],
)
def test_thinking_options_are_checked(make: Callable[[], object], named: str) -> None:
    with pytest.raises(TypeError, match=named):
        make()


_MODEL_NAMES = st.one_of(
    st.text(max_size=30),
    st.sampled_from(
        ["gpt-5", "gpt-5.1-codex", "o3-mini", "gpt-4.1", "gemini-3-pro", "gemini-2.5-flash-lite"]
    ).flatmap(lambda name: st.sampled_from([name, name.upper(), f"vendor/{name}-x"])),
)


@given(levels, _MODEL_NAMES)
def test_every_mapping_sends_only_what_its_api_accepts(level: ThinkingLevel, model: str) -> None:
    assert openai_chat_effort(level, model=model) in {None, "none", *THINKING_LEVELS[1:]}
    reasoning = openai_responses_reasoning(level, model=model)
    assert reasoning is None or reasoning["effort"] in {"none", *THINKING_LEVELS[1:]}
    config = gemini_thinking_config(level, model=model)
    if config is not None and "thinkingLevel" in config:
        assert config["thinkingLevel"] in gemini_levels(model)
        assert config["thinkingLevel"] != "off"
    if config is not None and "thinkingBudget" in config:
        assert (config.get("includeThoughts") is True) == (config["thinkingBudget"] != 0)
    for levels_of in (anthropic_levels, openai_levels, gemini_levels):
        supported = levels_of(model)
        assert supported
        assert list(supported) == sorted(supported, key=THINKING_LEVELS.index)
