"""The stateful ``Agent``: one owner per conversation, across runs.

``run_agent_loop`` is a single run. An application (a CLI, a server, a notebook) needs an
object that owns a conversation, refuses to interleave two runs over it, takes more work while
a run is busy, and reports to subscribers without letting them break it. ``Agent`` is that
object. Its rules, in short:

* **Snapshots at construction.** The model's ``stream`` method is read once and bound; the tool
  registry is copied through ``ToolRegistry.snapshot`` (the base method, so a subclass cannot
  leak later registrations); the starting transcript is checked and frozen.
* **One logical run at a time.** ``prompt()`` and ``continue_()`` raise ``AgentBusyError``
  (``AGENT_BUSY``) synchronously while a run owns the transcript; they never queue. During a
  run, ``steer()`` and ``follow_up()`` are the only ways to add work. Both are synchronous
  functions that return the run's ``EventStream`` and start it on a task, so they need a
  running event loop (``run_sync()`` is the synchronous door).
* **A logical run is a loop of one-step sub-runs.** Each turn is one model step (and its tool
  batch) over the current transcript, with one event sequence for the whole logical run.
  Request IDs continue (``request-001``, ``request-002``, ...) over the Agent's life, not
  only within a run (the workshop restarts them per run; then a scripted model's default
  IDs, derived from request IDs, would collide in the second run). Between turns, one
  queued steering message is accepted; when the model would finish, one follow-up is. Every
  queued item stays its own user message.
* **Cancellation wins the adoption race.** ``cancel(reason)`` aborts the running turn; the
  cancelled turn's output is never adopted, so the transcript stays as it was before that turn
  (never an assistant tool call without its results). After the terminal result is selected,
  ``cancel()`` returns ``False``. With ``interrupted_turns="keep"`` (beyond the workshop; a
  coding session wants it) the cancelled turn is adopted as far as it got instead, closed
  into a valid transcript so the model learns what happened: the assistant message as far as
  it streamed (its text, its complete tool calls), an ``is_error`` result for each call left
  unanswered (``TOOL_CALL_INTERRUPTED: interrupted by the user; it may have had side
  effects`` for the one that was running, ``... before it ran`` for the others), then the
  user-role note ``INTERRUPTED_TURN_NOTE``. Each is announced with ``message.accepted`` and
  recorded; a turn that produced nothing leaves the transcript as it was.
* **Bounded.** The transcript may hold ``limits.max_initial_messages`` messages (4,096 by
  default) and the queues 256 items together; work that could overflow the transcript is
  refused when it is added (``AgentMessageLimitError``, ``AGENT_MESSAGE_LIMIT``), by the
  capacity reservations of the workshop.
* **Subscribers observe; they cannot interfere.** Each event is pushed to the run's stream,
  then given to the subscribers in registration order. A subscriber that raises is recorded
  in ``subscriber_errors``; one that returns an awaitable has it scheduled and observed, never
  awaited (so one that blocks forever cannot delay the run), and its failure recorded later.
* **Always a result.** Any unexpected failure becomes a ``failed`` result
  (``AGENT_STATE_FAILED``); ``is_running`` is ``False`` by the time ``result`` settles, and
  queued items that were not consumed stay queued.
* **Never an orphan tool call.** A turn that ended with tool calls unanswered (a ``length``
  or ``refusal`` stop, a tool failure that stopped the batch) gets an ``is_error`` result
  ``TOOL_CALL_NOT_RUN`` for each, so the next request is valid (not in the workshop, whose
  scripted turns never leave calls behind).

Beyond the workshop: ``system`` and ``limits`` options (``RunLimits.for_real_models()`` and
more than 64 steps when the caller says so), ``usage`` summed over every run, ``run()`` and
``run_sync()`` conveniences, and ``before_tool_call``/``after_tool_call`` hooks (see
``tether.loop.hooks``) so a host can ask a person before a tool runs.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
import uuid
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Final, Literal, Protocol, TypeAlias, cast, runtime_checkable

from tether._errors import TetherError
from tether._producer import require_running_loop, start_producer
from tether._race import reraise_task_cancellation, signal_aborted, signal_reason
from tether._text import is_non_empty, message_of
from tether._types import instance_of, is_awaitable, type_of
from tether.abort import AbortController, AbortError, AbortSignal
from tether.agent.auto_compaction import (
    AutoCompaction,
    context_tokens,
    forced_options,
    summary_message,
)
from tether.agent.compaction import (
    MAX_CONTEXT_MESSAGES,
    ActiveContext,
    ContextCompactionError,
    ContextCompactionRecord,
    ContextLimits,
    ContextSummary,
    compact_context,
)
from tether.agent.summarizer import model_summarizer
from tether.loop.checks import InvalidTranscript, snapshot_transcript
from tether.loop.hooks import AfterToolCall, BeforeToolCall, ToolHooks
from tether.loop.limits import MAX_AGENT_STEPS, MAX_INITIAL_MESSAGES, RunLimits, limits_for
from tether.loop.output import OutputState
from tether.loop.retries import RetryBudget, check_tool_retries
from tether.loop.run import CONSUMER_GONE, run_owned_turns
from tether.models.base import Model, ModelStream
from tether.protocol import (
    MAX_SAFE_INTEGER,
    ZERO_USAGE,
    AgentEvent,
    AgentEventType,
    AssistantBlock,
    AssistantMessage,
    CancelledRunResult,
    FailedRunResult,
    MaxStepsRunResult,
    Message,
    ModelChunk,
    ModelRequest,
    ModelUsage,
    RunError,
    RunResult,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    assert_never,
    new_message_id,
)
from tether.protocol import _trusted as trusted
from tether.protocol.results import AgentFailureCode
from tether.stream import EventStream
from tether.tools import ToolRegistry
from tether.tools.output import OutputT
from tether.tools.serialize import serialize_output

__all__ = [
    "INTERRUPTED_TURN_NOTE",
    "MAX_AGENT_MESSAGES",
    "MAX_AGENT_QUEUED_MESSAGES",
    "Agent",
    "AgentBusyError",
    "AgentFailureCode",
    "AgentMessageLimitError",
    "AgentRecordingError",
    "AgentStateError",
    "AgentSubscriber",
    "AgentSubscriberError",
    "InterruptedTurns",
    "TranscriptRecorder",
    "unanswered_call_results",
    "unanswered_tool_calls",
]

MAX_AGENT_QUEUED_MESSAGES: Final = 256
"""Steering plus follow-up items an Agent holds at once."""
MAX_AGENT_MESSAGES: Final = MAX_INITIAL_MESSAGES
"""The workshop's cap on an Agent's transcript (``RunLimits.max_initial_messages``), so an
owned transcript is always a valid input to the loop."""

INTERRUPTED_TURN_NOTE: Final = "[the user interrupted the previous answer]"
"""The content of the user-role note that ends an interrupted turn an Agent kept
(``interrupted_turns="keep"``): it tells the model its answer was cut off."""

InterruptedTurns: TypeAlias = Literal["discard", "keep"]
"""What an Agent adopts from a cancelled turn: nothing (``"discard"``, the workshop's rule) or
the turn as far as it got, closed into a valid transcript (``"keep"``)."""

_INTERRUPTED_RUNNING: Final = (
    "TOOL_CALL_INTERRUPTED: interrupted by the user; it may have had side effects"
)
_INTERRUPTED_WAITING: Final = "TOOL_CALL_INTERRUPTED: interrupted by the user before it ran"

AgentSubscriber: TypeAlias = Callable[[AgentEvent, AbortSignal], object]
"""Called with each event and the run's signal; may return ``None`` or an awaitable."""

DEFAULT_CANCEL_REASON: Final = "Agent run cancelled"
_STATE_FAILED: Final = "Stateful Agent lifecycle failed"
_SUBSCRIBER_FAILED: Final = "Agent subscriber failed"
_GENERATED_ID: Final = re.compile(r"agent-user-(\d{6})")


class AgentBusyError(TetherError, RuntimeError):
    """``prompt()``/``continue_()`` while a run owns the transcript (``AGENT_BUSY``).

    Raised synchronously; nothing was queued. Use ``steer()`` or ``follow_up()`` to add work
    to a running Agent, or wait for ``result``.
    """

    def __init__(self) -> None:
        super().__init__("AGENT_BUSY", "Agent is already running")


class AgentMessageLimitError(TetherError):
    """The transcript or the queues would exceed their caps (``AGENT_MESSAGE_LIMIT``)."""

    def __init__(self, message: str) -> None:
        super().__init__("AGENT_MESSAGE_LIMIT", message)


class AgentStateError(TetherError, RuntimeError):
    """``continue_()`` has nothing to continue from (``AGENT_NOTHING_TO_CONTINUE``)."""

    def __init__(self, message: str) -> None:
        super().__init__("AGENT_NOTHING_TO_CONTINUE", message)


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentSubscriberError:
    """A recorded subscriber failure: which event, which subscriber (IDs start at 1), why."""

    event_type: AgentEventType
    listener_id: int
    message: str


@runtime_checkable
class TranscriptRecorder(Protocol):
    """Where an Agent writes what enters its transcript, as it enters (a session).

    The Agent awaits each call on its run's task before going on, so a recorded transcript
    is never behind by more than the message being written. A recorder that raises ends the
    run ``failed`` with ``AGENT_RECORDING_FAILED`` (the message says why); the Agent keeps
    its state. A cancelled turn is never recorded (it is never adopted), unless the Agent
    keeps interrupted turns (``interrupted_turns="keep"``): then what it adopted is recorded.
    """

    async def record_messages(self, messages: tuple[Message, ...]) -> None:
        """Messages appended to the transcript, in order."""
        ...

    async def record_compaction(
        self,
        summary: ContextSummary,
        kept: tuple[Message, ...],
        record: ContextCompactionRecord,
    ) -> None:
        """The context was compacted: ``summary`` now stands for everything before ``kept``
        (the retained messages, already recorded), as ``record`` describes."""
        ...


class AgentRecordingError(TetherError):
    """The recorder could not write the transcript (``AGENT_RECORDING_FAILED``); a run ends
    ``failed`` with this code, ``Agent.compact()`` raises it."""

    def __init__(self, error: BaseException) -> None:
        detail = message_of(error, type(error).__name__)
        super().__init__(
            "AGENT_RECORDING_FAILED", f"The transcript could not be recorded: {detail}"
        )


class _Bound:
    """A model made of a bound ``stream`` method (for the default summarizer)."""

    __slots__ = ("_open",)

    def __init__(self, open_stream: Callable[[ModelRequest, AbortSignal], object]) -> None:
        self._open = open_stream

    def stream(self, request: ModelRequest, signal: AbortSignal) -> ModelStream:
        """Open the bound model's stream."""
        return self._open(request, signal)  # pyright: ignore[reportReturnType]


_USAGE_FIELDS: Final = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")


def _context_limits(cap: int) -> ContextLimits:
    """The compaction limits for a transcript cap: the workshop's when it fits them."""
    return ContextLimits() if cap <= MAX_CONTEXT_MESSAGES else ContextLimits.for_coding()


class _ActiveRun:
    """The run that owns the transcript: its controller, its stream, its terminal state."""

    __slots__ = (
        "controller",
        "deps",
        "done",
        "output",
        "publish",
        "signal",
        "structured",
        "terminal",
    )

    def __init__(self, deps: object = None, structured: OutputState | None = None) -> None:
        self.deps = deps
        self.structured = structured
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.controller = AbortController()
        self.signal = self.controller.signal
        self.output: EventStream[AgentEvent, RunResult] = EventStream()
        self.terminal: RunResult | None = None  # set when the terminal event is selected
        self.publish: Callable[[AgentEvent], None] = _ignore


def _ignore(_: AgentEvent) -> None:  # pragma: no cover - replaced before use
    pass


class _LogicalRun:
    """Counters of one logical run: the next event sequence, turns taken, usage so far."""

    __slots__ = ("sequence", "turns", "usage")

    def __init__(self) -> None:
        self.sequence = 0
        self.turns = 0
        self.usage: ModelUsage = ZERO_USAGE


class _TurnTrace:
    """What one turn streamed, for keeping it when it is interrupted: its text, thinking and
    complete tool-call chunks in order, and the calls whose tool started."""

    __slots__ = ("chunks", "started")

    def __init__(self) -> None:
        self.chunks: list[ModelChunk] = []
        self.started: set[str] = set()

    def observe(self, event: AgentEvent) -> None:
        if event.type == "model.chunk":
            chunk = event.payload.chunk
            if chunk.type != "toolCallDelta":
                self.chunks.append(chunk)
        elif event.type == "tool.started":
            self.started.add(event.payload.tool_call.id)

    def partial_message(self) -> AssistantMessage | None:
        """The assistant message as far as it streamed (``None`` when nothing did): adjacent
        deltas of one kind joined into one block, complete tool calls in their place."""
        blocks: list[AssistantBlock] = []
        run: list[str] = []
        kind: str | None = None

        def flush() -> None:
            if kind is not None and run:
                text = _encodable("".join(run))
                if kind == "text":
                    blocks.append(trusted.text_block(text))
                else:
                    blocks.append(trusted.thinking_block(text))

        for chunk in self.chunks:
            if chunk.type == "toolCall":
                flush()
                run, kind = [], None
                blocks.append(chunk.tool_call)
                continue
            chunk_kind = "text" if chunk.type == "textDelta" else "thinking"
            if chunk_kind != kind:
                flush()
                run, kind = [], chunk_kind
            if chunk.type == "textDelta" or chunk.type == "thinkingDelta":
                run.append(chunk.delta)
        flush()
        if not blocks:
            return None
        return trusted.assistant_message(new_message_id(), tuple(blocks))


def _encodable(text: str) -> str:
    """``text`` with surrogate halves joined and a lone one (a delta cut mid-character) made
    U+FFFD, so a session can write it."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


class Agent:
    """A conversation with a model: each ``run`` adds a user message, runs the model and
    its tools until it answers, and keeps the transcript for the next run.

    >>> agent = Agent(model=ScriptedModel([ScriptedReply(text=("hi",))]))  # doctest: +SKIP
    >>> result = await agent.run("hello")                                 # doctest: +SKIP
    >>> result.final_text, len(agent.messages)                             # doctest: +SKIP
    ('hi', 2)

    ``await agent.run(content)`` returns the ``RunResult`` (``run_sync`` from a script without
    an event loop; ``prompt`` returns the event stream instead). ``deps=`` reaches the tools
    as ``RunContext[Deps].deps``; ``output_type=`` asks for a typed ``result.output``. One
    run at a time: ``prompt`` while running raises ``AgentBusyError``; add work to a running
    run with ``steer`` / ``follow_up``; ``cancel`` stops it (its unfinished turn is dropped);
    ``subscribe`` observes every event. Interrupted tool calls are always closed, so the
    transcript stays a valid request.

    Options (keyword-only): ``model`` (its ``stream`` is bound once), ``tools`` (a
    ``ToolRegistry``, copied), ``max_steps`` (model turns per logical run; default 64, at most
    ``limits.max_steps``), ``messages`` (the starting transcript, checked and frozen),
    ``system`` (sent with every request), ``limits`` (``RunLimits``; the transcript cap is
    ``limits.max_initial_messages``), ``before_tool_call`` / ``after_tool_call`` (see
    ``tether.loop.hooks``), ``summary`` (a ``ContextSummary`` the context starts with),
    ``compaction`` (``AutoCompaction``), ``recorder`` (a ``TranscriptRecorder``),
    ``history`` (messages compacted away before ``messages``: only read so generated IDs
    and request numbers continue after them), ``interrupted_turns`` (``"discard"``, the
    default: a cancelled turn adopts nothing; ``"keep"``: it is kept as far as it got, closed
    with ``TOOL_CALL_INTERRUPTED`` results and ``INTERRUPTED_TURN_NOTE``; see the module
    docstring), ``tool_retries`` (failed calls in a row a tool without its own ``retries``
    allows per logical run before it fails with ``TOOL_RETRIES_EXHAUSTED``; ``None``, the
    default, is unbounded). Option errors raise ``TypeError`` (``AgentMessageLimitError`` for
    a transcript that is too long).
    """

    __slots__ = (
        "__weakref__",
        "_active",
        "_call_ids",
        "_cap",
        "_compaction",
        "_compaction_error",
        "_compactions",
        "_failures",
        "_follow_ups",
        "_hooks",
        "_interrupted",
        "_last_usage",
        "_limits",
        "_listeners",
        "_max_steps",
        "_next_listener",
        "_next_number",
        "_open_stream",
        "_pending",
        "_recorder",
        "_requests",
        "_run_reserve",
        "_snapshot",
        "_steering",
        "_summary",
        "_system",
        "_tool_retries",
        "_tools",
        "_transcript",
        "_unrecorded",
        "_usage",
        "_usage_seen",
    )

    def __init__(
        self,
        *,
        model: Model,
        tools: ToolRegistry | None = None,
        max_steps: int | None = None,
        messages: Sequence[Message] = (),
        system: str | None = None,
        limits: RunLimits | None = None,
        before_tool_call: BeforeToolCall | None = None,
        after_tool_call: AfterToolCall | None = None,
        summary: ContextSummary | None = None,
        compaction: AutoCompaction | None = None,
        recorder: TranscriptRecorder | None = None,
        history: Sequence[Message] = (),
        interrupted_turns: InterruptedTurns = "discard",
        tool_retries: int | None = None,
    ) -> None:
        self._open_stream = _bound_stream(model)
        if type_of(interrupted_turns) is not str or interrupted_turns not in ("discard", "keep"):
            raise TypeError('Agent interrupted_turns must be "discard" or "keep"')
        self._interrupted: InterruptedTurns = interrupted_turns
        self._tool_retries = check_tool_retries(tool_retries)
        if tools is not None and not instance_of(tools, ToolRegistry):
            raise TypeError("Agent tools must be a ToolRegistry")
        self._tools = ToolRegistry.snapshot(ToolRegistry() if tools is None else tools)
        if limits is not None and type_of(limits) is not RunLimits:
            raise TypeError("Agent limits must be a RunLimits")
        limits = limits_for(model, limits)
        self._limits = limits
        steps = min(MAX_AGENT_STEPS, limits.max_steps) if max_steps is None else max_steps
        if type_of(steps) is not int or not 1 <= steps <= MAX_SAFE_INTEGER:
            raise TypeError("Agent max_steps must be a positive safe integer")
        if steps > limits.max_steps:
            raise TypeError(
                f"Agent max_steps must not exceed {limits.max_steps} (raise RunLimits.max_steps, "
                "e.g. with RunLimits.for_real_models())"
            )
        self._max_steps: int = steps
        if system is not None and type_of(system) is not str:
            raise TypeError("Agent system must be a string or None")
        self._system = system
        self._hooks = (
            None
            if before_tool_call is None and after_tool_call is None
            else ToolHooks(before_tool_call=before_tool_call, after_tool_call=after_tool_call)
        )
        self._cap = limits.max_initial_messages
        # While a turn runs, its output is not adopted yet: one assistant message and at most
        # one result per tool call (a call is a block, and a streamed chunk).
        self._run_reserve = 1 + min(limits.max_chunks_per_step, limits.max_blocks_per_step)
        self._transcript: list[Message] = self._snapshot_messages(messages)
        if summary is not None and type_of(summary) is not ContextSummary:
            raise TypeError("Agent summary must be a ContextSummary or None")
        if summary is not None:
            self._transcript.insert(0, summary_message(summary))
            if len(self._transcript) > self._cap:
                raise AgentMessageLimitError(
                    f"Agent transcript must not exceed {self._cap} messages"
                )
        self._summary = summary
        if compaction is not None and type_of(compaction) is not AutoCompaction:
            raise TypeError("Agent compaction must be an AutoCompaction or None")
        self._compaction = compaction
        self._compactions: list[ContextCompactionRecord] = []
        self._compaction_error: ContextCompactionError | None = None
        if recorder is not None and not isinstance(recorder, TranscriptRecorder):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise TypeError("Agent recorder must implement record_messages and record_compaction")
        self._recorder = recorder
        self._unrecorded: list[Message] = []
        self._last_usage: ModelUsage | None = None
        self._usage_seen = 0
        self._call_ids: set[str] = {
            block.id
            for message in self._transcript
            if message.role == "assistant"
            for block in message.content
            if block.type == "toolCall"
        }
        if not isinstance(history, list | tuple):
            raise TypeError("Agent history must be a list or tuple of messages")
        earlier = [*history, *self._transcript]
        self._next_number = _next_generated_number(earlier)
        # Requests are numbered over the Agent's life, not per run, starting after the turns
        # the transcript (and its compacted history) already holds: IDs derived from request
        # IDs (a scripted model's default call IDs) then never collide with earlier ones.
        self._requests = sum(1 for message in earlier if message.role == "assistant")
        self._listeners: dict[int, AgentSubscriber] = {}
        self._snapshot: tuple[tuple[int, AgentSubscriber], ...] = ()
        self._next_listener = 1
        self._failures: list[AgentSubscriberError] = []
        self._pending: set[asyncio.Future[object]] = set()
        self._steering: deque[UserMessage] = deque()
        self._follow_ups: deque[UserMessage] = deque()
        self._active: _ActiveRun | None = None
        self._usage: ModelUsage = ZERO_USAGE

    def _snapshot_messages(self, messages: object) -> list[Message]:
        kind = type_of(messages)
        if not issubclass(kind, list | tuple):
            raise TypeError("Agent messages must be a list or tuple of messages")
        count = len(messages)  # pyright: ignore[reportArgumentType]
        if count > self._cap:
            raise AgentMessageLimitError(f"Agent transcript must not exceed {self._cap} messages")
        try:
            return list(snapshot_transcript(messages, self._limits))
        except InvalidTranscript as error:
            text = str(error)
            if text.startswith("messages["):
                raise TypeError(f"Agent {text}") from None
            raise TypeError(f"Agent transcript is invalid: {text}") from None

    # --- state -------------------------------------------------------------------------------

    @property
    def messages(self) -> tuple[Message, ...]:
        """The owned transcript: a new tuple each call (the messages are immutable)."""
        return tuple(self._transcript)

    @property
    def is_running(self) -> bool:
        """Whether a logical run owns the transcript."""
        return self._active is not None

    @property
    def recorder(self) -> TranscriptRecorder | None:
        """Where the transcript is recorded as it grows (``None``: nowhere)."""
        return self._recorder

    @property
    def subscriber_errors(self) -> tuple[AgentSubscriberError, ...]:
        """Every subscriber failure recorded so far, oldest first (a new tuple each call)."""
        return tuple(self._failures)

    @property
    def usage(self) -> ModelUsage:
        """Token usage summed over every model response of every run of this Agent, including
        a cancelled turn's (its tokens were spent even though its output was dropped)."""
        return self._usage

    @property
    def summary(self) -> ContextSummary | None:
        """The summary of compacted history the context starts with, if any."""
        return self._summary

    @property
    def compactions(self) -> tuple[ContextCompactionRecord, ...]:
        """The compactions this Agent made, oldest first."""
        return tuple(self._compactions)

    @property
    def last_compaction_error(self) -> ContextCompactionError | None:
        """Why the last automatic compaction failed (the turn went ahead uncompacted), or
        ``None`` if it did not fail."""
        return self._compaction_error

    @property
    def queued_steering(self) -> tuple[UserMessage, ...]:
        """Steering messages waiting for the next turn boundary, oldest first."""
        return tuple(self._steering)

    @property
    def queued_follow_ups(self) -> tuple[UserMessage, ...]:
        """Follow-up messages waiting for the model to finish, oldest first."""
        return tuple(self._follow_ups)

    @property
    def max_steps(self) -> int:
        """Model turns one logical run may take."""
        return self._max_steps

    @property
    def system(self) -> str | None:
        """The system prompt sent with every request."""
        return self._system

    @property
    def limits(self) -> RunLimits:
        """The bounds of every turn; ``max_initial_messages`` caps the transcript."""
        return self._limits

    @property
    def tool_names(self) -> tuple[str, ...]:
        """The names of the Agent's tools, in registration order."""
        return self._tools.names

    def set_tools(self, tools: ToolRegistry) -> None:
        """Replace the Agent's tools (copied through ``ToolRegistry.snapshot``) from the next
        turn on: a turn already going on keeps the tools it started with. For tools that
        change while the Agent lives (an MCP server's ``tools/list_changed``)."""
        if not instance_of(tools, ToolRegistry):
            raise TypeError("Agent tools must be a ToolRegistry")
        self._tools = ToolRegistry.snapshot(tools)

    # --- subscribers -------------------------------------------------------------------------

    def subscribe(self, listener: AgentSubscriber) -> Callable[[], None]:
        """Call ``listener(event, signal)`` for every event of every later run; returns a
        function that unsubscribes (idempotent; it drops the reference). An unsubscribe during
        an event's dispatch takes effect from the next event."""
        if not callable(listener):
            raise TypeError("Agent subscriber must be a function")
        listener_id = self._next_listener
        self._next_listener += 1
        self._listeners[listener_id] = listener
        self._snapshot = tuple(self._listeners.items())
        subscribed = True

        def unsubscribe() -> None:
            nonlocal subscribed
            if subscribed:
                subscribed = False
                del self._listeners[listener_id]
                self._snapshot = tuple(self._listeners.items())

        return unsubscribe

    async def wait_for_subscribers(self) -> None:
        """Wait until every awaitable a subscriber returned has settled (their failures are
        in ``subscriber_errors`` by then). For hosts that flush a UI before exiting."""
        while self._pending:
            # Each future's recording callback was added before asyncio.wait's, so it has
            # run by the time wait returns.
            await asyncio.wait(tuple(self._pending))

    def _publish(self, active: _ActiveRun, event: AgentEvent) -> None:
        active.output.push(event)
        listeners = self._snapshot
        if not listeners:
            return
        signal = active.signal
        for listener_id, listener in listeners:
            try:
                returned = listener(event, signal)
            except asyncio.CancelledError as error:
                reraise_task_cancellation(error)
                self._record(event.type, listener_id, error)
                continue
            except Exception as error:
                self._record(event.type, listener_id, error)
                continue
            if returned is not None and is_awaitable(returned):
                self._observe(returned, event.type, listener_id)

    def _observe(self, returned: object, event_type: AgentEventType, listener_id: int) -> None:
        try:
            future: asyncio.Future[object] = asyncio.ensure_future(
                cast("Awaitable[object]", returned)
            )
        except Exception as error:
            self._record(event_type, listener_id, error)
            return
        self._pending.add(future)

        def settled(done: asyncio.Future[object]) -> None:
            self._pending.discard(done)
            if done.cancelled():
                return
            error = done.exception()
            if error is not None:
                self._record(event_type, listener_id, error)

        future.add_done_callback(settled)

    def _record(self, event_type: AgentEventType, listener_id: int, error: BaseException) -> None:
        message = message_of(error, _SUBSCRIBER_FAILED)
        self._failures.append(
            AgentSubscriberError(event_type=event_type, listener_id=listener_id, message=message)
        )

    async def wait_until_idle(self) -> None:
        """Wait until no run owns the transcript (at once when idle). Cancelling the wait
        does not cancel the run."""
        active = self._active
        if active is not None:
            await asyncio.shield(active.done)

    # --- work --------------------------------------------------------------------------------

    def prompt(
        self,
        content: str,
        *,
        deps: object = None,
        output_type: type[OutputT] | None = None,
        output_retries: int = 1,
    ) -> EventStream[AgentEvent, RunResult[OutputT]]:
        """Append a user message and start a logical run; returns its stream.

        ``deps`` reaches every tool of this run as its context's ``deps`` (annotate the
        tool's context ``RunContext[YourDeps]`` to read it typed). ``output_type`` asks for a
        structured answer, as for ``run_agent_loop``: the run completes when the model calls
        the ``final_result`` tool with valid arguments, and ``result.output`` is the
        validated value (typed); ``output_retries`` bounds the invalid answers
        (``OUTPUT_RETRIES_EXHAUSTED``).

        If steering was queued while idle, the first steering message is accepted right after
        the prompt. Raises ``AgentBusyError`` while running, ``AgentMessageLimitError`` when
        the work could overflow the transcript, ``RuntimeError`` without a running event loop.
        """
        self._assert_idle()
        _require_loop("prompt")
        output = OutputState.for_run(output_type, output_retries, self._tools)
        steering = len(self._steering)
        queued = steering + len(self._follow_ups)
        self._assert_projected(len(self._transcript) + 1 + 2 * queued + (1 if steering == 0 else 0))
        message = self._user_message(content)
        self._transcript.append(message)
        accepted = [message]
        if steering:
            self._accept_from(self._steering, accepted)
        return self._start(accepted, deps, output)

    def continue_(
        self,
        *,
        deps: object = None,
        output_type: type[OutputT] | None = None,
        output_retries: int = 1,
    ) -> EventStream[AgentEvent, RunResult[OutputT]]:
        """Start a logical run from the owned transcript (``continue`` is a Python keyword);
        ``deps``, ``output_type`` and ``output_retries`` as for ``prompt``.

        A queued steering message is accepted first; otherwise, when the transcript ends with
        an assistant message, one follow-up is (``AgentStateError`` if there is none); a
        transcript ending with a user or tool-result message simply continues.
        """
        self._assert_idle()
        _require_loop("continue_")
        output = OutputState.for_run(output_type, output_retries, self._tools)
        if not self._transcript:
            raise AgentStateError("Cannot continue without transcript messages")
        tail = self._transcript[-1]
        steering = len(self._steering)
        projected = len(self._transcript) + 2 * (steering + len(self._follow_ups))
        if tail.role != "assistant" and steering == 0:
            projected += 1
        self._assert_projected(projected)
        accepted: list[UserMessage] = []
        if (
            not self._accept_from(self._steering, accepted)
            and tail.role == "assistant"
            and not self._accept_from(self._follow_ups, accepted)
        ):
            raise AgentStateError("Cannot continue from an assistant message without queued work")
        return self._start(accepted, deps, output)

    def steer(self, content: str) -> UserMessage:
        """Queue a user message for the next turn boundary (between a tool batch and the next
        model step, or before the model would finish); returns the queued message."""
        return self._enqueue(self._steering, content)

    def follow_up(self, content: str) -> UserMessage:
        """Queue a user message for when the model would otherwise finish; returns it."""
        return self._enqueue(self._follow_ups, content)

    def cancel(self, reason: str = DEFAULT_CANCEL_REASON) -> bool:
        """Abort the running turn with ``reason``. ``False`` when idle, already aborted, or
        once the terminal result is selected; ``True`` when this call cancelled the run."""
        if type_of(reason) is not str or not reason:
            raise TypeError("Agent cancellation reason must be a non-empty string")
        active = self._active
        if active is None or active.terminal is not None or signal_aborted(active.signal):
            return False
        active.controller.abort(reason)
        return True

    async def run(
        self,
        content: str,
        *,
        deps: object = None,
        output_type: type[OutputT] | None = None,
        output_retries: int = 1,
    ) -> RunResult[OutputT]:
        """``prompt(content, ...)`` read to the end; returns the result (``result.output`` is
        typed by ``output_type``). Cancelling the awaiting task cancels the run."""
        stream = self.prompt(
            content, deps=deps, output_type=output_type, output_retries=output_retries
        )
        async for _ in stream:
            pass
        return await stream.result

    def run_sync(
        self,
        content: str,
        *,
        deps: object = None,
        output_type: type[OutputT] | None = None,
        output_retries: int = 1,
    ) -> RunResult[OutputT]:
        """``run(content)`` on a fresh event loop, for scripts. Raises ``RuntimeError`` inside
        a running loop (await ``run()`` there). Every run of an HTTP model should share one
        loop: prefer ``asyncio.run(main())`` with ``await agent.run(...)`` for those."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(
                self.run(content, deps=deps, output_type=output_type, output_retries=output_retries)
            )
        raise RuntimeError("Agent.run_sync() cannot run inside an event loop; await agent.run()")

    # --- capacity ----------------------------------------------------------------------------

    def _assert_idle(self) -> None:
        if self._active is not None:
            raise AgentBusyError

    def _assert_projected(self, projected: int) -> None:
        if projected > self._cap:
            raise AgentMessageLimitError(
                f"Agent transcript and queued work must not exceed {self._cap} messages"
            )

    def _enqueue(self, queue: deque[UserMessage], content: str) -> UserMessage:
        steering = len(self._steering)
        follow_ups = len(self._follow_ups)
        if steering + follow_ups >= MAX_AGENT_QUEUED_MESSAGES:
            raise AgentMessageLimitError(
                f"Agent queue must not exceed {MAX_AGENT_QUEUED_MESSAGES} messages"
            )
        if queue is self._steering:
            steering += 1
        else:
            follow_ups += 1
        queued = steering + follow_ups
        length = len(self._transcript)
        active = self._active
        if active is not None and active.terminal is None:
            self._assert_projected(length + self._run_reserve + queued)
        else:
            projected = length + 2 * queued
            if not self._transcript:
                projected += 2 if steering == 0 else 1
            elif self._transcript[-1].role != "assistant" and steering == 0:
                projected += 1
            self._assert_projected(projected)
        message = self._user_message(content)
        queue.append(message)
        return message

    def _user_message(self, content: object) -> UserMessage:
        if type_of(content) is not str:
            raise TypeError("Agent user content must be a string")
        number = self._next_number
        self._next_number += 1
        return UserMessage(id=f"agent-user-{number:06d}", content=content)  # pyright: ignore[reportArgumentType]

    def _accept_from(self, queue: deque[UserMessage], accepted: list[UserMessage]) -> bool:
        if not queue:
            return False
        if len(self._transcript) + 1 > self._cap:
            raise AgentMessageLimitError(f"Agent transcript must not exceed {self._cap} messages")
        message = queue.popleft()
        self._transcript.append(message)
        accepted.append(message)
        return True

    # --- the logical run ---------------------------------------------------------------------

    def _start(
        self, accepted: list[UserMessage], deps: object, output: OutputState | None
    ) -> EventStream[AgentEvent, RunResult[Any]]:
        active = _ActiveRun(deps, output)
        active.publish = partial(self._publish, active)
        self._active = active
        controller = active.controller
        active.output.on_abandon(lambda: controller.abort(AbortError(CONSUMER_GONE)))
        start_producer(self._own(active, accepted))
        return active.output

    async def _own(self, active: _ActiveRun, accepted: list[UserMessage]) -> None:
        state = _LogicalRun()
        try:
            terminal = await self._produce(active, accepted, state)
        except Exception as error:
            terminal = self._after_failure(active, state, error)
        except asyncio.CancelledError:
            # The task itself was cancelled (the event loop is shutting down): still settle.
            terminal = active.terminal or self._select(
                active, state, self._cancelled(active, state)
            )
            if self._active is active:
                self._active = None
            active.output.finish(terminal)
            raise
        except BaseException as error:  # KeyboardInterrupt, SystemExit: never swallowed
            if self._active is active:
                self._active = None
            if not active.output.settled:
                active.output.fail(error)
            raise
        finally:
            if self._active is active:
                self._active = None
            active.done.set_result(None)
        active.output.finish(terminal)

    def _after_failure(self, active: _ActiveRun, state: _LogicalRun, error: Exception) -> RunResult:
        if active.terminal is not None:  # the failure came after the terminal event
            return active.terminal
        code: AgentFailureCode
        if isinstance(error, AgentMessageLimitError):
            code = "AGENT_MESSAGE_LIMIT"
        elif isinstance(error, AgentRecordingError):
            code = "AGENT_RECORDING_FAILED"
        else:
            code = "AGENT_STATE_FAILED"
        result = self._failed(state, code, message_of(error, _STATE_FAILED))
        return self._select(active, state, result)

    async def _produce(
        self, active: _ActiveRun, accepted: list[UserMessage], state: _LogicalRun
    ) -> RunResult:
        publish = active.publish
        for message in accepted:
            publish(trusted.message_accepted_event(state.sequence, message))
            state.sequence += 1
        await self._persist(accepted)
        cap = self._cap
        budget = RetryBudget.for_run(self._tools, self._tool_retries)
        while True:
            if len(self._transcript) > cap:
                return self._select(active, state, self._over_cap(state))
            if self._compaction is not None:
                await self._compact_if_due(active, state, self._compaction)
                if signal_aborted(active.signal):
                    return self._select(active, state, self._cancelled(active, state))
            before = len(self._transcript)
            trace = _TurnTrace() if self._interrupted == "keep" else None
            result, state.sequence = await run_owned_turns(
                transcript=tuple(self._transcript),
                call_ids=set(self._call_ids),
                open_stream=self._open_stream,
                registry=self._tools,
                max_steps=1,
                signal=active.signal,
                system=self._system,
                limits=self._limits,
                hooks=self._hooks,
                request_sequence_start=self._requests,
                sequence_start=state.sequence,
                emit=publish if trace is None else _observed(trace, publish),
                deps=active.deps,
                budget=budget,
                output=active.structured,
            )
            self._requests += 1
            state.usage = state.usage + result.usage
            self._usage = self._usage + result.usage
            if signal_aborted(active.signal):  # cancellation wins: the turn is not adopted
                if trace is not None:  # ... unless the owner keeps interrupted turns
                    await self._keep_interrupted(active, state, result, before, trace)
                return self._select(active, state, self._cancelled(active, state))
            state.turns += 1
            if len(result.messages) > cap:
                return self._select(active, state, self._over_cap(state))
            self._adopt(result.messages, before)
            if any(result.usage.__getattribute__(name) for name in _USAGE_FIELDS):
                self._last_usage = result.usage  # covers the transcript up to its answer
                self._usage_seen = before + 1
            status = result.status
            if status == "cancelled" or status == "failed":
                result = self._close_orphans(active, state, result)
                await self._persist(self._transcript[before:])
                return self._select(active, state, result)
            await self._persist(self._transcript[before:])
            if status == "maxSteps":
                if state.turns >= self._max_steps:
                    return self._select(active, state, self._max_steps_result(state))
                await self._persist(self._accept_steering(active, state))
                continue
            if status != "completed":
                assert_never(status)
            if self._steering:
                if state.turns >= self._max_steps:
                    return self._select(active, state, self._max_steps_result(state))
                await self._persist(self._accept_steering(active, state))
                continue
            if self._follow_ups:
                if state.turns >= self._max_steps:
                    return self._select(active, state, self._max_steps_result(state))
                follow: list[UserMessage] = []
                self._accept_from(self._follow_ups, follow)
                publish(trusted.message_accepted_event(state.sequence, follow[0]))
                state.sequence += 1
                await self._persist(follow)
                continue
            return self._select(active, state, result)

    def _adopt(self, messages: tuple[Message, ...], before: int) -> None:
        """Take a turn's transcript: the loop built it from ours plus complete messages."""
        for message in messages[before:]:
            if message.role == "assistant":
                for block in message.content:
                    if block.type == "toolCall":
                        self._call_ids.add(block.id)
        self._transcript = list(messages)

    async def _keep_interrupted(
        self,
        active: _ActiveRun,
        state: _LogicalRun,
        result: RunResult,
        before: int,
        trace: _TurnTrace,
    ) -> None:
        """Adopt a cancelled turn as far as it got (``interrupted_turns="keep"``): what the
        loop kept (a complete assistant message, the results of finished calls) or else the
        message as far as it streamed, a ``TOOL_CALL_INTERRUPTED`` result for each call left
        unanswered, and ``INTERRUPTED_TURN_NOTE``; announced and recorded. Nothing when the
        turn produced nothing, or when keeping it would overflow the transcript cap."""
        messages = list(result.messages)
        if len(messages) < before:  # pragma: no cover - the loop only appends
            return
        if len(messages) == before:
            partial = trace.partial_message()
            if partial is None:
                return
            messages.append(partial)
        closing = [
            trusted.tool_result(
                call,
                _INTERRUPTED_RUNNING if call.id in trace.started else _INTERRUPTED_WAITING,
                True,
            )
            for call in unanswered_tool_calls(messages[before:])
        ]
        new = [*messages[before:], *closing]
        if closing or result.status == "cancelled":  # else the turn had ended: nothing was cut
            new.append(UserMessage(id=new_message_id(), content=INTERRUPTED_TURN_NOTE))
        if before + len(new) > self._cap:
            return
        announced = len(messages) - before if len(result.messages) > before else 0
        self._adopt((*self._transcript[:before], *new), before)
        for message in new[announced:]:
            active.publish(trusted.message_accepted_event(state.sequence, message))
            state.sequence += 1
        await self._persist(new)

    def _close_orphans(
        self, active: _ActiveRun, state: _LogicalRun, result: RunResult
    ) -> RunResult:
        """Answer every tool call the turn left without a result, so the transcript stays a
        valid request for the next run.

        A turn ends with calls unanswered when the model was cut off (``length``) or refused
        with calls in its message, or when a tool failure stopped the batch. The loop keeps
        that message; an owner that will send the transcript again must close the calls, or
        every later request is rejected (APIs require a result per call). Each gets an
        ``is_error`` result ``TOOL_CALL_NOT_RUN``, announced with ``message.accepted``.
        """
        code = result.error.code if result.status == "failed" else "cancelled"
        closing = unanswered_call_results(
            self._transcript, f"The turn ended ({code}) before this tool call ran"
        )
        if not closing:
            return result
        for message in closing:
            self._transcript.append(message)
            active.publish(trusted.message_accepted_event(state.sequence, message))
            state.sequence += 1
        return dataclasses.replace(result, messages=tuple(self._transcript))

    def _accept_steering(self, active: _ActiveRun, state: _LogicalRun) -> list[UserMessage]:
        accepted: list[UserMessage] = []
        if self._accept_from(self._steering, accepted):
            active.publish(trusted.message_accepted_event(state.sequence, accepted[0]))
            state.sequence += 1
        return accepted

    async def _persist(self, messages: Sequence[Message]) -> None:
        """Hand messages that entered the transcript to the recorder (a session).

        Messages a failed call did not get written stay pending and go first next time, so
        a recorder that recovers (a disk that had filled up) catches up in order; the
        recorder must skip messages it already wrote (``SessionRecorder`` does).
        """
        recorder = self._recorder
        if recorder is None:
            return
        pending = self._unrecorded
        pending.extend(messages)
        if not pending:
            return
        try:
            await recorder.record_messages(tuple(pending))
        except asyncio.CancelledError as error:
            reraise_task_cancellation(error)  # the run's task itself is being cancelled
            raise AgentRecordingError(error) from error
        except Exception as error:
            raise AgentRecordingError(error) from error
        pending.clear()

    async def _compact_if_due(
        self, active: _ActiveRun, state: _LogicalRun, policy: AutoCompaction
    ) -> None:
        """Compact before a turn when the context nears the window (see auto_compaction).
        A failure is kept in ``last_compaction_error``; the turn goes ahead."""
        tokens = context_tokens(self._transcript, self._last_usage, self._usage_seen)
        if not policy.due(tokens):
            return
        try:
            message = await self._compact(policy, tokens, active.signal)
        except ContextCompactionError as error:
            if error.code != "CONTEXT_CANCELLED":
                self._compaction_error = error
            return
        if message is not None:
            active.publish(trusted.message_accepted_event(state.sequence, message))
            state.sequence += 1

    async def compact(self) -> ContextCompactionRecord | None:
        """Compact the context now, whatever its size (``/compact``), with the Agent's
        ``AutoCompaction`` policy; returns the new record, or ``None`` if nothing changed.

        Only while idle (``AgentBusyError``); ``AgentStateError`` without a policy;
        ``ContextCompactionError`` when it cannot (too few messages to summarize, a failing
        summarizer; nothing changes then). ``cancel()`` aborts it (``CONTEXT_CANCELLED``).
        """
        self._assert_idle()
        policy = self._compaction
        if policy is None:
            raise AgentStateError("Cannot compact without an AutoCompaction policy")
        active = _ActiveRun()
        self._active = active
        try:
            message = await self._compact(policy, None, active.signal)
        finally:
            if self._active is active:
                self._active = None
            active.done.set_result(None)
        return None if message is None else self._compactions[-1]

    async def _compact(
        self, policy: AutoCompaction, tokens: int | None, signal: AbortSignal
    ) -> UserMessage | None:
        """One compaction (``tokens`` of context now; ``None``: asked for, whatever the
        size); on success the transcript starts with the returned summary message and the
        compaction is recorded. Raises ``ContextCompactionError``."""
        limits = _context_limits(self._cap)
        offset = 1 if self._summary is not None else 0
        context = ActiveContext(
            summary=self._summary,
            messages=tuple(self._transcript[offset:]),
            compactions=tuple(self._compactions),
            limits=limits,
        )
        summarizer = policy.summarizer or model_summarizer(_Bound(self._open_stream))
        summary_id = f"context-summary-{uuid.uuid4().hex[:12]}"
        record_id = f"compaction-{len(self._compactions) + 1:06d}"
        if tokens is None:
            chosen = forced_options(
                policy, context, summarizer=summarizer, summary_id=summary_id, record_id=record_id
            )
            if chosen is None:
                return None
        else:
            chosen = policy.options(
                context,
                tokens=tokens,
                summarizer=summarizer,
                summary_id=summary_id,
                record_id=record_id,
            )
        outcome = await compact_context(context, dataclasses.replace(chosen, signal=signal))
        if outcome.status == "unchanged":
            return None
        compacted = outcome.context
        summary = compacted.summary
        assert summary is not None  # a compacted context always has one
        recorder = self._recorder
        if recorder is not None:
            # The session first: what it holds must always be what the model sees, so the
            # Agent takes the compacted context only once the session recorded it.
            try:
                await self._persist(())  # messages a failed write left behind come first
                await recorder.record_compaction(summary, compacted.messages, outcome.record)
            except asyncio.CancelledError as error:
                reraise_task_cancellation(error)
                raise AgentRecordingError(error) from error
            except Exception as error:
                raise AgentRecordingError(error) from error
        message = summary_message(summary)
        self._summary = summary
        self._compactions.append(outcome.record)
        self._compaction_error = None
        self._transcript = [message, *compacted.messages]
        self._last_usage = None
        return message

    def _select(self, active: _ActiveRun, state: _LogicalRun, result: RunResult) -> RunResult:
        """Make ``result`` the run's terminal: the logical run's usage, cancellation applied,
        the transcript set to its messages, ``run.finished`` emitted (exactly once)."""
        if result.usage is not state.usage:
            result = dataclasses.replace(result, usage=state.usage)
        if result.status != "cancelled" and signal_aborted(active.signal):
            result = self._cancelled(active, state)
        self._transcript = list(result.messages)
        active.terminal = result
        active.publish(trusted.run_finished_event(state.sequence, result))
        state.sequence += 1
        return result

    def _cancelled(self, active: _ActiveRun, state: _LogicalRun) -> CancelledRunResult:
        reason = signal_reason(active.signal)
        if isinstance(reason, str):
            text = reason if is_non_empty(reason) else DEFAULT_CANCEL_REASON
        else:
            text = (
                message_of(reason, DEFAULT_CANCEL_REASON)
                if reason is not None
                else DEFAULT_CANCEL_REASON
            )
        return CancelledRunResult(messages=tuple(self._transcript), reason=text, usage=state.usage)

    def _failed(self, state: _LogicalRun, code: AgentFailureCode, message: str) -> FailedRunResult:
        return FailedRunResult(
            messages=tuple(self._transcript),
            error=RunError(code=code, message=message),
            usage=state.usage,
        )

    def _over_cap(self, state: _LogicalRun) -> FailedRunResult:
        return self._failed(
            state, "AGENT_MESSAGE_LIMIT", f"Agent transcript exceeded {self._cap} messages"
        )

    def _max_steps_result(self, state: _LogicalRun) -> MaxStepsRunResult:
        return MaxStepsRunResult(
            messages=tuple(self._transcript), max_steps=self._max_steps, usage=state.usage
        )

    def __repr__(self) -> str:
        state = "running" if self._active is not None else "idle"
        return (
            f"<Agent {state}, {len(self._transcript)} messages, "
            f"{len(self._steering)} steering, {len(self._follow_ups)} follow-ups queued>"
        )


def _bound_stream(model: object) -> Callable[[ModelRequest, AbortSignal], object]:
    """The model's ``stream`` method, read once: replacing it later changes nothing."""
    if type_of(model) in (type(None), bool, int, float, str, bytes):
        raise TypeError(
            "Agent model must implement the Model contract (a stream(request, signal) method)"
        )
    try:
        stream: object = cast("Any", model).stream
    except Exception:
        stream = None
    if not callable(stream):
        raise TypeError("Agent model.stream must be a function")
    return stream


def _observed(
    trace: _TurnTrace, publish: Callable[[AgentEvent], None]
) -> Callable[[AgentEvent], None]:
    def emit(event: AgentEvent) -> None:
        trace.observe(event)
        publish(event)

    return emit


def unanswered_tool_calls(messages: Sequence[Message]) -> list[ToolCall]:
    """Every tool call in ``messages`` that no later tool result answers, in call order.

    A transcript with such a call is not a valid request (both APIs require a result per
    call; the loop reports ``INVALID_TRANSCRIPT ... has no later result``): answer each, e.g.
    with ``unanswered_call_results``, before running it again.
    """
    answered = {message.tool_call_id for message in messages if message.role == "toolResult"}
    return [
        block
        for message in messages
        if message.role == "assistant"
        for block in message.content
        if block.type == "toolCall" and block.id not in answered
    ]


def unanswered_call_results(messages: Sequence[Message], reason: str) -> list[ToolResultMessage]:
    """An ``is_error`` result ``TOOL_CALL_NOT_RUN`` (message ``reason``) for every tool call in
    ``messages`` that has no result, in call order: what closes a transcript whose turn (or
    process) ended between a call and its result, so it is a valid request again.

    For example, to continue from a cancelled ``run_agent_loop`` result::

        messages = [*result.messages, *unanswered_call_results(result.messages, "cancelled")]
    """
    content = serialize_output({"error": {"code": "TOOL_CALL_NOT_RUN", "message": reason}})
    return [trusted.tool_result(call, content, True) for call in unanswered_tool_calls(messages)]


def _require_loop(method: str) -> None:
    require_running_loop(f"Agent.{method}()")


def _next_generated_number(messages: list[Message]) -> int:
    """1 + the highest ``agent-user-NNNNNN`` number in ``messages`` (or 1)."""
    highest = 0
    for message in messages:
        match = _GENERATED_ID.fullmatch(message.id)
        if match is not None:
            highest = max(highest, int(match.group(1)))
    return highest + 1
