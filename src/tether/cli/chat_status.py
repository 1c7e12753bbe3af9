"""The status line of a running ``tether chat`` turn: what the turn is doing (read from its
events), the elapsed time, its tokens, the session's cost and the context used, redrawn under
the live tail about ten times a second (``tether.cli.ui.status`` formats it)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Final

from tether.cli.chat_operations import ChatOperations

if TYPE_CHECKING:
    from tether.cli.ui.status import Activity
    from tether.coding.session import CodingEvent

__all__ = ["ChatStatus"]
_STATUS_PERIOD: Final = 0.1
"""Seconds between two redraws of the status line."""
_STALL_SECONDS: Final = 2.0
"""A stream quiet this long shows as waiting for the model again."""


class ChatStatus(ChatOperations):
    """The status line of ``tether.cli.chat_session.Chat``: ``_note_activity`` reads each event,
    ``_tick`` redraws the line while a turn runs (not while the approval question is up)."""

    typed: str
    _asking: bool
    _activity: tuple[Activity, str | None]
    _retry: tuple[float, str] | None
    _last_chunk: float

    def _note_activity(self, event: CodingEvent) -> None:
        """What the status line says the turn is doing, from its events."""
        loop_time = asyncio.get_running_loop().time()
        if event.type == "model.chunk":
            kind = event.payload.chunk.type
            if kind == "textDelta":
                self._activity = ("writing", None)
            elif kind == "thinkingDelta":
                self._activity = ("thinking", None)
            self._last_chunk = loop_time
        elif event.type == "tool.started":
            self._activity = ("tool", event.payload.tool_call.name)
        elif event.type == "model.retry":
            retry = event.payload
            self._activity = ("retrying", None)
            self._retry = (loop_time + retry.delay_ms / 1000, retry.reason)
        elif event.type in ("tool.finished", "message.accepted"):
            self._activity = ("waiting", None)
            self._last_chunk = loop_time

    def _current_activity(self) -> tuple[Activity, str | None]:
        return self._activity

    async def _tick(self) -> None:
        """Redraw the status line under the live tail about ten times a second while a turn
        runs (not while the approval question is up)."""
        from tether.cli.ui.status import StatusState, status_line
        from tether.coding.config import DEFAULT_CONTEXT_WINDOW

        loop = asyncio.get_running_loop()
        started = self._last_chunk = loop.time()
        self._activity = ("waiting", None)
        meter = self.meter
        base = (0, 0) if meter is None else (meter.input_tokens, meter.output_tokens)
        frame = 0
        while True:
            now = loop.time()
            activity, tool = self._current_activity()
            if activity in ("writing", "thinking") and now - self._last_chunk > _STALL_SECONDS:
                activity = "waiting"  # the stream went quiet
            meter = self.meter
            tokens = (
                (None, None)
                if meter is None
                else (meter.input_tokens - base[0], meter.output_tokens - base[1])
            )
            retry_in, retry_reason = None, None
            if activity == "retrying" and self._retry is not None:
                retry_in, retry_reason = max(self._retry[0] - now, 0.0), self._retry[1]
            state = StatusState(
                activity=activity,
                frame=frame,
                tool=tool,
                retry_in=retry_in,
                retry_reason=retry_reason,
                elapsed=now - started,
                input_tokens=tokens[0] or None,
                output_tokens=tokens[1] or None,
                cost=self.coding.cost,
                context_used=None if meter is None else meter.context_tokens,
                context_window=self.choice.context_window or DEFAULT_CONTEXT_WINDOW,
                thinking=self.coding.thinking,
            )
            if not self._asking:
                width = self.view.width - 1
                line = status_line(state, width=width, color=self.view.color)
                if self.typed:
                    line += "\n" + _typed_row(self.typed, width)
                self.view.set_status(line)
            frame += 1
            await asyncio.sleep(_STATUS_PERIOD)


def _typed_row(typed: str, width: int) -> str:
    """The row under the status line showing what was typed during the turn."""
    from tether.cli.ui.text import clip, visible

    hint = "  (Enter steers, Alt-Enter follows up)"
    return clip("> " + visible(typed, strict=True) + hint, max(width, 1))
