"""Markdown rendered as it streams: committed rows that never change, and a live tail.

An answer arrives as text deltas. Re-rendering the whole answer on every delta costs O(n²)
and makes the screen flicker; rendering only finished text shows nothing until the end. So
``StreamingMarkdown`` splits the source into *blocks* as it streams (``BlockSplitter``) and
renders each block once, when it is complete:

* ``feed(delta)`` returns the rows of the blocks the delta completed (*committed* rows: the
  caller writes them once; they never change).
* ``live()`` renders the one unfinished block (the *live tail*; cached until the next
  feed). The terminal writer erases it and draws it again (``LiveRegion``), so only a few
  rows are ever redrawn. A caller may call ``live()`` at its frame rate rather than per delta,
  and passes the terminal's height so that a long code block still streaming costs the same
  per redraw however long it grows (only its last lines are rendered).
* ``finish()`` commits the rest; ``render_all(width)`` renders everything again (a new
  terminal width), the same rows ``feed``/``finish`` gave when the width is unchanged.

A block ends (decided on complete lines only, so the split, and with it the rendering, is the
same however the text was cut into deltas): at a blank line followed by an unindented line
that does not continue a list; after a closing code fence (not one inside a list); around an
ATX heading line. Blocks are joined by one empty row.

Rendering uses ``rich`` (imported on the first render, never at import): headings, emphasis,
lists, tables, block quotes, code blocks with syntax highlighting (``theme``: ``"dark"`` or
``"light"``), wrapped to ``width``. Links show their URL (no terminal hyperlinks). Without
``color`` (``NO_COLOR``, not a terminal) the rows are plain text, no escape sequence at all;
headings keep their ``#`` marks. ``thinking=True`` renders dimmed and italic; without
``color``, where dimming cannot tell it from the answer, it starts with a ``thinking:`` row
(``THINKING_LABEL``) and every row of it is drawn in a ``│ `` gutter (``THINKING_GUTTER``),
the text wrapped two cells narrower. Control characters in the source (an ANSI escape, a
``\\r``, a bidi override) are shown as visible escapes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final, Literal, TypeAlias

from tether.cli.ui.text import MIN_WIDTH, cell_width, clip, visible

if TYPE_CHECKING:
    from tether.cli.ui._rich_render import BlockRenderer

__all__ = [
    "CODE_HIGHLIGHT_EVERY",
    "THINKING_GUTTER",
    "THINKING_LABEL",
    "BlockSplitter",
    "LiveRegion",
    "MarkdownTheme",
    "StreamingMarkdown",
    "theme_from_environment",
]

CODE_HIGHLIGHT_EVERY: Final = 8
"""While a code block streams (``live(max_rows=...)``), its lines are highlighted in groups
of this many; the newest lines are shown plain until their group is complete."""

THINKING_LABEL: Final = "thinking:"
"""The row that starts the model's thinking without colour."""

THINKING_GUTTER: Final = "│ "
"""What each row of the model's thinking starts with without colour."""

_SGR: Final = re.compile(r"\x1b\[[0-9;:]*m")
_SIMPLE_FENCE: Final = re.compile(r"(?:`{3,}|~{3,}) *([A-Za-z0-9_+.#-]*) *\n")
"""An opening fence alone on its line at the margin, its info one word (the lexer's name)."""

MarkdownTheme: TypeAlias = Literal["dark", "light"]
"""The terminal's background: picks the code highlighting and a few element colours."""


def theme_from_environment(environ: Mapping[str, str]) -> MarkdownTheme:
    """The theme a terminal's ``COLORFGBG`` (``"foreground;background"``, set by rxvt,
    Konsole, iTerm2 and others) suggests: ``"light"`` for a background of colour 7 or 9-15,
    ``"dark"`` otherwise and when it is not set (most terminals are dark)."""
    background = environ.get("COLORFGBG", "").rpartition(";")[2]
    # Only a few ASCII digits: str.isdigit() also takes "²" and any count, which int() refuses.
    if (
        background.isascii()
        and background.isdigit()
        and len(background) <= 4
        and (background == "7" or 9 <= int(background) <= 15)
    ):
        return "light"
    return "dark"


_FENCE: Final = re.compile(r"( {0,3})(`{3,}|~{3,})(.*)")
_ITEM: Final = re.compile(r"(?:[-+*]|\d{1,9}[.)])(?:[ \t]|$)")
_HEADING: Final = re.compile(r" {0,3}#{1,6}(?:[ \t]|$)")

_Kind: TypeAlias = Literal["none", "paragraph", "list", "fence"]


@dataclass(slots=True)
class _Fence:
    mark: str  # the fence's character
    length: int
    top: bool  # not inside a list: its closing line ends the block
    body: int  # where the code starts in the block (after the opening line)


class BlockSplitter:
    """Cuts streamed Markdown source into complete blocks (see the module docstring).

    ``feed(text)`` returns the source of every block that ``text`` completed, in order;
    ``pending`` is the source not yet in a block; ``finish()`` returns it as the last block
    (or nothing, if it is blank). Joining every block and ``pending`` gives back the source.
    """

    __slots__ = ("_blank_before", "_block", "_content", "_fence", "_kind", "_scanned")

    def __init__(self) -> None:
        self._block = ""  # the current block's source, complete lines and a partial one
        self._scanned = 0  # how much of _block was looked at (complete lines)
        self._kind: _Kind = "none"
        self._fence: _Fence | None = None
        self._blank_before = False  # the previous complete line was blank
        self._content = False  # the current block has a non-blank line

    @property
    def pending(self) -> str:
        """The source of the unfinished block."""
        return self._block

    @property
    def open_code(self) -> tuple[str, str] | None:
        """``(opening fence line, code so far)`` while the unfinished block is a fenced code
        block that is still open; ``None`` otherwise."""
        fence = self._fence
        if fence is None or self._kind != "fence":
            return None
        return self._block[: fence.body], self._block[fence.body :]

    def feed(self, text: str) -> list[str]:
        """Add ``text``; the blocks it completed."""
        self._block += text
        done: list[str] = []
        while True:
            end = self._block.find("\n", self._scanned)
            if end == -1:
                return done
            start, self._scanned = self._scanned, end + 1
            cut = self._line(self._block[start:end], start, end + 1)
            if cut is not None:  # before this line (which is scanned again) or after it
                done.append(self._block[:cut])
                self._block = self._block[cut:]
                self._scanned = 0
                self._new_block()

    def finish(self) -> list[str]:
        """The rest as the last block (nothing if blank); the splitter starts afresh."""
        rest = self._block
        self.__init__()
        return [rest] if rest.strip() else []

    def _new_block(self) -> None:
        self._kind, self._fence, self._blank_before, self._content = "none", None, False, False

    def _line(self, line: str, start: int, end: int) -> int | None:
        """Classify one complete line at ``start:end`` of the block; where to cut, if at all."""
        fence = self._fence
        if fence is not None:
            match = _FENCE.fullmatch(line)
            if (
                match is not None
                and match.group(2)[0] == fence.mark
                and len(match.group(2)) >= fence.length
                and not match.group(3).strip()
            ):
                self._fence = None
                if fence.top:
                    return end
            return None
        if not line.strip():
            self._blank_before = self._content
            return None
        indent = len(line) - len(line.lstrip(" "))
        item = _ITEM.match(line, indent) is not None
        if (
            self._content
            and self._blank_before
            and indent == 0
            and not (self._kind == "list" and item)
        ):
            return start
        if _HEADING.match(line) is not None and (indent == 0 or self._kind != "list"):
            return start if self._content else end  # a heading is a block of its own
        self._blank_before = False
        self._content = True
        match = _FENCE.fullmatch(line)
        if match is not None and not (match.group(2)[0] == "`" and "`" in match.group(3)):
            self._fence = _Fence(
                mark=match.group(2)[0],
                length=len(match.group(2)),
                top=self._kind != "list" or indent == 0,
                body=end,
            )
            if self._kind == "none":
                self._kind = "fence"
            return None
        if item:
            self._kind = "list"
        elif self._kind == "none":
            self._kind = "paragraph"
        return None


class StreamingMarkdown:
    """One message's Markdown, rendered as it streams (see the module docstring).

    ``width`` is the terminal's width in cells, ``color`` whether to style at all, ``theme``
    the background, ``thinking`` whether this is the model's thinking (dimmed).
    """

    __slots__ = (
        "_blocks",
        "_code_chunks",
        "_code_rows",
        "_color",
        "_gutter",
        "_live",
        "_renderer",
        "_shown",
        "_splitter",
        "_theme",
        "_thinking",
        "_width",
    )

    def __init__(
        self,
        *,
        width: int,
        color: bool,
        theme: MarkdownTheme = "dark",
        thinking: bool = False,
    ) -> None:
        self._width = max(width, MIN_WIDTH)
        self._color = color
        self._theme: MarkdownTheme = theme
        self._thinking = thinking
        self._gutter = thinking and not color  # the label and the gutter set thinking apart
        self._splitter = BlockSplitter()
        self._blocks: list[str] = []  # committed blocks' source
        self._renderer: BlockRenderer | None = None
        self._live: tuple[int | None, str] | None = None  # the cached live tail, its max_rows
        self._shown = False  # some committed block rendered rows
        # the highlighted rows of an open code block's lines: ((opening, lines, max_rows), rows)
        self._code_rows: tuple[tuple[str, int, int], str] | None = None
        # the bounded tail's chunks: (opening, lines) -> (their highlighted lines, their rows)
        self._code_chunks: dict[tuple[str, tuple[str, ...]], tuple[tuple[object, ...], list[str]]]
        self._code_chunks = {}

    @property
    def width(self) -> int:
        """The width rows are rendered to."""
        return self._width

    @property
    def source(self) -> str:
        """All the text fed so far."""
        return "".join(self._blocks) + self._splitter.pending

    def _render(self, source: str) -> str:
        renderer = self._renderer
        if renderer is None:
            from tether.cli.ui._rich_render import BlockRenderer

            width = self._width - len(THINKING_GUTTER) if self._gutter else self._width
            renderer = BlockRenderer(
                width=width, color=self._color, theme=self._theme, dim=self._thinking
            )
            self._renderer = renderer
        rows = renderer.render(visible(source, strict=False))
        if not self._gutter or not rows:
            return rows
        return "".join(THINKING_GUTTER + row + "\n" for row in rows.split("\n")[:-1])

    def _joined(self, rows: str) -> str:
        """``rows`` as they follow what was shown: after an empty row between two blocks, or
        after the thinking label before the first."""
        if self._shown:
            return (THINKING_GUTTER.rstrip() if self._gutter else "") + "\n" + rows
        return THINKING_LABEL + "\n" + rows if self._gutter else rows

    def _commit(self, blocks: list[str]) -> str:
        out: list[str] = []
        for block in blocks:
            rows = self._render(block)
            self._blocks.append(block)
            if rows:
                out.append(self._joined(rows))
                self._shown = True
        return "".join(out)

    def feed(self, delta: str) -> str:
        """Add a text delta; the committed rows it completed (often ``""``)."""
        if not delta:
            return ""
        self._live = None
        return self._commit(self._splitter.feed(delta))

    def live(self, max_rows: int | None = None) -> str:
        """The unfinished block's rows (``""`` when there is none), with the empty row that
        will separate it from the committed rows above.

        ``max_rows`` (the terminal's height: no more of the tail can be seen) bounds the work
        of a fenced code block still streaming: its last complete lines (``max_rows`` in all
        with the newest) are highlighted once every ``CODE_HIGHLIGHT_EVERY`` lines and kept,
        and the lines since are shown plain below them until the next time, so a redraw costs
        almost nothing however long the block grows (the committed rows are highlighted whole).
        """
        cached = self._live
        if cached is not None and cached[0] == max_rows:
            return cached[1]
        code = self._splitter.open_code
        if max_rows is not None and code is not None:
            rows = self._code_tail(code[0], code[1], max(max_rows, 1))
        else:
            pending = self._splitter.pending
            rows = self._render(pending) if pending.strip() else ""
        shown = self._joined(rows) if rows else rows
        self._live = (max_rows, shown)
        return shown

    def _code_tail(self, opening: str, body: str, max_rows: int) -> str:
        complete, _, partial = body.rpartition("\n")
        lines = complete.split("\n") if complete else []
        done = len(lines) - len(lines) % CODE_HIGHLIGHT_EVERY
        key = (opening, done, max_rows)
        if self._code_rows is None or self._code_rows[0] != key:
            start = max(done - max(max_rows - CODE_HIGHLIGHT_EVERY, 0), 0)
            shown = lines[start:done]
            self._code_rows = (key, self._code_window(opening, shown) if shown else "")
        rest = [*lines[done:], partial] if partial else lines[done:]
        gutter = THINKING_GUTTER if self._gutter else ""
        room = max(self._width - len(gutter) - 1, 1)
        plain = "".join(
            gutter + " " + clip(visible(line, strict=False), room) + "\n" for line in rest
        )
        return self._code_rows[1] + plain

    def _code_window(self, opening: str, shown: list[str]) -> str:
        """The rows of the code block ``opening`` + ``shown``: the bounded tail's highlighted
        part, the same rows as ``_render`` of it whole (the plain path), at less cost.

        The window moves down ``CODE_HIGHLIGHT_EVERY`` lines at a time, so it is cut into
        chunks of that many lines from its first: the next window's chunks are this one's
        but the first, and then only its last two are new. A chunk's rows are those of the
        chunk rendered alone as a code block, less its top and bottom padding rows; the window
        is the padding row, its chunks' rows, the padding row. That holds where ``Syntax``
        lays each line out by itself (it does, with word wrap, from the line's highlighted
        text) and where each chunk's highlighted lines alone equal the same lines of the
        window highlighted together (``BlockRenderer.code_lines``; not so, e.g., for a chunk
        inside a multi-line string, or one that ends in blank lines the block strips): that
        is checked for every window, and any chunk that fails it, a fence this does not know
        for a plain fence line, or rows without colour (whose padding rows are empty, and
        stripped) take the plain path. So a frame highlights the window's text, but lays out
        and renders only the new lines, as the ``Syntax`` the block would make
        (``BlockRenderer.code_rows``: no Markdown parse for a few lines).
        ``tests/cli/test_ui_markdown.py`` checks the rows equal the plain path's for code of
        every kind.
        """
        plain = opening + "".join(line + "\n" for line in shown)
        fence = _SIMPLE_FENCE.fullmatch(opening)
        if fence is None or not self._color or self._gutter:
            return self._render(plain)
        if self._renderer is None:
            self._render("")  # the renderer, made once
        renderer = self._renderer
        assert renderer is not None
        lexer = fence[1] or "text"
        window = renderer.code_lines(lexer, visible("\n".join(shown), strict=False))
        if len(window) != len(shown):
            return self._render(plain)
        cache, kept = self._code_chunks, {}
        self._code_chunks = kept
        step = CODE_HIGHLIGHT_EVERY
        top = bottom = None
        inner: list[str] = []
        for offset in range(0, len(shown), step):
            lines = tuple(shown[offset : offset + step])
            entry = cache.get((opening, lines))
            if entry is None:
                code = visible("\n".join(lines), strict=False)
                texts = renderer.code_lines(lexer, code)
                rows = renderer.code_rows(lexer, code)
                entry = (texts, rows.split("\n")[:-1])
            kept[(opening, lines)] = entry
            texts, rows = entry
            if texts != window[offset : offset + len(lines)] or len(rows) < 2:
                return self._render(plain)
            if top is None:
                top, bottom = rows[0], rows[-1]
            if rows[0] != top or rows[-1] != bottom:
                return self._render(plain)
            inner += rows[1:-1]
        if top is None or bottom is None:
            return self._render(plain)
        return "".join(row + "\n" for row in (top, *inner, bottom))

    def finish(self) -> str:
        """Commit the unfinished block; its rows (the live tail is then empty)."""
        self._live = None
        return self._commit(self._splitter.finish())

    def render_all(self, width: int | None = None) -> str:
        """Every committed row again, at ``width`` (which then applies to what follows), plus
        the live tail; equal to the rows ``feed`` and ``finish`` returned when the width is
        unchanged."""
        if width is not None and max(width, MIN_WIDTH) != self._width:
            self._width = max(width, MIN_WIDTH)
            self._renderer = None
        blocks, self._blocks, self._shown = self._blocks, [], False
        out = self._commit(blocks)
        self._live = None
        return out + self.live()


@dataclass(slots=True)
class LiveRegion:
    """The terminal side of the live tail: what to write so the screen shows the committed
    rows followed by the current live tail, erasing the previous live tail first.

    The live tail is drawn below everything committed, and only its last ``height - 1`` rows
    (``height``: the terminal's rows), since the cursor cannot move back up to a row that
    scrolled off the screen. The previous tail is erased row by row, from the cursor's row up to
    the tail's first row (``ESC[2K``, then ``ESC[1F ESC[2K`` per row): erasing a line, unlike
    clearing to the end of the screen, never makes a terminal (tmux does, from the top row)
    copy the screen into its scrollback. Every row given ends in a newline.

    ``width`` is the terminal's width now (``0``: unknown). The cells of each row drawn are
    kept: after the terminal narrows, a terminal that re-wraps its lines (tmux, VTE, iTerm2,
    kitty, ...) shows a row wider than ``width`` on several rows, and all of them are erased
    (those it pushed off the top of the screen while re-wrapping cannot be: they stay in its
    scrollback).
    """

    height: int
    width: int = 0
    drawn: int = 0  # rows of live tail on screen
    cells: list[int] = field(default_factory=list[int])  # the width of each drawn row

    def update(self, committed: str, live: str) -> str:
        """The text that erases the drawn tail, writes ``committed``, then draws ``live``."""
        rows = live.split("\n")[:-1] if live else []
        room = max(self.height - 1, 1)
        if len(rows) > room:
            rows = rows[len(rows) - room :]
        if not committed and not self.drawn and not rows:
            return ""
        out = [self.erase(), committed]
        out += [row + "\n" for row in rows]
        self.drawn = len(rows)
        self.cells = [cell_width(_SGR.sub("", row)) for row in rows]
        return "".join(out)

    def screen_rows(self) -> int:
        """How many screen rows the drawn tail takes at ``width`` now."""
        width = self.width
        if width <= 0 or len(self.cells) != self.drawn:
            return self.drawn
        return sum(max(-(-cells // width), 1) for cells in self.cells)

    def erase(self) -> str:
        """The text that erases the drawn tail (``""`` if none is drawn)."""
        if not self.drawn:
            return ""
        text = "\r\x1b[2K" + "\x1b[1F\x1b[2K" * self.screen_rows()
        self.drawn = 0
        self.cells = []
        return text
