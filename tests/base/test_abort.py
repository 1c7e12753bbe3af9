"""``tether.abort``: cancellation as data (DESIGN.md, "Cancellation").

Everything is coordinated with events and futures: no test sleeps for a positive time.
"""

from __future__ import annotations

import asyncio
import pickle
from collections.abc import Callable, Generator
from contextlib import contextmanager
from typing import Any

import pytest

from tether._base.tether_error import TetherError
from tether.abort import AbortController, AbortError, AbortSignal


def _listener_count(signal: AbortSignal) -> int | None:
    """How many listeners are registered (``None`` once the signal has aborted)."""
    listeners = signal._listeners  # pyright: ignore[reportPrivateUsage]
    return None if listeners is None else len(listeners)


class Custom(Exception):
    pass


class CustomBase(BaseException):
    pass


# --- AbortError -----------------------------------------------------------------------------


def test_abort_error_defaults() -> None:
    error = AbortError()
    assert isinstance(error, Exception)
    assert isinstance(error, TetherError)
    assert error.name == "AbortError"
    assert error.code == "ABORTED"
    assert error.message == "This operation was aborted"
    assert str(error) == "This operation was aborted"
    assert error.reason is None


def test_abort_error_carries_a_message_and_a_reason() -> None:
    error = AbortError("stopped", reason={"why": "user"})
    assert str(error) == "stopped"
    assert error.reason == {"why": "user"}
    assert error.code == "ABORTED"


@pytest.mark.parametrize("attribute", ["code", "name", "message"])
def test_abort_error_code_name_and_message_are_read_only(attribute: str) -> None:
    error = AbortError()
    before = getattr(error, attribute)
    with pytest.raises(AttributeError):
        setattr(error, attribute, "changed")
    assert getattr(error, attribute) == before


@pytest.mark.parametrize(
    "error",
    [AbortError(), AbortError("custom message"), AbortError(reason="because")],
    ids=["default", "message", "reason"],
)
def test_abort_error_pickles(error: AbortError) -> None:
    restored = pickle.loads(pickle.dumps(error))
    assert type(restored) is AbortError
    assert (restored.code, restored.name, str(restored), restored.reason, restored.args) == (
        error.code,
        error.name,
        str(error),
        error.reason,
        error.args,
    )


# --- controller and signal state ------------------------------------------------------------


def test_a_fresh_signal_is_not_aborted() -> None:
    signal = AbortController().signal
    assert signal.aborted is False
    assert signal.reason is None
    assert signal.throw_if_aborted() is None


def test_the_controller_always_returns_the_same_signal() -> None:
    controller = AbortController()
    assert controller.signal is controller.signal
    assert isinstance(controller.signal, AbortSignal)


def test_default_reason_is_an_abort_error() -> None:
    controller = AbortController()
    controller.abort()
    reason = controller.signal.reason
    assert controller.signal.aborted is True
    assert isinstance(reason, AbortError)
    assert (reason.name, reason.code, str(reason)) == (
        "AbortError",
        "ABORTED",
        "This operation was aborted",
    )
    assert controller.signal.reason is reason


@pytest.mark.parametrize("reason", ["user pressed stop", 0, False, Custom("x"), ["list"]], ids=repr)
def test_the_first_abort_wins(reason: object) -> None:
    controller = AbortController()
    controller.abort(reason)
    controller.abort("second")
    controller.abort()
    assert controller.signal.reason is reason


def test_a_later_reason_does_not_replace_the_default_one() -> None:
    controller = AbortController()
    controller.abort()
    first = controller.signal.reason
    controller.abort("later")
    assert controller.signal.reason is first


def test_throw_if_aborted_raises_the_very_exception_reason() -> None:
    controller = AbortController()
    reason = Custom("boom")
    controller.abort(reason)
    with pytest.raises(Custom) as caught:
        controller.signal.throw_if_aborted()
    assert caught.value is reason


def test_throw_if_aborted_raises_a_base_exception_reason_as_is() -> None:
    controller = AbortController()
    reason = CustomBase("stop now")
    controller.abort(reason)
    with pytest.raises(CustomBase) as caught:
        controller.signal.throw_if_aborted()
    assert caught.value is reason


def test_throw_if_aborted_raises_the_default_abort_error_object() -> None:
    controller = AbortController()
    controller.abort()
    with pytest.raises(AbortError) as caught:
        controller.signal.throw_if_aborted()
    assert caught.value is controller.signal.reason


@pytest.mark.parametrize(
    "reason", ["a string", 42, {"why": "user"}, Custom], ids=["str", "int", "dict", "class"]
)
def test_throw_if_aborted_wraps_a_non_exception_reason(reason: object) -> None:
    controller = AbortController()
    controller.abort(reason)
    with pytest.raises(AbortError) as caught:
        controller.signal.throw_if_aborted()
    assert caught.value.reason is reason
    assert caught.value.code == "ABORTED"
    assert controller.signal.reason is reason


# --- listeners ------------------------------------------------------------------------------


def test_listeners_run_once_in_registration_order() -> None:
    controller = AbortController()
    calls: list[str] = []
    for name in ("first", "second", "third"):
        controller.signal.add_listener(lambda name=name: calls.append(name))
    assert calls == []
    controller.abort()
    controller.abort()
    assert calls == ["first", "second", "third"]


def test_listeners_see_the_signal_already_aborted_with_its_reason() -> None:
    controller = AbortController()
    seen: list[tuple[bool, object]] = []
    signal = controller.signal
    signal.add_listener(lambda: seen.append((signal.aborted, signal.reason)))
    controller.abort("why")
    assert seen == [(True, "why")]


def test_a_removed_listener_never_runs() -> None:
    controller = AbortController()
    calls: list[str] = []
    controller.signal.add_listener(lambda: calls.append("kept"))
    remove = controller.signal.add_listener(lambda: calls.append("removed"))
    remove()
    remove()  # removing twice is harmless
    controller.abort()
    assert calls == ["kept"]
    remove()  # and so is removing after the abort


def test_a_listener_removed_by_an_earlier_listener_during_abort_never_runs() -> None:
    controller = AbortController()
    calls: list[str] = []
    removers: list[Callable[[], None]] = []

    def first() -> None:
        calls.append("first")
        removers[0]()

    controller.signal.add_listener(first)
    removers.append(controller.signal.add_listener(lambda: calls.append("second")))
    controller.abort()
    assert calls == ["first"]


def test_a_listener_added_after_abort_never_runs() -> None:
    controller = AbortController()
    controller.abort()
    calls: list[str] = []
    remove = controller.signal.add_listener(lambda: calls.append("late"))
    controller.abort("again")
    remove()
    assert calls == []


def test_a_listener_added_during_abort_never_runs() -> None:
    controller = AbortController()
    calls: list[str] = []

    def register_more() -> None:
        calls.append("outer")
        controller.signal.add_listener(lambda: calls.append("inner"))

    controller.signal.add_listener(register_more)
    controller.abort()
    assert calls == ["outer"]


def test_a_listener_that_aborts_again_does_not_rerun_listeners() -> None:
    controller = AbortController()
    calls: list[str] = []

    def reenter() -> None:
        calls.append("reenter")
        controller.abort("inner reason")

    controller.signal.add_listener(reenter)
    controller.signal.add_listener(lambda: calls.append("after"))
    controller.abort("outer reason")
    assert calls == ["reenter", "after"]
    assert controller.signal.reason == "outer reason"


def test_without_a_loop_a_raising_listener_does_not_stop_later_listeners() -> None:
    controller = AbortController()
    calls: list[str] = []
    failure = Custom("listener failed")

    def explode() -> None:
        calls.append("explode")
        raise failure

    controller.signal.add_listener(lambda: calls.append("before"))
    controller.signal.add_listener(explode)
    controller.signal.add_listener(lambda: calls.append("after"))
    with pytest.raises(Custom) as caught:
        controller.abort()
    assert caught.value is failure
    assert calls == ["before", "explode", "after"]
    assert controller.signal.aborted


@contextmanager
def _captured_loop_errors() -> Generator[list[dict[str, Any]]]:
    """Replace the running loop's exception handler for the block (the harness fails a test
    whose handler fires), and restore the harness handler afterwards."""
    loop = asyncio.get_running_loop()
    previous = loop.get_exception_handler()
    reports: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _loop, context: reports.append(context))
    try:
        yield reports
    finally:
        loop.set_exception_handler(previous)


async def test_with_a_loop_a_raising_listener_is_reported_to_the_loop_handler() -> None:
    controller = AbortController()
    calls: list[str] = []
    failures = [Custom("first failure"), Custom("second failure")]

    def explode(index: int) -> Callable[[], None]:
        def listener() -> None:
            calls.append(f"explode-{index}")
            raise failures[index]

        return listener

    controller.signal.add_listener(explode(0))
    controller.signal.add_listener(lambda: calls.append("between"))
    controller.signal.add_listener(explode(1))
    controller.signal.add_listener(lambda: calls.append("after"))
    with _captured_loop_errors() as reports:
        controller.abort()
    assert calls == ["explode-0", "between", "explode-1", "after"]
    assert [report["exception"] for report in reports] == failures
    assert controller.signal.aborted


def test_a_base_exception_from_a_listener_is_not_swallowed() -> None:
    controller = AbortController()
    interrupt = CustomBase("interrupt")

    def interrupting() -> None:
        raise interrupt

    controller.signal.add_listener(interrupting)
    with pytest.raises(CustomBase) as caught:
        controller.abort()
    assert caught.value is interrupt
    assert controller.signal.aborted


# --- wait() -------------------------------------------------------------------------------


async def test_wait_is_released_by_abort() -> None:
    controller = AbortController()
    started = asyncio.Event()
    progress: list[str] = []

    async def waiter() -> str:
        started.set()
        await controller.signal.wait()
        progress.append("released")
        return "done"

    task = asyncio.create_task(waiter())
    await started.wait()
    await asyncio.sleep(0)
    assert not task.done()
    assert progress == []
    controller.abort()
    assert await task == "done"
    assert progress == ["released"]


async def test_wait_releases_every_waiter() -> None:
    controller = AbortController()
    ready = [asyncio.Event() for _ in range(3)]

    async def waiter(event: asyncio.Event) -> None:
        event.set()
        await controller.signal.wait()

    tasks = [asyncio.create_task(waiter(event)) for event in ready]
    for event in ready:
        await event.wait()
    assert _listener_count(controller.signal) == 3
    controller.abort(Custom("reason is not raised by wait"))
    assert await asyncio.gather(*tasks) == [None, None, None]


def test_wait_on_an_aborted_signal_returns_without_suspending() -> None:
    controller = AbortController()
    controller.abort()
    coroutine = controller.signal.wait()
    with pytest.raises(StopIteration):
        coroutine.send(None)  # completes on its first step, no event loop needed


async def test_wait_on_an_aborted_signal_returns_immediately() -> None:
    controller = AbortController()
    controller.abort("already")
    assert await controller.signal.wait() is None


async def test_a_cancelled_wait_leaves_no_listener_behind() -> None:
    controller = AbortController()
    signal = controller.signal
    started = asyncio.Event()

    async def waiter() -> None:
        started.set()
        await signal.wait()

    task = asyncio.create_task(waiter())
    await started.wait()
    assert _listener_count(signal) == 1
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert _listener_count(signal) == 0
    calls: list[str] = []
    signal.add_listener(lambda: calls.append("still works"))
    controller.abort()
    assert calls == ["still works"]
    assert signal.aborted


# --- AbortSignal.any ------------------------------------------------------------------------


def test_any_aborts_with_the_first_sources_reason() -> None:
    first = AbortController()
    second = AbortController()
    combined = AbortSignal.any([first.signal, second.signal])
    assert not combined.aborted
    reason = Custom("second went first")
    second.abort(reason)
    assert combined.aborted
    assert combined.reason is reason
    first.abort("too late")
    assert combined.reason is reason


def test_any_forwards_the_default_reason_object() -> None:
    source = AbortController()
    combined = AbortSignal.any([source.signal])
    source.abort()
    assert combined.reason is source.signal.reason
    assert isinstance(combined.reason, AbortError)


def test_any_runs_its_own_listeners_when_a_source_aborts() -> None:
    source = AbortController()
    combined = AbortSignal.any([AbortController().signal, source.signal])
    calls: list[object] = []
    combined.add_listener(lambda: calls.append(combined.reason))
    source.abort("go")
    source.abort("again")
    assert calls == ["go"]


def test_any_is_pre_aborted_when_a_source_already_is() -> None:
    pending = AbortController()
    aborted = AbortController()
    aborted.abort("early")
    combined = AbortSignal.any([pending.signal, aborted.signal])
    assert combined.aborted
    assert combined.reason == "early"
    assert _listener_count(pending.signal) == 0


def test_any_takes_the_first_aborted_source_in_order() -> None:
    a = AbortController()
    b = AbortController()
    a.abort("A")
    b.abort("B")
    assert AbortSignal.any([b.signal, a.signal]).reason == "B"
    assert AbortSignal.any([a.signal, b.signal]).reason == "A"


def test_any_detaches_from_the_other_sources_once_aborted() -> None:
    first = AbortController()
    second = AbortController()
    AbortSignal.any([first.signal, second.signal])
    assert _listener_count(first.signal) == 1
    second.abort()
    assert _listener_count(first.signal) == 0


def test_any_accepts_any_iterable_and_no_sources() -> None:
    source = AbortController()
    combined = AbortSignal.any(signal for signal in [source.signal])
    source.abort("from a generator")
    assert combined.reason == "from a generator"
    assert not AbortSignal.any([]).aborted


@pytest.mark.parametrize("bad", [None, "signal", AbortController()], ids=repr)
def test_any_rejects_non_signals(bad: object) -> None:
    with pytest.raises(TypeError):
        AbortSignal.any([AbortController().signal, bad])  # pyright: ignore[reportArgumentType]


async def test_awaiting_any_is_released_by_a_source() -> None:
    source = AbortController()
    combined = AbortSignal.any([AbortController().signal, source.signal])
    started = asyncio.Event()

    async def waiter() -> object:
        started.set()
        await combined.wait()
        return combined.reason

    task = asyncio.create_task(waiter())
    await started.wait()
    source.abort("released")
    assert await task == "released"


# --- AbortSignal.timeout ------------------------------------------------------------------


async def test_timeout_zero_aborts_with_a_timeout_error() -> None:
    signal = AbortSignal.timeout(0)
    assert not signal.aborted  # the timer fires on a later loop iteration
    await signal.wait()
    assert signal.aborted
    reason = signal.reason
    assert isinstance(reason, TimeoutError)
    with pytest.raises(TimeoutError) as caught:
        signal.throw_if_aborted()
    assert caught.value is reason


async def test_timeout_signals_are_independent() -> None:
    first = AbortSignal.timeout(0)
    second = AbortSignal.timeout(0)
    assert first is not second
    await first.wait()
    await second.wait()
    assert first.reason is not second.reason


def test_timeout_needs_a_running_loop() -> None:
    with pytest.raises(RuntimeError):
        AbortSignal.timeout(0)


def test_reprs_show_the_state() -> None:
    controller = AbortController()
    assert "not aborted" in repr(controller.signal)
    controller.abort("why")
    assert "'why'" in repr(controller.signal)
    assert "aborted" in repr(controller)
