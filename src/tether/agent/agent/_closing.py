"""Closing a transcript whose turn ended early: a result for every unanswered tool call, and
an interrupted turn kept as far as it got (``interrupted_turns="keep"``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final, Literal, TypeAlias

from tether.protocol import (
    AgentEvent,
    AssistantBlock,
    AssistantMessage,
    Message,
    ModelChunk,
    RunResult,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    new_message_id,
)
from tether.protocol import _trusted as trusted
from tether.tools.serialize import serialize_output

__all__ = [
    "INTERRUPTED_TURN_NOTE",
    "ClosedCallCode",
    "InterruptedTurns",
    "TurnTrace",
    "kept_turn",
    "observed",
    "unanswered_call_results",
    "unanswered_tool_calls",
]

INTERRUPTED_TURN_NOTE: Final = "[the user interrupted the previous answer]"
"""The content of the user-role note that ends an interrupted turn an Agent kept
(``interrupted_turns="keep"``): it tells the model its answer was cut off."""

InterruptedTurns: TypeAlias = Literal["discard", "keep"]
"""What an Agent adopts from a cancelled turn: nothing (``"discard"``, the workshop's rule) or
the turn as far as it got, closed into a valid transcript (``"keep"``)."""

ClosedCallCode: TypeAlias = Literal["TOOL_CALL_NOT_RUN", "TOOL_CALL_INTERRUPTED"]
"""The codes of the ``is_error`` results an Agent writes for tool calls a turn left without
one: ``TOOL_CALL_NOT_RUN`` (the turn ended first), ``TOOL_CALL_INTERRUPTED`` (the user
interrupted it; ``interrupted_turns="keep"``)."""

_INTERRUPTED_RUNNING: Final = (
    "TOOL_CALL_INTERRUPTED: interrupted by the user; it may have had side effects"
)
_INTERRUPTED_WAITING: Final = "TOOL_CALL_INTERRUPTED: interrupted by the user before it ran"


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


class TurnTrace:
    """What one turn streamed, for keeping it when it is interrupted: its text, thinking and
    complete tool-call chunks in order, and the calls whose tool started."""

    __slots__ = ("chunks", "started")

    def __init__(self) -> None:
        self.chunks: list[ModelChunk] = []
        self.started: set[str] = set()

    def observe(self, event: AgentEvent) -> None:
        """Note a chunk or a started tool from the turn's events."""
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
                # As it streamed, a lone surrogate too (a model's "\ud800", or a character
                # a delta cut): a session keeps it, a provider request sends it as U+FFFD.
                text = "".join(run)
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


def observed(
    trace: TurnTrace, publish: Callable[[AgentEvent], None]
) -> Callable[[AgentEvent], None]:
    """``publish`` that shows every event to ``trace`` first."""

    def emit(event: AgentEvent) -> None:
        trace.observe(event)
        publish(event)

    return emit


def kept_turn(result: RunResult, before: int, trace: TurnTrace) -> tuple[list[Message], int] | None:
    """What a cancelled turn leaves when it is kept, after the first ``before`` messages: what
    the loop kept (a complete assistant message, the results of finished calls) or else the
    message as far as it streamed, a ``TOOL_CALL_INTERRUPTED`` result for each call left
    unanswered, and ``INTERRUPTED_TURN_NOTE``; with how many of them the loop already
    announced. ``None`` when the turn produced nothing."""
    messages = list(result.messages)
    if len(messages) < before:  # pragma: no cover - the loop only appends
        return None
    if len(messages) == before:
        partial = trace.partial_message()
        if partial is None:
            return None
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
    announced = len(messages) - before if len(result.messages) > before else 0
    return new, announced
