"""``run_owned_turns`` (the loop entry point of a transcript owner) against ``run_agent_loop``.

Each workload runs twice on fresh, identical doubles: once through ``run_agent_loop`` and once
through ``run_owned_turns``. The owned run must emit the loop's events minus the
``message.accepted`` announcements of the starting transcript and the ``run.finished``, with the
same payloads and its sequence numbers moved to start at ``sequence_start``; return the same
result and the next free sequence number; send the same requests (IDs continuing after
``request_sequence_start``); and add the new tool-call IDs to the ``call_ids`` set it was given.
A Hypothesis property does the same for random scripts of text and tool turns.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from factories import types_of
from tether import (
    AbortController,
    AgentEvent,
    AssistantMessage,
    CancelledRunResult,
    CompletedRunResult,
    FailedRunResult,
    JsonObject,
    MaxStepsRunResult,
    Message,
    ModelChunk,
    ModelRequest,
    ModelUsage,
    RunResult,
    ScriptedModel,
    ScriptedReply,
    ScriptedToolCall,
    TextBlock,
    ToolCall,
    ToolExecutionContext,
    ToolRegistry,
    ToolResultMessage,
    UserMessage,
    run_agent_loop,
    text_reply,
    tool,
    tool_call_reply,
)
from tether.abort import AbortSignal
from tether.loop import RunLimits
from tether.loop.agent_loop import run_owned_turns
from tether.loop.hooks import BlockToolCall, ToolCallContext, ToolHooks
from tether.models.limits import DEFAULT_LIMITS
from tether.models.scripted import ResponseFactory
from tether.protocol import TextDeltaChunk

USER = UserMessage(id="user-1", content="Add 20 and 22.")
USAGE = ModelUsage(input_tokens=7, output_tokens=3, cache_read_tokens=2)
BOUND = 10  # seconds: an outer bound on awaits that a regression could turn into a hang

# A transcript with an earlier exchange: its call ID is one a scripted model derives for
# request-001, so runs that start numbering after it never collide with it.
PRIOR: tuple[Message, ...] = (
    UserMessage(id="user-0", content="What is 1 + 1?"),
    AssistantMessage(
        id="assistant-0",
        content=(
            ToolCall(
                id="call-request-001-1", name="add", arguments=JsonObject({"left": 1, "right": 1})
            ),
        ),
    ),
    ToolResultMessage(
        id="result-0", tool_call_id="call-request-001-1", tool_name="add", content="2"
    ),
    AssistantMessage(id="assistant-1", content=(TextBlock(text="2"),)),
    USER,
)


# --- the doubles ------------------------------------------------------------------------------


@dataclass
class Doubles:
    """One run's fresh model, tools and controller (tools may abort through ``controller``)."""

    model: ScriptedModel
    tools: ToolRegistry
    controller: AbortController = field(default_factory=AbortController)
    tool_calls: list[str] = field(default_factory=list[str])


Script = Callable[[], Sequence[ResponseFactory]]
"""Builds a fresh script (factories are called once per run)."""


def doubles(script: Script, *, abort_in: str | None = None) -> Doubles:
    """Fresh doubles: ``add`` and ``echo`` tools; ``abort`` aborts the run's controller
    (with reason ``abort_in``) from inside the tool, then returns normally."""
    controller = AbortController()
    log: list[str] = []

    @tool
    async def add(left: int, right: int, context: ToolExecutionContext) -> int:
        """Add two integers."""
        log.append(context.tool_call_id)
        return left + right

    @tool
    async def echo(text: str, context: ToolExecutionContext) -> str:
        """Echo the text."""
        log.append(context.tool_call_id)
        return text

    @tool
    async def abort(context: ToolExecutionContext) -> str:
        """Abort the run from inside a tool."""
        log.append(context.tool_call_id)
        controller.abort(abort_in or "aborted by a tool")
        return "aborted"

    return Doubles(
        model=ScriptedModel(list(script())),
        tools=ToolRegistry([add, echo, abort]),
        controller=controller,
        tool_calls=log,
    )


def call_ids_of(messages: Sequence[Message]) -> set[str]:
    return {
        block.id
        for message in messages
        if isinstance(message, AssistantMessage)
        for block in message.content
        if isinstance(block, ToolCall)
    }


# --- running both ways --------------------------------------------------------------------------


@dataclass
class Compared:
    result: RunResult
    events: list[AgentEvent]  # the owned run's events
    requests: tuple[ModelRequest, ...]
    tool_calls: list[str]


async def compare(
    script: Script,
    *,
    transcript: tuple[Message, ...] = (USER,),
    max_steps: int = 8,
    request_sequence_start: int = 0,
    sequence_start: int = 0,
    system: str | None = None,
    limits: RunLimits = DEFAULT_LIMITS,
    hooks: ToolHooks | None = None,
    abort_in: str | None = None,
    abort_first: bool = False,
) -> Compared:
    """Run ``script`` both ways and check everything the owned run must share with the loop."""
    loop_side = doubles(script, abort_in=abort_in)
    owned_side = doubles(script, abort_in=abort_in)
    if abort_first:
        loop_side.controller.abort("aborted before the start")
        owned_side.controller.abort("aborted before the start")

    stream = run_agent_loop(
        messages=transcript,
        model=loop_side.model,
        tools=loop_side.tools,
        max_steps=max_steps,
        signal=loop_side.controller.signal,
        system=system,
        limits=limits,
        request_sequence_start=request_sequence_start,
        hooks=hooks,
    )
    async with asyncio.timeout(BOUND):
        loop_events = [event async for event in stream]
        loop_result = await stream.result

    owned_events: list[AgentEvent] = []
    emitters: list[asyncio.Task[Any] | None] = []

    def emit(event: AgentEvent) -> None:
        emitters.append(asyncio.current_task())
        owned_events.append(event)

    initial_ids = call_ids_of(transcript)
    call_ids = set(initial_ids)
    async with asyncio.timeout(BOUND):
        owned_result, next_sequence = await run_owned_turns(
            transcript=transcript,
            call_ids=call_ids,
            open_stream=owned_side.model.stream,
            registry=ToolRegistry.snapshot(owned_side.tools),
            max_steps=max_steps,
            signal=owned_side.controller.signal,
            system=system,
            limits=limits,
            hooks=hooks,
            request_sequence_start=request_sequence_start,
            sequence_start=sequence_start,
            emit=emit,
        )

    # The loop announced the transcript and finished with run.finished; the owned run did not.
    announced = 0 if abort_first else len(transcript)
    assert [event.type for event in loop_events[:announced]] == ["message.accepted"] * announced
    assert [
        event.payload.message
        for event in loop_events[:announced]
        if event.type == "message.accepted"
    ] == list(transcript[:announced])
    assert [event.sequence for event in loop_events] == list(range(len(loop_events)))
    last = loop_events[-1]
    assert last.type == "run.finished"
    assert last.payload.result == loop_result
    middle = loop_events[announced:-1]
    assert all(event.type not in ("message.accepted", "run.finished") for event in middle)

    # The same events, renumbered from sequence_start; the next free number returned.
    shift = sequence_start - announced
    expected = [dataclasses.replace(event, sequence=event.sequence + shift) for event in middle]
    assert owned_events == expected
    assert next_sequence == sequence_start + len(middle)
    current = asyncio.current_task()
    assert all(task is current for task in emitters)  # it runs on the caller's task

    # The same result and the same requests, numbered after request_sequence_start.
    assert owned_result == loop_result
    assert owned_side.model.requests == loop_side.model.requests
    assert [request.id for request in owned_side.model.requests] == [
        f"request-{request_sequence_start + step:03d}"
        for step in range(1, len(owned_side.model.requests) + 1)
    ]
    assert owned_side.tool_calls == loop_side.tool_calls

    # call_ids (the same set object) now also holds the calls the run added.
    assert call_ids == initial_ids | call_ids_of(owned_result.messages)
    return Compared(owned_result, owned_events, owned_side.model.requests, owned_side.tool_calls)


def shown(message: ToolResultMessage) -> str:
    """A result's content, or its error code when it is an error."""
    return json.loads(message.content)["error"]["code"] if message.is_error else message.content


# --- workloads ----------------------------------------------------------------------------------


async def test_a_text_reply() -> None:
    compared = await compare(
        lambda: [text_reply("Hello", ", world", usage=USAGE)], sequence_start=5, system="Be brief."
    )
    result = compared.result
    assert isinstance(result, CompletedRunResult), result
    assert result.final_text == "Hello, world"
    assert result.usage == USAGE
    assert types_of(compared.events) == ["model.chunk", "model.chunk"]
    assert [event.sequence for event in compared.events] == [5, 6]
    (request,) = compared.requests
    assert request.id == "request-001"
    assert request.system == "Be brief."
    assert request.messages == (USER,)


async def test_a_tool_turn_then_text() -> None:
    compared = await compare(
        lambda: [
            tool_call_reply(("add", {"left": 20, "right": 22}), usage=USAGE),
            text_reply("42", usage=USAGE),
        ],
        sequence_start=40,
        request_sequence_start=3,
    )
    result = compared.result
    assert isinstance(result, CompletedRunResult), result
    assert result.final_text == "42"
    assert result.usage == USAGE + USAGE
    assert types_of(compared.events) == [
        "model.chunk",
        "tool.started",
        "tool.finished",
        "model.chunk",
    ]
    assert [event.sequence for event in compared.events] == [40, 41, 42, 43]
    assert [request.id for request in compared.requests] == ["request-004", "request-005"]
    assert compared.tool_calls == ["call-request-004-1"]
    results = [message for message in result.messages if isinstance(message, ToolResultMessage)]
    assert [(message.tool_call_id, message.content) for message in results] == [
        ("call-request-004-1", "42")
    ]


async def test_several_tool_calls_in_one_batch() -> None:
    compared = await compare(
        lambda: [
            tool_call_reply(
                ("add", {"left": 1, "right": 2}),
                ("echo", {"text": "hi"}),
                ("add", {"left": "one", "right": 2}),  # invalid arguments: an error result
                ("missing", {}),  # unknown tool: an error result
            ),
            text_reply("done"),
        ],
        sequence_start=1,
    )
    result = compared.result
    assert isinstance(result, CompletedRunResult), result
    assert compared.tool_calls == ["call-request-001-1", "call-request-001-2"]
    results = [message for message in result.messages if isinstance(message, ToolResultMessage)]
    assert [(shown(message), message.is_error) for message in results] == [
        ("3", False),
        ("hi", False),
        ("TOOL_ARGUMENTS_INVALID", True),
        ("TOOL_NOT_FOUND", True),
    ]
    assert types_of(compared.events).count("tool.started") == 4
    assert types_of(compared.events).count("tool.finished") == 4


async def test_a_tool_batch_with_hooks() -> None:
    def before(context: ToolCallContext) -> BlockToolCall | None:
        return BlockToolCall(reason="not echo") if context.tool_call.name == "echo" else None

    compared = await compare(
        lambda: [
            tool_call_reply(("add", {"left": 1, "right": 2}), ("echo", {"text": "hi"})),
            text_reply("done"),
        ],
        hooks=ToolHooks(before_tool_call=before),
    )
    assert compared.result.status == "completed"
    assert compared.tool_calls == ["call-request-001-1"]


async def _failing_turn(request: ModelRequest, signal: AbortSignal) -> AsyncIterator[ModelChunk]:
    yield TextDeltaChunk(request_id=request.id, delta="partial")
    raise RuntimeError("the model's connection dropped")


def failing_turn(request: ModelRequest, signal: AbortSignal) -> AsyncIterator[Any]:
    return _failing_turn(request, signal)


async def test_a_model_failure_mid_stream() -> None:
    compared = await compare(
        lambda: [tool_call_reply(("add", {"left": 1, "right": 2})), failing_turn],
        sequence_start=9,
    )
    result = compared.result
    assert isinstance(result, FailedRunResult), result
    assert result.error.code == "MODEL_STREAM_FAILED"
    assert result.error.message == "the model's connection dropped"
    assert len(result.messages) == 3  # the user, the call, its result: no partial message
    assert types_of(compared.events) == [
        "model.chunk",
        "tool.started",
        "tool.finished",
        "model.chunk",
    ]


async def test_an_exhausted_script_fails_the_same_way() -> None:
    compared = await compare(lambda: [tool_call_reply(("add", {"left": 1, "right": 2}))])
    result = compared.result
    assert isinstance(result, FailedRunResult), result
    assert result.error.code == "SCRIPT_EXHAUSTED"
    assert result.error.message == 'No scripted response remains for request "request-002"'


@pytest.mark.parametrize("with_calls", [False, True])
async def test_a_length_stop(with_calls: bool) -> None:
    calls = (ScriptedToolCall(name="add", arguments=JsonObject({"left": 1, "right": 2})),)
    compared = await compare(
        lambda: [
            ScriptedReply(
                text=("cut",), tool_calls=calls if with_calls else (), stop_reason="length"
            ),
            text_reply("never requested"),
        ],
        sequence_start=2,
    )
    result = compared.result
    assert isinstance(result, FailedRunResult), result
    assert result.error.code == "MODEL_OUTPUT_TRUNCATED"
    assert len(result.messages) == 2  # the truncated message is kept ...
    assert compared.tool_calls == []  # ... and its calls never run
    assert len(compared.requests) == 1


async def test_a_refusal() -> None:
    compared = await compare(lambda: [text_reply("No.", stop_reason="refusal")])
    result = compared.result
    assert isinstance(result, FailedRunResult), result
    assert result.error.code == "MODEL_REFUSED"


async def test_a_run_cancelled_by_the_signal_aborting_inside_a_tool() -> None:
    compared = await compare(
        lambda: [
            tool_call_reply(
                ("add", {"left": 1, "right": 2}), ("abort", {}), ("add", {"left": 3, "right": 4})
            ),
            text_reply("never requested"),
        ],
        abort_in="The tool pulled the plug",
        sequence_start=100,
    )
    result = compared.result
    assert isinstance(result, CancelledRunResult), result
    assert result.reason == "The tool pulled the plug"
    # The first result is kept; the aborting call's result is not fabricated; the third never ran.
    assert compared.tool_calls == ["call-request-001-1", "call-request-001-2"]
    assert [message.role for message in result.messages] == ["user", "assistant", "toolResult"]
    assert types_of(compared.events) == [
        "model.chunk",
        "model.chunk",
        "model.chunk",
        "tool.started",
        "tool.finished",
        "tool.started",
    ]
    assert len(compared.requests) == 1


async def test_a_run_whose_signal_was_aborted_before_it_started() -> None:
    compared = await compare(lambda: [text_reply("never")], abort_first=True, sequence_start=3)
    result = compared.result
    assert isinstance(result, CancelledRunResult), result
    assert result.reason == "aborted before the start"
    assert compared.events == []
    assert compared.requests == ()


async def test_max_steps_reached() -> None:
    compared = await compare(
        lambda: [
            tool_call_reply(("add", {"left": 1, "right": 2}), usage=USAGE),
            tool_call_reply(("echo", {"text": "again"}), usage=USAGE),
            text_reply("never requested"),
        ],
        max_steps=2,
        sequence_start=11,
    )
    result = compared.result
    assert isinstance(result, MaxStepsRunResult), result
    assert result.max_steps == 2
    assert result.usage == USAGE + USAGE
    assert [message.role for message in result.messages] == [
        "user",
        "assistant",
        "toolResult",
        "assistant",
        "toolResult",
    ]
    assert len(compared.requests) == 2


async def test_a_longer_starting_transcript_is_neither_announced_nor_reused() -> None:
    compared = await compare(
        lambda: [tool_call_reply(("add", {"left": 20, "right": 22})), text_reply("42")],
        transcript=PRIOR,
        request_sequence_start=1,
        sequence_start=33,
    )
    result = compared.result
    assert isinstance(result, CompletedRunResult), result
    assert result.messages[: len(PRIOR)] == PRIOR
    assert [request.id for request in compared.requests] == ["request-002", "request-003"]
    assert compared.tool_calls == ["call-request-002-1"]
    assert compared.events[0].sequence == 33


async def test_a_call_id_reused_from_the_starting_transcript_is_a_protocol_error() -> None:
    compared = await compare(
        lambda: [tool_call_reply(("add", {"left": 20, "right": 22})), text_reply("never")],
        transcript=PRIOR,
        request_sequence_start=0,  # the script derives call-request-001-1 again
    )
    result = compared.result
    assert isinstance(result, FailedRunResult), result
    assert result.error.code == "MODEL_PROTOCOL_ERROR"
    assert result.messages == PRIOR
    assert compared.tool_calls == []


async def test_a_run_limit_is_applied_the_same_way() -> None:
    compared = await compare(
        lambda: [text_reply("a", "b", "c")], limits=RunLimits(max_chunks_per_step=2)
    )
    result = compared.result
    assert isinstance(result, FailedRunResult), result
    assert result.error.code == "MODEL_PROTOCOL_ERROR"
    assert result.error.message == "Model turn exceeded 2 chunks"
    assert types_of(compared.events) == ["model.chunk", "model.chunk"]


async def test_the_owned_run_trusts_its_call_ids_instead_of_rescanning_the_transcript() -> None:
    # run_owned_turns is given the owner's call IDs: an ID the owner holds is a collision even
    # when the transcript passed in does not show it (the loop would rescan and not see it).
    model = ScriptedModel([tool_call_reply(("add", {"left": 1, "right": 2})), text_reply("x")])
    call_ids = {"call-request-001-1"}
    events: list[AgentEvent] = []
    result, next_sequence = await run_owned_turns(
        transcript=(USER,),
        call_ids=call_ids,
        open_stream=model.stream,
        registry=doubles(list).tools,
        max_steps=4,
        signal=AbortController().signal,
        system=None,
        limits=DEFAULT_LIMITS,
        hooks=None,
        request_sequence_start=0,
        sequence_start=7,
        emit=events.append,
    )
    assert isinstance(result, FailedRunResult), result
    assert result.error.code == "MODEL_PROTOCOL_ERROR"
    assert result.messages == (USER,)
    assert call_ids == {"call-request-001-1"}
    assert types_of(events) == ["model.chunk"]
    assert next_sequence == 8


# --- random scripts ---------------------------------------------------------------------------

CallSpec = tuple[str, dict[str, object]]


@st.composite
def calls(draw: st.DrawFn) -> CallSpec:
    """A valid ``add`` or ``echo`` call, one with invalid arguments, an unknown tool, or
    (rarely) the tool that aborts the run."""
    kind = draw(st.sampled_from(["add", "bad add", "echo", "missing"] * 3 + ["abort"]))
    if kind == "add":
        return "add", {"left": draw(st.integers(-9, 9)), "right": draw(st.integers(-9, 9))}
    if kind == "bad add":
        return "add", {"left": draw(st.text(max_size=3))}
    if kind == "echo":
        return "echo", {"text": draw(st.text(max_size=5))}
    if kind == "abort":
        return "abort", {}
    return "missing", {}


@st.composite
def usages(draw: st.DrawFn) -> ModelUsage:
    return ModelUsage(input_tokens=draw(st.integers(0, 50)), output_tokens=draw(st.integers(0, 50)))


@st.composite
def tool_turns(draw: st.DrawFn) -> ScriptedReply:
    """A tool turn: one to three calls, maybe text and thinking first, maybe argument deltas."""
    specs: list[CallSpec] = draw(st.lists(calls(), min_size=1, max_size=3))
    text: list[str] = draw(st.lists(st.text(min_size=1, max_size=3), max_size=1))
    thinking: list[str] = draw(st.lists(st.text(min_size=1, max_size=3), max_size=1))
    return ScriptedReply(
        text=tuple(text),
        thinking=tuple(thinking),
        tool_calls=tuple(
            ScriptedToolCall(name=name, arguments=JsonObject(arguments))
            for name, arguments in specs
        ),
        tool_call_deltas=draw(st.booleans()),
        usage=draw(usages()),
    )


@st.composite
def last_turns(draw: st.DrawFn) -> ScriptedReply | None:
    """How a script ends: text, a truncated or refused answer, or nothing (a model failure)."""
    kind = draw(st.sampled_from(["text", "length", "refusal", "exhausted"]))
    if kind == "text":
        parts: list[str] = draw(st.lists(st.text(min_size=1, max_size=4), max_size=3))
        return text_reply(*parts, usage=draw(usages()))
    if kind == "exhausted":
        return None
    return text_reply("cut", stop_reason="length" if kind == "length" else "refusal")


@st.composite
def scripts(draw: st.DrawFn) -> list[ScriptedReply]:
    replies: list[ScriptedReply] = draw(st.lists(tool_turns(), max_size=4))
    last = draw(last_turns())
    return replies if last is None else [*replies, last]


@settings(max_examples=50)
@given(
    script=scripts(),
    max_steps=st.integers(1, 6),
    prior=st.booleans(),
    request_sequence_start=st.integers(0, 3),
    sequence_start=st.integers(0, 1_000),
    system=st.one_of(st.none(), st.just("Be brief.")),
)
def test_random_scripts_run_the_same_owned_and_looped(
    script: list[ScriptedReply],
    max_steps: int,
    prior: bool,
    request_sequence_start: int,
    sequence_start: int,
    system: str | None,
) -> None:
    async def check() -> None:
        compared = await compare(
            lambda: script,
            transcript=PRIOR if prior else (USER,),
            max_steps=max_steps,
            request_sequence_start=request_sequence_start,
            sequence_start=sequence_start,
            system=system,
        )
        assert len(compared.requests) <= max_steps
        event(compared.result.status)

    run_quickly(check)


def run_quickly(test: Callable[[], Coroutine[Any, Any, None]]) -> None:
    """``support.run_async`` without its per-call garbage collection (it dominates the cost of
    a Hypothesis example): a fresh debug loop, no task left pending, no loop error logged."""
    reports: list[dict[str, Any]] = []

    async def checked() -> None:
        await test()
        current = asyncio.current_task()
        leftovers = [task for task in asyncio.all_tasks() if task is not current]
        assert leftovers == [], leftovers

    with asyncio.Runner(debug=True) as runner:
        runner.get_loop().set_exception_handler(lambda _loop, context: reports.append(context))
        runner.run(checked())
    assert reports == []
