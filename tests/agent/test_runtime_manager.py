"""``RuntimeManager``: replacement without a gap, the same-session-file rules, reentrancy from
factories, and disposal; real temporary directories and scripted models."""

from __future__ import annotations

import asyncio
import dataclasses
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from runtime_support import add, bounded, expect_error, on_disk, options, probe, real
from tether import ModelChunk, ModelResponse, ScriptedModel, text_reply, tool_call_reply
from tether.agent.extensions import ExtensionContext, ExtensionDefinition
from tether.agent.persistence import SessionRecorder, resume_agent
from tether.agent.runtime import (
    Runtime,
    RuntimeAgentInput,
    RuntimeAggregateError,
    RuntimeManager,
    RuntimeWorkspaceOptions,
    TetherRuntimeError,
    create_runtime,
)
from tether.agent.session import MessageEntry, SessionStore, parse_session
from tether.protocol import AgentEvent


def workspace(cwd: Path | str, path: str = "session.jsonl", mode: str = "create") -> dict[str, Any]:
    return {"cwd": cwd, "session": {"path": path, "mode": mode}}


def replies(count: int) -> ScriptedModel:
    return ScriptedModel([text_reply(f"reply {n}") for n in range(count)])


async def test_replace_builds_the_new_runtime_before_the_old_one_goes(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    log: list[str] = []
    seen_current: list[Runtime] = []
    holder: list[RuntimeManager] = []

    def tools_factory(spec: Any, fallback: Any) -> Any:
        if holder:
            seen_current.append(holder[0].current)
        return fallback(spec)

    manager = await bounded(
        RuntimeManager.create(
            options(
                tmp_path / "a",
                model=replies(4),
                extensions=[probe(log, "p")],
                factories={"create_tools": tools_factory},
            )
        )
    )
    holder.append(manager)
    first = manager.current
    assert manager.state == "open"
    await bounded(first.agent.run("in a"))
    await bounded(first.agent.wait_for_subscribers())
    second = await bounded(
        manager.replace(
            RuntimeWorkspaceOptions(
                cwd=tmp_path / "b", session={"path": "s.jsonl", "mode": "create"}
            )
        )
    )
    assert seen_current == [first]  # the old runtime was current while the new one was built
    assert manager.current is second
    assert first.state == "disposed"
    assert second.state == "open"
    assert second.workspace.root == real(tmp_path / "b")
    assert log[:2] == ["p:activate", "p:message.accepted"]
    assert log[-3:] == ["p:run.finished", "p:activate", "p:dispose"]
    await bounded(second.agent.run("in b"))
    await bounded(manager.flush())
    assert [
        m.content for m in await on_disk(second.workspace.session_path) if m.role == "user"
    ] == ["in b"]
    disposal = manager.dispose()
    assert manager.dispose() is disposal
    assert manager.state == "disposing"
    with pytest.raises(TetherRuntimeError) as caught:
        _ = manager.current
    assert caught.value.code == "RUNTIME_DISPOSED"
    await bounded(disposal)
    assert manager.state == "disposed"
    assert second.state == "disposed"
    with pytest.raises(TetherRuntimeError) as caught:
        manager.replace(workspace(tmp_path / "a"))
    assert caught.value.code == "RUNTIME_DISPOSED"
    await expect_error(manager.flush(), "RUNTIME_DISPOSED")
    with pytest.raises(TypeError):
        RuntimeManager()


async def test_a_failed_replacement_leaves_the_old_runtime_usable(tmp_path: Path) -> None:
    calls: list[int] = []

    def agent_factory(spec: Any, fallback: Any) -> Any:
        calls.append(1)
        if len(calls) > 1:
            raise ValueError("no second agent")
        return fallback(spec)

    (tmp_path / "b").mkdir()
    manager = await bounded(
        RuntimeManager.create(
            options(tmp_path, model=replies(3), factories={"create_agent": agent_factory})
        )
    )
    old = manager.current
    await bounded(old.agent.run("before"))
    error = await expect_error(
        manager.replace(workspace(tmp_path / "b", "new/s.jsonl")), "RUNTIME_CONSTRUCTION_FAILED"
    )
    assert str(error) == "Runtime construction failed: Agent factory threw"
    assert not (tmp_path / "b" / "new").exists()
    assert manager.current is old
    assert old.state == "open"
    await bounded(old.agent.run("after"))
    await bounded(manager.flush())
    users = [m.content for m in await on_disk(old.workspace.session_path) if m.role == "user"]
    assert users == ["before", "after"]
    await bounded(manager.dispose())


async def test_replace_onto_the_same_session_switches_the_model(tmp_path: Path) -> None:
    first_model = replies(1)
    second_model = replies(1)
    models = [first_model]

    def agent_factory(spec: RuntimeAgentInput, fallback: Any) -> Any:
        return fallback(dataclasses.replace(spec, model=models[-1]))

    manager = await bounded(
        RuntimeManager.create(
            options(tmp_path, model=first_model, factories={"create_agent": agent_factory})
        )
    )
    old = manager.current
    await bounded(old.agent.run("one"))
    models.append(second_model)
    new = await bounded(manager.replace(workspace(tmp_path, mode="resume")))
    assert old.state == "disposed"
    assert new.agent.messages == old.agent.messages
    await bounded(new.agent.run("two"))
    assert second_model.call_count == 1
    assert first_model.call_count == 1
    await bounded(manager.flush())
    assert await on_disk(new.workspace.session_path) == new.agent.messages
    assert len(new.agent.messages) == 4
    await bounded(manager.dispose())


async def test_replace_onto_the_same_session_while_running_is_refused(tmp_path: Path) -> None:
    started = asyncio.Event()
    release = asyncio.Event()

    async def slow_turn(request: Any, signal: Any) -> AsyncIterator[ModelChunk | ModelResponse]:
        started.set()
        await release.wait()
        async for item in text_reply("done")(request, signal):
            yield item

    manager = await bounded(
        RuntimeManager.create(options(tmp_path, model=ScriptedModel([slow_turn])))
    )
    old = manager.current
    stream = old.agent.prompt("go")
    await bounded(started.wait())
    error = await expect_error(
        manager.replace(workspace(tmp_path, mode="resume")), "RUNTIME_SESSION_IN_USE"
    )
    assert str(error) == "The current runtime's agent is running on this session file"
    release.set()
    assert (await bounded(stream.result)).status == "completed"
    assert manager.current is old
    await bounded(manager.flush())
    await bounded(manager.dispose())


async def test_a_session_changed_during_a_same_file_replacement_diverges(tmp_path: Path) -> None:
    log: list[str] = []
    holder: list[RuntimeManager] = []

    async def agent_factory(spec: Any, fallback: Any) -> Any:
        if holder:
            # While the candidate is built, the current runtime writes to the shared file.
            await holder[0].current.agent.run("sneaked in")
        return await fallback(spec)

    manager = await bounded(
        RuntimeManager.create(
            options(
                tmp_path,
                model=replies(2),
                extensions=[probe(log, "p")],
                factories={"create_agent": agent_factory},
            )
        )
    )
    holder.append(manager)
    old = manager.current
    error = await expect_error(
        manager.replace(workspace(tmp_path, mode="resume")), "RUNTIME_SESSION_DIVERGED"
    )
    assert str(error) == (
        "The session changed while its replacement was built; the current runtime stays"
    )
    assert manager.current is old
    assert old.state == "open"
    assert log.count("p:dispose") == 1  # the candidate's extensions were disposed
    await bounded(old.agent.run("still works"))
    await bounded(manager.flush())
    users = [m.content for m in await on_disk(old.workspace.session_path) if m.role == "user"]
    assert users == ["sneaked in", "still works"]
    await bounded(manager.dispose())


async def test_a_different_manager_cannot_take_a_held_session(tmp_path: Path) -> None:
    (tmp_path / "other").mkdir()
    first = await bounded(RuntimeManager.create(options(tmp_path)))
    second = await bounded(RuntimeManager.create(options(tmp_path / "other")))
    await expect_error(second.replace(workspace(tmp_path, mode="resume")), "RUNTIME_SESSION_IN_USE")
    standalone = create_runtime(options(tmp_path, mode="resume"))
    await expect_error(standalone, "RUNTIME_SESSION_IN_USE")
    assert second.current.workspace.root == real(tmp_path / "other")
    await bounded(first.dispose())
    taken = await bounded(second.replace(workspace(tmp_path, mode="resume")))
    assert second.current is taken
    await bounded(second.dispose())


async def test_factories_cannot_reenter_the_manager(tmp_path: Path) -> None:
    holder: list[RuntimeManager] = []
    seen: list[str] = []

    async def tools_factory(spec: Any, fallback: Any) -> Any:
        if holder:
            manager = holder[0]
            for name, call in (
                ("flush", lambda: manager.flush()),
                ("replace", lambda: manager.replace(workspace(tmp_path))),
                ("dispose", lambda: manager.dispose()),
            ):
                try:
                    await call()
                except TetherRuntimeError as error:
                    seen.append(f"{name}:{error.code}")
            await manager.current.flush()  # the old runtime itself is not in the scope
        return await fallback(spec)

    (tmp_path / "b").mkdir()
    manager = await bounded(
        RuntimeManager.create(options(tmp_path, factories={"create_tools": tools_factory}))
    )
    holder.append(manager)
    await bounded(manager.replace(workspace(tmp_path / "b")))
    assert seen == [
        "flush:RUNTIME_REENTRANT_OPERATION",
        "replace:RUNTIME_REENTRANT_OPERATION",
        "dispose:RUNTIME_REENTRANT_OPERATION",
    ]
    assert manager.state == "open"
    await bounded(manager.dispose())


async def test_dispose_during_a_replacement_discards_the_candidate(tmp_path: Path) -> None:
    building = asyncio.Event()
    release = asyncio.Event()
    log: list[str] = []
    holder: list[RuntimeManager] = []

    async def tools_factory(spec: Any, fallback: Any) -> Any:
        if holder:
            building.set()
            await release.wait()
        return await fallback(spec)

    (tmp_path / "b").mkdir()
    manager = await bounded(
        RuntimeManager.create(
            options(
                tmp_path, extensions=[probe(log, "p")], factories={"create_tools": tools_factory}
            )
        )
    )
    holder.append(manager)
    old = manager.current
    replacement = manager.replace(workspace(tmp_path / "b"))
    await bounded(building.wait())
    disposal = manager.dispose()
    release.set()
    error = await expect_error(replacement, "RUNTIME_DISPOSED")
    assert str(error) == "Runtime manager is disposed"
    await bounded(disposal)
    assert old.state == "disposed"
    assert manager.state == "disposed"
    assert log == ["p:activate", "p:activate", "p:dispose", "p:dispose"]


async def test_an_old_runtime_that_fails_to_dispose_is_reported(tmp_path: Path) -> None:
    instances: list[int] = []

    def counted(log: list[str]) -> Any:
        from runtime_support import Probe

        instances.append(1)
        return Probe(log, "p", fail_dispose=len(instances) == 1)

    from tether.agent.extensions import ExtensionDefinition

    log: list[str] = []
    (tmp_path / "b").mkdir()
    manager = await bounded(
        RuntimeManager.create(
            options(tmp_path, extensions=[ExtensionDefinition(id="p", create=lambda: counted(log))])
        )
    )
    old = manager.current
    error = await expect_error(
        manager.replace(workspace(tmp_path / "b")), "RUNTIME_REPLACEMENT_CLEANUP_FAILED"
    )
    assert getattr(error.__cause__, "code", None) == "RUNTIME_DISPOSAL_FAILED"
    assert manager.current is not old
    assert manager.current.state == "open"
    assert old.state == "disposed"
    await bounded(manager.dispose())


async def test_a_replacement_resolves_cwd_when_it_is_called(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    manager = await bounded(RuntimeManager.create(options(tmp_path)))
    monkeypatch.chdir(tmp_path / "a")
    replacement = manager.replace(workspace("."))
    os.chdir(tmp_path / "b")
    runtime = await bounded(replacement)
    assert runtime.workspace.root == real(tmp_path / "a")
    await bounded(manager.dispose())


async def test_the_first_build_failing_fails_create(tmp_path: Path) -> None:
    await expect_error(
        RuntimeManager.create(options(tmp_path, mode="resume")), "RUNTIME_CONSTRUCTION_FAILED"
    )
    with pytest.raises(TetherRuntimeError) as caught:
        await RuntimeManager.create({"cwd": tmp_path})
    assert caught.value.code == "RUNTIME_INVALID_OPTIONS"


async def test_a_replacement_queued_before_dispose_is_refused(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    manager = await bounded(RuntimeManager.create(options(tmp_path)))
    replacement = manager.replace(workspace(tmp_path / "b"))
    disposal = manager.dispose()
    error = await expect_error(replacement, "RUNTIME_DISPOSED")
    assert str(error) == "Runtime manager is disposed"
    await bounded(disposal)
    assert not (tmp_path / "b" / "session.jsonl").exists()
    assert repr(manager) == "<RuntimeManager disposed>"


async def test_a_discarded_candidate_that_fails_to_dispose(tmp_path: Path) -> None:
    from runtime_support import Probe
    from tether.agent.extensions import ExtensionDefinition

    building = asyncio.Event()
    release = asyncio.Event()
    holder: list[RuntimeManager] = []
    log: list[str] = []
    instances: list[int] = []

    def create() -> Probe:
        instances.append(1)
        return Probe(log, "p", fail_dispose=len(instances) == 2)

    async def tools_factory(spec: Any, fallback: Any) -> Any:
        if holder:
            building.set()
            await release.wait()
        return await fallback(spec)

    (tmp_path / "b").mkdir()
    manager = await bounded(
        RuntimeManager.create(
            options(
                tmp_path,
                extensions=[ExtensionDefinition(id="p", create=create)],
                factories={"create_tools": tools_factory},
            )
        )
    )
    holder.append(manager)
    replacement = manager.replace(workspace(tmp_path / "b"))
    await bounded(building.wait())
    disposal = manager.dispose()
    release.set()
    error = await expect_error(replacement, "RUNTIME_DISPOSAL_FAILED")
    assert str(error) == "Runtime replacement candidate disposal failed"
    group = error.__cause__
    assert isinstance(group, RuntimeAggregateError)
    assert [getattr(e, "code", None) for e in group.errors] == [
        "RUNTIME_DISPOSED",
        "RUNTIME_DISPOSAL_FAILED",
    ]
    await bounded(disposal)
    assert manager.state == "disposed"


async def test_the_old_runtime_does_not_rewrite_a_shared_file(tmp_path: Path) -> None:
    holder: list[RuntimeManager] = []

    async def agent_factory(spec: Any, fallback: Any) -> Any:
        if holder:
            await holder[0].current.flush()  # shares the file now: no rewrite
        return await fallback(spec)

    manager = await bounded(
        RuntimeManager.create(
            options(tmp_path, model=replies(2), factories={"create_agent": agent_factory})
        )
    )
    holder.append(manager)
    await bounded(manager.current.agent.run("one"))
    new = await bounded(manager.replace(workspace(tmp_path, mode="resume")))
    assert manager.current is new
    await bounded(new.agent.run("two"))
    await bounded(manager.dispose())
    assert len(await on_disk(new.workspace.session_path)) == 4


# --- same-file replacement onto unanswered tool calls ----------------------------------------


async def _tool_call_session(tmp_path: Path, factory: Any, extra: int = 2) -> RuntimeManager:
    """A manager whose session holds a completed tool-call turn; ``factory`` is its
    ``create_agent`` override."""
    model = ScriptedModel(
        [
            tool_call_reply(("add", {"left": 2, "right": 3})),
            text_reply("5"),
            *(text_reply(f"later {n}") for n in range(extra)),
        ]
    )
    manager = await bounded(
        RuntimeManager.create(
            options(tmp_path, model=model, tools=[add], factories={"create_agent": factory})
        )
    )
    result = await bounded(manager.current.agent.run("add"))
    assert result.status == "completed"
    return manager


def content_of(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


def _call_entry(runtime: Runtime) -> str:
    """The ID of the session's assistant entry with the tool call."""
    entry = runtime.session.active_entries[1]
    assert type(entry) is MessageEntry
    assert entry.message.role == "assistant"
    return entry.id


async def test_a_same_file_replace_onto_unanswered_calls_closes_them_once_after_the_swap(
    tmp_path: Path,
) -> None:
    move: list[str] = []
    before_swap: list[bytes] = []
    path = str(tmp_path / "session.jsonl")

    async def agent_factory(spec: RuntimeAgentInput, fallback: Any) -> Any:
        if move:
            await spec.session.move_to(move.pop())
        agent = await fallback(spec)
        before_swap.append(content_of(path))
        return agent

    manager = await _tool_call_session(tmp_path, agent_factory)
    old = manager.current
    call_id = _call_entry(old)
    written = content_of(path)
    move.append(call_id)
    new = await bounded(manager.replace(workspace(tmp_path, mode="resume")))
    assert manager.current is new
    assert old.state == "disposed"
    assert before_swap[-1] == written  # the candidate wrote nothing before it was published
    closing = [
        entry
        for entry in (await SessionStore.read(path)).entries
        if type(entry) is MessageEntry and entry.parent_id == call_id
    ]
    assert len(closing) == 2  # the original result, and the closing one on the new branch
    result_entry = closing[1]
    assert result_entry.message.role == "toolResult"
    assert result_entry.message.is_error
    assert "TOOL_CALL_NOT_RUN" in str(result_entry.message.content)
    assert new.session.active_entries[-1].id == result_entry.id
    assert new.agent.messages[-1] == result_entry.message
    assert (await bounded(new.agent.run("again"))).status == "completed"
    await bounded(manager.flush())
    on_file = await on_disk(path)
    assert on_file == new.agent.messages
    assert [m.role for m in on_file] == [
        "user",
        "assistant",
        "toolResult",
        "user",
        "assistant",
    ]
    await bounded(manager.dispose())


async def test_a_failed_same_file_replace_onto_unanswered_calls_writes_nothing(
    tmp_path: Path,
) -> None:
    move: list[str] = []
    path = str(tmp_path / "session.jsonl")

    async def agent_factory(spec: RuntimeAgentInput, fallback: Any) -> Any:
        if not move:
            return await fallback(spec)
        await spec.session.move_to(move.pop())
        await fallback(spec)
        raise ValueError("changed my mind")

    manager = await _tool_call_session(tmp_path, agent_factory)
    old = manager.current
    move.append(_call_entry(old))
    written = content_of(path)
    error = await expect_error(
        manager.replace(workspace(tmp_path, mode="resume")), "RUNTIME_CONSTRUCTION_FAILED"
    )
    assert str(error) == "Runtime construction failed: changed my mind"
    assert content_of(path) == written
    assert manager.current is old
    assert (await bounded(old.agent.run("still here"))).status == "completed"
    await bounded(manager.flush())
    assert await on_disk(path) == old.agent.messages
    await bounded(manager.dispose())
    assert old.state == "disposed"


async def test_a_candidate_that_writes_before_the_swap_is_refused_with_its_own_message(
    tmp_path: Path,
) -> None:
    move: list[str] = []

    async def agent_factory(spec: RuntimeAgentInput, fallback: Any) -> Any:
        if not move:
            return await fallback(spec)
        await spec.session.move_to(move.pop())
        return await resume_agent(spec.session, model=spec.model, tools=spec.tools)  # writes

    manager = await _tool_call_session(tmp_path, agent_factory)
    old = manager.current
    move.append(_call_entry(old))
    error = await expect_error(
        manager.replace(workspace(tmp_path, mode="resume")), "RUNTIME_SESSION_DIVERGED"
    )
    assert str(error) == (
        "The replacement wrote the session file before it was published; the current runtime stays"
    )
    assert manager.current is old
    # The candidate shared the old runtime's store: its entry is on a branch of its own and
    # the old runtime's session is as it was, so it keeps working.
    assert old.session.active_messages == old.agent.messages
    assert (await bounded(old.agent.run("still the old one"))).status == "completed"
    await bounded(manager.dispose())
    assert await on_disk(old.workspace.session_path) == old.agent.messages


# --- reentrancy from the current runtime's hooks ---------------------------------------------


async def test_the_current_runtimes_hooks_cannot_reenter_the_manager(tmp_path: Path) -> None:
    holder: list[RuntimeManager] = []
    seen: list[str] = []
    (tmp_path / "b").mkdir()

    class Reenter:
        def activate(self, context: ExtensionContext) -> None:
            context.on_agent_event(self.on_event)

        async def on_event(self, event: AgentEvent) -> None:
            if event.type != "run.finished":
                return
            manager = holder[0]
            for name, call in (
                ("replace", lambda: manager.replace(workspace(tmp_path / "b"))),
                ("dispose", lambda: manager.dispose()),
                ("flush", lambda: manager.flush()),
            ):
                try:
                    await call()
                except TetherRuntimeError as error:
                    seen.append(f"{name}:{error.code}")

    manager = await bounded(
        RuntimeManager.create(
            options(tmp_path, extensions=[ExtensionDefinition(id="r", create=Reenter)])
        )
    )
    holder.append(manager)
    current = manager.current
    await bounded(current.agent.run("go"))
    await bounded(current.agent.wait_for_subscribers())
    await bounded(current.flush())
    assert seen == [
        "replace:RUNTIME_REENTRANT_OPERATION",
        "dispose:RUNTIME_REENTRANT_OPERATION",
        "flush:RUNTIME_REENTRANT_OPERATION",
    ]
    assert manager.state == "open"
    assert manager.current is current
    assert current.state == "open"
    await bounded(manager.dispose())
    assert current.state == "disposed"
    again = await bounded(create_runtime(options(tmp_path, mode="resume")))  # file let go
    await bounded(again.dispose())


# --- cancelling a replacement while a disposal runs -----------------------------------------


async def test_a_cancelled_replace_waits_for_the_candidates_disposal(tmp_path: Path) -> None:
    disposing = asyncio.Event()
    release = asyncio.Event()
    holder: list[RuntimeManager] = []
    builds: list[int] = []

    async def slow_dispose() -> None:
        if len(builds) == 2:  # only the first candidate is slow to go
            disposing.set()
            await release.wait()

    async def agent_factory(spec: Any, fallback: Any) -> Any:
        builds.append(len(builds) + 1)
        if len(builds) == 2:
            await holder[0].current.agent.run("sneaked in")  # the candidate diverges
        return await fallback(spec)

    log: list[str] = []
    manager = await bounded(
        RuntimeManager.create(
            options(
                tmp_path,
                model=replies(3),
                extensions=[probe(log, "slow", disposer=slow_dispose)],
                factories={"create_agent": agent_factory},
            )
        )
    )
    holder.append(manager)
    old = manager.current
    first = manager.replace(workspace(tmp_path, mode="resume"))
    await bounded(disposing.wait())
    first.cancel()
    second = manager.replace(workspace(tmp_path, mode="resume"))
    for _ in range(20):  # let the cancellation and the queue run as far as they can
        await asyncio.sleep(0)
    assert not first.done()  # still waiting for the candidate's disposal
    assert len(builds) == 2  # so the second replacement has not started
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await bounded(first)
    new = await bounded(second)
    assert manager.current is new
    assert old.state == "disposed"
    await bounded(manager.dispose())


def _users_in_file(path: str) -> list[str]:
    """Every user message in the file, all branches (read as bytes, holding no lock)."""
    with open(path, "rb") as handle:
        entries = parse_session(handle.read()).entries
    return [
        entry.message.content
        for entry in entries
        if type(entry) is MessageEntry and entry.message.role == "user"
    ]


async def test_a_disposed_runtimes_agent_does_not_write_the_session(tmp_path: Path) -> None:
    # Issue 25, item 12: after a same-file replace, a stale reference to the old Agent must
    # not record its turn (the live runtime's next write and flush must work, nothing lost).
    manager = await bounded(RuntimeManager.create(options(tmp_path, model=replies(3))))
    old = manager.current
    await bounded(old.agent.run("one"))
    live = await bounded(manager.replace(workspace(tmp_path, mode="resume")))
    assert old.state == "disposed"
    stale = await bounded(old.agent.run("stale"))
    assert stale.status == "failed"
    assert stale.error.code == "AGENT_RECORDING_FAILED"
    assert "its runtime was disposed" in stale.error.message
    recorder = old.agent.recorder
    assert isinstance(recorder, SessionRecorder)
    assert recorder.closed
    assert old.session.closed
    assert (await bounded(live.agent.run("live"))).status == "completed"
    await bounded(manager.flush())
    assert _users_in_file(live.workspace.session_path) == ["one", "live"]
    await bounded(manager.dispose())
