"""``bash``: ``/bin/bash -c <command>`` in the workspace, run by ``tether.tools.coding.process``
(supervised, bounded in time and output, nothing left running; NOT a sandbox unless given a
``Sandbox``). Timeout ``timeout_seconds`` (default ``BASH_DEFAULT_TIMEOUT_SECONDS`` = 120,
maximum ``BASH_MAX_TIMEOUT_SECONDS`` = 600); validation fails ``INVALID_BASH_INPUT``."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from tether._base.dataclass import dataclass
from tether.protocol import ToolExecutionContext, ToolValidation, Valid
from tether.tools.coding._definition import coding_tool
from tether.tools.coding.process import (
    PROCESS_OUTPUT_LIMIT,
    PROCESS_OUTPUT_MAX_BYTES,
    describe_processes,
    process_tool_setup,
    render_outcome,
    run_process,
)
from tether.tools.coding.sandbox import Sandbox
from tether.tools.coding.workspace import (
    Workspace,
    invalid,
    record_of,
    utf8_size,
)
from tether.tools.contract import ToolDefinition

__all__ = [
    "BASH_COMMAND_MAX_BYTES",
    "BASH_DEFAULT_TIMEOUT_SECONDS",
    "BASH_MAX_TIMEOUT_SECONDS",
    "BashInput",
    "bash_tool",
]
BASH_DEFAULT_TIMEOUT_SECONDS: Final = 120.0
BASH_MAX_TIMEOUT_SECONDS: Final = 600.0
BASH_COMMAND_MAX_BYTES: Final = 32_768


@dataclass(frozen=True, slots=True)
class BashInput:
    """The checked arguments of ``bash``: the command and its timeout in seconds."""

    command: str
    timeout_seconds: float


def _validate_bash(value: object) -> ToolValidation[BashInput]:
    shape = "expected {command: string, timeout_seconds?: number}"
    record = record_of(value, ("command",), ("timeout_seconds",))
    if record is None:
        return invalid("INVALID_BASH_INPUT", shape)
    command = record["command"]
    if type(command) is not str or not command.strip() or "\0" in command:
        return invalid("INVALID_BASH_INPUT", "command must be a non-empty string")
    size = utf8_size(command)
    if size is None:
        return invalid("INVALID_BASH_INPUT", "command contains a lone surrogate")
    if size > BASH_COMMAND_MAX_BYTES:
        return invalid("INVALID_BASH_INPUT", f"command over {BASH_COMMAND_MAX_BYTES} bytes")
    timeout = record.get("timeout_seconds", BASH_DEFAULT_TIMEOUT_SECONDS)
    if (
        type(timeout) not in (int, float)
        or not 0 < timeout <= BASH_MAX_TIMEOUT_SECONDS  # NaN fails too
    ):
        return invalid(
            "INVALID_BASH_INPUT", f"timeout_seconds must be in (0, {BASH_MAX_TIMEOUT_SECONDS:g}]"
        )
    return Valid(value=BashInput(command, float(timeout)))


def bash_tool(
    ws: Workspace,
    *,
    hide_env: Iterable[str] = (),
    pass_env: Iterable[str] = (),
    sandbox: Sandbox | None = None,
) -> ToolDefinition[BashInput, str]:
    """The ``bash`` tool of ``ws``: ``/bin/bash -c`` in the workspace, bounded; not a sandbox
    unless ``sandbox`` says so (``tether.tools.coding.sandbox``).

    The command's environment lacks every catalog key variable and ``hide_env``, except the
    names in ``pass_env`` (see the module docstring).
    """
    env, sandbox = process_tool_setup(ws, hide_env, pass_env, sandbox, "bash_tool")

    async def execute(value: BashInput, context: ToolExecutionContext) -> str:
        outcome = await run_process(
            ws,
            ["/bin/bash", "-c", value.command],
            time_limit=value.timeout_seconds,
            signal=context.signal,
            env=env,
            sandbox=sandbox,
            progress=context.progress,
        )
        return render_outcome(outcome)

    return coding_tool(
        "bash",
        description=(
            f"Run a command with /bin/bash -c in the workspace directory "
            f"({describe_processes(sandbox)}). stdin is empty. Timeout "
            f"`timeout_seconds` (default {BASH_DEFAULT_TIMEOUT_SECONDS:g}, max "
            f"{BASH_MAX_TIMEOUT_SECONDS:g}); on timeout everything it started is killed. "
            f"At most {PROCESS_OUTPUT_MAX_BYTES} bytes of stdout and of stderr are kept. "
            "Returns the exit code, then stdout and stderr."
        ),
        validate=_validate_bash,
        execute=execute,
        properties={
            "command": {"type": "string", "description": "bash command line"},
            "timeout_seconds": {
                "type": "number",
                "exclusiveMinimum": 0,
                "maximum": BASH_MAX_TIMEOUT_SECONDS,
                "description": f"default {BASH_DEFAULT_TIMEOUT_SECONDS:g}",
            },
        },
        required=("command",),
        output_limit=PROCESS_OUTPUT_LIMIT,
    )
