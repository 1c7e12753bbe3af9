"""The coding session's thinking level: ``set_thinking``/``cycle_thinking`` change the next
request's body on the same model (no new runtime, the same connection), a clamped level is
said once, a model without levels is said once too."""

from __future__ import annotations

import asyncio
import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from openai_bodies import OPENAI_TEXT
from servers.replay import ReplayServer, sse_response
from tether import ScriptedModel, ScriptedReply
from tether.coding import (
    ApprovalPolicy,
    CodingEvent,
    CodingSession,
    CodingSessionConfig,
    CodingSessionError,
    SessionPlace,
)
from tether.models.base import Model
from tether.protocol import ModelUsage
from tether.providers.openai_chat import OpenAIChatModel
from tether.providers.thinking import ThinkingLevel


@dataclass(frozen=True, slots=True, kw_only=True)
class Choice:
    """A ``ModelSource`` building ``make()`` (a real HTTP model, or a scripted one)."""

    spec: str
    make: Any
    thinking: ThinkingLevel | None = None
    context_window: int | None = None
    hidden_env: tuple[str, ...] = ()
    pass_env: tuple[str, ...] = ()

    def build(self, *, cache_key: str | None = None) -> Model:
        model: Model = self.make()
        return model

    def cost(self, usage: ModelUsage) -> float | None:
        return None


def session_for(tmp_path: Path, choice: Choice) -> CodingSession[Choice]:
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    made = CodingSessionConfig(
        model=choice,
        cwd=project,
        tools="none",
        context_files=False,
        skills=False,
        sessions=SessionPlace(directory=tmp_path / "sessions"),
        approval=ApprovalPolicy(auto=True),
    )
    return CodingSession(dataclasses.replace(made))


async def ask(session: CodingSession[Choice], text: str) -> None:
    async with asyncio.timeout(20):
        stream = await session.prompt(text)
        result = await stream.result
    assert result.status == "completed", result


async def test_set_and_cycle_change_the_next_request_on_the_same_connection(
    tmp_path: Path,
) -> None:
    async with ReplayServer() as server:
        for number in range(4):  # each answer its own response ID (so its own message ID)
            body = OPENAI_TEXT.replace("chatcmpl-T3th3rT3xt0001", f"chatcmpl-{number}")
            server.respond(sse_response(body.encode()))
        choice = Choice(
            spec="openai/gpt-5",
            thinking="low",
            make=lambda: OpenAIChatModel("gpt-5", base_url=server.url, api_key="k", thinking="low"),
        )
        session = session_for(tmp_path, choice)
        notices: list[str] = []

        def listen(event: CodingEvent) -> None:
            if event.type == "session.notice":
                notices.append(event.text)

        session.subscribe(listen)
        try:
            assert session.thinking == "low"  # the model's own, before it is built
            await ask(session, "one")
            runtime = session.runtime
            session.set_thinking("high")
            assert session.thinking == "high"
            await ask(session, "two")
            assert session.cycle_thinking() == "off"  # high wraps to off
            await ask(session, "three")
            session.set_thinking("off")  # clamped again: said only once
            await ask(session, "four")
            assert session.runtime is runtime  # no new runtime for a level
        finally:
            await session.close()
        efforts = [request.json["reasoning_effort"] for request in server.requests]
        assert efforts == ["low", "high", "minimal", "minimal"]
        assert len(server.connections) == 1
        assert notices == ["thinking: gpt-5 has no 'off' level; using 'minimal'"]


async def test_a_level_set_before_the_first_prompt_and_a_model_without_levels(
    tmp_path: Path,
) -> None:
    scripted = ScriptedModel([ScriptedReply(text=("hi",)), ScriptedReply(text=("again",))])
    session = session_for(tmp_path, Choice(spec="scripted/a", make=lambda: scripted))
    notices: list[str] = []
    session.subscribe(
        lambda event: notices.append(event.text) if event.type == "session.notice" else None
    )
    try:
        assert session.thinking is None
        session.set_thinking("medium")
        assert session.thinking == "medium"
        await ask(session, "one")
        session.set_thinking("high")
        await ask(session, "two")
        with pytest.raises(CodingSessionError) as raised:
            session.set_thinking("max")  # type: ignore[arg-type]
        assert raised.value.code == "CODING_THINKING_INVALID"
    finally:
        await session.close()
    assert notices == ["thinking: scripted/a takes no thinking level"]
