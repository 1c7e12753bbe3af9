"""Checkpoint 12 extensions, rule by rule (``tether.agent.extensions``).

Callbacks that must stay busy wait on an ``asyncio.Event`` the test controls; there are no
sleeps, and waits a regression could turn into hangs are bounded by ``asyncio.timeout``. The
harness (tests/support.py) fails a test whose loop exception handler was called, so every
ignored rejection below also checks that the host's futures are pre-observed.
"""

from __future__ import annotations

import asyncio
import dataclasses
import pickle
import types
from collections.abc import Awaitable, Callable, Generator
from pathlib import Path
from typing import Any, cast

import pytest

from support import turns
from tether import (
    AbortController,
    AbortError,
    AbortSignal,
    AgentEvent,
    CompletedRunResult,
    TetherError,
    ToolDefinition,
    ToolRegistry,
    UserMessage,
    Valid,
    define_tool,
)
from tether.agent.extensions import (
    EXTENSION_ERROR_CODES,
    ExtensionAggregateError,
    ExtensionContext,
    ExtensionDefinition,
    ExtensionError,
    ExtensionHookFailure,
    ExtensionHost,
    ExtensionMetadata,
)
from tether.agent.extensions import _cleanup as cleanup_module
from tether.agent.resources import ResourceLoader
from tether.protocol import (
    MessageAcceptedEvent,
    MessageAcceptedPayload,
    RunFinishedEvent,
    RunFinishedPayload,
)

USER = UserMessage(id="u1", content="hi")
EVENT = MessageAcceptedEvent(sequence=0, payload=MessageAcceptedPayload(message=USER))
FINISHED = RunFinishedEvent(
    sequence=1,
    payload=RunFinishedPayload(result=CompletedRunResult(messages=(USER,), final_text="done")),
)


async def _execute(value: object, context: object) -> object:
    return value


def make_tool(name: str) -> ToolDefinition[Any, Any]:
    return define_tool(
        name=name,
        description=f"The {name} tool",
        validate=lambda a: Valid(value=a),
        execute=_execute,
    )


async def make_host(tmp_path: Path, tools: object = None) -> ExtensionHost:
    loader = await ResourceLoader.create([{"id": "root", "directory": str(tmp_path)}])
    return ExtensionHost(resources=loader, tools=cast(Any, tools))


async def fails(
    awaitable: Awaitable[object], code: str, message: str | None = None
) -> ExtensionError:
    with pytest.raises(ExtensionError) as caught:
        async with asyncio.timeout(5):
            await awaitable
    assert caught.value.code == code, caught.value
    if message is not None:
        assert str(caught.value) == message
    return caught.value


def raises_sync(
    call: Callable[[], object], code: str, message: str | None = None
) -> ExtensionError:
    with pytest.raises(ExtensionError) as caught:
        call()
    assert caught.value.code == code, caught.value
    if message is not None:
        assert str(caught.value) == message
    return caught.value


class Instance:
    """A configurable extension instance that logs what the host calls."""

    def __init__(
        self,
        log: list[str],
        name: str = "ext",
        *,
        tools: tuple[str, ...] = (),
        hooks: int = 0,
        disposers: int = 0,
        fail: BaseException | None = None,
        dispose_fails: BaseException | None = None,
        disposer_fails: dict[int, Exception] | None = None,
    ) -> None:
        self.log = log
        self.name = name
        self.tools = tools
        self.hooks = hooks
        self.disposers = disposers
        self.fail = fail
        self.dispose_fails = dispose_fails
        self.disposer_fails = disposer_fails or {}
        self.context: ExtensionContext | None = None

    def activate(self, context: ExtensionContext) -> None:
        self.context = context
        self.log.append(f"{self.name}.activate")
        for tool_name in self.tools:
            context.register_tool(make_tool(tool_name))
        for index in range(self.hooks):
            context.on_agent_event(self._hook(index))
        for index in range(self.disposers):
            context.on_dispose(self._disposer(index))
        if self.fail is not None:
            raise self.fail

    def _hook(self, index: int) -> Callable[[AgentEvent], None]:
        def hook(event: AgentEvent) -> None:
            self.log.append(f"{self.name}.hook{index}:{event.sequence}")

        return hook

    def _disposer(self, index: int) -> Callable[[], None]:
        def disposer() -> None:
            self.log.append(f"{self.name}.disposer{index}")
            failure = self.disposer_fails.get(index)
            if failure is not None:
                raise failure

        return disposer

    def dispose(self) -> None:
        self.log.append(f"{self.name}.dispose")
        if self.dispose_fails is not None:
            raise self.dispose_fails


def on_activate(activate: Callable[[ExtensionContext], object]) -> dict[str, object]:
    """An exact-dict instance with only ``activate``."""
    return {"activate": activate}


def definition(instance: object, extension_id: str = "ext") -> ExtensionDefinition:
    return ExtensionDefinition(id=extension_id, create=lambda: cast(Any, instance))


# -- codes and errors ------------------------------------------------------------------------


def test_the_twelve_workshop_codes_then_load_failed_and_timed_out() -> None:
    assert EXTENSION_ERROR_CODES == (
        "EXTENSION_INVALID_OPTIONS",
        "INVALID_EXTENSION_DEFINITION",
        "DUPLICATE_EXTENSION_ID",
        "EXTENSION_NOT_FOUND",
        "EXTENSION_ALREADY_ACTIVE",
        "EXTENSION_ACTIVATION_FAILED",
        "EXTENSION_ACTIVATION_ROLLBACK_FAILED",
        "EXTENSION_CANCELLED",
        "EXTENSION_HOST_DISPOSED",
        "EXTENSION_REENTRANT_OPERATION",
        "EXTENSION_DISPOSAL_FAILED",
        "INVALID_AGENT_EVENT",
        "EXTENSION_LOAD_FAILED",
        "EXTENSION_TIMED_OUT",
    )
    error = ExtensionError("EXTENSION_NOT_FOUND", "missing")
    assert (error.code, error.name, str(error)) == (
        "EXTENSION_NOT_FOUND",
        "ExtensionError",
        "missing",
    )


def test_aggregate_is_frozen_ordered_and_a_tether_error() -> None:
    first, second = ValueError("a"), KeyError("b")
    aggregate = ExtensionAggregateError("EXTENSION_DISPOSAL_FAILED", "two failed", [first, second])
    assert aggregate.errors == (first, second)
    assert aggregate.exceptions is aggregate.errors
    assert (aggregate.code, aggregate.name) == (
        "EXTENSION_DISPOSAL_FAILED",
        "ExtensionAggregateError",
    )
    assert (aggregate.message, str(aggregate)) == ("two failed", "two failed")
    assert isinstance(aggregate, ExceptionGroup)
    assert isinstance(aggregate, TetherError)
    assert repr(aggregate) == (
        "ExtensionAggregateError(code='EXTENSION_DISPOSAL_FAILED', message='two failed', "
        "errors=(ValueError('a'), KeyError('b')))"
    )
    for attribute in ("extra", "code", "_code", "args"):
        with pytest.raises(AttributeError):
            setattr(aggregate, attribute, 1)
    with pytest.raises(AttributeError, match="frozen"):
        del aggregate.message  # pyright: ignore[reportAttributeAccessIssue]
    aggregate.add_note("Python itself may still annotate it")  # its own dunder state stays writable
    aggregate.__cause__ = first
    assert aggregate.__notes__ == ["Python itself may still annotate it"]
    del aggregate.__notes__
    assert not hasattr(aggregate, "__notes__")
    copy = pickle.loads(pickle.dumps(aggregate))
    assert type(copy) is ExtensionAggregateError
    assert (copy.code, copy.message, [str(error) for error in copy.errors]) == (
        "EXTENSION_DISPOSAL_FAILED",
        "two failed",
        ["a", "'b'"],
    )
    with pytest.raises(ExceptionGroup) as caught:  # except* splits it like any group
        _raise_all_but_value_errors(aggregate)
    assert caught.value.exceptions == (second,)


def _raise_all_but_value_errors(group: ExceptionGroup[Exception]) -> None:
    try:
        raise group
    except* ValueError:
        pass


# -- construction ------------------------------------------------------------------------------


async def test_construction_requires_a_genuine_loader_and_valid_tools(tmp_path: Path) -> None:
    loader = await ResourceLoader.create([{"id": "root", "directory": str(tmp_path)}])
    for resources in (None, object(), "loader"):
        raises_sync(
            lambda resources=resources: ExtensionHost(resources=cast(Any, resources)),
            "EXTENSION_INVALID_OPTIONS",
            "ExtensionHost resources must be a ResourceLoader",
        )

    class ListSubclass(list[object]):
        pass

    for tools in ({"a": make_tool("a")}, "tools", ListSubclass([make_tool("a")]), 3):
        raises_sync(
            lambda tools=tools: ExtensionHost(resources=loader, tools=cast(Any, tools)),
            "EXTENSION_INVALID_OPTIONS",
            "ExtensionHost tools must be a ToolRegistry or a list of tool definitions",
        )
    error = raises_sync(
        lambda: ExtensionHost(resources=loader, tools=[make_tool("a"), make_tool("a")]),
        "EXTENSION_INVALID_OPTIONS",
        'ExtensionHost tools are invalid: Tool name "a" is already registered',
    )
    assert type(error.__cause__).__name__ == "ToolContractError"
    assert ExtensionHost(resources=loader).tools.names == ()
    assert ExtensionHost(resources=loader, tools=(make_tool("a"),)).tools.names == ("a",)


async def test_a_registry_is_snapshotted_through_the_base_class(tmp_path: Path) -> None:
    registry = ToolRegistry([make_tool("base")])
    host = await make_host(tmp_path, registry)
    registry.register(make_tool("later"))
    assert host.tools.names == ("base",)

    class Lying(ToolRegistry):
        __slots__ = ()

        def snapshot(self) -> ToolRegistry:
            raise AssertionError("never called")

    lying = Lying([make_tool("base")])
    assert (await make_host(tmp_path, lying)).tools.names == ("base",)

    armed: list[bool] = []

    class Shadowing(ToolRegistry):
        __slots__ = ()

        def __getattribute__(self, name: str) -> Any:
            if armed:
                raise AssertionError("never called")
            return super().__getattribute__(name)

    shadowing = Shadowing([make_tool("base")])
    armed.append(True)
    raises_sync(
        lambda: ExtensionHost(resources=registry_host_loader(host), tools=shadowing),
        "EXTENSION_INVALID_OPTIONS",
        "ExtensionHost tools must be a ToolRegistry or a list of tool definitions",
    )


def registry_host_loader(host: ExtensionHost) -> ResourceLoader:
    return host.resources


async def test_tools_is_a_detached_snapshot(tmp_path: Path) -> None:
    host = await make_host(tmp_path, [make_tool("base")])
    first = host.tools
    assert first is not host.tools
    first.register(make_tool("mine"))
    assert host.tools.names == ("base",)
    assert host.resources is registry_host_loader(host)


# -- discovery --------------------------------------------------------------------------------


async def test_discover_records_in_order_without_calling_factories(tmp_path: Path) -> None:
    host = await make_host(tmp_path)
    called: list[str] = []

    def factory() -> Any:
        called.append("create")
        return Instance([])

    host.discover([ExtensionDefinition(id="b", create=factory), {"id": "a", "create": factory}])
    host.discover(())
    host.discover((ExtensionDefinition(id="c", create=factory),))
    assert host.extensions == (
        ExtensionMetadata(id="b", status="discovered"),
        ExtensionMetadata(id="a", status="discovered"),
        ExtensionMetadata(id="c", status="discovered"),
    )
    assert called == []


async def test_discover_rejects_invalid_batches_and_entries(tmp_path: Path) -> None:
    host = await make_host(tmp_path)

    def factory() -> Any:
        return Instance([])

    class ListSubclass(list[object]):
        pass

    class DictSubclass(dict[str, object]):
        pass

    for batch in (None, {"id": "a", "create": factory}, iter([]), ListSubclass()):
        raises_sync(
            lambda batch=batch: host.discover(cast(Any, batch)),
            "INVALID_EXTENSION_DEFINITION",
            "Extension definitions must be a list or tuple",
        )
    raises_sync(
        lambda: host.discover(cast(Any, [DictSubclass(id="a", create=factory)])),
        "INVALID_EXTENSION_DEFINITION",
        "Extension definition 0 must be an ExtensionDefinition or a dict with id and create "
        "(got DictSubclass)",
    )
    raises_sync(
        lambda: host.discover(cast(Any, [{"id": "ok", "create": factory}, object()])),
        "INVALID_EXTENSION_DEFINITION",
        "Extension definition 1 must be an ExtensionDefinition or a dict with id and create "
        "(got object)",
    )
    bad_ids: tuple[object, ...] = ("", " a", "a\n", "\ufeffa", "   ", 3, None)
    for bad_id in bad_ids:
        raises_sync(
            lambda bad_id=bad_id: host.discover([{"id": bad_id, "create": factory}]),
            "INVALID_EXTENSION_DEFINITION",
            "Extension id must be a non-empty string without surrounding whitespace",
        )
        raises_sync(
            lambda bad_id=bad_id: ExtensionDefinition(id=cast(Any, bad_id), create=factory),
            "INVALID_EXTENSION_DEFINITION",
        )
    raises_sync(
        lambda: host.discover([{"id": "a"}]),
        "INVALID_EXTENSION_DEFINITION",
        'Extension "a" create must be a function',
    )
    raises_sync(
        lambda: host.discover([{"id": "a", "create": "not callable"}]),
        "INVALID_EXTENSION_DEFINITION",
        'Extension "a" create must be a function',
    )
    assert host.extensions == ()


async def test_duplicate_ids_record_nothing_from_the_batch(tmp_path: Path) -> None:
    host = await make_host(tmp_path)

    def factory() -> Any:
        return Instance([])

    raises_sync(
        lambda: host.discover(
            [
                {"id": "a", "create": factory},
                {"id": "b", "create": factory},
                {"id": "a", "create": factory},
            ]
        ),
        "DUPLICATE_EXTENSION_ID",
        'Extension id "a" appears twice',
    )
    assert host.extensions == ()
    host.discover([{"id": "a", "create": factory}])
    raises_sync(
        lambda: host.discover([{"id": "c", "create": factory}, {"id": "a", "create": factory}]),
        "DUPLICATE_EXTENSION_ID",
        'Extension id "a" is already discovered',
    )
    assert [meta.id for meta in host.extensions] == ["a"]


# -- activation -------------------------------------------------------------------------------


async def test_activation_commits_tools_hooks_and_a_five_member_context(tmp_path: Path) -> None:
    host = await make_host(tmp_path, [make_tool("base")])
    log: list[str] = []
    instance = Instance(log, tools=("t1", "t2"), hooks=2)
    host.discover([definition(instance)])
    assert await host.activate("ext") is None
    assert host.tools.names == ("base", "t1", "t2")
    assert host.extensions == (ExtensionMetadata(id="ext", status="active"),)
    context = instance.context
    assert context is not None
    assert [f.name for f in dataclasses.fields(context)] == [
        "resources",
        "signal",
        "register_tool",
        "on_agent_event",
        "on_dispose",
    ]
    assert context.resources is host.resources
    assert type(context.signal) is AbortSignal
    assert not context.signal.aborted
    with pytest.raises(dataclasses.FrozenInstanceError):
        context.signal = AbortController().signal  # pyright: ignore[reportAttributeAccessIssue]
    assert await host.emit(EVENT) == ()
    assert log == ["ext.activate", "ext.hook0:0", "ext.hook1:0"]
    await fails(
        host.activate("ext"), "EXTENSION_ALREADY_ACTIVE", 'Extension "ext" is already active'
    )
    await host.dispose()


async def test_a_closed_context_refuses_staging(tmp_path: Path) -> None:
    host = await make_host(tmp_path)
    instance = Instance([])
    host.discover([definition(instance)])
    await host.activate("ext")
    context = instance.context
    assert context is not None
    closed = "Extension activation context is closed"
    raises_sync(
        lambda: context.register_tool(make_tool("late")), "EXTENSION_ACTIVATION_FAILED", closed
    )
    raises_sync(lambda: context.on_agent_event(print), "EXTENSION_ACTIVATION_FAILED", closed)
    raises_sync(lambda: context.on_dispose(print), "EXTENSION_ACTIVATION_FAILED", closed)
    assert host.tools.names == ()
    await host.dispose()


async def test_staging_rejects_hooks_and_disposers_that_are_not_functions(tmp_path: Path) -> None:
    host = await make_host(tmp_path)

    def bad_hook(context: ExtensionContext) -> None:
        context.on_agent_event(cast(Any, "hook"))

    def bad_disposer(context: ExtensionContext) -> None:
        context.on_dispose(cast(Any, 42))

    host.discover(
        [
            definition({"activate": bad_hook}, "hook"),
            definition({"activate": bad_disposer}, "disposer"),
        ]
    )
    await fails(
        host.activate("hook"),
        "INVALID_EXTENSION_DEFINITION",
        'Extension "hook" agent event hook must be a function',
    )
    await fails(
        host.activate("disposer"),
        "INVALID_EXTENSION_DEFINITION",
        'Extension "disposer" disposer must be a function',
    )
    await host.dispose()


async def test_failed_activation_leaves_nothing_and_rolls_back_in_reverse(tmp_path: Path) -> None:
    host = await make_host(tmp_path, [make_tool("base")])
    log: list[str] = []
    boom = ValueError("boom")
    instance = Instance(log, tools=("t1", "t2"), hooks=1, disposers=2, fail=boom)
    host.discover([definition(instance)])
    error = await fails(
        host.activate("ext"),
        "EXTENSION_ACTIVATION_FAILED",
        'Extension "ext" activation failed: boom',
    )
    assert error.__cause__ is boom
    assert log == ["ext.activate", "ext.disposer1", "ext.disposer0", "ext.dispose"]
    assert host.tools.names == ("base",)
    assert host.extensions == (ExtensionMetadata(id="ext", status="failed"),)
    assert await host.emit(EVENT) == ()
    assert log[-1] == "ext.dispose"  # the staged hook never ran
    # a failed extension may be activated again
    instance.fail = None
    log.clear()
    await host.activate("ext")
    assert host.tools.names == ("base", "t1", "t2")
    assert host.extensions == (ExtensionMetadata(id="ext", status="active"),)
    await host.dispose()
    assert log == ["ext.activate", "ext.disposer1", "ext.disposer0", "ext.dispose"]


async def test_failure_messages_use_the_text_then_the_class_name(tmp_path: Path) -> None:
    host = await make_host(tmp_path)
    nameless = type(" ", (Exception,), {})
    cases: tuple[tuple[str, BaseException, str], ...] = (
        ("empty", RuntimeError(), 'Extension "empty" activation failed: RuntimeError'),
        ("blank", KeyError(""), "Extension \"blank\" activation failed: ''"),
        (
            "nameless",
            nameless(),
            'Extension "nameless" activation failed: Extension callback failed',
        ),
    )
    for extension_id, failure, _ in cases:
        host.discover([definition(Instance([], fail=failure), extension_id)])
    for extension_id, _, message in cases:
        await fails(host.activate(extension_id), "EXTENSION_ACTIVATION_FAILED", message)
    await host.dispose()


async def test_rollback_failures_are_aggregated_primary_first(tmp_path: Path) -> None:
    host = await make_host(tmp_path)
    log: list[str] = []
    boom = ValueError("boom")
    second, first, last = RuntimeError("disposer 1"), RuntimeError("disposer 0"), OSError("dispose")
    instance = Instance(
        log,
        disposers=2,
        fail=boom,
        disposer_fails={1: second, 0: first},
        dispose_fails=last,
    )
    host.discover([definition(instance)])
    error = await fails(
        host.activate("ext"),
        "EXTENSION_ACTIVATION_ROLLBACK_FAILED",
        'Extension "ext" activation failed and 3 cleanup(s) failed',
    )
    aggregate = error.__cause__
    assert isinstance(aggregate, ExtensionAggregateError)
    assert aggregate.errors == (boom, second, first, last)
    assert aggregate.code == "EXTENSION_ACTIVATION_ROLLBACK_FAILED"
    assert log == ["ext.activate", "ext.disposer1", "ext.disposer0", "ext.dispose"]
    assert host.extensions == (ExtensionMetadata(id="ext", status="failed"),)
    await host.dispose()


async def test_rollback_primary_is_the_extension_error_when_one_was_raised(tmp_path: Path) -> None:
    host = await make_host(tmp_path)
    log: list[str] = []
    cleanup = RuntimeError("cleanup")

    def dispose() -> None:
        log.append("dispose")
        raise cleanup

    # An instance without activate is invalid, but its dispose was captured first and runs.
    host.discover([definition({"dispose": dispose})])
    error = await fails(host.activate("ext"), "EXTENSION_ACTIVATION_ROLLBACK_FAILED")
    aggregate = error.__cause__
    assert isinstance(aggregate, ExtensionAggregateError)
    primary, rest = aggregate.errors[0], aggregate.errors[1:]
    assert isinstance(primary, ExtensionError)
    assert primary.code == "INVALID_EXTENSION_DEFINITION"
    assert str(primary) == 'Extension "ext" instance must have an activate function'
    assert rest == (cleanup,)
    assert log == ["dispose"]
    await host.dispose()


async def test_a_duplicate_tool_fails_the_whole_batch(tmp_path: Path) -> None:
    host = await make_host(tmp_path, [make_tool("base")])
    log: list[str] = []
    host.discover(
        [
            definition(Instance(log, "a", tools=("fresh", "base"), disposers=1), "a"),
            definition(Instance(log, "b", tools=("x", "x")), "b"),
            definition(Instance(log, "c", tools=("c1",)), "c"),
            definition(Instance(log, "d", tools=("c1",), hooks=1), "d"),
        ]
    )
    await fails(
        host.activate("a"),
        "EXTENSION_ACTIVATION_FAILED",
        'Extension "a" activation failed: Tool name "base" is already registered',
    )
    await fails(
        host.activate("b"),
        "EXTENSION_ACTIVATION_FAILED",
        'Extension "b" activation failed: Tool name "x" is already registered',
    )
    await host.activate("c")
    await fails(host.activate("d"), "EXTENSION_ACTIVATION_FAILED")
    assert host.tools.names == ("base", "c1")
    assert await host.emit(EVENT) == ()
    assert "d.hook0:0" not in log
    assert log == [
        "a.activate",
        "a.disposer0",
        "a.dispose",
        "b.activate",
        "b.dispose",
        "c.activate",
        "d.activate",
        "d.dispose",
    ]
    await host.dispose()


async def test_an_invalid_staged_tool_fails_at_commit(tmp_path: Path) -> None:
    host = await make_host(tmp_path)

    def activate(context: ExtensionContext) -> None:
        context.register_tool({"name": "half"})

    host.discover([definition({"activate": activate})])
    error = await fails(host.activate("ext"), "EXTENSION_ACTIVATION_FAILED")
    assert (
        str(error)
        == 'Extension "ext" activation failed: Tool definition must have an own description field'
    )
    await host.dispose()


async def test_activate_validates_id_and_signal(tmp_path: Path) -> None:
    host = await make_host(tmp_path)
    host.discover([definition(Instance([]))])
    for bad in ("missing", "", " ext", 3, None):
        await fails(host.activate(cast(Any, bad)), "EXTENSION_NOT_FOUND")
    await fails(
        host.activate("missing"), "EXTENSION_NOT_FOUND", 'Extension "missing" was not discovered'
    )
    not_found = "Extension 3 was not discovered"
    await fails(host.activate(cast(Any, 3)), "EXTENSION_NOT_FOUND", not_found)

    class FakeSignal:
        aborted = False
        reason = None

    class SubSignal(AbortSignal):
        __slots__ = ()

    uninitialised = AbortSignal.__new__(AbortSignal)
    for signal in (FakeSignal(), uninitialised, "signal"):
        await fails(
            host.activate("ext", cast(Any, signal)),
            "EXTENSION_INVALID_OPTIONS",
            "Activation signal must be an AbortSignal",
        )
    assert host.extensions == (ExtensionMetadata(id="ext", status="discovered"),)
    await host.activate("ext", SubSignal())  # a subclass is a signal, as for run_agent_loop
    await host.dispose()


async def test_an_aborted_signal_cancels_before_the_factory_runs(tmp_path: Path) -> None:
    host = await make_host(tmp_path)
    called: list[str] = []

    def factory() -> Any:
        called.append("create")
        return Instance([])

    host.discover([ExtensionDefinition(id="ext", create=factory)])
    controller = AbortController()
    reason = RuntimeError("stop")
    controller.abort(reason)
    error = await fails(
        host.activate("ext", controller.signal),
        "EXTENSION_CANCELLED",
        'Extension "ext" activation was cancelled',
    )
    assert error.__cause__ is reason
    assert called == []
    assert host.extensions == (ExtensionMetadata(id="ext", status="failed"),)
    await host.dispose()


class Parked:
    """An instance whose async activate stages everything and then waits for ``release``."""

    def __init__(self, log: list[str]) -> None:
        self.log = log
        self.entered = asyncio.Event()
        self.release = asyncio.Event()
        self.signal: AbortSignal | None = None

    async def activate(self, context: ExtensionContext) -> None:
        self.signal = context.signal
        context.register_tool(make_tool("parked"))
        context.on_agent_event(lambda event: self.log.append("hook"))
        context.on_dispose(lambda: self.log.append("disposer"))
        self.entered.set()
        try:
            await self.release.wait()
        except asyncio.CancelledError:
            self.log.append("activate cancelled")
            raise
        self.log.append("activate resumed")

    def dispose(self) -> None:
        self.log.append("dispose")


async def test_cancellation_by_the_callers_signal_rolls_back(tmp_path: Path) -> None:
    host = await make_host(tmp_path)
    log: list[str] = []
    parked = Parked(log)
    host.discover([definition(parked)])
    controller = AbortController()
    pending = host.activate("ext", controller.signal)
    async with asyncio.timeout(5):
        await parked.entered.wait()
    assert host.extensions == (ExtensionMetadata(id="ext", status="activating"),)
    reason = AbortError("caller stopped")
    controller.abort(reason)
    error = await fails(pending, "EXTENSION_CANCELLED", 'Extension "ext" activation was cancelled')
    assert isinstance(error.__cause__, AbortError)
    assert parked.signal is not None
    assert parked.signal.reason is reason
    # The host stops waiting at once, cancels the callback's task and gives it one loop turn
    # to unwind before the rollback: the callback's own cleanup runs first.
    assert log == ["activate cancelled", "disposer", "dispose"]
    assert host.tools.names == ()
    assert host.extensions == (ExtensionMetadata(id="ext", status="failed"),)
    assert await host.emit(EVENT) == ()
    assert "hook" not in log
    await host.dispose()


async def test_dispose_during_activation_cancels_it(tmp_path: Path) -> None:
    host = await make_host(tmp_path)
    log: list[str] = []
    parked = Parked(log)
    host.discover([definition(parked)])
    pending = host.activate("ext")
    async with asyncio.timeout(5):
        await parked.entered.wait()
    disposal = host.dispose()
    assert parked.signal is not None
    assert parked.signal.aborted
    reason = parked.signal.reason
    assert isinstance(reason, AbortError)
    assert str(reason) == "ExtensionHost disposed"
    await fails(pending, "EXTENSION_CANCELLED", 'Extension "ext" activation was cancelled')
    async with asyncio.timeout(5):
        await disposal
    assert log == ["activate cancelled", "disposer", "dispose"]
    assert host.extensions == (ExtensionMetadata(id="ext", status="failed"),)
    assert host.tools.names == ()


async def test_an_activation_queued_behind_dispose_finds_the_host_disposed(tmp_path: Path) -> None:
    host = await make_host(tmp_path)
    log: list[str] = []
    parked = Parked(log)
    host.discover([definition(parked), definition(Instance(log, "b"), "b")])
    first = host.activate("ext")
    second = host.activate("b")
    async with asyncio.timeout(5):
        await parked.entered.wait()
    disposal = host.dispose()
    await fails(first, "EXTENSION_CANCELLED")
    await fails(second, "EXTENSION_HOST_DISPOSED", "ExtensionHost is disposed")
    await disposal
    assert "b.activate" not in log


async def test_a_callback_ignoring_cancellation_stays_guarded_until_it_settles(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cleanup_module, "ABANDONED_TASK_GRACE", 0.01)
    host = await make_host(tmp_path)
    entered, finish = asyncio.Event(), asyncio.Event()
    outcomes: list[str] = []

    async def activate(context: ExtensionContext) -> None:
        entered.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            outcomes.append("cancel ignored")
        await finish.wait()
        try:
            host.discover([])
        except ExtensionError as error:
            outcomes.append(error.code)

    host.discover([definition({"activate": activate})])
    pending = host.activate("ext")
    async with asyncio.timeout(5):
        await entered.wait()
    # Not held up by the stubborn callback beyond the grace period; it is reported.
    error = await fails(
        host.dispose(),
        "EXTENSION_DISPOSAL_FAILED",
        "ExtensionHost disposal failed: 1 cleanup(s) failed",
    )
    aggregate = error.__cause__
    assert isinstance(aggregate, ExtensionAggregateError)
    assert [(e.code, str(e)) for e in cast("tuple[ExtensionError, ...]", aggregate.errors)] == [
        (
            "EXTENSION_DISPOSAL_FAILED",
            "A cancelled extension callback was still running when disposal stopped waiting",
        )
    ]
    await fails(pending, "EXTENSION_CANCELLED")
    assert outcomes == ["cancel ignored"]
    finish.set()
    await turns()
    assert outcomes == ["cancel ignored", "EXTENSION_REENTRANT_OPERATION"]


async def test_a_callback_that_raises_cancelled_error_itself_fails(tmp_path: Path) -> None:
    host = await make_host(tmp_path)

    async def activate(context: ExtensionContext) -> None:
        raise asyncio.CancelledError

    host.discover([definition({"activate": activate})])
    await fails(
        host.activate("ext"),
        "EXTENSION_ACTIVATION_FAILED",
        'Extension "ext" activation failed: Extension callback was cancelled',
    )
    await host.dispose()


# -- instances and adoption -------------------------------------------------------------------


async def test_instances_of_every_shape_are_read_statically(tmp_path: Path) -> None:
    host = await make_host(tmp_path)
    log: list[str] = []

    class WithStatic:
        @staticmethod
        def activate(context: ExtensionContext) -> None:
            log.append("static")

        @classmethod
        def dispose(cls) -> None:
            log.append(f"classmethod {cls.__name__}")

    def module_activate(context: ExtensionContext) -> None:
        log.append("module")

    def namespace_activate(context: ExtensionContext) -> None:
        log.append("namespace")

    def dict_activate(context: ExtensionContext) -> None:
        log.append("dict")

    module = types.ModuleType("fake_extension")
    module.activate = module_activate  # pyright: ignore[reportAttributeAccessIssue]

    class AsClass:
        @staticmethod
        def activate(context: ExtensionContext) -> None:
            log.append("class object")

    host.discover(
        [
            definition(WithStatic(), "static"),
            definition(module, "module"),
            definition(types.SimpleNamespace(activate=namespace_activate), "ns"),
            definition({"activate": dict_activate}, "dict"),
            definition(AsClass, "class"),
        ]
    )
    for extension_id in ("static", "module", "ns", "dict", "class"):
        await host.activate(extension_id)
    await host.dispose()
    assert log == [
        "static",
        "module",
        "namespace",
        "dict",
        "class object",
        "classmethod WithStatic",
    ]


async def test_accessors_and_dynamic_attributes_are_not_functions(tmp_path: Path) -> None:
    host = await make_host(tmp_path)
    touched: list[str] = []

    class Dynamic:
        def __getattr__(self, name: str) -> Callable[..., None]:
            touched.append(name)
            return print

    class Accessor:
        @property
        def activate(self) -> Callable[[ExtensionContext], None]:
            touched.append("property")
            return lambda context: None

    class BadDispose:
        dispose = "not a function"

        def activate(self, context: ExtensionContext) -> None:
            touched.append("activate")

    class AccessorDispose:
        @property
        def dispose(self) -> Callable[[], None]:
            touched.append("dispose property")
            return lambda: None

        def activate(self, context: ExtensionContext) -> None:
            touched.append("activate")

    class DictSubclass(dict[str, object]):
        pass

    host.discover(
        [
            definition(Dynamic(), "dynamic"),
            definition(Accessor(), "accessor"),
            definition(None, "none"),
            definition(DictSubclass(activate=print), "dict-subclass"),
            definition(BadDispose(), "bad-dispose"),
            definition(AccessorDispose(), "accessor-dispose"),
            definition({"activate": "no"}, "dict-value"),
        ]
    )
    for extension_id in ("dynamic", "accessor", "none", "dict-subclass", "dict-value"):
        await fails(
            host.activate(extension_id),
            "INVALID_EXTENSION_DEFINITION",
            f'Extension "{extension_id}" instance must have an activate function',
        )
    for extension_id in ("bad-dispose", "accessor-dispose"):
        await fails(
            host.activate(extension_id),
            "INVALID_EXTENSION_DEFINITION",
            f'Extension "{extension_id}" dispose must be a function',
        )
    assert touched == []
    await host.dispose()


class SelfAwaiting:
    """An awaitable that gives itself back."""

    def __await__(self) -> Generator[Any, Any, Any]:
        return self
        yield  # pragma: no cover


async def test_nested_awaitables_are_adopted_up_to_32_levels(tmp_path: Path) -> None:
    host = await make_host(tmp_path)
    log: list[str] = []

    def nested(levels: int) -> object:
        value: object = Instance(log, f"depth{levels}")
        for _ in range(levels):

            async def wrap(inner: object = value) -> object:
                return inner

            value = wrap()
        return value

    future: asyncio.Future[object] = asyncio.get_running_loop().create_future()
    future.set_result(Instance(log, "future"))
    host.discover(
        [
            ExtensionDefinition(id="deep", create=lambda: cast(Any, nested(32))),
            ExtensionDefinition(id="too-deep", create=lambda: cast(Any, nested(33))),
            ExtensionDefinition(id="future", create=lambda: cast(Any, future)),
            ExtensionDefinition(id="cycle", create=lambda: cast(Any, SelfAwaiting())),
        ]
    )
    await host.activate("deep")
    await host.activate("future")
    await fails(
        host.activate("too-deep"),
        "EXTENSION_ACTIVATION_FAILED",
        'Extension "too-deep" activation failed: '
        "Extension callback result nests more than 32 awaitables",
    )
    await fails(
        host.activate("cycle"),
        "EXTENSION_ACTIVATION_FAILED",
        'Extension "cycle" activation failed: '
        "Extension callback result is an awaitable that awaits itself",
    )
    assert log == ["depth32.activate", "future.activate"]
    await host.dispose()


async def test_staging_closes_at_selection_while_the_scope_lasts_to_settlement(
    tmp_path: Path,
) -> None:
    host = await make_host(tmp_path)
    seen: list[str] = []

    async def second_level(context: ExtensionContext) -> None:
        pending = host.emit(EVENT)
        await fails(pending, "EXTENSION_REENTRANT_OPERATION")
        seen.append("still guarded")
        context.register_tool(make_tool("late"))

    async def activate(context: ExtensionContext) -> object:
        context.register_tool(make_tool("early"))
        return second_level(context)

    host.discover([definition({"activate": activate})])
    error = await fails(
        host.activate("ext"),
        "EXTENSION_ACTIVATION_FAILED",
        "Extension activation context is closed",
    )
    assert error.__cause__ is None  # an ExtensionError passes through unchanged
    assert seen == ["still guarded"]
    assert host.tools.names == ()
    await host.dispose()


async def test_async_factories_hooks_and_disposers_are_awaited(tmp_path: Path) -> None:
    host = await make_host(tmp_path)
    log: list[str] = []

    async def hook(event: AgentEvent) -> None:
        await asyncio.sleep(0)
        log.append(f"async hook {event.type}")

    async def disposer() -> None:
        await asyncio.sleep(0)
        log.append("async disposer")

    async def activate(context: ExtensionContext) -> None:
        context.on_agent_event(hook)
        context.on_dispose(disposer)

    async def create() -> Any:
        await asyncio.sleep(0)
        return {"activate": activate}

    host.discover([ExtensionDefinition(id="ext", create=create)])
    await host.activate("ext")
    assert await host.emit(FINISHED) == ()
    await host.dispose()
    assert log == ["async hook run.finished", "async disposer"]


# -- events -----------------------------------------------------------------------------------


async def test_hooks_run_in_activation_then_registration_order(tmp_path: Path) -> None:
    host = await make_host(tmp_path)
    log: list[str] = []
    received: list[object] = []
    nameless = type(" ", (Exception,), {})

    def first(event: AgentEvent) -> None:
        received.append(event)
        raise ValueError("bad hook")

    async def second(event: AgentEvent) -> None:
        log.append("a.second")
        raise RuntimeError()

    def third(event: AgentEvent) -> None:
        log.append("a.third")
        raise nameless()

    def activate_a(context: ExtensionContext) -> None:
        context.on_agent_event(first)
        context.on_agent_event(second)
        context.on_agent_event(third)

    host.discover(
        [definition(Instance(log, "b", hooks=2), "b"), definition({"activate": activate_a}, "a")]
    )
    await host.activate("a")
    await host.activate("b")
    failures = await host.emit(FINISHED)
    assert failures == (
        ExtensionHookFailure(extension_id="a", hook_index=0, message="bad hook"),
        ExtensionHookFailure(extension_id="a", hook_index=1, message="RuntimeError"),
        ExtensionHookFailure(extension_id="a", hook_index=2, message="Extension callback failed"),
    )
    assert type(failures) is tuple
    assert log == ["b.activate", "a.second", "a.third", "b.hook0:1", "b.hook1:1"]
    assert received == [FINISHED]
    assert received[0] is FINISHED
    with pytest.raises(dataclasses.FrozenInstanceError):
        failures[0].message = "x"  # pyright: ignore[reportAttributeAccessIssue]
    await host.dispose()


async def test_emit_accepts_only_tether_agent_events(tmp_path: Path) -> None:
    host = await make_host(tmp_path)
    for event in ({"type": "run.finished", "sequence": 0}, object(), None, "event"):
        await fails(
            host.emit(cast(Any, event)),
            "INVALID_AGENT_EVENT",
            f"Agent event must be a tether AgentEvent (got {type(event).__name__})",
        )
    huge = MessageAcceptedEvent(sequence=2**53, payload=EVENT.payload)
    await fails(
        host.emit(huge),
        "INVALID_AGENT_EVENT",
        "Agent event sequence must be a non-negative safe integer",
    )
    assert await host.emit(MessageAcceptedEvent(sequence=2**53 - 1, payload=EVENT.payload)) == ()
    await host.dispose()


# -- the queue --------------------------------------------------------------------------------


async def test_work_runs_one_at_a_time_in_call_order(tmp_path: Path) -> None:
    host = await make_host(tmp_path)
    log: list[str] = []
    parked = Parked(log)
    host.discover([definition(parked), definition(Instance(log, "b", hooks=1), "b")])
    first = host.activate("ext")
    emitted = host.emit(EVENT)
    missing = host.activate("missing")
    second = host.activate("b")
    emitted_again = host.emit(FINISHED)
    async with asyncio.timeout(5):
        await parked.entered.wait()
    await turns()
    assert not emitted.done()
    assert not second.done()
    parked.release.set()
    async with asyncio.timeout(5):
        await first
        assert await emitted == ()
        await fails(missing, "EXTENSION_NOT_FOUND")  # a failure does not block what follows
        await second
        assert await emitted_again == ()
    assert log == ["activate resumed", "hook", "b.activate", "hook", "b.hook0:1"]
    await host.dispose()


async def test_ignored_rejections_are_pre_observed(tmp_path: Path) -> None:
    host = await make_host(tmp_path)
    host.activate("missing")
    host.activate("x", cast(Any, object()))
    host.emit(cast(Any, None))
    done = asyncio.Event()

    def activate(context: ExtensionContext) -> None:
        host.emit(EVENT)
        host.activate("ext")
        host.dispose()
        done.set()

    host.discover([definition({"activate": activate})])
    await host.activate("ext")
    assert done.is_set()
    await turns()
    disposal = host.dispose()
    await disposal
    host.activate("ext")
    host.emit(EVENT)
    await turns()  # the harness fails the test if any of these was reported as never retrieved


async def test_cancelling_a_returned_future_does_not_stop_the_work(tmp_path: Path) -> None:
    host = await make_host(tmp_path)
    log: list[str] = []
    parked = Parked(log)
    host.discover([definition(parked)])
    pending = host.activate("ext")
    async with asyncio.timeout(5):
        await parked.entered.wait()
    pending.cancel()
    parked.release.set()
    await host.emit(EVENT)
    assert host.extensions == (ExtensionMetadata(id="ext", status="active"),)
    assert log == ["activate resumed", "hook"]
    await host.dispose()


# -- disposal ---------------------------------------------------------------------------------


async def test_disposal_runs_in_reverse_and_collects_every_failure(tmp_path: Path) -> None:
    host = await make_host(tmp_path, [make_tool("base")])
    log: list[str] = []
    a0, b1, b_dispose = RuntimeError("a0"), ValueError("b1"), OSError("b.dispose")
    host.discover(
        [
            definition(
                Instance(
                    log,
                    "b",
                    tools=("tb",),
                    disposers=2,
                    disposer_fails={1: b1},
                    dispose_fails=b_dispose,
                ),
                "b",
            ),
            definition(Instance(log, "a", tools=("ta",), disposers=2, disposer_fails={0: a0}), "a"),
            definition(Instance(log, "idle"), "idle"),
        ]
    )
    await host.activate("a")
    await host.activate("b")
    log.clear()
    disposal = host.dispose()
    assert host.dispose() is disposal
    error = await fails(
        disposal,
        "EXTENSION_DISPOSAL_FAILED",
        "ExtensionHost disposal failed: 3 cleanup(s) failed",
    )
    aggregate = error.__cause__
    assert isinstance(aggregate, ExtensionAggregateError)
    assert aggregate.errors == (b1, b_dispose, a0)
    assert aggregate.code == "EXTENSION_DISPOSAL_FAILED"
    assert log == [
        "b.disposer1",
        "b.disposer0",
        "b.dispose",
        "a.disposer1",
        "a.disposer0",
        "a.dispose",
    ]
    assert host.extensions == (
        ExtensionMetadata(id="b", status="disposed"),
        ExtensionMetadata(id="a", status="disposed"),
        ExtensionMetadata(id="idle", status="discovered"),
    )
    assert host.tools.names == ("base",)
    assert host.dispose() is disposal
    await fails(host.dispose(), "EXTENSION_DISPOSAL_FAILED")


async def test_after_disposal_everything_is_host_disposed(tmp_path: Path) -> None:
    host = await make_host(tmp_path)
    host.discover([definition(Instance([]))])
    disposal = host.dispose()
    assert host.dispose() is disposal
    message = "ExtensionHost is disposed"
    # disposing already: refused before anything is queued
    await fails(host.activate("ext"), "EXTENSION_HOST_DISPOSED", message)
    await fails(host.emit(EVENT), "EXTENSION_HOST_DISPOSED", message)
    raises_sync(lambda: host.discover([]), "EXTENSION_HOST_DISPOSED", message)
    assert await disposal is None
    await fails(host.activate("ext"), "EXTENSION_HOST_DISPOSED", message)
    await fails(host.emit(EVENT), "EXTENSION_HOST_DISPOSED", message)
    raises_sync(lambda: host.discover([]), "EXTENSION_HOST_DISPOSED", message)
    assert host.dispose() is disposal
    assert host.extensions == (ExtensionMetadata(id="ext", status="discovered"),)


async def test_pending_emits_finish_before_disposal(tmp_path: Path) -> None:
    host = await make_host(tmp_path)
    log: list[str] = []
    host.discover([definition(Instance(log, hooks=1, disposers=1))])
    await host.activate("ext")
    emitted = host.emit(EVENT)
    disposal = host.dispose()
    assert await emitted == ()
    await disposal
    assert log == ["ext.activate", "ext.hook0:0", "ext.disposer0", "ext.dispose"]


# -- reentrancy -------------------------------------------------------------------------------

REENTRANT = "ExtensionHost operations cannot be called from inside an extension callback"


async def probe(host: ExtensionHost, where: str, log: list[str]) -> None:
    """Every public operation, called from inside a callback, is refused."""
    raises_sync(lambda: host.discover([]), "EXTENSION_REENTRANT_OPERATION", REENTRANT)
    await fails(host.activate("other"), "EXTENSION_REENTRANT_OPERATION", REENTRANT)
    await fails(host.emit(EVENT), "EXTENSION_REENTRANT_OPERATION", REENTRANT)
    await fails(host.dispose(), "EXTENSION_REENTRANT_OPERATION", REENTRANT)
    log.append(where)


async def test_callbacks_cannot_call_their_host(tmp_path: Path) -> None:
    host = await make_host(tmp_path)
    log: list[str] = []

    async def create() -> Any:
        await probe(host, "create", log)
        return {"activate": activate, "dispose": dispose}

    async def activate(context: ExtensionContext) -> None:
        await probe(host, "activate", log)
        context.on_agent_event(hook)
        context.on_dispose(disposer)

    async def hook(event: AgentEvent) -> None:
        await probe(host, "hook", log)

    async def disposer() -> None:
        await probe(host, "disposer", log)

    async def dispose() -> None:
        await probe(host, "dispose", log)

    host.discover([ExtensionDefinition(id="ext", create=create), definition(Instance([]), "other")])
    await host.activate("ext")
    assert await host.emit(EVENT) == ()
    assert host.extensions[1] == ExtensionMetadata(id="other", status="discovered")
    await host.dispose()
    assert log == ["create", "activate", "hook", "disposer", "dispose"]


async def test_a_reentrant_dispose_changes_nothing(tmp_path: Path) -> None:
    host = await make_host(tmp_path)
    refused: list[asyncio.Future[None]] = []

    def hook(event: AgentEvent) -> None:
        refused.append(host.dispose())

    host.discover([definition(on_activate(lambda context: context.on_agent_event(hook)))])
    await host.activate("ext")
    await host.emit(EVENT)
    await fails(refused[0], "EXTENSION_REENTRANT_OPERATION", REENTRANT)
    assert await host.emit(EVENT) == ()  # still open
    disposal = host.dispose()
    assert disposal is not refused[0]
    assert disposal is not refused[1]
    await disposal


async def test_sync_hook_raising_a_reentrant_error_is_reported(tmp_path: Path) -> None:
    host = await make_host(tmp_path)

    def hook(event: AgentEvent) -> None:
        host.discover([])

    host.discover([definition(on_activate(lambda context: context.on_agent_event(hook)))])
    await host.activate("ext")
    assert await host.emit(EVENT) == (
        ExtensionHookFailure(extension_id="ext", hook_index=0, message=REENTRANT),
    )
    await host.dispose()


async def test_detached_work_is_guarded_until_its_callback_settles(tmp_path: Path) -> None:
    host = await make_host(tmp_path)
    during = asyncio.Event()
    after = asyncio.Event()
    outcomes: list[str] = []
    spawned: list[asyncio.Task[None]] = []

    async def while_running() -> None:
        try:
            host.discover([])
        except ExtensionError as error:
            outcomes.append(f"during: {error.code}")
        during.set()

    async def later() -> None:
        await after.wait()
        host.discover([{"id": "late", "create": dict}])
        outcomes.append(f"after: {await host.emit(EVENT)!r}")

    async def activate(context: ExtensionContext) -> None:
        spawned.append(asyncio.create_task(while_running()))
        spawned.append(asyncio.create_task(later()))
        await during.wait()

    host.discover([definition({"activate": activate})])
    await host.activate("ext")
    after.set()
    async with asyncio.timeout(5):
        await asyncio.gather(*spawned)
    assert outcomes == ["during: EXTENSION_REENTRANT_OPERATION", "after: ()"]
    assert [meta.id for meta in host.extensions] == ["ext", "late"]
    await host.dispose()


async def test_another_hosts_callback_may_call_this_host(tmp_path: Path) -> None:
    first = await make_host(tmp_path)
    second = await make_host(tmp_path)
    log: list[str] = []

    async def hook_of_first(event: AgentEvent) -> None:
        log.append("first hook")
        assert await second.emit(event) == (
            ExtensionHookFailure(extension_id="back", hook_index=0, message=REENTRANT),
        )

    def hook_of_second(event: AgentEvent) -> None:
        log.append("second hook")
        first.discover([])  # first's callback is still running around this one

    first.discover([definition(on_activate(lambda context: context.on_agent_event(hook_of_first)))])
    second.discover(
        [definition(on_activate(lambda context: context.on_agent_event(hook_of_second)), "back")]
    )
    await first.activate("ext")
    await second.activate("back")
    assert await first.emit(EVENT) == ()
    assert log == ["first hook", "second hook"]
    await first.dispose()
    await second.dispose()


# -- edges ------------------------------------------------------------------------------------


class Escape(BaseException):
    """A bare ``BaseException`` from extension code: never swallowed."""


async def test_a_bare_base_exception_from_a_cleanup_propagates_after_every_cleanup(
    tmp_path: Path,
) -> None:
    host = await make_host(tmp_path)
    log: list[str] = []
    host.discover(
        [
            definition(
                Instance(
                    log,
                    "r",
                    disposers=2,
                    fail=ValueError("x"),
                    disposer_fails={1: cast(Any, Escape()), 0: cast(Any, Escape())},
                ),
                "r",
            ),
            definition(
                Instance(log, "a", disposers=1, disposer_fails={0: cast(Any, Escape())}), "a"
            ),
            definition(Instance(log, "b", disposers=1, dispose_fails=RuntimeError("b")), "b"),
        ]
    )
    with pytest.raises(Escape):
        await host.activate("r")
    assert log == ["r.activate", "r.disposer1", "r.disposer0", "r.dispose"]
    assert host.extensions[0] == ExtensionMetadata(id="r", status="failed")
    await host.activate("a")
    await host.activate("b")
    log.clear()
    with pytest.raises(Escape):
        await host.dispose()
    assert log == ["b.disposer0", "b.dispose", "a.disposer0", "a.dispose"]
    assert [meta.status for meta in host.extensions] == ["failed", "disposed", "disposed"]
    with pytest.raises(Escape):
        await host.dispose()


async def test_a_cancelled_queue_task_cancels_its_future(tmp_path: Path) -> None:
    # What happens when the loop shuts down with an activation in flight.
    host = await make_host(tmp_path)
    log: list[str] = []
    parked = Parked(log)
    host.discover([definition(parked)])
    pending = host.activate("ext")
    async with asyncio.timeout(5):
        await parked.entered.wait()
    queue_task = cast("asyncio.Task[None]", host._queue.tail)  # pyright: ignore[reportPrivateUsage]
    queue_task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await queue_task
    assert pending.cancelled()
    # The rollback still ran in full (after the callback's one turn to unwind).
    assert log == ["activate cancelled", "disposer", "dispose"]
    assert host.extensions == (ExtensionMetadata(id="ext", status="failed"),)
    assert host.tools.names == ()
    await host.dispose()


async def test_a_failure_nobody_waits_for_any_more(tmp_path: Path) -> None:
    host = await make_host(tmp_path)
    pending = host.activate("missing")
    pending.cancel()
    assert await host.emit(EVENT) == ()
    await host.dispose()


async def test_slotted_instances_and_non_exception_abort_reasons(tmp_path: Path) -> None:
    host = await make_host(tmp_path)
    log: list[str] = []

    class Slotted:
        __slots__ = ()

        def activate(self, context: ExtensionContext) -> None:
            log.append("slotted")

    host.discover([definition(Slotted(), "slotted"), definition(Instance(log), "ext")])
    await host.activate("slotted")
    controller = AbortController()
    controller.abort("a plain string")
    error = await fails(host.activate("ext", controller.signal), "EXTENSION_CANCELLED")
    assert error.__cause__ is None
    assert repr(host) == "<ExtensionHost open ['slotted', 'ext']>"
    await host.dispose()
    assert log == ["slotted"]
    assert repr(host) == "<ExtensionHost disposed ['slotted', 'ext']>"


# -- cancellation edge cases -------------------------------------------------------------------


def raise_cancelled(*_args: object) -> None:
    """A plain (synchronous) callback raising ``CancelledError`` on its own."""
    raise asyncio.CancelledError


async def test_a_sync_hook_raising_cancelled_error_is_a_reported_failure(tmp_path: Path) -> None:
    host = await make_host(tmp_path)
    log: list[str] = []

    def activate(context: ExtensionContext) -> None:
        context.on_agent_event(raise_cancelled)
        context.on_agent_event(lambda event: log.append("second"))

    host.discover([definition(on_activate(activate))])
    await host.activate("ext")
    assert await host.emit(EVENT) == (
        ExtensionHookFailure(
            extension_id="ext", hook_index=0, message="Extension callback was cancelled"
        ),
    )
    assert log == ["second"]
    await host.dispose()


async def test_a_sync_activate_raising_cancelled_error_fails_and_rolls_back(
    tmp_path: Path,
) -> None:
    host = await make_host(tmp_path)
    log: list[str] = []

    def activate(context: ExtensionContext) -> None:
        context.on_dispose(lambda: log.append("disposer"))
        raise asyncio.CancelledError

    host.discover([definition({"activate": activate, "dispose": lambda: log.append("dispose")})])
    error = await fails(
        host.activate("ext"),
        "EXTENSION_ACTIVATION_FAILED",
        'Extension "ext" activation failed: Extension callback was cancelled',
    )
    assert isinstance(error.__cause__, RuntimeError)
    assert log == ["disposer", "dispose"]
    assert host.extensions == (ExtensionMetadata(id="ext", status="failed"),)
    await host.dispose()


async def test_a_sync_disposer_raising_cancelled_error_is_a_disposal_failure(
    tmp_path: Path,
) -> None:
    host = await make_host(tmp_path)
    log: list[str] = []

    def activate(context: ExtensionContext) -> None:
        context.on_dispose(lambda: log.append("first disposer"))
        context.on_dispose(raise_cancelled)

    host.discover([definition(on_activate(activate))])
    await host.activate("ext")
    error = await fails(
        host.dispose(),
        "EXTENSION_DISPOSAL_FAILED",
        "ExtensionHost disposal failed: 1 cleanup(s) failed",
    )
    aggregate = error.__cause__
    assert isinstance(aggregate, ExtensionAggregateError)
    assert [(type(e), str(e)) for e in aggregate.errors] == [
        (RuntimeError, "Extension callback was cancelled")
    ]
    assert log == ["first disposer"]
    assert host.extensions == (ExtensionMetadata(id="ext", status="disposed"),)


async def test_a_bare_base_exception_from_activate_still_rolls_back(tmp_path: Path) -> None:
    host = await make_host(tmp_path)
    log: list[str] = []

    async def activate(context: ExtensionContext) -> None:
        context.register_tool(make_tool("staged"))
        context.on_dispose(lambda: log.append("disposer0"))
        context.on_dispose(lambda: log.append("disposer1"))
        raise Escape

    host.discover([definition({"activate": activate, "dispose": lambda: log.append("dispose")})])
    with pytest.raises(Escape):
        await host.activate("ext")
    assert log == ["disposer1", "disposer0", "dispose"]
    assert host.extensions == (ExtensionMetadata(id="ext", status="failed"),)
    assert host.tools.names == ()
    await host.dispose()
    assert log == ["disposer1", "disposer0", "dispose"]


async def test_a_queue_task_cancelled_while_waiting_cancels_its_future(tmp_path: Path) -> None:
    host = await make_host(tmp_path)
    log: list[str] = []
    parked = Parked(log)
    host.discover([definition(parked)])
    first = host.activate("ext")
    second = host.emit(EVENT)
    queue_task = cast("asyncio.Task[None]", host._queue.tail)  # pyright: ignore[reportPrivateUsage]
    async with asyncio.timeout(5):
        await parked.entered.wait()
    queue_task.cancel()  # the emit's task, still waiting for the activation before it
    await asyncio.wait((queue_task,))
    assert second.cancelled()
    assert not first.done()
    parked.release.set()
    async with asyncio.timeout(5):
        await first
    assert log == ["activate resumed"]
    assert host.extensions == (ExtensionMetadata(id="ext", status="active"),)
    await host.dispose()


async def test_dispose_waits_for_a_callback_slow_to_unwind(tmp_path: Path) -> None:
    host = await make_host(tmp_path)
    log: list[str] = []
    entered = asyncio.Event()

    async def activate(context: ExtensionContext) -> None:
        context.on_dispose(lambda: log.append("disposer"))
        entered.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            log.append("cancelled")
            await turns(50)  # far longer than the one turn the host gives before rolling back
            log.append("unwound")
            raise

    host.discover([definition(on_activate(activate))])
    pending = host.activate("ext")
    async with asyncio.timeout(5):
        await entered.wait()
    disposal = host.dispose()
    await fails(pending, "EXTENSION_CANCELLED")
    assert log == ["cancelled", "disposer"]
    async with asyncio.timeout(5):
        await disposal
    assert log == ["cancelled", "disposer", "unwound"]
