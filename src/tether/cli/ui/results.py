"""A tool result as a person wants it: its head and its tail, and the rest on request.

A test run's verdict, a build's error, a command's exit code come at the *end* of its output,
so showing only the first lines hides what matters. ``result_view`` keeps the first ``head``
and the last ``tail`` lines and puts ``… N lines hidden (Ctrl-O to expand)`` between them
(nothing is hidden when that would hide fewer than two lines). Each shown line is cut to the
width with ``…``; ``ResultView.full`` is every line, wrapped to the width, for the expand key.

A result's own colour codes (SGR sequences such as a test runner's ``ESC[31m``) are dropped;
every other control character (a cursor movement, a ``\\r`` progress bar, a bidi override) is
shown as a visible escape (``tether.cli.ui.text``, not strict: tabs become spaces), so a
result can neither restyle nor rewrite the screen.
"""

from __future__ import annotations

import re
from typing import Final

from tether._base.dataclass import dataclass
from tether.cli.ui.text import MIN_WIDTH, clip, clip_runs, paint, runs, sgr, wrap

__all__ = ["EXPAND_KEY", "RESULT_HEAD_LINES", "RESULT_TAIL_LINES", "ResultView", "result_view"]

RESULT_HEAD_LINES: Final = 4
"""Lines shown from a result's start by default."""

RESULT_TAIL_LINES: Final = 6
"""Lines shown from a result's end by default."""

_SGR: Final = re.compile(r"\x1b\[[0-9;:]*m")

EXPAND_KEY: Final = "Ctrl-O"
"""The key the hidden-lines note names (the interactive mode binds it)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ResultView:
    """One tool result laid out for the terminal.

    ``preview`` and ``full`` are rows ending with a newline. ``hidden`` counts the result's
    lines the preview leaves out (0: the preview is the whole result, cut to the width);
    ``lines`` counts all of them.
    """

    preview: str
    full: str
    hidden: int
    lines: int


def _lines(text: str) -> list[str]:
    lines = _SGR.sub("", text).split("\n")
    if len(lines) > 1 and lines[-1] == "":
        lines.pop()  # the final newline ends the last line
    return [line.removesuffix("\r") for line in lines]


def result_view(
    text: str,
    *,
    width: int,
    color: bool,
    head: int = RESULT_HEAD_LINES,
    tail: int = RESULT_TAIL_LINES,
    indent: str = "  ",
    is_error: bool = False,
) -> ResultView:
    """``text`` laid out (see the module docstring): each row starts with ``indent`` and is at
    most ``width`` cells wide; an error result is red when ``color``."""
    width = max(width, MIN_WIDTH)
    room = max(width - len(indent), 1)
    style = "31" if is_error else ""
    lines = _lines(text)
    shown = [runs(line, strict=False) for line in lines]
    head, tail = max(head, 0), max(tail, 0)
    hidden = len(lines) - head - tail
    preview: list[str] = []
    if hidden < 2:
        picked, hidden = shown, 0
        cut = -1
    else:
        picked = shown[:head] + shown[len(shown) - tail :]
        cut = head
    for index, line in enumerate(picked):
        if index == cut:
            note = f"… {hidden} lines hidden ({EXPAND_KEY} to expand)"
            preview.append(indent + sgr(clip(note, room), "2", color))
        text_row = paint(clip_runs(line, room), color=color, style=style)
        preview.append(indent + text_row)
    if cut == len(picked):  # tail == 0
        note = f"… {hidden} lines hidden ({EXPAND_KEY} to expand)"
        preview.append(indent + sgr(clip(note, room), "2", color))
    full = [
        indent + paint(row, color=color, style=style) for line in shown for row in wrap(line, room)
    ]
    return ResultView(
        preview="".join(row + "\n" for row in preview),
        full="".join(row + "\n" for row in full),
        hidden=hidden,
        lines=len(lines),
    )
