"""``read_file``, ``write_file`` and ``edit_file``: the file tools of a workspace (§08).

Each tool checks its arguments before any effect (``INVALID_READ_INPUT``,
``INVALID_WRITE_INPUT``, ``INVALID_EDIT_INPUT``, a path by the §08 grammar, content within
``CODING_FILE_MAX_BYTES``) and turns what it did into text a model reads well: a read shows
its path, line range and total line count (or returns the image itself for a PNG, JPEG, GIF
or WebP file), a write its size, an edit a unified diff. What they do lives beside them:
confined reads in ``tether.tools.coding.file_reads``, atomic writes and compare-and-swap edits in
``tether.tools.coding.writing``. An unexpected ``OSError`` becomes the operation's fallback
code (``READ_FAILED``, ``WRITE_FAILED``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Generator
from typing import Final

from tether._async.race import check_signal
from tether._base.dataclass import dataclass
from tether.protocol import (
    MAX_IMAGE_BYTES,
    ImageError,
    Invalid,
    ToolExecutionContext,
    ToolValidation,
    Valid,
)
from tether.tools.coding._definition import WORKSPACE_PATH, coding_tool
from tether.tools.coding.file_reads import decode_text, read_bytes, too_large
from tether.tools.coding.read_image import image_limit, image_result, named_image_error
from tether.tools.coding.workspace import (
    CODING_FILE_MAX_BYTES,
    CodingToolError,
    CodingToolErrorCode,
    Workspace,
    invalid,
    invalid_from,
    normalize_relative_path,
    record_of,
    require_workspace,
    utf8_size,
)
from tether.tools.coding.writing import edit_text, write_text
from tether.tools.contract import ToolDefinition
from tether.tools.returns import ToolReturn

__all__ = [
    "READ_OUTPUT_LIMIT",
    "EditInput",
    "ReadInput",
    "WriteInput",
    "edit_file_tool",
    "read_file_tool",
    "write_file_tool",
]

READ_OUTPUT_LIMIT: Final = CODING_FILE_MAX_BYTES + 1_024
"""``read_file``'s output limit: the largest file, with room for the header and footer."""


@contextlib.contextmanager
def fallback(code: CodingToolErrorCode) -> Generator[None]:
    """Wrap an unexpected ``OSError`` in the operation's fallback code (§08)."""
    try:
        yield
    except OSError as error:
        raise CodingToolError(code, error.strerror or str(error)) from error


# --- tool definitions -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ReadInput:
    """The checked arguments of ``read``: the path and the optional line window."""

    path: str
    offset: int | None
    limit: int | None


@dataclass(frozen=True, slots=True)
class WriteInput:
    """The checked arguments of ``write``: the path and the new content."""

    path: str
    content: str


@dataclass(frozen=True, slots=True)
class EditInput:
    """The checked arguments of ``edit``: the path, the text to replace and its replacement."""

    path: str
    old: str
    new: str


def _path_invalid(path: str) -> Invalid | None:
    try:
        normalize_relative_path(path)
    except CodingToolError as error:
        return invalid_from(error)
    return None


def _positive(value: object) -> bool:
    return value is None or (type(value) is int and value >= 1)


def _validate_read(value: object) -> ToolValidation[ReadInput]:
    record = record_of(value, ("path",), ("offset", "limit"))
    if record is None or type(record["path"]) is not str:
        return invalid("INVALID_READ_INPUT", "expected {path: string, offset?: int, limit?: int}")
    offset, limit = record.get("offset"), record.get("limit")
    if not _positive(offset) or not _positive(limit):
        return invalid("INVALID_READ_INPUT", "offset and limit must be integers >= 1")
    problem = _path_invalid(record["path"])
    if problem is not None:
        return problem
    return Valid(value=ReadInput(record["path"], offset, limit))


def _validate_write(value: object) -> ToolValidation[WriteInput]:
    record = record_of(value, ("path", "content"))
    if record is None or type(record["path"]) is not str or type(record["content"]) is not str:
        return invalid("INVALID_WRITE_INPUT", "expected {path: string, content: string}")
    problem = _path_invalid(record["path"])
    if problem is not None:
        return problem
    size = utf8_size(record["content"])
    if size is None:
        return invalid("INVALID_WRITE_INPUT", "content contains a lone surrogate")
    if size > CODING_FILE_MAX_BYTES:
        return invalid_from(too_large("content", size))
    return Valid(value=WriteInput(record["path"], record["content"]))


def _validate_edit(value: object) -> ToolValidation[EditInput]:
    record = record_of(value, ("path", "old", "new"))
    if record is None or not all(type(record[key]) is str for key in ("path", "old", "new")):
        return invalid("INVALID_EDIT_INPUT", "expected {path: string, old: string, new: string}")
    if not record["old"]:
        return invalid("INVALID_EDIT_INPUT", "`old` must not be empty; use write_file to create")
    if record["old"] == record["new"]:
        return invalid("INVALID_EDIT_INPUT", "`old` and `new` are identical; nothing to change")
    problem = _path_invalid(record["path"])
    if problem is not None:
        return problem
    return Valid(value=EditInput(record["path"], record["old"], record["new"]))


def _render_read(display: str, text: str, offset: int | None, limit: int | None) -> str:
    lines = text.splitlines(keepends=True)
    total = len(lines)
    if total == 0:
        return f"{display} (empty file)\n"
    start = (offset or 1) - 1
    if start >= total:
        raise CodingToolError(
            "INVALID_READ_INPUT", f"offset {offset} is past the end: {display} has {total} lines"
        )
    end = total if limit is None else min(total, start + limit)
    body = "".join(lines[start:end])
    header = f"{display} (lines {start + 1}-{end} of {total})\n"
    if not body.endswith("\n"):
        body += "\n\\ No newline at end of file\n"
    footer = ""
    if end < total:
        footer = f"[{total - end} more lines; call read_file with offset={end + 1} to continue]\n"
    return header + body + footer


def read_file_tool(ws: Workspace) -> ToolDefinition[ReadInput, str | ToolReturn]:
    """The ``read_file`` tool of workspace ``ws``: UTF-8 text, optionally a line range, or
    an image (PNG, JPEG, GIF, WebP; see ``tether.tools.coding.read_image``)."""
    require_workspace(ws, "read_file_tool")

    async def execute(value: ReadInput, context: ToolExecutionContext) -> str | ToolReturn:
        check_signal(context.signal)
        with fallback("READ_FAILED"):
            try:
                display, data = read_bytes(ws, value.path, image_limit)
            except ImageError as error:
                raise named_image_error(value.path, error) from None
        image = image_result(display, data)
        if image is not None:
            return image
        return _render_read(display, decode_text(data, display), value.offset, value.limit)

    return coding_tool(
        "read_file",
        description=(
            f"Read a UTF-8 text file (at most {CODING_FILE_MAX_BYTES} bytes) by its "
            "workspace-relative path. Optional `offset` (first line, 1-based) and `limit` "
            "(number of lines). The output starts with the path, the line range and the total "
            "number of lines, then the text exactly as stored. A PNG, JPEG, GIF or WebP image "
            f"(at most {MAX_IMAGE_BYTES} bytes) is returned as the image itself."
        ),
        validate=_validate_read,
        execute=execute,
        properties={
            "path": WORKSPACE_PATH,
            "offset": {"type": "integer", "minimum": 1, "description": "first line, 1-based"},
            "limit": {"type": "integer", "minimum": 1, "description": "number of lines"},
        },
        required=("path",),
        output_limit=READ_OUTPUT_LIMIT,
    )


def write_file_tool(ws: Workspace) -> ToolDefinition[WriteInput, str]:
    """The ``write_file`` tool of ``ws``: an atomic, confined write (temp, fsync, rename)."""
    require_workspace(ws, "write_file_tool")

    async def execute(value: WriteInput, context: ToolExecutionContext) -> str:
        with fallback("WRITE_FAILED"):
            display, size = await write_text(ws, value.path, value.content, context.signal)
        return f"Wrote {size} bytes to {display}."

    return coding_tool(
        "write_file",
        description=(
            "Create or replace a workspace file with `content` (UTF-8, at most "
            f"{CODING_FILE_MAX_BYTES} bytes), atomically. Missing parent directories are "
            "created. Prefer edit_file to change part of an existing file."
        ),
        validate=_validate_write,
        execute=execute,
        properties={
            "path": WORKSPACE_PATH,
            "content": {"type": "string", "description": "the complete new file content"},
        },
        required=("path", "content"),
        output_limit=1_024,
    )


def edit_file_tool(ws: Workspace) -> ToolDefinition[EditInput, str]:
    """The ``edit_file`` tool of ``ws``: replace one exact occurrence; the result is a diff."""
    require_workspace(ws, "edit_file_tool")

    async def execute(value: EditInput, context: ToolExecutionContext) -> str:
        with fallback("WRITE_FAILED"):
            display, diff = await edit_text(ws, value.path, value.old, value.new, context.signal)
        return f"Edited {display}:\n{diff}"

    return coding_tool(
        "edit_file",
        description=(
            "Replace exactly one occurrence of `old` with `new` in a workspace file. `old` must "
            "match the file exactly (whitespace included) and occur exactly once; if it occurs "
            "several times, include more surrounding lines. Returns a unified diff."
        ),
        validate=_validate_edit,
        execute=execute,
        properties={
            "path": WORKSPACE_PATH,
            "old": {"type": "string", "description": "exact text to replace (unique)"},
            "new": {"type": "string", "description": "replacement text"},
        },
        required=("path", "old", "new"),
        output_limit=16_384,
    )
