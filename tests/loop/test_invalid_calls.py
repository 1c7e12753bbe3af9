"""Invalid tool calls (``ToolCall.raw_arguments``) in the loop: never executed, never shown to
a hook, answered with ``TOOL_ARGUMENTS_INVALID``, bounded like arguments, and accepted by the
transcript checks in exactly their shape. (The providers' side is in ``test_openai_wire``,
``test_anthropic_wire``, ``test_openai_chat`` and ``test_anthropic``.)"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tether import (
    AbortController,
    AssistantMessage,
    CompletedRunResult,
    FailedRunResult,
    JsonObject,
    ScriptedModel,
    ScriptedReply,
    ScriptedToolCall,
    TetherError,
    ToolCall,
    ToolRegistry,
    UserMessage,
    execute_tool_call,
    run_agent_loop,
    text_reply,
    tool,
)
from tether.agent import session as session_module
from tether.loop import RunLimits, ToolCallContext, ToolHooks
from tether.loop.invalid_calls import describe_raw_arguments, invalid_call_result
from tether.protocol import (
    MAX_RAW_ARGUMENTS_CODE_POINTS,
    RunResult,
    ToolCallDeltaChunk,
    ToolResultMessage,
    from_json,
)
from tether.protocol import _trusted as trusted
from tether.protocol.transcript import assistant_message, validate_transcript

BOUND = 10.0
session_message_from_json = session_module._message_from_json  # pyright: ignore[reportPrivateUsage]
BROKEN = '{"path": "a.txt" "content": "x"}'

ran: list[str] = []


@tool
async def write(path: str, content: str) -> str:
    """Write a file."""
    ran.append(path)
    return "written"


async def run(
    model: ScriptedModel, *, hooks: ToolHooks | None = None, limits: RunLimits | None = None
) -> tuple[list[Any], RunResult]:
    stream = run_agent_loop(
        messages=[UserMessage(id="u", content="write it")],
        model=model,
        tools=ToolRegistry([write]),
        max_steps=4,
        hooks=hooks,
        limits=limits or RunLimits(),
    )
    async with asyncio.timeout(BOUND):
        events = [event async for event in stream]
        return events, await stream.result


async def test_an_invalid_call_is_answered_never_executed_and_the_model_sees_it() -> None:
    ran.clear()
    asked: list[ToolCallContext] = []

    def before(context: ToolCallContext) -> None:
        asked.append(context)

    model = ScriptedModel(
        [
            ScriptedReply(
                tool_calls=(ScriptedToolCall(name="write", raw_arguments=BROKEN, id="c1"),),
                tool_call_deltas=True,
            ),
            text_reply("Sorry, fixed."),
        ]
    )
    events, result = await run(model, hooks=ToolHooks(before_tool_call=before))
    assert isinstance(result, CompletedRunResult), result
    assert ran == []
    assert asked == []
    invalid = ToolCall(id="c1", name="write", arguments=JsonObject(), raw_arguments=BROKEN)
    answer = invalid_call_result(invalid)
    assert answer.is_error
    assert answer.tool_call_id == "c1"
    assert answer.content.startswith(
        "TOOL_ARGUMENTS_INVALID: not valid JSON at line 1 column 18 (Expecting ',' delimiter); "
        "send the call again with a JSON object. The arguments received were: "
    )
    assert answer.content.endswith(json.dumps(BROKEN))
    assert [event.type for event in events if event.type.startswith("tool.")] == [
        "tool.started",
        "tool.finished",
    ]
    deltas = [
        e.payload.chunk
        for e in events
        if e.type == "model.chunk" and isinstance(e.payload.chunk, ToolCallDeltaChunk)
    ]
    assert [delta.arguments_delta for delta in deltas] == [BROKEN]
    second = model.requests[1].messages
    assert second[1].role == "assistant"
    assert second[1].content == (invalid,)
    assert second[2] == answer
    assert result.messages[2] == answer


async def test_raw_arguments_count_against_the_argument_string_budget() -> None:
    raw = "x" * 5_000  # more than the workshop's 4,096 argument string code points
    model = ScriptedModel(
        [ScriptedReply(tool_calls=(ScriptedToolCall(name="write", raw_arguments=raw),))]
    )
    _, result = await run(model)
    assert isinstance(result, FailedRunResult)
    assert result.error.code == "MODEL_PROTOCOL_ERROR"
    assert "raw arguments exceed 4096 string code points" in result.error.message
    model = ScriptedModel(
        [
            ScriptedReply(tool_calls=(ScriptedToolCall(name="write", raw_arguments=raw),)),
            text_reply("ok"),
        ]
    )
    _, result = await run(model, limits=RunLimits.for_real_models())
    assert isinstance(result, CompletedRunResult), result


def test_a_scripted_invalid_call_keeps_its_arguments_empty() -> None:
    with pytest.raises(TypeError, match=r"^ScriptedToolCall\.arguments must be empty"):
        ScriptedToolCall(name="write", arguments=JsonObject({"a": 1}), raw_arguments="{")
    with pytest.raises(TypeError, match=r"^ScriptedToolCall\.raw_arguments must be a string"):
        ScriptedToolCall(name="write", raw_arguments=b"{")  # pyright: ignore[reportArgumentType]


async def test_a_transcript_holding_an_invalid_call_and_its_answer_can_be_continued() -> None:
    invalid = ToolCall(id="c1", name="write", arguments=JsonObject(), raw_arguments="{")
    answer = invalid_call_result(invalid)
    as_mapping: dict[str, Any] = {
        "id": "a",
        "role": "assistant",
        "content": [
            {"type": "toolCall", "id": "c1", "name": "write", "arguments": {}, "rawArguments": "{"}
        ],
    }
    assert (
        validate_transcript([{"id": "u", "role": "user", "content": "hi"}, as_mapping, answer])
        == ()
    )
    model = ScriptedModel([text_reply("done")])
    messages: list[Any] = [UserMessage(id="u", content="hi"), as_mapping, answer]
    stream = run_agent_loop(
        messages=messages,
        model=model,
        tools=ToolRegistry([write]),
        max_steps=1,
    )
    async with asyncio.timeout(BOUND):
        result = await stream.result
    assert isinstance(result, CompletedRunResult), result
    assert result.messages[1] == AssistantMessage(id="a", content=(invalid,))


def test_the_transcript_checks_reject_raw_arguments_beside_arguments() -> None:
    block: dict[str, Any] = {
        "type": "toolCall",
        "id": "c1",
        "name": "write",
        "arguments": {"a": 1},
        "rawArguments": "{",
    }
    found = validate_transcript([{"id": "a", "role": "assistant", "content": [block]}])
    assert [(item.code, item.message) for item in found] == [
        ("INVALID_TOOL_ARGUMENTS", "Tool call arguments must be empty when rawArguments is set")
    ]
    block = {"type": "toolCall", "id": "c1", "name": "write", "arguments": {}, "rawArguments": 7}
    found = validate_transcript([{"id": "a", "role": "assistant", "content": [block]}])
    assert [item.message for item in found] == ["Tool call rawArguments must be a string or null"]


@given(
    raw=st.text(max_size=60)
    | st.builds(
        json.dumps,
        st.recursive(
            st.none() | st.integers() | st.text(max_size=5),
            lambda inner: (
                st.lists(inner, max_size=3)
                | st.dictionaries(st.text(max_size=3), inner, max_size=3)
            ),
            max_leaves=8,
        ),
    )
)
def test_every_raw_text_is_described_and_answered(raw: str) -> None:
    description = describe_raw_arguments(raw)
    assert description
    assert "\n" not in description
    answer = invalid_call_result(
        ToolCall(id="c", name="n", arguments=JsonObject(), raw_arguments=raw)
    )
    assert type(answer) is ToolResultMessage
    assert answer.is_error
    assert answer.content.startswith(f"TOOL_ARGUMENTS_INVALID: {description}; ")


async def test_execute_tool_call_never_runs_an_invalid_call_either() -> None:
    ran.clear()
    call = ToolCall(id="c", name="write", arguments=JsonObject(), raw_arguments="{")
    result = await execute_tool_call(ToolRegistry([write]), call, AbortController().signal)
    assert ran == []
    assert result.is_error
    assert json.loads(result.content)["error"]["code"] == "TOOL_ARGUMENTS_INVALID"


def test_a_long_text_is_quoted_around_the_broken_spot() -> None:
    head = '{"content": "' + "a" * 1_000 + '"'
    raw = head + ' "mode": "w"}'  # the missing comma is at position len(head) + 1
    answer = invalid_call_result(
        ToolCall(id="c", name="write", arguments=JsonObject(), raw_arguments=raw)
    )
    assert answer.content.startswith(
        "TOOL_ARGUMENTS_INVALID: not valid JSON at line 1 column 1016 (Expecting ',' delimiter)"
    )
    quoted = json.loads(answer.content.split("around that point: ", 1)[1])
    assert quoted == "…" + raw[len(head) + 1 - 160 :]
    short = invalid_call_result(
        ToolCall(
            id="c", name="write", arguments=JsonObject(), raw_arguments="[" + "1," * 200 + "1]"
        )
    )
    assert "The arguments received began: " in short.content
    cut = trusted.invalid_tool_call("c", "write", "x" * (MAX_RAW_ARGUMENTS_CODE_POINTS + 5))
    assert invalid_call_result(cut).content.startswith(
        "TOOL_ARGUMENTS_INVALID: longer than tether keeps (4194309 code points), so it was cut; "
    )


@given(
    raw=st.none() | st.text(max_size=8) | st.integers() | st.lists(st.integers(), max_size=2),
    arguments=st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    present=st.booleans(),
)
def test_every_transcript_check_agrees_on_raw_arguments(
    raw: object, arguments: dict[str, int], present: bool
) -> None:
    """The transcript validator, the IR constructor, the codec and the session decoder accept
    exactly the same invalid-call shapes: ``rawArguments`` absent or null, or a string with
    empty ``arguments``."""
    block: dict[str, Any] = {"type": "toolCall", "id": "c", "name": "n", "arguments": arguments}
    if present:
        block["rawArguments"] = raw
    message: dict[str, Any] = {"id": "a", "role": "assistant", "content": [block]}
    answer = {"id": "r", "role": "toolResult", "toolCallId": "c", "toolName": "n"}
    answer |= {"content": "x", "isError": True}
    expected = not present or raw is None or (type(raw) is str and not arguments)
    assert (validate_transcript([message, answer]) == ()) is expected
    outcomes: list[bool] = []
    for build in (
        lambda: assistant_message(id="a", content=[block]),
        lambda: from_json(message, AssistantMessage),
        lambda: session_message_from_json(message),
    ):
        try:
            build()
        except (TypeError, ValueError, TetherError):
            outcomes.append(False)
        else:
            outcomes.append(True)
    assert outcomes == [expected] * 3
