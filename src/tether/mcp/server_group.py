"""A group of MCP servers (``McpServers``: started together, each failure recorded) and their
tools as ``ToolDefinition`` values named ``SERVER__TOOL`` (``mcp_tool``)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from tether.mcp.client import McpServer, McpToolInfo
from tether.mcp.config import McpServerConfig
from tether.mcp.errors import McpError
from tether.mcp.sdk_support import settle

if TYPE_CHECKING:
    from tether.protocol import ToolExecutionContext, ToolValidation
    from tether.tools import ToolDefinition

__all__ = ["McpServers", "mcp_tool"]


class McpServers:
    """Several servers started together and their tools as ``ToolDefinition`` values.

    ``async with McpServers([...]) as servers:`` starts them and stops them; ``start()``
    and ``stop()`` are the same steps by hand. ``start()`` starts every enabled server
    concurrently; one that fails is recorded (its ``state`` ``failed``, its ``error``) and
    the others still start; ``errors`` lists the failures. ``on_tools_changed`` is called
    when a server's tool list changed, ``on_died`` when one died (see ``McpServer``).
    """

    def __init__(
        self,
        configs: tuple[McpServerConfig, ...] | list[McpServerConfig],
        *,
        cwd: str | None = None,
        on_tools_changed: Callable[[McpServer], None] | None = None,
        on_died: Callable[[McpServer], None] | None = None,
    ) -> None:
        names = [config.name for config in configs]
        if len(set(names)) != len(names):
            raise McpError("MCP_CONFIG_INVALID", "two MCP servers have the same name")
        self.servers: Final = tuple(
            McpServer(config, cwd=cwd, on_tools_changed=on_tools_changed, on_died=on_died)
            for config in configs
        )

    async def __aenter__(self) -> McpServers:
        await self.start()
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.stop()

    async def start(self) -> None:
        """Start every enabled server (see the class docstring); cancellable: a cancelled
        start stops what it started."""
        tasks = [asyncio.ensure_future(_quiet_start(server)) for server in self.servers]
        try:
            await asyncio.gather(*tasks)
        except BaseException:
            for task in tasks:
                task.cancel()
            for task in tasks:
                await settle(task)
            await self.stop()
            raise

    @property
    def errors(self) -> tuple[McpError, ...]:
        """The start failures, in the servers' order."""
        return tuple(
            server.error
            for server in self.servers
            if server.state == "failed" and server.error is not None
        )

    async def stop(self) -> None:
        """Stop every server (concurrently); idempotent."""
        tasks = [asyncio.ensure_future(server.stop()) for server in self.servers]
        for task in tasks:
            await settle(task)

    def definitions(self) -> list[ToolDefinition[Any, Any]]:
        """The running servers' tools, each named ``SERVER__TOOL`` (``mcp_tool_name``)."""
        return [
            mcp_tool(server, info)
            for server in self.servers
            if server.state in ("running", "died")
            for info in server.tools
        ]


async def _quiet_start(server: McpServer) -> None:
    with contextlib.suppress(McpError):
        await server.start()


def mcp_tool(server: McpServer, info: McpToolInfo) -> ToolDefinition[Any, Any]:
    """The ``ToolDefinition`` of one server tool: its input schema as the tool's parameters,
    any JSON object accepted (the server checks the arguments), its result as text."""
    from tether.protocol import Valid
    from tether.tools import define_tool

    def validate(arguments: object) -> ToolValidation[Any]:
        return Valid(value=arguments)

    async def execute(arguments: Any, context: ToolExecutionContext) -> str:
        if all(tool.name != info.name for tool in server.tools):
            raise McpError(
                "MCP_TOOL_NOT_FOUND",
                f"MCP_TOOL_NOT_FOUND: MCP server '{server.name}' no longer offers "
                f"tool '{info.name}'",
                server=server.name,
            )
        return await server.call(info.name, arguments)

    return define_tool(
        name=info.offered_as,
        description=info.description,
        validate=validate,
        execute=execute,
        parameters=info.input_schema,
    )
