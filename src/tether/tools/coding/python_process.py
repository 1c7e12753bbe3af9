"""``python_process``: ``sys.executable -I -X utf8 <script> *arguments`` in the workspace, run
by ``tether.tools.coding.process`` (supervised, bounded, nothing left running; NOT a sandbox
unless given a ``Sandbox``). ``source`` is written to a temporary ``.pify-py-<uuid>.py`` in
the root (removed afterwards, always); never a shell; the §08 limits (source 32,768 bytes, 32
arguments, 2,048 bytes each, 8,192 in total) and the §08 wall-clock limit of 500 ms
(``PYTHON_PROCESS_TIMEOUT_SECONDS``).

Codes: ``PROCESS_SCRIPT_NOT_REGULAR``, ``PROCESS_SCRIPT_IDENTITY_CHANGED``,
``PROCESS_SCRIPT_CLEANUP_FAILED``; validation: ``INVALID_PROCESS_INPUT``,
``PROCESS_SOURCE_TOO_LARGE``, ``TOO_MANY_PROCESS_ARGUMENTS``, ``PROCESS_ARGUMENT_TOO_LARGE``,
``PROCESS_ARGUMENTS_TOO_LARGE``.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Callable, Iterable
from typing import Final, cast

from tether._async.race import check_signal
from tether._base.dataclass import dataclass
from tether.abort import AbortSignal
from tether.protocol import ToolExecutionContext, ToolValidation, Valid
from tether.tools.coding._definition import coding_tool
from tether.tools.coding.environment import ProcessEnvironment
from tether.tools.coding.process import (
    PROCESS_OUTPUT_LIMIT,
    ProcessOutcome,
    describe_processes,
    process_tool_setup,
    render_outcome,
    run_process,
    sandboxed,
)
from tether.tools.coding.sandbox import Sandbox
from tether.tools.coding.workspace import (
    CodingToolError,
    Workspace,
    invalid,
    record_of,
    utf8_size,
)
from tether.tools.contract import ToolDefinition

__all__ = [
    "PROCESS_ARGUMENTS_TOTAL_MAX_BYTES",
    "PROCESS_ARGUMENT_COUNT_MAX",
    "PROCESS_ARGUMENT_MAX_BYTES",
    "PROCESS_SOURCE_MAX_BYTES",
    "PYTHON_PROCESS_TIMEOUT_SECONDS",
    "PythonInput",
    "python_process_tool",
    "run_python",
]
PROCESS_SOURCE_MAX_BYTES: Final = 32_768
PROCESS_ARGUMENT_COUNT_MAX: Final = 32
PROCESS_ARGUMENT_MAX_BYTES: Final = 2_048
PROCESS_ARGUMENTS_TOTAL_MAX_BYTES: Final = 8_192
PYTHON_PROCESS_TIMEOUT_SECONDS: Final = 0.5


@dataclass(frozen=True, slots=True)
class PythonInput:
    """The checked arguments of ``python``: the source and its arguments."""

    source: str
    arguments: tuple[str, ...]


def _validate_python(value: object) -> ToolValidation[PythonInput]:
    shape = "expected {source: string, arguments: [string, ...]}"
    record = record_of(value, ("source", "arguments"))
    if record is None:
        return invalid("INVALID_PROCESS_INPUT", shape)
    source = record["source"]
    if type(source) is not str:
        return invalid("INVALID_PROCESS_INPUT", shape)
    size = utf8_size(source)
    if size is None:
        return invalid("INVALID_PROCESS_INPUT", "source contains a lone surrogate")
    if size > PROCESS_SOURCE_MAX_BYTES:
        return invalid(
            "PROCESS_SOURCE_TOO_LARGE", f"{size} bytes; the limit is {PROCESS_SOURCE_MAX_BYTES}"
        )
    arguments = record["arguments"]
    if type(arguments) is not list and type(arguments) is not tuple:
        return invalid("INVALID_PROCESS_INPUT", shape)
    items = tuple(cast("list[object]", arguments))
    strings = tuple(item for item in items if type(item) is str)
    if len(strings) != len(items):
        return invalid("INVALID_PROCESS_INPUT", shape)
    if len(items) > PROCESS_ARGUMENT_COUNT_MAX:
        return invalid(
            "TOO_MANY_PROCESS_ARGUMENTS",
            f"{len(items)}; the limit is {PROCESS_ARGUMENT_COUNT_MAX}",
        )
    total = 0
    for index, item in enumerate(strings):
        item_size = utf8_size(item)
        if item_size is None or "\0" in item:
            return invalid("INVALID_PROCESS_INPUT", f"argument {index} is not valid text")
        if item_size > PROCESS_ARGUMENT_MAX_BYTES:
            return invalid(
                "PROCESS_ARGUMENT_TOO_LARGE",
                f"argument {index} has {item_size} bytes; "
                f"the limit is {PROCESS_ARGUMENT_MAX_BYTES}",
            )
        total += item_size
    if total > PROCESS_ARGUMENTS_TOTAL_MAX_BYTES:
        return invalid(
            "PROCESS_ARGUMENTS_TOO_LARGE",
            f"{total} bytes; the limit is {PROCESS_ARGUMENTS_TOTAL_MAX_BYTES}",
        )
    return Valid(value=PythonInput(source, strings))


def _write_script(ws: Workspace, source: str) -> tuple[int, str, tuple[int, int]]:
    """Create the temp script in the root; returns (root fd, name, identity)."""
    import uuid  # here, not at import: uuid loads platform, and is needed only now

    root = ws.open_root()
    name = f".pify-py-{uuid.uuid4().hex}.py"
    try:
        handle = os.open(
            name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=root
        )
    except OSError as error:
        os.close(root)
        raise CodingToolError("PROCESS_SCRIPT_NOT_REGULAR", str(error)) from error
    try:
        info = os.fstat(handle)
        if not stat.S_ISREG(info.st_mode):
            raise CodingToolError("PROCESS_SCRIPT_NOT_REGULAR")
        os.write(handle, source.encode("utf-8"))
        os.fsync(handle)
    except BaseException:
        os.close(handle)
        _remove_script(root, name)
        os.close(root)
        raise
    os.close(handle)
    return root, name, (info.st_dev, info.st_ino)


def _remove_script(root: int, name: str) -> None:
    try:
        os.unlink(name, dir_fd=root)
    except FileNotFoundError:
        return
    except OSError as error:
        raise CodingToolError("PROCESS_SCRIPT_CLEANUP_FAILED", str(error)) from error


async def run_python(
    ws: Workspace,
    value: PythonInput,
    signal: AbortSignal,
    env: ProcessEnvironment | None = None,
    sandbox: Sandbox | None = None,
    progress: Callable[[str], None] | None = None,
) -> ProcessOutcome:
    check_signal(signal)
    sandboxed(sandbox, ["python"], ws)  # refuse before writing the script
    root, name, identity = _write_script(ws, value.source)
    try:
        check_signal(signal)
        ws.check()
        now = os.stat(name, dir_fd=root, follow_symlinks=False)
        if not stat.S_ISREG(now.st_mode) or (now.st_dev, now.st_ino) != identity:
            raise CodingToolError("PROCESS_SCRIPT_IDENTITY_CHANGED")
        return await run_process(
            ws,
            [sys.executable, "-I", "-X", "utf8", os.path.join(ws.root, name), *value.arguments],
            time_limit=PYTHON_PROCESS_TIMEOUT_SECONDS,
            signal=signal,
            env=env,
            sandbox=sandbox,
            progress=progress,
        )
    finally:
        try:
            _remove_script(root, name)
        finally:
            os.close(root)


def python_process_tool(
    ws: Workspace,
    *,
    hide_env: Iterable[str] = (),
    pass_env: Iterable[str] = (),
    sandbox: Sandbox | None = None,
) -> ToolDefinition[PythonInput, str]:
    """The ``python_process`` tool of ``ws``: ``sys.executable`` on given source, in the
    environment and the ``sandbox`` that ``bash_tool`` describes."""
    env, sandbox = process_tool_setup(ws, hide_env, pass_env, sandbox, "python_process_tool")

    async def execute(value: PythonInput, context: ToolExecutionContext) -> str:
        return render_outcome(
            await run_python(ws, value, context.signal, env, sandbox, context.progress)
        )

    return coding_tool(
        "python_process",
        description=(
            "Run Python `source` with this interpreter (isolated mode, `sys.argv[1:]` == "
            f"`arguments`) in the workspace directory; never a shell. Wall-clock limit "
            f"{int(PYTHON_PROCESS_TIMEOUT_SECONDS * 1000)} ms; "
            f"{describe_processes(sandbox)}. Returns the exit code, then stdout and stderr."
        ),
        validate=_validate_python,
        execute=execute,
        properties={
            "source": {"type": "string", "description": "Python source code"},
            "arguments": {
                "type": "array",
                "items": {"type": "string"},
                "maxItems": PROCESS_ARGUMENT_COUNT_MAX,
            },
        },
        required=("source", "arguments"),
        output_limit=PROCESS_OUTPUT_LIMIT,
    )
