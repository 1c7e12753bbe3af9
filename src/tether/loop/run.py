"""Checkpoint 07: the agent loop. It drives a model and tools step by step and always settles.

``run_agent_loop`` checks its options synchronously (``TypeError``), snapshots the tool
registry and the starting transcript, and returns an ``EventStream[AgentEvent, RunResult]``.
Each step sends one ``ModelRequest`` (``request-001``, ``request-002``, ...), checks every
streamed chunk and the final response at the boundary (correlation, budgets, agreement
between the chunks and the final message), appends the assistant message, and runs its tool
calls one at a time in assistant order. One sequence numbers every event. The stream always
settles with a ``RunResult``:

* ``completed``: the model answered with a ``stop`` response;
* ``maxSteps``: the last allowed step was a tool turn (its whole tool batch ran);
* ``cancelled``: the signal aborted at any point; ``reason`` is the abort reason's text;
* ``failed``: ``INVALID_TRANSCRIPT``, ``SIGNAL_ACCESS_FAILED``, ``MODEL_PROTOCOL_ERROR``,
  ``MODEL_ASYNC_VALUE_UNOBSERVABLE``, ``MODEL_STREAM_FAILED``, ``TOOL_EXECUTION_FAILED`` or
  ``AGENT_RUNTIME_FAILED``.

Only complete messages are ever kept: an interrupted stream leaves no partial assistant
message and an interrupted tool no fabricated result. ``run.finished`` is always the last
event. A ``Model`` is anything whose ``stream(request, signal)`` returns async-iterable chunks
with an awaitable ``result`` (``ScriptedModel`` and ``FixtureProviderAdapter`` are models).

A run hands control back to the event loop whenever its model or a tool waits. A model that
answers from memory (a scripted reply) and tools that never wait let a run go from step to step
without a round trip through the event loop; the abort checks still happen at every boundary.
"""

from __future__ import annotations

import asyncio
import math
import types
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, Final, Literal, Protocol, TypeAlias

from tether.protocol import _trusted as trusted
from tether._producer import fail_producer, start_producer
from tether._race import (
    NotAwaitableError,
    RacedIterator,
    check_signal,
    neutralize,
    race,
    signal_aborted,
    signal_reason,
)
from tether._text import code_points, is_non_empty, message_of
from tether._types import type_of
from tether.abort import AbortSignal
from tether.jsonvalue import JsonObject
from tether.messages import (
    assistant_message,
    is_mapping,
    parse_message,
    read_field,
    text_from_assistant,
    validate_transcript,
)
from tether.protocol import (
    MAX_SAFE_INTEGER,
    AgentEvent,
    AssistantBlock,
    AssistantMessage,
    CancelledRunResult,
    CompletedRunResult,
    FailedRunResult,
    MaxStepsRunResult,
    Message,
    ModelChunk,
    ModelRequest,
    ModelResponse,
    ModelUsage,
    RunError,
    RunResult,
    TextBlock,
    TextDeltaChunk,
    ToolCall,
    ToolCallChunk,
    ToolResultMessage,
    UserMessage,
)
from tether.stream import EventStream
from tether.tools import ToolRegistry, execute_tool_call

__all__ = [
    "MAX_AGENT_STEPS",
    "MAX_INITIAL_MESSAGES",
    "MAX_MODEL_BLOCKS_PER_STEP",
    "MAX_MODEL_CHUNKS_PER_STEP",
    "MAX_MODEL_TEXT_CODE_POINTS",
    "MAX_TOOL_ARGUMENT_DEPTH",
    "MAX_TOOL_ARGUMENT_ENTRIES",
    "MAX_TOOL_ARGUMENT_NODES",
    "MAX_TOOL_ARGUMENT_STRING_CODE_POINTS",
    "Model",
    "ModelStream",
    "RunFailureCode",
    "run_agent_loop",
]

MAX_AGENT_STEPS: Final = 64
"""Hard ceiling on model steps per run."""
MAX_INITIAL_MESSAGES: Final = 4096
"""Most messages a run may start from."""
MAX_MODEL_CHUNKS_PER_STEP: Final = 1024
"""Most chunks accepted from one model turn."""
MAX_MODEL_TEXT_CODE_POINTS: Final = 65_536
"""Most streamed text per turn, and most text per assistant message, in code points."""
MAX_MODEL_BLOCKS_PER_STEP: Final = 1024
"""Most content blocks in one assistant message."""
MAX_TOOL_ARGUMENT_DEPTH: Final = 32
"""Deepest container nesting in tool arguments (the arguments object is depth 0)."""
MAX_TOOL_ARGUMENT_NODES: Final = 257
"""Most JSON values in one call's arguments, the root included."""
MAX_TOOL_ARGUMENT_ENTRIES: Final = 256
"""Most object fields plus array slots in one call's arguments."""
MAX_TOOL_ARGUMENT_STRING_CODE_POINTS: Final = 4096
"""Most code points of keys and string values in one call's arguments."""

RunFailureCode: TypeAlias = Literal[
    "INVALID_TRANSCRIPT",
    "SIGNAL_ACCESS_FAILED",
    "MODEL_PROTOCOL_ERROR",
    "MODEL_ASYNC_VALUE_UNOBSERVABLE",
    "MODEL_STREAM_FAILED",
    "TOOL_EXECUTION_FAILED",
    "AGENT_RUNTIME_FAILED",
]

_snapshot_registry = ToolRegistry.snapshot


class ModelStream(Protocol):
    """What a model returns for one request: async-iterable chunks and the final response."""

    def __aiter__(self) -> AsyncIterator[ModelChunk]: ...

    @property
    def result(self) -> Awaitable[ModelResponse]: ...


class Model(Protocol):
    """Anything that can answer a request with a ``ModelStream``."""

    def stream(self, request: ModelRequest, signal: AbortSignal) -> ModelStream: ...


class _RunFailure(Exception):
    """Internal: a failure with a run failure code."""

    code: RunFailureCode = "AGENT_RUNTIME_FAILED"


class _ModelProtocolError(_RunFailure):
    code = "MODEL_PROTOCOL_ERROR"


class _ModelStreamFailure(_RunFailure):
    code = "MODEL_STREAM_FAILED"


class _ToolPhaseFailure(_RunFailure):
    code = "TOOL_EXECUTION_FAILED"


class _SignalAccessError(_RunFailure):
    code = "SIGNAL_ACCESS_FAILED"


# --- options and starting state ------------------------------------------------------------


def run_agent_loop(
    *,
    messages: Sequence[Message],
    model: Model,
    tools: ToolRegistry,
    max_steps: int,
    signal: AbortSignal,
    request_sequence_start: int | None = 0,
) -> EventStream[AgentEvent, RunResult]:
    """Run the agent loop; see the module docstring. Option errors raise ``TypeError``.

    ``request_sequence_start`` is the number of requests an owning lifecycle already made, so
    request IDs continue (``request-NNN`` = start + step).
    """
    if type_of(max_steps) is not int or not 1 <= max_steps <= MAX_SAFE_INTEGER:
        raise TypeError("maxSteps must be a positive safe integer")
    if max_steps > MAX_AGENT_STEPS:
        raise TypeError(f"maxSteps must not exceed {MAX_AGENT_STEPS}")
    start = 0 if request_sequence_start is None else request_sequence_start
    if (
        type_of(start) is not int
        or not 0 <= start < MAX_AGENT_STEPS
        or start + max_steps > MAX_AGENT_STEPS
    ):
        raise TypeError(
            "requestSequenceStart must be a non-negative safe integer whose requested steps do "
            f"not exceed {MAX_AGENT_STEPS}"
        )
    if type_of(model) in (type(None), bool, int, float, str, bytes):
        raise TypeError("model must implement the Model contract")
    try:
        open_stream = model.stream
    except Exception:
        open_stream = None
    if not callable(open_stream):
        raise TypeError("model.stream must be a function")
    if not isinstance(tools, ToolRegistry):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise TypeError("tools must be a ToolRegistry")
    if not isinstance(signal, AbortSignal):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise TypeError("signal must be an AbortSignal")

    stream: EventStream[AgentEvent, RunResult] = EventStream()
    registry = _snapshot_registry(tools)
    try:
        transcript = _snapshot_transcript(messages)
    except Exception as error:
        _settle(
            stream, 0, _failed((), "INVALID_TRANSCRIPT", message_of(error, "Invalid transcript"))
        )
        return stream
    diagnostics = validate_transcript(transcript)
    if diagnostics:
        _settle(stream, 0, _failed(transcript, "INVALID_TRANSCRIPT", diagnostics[0].message))
        return stream
    run = _Run(stream, transcript, open_stream, registry, max_steps, start, signal)
    start_producer(run.drive())
    return stream


def _snapshot_transcript(messages: object) -> tuple[Message, ...]:
    kind = type_of(messages)
    if kind is not list and kind is not tuple:
        raise TypeError("messages must be an array")
    entries: tuple[Any, ...] = tuple(messages)  # pyright: ignore[reportArgumentType]
    if len(entries) > MAX_INITIAL_MESSAGES:
        raise TypeError(f"messages.length must not exceed {MAX_INITIAL_MESSAGES}")
    snapshot: list[Message] = []
    for index, entry in enumerate(entries):
        entry_type = type_of(entry)
        if entry_type is UserMessage or entry_type is ToolResultMessage:
            snapshot.append(entry)
            continue
        if entry_type is AssistantMessage:
            _check_assistant_bounds(entry.content)
            snapshot.append(entry)
            continue
        if not is_mapping(entry):
            raise TypeError(f"messages[{index}] has an unsupported role")
        role = read_field(entry, "role")
        if type_of(role) is not str or role not in ("user", "assistant", "toolResult"):
            raise TypeError(f"messages[{index}] has an unsupported role")
        if role == "assistant":
            content = read_field(entry, "content")
            _check_assistant_bounds(content)
            snapshot.append(assistant_message(id=read_field(entry, "id"), content=content))
        else:
            snapshot.append(parse_message(entry))
    return tuple(snapshot)


# --- bounds ---------------------------------------------------------------------------------


def _check_assistant_bounds(content: object, checked: set[int] | None = None) -> None:
    """Block count, text per message and tool-argument budgets, before materializing.

    ``checked`` holds the identities of tool calls whose arguments were already checked
    (streamed chunks carrying the very same immutable object).
    """
    kind = type_of(content)
    if kind is not list and kind is not tuple:
        return  # the constructor reports the shape
    blocks: tuple[Any, ...] = tuple(content)  # pyright: ignore[reportArgumentType]
    if len(blocks) > MAX_MODEL_BLOCKS_PER_STEP:
        raise _ModelProtocolError(
            f"Assistant message exceeds {MAX_MODEL_BLOCKS_PER_STEP} content blocks"
        )
    total = 0
    pending_high = False
    for block in blocks:
        block_type = type_of(block)
        if block_type is TextBlock:
            count, pending_high = code_points(block.text, pending_high)
        elif block_type is ToolCall:
            pending_high = False
            if checked is None or id(block) not in checked:
                _check_argument_bounds(block.arguments)
            continue
        elif is_mapping(block):
            block_kind = read_field(block, "type")
            if type_of(block_kind) is not str:
                continue  # the constructor reports the shape
            if block_kind == "toolCall":
                pending_high = False
                _check_argument_bounds(read_field(block, "arguments"))
                continue
            text = read_field(block, "text") if block_kind == "text" else ""
            if type_of(text) is not str:
                continue
            count, pending_high = code_points(text, pending_high)
        else:
            continue
        total += count
        if total > MAX_MODEL_TEXT_CODE_POINTS:
            raise _ModelProtocolError(
                f"Assistant message exceeds {MAX_MODEL_TEXT_CODE_POINTS} text code points"
            )


def _check_argument_bounds(arguments: object) -> None:
    """Walk tool arguments iteratively against the depth, node, entry and string budgets."""
    kind = type_of(arguments)
    if kind is JsonObject:
        _check_frozen_argument_bounds(arguments)
        return
    if kind is not dict:
        raise _ModelProtocolError("Tool-call arguments must be a JSON object")
    nodes = 0
    entries = 0
    strings = 0
    active: set[int] = set()
    stack: list[tuple[Any, int, bool]] = [(arguments, 0, False)]
    while stack:
        value, depth, leaving = stack.pop()
        if leaving:
            active.discard(id(value))
            continue
        nodes += 1
        if nodes > MAX_TOOL_ARGUMENT_NODES:
            raise _ModelProtocolError(
                f"Tool-call arguments exceed {MAX_TOOL_ARGUMENT_NODES} JSON values"
            )
        value_type = type_of(value)
        if value is None or value_type is bool or value_type is int:
            continue
        if value_type is float:
            if not math.isfinite(value):
                raise _ModelProtocolError("Tool-call arguments must contain only finite numbers")
            continue
        if value_type is str:
            strings += code_points(value)[0]
            if strings > MAX_TOOL_ARGUMENT_STRING_CODE_POINTS:
                raise _ModelProtocolError(
                    "Tool-call arguments exceed "
                    f"{MAX_TOOL_ARGUMENT_STRING_CODE_POINTS} string code points"
                )
            continue
        if value_type not in (JsonObject, dict, list, tuple):
            raise _ModelProtocolError("Tool-call arguments must contain only JSON values")
        if depth > MAX_TOOL_ARGUMENT_DEPTH:
            raise _ModelProtocolError(
                f"Tool-call arguments nest deeper than {MAX_TOOL_ARGUMENT_DEPTH}"
            )
        marker = id(value)
        if marker in active:
            raise _ModelProtocolError("Tool-call arguments must not contain circular references")
        active.add(marker)
        stack.append((value, depth, True))
        children: list[Any] = []
        if value_type is JsonObject or value_type is dict:
            for key, item in value.items():
                entries += 1
                if entries > MAX_TOOL_ARGUMENT_ENTRIES:
                    break
                if type_of(key) is not str:
                    raise _ModelProtocolError("Tool-call argument keys must be strings")
                strings += code_points(key)[0]
                children.append(item)
        else:
            entries += len(value)
            children.extend(value[: MAX_TOOL_ARGUMENT_ENTRIES + 1])
        if entries > MAX_TOOL_ARGUMENT_ENTRIES:
            raise _ModelProtocolError(
                f"Tool-call arguments exceed {MAX_TOOL_ARGUMENT_ENTRIES} entries"
            )
        if strings > MAX_TOOL_ARGUMENT_STRING_CODE_POINTS:
            raise _ModelProtocolError(
                "Tool-call arguments exceed "
                f"{MAX_TOOL_ARGUMENT_STRING_CODE_POINTS} string code points"
            )
        stack.extend((child, depth + 1, False) for child in reversed(children))


def _check_frozen_argument_bounds(arguments: Any) -> None:
    """The same budgets for frozen arguments: keys are ``str``, numbers finite and nothing
    can be cyclic, so only sizes are counted, one container at a time."""
    nodes = 1
    entries = 0
    strings = 0
    stack: list[tuple[Any, int]] = [(arguments, 0)]
    while stack:
        container, depth = stack.pop()
        entries += len(container)
        nodes += len(container)
        if entries > MAX_TOOL_ARGUMENT_ENTRIES:
            raise _ModelProtocolError(
                f"Tool-call arguments exceed {MAX_TOOL_ARGUMENT_ENTRIES} entries"
            )
        if nodes > MAX_TOOL_ARGUMENT_NODES:
            raise _ModelProtocolError(
                f"Tool-call arguments exceed {MAX_TOOL_ARGUMENT_NODES} JSON values"
            )
        if type_of(container) is JsonObject:
            for key in container:
                strings += len(key) if key.isascii() else code_points(key)[0]
            values = container.values()
        else:
            values = container
        for value in values:
            value_type = type_of(value)
            if value_type is str:
                strings += len(value) if value.isascii() else code_points(value)[0]
            elif value_type is JsonObject or value_type is tuple:
                if depth >= MAX_TOOL_ARGUMENT_DEPTH:
                    raise _ModelProtocolError(
                        f"Tool-call arguments nest deeper than {MAX_TOOL_ARGUMENT_DEPTH}"
                    )
                stack.append((value, depth + 1))
        if strings > MAX_TOOL_ARGUMENT_STRING_CODE_POINTS:
            raise _ModelProtocolError(
                "Tool-call arguments exceed "
                f"{MAX_TOOL_ARGUMENT_STRING_CODE_POINTS} string code points"
            )


# --- the run --------------------------------------------------------------------------------


def _failed(messages: Sequence[Message], code: RunFailureCode, message: str) -> FailedRunResult:
    return FailedRunResult(messages=tuple(messages), error=RunError(code=code, message=message))


def _settle(stream: EventStream[AgentEvent, RunResult], sequence: int, result: RunResult) -> None:
    stream.push(trusted.run_finished_event(sequence, result))
    stream.finish(result)


class _Run:
    """One run's private state: the transcript so far and the event sequence."""

    __slots__ = (
        "call_ids",
        "max_steps",
        "open_stream",
        "registry",
        "sequence",
        "signal",
        "start",
        "stream",
        "transcript",
    )

    def __init__(
        self,
        stream: EventStream[AgentEvent, RunResult],
        transcript: tuple[Message, ...],
        open_stream: Callable[[ModelRequest, AbortSignal], object],
        registry: ToolRegistry,
        max_steps: int,
        start: int,
        signal: AbortSignal,
    ) -> None:
        self.stream = stream
        self.transcript: list[Message] = list(transcript)
        self.open_stream = open_stream
        self.registry = registry
        self.max_steps = max_steps
        self.start = start
        self.signal = signal
        self.sequence = 0
        self.call_ids: set[str] = {
            block.id
            for message in transcript
            if message.role == "assistant"
            for block in message.content
            if block.type == "toolCall"
        }

    def emit(self, event: AgentEvent) -> None:
        self.stream.push(event)
        self.sequence += 1

    async def drive(self) -> None:
        try:
            result = await self.steps()
        except asyncio.CancelledError:
            # The task itself was cancelled (e.g. the event loop is shutting down).
            _settle(self.stream, self.sequence, self.terminal(None, cancelled=True))
            raise
        except Exception as error:
            result = self.terminal(error)
        except BaseException as error:
            fail_producer(self.stream, error)
            return
        _settle(self.stream, self.sequence, result)

    def terminal(self, error: BaseException | None, *, cancelled: bool = False) -> RunResult:
        """Map whatever stopped the run to its result (the first matching rule wins)."""
        messages = tuple(self.transcript)
        if isinstance(error, _SignalAccessError):
            return _failed(messages, "SIGNAL_ACCESS_FAILED", str(error))
        try:
            aborted = signal_aborted(self.signal)
            reason = signal_reason(self.signal) if aborted else None
        except Exception:
            return _failed(messages, "SIGNAL_ACCESS_FAILED", "The abort signal could not be read")
        if aborted or cancelled:
            return CancelledRunResult(messages=messages, reason=_reason_text(reason, error))
        if isinstance(error, _RunFailure):
            return _failed(messages, error.code, str(error))
        return _failed(
            messages, "AGENT_RUNTIME_FAILED", message_of(error, "Agent Loop execution failed")
        )

    async def steps(self) -> RunResult:
        signal = self.signal
        check_signal(signal)
        for message in self.transcript:
            self.emit(trusted.message_accepted_event(self.sequence, message))
        registry = self.registry
        push = self.stream.push
        for step in range(1, self.max_steps + 1):
            check_signal(signal)
            request_id = f"request-{self.start + step:03d}"
            request = trusted.model_request(request_id, tuple(self.transcript))
            response = await self.model_turn(request)
            message = response.message
            self.extend(message)
            if response.stop_reason == "stop":
                final_text = _joined(text_from_assistant(message))
                return CompletedRunResult(messages=tuple(self.transcript), final_text=final_text)
            for block in message.content:
                if block.type != "toolCall":
                    continue
                check_signal(signal)
                push(trusted.tool_started_event(self.sequence, block))
                self.sequence += 1
                try:
                    result = await execute_tool_call(registry, block, signal)
                except Exception as error:
                    check_signal(signal)
                    raise _ToolPhaseFailure(message_of(error, "Tool execution failed")) from error
                check_signal(signal)
                self.transcript.append(result)
                push(trusted.tool_finished_event(self.sequence, result))
                self.sequence += 1
            if step == self.max_steps:
                return MaxStepsRunResult(messages=tuple(self.transcript), max_steps=self.max_steps)
        raise AssertionError("unreachable: the last step always returns")  # pragma: no cover

    def extend(self, message: AssistantMessage) -> None:
        """Append the assistant message if its tool calls can be linked in this transcript.

        The starting transcript was validated and every later message comes from this loop,
        so the only way a response can break linkage is by reusing a tool-call ID; that is
        checked here in O(calls) instead of revalidating the whole transcript each step.
        """
        new_ids = [block.id for block in message.content if block.type == "toolCall"]
        if len(set(new_ids)) != len(new_ids) or not self.call_ids.isdisjoint(new_ids):
            placeholders = [
                ToolResultMessage(
                    id=f"placeholder-{block.id}",
                    tool_call_id=block.id,
                    tool_name=block.name,
                    content="",
                    is_error=False,
                )
                for block in message.content
                if block.type == "toolCall"
            ]
            found = validate_transcript([*self.transcript, message, *placeholders])
            detail = found[0].message if found else "duplicate Tool call ID"
            raise _ModelProtocolError(f"Model response cannot extend the transcript: {detail}")
        self.call_ids.update(new_ids)
        self.transcript.append(message)

    async def model_turn(self, request: ModelRequest) -> ModelResponse:
        """One model invocation: open, stream and check chunks, then check the response."""
        signal = self.signal
        try:
            opened = self.open_stream(request, signal)
        except Exception as error:
            check_signal(signal)
            raise _ModelStreamFailure(
                message_of(error, "Model stream could not be opened")
            ) from error
        stream = _model_stream(opened)
        try:
            iterator: Any = type_of(stream).__aiter__(stream)
            if not callable(getattr(type_of(iterator), "__anext__", None)):
                raise TypeError("not an async iterator")
        except Exception as error:
            raise _ModelProtocolError("Model stream iterator must expose __anext__()") from error
        source: RacedIterator[object] = RacedIterator(iterator, signal)
        active = request.id
        chunks: list[ModelChunk] = []
        text = 0
        pending_high = False
        try:
            while True:
                try:
                    item = source.poll(_PENDING)  # tether's own streams: no await when ready
                    if item is _PENDING:
                        check_signal(signal)
                        item = await source.next()
                except StopAsyncIteration:
                    break
                except NotAwaitableError as error:
                    raise _ModelProtocolError("Model iterator step must be awaitable") from error
                except Exception as error:
                    check_signal(signal)
                    raise _ModelStreamFailure(message_of(error, "Model stream failed")) from error
                check_signal(signal)
                if len(chunks) >= MAX_MODEL_CHUNKS_PER_STEP:
                    raise _ModelProtocolError(
                        f"Model turn exceeded {MAX_MODEL_CHUNKS_PER_STEP} chunks"
                    )
                chunk = _snapshot_chunk(item, active)
                if chunk.type == "textDelta":
                    count, pending_high = code_points(chunk.delta, pending_high)
                    text += count
                    if text > MAX_MODEL_TEXT_CODE_POINTS:
                        raise _ModelProtocolError(
                            f"Model turn exceeded {MAX_MODEL_TEXT_CODE_POINTS} streamed text "
                            "code points"
                        )
                else:
                    pending_high = False
                if chunk is not item:  # a mapping was read: caller code ran since the last check
                    check_signal(signal)
                chunks.append(chunk)
                self.emit(trusted.model_chunk_event(self.sequence, chunk))
        finally:
            source.close()
        raw = _settled_response(stream, signal)
        if raw is _PENDING:
            raw = await _awaited_response(stream, signal)
        check_signal(signal)
        streamed_calls = {id(chunk.tool_call) for chunk in chunks if chunk.type == "toolCall"}
        response = _snapshot_response(raw, active, streamed_calls)
        _check_agreement(chunks, response.message)
        return response


_PENDING: Final = object()


def _settled_response(stream: ModelStream, signal: AbortSignal) -> object:
    """The response of a settled ``EventStream`` without awaiting, else ``_PENDING``."""
    if type_of(stream) is not EventStream:
        return _PENDING
    settled: EventStream[Any, Any] = stream  # pyright: ignore[reportAssignmentType]
    try:
        return settled.result_nowait(_PENDING)
    except Exception as error:
        check_signal(signal)
        raise _ModelStreamFailure(message_of(error, "Model stream failed")) from error


async def _awaited_response(stream: ModelStream, signal: AbortSignal) -> object:
    """The model's terminal response, read from ``stream.result`` at this moment."""
    try:
        pending = stream.result
    except Exception as error:
        raise _ModelProtocolError("Model stream result is not accessible") from error
    if not _is_awaitable(pending):
        raise _ModelProtocolError("Model stream result must be awaitable")
    try:
        return await race(signal, pending)
    except Exception as error:
        check_signal(signal)
        raise _ModelStreamFailure(message_of(error, "Model stream failed")) from error


_CANCELLED_FALLBACK: Final = "The run was cancelled"


def _reason_text(reason: object, error: BaseException | None) -> str:
    """The text of ``reason`` (or of ``error`` when there is no reason): a non-empty string
    as it is, an exception's message, another object's non-empty ``message`` attribute."""
    candidate = error if reason is None else reason
    if isinstance(candidate, str):
        return candidate if is_non_empty(candidate) else _CANCELLED_FALLBACK
    if isinstance(candidate, BaseException):
        return message_of(candidate, _CANCELLED_FALLBACK)
    try:
        message = getattr(candidate, "message", None)
    except Exception:
        return _CANCELLED_FALLBACK
    return message if is_non_empty(message) else _CANCELLED_FALLBACK


def _joined(text: str) -> str:
    """Join surrogate halves written as two code points into one character."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "surrogatepass")
    return text


# --- the model boundary ---------------------------------------------------------------------


def _is_awaitable(value: object) -> bool:
    kind = type_of(value)
    if kind is types.CoroutineType:
        return True
    try:
        return callable(getattr(kind, "__await__", None))
    except Exception:
        return False


def _model_stream(opened: object) -> ModelStream:
    if type_of(opened) is EventStream:
        return opened  # pyright: ignore[reportReturnType]
    try:
        iterable = callable(getattr(type_of(opened), "__aiter__", None))
    except Exception:
        iterable = False
    if iterable:
        return opened  # pyright: ignore[reportReturnType]
    neutralize(opened)
    raise _ModelProtocolError("model.stream must return an EventStream")


def _snapshot_chunk(item: object, active: str) -> ModelChunk:
    kind = type_of(item)
    try:
        if kind is TextDeltaChunk or kind is ToolCallChunk:
            chunk: ModelChunk = item  # pyright: ignore[reportAssignmentType]
        elif is_mapping(item):
            chunk = _chunk_from_mapping(item)
        else:
            raise _ModelProtocolError("Model chunk must be an object")
    except _ModelProtocolError:
        raise
    except Exception as error:
        raise _ModelProtocolError("Model chunk could not be inspected safely") from error
    if chunk.request_id != active:
        raise _ModelProtocolError(f'Model chunk requestId must equal active request "{active}"')
    if chunk.type == "toolCall":
        _check_argument_bounds(chunk.tool_call.arguments)
    return chunk


def _chunk_from_mapping(item: object) -> ModelChunk:
    chunk_type = read_field(item, "type")
    if type_of(chunk_type) is not str:
        raise _ModelProtocolError("Model chunk has an unsupported type")
    if chunk_type == "textDelta":
        request_id = read_field(item, "requestId")
        delta = read_field(item, "delta")
        if not is_non_empty(request_id) or type_of(delta) is not str:
            raise _ModelProtocolError("Model text chunk is invalid")
        return TextDeltaChunk(request_id=request_id, delta=delta)
    if chunk_type == "toolCall":
        request_id = read_field(item, "requestId")
        raw_call = read_field(item, "toolCall")
        if not is_non_empty(request_id) or (
            type_of(raw_call) is not ToolCall and not is_mapping(raw_call)
        ):
            raise _ModelProtocolError("Model Tool-call chunk is invalid")
        try:
            if type_of(raw_call) is not ToolCall:
                _check_argument_bounds(read_field(raw_call, "arguments"))
            block = assistant_message(id="chunk", content=[raw_call]).content[0]
        except _ModelProtocolError:
            raise
        except Exception as error:
            raise _ModelProtocolError("Model Tool-call chunk is invalid") from error
        assert block.type == "toolCall"
        return ToolCallChunk(request_id=request_id, tool_call=block)
    raise _ModelProtocolError("Model chunk has an unsupported type")


def _snapshot_response(raw: object, active: str, checked: set[int]) -> ModelResponse:
    try:
        if type_of(raw) is ModelResponse:
            response: ModelResponse = raw  # pyright: ignore[reportAssignmentType]
            _check_assistant_bounds(response.message.content, checked)
        elif is_mapping(raw):
            response = _response_from_mapping(raw)
        else:
            raise _ModelProtocolError("Model response must be an object")
    except _ModelProtocolError:
        raise
    except Exception as error:
        raise _ModelProtocolError(
            f"Model response is invalid: {message_of(error, 'could not be inspected')}"
        ) from error
    if response.request_id != active:
        raise _ModelProtocolError(f'Model response requestId must equal active request "{active}"')
    has_calls = any(block.type == "toolCall" for block in response.message.content)
    if response.stop_reason == "stop" and has_calls:
        raise _ModelProtocolError("A stop response must not contain Tool calls")
    if response.stop_reason == "toolCall" and not has_calls:
        raise _ModelProtocolError("A toolCall response must contain at least one Tool call")
    return response


def _response_from_mapping(raw: object) -> ModelResponse:
    message = read_field(raw, "message")
    if type_of(message) is AssistantMessage:
        _check_assistant_bounds(message.content)
        assistant: AssistantMessage = message
    else:
        if not is_mapping(message) or read_field(message, "role") != "assistant":
            raise _ModelProtocolError("Model response message must be an assistant message")
        content = read_field(message, "content")
        _check_assistant_bounds(content)
        assistant = assistant_message(id=read_field(message, "id"), content=content)
    usage = read_field(raw, "usage")
    if type_of(usage) is not ModelUsage:
        if not is_mapping(usage):
            raise _ModelProtocolError("Model response usage must be an object")
        usage = ModelUsage(
            input_tokens=read_field(usage, "inputTokens"),
            output_tokens=read_field(usage, "outputTokens"),
        )
    return ModelResponse(
        id=read_field(raw, "id"),
        request_id=read_field(raw, "requestId"),
        message=assistant,
        stop_reason=read_field(raw, "stopReason"),
        usage=usage,
    )


_Segment: TypeAlias = "str | ToolCall"


def _segments(blocks: Sequence[TextBlock | ToolCall]) -> list[_Segment]:
    """Adjacent text coalesced into one segment; tool calls separate text runs."""
    segments: list[_Segment] = []
    text: list[str] | None = None
    for block in blocks:
        if block.type == "text":
            if text is None:
                text = []
                segments.append("")
            text.append(block.text)
            segments[-1] = "".join(text)
        else:
            text = None
            segments.append(block)
    return segments


def _check_agreement(chunks: list[ModelChunk], message: AssistantMessage) -> None:
    """Everything in the final message must have been streamed, in the same order."""
    if _streamed_verbatim(chunks, message.content):
        return
    streamed = _segments(
        [
            TextBlock(text=chunk.delta) if chunk.type == "textDelta" else chunk.tool_call
            for chunk in chunks
        ]
    )
    final = _segments(message.content)
    if len(streamed) != len(final):
        raise _ModelProtocolError("Streamed chunks do not match the final message")
    for left, right in zip(streamed, final, strict=True):
        if type_of(left) is not type_of(right):
            raise _ModelProtocolError("Streamed chunk order does not match the final message")
        if type_of(left) is str:
            if _joined(left) != _joined(right):  # pyright: ignore[reportArgumentType]
                raise _ModelProtocolError("Streamed text does not match the final message")
        elif not _same_call(left, right):  # pyright: ignore[reportArgumentType]
            raise _ModelProtocolError("Streamed Tool call does not match the final message")


def _streamed_verbatim(chunks: list[ModelChunk], content: tuple[AssistantBlock, ...]) -> bool:
    """True when each block is exactly one chunk: the same tool-call object, or a text block
    whose text is the delta. Such a turn agrees without coalescing anything."""
    if len(chunks) != len(content):
        return False
    for chunk, block in zip(chunks, content, strict=True):
        if chunk.type == "toolCall":
            if chunk.tool_call is not block:
                return False
        elif block.type != "text" or block.text != chunk.delta:
            return False
    return True


def _same_call(left: ToolCall, right: ToolCall) -> bool:
    if left is right:
        return True
    return (
        left.id == right.id
        and left.name == right.name
        and _same_json(left.arguments, right.arguments)
    )


def _same_json(left: object, right: object) -> bool:
    """Deep JSON equality where ``True`` is not ``1`` and ``0.0`` is not ``-0.0``."""
    left_type = type_of(left)
    if left_type is not type_of(right) and not (
        left_type in (int, float) and type_of(right) in (int, float)
    ):
        return False
    if left_type is JsonObject:
        left_map: JsonObject = left  # pyright: ignore[reportAssignmentType]
        right_map: JsonObject = right  # pyright: ignore[reportAssignmentType]
        return left_map.keys() == right_map.keys() and all(
            _same_json(value, right_map[key]) for key, value in left_map.items()
        )
    if left_type is tuple:
        left_items: tuple[object, ...] = left  # pyright: ignore[reportAssignmentType]
        right_items: tuple[object, ...] = right  # pyright: ignore[reportAssignmentType]
        return len(left_items) == len(right_items) and all(
            _same_json(a, b) for a, b in zip(left_items, right_items, strict=True)
        )
    if left_type is float or type_of(right) is float:
        return left == right and math.copysign(1, left) == math.copysign(1, right)  # pyright: ignore[reportArgumentType]
    return left == right
