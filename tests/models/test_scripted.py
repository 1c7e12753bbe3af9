"""Checkpoint 04: ``ScriptedModel``, the deterministic model double (spec 4.A-4.D, DESIGN "04").

A factory returns an async iterator that yields chunks and then exactly one ``ModelResponse``,
last. Every test consumes its streams (or awaits ``result``) so no producer task is left
pending. No sleeps: coordination uses ``asyncio.Event``/futures and ``asyncio.sleep(0)`` turns.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator, Callable, Sized
from dataclasses import dataclass
from typing import Any, Literal

import pytest

from factories import aborted_signal, live_signal
from support import fail, settle, succeed, turns
from tether import (
    AbortController,
    AbortError,
    AbortSignal,
    AssistantMessage,
    FixtureProviderAdapter,
    JsonObject,
    ModelChunk,
    ModelRequest,
    ModelResponse,
    ModelUsage,
    ScriptedModel,
    ScriptedReply,
    ScriptedToolCall,
    TextBlock,
    ToolCall,
    UserMessage,
    text_reply,
    tool_call_reply,
)
from tether.models.scripted import ResponseFactory, ScriptedModelError
from tether.protocol import TextDeltaChunk, ToolCallChunk
from tether.providers.fixture import FixtureProviderError

Item = ModelChunk | ModelResponse

REQUEST_ID = "request-001"


class Boom(Exception):
    """A failure whose identity the tests track."""


class Interrupt(BaseException):
    """A bare ``BaseException`` (not an ``Exception``)."""


# --- helpers --------------------------------------------------------------------------------


def make_request(request_id: str = REQUEST_ID) -> ModelRequest:
    return ModelRequest(id=request_id, messages=(UserMessage(id="user-1", content="Add."),))


def add_call(call_id: str = "call-1") -> ToolCall:
    return ToolCall(id=call_id, name="add", arguments=JsonObject({"left": 20, "right": 22}))


def respond(
    request_id: str = REQUEST_ID,
    *,
    content: tuple[TextBlock | ToolCall, ...] = (TextBlock(text="done"),),
    stop_reason: Literal["stop", "toolCall"] = "stop",
    response_id: str = "response-1",
) -> ModelResponse:
    return ModelResponse(
        id=response_id,
        request_id=request_id,
        message=AssistantMessage(id=f"message-{response_id}", content=content),
        stop_reason=stop_reason,
        usage=ModelUsage(input_tokens=3, output_tokens=4),
    )


def delta(text: str, request_id: str = REQUEST_ID) -> TextDeltaChunk:
    return TextDeltaChunk(request_id=request_id, delta=text)


def script(*items: object) -> ResponseFactory:
    """A factory whose generator yields ``items`` as they are (valid or not)."""

    def factory(request: ModelRequest, signal: AbortSignal) -> AsyncIterator[Item]:
        async def turn() -> AsyncIterator[Any]:
            for item in items:
                yield item

        return turn()

    return factory


def returning(value: object) -> ResponseFactory:
    """A factory that returns ``value`` (used for iterators shared between calls)."""

    def factory(request: ModelRequest, signal: AbortSignal) -> Any:
        return value

    return factory


def assert_scripted_error(error: BaseException, code: str, message: str | None = None) -> None:
    assert type(error) is ScriptedModelError, repr(error)
    assert error.code == code
    assert error.name == "ScriptedModelError"
    if message is not None:
        assert str(error) == message


# --- FIFO queue, counters, requests -----------------------------------------------------------


async def test_factories_are_consumed_in_fifo_order() -> None:
    model = ScriptedModel(
        [text_reply("first", response_id="r-a"), text_reply("second", response_id="r-b")]
    )
    model.append_response(text_reply("third", response_id="r-c"))

    ids: list[str] = []
    for index in range(3):
        _, response = await succeed(model.stream(make_request(f"request-{index}"), live_signal()))
        ids.append(response.id)

    assert ids == ["r-a", "r-b", "r-c"]
    assert model.pending_response_count == 0


async def test_chunks_are_delivered_in_order_then_the_response() -> None:
    response = respond(content=(TextBlock(text="a"), TextBlock(text="b"), add_call()))
    response = dataclasses.replace(response, stop_reason="toolCall")
    chunk_call = ToolCallChunk(request_id=REQUEST_ID, tool_call=add_call())
    model = ScriptedModel([script(delta("a"), delta("b"), chunk_call, response)])

    chunks, result = await succeed(model.stream(make_request(), live_signal()))

    assert chunks == [delta("a"), delta("b"), chunk_call]
    assert result == response


async def test_factory_receives_the_request_and_the_signal() -> None:
    seen: list[tuple[ModelRequest, AbortSignal]] = []

    def factory(request: ModelRequest, signal: AbortSignal) -> AsyncIterator[Item]:
        seen.append((request, signal))
        return text_reply("ok")(request, signal)

    model = ScriptedModel([factory])
    request, signal = make_request(), live_signal()
    await succeed(model.stream(request, signal))

    assert len(seen) == 1
    assert seen[0][0] == request
    assert seen[0][1] is signal


async def test_call_count_increments_synchronously_on_every_attempted_call() -> None:
    model = ScriptedModel([text_reply("ok")])

    first = model.stream(make_request("request-001"), live_signal())
    assert model.call_count == 1
    pre_cancelled = model.stream(make_request("request-002"), aborted_signal())
    assert model.call_count == 2
    await succeed(first)
    exhausted = model.stream(make_request("request-003"), live_signal())
    assert model.call_count == 3

    await fail(pre_cancelled)
    await fail(exhausted)
    assert model.call_count == 3


async def test_requests_records_every_attempted_call_in_order() -> None:
    model = ScriptedModel([text_reply("ok")])
    requests = [make_request(f"request-00{n}") for n in (1, 2, 3)]

    await succeed(model.stream(requests[0], live_signal()))
    await fail(model.stream(requests[1], aborted_signal()))
    await fail(model.stream(requests[2], live_signal()))

    snapshot = model.requests
    assert type(snapshot) is tuple
    assert snapshot == tuple(requests)


@pytest.mark.parametrize(
    ("request_value", "signal_value"),
    [("request-001", "live"), (None, "live"), ("request", "not a signal")],
    ids=["request-is-a-string", "request-is-none", "signal-is-a-string"],
)
async def test_invalid_arguments_raise_before_anything_is_counted(
    request_value: object, signal_value: object
) -> None:
    model = ScriptedModel([text_reply("ok")])
    request: Any = make_request() if request_value == "request" else request_value
    signal: Any = live_signal() if signal_value == "live" else signal_value

    with pytest.raises(TypeError):
        model.stream(request, signal)

    assert model.call_count == 0
    assert model.requests == ()
    assert model.pending_response_count == 1


# --- pre-cancelled calls --------------------------------------------------------------------


async def test_pre_cancelled_call_fails_with_the_same_exception_reason() -> None:
    reason = Boom("stop now")
    model = ScriptedModel([text_reply("ok")])

    chunks, error = await fail(model.stream(make_request(), aborted_signal(reason)))

    assert error is reason
    assert chunks == []


async def test_pre_cancelled_call_with_a_string_reason_fails_with_abort_error_carrying_it() -> None:
    model = ScriptedModel([text_reply("ok")])

    _, error = await fail(model.stream(make_request(), aborted_signal("user pressed stop")))

    assert type(error) is AbortError
    assert error.name == "AbortError"
    assert error.reason == "user pressed stop"


async def test_pre_cancelled_call_with_the_default_reason_fails_with_abort_error() -> None:
    model = ScriptedModel([text_reply("ok")])

    _, error = await fail(model.stream(make_request(), aborted_signal()))

    assert type(error) is AbortError
    assert error.name == "AbortError"
    assert str(error) == "This operation was aborted"


async def test_pre_cancelled_call_does_not_consume_or_call_the_queued_factory() -> None:
    calls: list[str] = []

    def factory(request: ModelRequest, signal: AbortSignal) -> AsyncIterator[Item]:
        calls.append(request.id)
        return text_reply("ok")(request, signal)

    model = ScriptedModel([factory])
    await fail(model.stream(make_request("request-001"), aborted_signal()))

    assert calls == []
    assert model.pending_response_count == 1
    assert model.call_count == 1

    _, response = await succeed(model.stream(make_request("request-002"), live_signal()))
    assert calls == ["request-002"]
    assert response.request_id == "request-002"
    assert model.pending_response_count == 0


# --- exhaustion -----------------------------------------------------------------------------


async def test_empty_queue_fails_with_script_exhausted() -> None:
    model = ScriptedModel()

    chunks, error = await fail(model.stream(make_request("request-007"), live_signal()))

    assert chunks == []
    assert_scripted_error(
        error, "SCRIPT_EXHAUSTED", 'No scripted response remains for request "request-007"'
    )
    assert model.call_count == 1


async def test_queue_runs_dry_after_its_last_factory() -> None:
    model = ScriptedModel([text_reply("only")])
    await succeed(model.stream(make_request("request-001"), live_signal()))

    _, error = await fail(model.stream(make_request("request-002"), live_signal()))

    assert_scripted_error(
        error, "SCRIPT_EXHAUSTED", 'No scripted response remains for request "request-002"'
    )


async def test_a_failed_factory_is_not_put_back() -> None:
    def broken(request: ModelRequest, signal: AbortSignal) -> AsyncIterator[Item]:
        raise Boom("factory broke")

    model = ScriptedModel([broken])
    await fail(model.stream(make_request("request-001"), live_signal()))

    assert model.pending_response_count == 0
    _, error = await fail(model.stream(make_request("request-002"), live_signal()))
    assert_scripted_error(error, "SCRIPT_EXHAUSTED")


# --- request correlation --------------------------------------------------------------------


@pytest.mark.parametrize(
    "chunk",
    [
        delta("hi", request_id="request-999"),
        ToolCallChunk(request_id="request-999", tool_call=add_call()),
    ],
    ids=["textDelta", "toolCall"],
)
async def test_chunk_for_another_request_fails_with_request_mismatch(chunk: ModelChunk) -> None:
    model = ScriptedModel([script(delta("before"), chunk, respond())])

    chunks, error = await fail(model.stream(make_request(), live_signal()))

    assert chunks == [delta("before")]
    assert_scripted_error(
        error,
        "SCRIPT_REQUEST_MISMATCH",
        'Scripted chunk requestId "request-999" does not match active request "request-001"',
    )


async def test_response_for_another_request_fails_with_request_mismatch() -> None:
    model = ScriptedModel([script(delta("before"), respond("request-999"))])

    chunks, error = await fail(model.stream(make_request(), live_signal()))

    assert chunks == [delta("before")]
    assert_scripted_error(
        error,
        "SCRIPT_REQUEST_MISMATCH",
        'Scripted response requestId "request-999" does not match active request "request-001"',
    )


# --- terminal rules -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("items", "message"),
    [
        (
            (respond(stop_reason="toolCall"),),
            "A toolCall response must contain at least one Tool-call block",
        ),
        (
            (respond(content=(TextBlock(text="x"), add_call()), stop_reason="stop"),),
            "A stop response must not contain Tool-call blocks",
        ),
        ((), None),
        ((delta("only a chunk"),), None),
        ((respond(), delta("late")), None),
        ((respond(), respond()), None),
    ],
    ids=[
        "toolCall-without-calls",
        "stop-with-calls",
        "empty-iterator",
        "ends-without-response",
        "chunk-after-response",
        "second-response",
    ],
)
async def test_contradictory_or_misplaced_response_is_invalid(
    items: tuple[object, ...], message: str | None
) -> None:
    model = ScriptedModel([script(*items)])

    _, error = await fail(model.stream(make_request(), live_signal()))

    assert_scripted_error(error, "SCRIPT_INVALID_RESPONSE", message)


async def test_tool_call_response_with_calls_succeeds() -> None:
    response = respond(content=(add_call(),), stop_reason="toolCall")
    model = ScriptedModel(
        [script(ToolCallChunk(request_id=REQUEST_ID, tool_call=add_call()), response)]
    )

    _, result = await succeed(model.stream(make_request(), live_signal()))

    assert result.stop_reason == "toolCall"
    assert result.message.content == (add_call(),)


# --- iterator ownership ---------------------------------------------------------------------


REUSED_MESSAGE = "A scripted response iterator may be consumed by only one model call"


async def test_same_iterator_from_two_factories_fails_the_second_call() -> None:
    shared = text_reply("once")(make_request(), live_signal())
    model = ScriptedModel([returning(shared), returning(shared)])

    await succeed(model.stream(make_request(), live_signal()))
    _, error = await fail(model.stream(make_request(), live_signal()))

    assert_scripted_error(error, "SCRIPT_ITERATOR_REUSED", REUSED_MESSAGE)


async def test_same_iterator_across_two_models_fails_the_second_model() -> None:
    shared = text_reply("once")(make_request(), live_signal())
    first, second = ScriptedModel([returning(shared)]), ScriptedModel([returning(shared)])

    await succeed(first.stream(make_request(), live_signal()))
    _, error = await fail(second.stream(make_request(), live_signal()))

    assert_scripted_error(error, "SCRIPT_ITERATOR_REUSED", REUSED_MESSAGE)


async def test_unconsumed_iterator_is_still_claimed_by_the_first_call() -> None:
    gate = asyncio.Event()
    controller = AbortController()

    async def blocked() -> AsyncIterator[Item]:
        await gate.wait()
        yield respond()

    shared = blocked()
    model = ScriptedModel([returning(shared), returning(shared)])
    first = model.stream(make_request(), controller.signal)
    second = model.stream(make_request(), live_signal())

    _, error = await fail(second)
    controller.abort(Boom("stop the first"))
    _, first_error = await fail(first)

    assert_scripted_error(error, "SCRIPT_ITERATOR_REUSED", REUSED_MESSAGE)
    assert type(first_error) is Boom


async def test_generator_consumed_by_the_adapter_cannot_feed_a_scripted_model() -> None:
    async def records() -> AsyncIterator[object]:
        yield {"type": "response_start", "responseId": "response-1", "role": "assistant"}
        yield {
            "type": "response_end",
            "responseId": "response-1",
            "stopReason": "stop",
            "usage": {"inputTokens": 1, "outputTokens": 1},
        }

    source = records()
    adapter = FixtureProviderAdapter({"schemaVersion": 1, "responses": [{"records": source}]})
    await succeed(adapter.stream(make_request(), live_signal()))
    model = ScriptedModel([returning(source)])

    _, error = await fail(model.stream(make_request(), live_signal()))

    assert_scripted_error(error, "SCRIPT_ITERATOR_REUSED", REUSED_MESSAGE)


async def test_generator_consumed_by_a_scripted_model_cannot_feed_the_adapter() -> None:
    shared = text_reply("once")(make_request(), live_signal())
    model = ScriptedModel([returning(shared)])
    await succeed(model.stream(make_request(), live_signal()))
    adapter = FixtureProviderAdapter({"schemaVersion": 1, "responses": [{"records": shared}]})

    _, error = await fail(adapter.stream(make_request(), live_signal()))

    assert type(error) is FixtureProviderError
    assert error.code == "PROVIDER_ITERATOR_REUSED"
    assert str(error) == "An async fixture iterator may be consumed once"


async def test_one_scripted_reply_makes_a_fresh_iterator_per_call() -> None:
    reply = text_reply("again")
    model = ScriptedModel([reply, reply])

    _, first = await succeed(model.stream(make_request("request-001"), live_signal()))
    _, second = await succeed(model.stream(make_request("request-002"), live_signal()))

    assert (first.request_id, second.request_id) == ("request-001", "request-002")


# --- failures from the factory and its iterator ---------------------------------------------


async def test_factory_exception_fails_iteration_and_result_with_the_same_object() -> None:
    boom = Boom("factory failed")

    def factory(request: ModelRequest, signal: AbortSignal) -> AsyncIterator[Item]:
        raise boom

    model = ScriptedModel([factory])
    stream = model.stream(make_request(), live_signal())

    with pytest.raises(Boom) as from_iteration:
        async for _ in stream:
            pass
    with pytest.raises(Boom) as from_result:
        await stream.result

    assert from_iteration.value is boom
    assert from_result.value is boom


async def test_exception_inside_the_iterator_fails_after_the_chunks_before_it() -> None:
    boom = Boom("iterator failed")

    async def turn() -> AsyncIterator[Item]:
        yield delta("partial")
        raise boom

    model = ScriptedModel([returning(turn())])

    chunks, error = await fail(model.stream(make_request(), live_signal()))

    assert chunks == [delta("partial")]
    assert error is boom


async def test_bare_base_exception_settles_the_stream_without_loop_errors() -> None:
    interrupt = Interrupt()

    def factory(request: ModelRequest, signal: AbortSignal) -> AsyncIterator[Item]:
        raise interrupt

    model = ScriptedModel([factory])
    _, error = await fail(model.stream(make_request(), live_signal()))

    assert error is interrupt


@pytest.mark.parametrize(
    "value",
    [None, 42, "text", [respond()], object(), iter([respond()])],
    ids=["none", "int", "str", "list", "object", "sync-iterator"],
)
async def test_factory_returning_a_non_async_iterator_fails_with_type_error(value: object) -> None:
    model = ScriptedModel([returning(value)])

    _, error = await fail(model.stream(make_request(), live_signal()))

    assert type(error) is TypeError
    assert str(error).startswith("A scripted response factory must return an async")


async def test_factory_returning_an_object_with_a_non_callable_anext_fails() -> None:
    class NotAnIterator:
        __anext__ = 5

    model = ScriptedModel([returning(NotAnIterator())])

    _, error = await fail(model.stream(make_request(), live_signal()))

    assert type(error) is TypeError


async def test_async_def_factory_fails_with_type_error_without_unawaited_warning() -> None:
    async def not_a_generator(request: ModelRequest, signal: AbortSignal) -> ModelResponse:
        return respond(request.id)

    factory: Any = not_a_generator
    model = ScriptedModel([factory])

    _, error = await fail(model.stream(make_request(), live_signal()))

    assert type(error) is TypeError


@pytest.mark.parametrize(
    "item",
    [
        {"type": "textDelta", "requestId": REQUEST_ID, "delta": "x"},
        "x",
        None,
        TextBlock(text="x"),
        add_call(),
        make_request(),
    ],
    ids=["json-dict", "str", "none", "TextBlock", "ToolCall", "ModelRequest"],
)
async def test_unsupported_chunk_objects_fail_with_type_error(item: object) -> None:
    model = ScriptedModel([script(delta("before"), item, respond())])

    chunks, error = await fail(model.stream(make_request(), live_signal()))

    assert chunks == [delta("before")]
    assert type(error) is TypeError
    assert str(error) == "A scripted chunk has an unsupported type"


async def test_chunk_subclass_is_an_unsupported_chunk() -> None:
    @dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
    class LoudDelta(TextDeltaChunk):
        volume: int = 11

    model = ScriptedModel([script(LoudDelta(request_id=REQUEST_ID, delta="x"), respond())])

    _, error = await fail(model.stream(make_request(), live_signal()))

    assert type(error) is TypeError


async def test_iterator_is_closed_when_the_model_stops_early() -> None:
    closed = asyncio.get_running_loop().create_future()

    async def turn() -> AsyncIterator[Item]:
        try:
            yield delta("x", request_id="request-999")
            yield respond()
        finally:
            closed.set_result(True)

    model = ScriptedModel([returning(turn())])
    _, error = await fail(model.stream(make_request(), live_signal()))

    assert_scripted_error(error, "SCRIPT_REQUEST_MISMATCH")
    assert await closed is True


async def test_cleanup_failure_never_replaces_the_primary_outcome() -> None:
    cleaned = asyncio.get_running_loop().create_future()

    async def turn() -> AsyncIterator[Item]:
        try:
            yield delta("x", request_id="request-999")
        finally:
            cleaned.set_result(True)
            raise Boom("cleanup failed")

    model = ScriptedModel([returning(turn())])
    _, error = await fail(model.stream(make_request(), live_signal()))

    assert await cleaned is True
    assert_scripted_error(error, "SCRIPT_REQUEST_MISMATCH")


# --- set_responses / append_response --------------------------------------------------------


def not_array_values() -> list[object]:
    return [None, "abc", {"0": text_reply("x")}, {text_reply("x")}, (f for f in [text_reply("x")])]


@pytest.mark.parametrize(
    "value", not_array_values(), ids=["none", "str", "dict", "set", "generator"]
)
def test_set_responses_rejects_non_arrays(value: object) -> None:
    model = ScriptedModel([text_reply("keep")])
    bad: Any = value

    with pytest.raises(TypeError) as caught:
        model.set_responses(bad)

    assert str(caught.value) == "responses must be an array"
    assert model.pending_response_count == 1


@pytest.mark.parametrize(
    "value", not_array_values(), ids=["none", "str", "dict", "set", "generator"]
)
def test_constructor_validates_like_set_responses(value: object) -> None:
    bad: Any = value

    with pytest.raises(TypeError, match=r"^responses must be an array$"):
        ScriptedModel(bad)


def test_constructor_rejects_a_non_factory_entry() -> None:
    bad: Any = [text_reply("x"), "not callable"]

    with pytest.raises(TypeError, match=r"^responses\[1\] must be a response factory$"):
        ScriptedModel(bad)


@pytest.mark.parametrize("container", [list, tuple], ids=["list", "tuple"])
@pytest.mark.parametrize(
    "bad", [None, 5, "factory", respond()], ids=["none", "int", "str", "response"]
)
async def test_set_responses_is_atomic_when_an_entry_is_bad(
    container: Callable[[list[Any]], Any], bad: object
) -> None:
    model = ScriptedModel([text_reply("old-1", response_id="old-1")])
    model.append_response(text_reply("old-2", response_id="old-2"))

    with pytest.raises(TypeError) as caught:
        model.set_responses(container([text_reply("new"), text_reply("new"), bad]))

    assert str(caught.value) == "responses[2] must be a response factory"
    assert model.pending_response_count == 2
    _, first = await succeed(model.stream(make_request(), live_signal()))
    _, second = await succeed(model.stream(make_request(), live_signal()))
    assert (first.id, second.id) == ("old-1", "old-2")


async def test_set_responses_replaces_the_whole_queue() -> None:
    model = ScriptedModel([text_reply("old", response_id="old")])

    model.set_responses(
        (text_reply("new-1", response_id="new-1"), text_reply("n", response_id="new-2"))
    )

    assert model.pending_response_count == 2
    _, first = await succeed(model.stream(make_request(), live_signal()))
    _, second = await succeed(model.stream(make_request(), live_signal()))
    assert (first.id, second.id) == ("new-1", "new-2")


async def test_set_responses_snapshots_the_callers_list() -> None:
    factories: list[ResponseFactory] = [text_reply("a")]
    model = ScriptedModel()
    model.set_responses(factories)

    factories.append(text_reply("b"))

    assert model.pending_response_count == 1
    await succeed(model.stream(make_request(), live_signal()))


@pytest.mark.parametrize(
    "bad", [None, 5, "factory", respond()], ids=["none", "int", "str", "response"]
)
def test_append_response_rejects_non_factories(bad: object) -> None:
    model = ScriptedModel([text_reply("keep")])
    value: Any = bad

    with pytest.raises(TypeError) as caught:
        model.append_response(value)

    assert str(caught.value) == "response must be a response factory"
    assert model.pending_response_count == 1


# --- cancellation while the iterator is blocked ---------------------------------------------


def loop_is_idle() -> bool:
    """No ready callbacks and no timers: every task is parked on a future (no polling)."""
    loop = asyncio.get_running_loop()
    ready: Sized = getattr(loop, "_ready")  # noqa: B009
    scheduled: Sized = getattr(loop, "_scheduled")  # noqa: B009
    return len(ready) == 0 and len(scheduled) == 0


@dataclass
class Blocked:
    """A factory whose generator yields one chunk, then waits for an event nobody sets."""

    started: asyncio.Future[None]
    cleaned: asyncio.Future[str]
    never: asyncio.Event
    async_cleanup: bool = False
    cleanup_error: BaseException | None = None

    def factory(self, request: ModelRequest, signal: AbortSignal) -> AsyncIterator[Item]:
        async def turn() -> AsyncIterator[Item]:
            try:
                yield delta("before the block", request.id)
                self.started.set_result(None)
                await self.never.wait()
                yield respond(request.id)
            except asyncio.CancelledError:
                self.cleaned.set_result("cancelled")
                raise
            finally:
                if self.async_cleanup:
                    await asyncio.sleep(0)
                if not self.cleaned.done():
                    self.cleaned.set_result("finally")
                if self.cleanup_error is not None:
                    raise self.cleanup_error

        return turn()


def blocked_turn(
    *, async_cleanup: bool = False, cleanup_error: BaseException | None = None
) -> Blocked:
    loop = asyncio.get_running_loop()
    return Blocked(
        started=loop.create_future(),
        cleaned=loop.create_future(),
        never=asyncio.Event(),
        async_cleanup=async_cleanup,
        cleanup_error=cleanup_error,
    )


async def test_abort_while_blocked_rejects_at_once_with_the_reason_and_runs_finally() -> None:
    blocked = blocked_turn()
    controller = AbortController()
    model = ScriptedModel([blocked.factory])
    stream = model.stream(make_request(), controller.signal)
    chunks: list[ModelChunk] = []
    iterator = aiter(stream)
    chunks.append(await anext(iterator))
    await blocked.started
    await turns()
    assert not stream.settled
    assert loop_is_idle(), "something is polling while the iterator is blocked"

    reason = Boom("user cancelled")
    controller.abort(reason)
    await settle(stream)

    with pytest.raises(Boom) as from_iteration:
        await anext(iterator)
    with pytest.raises(Boom) as from_result:
        await stream.result
    assert from_iteration.value is reason
    assert from_result.value is reason
    assert chunks == [delta("before the block")]
    assert await blocked.cleaned == "cancelled"
    assert not blocked.never.is_set()


@pytest.mark.parametrize("reason", ["string reason", None], ids=["string", "default"])
async def test_abort_while_blocked_with_a_non_exception_reason_raises_abort_error(
    reason: str | None,
) -> None:
    blocked = blocked_turn()
    controller = AbortController()
    model = ScriptedModel([blocked.factory])
    stream = model.stream(make_request(), controller.signal)
    await blocked.started

    controller.abort(reason)
    await settle(stream)
    _, error = await fail(stream)

    assert type(error) is AbortError
    assert error.reason == reason
    assert await blocked.cleaned == "cancelled"


async def test_abort_while_blocked_finishes_asynchronous_cleanup_in_the_background() -> None:
    blocked = blocked_turn(async_cleanup=True)
    controller = AbortController()
    model = ScriptedModel([blocked.factory])
    stream = model.stream(make_request(), controller.signal)
    await blocked.started

    reason = Boom("cancelled")
    controller.abort(reason)
    await settle(stream)
    _, error = await fail(stream)

    assert error is reason
    assert await blocked.cleaned == "cancelled"
    await turns()  # the background cleanup step settles; the harness rejects leftovers


async def test_abort_while_blocked_is_not_replaced_by_a_failing_finally() -> None:
    blocked = blocked_turn(cleanup_error=Boom("cleanup exploded"))
    controller = AbortController()
    model = ScriptedModel([blocked.factory])
    stream = model.stream(make_request(), controller.signal)
    await blocked.started

    reason = RuntimeError("the abort reason")
    controller.abort(reason)
    await settle(stream)
    _, error = await fail(stream)

    assert error is reason
    assert await blocked.cleaned == "cancelled"


async def test_abort_after_the_response_but_before_the_iterator_ends_rejects() -> None:
    controller = AbortController()
    parked = asyncio.get_running_loop().create_future()
    never = asyncio.Event()

    async def turn() -> AsyncIterator[Item]:
        yield respond()
        parked.set_result(None)
        await never.wait()

    model = ScriptedModel([returning(turn())])
    stream = model.stream(make_request(), controller.signal)
    await parked

    reason = Boom("too late for the response")
    controller.abort(reason)
    await settle(stream)
    _, error = await fail(stream)

    assert error is reason


async def test_abort_between_chunks_stops_the_stream_with_the_reason() -> None:
    controller = AbortController()

    async def turn() -> AsyncIterator[Item]:
        yield delta("first")
        controller.abort(Boom("mid-stream"))
        yield delta("second")
        yield respond()

    model = ScriptedModel([returning(turn())])

    chunks, error = await fail(model.stream(make_request(), controller.signal))

    assert type(error) is Boom
    assert delta("second") not in chunks


# --- plain-data replies ---------------------------------------------------------------------


async def test_text_reply_streams_each_delta_and_stops() -> None:
    model = ScriptedModel([text_reply("The sum is ", "42.")])

    chunks, response = await succeed(model.stream(make_request("request-004"), live_signal()))

    assert chunks == [delta("The sum is ", "request-004"), delta("42.", "request-004")]
    assert response == ModelResponse(
        id="response-request-004",
        request_id="request-004",
        message=AssistantMessage(
            id="message-response-request-004",
            content=(TextBlock(text="The sum is "), TextBlock(text="42.")),
        ),
        stop_reason="stop",
        usage=ModelUsage(input_tokens=0, output_tokens=0),
    )


async def test_text_reply_honours_response_id_and_usage() -> None:
    usage = ModelUsage(input_tokens=12, output_tokens=8)
    model = ScriptedModel([text_reply("hi", response_id="resp-x", usage=usage)])

    _, response = await succeed(model.stream(make_request(), live_signal()))

    assert response.id == "resp-x"
    assert response.message.id == "message-resp-x"
    assert response.usage == usage


async def test_tool_call_reply_streams_text_then_calls_with_default_ids() -> None:
    reply = tool_call_reply(
        ("add", {"left": 20, "right": 22}),
        ("mul", {"x": 2}, "provider-call-7"),
        ScriptedToolCall(name="neg", arguments=JsonObject({"x": 1})),
        text=("Let me compute.",),
    )
    model = ScriptedModel([reply])

    chunks, response = await succeed(model.stream(make_request("request-002"), live_signal()))

    expected_calls = (
        ToolCall(
            id="call-request-002-1", name="add", arguments=JsonObject({"left": 20, "right": 22})
        ),
        ToolCall(id="provider-call-7", name="mul", arguments=JsonObject({"x": 2})),
        ToolCall(id="call-request-002-3", name="neg", arguments=JsonObject({"x": 1})),
    )
    assert chunks == [
        delta("Let me compute.", "request-002"),
        *(ToolCallChunk(request_id="request-002", tool_call=call) for call in expected_calls),
    ]
    assert response.stop_reason == "toolCall"
    assert response.id == "response-request-002"
    assert response.message.id == "message-response-request-002"
    assert response.message.content == (TextBlock(text="Let me compute."), *expected_calls)


def test_tool_call_reply_snapshots_the_arguments() -> None:
    arguments: dict[str, object] = {"left": 20, "nested": {"right": 22}}
    reply = tool_call_reply(("add", arguments))

    arguments["left"] = 0
    nested: Any = arguments["nested"]
    nested["right"] = 0

    assert reply.tool_calls[0].arguments == {"left": 20, "nested": {"right": 22}}


def test_tool_call_reply_needs_at_least_one_call() -> None:
    with pytest.raises(TypeError):
        tool_call_reply()


def test_scripted_tool_call_defaults_and_explicit_id() -> None:
    request = make_request("request-010")

    assert ScriptedToolCall(name="add").build(request, 2) == ToolCall(
        id="call-request-010-2", name="add", arguments=JsonObject()
    )
    assert ScriptedToolCall(name="add", id="fixed").build(request, 2).id == "fixed"


@pytest.mark.parametrize(
    "kwargs",
    [{"name": ""}, {"name": "   "}, {"name": "add", "id": ""}, {"name": "add", "arguments": {}}],
    ids=["empty-name", "blank-name", "empty-id", "dict-arguments"],
)
def test_scripted_tool_call_rejects_invalid_fields(kwargs: dict[str, Any]) -> None:
    with pytest.raises(TypeError):
        ScriptedToolCall(**kwargs)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"text": ("a", 1)},
        {"text": "abc"},
        {"tool_calls": ("add",)},
        {"stop_reason": "stop", "tool_calls": (ScriptedToolCall(name="add"),)},
        {"response_id": ""},
        {"usage": {"input_tokens": 1, "output_tokens": 1}},
    ],
    ids=[
        "text-non-str",
        "text-str",
        "calls-str",
        "stop-with-calls",
        "empty-response-id",
        "dict-usage",
    ],
)
def test_scripted_reply_rejects_invalid_fields(kwargs: dict[str, Any]) -> None:
    with pytest.raises(TypeError):
        ScriptedReply(**kwargs)


async def test_scripted_reply_without_parts_is_an_empty_stop_response() -> None:
    model = ScriptedModel([ScriptedReply()])

    chunks, response = await succeed(model.stream(make_request(), live_signal()))

    assert chunks == []
    assert response.stop_reason == "stop"
    assert response.message.content == ()


async def test_response_for_matches_what_the_stream_returns() -> None:
    reply = tool_call_reply(("add", {"left": 1}), text=("t",), response_id="fixed")
    request = make_request("request-005")
    model = ScriptedModel([reply])

    _, response = await succeed(model.stream(request, live_signal()))

    assert response == reply.response_for(request)


def test_scripted_reply_is_frozen() -> None:
    reply: Any = text_reply("x")

    with pytest.raises(dataclasses.FrozenInstanceError):
        reply.text = ("y",)
