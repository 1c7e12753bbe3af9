"""Soak: 10,000 agent-loop runs with mixed outcomes; memory must stay flat.

Runs only under ``make fuzz`` (marker ``soak``). Each batch mixes completed runs, recoverable
tool errors, model failures, protocol errors, max-steps runs and cancellations at different
points; after every batch the traced memory is measured with garbage collected. The last
batches may not hold measurably more memory than the early ones.

Two more soaks of 50,000 runs each hold the runtime's own registrations to the same rule:
runs whose signal is ``AbortSignal.any([long_lived, per_run])`` (the long-lived signal must not
collect a listener per run), and runs fed by response iterators and fixture sources that
cannot be weakly referenced (the claim-once registry must not keep them alive).
"""

from __future__ import annotations

import asyncio
import gc
import tracemalloc
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any, cast

import pytest

from tether import (
    AbortController,
    AbortSignal,
    AssistantMessage,
    FixtureProviderAdapter,
    ModelChunk,
    ModelRequest,
    ModelResponse,
    ModelUsage,
    RunResult,
    ScriptedModel,
    TextBlock,
    ToolRegistry,
    run_agent_loop,
    text_reply,
    tool,
    tool_call_reply,
)
from tether.protocol import TextDeltaChunk
from tether.protocol.transcript import user_message

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


# --- the runtime's own registrations: AbortSignal.any and the claim-once registry -------------

LONG_RUNS = 50_000
PAYLOAD = 1024
"""Bytes each non-weakrefable iterator holds: 50 MB in all if the registry kept them."""
_ZERO = ModelUsage(input_tokens=0, output_tokens=0)


def measure(soak_batches: Callable[[], Coroutine[Any, Any, list[int]]]) -> tuple[list[int], int]:
    """Run a soak on a plain loop (debug mode off) with memory traced; (samples, leftovers)."""
    tracemalloc.start()
    try:
        with asyncio.Runner(debug=False) as runner:
            samples = runner.run(soak_batches())
            leftovers = runner.run(pending_tasks())
    finally:
        tracemalloc.stop()
    return samples, leftovers


def assert_flat(name: str, samples: list[int], leftovers: int) -> None:
    assert leftovers == 0
    baseline = max(samples[1:3])
    growth = max(samples[-2:]) - baseline
    print(f"{name}: traced memory per batch (bytes): {samples}; growth {growth}")
    assert growth < 256 * 1024, f"{name}: memory grew by {growth} bytes: {samples}"


async def drain(run: Any) -> RunResult:
    async for _ in run:
        pass
    return await run.result


def test_memory_stays_flat_over_runs_on_any_of_a_long_lived_signal() -> None:
    long_lived = AbortController().signal
    counts: list[int] = []

    async def batches() -> list[int]:
        samples: list[int] = []
        for _ in range(BATCHES):
            for _ in range(LONG_RUNS // BATCHES):
                per_run = AbortController()
                run = run_agent_loop(
                    messages=[user_message(id="u", content="go")],
                    model=ScriptedModel([text_reply("ok")]),
                    tools=ToolRegistry(),
                    max_steps=1,
                    signal=AbortSignal.any([long_lived, per_run.signal]),
                )
                assert (await drain(run)).status == "completed"
            gc.collect()
            samples.append(tracemalloc.get_traced_memory()[0])
            counts.append(len(long_lived._listeners or ()))  # pyright: ignore[reportPrivateUsage]
        return samples

    samples, leftovers = measure(batches)
    print(f"listeners left on the long-lived signal per batch: {counts}")
    assert max(counts) <= 32, counts
    assert_flat(f"{LONG_RUNS} runs on AbortSignal.any", samples, leftovers)


class SlottedTurn:
    """A scripted response iterator that cannot be weakly referenced; holds ``PAYLOAD`` bytes.
    ``broken`` makes its only chunk unsupported, so the call fails and closes it."""

    __slots__ = ("items", "payload")

    def __init__(self, request: ModelRequest, *, broken: bool) -> None:
        self.payload = bytearray(PAYLOAD)
        response = ModelResponse(
            id="response-1",
            request_id=request.id,
            message=AssistantMessage(id="message-1", content=(TextBlock(text="ok"),)),
            stop_reason="stop",
            usage=_ZERO,
        )
        first = 42 if broken else TextDeltaChunk(request_id=request.id, delta="ok")
        self.items: list[object] = [response, first]

    def __aiter__(self) -> SlottedTurn:
        return self

    async def __anext__(self) -> object:
        if self.items:
            return self.items.pop()
        raise StopAsyncIteration


class SlottedRecords:
    """An async fixture record source that cannot be weakly referenced; holds ``PAYLOAD``."""

    __slots__ = ("payload", "records")

    def __init__(self, *, broken: bool) -> None:
        self.payload = bytearray(PAYLOAD)
        usage = {"inputTokens": 0, "outputTokens": 0}
        end = {"type": "response_end", "responseId": "r", "stopReason": "stop", "usage": usage}
        self.records: list[object] = [
            {"type": "response_start", "responseId": "r", "role": "assistant"},
            42 if broken else end,
        ]

    def __aiter__(self) -> SlottedRecords:
        return self

    async def __anext__(self) -> object:
        if self.records:
            return self.records.pop(0)
        raise StopAsyncIteration


def slotted_model(kind: int) -> object:
    broken = kind % 2 == 1
    if kind < 2:

        def factory(request: ModelRequest, signal: AbortSignal) -> Any:
            return SlottedTurn(request, broken=broken)

        return ScriptedModel([factory])
    return FixtureProviderAdapter(
        {"schemaVersion": 1, "responses": [{"records": SlottedRecords(broken=broken)}]}
    )


def test_memory_stays_flat_over_runs_fed_by_non_weakrefable_iterators() -> None:
    statuses: dict[str, int] = {}

    async def batches() -> list[int]:
        samples: list[int] = []
        for _ in range(BATCHES):
            for index in range(LONG_RUNS // BATCHES):
                run = run_agent_loop(
                    messages=[user_message(id="u", content="go")],
                    model=cast(Any, slotted_model(index % 4)),
                    tools=ToolRegistry(),
                    max_steps=1,
                    signal=AbortController().signal,
                )
                status = (await drain(run)).status
                statuses[status] = statuses.get(status, 0) + 1
            gc.collect()
            samples.append(tracemalloc.get_traced_memory()[0])
        return samples

    samples, leftovers = measure(batches)
    assert statuses == {"completed": LONG_RUNS // 2, "failed": LONG_RUNS // 2}, statuses
    alive = sum(1 for item in gc.get_objects() if type(item) in (SlottedTurn, SlottedRecords))
    print(f"non-weakrefable iterators still alive: {alive}")
    assert alive == 0
    assert_flat(f"{LONG_RUNS} runs on non-weakrefable iterators", samples, leftovers)
