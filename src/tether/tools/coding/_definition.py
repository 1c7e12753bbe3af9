"""What every coding tool's definition shares, written once: ``coding_tool``.

Each coding tool is a ``define_tool`` whose effects are the ones ``tether.tools.coding.catalog``
declares for its name and whose parameters are a closed JSON object (``additionalProperties:
false``) of the properties its module lists, so a module says only what is its own.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Mapping
from typing import Any, Final, TypeVar

from tether.protocol import ToolExecutionContext, ToolValidation
from tether.tools.coding.catalog import coding_tool_effects
from tether.tools.contract import ToolDefinition, define_tool

__all__ = ["WORKSPACE_PATH", "coding_tool"]

InputT = TypeVar("InputT")
OutputT = TypeVar("OutputT")

WORKSPACE_PATH: Final[Mapping[str, object]] = {
    "type": "string",
    "description": "workspace-relative path",
}
"""The schema of a ``path`` argument of a file tool."""


def coding_tool(
    name: str,
    *,
    description: str,
    validate: Callable[[object], ToolValidation[InputT]],
    execute: Callable[[InputT, ToolExecutionContext], Coroutine[Any, Any, OutputT]],
    properties: Mapping[str, object],
    required: tuple[str, ...] = (),
    output_limit: int,
) -> ToolDefinition[InputT, OutputT]:
    """The definition of coding tool ``name``: its catalog effects, and as parameters an object
    of ``properties`` (``required`` listed when there are any) that takes nothing else."""
    return define_tool(
        name=name,
        effects=coding_tool_effects(name),
        description=description,
        parameters={
            "type": "object",
            "properties": properties,
            **({"required": list(required)} if required else {}),
            "additionalProperties": False,
        },
        validate=validate,
        execute=execute,
        output_limit=output_limit,
    )
