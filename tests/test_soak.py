"""Soak: 10,000 agent-loop runs with mixed outcomes; memory must stay flat.

Runs only under ``make fuzz`` (marker ``soak``). Each batch mixes completed runs, recoverable
tool errors, model failures, protocol errors, max-steps runs and cancellations at different
points; after every batch the traced memory is measured with garbage collected. The last
batches may not hold measurably more memory than the early ones.
"""

from __future__ import annotations

import asyncio
import gc
import tracemalloc
from collections.abc import AsyncIterator

import pytest

from tether import (
    AbortController,
    AbortSignal,
    ModelChunk,
    ModelRequest,
    ModelResponse,
    RunResult,
    ScriptedModel,
    ToolRegistry,
    run_agent_loop,
    text_reply,
    tool,
    tool_call_reply,
    user_message,
)

pytestmark = pytest.mark.soak

RUNS = 10_000
BATCHES = 10


@tool
async def add(left: int, right: int) -> int:
    """Add two integers."""
    return left + right


@tool
async def wait_forever(ticket: int) -> int:
    """Block until cancelled."""
    await asyncio.Event().wait()
    return ticket


async def failing_turn(
    request: ModelRequest, signal: AbortSignal
) -> AsyncIterator[ModelChunk | ModelResponse]:
    raise RuntimeError("model exploded")
    yield  # pragma: no cover - makes this an async generator


def scenario(kind: int, registry: ToolRegistry) -> tuple[ScriptedModel, int, bool]:
    """A model, a step budget and whether to abort once the run blocks."""
    match kind:
        case 0:
            replies = [tool_call_reply(("add", {"left": 1, "right": 2})), text_reply("3")]
            return ScriptedModel(replies), 8, False
        case 1:
            replies = [tool_call_reply(("missing", {})), text_reply("sorry")]
            return ScriptedModel(replies), 8, False
        case 2:
            return ScriptedModel([failing_turn]), 8, False
        case 3:
            replies = [tool_call_reply(("add", {"left": 1, "right": 2}))] * 3
            return ScriptedModel(replies), 2, False
        case 4:
            return ScriptedModel([tool_call_reply(("wait_forever", {"ticket": 1}))]), 8, True
        case _:
            return ScriptedModel([text_reply("a", "b")]), 1, False


async def one_run(kind: int, registry: ToolRegistry) -> RunResult:
    model, budget, abort_when_blocked = scenario(kind, registry)
    controller = AbortController()
    run = run_agent_loop(
        messages=[user_message(id="u", content="go")],
        model=model,
        tools=registry,
        max_steps=budget,
        signal=controller.signal,
    )
    async for event in run:
        if abort_when_blocked and event.type == "tool.started":
            asyncio.get_running_loop().call_soon(controller.abort, "soak cancel")
    return await run.result


async def pending_tasks() -> int:
    current = asyncio.current_task()
    return sum(1 for task in asyncio.all_tasks() if task is not current)


async def soak() -> list[int]:
    registry = ToolRegistry([add, wait_forever])
    per_batch = RUNS // BATCHES
    samples: list[int] = []
    statuses: dict[str, int] = {}
    for _ in range(BATCHES):
        for index in range(per_batch):
            result = await one_run(index % 6, registry)
            statuses[result.status] = statuses.get(result.status, 0) + 1
        gc.collect()
        samples.append(tracemalloc.get_traced_memory()[0])
    assert set(statuses) == {"completed", "failed", "maxSteps", "cancelled"}, statuses
    assert sum(statuses.values()) == RUNS
    return samples


def test_memory_stays_flat_over_ten_thousand_runs() -> None:
    # Debug mode off: it keeps creation tracebacks and slows every step; memory is the subject.
    tracemalloc.start()
    try:
        with asyncio.Runner(debug=False) as runner:
            samples = runner.run(soak())
            leftovers = runner.run(pending_tasks())
    finally:
        tracemalloc.stop()
    assert leftovers == 0
    baseline = max(samples[1:3])
    final = max(samples[-2:])
    growth = final - baseline
    print(f"traced memory per batch (bytes): {samples}")
    assert growth < 256 * 1024, f"memory grew by {growth} bytes over {RUNS} runs: {samples}"
