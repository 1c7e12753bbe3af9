"""The errors of the MCP client: one class, a stable ``code`` and a hint for each."""

from __future__ import annotations

from typing import Final, Literal, TypeAlias, get_args

from tether._base.tether_error import TetherError

__all__ = ["MCP_ERROR_CODES", "MCP_HINTS", "McpError", "McpErrorCode"]

McpErrorCode: TypeAlias = Literal[
    "MCP_CONFIG_INVALID",
    "MCP_NOT_INSTALLED",
    "MCP_SERVER_START_FAILED",
    "MCP_SERVER_TIMEOUT",
    "MCP_SERVER_DIED",
    "MCP_SERVER_STOPPED",
    "MCP_TOOL_ERROR",
    "MCP_TOOL_NOT_FOUND",
    "MCP_TOOL_TIMEOUT",
    "MCP_CALL_FAILED",
]
"""Every code an ``McpError`` carries (a tool result's error carries the same codes)."""

MCP_ERROR_CODES: Final[tuple[McpErrorCode, ...]] = get_args(McpErrorCode)
"""``McpErrorCode``'s values, in order."""

MCP_HINTS: Final[dict[McpErrorCode, str]] = {
    "MCP_CONFIG_INVALID": "fix the [mcp_servers.NAME] table the message names",
    "MCP_NOT_INSTALLED": "install the MCP extra: pip install 'tether[mcp]'",
    "MCP_SERVER_START_FAILED": (
        "check the server's command (or url) by running it yourself; the other servers still work"
    ),
    "MCP_SERVER_TIMEOUT": "the server did not answer in time; raise startup_timeout_sec",
    "MCP_SERVER_DIED": "the server exited; it is started again at its next tool call",
    "MCP_SERVER_STOPPED": "the server was stopped with its runtime; build a new runtime",
    "MCP_TOOL_ERROR": "the server's tool reported an error; read its message",
    "MCP_TOOL_NOT_FOUND": "the server no longer offers this tool (its tool list changed)",
    "MCP_TOOL_TIMEOUT": "the tool did not answer in time; raise tool_timeout_sec",
    "MCP_CALL_FAILED": "the server answered the call with a protocol error",
}
"""What a person can do about each code (``McpError.hint``)."""


class McpError(TetherError[McpErrorCode]):
    """An MCP server could not be configured, started or called.

    ``code`` is one of ``McpErrorCode``; ``server`` names the ``[mcp_servers.NAME]`` entry
    (``None`` for a problem of no one server); ``hint`` says what to do. Messages never hold a
    value of a server's ``env`` or ``headers``.
    """

    def __init__(self, code: McpErrorCode, message: str, *, server: str | None = None) -> None:
        super().__init__(code, message)
        self._server = server

    @property
    def server(self) -> str | None:
        """The server's name, when the error is about one."""
        return self._server

    @property
    def hint(self) -> str:
        """What a person can do about it."""
        return MCP_HINTS[self.code]
