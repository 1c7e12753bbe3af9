"""Helpers shared by the tests: the async runner that enforces the loop rules."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Callable, Coroutine
from typing import Any

from tether import EventStream


class LoopProblems(AssertionError):
    """An async test left tasks running or triggered the loop's exception handler."""


def run_async(test: Callable[..., Coroutine[Any, Any, Any]], /, **kwargs: Any) -> Any:
    """Run ``test(**kwargs)`` on a fresh debug loop and enforce the harness rules."""
    reports: list[dict[str, Any]] = []
    with asyncio.Runner(debug=True) as runner:
        loop = runner.get_loop()
        loop.set_exception_handler(lambda _loop, context: reports.append(context))
        outcome = runner.run(_checked(test, kwargs))
        gc.collect()
        runner.run(asyncio.sleep(0))
    if reports:
        details = "; ".join(str(report.get("message") or report) for report in reports)
        raise LoopProblems(f"event loop reported problems: {details}")
    return outcome


async def _checked(test: Callable[..., Coroutine[Any, Any, Any]], kwargs: dict[str, Any]) -> Any:
    outcome = await test(**kwargs)
    current = asyncio.current_task()
    leftovers = [task for task in asyncio.all_tasks() if task is not current]
    if leftovers:
        for task in leftovers:
            task.cancel()
        await asyncio.gather(*leftovers, return_exceptions=True)
        raise LoopProblems(f"test left {len(leftovers)} task(s) pending: {leftovers!r}")
    return outcome


async def turns(count: int = 5) -> None:
    """Let the event loop run ``count`` times (zero-second yields, never a timed sleep)."""
    for _ in range(count):
        await asyncio.sleep(0)


async def settle(stream: EventStream[Any, Any], turns: int = 20) -> None:
    """Fail (rather than hang) unless the stream settles within a few loop turns."""
    for _ in range(turns):
        if stream.settled:
            return
        await asyncio.sleep(0)
    assert stream.settled, "the stream did not settle"


class Impostor:
    """A non-``str`` key that hashes like a real field name and claims to equal anything."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __hash__(self) -> int:
        return hash(self.name)

    def __eq__(self, other: object) -> bool:
        return True
