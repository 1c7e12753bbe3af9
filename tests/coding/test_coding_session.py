"""``tether.coding.CodingSession``: the session every mode drives, on a scripted model.

Covered: the system prompt (introduction, tools, date, directory, AGENTS.md, skills) and
that chat and print configs give the same one; a branch move that survives a rebuild of the
runtime (``switch_model``, ``change_directory``), the bug of issue 27; queued messages kept
across a model switch; approvals (the approver asked, ``always`` remembered, no approver =
declined); an ephemeral session removed at close; usage totals; errors with codes.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable
from pathlib import Path
from typing import TypeVar

import pytest

from coding_support import TODAY, Choice
from tether import JsonObject, ScriptedModel, ScriptedReply, ScriptedToolCall
from tether.agent.session import MessageEntry
from tether.coding import (
    Answer,
    ApprovalPolicy,
    ApprovalRequest,
    CodingEvent,
    CodingSession,
    CodingSessionConfig,
    CodingSessionError,
    SessionPlace,
)
from tether.protocol import ModelRequest, ModelUsage

T = TypeVar("T")


async def bounded(awaitable: Awaitable[T]) -> T:
    async with asyncio.timeout(10):
        return await awaitable


def config(tmp_path: Path, choice: Choice, **changes: object) -> CodingSessionConfig[Choice]:
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    base = CodingSessionConfig(
        model=choice,
        cwd=project,
        today=TODAY,
        sessions=SessionPlace(directory=tmp_path / "sessions"),
        approval=ApprovalPolicy(auto=True),
    )
    return dataclasses.replace(base, **changes)


def user_texts(request: ModelRequest) -> list[str]:
    return [message.content for message in request.messages if message.role == "user"]


async def test_the_system_prompt_has_the_tools_date_directory_context_and_skills(
    tmp_path: Path,
) -> None:
    choice = Choice(spec="scripted/a", model=ScriptedModel([ScriptedReply(text=("hi",))]))
    made = config(tmp_path, choice, introduction="You help.")
    (made.cwd / "AGENTS.md").write_text("Use tabs.\n", encoding="utf-8")
    skill = made.cwd / ".tether" / "skills" / "deploy"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: deploy\ndescription: Ship the project.\n---\nRun make deploy.\n",
        encoding="utf-8",
    )
    session = CodingSession(made)
    try:
        await bounded((await bounded(session.prompt("hello"))).result)
        system = session.system_prompt
        assert system is not None
        assert system.startswith("You help.\n\nTools: read_file, write_file, edit_file")
        assert "load_skill" in system
        assert f"Today's date: {TODAY.isoformat()}." in system
        assert f"Project directory: {made.cwd}" in system
        assert f"# Context from {made.cwd / 'AGENTS.md'}\n\nUse tabs." in system
        assert "deploy" in system.split("# Context from", 1)[1]
        assert choice.model.requests[0].system == system
    finally:
        await session.close()


async def test_without_tools_there_are_none_and_no_skills(tmp_path: Path) -> None:
    choice = Choice(spec="scripted/a", model=ScriptedModel([ScriptedReply(text=("hi",))]))
    session = CodingSession(config(tmp_path, choice, tools="none", context_files=False))
    try:
        agent = await bounded(session.start())
        assert agent.tool_names == ()
        assert session.system_prompt is not None
        assert "Tools: none." in session.system_prompt
        assert "# Context from" not in session.system_prompt
    finally:
        await session.close()


async def test_a_branch_move_survives_a_model_switch_and_a_new_workspace(tmp_path: Path) -> None:
    first = ScriptedModel(
        [ScriptedReply(text=("one",)), ScriptedReply(text=("two",))],
    )
    second = ScriptedModel([ScriptedReply(text=("branched",))])
    third = ScriptedModel([ScriptedReply(text=("still branched",))])
    session = CodingSession(config(tmp_path, Choice(spec="scripted/a", model=first)))
    try:
        await bounded((await session.prompt("first")).result)
        await bounded((await session.prompt("second")).result)
        entries = session.active_entries()
        assert len(entries) == 4
        first_answer = entries[1]
        assert isinstance(first_answer, MessageEntry)
        assert first_answer.message.role == "assistant"

        await bounded(session.move_to(first_answer.id[:12]))
        agent = session.agent
        assert agent is not None
        assert len(agent.messages) == 2
        # The runtime is built again for the new model: the move is the session's.
        await bounded(session.switch_model(Choice(spec="scripted/b", model=second)))
        assert session.tree is not None
        assert session.tree.active_leaf_id == first_answer.id
        await bounded((await session.prompt("branch")).result)
        assert user_texts(second.requests[0]) == ["first", "branch"]

        # And again for a new workspace, after a move with nothing written since.
        await bounded(session.move_to(first_answer.id))
        other = tmp_path / "other"
        other.mkdir()
        await bounded(session.change_directory(other))
        await bounded(session.switch_model(Choice(spec="scripted/c", model=third)))
        await bounded((await session.prompt("again")).result)
        assert user_texts(third.requests[0]) == ["first", "again"]
        assert f"Project directory: {other}" in (third.requests[0].system or "")
    finally:
        await session.close()


async def test_queued_messages_go_on_with_the_new_model(tmp_path: Path) -> None:
    first = ScriptedModel([])
    second = ScriptedModel([ScriptedReply(text=("ok",)), ScriptedReply(text=("later",))])
    session = CodingSession(config(tmp_path, Choice(spec="scripted/a", model=first)))
    try:
        await bounded(session.steer("steered"))
        await bounded(session.follow_up("followed"))
        await bounded(session.switch_model(Choice(spec="scripted/b", model=second)))
        agent = session.agent
        assert agent is not None
        assert [m.content for m in agent.queued_steering] == ["steered"]
        assert [m.content for m in agent.queued_follow_ups] == ["followed"]
        assert session.model.spec == "scripted/b"
    finally:
        await session.close()


def bash_call(call_id: str) -> ScriptedReply:
    arguments = JsonObject({"command": "echo ran"})
    return ScriptedReply(
        tool_calls=(ScriptedToolCall(name="bash", arguments=arguments, id=call_id),)
    )


async def test_approvals_go_to_the_approver_and_always_is_remembered(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            bash_call("c1"),
            bash_call("c2"),
            ScriptedReply(text=("done",)),
            bash_call("c3"),
            ScriptedReply(text=("done again",)),
        ]
    )
    answers: list[Answer] = ["no", "always"]
    asked: list[ApprovalRequest] = []

    async def approver(request: ApprovalRequest) -> Answer:
        asked.append(request)
        return answers.pop(0)

    made = config(tmp_path, Choice(spec="scripted/a", model=model), approval=ApprovalPolicy())
    session = CodingSession(made, approver=approver)
    try:
        await bounded((await session.prompt("run it")).result)
        await bounded((await session.prompt("once more")).result)
        assert [request.id for request in asked] == ["c1", "c2"]
        assert asked[0].tool_call.name == "bash"
        agent = session.agent
        assert agent is not None
        results = [m for m in agent.messages if m.role == "toolResult"]
        assert [r.is_error for r in results] == [True, False, False]
        assert "the user declined" in results[0].content
        assert "bash" in session.approvals.always
    finally:
        await session.close()


async def test_without_an_approver_an_asked_call_is_declined(tmp_path: Path) -> None:
    model = ScriptedModel([bash_call("c1"), ScriptedReply(text=("ok",))])
    made = config(tmp_path, Choice(spec="scripted/a", model=model), approval=ApprovalPolicy())
    session = CodingSession(made)
    try:
        await bounded((await session.prompt("run it")).result)
        agent = session.agent
        assert agent is not None
        result = next(m for m in agent.messages if m.role == "toolResult")
        assert result.is_error
    finally:
        await session.close()


async def test_an_ephemeral_session_is_removed_at_close(tmp_path: Path) -> None:
    usage = ModelUsage(input_tokens=3, output_tokens=1)
    model = ScriptedModel([ScriptedReply(text=("hi",), usage=usage)])
    choice = Choice(spec="scripted/a", model=model, price=0.5)
    session = CodingSession(config(tmp_path, choice, sessions=SessionPlace()))
    assert session.cost is None
    session = CodingSession(config(tmp_path, choice, sessions=SessionPlace()))
    events: list[CodingEvent] = []
    session.subscribe(events.append)
    await bounded((await session.prompt("hello")).result)
    path = session.session_path
    assert path is not None
    assert path.is_file()
    assert session.usage == usage
    assert session.cost == 0.5
    # the session gave its model its prompt cache key: random, the same for every build
    assert choice.cache_keys[-1] == session.prompt_cache_key
    assert session.prompt_cache_key.startswith("tether-")
    await session.close()
    assert not path.exists()
    assert not path.parent.exists()
    assert events[0].type == "session.opened"
    assert events[-1].type == "run.finished"


async def test_unknown_sessions_and_entries_are_coded_errors(tmp_path: Path) -> None:
    session = CodingSession(config(tmp_path, Choice(spec="scripted/a", model=ScriptedModel([]))))
    try:
        with pytest.raises(CodingSessionError) as raised:
            await session.move_to("x")
        assert raised.value.code == "CODING_NOT_STARTED"
        with pytest.raises(CodingSessionError) as raised:
            await session.resume("nope")
        assert raised.value.code == "CODING_SESSION_NOT_FOUND"
        await bounded(session.start())
        with pytest.raises(CodingSessionError) as raised:
            await session.move_to("zzz")
        assert raised.value.code == "CODING_ENTRY_NOT_FOUND"
    finally:
        await session.close()
    fixed = CodingSession(
        config(
            tmp_path,
            Choice(spec="scripted/a", model=ScriptedModel([])),
            sessions=SessionPlace(file=tmp_path / "one.jsonl"),
        )
    )
    with pytest.raises(CodingSessionError) as raised:
        await fixed.new_session()
    assert raised.value.code == "CODING_SESSION_FIXED"
    await fixed.close()


async def test_subscribers_see_a_commands_output_as_it_runs(tmp_path: Path) -> None:
    """Issue 28: ``tool.progress`` reaches ``subscribe`` between the call's start and end."""
    model = ScriptedModel([bash_call("c1"), ScriptedReply(text=("ok",))])
    session = CodingSession(config(tmp_path, Choice(spec="scripted/a", model=model)))
    seen: list[CodingEvent] = []
    session.subscribe(seen.append)
    try:
        await bounded((await session.prompt("run it")).result)
    finally:
        await session.close()
    types = [event.type for event in seen]
    progress = [event for event in seen if event.type == "tool.progress"]
    assert [(e.payload.tool_call_id, e.payload.tool_name, e.payload.text) for e in progress] == [
        ("c1", "bash", "ran\n")
    ]
    assert types.index("tool.started") < types.index("tool.progress") < types.index("tool.finished")


async def test_cost_counts_every_response_and_turns_unknown_with_an_unpriced_model(
    tmp_path: Path,
) -> None:
    """Issue 33: the totals grow with each response (live during a run), and once a model
    whose prices are not known answers, the cost is unknown (``None``), never a sum that
    leaves that response out; ``new_session`` starts again."""
    usage = ModelUsage(input_tokens=3, output_tokens=2, cache_read_tokens=100)
    priced = Choice(
        spec="scripted/a",
        model=ScriptedModel(
            [ScriptedReply(text=("one",), usage=usage), ScriptedReply(text=("two",), usage=usage)]
        ),
        price=0.25,
    )
    seen: list[float | None] = []
    made = config(tmp_path, priced)
    session = CodingSession(made)
    try:
        session.subscribe(
            lambda event: seen.append(session.cost) if event.type == "run.finished" else None
        )
        await bounded((await session.prompt("hello")).result)
        assert session.cost == 0.5
        assert seen == [0.5]  # counted by the time the run finished
        unpriced = Choice(
            spec="scripted/b", model=ScriptedModel([ScriptedReply(text=("x",), usage=usage)])
        )
        await session.switch_model(unpriced)
        await bounded((await session.prompt("again")).result)
        assert session.usage == usage + usage
        assert session.cost is None
        await session.switch_model(priced)
        await session.new_session()
        assert session.cost is None
        assert session.usage == ModelUsage(input_tokens=0, output_tokens=0)
        await bounded((await session.prompt("fresh")).result)
        assert session.cost == 0.5
    finally:
        await session.close()
