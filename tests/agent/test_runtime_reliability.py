"""Runtime reliability: promises that must hold against hostile awaitables, failing cleanup,
raising listeners, unusual abort reasons and long-lived signals.

1. An abort wins against an awaitable that never yields a pending future (it keeps yielding
   a bare value or an already-done future): ``race`` gives the event loop a turn, so timers
   and aborts still run, and only then resumes the awaitable.
2. A source whose ``aclose()`` raises a ``BaseException`` while the producer fails cannot
   leave the model stream unsettled, nor replace the stream's outcome.
3. A listener raising a ``BaseException`` does not stop the later listeners (among them the
   run's own wake-up); the first such exception is re-raised once every listener ran.
4. ``abort(reason)`` with a reason that is a ``BaseException`` but not an ``Exception``
   (``KeyboardInterrupt``, ``SystemExit``, ``GeneratorExit``, a custom one) ends the run
   ``cancelled`` instead of escaping raw.
5. Memory stays flat: the claim-once registry releases iterators that cannot be weakly
   referenced once their call is done, and ``AbortSignal.any`` signals are not kept alive by
   their sources.

A regression must fail, not hang: spinning awaitables give up after a wall-clock limit
(the event loop never turns while they spin, so an asyncio timeout could not fire), and every
wait for a settlement is bounded by ``asyncio.wait_for`` or by a fixed number of loop turns.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import time
import tracemalloc
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Generator
from typing import Any, Literal, TypeVar, cast

import pytest

from factories import accept, as_cancelled, as_failed
from support import fail, run_async, settle, slow_callback_notes_off, turns
from tether import (
    AbortController,
    AbortError,
    AbortSignal,
    AgentEvent,
    AssistantMessage,
    EventStream,
    FixtureProviderAdapter,
    ModelRequest,
    ModelResponse,
    ModelUsage,
    RunResult,
    ScriptedModel,
    TextBlock,
    ToolExecutionContext,
    ToolRegistry,
    UserMessage,
    define_tool,
    run_agent_loop,
    text_reply,
    tool_call_reply,
)
from tether._async.ownership import IdentitySet, claim_iterator_once
from tether._async.race import check_signal, race
from tether.models.scripted import ScriptedModelError
from tether.protocol import TextDeltaChunk
from tether.providers.fixture import FixtureProviderError

T = TypeVar("T")

USER = UserMessage(id="user-1", content="Go.")
ZERO_USAGE = ModelUsage(input_tokens=0, output_tokens=0)
TIMED_OUT = "The operation timed out"
SPIN_LIMIT = 5.0
"""Seconds a spinning awaitable spins before giving up (only ever reached by a regression)."""
SETTLE_LIMIT = 5.0
"""Seconds to wait for a result that must arrive within a few loop turns."""


class Shutdown(BaseException):
    """A custom ``BaseException`` that is not an ``Exception``."""


def start(
    model: object, signal: AbortSignal, tools: ToolRegistry | None = None
) -> EventStream[AgentEvent, RunResult]:
    return run_agent_loop(
        messages=[USER],
        model=cast(Any, model),
        tools=tools if tools is not None else ToolRegistry(),
        max_steps=4,
        signal=signal,
    )


async def finish(run: EventStream[AgentEvent, RunResult]) -> RunResult:
    """Drain the run's events and return its result, failing (not hanging) if it never ends."""

    async def drain() -> RunResult:
        async for _ in run:
            pass
        return await run.result

    return await asyncio.wait_for(drain(), SETTLE_LIMIT)


def tool_running(
    name: str, execute: Callable[[object, ToolExecutionContext], Awaitable[object]]
) -> ToolRegistry:
    definition = define_tool(
        name=name, description=f"the {name} tool", validate=accept, execute=cast(Any, execute)
    )
    return ToolRegistry([definition])


def response_for(request: ModelRequest) -> ModelResponse:
    return ModelResponse(
        id="response-1",
        request_id=request.id,
        message=AssistantMessage(id="message-1", content=(TextBlock(text="done"),)),
        stop_reason="stop",
        usage=ZERO_USAGE,
    )


def listener_count(signal: AbortSignal) -> int:
    listeners = signal._listeners  # pyright: ignore[reportPrivateUsage]
    return 0 if listeners is None else len(listeners)


def traced() -> int:
    gc.collect()
    return tracemalloc.get_traced_memory()[0]


# --- 1. an abort wins against an awaitable that never yields a pending future ---------------

SpinMode = Literal["bare-value", "done-future"]
SPIN_MODES: list[SpinMode] = ["bare-value", "done-future"]


class Spin:
    """Never yields a pending future: yields ``42`` (swallowing the ``RuntimeError`` sent back)
    or an already-done future marked as blocking, over and over.

    After ``SPIN_LIMIT`` seconds it gives up and returns ``"spun out"``, so a runtime that never
    lets the event loop turn fails the test with a wrong result instead of hanging it.
    """

    def __init__(self, mode: SpinMode) -> None:
        self.mode: SpinMode = mode

    def __await__(self) -> Generator[Any, Any, str]:
        deadline = time.monotonic() + SPIN_LIMIT
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        done.set_result(None)
        while time.monotonic() < deadline:
            try:
                if self.mode == "bare-value":
                    yield 42
                else:
                    done._asyncio_future_blocking = True
                    yield done
            except RuntimeError:
                pass
        return "spun out"


@pytest.mark.parametrize("mode", SPIN_MODES)
async def test_an_abort_wins_against_a_tool_awaiting_an_awaitable_that_never_blocks(
    mode: SpinMode,
) -> None:
    async def execute(value: object, context: ToolExecutionContext) -> object:
        return await Spin(mode)

    model = ScriptedModel([tool_call_reply(("spin", {})), text_reply("finished")])
    run = start(model, AbortSignal.timeout(0.2), tool_running("spin", execute))

    result = as_cancelled(await finish(run))

    assert result.reason == TIMED_OUT


class SpinningStream:
    """A model stream whose step (``where="step"``) or result (``where="result"``) spins."""

    def __init__(self, mode: SpinMode, where: Literal["step", "result"]) -> None:
        self.mode: SpinMode = mode
        self.where: Literal["step", "result"] = where

    def __aiter__(self) -> SpinningStream:
        return self

    def __anext__(self) -> Any:
        if self.where == "step":
            return Spin(self.mode)
        raise StopAsyncIteration

    @property
    def result(self) -> Any:
        return Spin(self.mode)


class SpinningModel:
    def __init__(self, mode: SpinMode, where: Literal["step", "result"]) -> None:
        self.mode: SpinMode = mode
        self.where: Literal["step", "result"] = where

    def stream(self, request: ModelRequest, signal: AbortSignal) -> SpinningStream:
        return SpinningStream(self.mode, self.where)


@pytest.mark.parametrize("where", ["step", "result"])
@pytest.mark.parametrize("mode", SPIN_MODES)
async def test_an_abort_wins_against_a_model_that_never_blocks(
    mode: SpinMode, where: Literal["step", "result"]
) -> None:
    run = start(SpinningModel(mode, where), AbortSignal.timeout(0.2))

    result = as_cancelled(await finish(run))

    assert result.reason == TIMED_OUT
    assert result.messages == (USER,)


class SpinningSource:
    """An async fixture record source whose every step spins."""

    def __init__(self, mode: SpinMode) -> None:
        self.mode: SpinMode = mode

    def __aiter__(self) -> SpinningSource:
        return self

    def __anext__(self) -> Spin:
        return Spin(self.mode)


@pytest.mark.parametrize("mode", SPIN_MODES)
async def test_an_abort_wins_against_a_fixture_source_that_never_blocks(mode: SpinMode) -> None:
    adapter = FixtureProviderAdapter(
        {"schemaVersion": 1, "responses": [{"records": SpinningSource(mode)}]}
    )
    run = start(adapter, AbortSignal.timeout(0.2))

    result = as_cancelled(await finish(run))

    assert result.reason == TIMED_OUT


class CountingAwaitable:
    """Forwards an inner awaitable and counts how often its driver resumes it."""

    def __init__(self, inner: Awaitable[Any]) -> None:
        self.inner = inner
        self.resumptions = 0

    def __await__(self) -> Generator[Any, Any, Any]:
        steps = self.inner.__await__()
        sent: Any = None
        while True:
            try:
                yielded = steps.send(sent)
            except StopIteration as stop:
                return stop.value
            sent = yield yielded
            self.resumptions += 1


async def test_race_waits_on_a_pending_future_without_resuming_the_awaitable() -> None:
    # The loop-turn fallback is only for awaitables that do not block: a genuine pending
    # future is waited on, never polled.
    future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    counting = CountingAwaitable(future)
    signal = AbortController().signal

    async def raced() -> str:
        return await race(signal, counting)

    task = asyncio.ensure_future(raced())
    await turns(20)
    assert counting.resumptions == 0
    future.set_result("ready")

    assert await asyncio.wait_for(task, SETTLE_LIMIT) == "ready"
    assert counting.resumptions == 1


# --- 2. a failing aclose() never leaves the stream unsettled --------------------------------

CloseFailure = Literal["cancelled-future", "async-cancelled", "custom-base", "async-custom-base"]
CLOSE_FAILURES: list[CloseFailure] = [
    "cancelled-future",
    "async-cancelled",
    "custom-base",
    "async-custom-base",
]


def cancelled_result() -> object:
    """Raise ``CancelledError`` the way returning a cancelled future's result does."""
    future: asyncio.Future[object] = asyncio.get_running_loop().create_future()
    future.cancel()
    return future.result()


class ClosingFails:
    """An async iterator whose one step returns ``item`` (after a loop turn if ``suspend``)
    and whose ``aclose()`` fails with a ``BaseException``, synchronously or when awaited."""

    def __init__(self, item: object, failure: CloseFailure, *, suspend: bool) -> None:
        self.item = item
        self.failure: CloseFailure = failure
        self.suspend = suspend
        self.close_calls = 0

    def __aiter__(self) -> ClosingFails:
        return self

    async def __anext__(self) -> object:
        if self.suspend:
            await asyncio.sleep(0)
        return self.item

    def aclose(self) -> Any:
        self.close_calls += 1
        match self.failure:
            case "cancelled-future":
                return cancelled_result()
            case "custom-base":
                raise Shutdown("close failed")
            case "async-cancelled":
                return self._fail(asyncio.CancelledError())
            case "async-custom-base":
                return self._fail(Shutdown("close failed"))

    async def _fail(self, error: BaseException) -> None:
        raise error


@pytest.mark.parametrize("suspend", [False, True], ids=["eager", "suspended"])
@pytest.mark.parametrize("failure", CLOSE_FAILURES)
async def test_fixture_stream_settles_with_the_record_error_when_aclose_fails(
    failure: CloseFailure, suspend: bool
) -> None:
    source = ClosingFails(42, failure, suspend=suspend)
    adapter = FixtureProviderAdapter({"schemaVersion": 1, "responses": [{"records": source}]})

    stream = adapter.stream(ModelRequest(id="request-001", messages=()), AbortController().signal)
    await settle(stream)
    _, error = await fail(stream)

    assert isinstance(error, FixtureProviderError)
    assert error.code == "PROVIDER_INVALID_EVENT"
    assert source.close_calls == 1


@pytest.mark.parametrize("suspend", [False, True], ids=["eager", "suspended"])
@pytest.mark.parametrize("failure", CLOSE_FAILURES)
async def test_scripted_stream_settles_with_the_turn_error_when_aclose_fails(
    failure: CloseFailure, suspend: bool
) -> None:
    source = ClosingFails(42, failure, suspend=suspend)

    def factory(request: ModelRequest, signal: AbortSignal) -> Any:
        return source

    model = ScriptedModel([factory])

    stream = model.stream(ModelRequest(id="request-001", messages=()), AbortController().signal)
    await settle(stream)
    _, error = await fail(stream)

    assert type(error) is TypeError
    assert str(error) == "A scripted chunk has an unsupported type"
    assert source.close_calls == 1


@pytest.mark.parametrize("failure", ["cancelled-future", "custom-base"])
async def test_a_run_fails_cleanly_when_the_sources_aclose_fails(failure: CloseFailure) -> None:
    source = ClosingFails(42, failure, suspend=True)
    adapter = FixtureProviderAdapter({"schemaVersion": 1, "responses": [{"records": source}]})

    result = as_failed(await finish(start(adapter, AbortController().signal)))

    assert result.error.code == "MODEL_STREAM_FAILED"
    assert source.close_calls == 1


# --- 3. a listener raising a BaseException stops no other listener --------------------------


def test_every_listener_runs_and_the_first_base_exception_is_re_raised() -> None:
    controller = AbortController()
    calls: list[str] = []
    first = asyncio.CancelledError("first")
    second = Shutdown("second")

    def raising(name: str, error: BaseException) -> Callable[[], None]:
        def listener() -> None:
            calls.append(name)
            raise error

        return listener

    controller.signal.add_listener(raising("cancel", first))
    controller.signal.add_listener(lambda: calls.append("between"))
    controller.signal.add_listener(raising("shutdown", second))
    controller.signal.add_listener(lambda: calls.append("after"))

    with pytest.raises(asyncio.CancelledError) as caught:
        controller.abort()

    assert caught.value is first
    assert calls == ["cancel", "between", "shutdown", "after"]
    assert controller.signal.aborted
    assert listener_count(controller.signal) == 0


async def test_with_a_loop_other_listener_failures_are_reported_after_a_base_exception() -> None:
    controller = AbortController()
    interrupt = Shutdown("interrupt")
    failure = ValueError("listener failed")
    calls: list[str] = []

    def interrupting() -> None:
        calls.append("interrupting")
        raise interrupt

    def failing() -> None:
        calls.append("failing")
        raise failure

    controller.signal.add_listener(interrupting)
    controller.signal.add_listener(failing)
    controller.signal.add_listener(lambda: calls.append("after"))
    loop = asyncio.get_running_loop()
    previous = loop.get_exception_handler()
    reports: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _loop, context: reports.append(context))
    try:
        with pytest.raises(Shutdown) as caught:
            controller.abort()
    finally:
        loop.set_exception_handler(previous)

    assert caught.value is interrupt
    assert calls == ["interrupting", "failing", "after"]
    assert [report["exception"] for report in reports] == [failure]


async def test_a_listener_raising_cancelled_error_does_not_strand_a_blocked_run() -> None:
    controller = AbortController()
    entered = asyncio.Event()

    def hostile() -> None:
        raise asyncio.CancelledError("listener")

    controller.signal.add_listener(hostile)  # registered before the run's own wake-up

    async def execute(value: object, context: ToolExecutionContext) -> object:
        entered.set()
        await asyncio.Event().wait()
        return "never"

    model = ScriptedModel([tool_call_reply(("block", {})), text_reply("never")])
    run = start(model, controller.signal, tool_running("block", execute))
    consumer = asyncio.ensure_future(finish(run))
    await asyncio.wait_for(entered.wait(), SETTLE_LIMIT)

    with pytest.raises(asyncio.CancelledError):
        controller.abort("stop")

    result = as_cancelled(await consumer)
    assert result.reason == "stop"


# --- 4. an abort reason that is a BaseException still ends the run cancelled ----------------

REASONS: dict[str, Callable[[], BaseException]] = {
    "custom-base": lambda: Shutdown("shutting down"),
    "generator-exit": GeneratorExit,
    "system-exit": lambda: SystemExit(0),
    "keyboard-interrupt": KeyboardInterrupt,
    "cancelled-error": asyncio.CancelledError,
}

Where = Literal["before-start", "blocked-in-tool", "blocked-in-model", "raised-by-tool"]
WHERE: list[Where] = ["before-start", "blocked-in-tool", "blocked-in-model", "raised-by-tool"]


async def abort_run(reason: BaseException, where: Where) -> tuple[RunResult, AbortSignal]:
    controller = AbortController()
    entered = asyncio.Event()

    async def execute(value: object, context: ToolExecutionContext) -> object:
        if where == "raised-by-tool":  # the tool aborts and raises the raw reason itself
            controller.abort(reason)
            context.signal.throw_if_aborted()
        entered.set()
        await asyncio.Event().wait()
        return "never"

    async def blocked_turn(request: ModelRequest, signal: AbortSignal) -> AsyncIterator[Any]:
        entered.set()
        await asyncio.Event().wait()
        yield response_for(request)  # pragma: no cover - never reached

    if where == "blocked-in-model":
        model = ScriptedModel([blocked_turn])
    else:
        model = ScriptedModel([tool_call_reply(("block", {})), text_reply("never")])
    if where == "before-start":
        controller.abort(reason)
    run = start(model, controller.signal, tool_running("block", execute))
    consumer = asyncio.ensure_future(finish(run))
    if where in ("blocked-in-tool", "blocked-in-model"):
        await asyncio.wait_for(entered.wait(), SETTLE_LIMIT)
        controller.abort(reason)
    return await consumer, controller.signal


@pytest.mark.parametrize("where", WHERE)
@pytest.mark.parametrize("make_reason", list(REASONS.values()), ids=list(REASONS))
def test_a_base_exception_abort_reason_ends_the_run_cancelled(
    make_reason: Callable[[], BaseException], where: Where
) -> None:
    reason = make_reason()
    try:  # a reason that escapes raw may stop the event loop itself: catch it here
        result, signal = run_async(abort_run, reason=reason, where=where)
    except BaseException as escaped:
        with contextlib.suppress(BaseException):  # the dead loop's leftovers re-raise the
            gc.collect()  # reason when they are collected: collect them here
        pytest.fail(f"the abort reason escaped the run: {escaped!r}")

    cancelled = as_cancelled(result)
    assert signal.reason is reason
    assert cancelled.reason == (str(reason) or "The run was cancelled")
    assert cancelled.messages[0] == USER


@pytest.mark.parametrize("make_reason", list(REASONS.values()), ids=list(REASONS))
def test_check_signal_carries_a_base_exception_reason_in_an_abort_error(
    make_reason: Callable[[], BaseException],
) -> None:
    reason = make_reason()
    controller = AbortController()
    controller.abort(reason)

    raised: BaseException | None = None
    try:  # catch everything: a raw KeyboardInterrupt would stop the test session
        check_signal(controller.signal)
    except BaseException as error:
        raised = error

    assert type(raised) is AbortError, f"check_signal raised {raised!r}"
    assert raised.reason is reason


def test_check_signal_still_raises_an_exception_reason_itself() -> None:
    reason = ValueError("plain")
    controller = AbortController()
    controller.abort(reason)

    with pytest.raises(ValueError, match="plain") as caught:
        check_signal(controller.signal)

    assert caught.value is reason


# --- 5a. the claim registry does not keep non-weakrefable iterators alive -------------------

PAYLOAD = 64 * 1024
RUNS_WITH_PAYLOAD = 50
"""More than the 20 payloads the growth bound allows, so keeping every iterator fails it; a
single one kept fails ``live_slotted``. The 50,000-run version is a soak
(tests/agent/test_soak.py)."""


class SlottedTurn:
    """A scripted response iterator that cannot be weakly referenced and holds a payload.

    ``broken`` makes its only item an unsupported chunk, so the call fails and closes it.
    """

    __slots__ = ("items", "payload")

    def __init__(self, request: ModelRequest, *, broken: bool) -> None:
        self.payload = bytearray(PAYLOAD)
        first = 42 if broken else TextDeltaChunk(request_id=request.id, delta="done")
        self.items: list[object] = [response_for(request), first]

    def __aiter__(self) -> SlottedTurn:
        return self

    async def __anext__(self) -> object:
        if self.items:
            return self.items.pop()
        raise StopAsyncIteration

    async def aclose(self) -> None:
        self.items.clear()


class SlottedRecords:
    """An async fixture record source that cannot be weakly referenced and holds a payload."""

    __slots__ = ("payload", "records")

    def __init__(self, *, broken: bool) -> None:
        self.payload = bytearray(PAYLOAD)
        usage = {"inputTokens": 0, "outputTokens": 0}
        end = {"type": "response_end", "responseId": "r", "stopReason": "stop", "usage": usage}
        self.records: list[object] = [
            {"type": "response_start", "responseId": "r", "role": "assistant"},
            42 if broken else end,
        ]

    def __aiter__(self) -> SlottedRecords:
        return self

    async def __anext__(self) -> object:
        if self.records:
            return self.records.pop(0)
        raise StopAsyncIteration


def slotted_model(kind: str, broken: bool) -> object:
    if kind == "scripted":

        def factory(request: ModelRequest, signal: AbortSignal) -> Any:
            return SlottedTurn(request, broken=broken)

        return ScriptedModel([factory])
    return FixtureProviderAdapter(
        {"schemaVersion": 1, "responses": [{"records": SlottedRecords(broken=broken)}]}
    )


def live_slotted() -> int:
    gc.collect()
    return sum(1 for item in gc.get_objects() if type(item) in (SlottedTurn, SlottedRecords))


@pytest.mark.parametrize("broken", [False, True], ids=["completed", "failed"])
@pytest.mark.parametrize("kind", ["scripted", "fixture"])
async def test_completed_calls_release_non_weakrefable_iterators(kind: str, broken: bool) -> None:
    tracemalloc.start()
    try:
        with slow_callback_notes_off():
            before = traced()
            for _ in range(RUNS_WITH_PAYLOAD):
                model = slotted_model(kind, broken)
                result = await finish(start(model, AbortController().signal))
                assert result.status == ("failed" if broken else "completed"), result
            growth = traced() - before
    finally:
        tracemalloc.stop()

    assert growth < 20 * PAYLOAD, f"{growth} bytes kept after {RUNS_WITH_PAYLOAD} runs"
    assert live_slotted() == 0


async def test_a_non_weakrefable_iterator_in_use_cannot_feed_a_second_call() -> None:
    request = ModelRequest(id="request-001", messages=())
    gate = asyncio.Event()

    class Slotted:
        __slots__ = ()

        def __aiter__(self) -> Slotted:
            return self

        async def __anext__(self) -> object:
            await gate.wait()
            raise StopAsyncIteration

    shared = Slotted()

    def factory(request: ModelRequest, signal: AbortSignal) -> Any:
        return shared

    model = ScriptedModel([factory, factory])
    signal = AbortController().signal
    first = model.stream(request, signal)
    second = model.stream(request, signal)
    await settle(second)
    _, error = await fail(second)
    assert isinstance(error, ScriptedModelError)
    assert error.code == "SCRIPT_ITERATOR_REUSED"

    gate.set()
    await settle(first)
    await fail(first)  # it ended without a response; its claim is released
    assert claim_iterator_once(shared) is True
    assert claim_iterator_once(shared) is False


def test_identity_set_discard_forgets_an_object_by_identity() -> None:
    class Slotted:
        __slots__ = ()

    class Plain:
        pass

    registry = IdentitySet()
    slotted, plain = Slotted(), Plain()
    assert registry.add(slotted)
    assert registry.add(plain)

    registry.discard(slotted)
    registry.discard(plain)
    registry.discard(Slotted())  # absent: nothing happens

    assert slotted not in registry
    assert plain not in registry
    assert registry.add(slotted)


# --- 5b. AbortSignal.any does not keep its dependent alive ----------------------------------

RUNS_ON_ANY = 500
WARM_UP_RUNS = 20
"""Enough runs that a listener kept per run overshoots the bound of 32 many times over and a
dependent signal kept per run (about 1 KiB) overshoots the 64 KiB growth bound about eightfold;
the 50,000-run version is a soak (tests/agent/test_soak.py)."""


@pytest.mark.parametrize("load", ["quiet", "loaded"])
async def test_runs_on_any_of_a_long_lived_signal_leave_no_listeners_behind(load: str) -> None:
    if load == "loaded":
        # As on a machine so loaded that every callback is "slow": the debug loop notes each
        # one and pytest keeps the notes; the bound below must not count them.
        asyncio.get_running_loop().slow_callback_duration = 0.0
    long_lived = AbortController().signal

    async def one_run() -> None:
        per_run = AbortController()
        signal = AbortSignal.any([long_lived, per_run.signal])
        result = await finish(start(ScriptedModel([text_reply("ok")]), signal))
        assert result.status == "completed"

    tracemalloc.start()
    try:
        with slow_callback_notes_off():
            # The first runs fill one-time caches (when this test runs alone, nothing did
            # yet); growth is measured from the steady state.
            for _ in range(WARM_UP_RUNS):
                await one_run()
            before = traced()
            for _ in range(RUNS_ON_ANY):
                await one_run()
            growth = traced() - before
    finally:
        tracemalloc.stop()

    assert listener_count(long_lived) <= 32, listener_count(long_lived)
    assert growth < 64 * 1024, f"{growth} bytes kept after {RUNS_ON_ANY} runs"


def test_a_dropped_any_signal_is_collected_and_its_listener_swept() -> None:
    source = AbortController()
    reference = weakref.ref(AbortSignal.any([source.signal]))
    gc.collect()
    assert reference() is None

    for _ in range(1_000):
        AbortSignal.any([source.signal])
    assert listener_count(source.signal) <= 32
    source.abort()
    assert listener_count(source.signal) == 0


def test_an_any_signal_with_a_listener_stays_alive_until_its_source_aborts() -> None:
    source = AbortController()
    calls: list[object] = []
    AbortSignal.any([source.signal]).add_listener(lambda: calls.append("forwarded"))
    gc.collect()
    for _ in range(100):  # sweeps of collected dependents must not drop it
        AbortSignal.any([source.signal])

    source.abort("go")

    assert calls == ["forwarded"]


def test_an_any_signal_is_collectable_once_its_listener_is_removed() -> None:
    source = AbortController()
    combined = AbortSignal.any([source.signal])
    remove = combined.add_listener(lambda: None)
    reference = weakref.ref(combined)
    del combined
    gc.collect()
    assert reference() is not None

    remove()
    del remove  # the remover refers to its signal
    gc.collect()

    assert reference() is None


def test_nested_any_signals_forward_through_a_dropped_intermediate() -> None:
    source = AbortController()
    other = AbortController()
    calls: list[object] = []
    outer = AbortSignal.any([AbortSignal.any([source.signal]), other.signal])
    outer.add_listener(lambda: calls.append(outer.reason))
    gc.collect()

    source.abort("inner")

    assert calls == ["inner"]
    assert listener_count(other.signal) == 0


async def test_an_unreferenced_task_waiting_on_an_any_signal_is_released() -> None:
    source = AbortController()
    released = asyncio.Event()

    async def waiter() -> None:
        await AbortSignal.any([source.signal]).wait()
        released.set()

    asyncio.ensure_future(waiter())  # noqa: RUF006 - the signal's source must keep it alive
    await turns(2)
    gc.collect()

    source.abort()

    await asyncio.wait_for(released.wait(), SETTLE_LIMIT)
    await turns(2)
