"""Helpers shared by the tests: the async runner that enforces the loop rules."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Callable, Coroutine
from typing import Any


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
