"""MCP servers owned by a runtime: started when it is built (a failing one named, the others
working), their tools in the Agent's registry, called in an agent run, refreshed when the
server's tool list changes, stopped (process group dead) when the runtime is disposed or its
construction is cancelled. Real servers: ``mcp-server-time`` and the SDK-built toy server."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from mcp_support import Hanging, children, only_new, time_server, toy_stdio
from process_support import wait_dead
from tether import ScriptedModel, text_reply, tool_call_reply
from tether.agent.runtime import create_runtime
from tether.mcp import McpStdioServer


async def bounded(awaitable: Any) -> Any:
    async with asyncio.timeout(60):
        return await awaitable


def options(cwd: Path, model: object, **extra: Any) -> dict[str, Any]:
    return {
        "cwd": cwd,
        "session": {"path": "session.jsonl", "mode": "create"},
        "model": model,
        **extra,
    }


async def test_a_runtime_starts_its_servers_and_an_agent_run_calls_one(tmp_path: Path) -> None:
    before = children()
    model = ScriptedModel(
        [tool_call_reply(("time__get_current_time", {"timezone": "UTC"})), text_reply("done")]
    )
    broken = McpStdioServer(name="broken", command="no-such-mcp-server-here")
    runtime = await bounded(
        create_runtime(options(tmp_path, model, mcp_servers=(broken, time_server())))
    )
    try:
        assert "time__get_current_time" in runtime.tools.names
        assert "time__get_current_time" in runtime.agent.tool_names
        assert [server.state for server in runtime.mcp_servers] == ["failed", "running"]
        (error,) = runtime.mcp_errors
        assert error.code == "MCP_SERVER_START_FAILED"
        assert error.server == "broken"
        pid = only_new(before)
        result = await bounded(runtime.agent.run("what time is it?"))
        assert result.status == "completed"
        answer = result.messages[-2]
        assert answer.role == "toolResult"
        assert not answer.is_error
        assert json.loads(answer.content)["timezone"] == "UTC"
    finally:
        await bounded(runtime.dispose())
    await wait_dead(pid)
    assert children() == before
    assert [server.state for server in runtime.mcp_servers] == ["closed", "closed"]


async def test_disposing_while_a_call_runs_aborts_it_and_stops_the_server(
    tmp_path: Path,
) -> None:
    before = children()
    model = ScriptedModel([tool_call_reply(("toy__block", {})), text_reply("never")])
    runtime = await bounded(create_runtime(options(tmp_path, model, mcp_servers=(toy_stdio(),))))
    pid = only_new(before)
    stream = runtime.agent.prompt("block")
    async for event in stream:
        if event.type == "tool.started":
            break
    await bounded(runtime.dispose())
    result = await bounded(stream.result)
    assert result.status == "cancelled"
    await wait_dead(pid)
    assert children() == before


async def test_a_cancelled_construction_stops_the_servers_it_started(tmp_path: Path) -> None:
    before = children()
    hanging = Hanging(tmp_path)
    build = asyncio.ensure_future(
        create_runtime(options(tmp_path, ScriptedModel([]), mcp_servers=(hanging.config,)))
    )
    await hanging.up()
    pid = only_new(before)
    build.cancel()
    with pytest.raises(asyncio.CancelledError):
        await build
    await wait_dead(pid)
    assert children() == before
    assert not (tmp_path / "session.jsonl").exists()  # the rollback removed what it made


async def test_list_changed_gives_the_agent_the_new_tools(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            tool_call_reply(("toy__grow", {})),
            text_reply("grown"),
            tool_call_reply(("toy__late", {})),
            text_reply("called"),
        ]
    )
    runtime = await bounded(create_runtime(options(tmp_path, model, mcp_servers=(toy_stdio(),))))
    try:
        assert "toy__late" not in runtime.agent.tool_names
        changed = runtime.mcp_changed
        assert changed is not None
        assert (await bounded(runtime.agent.run("grow"))).status == "completed"
        await bounded(changed.wait())
        assert "toy__late" in runtime.agent.tool_names
        assert "toy__late" in runtime.tools.names
        result = await bounded(runtime.agent.run("call the new one"))
        assert result.messages[-2].content == "late"
    finally:
        await bounded(runtime.dispose())


async def test_bad_mcp_servers_option_is_refused(tmp_path: Path) -> None:
    from tether.agent.runtime import TetherRuntimeError

    with pytest.raises(TetherRuntimeError) as caught:
        await create_runtime(options(tmp_path, ScriptedModel([]), mcp_servers=("time",)))
    assert caught.value.code == "RUNTIME_INVALID_OPTIONS"


# -- the coding session ------------------------------------------------------------------------


def coding_config(tmp_path: Path, model: ScriptedModel, **changes: Any) -> Any:
    from coding_support import TODAY, Choice
    from tether.coding import CodingSessionConfig, SessionPlace

    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    return CodingSessionConfig(
        model=Choice(spec="scripted/a", model=model),
        cwd=project,
        today=TODAY,
        sessions=SessionPlace(directory=tmp_path / "sessions"),
        **changes,
    )


async def test_a_coding_session_asks_before_an_mcp_tool_and_says_what_failed(
    tmp_path: Path,
) -> None:
    from tether.coding import Answer, ApprovalRequest, CodingSession, SessionNotice

    before = children()
    model = ScriptedModel(
        [tool_call_reply(("time__get_current_time", {"timezone": "UTC"})), text_reply("it is")]
    )
    broken = McpStdioServer(name="broken", command="no-such-mcp-server-here", env={"K": "v4lue"})
    asked: list[ApprovalRequest] = []

    async def approver(request: ApprovalRequest) -> Answer:
        asked.append(request)
        return "yes"

    session = CodingSession(
        coding_config(tmp_path, model, mcp_servers=(broken, time_server())), approver=approver
    )
    notices: list[str] = []
    session.subscribe(
        lambda event: notices.append(event.text) if isinstance(event, SessionNotice) else None
    )
    try:
        result = await bounded((await session.prompt("what time is it?")).result)
        assert result.status == "completed"
        assert [request.tool_call.name for request in asked] == ["time__get_current_time"]
        assert "time__get_current_time" in (session.system_prompt or "")
        (notice,) = notices
        assert notice.startswith("[MCP_SERVER_START_FAILED] MCP server 'broken'")
        assert "v4lue" not in notice
        path = session.session_path
        assert path is not None
    finally:
        await bounded(session.close())
    assert children() == before
    assert "v4lue" not in path.read_text(encoding="utf-8")


async def test_a_coding_session_system_prompt_names_the_tools_after_the_list_changed(
    tmp_path: Path,
) -> None:
    """The system prompt's ``Tools:`` line names the tools the model is offered: after a
    server's ``tools/list_changed`` the next prompt's request names the new tool too (it kept
    the names of when the runtime was built)."""
    from tether.coding import Answer, ApprovalRequest, CodingSession

    async def approver(request: ApprovalRequest) -> Answer:
        return "yes"

    model = ScriptedModel(
        [tool_call_reply(("toy__grow", {})), text_reply("grown"), text_reply("seen")]
    )
    session = CodingSession(
        coding_config(tmp_path, model, mcp_servers=(toy_stdio(),)), approver=approver
    )
    try:
        await bounded(session.start())
        runtime = session.runtime
        assert runtime is not None
        changed = runtime.mcp_changed
        assert changed is not None
        first = model.requests  # none yet
        assert first == ()
        assert (await bounded((await session.prompt("grow")).result)).status == "completed"
        startup = model.requests[0].system or ""
        assert "toy__grow" in startup
        assert "toy__late" not in startup
        await bounded(changed.wait())
        assert (await bounded((await session.prompt("again")).result)).status == "completed"
        offered = [spec.name for spec in model.requests[-1].tools]
        assert "toy__late" in offered
        system = model.requests[-1].system or ""
        tools_line = next(line for line in system.splitlines() if line.startswith("Tools: "))
        assert tools_line == f"Tools: {', '.join(offered)}."
        assert session.system_prompt == system
    finally:
        await bounded(session.close())


async def test_an_mcp_server_with_approval_auto_is_not_asked_about(tmp_path: Path) -> None:
    from tether.coding import ApprovalRequest, CodingSession

    model = ScriptedModel(
        [tool_call_reply(("time__get_current_time", {"timezone": "UTC"})), text_reply("it is")]
    )
    asked: list[ApprovalRequest] = []

    async def approver(request: ApprovalRequest) -> Any:
        asked.append(request)
        return "no"

    session = CodingSession(
        coding_config(tmp_path, model, mcp_servers=(time_server(approval="auto"),)),
        approver=approver,
    )
    try:
        result = await bounded((await session.prompt("what time is it?")).result)
        assert result.status == "completed"
        assert asked == []
        assert not result.messages[-2].is_error
    finally:
        await bounded(session.close())


async def test_agent_set_tools_takes_effect_from_the_next_turn() -> None:
    from tether import Agent, ToolRegistry, tool

    @tool
    def ping() -> str:
        """Answer pong."""
        return "pong"

    model = ScriptedModel([tool_call_reply(("ping", {})), text_reply("done")])
    agent = Agent(model=model)
    assert agent.tool_names == ()
    agent.set_tools(ToolRegistry([ping]))
    assert agent.tool_names == ("ping",)
    result = await bounded(agent.run("ping"))
    assert result.messages[-2].content == "pong"
    with pytest.raises(TypeError):
        agent.set_tools([ping])  # pyright: ignore[reportArgumentType]


async def test_switching_model_rebuilds_the_runtime_and_its_servers(tmp_path: Path) -> None:
    from coding_support import Choice
    from tether.coding import CodingSession

    before = children()
    first = ScriptedModel([text_reply("one")])
    second = ScriptedModel(
        [tool_call_reply(("time__get_current_time", {"timezone": "UTC"})), text_reply("two")]
    )
    made = coding_config(tmp_path, first, mcp_servers=(time_server(approval="auto"),))
    session = CodingSession(made)
    try:
        await bounded((await session.prompt("hi")).result)
        old = only_new(before)
        await bounded(session.switch_model(Choice(spec="scripted/b", model=second)))
        await wait_dead(old)  # the old runtime's server went with it
        new = only_new(before)
        assert new != old
        result = await bounded((await session.prompt("time?")).result)
        assert json.loads(result.messages[-2].content)["timezone"] == "UTC"
    finally:
        await bounded(session.close())
    assert children() == before
