"""Extension hosts under hostile callers and stuck extensions (issue 25, items 2, 14-16).

* The host reads the *real* class of what it is given (``type()``, never ``__class__``) and
  accepts an ``AbortSignal`` subclass exactly where ``run_agent_loop`` does: one rule
  (``tether._types.instance_of``).
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
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import pytest

from tether import AbortSignal, ToolRegistry, run_agent_loop, user_message
from tether.agent.extensions import ExtensionDefinition, ExtensionError, ExtensionHost
from tether.agent.resources import ResourceLoader
from tether.models.scripted import ScriptedModel, text_reply

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
