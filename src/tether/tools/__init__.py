"""Layer 06: the tool contract (``contract``), the bounded output serializer (``serialize``)
and ``@tool`` (``function``). Coding tools live in ``tether.tools.coding``."""

from tether.tools.contract import (
    TOOL_OUTPUT_LIMIT_MIN,
    FunctionTool,
    ModelRetry,
    NonRecoverableToolError,
    ToolContractError,
    ToolContractErrorCode,
    ToolDefinition,
    ToolRegistry,
    ToolResultErrorCode,
    define_tool,
    execute_tool_call,
)
from tether.tools.function import ToolSignatureError, tool
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
    "ToolSignatureError",
    "define_tool",
    "execute_tool_call",
    "tool",
]
