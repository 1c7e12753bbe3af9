"""What ``tether chat`` writes: ``ChatView`` draws a run's events for a person.

Assistant text and thinking as streamed Markdown (``tether.cli.ui.markdown``), each tool call
and its result's first and last lines (``tether.cli.ui.results``), a running tool's live
output, the status row and the usage line. On a terminal (``live``) what is unfinished is a
live region below what is final, erased and redrawn as it changes and on a resize
(``tether.cli.chat``'s docstring, "Output" and "Resizing", says what a person sees).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Final, Literal

from tether.cli.render import Output, compact, shorten

if TYPE_CHECKING:
    from tether.cli.ui.markdown import LiveRegion, StreamingMarkdown
    from tether.cli.ui.results import ResultView
    from tether.protocol import AgentEvent, ToolCall, ToolResultMessage

__all__ = ["PROGRESS_MAX_LINES", "PROGRESS_ROWS", "ChatView"]
_DIFF_LINES: Final = 12
_DEFAULT_WIDTH: Final = 100
_DEFAULT_HEIGHT: Final = 40
_LIVE_PERIOD: Final = 0.08
"""The shortest time between two redraws of the answer's unfinished block."""


class ChatView:
    """Writes a chat's events for a person (see the module docstring).

    ``color`` styles the output (ANSI); ``live`` (a terminal) draws the answer's unfinished
    Markdown block and the status line below what is final, erased and redrawn as they change
    (``tether.cli.ui.markdown.LiveRegion``); without it only final rows are written. ``size``
    gives the terminal's columns and rows (read at every draw); ``theme`` the background.
    """

    def __init__(
        self,
        out: Output,
        *,
        color: bool,
        live: bool = False,
        size: Callable[[], tuple[int, int]] | None = None,
        theme: Literal["dark", "light"] = "dark",
    ) -> None:
        self.out = out
        self.color = color
        self.live = live
        self.theme: Literal["dark", "light"] = theme
        self._size = size or (lambda: (_DEFAULT_WIDTH, _DEFAULT_HEIGHT))
        self.mode: Literal["line", "text", "thinking"] = "line"
        self.markdown: StreamingMarkdown | None = None
        self.status = ""
        """The status row drawn below the live tail (``""``: none)."""
        self.last_result: ResultView | None = None
        """The last tool result with hidden lines (``expand_last`` shows it whole)."""
        self._region: LiveRegion | None = None
        self._drawn_at = 0.0  # when the live tail was last drawn (time.monotonic)
        # The running tool's live output: its call, its complete lines so far (the last
        # PROGRESS_ROWS of them, and how many in all), its unfinished line.
        self._progress: tuple[str, list[str], int, str] | None = None

    @property
    def width(self) -> int:
        """The terminal's width in cells."""
        return max(self._size()[0], 20)

    @property
    def height(self) -> int:
        """The terminal's height in rows."""
        return max(self._size()[1], 2)

    def _style(self, code: str, text: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.color else text

    def dim(self, text: str) -> str:
        """``text`` dimmed (with colour)."""
        return self._style("2", text)

    def _draw(self, committed: str) -> None:
        """Write ``committed`` (final rows) and, when ``live``, redraw the live tail and the
        status row below it."""
        if not self.live:
            if committed:
                self.out.write(committed)
            return
        from tether.cli.ui.markdown import LiveRegion

        height = self.height
        markdown = self.markdown
        if markdown is not None and markdown.width != self.width:
            markdown.render_all(self.width)  # resized: what follows is wrapped to the new width
        region = self._region
        if region is None:
            region = self._region = LiveRegion(height)
        region.height = height
        region.width = self.width
        tail = "" if self.markdown is None else self.markdown.live(max_rows=height)
        tail += self._progress_block()
        if self.status:
            tail += self.status + "\n"
        text = region.update(committed, tail)
        self._drawn_at = time.monotonic()
        if text:
            self.out.write(text)

    def write(self, text: str) -> None:
        """Write ``text`` (whole lines) as it is."""
        self._draw(text)

    def redraw(self) -> None:
        """The terminal was resized (``SIGWINCH``): erase the live region as the terminal now
        shows it and draw it again at the new width (rows already written stay as they are:
        a terminal keeps its scrollback as it was written, or re-wraps it itself)."""
        if self.live:
            self._draw("")

    def line(self, text: str) -> None:
        """Write ``text`` on a line of its own (ending any streamed text first)."""
        self.end_stream()
        self._draw(text + "\n")

    def set_status(self, text: str) -> None:
        """Show ``text`` as the status row (``""`` erases it); only when ``live``."""
        if text != self.status:
            self.status = text
            self._draw("")

    def end_stream(self) -> None:
        """Finish streamed text or thinking: its last rows are written for good."""
        markdown = self.markdown
        self.mode = "line"
        if markdown is not None:
            committed = markdown.finish()
            self.markdown = None
            self._draw(committed)

    def _stream(self, mode: Literal["text", "thinking"], delta: str) -> None:
        if self.mode != mode:
            self.end_stream()
            from tether.cli.ui.markdown import StreamingMarkdown

            self.mode = mode
            self.markdown = StreamingMarkdown(
                width=self.width, color=self.color, theme=self.theme, thinking=mode == "thinking"
            )
        assert self.markdown is not None
        committed = self.markdown.feed(delta)
        if committed or not self.live:
            self._draw(committed)
            return
        # Rendering the unfinished block costs as much as the block is long: redraw it at a
        # frame rate, not per delta (the status ticker redraws it too while the turn runs).
        now = time.monotonic()
        if now - self._drawn_at >= _LIVE_PERIOD:
            self._draw("")

    def show(self, event: AgentEvent) -> None:
        """Write one event of a run."""
        match event.type:
            case "model.chunk":
                chunk = event.payload.chunk
                if chunk.type == "textDelta" and chunk.delta:
                    self._stream("text", chunk.delta)
                elif chunk.type == "thinkingDelta" and chunk.delta:
                    self._stream("thinking", chunk.delta)
            case "tool.started":
                self.line(self.tool_call_line(event.payload.tool_call))
            case "tool.progress":
                payload = event.payload
                self.tool_progress(payload.tool_call_id, payload.text)
            case "tool.finished":
                for text in self.tool_result_lines(event.payload.message):
                    self.line(text)
            case "model.retry":
                retry = event.payload
                self.line(
                    self._style(
                        "33",
                        f"retrying in {retry.delay_ms / 1000:g} s "
                        f"({retry.reason}, attempt {retry.attempt})",
                    )
                )
            case "message.accepted":
                message = event.payload.message
                if message.role == "user" and message.id.startswith("context-summary-"):
                    self.line(self._style("2", "(the context was compacted)"))
            case "run.finished":
                self.end_stream()

    def tool_call_line(self, call: ToolCall) -> str:
        """``→ name({arguments})``, the arguments shortened to one line; for a call whose
        arguments were not a JSON object, ``→ name(not JSON: TEXT)`` with the text sent."""
        from tether.cli.ui.text import visible
        from tether.protocol import to_json

        if call.raw_arguments is not None:
            raw = shorten(visible(call.raw_arguments, strict=True).replace("\n", " "), 200)
            return f"→ {call.name}(not JSON: {raw})"
        return f"→ {call.name}({shorten(compact(to_json(call.arguments)), 200)})"

    def tool_progress(self, call_id: str, text: str) -> None:
        """A running tool's output as it arrives. On a terminal (``live``): its last
        ``PROGRESS_ROWS`` lines in a box above the status row, redrawn as output comes and
        gone when the result is shown (head and tail, ``tool_result_lines``). Otherwise each
        complete line is written, at most ``PROGRESS_MAX_LINES`` per call, then one note."""
        call, rows, total, tail = self._progress or (call_id, [], 0, "")
        if call != call_id:
            rows, total, tail = [], 0, ""
        pieces = (tail + text).split("\n")
        tail = pieces.pop()[-4096:]
        for piece in pieces:
            if not self.live:
                if total < PROGRESS_MAX_LINES:
                    self.line(self._progress_row(piece))
                elif total == PROGRESS_MAX_LINES:
                    self.line(self.dim("    │ … (more output: the result follows)"))
            total += 1
        rows = [*rows, *pieces][-PROGRESS_ROWS:]
        self._progress = (call_id, rows, total, tail)
        if self.live:
            self._draw("")

    def _progress_row(self, text: str) -> str:
        from tether.cli.ui.text import clip, visible

        return self.dim("    │ " + clip(visible(text, strict=True), max(self.width - 7, 10)))

    def _progress_block(self) -> str:
        """The live box of the running tool's output (``""`` when there is none)."""
        if self._progress is None:
            return ""
        _, rows, total, tail = self._progress
        shown = [*rows, tail] if tail else rows
        hidden = total - len(rows)
        head = [self.dim(f"    │ … {hidden} earlier lines")] if hidden > 0 else []
        return "".join(row + "\n" for row in [*head, *map(self._progress_row, shown)])

    def tool_result_lines(self, result: ToolResultMessage) -> list[str]:
        """A tool's result, marked ok or error: its first and last lines
        (``tether.cli.ui.results``; ``edit_file``: more of its diff, coloured), the ones
        between hidden (``expand_last`` shows them)."""
        from tether.cli.ui.results import result_view

        self._progress = None  # the call's live output ends with its result
        edit = result.tool_name == "edit_file"
        view = result_view(
            result.content,
            width=self.width,
            color=self.color,
            indent="    ",
            is_error=result.is_error,
            **({"head": _DIFF_LINES, "tail": 2} if edit else {}),
        )
        self.last_result = view if view.hidden else None
        rows = view.preview.splitlines()
        if edit and self.color:
            rows = [_diff_colour(row, self._style) for row in rows]
        if result.is_error:
            return [self._style("31", f"  ✗ {result.tool_name} error"), *rows]
        return [f"  ✓ {result.tool_name}", *rows]

    def expand_last(self) -> None:
        """Ctrl-O: write the last tool result whole (or say there is none hidden)."""
        view = self.last_result
        if view is None:
            self.line(self._style("2", "(no hidden tool output)"))
            return
        self.line(self._style("2", f"(all {view.lines} lines of the last tool result)"))
        self.write(view.full)

    def usage_line(
        self,
        turn: tuple[int, int],
        session: tuple[int, int],
        costs: tuple[str, str] | None = None,
    ) -> str:
        """The token usage of a turn and of the session, and their ``costs`` (shown when
        given: the model has prices)."""
        turn_cost, session_cost = ("", "") if costs is None else (f" · {c}" for c in costs)
        return self._style(
            "2",
            f"[tokens: {turn[0]} in, {turn[1]} out{turn_cost} · "
            f"session: {session[0]} in, {session[1]} out{session_cost}]",
        )


PROGRESS_MAX_LINES: Final = 20
"""How many lines of a running tool's output are written per call off a terminal."""
PROGRESS_ROWS: Final = 8
"""How many of a running tool's last output lines the chat's live box shows."""


def _diff_colour(row: str, style: Callable[[str, str], str]) -> str:
    indent, text = row[:4], row[4:]
    if text.startswith("+") and not text.startswith("+++"):
        return indent + style("32", text)
    if text.startswith("-") and not text.startswith("---"):
        return indent + style("31", text)
    return row
