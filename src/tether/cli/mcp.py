"""``tether mcp list``: the config file's MCP servers, their state and their tools.

Every enabled ``[mcp_servers.NAME]`` server is started (concurrently, each within its
``startup_timeout_sec``), listed and stopped again: a row per server (name, ``stdio`` or
``http``, state, what it runs or where it is) and a row per tool (the name the model sees,
``SERVER__TOOL``, and its description); a server that failed shows its error code, message
and hint. ``--json`` writes one JSON object per server instead. The values of a server's
``env`` and ``headers`` are never shown (only their names), nor a URL's path or query.

Exit status: 0 when every enabled server started (or none is configured), 1 when one did
not, 2 for an invalid config file, 4 when the output could not be written.
"""

from __future__ import annotations

import argparse
import sys
import urllib.parse
from typing import TYPE_CHECKING, Any, Final, NotRequired, TypedDict

from tether.cli.exit_codes import EXIT_CODES_HELP, EXIT_FAILED, EXIT_OK, EXIT_USAGE
from tether.cli.render import Output, json_line

if TYPE_CHECKING:
    from tether.cli.config import CliConfig
    from tether.mcp import McpServer, McpServerConfig

__all__ = ["add_parser", "main", "mcp_list"]

_DESCRIPTION: Final = (
    "List the MCP servers of the config file ([mcp_servers.NAME] tables): each enabled one\n"
    "is started, its tools listed, and stopped again. The values of env and headers are\n"
    "never shown."
)


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``tether mcp`` on ``subparsers`` (the ``add_subparsers()`` of ``tether``)."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "mcp",
        help="the MCP servers of the config file: their state and tools",
        description=_DESCRIPTION,
        epilog=EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = parser.add_subparsers(dest="mcp_command", required=True)
    listing = actions.add_parser(
        "list",
        help="start each configured server, list its tools, stop it",
        description=_DESCRIPTION,
        epilog=EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    listing.add_argument("--json", action="store_true", help="one JSON object per server")
    return parser


def main(args: argparse.Namespace) -> int:
    """Run ``tether mcp ...`` (only ``list`` for now)."""
    import asyncio  # here, not at the top: every ``tether`` command builds this parser

    from tether.cli.command_setup import config_or_warn

    config = config_or_warn("mcp")
    if config is None:
        return EXIT_USAGE
    make = Output.for_json if args.json else Output.for_people
    out = make(sys.stdout)
    return asyncio.run(mcp_list(config, out, as_json=args.json))


def _where(config: McpServerConfig) -> str:
    if config.type == "stdio":
        return " ".join((config.command, *config.args))
    parts = urllib.parse.urlsplit(config.url)
    port = f":{parts.port}" if parts.port is not None else ""
    return f"{parts.scheme}://{parts.hostname}{port}"


class _ToolRow(TypedDict):
    name: str
    serverName: str
    description: str


class _ErrorRow(TypedDict):
    code: str
    message: str
    hint: str


class _Row(TypedDict):
    """One server as ``tether mcp list --json`` writes it (``env``/``headers``, ``error``
    only when they apply)."""

    name: str
    type: str
    state: str
    where: str
    approval: object
    tools: list[_ToolRow]
    env: NotRequired[list[str]]
    headers: NotRequired[list[str]]
    error: NotRequired[_ErrorRow]


def _row(server: McpServer) -> _Row:
    config = server.config
    row: _Row = {
        "name": server.name,
        "type": config.type,
        "state": server.state,
        "where": _where(config),
        "approval": config.approval,
        "tools": [
            {"name": tool.offered_as, "serverName": tool.name, "description": tool.description}
            for tool in server.tools
        ],
    }
    if config.type == "stdio":
        row["env"] = list(config.env)  # the names only
    else:
        row["headers"] = list(config.headers)
    error = server.error
    if error is not None and server.state in ("failed", "died"):
        row["error"] = _ErrorRow(code=error.code, message=error.message, hint=error.hint)
    return row


async def mcp_list(config: CliConfig, out: Output, *, as_json: bool) -> int:
    """Start, list and stop the config's servers, writing them to ``out``; the exit status
    (see the module docstring)."""
    if not config.mcp_servers:
        if not as_json:
            out.write(f"no MCP servers in {config.path} (add [mcp_servers.NAME] tables)\n")
        return EXIT_OK
    from tether.mcp import McpServers

    servers = McpServers(config.mcp_servers)
    try:
        await servers.start()
        rows = [_row(server) for server in servers.servers]
    finally:
        await servers.stop()
    failed = any(row["state"] == "failed" for row in rows)
    from tether.cli.ui.text import visible

    for row in rows:
        if as_json:
            out.write(json_line(row))
            continue
        tools = row["tools"]
        state = f"{row['state']}, {len(tools)} tool(s)" if tools else str(row["state"])
        where = visible(str(row["where"]), strict=True)
        out.write(f"{row['name']}  {row['type']}  {state}  {where}\n")
        for tool in tools:  # names and descriptions come from the server: shown harmless
            first = tool["description"].splitlines()[0] if tool["description"] else ""
            name, shown = visible(tool["name"], strict=True), visible(first[:100], strict=True)
            out.write(f"  {name}  {shown}\n")
        error = row.get("error")
        if error is not None:
            message = visible(error["message"], strict=True)
            out.write(f"  [{error['code']}] {message}\n  hint: {error['hint']}\n")
    return EXIT_FAILED if failed else EXIT_OK
