"""``relaxed_cycle_collector``: the opt-in knob for thousands of runs in flight.

It raises the cycle collector's thresholds only while active and restores the exact ones it
found (also when the body raises, and when nested); tether never changes them by itself
(importing it or running a run leaves ``gc.get_threshold()`` alone); and under it many
concurrent runs see fewer full collections (counted through ``gc.callbacks``, not timed).
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import subprocess
import sys
from collections.abc import Generator
from pathlib import Path

import pytest

import tether
from support import run_async
from tether.loop import relaxed_cycle_collector
from tether.protocol.transcript import user_message

ROOT = Path(__file__).resolve().parents[2]
CPYTHON_DEFAULTS = (700, 10, 10)


@pytest.fixture(autouse=True)
def known_thresholds() -> Generator[tuple[int, int, int]]:
    """Each test starts from thresholds no default equals, and the process gets its own back."""
    saved = gc.get_threshold()
    gc.set_threshold(123, 4, 5)
    try:
        yield (123, 4, 5)
    finally:
        gc.set_threshold(*saved)


def test_it_raises_the_first_threshold_while_active_and_restores_all_three() -> None:
    with relaxed_cycle_collector() as inside:
        assert inside == (12300, 4, 5)
        assert gc.get_threshold() == (12300, 4, 5)
    assert gc.get_threshold() == (123, 4, 5)


def test_the_factor_is_the_callers() -> None:
    with relaxed_cycle_collector(3):
        assert gc.get_threshold() == (369, 4, 5)
    assert gc.get_threshold() == (123, 4, 5)


def test_it_restores_the_thresholds_when_the_body_raises() -> None:
    with pytest.raises(RuntimeError, match="the batch failed"), relaxed_cycle_collector():
        raise RuntimeError("the batch failed")
    assert gc.get_threshold() == (123, 4, 5)


def test_nested_uses_restore_what_each_found() -> None:
    with relaxed_cycle_collector(2):
        with relaxed_cycle_collector(5):
            assert gc.get_threshold() == (1230, 4, 5)
        assert gc.get_threshold() == (246, 4, 5)
    assert gc.get_threshold() == (123, 4, 5)


def test_thresholds_set_inside_are_undone_on_exit() -> None:
    with relaxed_cycle_collector():
        gc.set_threshold(1, 1, 1)
    assert gc.get_threshold() == (123, 4, 5)


def test_collection_switched_off_by_a_zero_threshold_stays_off() -> None:
    gc.set_threshold(0, 4, 5)
    with relaxed_cycle_collector():
        assert gc.get_threshold() == (0, 4, 5)
    assert gc.get_threshold() == (0, 4, 5)


@pytest.mark.parametrize("factor", [0, -1, 2.5, True, "10"])
def test_a_factor_that_is_not_a_positive_integer_is_refused(factor: object) -> None:
    refused = pytest.raises(TypeError, match="factor must be an integer of at least 1")
    with refused, relaxed_cycle_collector(factor):  # pyright: ignore[reportArgumentType] - on purpose
        pass
    assert gc.get_threshold() == (123, 4, 5)


def test_it_works_inside_a_coroutine_around_the_runs() -> None:
    seen: list[tuple[int, int, int]] = []

    async def scenario() -> None:
        with relaxed_cycle_collector():
            seen.append(gc.get_threshold())
            statuses = await asyncio.gather(*(_one_run() for _ in range(5)))
            assert statuses == ["completed"] * 5
        seen.append(gc.get_threshold())

    run_async(scenario)
    assert seen == [(12300, 4, 5), (123, 4, 5)]


def test_a_run_leaves_the_thresholds_as_it_found_them() -> None:
    enabled = gc.isenabled()

    async def scenario() -> None:
        assert await asyncio.gather(_one_run(), _one_run()) == ["completed", "completed"]

    run_async(scenario)
    assert gc.get_threshold() == (123, 4, 5)
    assert gc.isenabled() == enabled


@tether.tool
async def add(left: int, right: int) -> int:
    """Add two integers after one turn of the event loop (as I/O would)."""
    await asyncio.sleep(0)
    return left + right


async def _one_run() -> str:
    """One 4-step run (3 tool turns and a text answer) whose tool gives way once per call."""
    replies = [tether.tool_call_reply(("add", {"left": n, "right": 1})) for n in range(3)]
    replies.append(tether.text_reply("done"))
    stream = tether.run_agent_loop(
        messages=[user_message(id="user-001", content="go")],
        model=tether.ScriptedModel(replies),
        tools=tether.ToolRegistry([add]),
        max_steps=4,
        signal=tether.AbortController().signal,
    )
    async for _ in stream:
        pass
    return (await stream.result).status


_IMPORT_AND_RUN = """
import asyncio, gc, json, sys
gc.set_threshold(123, 4, 5)
import tether, tether.loop
for name in tether.__all__:
    getattr(tether, name)  # the root is lazy: this imports every module it names
from tether import AbortController, ScriptedModel, ToolRegistry, run_agent_loop, text_reply
from tether.protocol.transcript import user_message

async def main():
    stream = run_agent_loop(
        messages=[user_message(id="user-001", content="go")],
        model=ScriptedModel([text_reply("done")]),
        tools=ToolRegistry([]),
        max_steps=1,
        signal=AbortController().signal,
    )
    return (await stream.result).status

status = asyncio.run(main())
print(json.dumps({"status": status, "threshold": gc.get_threshold(), "enabled": gc.isenabled()}))
"""


def _python(code: str, *args: str) -> dict[str, object]:
    completed = subprocess.run(
        [sys.executable, "-W", "error", "-c", code, *args],
        cwd=ROOT,
        env=_plain_env(),
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return json.loads(completed.stdout)


def _plain_env() -> dict[str, str]:
    """The suite's environment without asyncio's debug mode, whose bookkeeping (a traceback per
    task and handle) would be most of the objects in flight."""
    drop = {"PYTHONASYNCIODEBUG", "PYTHONDEVMODE"}
    return {key: value for key, value in os.environ.items() if key not in drop}


@pytest.mark.slow
def test_importing_tether_and_running_a_run_never_changes_the_collector() -> None:
    found = _python(_IMPORT_AND_RUN)
    assert found == {"status": "completed", "threshold": [123, 4, 5], "enabled": True}


_COUNT_FULL_PASSES = """
import asyncio, gc, json, sys
sys.path[:0] = ["tests/loop", "tests"]
from test_collector import _one_run
from tether.loop import relaxed_cycle_collector

async def main(count):
    return await asyncio.gather(*(_one_run() for _ in range(count)))

full_passes = 0

def count_full_passes(phase, info):
    global full_passes
    full_passes += phase == "start" and info["generation"] == 2

count, relaxed = int(sys.argv[1]), sys.argv[2] == "relaxed"
gc.set_threshold(*json.loads(sys.argv[3]))
gc.callbacks.append(count_full_passes)
if relaxed:
    with relaxed_cycle_collector():
        statuses = asyncio.run(main(count))
else:
    statuses = asyncio.run(main(count))
gc.callbacks.remove(count_full_passes)
print(json.dumps({"statuses": sorted(set(statuses)), "full_passes": full_passes}))
"""


@pytest.mark.slow
def test_many_concurrent_runs_see_fewer_full_collections_under_it() -> None:
    def full_passes(mode: str) -> int:
        found = _python(_COUNT_FULL_PASSES, "3000", mode, json.dumps(CPYTHON_DEFAULTS))
        assert found["statuses"] == ["completed"]
        passes = found["full_passes"]
        assert isinstance(passes, int)
        return passes

    plain, relaxed = full_passes("plain"), full_passes("relaxed")
    assert plain >= 2, "3,000 runs in flight should need full passes at CPython's defaults"
    assert relaxed < plain
