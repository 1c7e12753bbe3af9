"""``race_eagerly`` (and ``RacedIterator.ready``) against the plain path, ``race``.

``race_eagerly`` takes the first step of an awaitable at once and hands back either its value
or a ``Started`` to finish with ``await started.race()``. For any awaitable (one that returns
at once, raises, yields a bare ``None``, waits on a future, aborts the signal from inside),
both paths must give the same value or the same exception, after the same number of event-loop
turns, and report abandonment the same way.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any, Literal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from support import run_async
from tether import AbortController, AbortError
from tether._async.race import _ASEND, Started, _steps_of, race, race_eagerly, wait_out  # pyright: ignore[reportPrivateUsage]
from tether._async.race_iterator import RacedIterator
from tether._base.exact_types import await_steps

Action = Literal["return", "raise", "stop", "yield", "wait", "abort", "raw-abort"]
ACTIONS = st.sampled_from(["return", "raise", "stop", "yield", "wait", "abort", "raw-abort"])


class Problem(Exception):
    """What a scripted awaitable raises."""


def settle(future: asyncio.Future[None]) -> None:
    if not future.done():  # an abandoned wait was cancelled
        future.set_result(None)


async def scripted(actions: list[Action], controller: AbortController, value: int) -> int:
    """Runs ``actions`` in order; the first that ends the awaitable decides its outcome."""
    loop = asyncio.get_running_loop()
    for action in actions:
        if action == "return":
            return value
        if action == "raise":
            raise Problem(value)
        if action == "stop":
            raise StopAsyncIteration
        if action == "yield":
            await asyncio.sleep(0)
        elif action == "wait":
            future: asyncio.Future[None] = loop.create_future()
            loop.call_soon(settle, future)
            await future
        elif action == "abort":
            controller.abort("stop now")
        else:
            reason = KeyboardInterrupt("raw")
            controller.abort(reason)
            raise reason
    return -value


def summary(outcome: object) -> object:
    """An outcome to compare: values as they are, exceptions by type and text."""
    if isinstance(outcome, BaseException):
        reason = getattr(outcome, "reason", None)
        return (type(outcome).__name__, str(outcome), type(reason).__name__)
    return outcome


async def through(plain: bool, actions: list[Action], value: int) -> tuple[object, int, list[bool]]:
    """The outcome of racing the scripted awaitable, the loop turns it took, and what
    ``on_abandoned`` reported."""
    controller = AbortController()
    reports: list[bool] = []
    turns = 0
    stop = asyncio.Event()

    async def count() -> None:
        nonlocal turns
        while not stop.is_set():
            turns += 1
            await asyncio.sleep(0)

    counter = asyncio.get_running_loop().create_task(count())
    await asyncio.sleep(0)
    outcome: object
    try:
        work = scripted(actions, controller, value)
        if plain:
            outcome = await race(controller.signal, work, reports.append)
        else:
            first = race_eagerly(controller.signal, work, reports.append)
            outcome = await first.race() if type(first) is Started else first
    except BaseException as error:  # every outcome is compared, KeyboardInterrupt included
        outcome = error
    stop.set()
    await counter
    await asyncio.sleep(0)  # let abandoned work settle in the background
    await asyncio.sleep(0)
    return summary(outcome), turns, reports


@given(actions=st.lists(ACTIONS, max_size=6), value=st.integers(0, 9))
def test_race_eagerly_matches_race_on_any_awaitable(actions: list[Action], value: int) -> None:
    async def both() -> None:
        plain = await through(True, actions, value)
        eager = await through(False, actions, value)
        assert eager == plain

    run_async(both)


def test_a_value_ready_at_once_needs_no_await() -> None:
    async def ready() -> int:
        return 7

    async def check() -> None:
        assert race_eagerly(AbortController().signal, ready()) == 7

    run_async(check)


def test_an_aborted_signal_wins_before_the_first_step() -> None:
    ran: list[bool] = []

    async def work() -> None:
        ran.append(True)

    async def check() -> None:
        controller = AbortController()
        controller.abort("gone")
        with pytest.raises(AbortError) as caught:
            race_eagerly(controller.signal, work())
        assert caught.value.reason == "gone"
        assert ran == []

    run_async(check)


async def generator(actions: list[Action], controller: AbortController) -> AsyncIterator[int]:
    for index, action in enumerate(actions):
        if action == "return":
            yield index
        elif action == "stop":
            return
        else:
            yield await scripted([action, "return"], controller, index)


class Wrapped:
    """An async iterator that is not an async generator: ``ready()`` takes its general path."""

    def __init__(self, inner: AsyncIterator[int]) -> None:
        self.inner = inner

    def __aiter__(self) -> Wrapped:
        return self

    def __anext__(self) -> Any:
        return self.inner.__anext__()

    async def aclose(self) -> None:
        await self.inner.aclose()  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType]


async def drain(
    ready: bool, actions: list[Action], *, wrapped: bool = False
) -> tuple[list[object], object]:
    controller = AbortController()
    iterator: AsyncIterator[int] = generator(actions, controller)
    if wrapped:
        iterator = Wrapped(iterator)
    source: RacedIterator[int] = RacedIterator(iterator, controller.signal)
    items: list[object] = []
    end: object = None
    pending = object()
    try:
        while True:
            if ready:
                item = source.ready(pending)
                if item is pending:
                    item = await source.next()
            else:
                item = await source.next()
            items.append(item)
    except BaseException as error:  # the end, a failure or an abort: compared below
        end = summary(error)
    source.close()
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    return items, end


@given(actions=st.lists(ACTIONS, max_size=6))
def test_ready_then_next_matches_next_alone(actions: list[Action]) -> None:
    async def both() -> None:
        assert await drain(True, actions) == await drain(False, actions)

    run_async(both)


@given(actions=st.lists(ACTIONS, max_size=6))
def test_ready_on_an_async_generator_matches_the_general_path(actions: list[Action]) -> None:
    """``ready()`` steps an async generator itself (its fast path); any other iterator goes
    through ``race_eagerly``: the same items, the same end."""

    async def both() -> None:
        assert await drain(True, actions) == await drain(True, actions, wrapped=True)

    run_async(both)


def test_closing_after_a_suspended_ready_step_abandons_it() -> None:
    closed: list[bool] = []

    async def waits() -> AsyncIterator[int]:
        try:
            await asyncio.sleep(0)
            yield 1
        finally:
            closed.append(True)

    async def check() -> None:
        source: RacedIterator[int] = RacedIterator(waits(), AbortController().signal)
        pending: Any = object()
        assert source.ready(pending) is pending
        source.close()
        for _ in range(3):
            await asyncio.sleep(0)
        assert closed == [True]

    run_async(check)


# --- an async generator's step is its own ``await_steps`` (``_steps_of``'s shortcut) ---------


def test_the_async_generator_step_class_is_final() -> None:
    with pytest.raises(TypeError):
        type("Sub", (_ASEND,), {})


@given(actions=st.lists(ACTIONS, max_size=6))
def test_an_async_generator_step_is_its_own_await_steps(actions: list[Action]) -> None:
    async def check() -> None:
        generator_: Any = generator(actions, AbortController())
        step: Any = generator_.__anext__()
        assert type(step) is _ASEND
        assert _steps_of(step) is await_steps(step) is step
        step.close()
        await generator_.aclose()

    run_async(check)


PLAIN_ACTIONS = st.sampled_from(["return", "raise", "stop", "yield", "wait"])


async def awaited_directly(actions: list[Action]) -> tuple[list[object], object]:
    """What ``await __anext__()`` gives, step after step, with no race at all."""
    iterator: Any = generator(actions, AbortController())
    items: list[object] = []
    end: object = None
    try:
        while True:
            items.append(await iterator.__anext__())
    except BaseException as error:
        end = summary(error)
    await iterator.aclose()
    return items, end


@given(actions=st.lists(PLAIN_ACTIONS, max_size=6), ready=st.booleans())
def test_racing_an_async_generator_gives_what_awaiting_it_gives(
    actions: list[Action], ready: bool
) -> None:
    async def both() -> None:
        assert await drain(ready, actions) == await awaited_directly(actions)

    run_async(both)


def test_wait_out_outlasts_a_cancellation_and_says_whether_there_was_one() -> None:
    async def check() -> None:
        loop = asyncio.get_running_loop()
        done: asyncio.Future[int] = loop.create_future()
        done.set_result(1)
        assert await wait_out(done) is False

        work: asyncio.Future[int] = loop.create_future()
        waiting: asyncio.Future[None] = loop.create_future()

        async def waiter() -> bool:
            waiting.set_result(None)
            return await wait_out(work)

        task = asyncio.ensure_future(waiter())
        await waiting  # the task ran on into wait_out, where it now waits for ``work``
        task.cancel()
        cancelled: asyncio.Future[None] = loop.create_future()
        loop.call_soon(cancelled.set_result, None)
        await cancelled  # the cancellation reached the task, which waits again
        assert not task.done()
        work.set_result(2)
        assert await task is True
        assert not work.cancelled()

    run_async(check)
