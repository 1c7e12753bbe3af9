"""Completion for the chat prompt: ``@path`` inside the workspace and ``/commands``.

Both take the text before the cursor and return ``Completion`` values shaped like
prompt_toolkit's (``text`` replaces the ``-start_position`` characters before the cursor;
``display`` and ``meta`` are what the menu shows), so an adapter to a prompt_toolkit
``Completer`` is a few lines, and nothing here imports prompt_toolkit.

``complete_path`` completes the word before the cursor when it starts with ``@``: the part up
to the last ``/`` names a directory of the workspace, the rest is a prefix of an entry's name
(any case). Only workspace-relative paths are accepted (the coding tools' own path grammar:
no ``..``, nothing absolute, no ``~``), and the directories are opened from the workspace's
verified root descriptor one segment at a time without following a symlink, so completion
never lists anything outside the workspace. Directories end with ``/``; the tools' ignored
directories (``.git``, ``node_modules``, ``.venv``, ...) are never offered; other hidden
entries only when the prefix starts with ``.``; a symlink is offered as a name (no ``/``)
and never entered; a name with whitespace or a control character
(which the word could not hold) is skipped. At most ``limit`` results, directories first,
then by name.

``complete_command`` completes a ``/`` command at the start of the line from a mapping of
command names to descriptions.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Mapping
from typing import TYPE_CHECKING, Final

from tether._base.dataclass import dataclass

if TYPE_CHECKING:
    from tether.tools.coding.workspace import Workspace

__all__ = ["PATH_COMPLETION_LIMIT", "Completion", "complete_command", "complete_path"]

PATH_COMPLETION_LIMIT: Final = 50
"""The most ``@path`` completions returned."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Completion:
    """One completion: ``text`` replaces the ``-start_position`` characters before the
    cursor (``start_position`` is zero or negative, as in prompt_toolkit)."""

    text: str
    start_position: int
    display: str
    meta: str = ""


def _word(before_cursor: str) -> str:
    """The word that ends at the cursor (after the last whitespace)."""
    for index in range(len(before_cursor) - 1, -1, -1):
        if before_cursor[index].isspace():
            return before_cursor[index + 1 :]
    return before_cursor


def _listable(name: str) -> bool:
    return name.isprintable() and not any(char.isspace() for char in name)


def complete_path(
    before_cursor: str, workspace: Workspace, *, limit: int = PATH_COMPLETION_LIMIT
) -> list[Completion]:
    """The ``@path`` completions of the word before the cursor (see the module docstring);
    empty when it is no ``@`` word, names no workspace directory, or cannot be read."""
    from tether.tools.coding.walk import IGNORED_DIRECTORIES
    from tether.tools.coding.workspace import CodingToolError, normalize_relative_path

    word = _word(before_cursor)
    if not word.startswith("@"):
        return []
    typed = word[1:]
    directory, _, prefix = typed.rpartition("/")
    segments: tuple[str, ...] = ()
    if directory.strip("/"):
        try:
            segments = normalize_relative_path(directory)
        except CodingToolError:
            return []
    try:
        entries = _list(workspace, segments)
    except (CodingToolError, OSError):
        return []
    base = "/".join(segments)
    found: list[tuple[bool, str]] = []
    folded = prefix.casefold()
    for name, is_dir in entries:
        if not _listable(name) or not name.casefold().startswith(folded):
            continue
        if is_dir and name in IGNORED_DIRECTORIES:
            continue
        if name.startswith(".") and not prefix.startswith("."):
            continue
        found.append((is_dir, name))
    found.sort(key=lambda entry: (not entry[0], entry[1].casefold(), entry[1]))
    out: list[Completion] = []
    for is_dir, name in found[: max(limit, 0)]:
        path = f"{base}/{name}" if base else name
        shown = name + ("/" if is_dir else "")
        out.append(
            Completion(
                text="@" + path + ("/" if is_dir else ""),
                start_position=-len(word),
                display=shown,
                meta="directory" if is_dir else "",
            )
        )
    return out


def _list(workspace: Workspace, segments: tuple[str, ...]) -> list[tuple[str, bool]]:
    """``(name, is a directory)`` of each entry of the directory ``segments`` names, opened
    from the verified root without following a symlink."""
    fd = workspace.open_root()
    try:
        for segment in segments:
            child = os.open(segment, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = child
        entries: list[tuple[str, bool]] = []
        with os.scandir(fd) as listing:
            for entry in listing:
                with contextlib.suppress(OSError):
                    mode = entry.stat(follow_symlinks=False).st_mode
                    entries.append((entry.name, stat.S_ISDIR(mode)))
        return entries
    finally:
        os.close(fd)


def complete_command(before_cursor: str, commands: Mapping[str, str]) -> list[Completion]:
    """The ``/`` commands (names without the slash, to their descriptions) that the line
    before the cursor starts, when it is one word starting with a single ``/``."""
    if not before_cursor.startswith("/") or before_cursor.startswith("//"):
        return []
    typed = before_cursor[1:]
    if any(char.isspace() for char in typed):
        return []
    folded = typed.casefold()
    return [
        Completion(
            text="/" + name,
            start_position=-len(before_cursor),
            display="/" + name,
            meta=description,
        )
        for name, description in sorted(commands.items())
        if name.casefold().startswith(folded)
    ]
