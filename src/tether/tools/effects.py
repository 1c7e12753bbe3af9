"""What a tool call may do (``ToolEffect``), and who is asked before it runs (``tools_to_ask``).

A tool declares its effects (``define_tool(..., effects={"write"})``, ``@tool(effects=...)``;
``tether.tools.coding.catalog`` for the coding tools); the owners that ask a person before a
call runs (the coding session, ``tether chat``) derive their defaults from them instead of
from lists of names. Pure data, no imports beyond ``typing``: the command line reads it
before anything heavier loads.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final, Literal, Protocol, TypeAlias, get_args

__all__ = ["ASKING_EFFECTS", "TOOL_EFFECTS", "Effectful", "ToolEffect", "asks", "tools_to_ask"]

ToolEffect: TypeAlias = Literal["read", "write", "execute", "network"]
"""What a tool call may do: read files or data, write (change files or state), execute
programs (which may do anything the user can), reach the network."""

TOOL_EFFECTS: Final[frozenset[ToolEffect]] = frozenset(get_args(ToolEffect))
"""Every ``ToolEffect``."""
ASKING_EFFECTS: Final[frozenset[ToolEffect]] = frozenset({"write", "execute", "network"})
"""The effects a person is asked about by default: a call that may change something, run a
program or reach the network. A read-only tool is not asked about."""


class Effectful(Protocol):
    """Anything with a tool's ``name`` and declared ``effects`` (``None``: undeclared)."""

    @property
    def name(self) -> str: ...

    @property
    def effects(self) -> frozenset[ToolEffect] | None: ...


def asks(effects: frozenset[ToolEffect] | None, contained: Iterable[ToolEffect] = ()) -> bool:
    """Whether a tool with ``effects`` is asked about by default: undeclared effects, or an
    asking effect that ``contained`` (effects something else already bounds, e.g.
    ``{"execute"}`` inside a sandbox) does not cover."""
    return effects is None or bool((effects & ASKING_EFFECTS) - frozenset(contained))


def tools_to_ask(
    tools: Iterable[Effectful], *, contained: Iterable[ToolEffect] = ()
) -> frozenset[str]:
    """The names of the ``tools`` a person should be asked about before they run, by
    default (see ``asks``)."""
    bounded = frozenset(contained)
    return frozenset(tool.name for tool in tools if asks(tool.effects, bounded))
