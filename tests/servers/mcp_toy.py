"""A small MCP server built with the SDK, for what real servers cannot be made to do on cue.

Run over stdio (``python tests/servers/mcp_toy.py``) or mounted in-process over streamable
HTTP on 127.0.0.1 (``toy_server()``'s ``streamable_http_app``). Tools:

* ``echo(text)``: returns ``text``;
* ``fail()``: a tool error (``is_error``);
* ``headers()``: the request's headers as JSON (HTTP only);
* ``die()``: the process exits in the middle of the call (stdio);
* ``block()``: waits until cancelled, setting ``TOY.entered`` first (in-process) or
  writing ``blocked`` to stderr (stdio); ``TOY.cancelled`` is set when the wait is cancelled;
* ``grow()``: adds the tool ``late`` and tells the client its tool list changed.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError


class Toy:
    """What the in-process server's tools report to a test."""

    def __init__(self) -> None:
        self.entered = asyncio.Event()
        self.cancelled = asyncio.Event()


TOY = Toy()


def toy_server() -> MCPServer[Any]:
    server: MCPServer[Any] = MCPServer("toy")

    @server.tool()
    def echo(text: str) -> str:
        """Return the text."""
        return text

    @server.tool()
    def fail() -> str:
        """Always fails."""
        raise ToolError("the toy failed on purpose")

    @server.tool()
    def headers(ctx: Context) -> str:
        """The request's headers."""
        return json.dumps(dict(ctx.headers or {}))

    @server.tool()
    def die() -> str:
        """Exit the process mid-call."""
        sys.stderr.write("dying\n")
        sys.stderr.flush()
        os._exit(3)

    @server.tool()
    async def block() -> str:
        """Wait until cancelled."""
        TOY.entered.set()
        sys.stderr.write("blocked\n")
        sys.stderr.flush()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            TOY.cancelled.set()
            raise
        return "never"

    @server.tool()
    async def grow(ctx: Context) -> str:
        """Add the tool 'late' and say the tool list changed."""

        def late() -> str:
            """Added by grow."""
            return "late"

        server.add_tool(late)
        await ctx.session.send_tool_list_changed()
        return "grown"

    return server


if __name__ == "__main__":
    toy_server().run()
