"""Tools from Model Context Protocol servers (the ``tether[mcp]`` extra).

* ``config``: ``McpStdioServer`` / ``McpHttpServer`` and ``[mcp_servers.NAME]`` parsing
  (standard library only);
* ``client``: ``McpServer`` (one server's connection and lifecycle; ``sdk_support``: what
  it does around the SDK);
* ``server_group``: ``McpServers`` (a group, and its tools as ``ToolDefinition`` values named
  ``SERVER__TOOL``);
* ``errors``: ``McpError`` and its codes.

A runtime owns the servers of ``RuntimeOptions.mcp_servers``: started when it is built,
stopped when it is disposed. Importing this package does not import the MCP SDK.
"""

from tether.mcp.client import MCP_MAX_RESTARTS, McpServer, McpServerState, McpToolInfo
from tether.mcp.config import (
    DEFAULT_STARTUP_TIMEOUT,
    DEFAULT_TOOL_TIMEOUT,
    McpApproval,
    McpHttpServer,
    McpServerConfig,
    McpStdioServer,
    mcp_approval,
    mcp_tool_name,
    parse_mcp_servers,
)
from tether.mcp.errors import MCP_ERROR_CODES, MCP_HINTS, McpError, McpErrorCode
from tether.mcp.server_group import McpServers

__all__ = [
    "DEFAULT_STARTUP_TIMEOUT",
    "DEFAULT_TOOL_TIMEOUT",
    "MCP_ERROR_CODES",
    "MCP_HINTS",
    "MCP_MAX_RESTARTS",
    "McpApproval",
    "McpError",
    "McpErrorCode",
    "McpHttpServer",
    "McpServer",
    "McpServerConfig",
    "McpServerState",
    "McpServers",
    "McpStdioServer",
    "McpToolInfo",
    "mcp_approval",
    "mcp_tool_name",
    "parse_mcp_servers",
]
