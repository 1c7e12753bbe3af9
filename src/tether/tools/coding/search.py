"""``list_files`` (glob) and ``grep`` (Python regex), confined to the workspace.

Both walk the tree with ``os.fwalk`` from the verified root fd, never following symlinks (a
symlinked directory is neither entered nor listed as a directory; a symlinked file is listed
by ``list_files`` but never read by ``grep``). ``.git``, ``node_modules``, ``.venv``, ``venv``,
``__pycache__``, ``.mypy_cache``, ``.pytest_cache``, ``.ruff_cache``, ``.tox`` and ``dist``/
``build``-style caches listed in ``IGNORED_DIRECTORIES`` are skipped unless
``include_ignored`` is true. The walk visits at most ``SEARCH_MAX_ENTRIES`` entries.

``grep`` skips files over ``GREP_FILE_MAX_BYTES`` and binary files (a NUL byte in the first
8 KiB); other bytes are decoded as UTF-8 with replacement. Matches are capped by ``limit``
and each printed line by ``GREP_LINE_MAX_CHARACTERS``. ripgrep is not used: the pure-Python
search gives the same results everywhere (a Python regex can backtrack badly; keep patterns
simple). The walk is synchronous (it blocks the event loop for its duration, bounded by the
entry cap) and checks the abort signal between directories.

Glob patterns (``list_files`` and ``grep``'s ``glob``): ``*`` and ``?`` match within a
segment, ``**`` matches any number of segments, ``[...]`` a character class; a pattern
without ``/`` matches the file name at any depth (``*.py`` == ``**/*.py``).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

from tether._race import check_signal
from tether.abort import AbortSignal
from tether.protocol import Invalid, ToolExecutionContext, ToolValidation, Valid
from tether.tools.coding.workspace import (
    CodingToolError,
    Workspace,
    normalize_relative_path,
    record_of,
)
from tether.tools.contract import ToolDefinition, define_tool

__all__ = [
    "GREP_DEFAULT_LIMIT",
    "GREP_FILE_MAX_BYTES",
    "GREP_LINE_MAX_CHARACTERS",
    "GREP_MAX_LIMIT",
    "IGNORED_DIRECTORIES",
    "LIST_DEFAULT_LIMIT",
    "LIST_MAX_LIMIT",
    "SEARCH_MAX_ENTRIES",
    "glob_regex",
    "grep_tool",
    "list_files_tool",
]

IGNORED_DIRECTORIES: Final = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "node_modules",
        ".venv",
        "venv",
        "__pycache__",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".tox",
        ".nox",
        ".idea",
        ".cache",
    }
)
SEARCH_MAX_ENTRIES: Final = 200_000
LIST_DEFAULT_LIMIT: Final = 200
LIST_MAX_LIMIT: Final = 2_000
GREP_DEFAULT_LIMIT: Final = 100
GREP_MAX_LIMIT: Final = 1_000
GREP_FILE_MAX_BYTES: Final = 1_048_576
GREP_LINE_MAX_CHARACTERS: Final = 300
_BINARY_SNIFF: Final = 8_192


def glob_regex(pattern: str) -> re.Pattern[str]:
    """A regex matching workspace-relative POSIX paths against ``pattern``."""
    if "/" not in pattern.strip("/"):
        pattern = "**/" + pattern.strip("/")
    parts: list[str] = []
    segments = [s for s in pattern.split("/") if s not in ("", ".")]
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == "**":
            parts.append(".*" if last else "(?:[^/]+/)*")
            continue
        out: list[str] = []
        i = 0
        while i < len(segment):
            c = segment[i]
            if c == "*":
                out.append("[^/]*")
            elif c == "?":
                out.append("[^/]")
            elif c == "[":
                j = segment.find("]", i + 2 if segment[i + 1 : i + 2] in ("!", "]") else i + 1)
                if j == -1:
                    out.append(re.escape(c))
                else:
                    body = segment[i + 1 : j]
                    if body.startswith("!"):
                        body = "^" + body[1:]
                    out.append("[" + body.replace("\\", "\\\\") + "]")
                    i = j
            else:
                out.append(re.escape(c))
            i += 1
        parts.append("".join(out) + ("" if last else "/"))
    return re.compile("".join(parts) + r"\Z")


def _validate_pattern(pattern: str) -> None:
    if not pattern or "\0" in pattern or pattern.startswith(("/", "\\", "~")):
        raise CodingToolError("INVALID_RELATIVE_PATH", "patterns are workspace-relative")
    if ".." in pattern.replace("\\", "/").split("/"):
        raise CodingToolError("INVALID_RELATIVE_PATH", "'..' is not allowed in patterns")


def _walk(
    ws: Workspace, start: tuple[str, ...], include_ignored: bool, signal: AbortSignal
) -> Iterator[tuple[str, str, int]]:
    """Yield ``(relative path, name, dir fd)`` of every non-directory under ``start``."""
    root = ws.open_root()
    try:
        top_fd = root
        opened: list[int] = []
        try:
            for segment in start:
                top_fd = os.open(
                    segment, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=top_fd
                )
                opened.append(top_fd)
        except OSError:
            for fd in opened:
                os.close(fd)
            raise CodingToolError(
                "FILE_NOT_FOUND", f"{'/'.join(start)} is not a directory in the workspace"
            ) from None
        try:
            seen = 0
            prefix = "/".join(start)
            for current, dirs, files, _dir_fd in os.fwalk(
                ".", dir_fd=top_fd, follow_symlinks=False
            ):
                check_signal(signal)
                if not include_ignored:
                    dirs[:] = [d for d in dirs if d not in IGNORED_DIRECTORIES]
                dirs.sort()
                base = current[2:] if current.startswith("./") else ""
                if prefix:
                    base = f"{prefix}/{base}" if base else prefix
                for name in sorted(files):
                    seen += 1
                    if seen > SEARCH_MAX_ENTRIES:
                        return
                    yield (f"{base}/{name}" if base else name), name, _dir_fd
        finally:
            for fd in opened:
                os.close(fd)
    finally:
        os.close(root)


# --- list_files -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ListInput:
    pattern: str
    limit: int
    include_ignored: bool


def _validate_list(value: object) -> ToolValidation[ListInput]:
    record = record_of(value, (), ("pattern", "limit", "include_ignored"))
    shape = "INVALID_LIST_INPUT: expected {pattern?: string, limit?: int, include_ignored?: bool}"
    if record is None:
        return Invalid(error=shape)
    pattern = record.get("pattern", "**/*")
    limit = record.get("limit", LIST_DEFAULT_LIMIT)
    include = record.get("include_ignored", False)
    if type(pattern) is not str or type(limit) is not int or type(include) is not bool:
        return Invalid(error=shape)
    if not 1 <= limit <= LIST_MAX_LIMIT:
        return Invalid(error=f"INVALID_LIST_INPUT: limit must be in 1..{LIST_MAX_LIMIT}")
    try:
        _validate_pattern(pattern)
    except CodingToolError as error:
        return Invalid(error=str(error))
    return Valid(value=ListInput(pattern, limit, include))


def list_files(ws: Workspace, value: ListInput, signal: AbortSignal) -> str:
    matcher = glob_regex(value.pattern)
    shown: list[str] = []
    matched = 0
    for path, _name, _fd in _walk(ws, (), value.include_ignored, signal):
        if matcher.match(path):
            matched += 1
            if len(shown) < value.limit:
                shown.append(path)
    if not shown:
        return f"No files match {value.pattern!r}.\n"
    text = "\n".join(shown) + "\n"
    if matched > len(shown):
        text += (
            f"[{len(shown)} of {matched} matching files shown; narrow the pattern or raise limit]\n"
        )
    return text


def list_files_tool(ws: Workspace) -> ToolDefinition[ListInput, str]:
    """The ``list_files`` tool of ``ws``: a bounded glob over the workspace."""

    async def execute(value: ListInput, context: ToolExecutionContext) -> str:
        check_signal(context.signal)
        return list_files(ws, value, context.signal)

    return define_tool(
        name="list_files",
        description=(
            "List workspace files whose relative path matches a glob `pattern` (default "
            "'**/*'; '*.py' matches at any depth), sorted, at most `limit` "
            f"(default {LIST_DEFAULT_LIMIT}). .git, node_modules, .venv, __pycache__ and similar "
            "directories are skipped unless include_ignored is true."
        ),
        validate=_validate_list,
        execute=execute,
        parameters={
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "glob, e.g. 'src/**/*.py'"},
                "limit": {"type": "integer", "minimum": 1, "maximum": LIST_MAX_LIMIT},
                "include_ignored": {"type": "boolean"},
            },
            "additionalProperties": False,
        },
        output_limit=65_536,
    )


# --- grep -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GrepInput:
    pattern: re.Pattern[str]
    path: tuple[str, ...]
    glob: re.Pattern[str] | None
    limit: int


def _validate_grep(value: object) -> ToolValidation[GrepInput]:
    record = record_of(value, ("pattern",), ("path", "glob", "limit", "ignore_case"))
    shape = (
        "INVALID_GREP_INPUT: expected {pattern: string, path?: string, glob?: string, "
        "limit?: int, ignore_case?: bool}"
    )
    if record is None:
        return Invalid(error=shape)
    pattern = record["pattern"]
    path = record.get("path", ".")
    glob = record.get("glob")
    limit = record.get("limit", GREP_DEFAULT_LIMIT)
    ignore_case = record.get("ignore_case", False)
    if (
        type(pattern) is not str
        or not pattern
        or type(path) is not str
        or (glob is not None and type(glob) is not str)
        or type(limit) is not int
        or type(ignore_case) is not bool
    ):
        return Invalid(error=shape)
    if not 1 <= limit <= GREP_MAX_LIMIT:
        return Invalid(error=f"INVALID_GREP_INPUT: limit must be in 1..{GREP_MAX_LIMIT}")
    try:
        compiled = re.compile(pattern, re.IGNORECASE if ignore_case else 0)
    except re.error as error:
        return Invalid(error=f"INVALID_GREP_PATTERN: {error}")
    try:
        segments = () if path.strip() in (".", "./", "") else normalize_relative_path(path)
        matcher = None
        if glob is not None:
            _validate_pattern(glob)
            matcher = glob_regex(glob)
    except CodingToolError as error:
        return Invalid(error=str(error))
    return Valid(value=GrepInput(compiled, segments, matcher, limit))


def _read_for_grep(name: str, dir_fd: int) -> str | None:
    try:
        handle = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        info = os.fstat(handle)
        if not stat.S_ISREG(info.st_mode) or info.st_size > GREP_FILE_MAX_BYTES:
            return None
        chunks: list[bytes] = []
        total = 0
        while total <= GREP_FILE_MAX_BYTES:
            chunk = os.read(handle, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    finally:
        os.close(handle)
    data = b"".join(chunks)
    if total > GREP_FILE_MAX_BYTES or b"\0" in data[:_BINARY_SNIFF]:
        return None
    return data.decode("utf-8", errors="replace")


def grep(ws: Workspace, value: GrepInput, signal: AbortSignal) -> str:
    lines: list[str] = []
    matched = 0
    for path, name, dir_fd in _walk(ws, value.path, False, signal):
        if value.glob is not None and not value.glob.match(path):
            continue
        text = _read_for_grep(name, dir_fd)
        if text is None:
            continue
        for number, line in enumerate(text.splitlines(), start=1):
            if value.pattern.search(line):
                matched += 1
                if len(lines) < value.limit:
                    if len(line) > GREP_LINE_MAX_CHARACTERS:
                        line = line[:GREP_LINE_MAX_CHARACTERS] + " …[line truncated]"
                    lines.append(f"{path}:{number}: {line}")
    if not lines:
        return f"No matches for {value.pattern.pattern!r}.\n"
    text = "\n".join(lines) + "\n"
    if matched > len(lines):
        text += f"[{len(lines)} of {matched} matches shown; narrow the pattern, path or glob]\n"
    return text


def grep_tool(ws: Workspace) -> ToolDefinition[GrepInput, str]:
    """The ``grep`` tool of ``ws``: a bounded regex search over workspace text files."""

    async def execute(value: GrepInput, context: ToolExecutionContext) -> str:
        check_signal(context.signal)
        return grep(ws, value, context.signal)

    return define_tool(
        name="grep",
        description=(
            "Search workspace text files for a Python regular expression `pattern` (matched per "
            "line). Optional `path` (a directory to search, default '.'), `glob` (only files "
            "matching it, e.g. '*.py'), `limit` (default "
            f"{GREP_DEFAULT_LIMIT}), `ignore_case`. Prints 'path:line: text'. Binary files, "
            ".git, node_modules, .venv and similar directories are skipped."
        ),
        validate=_validate_grep,
        execute=execute,
        parameters={
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Python regex"},
                "path": {"type": "string", "description": "directory, workspace-relative"},
                "glob": {"type": "string", "description": "file filter, e.g. '*.py'"},
                "limit": {"type": "integer", "minimum": 1, "maximum": GREP_MAX_LIMIT},
                "ignore_case": {"type": "boolean"},
            },
            "required": ["pattern"],
            "additionalProperties": False,
        },
        output_limit=65_536,
    )
