"""``ScriptedModel``'s three ways to play a factory's iterator give the same stream.

An exact async generator is driven by one coroutine stepped inline (``_drive_generator``);
any other async iterator is stepped item by item (``_play_ready``); either goes on in a
producer task only when a step waits (``_play_suspended``, ``_play_rest``). The same script
played as a generator, as a generator that waits before every item, as an iterator class and
as an iterator class that waits must give the same chunks and the same outcome (the same
response, or a failure of the same class, code and message), and leave the generator closed.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from support import Outcome, consume, fail, run_async
from tether import (
    AbortController,
    AbortError,
    AbortSignal,
    AssistantMessage,
    JsonObject,
    ModelRequest,
    ModelResponse,
    ModelUsage,
    ScriptedModel,
    TextBlock,
    ToolCall,
    UserMessage,
)
from tether.protocol import TextDeltaChunk, ToolCallChunk

REQUEST_ID = "request-001"
CALL = ToolCall(id="call-1", name="add", arguments=JsonObject({"left": 1, "right": 2}))


class Boom(Exception):
    """The failure a script raises."""


class Interrupt(BaseException):
    """An abort reason that is not an ``Exception``: re-raised raw, it becomes an
    ``AbortError`` carrying it."""


def _response(request_id: str = REQUEST_ID, *, calls: bool = False, stop: str = "") -> object:
    content: tuple[TextBlock | ToolCall, ...] = (CALL,) if calls else (TextBlock(text="ab"),)
    return ModelResponse(
        id="response-1",
        request_id=request_id,
        message=AssistantMessage(id="message-1", content=content),
        stop_reason=stop or ("toolCall" if calls else "stop"),  # type: ignore[arg-type]
        usage=ModelUsage(input_tokens=1, output_tokens=2),
    )


RAISE = "raise"
ABORT = "abort"
RAW_ABORT = "raw abort"
ITEMS: tuple[object, ...] = (
    TextDeltaChunk(request_id=REQUEST_ID, delta="a"),
    TextDeltaChunk(request_id=REQUEST_ID, delta="b"),
    ToolCallChunk(request_id=REQUEST_ID, tool_call=CALL),
    TextDeltaChunk(request_id="request-other", delta="a"),  # another request's
    _response(),
    _response(calls=True),
    _response(stop="toolCall"),  # a toolCall response without calls
    _response("request-other"),
    42,  # not a chunk
    RAISE,  # the iterator raises
    ABORT,  # the iterator aborts the signal, then yields a chunk
    RAW_ABORT,  # the iterator aborts with a BaseException reason and re-raises it raw
)
scripts = st.lists(st.sampled_from(ITEMS), max_size=5)


def _as_generator(items: list[object], wait: bool, log: list[str]) -> Callable[..., Any]:
    def factory(request: ModelRequest, signal: AbortSignal) -> AsyncIterator[object]:
        async def turn() -> AsyncIterator[object]:
            try:
                for item in items:
                    if wait:
                        await asyncio.sleep(0)
                    yield _produced(item, controller_of[signal])
            finally:
                log.append("closed")

        return turn()

    return factory


class _Iterator:
    """An async iterator that is not a generator: stepped by ``RacedIterator``."""

    def __init__(self, items: list[object], wait: bool, controller: AbortController) -> None:
        self._items = list(items)
        self._wait = wait
        self._controller = controller

    def __aiter__(self) -> _Iterator:
        return self

    async def __anext__(self) -> object:
        if self._wait:
            await asyncio.sleep(0)
        if not self._items:
            raise StopAsyncIteration
        return _produced(self._items.pop(0), self._controller)


def _as_iterator(items: list[object], wait: bool) -> Callable[..., Any]:
    def factory(request: ModelRequest, signal: AbortSignal) -> object:
        return _Iterator(items, wait, controller_of[signal])

    return factory


controller_of: dict[AbortSignal, AbortController] = {}


def _produced(item: object, controller: AbortController) -> object:
    if item == RAISE:
        raise Boom("the script failed")
    if item == ABORT:
        controller.abort(Boom("aborted"))
        return ITEMS[0]
    if item == RAW_ABORT:
        controller.abort(Interrupt("interrupted"))
        controller.signal.throw_if_aborted()
    return item


def _summary(outcome: Outcome) -> tuple[object, ...]:
    error = outcome.error
    failure: tuple[object, ...] | None = None
    if error is not None:
        reason: object = getattr(error, "reason", None)
        failure = (type(error), getattr(error, "code", None), str(error), type(reason))
    return (tuple(outcome.chunks), outcome.response, failure)


async def _play(factory: Callable[..., Any]) -> tuple[object, ...]:
    controller = AbortController()
    controller_of[controller.signal] = controller
    try:
        model = ScriptedModel([factory])
        request = ModelRequest(id=REQUEST_ID, messages=(UserMessage(id="u", content="go"),))
        outcome = await consume(model.stream(request, controller.signal))
        for _ in range(3):  # a producer task ends right after it settles its stream
            await asyncio.sleep(0)
        assert asyncio.all_tasks() == {asyncio.current_task()}, "a task was left running"
        return _summary(outcome)
    finally:
        del controller_of[controller.signal]


@settings(max_examples=150, deadline=None)
@given(scripts)
def test_every_way_to_play_a_script_gives_the_same_stream(items: list[object]) -> None:
    async def scenario() -> None:
        logs: list[list[str]] = [[], []]
        inline = await _play(_as_generator(items, False, logs[0]))
        waiting = await _play(_as_generator(items, True, logs[1]))
        stepped = await _play(_as_iterator(items, False))
        stepped_waiting = await _play(_as_iterator(items, True))
        assert waiting == inline
        assert stepped == inline
        assert stepped_waiting == inline
        assert logs == [["closed"], ["closed"]]  # every generator was closed or ended

    asyncio.run(scenario())


def test_an_abort_while_a_generator_waits_ends_the_stream_and_closes_the_generator() -> None:
    async def scenario() -> None:
        gate = asyncio.Event()
        log: list[str] = []

        async def turn(request: ModelRequest, signal: AbortSignal) -> AsyncIterator[Any]:
            yield ITEMS[0]
            try:
                await gate.wait()  # never set: only the abort ends the wait
            except asyncio.CancelledError:
                log.append("cancelled at its wait")
                raise
            finally:
                log.append("closed")
            yield _response()  # pragma: no cover - never reached

        controller = AbortController()
        model = ScriptedModel([turn])
        request = ModelRequest(id=REQUEST_ID, messages=(UserMessage(id="u", content="go"),))
        stream = model.stream(request, controller.signal)
        assert not stream.settled  # it waits: the rest runs on a task
        reason = Boom("stop")
        controller.abort(reason)
        chunks, error = await fail(stream)
        assert error is reason
        assert chunks == [ITEMS[0]]
        assert log == ["cancelled at its wait", "closed"]
        await asyncio.sleep(0)
        assert asyncio.all_tasks() == {asyncio.current_task()}

    run_async(scenario)


def test_a_raw_abort_reason_re_raised_by_a_generator_is_an_abort_error_on_every_path() -> None:
    async def scenario() -> None:
        inline = await _play(_as_generator([ITEMS[0], RAW_ABORT], False, []))
        waiting = await _play(_as_generator([ITEMS[0], RAW_ABORT], True, []))
        assert inline == waiting
        chunks, response, failure = inline
        assert chunks == (ITEMS[0],)
        assert response is None
        assert type(failure) is tuple
        assert failure[0] is AbortError
        assert failure[3] is Interrupt

    asyncio.run(scenario())
