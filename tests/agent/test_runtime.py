"""Runtime composition (``tether.agent.runtime``): construction, rollback, the event tail,
coherence, poisoning and disposal, with real temporary directories and scripted models.

The manager (replacement) and option-capture tests are in test_runtime_manager.py and
test_runtime_options.py."""

from __future__ import annotations

import asyncio
import dataclasses
import errno
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import pytest

from runtime_support import (
    Probe,
    add,
    bounded,
    expect_error,
    on_disk,
    options,
    probe,
    real,
    returning,
)
from tether import ScriptedModel, ToolRegistry, text_reply, tool, tool_call_reply
from tether.agent.agent import Agent
from tether.agent.extensions import ExtensionContext, ExtensionDefinition, ExtensionHost
from tether.agent.resources import ResourceLoader
from tether.agent.runtime import (
    RUNTIME_DISPOSE_REASON,
    RUNTIME_MAX_ADOPTION_DEPTH,
    Runtime,
    RuntimeAgentOptions,
    RuntimeAggregateError,
    RuntimeOptions,
    RuntimeSessionOptions,
    TetherRuntimeError,
    create_runtime,
)
from tether.agent.session import SessionStore, SessionStoreError, SessionTree, session_io
from tether.loop.hooks import ToolCallContext
from tether.protocol import AgentEvent, Message

CODING = ("read_file", "write_file", "edit_file", "list_files", "grep", "bash", "python_process")


def append_behind_the_stores_back(path: str) -> None:
    with open(path, "ab") as handle:
        handle.write(b"\n")


def tree_of(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


# --- construction ---------------------------------------------------------------------------


async def test_a_runtime_records_its_agent_and_reloads(tmp_path: Path) -> None:
    model = ScriptedModel(
        [tool_call_reply(("add", {"left": 2, "right": 3})), text_reply("5"), text_reply("bye")]
    )
    runtime = await bounded(create_runtime(options(tmp_path, model=model, tools=[add])))
    assert isinstance(runtime, Runtime)
    assert runtime.workspace.root == real(tmp_path)
    assert runtime.workspace.session_path == str(Path(real(tmp_path)) / "session.jsonl")
    assert runtime.workspace.session_mode == "create"
    assert runtime.state == "open"
    assert runtime.tools.names == (*CODING, "add")
    assert runtime.agent.tool_names == (*CODING, "add")
    assert runtime.store is runtime.session.store
    assert [root.id for root in runtime.resources.roots] == ["workspace"]
    assert (await bounded(runtime.agent.run("add 2 and 3"))).status == "completed"
    await bounded(runtime.flush())
    assert await on_disk(runtime.workspace.session_path) == runtime.agent.messages
    assert len(runtime.agent.messages) == 4
    disposal = runtime.dispose()
    assert runtime.dispose() is disposal
    assert runtime.state == "disposing"
    await bounded(disposal)
    assert runtime.state == "disposed"
    await bounded(runtime.dispose())
    error = await expect_error(runtime.flush(), "RUNTIME_DISPOSED")
    assert str(error) == "Runtime is disposed"
    with pytest.raises(AttributeError):
        setattr(runtime, "agent", runtime.agent)  # noqa: B010
    with pytest.raises(TypeError):
        Runtime()


async def test_resume_continues_the_recorded_conversation(tmp_path: Path) -> None:
    first = await bounded(create_runtime(options(tmp_path, model=ScriptedModel([text_reply("a")]))))
    await bounded(first.agent.run("one"))
    await bounded(first.dispose())
    model = ScriptedModel([text_reply("b")])
    second = await bounded(create_runtime(options(tmp_path, mode="resume", model=model)))
    assert second.workspace.session_mode == "resume"
    assert second.agent.messages == first.agent.messages
    await bounded(second.agent.run("two"))
    await bounded(second.dispose())
    assert [m.role for m in await on_disk(second.workspace.session_path)] == [
        "user",
        "assistant",
        "user",
        "assistant",
    ]
    assert model.requests[0].messages[:2] == first.agent.messages


async def test_create_makes_missing_parents_and_resume_needs_them(tmp_path: Path) -> None:
    runtime = await bounded(create_runtime(options(tmp_path, path="a/b/s.jsonl")))
    assert (tmp_path / "a" / "b" / "s.jsonl").is_file()
    assert oct((tmp_path / "a").stat().st_mode & 0o777) == oct(0o700)
    await bounded(runtime.dispose())
    error = await expect_error(
        create_runtime(options(tmp_path, path="c/s.jsonl", mode="resume")),
        "RUNTIME_INVALID_OPTIONS",
    )
    assert str(error) == "Runtime session parent directory does not exist (mode 'resume')"
    assert not (tmp_path / "c").exists()


async def test_resume_of_a_missing_file_fails_construction(tmp_path: Path) -> None:
    error = await expect_error(
        create_runtime(options(tmp_path, mode="resume")), "RUNTIME_CONSTRUCTION_FAILED"
    )
    assert isinstance(error.__cause__, FileNotFoundError)
    assert str(error).startswith("Runtime construction failed: ")


async def test_create_over_an_existing_file_leaves_it_alone(tmp_path: Path) -> None:
    (tmp_path / "session.jsonl").write_bytes(b"precious")
    error = await expect_error(create_runtime(options(tmp_path)), "RUNTIME_CONSTRUCTION_FAILED")
    assert getattr(error.__cause__, "code", None) == "SESSION_ALREADY_EXISTS"
    assert (tmp_path / "session.jsonl").read_bytes() == b"precious"


async def test_agent_options_reach_the_default_agent(tmp_path: Path) -> None:
    seen: list[str] = []

    def before(context: ToolCallContext) -> None:
        seen.append(context.tool_call.name)

    model = ScriptedModel([tool_call_reply(("add", {"left": 1, "right": 1})), text_reply("2")])
    runtime = await bounded(
        create_runtime(
            RuntimeOptions(
                cwd=tmp_path,
                session=RuntimeSessionOptions(path="s.jsonl", mode="create"),
                model=model,
                tools=[add],
                max_steps=3,
                agent_options=RuntimeAgentOptions(system="be brief", before_tool_call=before),
            )
        )
    )
    assert runtime.agent.system == "be brief"
    assert runtime.agent.max_steps == 3
    assert (await bounded(runtime.agent.run("1+1"))).status == "completed"
    assert seen == ["add"]
    assert model.requests[0].system == "be brief"
    await bounded(runtime.dispose())


async def test_resources_have_the_workspace_first(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    extra = tmp_path / "extra"
    workspace.mkdir()
    extra.mkdir()
    (workspace / "NOTES.md").write_text("mine")
    (extra / "NOTES.md").write_text("theirs")
    (extra / "ONLY.md").write_text("only")
    runtime = await bounded(
        create_runtime(
            options(workspace, resource_roots=[{"id": "extra", "directory": str(extra)}])
        )
    )
    assert [(r.id, r.directory) for r in runtime.resources.roots] == [
        ("workspace", real(workspace)),
        ("extra", real(extra)),
    ]
    notes = await runtime.resources.load_text("NOTES.md")
    only = await runtime.resources.load_text("ONLY.md")
    assert notes is not None
    assert notes.content == "mine"
    assert only is not None
    assert only.content == "only"
    await bounded(runtime.dispose())


# --- rollback ---------------------------------------------------------------------------------


async def test_a_failed_activation_removes_the_session_file_and_parents(tmp_path: Path) -> None:
    log: list[str] = []
    definitions = [probe(log, "first"), probe(log, "second", fail_activate=True)]
    error = await expect_error(
        create_runtime(options(tmp_path, path="deep/er/s.jsonl", extensions=definitions)),
        "RUNTIME_CONSTRUCTION_FAILED",
    )
    assert str(error) == f"Runtime construction failed: {error.__cause__}"
    assert getattr(error.__cause__, "code", None) == "EXTENSION_ACTIVATION_FAILED"
    assert tree_of(tmp_path) == []
    assert log == ["first:activate", "second:activate", "second:dispose", "first:dispose"]
    # The path is free again: a retry succeeds.
    runtime = await bounded(create_runtime(options(tmp_path, path="deep/er/s.jsonl")))
    await bounded(runtime.dispose())


async def test_existing_parents_are_kept_on_rollback(tmp_path: Path) -> None:
    (tmp_path / "kept").mkdir()
    definitions = [probe([], "bad", fail_activate=True)]
    await expect_error(
        create_runtime(options(tmp_path, path="kept/new/s.jsonl", extensions=definitions)),
        "RUNTIME_CONSTRUCTION_FAILED",
    )
    assert tree_of(tmp_path) == ["kept"]


async def test_a_changed_session_file_is_kept_and_reported(tmp_path: Path) -> None:
    async def agent_factory(spec: Any, fallback: Any) -> Agent:
        # Something writes to the new file before the construction fails.
        await spec.session.append({"role": "user", "id": "u1", "content": "sneaky"})
        raise ValueError("agent refused")

    error = await expect_error(
        create_runtime(
            options(tmp_path, path="p/s.jsonl", factories={"create_agent": agent_factory})
        ),
        "RUNTIME_CONSTRUCTION_FAILED",
    )
    assert str(error) == "Runtime construction and rollback failed"
    group = error.__cause__
    assert isinstance(group, RuntimeAggregateError)
    assert [type(e).__name__ for e in group.errors] == [
        "ValueError",
        "TetherRuntimeError",
        "TetherRuntimeError",
    ]
    assert str(group.errors[0]) == "agent refused"
    file_error = cast(TetherRuntimeError, group.errors[1])
    assert file_error.code == "RUNTIME_SESSION_ROLLBACK_FAILED"
    assert str(file_error) == "Runtime created session file s.jsonl changed; it was kept"
    parent_error = cast(TetherRuntimeError, group.errors[2])
    assert parent_error.code == "RUNTIME_SESSION_ROLLBACK_FAILED"
    assert str(parent_error).startswith("Runtime session parent directories changed")
    assert tree_of(tmp_path) == ["p", "p/s.jsonl"]
    assert [m.id for m in await on_disk(str(tmp_path / "p" / "s.jsonl"))] == ["u1"]
    with pytest.raises(AttributeError):
        setattr(group, "note", "x")  # noqa: B010


async def test_a_parent_that_gained_content_is_kept(tmp_path: Path) -> None:
    def tools_factory(spec: Any, fallback: Any) -> Any:
        (tmp_path / "a" / "b" / "intruder.txt").write_text("x")
        raise ValueError("no tools")

    error = await expect_error(
        create_runtime(
            options(tmp_path, path="a/b/s.jsonl", factories={"create_tools": tools_factory})
        ),
        "RUNTIME_CONSTRUCTION_FAILED",
    )
    group = error.__cause__
    assert isinstance(group, RuntimeAggregateError)
    assert str(group.errors[0]) == "Tools factory threw"
    assert str(group.errors[0].__cause__) == "no tools"
    kept = cast(TetherRuntimeError, group.errors[1])
    assert kept.code == "RUNTIME_SESSION_ROLLBACK_FAILED"
    assert str(kept) == (
        "Runtime session parent directories changed and were kept: "
        f"{real(tmp_path)}/a/b, {real(tmp_path)}/a"
    )
    assert tree_of(tmp_path) == ["a", "a/b", "a/b/intruder.txt"]


async def test_a_replaced_root_fails_construction_unchanged(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()

    def tools_factory(spec: Any, fallback: Any) -> Any:
        root.rename(tmp_path / "moved")
        root.mkdir()
        return fallback(spec)

    error = await expect_error(
        create_runtime(options(root, factories={"create_tools": tools_factory})),
        "RUNTIME_ROOT_CHANGED",
    )
    assert str(error) == "Runtime workspace root was replaced or moved"
    assert tree_of(tmp_path) == ["moved", "root"]


async def test_a_root_replaced_under_an_open_runtime_fails_flush(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    runtime = await bounded(create_runtime(options(root)))
    root.rename(tmp_path / "moved")
    root.mkdir()
    await expect_error(runtime.flush(), "RUNTIME_ROOT_CHANGED")
    assert runtime.state == "open"
    root.rmdir()
    error = await expect_error(runtime.flush(), "RUNTIME_ROOT_CHANGED")
    assert str(error) == "Runtime workspace root is no longer there"
    (tmp_path / "moved").rename(root)
    await bounded(runtime.flush())
    await bounded(runtime.dispose())


async def test_a_symlinked_parent_escaping_the_root_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "link").symlink_to(outside)
    error = await expect_error(
        create_runtime(options(root, path="link/s.jsonl")), "RUNTIME_INVALID_OPTIONS"
    )
    assert str(error) == "Runtime session parent is not a directory inside the workspace root"
    await expect_error(
        create_runtime(options(root, path="link/new/s.jsonl")), "RUNTIME_INVALID_OPTIONS"
    )
    assert tree_of(outside) == []


async def test_a_symlinked_parent_inside_the_root_is_followed(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "alias").symlink_to(tmp_path / "real")
    runtime = await bounded(create_runtime(options(tmp_path, path="alias/s.jsonl")))
    assert (tmp_path / "real" / "s.jsonl").is_file()
    await expect_error(
        create_runtime(options(tmp_path, path="real/s.jsonl", mode="resume")),
        "RUNTIME_SESSION_IN_USE",
    )
    await bounded(runtime.dispose())


async def test_cwd_must_be_an_existing_directory(tmp_path: Path) -> None:
    error = await expect_error(
        create_runtime(options(tmp_path / "missing")), "RUNTIME_INVALID_OPTIONS"
    )
    assert str(error) == "Runtime cwd cannot be resolved to a directory"
    assert isinstance(error.__cause__, FileNotFoundError)
    (tmp_path / "file").write_text("x")
    error = await expect_error(
        create_runtime(options(tmp_path / "file")), "RUNTIME_INVALID_OPTIONS"
    )
    assert str(error) == "Runtime cwd is not a directory"
    (tmp_path / "blocker").write_text("x")
    error = await expect_error(
        create_runtime(options(tmp_path, path="blocker/s.jsonl")), "RUNTIME_INVALID_OPTIONS"
    )
    assert str(error) == "Runtime session parent is not a directory inside the workspace root"


# --- factory overrides ------------------------------------------------------------------------


async def test_a_wrong_product_is_refused(tmp_path: Path) -> None:
    for label, key in (
        ("Tools", "create_tools"),
        ("Resources", "create_resources"),
        ("Session", "create_session"),
        ("Extensions", "create_extensions"),
        ("Agent", "create_agent"),
    ):
        error = await expect_error(
            create_runtime(options(tmp_path, path="p/s.jsonl", factories={key: returning(42)})),
            "RUNTIME_CONSTRUCTION_FAILED",
        )
        assert isinstance(error.__cause__, TypeError)
        assert str(error.__cause__) == f"{label} factory returned an invalid product"
        assert tree_of(tmp_path) == []


async def test_a_synchronous_throw_is_labelled(tmp_path: Path) -> None:
    def explode(spec: Any, fallback: Any) -> Any:
        raise KeyError("inner")

    error = await expect_error(
        create_runtime(options(tmp_path, factories={"create_resources": explode})),
        "RUNTIME_CONSTRUCTION_FAILED",
    )
    assert str(error) == "Runtime construction failed: Resources factory threw"
    assert isinstance(error.__cause__, RuntimeError)
    assert isinstance(error.__cause__.__cause__, KeyError)
    assert tree_of(tmp_path) == []


async def test_an_unawaited_fallback_is_awaited_and_its_product_discarded(tmp_path: Path) -> None:
    log: list[str] = []
    tasks: list[Any] = []
    mine = ToolRegistry([add])

    def tools_factory(spec: Any, fallback: Any) -> ToolRegistry:
        task = fallback(spec)
        assert fallback() is task
        assert fallback(spec) is task
        tasks.append(task)
        return mine

    async def extensions_factory(spec: Any, fallback: Any) -> ExtensionHost:
        fallback(spec)  # started, never awaited here
        host = ExtensionHost(resources=spec.resources, tools=spec.tools)
        host.discover([probe(log, "custom")])
        await host.activate("custom")
        return host

    runtime = await bounded(
        create_runtime(
            options(
                tmp_path,
                extensions=[probe(log, "default")],
                factories={"create_tools": tools_factory, "create_extensions": extensions_factory},
            )
        )
    )
    assert tasks[0].done()
    assert tasks[0].result().names == CODING
    assert runtime.tools.names == ("add",)
    # The fallback's host (with the "default" extension) was disposed: it is not selected.
    assert log == ["custom:activate", "default:activate", "default:dispose"]
    await bounded(runtime.dispose())
    assert log[-1] == "custom:dispose"


async def test_a_cancelled_construction_waits_for_a_pending_fallback_and_rolls_it_back(
    tmp_path: Path,
) -> None:
    log: list[str] = []
    activating = asyncio.Event()
    never = asyncio.Event()
    fallbacks: list[Any] = []

    class Slow(Probe):
        async def activate(self, context: ExtensionContext) -> None:  # pyright: ignore[reportIncompatibleMethodOverride]
            super().activate(context)
            activating.set()
            await never.wait()

    async def extensions_factory(spec: Any, fallback: Any) -> Any:
        fallbacks.append(fallback(spec))
        await never.wait()  # holds the started fallback, never awaits it

    build = asyncio.ensure_future(
        create_runtime(
            options(
                tmp_path,
                extensions=[ExtensionDefinition(id="slow", create=lambda: Slow(log, "slow"))],
                factories={"create_extensions": extensions_factory},
            )
        )
    )
    await bounded(activating.wait())
    build.cancel()
    with pytest.raises(asyncio.CancelledError):
        await bounded(build)
    assert fallbacks[0].cancelled()  # stopped and waited for before the rollback
    assert log == ["slow:activate", "slow:dispose"]  # its half-activated host was disposed
    assert tree_of(tmp_path) == []  # and the created session file removed


async def test_an_unawaited_failing_fallback_fails_the_step(tmp_path: Path) -> None:
    def resources_factory(spec: Any, fallback: Any) -> Any:
        fallback(type(spec)(workspace=spec.workspace, roots=(*spec.roots, *spec.roots)))
        return ResourceLoader.create([{"id": "x", "directory": str(tmp_path)}])

    extra = tmp_path / "extra"
    extra.mkdir()
    error = await expect_error(
        create_runtime(
            options(
                tmp_path,
                resource_roots=[{"id": "e", "directory": str(extra)}],
                factories={"create_resources": resources_factory},
            )
        ),
        "RUNTIME_CONSTRUCTION_FAILED",
    )
    assert getattr(error.__cause__, "code", None) == "DUPLICATE_RESOURCE_ROOT_ID"


async def test_override_and_fallback_failures_are_both_reported(tmp_path: Path) -> None:
    async def agent_factory(spec: Any, fallback: Any) -> Any:
        fallback(type(spec)(**{**_fields(spec), "max_steps": 0}))
        raise ValueError("override failed")

    error = await expect_error(
        create_runtime(options(tmp_path, factories={"create_agent": agent_factory})),
        "RUNTIME_CONSTRUCTION_FAILED",
    )
    group = error.__cause__
    assert isinstance(group, RuntimeAggregateError)
    assert str(group).startswith("Agent factory and its fallback failed")
    assert [str(e) for e in group.errors] == [
        "override failed",
        "Agent max_steps must be a positive safe integer",
    ]


def _fields(value: Any) -> dict[str, Any]:
    return {field.name: getattr(value, field.name) for field in dataclasses.fields(value)}


async def test_the_fallback_checks_its_input(tmp_path: Path) -> None:
    def tools_factory(spec: Any, fallback: Any) -> Any:
        return fallback("not an input")

    error = await expect_error(
        create_runtime(options(tmp_path, factories={"create_tools": tools_factory})),
        "RUNTIME_CONSTRUCTION_FAILED",
    )
    cause = error.__cause__
    assert cause is not None
    assert str(cause.__cause__) == ("Tools fallback needs a RuntimeToolsInput for this workspace")


async def test_awaitables_are_adopted_once_and_bounded(tmp_path: Path) -> None:
    class Forever:
        def __await__(self) -> Any:
            yield from ()
            return self

    async def nested(spec: Any, fallback: Any) -> Any:
        async def inner() -> Any:
            return fallback(spec)

        return inner()

    runtime = await bounded(create_runtime(options(tmp_path, factories={"create_tools": nested})))
    assert runtime.tools.names == CODING
    await bounded(runtime.dispose())
    error = await expect_error(
        create_runtime(
            options(tmp_path, mode="resume", factories={"create_tools": returning(Forever())})
        ),
        "RUNTIME_CONSTRUCTION_FAILED",
    )
    assert str(error.__cause__) == "Tools factory returned an invalid product"


async def test_a_product_is_adopted_through_at_most_the_adoption_depth(tmp_path: Path) -> None:
    def nested(levels: int) -> Callable[[Any, Any], object]:
        async def level(depth: int, fallback: Any, spec: Any) -> Any:
            if depth == 1:
                return await fallback(spec)
            return level(depth - 1, fallback, spec)

        def factory(spec: Any, fallback: Any) -> object:
            return level(levels, fallback, spec)

        return factory

    deepest = nested(RUNTIME_MAX_ADOPTION_DEPTH)
    runtime = await bounded(create_runtime(options(tmp_path, factories={"create_tools": deepest})))
    assert runtime.tools.names == CODING
    await bounded(runtime.dispose())
    too_deep = nested(RUNTIME_MAX_ADOPTION_DEPTH + 1)
    error = await expect_error(
        create_runtime(options(tmp_path, mode="resume", factories={"create_tools": too_deep})),
        "RUNTIME_CONSTRUCTION_FAILED",
    )
    assert str(error.__cause__) == "Tools factory returned an invalid product"


async def test_a_session_file_that_cannot_be_loaded_fails_construction(tmp_path: Path) -> None:
    (tmp_path / "session.jsonl").write_bytes(b"not json\n")
    error = await expect_error(
        create_runtime(options(tmp_path, mode="resume")), "RUNTIME_CONSTRUCTION_FAILED"
    )
    cause = error.__cause__
    assert isinstance(cause, SessionStoreError)
    assert cause.code == "SESSION_INVALID_JSON"


async def test_a_closed_store_is_not_a_session_product(tmp_path: Path) -> None:
    async def session_factory(spec: Any, fallback: Any) -> SessionStore:
        store = await fallback(spec)
        await store.close()
        return store

    error = await expect_error(
        create_runtime(options(tmp_path, factories={"create_session": session_factory})),
        "RUNTIME_CONSTRUCTION_FAILED",
    )
    assert str(error.__cause__) == "Session factory returned a closed store"
    assert tree_of(tmp_path) == []  # the file it created was removed again


async def test_a_store_on_the_same_file_keeps_the_created_file(tmp_path: Path) -> None:
    async def session_factory(spec: Any, fallback: Any) -> SessionStore:
        created = await fallback(spec)
        await created.close()  # the file has one writer: this override takes over
        return await SessionStore.load(created.path)

    runtime = await bounded(
        create_runtime(options(tmp_path, factories={"create_session": session_factory}))
    )
    await bounded(runtime.agent.run("hello"))
    await bounded(runtime.dispose())
    assert len(await on_disk(runtime.workspace.session_path)) == 2


async def test_a_store_on_another_file_is_refused(tmp_path: Path) -> None:
    other = await SessionStore.create(tmp_path / "other.jsonl")
    before = (tmp_path / "other.jsonl").read_bytes()

    def session_factory(spec: Any, fallback: Any) -> SessionStore:
        fallback(spec)
        return other

    error = await expect_error(
        create_runtime(options(tmp_path, factories={"create_session": session_factory})),
        "RUNTIME_CONSTRUCTION_FAILED",
    )
    assert str(error.__cause__) == "Session factory returned a store for another session file"
    assert tree_of(tmp_path) == ["other.jsonl"]
    assert (tmp_path / "other.jsonl").read_bytes() == before


async def test_an_agent_off_the_session_diverges(tmp_path: Path) -> None:
    def agent_factory(spec: Any, fallback: Any) -> Agent:
        return Agent(model=spec.model, messages=[_user("u1", "not in the session")])

    error = await expect_error(
        create_runtime(options(tmp_path, factories={"create_agent": agent_factory})),
        "RUNTIME_SESSION_DIVERGED",
    )
    assert str(error) == (
        "Runtime session diverged from the agent transcript: 1 message(s) were not recorded"
    )
    assert tree_of(tmp_path) == []

    async def forgetful(spec: Any, fallback: Any) -> Agent:
        await spec.session.append(_user("u2", "recorded"))
        return Agent(model=spec.model)

    error = await expect_error(
        create_runtime(options(tmp_path, factories={"create_agent": forgetful})),
        "RUNTIME_CONSTRUCTION_FAILED",
    )
    group = error.__cause__
    assert isinstance(group, RuntimeAggregateError)
    assert str(group.errors[0]) == (
        "Runtime session diverged from the agent transcript: "
        "the session was changed outside the runtime"
    )
    assert cast(TetherRuntimeError, group.errors[1]).code == "RUNTIME_SESSION_ROLLBACK_FAILED"
    assert tree_of(tmp_path) == ["session.jsonl"]


def _user(message_id: str, content: str) -> Message:
    from tether import UserMessage

    return UserMessage(id=message_id, content=content)


# --- one runtime per session file -------------------------------------------------------------


async def test_two_runtimes_on_one_session_file_are_refused(tmp_path: Path) -> None:
    first = await bounded(create_runtime(options(tmp_path)))
    error = await expect_error(
        create_runtime(options(tmp_path, mode="resume")), "RUNTIME_SESSION_IN_USE"
    )
    assert str(error) == (
        f"Another runtime in this process holds the session file {real(tmp_path)}/session.jsonl"
    )
    # Another spelling of the same file is the same file.
    (tmp_path / "sub").mkdir()
    await expect_error(
        create_runtime(options(tmp_path / "sub" / "..", mode="resume")), "RUNTIME_SESSION_IN_USE"
    )
    await bounded(first.agent.run("still mine"))
    await bounded(first.dispose())
    second = await bounded(create_runtime(options(tmp_path, mode="resume")))
    assert second.agent.messages == first.agent.messages
    await bounded(second.dispose())


async def test_a_failed_construction_releases_the_file(tmp_path: Path) -> None:
    await expect_error(
        create_runtime(options(tmp_path, factories={"create_agent": returning(None)})),
        "RUNTIME_CONSTRUCTION_FAILED",
    )
    runtime = await bounded(create_runtime(options(tmp_path)))
    await bounded(runtime.dispose())


# --- the event tail ---------------------------------------------------------------------------


async def test_extensions_see_every_event_in_order(tmp_path: Path) -> None:
    log: list[str] = []
    model = ScriptedModel([tool_call_reply(("add", {"left": 1, "right": 2})), text_reply("3")])
    runtime = await bounded(
        create_runtime(options(tmp_path, model=model, tools=[add], extensions=[probe(log, "p")]))
    )
    stream = runtime.agent.prompt("sum")
    events = [event.type async for event in stream]
    await bounded(runtime.agent.wait_for_subscribers())
    assert log == ["p:activate", *(f"p:{kind}" for kind in events)]
    assert events[0] == "message.accepted"
    assert events[-1] == "run.finished"
    await bounded(runtime.dispose())
    assert log[-1] == "p:dispose"


async def test_a_failing_hook_poisons_with_one_error(tmp_path: Path) -> None:
    log: list[str] = []
    model = ScriptedModel([text_reply("a"), text_reply("b")])
    runtime = await bounded(
        create_runtime(
            options(
                tmp_path,
                model=model,
                extensions=[probe(log, "ok"), probe(log, "bad", fail_hook=True)],
            )
        )
    )
    await bounded(runtime.agent.run("one"))
    await bounded(runtime.agent.wait_for_subscribers())
    assert runtime.state == "failed"
    first = await expect_error(runtime.flush(), "RUNTIME_EVENT_FAILED")
    second = await expect_error(runtime.flush(), "RUNTIME_EVENT_FAILED")
    assert first is second is runtime.error
    assert str(first) == "Extension hooks failed for an agent event"
    group = first.__cause__
    assert isinstance(group, RuntimeAggregateError)
    assert [str(e) for e in group.errors] == ["bad[0]: boom"]
    # Only the first event reached the hooks: the tail stops at the first failure.
    assert log == ["ok:activate", "bad:activate", "ok:message.accepted", "bad:message.accepted"]
    # The conversation itself was still recorded.
    await bounded(runtime.agent.run("two"))
    assert await on_disk(runtime.workspace.session_path) == runtime.agent.messages
    with pytest.raises(TetherRuntimeError) as caught:
        await bounded(runtime.dispose())
    assert caught.value.code == "RUNTIME_DISPOSAL_FAILED"
    assert str(caught.value) == "Runtime disposal failed"
    disposal = caught.value.__cause__
    assert isinstance(disposal, RuntimeAggregateError)
    assert disposal.errors == (first,)
    assert runtime.state == "disposed"
    assert log[-2:] == ["bad:dispose", "ok:dispose"]


async def test_a_session_changed_outside_the_runtime_diverges(tmp_path: Path) -> None:
    model = ScriptedModel([text_reply("a"), text_reply("b")])
    runtime = await bounded(create_runtime(options(tmp_path, model=model)))
    await bounded(runtime.agent.run("one"))
    await bounded(runtime.session.append(_user("outsider", "hello")))
    await expect_error(runtime.flush(), "RUNTIME_SESSION_DIVERGED")
    assert runtime.state == "failed"
    poisoned = runtime.error
    assert poisoned is not None
    assert poisoned.code == "RUNTIME_SESSION_DIVERGED"
    assert str(poisoned) == (
        "Runtime session diverged from the agent transcript: "
        "the session was changed outside the runtime"
    )
    with pytest.raises(TetherRuntimeError) as caught:
        await bounded(runtime.dispose())
    assert caught.value.code == "RUNTIME_DISPOSAL_FAILED"
    assert cast(RuntimeAggregateError, caught.value.__cause__).errors == (poisoned,)


async def test_divergence_is_detected_at_run_finished(tmp_path: Path) -> None:
    model = ScriptedModel([text_reply("a")])
    runtime = await bounded(create_runtime(options(tmp_path, model=model)))
    await bounded(runtime.session.append(_user("outsider", "hello")))
    await bounded(runtime.agent.run("one"))
    await bounded(runtime.agent.wait_for_subscribers())
    assert runtime.state == "failed"
    error = await expect_error(runtime.flush(), "RUNTIME_SESSION_DIVERGED")
    assert error is runtime.error
    with pytest.raises(TetherRuntimeError):
        await bounded(runtime.dispose())


def _causes(error: BaseException) -> list[BaseException]:
    """``error``'s causes, depth first (an aggregate's errors included)."""
    found: list[BaseException] = []
    pending: list[BaseException] = [error]
    while pending:
        current = pending.pop()
        found.append(current)
        if isinstance(current, BaseExceptionGroup):
            pending.extend(cast("BaseExceptionGroup[BaseException]", current).exceptions)
        if current.__cause__ is not None:
            pending.append(current.__cause__)
    return found


async def test_a_storage_failure_after_construction_is_an_event_failure_with_its_cause(
    tmp_path: Path,
) -> None:
    # Issue 25, item 13: RUNTIME_EVENT_FAILED with the store's error reachable, not
    # RUNTIME_SESSION_DIVERGED with no cause.
    runtime = await bounded(create_runtime(options(tmp_path)))
    append_behind_the_stores_back(runtime.workspace.session_path)
    result = await bounded(runtime.agent.run("hi"))
    assert result.status == "failed"
    assert result.error.code == "AGENT_RECORDING_FAILED"
    await bounded(runtime.agent.wait_for_subscribers())
    error = await expect_error(runtime.flush(), "RUNTIME_EVENT_FAILED")
    assert error is runtime.error
    store_errors = [e for e in _causes(error) if isinstance(e, SessionStoreError)]
    assert [e.code for e in store_errors] == ["SESSION_FILE_CHANGED"]
    # The run's outcome reported it: disposal does not report it again (the store's flush
    # finds the same changed file), and the runtime keeps its error.
    await bounded(runtime.dispose())
    assert runtime.state == "disposed"
    assert runtime.error is error


async def test_a_disk_failure_after_construction_is_an_event_failure_with_its_cause(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = await bounded(create_runtime(options(tmp_path)))
    full = OSError(errno.ENOSPC, "No space left on device")

    def fsync(fd: int) -> None:
        raise full

    monkeypatch.setattr(session_io, "fsync", fsync)
    result = await bounded(runtime.agent.run("hi"))
    assert result.error.code == "AGENT_RECORDING_FAILED"
    await bounded(runtime.agent.wait_for_subscribers())
    monkeypatch.undo()
    error = await expect_error(runtime.flush(), "RUNTIME_EVENT_FAILED")
    assert full in _causes(error)
    await bounded(runtime.dispose())  # reported once, by the run: not again at disposal
    assert runtime.state == "disposed"
    assert runtime.error is error


def _failing_writes(monkeypatch: pytest.MonkeyPatch, *, repair_fails: bool) -> OSError:
    """Every session write fails as on a full disk (and, with ``repair_fails``, so does
    cutting the file back: the store becomes unusable, ``SESSION_WRITE_FAILED``)."""
    full = OSError(errno.ENOSPC, "No space left on device")

    def write(fd: int, data: bytes | memoryview, offset: int) -> int:
        raise full

    def truncate(fd: int, size: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(session_io, "write", write)
    if repair_fails:
        monkeypatch.setattr(session_io, "truncate", truncate)
    return full


@pytest.mark.parametrize("repair_fails", [False, True], ids=["write-fails", "store-unusable"])
async def test_a_recording_failure_is_reported_once_not_again_at_disposal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, repair_fails: bool
) -> None:
    """Regression: a run that failed ``AGENT_RECORDING_FAILED`` (a full disk) left the
    runtime poisoned, and disposing it raised ``RUNTIME_DISPOSAL_FAILED`` with that same
    failure (and, for an unusable store, the store's flush raising it once more): every
    ``tether run`` on a full disk ended with a second error on top of the run's."""
    runtime = await bounded(create_runtime(options(tmp_path)))
    full = _failing_writes(monkeypatch, repair_fails=repair_fails)
    result = await bounded(runtime.agent.run("hi"))
    assert result.status == "failed"
    assert result.error.code == "AGENT_RECORDING_FAILED"
    await bounded(runtime.agent.wait_for_subscribers())
    assert runtime.state == "failed"
    poison = runtime.error
    assert poison is not None
    assert poison.code == "RUNTIME_EVENT_FAILED"
    assert full in _causes(poison)
    await bounded(runtime.dispose())
    assert runtime.state == "disposed"
    assert runtime.error is poison


async def test_a_disposal_failure_after_a_recording_failure_is_still_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = await bounded(
        create_runtime(options(tmp_path, extensions=[probe([], "x", fail_dispose=True)]))
    )
    _failing_writes(monkeypatch, repair_fails=True)
    result = await bounded(runtime.agent.run("hi"))
    assert result.error.code == "AGENT_RECORDING_FAILED"
    with pytest.raises(TetherRuntimeError) as caught:
        await bounded(runtime.dispose())
    assert caught.value.code == "RUNTIME_DISPOSAL_FAILED"
    errors = cast(RuntimeAggregateError, caught.value.__cause__).errors
    assert [getattr(e, "code", None) for e in errors] == ["EXTENSION_DISPOSAL_FAILED"]
    assert runtime.state == "disposed"


async def test_compaction_keeps_session_and_agent_coherent(tmp_path: Path) -> None:
    from tether.abort import AbortSignal
    from tether.agent.auto_compaction import AutoCompaction
    from tether.agent.compaction import ContextSummaryRequest

    def summarize(request: ContextSummaryRequest, signal: AbortSignal) -> str:
        return f"{len(request.messages)} messages"

    replies = [text_reply(f"answer {n} " + "x" * 60, response_id=f"r{n}") for n in range(30)]
    policy = AutoCompaction(context_window=800, reserve_tokens=200, summarizer=summarize)
    model = ScriptedModel(replies)
    runtime = await bounded(
        create_runtime(options(tmp_path, model=model, agent_options={"compaction": policy}))
    )
    for n in range(30):
        assert (await bounded(runtime.agent.run(f"question {n}"))).status == "completed"
    assert len(runtime.agent.compactions) >= 1
    assert runtime.session.active_context().compaction is not None
    await bounded(runtime.flush())
    assert runtime.state == "open"
    await bounded(runtime.dispose())
    resumed = await bounded(
        create_runtime(
            options(tmp_path, mode="resume", model=model, agent_options={"compaction": policy})
        )
    )
    assert resumed.agent.messages == runtime.agent.messages
    await bounded(resumed.dispose())


async def test_an_unanswered_call_is_closed_on_resume(tmp_path: Path) -> None:
    from tether import AssistantMessage, ToolCall

    tree = SessionTree(await SessionStore.create(tmp_path / "session.jsonl"))
    await tree.append(_user("u1", "go"))
    call = ToolCall(id="call-1", name="add", arguments=cast(Any, {"left": 1, "right": 2}))
    await tree.append(AssistantMessage(id="a1", content=(call,)))
    await tree.store.close()
    runtime = await bounded(create_runtime(options(tmp_path, mode="resume")))
    assert [m.role for m in runtime.agent.messages] == ["user", "assistant", "toolResult"]
    assert await on_disk(runtime.workspace.session_path) == runtime.agent.messages
    await bounded(runtime.dispose())


# --- reentrancy and disposal ------------------------------------------------------------------


async def test_hooks_and_disposers_cannot_reenter_their_runtime(tmp_path: Path) -> None:
    holder: list[Runtime] = []
    seen: list[str] = []

    async def hook(event: AgentEvent) -> None:
        if event.type != "run.finished":
            return
        try:
            await holder[0].flush()
        except TetherRuntimeError as error:
            seen.append(f"flush:{error.code}")
        try:
            holder[0].dispose()
        except TetherRuntimeError as error:
            seen.append(f"dispose:{error.code}")

    def disposer() -> None:
        try:
            holder[0].dispose()
        except TetherRuntimeError as error:
            seen.append(f"disposer:{error.code}:{error}")

    runtime = await bounded(
        create_runtime(options(tmp_path, extensions=[probe([], "r", hook=hook, disposer=disposer)]))
    )
    holder.append(runtime)
    await bounded(runtime.agent.run("hi"))
    await bounded(runtime.agent.wait_for_subscribers())
    assert seen == ["flush:RUNTIME_REENTRANT_OPERATION", "dispose:RUNTIME_REENTRANT_OPERATION"]
    assert runtime.state == "open"
    await bounded(runtime.flush())
    await bounded(runtime.dispose())
    assert seen[-1] == (
        "disposer:RUNTIME_REENTRANT_OPERATION:"
        "Runtime.dispose() cannot be called from inside an operation it would wait for"
    )


async def test_dispose_cancels_a_run_in_flight_and_persists_it(tmp_path: Path) -> None:
    entered = asyncio.Event()
    log: list[str] = []

    @tool
    async def wait() -> str:
        """Wait until cancelled."""
        entered.set()
        await asyncio.Event().wait()
        return "never"

    model = ScriptedModel([tool_call_reply(("wait", {}))])
    runtime = await bounded(
        create_runtime(options(tmp_path, model=model, tools=[wait], extensions=[probe(log, "p")]))
    )
    stream = runtime.agent.prompt("go")
    await bounded(entered.wait())
    disposal = runtime.dispose()
    assert runtime.state == "disposing"
    await expect_error(runtime.flush(), "RUNTIME_DISPOSED")
    await bounded(disposal)
    result = await bounded(stream.result)
    assert result.status == "cancelled"
    assert result.reason == RUNTIME_DISPOSE_REASON
    assert runtime.state == "disposed"
    assert await on_disk(runtime.workspace.session_path) == runtime.agent.messages
    assert [m.role for m in runtime.agent.messages] == ["user"]
    # The cancelled run's terminal event reached the extension before it was disposed.
    assert log[-2:] == ["p:run.finished", "p:dispose"]


async def test_cancelling_a_waiter_does_not_stop_disposal(tmp_path: Path) -> None:
    runtime = await bounded(create_runtime(options(tmp_path)))
    waiter = asyncio.ensure_future(_await(runtime.dispose()))
    await asyncio.sleep(0)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    await bounded(runtime.dispose())
    assert runtime.state == "disposed"


async def _await(awaitable: Any) -> None:
    await awaitable


async def test_a_failing_extension_disposal_is_reported(tmp_path: Path) -> None:
    runtime = await bounded(
        create_runtime(options(tmp_path, extensions=[probe([], "x", fail_dispose=True)]))
    )
    with pytest.raises(TetherRuntimeError) as caught:
        await bounded(runtime.dispose())
    assert caught.value.code == "RUNTIME_DISPOSAL_FAILED"
    errors = cast(RuntimeAggregateError, caught.value.__cause__).errors
    assert [getattr(e, "code", None) for e in errors] == ["EXTENSION_DISPOSAL_FAILED"]
    assert runtime.state == "disposed"
    again = await bounded(create_runtime(options(tmp_path, mode="resume")))
    await bounded(again.dispose())


# --- more rollback and override hazards -------------------------------------------------------


async def test_activation_and_host_disposal_failures_are_both_reported(tmp_path: Path) -> None:
    log: list[str] = []
    definitions = [probe(log, "a", fail_dispose=True), probe(log, "b", fail_activate=True)]
    error = await expect_error(
        create_runtime(options(tmp_path, extensions=definitions)), "RUNTIME_CONSTRUCTION_FAILED"
    )
    cause = error.__cause__
    assert isinstance(cause, RuntimeAggregateError)
    assert str(cause).startswith("Extension activation and host disposal failed")
    assert [getattr(e, "code", None) for e in cause.errors] == [
        "EXTENSION_ACTIVATION_FAILED",
        "EXTENSION_DISPOSAL_FAILED",
    ]
    assert tree_of(tmp_path) == []


async def test_a_factory_cancelling_itself_or_its_fallback(tmp_path: Path) -> None:
    async def cancels_itself(spec: Any, fallback: Any) -> Any:
        raise asyncio.CancelledError

    error = await expect_error(
        create_runtime(options(tmp_path, factories={"create_tools": cancels_itself})),
        "RUNTIME_CONSTRUCTION_FAILED",
    )
    assert str(error.__cause__) == "Tools factory was cancelled"

    def cancels_fallback(spec: Any, fallback: Any) -> Any:
        fallback(spec).cancel()
        return ToolRegistry()

    error = await expect_error(
        create_runtime(options(tmp_path, factories={"create_tools": cancels_fallback})),
        "RUNTIME_CONSTRUCTION_FAILED",
    )
    assert str(error.__cause__) == "Tools fallback was cancelled"
    assert tree_of(tmp_path) == []


async def test_a_discarded_fallback_host_that_fails_to_dispose(tmp_path: Path) -> None:
    log: list[str] = []

    async def extensions_factory(spec: Any, fallback: Any) -> ExtensionHost:
        await fallback(spec)
        return ExtensionHost(resources=spec.resources, tools=spec.tools)

    error = await expect_error(
        create_runtime(
            options(
                tmp_path,
                extensions=[probe(log, "x", fail_dispose=True)],
                factories={"create_extensions": extensions_factory},
            )
        ),
        "RUNTIME_CONSTRUCTION_FAILED",
    )
    cause = error.__cause__
    assert isinstance(cause, RuntimeAggregateError)
    assert str(cause).startswith("Extensions factory cleanup failed")
    assert log == ["x:activate", "x:dispose"]
    assert tree_of(tmp_path) == []


def _replace_with_symlink(path: str, target: Path) -> None:
    os.unlink(path)
    os.symlink(target, path)


def _remove(path: str) -> None:
    os.unlink(path)


async def test_created_file_rollback_checks_what_is_there(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.write_text("x")
    root = tmp_path / "root"
    root.mkdir()

    def failing_after(action: Callable[[str], None]) -> Callable[[Any, Any], Any]:
        def agent_factory(spec: Any, fallback: Any) -> Any:
            action(spec.workspace.session_path)
            raise ValueError("no agent")

        return agent_factory

    # Replaced by a symlink: kept, with the reason.
    error = await expect_error(
        create_runtime(
            options(
                root,
                factories={
                    "create_agent": failing_after(lambda p: _replace_with_symlink(p, target))
                },
            )
        ),
        "RUNTIME_CONSTRUCTION_FAILED",
    )
    group = cast(RuntimeAggregateError, error.__cause__)
    kept = cast(TetherRuntimeError, group.errors[1])
    assert kept.code == "RUNTIME_SESSION_ROLLBACK_FAILED"
    assert str(kept).startswith("Runtime created session file session.jsonl changed; it was kept (")
    assert (root / "session.jsonl").is_symlink()
    os.unlink(root / "session.jsonl")
    # Grown in place (same inode, more bytes): kept.
    error = await expect_error(
        create_runtime(
            options(root, factories={"create_agent": failing_after(append_behind_the_stores_back)})
        ),
        "RUNTIME_CONSTRUCTION_FAILED",
    )
    assert str(error) == "Runtime construction and rollback failed"
    assert (root / "session.jsonl").exists()
    os.unlink(root / "session.jsonl")
    # Already gone: nothing to do, the rollback is clean.
    error = await expect_error(
        create_runtime(options(root, factories={"create_agent": failing_after(_remove)})),
        "RUNTIME_CONSTRUCTION_FAILED",
    )
    assert str(error) == "Runtime construction failed: Agent factory threw"
    assert tree_of(root) == []


async def test_a_replaced_parent_is_kept_and_the_session_parent_is_checked(
    tmp_path: Path,
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    root = tmp_path / "root"
    root.mkdir()

    def recreate(spec: Any, fallback: Any) -> Any:
        (root / "p").rename(root / "p-old")  # keeps its inode in use
        (root / "p").mkdir()
        raise ValueError("no tools")

    error = await expect_error(
        create_runtime(options(root, path="p/s.jsonl", factories={"create_tools": recreate})),
        "RUNTIME_CONSTRUCTION_FAILED",
    )
    group = cast(RuntimeAggregateError, error.__cause__)
    assert cast(TetherRuntimeError, group.errors[1]).code == "RUNTIME_SESSION_ROLLBACK_FAILED"
    assert tree_of(root) == ["p", "p-old"]
    (root / "p").rmdir()
    (root / "p-old").rmdir()

    def escape(spec: Any, fallback: Any) -> Any:
        (root / "q").rmdir()
        (root / "q").symlink_to(outside)
        return fallback(spec)

    error = await expect_error(
        create_runtime(options(root, path="q/s.jsonl", factories={"create_resources": escape})),
        "RUNTIME_CONSTRUCTION_FAILED",
    )
    group = cast(RuntimeAggregateError, error.__cause__)
    assert str(group.errors[0]) == "Runtime session parent escapes the workspace root"
    assert tree_of(outside) == []
    (root / "q").unlink()

    def vanish(spec: Any, fallback: Any) -> Any:
        (root / "r").rmdir()
        return fallback(spec)

    error = await expect_error(
        create_runtime(options(root, path="r/s.jsonl", factories={"create_resources": vanish})),
        "RUNTIME_CONSTRUCTION_FAILED",
    )
    assert str(error) == "Runtime construction and rollback failed"
    group = cast(RuntimeAggregateError, error.__cause__)
    assert str(group.errors[0]) == "Runtime session parent directory is missing"
    assert tree_of(root) == []


# --- more of the event tail -------------------------------------------------------------------


async def test_a_host_that_cannot_emit_poisons_as_event_failed(tmp_path: Path) -> None:
    runtime = await bounded(create_runtime(options(tmp_path)))
    assert isinstance(runtime.extensions, ExtensionHost)
    await bounded(runtime.extensions.dispose())
    await bounded(runtime.agent.run("hi"))
    await bounded(runtime.agent.wait_for_subscribers())
    error = await expect_error(runtime.flush(), "RUNTIME_EVENT_FAILED")
    assert str(error) == "Agent event processing failed"
    assert getattr(error.__cause__, "code", None) == "EXTENSION_HOST_DISPOSED"
    with pytest.raises(TetherRuntimeError):
        await bounded(runtime.dispose())


async def test_flush_while_running_and_flush_behind_a_poisoning_event(tmp_path: Path) -> None:
    started = asyncio.Event()
    release = asyncio.Event()

    @tool
    async def wait() -> str:
        """Wait for the test."""
        started.set()
        await release.wait()
        return "ok"

    model = ScriptedModel([tool_call_reply(("wait", {})), text_reply("done")])
    log: list[str] = []
    runtime = await bounded(
        create_runtime(options(tmp_path, model=model, tools=[wait], extensions=[probe(log, "p")]))
    )
    stream = runtime.agent.prompt("go")
    await bounded(started.wait())
    await bounded(runtime.flush())  # a running agent is not compared: it is ahead by design
    release.set()
    assert (await bounded(stream.result)).status == "completed"
    await bounded(runtime.flush())
    assert repr(runtime) == f"<Runtime open {runtime.workspace.session_path!r}>"
    await bounded(runtime.dispose())

    failing = await bounded(
        create_runtime(
            options(
                tmp_path,
                path="b.jsonl",
                model=ScriptedModel([text_reply("x")]),
                extensions=[probe([], "bad", fail_hook=True)],
            )
        )
    )
    stream = failing.agent.prompt("go")
    flushed = asyncio.ensure_future(failing.flush())  # queued behind the event operations
    await bounded(stream.result)
    await expect_error(flushed, "RUNTIME_EVENT_FAILED")
    with pytest.raises(TetherRuntimeError):
        await bounded(failing.dispose())


async def test_dispose_checks_coherence(tmp_path: Path) -> None:
    runtime = await bounded(create_runtime(options(tmp_path)))
    await bounded(runtime.session.append(_user("outsider", "hello")))
    disposal = runtime.dispose()
    with pytest.raises(TetherRuntimeError) as caught:
        await bounded(disposal)
    assert disposal.done()
    errors = cast(RuntimeAggregateError, caught.value.__cause__).errors
    assert [getattr(e, "code", None) for e in errors] == ["RUNTIME_SESSION_DIVERGED"]
    assert runtime.state == "disposed"


async def test_tools_may_be_a_registry(tmp_path: Path) -> None:
    registry = ToolRegistry([add])
    runtime = await bounded(create_runtime(options(tmp_path, tools=registry)))
    registry.register(tool(name="late", description="Late.")(lambda: 1))
    assert runtime.tools.names == (*CODING, "add")
    await bounded(runtime.dispose())


async def test_cancelling_a_construction_rolls_it_back(tmp_path: Path) -> None:
    entered = asyncio.Event()

    async def agent_factory(spec: Any, fallback: Any) -> Any:
        entered.set()
        await asyncio.Event().wait()

    task = asyncio.ensure_future(
        create_runtime(
            options(tmp_path, path="p/s.jsonl", factories={"create_agent": agent_factory})
        )
    )
    await bounded(entered.wait())
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert tree_of(tmp_path) == []
    runtime = await bounded(create_runtime(options(tmp_path, path="p/s.jsonl")))
    await bounded(runtime.dispose())


def test_the_aggregate_is_frozen() -> None:
    group = RuntimeAggregateError(
        "RUNTIME_DISPOSAL_FAILED", "two", [ValueError("a"), KeyError("b")]
    )
    assert group.errors == group.exceptions
    assert len(group.errors) == 2
    with pytest.raises(AttributeError):
        group.extra = 1
    with pytest.raises(AttributeError):
        delattr(group, "errors")
    group.__cause__ = ValueError("managed by Python")
    group.add_note("a note")
    del group.__notes__
    assert not hasattr(group, "__notes__")
    error = TetherRuntimeError("RUNTIME_DISPOSED", "gone")
    assert (error.code, str(error), error.name) == (
        "RUNTIME_DISPOSED",
        "gone",
        "TetherRuntimeError",
    )


async def test_a_session_directory_outside_the_workspace(tmp_path: Path) -> None:
    workspace = tmp_path / "project"
    sessions = tmp_path / "data" / "sessions"
    workspace.mkdir()
    sessions.mkdir(parents=True)
    session = {"path": "abc.jsonl", "mode": "create", "directory": str(sessions)}
    runtime = await bounded(
        create_runtime(
            {"cwd": workspace, "session": session, "model": ScriptedModel([text_reply("a")])}
        )
    )
    assert runtime.workspace.root == real(workspace)
    assert runtime.workspace.session_path == str(Path(real(sessions)) / "abc.jsonl")
    await bounded(runtime.agent.run("hi"))
    await bounded(runtime.flush())
    assert tree_of(workspace) == []
    assert len(await on_disk(runtime.workspace.session_path)) == 2
    sessions.rename(tmp_path / "data" / "moved")
    sessions.mkdir()
    error = await expect_error(runtime.flush(), "RUNTIME_ROOT_CHANGED")
    assert str(error) == "Runtime session directory was replaced or moved"
    sessions.rmdir()
    (tmp_path / "data" / "moved").rename(sessions)
    await bounded(runtime.dispose())

    def make(**changes: Any) -> dict[str, Any]:
        return {
            "cwd": workspace,
            "session": {**session, **changes},
            "model": ScriptedModel([]),
        }

    error = await expect_error(
        create_runtime(make(directory=str(tmp_path / "none"))), "RUNTIME_INVALID_OPTIONS"
    )
    assert str(error) == "Runtime session directory cannot be resolved to a directory"
    (sessions / "out").symlink_to(workspace)
    error = await expect_error(create_runtime(make(path="out/x.jsonl")), "RUNTIME_INVALID_OPTIONS")
    assert str(error) == "Runtime session parent is not a directory inside the session directory"
    resumed = await bounded(create_runtime(make(mode="resume")))
    assert len(resumed.agent.messages) == 2
    await bounded(resumed.dispose())
