"""Coding tools confined to a workspace (checkpoint 08 and what a coding agent needs).

``coding_tools(root)`` captures ``root`` once (a ``Workspace``) and returns a ``ToolRegistry``
with ``read_file``, ``write_file``, ``edit_file``, ``list_files``, ``grep``, ``bash`` and
``python_process``, in that order. Every result is plain text a model reads well; every failure
is an ``is_error`` result whose message starts with a stable code (``CodingToolError.code``,
a ``CodingToolErrorCode``), which is also the result's ``error_code`` field.

File tools are confined (see ``workspace``); ``bash`` and ``python_process`` are NOT a sandbox:
they run real processes as the user, bounded in time and output, under a supervisor that
kills everything they started (see ``process``), in the user's environment without the
variables that hold API keys (see ``environment``). ``coding_tools(root, sandbox=Sandbox())``
runs them inside bubblewrap instead (see ``sandbox``): the workspace is the one writable
place, there is no network, and credentials are hidden.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from tether.tools.coding.environment import process_environment
from tether.tools.coding.files import (
    edit_file_tool,
    read_file_tool,
    write_file_tool,
)
from tether.tools.coding.process import (
    BASH_DEFAULT_TIMEOUT_SECONDS,
    BASH_MAX_TIMEOUT_SECONDS,
    NODE_CODE_ALIASES,
    PROCESS_ARGUMENT_COUNT_MAX,
    PROCESS_ARGUMENT_MAX_BYTES,
    PROCESS_ARGUMENTS_TOTAL_MAX_BYTES,
    PROCESS_OUTPUT_MAX_BYTES,
    PROCESS_SOURCE_MAX_BYTES,
    PYTHON_PROCESS_TIMEOUT_SECONDS,
    bash_tool,
    python_process_tool,
)
from tether.tools.coding.sandbox import (
    DEFAULT_HIDDEN_PATHS,
    Sandbox,
    SandboxMode,
    SandboxStatus,
    sandbox_status,
)
from tether.tools.coding.search import grep_tool, list_files_tool
from tether.tools.coding.workspace import (
    CODING_FILE_MAX_BYTES,
    CodingToolError,
    CodingToolErrorCode,
    Workspace,
    normalize_relative_path,
)
from tether.tools.contract import ToolRegistry

__all__ = [
    "BASH_DEFAULT_TIMEOUT_SECONDS",
    "BASH_MAX_TIMEOUT_SECONDS",
    "CODING_FILE_MAX_BYTES",
    "DEFAULT_HIDDEN_PATHS",
    "NODE_CODE_ALIASES",
    "PROCESS_ARGUMENTS_TOTAL_MAX_BYTES",
    "PROCESS_ARGUMENT_COUNT_MAX",
    "PROCESS_ARGUMENT_MAX_BYTES",
    "PROCESS_OUTPUT_MAX_BYTES",
    "PROCESS_SOURCE_MAX_BYTES",
    "PYTHON_PROCESS_TIMEOUT_SECONDS",
    "CodingToolError",
    "CodingToolErrorCode",
    "Sandbox",
    "SandboxMode",
    "SandboxStatus",
    "Workspace",
    "bash_tool",
    "coding_tools",
    "edit_file_tool",
    "grep_tool",
    "list_files_tool",
    "normalize_relative_path",
    "python_process_tool",
    "read_file_tool",
    "sandbox_status",
    "write_file_tool",
]


def coding_tools(
    root: str | os.PathLike[str] | Workspace,
    *,
    hide_env: Iterable[str] = (),
    pass_env: Iterable[str] = (),
    sandbox: Sandbox | None = None,
) -> ToolRegistry:
    """The seven coding tools over one captured workspace (``CodingToolError`` for a bad root).

    ``bash`` and ``python_process`` never see a catalog API key variable nor the names in
    ``hide_env`` (pass the active model's ``api_key_env``), except those in ``pass_env``
    (``tether.tools.coding.environment``). With ``sandbox`` they run inside bubblewrap
    (``tether.tools.coding.sandbox``; ``Sandbox(mode="auto")`` falls back to running
    unsandboxed where bubblewrap does not work, ``sandbox_status()`` says why).
    """
    ws = root if isinstance(root, Workspace) else Workspace(root)
    env = process_environment(hide_env, pass_env, "coding_tools")
    hide, keep = env.hide, env.pass_through
    return ToolRegistry(
        [
            read_file_tool(ws),
            write_file_tool(ws),
            edit_file_tool(ws),
            list_files_tool(ws),
            grep_tool(ws),
            bash_tool(ws, hide_env=hide, pass_env=keep, sandbox=sandbox),
            python_process_tool(ws, hide_env=hide, pass_env=keep, sandbox=sandbox),
        ]
    )
