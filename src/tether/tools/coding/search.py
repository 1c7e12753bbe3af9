"""``list_files`` (glob) and ``grep`` (Python regex), confined to the workspace.

Both walk the tree with ``walk`` (``tether.tools.coding.walk``: iterative, from the verified
root descriptor, never following symlinks; a symlinked directory is neither entered nor
listed, a symlinked file is listed by ``list_files`` but never read by ``grep``). ``.git``,
``node_modules``, ``.venv``, ``venv``, ``__pycache__``, ``.mypy_cache``, ``.pytest_cache``,
``.ruff_cache``, ``.tox`` and the other caches in ``IGNORED_DIRECTORIES`` are skipped unless
``include_ignored`` is true.

The walk runs on a worker thread (``tether.tools.coding.worker``), so an abort wins at once
while a search is in progress, and on a work budget: at most ``SEARCH_MAX_ENTRIES`` entries
visited, ``SEARCH_MAX_STEPS`` glob-matching steps and, for ``grep``, ``GREP_MAX_TOTAL_BYTES``
bytes read. A search that runs out shows what it found and ends with a note
``[SEARCH_LIMIT_REACHED: ...]`` that says which limit it reached.

``grep`` reads files as ``read_file`` does (``open_for_reading``: a symlink, a special file or
a file with several hard links is skipped), skips files over ``GREP_FILE_MAX_BYTES`` and
binary files (a NUL byte in the first 8 KiB); other bytes are decoded as UTF-8 with
replacement. Matches are capped by ``limit`` and each printed line by
``GREP_LINE_MAX_CHARACTERS``. ripgrep is not used: the pure-Python search gives the same
results everywhere. A Python regex can backtrack badly on one line, which no budget can
interrupt; an abort still returns at once, and the worker stops after that line.

Names that are not UTF-8 are shown with U+FFFD for the bytes that are not (``shown``).
Glob patterns (``list_files`` and ``grep``'s ``glob``) are described in
``tether.tools.coding.globmatch``: ``*`` and ``?`` match within a segment, ``**`` any number
of segments, ``[...]`` a class; a pattern without ``/`` matches the file name at any depth
(``*.py`` == ``**/*.py``); matching takes time linear in pattern times path.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable, Iterator
from typing import Final

from tether._base.dataclass import dataclass
from tether.abort import AbortSignal
from tether.protocol import ToolExecutionContext, ToolValidation, Valid
from tether.tools.coding._definition import coding_tool
from tether.tools.coding.globmatch import Glob, compile_glob
from tether.tools.coding.walk import IGNORED_DIRECTORIES, SearchBudget, walk
from tether.tools.coding.worker import run_in_worker
from tether.tools.coding.workspace import (
    CodingToolError,
    Workspace,
    invalid,
    invalid_from,
    normalize_relative_path,
    open_for_reading,
    record_of,
    require_workspace,
    shown,
)
from tether.tools.contract import ToolDefinition

__all__ = [
    "GREP_DEFAULT_LIMIT",
    "GREP_FILE_MAX_BYTES",
    "GREP_LINE_MAX_CHARACTERS",
    "GREP_MAX_LIMIT",
    "GREP_MAX_TOTAL_BYTES",
    "IGNORED_DIRECTORIES",
    "LIST_DEFAULT_LIMIT",
    "LIST_MAX_LIMIT",
    "SEARCH_MAX_ENTRIES",
    "SEARCH_MAX_STEPS",
    "grep_tool",
    "list_files_tool",
]

SEARCH_MAX_ENTRIES: Final = 200_000
"""Entries (files and directories) one search visits at most."""
SEARCH_MAX_STEPS: Final = 20_000_000
"""Glob-matching steps one search takes at most (``Glob.match`` counts them)."""
LIST_DEFAULT_LIMIT: Final = 200
LIST_MAX_LIMIT: Final = 2_000
GREP_DEFAULT_LIMIT: Final = 100
GREP_MAX_LIMIT: Final = 1_000
GREP_FILE_MAX_BYTES: Final = 1_048_576
GREP_MAX_TOTAL_BYTES: Final = 256 * 1_048_576
"""Bytes one ``grep`` reads at most, over all files."""
GREP_LINE_MAX_CHARACTERS: Final = 300
_BINARY_SNIFF: Final = 8_192
_CHUNK: Final = 1 << 16


def _validate_pattern(pattern: str) -> None:
    if not pattern or "\0" in pattern or pattern.startswith(("/", "\\", "~")):
        raise CodingToolError("INVALID_RELATIVE_PATH", "patterns are workspace-relative")
    if ".." in pattern.replace("\\", "/").split("/"):
        raise CodingToolError("INVALID_RELATIVE_PATH", "'..' is not allowed in patterns")


def _budget(stop: threading.Event) -> SearchBudget:
    return SearchBudget(
        stop, entries=SEARCH_MAX_ENTRIES, steps=SEARCH_MAX_STEPS, bytes=GREP_MAX_TOTAL_BYTES
    )


def _matching(
    ws: Workspace,
    start: tuple[str, ...],
    glob: Glob | None,
    include_ignored: bool,
    budget: SearchBudget,
) -> Iterator[tuple[str, str, int]]:
    """The walk's entries whose path matches ``glob`` (all without one), steps charged."""
    entries = walk(ws, start, include_ignored=include_ignored, budget=budget)
    if glob is None:
        return entries
    return _matched(entries, glob, budget)


def _matched(
    entries: Iterator[tuple[str, str, int]], glob: Glob, budget: SearchBudget
) -> Iterator[tuple[str, str, int]]:
    match, spend = glob.match, budget.spend_steps
    for path, name, dir_fd in entries:
        matched, steps = match(path)
        if not spend(steps):
            return
        if matched:
            yield path, name, dir_fd


def _limit_note(budget: SearchBudget) -> str:
    if budget.note is None:
        return ""
    return (
        f"[SEARCH_LIMIT_REACHED: the search stopped after it {budget.note}; "
        "what is shown above is incomplete. Narrow the pattern or the path.]\n"
    )


async def _search(signal: AbortSignal, name: str, work: Callable[[SearchBudget], str]) -> str:
    """``work`` on a worker thread with a fresh budget; its text plus the limit note."""

    def run(stop: threading.Event) -> str:
        budget = _budget(stop)
        return work(budget) + _limit_note(budget)

    return await run_in_worker(signal, run, name)


# --- list_files -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ListInput:
    """The checked arguments of ``list_files``: the glob pattern, the limit, and whether
    ignored files are listed too."""

    pattern: str
    limit: int
    include_ignored: bool


def _validate_list(value: object) -> ToolValidation[ListInput]:
    record = record_of(value, (), ("pattern", "limit", "include_ignored"))
    shape = "expected {pattern?: string, limit?: int, include_ignored?: bool}"
    if record is None:
        return invalid("INVALID_LIST_INPUT", shape)
    pattern = record.get("pattern", "**/*")
    limit = record.get("limit", LIST_DEFAULT_LIMIT)
    include = record.get("include_ignored", False)
    if type(pattern) is not str or type(limit) is not int or type(include) is not bool:
        return invalid("INVALID_LIST_INPUT", shape)
    if not 1 <= limit <= LIST_MAX_LIMIT:
        return invalid("INVALID_LIST_INPUT", f"limit must be in 1..{LIST_MAX_LIMIT}")
    try:
        _validate_pattern(pattern)
    except CodingToolError as error:
        return invalid_from(error)
    return Valid(value=ListInput(pattern, limit, include))


def list_files(ws: Workspace, value: ListInput, budget: SearchBudget) -> str:
    """The text of one ``list_files`` call (on the worker thread)."""
    glob = compile_glob(value.pattern)
    listed: list[str] = []
    matched = 0
    for path, _name, _fd in _matching(ws, (), glob, value.include_ignored, budget):
        matched += 1
        if len(listed) < value.limit:
            listed.append(shown(path))
    if not listed:
        return f"No files match {value.pattern!r}.\n"
    text = "\n".join(listed) + "\n"
    if matched > len(listed):
        text += (
            f"[{len(listed)} of {matched} matching files shown; "
            "narrow the pattern or raise limit]\n"
        )
    return text


def list_files_tool(ws: Workspace) -> ToolDefinition[ListInput, str]:
    """The ``list_files`` tool of ``ws``: a bounded glob over the workspace."""
    require_workspace(ws, "list_files_tool")

    async def execute(value: ListInput, context: ToolExecutionContext) -> str:
        return await _search(
            context.signal, "list_files", lambda budget: list_files(ws, value, budget)
        )

    return coding_tool(
        "list_files",
        description=(
            "List workspace files whose relative path matches a glob `pattern` (default "
            "'**/*'; '*.py' matches at any depth), sorted, at most `limit` "
            f"(default {LIST_DEFAULT_LIMIT}). .git, node_modules, .venv, __pycache__ and similar "
            "directories are skipped unless include_ignored is true."
        ),
        validate=_validate_list,
        execute=execute,
        properties={
            "pattern": {"type": "string", "description": "glob, e.g. 'src/**/*.py'"},
            "limit": {"type": "integer", "minimum": 1, "maximum": LIST_MAX_LIMIT},
            "include_ignored": {"type": "boolean"},
        },
        output_limit=65_536,
    )


# --- grep -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GrepInput:
    """The checked arguments of ``grep``: the compiled pattern, the path segments, the
    optional file glob and the limit."""

    pattern: re.Pattern[str]
    path: tuple[str, ...]
    glob: Glob | None
    limit: int


def _validate_grep(value: object) -> ToolValidation[GrepInput]:
    record = record_of(value, ("pattern",), ("path", "glob", "limit", "ignore_case"))
    shape = (
        "expected {pattern: string, path?: string, glob?: string, limit?: int, ignore_case?: bool}"
    )
    if record is None:
        return invalid("INVALID_GREP_INPUT", shape)
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
        return invalid("INVALID_GREP_INPUT", shape)
    if not 1 <= limit <= GREP_MAX_LIMIT:
        return invalid("INVALID_GREP_INPUT", f"limit must be in 1..{GREP_MAX_LIMIT}")
    try:
        compiled = re.compile(pattern, re.IGNORECASE if ignore_case else 0)
    except (re.error, OverflowError) as error:  # OverflowError: a repeat count over re's limit
        return invalid("INVALID_GREP_PATTERN", str(error))
    except RecursionError:  # re's parser recurses into each nested group
        return invalid("INVALID_GREP_PATTERN", "groups nested too deeply")
    try:
        segments = () if path.strip() in (".", "./", "") else normalize_relative_path(path)
        matcher = None
        if glob is not None:
            _validate_pattern(glob)
            matcher = compile_glob(glob)
    except CodingToolError as error:
        return invalid_from(error)
    return Valid(value=GrepInput(compiled, segments, matcher, limit))


def _read_for_grep(name: str, dir_fd: int, budget: SearchBudget) -> bytes | None:
    """The bytes of a file ``grep`` may read (``None``: skip it), its bytes charged; whether
    they are binary is ``grep``'s to check (after the needle's test, which most files fail).

    A file is read in chunks of ``_CHUNK`` until a read returns nothing, except for the first
    read, which asks for one byte more than the size ``fstat`` gave (at most ``_CHUNK``): when
    it returns exactly that size, it was short, and that is the whole file, taken without the
    empty read that would confirm it and without a ``_CHUNK`` buffer for a small file (a
    regular file's read is short only at its end; a file that grew meanwhile, or one whose
    size says 0 while it holds bytes, gives more and is read on as before). Each file is read
    whole either way, so the bytes charged to the budget, and the file at which it runs out,
    are the same as chunk by chunk.
    """
    try:
        handle, info = open_for_reading(name, dir_fd, name)
    except (OSError, CodingToolError):
        return None
    try:
        size = info.st_size
        if size > GREP_FILE_MAX_BYTES:
            return None
        asked = size + 1 if size < _CHUNK else _CHUNK
        data = os.read(handle, asked)
        total = len(data)
        if total and not budget.spend_bytes(total):
            return None
        if total and (total != size or total == asked):
            chunks = [data]
            while total <= GREP_FILE_MAX_BYTES:
                chunk = os.read(handle, _CHUNK)
                if not chunk:
                    break
                chunks.append(chunk)
                total += len(chunk)
                if not budget.spend_bytes(len(chunk)):
                    return None
            data = b"".join(chunks)
    finally:
        os.close(handle)
    return None if total > GREP_FILE_MAX_BYTES else data


_REGEX_SYNTAX: Final = frozenset(".^$*+?{}[]\\|()")
_LINE_BREAKS: Final = frozenset("\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029")


def _literal_of(pattern: re.Pattern[str]) -> str | None:
    """The text ``pattern`` matches exactly, when it is a plain case-sensitive literal.

    ``grep``'s fast path: such a pattern matches a line exactly when the line contains the
    literal, and a literal with no line break can only occur inside one line, so a file whose
    whole text does not contain it has no matching line and is never split into lines (most
    searches a model makes are identifiers); most files are not even decoded, their bytes
    lacking the literal's (``_needle_of``). Everything else is matched line by
    line, as before: a regex run over a whole file could see across lines (anchors,
    lookarounds) or backtrack over the whole file. ``tests/tools/test_search.py`` checks
    both paths give the same lines.
    """
    text = pattern.pattern
    if pattern.flags & ~re.UNICODE or not _REGEX_SYNTAX.isdisjoint(text):
        return None
    return text if _LINE_BREAKS.isdisjoint(text) else None


def _needle_of(literal: str | None) -> bytes | None:
    """The UTF-8 bytes a file must hold to contain ``literal`` once decoded, or ``None``.

    A file is decoded with replacement, so each character of its text is either U+FFFD (for
    bytes that are not UTF-8) or a character whose UTF-8 encoding is exactly the bytes it came
    from: a literal without U+FFFD that occurs in the text occurs, encoded, in the bytes. A
    file whose bytes do not hold it is skipped before it is decoded. A literal holding U+FFFD
    or a lone surrogate (which no decoded text holds) has no needle and is looked for in the
    decoded text only.
    """
    if literal is None or "\ufffd" in literal:
        return None
    try:
        return literal.encode("utf-8")
    except UnicodeEncodeError:
        return None


def grep(ws: Workspace, value: GrepInput, budget: SearchBudget) -> str:
    """The text of one ``grep`` call (on the worker thread).

    Most files of a search hold no match, so the cost per file is what the search costs: a
    file is opened, ``fstat``-ed, read in one short read and closed (four system calls, the
    floor the confinement checks allow), then tested for the needle before anything else;
    the binary sniff (a NUL in the first 8 KiB) runs only on the files that pass, which skips
    the same files as sniffing first did. ``tests/tools/test_search.py`` checks the lines
    against the plain path and that binary files are skipped with or without the needle.
    """
    lines: list[str] = []
    matched = 0
    literal = _literal_of(value.pattern)
    needle = _needle_of(literal)
    search: Callable[[str], object] = value.pattern.search
    if literal is not None:
        search = lambda line: literal in line  # noqa: E731 - the literal's per-line test
    read = _read_for_grep
    for path, name, dir_fd in _matching(ws, value.path, value.glob, False, budget):
        data = read(name, dir_fd, budget)
        if data is None or (needle is not None and needle not in data):
            continue
        if data.find(b"\0", 0, _BINARY_SNIFF) >= 0:  # binary: skipped
            continue
        text = data.decode("utf-8", errors="replace")
        if literal is not None and literal not in text:
            continue
        for number, line in enumerate(text.splitlines(), start=1):
            if budget.stop.is_set():
                break
            if search(line):
                matched += 1
                if len(lines) < value.limit:
                    if len(line) > GREP_LINE_MAX_CHARACTERS:
                        line = line[:GREP_LINE_MAX_CHARACTERS] + " …[line truncated]"
                    lines.append(f"{shown(path)}:{number}: {line}")
    if not lines:
        return f"No matches for {value.pattern.pattern!r}.\n"
    text = "\n".join(lines) + "\n"
    if matched > len(lines):
        text += f"[{len(lines)} of {matched} matches shown; narrow the pattern, path or glob]\n"
    return text


def grep_tool(ws: Workspace) -> ToolDefinition[GrepInput, str]:
    """The ``grep`` tool of ``ws``: a bounded regex search over workspace text files."""
    require_workspace(ws, "grep_tool")

    async def execute(value: GrepInput, context: ToolExecutionContext) -> str:
        return await _search(context.signal, "grep", lambda budget: grep(ws, value, budget))

    return coding_tool(
        "grep",
        description=(
            "Search workspace text files for a Python regular expression `pattern` (matched per "
            "line). Optional `path` (a directory to search, default '.'), `glob` (only files "
            "matching it, e.g. '*.py'), `limit` (default "
            f"{GREP_DEFAULT_LIMIT}), `ignore_case`. Prints 'path:line: text'. Binary files, "
            ".git, node_modules, .venv and similar directories are skipped."
        ),
        validate=_validate_grep,
        execute=execute,
        properties={
            "pattern": {"type": "string", "description": "Python regex"},
            "path": {"type": "string", "description": "directory, workspace-relative"},
            "glob": {"type": "string", "description": "file filter, e.g. '*.py'"},
            "limit": {"type": "integer", "minimum": 1, "maximum": GREP_MAX_LIMIT},
            "ignore_case": {"type": "boolean"},
        },
        required=("pattern",),
        output_limit=65_536,
    )
