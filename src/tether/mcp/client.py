"""Connections to MCP servers through the official ``mcp`` SDK (the ``tether[mcp]`` extra).

``McpServer`` is one configured server and its lifecycle:

* ``start()`` connects (a stdio server's process is started in its own process group; an
  HTTP server's session is opened), initializes and lists the tools, all within the server's
  ``startup_timeout`` and cancellable: a cancelled or failed start leaves nothing running.
  A failure is ``McpError`` naming the server: ``MCP_SERVER_START_FAILED`` (with the last
  line the server wrote to stderr, the values of its ``env`` and ``headers`` blanked out),
  ``MCP_SERVER_TIMEOUT`` or ``MCP_NOT_INSTALLED``.
* ``call(tool, arguments)`` calls one tool and returns its result as text (text blocks
  joined; other blocks described; structured content as JSON when there is no text). A
  result the server marks as an error is ``MCP_TOOL_ERROR``; no answer within
  ``tool_timeout`` is ``MCP_TOOL_TIMEOUT``; a protocol error ``MCP_CALL_FAILED``. Each call
  runs on a task of its own, so a cancelled call (the run's abort) cancels the request
  (the server is sent ``notifications/cancelled``) and nothing is left waiting.
* A server that dies (its process exits, its connection ends) is ``died``: calls in flight
  fail ``MCP_SERVER_DIED``, and the next call starts it again (at most
  ``MCP_MAX_RESTARTS`` times in the server's life; then calls keep failing
  ``MCP_SERVER_DIED``).
* ``notifications/tools/list_changed`` makes the server list its tools again; then
  ``on_tools_changed`` is called.
* ``stop()`` closes the session and, for a stdio server, closes its stdin, waits briefly,
  then kills its process group (the SDK's shutdown; every wait bounded). Idempotent.

``tether.mcp.server_group.McpServers`` starts a group concurrently (each one's failure
recorded, the others still start) and offers their tools as ``ToolDefinition`` values named
``SERVER__TOOL``; ``tether.mcp.sdk_support`` holds what this module does around the SDK.

The SDK is imported only when a server starts: ``import tether.mcp`` does not import it.
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias, cast

from tether._base.dataclass import dataclass
from tether.jsonvalue import JsonObject
from tether.mcp.config import McpServerConfig, mcp_tool_name, url_origin
from tether.mcp.errors import McpError, McpErrorCode
from tether.mcp.sdk_support import (
    STDERR_TAIL,
    describe_error,
    http_transport,
    import_sdk,
    result_text,
    settle,
)

if TYPE_CHECKING:
    pass

__all__ = [
    "MCP_MAX_RESTARTS",
    "McpServer",
    "McpServerState",
    "McpToolInfo",
]

MCP_MAX_RESTARTS: Final = 3
"""How many times a server that died is started again (at its next call) before its calls
keep failing ``MCP_SERVER_DIED``."""

McpServerState: TypeAlias = Literal[
    "disabled", "stopped", "starting", "running", "died", "failed", "closed"
]
"""``disabled``: ``enabled = false``; ``stopped``: not started yet; ``failed``: the last
start failed (``error``); ``died``: it ended after it started; ``closed``: ``stop()`` ran."""


@dataclass(frozen=True, slots=True, kw_only=True)
class McpToolInfo:
    """A tool a server offers: its ``name`` on the server, the ``offered_as`` name
    (``SERVER__TOOL``), its description and its input JSON Schema."""

    name: str
    offered_as: str
    description: str
    input_schema: JsonObject


def _leaf(error: BaseException) -> BaseException:
    """The first real error inside (possibly nested) exception groups."""
    current: object = error
    while isinstance(current, BaseExceptionGroup):
        inner = cast("tuple[BaseException, ...]", current.exceptions)
        if not inner:
            break
        current = inner[0]
    return cast("BaseException", current)


class McpServer:
    """One MCP server and its connection (see the module docstring). ``cwd`` is where a
    stdio server runs when its config has no ``cwd``; ``on_tools_changed`` is called after
    the server's tool list changed and was listed again, ``on_died`` when it ended after it
    had started (neither may block or raise)."""

    def __init__(
        self,
        config: McpServerConfig,
        *,
        cwd: str | None = None,
        on_tools_changed: Callable[[McpServer], None] | None = None,
        on_died: Callable[[McpServer], None] | None = None,
    ) -> None:
        self.config: Final = config
        self._on_died = on_died
        self._cwd = cwd
        self._on_tools_changed = on_tools_changed
        self._state: McpServerState = "stopped" if config.enabled else "disabled"
        self._error: McpError | None = None
        self._tools: tuple[McpToolInfo, ...] = ()
        self._session: Any = None
        self._owner: asyncio.Task[None] | None = None
        self._closing: asyncio.Event | None = None
        self._calls: set[asyncio.Task[Any]] = set()
        self._restarts = 0
        self._starting: asyncio.Task[None] | None = None
        self._refresh: asyncio.Task[None] | None = None
        self._stale = False  # a tools/list_changed not listed yet
        self._scope: Any = None  # the owner task's anyio cancel scope, while it runs

    @property
    def name(self) -> str:
        """The server's name (``[mcp_servers.NAME]``)."""
        return self.config.name

    @property
    def state(self) -> McpServerState:
        """See ``McpServerState``."""
        return self._state

    @property
    def error(self) -> McpError | None:
        """Why the last start failed, or why the server died."""
        return self._error

    @property
    def tools(self) -> tuple[McpToolInfo, ...]:
        """The tools it offered at its last listing."""
        return self._tools

    @property
    def restarts(self) -> int:
        """How many times it was started again after dying."""
        return self._restarts

    def __repr__(self) -> str:
        return f"<McpServer {self.name!r} {self._state}>"

    # -- start --------------------------------------------------------------------------------

    async def start(self) -> None:
        """Connect and list the tools (see the module docstring); raises ``McpError``."""
        if self._state == "disabled":
            return
        if self._state == "closed":
            raise McpError(
                "MCP_SERVER_STOPPED", f"MCP server '{self.name}' was stopped", server=self.name
            )
        if self._state == "running":
            return
        self._state = "starting"
        try:
            await import_sdk()
        except ImportError:
            self._state = "failed"
            self._error = McpError(
                "MCP_NOT_INSTALLED",
                f"MCP server '{self.name}' needs the MCP SDK, which is not installed",
                server=self.name,
            )
            raise self._error from None
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[tuple[McpToolInfo, ...]] = loop.create_future()
        closing = self._closing = asyncio.Event()
        stderr = tempfile.TemporaryFile(  # noqa: SIM115 - closed when the connection ends
            mode="w+", encoding="utf-8", errors="replace"
        )
        owner = self._owner = asyncio.ensure_future(self._serve(ready, closing, stderr))
        try:
            try:
                async with asyncio.timeout(self.config.startup_timeout):
                    await asyncio.wait((ready, owner), return_when=asyncio.FIRST_COMPLETED)
            except TimeoutError:
                raise McpError(
                    "MCP_SERVER_TIMEOUT",
                    f"MCP server '{self.name}' did not start within "
                    f"{self.config.startup_timeout:g} seconds",
                    server=self.name,
                ) from None
            if not ready.done():  # the owner ended before it was ready
                ready.set_exception(self._start_failure(None, stderr))
            self._tools = ready.result()
        except BaseException as error:
            closing.set()
            self._cancel_owner(owner)
            await settle(owner)
            self._owner = None
            self._session = None
            if ready.done() and not ready.cancelled():
                ready.exception()  # retrieved: raised below or replaced
            self._state = "failed"
            if isinstance(error, McpError):
                self._error = error
            stderr.close()
            raise
        self._state = "running"
        self._error = None

    def _mark_died(self) -> None:
        """A running server's connection ended: calls fail, the next one restarts it."""
        if self._state == "running":
            self._state = "died"
            self._session = None
            self._error = McpError(
                "MCP_SERVER_DIED", f"MCP server '{self.name}' exited", server=self.name
            )
            if self._on_died is not None:
                self._on_died(self)

    def _cancel_owner(self, owner: asyncio.Task[None]) -> None:
        """Cancel the owner through its anyio scope (the SDK's shielded shutdown then still
        runs); a task that has not entered its scope yet is cancelled directly."""
        scope = self._scope
        if scope is not None:
            scope.cancel()
        else:
            owner.cancel()

    def _start_failure(self, error: BaseException | None, stderr: Any) -> McpError:
        detail = "" if error is None else f": {describe_error(_leaf(error))}"
        tail = self._stderr_tail(stderr)
        if tail:
            detail += f" (its stderr: {tail})"
        what = (
            f"its command '{self.config.command}'"
            if self.config.type == "stdio"
            else f"its url at {url_origin(self.config.url)}"
        )
        return McpError(
            "MCP_SERVER_START_FAILED",
            self._redact(f"MCP server '{self.name}' did not start ({what}){detail}"),
            server=self.name,
        )

    def _stderr_tail(self, stderr: Any) -> str:
        try:
            stderr.flush()
            stderr.seek(0)
            lines = [line.strip() for line in stderr.read().splitlines() if line.strip()]
        except (OSError, ValueError):
            return ""
        return lines[-1][-STDERR_TAIL:] if lines else ""

    def _redact(self, text: str) -> str:
        """``text`` with every value of the server's ``env`` or ``headers`` blanked out."""
        config = self.config
        values = config.env.values() if config.type == "stdio" else config.headers.values()
        for value in sorted(values, key=len, reverse=True):
            if len(value) >= 4:
                text = text.replace(value, "<hidden>")
        return text

    async def _serve(
        self, ready: asyncio.Future[tuple[McpToolInfo, ...]], closing: asyncio.Event, stderr: Any
    ) -> None:
        """The connection's own task: it enters and leaves every SDK context (anyio wants
        them in one task), then waits until the server dies or ``closing`` is set."""
        import anyio

        try:
            with anyio.CancelScope() as scope:
                self._scope = scope
                await self._connect(ready, closing, stderr)
        except Exception as error:
            if not ready.done():
                ready.set_exception(self._start_failure(error, stderr))
        finally:
            self._scope = None
            self._session = None
            if ready.done():
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    ready.exception()
            self._mark_died()
            with contextlib.suppress(OSError):
                stderr.close()

    async def _connect(
        self, ready: asyncio.Future[tuple[McpToolInfo, ...]], closing: asyncio.Event, stderr: Any
    ) -> None:
        import anyio

        from mcp import ClientSession

        async with contextlib.AsyncExitStack() as stack:
            read, write = await stack.enter_async_context(self._transport(stderr))
            forward, receive = anyio.create_memory_object_stream[Any](0)
            group = await stack.enter_async_context(anyio.create_task_group())
            stack.callback(group.cancel_scope.cancel)

            async def relay() -> None:
                # What the transport reads, passed on; its end is the server's death.
                async with forward:
                    async for item in read:
                        await forward.send(item)
                closing.set()

            group.start_soon(relay)
            session = await stack.enter_async_context(
                ClientSession(receive, write, message_handler=self._on_message)
            )
            await session.initialize()
            tools = await self._list(session)
            self._session = session
            if not ready.done():
                ready.set_result(tools)
            await closing.wait()
            self._session = None

    def _transport(self, stderr: Any) -> Any:
        config = self.config
        if config.type == "stdio":
            from mcp.client.stdio import StdioServerParameters, stdio_client

            parameters = StdioServerParameters(
                command=config.command,
                args=list(config.args),
                env=dict(config.env),
                cwd=config.cwd if config.cwd is not None else self._cwd,
            )
            return stdio_client(parameters, errlog=stderr)
        return http_transport(config)

    async def _list(self, session: Any) -> tuple[McpToolInfo, ...]:
        tools: list[McpToolInfo] = []
        seen: set[str] = set()
        cursor: str | None = None
        from mcp.types import PaginatedRequestParams

        while True:
            params = None if cursor is None else PaginatedRequestParams(cursor=cursor)
            result = await session.list_tools(params=params)
            for tool in result.tools:
                offered = mcp_tool_name(self.name, tool.name)
                if offered in seen:
                    continue  # two names that differ only in characters a provider refuses
                seen.add(offered)
                schema: object = tool.input_schema
                try:
                    frozen = JsonObject(cast("dict[str, Any]", schema))
                except (TypeError, ValueError):
                    frozen = JsonObject({"type": "object"})
                description = (tool.description or "").strip() or f"{tool.name} ({self.name})"
                tools.append(
                    McpToolInfo(
                        name=tool.name,
                        offered_as=offered,
                        description=description,
                        input_schema=frozen,
                    )
                )
            cursor = result.next_cursor
            if not cursor or len(tools) > 10_000:
                return tuple(tools)

    async def _on_message(self, message: Any) -> None:
        from mcp.types import ServerNotification, ToolListChangedNotification

        inner = (
            getattr(message, "root", message)
            if isinstance(message, ServerNotification)
            else message
        )
        if isinstance(inner, ToolListChangedNotification):
            self._stale = True  # a change during a listing is listed again after it
            if self._refresh is None:
                self._refresh = asyncio.ensure_future(self._relist())

    async def _relist(self) -> None:
        try:
            while self._stale and self._session is not None:
                self._stale = False
                with contextlib.suppress(Exception):  # a failed listing keeps the tools known
                    async with asyncio.timeout(self.config.startup_timeout):
                        self._tools = await self._list(self._session)
                    if self._on_tools_changed is not None:
                        self._on_tools_changed(self)
        finally:
            self._refresh = None

    # -- calls ---------------------------------------------------------------------------------

    async def call(self, tool: str, arguments: Mapping[str, Any]) -> str:
        """Call ``tool`` (its name on the server) and return its result as text; see the
        module docstring for the errors (``McpError``)."""
        task = asyncio.ensure_future(self._call(tool, dict(arguments)))
        self._calls.add(task)
        task.add_done_callback(self._calls.discard)
        try:
            return await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if task.cancelled() and current is not None and not current.cancelling():
                # Not this caller's cancellation: stop() ended the call.
                raise self._failure("MCP_SERVER_STOPPED", "was stopped during the call") from None
            task.cancel()
            raise

    async def _call(self, tool: str, arguments: dict[str, Any]) -> str:
        session = await self._usable()
        from mcp.types import CONNECTION_CLOSED, REQUEST_TIMEOUT, CallToolResult

        from mcp import MCPError

        try:
            result = await session.call_tool(
                tool, arguments, read_timeout_seconds=self.config.tool_timeout
            )
        except MCPError as error:
            if self._state == "closed":
                raise self._failure("MCP_SERVER_STOPPED", "was stopped during the call") from None
            if error.code == CONNECTION_CLOSED or self._session is not session:
                self._mark_died()
                raise self._failure("MCP_SERVER_DIED", "exited during the call") from None
            if error.code == REQUEST_TIMEOUT:
                raise self._failure(
                    "MCP_TOOL_TIMEOUT",
                    f"tool '{tool}' did not answer within {self.config.tool_timeout:g} seconds",
                ) from None
            raise self._failure("MCP_CALL_FAILED", f"tool '{tool}': {error.message}") from None
        except McpError:
            raise
        except Exception as error:
            if self._session is not session or self._state == "died":
                raise self._failure("MCP_SERVER_DIED", "exited during the call") from None
            raise self._failure(
                "MCP_CALL_FAILED", f"tool '{tool}': {describe_error(_leaf(error))}"
            ) from None
        if not isinstance(result, CallToolResult):
            raise self._failure("MCP_CALL_FAILED", f"tool '{tool}' needs input tether cannot give")
        text = result_text(result)
        if result.is_error:
            raise self._failure("MCP_TOOL_ERROR", f"tool '{tool}': {text or 'failed'}")
        return text

    def _failure(self, code: McpErrorCode, detail: str) -> McpError:
        return McpError(
            code, self._redact(f"{code}: MCP server '{self.name}' {detail}"), server=self.name
        )

    async def _usable(self) -> Any:
        """The live session, the server started again first when it died (or when starting
        it again after a death failed: a server that went away may come back)."""
        if self._state == "died" or (self._state == "failed" and self._restarts):
            if self._restarts >= MCP_MAX_RESTARTS:
                raise self._failure(
                    "MCP_SERVER_DIED", f"exited and was restarted {self._restarts} times"
                )
            if self._starting is None:
                self._restarts += 1
                self._starting = asyncio.ensure_future(self._restart())
            await asyncio.shield(self._starting)
        session = self._session
        if self._state != "running" or session is None:
            if self._state == "closed":
                raise self._failure("MCP_SERVER_STOPPED", "was stopped")
            error = self._error
            if error is not None:
                raise McpError(error.code, f"{error.code}: {error.message}", server=self.name)
            raise self._failure("MCP_SERVER_DIED", "is not running")
        return session

    async def _restart(self) -> None:
        try:
            old = self._owner
            if old is not None:
                await settle(old)
            with contextlib.suppress(McpError):
                await self.start()
        finally:
            self._starting = None

    # -- stop ----------------------------------------------------------------------------------

    async def stop(self) -> None:
        """Stop the server (see the module docstring); idempotent, never raises an
        ``McpError``."""
        if self._state == "disabled":
            return
        self._state = "closed"
        for task in (self._starting, self._refresh):
            if task is not None:
                task.cancel()
        if self._closing is not None:
            self._closing.set()
        owner = self._owner
        for task in [t for t in (owner, self._starting, self._refresh) if t is not None]:
            await settle(task)
        # The session is closed: calls in flight fail; one still waiting is cancelled.
        for task in tuple(self._calls):
            task.cancel()
            await settle(task)
        self._owner = None
        self._session = None
