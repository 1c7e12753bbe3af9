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

This module is the entry points (their option checks, the producer that settles the run's
stream, the consumer-gone callback); a run's state and steps are ``tether.loop._run_steps``, and
one model turn (open, stream, check) is ``tether.loop._model_turn``. Those, the checks, the
hooks, the tools and the protocol load with the first run, not with this module: resolving
``tether.run_agent_loop`` loads asyncio and the stream's producer only (issue 30: importing
the usable API).

A run hands control back to the event loop whenever its model or a tool waits. A model that
answers from memory (a scripted reply) and tools that never wait let a run go from step to step
without a round trip through the event loop; the abort checks still happen at every boundary.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Final

from tether._async.producer import NoRunningLoopError
from tether.abort import AbortError

if TYPE_CHECKING:
    from tether._async.producer import require_running_loop, start_producer
    from tether._async.race import follow_signal
    from tether._base.exact_types import instance_of, type_of
    from tether.abort import AbortController, AbortSignal
    from tether.loop._run_steps import Run, failed
    from tether.loop.checks import InvalidTranscript, RunFailureCode, snapshot_transcript
    from tether.loop.hooks import ToolHooks
    from tether.loop.output import OutputState
    from tether.loop.retries import RetryBudget, check_tool_retries
    from tether.models.base import Model
    from tether.models.limits import RunLimits, check_max_steps, limits_for
    from tether.protocol import (
        ZERO_USAGE,
        AgentEvent,
        Message,
        ModelRequest,
        RunResult,
    )
    from tether.protocol._trusted import run_finished_event
    from tether.stream import EventStream
    from tether.tools import ToolRegistry
    from tether.tools.output import OutputT
    from tether.tracing._config import Tracing
    from tether.tracing._spans import RunTrace

__all__ = [
    "NoRunningLoopError",
    "RunFailureCode",
    "run_agent_loop",
]

CONSUMER_GONE: Final = "run consumer went away"
"""The abort reason's text when the consumer closed its iterator or stopped awaiting."""


_machinery_loaded = False
_max_safe_integer = 0  # ``tether.protocol.MAX_SAFE_INTEGER`` once the machinery is loaded


def _load_machinery() -> None:
    """Import the run's machinery into this module's globals, once: the first run's work, not
    this module's (see the module docstring). Why globals and not imports inside
    ``run_agent_loop``: each ``from ... import`` statement costs about a microsecond even when
    the module is loaded, ~10 µs a run for these thirteen (and ``_settle``'s builder, once
    per run, the same way)."""
    global _machinery_loaded, require_running_loop, start_producer, follow_signal
    global instance_of, type_of, AbortController, AbortSignal, Run, failed
    global InvalidTranscript, snapshot_transcript, ToolHooks, OutputState
    global RetryBudget, check_tool_retries, check_max_steps, limits_for
    global _max_safe_integer, ZERO_USAGE, EventStream, ToolRegistry, run_finished_event
    from tether._async.producer import require_running_loop, start_producer
    from tether._async.race import follow_signal
    from tether._base.exact_types import instance_of, type_of
    from tether.abort import AbortController, AbortSignal
    from tether.loop._run_steps import Run, failed
    from tether.loop.checks import InvalidTranscript, snapshot_transcript
    from tether.loop.hooks import ToolHooks
    from tether.loop.output import OutputState
    from tether.loop.retries import RetryBudget, check_tool_retries
    from tether.models.limits import check_max_steps, limits_for
    from tether.protocol import MAX_SAFE_INTEGER, ZERO_USAGE
    from tether.protocol._trusted import run_finished_event
    from tether.stream import EventStream
    from tether.tools import ToolRegistry

    _max_safe_integer = MAX_SAFE_INTEGER
    _machinery_loaded = True


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
    if not _machinery_loaded:
        _load_machinery()
    limits = limits_for(model, limits)
    check_max_steps(max_steps, limits, "max_steps")
    start = 0 if request_sequence_start is None else request_sequence_start
    if type_of(start) is not int or not 0 <= start <= _max_safe_integer - max_steps:
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
    registry = ToolRegistry.snapshot(tools)
    try:
        transcript = snapshot_transcript(messages, limits)
    except InvalidTranscript as error:
        _settle(
            stream,
            0,
            failed(error.messages, "INVALID_TRANSCRIPT", str(error), ZERO_USAGE, error.hint),
            trace,
        )
        return stream
    controller = AbortController()
    detach = follow_signal(signal, controller)
    if detach is None:
        _settle(
            stream,
            0,
            failed((), "SIGNAL_ACCESS_FAILED", "The abort signal could not be read", ZERO_USAGE),
            trace,
        )
        return stream
    stream.on_abandon(_ConsumerGone(controller))
    run = Run(
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
    Returns the result and the next free sequence number. ``tests/agent/test_owned.py``
    checks it against ``run_agent_loop`` event for event.

    Why: an owner runs one short sub-run per turn over a growing transcript; re-checking and
    re-announcing that transcript every turn made a session quadratic.
    """
    if not _machinery_loaded:
        _load_machinery()

    run = Run(
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
    run: Run,
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
        from tether._async.producer import fail_producer

        detach()
        if trace is not None:
            trace.finish(run.terminal(None, cancelled=True))
        fail_producer(stream, error)
        return
    detach()
    _settle(stream, run.sequence, result, trace)


def __getattr__(name: str) -> object:
    """``RunFailureCode`` (an alias of ``tether.loop.checks``) loads with the checks."""
    if name == "RunFailureCode":
        from tether.loop.checks import RunFailureCode

        return RunFailureCode
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class _ConsumerGone:
    """The run stream's ``on_abandon`` callback: abort the run, ``CONSUMER_GONE``. An object
    rather than a closure: one object per run in flight instead of three."""

    __slots__ = ("_controller",)

    def __init__(self, controller: AbortController) -> None:
        self._controller = controller

    def __call__(self) -> None:
        self._controller.abort(AbortError(CONSUMER_GONE))


def _settle(
    stream: EventStream[AgentEvent, RunResult],
    sequence: int,
    result: RunResult,
    trace: RunTrace | None = None,
) -> None:
    if trace is not None:
        trace.finish(result)
    stream.push(run_finished_event(sequence, result))  # a global: see ``_load_machinery``
    stream.finish(result)
