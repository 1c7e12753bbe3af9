"""What the runtime tests share: the ``add`` tool, bounded waits, ``RuntimeOptions`` for a
temporary workspace, reading a session file back, expecting a coded error, and ``Probe``, an
extension that logs its lifecycle."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tether import ScriptedModel, text_reply, tool
from tether.agent.extensions import ExtensionContext, ExtensionDefinition
from tether.agent.runtime import (
    TetherRuntimeError,
)
from tether.agent.session import SessionStore, SessionTree
from tether.protocol import AgentEvent, Message

LIMIT = 30.0


@tool
def add(left: int, right: int) -> int:
    """Add two integers."""
    return left + right


async def bounded(awaitable: Any) -> Any:
    async with asyncio.timeout(LIMIT):
        return await awaitable


def options(
    cwd: Path | str,
    *,
    path: str = "session.jsonl",
    mode: str = "create",
    model: object | None = None,
    **extra: Any,
) -> dict[str, Any]:
    return {
        "cwd": cwd,
        "session": {"path": path, "mode": mode},
        "model": ScriptedModel([text_reply("hi")]) if model is None else model,
        **extra,
    }


async def on_disk(path: str) -> tuple[Message, ...]:
    """The active branch in the file now (a read-only snapshot: no lock, so it also reads a
    file a live runtime holds)."""
    return SessionTree(await SessionStore.read(path)).active_messages


async def expect_error(awaitable: Any, code: str) -> TetherRuntimeError:
    with pytest.raises(TetherRuntimeError) as caught:
        await bounded(awaitable)
    assert caught.value.code == code, caught.value
    return caught.value


def returning(value: object) -> Callable[[Any, Any], object]:
    def factory(spec: Any, fallback: Any) -> object:
        return value

    return factory


def real(path: Path | str) -> str:
    return os.path.realpath(path)


class Probe:
    """An extension that records events and can fail at each step."""

    def __init__(
        self,
        log: list[str],
        name: str,
        *,
        fail_activate: bool = False,
        fail_hook: bool = False,
        fail_dispose: bool = False,
        hook: Callable[[AgentEvent], object] | None = None,
        disposer: Callable[[], object] | None = None,
    ) -> None:
        self.log = log
        self.name = name
        self.fail_activate = fail_activate
        self.fail_hook = fail_hook
        self.fail_dispose = fail_dispose
        self.hook = hook
        self.disposer = disposer

    def activate(self, context: ExtensionContext) -> None:
        self.log.append(f"{self.name}:activate")

        def on_event(event: AgentEvent) -> object:
            self.log.append(f"{self.name}:{event.type}")
            if self.fail_hook:
                raise ValueError("boom")
            return None if self.hook is None else self.hook(event)

        def on_dispose() -> object:
            self.log.append(f"{self.name}:dispose")
            if self.fail_dispose:
                raise ValueError("cannot dispose")
            return None if self.disposer is None else self.disposer()

        context.on_agent_event(on_event)
        context.on_dispose(on_dispose)
        if self.fail_activate:
            raise ValueError("activation refused")


def probe(log: list[str], name: str, **kwargs: Any) -> ExtensionDefinition:
    return ExtensionDefinition(id=name, create=lambda: Probe(log, name, **kwargs))
