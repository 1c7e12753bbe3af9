"""Loop overhead: the same 32-tool-turn workload in tether, the peers, and a bare floor.

The workload: a run of 32 model turns, each asking for one ``add`` tool call, then a final
text answer (33 model steps). Every contender is fully offline: tether uses ``ScriptedModel``,
pydantic-ai its ``FunctionModel``, openai-agents its ``agents.testing.ScriptedModel``, and the
floor is bare asyncio doing the same work (an async-generator model, a dict transcript, a tool
call, an event per step) with no validation at all.

Reported: microseconds per model step (median of several rounds, contenders interleaved) and
the ratios tether/peer and tether/floor. Peers that are not installed are skipped (they live in
requirements/bench.txt, never in tether's dependencies).

    python benchmarks/bench_loop.py [--quick] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import statistics
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import goals

TURNS = 32
STEPS = TURNS + 1

Runner = Callable[[], Awaitable[str]]


# --- floor: bare asyncio, no validation ------------------------------------------------------


async def _floor_add(left: int, right: int) -> int:
    return left + right


async def _floor_model(step: int, request_id: str) -> AsyncIterator[dict[str, Any]]:
    if step <= TURNS:
        call = {"id": f"call-{step}", "name": "add", "arguments": {"left": step, "right": 1}}
        yield {"type": "toolCall", "requestId": request_id, "toolCall": call}
        yield {"type": "response", "stopReason": "toolCall", "content": [call]}
    else:
        yield {"type": "textDelta", "requestId": request_id, "delta": "done"}
        yield {"type": "response", "stopReason": "stop", "content": [{"text": "done"}]}


async def _floor_events() -> AsyncIterator[dict[str, Any]]:
    transcript: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    sequence = 0
    yield {"type": "message.accepted", "sequence": sequence, "message": transcript[0]}
    sequence += 1
    for step in range(1, STEPS + 1):
        response: dict[str, Any] = {}
        async for item in _floor_model(step, f"request-{step:03d}"):
            if item["type"] == "response":
                response = item
                break
            yield {"type": "model.chunk", "sequence": sequence, "chunk": item}
            sequence += 1
        transcript.append({"role": "assistant", "content": response["content"]})
        if response["stopReason"] == "stop":
            yield {"type": "run.finished", "sequence": sequence, "status": "completed"}
            return
        for call in response["content"]:
            yield {"type": "tool.started", "sequence": sequence, "toolCall": call}
            sequence += 1
            output = await _floor_add(**call["arguments"])
            result = {"role": "toolResult", "toolCallId": call["id"], "content": str(output)}
            transcript.append(result)
            yield {"type": "tool.finished", "sequence": sequence, "message": result}
            sequence += 1


async def floor_run() -> str:
    last: dict[str, Any] = {}
    async for event in _floor_events():
        last = event
    return str(last["status"])


# --- tether ----------------------------------------------------------------------------------


def tether_runner() -> Runner:
    from tether import (
        AbortController,
        ScriptedModel,
        ToolRegistry,
        run_agent_loop,
        text_reply,
        tool,
        tool_call_reply,
    )
    from tether.protocol.transcript import user_message

    @tool
    async def add(left: int, right: int) -> int:
        """Add two integers."""
        return left + right

    registry = ToolRegistry([add])
    replies = [tool_call_reply(("add", {"left": n, "right": 1})) for n in range(TURNS)]
    replies.append(text_reply("done"))
    prompt = [user_message(id="user-001", content="go")]

    async def run() -> str:
        stream = run_agent_loop(
            messages=prompt,
            model=ScriptedModel(replies),
            tools=registry,
            max_steps=64,
            signal=AbortController().signal,
        )
        async for _ in stream:
            pass
        return (await stream.result).status

    return run


def tether_factory_runner() -> Runner:
    """The same workload with async-generator response factories built from the public
    constructors, as a user's own test double would be written."""
    from tether import (
        AssistantMessage,
        ModelRequest,
        ModelResponse,
        ModelUsage,
        ScriptedModel,
        TextBlock,
        ToolCall,
        ToolRegistry,
        UserMessage,
        run_agent_loop,
        tool,
    )
    from tether.protocol import TextDeltaChunk, ToolCallChunk

    @tool
    async def add(left: int, right: int) -> int:
        """Add two integers."""
        return left + right

    registry = ToolRegistry([add])
    usage = ModelUsage(input_tokens=0, output_tokens=0)
    prompt = [UserMessage(id="user-001", content="go")]

    def call_turn(n: int) -> Any:
        async def turn(request: ModelRequest, signal: object) -> AsyncIterator[Any]:
            call = ToolCall(id=f"call-{n}", name="add", arguments={"left": n, "right": 1})
            yield ToolCallChunk(request_id=request.id, tool_call=call)
            message = AssistantMessage(id=f"message-{n}", content=(call,))
            yield ModelResponse(
                id=f"r-{n}",
                request_id=request.id,
                message=message,
                stop_reason="toolCall",
                usage=usage,
            )

        return turn

    async def text_turn(request: ModelRequest, signal: object) -> AsyncIterator[Any]:
        yield TextDeltaChunk(request_id=request.id, delta="done")
        message = AssistantMessage(id="message-final", content=(TextBlock(text="done"),))
        yield ModelResponse(
            id="r-final", request_id=request.id, message=message, stop_reason="stop", usage=usage
        )

    async def run() -> str:
        factories: list[Any] = [call_turn(n) for n in range(TURNS)]
        factories.append(text_turn)
        stream = run_agent_loop(
            messages=prompt, model=ScriptedModel(factories), tools=registry, max_steps=64
        )
        async for _ in stream:
            pass
        return (await stream.result).status

    return run


# --- pydantic-ai -----------------------------------------------------------------------------


def pydantic_ai_runner() -> Runner | None:
    try:
        from pydantic_ai import Agent
        from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
        from pydantic_ai.models.function import AgentInfo, FunctionModel
    except ImportError:
        return None

    async def run() -> str:
        turn = 0

        def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            nonlocal turn
            turn += 1
            if turn <= TURNS:
                call = ToolCallPart(
                    tool_name="add", args={"left": turn, "right": 1}, tool_call_id=f"call-{turn}"
                )
                return ModelResponse(parts=[call])
            return ModelResponse(parts=[TextPart("done")])

        agent = Agent(FunctionModel(reply))

        @agent.tool_plain
        async def add(left: int, right: int) -> int:  # pyright: ignore[reportUnusedFunction]
            """Add two integers."""
            return left + right

        result = await agent.run("go")
        return "completed" if result.output == "done" else "unexpected"

    return run


# --- openai-agents ---------------------------------------------------------------------------


def openai_agents_runner() -> Runner | None:
    try:
        from agents import Agent, Runner, function_tool, set_tracing_disabled
        from agents.testing import ScriptedModel, assistant_message, function_call
    except ImportError:
        return None

    set_tracing_disabled(True)  # offline: no trace export, as for the other contenders

    @function_tool
    async def add(left: int, right: int) -> int:
        """Add two integers."""
        return left + right

    async def run() -> str:
        steps: list[Any] = [
            [function_call("add", json.dumps({"left": n, "right": 1}), call_id=f"call-{n}")]
            for n in range(TURNS)
        ]
        steps.append([assistant_message("done")])
        agent = Agent(name="bench", model=ScriptedModel(steps), tools=[add])
        result = await Runner.run(agent, "go", max_turns=STEPS + 1)
        return "completed" if result.final_output == "done" else "unexpected"

    return run


# --- measurement -----------------------------------------------------------------------------


def measure(
    runners: dict[str, Runner], runs: dict[str, int], rounds: int
) -> dict[str, list[float]]:
    """CPU microseconds per model step for each contender, one sample per round, interleaved."""
    samples: dict[str, list[float]] = {name: [] for name in runners}
    loop = asyncio.new_event_loop()
    try:
        for name, runner in runners.items():  # warm up, and check every contender works
            outcome = loop.run_until_complete(runner())
            if outcome != "completed":
                raise SystemExit(f"{name} did not complete the workload: {outcome}")
        for index in range(rounds):
            order = list(runners) if index % 2 == 0 else list(reversed(runners))
            for name in order:
                gc.collect()
                count = runs[name]
                started = time.process_time()
                for _ in range(count):
                    loop.run_until_complete(runners[name]())
                elapsed = time.process_time() - started
                samples[name].append(elapsed / count / STEPS * 1e6)
    finally:
        loop.close()
    return samples


PEERS = ("pydantic-ai", "openai-agents")


def loop_goals(samples: dict[str, list[float]], missing: dict[str, str]) -> list[dict[str, Any]]:
    """The loop's goals, each a ratio per round: tether and tether with generator factories
    at most 3x the bare-asyncio floor, tether at most 1/10 of the faster peer."""
    floor = samples["floor"]
    found = [
        goals.at_most(
            "loop per step vs the bare-asyncio floor, plain replies",
            goals.ratios(samples["tether"], floor),
            3,
        ),
        goals.at_most(
            "loop per step vs the bare-asyncio floor, generator factories",
            goals.ratios(samples["tether-factories"], floor),
            3,
        ),
    ]
    peers = [name for name in PEERS if name in samples]
    what = "loop per step vs the faster peer (pydantic-ai, openai-agents)"
    if peers:
        fastest = [min(values) for values in zip(*(samples[name] for name in peers), strict=True)]
        found.append(goals.at_most(what, goals.ratios(samples["tether"], fastest), 0.1))
    else:
        found.append(goals.skipped(what, "≤ 0.1x", "; ".join(missing.values())))
    return found


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--json-out", help="also write the figures as JSON here")
    args = parser.parse_args(argv)
    rounds = 3 if args.quick else 7
    runners: dict[str, Runner] = {
        "floor": floor_run,
        "tether": tether_runner(),
        "tether-factories": tether_factory_runner(),
    }
    runs = {"floor": 400, "tether": 60, "tether-factories": 60}
    missing: dict[str, str] = {}
    for name, factory, count in (
        ("pydantic-ai", pydantic_ai_runner, 3),
        ("openai-agents", openai_agents_runner, 3),
    ):
        runner = factory()
        if runner is None:
            missing[name] = f"{name} not installed (pip install -r requirements/bench.txt)"
            print(f"SKIPPED: {missing[name]}", file=sys.stderr)
        else:
            runners[name] = runner
            runs[name] = count
    if args.quick:
        runs = {name: max(1, count // 4) for name, count in runs.items()}
    samples = measure(runners, runs, rounds)
    medians = {name: statistics.median(values) for name, values in samples.items()}
    tether = medians["tether"]
    report: dict[str, Any] = {"us_per_step": medians, "ratios": {}}
    for name, value in medians.items():
        if name not in ("tether", "tether-factories"):
            report["ratios"][f"tether/{name}"] = tether / value
    report["ratios"]["tether-factories/floor"] = medians["tether-factories"] / medians["floor"]
    report["goals"] = loop_goals(samples, missing)
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(report, indent=2), encoding="utf-8")
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"loop overhead: {TURNS} tool turns + 1 text turn, median CPU us per model step")
        for name, value in medians.items():
            print(f"  {name:<14} {value:10.1f} us/step")
        for label, ratio in report["ratios"].items():
            print(f"  {label:<22} {ratio:8.3f}x")
        for goal in report["goals"]:
            print(goals.line(goal))
    return report


if __name__ == "__main__":
    main()
