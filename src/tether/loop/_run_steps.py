"""A run's state and steps: ask the model, run the tools it calls, map the end to a result.

``Run`` holds one run's private state (the transcript so far, the event sequence, the usage)
and drives its steps: each step sends a request (``tether.loop._model_turn``), appends the
checked assistant message, and runs its tool calls one at a time in assistant order (an
invalid call is answered, never run; a structured answer is read by ``OutputState``).
``outcome`` maps whatever stopped the steps to the ``RunResult`` (``terminal``): a result,
a cancellation or a failure with its stable code.

Both entry points in ``tether.loop.agent_loop`` (``run_agent_loop`` and ``run_owned_turns``) drive
a ``Run``; this module is what they share.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence
from typing import Any, Final

from tether._async.race import (
    check_signal,
    is_raw_abort_reason,
    reraise_task_cancellation,
    signal_aborted,
    signal_reason,
)
from tether._base.exact_types import type_of
from tether._base.strings import is_non_empty, message_of
from tether.abort import AbortSignal
from tether.loop._model_turn import MAX_RETRY_NOTICES_PER_TURN, RetryNotices, model_turn
from tether.loop.checks import (
    ModelOutputTruncated,
    ModelProtocolError,
    ModelRefused,
    RunFailure,
    RunFailureCode,
    SignalAccessError,
    ToolPhaseFailure,
    joined,
)
from tether.loop.hooks import ToolHooks, run_hooked_tool_call
from tether.loop.invalid_calls import invalid_call_result
from tether.loop.output import NO_OUTPUT, OutputState
from tether.loop.progress import ProgressReporter
from tether.loop.retries import RetryBudget
from tether.models.base import listen_for_retries, stop_listening
from tether.models.limits import RunLimits
from tether.protocol import (
    ZERO_USAGE,
    AgentEvent,
    AssistantMessage,
    CancelledRunResult,
    FailedRunResult,
    Message,
    ModelRequest,
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
from tether.tools import ToolRegistry, execute_tool_call


def failed(
    messages: Sequence[Message], code: RunFailureCode, message: str, usage: Any, hint: str = ""
) -> FailedRunResult:
    return FailedRunResult(
        messages=tuple(messages),
        error=RunError(code=code, message=message, hint=hint),
        usage=usage,
    )


class Run:
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
        self.notices = RetryNotices()
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
            return failed(messages, "SIGNAL_ACCESS_FAILED", str(error), usage)
        aborted = signal_aborted(self.signal)
        reason = signal_reason(self.signal) if aborted else None
        if aborted or cancelled:
            return CancelledRunResult(
                messages=messages, reason=_reason_text(reason, error), usage=usage
            )
        if isinstance(error, RunFailure):
            return failed(messages, error.code, str(error), usage, error.hint)
        return failed(
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
            response = await model_turn(self, request)
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
                            registry, block, signal, deps, progress=reporter
                        )
                    else:
                        result = await run_hooked_tool_call(
                            hooks, registry, block, self.transcript, signal, deps, reporter
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
