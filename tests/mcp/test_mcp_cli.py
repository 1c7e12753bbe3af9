"""``tether mcp list`` and MCP tools in ``tether run -p``, as a person runs them: the
installed console script as a real subprocess, a config file with ``[mcp_servers.NAME]``
tables, the real ``mcp-server-time`` over stdio, a scripted model server on 127.0.0.1. The
values of ``env`` and ``headers`` appear in no byte the command writes, nor in the session."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from cli_support import assert_quiet, child_env, run_tether
from run_model_support import MODEL, text_reply, tool_reply
from servers.replay import ReplayServer

BIN = Path(sys.executable).parent
ENV_SECRET = "env-s3cr3t-0123456789"
HEADER_SECRET = "hdr-s3cr3t-9876543210"


def write_config(tmp_path: Path, *tables: str) -> None:
    (tmp_path / "config.toml").write_text("\n".join(tables), encoding="utf-8")


TIME = f"""
[mcp_servers.time]
command = "{BIN / "mcp-server-time"}"
args = ["--local-timezone", "UTC"]
env = {{ SECRET_TOKEN = "{ENV_SECRET}" }}
"""
BROKEN = """
[mcp_servers.broken]
command = "no-such-mcp-server-here"
"""
OFF = f"""
[mcp_servers.docs]
url = "http://127.0.0.1:9/mcp?token=q-s3cr3t"
headers = {{ "X-Key" = "{HEADER_SECRET}" }}
enabled = false
"""


def assert_no_secret(*outputs: bytes) -> None:
    for output in outputs:
        for secret in (ENV_SECRET, HEADER_SECRET, "q-s3cr3t"):
            assert secret.encode() not in output, f"{secret} was written"


async def test_mcp_list_shows_servers_state_and_tools(tmp_path: Path) -> None:
    write_config(tmp_path, TIME, BROKEN, OFF)
    completed = await run_tether("mcp", "list", env=child_env(tmp_path), bound=60)
    assert completed.returncode == 1, completed.err  # one server did not start
    assert_quiet(completed.stderr)
    assert_no_secret(completed.stdout, completed.stderr)
    lines = completed.out.splitlines()
    assert lines[0].startswith("time  stdio  running, 2 tool(s)  ")
    assert "  time__get_current_time  Get current time in a specific timezone" in lines
    assert "  time__convert_time  Convert time between timezones" in lines
    assert "broken  stdio  failed  no-such-mcp-server-here" in lines
    assert any(line.startswith("  [MCP_SERVER_START_FAILED] MCP server 'broken'") for line in lines)
    assert any(line.startswith("  hint: ") for line in lines)
    assert "docs  http  disabled  http://127.0.0.1:9" in lines


async def test_mcp_list_json(tmp_path: Path) -> None:
    write_config(tmp_path, TIME, OFF)
    completed = await run_tether("mcp", "list", "--json", env=child_env(tmp_path), bound=60)
    assert completed.returncode == 0, completed.err
    assert_no_secret(completed.stdout, completed.stderr)
    time, docs = completed.events()
    assert time["state"] == "running"
    assert time["env"] == ["SECRET_TOKEN"]
    assert [tool["name"] for tool in time["tools"]] == [
        "time__get_current_time",
        "time__convert_time",
    ]
    assert docs == {
        "name": "docs",
        "type": "http",
        "state": "disabled",
        "where": "http://127.0.0.1:9",
        "approval": "ask",
        "tools": [],
        "headers": ["X-Key"],
    }


async def test_mcp_list_without_servers_and_with_a_bad_table(tmp_path: Path) -> None:
    completed = await run_tether("mcp", "list", env=child_env(tmp_path))
    assert completed.returncode == 0
    assert completed.out.startswith("no MCP servers in ")
    write_config(tmp_path, f'[mcp_servers.time]\ncommand = "x"\ntoken = "{ENV_SECRET}"\n')
    completed = await run_tether("mcp", "list", env=child_env(tmp_path))
    assert completed.returncode == 2
    assert "[CLI_CONFIG_INVALID]" in completed.err
    assert "unknown key 'mcp_servers.time.token'" in completed.err
    assert_no_secret(completed.stdout, completed.stderr)


async def test_tether_run_calls_an_mcp_tool_in_an_agent_run(tmp_path: Path) -> None:
    write_config(tmp_path, TIME)
    async with ReplayServer() as server:
        server.respond(tool_reply(("call-1", "time__get_current_time", {"timezone": "UTC"})))
        server.respond(text_reply("It is late."))
        session = tmp_path / "session.jsonl"
        completed = await run_tether(
            "run",
            "--model",
            MODEL,
            "--base-url",
            server.url,
            "-p",
            "What time is it?",
            "--json",
            "--session",
            str(session),
            env=child_env(tmp_path),
            bound=60,
        )
    assert completed.returncode == 0, completed.err
    assert_no_secret(completed.stdout, completed.stderr, session.read_bytes())
    first, second = (request.json for request in server.requests)
    offered = {tool["function"]["name"]: tool["function"] for tool in first["tools"]}
    assert offered["time__get_current_time"]["parameters"]["required"] == ["timezone"]
    answer = second["messages"][-1]
    assert answer["role"] == "tool"
    assert json.loads(answer["content"])["timezone"] == "UTC"


async def test_tether_rpc_asks_its_client_before_an_mcp_tool_runs(tmp_path: Path) -> None:
    from typing import Literal

    from cli_support import TETHER
    from tether.coding.rpc_client import RpcApprovalRequest, RpcClient, RpcNotice

    write_config(tmp_path, TIME, BROKEN)
    asked: list[str] = []

    async def approve(request: RpcApprovalRequest) -> Literal["yes", "no", "always"]:
        asked.append(request.name)
        return "yes"

    async with ReplayServer() as server:
        server.respond(tool_reply(("call-1", "time__get_current_time", {"timezone": "UTC"})))
        server.respond(text_reply("It is late."))
        async with await RpcClient.start(
            "--model",
            MODEL,
            "--base-url",
            server.url,
            env=child_env(tmp_path),
            cwd=tmp_path,
            command=[str(TETHER)],
        ) as client:
            lines = await client.run("What time is it?", approve)
            messages = await client.get_messages()
        assert await client.close() == 0
    assert asked == ["time__get_current_time"]
    notices = [line.text for line in lines if isinstance(line, RpcNotice)]
    assert any(text.startswith("[MCP_SERVER_START_FAILED] MCP server 'broken'") for text in notices)
    (result,) = [m for m in messages if m["role"] == "toolResult"]
    assert json.loads(result["content"])["timezone"] == "UTC"
    assert_no_secret(json.dumps(messages).encode(), json.dumps(notices).encode())
