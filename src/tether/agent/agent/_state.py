"""What an Agent owns (its bound model, tools, bounds and transcript) and what one of its runs
owns while it runs (its controller, stream and counters)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

from tether.abort import AbortController, AbortSignal
from tether.agent.agent._closing import InterruptedTurns
from tether.agent.agent._errors import AgentMessageLimitError
from tether.loop.hooks import ToolHooks
from tether.loop.output import OutputState
from tether.models.limits import MAX_INITIAL_MESSAGES, RunLimits
from tether.protocol import ZERO_USAGE, AgentEvent, Message, ModelRequest, ModelUsage, RunResult
from tether.stream import EventStream
from tether.tools import ToolRegistry
from tether.tracing._config import Tracing

if TYPE_CHECKING:
    from tether.tracing._spans import RunTrace

__all__ = [
    "DEFAULT_CANCEL_REASON",
    "MAX_AGENT_MESSAGES",
    "MAX_AGENT_QUEUED_MESSAGES",
    "ActiveRun",
    "AgentState",
    "LogicalRun",
]

MAX_AGENT_QUEUED_MESSAGES: Final = 256
"""Steering plus follow-up items an Agent holds at once."""
MAX_AGENT_MESSAGES: Final = MAX_INITIAL_MESSAGES
"""The workshop's cap on an Agent's transcript (``RunLimits.max_initial_messages``), so an
owned transcript is always a valid input to the loop."""

DEFAULT_CANCEL_REASON: Final = "Agent run cancelled"


class ActiveRun:
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
        "trace",
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
        self.trace: RunTrace | None = None  # the run's spans, when the Agent traces


def _ignore(_: AgentEvent) -> None:  # pragma: no cover - replaced before use
    pass


class LogicalRun:
    """Counters of one logical run: the next event sequence, turns taken, usage so far."""

    __slots__ = ("sequence", "turns", "usage")

    def __init__(self) -> None:
        self.sequence = 0
        self.turns = 0
        self.usage: ModelUsage = ZERO_USAGE


@dataclass(slots=True, kw_only=True, eq=False)
class AgentState:
    """What every part of an Agent reads: the options it was built with (fixed) and the
    transcript, the tool-call IDs in it, the request count, the usage and the active run."""

    open_stream: Callable[[ModelRequest, AbortSignal], object]
    tracing: Tracing | None
    """How runs are traced (``None``: not at all)."""
    model: object
    """The model, as the traces name it."""
    tools: ToolRegistry
    limits: RunLimits
    max_steps: int
    system: str | None
    hooks: ToolHooks | None
    interrupted: InterruptedTurns
    tool_retries: int | None
    cap: int
    """The transcript cap: ``limits.max_initial_messages``."""
    run_reserve: int
    """Messages a running turn may still add before it is adopted."""
    transcript: list[Message]
    call_ids: set[str]
    requests: int
    """Requests made over the Agent's life (the next request's number is one more)."""
    usage: ModelUsage = ZERO_USAGE
    active: ActiveRun | None = field(default=None)

    def assert_projected(self, projected: int) -> None:
        """Raise ``AgentMessageLimitError`` when ``projected`` messages exceed the cap."""
        if projected > self.cap:
            raise AgentMessageLimitError(
                f"Agent transcript and queued work must not exceed {self.cap} messages"
            )
