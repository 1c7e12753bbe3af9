"""Driving an Agent's logical run: one-step sub-runs of the loop over the owned transcript,
steering and follow-ups taken between them, cancellation winning the adoption race, and
exactly one terminal result."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence
from functools import partial
from typing import Any, Final

from tether._async.producer import start_producer
from tether._async.race import signal_aborted, signal_reason
from tether._base.strings import is_non_empty, message_of
from tether.abort import AbortError
from tether.agent.agent._closing import (
    TurnTrace,
    kept_turn,
    observed,
    unanswered_call_results,
)
from tether.agent.agent._compacting import Compaction
from tether.agent.agent._errors import AgentMessageLimitError, AgentRecordingError
from tether.agent.agent._queue import WorkQueue
from tether.agent.agent._recording import Recording
from tether.agent.agent._state import DEFAULT_CANCEL_REASON, ActiveRun, AgentState, LogicalRun
from tether.agent.agent._subscribers import Subscribers
from tether.loop.agent_loop import CONSUMER_GONE, run_owned_turns
from tether.loop.output import OutputState
from tether.loop.retries import RetryBudget
from tether.protocol import (
    AgentEvent,
    CancelledRunResult,
    FailedRunResult,
    MaxStepsRunResult,
    Message,
    RunError,
    RunResult,
    UserMessage,
    assert_never,
)
from tether.protocol import _trusted as trusted
from tether.protocol.results import AgentFailureCode
from tether.stream import EventStream

__all__ = ["RunDriver"]

_STATE_FAILED: Final = "Stateful Agent lifecycle failed"


class RunDriver:
    """Starts and drives an Agent's logical runs over its state and collaborators."""

    __slots__ = ("compaction", "queue", "recording", "state", "subscribers")

    def __init__(
        self,
        state: AgentState,
        queue: WorkQueue,
        subscribers: Subscribers,
        recording: Recording,
        compaction: Compaction,
    ) -> None:
        self.state = state
        self.queue = queue
        self.subscribers = subscribers
        self.recording = recording
        self.compaction = compaction

    def start(
        self, accepted: list[UserMessage], deps: object, output: OutputState | None
    ) -> EventStream[AgentEvent, RunResult[Any]]:
        """Start a logical run that begins with ``accepted`` (already in the transcript) on a
        task; returns its stream."""
        active = ActiveRun(deps, output)
        active.publish = partial(self._publish, active)
        tracing = self.state.tracing
        if tracing is not None:
            from tether.tracing._spans import RunTrace

            trace = RunTrace(tracing, self.state.model, self.state.system)
            active.trace = trace
            active.publish = trace.emit(active.publish)
        self.state.active = active
        controller = active.controller
        active.output.on_abandon(lambda: controller.abort(AbortError(CONSUMER_GONE)))
        if active.trace is None:
            start_producer(self._own(active, accepted))
        else:
            with active.trace.attached():  # the producer keeps the run's span as current
                start_producer(self._own(active, accepted))
        return active.output

    def _publish(self, active: ActiveRun, event: AgentEvent) -> None:
        active.output.push(event)
        self.subscribers.dispatch(event, active.signal)

    async def _own(self, active: ActiveRun, accepted: list[UserMessage]) -> None:
        state = self.state
        run = LogicalRun()
        try:
            terminal = await self._produce(active, accepted, run)
        except Exception as error:
            terminal = self._after_failure(active, run, error)
        except asyncio.CancelledError:
            # The task itself was cancelled (the event loop is shutting down): still settle.
            terminal = active.terminal or self._select(active, run, self._cancelled(active, run))
            if state.active is active:
                state.active = None
            active.output.finish(terminal)
            raise
        except BaseException as error:  # KeyboardInterrupt, SystemExit: never swallowed
            if state.active is active:
                state.active = None
            if not active.output.settled:
                active.output.fail(error)
            raise
        finally:
            if state.active is active:
                state.active = None
            if active.trace is not None and active.terminal is None:
                active.trace.finish(self._cancelled(active, run))  # ended without a result
            active.done.set_result(None)
        active.output.finish(terminal)

    def _after_failure(self, active: ActiveRun, run: LogicalRun, error: Exception) -> RunResult:
        if active.terminal is not None:  # the failure came after the terminal event
            return active.terminal
        code: AgentFailureCode
        if isinstance(error, AgentMessageLimitError):
            code = "AGENT_MESSAGE_LIMIT"
        elif isinstance(error, AgentRecordingError):
            code = "AGENT_RECORDING_FAILED"
        else:
            code = "AGENT_STATE_FAILED"
        result = self._failed(run, code, message_of(error, _STATE_FAILED))
        return self._select(active, run, result)

    async def _produce(
        self, active: ActiveRun, accepted: list[UserMessage], run: LogicalRun
    ) -> RunResult:
        state = self.state
        queue = self.queue
        persist = self.recording.persist
        publish = active.publish
        for message in accepted:
            publish(trusted.message_accepted_event(run.sequence, message))
            run.sequence += 1
        await persist(accepted)
        cap = state.cap
        budget = RetryBudget.for_run(state.tools, state.tool_retries)
        # Why: with no recorder ``persist`` does nothing, and an empty steering queue accepts
        # nothing; a turn skips both calls (a coroutine made and awaited each) then (issue 30).
        recorded = self.recording.recorder is not None
        while True:
            if len(state.transcript) > cap:
                return self._select(active, run, self._over_cap(run))
            policy = self.compaction.policy
            if policy is not None:
                summary = await self.compaction.compact_if_due(policy, active.signal)
                if summary is not None:
                    publish(trusted.message_accepted_event(run.sequence, summary))
                    run.sequence += 1
                if signal_aborted(active.signal):
                    return self._select(active, run, self._cancelled(active, run))
            before = len(state.transcript)
            trace = TurnTrace() if state.interrupted == "keep" else None
            result, run.sequence = await run_owned_turns(
                transcript=tuple(state.transcript),
                call_ids=set(state.call_ids),
                open_stream=state.open_stream
                if active.trace is None
                else active.trace.open_stream(state.open_stream),
                registry=state.tools,
                max_steps=1,
                signal=active.signal,
                system=state.system,
                limits=state.limits,
                hooks=state.hooks,
                request_sequence_start=state.requests,
                sequence_start=run.sequence,
                emit=publish if trace is None else observed(trace, publish),
                deps=active.deps,
                budget=budget,
                output=active.structured,
            )
            state.requests += 1
            run.usage = run.usage + result.usage
            state.usage = state.usage + result.usage
            if signal_aborted(active.signal):  # cancellation wins: the turn is not adopted
                if trace is not None:  # ... unless the owner keeps interrupted turns
                    await self._keep_interrupted(active, run, result, before, trace)
                return self._select(active, run, self._cancelled(active, run))
            run.turns += 1
            if len(result.messages) > cap:
                return self._select(active, run, self._over_cap(run))
            self._adopt(result.messages, before)
            self.compaction.note_usage(result.usage, before)
            status = result.status
            if status == "cancelled" or status == "failed":
                result = self._close_orphans(active, run, result)
                await persist(state.transcript[before:])
                return self._select(active, run, result)
            if recorded:
                await persist(state.transcript[before:])
            if status == "maxSteps":
                if run.turns >= state.max_steps:
                    return self._select(active, run, self._max_steps_result(run))
                if queue.steering:
                    accepted_now = self._accept_steering(active, run)
                    if recorded:
                        await persist(accepted_now)
                continue
            if status != "completed":
                assert_never(status)
            if queue.steering:
                if run.turns >= state.max_steps:
                    return self._select(active, run, self._max_steps_result(run))
                await persist(self._accept_steering(active, run))
                continue
            if queue.follow_ups:
                if run.turns >= state.max_steps:
                    return self._select(active, run, self._max_steps_result(run))
                follow: list[UserMessage] = []
                queue.accept_from(queue.follow_ups, follow)
                publish(trusted.message_accepted_event(run.sequence, follow[0]))
                run.sequence += 1
                await persist(follow)
                continue
            return self._select(active, run, result)

    def _adopt(self, messages: Sequence[Message], before: int) -> None:
        """Take a turn's transcript: the loop built it from ours plus complete messages."""
        state = self.state
        for message in messages[before:]:
            if message.role == "assistant":
                for block in message.content:
                    if block.type == "toolCall":
                        state.call_ids.add(block.id)
        state.transcript = list(messages)

    async def _keep_interrupted(
        self,
        active: ActiveRun,
        run: LogicalRun,
        result: RunResult,
        before: int,
        trace: TurnTrace,
    ) -> None:
        """Adopt a cancelled turn as far as it got (``interrupted_turns="keep"``, see
        ``kept_turn``); announced and recorded. Nothing when the turn produced nothing, or
        when keeping it would overflow the transcript cap."""
        kept = kept_turn(result, before, trace)
        if kept is None:
            return
        new, announced = kept
        if before + len(new) > self.state.cap:
            return
        self._adopt((*self.state.transcript[:before], *new), before)
        for message in new[announced:]:
            active.publish(trusted.message_accepted_event(run.sequence, message))
            run.sequence += 1
        await self.recording.persist(new)

    def _close_orphans(self, active: ActiveRun, run: LogicalRun, result: RunResult) -> RunResult:
        """Answer every tool call the turn left without a result, so the transcript stays a
        valid request for the next run.

        A turn ends with calls unanswered when the model was cut off (``length``) or refused
        with calls in its message, or when a tool failure stopped the batch. The loop keeps
        that message; an owner that will send the transcript again must close the calls, or
        every later request is rejected (APIs require a result per call). Each gets an
        ``is_error`` result ``TOOL_CALL_NOT_RUN``, announced with ``message.accepted``.
        """
        transcript = self.state.transcript
        code = result.error.code if result.status == "failed" else "cancelled"
        closing = unanswered_call_results(
            transcript, f"The turn ended ({code}) before this tool call ran"
        )
        if not closing:
            return result
        for message in closing:
            transcript.append(message)
            active.publish(trusted.message_accepted_event(run.sequence, message))
            run.sequence += 1
        return dataclasses.replace(result, messages=tuple(transcript))

    def _accept_steering(self, active: ActiveRun, run: LogicalRun) -> list[UserMessage]:
        accepted: list[UserMessage] = []
        if self.queue.accept_from(self.queue.steering, accepted):
            active.publish(trusted.message_accepted_event(run.sequence, accepted[0]))
            run.sequence += 1
        return accepted

    def _select(self, active: ActiveRun, run: LogicalRun, result: RunResult) -> RunResult:
        """Make ``result`` the run's terminal: the logical run's usage, cancellation applied,
        the transcript set to its messages, ``run.finished`` emitted (exactly once)."""
        if result.usage is not run.usage:
            result = dataclasses.replace(result, usage=run.usage)
        if result.status != "cancelled" and signal_aborted(active.signal):
            result = self._cancelled(active, run)
        self.state.transcript = list(result.messages)
        active.terminal = result
        active.publish(trusted.run_finished_event(run.sequence, result))
        run.sequence += 1
        return result

    def _cancelled(self, active: ActiveRun, run: LogicalRun) -> CancelledRunResult:
        reason = signal_reason(active.signal)
        if isinstance(reason, str):
            text = reason if is_non_empty(reason) else DEFAULT_CANCEL_REASON
        else:
            text = (
                message_of(reason, DEFAULT_CANCEL_REASON)
                if reason is not None
                else DEFAULT_CANCEL_REASON
            )
        return CancelledRunResult(
            messages=tuple(self.state.transcript), reason=text, usage=run.usage
        )

    def _failed(self, run: LogicalRun, code: AgentFailureCode, message: str) -> FailedRunResult:
        return FailedRunResult(
            messages=tuple(self.state.transcript),
            error=RunError(code=code, message=message),
            usage=run.usage,
        )

    def _over_cap(self, run: LogicalRun) -> FailedRunResult:
        return self._failed(
            run, "AGENT_MESSAGE_LIMIT", f"Agent transcript exceeded {self.state.cap} messages"
        )

    def _max_steps_result(self, run: LogicalRun) -> MaxStepsRunResult:
        return MaxStepsRunResult(
            messages=tuple(self.state.transcript), max_steps=self.state.max_steps, usage=run.usage
        )
