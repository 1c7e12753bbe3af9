"""A small MCP server built with the SDK, for what real servers cannot be made to do on cue.

Run over stdio (``python tests/servers/mcp_toy.py``) or mounted in-process over streamable
HTTP on 127.0.0.1 (``toy_server()``'s ``streamable_http_app``). Tools:

* ``echo(text)``: returns ``text``;
* ``fail()``: a tool error (``is_error``); ``refuse()``: a JSON-RPC error instead;
* ``a.b`` and ``a_b``: two names offered as the same ``toy__a_b``;
* ``headers()``: the request's headers as JSON (HTTP only);
* ``die()``: the process exits in the middle of the call (stdio);
* ``block()``: waits until cancelled, setting ``TOY.entered`` first (in-process) or
  writing ``blocked`` to stderr (stdio); ``TOY.cancelled`` is set when the wait is cancelled;
* ``grow()``: adds the tool ``late`` and tells the client its tool list changed;
* ``shrink()``: removes ``echo`` and tells the client its tool list changed;
* ``media()``: an image, an audio clip, a resource link and two embedded resources;
* ``structured()``: structured content only.
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
        self.reset()

    def reset(self) -> None:
        """New events (an event belongs to the loop that first waits on it)."""
        self.entered = asyncio.Event()
        self.cancelled = asyncio.Event()


TOY = Toy()


def toy_server() -> MCPServer[Any]:
    """A new toy server (and new ``TOY`` events)."""
    TOY.reset()
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
    def refuse() -> str:
        """Answers with a JSON-RPC error instead of a result."""
        from mcp.shared.exceptions import MCPError

        raise MCPError(code=-32602, message="the toy refuses")

    @server.tool(name="a.b")
    def dotted() -> str:
        """Offered as a_b, like the next one."""
        return "dotted"

    @server.tool(name="a_b")
    def underscored() -> str:
        """Offered as a_b too: only the first is kept."""
        return "underscored"

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

    @server.tool()
    async def shrink(ctx: Context) -> str:
        """Remove the tool 'echo' and say the tool list changed."""
        server.remove_tool("echo")
        await ctx.session.send_tool_list_changed()
        return "shrunk"

    @server.tool()
    def media() -> list[Any]:
        """Blocks that are not text."""
        from mcp.types import (
            AudioContent,
            BlobResourceContents,
            EmbeddedResource,
            ImageContent,
            ResourceLink,
            TextResourceContents,
        )

        return [
            ImageContent(type="image", data="aGk=", mime_type="image/png"),
            AudioContent(type="audio", data="aGk=", mime_type="audio/wav"),
            ResourceLink(type="resource_link", uri="file:///a.txt", name="a"),
            EmbeddedResource(
                type="resource",
                resource=TextResourceContents(uri="file:///b.txt", text="inline text"),
            ),
            EmbeddedResource(
                type="resource",
                resource=BlobResourceContents(uri="file:///c.bin", blob="aGk="),
            ),
        ]

    @server.tool(structured_output=True)
    def structured() -> dict[str, int]:
        """Structured content."""
        return {"answer": 42}

    return server


if __name__ == "__main__":
    toy_server().run()
