"""Agent overhead: the stateful ``Agent`` against a bare ``run_agent_loop`` on the same work.

Two scripted workloads, fully offline (``ScriptedModel``):

* ``one run``: one prompt, 32 tool turns, then a text answer (33 model steps). The bare loop
  runs it as one run; the Agent as 33 one-step sub-runs (its logical run loop).
* ``conversation``: 40 prompts in a row, each answered with one tool turn and one text turn
  (80 model steps over a transcript that grows to 161 messages). The bare loop is started
  once per prompt with the transcript so far (what a caller without an Agent does).

Also: the cost of publishing one event to 0, 1, 100 and 1,000 subscribers.

Reported: median CPU microseconds per model step (turn) and the ratio Agent / bare (goal
≤ 1.5x); microseconds per event per subscriber.

    python benchmarks/bench_agent.py [--quick] [--json] [--json-out FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import statistics
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import goals
from tether import (
    Message,
    ScriptedModel,
    ToolRegistry,
    run_agent_loop,
    text_reply,
    tool,
    tool_call_reply,
)
from tether.agent import Agent
from tether.protocol.transcript import user_message

TURNS = 32
PROMPTS = 40

Runner = Callable[[], Awaitable[int]]  # returns the number of model steps it ran


@tool
async def add(left: int, right: int) -> int:
    """Add two integers."""
    return left + right


REGISTRY = ToolRegistry([add])


def one_run_replies() -> list[Any]:
    replies: list[Any] = [tool_call_reply(("add", {"left": n, "right": 1})) for n in range(TURNS)]
    replies.append(text_reply("done"))
    return replies


def conversation_replies() -> list[Any]:
    replies: list[Any] = []
    for n in range(PROMPTS):
        replies.append(tool_call_reply(("add", {"left": n, "right": 1}), response_id=f"t{n}"))
        replies.append(text_reply("ok", response_id=f"x{n}"))
    return replies


async def bare_one_run() -> int:
    stream = run_agent_loop(
        messages=[user_message(id="u", content="go")],
        model=ScriptedModel(one_run_replies()),
        tools=REGISTRY,
        max_steps=64,
    )
    async for _ in stream:
        pass
    assert (await stream.result).status == "completed"
    return TURNS + 1


async def agent_one_run() -> int:
    agent = Agent(model=ScriptedModel(one_run_replies()), tools=REGISTRY)
    stream = agent.prompt("go")
    async for _ in stream:
        pass
    assert (await stream.result).status == "completed"
    return TURNS + 1


async def bare_conversation() -> int:
    model = ScriptedModel(conversation_replies())
    transcript: list[Message] = []
    for n in range(PROMPTS):
        transcript.append(user_message(id=f"u{n}", content="go"))
        stream = run_agent_loop(
            messages=transcript,
            model=model,
            tools=REGISTRY,
            max_steps=64,
            request_sequence_start=2 * n,  # default call IDs derive from request IDs
        )
        async for _ in stream:
            pass
        result = await stream.result
        assert result.status == "completed"
        transcript = list(result.messages)
    return 2 * PROMPTS


async def agent_conversation() -> int:
    agent = Agent(model=ScriptedModel(conversation_replies()), tools=REGISTRY)
    for _ in range(PROMPTS):
        stream = agent.prompt("go")
        async for _ in stream:
            pass
        assert (await stream.result).status == "completed"
    return 2 * PROMPTS


def measure(runners: dict[str, Runner], runs: int, rounds: int) -> dict[str, list[float]]:
    """CPU microseconds per model step for each runner, one sample per round, interleaved."""
    samples: dict[str, list[float]] = {name: [] for name in runners}
    loop = asyncio.new_event_loop()
    try:
        for runner in runners.values():
            loop.run_until_complete(runner())  # warm up
        for index in range(rounds):
            order = list(runners) if index % 2 == 0 else list(reversed(runners))
            for name in order:
                gc.collect()
                started = time.process_time()
                steps = 0
                for _ in range(runs):
                    steps += loop.run_until_complete(runners[name]())
                samples[name].append((time.process_time() - started) / steps * 1e6)
    finally:
        loop.close()
    return samples


def medians(samples: dict[str, list[float]]) -> dict[str, float]:
    return {name: statistics.median(values) for name, values in samples.items()}


def subscriber_cost(counts: tuple[int, ...], rounds: int) -> dict[str, float]:
    """Microseconds per published event with ``count`` no-op subscribers."""
    per_event: dict[str, float] = {}
    loop = asyncio.new_event_loop()
    try:
        for count in counts:
            times: list[float] = []
            for _ in range(rounds):
                agent = Agent(model=ScriptedModel(one_run_replies()), tools=REGISTRY)
                for _ in range(count):
                    agent.subscribe(lambda event, signal: None)

                async def run(agent: Agent = agent) -> int:
                    events = 0
                    async for _ in agent.prompt("go"):
                        events += 1
                    return events

                gc.collect()
                started = time.process_time()
                events = loop.run_until_complete(run())
                times.append((time.process_time() - started) / events * 1e6)
            per_event[str(count)] = statistics.median(times)
    finally:
        loop.close()
    return per_event


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--json-out", help="also write the figures as JSON here")
    args = parser.parse_args(argv)
    rounds = 3 if args.quick else 7
    runs = 5 if args.quick else 20
    one_samples = measure({"bare": bare_one_run, "agent": agent_one_run}, runs, rounds)
    conversation_samples = measure(
        {"bare": bare_conversation, "agent": agent_conversation}, 2, rounds
    )
    one, conversation = medians(one_samples), medians(conversation_samples)
    subscribers = subscriber_cost((0, 1, 100, 1000), rounds)
    report: dict[str, Any] = {
        "one_run": {"us_per_step": one, "agent/bare": one["agent"] / one["bare"]},
        "conversation": {
            "us_per_step": conversation,
            "agent/bare": conversation["agent"] / conversation["bare"],
        },
        "us_per_event_by_subscribers": subscribers,
        "goals": [
            goals.at_most(
                f"Agent per turn vs a bare run_agent_loop, {label}",
                goals.ratios(samples["agent"], samples["bare"]),
                1.5,
            )
            for label, samples in (
                ("1 prompt, 32 tool turns", one_samples),
                ("40 prompts", conversation_samples),
            )
        ],
    }
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(report, indent=2), encoding="utf-8")
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        for name in ("one_run", "conversation"):
            row = report[name]
            values = row["us_per_step"]
            print(
                f"{name:<13} bare {values['bare']:7.1f} us/step  agent {values['agent']:7.1f}"
                f" us/step  agent/bare {row['agent/bare']:.2f}x (goal <= 1.5x)"
            )
        for count, value in subscribers.items():
            print(f"subscribers {count:>5}: {value:8.2f} us per event")
        for goal in report["goals"]:
            print(goals.line(goal))
    return report


if __name__ == "__main__":
    main()
