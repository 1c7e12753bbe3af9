"""Markdown styling for streamed text: colour without waiting for the whole answer.

``MarkdownStream`` takes the assistant's text deltas as they arrive and returns the same text
with ANSI styles: fenced code blocks (lines between two lines starting with three backticks)
in cyan with their fence lines dim, headings (a line starting with ``#``) bold, ``inline
code`` in cyan and ``**bold**`` bold. Every character is kept, markers included, so stripping
the styles gives back exactly the text the model wrote (the tests check this for any way the
text is cut into deltas). It holds back at most three characters, and only where the next ones
decide the style (a line starting with backticks, a ``*``); ``finish()`` returns what is held
back. Without colour the text passes through untouched.
"""

from __future__ import annotations

from typing import Final, Literal

__all__ = ["MarkdownStream"]

_FENCE: Final = "```"
_RESET: Final = "\x1b[0m"

LineKind = Literal["plain", "heading", "fence", "code"]


class MarkdownStream:
    """Styles one message's streamed text (see the module docstring)."""

    __slots__ = ("_bold", "_code", "_color", "_fenced", "_kind", "_pending", "_start", "_style")

    def __init__(self, *, color: bool) -> None:
        self._color = color
        self._pending: str = ""
        self._start = True  # at the start of a line
        self._fenced = False  # inside a fenced code block
        self._kind: LineKind = "plain"
        self._code = False  # inside `inline code`
        self._bold = False  # inside **bold**
        self._style: str = ""  # the SGR codes in effect on the output

    def feed(self, text: str) -> str:
        """The styled form of ``text`` (minus what must wait for the next characters)."""
        if not self._color:
            return text
        self._pending += text
        out: list[str] = []
        while self._pending and self._step(out, final=False):
            pass
        return "".join(out)

    def finish(self) -> str:
        """Everything held back, then the styles reset; the stream starts a new message."""
        if not self._color:
            return ""
        out: list[str] = []
        while self._pending:
            self._step(out, final=True)
        self._restyle(out, "")
        self._start, self._fenced, self._kind = True, False, "plain"
        self._code = self._bold = False
        return "".join(out)

    def _codes(self) -> str:
        if self._kind == "fence":
            return "2"
        if self._kind == "code":
            return "36"
        codes = ["1"] if self._kind == "heading" or self._bold else []
        if self._code:
            codes.append("36")
        return ";".join(codes)

    def _restyle(self, out: list[str], codes: str) -> None:
        if codes != self._style:
            out.append(_RESET if not codes else f"{_RESET}\x1b[{codes}m")
            self._style = codes

    def _step(self, out: list[str], *, final: bool) -> bool:
        """Consume from the pending text; ``False`` when the next characters must arrive."""
        pending = self._pending
        if self._start:
            if pending.startswith(_FENCE):
                self._kind = "fence"
            elif _FENCE.startswith(pending) and not final:
                return False  # one or two backticks: a fence, or inline code?
            elif self._fenced:
                self._kind = "code"
            elif pending[0] == "#":
                self._kind = "heading"
            else:
                self._kind = "plain"
            self._start = False
            self._restyle(out, self._codes())
            return True
        char = pending[0]
        if char == "\n":
            self._restyle(out, "")
            out.append("\n")
            if self._kind == "fence":
                self._fenced = not self._fenced
            self._start, self._code, self._bold = True, False, False
            self._pending = pending[1:]
            return True
        size = 1
        if self._kind in ("plain", "heading"):
            if char == "`":
                self._code = not self._code
                if self._code:
                    self._restyle(out, self._codes())
                    out.append(char)
                else:
                    out.append(char)
                    self._restyle(out, self._codes())
                self._pending = pending[1:]
                return True
            if char == "*" and not self._code:
                if len(pending) < 2 and not final:
                    return False
                if pending[1:2] == "*":
                    size = 2
                    self._bold = not self._bold
                    if self._bold:
                        self._restyle(out, self._codes())
                        out.append("**")
                    else:
                        out.append("**")
                        self._restyle(out, self._codes())
                    self._pending = pending[2:]
                    return True
        out.append(pending[:size])
        self._pending = pending[size:]
        return True
