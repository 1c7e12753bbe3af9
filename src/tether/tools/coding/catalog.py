"""The coding tools, one line each: name, effects and the factory that builds it.

This is the one list a new coding tool is added to (its module is the other half). Everything
that used to list tools by name derives from it: ``coding_tools(root)`` builds these in this
order, each definition carries the effects declared here, the command line's ``[tools]
approve`` names and its default (the tools whose effects ask: ``tether.tools.effects``), the
coding session's default approvals and what a sandbox makes safe to run unasked (a tool whose
only asking effect is ``execute``, when it runs inside the sandbox).

Pure data: importing it loads nothing of the tools themselves (the command line reads it
before anything heavier), and a factory's module is imported only when the tools are built.
"""

from __future__ import annotations

from typing import Final, Literal, TypeAlias

from tether._base.dataclass import dataclass
from tether.tools.effects import ToolEffect, asks

__all__ = [
    "CODING_TOOLS",
    "CodingToolEntry",
    "FactoryKind",
    "coding_tool_effects",
    "coding_tool_names",
    "default_approvals",
    "sandbox_contained_tools",
]

FactoryKind: TypeAlias = Literal["workspace", "process"]
"""How a factory is called: ``workspace``: ``factory(workspace)``; ``process``:
``factory(workspace, hide_env=..., pass_env=..., sandbox=...)`` (a tool that starts
processes, which get the filtered environment and run in the sandbox when there is one)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CodingToolEntry:
    """One coding tool: its ``name``, its declared ``effects``, its ``factory`` as
    ``"module:function"`` and how the factory is called (``kind``)."""

    name: str
    effects: frozenset[ToolEffect]
    factory: str
    kind: FactoryKind = "workspace"


def _entry(
    name: str, effects: set[ToolEffect], factory: str, kind: FactoryKind = "workspace"
) -> CodingToolEntry:
    return CodingToolEntry(name=name, effects=frozenset(effects), factory=factory, kind=kind)


_FILES: Final = "tether.tools.coding.files"
_SEARCH: Final = "tether.tools.coding.search"
_BASH: Final = "tether.tools.coding.bash"
_PYTHON: Final = "tether.tools.coding.python_process"

CODING_TOOLS: Final[tuple[CodingToolEntry, ...]] = (
    _entry("read_file", {"read"}, f"{_FILES}:read_file_tool"),
    _entry("write_file", {"write"}, f"{_FILES}:write_file_tool"),
    _entry("edit_file", {"read", "write"}, f"{_FILES}:edit_file_tool"),
    _entry("list_files", {"read"}, f"{_SEARCH}:list_files_tool"),
    _entry("grep", {"read"}, f"{_SEARCH}:grep_tool"),
    _entry("bash", {"execute"}, f"{_BASH}:bash_tool", "process"),
    _entry("python_process", {"execute"}, f"{_PYTHON}:python_process_tool", "process"),
)
"""The coding tools, in the order ``coding_tools`` returns them."""


def coding_tool_names() -> tuple[str, ...]:
    """Every coding tool's name, in order."""
    return tuple(entry.name for entry in CODING_TOOLS)


def coding_tool_effects(name: str) -> frozenset[ToolEffect]:
    """The effects the catalog declares for the coding tool ``name`` (``KeyError`` for a
    name that is not a coding tool)."""
    for entry in CODING_TOOLS:
        if entry.name == name:
            return entry.effects
    raise KeyError(name)


def default_approvals() -> tuple[str, ...]:
    """The coding tools asked about before they run unless configured otherwise: those whose
    effects include a write, an execution or the network (``tether.tools.effects.asks``)."""
    return tuple(entry.name for entry in CODING_TOOLS if asks(entry.effects))


def sandbox_contained_tools() -> frozenset[str]:
    """The coding tools a working sandbox makes safe to run unasked: the process tools (the
    ones the sandbox wraps) whose only asking effect is ``execute``."""
    return frozenset(
        entry.name
        for entry in CODING_TOOLS
        if entry.kind == "process" and not asks(entry.effects, ("execute",))
    )
