"""Coding tools confined to a workspace (checkpoint 08 and what a coding agent needs).

``coding_tools(root)`` captures ``root`` once (a ``Workspace``) and returns a ``ToolRegistry``
with ``read_file``, ``write_file``, ``edit_file``, ``list_files``, ``grep``, ``bash`` and
``python_process``, in that order. Every result is plain text a model reads well; every failure
is an ``is_error`` result whose message starts with a stable code (``CodingToolError.code``).

File tools are confined (see ``workspace``); ``bash`` and ``python_process`` (see those
modules) are NOT a sandbox: they run real processes as the user, bounded in time and output,
under a supervisor that kills everything they started (see ``process``), in the user's
environment without the variables that hold API keys (see ``environment``).
``coding_tools(root, sandbox=Sandbox())`` runs them inside bubblewrap instead (see
``sandbox``): the workspace is the one writable place, there is no network, and credentials
are hidden. ``catalog`` lists the tools, each with its declared effects; adding a tool is its
module and one line there.

Each name loads its module on first use, so ``tether.tools.coding.catalog`` can be read (by
the command line's config) without loading the tools.
"""

from typing import TYPE_CHECKING

from tether._base.lazy import lazy_exports

if TYPE_CHECKING:
    from tether.tools.coding.bash import (
        BASH_DEFAULT_TIMEOUT_SECONDS,
        BASH_MAX_TIMEOUT_SECONDS,
        bash_tool,
    )
    from tether.tools.coding.files import (
        edit_file_tool,
        read_file_tool,
        write_file_tool,
    )
    from tether.tools.coding.process import (
        NODE_CODE_ALIASES,
        PROCESS_OUTPUT_MAX_BYTES,
    )
    from tether.tools.coding.python_process import (
        PROCESS_ARGUMENT_COUNT_MAX,
        PROCESS_ARGUMENT_MAX_BYTES,
        PROCESS_ARGUMENTS_TOTAL_MAX_BYTES,
        PROCESS_SOURCE_MAX_BYTES,
        PYTHON_PROCESS_TIMEOUT_SECONDS,
        python_process_tool,
    )
    from tether.tools.coding.sandbox import (
        DEFAULT_HIDDEN_PATHS,
        Sandbox,
        SandboxMode,
        SandboxStatus,
        sandbox_status,
    )
    from tether.tools.coding.search import (
        grep_tool,
        list_files_tool,
    )
    from tether.tools.coding.toolset import (
        coding_tools,
    )
    from tether.tools.coding.workspace import (
        CODING_FILE_MAX_BYTES,
        CodingToolError,
        CodingToolErrorCode,
        Workspace,
        normalize_relative_path,
    )

_MODULES = {
    "files": (
        "edit_file_tool",
        "read_file_tool",
        "write_file_tool",
    ),
    "bash": (
        "BASH_DEFAULT_TIMEOUT_SECONDS",
        "BASH_MAX_TIMEOUT_SECONDS",
        "bash_tool",
    ),
    "process": (
        "NODE_CODE_ALIASES",
        "PROCESS_OUTPUT_MAX_BYTES",
    ),
    "python_process": (
        "PROCESS_ARGUMENTS_TOTAL_MAX_BYTES",
        "PROCESS_ARGUMENT_COUNT_MAX",
        "PROCESS_ARGUMENT_MAX_BYTES",
        "PROCESS_SOURCE_MAX_BYTES",
        "PYTHON_PROCESS_TIMEOUT_SECONDS",
        "python_process_tool",
    ),
    "sandbox": (
        "DEFAULT_HIDDEN_PATHS",
        "Sandbox",
        "SandboxMode",
        "SandboxStatus",
        "sandbox_status",
    ),
    "search": (
        "grep_tool",
        "list_files_tool",
    ),
    "toolset": ("coding_tools",),
    "workspace": (
        "CODING_FILE_MAX_BYTES",
        "CodingToolError",
        "CodingToolErrorCode",
        "Workspace",
        "normalize_relative_path",
    ),
}
__getattr__, __dir__ = lazy_exports(__name__, _MODULES, globals())

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
