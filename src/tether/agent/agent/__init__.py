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
* **Unicode user text.** ``prompt()``, ``steer()`` and ``follow_up()`` refuse text holding
  a surrogate code point (a lone ``"\\ud800"``), which is no Unicode text (a provider would
  be sent U+FFFD), at once (``AgentInvalidMessageError``, ``AGENT_INVALID_MESSAGE``): nothing
  is accepted or queued. A model's reply holding one is kept as it is (a session records it
  escaped; a request sends it as U+FFFD).
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

The package's modules, one job each: ``_errors`` (the errors and their codes), ``_closing``
(results for unanswered calls, interrupted turns kept), ``_state`` (what the Agent and a run
own), ``_options`` (checking the options), ``_subscribers`` (dispatch that cannot break a
run), ``_recording`` (the ``TranscriptRecorder`` and pending writes), ``_queue`` (steering,
follow-ups and their capacity), ``_compacting`` (context compaction), ``_drive`` (the logical
run) and ``_agent`` (the ``Agent`` and its public methods).
"""

from __future__ import annotations

from tether.agent.agent._agent import Agent
from tether.agent.agent._closing import (
    INTERRUPTED_TURN_NOTE,
    InterruptedTurns,
    unanswered_call_results,
    unanswered_tool_calls,
)
from tether.agent.agent._errors import (
    AgentBusyError,
    AgentInvalidMessageError,
    AgentMessageLimitError,
    AgentRecordingError,
    AgentStateError,
)
from tether.agent.agent._recording import TranscriptRecorder
from tether.agent.agent._state import MAX_AGENT_MESSAGES, MAX_AGENT_QUEUED_MESSAGES
from tether.agent.agent._subscribers import AgentSubscriber, AgentSubscriberError
from tether.protocol.results import AgentFailureCode

__all__ = [
    "INTERRUPTED_TURN_NOTE",
    "MAX_AGENT_MESSAGES",
    "MAX_AGENT_QUEUED_MESSAGES",
    "Agent",
    "AgentBusyError",
    "AgentFailureCode",
    "AgentInvalidMessageError",
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
