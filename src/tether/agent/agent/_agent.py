"""The ``Agent`` class: its options, its state as properties, and the public methods, each
delegating to one collaborator (the queue, the subscribers, the run driver, compaction)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from tether._async.race import signal_aborted
from tether._base.exact_types import instance_of, type_of
from tether.agent.agent._closing import InterruptedTurns
from tether.agent.agent._compacting import Compaction
from tether.agent.agent._drive import RunDriver
from tether.agent.agent._errors import AgentBusyError, AgentMessageLimitError, AgentStateError
from tether.agent.agent._options import bound_stream, require_loop, snapshot_messages
from tether.agent.agent._queue import WorkQueue, next_generated_number
from tether.agent.agent._recording import Recording, TranscriptRecorder
from tether.agent.agent._state import DEFAULT_CANCEL_REASON, ActiveRun, AgentState
from tether.agent.agent._subscribers import AgentSubscriber, AgentSubscriberError, Subscribers
from tether.agent.auto_compaction import AutoCompaction, summary_message
from tether.agent.compaction import (
    ContextCompactionError,
    ContextCompactionRecord,
    ContextSummary,
)
from tether.loop.hooks import AfterToolCall, BeforeToolCall, ToolHooks
from tether.loop.output import OutputState
from tether.loop.retries import check_tool_retries
from tether.models.base import Model
from tether.models.limits import MAX_AGENT_STEPS, RunLimits, check_max_steps, limits_for
from tether.protocol import (
    AgentEvent,
    ImageBlock,
    Message,
    ModelUsage,
    RunResult,
    UserMessage,
)
from tether.stream import EventStream
from tether.tools import ToolRegistry
from tether.tools.output import OutputT
from tether.tracing._config import Tracing

__all__ = ["Agent"]


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
    default, is unbounded), ``tracing`` (``tether.tracing.Tracing``: each logical run one
    OpenTelemetry span, with a span per model request and per tool call under it). Option
    errors raise ``TypeError`` (``AgentMessageLimitError`` for
    a transcript that is too long).
    """

    __slots__ = ("__weakref__", "_compaction", "_driver", "_queue", "_state", "_subscribers")

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
        tracing: Tracing | None = None,
    ) -> None:
        open_stream = bound_stream(model)
        if tracing is not None and type_of(tracing) is not Tracing:
            raise TypeError("Agent tracing must be a tether.tracing.Tracing or None")
        if type_of(interrupted_turns) is not str or interrupted_turns not in ("discard", "keep"):
            raise TypeError('Agent interrupted_turns must be "discard" or "keep"')
        retries = check_tool_retries(tool_retries)
        if tools is not None and not instance_of(tools, ToolRegistry):
            raise TypeError("Agent tools must be a ToolRegistry")
        registry = ToolRegistry.snapshot(ToolRegistry() if tools is None else tools)
        if limits is not None and type_of(limits) is not RunLimits:
            raise TypeError("Agent limits must be a RunLimits")
        limits = limits_for(model, limits)
        steps = min(MAX_AGENT_STEPS, limits.max_steps) if max_steps is None else max_steps
        steps = check_max_steps(steps, limits, "Agent max_steps")
        if system is not None and type_of(system) is not str:
            raise TypeError("Agent system must be a string or None")
        hooks = (
            None
            if before_tool_call is None and after_tool_call is None
            else ToolHooks(before_tool_call=before_tool_call, after_tool_call=after_tool_call)
        )
        cap = limits.max_initial_messages
        transcript = snapshot_messages(messages, cap, limits)
        if summary is not None and type_of(summary) is not ContextSummary:
            raise TypeError("Agent summary must be a ContextSummary or None")
        if summary is not None:
            transcript.insert(0, summary_message(summary))
            if len(transcript) > cap:
                raise AgentMessageLimitError(f"Agent transcript must not exceed {cap} messages")
        if compaction is not None and type_of(compaction) is not AutoCompaction:
            raise TypeError("Agent compaction must be an AutoCompaction or None")
        if recorder is not None and not _is_recorder(recorder):
            raise TypeError("Agent recorder must implement record_messages and record_compaction")
        if not isinstance(history, list | tuple):
            raise TypeError("Agent history must be a list or tuple of messages")
        earlier = [*history, *transcript]
        state = AgentState(
            open_stream=open_stream,
            tracing=tracing,
            model=model,
            tools=registry,
            limits=limits,
            max_steps=steps,
            system=system,
            hooks=hooks,
            interrupted=interrupted_turns,
            tool_retries=retries,
            cap=cap,
            # While a turn runs, its output is not adopted yet: one assistant message and at
            # most one result per tool call (a call is a block, and a streamed chunk).
            run_reserve=1 + min(limits.max_chunks_per_step, limits.max_blocks_per_step),
            transcript=transcript,
            call_ids={
                block.id
                for message in transcript
                if message.role == "assistant"
                for block in message.content
                if block.type == "toolCall"
            },
            # Requests are numbered over the Agent's life, not per run, starting after the
            # turns the transcript (and its compacted history) already holds: IDs derived
            # from request IDs (a scripted model's default call IDs) then never collide.
            requests=sum(1 for message in earlier if message.role == "assistant"),
        )
        recording = Recording(recorder)
        self._state = state
        self._queue = WorkQueue(state, next_generated_number(earlier))
        self._subscribers = Subscribers()
        self._compaction = Compaction(state, recording, compaction, summary)
        self._driver = RunDriver(state, self._queue, self._subscribers, recording, self._compaction)

    # --- state -------------------------------------------------------------------------------

    @property
    def messages(self) -> tuple[Message, ...]:
        """The owned transcript: a new tuple each call (the messages are immutable)."""
        return tuple(self._state.transcript)

    @property
    def is_running(self) -> bool:
        """Whether a logical run owns the transcript."""
        return self._state.active is not None

    @property
    def recorder(self) -> TranscriptRecorder | None:
        """Where the transcript is recorded as it grows (``None``: nowhere)."""
        return self._driver.recording.recorder

    @property
    def subscriber_errors(self) -> tuple[AgentSubscriberError, ...]:
        """Every subscriber failure recorded so far, oldest first (a new tuple each call)."""
        return tuple(self._subscribers.failures)

    @property
    def usage(self) -> ModelUsage:
        """Token usage summed over every model response of every run of this Agent, including
        a cancelled turn's (its tokens were spent even though its output was dropped)."""
        return self._state.usage

    @property
    def summary(self) -> ContextSummary | None:
        """The summary of compacted history the context starts with, if any."""
        return self._compaction.summary

    @property
    def compactions(self) -> tuple[ContextCompactionRecord, ...]:
        """The compactions this Agent made, oldest first."""
        return tuple(self._compaction.records)

    @property
    def last_compaction_error(self) -> ContextCompactionError | None:
        """Why the last automatic compaction failed (the turn went ahead uncompacted), or
        ``None`` if it did not fail."""
        return self._compaction.error

    @property
    def queued_steering(self) -> tuple[UserMessage, ...]:
        """Steering messages waiting for the next turn boundary, oldest first."""
        return tuple(self._queue.steering)

    @property
    def queued_follow_ups(self) -> tuple[UserMessage, ...]:
        """Follow-up messages waiting for the model to finish, oldest first."""
        return tuple(self._queue.follow_ups)

    @property
    def max_steps(self) -> int:
        """Model turns one logical run may take."""
        return self._state.max_steps

    @property
    def system(self) -> str | None:
        """The system prompt sent with every request."""
        return self._state.system

    @property
    def limits(self) -> RunLimits:
        """The bounds of every turn; ``max_initial_messages`` caps the transcript."""
        return self._state.limits

    @property
    def tool_names(self) -> tuple[str, ...]:
        """The names of the Agent's tools, in registration order."""
        return self._state.tools.names

    def set_system(self, system: str | None) -> None:
        """Replace the system prompt from the next turn on (a turn already going on keeps
        the one it started with): for a prompt that names what changed while the Agent
        lives (the tools, after ``set_tools``)."""
        if system is not None and type_of(system) is not str:
            raise TypeError("Agent system must be a string or None")
        self._state.system = system

    def set_tools(self, tools: ToolRegistry) -> None:
        """Replace the Agent's tools (copied through ``ToolRegistry.snapshot``) from the next
        turn on: a turn already going on keeps the tools it started with. For tools that
        change while the Agent lives (an MCP server's ``tools/list_changed``)."""
        if not instance_of(tools, ToolRegistry):
            raise TypeError("Agent tools must be a ToolRegistry")
        self._state.tools = ToolRegistry.snapshot(tools)

    # --- subscribers -------------------------------------------------------------------------

    def subscribe(self, listener: AgentSubscriber) -> Callable[[], None]:
        """Call ``listener(event, signal)`` for every event of every later run; returns a
        function that unsubscribes (idempotent; it drops the reference). An unsubscribe during
        an event's dispatch takes effect from the next event."""
        return self._subscribers.subscribe(listener)

    async def wait_for_subscribers(self) -> None:
        """Wait until every awaitable a subscriber returned has settled (their failures are
        in ``subscriber_errors`` by then). For hosts that flush a UI before exiting."""
        await self._subscribers.wait()

    async def wait_until_idle(self) -> None:
        """Wait until no run owns the transcript (at once when idle). Cancelling the wait
        does not cancel the run."""
        active = self._state.active
        if active is not None:
            await asyncio.shield(active.done)

    # --- work --------------------------------------------------------------------------------

    def prompt(
        self,
        content: str,
        *,
        images: Sequence[ImageBlock] = (),
        deps: object = None,
        output_type: type[OutputT] | None = None,
        output_retries: int = 1,
    ) -> EventStream[AgentEvent, RunResult[OutputT]]:
        """Append a user message and start a logical run; returns its stream.

        ``images`` go with the text in the user message (``ImageBlock`` values: a
        screenshot, a diagram).
        ``deps`` reaches every tool of this run as its context's ``deps`` (annotate the
        tool's context ``RunContext[YourDeps]`` to read it typed). ``output_type`` asks for a
        structured answer, as for ``run_agent_loop``: the run completes when the model calls
        the ``final_result`` tool with valid arguments, and ``result.output`` is the
        validated value (typed); ``output_retries`` bounds the invalid answers
        (``OUTPUT_RETRIES_EXHAUSTED``).

        If steering was queued while idle, the first steering message is accepted right after
        the prompt. Raises ``AgentBusyError`` while running, ``AgentMessageLimitError`` when
        the work could overflow the transcript, ``AgentInvalidMessageError`` for ``content``
        that is no Unicode text (a surrogate code point, such as a lone ``"\\ud800"``; also
        from ``steer`` and ``follow_up``), ``RuntimeError`` without a running event loop.
        """
        self._assert_idle()
        require_loop("prompt")
        output = OutputState.for_run(output_type, output_retries, self._state.tools)
        accepted = self._queue.take_prompt(content, images)
        return self._driver.start(accepted, deps, output)

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
        require_loop("continue_")
        output = OutputState.for_run(output_type, output_retries, self._state.tools)
        accepted = self._queue.take_continue()
        return self._driver.start(accepted, deps, output)

    def steer(self, content: str, *, images: Sequence[ImageBlock] = ()) -> UserMessage:
        """Queue a user message (with ``images``) for the next turn boundary (between a tool
        batch and the next model step, or before the model would finish); returns it."""
        return self._queue.enqueue(self._queue.steering, content, images)

    def follow_up(self, content: str, *, images: Sequence[ImageBlock] = ()) -> UserMessage:
        """Queue a user message (with ``images``) for when the model would otherwise finish;
        returns it."""
        return self._queue.enqueue(self._queue.follow_ups, content, images)

    def cancel(self, reason: str = DEFAULT_CANCEL_REASON) -> bool:
        """Abort the running turn with ``reason``. ``False`` when idle, already aborted, or
        once the terminal result is selected; ``True`` when this call cancelled the run."""
        if type_of(reason) is not str or not reason:
            raise TypeError("Agent cancellation reason must be a non-empty string")
        active = self._state.active
        if active is None or active.terminal is not None or signal_aborted(active.signal):
            return False
        active.controller.abort(reason)
        return True

    async def run(
        self,
        content: str,
        *,
        images: Sequence[ImageBlock] = (),
        deps: object = None,
        output_type: type[OutputT] | None = None,
        output_retries: int = 1,
    ) -> RunResult[OutputT]:
        """``prompt(content, ...)`` read to the end; returns the result (``result.output`` is
        typed by ``output_type``). Cancelling the awaiting task cancels the run."""
        stream = self.prompt(
            content,
            images=images,
            deps=deps,
            output_type=output_type,
            output_retries=output_retries,
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

    async def compact(self) -> ContextCompactionRecord | None:
        """Compact the context now, whatever its size (``/compact``), with the Agent's
        ``AutoCompaction`` policy; returns the new record, or ``None`` if nothing changed.

        Only while idle (``AgentBusyError``); ``AgentStateError`` without a policy;
        ``ContextCompactionError`` when it cannot (too few messages to summarize, a failing
        summarizer; nothing changes then). ``cancel()`` aborts it (``CONTEXT_CANCELLED``).
        """
        self._assert_idle()
        policy = self._compaction.policy
        if policy is None:
            raise AgentStateError("Cannot compact without an AutoCompaction policy")
        state = self._state
        active = ActiveRun()
        state.active = active
        try:
            message = await self._compaction.compact(policy, None, active.signal)
        finally:
            if state.active is active:
                state.active = None
            active.done.set_result(None)
        return None if message is None else self._compaction.records[-1]

    def _assert_idle(self) -> None:
        if self._state.active is not None:
            raise AgentBusyError

    def __repr__(self) -> str:
        state = "running" if self._state.active is not None else "idle"
        return (
            f"<Agent {state}, {len(self._state.transcript)} messages, "
            f"{len(self._queue.steering)} steering, {len(self._queue.follow_ups)} follow-ups "
            "queued>"
        )


def _is_recorder(value: object) -> bool:
    """``isinstance`` against the ``TranscriptRecorder`` protocol (its methods, looked up
    on the value), for a caller that ignored the annotation."""
    return isinstance(value, TranscriptRecorder)
