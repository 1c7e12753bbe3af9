"""The two async helpers the agent layers share: ``adopt_nested`` (a callback's result
adopted through nested awaitables, bounded, cycles optional) and ``Release`` (an ordered
release that attempts every step and keeps every failure in order)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Generator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tether._async.adoption import adopt_nested
from tether._async.release import Release


async def chain(levels: int, value: object) -> object:
    """The outermost of ``levels`` (at least 1) nested coroutines around ``value``."""
    if levels == 1:
        return value
    return chain(levels - 1, value)


class Deep(Exception):
    """The error ``too_deep`` returns in these tests."""


class Cycle(Exception):
    """The error ``cycle`` returns in these tests."""


class SelfAwaiting:
    """An awaitable that gives itself back."""

    def __await__(self) -> Generator[Any, Any, Any]:
        yield from ()
        return self


def disposing(left: list[object]) -> Any:
    def too_deep(awaitable: Awaitable[Any]) -> Deep:
        left.append(awaitable)
        if asyncio.iscoroutine(awaitable):
            awaitable.close()
        return Deep()

    return too_deep


@given(levels=st.integers(0, 12), max_depth=st.integers(0, 12))
def test_a_chain_is_adopted_iff_it_nests_at_most_max_depth_levels(
    levels: int, max_depth: int
) -> None:
    left: list[object] = []
    value = chain(levels, "done") if levels else "done"

    async def adopt() -> object:
        return await adopt_nested(value, max_depth=max_depth, too_deep=disposing(left))

    if levels <= max_depth:
        assert asyncio.run(adopt()) == "done"
        assert left == []
    else:
        with pytest.raises(Deep):
            asyncio.run(adopt())
        assert len(left) == 1  # the awaitable left over, never awaited


async def test_each_level_is_awaited_by_await_level_with_its_number() -> None:
    levels: list[int] = []

    async def await_level(awaitable: Awaitable[Any], level: int) -> object:
        levels.append(level)
        return await awaitable

    result = await adopt_nested(
        chain(3, 42), max_depth=5, too_deep=disposing([]), await_level=await_level
    )
    assert (result, levels) == (42, [1, 2, 3])


async def test_a_cycle_is_an_error_only_when_cycles_are_checked() -> None:
    with pytest.raises(Cycle):
        await adopt_nested(SelfAwaiting(), max_depth=8, too_deep=disposing([]), cycle=Cycle)
    left: list[object] = []
    with pytest.raises(Deep):
        await adopt_nested(SelfAwaiting(), max_depth=8, too_deep=disposing(left))
    assert len(left) == 1


class Stop(BaseException):
    """A bare ``BaseException`` a step raises."""


def step(log: list[str], name: str, error: BaseException | None = None) -> Any:
    async def run() -> None:
        log.append(name)
        if error is not None:
            raise error

    return run


async def test_every_step_runs_and_every_failure_is_kept_in_order() -> None:
    log: list[str] = []
    first, second = ValueError("a"), OSError("b")

    def raises_before_its_awaitable() -> Awaitable[object]:
        log.append("sync")
        raise second

    release = Release()
    for attempt in (step(log, "1", first), step(log, "2"), raises_before_its_awaitable):
        assert await release.attempt(attempt) is None
    assert log == ["1", "2", "sync"]
    assert release.failures == [first, second]
    assert release.escaping is None


async def test_a_bare_base_exception_propagates_at_once_unless_held() -> None:
    log: list[str] = []
    release = Release()
    with pytest.raises(Stop):
        await release.attempt(step(log, "1", Stop()))
    assert release.failures == []
    held = Release(hold=True)
    stop, cancelled, failure = Stop(), asyncio.CancelledError(), ValueError()
    results = [
        await held.attempt(step(log, name, error))
        for name, error in (("2", stop), ("3", cancelled), ("4", failure))
    ]
    assert results == [stop, cancelled, None]
    assert held.escaping is stop  # the first one
    assert held.failures == [failure]
    assert log == ["1", "2", "3", "4"]


async def test_a_step_cancelling_itself_is_a_failure_with_cancelled() -> None:
    made = RuntimeError("cleanup was cancelled")
    release = Release(cancelled=lambda: made)
    await release.attempt(step([], "1", asyncio.CancelledError()))
    assert release.failures == [made]
    with pytest.raises(asyncio.CancelledError):
        await Release().attempt(step([], "2", asyncio.CancelledError()))


async def test_the_tasks_own_cancellation_always_propagates() -> None:
    started = asyncio.Event()
    release = Release(cancelled=lambda: RuntimeError("cleanup was cancelled"))

    async def waits() -> None:
        started.set()
        await asyncio.Event().wait()

    task = asyncio.ensure_future(release.attempt(waits))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert release.failures == []
