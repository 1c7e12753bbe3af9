"""Terminal-safe text: control characters made visible, display width, wrapping, colour.

Text a model (or a tool, or a file) produced is shown to a person who decides on it, so it
must not be able to move the cursor, recolour the screen or hide its own tail: a ``\\r`` that
returns to the line start, an ANSI escape, a backspace, a right-to-left override. ``runs``
splits a line into ``Run`` values, the dangerous characters turned into visible escapes
(``\\r``, ``\\x1b``, ``\\u202e``) marked ``escaped`` so a coloured view can highlight them.

``strict`` (the approval view) escapes every C0/C1 control, DEL, tab, lone surrogate, line or
paragraph separator, every Unicode format character (zero-width spaces, bidi controls) and
every unassigned or private-use code point (no width can be known for them). Not
strict (answers, tool results) keeps tabs as spaces and keeps joiners that emoji need, and
escapes only controls, separators and the bidi overrides and isolates.

Widths are terminal cells: East Asian wide and fullwidth characters take two, combining marks
none. ``wrap`` breaks runs into rows of at most ``width`` cells without dropping or adding a
character (joining the rows gives back the line), preferring to break after a space; an escape
is split only when it is wider than a whole row.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from typing import Final, cast

from tether._base.dataclass import dataclass

__all__ = [
    "MIN_WIDTH",
    "Run",
    "cell_width",
    "clip",
    "clip_runs",
    "paint",
    "plain",
    "pretty_json",
    "runs",
    "sgr",
    "visible",
    "wrap",
]

MIN_WIDTH: Final = 20
"""The narrowest width laid out; a smaller terminal width is treated as this."""

_TAB: Final = 4
_BIDI: Final = frozenset(range(0x202A, 0x202F)) | frozenset(range(0x2066, 0x206A)) | {0x061C}
_RESET: Final = "\x1b[0m"
_NAMED: Final = {"\r": "\\r", "\t": "\\t", "\n": "\\n", "\x1b": "\\x1b", "\x08": "\\b"}


@dataclass(frozen=True, slots=True, kw_only=True)
class Run:
    """A piece of one line: ``text`` as shown, ``escaped`` if it stands for a control."""

    text: str
    escaped: bool = False


def _dangerous(char: str, strict: bool) -> bool:
    category = unicodedata.category(char)
    if category in ("Cc", "Cs", "Zl", "Zp"):
        return not (char == "\t" and not strict)
    if category == "Cf":
        return strict or ord(char) in _BIDI
    return strict and category in ("Cn", "Co")  # unassigned, private use: width unknown


def _escape(char: str) -> str:
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def runs(line: str, *, strict: bool) -> list[Run]:
    """``line`` (a newline in it is escaped too) as runs, dangerous characters escaped."""
    if line.isprintable():
        return [Run(text=line)] if line else []
    out: list[Run] = []
    buffer: list[str] = []
    column = 0  # for the tab stops when not strict
    for char in line:
        if char.isprintable() or not _dangerous(char, strict):
            if char == "\t":
                spaces = _TAB - (column % _TAB)
                buffer.append(" " * spaces)
                column += spaces
            else:
                buffer.append(char)
                column += _char_width(char)
            continue
        if buffer:
            out.append(Run(text="".join(buffer)))
            buffer = []
        escaped = _escape(char)
        out.append(Run(text=escaped, escaped=True))
        column += len(escaped)
    if buffer:
        out.append(Run(text="".join(buffer)))
    return out


def visible(text: str, *, strict: bool) -> str:
    """``text`` with every line's dangerous characters escaped (newlines kept)."""
    return "\n".join(plain(runs(line, strict=strict)) for line in text.split("\n"))


def _char_width(char: str) -> int:
    if unicodedata.combining(char) or unicodedata.category(char) in ("Mn", "Me", "Cf"):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def cell_width(text: str) -> int:
    """How many terminal cells ``text`` (printable, one line) takes."""
    if text.isascii():
        return len(text)
    return sum(_char_width(char) for char in text)


def plain(line: Iterable[Run]) -> str:
    """The runs' text, without any style."""
    return "".join(run.text for run in line)


def sgr(text: str, code: str, color: bool) -> str:
    """``text`` in the SGR style ``code`` (e.g. ``"31"``, ``"1;32"``) when ``color``."""
    return f"\x1b[{code}m{text}{_RESET}" if color and text else text


def paint(line: Iterable[Run], *, color: bool, style: str = "", escape_style: str = "7") -> str:
    """The runs as terminal text: ``style`` on the plain runs, ``escape_style`` (reverse
    video) on the escapes; plain text when not ``color``."""
    if not color:
        return plain(line)
    out: list[str] = []
    for run in line:
        code = escape_style if run.escaped else style
        out.append(sgr(run.text, code, True) if code else run.text)
    return "".join(out)


def _fit(text: str, room: int) -> int:
    """How many leading characters of ``text`` fit in ``room`` cells (``len(text)``: all);
    it looks at no more than ``room + 1`` characters, so a long line is wrapped in linear
    time."""
    if text.isascii():
        return max(min(len(text), room), 0)
    used = 0
    for index, char in enumerate(text):
        used += _char_width(char)
        if used > room:
            return index
    return len(text)


def wrap(line: Sequence[Run], width: int) -> list[list[Run]]:
    """``line`` as rows of at most ``width`` cells (``[[]]`` for an empty line).

    Joining the rows' text gives back the line exactly. A row breaks after the last space
    that leaves it at least half full, else where the width ends; an escape moves whole to
    the next row (it is split only when wider than a row). A wide character alone in a row
    narrower than it still takes that row.
    """
    width = max(width, 1)
    rows: list[list[Run]] = []
    row: list[Run] = []
    used = 0
    queue = list(reversed(line))  # popped from the end
    while queue:
        run = queue.pop()
        cut = _fit(run.text, width - used)
        if cut == len(run.text):
            row.append(run)
            used += cell_width(run.text)
            continue
        if run.escaped and row:
            queue.append(run)  # to the next row, whole
        elif run.escaped:  # an escape wider than the row: split it after all
            row.append(Run(text=run.text[:cut], escaped=True))
            queue.append(Run(text=run.text[cut:], escaped=True))
        else:
            space = run.text.rfind(" ", 0, cut)
            if space != -1 and cell_width(run.text[: space + 1]) + used >= width // 2:
                cut = space + 1
            if cut == 0 and not row:
                cut = 1  # a wide character alone in a row narrower than it
            if cut:
                row.append(Run(text=run.text[:cut]))
            if run.text[cut:]:
                queue.append(Run(text=run.text[cut:]))
        rows.append(row)
        row, used = [], 0
    if row or not rows:
        rows.append(row)
    return rows


def clip(text: str, width: int) -> str:
    """``text`` (one printable line) cut to ``width`` cells, ``…`` marking a cut."""
    if cell_width(text) <= width:
        return text
    return text[: _fit(text, max(width - 1, 0))] + "…"


def clip_runs(line: Sequence[Run], width: int) -> list[Run]:
    """``line`` cut to ``width`` cells, ``…`` marking a cut (an escape is never split)."""
    if sum(cell_width(run.text) for run in line) <= width:
        return list(line)
    out: list[Run] = []
    room = max(width - 1, 0)
    for run in line:
        size = cell_width(run.text)
        if size <= room:
            out.append(run)
            room -= size
            continue
        cut = 0 if run.escaped else _fit(run.text, room)
        if cut:
            out.append(Run(text=run.text[:cut]))
        break
    out.append(Run(text="…"))
    return out


def _thawed(value: object) -> object:
    if isinstance(value, Mapping):
        items = cast("Mapping[object, object]", value)
        return {str(key): _thawed(item) for key, item in items.items()}
    if isinstance(value, (list, tuple)):
        return [_thawed(item) for item in cast("Sequence[object]", value)]
    return value


def pretty_json(value: object, *, indent: int | None = 2) -> str:
    """``value`` (plain JSON values or frozen ones: ``JsonObject``, tuples) as JSON text,
    non-ASCII kept, ``indent`` spaces per level (``None``: one line); anything else as its
    ``repr``."""
    separators = (", ", ": ") if indent is None else (",", ": ")
    return json.dumps(
        _thawed(value), indent=indent, ensure_ascii=False, default=repr, separators=separators
    )
