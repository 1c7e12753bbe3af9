"""MCP: the ``[mcp_servers.NAME]`` config, and the client against real servers.

Real servers nobody here wrote run over stdio (``mcp-server-time``, ``mcp-server-git``,
installed from the lock files); what they cannot do on cue (die mid-call, block until
cancelled, change their tool list) a small server built with the SDK does
(``tests/servers/mcp_toy.py``), over stdio and over streamable HTTP on 127.0.0.1. Processes
are found through ``/proc`` and checked dead as in ``tests/tools/test_process.py``.
"""

# Tests inspect real temp directories and /proc synchronously on purpose.
# ruff: noqa: ASYNC221

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal as signals
import socket
import subprocess
import sys
import tomllib
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import cast, get_args

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_support import BIN, Hanging, children, only_new, time_server, toy_stdio
from process_support import assert_not_running, call, error_message, wait_dead
from tether import AbortController, AbortError, JsonObject, ToolCall, ToolRegistry
from tether.mcp import (
    MCP_ERROR_CODES,
    MCP_HINTS,
    McpError,
    McpErrorCode,
    McpHttpServer,
    McpServer,
    McpServers,
    McpStdioServer,
    mcp_approval,
    mcp_tool_name,
    parse_mcp_servers,
)
from tether.tools.execution import execute_tool_call

# -- config ----------------------------------------------------------------------------------

EXAMPLE = """
[mcp_servers.time]
command = "mcp-server-time"
args = ["--local-timezone", "UTC"]
env = { TZ = "UTC", SECRET_TOKEN = "s3cr3t-value" }
approval = "auto"

[mcp_servers.docs]
url = "http://127.0.0.1:8000/mcp"
headers = { "X-Api-Key" = "hdr-s3cr3t" }
bearer_token_env_var = "DOCS_TOKEN"
tool_approval = { search = "auto" }
startup_timeout_sec = 5
tool_timeout_sec = 30
"""


def test_the_example_parses_into_typed_servers() -> None:
    time, docs = parse_mcp_servers(tomllib.loads(EXAMPLE)["mcp_servers"])
    assert isinstance(time, McpStdioServer)
    assert time.args == ("--local-timezone", "UTC")
    assert dict(time.env) == {"TZ": "UTC", "SECRET_TOKEN": "s3cr3t-value"}
    assert isinstance(docs, McpHttpServer)
    assert docs.startup_timeout == 5.0
    assert docs.tool_timeout == 30.0
    assert docs.bearer_token_env_var == "DOCS_TOKEN"
    shown = repr((time, docs))
    assert "s3cr3t" not in shown
    assert "SECRET_TOKEN" in shown  # the names, never the values
    assert "X-Api-Key" in shown


def test_http_headers_is_codex_spelling_of_headers() -> None:
    (server,) = parse_mcp_servers(
        {"a": {"url": "https://example.com/mcp", "http_headers": {"X-A": "b"}}}
    )
    assert isinstance(server, McpHttpServer)
    assert dict(server.headers) == {"X-A": "b"}


@pytest.mark.parametrize(
    ("table", "names"),
    [
        ({"t": {"command": "x", "comand": "y"}}, "'mcp_servers.t.comand'"),
        ({"t": {"command": "x", "url": "http://h/"}}, "exactly one of"),
        ({"t": {}}, "exactly one of"),
        ({"t": {"url": "ftp://h/"}}, "'mcp_servers.t.url'"),
        ({"t": {"url": "http://h/", "headers": {"X": "a\nb"}}}, "'mcp_servers.t.headers'"),
        ({"t": {"command": "x", "args": "a b"}}, "'mcp_servers.t.args'"),
        ({"t": {"command": "x", "env": {"1A": "v"}}}, "'mcp_servers.t.env'"),
        ({"t": {"command": "x", "approval": "never"}}, "'mcp_servers.t.approval'"),
        ({"t": {"command": "x", "startup_timeout_sec": 0}}, "startup_timeout_sec"),
        ({"t": {"command": "x", "tool_timeout_sec": float("nan")}}, "tool_timeout_sec"),
        ({"t": {"command": "x", "enabled": 1}}, "'mcp_servers.t.enabled'"),
        ({"a__b": {"command": "x"}}, "single '_'"),
        ({"t": {"command": "x", "tool_approval": {"a": "yes"}}}, "tool_approval"),
        ({"t": "x"}, "'mcp_servers.t' must be a table"),
        ({"t": {"command": " "}}, "'mcp_servers.t.command'"),
        ({"t": {"command": "x", "cwd": ""}}, "'mcp_servers.t.cwd'"),
        ({"t": {"url": "http://h/", "bearer_token_env_var": "1X"}}, "bearer_token_env_var"),
        ({"t": {"url": "http://h /"}}, "'mcp_servers.t.url'"),
        ({"t": {"url": "http://h:99999/"}}, "'mcp_servers.t.url'"),
        ({"t": {"url": "http://h/", "headers": {}, "http_headers": {}}}, "not both"),
        (["t"], "'mcp_servers' must be a table"),
    ],
)
def test_a_bad_table_is_a_typed_error_naming_the_key(table: object, names: str) -> None:
    with pytest.raises(McpError) as caught:
        parse_mcp_servers(table)
    assert caught.value.code == "MCP_CONFIG_INVALID"
    assert names in caught.value.message
    assert caught.value.hint == MCP_HINTS["MCP_CONFIG_INVALID"]


def test_a_server_built_in_python_is_checked_too() -> None:
    with pytest.raises(McpError) as caught:
        McpStdioServer(name="a b", command="x")
    assert caught.value.code == "MCP_CONFIG_INVALID"
    assert "NAME__TOOL" in caught.value.message


def test_every_code_has_a_hint() -> None:
    assert get_args(McpErrorCode) == MCP_ERROR_CODES
    assert set(MCP_HINTS) == set(MCP_ERROR_CODES)


_values = st.one_of(
    st.text(max_size=8),
    st.integers(),
    st.floats(),
    st.booleans(),
    st.lists(st.text(max_size=4), max_size=3),
    st.dictionaries(st.text(max_size=6), st.text(max_size=8), max_size=3),
)
_keys = st.sampled_from(
    [
        *("command", "args", "env", "cwd", "url", "headers", "http_headers", "approval"),
        *("enabled", "tool_approval", "startup_timeout_sec", "tool_timeout_sec", "x"),
        "bearer_token_env_var",
    ]
)


@given(
    st.dictionaries(st.text(max_size=8), st.dictionaries(_keys, _values, max_size=5), max_size=3),
    st.text(alphabet="abcdefghijklmnop0123456789", min_size=12, max_size=20),
)
def test_any_table_is_servers_or_a_typed_error_that_quotes_no_value(
    table: dict[str, dict[str, object]], secret: str
) -> None:
    for entry in table.values():
        for key in ("env", "headers"):
            value = entry.get(key)
            if isinstance(value, dict):
                entry[key] = {**cast("dict[str, object]", value), "K": secret}
    failure: McpError | None = None
    servers: tuple[object, ...] = ()
    try:
        servers = parse_mcp_servers(table)
    except McpError as error:
        failure = error
    if failure is not None:
        assert failure.code == "MCP_CONFIG_INVALID"
        assert secret not in failure.message
        return
    assert [getattr(server, "name", None) for server in servers] == list(table)
    assert secret not in repr(servers)


@given(st.text(max_size=80), st.text(max_size=80))
def test_an_offered_name_is_always_one_a_provider_accepts(tool: str, other: str) -> None:
    name = mcp_tool_name("srv", tool)
    assert re.fullmatch(r"srv__[A-Za-z0-9_-]*", name)
    assert len(name) <= 64
    server = McpStdioServer(name="srv", command="x", tool_approval={other or "t": "auto"})
    assert mcp_approval((server,), name) in ("ask", "auto")


def test_tool_names_and_approvals() -> None:
    time = McpStdioServer(
        name="time", command="x", approval="auto", tool_approval={"convert.time": "ask"}
    )
    git = McpStdioServer(name="git", command="x")
    assert mcp_tool_name("time", "convert.time") == "time__convert_time"
    assert len(mcp_tool_name("s", "x" * 100)) == 64
    assert mcp_approval((time, git), "time__get_current_time") == "auto"
    assert mcp_approval((time, git), "time__convert_time") == "ask"
    assert mcp_approval((time, git), "git__git_status") == "ask"
    assert mcp_approval((time, git), "bash") is None


# -- helpers ---------------------------------------------------------------------------------


# -- real servers over stdio -----------------------------------------------------------------


async def test_time_server_tools_join_a_registry_and_answer() -> None:
    async with McpServers([time_server()]) as servers:
        registry = ToolRegistry(servers.definitions())
        assert set(registry.names) == {"time__get_current_time", "time__convert_time"}
        spec = {spec.name: spec for spec in registry.specs()}["time__get_current_time"]
        assert spec.parameters["required"] == ("timezone",)
        result = await call(registry, "time__get_current_time", timezone="UTC")
        assert not result.is_error
        assert json.loads(result.content)["timezone"] == "UTC"
        failed = await call(registry, "time__get_current_time", timezone="Nowhere/Else")
        assert error_message(failed).startswith("MCP_TOOL_ERROR: MCP server 'time'")


async def test_git_server_over_stdio(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    (repo / "a.txt").write_text("hello\n")
    git = McpStdioServer(
        name="git", command=str(BIN / "mcp-server-git"), args=("--repository", str(repo))
    )
    async with McpServers([git]) as servers:
        registry = ToolRegistry(servers.definitions())
        assert "git__git_status" in registry.names
        result = await call(registry, "git__git_status", repo_path=str(repo))
        assert not result.is_error, result.content
        assert "a.txt" in result.content


async def test_a_server_that_cannot_start_is_named_and_the_others_still_work() -> None:
    broken = McpStdioServer(name="broken", command="no-such-mcp-server-here")
    async with McpServers([broken, time_server()]) as servers:
        (error,) = servers.errors
        assert error.code == "MCP_SERVER_START_FAILED"
        assert error.server == "broken"
        assert "'broken'" in error.message
        assert "not found" in error.message
        assert [server.state for server in servers.servers] == ["failed", "running"]
        registry = ToolRegistry(servers.definitions())
        assert not (await call(registry, "time__get_current_time", timezone="UTC")).is_error


async def test_stderr_in_a_start_failure_never_shows_an_env_value() -> None:
    secret = "tok-9f8e7d6c5b4a"
    script = "import os, sys; sys.stderr.write('bad token ' + os.environ['TOKEN']); sys.exit(2)"
    server = McpStdioServer(
        name="leaky", command=sys.executable, args=("-c", script), env={"TOKEN": secret}
    )
    async with McpServers([server]) as servers:
        (error,) = servers.errors
    assert error.code == "MCP_SERVER_START_FAILED"
    assert "bad token <hidden>" in error.message
    assert secret not in error.message
    assert secret not in repr(error)


async def test_stop_kills_the_server_and_leaves_nothing_running() -> None:
    before = children()
    servers = McpServers([time_server()])
    await servers.start()
    pid = only_new(before)
    await servers.stop()
    await wait_dead(pid)
    assert_not_running(pid)
    assert children() == before
    assert servers.servers[0].state == "closed"
    await servers.stop()  # idempotent


async def test_a_start_that_takes_too_long_is_bounded_and_cleaned_up() -> None:
    before = children()
    sleeper = McpStdioServer(
        name="sleepy",
        command=sys.executable,
        args=("-c", "import time; time.sleep(600)"),
        startup_timeout=0.5,
    )
    async with McpServers([sleeper]) as servers:
        (error,) = servers.errors
        assert error.code == "MCP_SERVER_TIMEOUT"
        assert "'sleepy'" in error.message
    assert children() == before


async def test_a_cancelled_start_leaves_no_process(tmp_path: Path) -> None:
    before = children()
    hanging = Hanging(tmp_path)
    servers = McpServers([hanging.config])
    task = asyncio.ensure_future(servers.start())
    await hanging.up()
    pid = only_new(before)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await wait_dead(pid)
    assert children() == before
    assert servers.servers[0].state == "closed"


async def test_a_killed_server_is_reported_then_restarted_at_the_next_call() -> None:
    before = children()
    died = asyncio.Event()
    servers = McpServers([time_server()], on_died=lambda _server: died.set())
    async with servers:
        server = servers.servers[0]
        registry = ToolRegistry(servers.definitions())
        pid = only_new(before)
        os.killpg(pid, signals.SIGKILL)  # its own process group
        async with asyncio.timeout(20):
            await died.wait()
        assert server.state == "died"
        assert server.error is not None
        assert server.error.code == "MCP_SERVER_DIED"
        result = await call(registry, "time__get_current_time", timezone="UTC")
        assert not result.is_error, result.content
        assert server.restarts == 1
        assert server.state == "running"
        assert only_new(before) != pid
    assert children() == before


async def test_a_server_that_dies_mid_call_fails_the_call_and_comes_back() -> None:
    before = children()
    async with McpServers([toy_stdio()]) as servers:
        server = servers.servers[0]
        registry = ToolRegistry(servers.definitions())
        first = only_new(before)
        died = await call(registry, "toy__die")
        assert error_message(died).startswith("MCP_SERVER_DIED: MCP server 'toy'")
        await wait_dead(first)
        again = await call(registry, "toy__echo", text="back")
        assert again.content == "back"
        assert server.restarts == 1
    assert children() == before


async def test_aborting_a_call_cancels_it_and_the_server_keeps_working() -> None:
    async with McpServers([time_server()]) as servers:
        registry = ToolRegistry(servers.definitions())
        controller = AbortController()
        tool_call = ToolCall(
            id="call-abort",
            name="time__get_current_time",
            arguments=JsonObject({"timezone": "UTC"}),
        )
        running = asyncio.ensure_future(execute_tool_call(registry, tool_call, controller.signal))
        await asyncio.sleep(0)  # the call has started (its request task exists)
        assert servers.servers[0]._calls  # pyright: ignore[reportPrivateUsage]
        controller.abort("stop")
        with pytest.raises(AbortError):
            await running
        result = await call(registry, "time__get_current_time", timezone="UTC")
        assert not result.is_error


async def test_list_changed_refreshes_the_tools() -> None:
    changed = asyncio.Event()
    async with McpServers([toy_stdio()], on_tools_changed=lambda _s: changed.set()) as servers:
        registry = ToolRegistry(servers.definitions())
        assert "toy__late" not in registry.names
        assert (await call(registry, "toy__grow")).content == "grown"
        async with asyncio.timeout(20):
            await changed.wait()
        assert "toy__late" in ToolRegistry(servers.definitions()).names


async def test_a_stopped_server_refuses_calls() -> None:
    servers = McpServers([time_server()])
    await servers.start()
    await servers.servers[0].start()  # already running: nothing happens
    registry = ToolRegistry(servers.definitions())
    await servers.stop()
    result = await call(registry, "time__get_current_time", timezone="UTC")
    assert error_message(result).startswith("MCP_SERVER_STOPPED")
    with pytest.raises(McpError) as caught:
        await servers.servers[0].start()
    assert caught.value.code == "MCP_SERVER_STOPPED"


async def test_a_disabled_server_is_not_started() -> None:
    before = children()
    async with McpServers([time_server(enabled=False)]) as servers:
        assert servers.servers[0].state == "disabled"
        assert servers.definitions() == []
        assert children() == before


# -- streamable HTTP on 127.0.0.1 --------------------------------------------------------------


@contextlib.asynccontextmanager
async def toy_http(port: int = 0) -> AsyncGenerator[str]:
    """The toy server over streamable HTTP on a port of 127.0.0.1 (``port``, or a free one)
    bound before uvicorn starts (connections wait in the backlog: nothing to wait for)."""
    import uvicorn

    from servers.mcp_toy import toy_server

    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(16)
    port = sock.getsockname()[1]
    app = toy_server().streamable_http_app()
    server = uvicorn.Server(uvicorn.Config(app, log_level="error", lifespan="on"))
    task = asyncio.ensure_future(server.serve(sockets=[sock]))
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.should_exit = True
        await task
        sock.close()
        # sse-starlette's per-loop shutdown watcher polls a flag of its own: end it too.
        from sse_starlette.sse import AppStatus

        watchers = [
            other
            for other in asyncio.all_tasks()
            if getattr(other.get_coro(), "__name__", "") == "_shutdown_watcher"
        ]
        AppStatus.should_exit = True
        try:
            await asyncio.gather(*watchers)
        finally:
            AppStatus.should_exit = False


async def test_http_server_headers_calls_errors_and_list_changed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from servers.mcp_toy import TOY as toy

    monkeypatch.setenv("TOY_TOKEN", "bearer-s3cr3t")
    changed = asyncio.Event()
    async with toy_http() as url:
        config = McpHttpServer(
            name="web", url=url, headers={"X-Team": "tools"}, bearer_token_env_var="TOY_TOKEN"
        )
        async with McpServers([config], on_tools_changed=lambda _s: changed.set()) as servers:
            assert servers.errors == ()
            registry = ToolRegistry(servers.definitions())
            assert (await call(registry, "web__echo", text="over http")).content == "over http"
            seen = json.loads((await call(registry, "web__headers")).content)
            assert seen["x-team"] == "tools"
            assert seen["authorization"] == "Bearer bearer-s3cr3t"
            failed = await call(registry, "web__fail")
            assert error_message(failed).startswith("MCP_TOOL_ERROR: MCP server 'web'")
            assert "the toy failed on purpose" in error_message(failed)

            controller = AbortController()
            tool_call = ToolCall(id="call-block", name="web__block", arguments=JsonObject())
            running = asyncio.ensure_future(
                execute_tool_call(registry, tool_call, controller.signal)
            )
            async with asyncio.timeout(20):
                await toy.entered.wait()
            controller.abort("user pressed Esc")
            with pytest.raises(AbortError):
                await running
            async with asyncio.timeout(20):
                await toy.cancelled.wait()  # notifications/cancelled reached the server

            assert (await call(registry, "web__grow")).content == "grown"
            async with asyncio.timeout(20):
                await changed.wait()
            assert "web__late" in ToolRegistry(servers.definitions()).names


async def test_an_http_server_that_goes_away_is_reported_and_found_again() -> None:
    async with toy_http() as url:
        servers = McpServers([McpHttpServer(name="web", url=url, startup_timeout=5)])
        await servers.start()
        registry = ToolRegistry(servers.definitions())
        assert (await call(registry, "web__echo", text="a")).content == "a"
    server = servers.servers[0]
    try:
        gone = await call(registry, "web__echo", text="b")
        assert error_message(gone).startswith("MCP_SERVER_DIED: MCP server 'web'")
        down = await call(registry, "web__echo", text="c")  # a restart, which fails
        assert error_message(down).startswith("MCP_SERVER_START_FAILED: MCP server 'web'")
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        async with toy_http(port):
            back = await call(registry, "web__echo", text="d")
            assert back.content == "d"
            assert server.restarts == 2
    finally:
        await servers.stop()


async def test_an_http_server_that_is_not_there_is_a_start_failure() -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now
    config = McpHttpServer(
        name="gone", url=f"http://127.0.0.1:{port}/mcp", headers={"X-Key": "hdr-s3cr3t-v"}
    )
    async with McpServers([config]) as servers:
        (error,) = servers.errors
    assert error.code == "MCP_SERVER_START_FAILED"
    assert "'gone'" in error.message
    assert f"(its url at http://127.0.0.1:{port})" in error.message  # the origin, no path
    assert "hdr-s3cr3t-v" not in error.message


async def test_a_server_object_is_a_plain_value() -> None:
    server = McpServer(time_server())
    assert server.state == "stopped"
    assert server.tools == ()
    assert "time" in repr(server)
    await server.stop()
    assert server.state == "closed"


# -- the rest of the client's paths ------------------------------------------------------------


def test_results_that_are_not_text_are_described() -> None:
    from mcp.types import CallToolResult

    from tether.mcp.sdk_support import result_text

    assert result_text(CallToolResult(content=[], structured_content={"a": 1})) == '{"a": 1}'
    assert result_text(CallToolResult(content=[])) == ""


async def test_blocks_timeouts_removed_tools_and_stopped_calls() -> None:
    changed = asyncio.Event()
    toy = toy_stdio(tool_timeout=0.5)
    async with McpServers([toy], on_tools_changed=lambda _s: changed.set()) as servers:
        registry = ToolRegistry(servers.definitions())
        media = await call(registry, "toy__media")
        assert media.content.splitlines() == [
            "[image image/png]",
            "[audio audio/wav]",
            "[resource file:///a.txt]",
            "inline text",
            "[resource file:///c.bin]",
        ]
        refused = await call(registry, "toy__refuse")
        assert error_message(refused) == (
            "MCP_CALL_FAILED: MCP server 'toy' tool 'refuse': the toy refuses"
        )
        assert registry.names.count("toy__a_b") == 1  # a.b and a_b: the first is kept
        assert (await call(registry, "toy__a_b")).content == "dotted"
        slow = await call(registry, "toy__block")
        assert error_message(slow).startswith("MCP_TOOL_TIMEOUT: MCP server 'toy' tool 'block'")
        assert (await call(registry, "toy__shrink")).content == "shrunk"
        async with asyncio.timeout(20):
            await changed.wait()
        gone = await call(registry, "toy__echo", text="x")
        assert error_message(gone).startswith("MCP_TOOL_NOT_FOUND: MCP server 'toy'")


async def test_stopping_during_a_call_fails_it_as_stopped() -> None:
    from servers.mcp_toy import TOY as toy

    async with toy_http() as url:
        servers = McpServers([McpHttpServer(name="web", url=url)])
        await servers.start()
        registry = ToolRegistry(servers.definitions())
        running = asyncio.ensure_future(call(registry, "web__block"))
        async with asyncio.timeout(20):
            await toy.entered.wait()
        await servers.stop()
        result = await running
        assert error_message(result).startswith("MCP_SERVER_STOPPED: MCP server 'web'")


async def test_a_server_that_keeps_dying_is_given_up_on() -> None:
    async with McpServers([toy_stdio()]) as servers:
        server = servers.servers[0]
        registry = ToolRegistry(servers.definitions())
        for _ in range(4):  # the first start and three restarts
            assert error_message(await call(registry, "toy__die")).startswith("MCP_SERVER_DIED")
        assert server.restarts == 3
        last = await call(registry, "toy__echo", text="x")
        assert (
            error_message(last)
            == "MCP_SERVER_DIED: MCP server 'toy' exited and was restarted 3 times"
        )


async def test_calls_on_a_server_that_did_not_start_repeat_its_error(tmp_path: Path) -> None:
    script = tmp_path / "not-executable"
    script.write_text("#!/bin/sh\n", encoding="utf-8")
    server = McpServer(McpStdioServer(name="denied", command=str(script)))
    with pytest.raises(McpError) as caught:
        await server.start()
    assert caught.value.code == "MCP_SERVER_START_FAILED"
    assert "may not be run" in caught.value.message
    with pytest.raises(McpError) as again:
        await server.call("anything", {})
    assert again.value.message.startswith("MCP_SERVER_START_FAILED: MCP server 'denied'")
    await server.stop()


async def test_without_the_sdk_a_server_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "mcp.client.stdio", None)
    server = McpServer(time_server())
    with pytest.raises(McpError) as caught:
        await server.start()
    assert caught.value.code == "MCP_NOT_INSTALLED"
    assert "tether[mcp]" in caught.value.hint


def test_two_servers_of_one_name_are_refused() -> None:
    with pytest.raises(McpError) as caught:
        McpServers([time_server(), time_server()])
    assert caught.value.code == "MCP_CONFIG_INVALID"
