"""Turn a terminal capture (``tmux capture-pane -e -p -S -``: text with ANSI colours) into the
SVG pictures in ``docs/images`` (rich's ``save_svg``).

    python scripts/pane_to_svg.py PANE.ansi OUT.svg "title"

SVG renderers collapse the spaces a ``<text>`` element starts with, which would shift
indented rows and eat the space after a coloured word; so every word gets a span of its own
(two alternating no-op styles keep rich from merging them), which the SVG places by ``x``.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from rich.console import Console
from rich.style import Style
from rich.text import Text

_NO_OPS = (Style(italic=False), Style(underline=False))


def main(source: str, target: str, title: str) -> None:
    lines = Path(source).read_text(encoding="utf-8").rstrip("\n").split("\n")
    while lines and not Text.from_ansi(lines[-1]).plain.strip():
        lines.pop()
    with open("/dev/null", "w", encoding="utf-8") as sink:
        console = Console(
            record=True, width=100, force_terminal=True, color_system="truecolor", file=sink
        )
        for line in lines:
            text = Text.from_ansi(line)
            for index, word in enumerate(re.finditer(r"\S+", text.plain)):
                text.stylize(_NO_OPS[index % 2], word.start(), word.end())
            console.print(text, soft_wrap=True)
        console.save_svg(target, title=title)


if __name__ == "__main__":
    main(*sys.argv[1:4])
