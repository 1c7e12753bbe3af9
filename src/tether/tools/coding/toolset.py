"""``coding_tools(root)``: the registry of every coding tool in ``catalog``, over one
captured workspace.

The catalog, the workspace, the environment filter and the tool contract load with the
first call, not with this module: resolving ``tether.coding_tools`` loads none of them, nor
the protocol they import (issue 30: importing the usable API).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from tether.tools.coding.catalog import CodingToolEntry
    from tether.tools.coding.sandbox import Sandbox
    from tether.tools.coding.workspace import Workspace
    from tether.tools.contract import ToolDefinition
    from tether.tools.tool_registry import ToolRegistry

__all__ = ["coding_tools"]


def _factory(entry: CodingToolEntry) -> Callable[..., ToolDefinition[Any, Any]]:
    module, _, function = entry.factory.partition(":")
    return cast(
        "Callable[..., ToolDefinition[Any, Any]]",
        getattr(importlib.import_module(module), function),
    )


def coding_tools(
    root: str | os.PathLike[str] | Workspace,
    *,
    hide_env: Iterable[str] = (),
    pass_env: Iterable[str] = (),
    sandbox: Sandbox | None = None,
) -> ToolRegistry:
    """The coding tools of ``tether.tools.coding.catalog`` (``read_file``, ``write_file``,
    ``edit_file``, ``list_files``, ``grep``, ``bash``, ``python_process``, in that order)
    over one captured workspace (``CodingToolError`` for a bad root).

    ``bash`` and ``python_process`` never see a catalog API key variable nor the names in
    ``hide_env`` (pass the active model's ``api_key_env``), except those in ``pass_env``
    (``tether.tools.coding.environment``). With ``sandbox`` they run inside bubblewrap
    (``tether.tools.coding.sandbox``; ``Sandbox(mode="auto")`` falls back to running
    unsandboxed where bubblewrap does not work, ``sandbox_status()`` says why).
    """
    # Here, not at import: see the module docstring.
    from tether.tools.coding.catalog import CODING_TOOLS
    from tether.tools.coding.environment import process_environment
    from tether.tools.coding.workspace import Workspace
    from tether.tools.tool_registry import ToolRegistry

    ws = root if isinstance(root, Workspace) else Workspace(root)
    env = process_environment(hide_env, pass_env, "coding_tools")
    tools: list[ToolDefinition[Any, Any]] = []
    for entry in CODING_TOOLS:
        factory = _factory(entry)
        if entry.kind == "process":
            tools.append(factory(ws, hide_env=env.hide, pass_env=env.pass_through, sandbox=sandbox))
        else:
            tools.append(factory(ws))
    return ToolRegistry(tools)
