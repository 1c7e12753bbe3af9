"""Extension hosts under hostile callers and stuck extensions (issue 25, items 2, 14-16).

* The host reads the *real* class of what it is given (``type()``, never ``__class__``) and
  accepts an ``AbortSignal`` subclass exactly where ``run_agent_loop`` does: one rule
  (``tether._base.exact_types.instance_of``).
* Activation and each cleanup have a bound (``ExtensionHost(timeout=...)``): an extension
  whose ``create``/``activate`` or ``dispose`` never finishes fails ``EXTENSION_TIMED_OUT``,
  naming it, and the host goes on.
* A factory product that arrives after the host stopped waiting (a coroutine that ignores
  its cancellation, a future a thread resolves) is disposed.
* A ``create_extensions`` override whose fallback fails has its own host disposed, and the
  construction's aggregate carries that disposal's failure.

Waits are bounded by ``asyncio.timeout`` guards and coordinated by events, never sleeps;
the timeouts under test are short real intervals (they are what is tested).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, cast

import pytest

from tether import AbortSignal, ToolRegistry, run_agent_loop
from tether.agent.extensions import ExtensionDefinition, ExtensionError, ExtensionHost
from tether.agent.resources import ResourceLoader
from tether.models.scripted import ScriptedModel, text_reply
from tether.protocol.transcript import user_message

GUARD = 10.0
"""The most any wait here lasts before the test fails (a hang would otherwise hang CI)."""


async def loader(tmp_path: Path) -> ResourceLoader:
    return await ResourceLoader.create([{"id": "root", "directory": str(tmp_path)}])


class SubSignal(AbortSignal):
    __slots__ = ()


# -- item 16: one rule for what the host is given ------------------------------------------


async def test_a_tools_impostor_faking_its_class_is_refused_and_runs_nothing(
    tmp_path: Path,
) -> None:
    ran: list[str] = []

    class Impostor:
        @property
        def __class__(self) -> type[Any]:  # pyright: ignore[reportIncompatibleMethodOverride]
            ran.append("__class__")
            return ToolRegistry

        def __getattr__(self, name: str) -> object:
            ran.append(name)
            raise AttributeError(name)

    with pytest.raises(ExtensionError) as caught:
        ExtensionHost(resources=await loader(tmp_path), tools=cast(Any, Impostor()))
    assert caught.value.code == "EXTENSION_INVALID_OPTIONS"
    assert ran == []


async def test_a_signal_subclass_is_accepted_where_run_agent_loop_accepts_it(
    tmp_path: Path,
) -> None:
    signal = SubSignal()
    stream = run_agent_loop(
        messages=[user_message(id="u1", content="hi")],
        model=ScriptedModel([text_reply("done")]),
        tools=ToolRegistry(),
        max_steps=1,
        signal=signal,
    )
    async with asyncio.timeout(GUARD):
        assert (await stream.result).status == "completed"
    host = ExtensionHost(resources=await loader(tmp_path))
    activated: list[AbortSignal] = []

    class Instance:
        def activate(self, context: Any) -> None:
            activated.append(context.signal)

    host.discover([ExtensionDefinition(id="ext", create=Instance)])
    async with asyncio.timeout(GUARD):
        await host.activate("ext", signal)
        await host.dispose()
    assert len(activated) == 1


# -- item 14: an override's own host is disposed when its fallback fails ---------------------


def _runtime_options(cwd: Path, **extra: Any) -> dict[str, Any]:
    return {
        "cwd": cwd,
        "session": {"path": "session.jsonl", "mode": "create"},
        "model": ScriptedModel([text_reply("hi")]),
        **extra,
    }


class _Logged:
    """An extension whose activation and disposal are logged; either may fail."""

    def __init__(self, log: list[str], name: str, *, refuse: bool = False) -> None:
        self.log = log
        self.name = name
        self.refuse = refuse

    def activate(self, context: Any) -> None:
        self.log.append(f"{self.name}:activate")
        if self.refuse and self.name == "default":
            raise ValueError("activation refused")

    def dispose(self) -> None:
        self.log.append(f"{self.name}:dispose")
        if self.refuse and self.name == "mine":
            raise ValueError("mine cannot dispose")


async def test_an_override_whose_fallback_fails_has_its_own_host_disposed(tmp_path: Path) -> None:
    from tether.agent.runtime import RuntimeAggregateError, TetherRuntimeError, create_runtime

    log: list[str] = []
    hosts: list[ExtensionHost] = []

    async def extensions_factory(spec: Any, fallback: Callable[..., Any]) -> ExtensionHost:
        fallback(spec)  # started, never awaited here: it fails
        host = ExtensionHost(resources=spec.resources, tools=spec.tools)
        host.discover(
            [ExtensionDefinition(id="mine", create=lambda: _Logged(log, "mine", refuse=True))]
        )
        await host.activate("mine")
        hosts.append(host)
        return host

    default = ExtensionDefinition(id="default", create=lambda: _Logged(log, "default", refuse=True))
    with pytest.raises(TetherRuntimeError) as caught:
        async with asyncio.timeout(GUARD):
            await create_runtime(
                _runtime_options(
                    tmp_path,
                    extensions=[default],
                    factories={"create_extensions": extensions_factory},
                )
            )
    assert caught.value.code == "RUNTIME_CONSTRUCTION_FAILED"
    assert "mine:dispose" in log  # the override's host was disposed, not leaked
    assert [m.status for m in hosts[0].extensions] == ["disposed"]
    group = caught.value.__cause__
    assert isinstance(group, RuntimeAggregateError)
    codes = [getattr(error, "code", None) for error in group.errors]
    assert "EXTENSION_DISPOSAL_FAILED" in codes  # the disposal failure is reported too
    assert any("activation refused" in str(getattr(e, "__cause__", e)) for e in group.errors)


# -- item 15: a factory product that arrives after the host stopped waiting is disposed -----


class _Late:
    def __init__(self, log: list[str]) -> None:
        self.log = log

    def activate(self, context: Any) -> None:
        self.log.append("activate")  # never: the activation was cancelled

    def dispose(self) -> None:
        self.log.append("dispose")


async def _disposed_while_creating(
    tmp_path: Path,
    create: Callable[[], Any],
    started: Awaitable[object],
    finish: Callable[[], None],
) -> None:
    """Activate an extension made by ``create``; once ``started``, dispose the host (the
    activation fails ``EXTENSION_CANCELLED``), then ``finish`` the factory's work and wait
    for the disposal."""
    host = ExtensionHost(resources=await loader(tmp_path))
    host.discover([ExtensionDefinition(id="late", create=create)])
    activation = host.activate("late")
    async with asyncio.timeout(GUARD):
        await started
        disposal = host.dispose()
        with pytest.raises(ExtensionError) as caught:
            await activation
        assert caught.value.code == "EXTENSION_CANCELLED"
        finish()
        await disposal


async def test_a_factory_coroutine_ignoring_cancellation_has_its_late_product_disposed(
    tmp_path: Path,
) -> None:
    log: list[str] = []
    entered = asyncio.Event()
    finish = asyncio.Event()

    async def create() -> _Late:
        entered.set()
        with contextlib.suppress(asyncio.CancelledError):  # ignores its cancellation
            await asyncio.Event().wait()
        await finish.wait()  # and finishes later anyway
        return _Late(log)

    await _disposed_while_creating(tmp_path, create, entered.wait(), finish.set)
    assert log == ["dispose"]


async def test_a_factory_future_a_thread_resolves_late_has_its_product_disposed(
    tmp_path: Path,
) -> None:
    log: list[str] = []
    started = threading.Event()
    go = threading.Event()

    def make() -> _Late:
        started.set()
        go.wait(GUARD)
        return _Late(log)

    def create() -> asyncio.Future[_Late]:
        return asyncio.get_running_loop().run_in_executor(None, make)

    await _disposed_while_creating(tmp_path, create, asyncio.to_thread(started.wait, GUARD), go.set)
    assert log == ["dispose"]


# -- item 2: activation and each cleanup have a bound ---------------------------------------

SHORT = 0.05
"""The bound under test, in seconds (a real interval: the timeout is what is tested)."""


class _Stuck:
    """An extension whose ``activate`` and/or ``dispose`` never finish (they wait on an event
    nobody sets, honouring cancellation)."""

    def __init__(
        self,
        log: list[str],
        *,
        activate: bool = False,
        dispose: bool = False,
        disposing: asyncio.Event | None = None,
    ) -> None:
        self.log = log
        self.stuck_activate = activate
        self.stuck_dispose = dispose
        self.disposing = disposing

    async def activate(self, context: Any) -> None:
        self.log.append("activate")
        if self.stuck_activate:
            await asyncio.Event().wait()
        context.on_dispose(self.disposer)

    async def disposer(self) -> None:
        self.log.append("disposer")

    async def dispose(self) -> None:
        self.log.append("dispose")
        if self.disposing is not None:
            self.disposing.set()
        if self.stuck_dispose:
            try:
                await asyncio.Event().wait()
            finally:
                self.log.append("dispose cancelled")


async def test_an_activation_that_never_finishes_times_out_naming_the_extension(
    tmp_path: Path,
) -> None:
    log: list[str] = []
    host = ExtensionHost(resources=await loader(tmp_path), timeout=SHORT)
    host.discover(
        [
            ExtensionDefinition(id="stuck", create=lambda: _Stuck(log, activate=True)),
            ExtensionDefinition(id="fine", create=lambda: _Stuck(log)),
        ]
    )
    async with asyncio.timeout(GUARD):
        with pytest.raises(ExtensionError) as caught:
            await host.activate("stuck")
        assert caught.value.code == "EXTENSION_TIMED_OUT"
        assert str(caught.value) == f'Extension "stuck" activation did not finish within {SHORT} s'
        await host.activate("fine")  # the host goes on
        await host.dispose()
    assert [(m.id, m.status) for m in host.extensions] == [
        ("stuck", "failed"),
        ("fine", "disposed"),
    ]
    assert log == ["activate", "dispose", "activate", "disposer", "dispose"]


async def test_a_factory_that_never_finishes_times_out(tmp_path: Path) -> None:
    async def create() -> _Stuck:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    host = ExtensionHost(resources=await loader(tmp_path), timeout=SHORT)
    host.discover([ExtensionDefinition(id="slow-factory", create=create)])
    async with asyncio.timeout(GUARD):
        with pytest.raises(ExtensionError) as caught:
            await host.activate("slow-factory")
        await host.dispose()
    assert caught.value.code == "EXTENSION_TIMED_OUT"
    assert '"slow-factory"' in str(caught.value)


async def test_a_dispose_that_never_finishes_times_out_and_the_rest_are_disposed(
    tmp_path: Path,
) -> None:
    from tether.agent.extensions import ExtensionAggregateError

    log: list[str] = []
    other: list[str] = []
    host = ExtensionHost(resources=await loader(tmp_path), timeout=SHORT)
    host.discover(
        [
            ExtensionDefinition(id="first", create=lambda: _Stuck(other)),
            ExtensionDefinition(id="stuck", create=lambda: _Stuck(log, dispose=True)),
        ]
    )
    async with asyncio.timeout(GUARD):
        await host.activate("first")
        await host.activate("stuck")
        with pytest.raises(ExtensionError) as caught:
            await host.dispose()
    assert caught.value.code == "EXTENSION_DISPOSAL_FAILED"
    group = caught.value.__cause__
    assert isinstance(group, ExtensionAggregateError)
    assert [(getattr(e, "code", None), str(e)) for e in group.errors] == [
        ("EXTENSION_TIMED_OUT", f'Extension "stuck" disposal did not finish within {SHORT} s')
    ]
    assert log == ["activate", "disposer", "dispose", "dispose cancelled"]
    assert other == ["activate", "disposer", "dispose"]  # disposed after the stuck one
    assert [m.status for m in host.extensions] == ["disposed", "disposed"]


async def test_a_rollback_cleanup_that_never_finishes_times_out(tmp_path: Path) -> None:
    from tether.agent.extensions import ExtensionAggregateError

    log: list[str] = []

    class Refusing(_Stuck):
        async def activate(self, context: Any) -> None:
            raise ValueError("no")

    host = ExtensionHost(resources=await loader(tmp_path), timeout=SHORT)
    host.discover([ExtensionDefinition(id="x", create=lambda: Refusing(log, dispose=True))])
    async with asyncio.timeout(GUARD):
        with pytest.raises(ExtensionError) as caught:
            await host.activate("x")
        await host.dispose()
    assert caught.value.code == "EXTENSION_ACTIVATION_ROLLBACK_FAILED"
    group = caught.value.__cause__
    assert isinstance(group, ExtensionAggregateError)
    assert [getattr(e, "code", type(e).__name__) for e in group.errors] == [
        "ValueError",
        "EXTENSION_TIMED_OUT",
    ]


async def test_the_timeout_is_checked(tmp_path: Path) -> None:
    resources = await loader(tmp_path)
    for bad in (0, -1, float("nan"), float("inf"), True, "1", 10**400):
        with pytest.raises(ExtensionError) as caught:
            ExtensionHost(resources=resources, timeout=cast(Any, bad))
        assert caught.value.code == "EXTENSION_INVALID_OPTIONS"
    ExtensionHost(resources=resources, timeout=None)  # no bound, on purpose
    ExtensionHost(resources=resources, timeout=2)


def test_a_cancelled_disposal_cuts_every_remaining_cleanup_short(tmp_path: Path) -> None:
    """When the task running the disposal is cancelled (``asyncio.run`` cancels what is left
    when a command returns, as ``tether chat`` does after Ctrl-C), each remaining cleanup is
    still called but not waited for: with no bound at all, two disposers that never finish
    cannot hold the loop's shutdown."""
    log: list[str] = []
    finished = threading.Event()

    async def scenario() -> None:
        disposing = asyncio.Event()
        host = ExtensionHost(resources=await loader(tmp_path), timeout=None)
        host.discover(
            [
                ExtensionDefinition(id="a", create=lambda: _Stuck(log, dispose=True)),
                ExtensionDefinition(
                    id="b", create=lambda: _Stuck(log, dispose=True, disposing=disposing)
                ),
            ]
        )
        await host.activate("a")
        await host.activate("b")
        disposal = host.dispose()
        await disposing.wait()  # the first stuck dispose runs
        assert not disposal.done()
        # Return with the disposal pending: asyncio.run cancels the host's task.

    def run() -> None:
        asyncio.run(scenario())
        finished.set()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(GUARD)
    assert finished.is_set(), log
    assert log.count("dispose") == 2  # both were called


async def test_a_runtime_bounds_its_extensions_with_extension_timeout(tmp_path: Path) -> None:
    from tether.agent.runtime import TetherRuntimeError, create_runtime

    log: list[str] = []
    stuck = ExtensionDefinition(id="stuck", create=lambda: _Stuck(log, activate=True))
    with pytest.raises(TetherRuntimeError) as caught:
        async with asyncio.timeout(GUARD):
            await create_runtime(
                _runtime_options(tmp_path, extensions=[stuck], extension_timeout=SHORT)
            )
    assert caught.value.code == "RUNTIME_CONSTRUCTION_FAILED"
    cause = caught.value.__cause__
    assert isinstance(cause, ExtensionError)
    assert cause.code == "EXTENSION_TIMED_OUT"
    assert '"stuck"' in str(cause)
    assert log == ["activate", "dispose"]  # rolled back
    assert os.listdir(tmp_path) == []  # the session file it created is gone
    for bad in (0, "5", float("nan")):
        with pytest.raises(TetherRuntimeError) as refused:
            await create_runtime(_runtime_options(tmp_path, extension_timeout=bad))
        assert refused.value.code == "RUNTIME_INVALID_OPTIONS"


async def test_a_product_finished_as_the_abort_lands_is_disposed(tmp_path: Path) -> None:
    """The factory returns at the very moment its activation is aborted: the host does not
    take the product (the abort won), so it disposes it."""
    from tether import AbortController

    log: list[str] = []
    controller = AbortController()

    async def create() -> _Late:
        asyncio.get_running_loop().call_soon(controller.abort)  # lands before the host looks
        return _Late(log)

    host = ExtensionHost(resources=await loader(tmp_path))
    host.discover([ExtensionDefinition(id="photo-finish", create=create)])
    async with asyncio.timeout(GUARD):
        with pytest.raises(ExtensionError) as caught:
            await host.activate("photo-finish", controller.signal)
        assert caught.value.code == "EXTENSION_CANCELLED"
        await host.dispose()
    assert log == ["dispose"]
