"""A finished run is freed by reference counting alone (issue 30).

Thousands of concurrent runs used to leave each finished run's whole object graph (its
transcript, stream, signal and model) in a reference cycle, so only the cycle collector's
full passes over a growing heap could free it. These tests run with the collector off and
check that nothing of a finished run outlives the references the test drops.
"""

from __future__ import annotations

import asyncio
import gc
import traceback
import weakref
from collections.abc import AsyncIterator, Generator
from contextlib import contextmanager

from support import run_async
from tether import (
    AbortController,
    ScriptedModel,
    ToolRegistry,
    run_agent_loop,
    text_reply,
    tool,
    tool_call_reply,
)
from tether.protocol import ModelChunk
from tether.protocol.transcript import user_message


@tool
async def add(left: int, right: int) -> int:
    """Add two integers after one turn of the event loop."""
    await asyncio.sleep(0)
    return left + right


@contextmanager
def collector_off() -> Generator[None]:
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def test_a_finished_run_leaves_no_reference_cycle() -> None:
    async def scenario() -> None:
        replies = [tool_call_reply(("add", {"left": n, "right": 1})) for n in range(3)]
        replies.append(text_reply("done"))
        model = ScriptedModel(replies)
        controller = AbortController()
        with collector_off():
            stream = run_agent_loop(
                messages=[user_message(id="user-001", content="go")],
                model=model,
                tools=ToolRegistry([add]),
                max_steps=4,
                signal=controller.signal,
            )
            async for _ in stream:
                pass
            assert (await stream.result).status == "completed"
            refs = [weakref.ref(stream), weakref.ref(controller.signal)]
            del stream, model, controller
            assert [ref() for ref in refs] == [None, None]

    run_async(scenario)


def test_a_run_whose_model_stream_failed_leaves_no_reference_cycle() -> None:
    failure = RuntimeError("the provider hung up")

    async def scenario() -> None:
        async def broken(request: object, signal: object) -> AsyncIterator[ModelChunk]:
            await asyncio.sleep(0)
            raise failure
            yield  # pragma: no cover - makes this an async generator

        model = ScriptedModel([broken])
        controller = AbortController()
        with collector_off():
            stream = run_agent_loop(
                messages=[user_message(id="user-001", content="go")],
                model=model,
                tools=ToolRegistry([add]),
                max_steps=4,
                signal=controller.signal,
            )
            async for _ in stream:
                pass
            result = await stream.result
            assert result.status == "failed"
            assert result.error.code == "MODEL_STREAM_FAILED"
            refs = [weakref.ref(stream), weakref.ref(controller.signal)]
            del stream, model, controller, result
            assert [ref() for ref in refs] == [None, None]

    run_async(scenario)
    frames = [entry.name for entry in traceback.extract_tb(failure.__traceback__)]
    assert frames[-1] == "broken"  # where the model failed is still on its traceback
    assert "model_turn" not in frames
    assert "_produce" not in frames


def _tether_garbage() -> list[str]:
    """The classes of tether's objects that only the cycle collector would free now: a full
    collection with ``DEBUG_SAVEALL`` keeps what it found unreachable in ``gc.garbage``."""
    flags = gc.get_debug()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        gc.collect()
        found = sorted(
            {
                type(item).__qualname__
                for item in gc.garbage
                if type(item).__module__.startswith("tether")
            }
        )
    finally:
        gc.set_debug(flags)
        gc.garbage.clear()
    return found


def test_concurrent_runs_leave_no_cyclic_garbage_whatever_their_outcome() -> None:
    """Runs that complete, fail (a model stream that raised) and are cancelled (the caller's
    signal), 30 of each side by side, leave nothing of tether's for the cycle collector once
    they have settled and the test dropped them (issue "Performance": the cost that grew
    faster than the number of concurrent runs was the collector's full passes)."""

    async def broken(request: object, signal: object) -> AsyncIterator[ModelChunk]:
        await asyncio.sleep(0)
        raise RuntimeError("the provider hung up")
        yield  # pragma: no cover - makes this an async generator

    async def one(kind: str) -> str:
        replies: list[object] = [
            tool_call_reply(("add", {"left": n, "right": 1})) for n in range(3)
        ]
        replies.append(text_reply("done"))
        controller = AbortController()
        stream = run_agent_loop(
            messages=[user_message(id="user-001", content="go")],
            model=ScriptedModel([broken] if kind == "failed" else replies),  # pyright: ignore[reportArgumentType] - a factory or the replies
            tools=ToolRegistry([add]),
            max_steps=4,
            signal=controller.signal,
        )
        async for event in stream:
            if kind == "cancelled" and event.type == "tool.started":
                controller.abort("stop")
        return (await stream.result).status

    async def scenario() -> list[str]:
        gc.collect()  # what earlier tests left for the collector is not this test's
        with collector_off():
            kinds = ["completed", "failed", "cancelled"] * 30
            statuses = await asyncio.gather(*(one(kind) for kind in kinds))
            assert statuses == kinds
            return _tether_garbage()

    assert run_async(scenario) == []


def test_the_garbage_probe_finds_a_cycle_of_tethers_objects() -> None:
    """The probe above can fail: a stream tied into a cycle is found."""
    from tether import EventStream

    gc.collect()
    with collector_off():
        stream: EventStream[object, object] = EventStream()
        stream.on_abandon(stream.take_finished)  # the bound callback refers back to the stream
        del stream
        assert _tether_garbage() == ["EventStream"]
