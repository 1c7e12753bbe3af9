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
