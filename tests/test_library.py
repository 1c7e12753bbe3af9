"""The library as a Python developer uses it (issue 29): real-model limits on HTTP models,
typed per-run dependencies, tool retry budgets, structured output and the constructors."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from servers.replay import ReplayServer, sse_response
from tether import (
    CompletedRunResult,
    FailedRunResult,
    RunLimits,
    ScriptedModel,
    ScriptedReply,
    ToolRegistry,
    UserMessage,
    run_agent_loop,
)
from tether.providers.openai_chat import OpenAIChatModel

BOUND = 20.0


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-test",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def _sse(chunks: list[dict[str, Any]]) -> bytes:
    lines = [f"data: {json.dumps(item)}\n\n" for item in chunks]
    return ("".join(lines) + "data: [DONE]\n\n").encode()


# --- 1. real-model limits ---------------------------------------------------------------------


async def test_a_long_reply_through_the_readme_model_completes() -> None:
    parts = [f"w{index} " for index in range(5000)]
    chunks = [_chunk({"role": "assistant", "content": ""})]
    chunks += [_chunk({"content": part}) for part in parts]
    chunks.append(_chunk({}, "stop"))
    async with ReplayServer() as server:
        server.respond(sse_response(_sse(chunks)))
        # Built as in the README, with no limits passed to the loop.
        async with OpenAIChatModel(
            "gpt-4o-mini", base_url=server.url, api_key_env=None, max_output_tokens=2048
        ) as model:
            run = run_agent_loop(
                messages=[UserMessage(content="Write a long essay.")],
                model=model,
                tools=ToolRegistry(),
                max_steps=16,
            )
            async with asyncio.timeout(BOUND):
                result = await run.result
    assert isinstance(result, CompletedRunResult), result
    assert result.final_text == "".join(parts)
    assert model.run_limits == RunLimits.for_real_models()


async def test_the_offline_models_keep_the_workshop_limits_and_a_limit_error_has_a_hint() -> None:
    model = ScriptedModel([ScriptedReply(text=("x" * 10,))])
    run = run_agent_loop(
        messages=[UserMessage(content="hi")],
        model=model,
        tools=ToolRegistry(),
        max_steps=1,
        limits=RunLimits(max_text_code_points=5),
    )
    result = await run.result
    assert isinstance(result, FailedRunResult)
    assert result.error.code == "MODEL_PROTOCOL_ERROR"
    assert "max_text_code_points" in result.error.hint
    assert "RunLimits" in result.error.hint


async def test_the_chunk_limit_names_its_parameter() -> None:
    model = ScriptedModel([ScriptedReply(text=("a", "b", "c"))])
    run = run_agent_loop(
        messages=[UserMessage(content="hi")],
        model=model,
        tools=ToolRegistry(),
        max_steps=1,
        limits=RunLimits(max_chunks_per_step=2),
    )
    result = await run.result
    assert isinstance(result, FailedRunResult)
    assert result.error.message == "Model turn exceeded 2 chunks"
    assert "max_chunks_per_step" in result.error.hint
