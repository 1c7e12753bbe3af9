"""The system prompt of ``tether chat``: an introduction, the tools, the date, the context files.

Context files are what a person writes for the agent about a project: ``AGENTS.md`` in a
directory, or ``CLAUDE.md`` when that directory has no ``AGENTS.md`` (one file per
directory, never both). They are looked for in:

1. the user's config directory, ``$XDG_CONFIG_HOME/tether/`` (when ``XDG_CONFIG_HOME`` is an
   absolute path), else ``~/.config/tether/``;
2. every ancestor of the current directory, outermost (``/``) first;
3. the current directory itself.

A directory met twice (the config directory inside the project, a symlinked cwd) is read
once, at its first place. Only regular files are read (a FIFO named ``AGENTS.md`` cannot hold
the command), opened without following a FIFO's wait, and a file that cannot be read is
skipped. Each file is cut at ``MAX_FILE_BYTES`` (64 KiB) and all of them together at
``MAX_TOTAL_BYTES`` (256 KiB); a cut file ends with a line saying so, and a file left out
because the total was reached is named in a closing note. Bytes that are not UTF-8 are
replaced (U+FFFD), never an error.

``system_prompt`` puts it together: the introduction (``--system TEXT`` replaces the default
one), the tool names, today's date, then each context file under a ``# Context from PATH``
heading.
"""

from __future__ import annotations

import codecs
import datetime
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final

from tether._base.dataclass import dataclass
from tether.coding.reading import UnreadableFile, read_file_head

__all__ = [
    "CONTEXT_FILE_NAMES",
    "DEFAULT_INTRODUCTION",
    "MAX_FILE_BYTES",
    "MAX_TOTAL_BYTES",
    "ContextFile",
    "context_directories",
    "load_context_files",
    "system_prompt",
    "user_config_dir",
]

CONTEXT_FILE_NAMES: Final = ("AGENTS.md", "CLAUDE.md")
"""The names looked for in each directory, in order: the first one found is used."""
MAX_FILE_BYTES: Final = 64 * 1024
"""The most bytes of one context file that go into the system prompt."""
MAX_TOTAL_BYTES: Final = 256 * 1024
"""The most bytes of all context files together."""
DEFAULT_INTRODUCTION: Final = (
    "You are tether, a coding agent working in the user's project directory. Use the tools "
    "to read, search and change files and to run commands; paths are relative to the "
    "project directory. Be concise, and say what you changed."
)
"""The first paragraph of the system prompt unless ``--system TEXT`` replaces it."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextFile:
    """One context file as it goes into the prompt: its ``path``, the ``text`` kept (a note
    included when it was cut), its ``size`` in bytes on disk and whether it was ``cut``."""

    path: Path
    text: str
    size: int
    cut: bool


def user_config_dir(environ: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CONFIG_HOME/tether`` when that variable is an absolute path, else
    ``~/.config/tether``."""
    env = os.environ if environ is None else environ
    xdg = env.get("XDG_CONFIG_HOME", "")
    base = Path(xdg) if os.path.isabs(xdg) else Path.home() / ".config"
    return base / "tether"


def context_directories(cwd: Path, config_dir: Path | None) -> list[Path]:
    """The directories searched, in prompt order: ``config_dir``, then the ancestors of
    ``cwd`` outermost first, then ``cwd``; each directory once (by its real path)."""
    absolute = Path(os.path.abspath(cwd))
    chain = [*reversed(absolute.parents), absolute]
    ordered: list[Path] = []
    seen: set[str] = set()
    for directory in [*([] if config_dir is None else [config_dir]), *chain]:
        key = os.path.realpath(directory)
        if key in seen:
            continue
        seen.add(key)
        ordered.append(directory)
    return ordered


def _read_head(path: Path, limit: int) -> tuple[bytes, int] | None:
    """The first ``limit`` bytes of the regular file ``path`` and its size; ``None`` when it
    is missing, not a regular file or unreadable (``tether.coding.reading``)."""
    try:
        return read_file_head(path, limit=limit)
    except UnreadableFile:
        return None


def _decode(data: bytes, *, cut: bool) -> str:
    """``data`` as text, bad bytes replaced; when ``cut``, a character cut in half at the end
    is dropped (the incremental decoder holds it back)."""
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    return decoder.decode(data, final=not cut)


def load_context_files(
    cwd: Path,
    *,
    config_dir: Path | None = None,
    max_file_bytes: int = MAX_FILE_BYTES,
    max_total_bytes: int = MAX_TOTAL_BYTES,
) -> tuple[list[ContextFile], list[Path]]:
    """The context files for ``cwd`` (see the module docstring) and the paths left out
    because the total was reached."""
    files: list[ContextFile] = []
    omitted: list[Path] = []
    budget = max_total_bytes
    for directory in context_directories(cwd, config_dir):
        for name in CONTEXT_FILE_NAMES:
            path = directory / name
            if budget <= 0:
                if _read_head(path, 0) is not None:
                    omitted.append(path)
                    break
                continue
            head = _read_head(path, min(max_file_bytes, budget))
            if head is None:
                continue
            data, size = head
            cut = size > len(data)
            text = _decode(data, cut=cut)
            if cut:
                why = "the file limit" if len(data) >= max_file_bytes else "the total limit"
                text = (
                    text.rstrip("\n")
                    + f"\n[... {path} was cut at {len(data)} of {size} bytes ({why}) ...]"
                )
            files.append(ContextFile(path=path, text=text, size=size, cut=cut))
            budget -= len(data)
            break
    return files, omitted


def system_prompt(
    cwd: Path,
    *,
    tool_names: Sequence[str],
    today: datetime.date | None = None,
    introduction: str | None = None,
    config_dir: Path | None = None,
    max_file_bytes: int = MAX_FILE_BYTES,
    max_total_bytes: int = MAX_TOTAL_BYTES,
    context_files: bool = True,
) -> str:
    """The whole system prompt for a chat in ``cwd`` (see the module docstring); without
    ``context_files``, no context file is read."""
    date = datetime.date.today() if today is None else today
    parts = [
        DEFAULT_INTRODUCTION if introduction is None else introduction,
        f"Tools: {', '.join(tool_names) if tool_names else 'none'}.\n"
        f"Today's date: {date.isoformat()}.\nProject directory: {os.path.abspath(cwd)}",
    ]
    files, omitted = (
        load_context_files(
            cwd,
            config_dir=config_dir,
            max_file_bytes=max_file_bytes,
            max_total_bytes=max_total_bytes,
        )
        if context_files
        else ([], [])
    )
    for file in files:
        parts.append(f"# Context from {file.path}\n\n{file.text.rstrip()}")
    if omitted:
        names = ", ".join(str(path) for path in omitted)
        parts.append(
            f"[Context files left out: the {max_total_bytes}-byte total was reached: {names}]"
        )
    return "\n\n".join(parts) + "\n"
