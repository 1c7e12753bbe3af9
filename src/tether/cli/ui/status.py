"""The status line under a running turn: what is happening, for how long, at what cost.

``status_line(state, width=..., color=...)`` is a pure function of a ``StatusState``: a
spinner frame, what is happening (``waiting for the model``, ``thinking``, ``writing``,
``running bash``, ``retrying in 2 s (HTTP 503)``, ``compacting the context``), the elapsed
time, the tokens in and out, the cost, how much of the context window is used and the
thinking level (``think high``), joined by ``·``. When the line is wider than ``width`` the
least useful parts go first (cost, tokens, elapsed time, the thinking level; the activity and
the context share stay longest), and what is left is cut with
``…``. With colour the spinner is cyan, the details dim, and the context share yellow from 80%
and red from 95%. Text from outside (a tool's name, a retry reason) has its control
characters made visible.

The caller owns the clock and the frame counter (``frame`` grows by one per redraw); nothing
here reads the time.
"""

from __future__ import annotations

from typing import Final, Literal, TypeAlias, assert_never

from tether._base.dataclass import dataclass
from tether.cli.ui.text import cell_width, clip, plain, runs, sgr

__all__ = [
    "ASCII_SPINNER",
    "SPINNER",
    "Activity",
    "StatusState",
    "format_cost",
    "format_count",
    "format_duration",
    "status_line",
]

SPINNER: Final = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
"""The spinner's frames (braille dots)."""

ASCII_SPINNER: Final = "|/-\\"
"""The spinner's frames for a terminal without Unicode."""

Activity: TypeAlias = Literal[
    "idle", "waiting", "thinking", "writing", "tool", "retrying", "compacting"
]
"""What the turn is doing."""

_SEPARATOR: Final = " · "


@dataclass(frozen=True, slots=True, kw_only=True)
class StatusState:
    """What the status line shows. ``tool``: the running tool (``activity="tool"``);
    ``retry_in`` and ``retry_reason``: the wait before the next attempt and why
    (``activity="retrying"``, e.g. ``2.0`` and ``"HTTP 503"``); ``elapsed``: seconds since the
    turn started; ``context_used`` / ``context_window``: tokens; ``cost``: US dollars;
    ``thinking``: the thinking level the model is asked for. ``None`` leaves a part out."""

    activity: Activity
    frame: int = 0
    tool: str | None = None
    retry_in: float | None = None
    retry_reason: str | None = None
    elapsed: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost: float | None = None
    context_used: int | None = None
    context_window: int | None = None
    thinking: str | None = None


def format_duration(seconds: float) -> str:
    """``0.4 s``, ``12 s``, ``3m 05s``, ``1h 02m``."""
    seconds = max(seconds, 0.0)
    if seconds < 10:
        return f"{seconds:.1f} s"
    whole = int(seconds)
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60}m {whole % 60:02d}s"
    return f"{whole // 3600}h {whole % 3600 // 60:02d}m"


def format_count(count: int) -> str:
    """``950``, ``1.2k``, ``34k``, ``1.5M``."""
    if count < 1000:
        return str(max(count, 0))
    if count < 10_000:
        return f"{count / 1000:.1f}k"
    if count < 1_000_000:
        return f"{count // 1000}k"
    return f"{count / 1_000_000:.1f}M"


def format_cost(cost: float | None) -> str:
    """``$0.0123`` below a dollar, ``$1.50`` from one; ``unknown`` for ``None`` (a cost that
    is not known is never shown as 0)."""
    if cost is None:
        return "unknown"
    return f"${cost:.4f}" if cost < 1 else f"${cost:.2f}"


def _one_line(text: str) -> str:
    """``text`` with every control character, a newline too, shown as an escape."""
    return plain(runs(text, strict=True))


def _activity(state: StatusState) -> str:
    match state.activity:
        case "idle":
            return "ready"
        case "waiting":
            return "waiting for the model"
        case "thinking":
            return "thinking"
        case "writing":
            return "writing"
        case "tool":
            name = _one_line(state.tool) if state.tool else "a tool"
            return f"running {name}"
        case "retrying":
            text = "retrying"
            if state.retry_in is not None:
                text += f" in {max(state.retry_in, 0):.0f} s"
            if state.retry_reason:
                text += f" ({_one_line(state.retry_reason)})"
            return text
        case "compacting":
            return "compacting the context"
        case _:
            assert_never(state.activity)


def status_line(state: StatusState, *, width: int, color: bool, ascii_only: bool = False) -> str:
    """The status line for ``state``, at most ``width`` cells, no newline."""
    frames = ASCII_SPINNER if ascii_only else SPINNER
    spinner = " " if state.activity == "idle" else frames[state.frame % len(frames)]
    head = f"{spinner} {_activity(state)}"
    # (priority: lower goes first when the line is too wide, text, style)
    parts: list[tuple[int, str, str]] = []
    if state.elapsed is not None:
        parts.append((2, format_duration(state.elapsed), "2"))
    if state.input_tokens is not None or state.output_tokens is not None:
        tokens = (
            f"↑{format_count(state.input_tokens or 0)} ↓{format_count(state.output_tokens or 0)}"
        )
        parts.append((1, tokens, "2"))
    if state.cost is not None:
        parts.append((0, format_cost(state.cost), "2"))
    if state.context_used is not None and state.context_window:
        share = state.context_used / state.context_window
        style = "31" if share >= 0.95 else "33" if share >= 0.8 else "2"
        parts.append((3, f"context {share:.0%}", style))
    if state.thinking is not None:
        parts.append((2, f"think {_one_line(state.thinking)}", "2"))
    while (
        parts
        and cell_width(head)
        + sum(cell_width(_SEPARATOR) + cell_width(text) for _, text, _ in parts)
        > width
    ):
        parts.remove(min(parts, key=lambda part: part[0]))
    head = clip(head, max(width, 1))
    out = sgr(head[:1], "36", color) + head[1:]
    for _, text, style in parts:
        out += sgr(_SEPARATOR, "2", color) + sgr(text, style, color)
    return out
