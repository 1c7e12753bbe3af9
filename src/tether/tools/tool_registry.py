"""The tools a run may call, by name (checkpoint 06): ``ToolRegistry``.

A registry registers definitions all or nothing (a failing batch leaves it unchanged) and
never lets two tools share a name (``DUPLICATE_TOOL_NAME``); each definition is snapshotted
by ``tether.tools.contract`` as it is registered. ``ToolRegistry.specs()`` says what a model
is told about the registered tools.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tether._base.exact_types import type_of
from tether.protocol import ToolSpec
from tether.tools.contract import (
    NO_PARAMETERS,
    ToolContractError,
    ToolDefinition,
    checked_definition,
)

__all__ = ["ToolRegistry"]


def _spec(definition: ToolDefinition[Any, Any]) -> ToolSpec:
    parameters = definition.parameters
    return ToolSpec(
        name=definition.name,
        description=definition.description,
        parameters=NO_PARAMETERS if parameters is None else parameters,
    )


class ToolRegistry:
    """Tools by name. Registration is atomic: a failing batch leaves the registry unchanged.

    ``ToolRegistry(definitions)`` registers a batch; definitions may be ``ToolDefinition``
    values or any object (or mapping) with ``name``, ``description``, ``validate`` and
    ``execute`` (and optionally ``parameters`` and ``output_limit``), each read once.
    """

    __slots__ = ("_specs", "_tools")

    def __init__(self, definitions: Iterable[object] = ()) -> None:
        self._tools: dict[str, ToolDefinition[Any, Any]] = {}
        self._specs: tuple[ToolSpec, ...] | None = None
        self.register_many(definitions)

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    @property
    def names(self) -> tuple[str, ...]:
        """Tool names in registration order."""
        return tuple(self._tools)

    def get(self, name: str) -> ToolDefinition[Any, Any] | None:
        """The tool named ``name``, or ``None``."""
        return self._tools.get(name)

    def specs(self) -> tuple[ToolSpec, ...]:
        """What a model is told about the tools, in registration order.

        Each ``ToolSpec`` has the definition's name, description and ``parameters``; a
        definition without ``parameters`` is described as taking no arguments,
        ``{"type": "object", "properties": {}}``. The tuple is built once and reused (also by
        snapshots) until a registration changes the tools, so calling this every step is free.
        """
        specs = self._specs
        if specs is None:
            specs = self._specs = tuple(_spec(tool) for tool in self._tools.values())
        return specs

    def snapshot(self) -> ToolRegistry:
        """An independent registry with the same tools; later registrations stay apart.

        The specs are built on this registry first and the snapshot shares them (an
        immutable tuple, shared until either side registers). Why: a run snapshots the
        caller's registry, and a registry that never built its own specs gave every run its
        own ``ToolSpec`` values and tuple, two more objects per run in flight for the cycle
        collector to walk (``bench_scale``)."""
        copy = ToolRegistry.__new__(ToolRegistry)
        copy._tools = dict(self._tools)
        copy._specs = self.specs()
        return copy

    def register(self, definition: object) -> ToolDefinition[Any, Any]:
        """Register one definition; returns its frozen snapshot."""
        return self.register_many([definition])[0]

    def register_many(self, definitions: Iterable[object]) -> tuple[ToolDefinition[Any, Any], ...]:
        """Register a batch all or nothing; returns the frozen snapshots in order."""
        if type_of(definitions) not in (list, tuple):
            raise ToolContractError("INVALID_TOOL_BATCH", "Tool definitions must be an array")
        batch: tuple[object, ...] = tuple(definitions)
        snapshots = tuple(checked_definition(definition) for definition in batch)
        seen: set[str] = set()
        for snapshot in snapshots:
            if snapshot.name in seen or snapshot.name in self._tools:
                raise ToolContractError(
                    "DUPLICATE_TOOL_NAME", f'Tool name "{snapshot.name}" is already registered'
                )
            seen.add(snapshot.name)
        for snapshot in snapshots:
            self._tools[snapshot.name] = snapshot
        if snapshots:
            self._specs = None
        return snapshots

    def __repr__(self) -> str:
        return f"<ToolRegistry {list(self._tools)}>"
