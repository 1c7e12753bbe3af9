"""Live tool output (issue 28): ``context.progress`` → ``tool.progress`` events.

A running ``bash`` command's output reaches the run's consumer while the command still runs
(the test holds the command on a FIFO it controls and releases it only after seeing the first
line: no sleeps); the reports are coalesced and bounded (32 KiB of a 10 MB output); an abort
mid-stream leaves no process, no timer and no later event; a tool's result is unchanged.
"""

# Tests make FIFOs in real temp directories synchronously on purpose.
# ruff: noqa: ASYNC230

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tether import (
    AbortController,
    AgentEvent,
    CancelledRunResult,
    CompletedRunResult,
    JsonObject,
    ToolCall,
    ToolRegistry,
    ToolResultMessage,
    UserMessage,
    run_agent_loop,
    to_json,
)
from tether.abort import AbortSignal
from tether.loop.progress import (
    TOOL_PROGRESS_FLUSH_BYTES,
    TOOL_PROGRESS_MAX_BYTES,
    ProgressReporter,
)
from tether.models.scripted import ScriptedModel, text_reply, tool_call_reply
from tether.protocol import RunContext, ToolProgressEvent, ToolStartedEvent
from tether.tools import tool
from tether.tools.coding import Workspace, coding_tools
from tether.tools.coding.process import processes_settled
from tether.tools.execution import execute_tool_call


def aborted() -> AbortSignal:
    controller = AbortController()
    controller.abort("cancelled")
    return controller.signal


CALL = ToolCall(id="call-1", name="bash", arguments=JsonObject())


def progress_of(events: list[AgentEvent]) -> list[ToolProgressEvent]:
    return [event for event in events if event.type == "tool.progress"]


def bash_run(root: Path, command: str, signal: Any = None) -> Any:
    model = ScriptedModel([tool_call_reply(("bash", {"command": command})), text_reply("done")])
    return run_agent_loop(
        messages=[UserMessage(content="run it")],
        model=model,
        tools=coding_tools(root),
        max_steps=3,
        signal=signal,
    )


def tool_result_call(messages: Any) -> ToolCall:
    """The (only) tool call of a run's transcript."""
    return next(
        block
        for message in messages
        if message.role == "assistant"
        for block in message.content
        if block.type == "toolCall"
    )


def release(fifo: Path, line: str = "go\n") -> None:
    with open(fifo, "w") as handle:  # blocks until the command opens its end: in a thread
        handle.write(line)


async def test_bash_output_streams_before_the_command_ends(tmp_path: Path) -> None:
    fifo = tmp_path / "gate"
    os.mkfifo(fifo)
    stream = bash_run(tmp_path, f"echo first; read line < {fifo}; echo second $line")
    events: list[AgentEvent] = []
    released = False
    async with asyncio.timeout(30):
        async for event in stream:
            events.append(event)
            if event.type == "tool.progress" and not released:
                # The command is blocked on the FIFO: this output arrived while it runs.
                assert "".join(e.payload.text for e in progress_of(events)) == "first\n"
                released = True
                await asyncio.to_thread(release, fifo)
        result = await stream.result
        await processes_settled()
    assert released
    assert isinstance(result, CompletedRunResult)
    progress = progress_of(events)
    assert "".join(e.payload.text for e in progress) == "first\nsecond go\n"
    started_event = next(event for event in events if event.type == "tool.started")
    assert isinstance(started_event, ToolStartedEvent)
    call_id = started_event.payload.tool_call.id
    assert {(e.payload.tool_call_id, e.payload.tool_name) for e in progress} == {(call_id, "bash")}
    types = [event.type for event in events]
    started, finished = types.index("tool.started"), types.index("tool.finished")
    assert all(started < events.index(e) < finished for e in progress)
    assert [event.sequence for event in events] == list(range(len(events)))
    tool_result = next(m for m in result.messages if isinstance(m, ToolResultMessage))
    assert tool_result.content == "exit code 0\n--- stdout ---\nfirst\nsecond go\nstderr: (empty)\n"
    assert to_json(progress[0])["payload"] == {
        "toolCallId": progress[0].payload.tool_call_id,
        "toolName": "bash",
        "text": "first\n",
    }


async def test_an_abort_mid_stream_leaves_nothing_behind(tmp_path: Path) -> None:
    fifo = tmp_path / "gate"
    os.mkfifo(fifo)
    ws = Workspace(tmp_path)
    pids: list[object] = []
    ws.observer = lambda stage, value: pids.append(value) if stage == "process:started" else None
    controller = AbortController()
    model = ScriptedModel([tool_call_reply(("bash", {"command": f"echo first; cat {fifo}"}))])
    stream = run_agent_loop(
        messages=[UserMessage(content="run it")],
        model=model,
        tools=coding_tools(ws),
        max_steps=2,
        signal=controller.signal,
    )
    events: list[AgentEvent] = []
    async with asyncio.timeout(30):
        async for event in stream:
            events.append(event)
            if event.type == "tool.progress":
                controller.abort("stop")
        result = await stream.result
        await processes_settled()
    assert isinstance(result, CancelledRunResult)
    assert [e.type for e in events][-1] == "run.finished"
    assert "tool.finished" not in [e.type for e in events]
    assert [e.payload.text for e in progress_of(events)] == ["first\n"]
    assert len(pids) == 1
    pid = pids[0]
    assert isinstance(pid, int)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        pass
    else:  # dead but not yet reaped by init
        with open(f"/proc/{pid}/stat") as handle:
            assert handle.read().rsplit(")", 1)[1].split()[0] == "Z"
    tasks = asyncio.all_tasks() - {asyncio.current_task()}
    assert not tasks


async def test_ten_megabytes_stream_at_most_the_cap(tmp_path: Path) -> None:
    stream = bash_run(tmp_path, "head -c 10000000 /dev/zero | tr '\\0' a")
    events: list[AgentEvent] = []
    async with asyncio.timeout(60):
        async for event in stream:
            events.append(event)
        result = await stream.result
        await processes_settled()
    assert isinstance(result, CompletedRunResult)
    progress = progress_of(events)
    streamed = "".join(e.payload.text for e in progress)
    assert streamed == "a" * TOOL_PROGRESS_MAX_BYTES
    # coalesced: no event is smaller than the flush size except the last
    assert len(progress) <= TOOL_PROGRESS_MAX_BYTES // TOOL_PROGRESS_FLUSH_BYTES + 2
    tool_result = next(m for m in result.messages if isinstance(m, ToolResultMessage))
    assert "[stdout truncated: 10000000 bytes written, first 32768 kept]" in tool_result.content
    # the same call without a reporter gives the same result
    plain = await execute_tool_call(
        coding_tools(tmp_path), tool_result_call(result.messages), AbortController().signal
    )
    await processes_settled()
    assert plain.content == tool_result.content


async def test_a_tool_of_our_own_reports_through_its_context(tmp_path: Path) -> None:
    leftover: list[Any] = []

    @tool
    async def count(context: RunContext[None], upto: int) -> str:
        """Count aloud."""
        for number in range(1, upto + 1):
            context.progress(f"{number} ")
        context.progress("")  # ignored
        leftover.append(context.progress)
        return "counted"

    model = ScriptedModel([tool_call_reply(("count", {"upto": 3})), text_reply("done")])
    stream = run_agent_loop(
        messages=[UserMessage(content="count")],
        model=model,
        tools=ToolRegistry([count]),
        max_steps=3,
    )
    events: list[AgentEvent] = []
    async with asyncio.timeout(10):
        async for event in stream:
            events.append(event)
            if event.type == "tool.finished":
                leftover[0]("too late")  # after the call ended: dropped
    progress = progress_of(events)
    assert [e.payload.text for e in progress] == ["1 2 3 "]  # one tick: one event
    assert "too late" not in "".join(e.payload.text for e in progress)


async def test_execute_tool_call_without_a_reporter_ignores_reports(tmp_path: Path) -> None:
    registry = coding_tools(tmp_path)
    call = ToolCall(id="c", name="bash", arguments=JsonObject({"command": "echo hi"}))
    result = await execute_tool_call(registry, call, AbortController().signal)
    await processes_settled()
    assert result.content == "exit code 0\n--- stdout ---\nhi\nstderr: (empty)\n"
    reports: list[str] = []
    again = await execute_tool_call(
        registry, call, AbortController().signal, progress=reports.append
    )
    await processes_settled()
    assert again == result
    assert "".join(reports) == "hi\n"


# --- the reporter --------------------------------------------------------------------------


async def test_reports_in_one_tick_are_one_event_and_close_cancels_the_timer() -> None:
    emitted: list[str] = []
    reporter = ProgressReporter(CALL, lambda _call, text: emitted.append(text))
    reporter.report("a")
    reporter.report("b")
    assert emitted == []  # never emitted from inside report()
    await asyncio.sleep(0)
    assert emitted == ["ab"]
    reporter.report("c")  # within the interval: waits for the timer
    await asyncio.sleep(0)
    assert emitted == ["ab"]
    reporter.close(aborted())
    reporter.report("d")
    assert emitted == ["ab"]


async def test_a_full_buffer_flushes_at_once_and_close_flushes_the_rest() -> None:
    emitted: list[str] = []
    reporter = ProgressReporter(CALL, lambda _call, text: emitted.append(text))
    reporter.report("x")
    await asyncio.sleep(0)
    reporter.report("y" * TOOL_PROGRESS_FLUSH_BYTES)
    await asyncio.sleep(0)
    assert emitted == ["x", "y" * TOOL_PROGRESS_FLUSH_BYTES]
    reporter.report("z")
    reporter.close()
    assert emitted[-1] == "z"


def test_reports_outside_a_running_loop_are_dropped() -> None:
    emitted: list[str] = []
    reporter = ProgressReporter(CALL, lambda _call, text: emitted.append(text))
    reporter.report("no loop")  # must not raise into the tool
    reporter.report(b"bytes")  # pyright: ignore[reportArgumentType]
    reporter.close(aborted())
    assert emitted == []


@settings(max_examples=60, deadline=None)
@given(
    reports=st.lists(st.one_of(st.text(max_size=30), st.binary(max_size=4)), max_size=30),
    cap=st.integers(min_value=0, max_value=64),
)
def test_what_is_emitted_is_a_bounded_prefix_of_what_was_reported(
    reports: list[Any], cap: int
) -> None:
    emitted: list[str] = []

    async def scenario() -> None:
        reporter = ProgressReporter(CALL, lambda _call, text: emitted.append(text), max_bytes=cap)
        for report in reports:
            reporter.report(report)
            await asyncio.sleep(0)
        reporter.close()

    asyncio.run(scenario())
    texts = "".join(report for report in reports if type(report) is str)
    assert all(emitted)
    # whole characters only: the cut falls before a character that would cross the cap
    assert "".join(emitted) == texts.encode()[:cap].decode("utf-8", "ignore")


async def test_a_lone_surrogate_is_sent_as_a_replacement_character() -> None:
    emitted: list[str] = []
    reporter = ProgressReporter(CALL, lambda _call, text: emitted.append(text))
    reporter.report("a\ud800b")
    reporter.close()
    assert emitted == ["a\ufffdb"]


async def test_a_plain_def_tool_reports_from_its_worker_thread() -> None:
    gate = threading.Event()

    @tool
    def slow(context: RunContext[None]) -> str:
        """Report, then wait for the test."""
        context.progress("working")
        assert gate.wait(timeout=10), "the progress event never reached the test"
        return "done"

    model = ScriptedModel([tool_call_reply(("slow", {})), text_reply("ok")])
    stream = run_agent_loop(
        messages=[UserMessage(content="go")], model=model, tools=ToolRegistry([slow]), max_steps=3
    )
    events: list[AgentEvent] = []
    async with asyncio.timeout(10):
        async for event in stream:
            events.append(event)
            if event.type == "tool.progress":
                gate.set()  # the thread is still waiting: the report came while it ran
        result = await stream.result
    assert isinstance(result, CompletedRunResult)
    assert [e.payload.text for e in progress_of(events)] == ["working"]
    tool_result = next(m for m in result.messages if isinstance(m, ToolResultMessage))
    assert tool_result.content == "done"
