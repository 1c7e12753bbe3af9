"""The agent loop: ``run_agent_loop`` drives a model and tools step by step and always settles.

``run_agent_loop`` checks its options synchronously (``TypeError``), snapshots the tool
registry and the starting transcript, and returns an ``EventStream[AgentEvent, RunResult]``.
Each step sends one ``ModelRequest`` (``request-001``, ``request-002``, ... with no upper
bound on the number) carrying the transcript, the ``system`` prompt and the registry's
``ToolSpec`` values; checks every streamed chunk and the final response at the boundary
(``tether.loop.checks``, bounded by ``RunLimits``); appends the assistant message; and runs
its tool calls one at a time in assistant order. One sequence numbers every event. The
stream always settles with a ``RunResult`` whose ``usage`` totals every accepted response:

* ``completed``: the model answered with a ``stop`` response;
* ``maxSteps``: the last allowed step was a tool turn (its whole tool batch ran);
* ``cancelled``: the signal aborted, or the consumer went away (its iterator was closed
  with ``aclose()``, or the last task awaiting ``result`` was cancelled: reason
  ``"run consumer went away"``); ``reason`` is the abort reason's text;
* ``failed``: ``INVALID_TRANSCRIPT``, ``SIGNAL_ACCESS_FAILED``, ``MODEL_PROTOCOL_ERROR``,
  ``MODEL_ASYNC_VALUE_UNOBSERVABLE``, ``MODEL_STREAM_FAILED``, ``MODEL_OUTPUT_TRUNCATED``
  (a ``length`` response), ``MODEL_REFUSED`` (a ``refusal`` response),
  ``TOOL_EXECUTION_FAILED`` or ``AGENT_RUNTIME_FAILED``.

Only complete messages are ever kept: an interrupted stream leaves no partial assistant
message and an interrupted tool no fabricated result. A ``length`` or ``refusal`` response's
message is kept, and its tool calls are never executed. ``run.finished`` is always the last
event. A ``CancelledError`` raised by a model or tool while nothing cancelled the run is a
failure (``MODEL_STREAM_FAILED`` / ``TOOL_EXECUTION_FAILED``), not a cancellation.

A run hands control back to the event loop whenever its model or a tool waits. A model that
answers from memory (a scripted reply) and tools that never wait let a run go from step to step
without a round trip through the event loop; the abort checks still happen at every boundary.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import deque
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final, TypeGuard, cast

from tether._errors import TetherError
from tether._producer import (
    NoRunningLoopError,
    fail_producer,
    require_running_loop,
    shed_frames,
    start_producer,
)
from tether._race import (
    NotAwaitableError,
    RacedIterator,
    check_signal,
    follow_signal,
    is_raw_abort_reason,
    neutralize,
    race,
    reraise_task_cancellation,
    signal_aborted,
    signal_reason,
)
from tether._text import code_points, is_non_empty, message_of
from tether._types import instance_of, is_awaitable, type_of
from tether.abort import AbortController, AbortError, AbortSignal
from tether.loop.checks import (
    InvalidTranscript,
    ModelOutputTruncated,
    ModelProtocolError,
    ModelRefused,
    ModelStreamFailure,
    RunFailure,
    RunFailureCode,
    SignalAccessError,
    ToolPhaseFailure,
    check_agreement,
    joined,
    limit_hint,
    snapshot_chunk,
    snapshot_response,
    snapshot_transcript,
)
from tether.loop.hooks import ToolHooks, run_hooked_tool_call
from tether.loop.invalid_calls import invalid_call_result
from tether.loop.limits import (
    MAX_AGENT_STEPS,
    MAX_INITIAL_MESSAGES,
    MAX_MODEL_BLOCKS_PER_STEP,
    MAX_MODEL_CHUNKS_PER_STEP,
    MAX_MODEL_TEXT_CODE_POINTS,
    MAX_TOOL_ARGUMENT_DEPTH,
    MAX_TOOL_ARGUMENT_ENTRIES,
    MAX_TOOL_ARGUMENT_NODES,
    MAX_TOOL_ARGUMENT_STRING_CODE_POINTS,
    RunLimits,
    check_max_steps,
    limits_for,
)
from tether.loop.output import NO_OUTPUT, OutputState
from tether.loop.progress import ProgressReporter
from tether.loop.retries import RetryBudget, check_tool_retries
from tether.models.base import Model, ModelStream, listen_for_retries, stop_listening
from tether.protocol import (
    MAX_SAFE_INTEGER,
    ZERO_USAGE,
    AgentEvent,
    AssistantMessage,
    CancelledRunResult,
    FailedRunResult,
    Message,
    ModelChunk,
    ModelRequest,
    ModelResponse,
    ModelRetryPayload,
    RunError,
    RunResult,
    ToolCall,
    ToolResultMessage,
    ToolSpec,
    assert_never,
)
from tether.protocol import _trusted as trusted
from tether.protocol.transcript import text_from_assistant, validate_transcript
from tether.providers.errors import ProviderError
from tether.stream import EventStream, is_event_stream
from tether.tools import ToolRegistry, execute_tool_call
from tether.tools.output import OutputT

if TYPE_CHECKING:
    from tether.tracing._config import Tracing
    from tether.tracing._spans import RunTrace

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
    "NoRunningLoopError",
    "RunFailureCode",
    "RunLimits",
    "run_agent_loop",
]

_snapshot_registry = ToolRegistry.snapshot
CONSUMER_GONE: Final = "run consumer went away"
"""The abort reason's text when the consumer closed its iterator or stopped awaiting."""


# --- options and starting state ------------------------------------------------------------


def run_agent_loop(
    *,
    messages: Sequence[Message],
    model: Model,
    tools: ToolRegistry,
    max_steps: int,
    signal: AbortSignal | None = None,
    system: str | None = None,
    limits: RunLimits | None = None,
    request_sequence_start: int | None = 0,
    hooks: ToolHooks | None = None,
    deps: object = None,
    tool_retries: int | None = None,
    output_type: type[OutputT] | None = None,
    output_retries: int = 1,
    tracing: Tracing | None = None,
) -> EventStream[AgentEvent, RunResult[OutputT]]:
    """Run one agent run: ask ``model``, run the tools it calls, repeat until it answers.

    Returns at once with an ``EventStream``: iterate it for the run's events
    (``message.accepted``, ``model.chunk``, ``model.retry`` when the model waits to try a
    request again, ``tool.started``, ``tool.progress`` with a running tool's output (what it
    reports through ``context.progress``: coalesced, at most 32 KiB per call),
    ``tool.finished``, and ``run.finished`` last), or just ``await stream.result`` for the
    ``RunResult``. It must be
    called with an event loop running (from ``async`` code). Every run ends with exactly one
    result, matched on ``status``:

    * ``completed``: the model answered (``final_text``; with ``output_type``, ``output``);
    * ``maxSteps``: ``max_steps`` model turns were used up by tool turns;
    * ``cancelled``: ``signal`` aborted, or you stopped listening (``aclose()`` on the
      iterator, or cancelling the task awaiting ``result``); ``reason`` says why;
    * ``failed``: ``error.code`` is a stable ``RunErrorCode`` (``MODEL_STREAM_FAILED``,
      ``MODEL_PROTOCOL_ERROR``, ``TOOL_RETRIES_EXHAUSTED``, ...), ``error.message`` says what
      happened and ``error.hint``, when set, what to change.

    ``messages`` is the starting transcript (``UserMessage(content=...)`` and the other
    messages); ``result.messages`` is it plus every complete message of the run. ``tools``
    is a ``ToolRegistry`` (e.g. ``ToolRegistry([my_tool])`` with ``@tool`` functions);
    ``max_steps`` bounds the model turns. ``system`` is sent with every request.
    ``signal`` (an ``AbortSignal``) cancels the run. ``deps`` is any value your tools need
    (a database, a client): a tool reads it as ``context.deps`` from a parameter annotated
    ``RunContext[YourDeps]``. ``tool_retries`` is how many failed calls in a row a tool
    without its own ``@tool(retries=...)`` allows before the run fails (``None``:
    unbounded). ``output_type`` (a dataclass, ``TypedDict``, pydantic model or other
    annotation ``@tool`` accepts) asks for a structured answer: it is offered as the
    ``final_result`` tool, and ``result.output`` is the validated value, typed;
    ``output_retries`` is how many invalid answers the model may give before the run fails
    with ``OUTPUT_RETRIES_EXHAUSTED``. ``limits`` (``RunLimits``) bounds what the model may
    send; it defaults to the model's ``run_limits`` (the HTTP models carry
    ``RunLimits.for_real_models()``) or else ``RunLimits()``. ``hooks`` (``ToolHooks``) are
    called around every tool call, e.g. to ask a person before a tool runs.
    ``request_sequence_start`` is for owners of a longer conversation: the number of
    requests already made, so request IDs continue (``request-NNN``). ``tracing``
    (``tether.tracing.Tracing``) traces the run with OpenTelemetry: one span for the run, one
    per model request and one per tool call (``TRACING_UNAVAILABLE`` without
    ``tether[otel]``); without it the run pays nothing for tracing.

    An invalid call (``ToolCall.raw_arguments`` set: the model's argument text was not a
    JSON object) is never run and no hook sees it: it gets ``tool.started``/``tool.finished``
    and an ``is_error`` result ``TOOL_ARGUMENTS_INVALID: ...`` saying where the JSON breaks
    (``tether.loop.invalid_calls``), so the model can try again.

    Options that are not what they say raise ``TypeError`` at once.
    """
    limits = limits_for(model, limits)
    check_max_steps(max_steps, limits, "max_steps")
    start = 0 if request_sequence_start is None else request_sequence_start
    if type_of(start) is not int or not 0 <= start <= MAX_SAFE_INTEGER - max_steps:
        raise TypeError("request_sequence_start must be a non-negative safe integer")
    if system is not None and type_of(system) is not str:
        raise TypeError("system must be a string or None")
    if type_of(model) in (type(None), bool, int, float, str, bytes):
        raise TypeError(
            "model must implement the Model contract (a stream(request, signal) method)"
        )
    try:
        open_stream = model.stream
    except Exception:
        open_stream = None
    if not callable(open_stream):
        raise TypeError("model.stream must be a function")
    if not instance_of(tools, ToolRegistry):
        raise TypeError("tools must be a ToolRegistry (e.g. ToolRegistry([my_tool]))")
    if signal is not None and not instance_of(signal, AbortSignal):
        raise TypeError("signal must be an AbortSignal or None")
    if hooks is not None and type_of(hooks) is not ToolHooks:
        raise TypeError("hooks must be a ToolHooks or None")
    check_tool_retries(tool_retries)
    output = OutputState.for_run(output_type, output_retries, tools)
    if tracing is not None:
        from tether.tracing._config import Tracing  # a traced run's import only (issue 30)

        if type_of(tracing) is not Tracing:
            raise TypeError("tracing must be a tether.tracing.Tracing or None")
    require_running_loop("run_agent_loop()")  # the arguments are checked first

    stream: EventStream[AgentEvent, RunResult] = EventStream()
    push = stream.push
    trace = None
    if tracing is not None:
        from tether.tracing._spans import RunTrace

        trace = RunTrace(tracing, model, system)
        open_stream = trace.open_stream(open_stream)
        push = trace.emit(push)
    registry = _snapshot_registry(tools)
    try:
        transcript = snapshot_transcript(messages, limits)
    except InvalidTranscript as error:
        _settle(
            stream,
            0,
            _failed(error.messages, "INVALID_TRANSCRIPT", str(error), ZERO_USAGE, error.hint),
            trace,
        )
        return stream
    controller = AbortController()
    detach = follow_signal(signal, controller)
    if detach is None:
        _settle(
            stream,
            0,
            _failed((), "SIGNAL_ACCESS_FAILED", "The abort signal could not be read", ZERO_USAGE),
            trace,
        )
        return stream
    stream.on_abandon(_ConsumerGone(controller))
    run = _Run(
        push,
        transcript,
        open_stream,
        registry,
        max_steps,
        start,
        controller.signal,
        system,
        limits,
        hooks,
        deps=deps,
        budget=RetryBudget.for_run(registry, tool_retries),
        output=output,
    )
    if trace is None:
        start_producer(_drive(run, stream, detach))
    else:
        with trace.attached():  # the producer's task keeps the run's span as current
            start_producer(_drive(run, stream, detach, trace))
    return stream


async def run_owned_turns(
    *,
    transcript: tuple[Message, ...],
    call_ids: set[str],
    open_stream: Callable[[ModelRequest, AbortSignal], object],
    registry: ToolRegistry,
    max_steps: int,
    signal: AbortSignal,
    system: str | None,
    limits: RunLimits,
    hooks: ToolHooks | None,
    request_sequence_start: int,
    sequence_start: int,
    emit: Callable[[AgentEvent], None],
    deps: object = None,
    budget: RetryBudget | None = None,
    output: OutputState | None = None,
) -> tuple[RunResult, int]:
    """The loop for an owner of a trusted transcript (the stateful ``Agent``).

    The same steps, checks and results as ``run_agent_loop``, minus what an owner already did
    or does itself: the options and ``transcript`` are trusted (checked when the owner took
    them; ``call_ids`` are its tool-call IDs, and are updated), the transcript is not
    announced with ``message.accepted``, events go to ``emit`` numbered from
    ``sequence_start``, and no ``run.finished`` is emitted. Runs on the caller's task.
    Returns the result and the next free sequence number. ``tests/test_agent_owned.py``
    checks it against ``run_agent_loop`` event for event.

    Why: an owner runs one short sub-run per turn over a growing transcript; re-checking and
    re-announcing that transcript every turn made a session quadratic.
    """
    run = _Run(
        emit,
        transcript,
        open_stream,
        registry,
        max_steps,
        request_sequence_start,
        signal,
        system,
        limits,
        hooks,
        sequence=sequence_start,
        call_ids=call_ids,
        announce=False,
        deps=deps,
        budget=budget,
        output=output,
    )
    result = await run.outcome()
    return result, run.sequence


async def _drive(
    run: _Run,
    stream: EventStream[AgentEvent, RunResult],
    detach: Callable[[], None],
    trace: RunTrace | None = None,
) -> None:
    """``run_agent_loop``'s producer: settle ``stream`` with the run's outcome, whatever it is."""
    try:
        result = await run.outcome()
    except asyncio.CancelledError:
        # The task itself was cancelled (e.g. the event loop is shutting down).
        detach()
        _settle(stream, run.sequence, run.terminal(None, cancelled=True), trace)
        raise
    except BaseException as error:
        detach()
        if trace is not None:
            trace.finish(run.terminal(None, cancelled=True))
        fail_producer(stream, error)
        return
    detach()
    _settle(stream, run.sequence, result, trace)


class _ConsumerGone:
    """The run stream's ``on_abandon`` callback: abort the run, ``CONSUMER_GONE``. An object
    rather than a closure: one object per run in flight instead of three."""

    __slots__ = ("_controller",)

    def __init__(self, controller: AbortController) -> None:
        self._controller = controller

    def __call__(self) -> None:
        self._controller.abort(AbortError(CONSUMER_GONE))


# --- the run --------------------------------------------------------------------------------


def _failed(
    messages: Sequence[Message], code: RunFailureCode, message: str, usage: Any, hint: str = ""
) -> FailedRunResult:
    return FailedRunResult(
        messages=tuple(messages),
        error=RunError(code=code, message=message, hint=hint),
        usage=usage,
    )


def _settle(
    stream: EventStream[AgentEvent, RunResult],
    sequence: int,
    result: RunResult,
    trace: RunTrace | None = None,
) -> None:
    if trace is not None:
        trace.finish(result)
    stream.push(trusted.run_finished_event(sequence, result))
    stream.finish(result)


class _Run:
    """One run's private state: the transcript so far, the event sequence and the usage."""

    __slots__ = (
        "announce",
        "budget",
        "call_ids",
        "deps",
        "emit_event",
        "hooks",
        "limits",
        "loop",
        "max_steps",
        "notices",
        "open_stream",
        "output",
        "registry",
        "sequence",
        "signal",
        "specs",
        "start",
        "system",
        "thread",
        "transcript",
        "usage",
    )

    def __init__(
        self,
        emit: Callable[[AgentEvent], None],
        transcript: tuple[Message, ...],
        open_stream: Callable[[ModelRequest, AbortSignal], object],
        registry: ToolRegistry,
        max_steps: int,
        start: int,
        signal: AbortSignal,
        system: str | None,
        limits: RunLimits,
        hooks: ToolHooks | None,
        *,
        sequence: int = 0,
        call_ids: set[str] | None = None,
        announce: bool = True,
        deps: object = None,
        budget: RetryBudget | None = None,
        output: OutputState | None = None,
    ) -> None:
        self.emit_event = emit
        self.output = output
        self.deps = deps
        self.budget = budget
        self.transcript: list[Message] = list(transcript)
        self.open_stream = open_stream
        self.registry = registry
        self.specs: tuple[ToolSpec, ...] = (
            registry.specs() if output is None else (*registry.specs(), output.spec.tool)
        )
        self.max_steps = max_steps
        self.start = start
        self.signal = signal
        self.system = system
        self.limits = limits
        self.hooks = hooks
        self.sequence = sequence
        self.announce = announce
        self.usage = ZERO_USAGE
        self.notices = _RetryNotices()
        self.loop = asyncio.get_running_loop()  # both callers run with a loop running
        self.thread = threading.get_ident()
        self.call_ids: set[str] = (
            {
                block.id
                for message in transcript
                if message.role == "assistant"
                for block in message.content
                if block.type == "toolCall"
            }
            if call_ids is None
            else call_ids
        )

    def emit(self, event: AgentEvent) -> None:
        self.emit_event(event)
        self.sequence += 1

    def report_retry(self, payload: ModelRetryPayload) -> None:
        """The run's retry listener: while a model turn is open (from the opening of its
        stream until its first chunk or its end), each checked ``ModelRetryPayload`` for the
        turn's request becomes ``model.retry``; anything else is dropped."""
        notices = self.notices
        if (
            not notices.open
            or type_of(payload) is not ModelRetryPayload
            or payload.request_id != notices.request_id
            or notices.count >= MAX_RETRY_NOTICES_PER_TURN
        ):
            return
        notices.count += 1
        self.emit(trusted.model_retry_event(self.sequence, payload))

    def emit_progress(self, call: ToolCall, text: str) -> None:
        """``tool.progress`` for a running call (called by its ``ProgressReporter``)."""
        self.emit(trusted.tool_progress_event(self.sequence, call, text))

    async def outcome(self) -> RunResult:
        """Run the steps and map whatever stopped them to a result. Raises only what must
        not become a result: task cancellation and other base exceptions."""
        listening = listen_for_retries(self.report_retry)
        try:
            return await self.steps()
        except Exception as error:
            return self.terminal(error)
        except BaseException as error:
            if is_raw_abort_reason(self.signal, error):  # caller code raised the raw reason
                return self.terminal(None)
            raise
        finally:
            stop_listening(listening)

    def terminal(self, error: BaseException | None, *, cancelled: bool = False) -> RunResult:
        """Map whatever stopped the run to its result (the first matching rule wins)."""
        messages = tuple(self.transcript)
        usage = self.usage
        if isinstance(error, SignalAccessError):
            return _failed(messages, "SIGNAL_ACCESS_FAILED", str(error), usage)
        aborted = signal_aborted(self.signal)
        reason = signal_reason(self.signal) if aborted else None
        if aborted or cancelled:
            return CancelledRunResult(
                messages=messages, reason=_reason_text(reason, error), usage=usage
            )
        if isinstance(error, RunFailure):
            return _failed(messages, error.code, str(error), usage, error.hint)
        return _failed(
            messages,
            "AGENT_RUNTIME_FAILED",
            message_of(error, "Agent Loop execution failed"),
            usage,
        )

    async def steps(self) -> RunResult:
        signal = self.signal
        check_signal(signal)
        if self.announce:
            for message in self.transcript:
                self.emit(trusted.message_accepted_event(self.sequence, message))
        registry = self.registry
        push = self.emit_event
        hooks = self.hooks
        deps = self.deps
        budget = self.budget
        output = self.output
        for step in range(1, self.max_steps + 1):
            check_signal(signal)
            request_id = f"request-{self.start + step:03d}"
            request = trusted.model_request(
                request_id, tuple(self.transcript), self.system, self.specs
            )
            response = await self.model_turn(request)
            message = response.message
            self.extend(message)
            self.usage = self.usage + response.usage
            stop_reason = response.stop_reason
            if stop_reason == "stop":
                if output is None:
                    return trusted.completed_result(
                        tuple(self.transcript), joined(text_from_assistant(message)), self.usage
                    )
                output.failed("a text answer")
                reminder = output.reminder(request_id)
                self.transcript.append(reminder)
                self.emit(trusted.message_accepted_event(self.sequence, reminder))
                if step == self.max_steps:
                    return trusted.max_steps_result(
                        tuple(self.transcript), self.max_steps, self.usage
                    )
                continue
            if stop_reason == "length":
                raise ModelOutputTruncated(
                    "The model's output was cut off at its output-token limit; the partial "
                    "message is kept and its tool calls were not run (raise the model's "
                    "max_output_tokens)"
                )
            if stop_reason == "refusal":
                raise ModelRefused("The model refused to answer; its message is kept")
            if stop_reason != "toolCall":
                assert_never(stop_reason)
            final: object = NO_OUTPUT
            for block in message.content:
                if block.type != "toolCall":
                    continue
                check_signal(signal)
                push(trusted.tool_started_event(self.sequence, block))
                self.sequence += 1
                if output is not None and (block.name == output.name or final is not NO_OUTPUT):
                    result, value = output.answer(block, final is not NO_OUTPUT)
                    self.transcript.append(result)
                    push(trusted.tool_finished_event(self.sequence, result))
                    self.sequence += 1
                    if final is not NO_OUTPUT:
                        continue
                    if value is NO_OUTPUT:
                        output.failed("invalid arguments")
                    final = value
                    continue
                reporter = ProgressReporter(
                    block, self.emit_progress, loop=self.loop, thread=self.thread
                )
                try:
                    if block.raw_arguments is not None:  # invalid: answered, never executed
                        result = invalid_call_result(block)
                    elif hooks is None:
                        result = await execute_tool_call(
                            registry, block, signal, deps, progress=reporter.report
                        )
                    else:
                        result = await run_hooked_tool_call(
                            hooks, registry, block, self.transcript, signal, deps, reporter.report
                        )
                except asyncio.CancelledError as error:
                    reraise_task_cancellation(error)
                    check_signal(signal)
                    raise ToolPhaseFailure(
                        "Tool raised CancelledError although nothing cancelled the run"
                    ) from error
                except Exception as error:
                    check_signal(signal)
                    raise ToolPhaseFailure(message_of(error, "Tool execution failed")) from error
                finally:
                    reporter.close(signal)
                check_signal(signal)
                self.transcript.append(result)
                push(trusted.tool_finished_event(self.sequence, result))
                self.sequence += 1
                if budget is not None:
                    budget.record(result)
            if final is not NO_OUTPUT:
                return trusted.completed_result(
                    tuple(self.transcript),
                    joined(text_from_assistant(message)),
                    self.usage,
                    final,
                )
            if step == self.max_steps:
                return trusted.max_steps_result(tuple(self.transcript), self.max_steps, self.usage)
        raise AssertionError("unreachable: the last step always returns")  # pragma: no cover

    def extend(self, message: AssistantMessage) -> None:
        """Append the assistant message if its tool calls can be linked in this transcript.

        The starting transcript was checked and every later message comes from this loop, so
        the only way a response can break linkage is by reusing a tool-call ID; that is
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
            raise ModelProtocolError(f"Model response cannot extend the transcript: {detail}")
        self.call_ids.update(new_ids)
        self.transcript.append(message)

    async def model_turn(self, request: ModelRequest) -> ModelResponse:
        """One model invocation: open, stream and check chunks, then check the response.

        The model's retry notices for this request (``tether.models.base.retry_listener``)
        become ``model.retry`` events until its first chunk arrives."""
        signal = self.signal
        limits = self.limits
        notices = self.notices  # open for this request (inline: a step's hot path)
        notices.request_id = request.id
        notices.count = 0
        notices.open = True
        try:
            opened = self.open_stream(request, signal)
        except Exception as error:
            notices.open = False
            check_signal(signal)
            raise ModelStreamFailure(
                message_of(error, "Model stream could not be opened")
            ) from error
        stream = _model_stream(opened)
        finished = _finished_events(stream)  # taken at once: no iterator, nothing to race
        source: RacedIterator[object] | None = None
        if finished is None:
            try:
                iterator: Any = type_of(stream).__aiter__(stream)
                if not callable(getattr(type_of(iterator), "__anext__", None)):
                    raise TypeError("not an async iterator")
            except Exception as error:
                raise ModelProtocolError("Model stream iterator must expose __anext__()") from error
            source = RacedIterator(iterator, signal)
        active = request.id
        chunks: list[ModelChunk] = []  # text, thinking and tool calls: matched at the end
        streamed_calls: set[int] = set()  # the tool calls checked as chunks, by identity
        count = 0
        max_chunks = limits.max_chunks_per_step
        max_text = limits.max_text_code_points
        text = 0
        pending_high = False
        try:
            while True:
                if source is None:  # the events of a finished stream, taken at once
                    if not finished:
                        break
                    item = finished.popleft()
                else:
                    try:
                        item = source.poll(_PENDING)  # tether's own streams: no await when ready
                        if item is _PENDING:
                            check_signal(signal)
                            item = await source.next()
                    except StopAsyncIteration:
                        break
                    except NotAwaitableError as error:
                        raise ModelProtocolError("Model iterator step must be awaitable") from error
                    except asyncio.CancelledError as error:
                        shed_frames(error, _TURN)
                        reraise_task_cancellation(error)
                        check_signal(signal)
                        raise ModelStreamFailure(_UNCANCELLED_MODEL) from error
                    except Exception as error:
                        shed_frames(error, _TURN)
                        check_signal(signal)
                        raise _stream_failure(error) from error
                check_signal(signal)
                if count >= max_chunks:
                    raise ModelProtocolError(
                        f"Model turn exceeded {max_chunks} chunks",
                        limit_hint("max_chunks_per_step"),
                    )
                count += 1
                notices.open = False  # retries come before anything streamed
                chunk = snapshot_chunk(item, active, limits)
                if chunk.type == "textDelta":
                    added, pending_high = code_points(chunk.delta, pending_high)
                    text += added
                    chunks.append(chunk)
                elif chunk.type == "thinkingDelta":
                    added, _ = code_points(chunk.delta)
                    text += added
                    pending_high = False
                    chunks.append(chunk)
                elif chunk.type == "toolCall":
                    pending_high = False
                    chunks.append(chunk)
                    streamed_calls.add(id(chunk.tool_call))
                elif chunk.type != "toolCallDelta":
                    assert_never(chunk)
                if text > max_text:
                    raise ModelProtocolError(
                        f"Model turn exceeded {max_text} streamed text code points",
                        limit_hint("max_text_code_points"),
                    )
                if chunk is not item:  # a mapping was read: caller code ran since the last check
                    check_signal(signal)
                self.emit(trusted.model_chunk_event(self.sequence, chunk))
        except BaseException:
            notices.open = False
            if source is not None:
                source.close()
            await _abandoned_stream_settled(stream)
            raise
        notices.open = False
        if source is not None:
            source.close()
        raw = _settled_response(stream, signal)
        if raw is _PENDING:
            raw = await _awaited_response(stream, signal)
        check_signal(signal)
        response = snapshot_response(raw, active, streamed_calls, limits)
        if response is not raw:  # a mapping was read: caller code ran since the last check
            check_signal(signal)
        check_agreement(chunks, response.message)
        return response


MAX_RETRY_NOTICES_PER_TURN: Final = 100
"""At most this many ``model.retry`` events per model turn (a provider's policy allows far
fewer; a model of one's own that reports more is not believed)."""


class _RetryNotices:
    """The retry-notice state of one run's open model turn (see ``_Run.report_retry``).

    It holds no reference back to its run: a finished run must be freed by reference
    counting alone, never left to the cycle collector (thousands of concurrent runs made
    its full passes over their heap the cost that grew faster than the number of runs).
    """

    __slots__ = ("count", "open", "request_id")

    def __init__(self) -> None:
        self.request_id = ""
        self.count = 0
        self.open = False


_TURN: Final = (_Run.model_turn,)
"""The loop's own frame on a model failure's traceback (``shed_frames``)."""
_PENDING: Final = object()
_UNCANCELLED_MODEL: Final = "Model stream raised CancelledError although nothing cancelled the run"


class ScriptExhausted(RunFailure):
    code = "SCRIPT_EXHAUSTED"


def _stream_failure(error: Exception) -> RunFailure:
    """The run failure of a failed model stream: ``SCRIPT_EXHAUSTED`` when a scripted model
    ran out of replies (a test's script is too short), else ``MODEL_STREAM_FAILED``."""
    # By its code (codes are the contract), so the loop need not import the scripted model.
    if instance_of(error, TetherError) and error.code == "SCRIPT_EXHAUSTED":
        return ScriptExhausted(
            error.message,
            "the ScriptedModel has fewer replies than the run makes model turns: add a "
            "ScriptedReply for each turn (each tool turn is followed by another request)",
        )
    return ModelStreamFailure(_stream_failure_text(error))


def _stream_failure_text(error: Exception) -> str:
    """What a failed model stream reports: a provider error's stable code first
    (``"PROVIDER_RATE_LIMITED: HTTP 429: ..."``), so the run's message says which failure."""
    text = message_of(error, "Model stream failed")
    if isinstance(error, ProviderError):
        return f"{error.code}: {text}"
    return text


ABANDONED_STREAM_GRACE: Final = 1.0
"""Seconds a turn that ends early waits for the model stream it abandoned to settle."""


async def _abandoned_stream_settled(stream: ModelStream) -> None:
    """A turn ended before its model stream did (a broken limit, a failure, an abort): when the
    stream is tether's ``EventStream`` and its producer was told (``abandon_notified``), wait
    for it to settle, at most ``ABANDONED_STREAM_GRACE`` seconds. The HTTP providers settle
    only after closing their response, so the run's outcome comes after that and leaves
    nothing running. Whatever the stream settles with is not this turn's outcome."""
    if not is_event_stream(stream):
        return
    abandoned = stream
    if abandoned.settled or not abandoned.abandon_notified:
        return
    with contextlib.suppress(Exception):
        async with asyncio.timeout(ABANDONED_STREAM_GRACE):
            await abandoned.result


def _finished_events(stream: ModelStream) -> deque[object] | None:
    """The events of a model stream that is tether's ``EventStream`` and already finished,
    taken at once (``EventStream.take_finished``), else ``None``: the turn then iterates the
    stream. ``tests/test_loop_fast_paths.py`` checks a run over such streams against the run
    over the same items iterated."""
    if type_of(stream) is not EventStream:
        return None
    return cast("EventStream[object, object]", stream).take_finished()


def _settled_response(stream: ModelStream, signal: AbortSignal) -> object:
    """The response of a settled ``EventStream`` without awaiting, else ``_PENDING``."""
    if not is_event_stream(stream):
        return _PENDING
    settled = stream
    try:
        return settled.result_nowait(_PENDING)
    except Exception as error:
        check_signal(signal)
        raise _stream_failure(error) from error


async def _awaited_response(stream: ModelStream, signal: AbortSignal) -> object:
    """The model's terminal response, read from ``stream.result`` at this moment."""
    try:
        pending = stream.result
    except Exception as error:
        raise ModelProtocolError("Model stream result is not accessible") from error
    if not is_awaitable(pending):
        raise ModelProtocolError("Model stream result must be awaitable")
    try:
        return await race(signal, pending)
    except asyncio.CancelledError as error:
        reraise_task_cancellation(error)
        check_signal(signal)
        raise ModelStreamFailure(_UNCANCELLED_MODEL) from error
    except Exception as error:
        check_signal(signal)
        raise _stream_failure(error) from error


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


def _iterable(opened: object) -> TypeGuard[ModelStream]:
    """Whether ``opened``'s class has a callable ``__aiter__``: all that is checked of a model
    stream before it is read (each item and the result are checked as they come)."""
    try:
        return callable(getattr(type_of(opened), "__aiter__", None))
    except Exception:
        return False


def _model_stream(opened: object) -> ModelStream:
    if is_event_stream(opened):
        return opened
    if _iterable(opened):
        return opened
    neutralize(opened)
    raise ModelProtocolError("model.stream must return an EventStream")
