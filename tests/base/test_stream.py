"""Checkpoint 02: ``EventStream`` (single consumer, ordered buffer, separate ``result``).

No sleeps: the tests coordinate with futures and ``await asyncio.sleep(0)`` loop turns.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import weakref
from collections import deque
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from support import examples, run_async
from tether import EventStream
from tether.stream import EventStreamIterator, EventStreamStateError, finished_stream


class Boom(Exception):
    """A producer failure whose identity the tests track."""


class Interrupt(BaseException):
    """A bare ``BaseException`` (not an ``Exception``)."""


async def turns(count: int = 3) -> None:
    """Let the event loop run ``count`` rounds of ready callbacks."""
    for _ in range(count):
        await asyncio.sleep(0)


def start_reads(iterator: EventStreamIterator[str], count: int) -> list[asyncio.Task[str]]:
    """Start ``count`` pending reads, oldest first."""
    return [asyncio.ensure_future(iterator.__anext__()) for _ in range(count)]


async def drain(stream: EventStream[str, Any]) -> list[str]:
    return [event async for event in stream]


async def drain_into(stream: EventStream[str, Any], received: list[str]) -> None:
    """Consume with ``async for``, keeping what arrived before any error."""
    async for event in stream:
        received.append(event)


# --- ordering and buffering -------------------------------------------------------------------


async def test_events_pushed_before_iteration_are_delivered_in_order() -> None:
    stream: EventStream[str, int] = EventStream()
    for event in ("a", "b", "c"):
        stream.push(event)
    stream.finish(0)

    assert await drain(stream) == ["a", "b", "c"]


async def test_pushed_objects_are_delivered_as_the_same_objects() -> None:
    stream: EventStream[object, None] = EventStream()
    first, second = object(), object()
    stream.push(first)
    stream.push(second)
    iterator = aiter(stream)

    assert await anext(iterator) is first
    assert await anext(iterator) is second


async def test_async_for_consumes_every_event_then_stops_on_finish() -> None:
    stream: EventStream[int, str] = EventStream()
    seen: list[int] = []

    async def consume() -> None:
        async for event in stream:
            seen.append(event)

    consumer = asyncio.ensure_future(consume())
    await turns()
    for value in range(5):
        stream.push(value)
        if value % 2:
            await turns(1)
    stream.finish("done")
    await consumer

    assert seen == [0, 1, 2, 3, 4]
    assert await stream.result == "done"


async def test_pending_reads_are_settled_first_in_first_out() -> None:
    stream: EventStream[str, None] = EventStream()
    reads = start_reads(aiter(stream), 3)
    await turns()
    assert not any(read.done() for read in reads)

    stream.push("a")
    stream.push("b")
    stream.push("c")

    assert [await read for read in reads] == ["a", "b", "c"]


async def test_push_beyond_pending_reads_is_buffered_for_later_reads() -> None:
    stream: EventStream[str, None] = EventStream()
    iterator = aiter(stream)
    reads = start_reads(iterator, 2)
    await turns()

    for event in ("a", "b", "c", "d"):
        stream.push(event)

    assert [await read for read in reads] == ["a", "b"]
    assert await anext(iterator) == "c"
    assert await anext(iterator) == "d"


async def test_interleaved_reads_and_pushes_keep_order() -> None:
    stream: EventStream[str, None] = EventStream()
    iterator = aiter(stream)
    stream.push("a")
    pending = start_reads(iterator, 2)  # the first takes "a", the second waits
    await turns()
    stream.push("b")
    stream.push("c")

    assert [await read for read in pending] == ["a", "b"]
    assert await anext(iterator) == "c"


# --- terminal outcome after the buffer ----------------------------------------------------------


async def test_finish_delivers_buffered_events_before_stopping() -> None:
    stream: EventStream[str, int] = EventStream()
    stream.push("a")
    stream.push("b")
    stream.finish(7)
    iterator = aiter(stream)

    assert await anext(iterator) == "a"
    assert await anext(iterator) == "b"
    with pytest.raises(StopAsyncIteration):
        await anext(iterator)
    with pytest.raises(StopAsyncIteration):
        await anext(iterator)


async def test_fail_delivers_buffered_events_before_raising() -> None:
    stream: EventStream[str, int] = EventStream()
    error = Boom("provider broke")
    stream.push("a")
    stream.push("b")
    stream.fail(error)
    received: list[str] = []

    with pytest.raises(Boom) as raised:
        await drain_into(stream, received)

    assert received == ["a", "b"]
    assert raised.value is error


async def test_finish_ends_every_pending_read() -> None:
    stream: EventStream[str, int] = EventStream()
    reads = start_reads(aiter(stream), 3)
    await turns()

    stream.finish(1)

    for read in reads:
        with pytest.raises(StopAsyncIteration):
            await read


async def test_finish_after_partial_consumption_with_a_waiting_consumer() -> None:
    stream: EventStream[str, int] = EventStream()
    iterator = aiter(stream)
    stream.push("a")
    assert await anext(iterator) == "a"
    read = asyncio.ensure_future(anext(iterator))
    await turns()

    stream.finish(2)

    with pytest.raises(StopAsyncIteration):
        await read
    assert await stream.result == 2


# --- result ---------------------------------------------------------------------------------


async def test_result_awaited_after_finish_gives_the_value_every_time() -> None:
    stream: EventStream[str, dict[str, int]] = EventStream()
    value = {"answer": 42}
    stream.finish(value)

    assert await stream.result is value
    assert await stream.result is value
    assert await stream.result is value


async def test_result_awaited_before_finish_resolves_for_every_awaiter() -> None:
    stream: EventStream[str, str] = EventStream()

    async def wait_result() -> str:
        return await stream.result

    waiting = [asyncio.ensure_future(wait_result()) for _ in range(3)]
    await turns()
    assert not any(task.done() for task in waiting)

    stream.finish("value")

    assert [await task for task in waiting] == ["value"] * 3
    assert await stream.result == "value"


async def test_result_does_not_wait_for_the_consumer_to_drain_the_buffer() -> None:
    stream: EventStream[str, int] = EventStream()
    stream.push("unread")
    stream.finish(5)

    assert await stream.result == 5
    assert await drain(stream) == ["unread"]


async def test_cancelled_result_awaiter_does_not_disturb_other_awaiters() -> None:
    stream: EventStream[str, int] = EventStream()

    async def wait_result() -> int:
        return await stream.result

    cancelled = asyncio.ensure_future(wait_result())
    kept = asyncio.ensure_future(wait_result())
    await turns()
    cancelled.cancel()
    with pytest.raises(asyncio.CancelledError):
        await cancelled

    stream.finish(9)

    assert await kept == 9


async def test_result_works_with_gather_and_wait_for() -> None:
    stream: EventStream[str, int] = EventStream()
    gathered = asyncio.gather(stream.result, stream.result)
    waited = asyncio.ensure_future(asyncio.wait_for(stream.result, timeout=None))
    await turns()

    stream.finish(3)

    assert await gathered == [3, 3]
    assert await waited == 3


# --- fail -----------------------------------------------------------------------------------


async def test_fail_raises_the_same_error_object_from_result_every_time() -> None:
    stream: EventStream[str, int] = EventStream()
    error = Boom("x")
    stream.fail(error)

    for _ in range(3):
        with pytest.raises(Boom) as raised:
            await stream.result
        assert raised.value is error


async def test_result_awaited_before_fail_raises_the_same_error_object() -> None:
    stream: EventStream[str, int] = EventStream()
    error = Boom("x")

    async def wait_result() -> int:
        return await stream.result

    waiting = [asyncio.ensure_future(wait_result()) for _ in range(2)]
    await turns()
    stream.fail(error)

    for task in waiting:
        with pytest.raises(Boom) as raised:
            await task
        assert raised.value is error


async def test_fail_raises_the_same_error_in_every_pending_read() -> None:
    stream: EventStream[str, int] = EventStream()
    error = Boom("x")
    reads = start_reads(aiter(stream), 3)
    await turns()

    stream.fail(error)

    for read in reads:
        with pytest.raises(Boom) as raised:
            await read
        assert raised.value is error


async def test_read_after_fail_with_no_pending_read_raises_then_ends() -> None:
    stream: EventStream[str, int] = EventStream()
    error = Boom("x")
    iterator = aiter(stream)
    stream.push("a")
    assert await anext(iterator) == "a"

    stream.fail(error)

    with pytest.raises(Boom) as raised:
        await anext(iterator)
    assert raised.value is error
    with pytest.raises(StopAsyncIteration):
        await anext(iterator)


async def test_iteration_started_after_fail_raises_the_same_error() -> None:
    stream: EventStream[str, int] = EventStream()
    error = Boom("x")
    stream.fail(error)

    with pytest.raises(Boom) as raised:
        await drain(stream)
    assert raised.value is error
    with pytest.raises(Boom) as again:
        await drain(stream)
    assert again.value is error


async def test_fail_with_a_bare_base_exception_propagates_that_object() -> None:
    stream: EventStream[str, int] = EventStream()
    interrupt = Interrupt()
    read = asyncio.ensure_future(anext(aiter(stream)))
    await turns()

    stream.fail(interrupt)

    with pytest.raises(Interrupt) as from_read:
        await read
    with pytest.raises(Interrupt) as from_result:
        await stream.result
    assert from_read.value is interrupt
    assert from_result.value is interrupt


@pytest.mark.parametrize(
    "not_an_exception",
    ["boom", None, 42, Boom, BaseException],
    ids=["str", "None", "int", "exception-class", "base-exception-class"],
)
async def test_fail_rejects_a_non_exception_and_leaves_the_stream_open(
    not_an_exception: Any,
) -> None:
    stream: EventStream[str, int] = EventStream()

    with pytest.raises(TypeError):
        stream.fail(not_an_exception)

    assert not stream.settled
    stream.push("still open")
    stream.finish(1)
    assert await drain(stream) == ["still open"]
    assert await stream.result == 1


async def fail_and_forget(touch: str) -> None:
    """Fail a stream nobody awaits; the stream is garbage once this returns."""
    stream: EventStream[str, int] = EventStream()
    if touch == "property-read":
        _ = stream.result
    elif touch == "awaiter-cancelled-before-fail":

        async def wait_result() -> int:
            return await stream.result

        awaiter = asyncio.ensure_future(wait_result())
        await turns()
        awaiter.cancel()
        with pytest.raises(asyncio.CancelledError):
            await awaiter
    stream.fail(Boom("ignored"))


@pytest.mark.parametrize(
    "touch",
    ["never", "property-read", "awaiter-cancelled-before-fail"],
)
async def test_failed_result_that_nobody_awaits_is_not_reported(touch: str) -> None:
    loop = asyncio.get_running_loop()
    reports: list[dict[str, Any]] = []
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: reports.append(context))
    try:
        await fail_and_forget(touch)
        gc.collect()
        await turns()
        gc.collect()
        await turns()
    finally:
        loop.set_exception_handler(previous)

    assert reports == []


# --- first terminal wins ----------------------------------------------------------------------

Operation = Callable[["EventStream[str, str]"], None]

LATER_CALLS: dict[str, Operation] = {
    "push": lambda stream: stream.push("late"),
    "finish": lambda stream: stream.finish("late"),
    "fail": lambda stream: stream.fail(Boom("late")),
}


@pytest.mark.parametrize("later", sorted(LATER_CALLS))
async def test_calls_after_finish_raise_and_keep_the_first_outcome(later: str) -> None:
    stream: EventStream[str, str] = EventStream()
    stream.push("kept")
    stream.finish("first")

    with pytest.raises(EventStreamStateError) as raised:
        LATER_CALLS[later](stream)

    assert str(raised.value) == "EventStream is already terminal (finished)"
    assert raised.value.code == "EVENT_STREAM_STATE"
    assert stream.settled
    assert await stream.result == "first"
    assert await drain(stream) == ["kept"]


@pytest.mark.parametrize("later", sorted(LATER_CALLS))
async def test_calls_after_fail_raise_and_keep_the_first_outcome(later: str) -> None:
    stream: EventStream[str, str] = EventStream()
    error = Boom("first")
    stream.push("kept")
    stream.fail(error)

    with pytest.raises(EventStreamStateError) as raised:
        LATER_CALLS[later](stream)

    assert str(raised.value) == "EventStream is already terminal (failed)"
    assert raised.value.code == "EVENT_STREAM_STATE"
    with pytest.raises(Boom) as outcome:
        await stream.result
    assert outcome.value is error
    received: list[str] = []
    with pytest.raises(Boom):
        await drain_into(stream, received)
    assert received == ["kept"]


def test_state_error_code_is_read_only_and_name_is_the_class_name() -> None:
    stream: EventStream[str, None] = EventStream()
    stream.finish(None)
    with pytest.raises(EventStreamStateError) as raised:
        stream.push("late")
    error: Any = raised.value

    assert error.name == "EventStreamStateError"
    with pytest.raises(AttributeError):
        error.code = "OTHER"
    assert error.code == "EVENT_STREAM_STATE"


def test_settled_reflects_the_terminal_calls() -> None:
    finished: EventStream[str, int] = EventStream()
    failed: EventStream[str, int] = EventStream()
    assert not finished.settled
    finished.push("a")
    assert not finished.settled
    finished.finish(1)
    assert finished.settled

    failed.fail(Boom())
    assert failed.settled


# --- single consumer, aclose ------------------------------------------------------------------


async def test_second_concurrent_iterator_is_rejected() -> None:
    stream: EventStream[str, None] = EventStream()
    first = aiter(stream)

    with pytest.raises(EventStreamStateError, match="single consumer") as raised:
        aiter(stream)
    assert raised.value.code == "EVENT_STREAM_STATE"

    stream.push("a")
    assert await anext(first) == "a"


async def test_nested_async_for_on_the_same_stream_is_rejected() -> None:
    stream: EventStream[str, None] = EventStream()
    stream.push("a")
    stream.finish(None)

    async def nested() -> None:
        async for _ in stream:
            async for _ in stream:
                pass

    with pytest.raises(EventStreamStateError, match="single consumer"):
        await nested()


async def test_iterator_returns_itself_from_aiter() -> None:
    stream: EventStream[str, None] = EventStream()
    iterator = aiter(stream)

    assert aiter(iterator) is iterator


async def test_aclose_ends_pending_reads_and_releases_the_stream() -> None:
    stream: EventStream[str, None] = EventStream()
    first = aiter(stream)
    reads = start_reads(first, 2)
    await turns()

    await first.aclose()

    for read in reads:
        with pytest.raises(StopAsyncIteration):
            await read
    with pytest.raises(StopAsyncIteration):
        await anext(first)
    second = aiter(stream)  # the slot is free again
    stream.push("a")
    assert await anext(second) == "a"


async def test_new_iterator_after_aclose_continues_with_unconsumed_events() -> None:
    stream: EventStream[str, int] = EventStream()
    for event in ("a", "b", "c"):
        stream.push(event)
    first = aiter(stream)
    assert await anext(first) == "a"

    await first.aclose()
    await first.aclose()  # idempotent
    stream.push("d")
    stream.finish(4)

    assert await drain(stream) == ["b", "c", "d"]
    with pytest.raises(StopAsyncIteration):
        await anext(first)


async def test_closed_iterator_does_not_take_later_events() -> None:
    stream: EventStream[str, None] = EventStream()
    first = aiter(stream)
    await first.aclose()

    stream.push("x")

    with pytest.raises(StopAsyncIteration):
        await anext(first)
    assert await anext(aiter(stream)) == "x"


async def test_a_new_iterator_is_allowed_after_the_previous_one_finished() -> None:
    stream: EventStream[str, None] = EventStream()
    stream.push("a")
    stream.finish(None)
    assert await drain(stream) == ["a"]

    assert await drain(stream) == []


# --- synchronous producers ------------------------------------------------------------------


def test_push_and_finish_work_with_no_running_loop() -> None:
    stream: EventStream[str, str] = EventStream()
    stream.push("a")
    stream.push("b")
    stream.finish("done")

    async def consume() -> tuple[list[str], str]:
        return await drain(stream), await stream.result

    assert run_async(consume) == (["a", "b"], "done")


async def test_push_and_finish_from_synchronous_callbacks_while_consumer_waits() -> None:
    stream: EventStream[str, str] = EventStream()
    loop = asyncio.get_running_loop()
    consumer = asyncio.ensure_future(drain(stream))
    await turns()

    def produce_rest() -> None:
        stream.push("b")
        stream.finish("done")

    loop.call_soon(stream.push, "a")
    loop.call_soon(produce_rest)

    assert await consumer == ["a", "b"]
    assert await stream.result == "done"


async def test_fail_from_a_synchronous_callback_reaches_the_waiting_consumer() -> None:
    stream: EventStream[str, str] = EventStream()
    error = Boom("from callback")
    consumer = asyncio.ensure_future(drain(stream))
    await turns()

    asyncio.get_running_loop().call_soon(stream.fail, error)

    with pytest.raises(Boom) as raised:
        await consumer
    assert raised.value is error


# --- cancellation of a waiting consumer -----------------------------------------------------


async def test_cancelled_read_passes_the_next_push_to_the_next_reader() -> None:
    stream: EventStream[str, None] = EventStream()
    iterator = aiter(stream)
    cancelled, kept = start_reads(iterator, 2)
    await turns()
    cancelled.cancel()
    with pytest.raises(asyncio.CancelledError):
        await cancelled

    stream.push("a")
    stream.push("b")

    assert await kept == "a"
    assert await anext(iterator) == "b"


async def test_cancelled_only_read_leaves_the_next_push_in_the_buffer() -> None:
    stream: EventStream[str, int] = EventStream()
    iterator = aiter(stream)
    (cancelled,) = start_reads(iterator, 1)
    await turns()
    cancelled.cancel()
    with pytest.raises(asyncio.CancelledError):
        await cancelled

    stream.push("a")
    stream.finish(1)

    assert [event async for event in iterator] == ["a"]


async def test_cancelled_async_for_consumer_leaves_the_iterator_usable() -> None:
    stream: EventStream[str, None] = EventStream()
    iterator = aiter(stream)
    seen: list[str] = []

    async def consume() -> None:
        async for event in iterator:
            seen.append(event)

    consumer = asyncio.ensure_future(consume())
    stream.push("a")
    await turns()
    consumer.cancel()
    with pytest.raises(asyncio.CancelledError):
        await consumer

    stream.push("b")
    stream.finish(None)

    assert seen == ["a"]
    assert [event async for event in iterator] == ["b"]


async def test_read_cancelled_after_an_event_reached_it_loses_no_event() -> None:
    stream: EventStream[str, None] = EventStream()
    iterator = aiter(stream)
    (read,) = start_reads(iterator, 1)
    await turns()

    stream.push("a")  # settles the waiting read ...
    read.cancel()  # ... which is cancelled before it resumes
    stream.push("b")
    stream.finish(None)
    try:
        first = [await read]
    except asyncio.CancelledError:
        first = []

    assert first + [event async for event in iterator] == ["a", "b"]


async def test_reads_cancelled_after_events_reached_them_give_the_events_back_in_order() -> None:
    """Two reads each settled with an event, both cancelled before they resume: the events
    go back in the order they were pushed, ahead of what was buffered after them."""
    stream: EventStream[str, None] = EventStream()
    iterator = aiter(stream)
    first, second = start_reads(iterator, 2)
    await turns()

    stream.push("a")  # settles the first read
    stream.push("b")  # settles the second read
    stream.push("c")  # buffered
    first.cancel()
    second.cancel()
    await turns()
    stream.finish(None)

    assert first.cancelled()
    assert second.cancelled()
    assert [event async for event in iterator] == ["a", "b", "c"]


async def test_an_event_given_back_by_a_cancelled_read_goes_to_the_next_waiting_read() -> None:
    """A read settled with an event is cancelled while a later read waits: the waiting read
    takes that event (first in, first out), not the next push, and ``finish`` then ends the
    stream rather than leaving the event buffered behind a read that waits for ever."""
    stream: EventStream[str, None] = EventStream()
    iterator = aiter(stream)
    cancelled, waiting = start_reads(iterator, 2)
    await turns()

    stream.push("a")  # settles the first read ...
    cancelled.cancel()  # ... which is cancelled before it resumes
    await turns()
    assert cancelled.cancelled()
    assert waiting.done()
    assert waiting.result() == "a"
    stream.push("b")
    stream.finish(None)

    assert [event async for event in iterator] == ["b"]


async def test_a_read_after_finish_waits_while_an_earlier_read_may_give_its_event_back() -> None:
    """``finish`` while a read holds an event it has not resumed with: a later read (``poll``
    or ``__anext__``) does not end the stream yet, so the event that read gives back when it is
    cancelled is still delivered, before the end."""
    stream: EventStream[str, None] = EventStream()
    iterator = aiter(stream)
    (cancelled,) = start_reads(iterator, 1)
    await turns()

    stream.push("a")  # settles the read ...
    stream.finish(None)
    assert iterator.poll(None) is None  # not the end yet
    (later,) = start_reads(iterator, 1)
    cancelled.cancel()  # ... which is cancelled before it resumes
    await turns()

    assert cancelled.cancelled()
    assert later.result() == "a"
    assert [event async for event in iterator] == []


@pytest.mark.parametrize("settled", [True, False])
async def test_a_closed_read_coroutine_loses_no_event(settled: bool) -> None:
    """A read's coroutine closed while it waits (``close()``, as a driver that steps it by hand
    may), before or after an event reached it: that event, and the next ones, are still read."""
    stream: EventStream[str, None] = EventStream()
    iterator = aiter(stream)
    read = iterator.__anext__()
    read.send(None)  # now waiting on the stream
    if settled:
        stream.push("a")
    read.close()
    if not settled:
        stream.push("a")
    stream.push("b")
    stream.finish(None)

    assert [event async for event in iterator] == ["a", "b"]


# --- dropping a stream ------------------------------------------------------------------------


@pytest.mark.parametrize("touch", ["break", "break-and-result", "never-iterated"])
async def test_a_dropped_stream_is_freed_at_once_without_the_cycle_collector(touch: str) -> None:
    """Leaving ``async for`` with ``break`` and dropping the stream frees it by reference
    counting alone (no cycle between the stream, its iterator and its result), so a producer
    that holds it weakly (the HTTP providers) learns at once that its consumer went away."""
    stream: EventStream[int, str] = EventStream()
    for number in range(3):
        stream.push(number)
    gone = asyncio.Event()
    ref = weakref.ref(stream, lambda _: gone.set())
    if touch != "never-iterated":
        async for _ in stream:
            break
    if touch == "break-and-result":
        pending = stream.result
        del pending
    gc.disable()
    try:
        del stream
        assert ref() is None
        assert gone.is_set()
    finally:
        gc.enable()


async def test_an_iterator_dropped_after_break_lets_a_new_consumer_continue() -> None:
    stream: EventStream[int, str] = EventStream()
    for number in range(3):
        stream.push(number)
    async for first in stream:
        assert first == 0
        break
    stream.finish("done")
    assert [event async for event in stream] == [1, 2]
    assert await stream.result == "done"


OPERATIONS = st.lists(
    st.one_of(
        st.tuples(st.just("push"), st.text(max_size=3)),
        st.tuples(st.just("read"), st.just("")),
        st.tuples(st.just("finish"), st.just("")),
        st.tuples(st.just("fail"), st.just("")),
    ),
    max_size=24,
)


def _read_now(read: Callable[[], object]) -> object:
    """What one read that does not wait gives: an event, the end, or the failure."""
    try:
        read()
    except StopIteration as done:  # a coroutine's return value
        return ("event", done.value)
    except StopAsyncIteration:
        return ("end",)
    except Boom as error:
        return ("failed", error)
    raise AssertionError("the read waited")


@settings(max_examples=examples(200))
@given(operations=OPERATIONS)
def test_reads_agree_with_poll_on_any_script(operations: list[tuple[str, str]]) -> None:
    """``__anext__`` (EAFP on the buffer) gives what ``poll`` (a length test) gives, in the
    same order, then the same end, on any script of pushes, reads and settlements (a read
    that would wait is left out: the waiting reads have their own tests above)."""
    failure = Boom("boom")
    awaited: EventStream[str, None] = EventStream()
    polled: EventStream[str, None] = EventStream()
    reader, poller = aiter(awaited), aiter(polled)
    for name, value in operations:
        if name == "read":
            try:
                now = poller.poll(_NOTHING)
            except StopAsyncIteration:
                now = ("end",)
            except Boom as error:
                now = ("failed", error)
            else:
                if now is _NOTHING:  # open and empty: a read would wait
                    continue
                now = ("event", now)
            assert _read_now(lambda: reader.__anext__().send(None)) == now
        elif awaited.settled:
            continue
        elif name == "push":
            awaited.push(value)
            polled.push(value)
        elif name == "finish":
            awaited.finish(None)
            polled.finish(None)
        else:
            awaited.fail(failure)
            polled.fail(failure)


_NOTHING = object()


@given(
    batches=st.lists(st.lists(st.integers(), max_size=3), max_size=4),
    readers=st.integers(min_value=0, max_value=3),
)
def test_push_all_delivers_what_push_delivers_one_by_one(
    batches: list[list[int]], readers: int
) -> None:
    """With reads waiting (each read's coroutine stepped to its wait by hand) and without."""

    async def run(batched: bool) -> list[object]:
        stream: EventStream[int, None] = EventStream()
        iterator = aiter(stream)
        reads = [iterator.__anext__() for _ in range(readers)]
        for read in reads:
            read.send(None)  # now waiting on the stream
        for batch in batches:
            if batched:
                stream.push_all(batch)
            else:
                for event in batch:
                    stream.push(event)
        stream.finish(None)
        seen: list[object] = []
        for read in reads:
            try:
                read.send(None)
            except StopIteration as stop:
                seen.append(stop.value)
            except StopAsyncIteration:
                seen.append("end")
        seen.extend([event async for event in iterator])
        return seen

    async def compare() -> None:
        assert await run(True) == await run(False)

    run_async(compare)


def _slots(stream: EventStream[Any, Any]) -> dict[str, object]:
    """Every slot of a stream, its deques as lists (a fresh deque each)."""
    found: dict[str, object] = {}
    for name in EventStream.__slots__:
        if name == "__weakref__":
            continue
        value: Any = getattr(stream, name)
        found[name] = list(value) if type(value) is deque else value  # pyright: ignore[reportUnknownArgumentType]
    return found


@given(events=st.lists(st.integers(), max_size=5), result=st.integers())
def test_finished_stream_is_push_all_then_finish(events: list[int], result: int) -> None:
    """``finished_stream`` (the fixture adapter's fast path) against the plain path: the same
    slots, fresh deques of its own, and the same events, end and result to a consumer."""
    fast = finished_stream(events, result)
    plain: EventStream[int, int] = EventStream()
    plain.push_all(events)
    plain.finish(result)
    assert type(fast) is EventStream
    assert _slots(fast) == _slots(plain)
    assert fast._buffer is not fast._waiters  # pyright: ignore[reportPrivateUsage]
    assert fast._waiters is not fast._delivered  # pyright: ignore[reportPrivateUsage]

    async def read(stream: EventStream[int, int]) -> tuple[list[int], int]:
        seen = [event async for event in stream]
        return seen, await stream.result

    async def compare() -> None:
        assert await read(fast) == await read(plain) == (events, result)
        with pytest.raises(EventStreamStateError):
            fast.push(1)

    run_async(compare)


SCRIPTS = st.lists(
    st.one_of(
        st.tuples(st.just("push"), st.integers(0, 9)),
        st.tuples(st.just("read"), st.just(0)),
        st.tuples(st.just("cancel"), st.integers(0, 3)),
        st.tuples(st.just("turn"), st.just(0)),
        st.tuples(st.just("finish"), st.just(0)),
        st.tuples(st.just("fail"), st.just(0)),
    ),
    max_size=30,
)


@settings(max_examples=examples(300))
@given(script=SCRIPTS)
# A read settled with an event is cancelled after ``finish``, a later read waiting behind it.
@example(script=[("read", 0), ("read", 0), ("turn", 0), ("push", 1), ("cancel", 0)])
# Two reads settled with events, both cancelled before they resume.
@example(
    script=[("read", 0), ("read", 0), ("turn", 0), ("push", 1), ("push", 2)] + [("cancel", 0)] * 2
)
def test_concurrent_reads_pushes_cancellations_and_settlements_keep_every_event_once_in_order(
    script: list[tuple[str, int]],
) -> None:
    """Against the plain model of a stream (a list of events, read once each, in push order):
    on any script of pushes, concurrent reads (tasks), cancellations of reads (waiting, or
    settled with an event and not yet resumed), loop turns and a settlement, the events the
    reads return, in the order the reads complete, followed by what is left to iterate, are
    exactly the pushed events in push order; no read is left waiting once the stream has
    settled and the loop has run; a failed stream raises its own error object."""

    async def run() -> None:
        failure = Boom("boom")
        stream: EventStream[int, None] = EventStream()
        iterator = aiter(stream)
        pushed: list[int] = []
        received: list[int] = []
        reads: list[asyncio.Task[int]] = []

        def record(task: asyncio.Task[int]) -> None:
            if not task.cancelled() and task.exception() is None:
                received.append(task.result())

        for name, value in script:
            if name == "push" and not stream.settled:
                stream.push(value)
                pushed.append(value)
            elif name == "read":
                read = asyncio.ensure_future(iterator.__anext__())
                read.add_done_callback(record)
                reads.append(read)
            elif name == "cancel":
                pending = [read for read in reads if not read.done()]
                if pending:
                    pending[value % len(pending)].cancel()
            elif name == "turn":
                await asyncio.sleep(0)
            elif name == "finish" and not stream.settled:
                stream.finish(None)
            elif name == "fail" and not stream.settled:
                stream.fail(failure)
        if not stream.settled:
            stream.finish(None)
        await turns(4)

        assert all(read.done() for read in reads), "a read still waits on a settled stream"
        for read in reads:
            if not read.cancelled() and read.exception() is not None:
                assert isinstance(read.exception(), StopAsyncIteration) or (
                    read.exception() is failure
                )
        rest: list[int] = []
        with contextlib.suppress(Boom):
            async for event in iterator:
                rest.append(event)
        assert received + rest == pushed

    run_async(run)
