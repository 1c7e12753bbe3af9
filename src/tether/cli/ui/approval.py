"""What a person sees before ``allow TOOL?``, and what their answer means.

A person can only approve what they can see, so ``approval_preview`` never cuts what would
run: ``bash``'s whole command and ``python_process``'s whole source (with its arguments) are
wrapped to the terminal width, never shortened. ``write_file`` shows the new content with line
numbers (head and tail of a long file, with how many lines are hidden between) or, for a file
that exists, a unified diff against its current content; ``edit_file`` shows the diff of the
one replacement it would make. Both read the current file through the coding tools' own
confined reader (``tether.tools.coding.file_reads.read_text`` on the session's
``Workspace``); a file that cannot be read, or an ``old`` text that does not match exactly
once, shows the old and new text and says why, never raises. Any other tool shows its
arguments as indented JSON, in full up to ``JSON_PREVIEW_MAX_CHARS`` characters, then
``[… N more characters]``.

Every control character, ANSI escape and bidi or zero-width format character in an argument is
shown as a visible escape (``\\r``, ``\\x1b``, ``\\u202e``; reverse video with colour): a hostile
command cannot hide its tail behind a carriage return or an escape sequence. Every row is at
most ``width`` cells wide.

``parse_approval`` reads the answer: ``y``/``yes`` (``Allow``), ``a``/``always`` (``AllowAlways``:
this tool, for the rest of the session), ``n``/``no`` optionally followed by ``:``, ``,`` or a
space and a reason for the model (``Deny``, e.g. ``n: use pytest -x instead``); any case,
surrounding spaces ignored; ``None`` for anything else (ask again). ``denial_text`` is what the
model is told about a ``Deny``.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Final, Literal, TypeAlias, TypeGuard

from tether._base.dataclass import dataclass
from tether.cli.ui.text import MIN_WIDTH, Run, cell_width, paint, pretty_json, runs, sgr, wrap

if TYPE_CHECKING:
    from tether.tools.coding.workspace import Workspace

__all__ = [
    "APPROVAL_QUESTION",
    "DIFF_PREVIEW_MAX_LINES",
    "FILE_PREVIEW_HEAD",
    "FILE_PREVIEW_TAIL",
    "JSON_PREVIEW_MAX_CHARS",
    "Allow",
    "AllowAlways",
    "ApprovalAnswer",
    "Deny",
    "approval_preview",
    "approval_question",
    "denial_text",
    "parse_approval",
]

APPROVAL_QUESTION: Final = "allow {name}? [y]es / [n]o (n: reason) / [a]lways for {name}: "
"""The question asked after the preview (``{name}``: the tool)."""

JSON_PREVIEW_MAX_CHARS: Final = 20_000
"""Most characters of a generic tool's pretty-printed JSON arguments shown."""

FILE_PREVIEW_HEAD: Final = 40
"""Lines of a new file shown from its start when it is long."""

FILE_PREVIEW_TAIL: Final = 10
"""Lines of a new file shown from its end when it is long."""

DIFF_PREVIEW_MAX_LINES: Final = 400
"""Most diff lines shown for ``write_file`` over an existing file."""


# --- answers ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Allow:
    """Run this call."""

    kind: Literal["yes"] = "yes"


@dataclass(frozen=True, slots=True, kw_only=True)
class AllowAlways:
    """Run this call and every later call of the same tool in this session."""

    kind: Literal["always"] = "always"


@dataclass(frozen=True, slots=True, kw_only=True)
class Deny:
    """Do not run this call; ``reason`` (``None`` if none was given) is told to the model."""

    kind: Literal["no"] = "no"
    reason: str | None = None


ApprovalAnswer: TypeAlias = Allow | AllowAlways | Deny
"""A parsed answer to the approval question (discriminated by ``kind``)."""

_ANSWER: Final = re.compile(r"\s*([A-Za-z]+)(.*)", re.DOTALL)
_SEPARATOR: Final = re.compile(r"[\s:,;]")


def parse_approval(text: str) -> ApprovalAnswer | None:
    """The answer ``text`` gives (see the module docstring), ``None`` if it is none."""
    match = _ANSWER.fullmatch(text)
    if match is None:
        return None
    word, rest = match.group(1).lower(), match.group(2)
    if word in ("y", "yes", "a", "always"):
        if rest.strip():
            return None
        return Allow() if word in ("y", "yes") else AllowAlways()
    if word not in ("n", "no"):
        return None
    if rest.strip() and _SEPARATOR.match(rest) is None:
        return None
    reason = rest.strip().lstrip(":,;").strip()
    return Deny(reason=reason or None)


def denial_text(answer: Deny) -> str:
    """The tool result the model gets for a denied call."""
    base = "The user declined this tool call; it did not run."
    if answer.reason is None:
        return base
    return f"{base} Their reason: {answer.reason}"


def approval_question(name: str) -> str:
    """The question for a call of tool ``name`` (its name made visible)."""
    shown = "".join(run.text for run in runs(name, strict=True))
    return APPROVAL_QUESTION.format(name=shown)


# --- the preview ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class _Layout:
    width: int
    color: bool

    def rows(self, text: str, *, first: str, rest: str, style: str = "") -> list[str]:
        """``text``'s lines wrapped: the first row of each line after ``first``, the rows it
        wraps onto after ``rest`` (both the same width)."""
        out: list[str] = []
        room = max(self.width - max(cell_width(first), cell_width(rest)), 1)
        for line in text.split("\n"):
            for index, row in enumerate(wrap(runs(line, strict=True), room)):
                gutter = first if index == 0 else rest
                out.append(sgr(gutter, "2", self.color) + paint(row, color=self.color, style=style))
        return out

    def numbered(self, lines: Sequence[tuple[int, str]], total: int, style: str = "") -> list[str]:
        """Lines with their 1-based numbers in a gutter."""
        digits = len(str(max(total, 1)))
        out: list[str] = []
        for number, line in lines:
            out += self.rows(
                line, first=f"{number:>{digits}} │ ", rest=f"{'':>{digits}} ┆ ", style=style
            )
        return out

    def note(self, text: str) -> list[str]:
        return [sgr(line, "2", self.color) for line in self.rows(text, first="", rest="")]

    def header(self, text: str) -> list[str]:
        """A bold title (its text already made visible), wrapped."""
        rows = wrap([Run(text=text)], self.width)
        return [sgr("".join(run.text for run in row), "1", self.color) for row in rows]


def _string(arguments: Mapping[str, object], key: str) -> str | None:
    value = arguments.get(key)
    return value if isinstance(value, str) else None


def approval_preview(
    name: str,
    arguments: Mapping[str, object],
    *,
    workspace: Workspace | None,
    width: int,
    color: bool,
) -> str:
    """The text shown before ``approval_question(name)`` (see the module docstring): rows of at
    most ``width`` cells, each ending with a newline. ``workspace`` is the coding tools'
    workspace the file tools read from (``None``: a file's current content is unknown)."""
    layout = _Layout(width=max(width, MIN_WIDTH), color=color)
    keys = set(arguments)
    rows: list[str] | None = None
    if name == "bash" and keys <= {"command", "timeout_seconds"}:
        rows = _bash(layout, arguments)
    elif name == "python_process" and keys <= {"source", "arguments"}:
        rows = _python(layout, arguments)
    elif name == "write_file" and keys == {"path", "content"}:
        rows = _write(layout, arguments, workspace)
    elif name == "edit_file" and keys == {"path", "old", "new"}:
        rows = _edit(layout, arguments, workspace)
    if rows is None:
        rows = _json(layout, name, arguments)
    return "".join(row + "\n" for row in rows)


def _bash(layout: _Layout, arguments: Mapping[str, object]) -> list[str] | None:
    command = _string(arguments, "command")
    timeout = arguments.get("timeout_seconds")
    if command is None or (timeout is not None and type(timeout) not in (int, float)):
        return None
    title = "bash" if timeout is None else f"bash (timeout {timeout:g} s)"
    out = [*layout.header(title)]
    for index, line in enumerate(command.split("\n")):
        out += layout.rows(line, first="$ " if index == 0 else "> ", rest="  ")
    return out


def _is_sequence(value: object) -> TypeGuard[Sequence[object]]:
    """``isinstance(value, Sequence)``, narrowed to what is read of it (its items)."""
    return isinstance(value, Sequence)


def _python(layout: _Layout, arguments: Mapping[str, object]) -> list[str] | None:
    source = _string(arguments, "source")
    argv = arguments.get("arguments", [])
    if source is None or not _is_sequence(argv) or isinstance(argv, str):
        return None
    items: list[object] = list(argv)
    out = [*layout.header("python_process")]
    out += layout.rows(pretty_json(items, indent=None), first="arguments: ", rest="           ")
    lines = source.split("\n")
    out += layout.numbered(list(enumerate(lines, 1)), len(lines))
    return out


def _read(workspace: Workspace | None, path: str) -> tuple[str | None, str | None]:
    """``(current text, why it is unknown)``: ``(None, None)`` for a file that does not exist."""
    if workspace is None:
        return None, "no workspace to read it from"
    from tether.tools.coding.file_reads import read_text
    from tether.tools.coding.workspace import CodingToolError

    try:
        return read_text(workspace, path)[1], None
    except CodingToolError as error:
        if error.code == "FILE_NOT_FOUND":
            return None, None
        return None, str(error)
    except (OSError, ValueError) as error:
        return None, f"{type(error).__name__}: {error}"


def _preview_lines(layout: _Layout, text: str, style: str = "") -> list[str]:
    lines = text.split("\n")
    if lines and lines[-1] == "" and len(lines) > 1:
        lines.pop()  # the final newline ends the last line
    numbered = list(enumerate(lines, 1))
    total = len(lines)
    if total <= FILE_PREVIEW_HEAD + FILE_PREVIEW_TAIL + 1:
        return layout.numbered(numbered, total, style)
    hidden = total - FILE_PREVIEW_HEAD - FILE_PREVIEW_TAIL
    return [
        *layout.numbered(numbered[:FILE_PREVIEW_HEAD], total, style),
        *layout.note(f"… {hidden} lines hidden …"),
        *layout.numbered(numbered[-FILE_PREVIEW_TAIL:], total, style),
    ]


def _diff(layout: _Layout, path: str, before: str, after: str, limit: int | None) -> list[str]:
    diff = list(
        difflib.unified_diff(
            before.splitlines(),
            after.splitlines(),
            fromfile=f"a/{path}",
            tofile=f"b/{path}",
            n=3,
            lineterm="",
        )
    )
    if before.endswith("\n") != after.endswith("\n"):
        diff.append("(the final newline changes)")
    shown = diff if limit is None else diff[:limit]
    out: list[str] = []
    for line in shown:
        if line.startswith(("---", "+++")):
            style = "1"
        elif line.startswith("@@"):
            style = "36"
        elif line.startswith("+"):
            style = "32"
        elif line.startswith("-"):
            style = "31"
        else:
            style = ""
        out += layout.rows(line, first="", rest="  ", style=style)
    if len(shown) < len(diff):
        out += layout.note(f"… {len(diff) - len(shown)} more diff lines")
    if not diff:
        out += layout.note("(no change: the new content is the current content)")
    return out


def _write(
    layout: _Layout, arguments: Mapping[str, object], workspace: Workspace | None
) -> list[str] | None:
    path, content = _string(arguments, "path"), _string(arguments, "content")
    if path is None or content is None:
        return None
    shown_path = "".join(run.text for run in runs(path, strict=True))
    current, why = _read(workspace, path)
    if current is not None:
        out = [*layout.header(f"write_file {shown_path} (replaces the file)")]
        return out + _diff(layout, shown_path, current, content, DIFF_PREVIEW_MAX_LINES)
    if why is None:
        title = f"write_file {shown_path} (new file, {_count(content)})"
        return [*layout.header(title), *_preview_lines(layout, content, "32")]
    out = [*layout.header(f"write_file {shown_path} ({_count(content)})")]
    out += layout.note(f"(current content unknown: {why})")
    return out + _preview_lines(layout, content)


def _count(content: str) -> str:
    lines = content.count("\n") + (0 if content.endswith("\n") or not content else 1)
    return f"{lines} line{'' if lines == 1 else 's'}"


def _edit(
    layout: _Layout, arguments: Mapping[str, object], workspace: Workspace | None
) -> list[str] | None:
    path, old, new = (_string(arguments, key) for key in ("path", "old", "new"))
    if path is None or old is None or new is None:
        return None
    shown_path = "".join(run.text for run in runs(path, strict=True))
    current, why = _read(workspace, path)
    if current is not None:
        count = current.count(old) if old else 0
        if count == 1:
            after = current.replace(old, new, 1)
            diff = _diff(layout, shown_path, current, after, None)
            return [*layout.header(f"edit_file {shown_path}"), *diff]
        why = "`old` is not in the file" if count == 0 else f"`old` occurs {count} times"
        why += ": the edit will fail"
    elif why is None:
        why = "the file does not exist: the edit will fail"
    out = [*layout.header(f"edit_file {shown_path}"), *layout.note(f"({why})")]
    for sign, text, style in (("- ", old, "31"), ("+ ", new, "32")):
        lines = text.split("\n")
        if len(lines) > 1 and lines[-1] == "":
            lines.pop()  # the final newline ends the last line
        for line in lines:
            out += layout.rows(line, first=sign, rest="  ", style=style)
    return out


def _json(layout: _Layout, name: str, arguments: Mapping[str, object]) -> list[str]:
    text = pretty_json(arguments)
    hidden = len(text) - JSON_PREVIEW_MAX_CHARS
    if hidden > 0:
        text = text[:JSON_PREVIEW_MAX_CHARS]
    shown_name = "".join(run.text for run in runs(name, strict=True))
    out = [*layout.header(shown_name)]
    for line in text.split("\n"):
        indent = len(line) - len(line.lstrip(" "))
        out += layout.rows(line, first="", rest=" " * min(indent + 2, layout.width // 2))
    if hidden > 0:
        out += layout.note(f"[… {hidden} more characters]")
    return out
