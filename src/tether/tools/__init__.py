"""Layer 06: the tool contract (``contract``: definitions and what a tool may raise), the
registry (``tool_registry``), running one call (``execution``), the bounded output serializer
(``serialize``) and ``@tool`` (``function``). Coding tools live in ``tether.tools.coding``.

Each name loads its module on first use, so a light module of this package (``effects``)
can be read without loading the contract.
"""

from typing import TYPE_CHECKING

from tether._base.lazy import lazy_exports

if TYPE_CHECKING:
    from tether.tools.contract import (
        TOOL_OUTPUT_LIMIT_MIN,
        FunctionTool,
        ModelRetry,
        NonRecoverableToolError,
        ToolContractError,
        ToolContractErrorCode,
        ToolDefinition,
        ToolSignatureError,
        define_tool,
    )
    from tether.tools.execution import (
        ToolResultErrorCode,
        execute_tool_call,
    )
    from tether.tools.function import tool
    from tether.tools.returns import ToolReturn
    from tether.tools.serialize import (
        TOOL_OUTPUT_CAP_CHARACTERS,
        TOOL_SERIALIZATION_MAX_BIGINT_BITS,
        TOOL_SERIALIZATION_MAX_COLLECTION_ENTRIES,
        TOOL_SERIALIZATION_MAX_DEPTH,
        TOOL_SERIALIZATION_MAX_NODES,
        TOOL_SERIALIZATION_MAX_STRING_CHARACTERS,
        TOOL_TRUNCATION_MARKER,
        UNDEFINED,
    )
    from tether.tools.tool_registry import ToolRegistry

_MODULES = {
    "contract": (
        "TOOL_OUTPUT_LIMIT_MIN",
        "FunctionTool",
        "ModelRetry",
        "NonRecoverableToolError",
        "ToolContractError",
        "ToolContractErrorCode",
        "ToolDefinition",
        "ToolSignatureError",
        "define_tool",
    ),
    "execution": (
        "ToolResultErrorCode",
        "execute_tool_call",
    ),
    "function": ("tool",),
    "tool_registry": ("ToolRegistry",),
    "returns": ("ToolReturn",),
    "serialize": (
        "TOOL_OUTPUT_CAP_CHARACTERS",
        "TOOL_SERIALIZATION_MAX_BIGINT_BITS",
        "TOOL_SERIALIZATION_MAX_COLLECTION_ENTRIES",
        "TOOL_SERIALIZATION_MAX_DEPTH",
        "TOOL_SERIALIZATION_MAX_NODES",
        "TOOL_SERIALIZATION_MAX_STRING_CHARACTERS",
        "TOOL_TRUNCATION_MARKER",
        "UNDEFINED",
    ),
}
__getattr__, __dir__ = lazy_exports(__name__, _MODULES, globals())

__all__ = [
    "TOOL_OUTPUT_CAP_CHARACTERS",
    "TOOL_OUTPUT_LIMIT_MIN",
    "TOOL_SERIALIZATION_MAX_BIGINT_BITS",
    "TOOL_SERIALIZATION_MAX_COLLECTION_ENTRIES",
    "TOOL_SERIALIZATION_MAX_DEPTH",
    "TOOL_SERIALIZATION_MAX_NODES",
    "TOOL_SERIALIZATION_MAX_STRING_CHARACTERS",
    "TOOL_TRUNCATION_MARKER",
    "UNDEFINED",
    "FunctionTool",
    "ModelRetry",
    "NonRecoverableToolError",
    "ToolContractError",
    "ToolContractErrorCode",
    "ToolDefinition",
    "ToolRegistry",
    "ToolResultErrorCode",
    "ToolReturn",
    "ToolSignatureError",
    "define_tool",
    "execute_tool_call",
    "tool",
]
