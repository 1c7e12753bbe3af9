"""MCP servers as configured: ``[mcp_servers.NAME]`` tables (Codex CLI's convention) or
objects built in Python, checked into frozen values. Standard library only: reading a config
never imports the MCP SDK.

A stdio server is a command the runtime starts::

    [mcp_servers.time]
    command = "mcp-server-time"              # required (no shell: the program itself)
    args = ["--local-timezone", "UTC"]        # optional
    env = { TZ = "UTC" }                      # optional, added to a minimal environment
    cwd = "/srv/time"                         # optional working directory

a streamable-HTTP server is a URL::

    [mcp_servers.docs]
    url = "http://127.0.0.1:8000/mcp"         # required, http:// or https://
    headers = { "X-Team" = "tools" }          # optional (Codex's http_headers too)
    bearer_token_env_var = "DOCS_TOKEN"       # optional: Authorization: Bearer $DOCS_TOKEN

and either may say::

    enabled = true                            # false: configured, never started
    startup_timeout_sec = 10                  # start and list tools within this
    tool_timeout_sec = 60                     # each call answers within this
    approval = "ask"                          # "ask" (default) or "auto": its tools' calls
    tool_approval = { get_current_time = "auto" }   # per tool, by the server's tool name

A key not listed is an error (``MCP_CONFIG_INVALID``) naming the dotted key, as everywhere in
tether's config. No message ever quotes a value: ``env`` and ``headers`` hold secrets.
The ``repr`` of a server shows the names of its variables and headers, never their values.

Each server's tools are offered as ``NAME__TOOL`` (``mcp_tool_name``).
"""

from __future__ import annotations

import math
import re
import urllib.parse
from collections.abc import Mapping
from dataclasses import field
from types import MappingProxyType
from typing import Final, Literal, TypeAlias, TypeGuard, cast

from tether._base.dataclass import dataclass
from tether.mcp.errors import McpError

__all__ = [
    "DEFAULT_STARTUP_TIMEOUT",
    "DEFAULT_TOOL_TIMEOUT",
    "McpApproval",
    "McpHttpServer",
    "McpServerConfig",
    "McpStdioServer",
    "mcp_approval",
    "mcp_tool_name",
    "parse_mcp_servers",
    "url_origin",
]

DEFAULT_STARTUP_TIMEOUT: Final = 10.0
"""Seconds a server has to start and list its tools (Codex's default)."""
DEFAULT_TOOL_TIMEOUT: Final = 60.0
"""Seconds one tool call may take (Codex's default)."""
MAX_TOOL_NAME: Final = 64
"""The longest tool name a provider accepts; longer ``NAME__TOOL`` names are cut."""

McpApproval: TypeAlias = Literal["ask", "auto"]
"""``ask``: a call is asked about before it runs (the default); ``auto``: it just runs."""

_NAME: Final = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]|_(?!_))*")
_VARIABLE: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_HEADER: Final = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_TOOL_CHARS: Final = re.compile(r"[^A-Za-z0-9_-]")
_APPROVALS: Final = ("ask", "auto")
_COMMON_KEYS: Final = (
    "enabled",
    "startup_timeout_sec",
    "tool_timeout_sec",
    "approval",
    "tool_approval",
)
_STDIO_KEYS: Final = ("command", "args", "env", "cwd", *_COMMON_KEYS)
_HTTP_KEYS: Final = ("url", "headers", "http_headers", "bearer_token_env_var", *_COMMON_KEYS)
_MAX_SECONDS: Final = 86_400.0


def _fail(detail: str, server: str | None = None) -> McpError:
    return McpError("MCP_CONFIG_INVALID", detail, server=server)


def _empty() -> Mapping[str, str]:
    return MappingProxyType({})


def _empty_approvals() -> Mapping[str, McpApproval]:
    return MappingProxyType({})


def _string_map(value: object, names: re.Pattern[str], forbidden: str) -> bool:
    """Whether ``value`` (``env``, ``headers``) maps names that ``names`` matches to strings
    holding none of the characters ``forbidden``."""
    return isinstance(value, Mapping) and all(
        isinstance(key, str)
        and names.fullmatch(key)
        and isinstance(text, str)
        and not any(char in text for char in forbidden)
        for key, text in cast("Mapping[object, object]", value).items()
    )


def _check_common(server: McpStdioServer | McpHttpServer) -> None:
    """Check what both kinds of server share, and freeze it (a read-only ``tool_approval``,
    ``float`` timeouts)."""
    name = server.name
    if not isinstance(cast("object", name), str) or len(name) > 32 or not _NAME.fullmatch(name):
        raise _fail(
            "an MCP server name is 1-32 letters, digits, '-' and single '_' "
            "(its tools are offered as NAME__TOOL)"
        )
    for label, value in (
        ("startup_timeout_sec", server.startup_timeout),
        ("tool_timeout_sec", server.tool_timeout),
    ):
        if type(value) not in (int, float) or not 0 < value <= _MAX_SECONDS:
            raise _fail(f"'{name}.{label}' must be a number of seconds from 0 to 86400", name)
    if server.approval not in _APPROVALS:
        raise _fail(f'\'{name}.approval\' must be "ask" or "auto"', name)
    approvals = cast("object", server.tool_approval)
    if not isinstance(approvals, Mapping) or not all(
        isinstance(key, str) and key and value in _APPROVALS
        for key, value in cast("Mapping[object, object]", approvals).items()
    ):
        raise _fail(f'\'{name}.tool_approval\' must map tool names to "ask" or "auto"', name)
    if type(cast("object", server.enabled)) is not bool:
        raise _fail(f"'{name}.enabled' must be true or false", name)
    object.__setattr__(server, "tool_approval", MappingProxyType(dict(server.tool_approval)))
    object.__setattr__(server, "startup_timeout", float(server.startup_timeout))
    object.__setattr__(server, "tool_timeout", float(server.tool_timeout))


@dataclass(frozen=True, slots=True, kw_only=True)
class McpStdioServer:
    """An MCP server the runtime runs as a process and talks to over its stdin and stdout.

    ``command`` is the program (looked up on ``PATH``; no shell), ``args`` its arguments,
    ``env`` variables set for it on top of a minimal environment (``HOME``, ``PATH``,
    ``USER``...: the parent's API keys are not passed on), ``cwd`` its working directory
    (``None``: the runtime's). The process runs in its own process group, which is killed
    when the runtime is disposed. See ``McpHttpServer`` for the settings both kinds share.
    Checked on construction (``McpError`` ``MCP_CONFIG_INVALID``).
    """

    name: str
    command: str
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=_empty, repr=False)
    cwd: str | None = None
    enabled: bool = True
    startup_timeout: float = DEFAULT_STARTUP_TIMEOUT
    tool_timeout: float = DEFAULT_TOOL_TIMEOUT
    approval: McpApproval = "ask"
    tool_approval: Mapping[str, McpApproval] = field(default_factory=_empty_approvals)
    type: Literal["stdio"] = "stdio"

    def __post_init__(self) -> None:
        _check_common(self)
        name = self.name
        if (
            not isinstance(cast("object", self.command), str)
            or not self.command.strip()
            or "\0" in self.command
        ):
            raise _fail(f"'{name}.command' must be a program to run", name)
        args = cast("object", self.args)
        if not isinstance(args, tuple | list) or not all(
            isinstance(arg, str) and "\0" not in arg for arg in cast("tuple[object, ...]", args)
        ):
            raise _fail(f"'{name}.args' must be a list of strings", name)
        if not _string_map(self.env, _VARIABLE, "\0"):
            raise _fail(
                f"'{name}.env' must map variable names (letters, digits, '_') to strings", name
            )
        cwd = cast("object", self.cwd)
        if cwd is not None and (not isinstance(cwd, str) or not cwd or "\0" in cwd):
            raise _fail(f"'{name}.cwd' must be a directory path", name)
        object.__setattr__(self, "args", tuple(cast("tuple[str, ...]", args)))
        object.__setattr__(self, "env", MappingProxyType(dict(self.env)))

    def __repr__(self) -> str:
        return (
            f"McpStdioServer(name={self.name!r}, command={self.command!r}, args={self.args!r}, "
            f"env=<{len(self.env)} variable(s): {', '.join(self.env)}>, cwd={self.cwd!r})"
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class McpHttpServer:
    """An MCP server reached over streamable HTTP at ``url`` (``http://`` or ``https://``).

    ``headers`` are sent with every request; ``bearer_token_env_var`` names a variable whose
    value is sent as ``Authorization: Bearer ...`` (read when the server starts). Both kinds
    share: ``enabled`` (``False``: listed, never started), ``startup_timeout`` (seconds to
    connect and list the tools), ``tool_timeout`` (seconds per call), ``approval`` (``"ask"``,
    the default: every call of its tools is asked about first; ``"auto"``: never) and
    ``tool_approval`` (the same, per tool, by the server's own tool name).
    """

    name: str
    url: str
    headers: Mapping[str, str] = field(default_factory=_empty, repr=False)
    bearer_token_env_var: str | None = None
    enabled: bool = True
    startup_timeout: float = DEFAULT_STARTUP_TIMEOUT
    tool_timeout: float = DEFAULT_TOOL_TIMEOUT
    approval: McpApproval = "ask"
    tool_approval: Mapping[str, McpApproval] = field(default_factory=_empty_approvals)
    type: Literal["http"] = "http"

    def __post_init__(self) -> None:
        _check_common(self)
        name = self.name
        if not isinstance(cast("object", self.url), str) or not _is_http_url(self.url):
            raise _fail(f"'{name}.url' must be an http:// or https:// URL with a host", name)
        if not _string_map(self.headers, _HEADER, "\r\n\0"):
            raise _fail(f"'{name}.headers' must map header names to single-line strings", name)
        variable = cast("object", self.bearer_token_env_var)
        if variable is not None and (
            not isinstance(variable, str) or not _VARIABLE.fullmatch(variable)
        ):
            raise _fail(
                f"'{name}.bearer_token_env_var' must be the NAME of an environment variable",
                name,
            )
        object.__setattr__(self, "headers", MappingProxyType(dict(self.headers)))

    def __repr__(self) -> str:
        return (
            f"McpHttpServer(name={self.name!r}, url=<{url_origin(self.url)}>, "
            f"headers=<{len(self.headers)} header(s): {', '.join(self.headers)}>)"
        )


McpServerConfig: TypeAlias = McpStdioServer | McpHttpServer
"""A configured MCP server: ``type`` is ``"stdio"`` or ``"http"``."""


def _is_http_url(url: str) -> bool:
    if any(char.isspace() or char == "\0" for char in url):
        return False
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname) and port != 0


def url_origin(url: str) -> str:
    """``scheme://host[:port]`` of ``url`` only, what a repr or a message may show: a path or
    query may carry a token."""
    parts = urllib.parse.urlsplit(url)
    port = f":{parts.port}" if parts.port is not None else ""
    return f"{parts.scheme}://{parts.hostname}{port}"


def mcp_tool_name(server: str, tool: str) -> str:
    """The name a server's tool is offered as: ``SERVER__TOOL``, each character a provider
    does not accept in a tool name replaced by ``_``, cut to 64 characters."""
    return f"{server}__{_TOOL_CHARS.sub('_', tool)}"[:MAX_TOOL_NAME]


def mcp_approval(servers: tuple[McpServerConfig, ...], name: str) -> McpApproval | None:
    """Whether a call of the tool offered as ``name`` is asked about: the server's
    ``tool_approval`` for that tool, else its ``approval``; ``None`` when ``name`` is not a
    tool of one of ``servers``."""
    for server in servers:
        if name.startswith(f"{server.name}__"):
            for tool, approval in server.tool_approval.items():
                if mcp_tool_name(server.name, tool) == name:
                    return approval
            return server.approval
    return None


# --- [mcp_servers.NAME] ----------------------------------------------------------------------


def parse_mcp_servers(value: object) -> tuple[McpServerConfig, ...]:
    """The servers of a parsed ``mcp_servers`` TOML table, in the file's order. Raises
    ``McpError`` (``MCP_CONFIG_INVALID``) naming the dotted key of the first problem."""
    if not isinstance(value, dict):
        raise _fail("'mcp_servers' must be a table of [mcp_servers.NAME] tables")
    servers: list[McpServerConfig] = []
    for name, entry in cast("dict[object, object]", value).items():
        if not isinstance(name, str) or len(name) > 32 or not _NAME.fullmatch(name):
            raise _fail(
                "'mcp_servers': a server name is 1-32 letters, digits, '-' and single '_' "
                "(its tools are offered as NAME__TOOL)"
            )
        servers.append(_server(name, entry))
    return tuple(servers)


def _is_table(value: object) -> TypeGuard[dict[str, object]]:
    """``isinstance(value, dict)``: a TOML table (``tomllib`` makes ``str`` keys)."""
    return isinstance(value, dict)


def _server(name: str, entry: object) -> McpServerConfig:
    key = f"mcp_servers.{name}"
    if not _is_table(entry):
        raise _fail(f"'{key}' must be a table", name)
    table = entry
    if ("command" in table) == ("url" in table):
        raise _fail(
            f"'{key}' needs exactly one of 'command' (stdio) or 'url' (streamable HTTP)", name
        )
    allowed = _STDIO_KEYS if "command" in table else _HTTP_KEYS
    for field_name in table:
        if field_name not in allowed:
            shown = field_name if _NAME.fullmatch(field_name) and len(field_name) <= 40 else "…"
            raise _fail(f"unknown key '{key}.{shown}' (known here: {', '.join(allowed)})", name)
    common: dict[str, object] = {
        "enabled": table.get("enabled", True),
        "startup_timeout": _number(table.get("startup_timeout_sec", DEFAULT_STARTUP_TIMEOUT)),
        "tool_timeout": _number(table.get("tool_timeout_sec", DEFAULT_TOOL_TIMEOUT)),
        "approval": table.get("approval", "ask"),
        "tool_approval": table.get("tool_approval", {}),
    }
    try:
        if "command" in table:
            args = table.get("args", [])
            return McpStdioServer(
                name=name,
                command=cast("str", table["command"]),
                args=cast(
                    "tuple[str, ...]",
                    tuple(cast("list[object]", args)) if isinstance(args, list) else args,
                ),
                env=cast("Mapping[str, str]", table.get("env", {})),
                cwd=cast("str | None", table.get("cwd")),
                **common,  # pyright: ignore[reportArgumentType] - each value checked above
            )
        if "headers" in table and "http_headers" in table:
            raise _fail(f"'{key}' takes 'headers' or 'http_headers', not both", name)
        return McpHttpServer(
            name=name,
            url=cast("str", table["url"]),
            headers=cast("Mapping[str, str]", table.get("headers", table.get("http_headers", {}))),
            bearer_token_env_var=cast("str | None", table.get("bearer_token_env_var")),
            **common,  # pyright: ignore[reportArgumentType] - as above
        )
    except McpError as error:
        raise _fail(error.message.replace(f"'{name}.", f"'{key}.", 1), name) from None


def _number(value: object) -> object:
    """A TOML number as it is, except NaN and infinities, which no check lets through."""
    if type(value) is float and not math.isfinite(value):
        return -1.0
    return value
