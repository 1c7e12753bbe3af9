"""The ``rich`` side of ``tether.cli.ui.markdown``: one Markdown block to terminal rows.

Imported only when the first block renders (``rich`` costs tens of milliseconds to import,
which ``import tether`` and ``tether --help`` must not pay).
"""

from __future__ import annotations

import io
from collections.abc import Iterable
from typing import ClassVar, Final, Literal

from rich.console import Console, ConsoleOptions, JustifyMethod, RenderResult
from rich.markdown import Heading, Markdown, MarkdownElement
from rich.syntax import Syntax
from rich.text import Text
from rich.theme import Theme

__all__ = ["BlockRenderer"]

_CODE_THEMES: Final = {"dark": "monokai", "light": "friendly"}
_LIGHT: Final = Theme(
    {
        "markdown.code": "bold magenta",
        "markdown.block_quote": "dark_magenta",
        "markdown.link_url": "blue underline",
        "markdown.h1": "bold",
        "markdown.h2": "bold underline",
    }
)


class _LeftHeading(Heading):
    """Headings flush left, as a chat reads them (rich centres ``#``); without colour they
    keep their ``#`` marks, which are then all that tells them from a paragraph."""

    LEVEL_ALIGN: ClassVar[dict[str, JustifyMethod]] = {f"h{level}": "left" for level in range(1, 7)}

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        text = self.text.copy()
        text.justify = "left"
        if console.color_system is None:
            text = Text("#" * int(self.tag[1:]) + " ") + text
        yield text


class _ChatMarkdown(Markdown):
    elements: ClassVar[dict[str, type[MarkdownElement]]] = {
        **Markdown.elements,
        "heading_open": _LeftHeading,
    }


class BlockRenderer:
    """Renders Markdown source to rows of at most ``width`` cells, each ending in a newline."""

    __slots__ = ("_code_theme", "_console", "_dim", "_file")

    def __init__(
        self, *, width: int, color: bool, theme: Literal["dark", "light"], dim: bool
    ) -> None:
        self._file = io.StringIO()
        self._console = Console(
            file=self._file,
            width=width,
            color_system="truecolor" if color else None,
            force_terminal=color,
            no_color=not color,
            theme=_LIGHT if theme == "light" else None,
            highlight=False,
            emoji=False,
            markup=False,
            legacy_windows=False,
            soft_wrap=False,
        )
        self._code_theme = _CODE_THEMES[theme]
        self._dim = dim

    def render(self, source: str) -> str:
        """``source`` as terminal rows without leading or trailing empty rows (``""`` when it
        shows nothing)."""
        markdown = _ChatMarkdown(
            source,
            code_theme=self._code_theme,
            hyperlinks=False,
            style="dim italic" if self._dim else "none",
        )
        return self._printed(markdown)

    def code_rows(self, lexer: str, code: str) -> str:
        """The rows ``render`` gives for a fenced code block alone (fence info ``lexer``):
        the ``Syntax`` rich's Markdown makes for it, printed without parsing Markdown."""
        return self._printed(self._syntax(lexer, code))

    def _syntax(self, lexer: str, code: str) -> Syntax:
        return Syntax(code.rstrip(), lexer, theme=self._code_theme, word_wrap=True, padding=1)

    def _printed(self, renderable: Markdown | Syntax) -> str:
        self._console.print(renderable)
        text = self._file.getvalue()
        self._file.seek(0)
        self._file.truncate()
        rows = [line.rstrip(" ") for line in text.split("\n")]
        while rows and not rows[0]:
            rows.pop(0)
        while rows and not rows[-1]:
            rows.pop()
        return "".join(row + "\n" for row in rows)

    def code_lines(self, lexer: str, code: str) -> tuple[tuple[tuple[object, str], ...], ...]:
        """The tokens of each line a fenced code block of ``code`` (fence info ``lexer``)
        shows, as rich's Markdown makes them: the code right-stripped (its ``CodeBlock``),
        given a final newline and its tabs expanded, lexed by ``Syntax``'s lexer (none: the
        text unstyled), each token cut at the line breaks, empty pieces dropped.

        ``StreamingMarkdown``'s bounded code tail compares these to tell whether a chunk of
        lines highlights alone exactly as it does inside a longer run of lines: ``Syntax``
        styles each piece by its token's type and lays each line out on its own, so lines
        of equal pieces give equal rows.
        """
        syntax = self._syntax(lexer, code)
        source = (syntax.code + "\n").expandtabs(syntax.tab_size)
        found = syntax.lexer
        tokens: Iterable[tuple[object, str]] = (
            [(None, source)] if found is None else found.get_tokens(source)
        )
        lines: list[list[tuple[object, str]]] = [[]]
        for kind, value in tokens:
            first, *rest = value.split("\n")
            if first:
                lines[-1].append((kind, first))
            for piece in rest:
                lines.append([(kind, piece)] if piece else [])
        if not lines[-1]:  # after the final newline
            lines.pop()
        return tuple(tuple(line) for line in lines)
