"""``RequestWatch``: one request's deadlines and abort, enforced in the request's own task.

The deadline tests use short real intervals (they are about time); the others coordinate with
futures. What they pin down: an abort or a deadline interrupts only a guarded await and
becomes the abort reason or a ``PROVIDER_TIMEOUT`` naming the deadline; one that comes
between guarded awaits is raised by the next one; a cancellation from outside always wins;
moving the deadline on (an event arrived) re-arms the one timer instead of firing; an
awaitable never awaited is disposed of without a warning."""

from __future__ import annotations

import asyncio
import time

import pytest

from tether import AbortController, AbortError
from tether.providers._watch import DeadlineKind, RequestWatch
from tether.providers.errors import ProviderError


async def never() -> None:
    await asyncio.get_running_loop().create_future()


def not_cancelling() -> bool:
    """The current task carries no cancellation request the watch left behind."""
    task = asyncio.current_task()
    assert task is not None
    return task.cancelling() == 0


async def test_an_abort_interrupts_a_guarded_wait_with_its_reason() -> None:
    controller = AbortController()
    watch = RequestWatch(controller.signal, None)
    loop = asyncio.get_running_loop()
    loop.call_soon(controller.abort, ValueError("stop"))
    with pytest.raises(ValueError, match="stop"):
        await watch.wait(never())
    assert not_cancelling()
    watch.close()


async def test_an_abort_between_guarded_waits_is_raised_by_the_next_one() -> None:
    controller = AbortController()
    watch = RequestWatch(controller.signal, None)
    controller.abort("gone")
    awaitable = never()
    with pytest.raises(AbortError):
        await watch.wait(awaitable)  # disposed of: no "never awaited" warning
    with pytest.raises(AbortError):
        watch.enter()
    watch.close()


async def test_a_signal_aborted_before_the_watch_starts_is_raised_at_once() -> None:
    controller = AbortController()
    controller.abort(KeyError("early"))
    watch = RequestWatch(controller.signal, None)
    with pytest.raises(KeyError):
        watch.enter()
    watch.close()


@pytest.mark.parametrize(
    ("kind", "words"),
    [("first_byte", "of sending"), ("idle", "No event"), ("drain", "did not end")],
)
async def test_a_deadline_that_passes_is_a_timeout_naming_it(
    kind: DeadlineKind, words: str
) -> None:
    watch = RequestWatch(AbortController().signal, None)
    watch.expect(0.05, kind)
    with pytest.raises(ProviderError) as caught:
        await watch.wait(never())
    assert caught.value.code == "PROVIDER_TIMEOUT"
    assert words in caught.value.message
    assert "0.05 s" in caught.value.message
    watch.close()


async def test_the_total_deadline_caps_every_other_one() -> None:
    watch = RequestWatch(AbortController().signal, 0.05)
    watch.expect(60, "idle")
    started = time.monotonic()
    with pytest.raises(ProviderError) as caught:
        await watch.wait(never())
    assert time.monotonic() - started < 5
    assert "total deadline of 0.05 s" in caught.value.message
    watch.close()


async def test_moving_the_deadline_on_re_arms_the_timer_instead_of_firing() -> None:
    """Progress every 20 ms with a 60 ms idle deadline never times out; then silence does."""
    watch = RequestWatch(AbortController().signal, None)
    watch.expect(0.06, "idle")
    started = time.monotonic()
    for _ in range(8):
        await watch.wait(asyncio.sleep(0.02))
        watch.expect(0.06, "idle")
    assert time.monotonic() - started >= 0.16  # longer than the deadline, in small steps
    with pytest.raises(ProviderError, match=r"No event from the server for 0\.06 s"):
        await watch.wait(never())
    watch.close()


async def test_no_deadline_but_the_total_one_while_nothing_is_expected() -> None:
    watch = RequestWatch(AbortController().signal, None)
    watch.expect(0.01, "first_byte")
    watch.expect_nothing()
    assert await watch.wait(asyncio.sleep(0.05, "slept")) == "slept"
    watch.close()


async def test_a_deadline_passing_between_guarded_waits_is_raised_by_the_next_one() -> None:
    watch = RequestWatch(AbortController().signal, None)
    watch.expect(0.01, "idle")
    await asyncio.sleep(0.05)  # not guarded: nothing is interrupted
    with pytest.raises(ProviderError, match="No event"):
        watch.enter()
    watch.close()


async def test_a_cancellation_from_outside_wins_over_the_watch() -> None:
    controller = AbortController()
    started = asyncio.Event()

    async def guarded() -> None:
        watch = RequestWatch(controller.signal, None)
        try:
            started.set()
            await watch.wait(never())
        finally:
            watch.close()

    task = asyncio.create_task(guarded())
    await started.wait()
    controller.abort("the watch's own reason")  # the watch cancels the task...
    task.cancel()  # ...and so does someone else
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_an_await_that_swallows_the_cancellation_still_ends_with_the_watch_error() -> None:
    controller = AbortController()
    watch = RequestWatch(controller.signal, None)
    future: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def stubborn() -> str:
        try:
            await future
        except asyncio.CancelledError:
            return "swallowed"
        return "finished"

    asyncio.get_running_loop().call_soon(controller.abort, "stop")
    with pytest.raises(AbortError):
        await watch.wait(stubborn())
    assert not_cancelling()
    watch.close()


async def test_an_error_of_the_awaited_work_passes_through() -> None:
    watch = RequestWatch(AbortController().signal, None)

    async def failing() -> None:
        raise OSError("network")

    with pytest.raises(OSError, match="network"):
        await watch.wait(failing())
    watch.close()


async def test_a_watch_needs_a_task() -> None:
    loop = asyncio.get_running_loop()
    outcome: asyncio.Future[BaseException] = loop.create_future()

    def outside_any_task() -> None:
        try:
            RequestWatch(AbortController().signal, None)
        except RuntimeError as error:
            outcome.set_result(error)

    loop.call_soon(outside_any_task)
    assert "task" in str(await outcome)
