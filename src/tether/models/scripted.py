"""Checkpoint 04: ``ScriptedModel``, a deterministic model double driven by a finite script.

A script is a FIFO queue of response factories. Each ``stream()`` call takes the next factory
and calls it with the request and the abort signal; the factory returns an async iterator that
yields chunks and then exactly one ``ModelResponse``, last (Python async generators cannot
return a value, so the response is the final item). The model checks what the factory
produces: chunks and the response must carry the active request ID
(``SCRIPT_REQUEST_MISMATCH``), the response must agree with its stop reason and must be the
last item (``SCRIPT_INVALID_RESPONSE``), the queue must not be empty (``SCRIPT_EXHAUSTED``),
and an iterator may feed only one call across every model (``SCRIPT_ITERATOR_REUSED``).

``ScriptedReply`` (with ``text_reply`` and ``tool_call_reply``) is the plain-data form of the
common factories, so a test needs no hand-written generator::

    model = ScriptedModel([tool_call_reply(("add", {"left": 20, "right": 22})),
                           text_reply("The sum is 42.")])
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import types
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from dataclasses import field
from typing import Any, Final, Literal, TypeAlias, cast, get_args

from tether._async.ownership import claim_iterator_once
from tether._async.producer import fail_producer, shed_frames, start_producer
from tether._async.race import (
    Started,
    check_signal,
    close_quietly,
    is_raw_abort_reason,
    neutralize,
    signal_aborted,
    signal_reason,
)
from tether._async.race_iterator import RacedIterator
from tether._base.dataclass import dataclass
from tether._base.exact_types import exactly, type_of
from tether._base.strings import is_non_empty
from tether._base.tether_error import TetherError
from tether.abort import AbortError, AbortSignal, abort_exception
from tether.jsonvalue import JsonObject, thaw_json
from tether.models._queued import QueuedReplies
from tether.protocol import (
    MAX_RAW_ARGUMENTS_CODE_POINTS,
    ZERO_USAGE,
    AssistantBlock,
    ModelChunk,
    ModelRequest,
    ModelResponse,
    ModelUsage,
    StopReason,
    ToolCall,
    ToolCallDeltaChunk,
)
from tether.protocol import _trusted as trusted
from tether.protocol.model import is_model_chunk
from tether.protocol.transcript._blocks import snapshot_arguments
from tether.stream import EventStream

_ASYNC_GENERATOR: Final[type[Any]] = types.AsyncGeneratorType
"""An async generator's class: it has ``__anext__`` (the factory check need not look)."""

__all__ = [
    "ResponseFactory",
    "ScriptedModel",
    "ScriptedModelError",
    "ScriptedModelErrorCode",
    "ScriptedReply",
    "ScriptedToolCall",
    "text_reply",
    "tool_call_reply",
]

ScriptedModelErrorCode: TypeAlias = Literal[
    "SCRIPT_EXHAUSTED",
    "SCRIPT_REQUEST_MISMATCH",
    "SCRIPT_INVALID_RESPONSE",
    "SCRIPT_ITERATOR_REUSED",
]

ResponseFactory: TypeAlias = Callable[
    [ModelRequest, AbortSignal], AsyncIterator[ModelChunk | ModelResponse]
]
"""Makes one scripted turn: yields chunks, then exactly one ``ModelResponse``, last."""


class ScriptedModelError(TetherError[ScriptedModelErrorCode]):
    """A scripted turn broke the script's rules; ``code`` says which."""

    def __init__(self, code: ScriptedModelErrorCode, message: str) -> None:
        super().__init__(code, message)


class ScriptedModel(QueuedReplies[ResponseFactory]):
    """A model whose every turn is scripted in advance, for tests and examples.

    ``ScriptedModel([tool_call_reply(("add", {"left": 1, "right": 2})), text_reply("3")])``
    answers the first request with a call of ``add`` and the second with the text ``3``
    (``ScriptedReply`` is the same turn as plain data); each reply is used
    once, in order, and a run that asks for more fails with ``SCRIPT_EXHAUSTED``. A reply may
    also be a function ``(request, signal) -> async iterator`` of chunks ending with a
    ``ModelResponse``, for turns that need to see the request.

    ``call_count`` counts attempted ``stream()`` calls (also pre-cancelled and exhausted ones);
    ``requests`` returns the requests seen, in order; ``pending_response_count`` is the
    number of factories still queued. A pre-cancelled call does not consume a factory.
    """

    __slots__ = ("_requests",)

    def __init__(self, responses: Iterable[ResponseFactory] = ()) -> None:
        super().__init__(_checked_factories(responses))
        self._requests: list[ModelRequest] = []

    @property
    def requests(self) -> tuple[ModelRequest, ...]:
        """The requests of every call so far, oldest first (immutable snapshots)."""
        return tuple(self._requests)

    def set_responses(self, responses: Iterable[ResponseFactory]) -> None:
        """Replace the queue with ``responses``; all are checked first, then swapped at once."""
        self._queue = deque(_checked_factories(responses))

    def append_response(self, factory: ResponseFactory) -> None:
        """Queue one more response factory."""
        if not callable(factory):
            raise TypeError("response must be a response factory")
        self._queue.append(factory)

    def stream(
        self, request: ModelRequest, signal: AbortSignal
    ) -> EventStream[ModelChunk, ModelResponse]:
        """Start the next scripted turn for ``request``; its outcome arrives on the stream."""
        self._count_call(request, signal)
        self._requests.append(request)
        stream: EventStream[ModelChunk, ModelResponse] = EventStream()
        self._play(stream, request, signal)
        return stream

    def _play(
        self,
        stream: EventStream[ModelChunk, ModelResponse],
        request: ModelRequest,
        signal: AbortSignal,
    ) -> None:
        """Play the next turn into ``stream``, inline for as long as its iterator never waits.

        A plain-data reply is pushed at once (``stream_reply``). A factory's exact async
        generator is driven by one coroutine of ours (``_drive_generator``: ``async for`` over
        it), stepped here once; any other async iterator is stepped item by item
        (``_play_ready``, through ``RacedIterator``). Either way, an iterator that never waits
        settles the stream before ``stream()`` returns; only one whose step suspends on a
        future goes on in a producer task, where every wait races the signal
        (``_play_suspended``, ``_play_rest``).

        Why: nothing can run concurrently with a step that never suspends, so a producer
        task, a coroutine per turn and an awaited step per item bought nothing; and
        ``async for`` takes a generator's items without the ``StopIteration`` that stepping
        each by hand raises (``bench_loop``, generator factories). Every path checks each item
        with ``_take`` and the end with ``_ended``, and checks the signal after each step of
        the caller's code. ``tests/models/test_scripted_paths.py`` plays the same scripts
        through the generator path, the item-by-item path and with a wait before each item,
        and compares what each stream holds.
        """
        source: RacedIterator[object] | None = None
        try:
            if signal_aborted(signal):
                raise abort_exception(signal_reason(signal))
            queue = self._queue
            if not queue:
                raise ScriptedModelError(
                    "SCRIPT_EXHAUSTED", f'No scripted response remains for request "{request.id}"'
                )
            factory: Any = queue.popleft()
            if type(factory) is ScriptedReply:  # plain data: no iterator to drive or to trust
                stream_reply(factory, request, stream)
                return
            iterator: Any = factory(request, signal)
            if type_of(iterator) is not _ASYNC_GENERATOR and not callable(
                getattr(type_of(iterator), "__anext__", None)
            ):
                neutralize(iterator)
                raise TypeError("A scripted response factory must return an async iterator")
            if not claim_iterator_once(iterator):
                raise ScriptedModelError(
                    "SCRIPT_ITERATOR_REUSED",
                    "A scripted response iterator may be consumed by only one model call",
                )
            active = request.id
            if type_of(iterator) is _ASYNC_GENERATOR:
                check_signal(signal)  # the factory ran the caller's code
                driver = _drive_generator(iterator, stream, active, signal)
                try:
                    yielded = driver.send(None)
                except StopIteration as stop:
                    response = stop.value
                else:  # the generator waits: the rest of the turn races the signal on a task
                    started = Started(signal, driver, yielded, None)
                    start_producer(_play_suspended(started, stream, signal))
                    return
            else:
                source = RacedIterator(iterator, signal, claimed=True)
                ended, response = _play_ready(source, stream, active, signal, None)
                if not ended:  # a step suspended: the rest of the turn runs on a task
                    start_producer(_play_rest(source, stream, active, signal, response))
                    return
            response = _ended(response, signal)
        except BaseException as error:
            _fail_turn(stream, error, source)
            return
        stream.finish(response)


async def _drive_generator(
    generator: AsyncIterator[object],
    stream: EventStream[ModelChunk, ModelResponse],
    active: str,
    signal: AbortSignal,
) -> ModelResponse | None:
    """Take every item of a factory's exact async generator: the turn's response (``None``
    when it gave none). Stepped once inline by ``ScriptedModel._play``; if the generator
    waits, the rest is raced against the signal (``_play_suspended``), and an abort throws
    ``CancelledError`` in at the generator's wait, as a step ``RacedIterator`` abandons.

    On any failure (the generator's, a broken rule, the abort) the generator is closed
    here, when it is not running (an abandoned wait has settled by then: this coroutine is
    what was abandoned); a raw abort reason it re-raised becomes an ``AbortError``."""
    response: ModelResponse | None = None
    try:
        async for item in generator:
            check_signal(signal)  # the step ran the caller's code
            response = _take(item, response, active, stream)
    except BaseException as error:
        close_quietly(generator)  # ends it at the yield it waits at; nothing if it ended
        if is_raw_abort_reason(signal, error):
            raise AbortError(reason=error) from None
        raise
    return response


async def _play_suspended(
    started: Started,
    stream: EventStream[ModelChunk, ModelResponse],
    signal: AbortSignal,
) -> None:
    """The rest of a generator's turn (``_drive_generator``) that waited, on a producer task:
    its waits race the signal (``Started.race``)."""
    try:
        response = _ended(await started.race(), signal)
    except BaseException as error:
        _fail_turn(stream, error, None)
        return
    stream.finish(response)


def _play_ready(
    source: RacedIterator[object],
    stream: EventStream[ModelChunk, ModelResponse],
    active: str,
    signal: AbortSignal,
    response: ModelResponse | None,
) -> tuple[bool, ModelResponse | None]:
    """Take the items the iterator yields without suspending: ``(True, response)`` when it
    ended, ``(False, response)`` when a step suspended (``source`` holds that step, for
    ``await source.next()``). ``response`` is the turn's response so far."""
    while True:
        try:
            item = source.ready(_PENDING)  # checks the signal before the step
        except StopAsyncIteration:
            return True, response
        if item is _PENDING:
            return False, response
        check_signal(signal)  # the step ran the caller's code
        response = _take(item, response, active, stream)


async def _play_rest(
    source: RacedIterator[object],
    stream: EventStream[ModelChunk, ModelResponse],
    active: str,
    signal: AbortSignal,
    response: ModelResponse | None,
) -> None:
    """The rest of a turn whose step suspended, on a producer task: each waiting step races
    the signal (``RacedIterator.next``); the steps that do not wait are taken inline again."""
    try:
        while True:
            try:
                item = await source.next()
            except StopAsyncIteration:
                break
            check_signal(signal)
            response = _take(item, response, active, stream)
            ended, response = _play_ready(source, stream, active, signal, response)
            if ended:
                break
        response = _ended(response, signal)
    except BaseException as error:
        _fail_turn(stream, error, source)
        return
    stream.finish(response)


def _take(
    item: object,
    response: ModelResponse | None,
    active: str,
    stream: EventStream[ModelChunk, ModelResponse],
) -> ModelResponse | None:
    """One item of a turn, checked: a chunk of the active request is pushed; the response
    is checked and returned (it must be the last item). ``response``: the one so far."""
    if response is not None:
        raise ScriptedModelError(
            "SCRIPT_INVALID_RESPONSE",
            "A scripted response iterator must end after its ModelResponse",
        )
    if exactly(item, ModelResponse):
        return _checked_response(item, active)
    if not is_model_chunk(item):
        raise TypeError("A scripted chunk has an unsupported type")
    if item.request_id != active:
        raise ScriptedModelError(
            "SCRIPT_REQUEST_MISMATCH",
            f'Scripted chunk requestId "{item.request_id}" does not match active request '
            f'"{active}"',
        )
    stream.push(item)
    return None


def _ended(response: ModelResponse | None, signal: AbortSignal) -> ModelResponse:
    """The turn's response once its iterator ended (there must be one)."""
    if response is None:
        raise ScriptedModelError(
            "SCRIPT_INVALID_RESPONSE", "A scripted response iterator ended without a ModelResponse"
        )
    check_signal(signal)
    return response


def _fail_turn(
    stream: EventStream[ModelChunk, ModelResponse],
    error: BaseException,
    source: RacedIterator[object] | None,
) -> None:
    """Settle ``stream`` with a turn's failure, then close its iterator (``fail_producer``).
    A ``CancelledError`` is the stream's alone (as for an eager producer); ``KeyboardInterrupt``
    and ``SystemExit`` propagate, with the stream already settled."""
    shed_frames(error, _PRODUCER)  # the stream keeps it: no frame of ours refers back
    with contextlib.suppress(asyncio.CancelledError):
        fail_producer(stream, error, source)  # settles the stream, then closes the source


_PRODUCER: Final = (
    vars(ScriptedModel)["_play"],
    _drive_generator,
    _play_suspended,
    _play_ready,
    _play_rest,
    _take,
    _ended,
)


def _checked_response(response: ModelResponse, active: str) -> ModelResponse:
    if response.request_id != active:
        raise ScriptedModelError(
            "SCRIPT_REQUEST_MISMATCH",
            f'Scripted response requestId "{response.request_id}" does not match active request '
            f'"{active}"',
        )
    has_tool_call = ToolCall in map(type, response.message.content)  # exact block classes
    if response.stop_reason == "toolCall" and not has_tool_call:
        raise ScriptedModelError(
            "SCRIPT_INVALID_RESPONSE",
            "A toolCall response must contain at least one Tool-call block",
        )
    if response.stop_reason == "stop" and has_tool_call:
        raise ScriptedModelError(
            "SCRIPT_INVALID_RESPONSE", "A stop response must not contain Tool-call blocks"
        )
    return response


def _checked_factories(responses: Iterable[ResponseFactory]) -> list[ResponseFactory]:
    kind = type(responses)
    if kind is not list and kind is not tuple:
        raise TypeError("responses must be an array")
    factories: list[ResponseFactory] = list(responses)
    for index, factory in enumerate(factories):
        if not callable(factory):
            raise TypeError(f"responses[{index}] must be a response factory")
    return factories


# --- plain-data replies ---------------------------------------------------------------------

_CHUNK_TYPES: Final = frozenset(get_args(ModelChunk))
_PENDING: Final = object()
_STOP_REASONS: Final = frozenset(get_args(StopReason))

_ZERO_USAGE: Final = ZERO_USAGE


@dataclass(frozen=True, slots=True, kw_only=True)
class ScriptedToolCall:
    """One tool call of a ``ScriptedReply``. Without an ``id``, the call is given
    ``"call-<request id>-<position>"`` when the turn runs, unique within a run.

    ``raw_arguments`` scripts an *invalid* call, as a provider keeps one whose argument text
    is not a JSON object: ``ScriptedToolCall(name="write", raw_arguments='{"path": ')``
    (``arguments`` must then stay empty). The loop answers it with ``TOOL_ARGUMENTS_INVALID``.
    """

    name: str
    arguments: JsonObject = field(default_factory=JsonObject)
    id: str | None = None
    raw_arguments: str | None = None

    def __post_init__(self) -> None:
        if not is_non_empty(self.name):
            raise TypeError("ScriptedToolCall.name must be a non-empty string")
        if type(self.arguments) is not JsonObject:
            raise TypeError("ScriptedToolCall.arguments must be a JsonObject")
        if self.id is not None and not is_non_empty(self.id):
            raise TypeError("ScriptedToolCall.id must be a non-empty string or None")
        if self.raw_arguments is not None:
            if type(self.raw_arguments) is not str:
                raise TypeError("ScriptedToolCall.raw_arguments must be a string or None")
            if self.arguments:
                raise TypeError("ScriptedToolCall.arguments must be empty with raw_arguments")
            if len(self.raw_arguments) > MAX_RAW_ARGUMENTS_CODE_POINTS:
                raise TypeError(
                    "ScriptedToolCall.raw_arguments must be at most "
                    f"{MAX_RAW_ARGUMENTS_CODE_POINTS} code points"
                )

    def build(self, request: ModelRequest, position: int) -> ToolCall:
        """The protocol tool call this spec stands for in ``request``."""
        call_id = self.id if self.id is not None else f"call-{request.id}-{position}"
        if self.raw_arguments is not None:
            return trusted.invalid_tool_call(call_id, self.name, self.raw_arguments)
        return trusted.tool_call(call_id, self.name, self.arguments)


@dataclass(frozen=True, slots=True, kw_only=True)
class ScriptedReply:
    """A scripted turn as plain data; calling it makes the response iterator.

    The turn streams each of ``thinking`` as a thinking delta, each of ``text`` as a text
    delta, then each of ``tool_calls`` (preceded by a ``toolCallDelta`` carrying its
    arguments' JSON when ``tool_call_deltas`` is true) as a tool-call chunk, then responds with
    the same content (one block per delta, then the calls). ``stop_reason`` defaults to
    ``"toolCall"`` when there are tool calls, else ``"stop"``; ``"length"`` or ``"refusal"``
    script a truncated or refused turn. The response ID defaults to ``"response-<request
    id>"``; the message ID is ``"message-<response id>"``; ``model`` names the model.
    """

    text: tuple[str, ...] = ()
    tool_calls: tuple[ScriptedToolCall, ...] = ()
    thinking: tuple[str, ...] = ()
    response_id: str | None = None
    usage: ModelUsage = field(default=_ZERO_USAGE)
    stop_reason: StopReason | None = None
    model: str | None = None
    tool_call_deltas: bool = False

    def __post_init__(self) -> None:
        for name in ("text", "thinking", "tool_calls"):
            value: object = getattr(self, name)
            if type(value) is list:
                value = tuple(cast("list[object]", value))
                object.__setattr__(self, name, value)
            item_type = ScriptedToolCall if name == "tool_calls" else str
            items = cast("tuple[object, ...]", value) if type(value) is tuple else None
            if items is None or not all(type(item) is item_type for item in items):
                raise TypeError(
                    f"ScriptedReply.{name} must be a sequence of {item_type.__name__} values"
                )
        if self.response_id is not None and not is_non_empty(self.response_id):
            raise TypeError("ScriptedReply.response_id must be a non-empty string or None")
        if type(self.usage) is not ModelUsage:
            raise TypeError("ScriptedReply.usage must be a ModelUsage")
        if self.stop_reason is not None and self.stop_reason not in _STOP_REASONS:
            raise TypeError(f"ScriptedReply.stop_reason must be one of {sorted(_STOP_REASONS)}")
        if self.stop_reason == "stop" and self.tool_calls:
            raise TypeError("ScriptedReply: a stop reply cannot carry tool calls")
        if self.stop_reason == "toolCall" and not self.tool_calls:
            raise TypeError("ScriptedReply: a toolCall reply needs at least one tool call")
        if self.model is not None and type(self.model) is not str:
            raise TypeError("ScriptedReply.model must be a string or None")
        if type(self.tool_call_deltas) is not bool:
            raise TypeError("ScriptedReply.tool_call_deltas must be a bool")

    def __call__(
        self, request: ModelRequest, signal: AbortSignal
    ) -> AsyncIterator[ModelChunk | ModelResponse]:
        return self._turn(request)

    def response_for(self, request: ModelRequest) -> ModelResponse:
        """The terminal response this reply gives to ``request``."""
        return self._response(request, self._calls(request))

    def _calls(self, request: ModelRequest) -> tuple[ToolCall, ...]:
        return tuple(
            call.build(request, position) for position, call in enumerate(self.tool_calls, 1)
        )

    def _response(self, request: ModelRequest, calls: tuple[ToolCall, ...]) -> ModelResponse:
        response_id = self.response_id or f"response-{request.id}"
        thinking, text = self.thinking, self.text
        if thinking or len(text) > 1:
            blocks: tuple[AssistantBlock, ...] = (
                *map(trusted.thinking_block, thinking),
                *map(trusted.text_block, text),
                *calls,
            )
        elif text:  # the common shapes, without the generic unpacking
            blocks = (trusted.text_block(text[0]), *calls)
        else:
            blocks = calls
        message = trusted.assistant_message(f"message-{response_id}", blocks)
        stop_reason: StopReason = self.stop_reason or ("toolCall" if calls else "stop")
        return trusted.model_response(
            response_id, request.id, message, stop_reason, self.usage, self.model
        )

    def _chunks(
        self, request: ModelRequest, calls: tuple[ToolCall, ...]
    ) -> tuple[list[ModelChunk], ModelResponse]:
        request_id = request.id
        items: list[ModelChunk] = [
            trusted.thinking_delta_chunk(request_id, part) for part in self.thinking
        ]
        items.extend(trusted.text_delta_chunk(request_id, part) for part in self.text)
        for index, call in enumerate(calls):
            if self.tool_call_deltas:
                items.append(
                    ToolCallDeltaChunk(
                        request_id=request_id,
                        index=index,
                        id=call.id,
                        name=call.name,
                        arguments_delta=json.dumps(thaw_json(call.arguments), separators=(",", ":"))
                        if call.raw_arguments is None
                        else call.raw_arguments,
                    )
                )
            items.append(trusted.tool_call_chunk(request_id, call))
        return items, self._response(request, calls)

    async def _turn(self, request: ModelRequest) -> AsyncIterator[ModelChunk | ModelResponse]:
        items, response = self._chunks(request, self._calls(request))
        for item in items:
            yield item
        yield response


def stream_reply(
    reply: ScriptedReply, request: ModelRequest, stream: EventStream[ModelChunk, ModelResponse]
) -> None:
    """Play a plain-data reply straight into ``stream``: its chunks, then its response.

    The same items, in the same order, as iterating ``reply(request, signal)`` (what
    ``ScriptedReply._chunks`` lists), built and pushed one by one instead of listed first.
    Why: a scripted step of a run is mostly this function, and the list, its unpacking and
    the generator expressions cost as much as the values. Without tool-call deltas the
    items are the thinking deltas, the text deltas, the tool-call chunks, then the
    response; a reply with deltas takes ``_chunks`` itself. ``tests/models/test_scripted.py``
    checks both against each other on any reply.
    """
    if reply.tool_call_deltas:
        items, response = reply._chunks(request, reply._calls(request))  # pyright: ignore[reportPrivateUsage] - the module's fast path reads its reply's parts
        for item in items:
            stream.push(item)
        stream.finish(response)
        return
    request_id = request.id
    push = stream.push
    for part in reply.thinking:
        push(_thinking_delta_chunk(request_id, part))
    for part in reply.text:
        push(_text_delta_chunk(request_id, part))
    specs = reply.tool_calls
    if specs:
        calls = tuple([spec.build(request, position) for position, spec in enumerate(specs, 1)])
        for call in calls:
            push(_tool_call_chunk(request_id, call))
    else:
        calls = ()
    stream.finish(reply._response(request, calls))  # pyright: ignore[reportPrivateUsage] - the module's fast path reads its reply's parts


_thinking_delta_chunk: Final = trusted.thinking_delta_chunk
_text_delta_chunk: Final = trusted.text_delta_chunk
_tool_call_chunk: Final = trusted.tool_call_chunk


def text_reply(
    *deltas: str,
    response_id: str | None = None,
    usage: ModelUsage = _ZERO_USAGE,
    thinking: tuple[str, ...] = (),
    stop_reason: StopReason | None = None,
    model: str | None = None,
) -> ScriptedReply:
    """A turn that streams ``deltas`` and stops: ``text_reply("The sum is ", "42.")``.

    ``thinking`` streams reasoning first; ``stop_reason="length"`` or ``"refusal"`` scripts a
    truncated or refused answer.
    """
    return ScriptedReply(
        text=deltas,
        response_id=response_id,
        usage=usage,
        thinking=thinking,
        stop_reason=stop_reason,
        model=model,
    )


CallSpec: TypeAlias = (
    ScriptedToolCall | tuple[str, Mapping[str, object]] | tuple[str, Mapping[str, object], str]
)
"""A ``ScriptedToolCall`` or ``(name, arguments)`` or ``(name, arguments, call_id)``."""


def tool_call_reply(
    *calls: CallSpec,
    text: tuple[str, ...] = (),
    response_id: str | None = None,
    usage: ModelUsage = _ZERO_USAGE,
) -> ScriptedReply:
    """A turn that asks for tool calls: ``tool_call_reply(("add", {"left": 20, "right": 22}))``.

    Arguments are deep-frozen now; later changes to the caller's dict have no effect.
    """
    if not calls:
        raise TypeError("tool_call_reply() needs at least one call")
    specs: list[ScriptedToolCall] = []
    for position, call in enumerate(calls):
        if isinstance(call, ScriptedToolCall):
            specs.append(call)
            continue
        arguments = snapshot_arguments(dict(call[1]), f"calls[{position}].arguments")
        call_id = call[2] if len(call) == 3 else None
        specs.append(ScriptedToolCall(name=call[0], arguments=arguments, id=call_id))
    return ScriptedReply(text=text, tool_calls=tuple(specs), response_id=response_id, usage=usage)
