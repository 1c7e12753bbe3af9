"""The library as a Python developer uses it (issue 29): real-model limits on HTTP models,
typed per-run dependencies, tool retry budgets, structured output and the constructors."""

from __future__ import annotations

import asyncio
import functools
import json
from dataclasses import dataclass
from typing import Any, TypedDict, assert_type

import pytest
from hypothesis import given
from hypothesis import strategies as st

try:
    from pydantic import BaseModel
except ImportError:  # pragma: no cover - pydantic is in the dev environment
    BaseModel = None

from servers.replay import ReplayServer, sse_response
from tether import (
    CompletedRunResult,
    FailedRunResult,
    Invalid,
    JsonObject,
    Message,
    ModelRetry,
    RunContext,
    RunLimits,
    ScriptedModel,
    ScriptedReply,
    ScriptedToolCall,
    ToolExecutionContext,
    ToolRegistry,
    UserMessage,
    Valid,
    define_tool,
    from_json,
    run_agent_loop,
    to_json,
    tool,
)
from tether.agent import Agent
from tether.protocol import ToolValidation
from tether.protocol.transcript import user_message
from tether.providers.openai_chat import OpenAIChatModel
from tether.tools import ToolSignatureError
from tether.tools.output import output_spec

BOUND = 20.0


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-test",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def _sse(chunks: list[dict[str, Any]]) -> bytes:
    lines = [f"data: {json.dumps(item)}\n\n" for item in chunks]
    return ("".join(lines) + "data: [DONE]\n\n").encode()


# --- 1. real-model limits ---------------------------------------------------------------------


async def test_a_long_reply_through_the_readme_model_completes() -> None:
    parts = [f"w{index} " for index in range(5000)]
    chunks = [_chunk({"role": "assistant", "content": ""})]
    chunks += [_chunk({"content": part}) for part in parts]
    chunks.append(_chunk({}, "stop"))
    async with ReplayServer() as server:
        server.respond(sse_response(_sse(chunks)))
        # Built as in the README, with no limits passed to the loop.
        async with OpenAIChatModel(
            "gpt-4o-mini", base_url=server.url, api_key_env=None, max_output_tokens=2048
        ) as model:
            run = run_agent_loop(
                messages=[UserMessage(content="Write a long essay.")],
                model=model,
                tools=ToolRegistry(),
                max_steps=16,
            )
            async with asyncio.timeout(BOUND):
                result = await run.result
    assert isinstance(result, CompletedRunResult), result
    assert result.final_text == "".join(parts)
    assert model.run_limits == RunLimits.for_real_models()


async def test_the_offline_models_keep_the_workshop_limits_and_a_limit_error_has_a_hint() -> None:
    model = ScriptedModel([ScriptedReply(text=("x" * 10,))])
    run = run_agent_loop(
        messages=[UserMessage(content="hi")],
        model=model,
        tools=ToolRegistry(),
        max_steps=1,
        limits=RunLimits(max_text_code_points=5),
    )
    result = await run.result
    assert isinstance(result, FailedRunResult)
    assert result.error.code == "MODEL_PROTOCOL_ERROR"
    assert "max_text_code_points" in result.error.hint
    assert "RunLimits" in result.error.hint


async def test_the_chunk_limit_names_its_parameter() -> None:
    model = ScriptedModel([ScriptedReply(text=("a", "b", "c"))])
    run = run_agent_loop(
        messages=[UserMessage(content="hi")],
        model=model,
        tools=ToolRegistry(),
        max_steps=1,
        limits=RunLimits(max_chunks_per_step=2),
    )
    result = await run.result
    assert isinstance(result, FailedRunResult)
    assert result.error.message == "Model turn exceeded 2 chunks"
    assert "max_chunks_per_step" in result.error.hint


# --- 2. per-run dependencies ----------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Db:
    rows: dict[str, int]


@tool
async def lookup(key: str, context: RunContext[Db]) -> int:
    """Look a key up in the run's database."""
    db = assert_type(context.deps, Db)  # pyright sees Db
    return db.rows[key]


def _call_reply(name: str, arguments: dict[str, Any], call_id: str = "call-1") -> ScriptedReply:
    return ScriptedReply(
        tool_calls=(ScriptedToolCall(id=call_id, name=name, arguments=JsonObject(arguments)),)
    )


async def test_deps_reach_a_tool_through_run_agent_loop() -> None:
    model = ScriptedModel([_call_reply("lookup", {"key": "a"}), ScriptedReply(text=("done",))])
    run = run_agent_loop(
        messages=[UserMessage(content="look a up")],
        model=model,
        tools=ToolRegistry([lookup]),
        max_steps=4,
        deps=Db(rows={"a": 42}),
    )
    result = await run.result
    assert isinstance(result, CompletedRunResult), result
    answers = [m for m in result.messages if m.role == "toolResult"]
    assert [(m.content, m.is_error) for m in answers] == [("42", False)]


async def test_deps_reach_a_tool_through_the_agent_per_run() -> None:
    model = ScriptedModel(
        [
            _call_reply("lookup", {"key": "a"}, "call-1"),
            ScriptedReply(text=("one",)),
            _call_reply("lookup", {"key": "a"}, "call-2"),
            ScriptedReply(text=("two",)),
        ]
    )
    agent = Agent(model=model, tools=ToolRegistry([lookup]))
    await agent.run("first", deps=Db(rows={"a": 1}))
    await agent.run("second", deps=Db(rows={"a": 2}))
    answers = [m.content for m in agent.messages if m.role == "toolResult"]
    assert answers == ["1", "2"]


async def test_a_define_tool_reads_deps_from_its_execution_context() -> None:
    seen: list[object] = []

    async def execute(value: object, context: ToolExecutionContext) -> str:
        seen.append(context.deps)
        return "ok"

    probe = define_tool(
        name="probe",
        description="Probe.",
        validate=lambda value: Valid(value=value),
        execute=execute,
    )
    model = ScriptedModel([_call_reply("probe", {}), ScriptedReply(text=("done",))])
    marker = object()
    run = run_agent_loop(
        messages=[UserMessage(content="go")],
        model=model,
        tools=ToolRegistry([probe]),
        max_steps=4,
        deps=marker,
    )
    assert (await run.result).status == "completed"
    assert seen == [marker]


def test_tool_rejects_what_it_cannot_describe_with_a_hint() -> None:
    def add(left: int, right: int) -> int:
        """Add."""
        return left + right

    with pytest.raises(ToolSignatureError) as caught:
        tool(functools.partial(add, right=1))
    assert caught.value.code == "INVALID_TOOL_DEFINITION"
    assert isinstance(caught.value, TypeError)
    assert "def" in caught.value.hint

    def untyped(left, right: int) -> int:  # type: ignore[no-untyped-def]
        """Add."""
        return right

    with pytest.raises(ToolSignatureError) as caught:
        tool(untyped)  # pyright: ignore[reportUnknownArgumentType]
    assert "left: str" in caught.value.hint or "annotate" in caught.value.hint


# --- 3. retry budgets, ModelRetry and hidden details ----------------------------------------


def _error_of(content: str) -> dict[str, str]:
    decoded: dict[str, dict[str, str]] = json.loads(content)
    return decoded["error"]


@tool(retries=1)
async def flaky(attempt: int) -> str:
    """Fail unless the attempt is 3."""
    if attempt != 3:
        raise ModelRetry(f"attempt {attempt} is wrong; try attempt=3")
    return "ok"


async def test_model_retry_reaches_the_model_and_a_success_resets_the_budget() -> None:
    model = ScriptedModel(
        [
            _call_reply("flaky", {"attempt": 1}, "call-1"),
            _call_reply("flaky", {"attempt": 3}, "call-2"),
            _call_reply("flaky", {"attempt": 2}, "call-3"),
            ScriptedReply(text=("done",)),
        ]
    )
    run = run_agent_loop(
        messages=[UserMessage(content="go")], model=model, tools=ToolRegistry([flaky]), max_steps=8
    )
    result = await run.result
    assert isinstance(result, CompletedRunResult), result
    answers = [m for m in result.messages if m.role == "toolResult"]
    assert [m.is_error for m in answers] == [True, False, True]
    assert _error_of(answers[0].content) == {
        "code": "TOOL_RETRY_REQUESTED",
        "message": "attempt 1 is wrong; try attempt=3",
    }
    # The second request carried the retry message to the model.
    second = model.requests[1].messages[-1]
    assert second.role == "toolResult"
    assert "try attempt=3" in second.content


async def test_an_exhausted_budget_ends_the_run_with_a_stable_code() -> None:
    model = ScriptedModel(
        [
            _call_reply("flaky", {"attempt": 1}, "call-1"),
            _call_reply("flaky", {"attempt": 2}, "call-2"),
            ScriptedReply(text=("never",)),
        ]
    )
    run = run_agent_loop(
        messages=[UserMessage(content="go")], model=model, tools=ToolRegistry([flaky]), max_steps=8
    )
    result = await run.result
    assert isinstance(result, FailedRunResult), result
    assert result.error.code == "TOOL_RETRIES_EXHAUSTED"
    assert "flaky" in result.error.message
    assert "retries" in result.error.hint
    assert result.messages[-1].role == "toolResult"  # the last call is answered


async def test_the_run_default_budget_applies_to_tools_without_their_own() -> None:
    @tool
    async def broken() -> str:
        """Always fails."""
        raise ValueError("disk on fire")

    replies = [_call_reply("broken", {}, f"call-{index}") for index in range(3)]
    model = ScriptedModel([*replies, ScriptedReply(text=("never",))])
    agent = Agent(model=model, tools=ToolRegistry([broken]), tool_retries=1)
    result = await agent.run("go")
    assert isinstance(result, FailedRunResult), result
    assert result.error.code == "TOOL_RETRIES_EXHAUSTED"
    assert len(model.requests) == 2


async def test_hidden_error_details_never_reach_the_model() -> None:
    @tool(expose_errors=False)
    async def secretive() -> str:
        """Fails with a secret."""
        raise RuntimeError("password=hunter2")

    model = ScriptedModel([_call_reply("secretive", {}), ScriptedReply(text=("done",))])
    run = run_agent_loop(
        messages=[UserMessage(content="go")],
        model=model,
        tools=ToolRegistry([secretive]),
        max_steps=4,
    )
    result = await run.result
    assert isinstance(result, CompletedRunResult), result
    answer = next(m for m in result.messages if m.role == "toolResult")
    assert answer.is_error
    assert "hunter2" not in answer.content
    assert _error_of(answer.content)["code"] == "TOOL_EXECUTION_FAILED"


# --- 4. structured output ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class City:
    name: str
    population: int


class CityDict(TypedDict):
    name: str
    population: int


def _final(arguments: dict[str, Any], call_id: str) -> ScriptedReply:
    return _call_reply("final_result", arguments, call_id)


async def test_one_invalid_reply_then_a_valid_one_gives_the_typed_output() -> None:
    model = ScriptedModel(
        [
            _final({"name": "Paris", "population": "lots"}, "call-1"),
            _final({"name": "Paris", "population": 2_100_000}, "call-2"),
        ]
    )
    run = run_agent_loop(
        messages=[UserMessage(content="Biggest city in France?")],
        model=model,
        tools=ToolRegistry(),
        max_steps=4,
        output_type=City,
    )
    result = await run.result
    assert isinstance(result, CompletedRunResult), result
    city = assert_type(result.output, City)  # pyright sees City
    assert city == City(name="Paris", population=2_100_000)
    spec = model.requests[0].tools[-1]
    assert spec.name == "final_result"
    assert spec.parameters["required"] == ("name", "population")
    first = next(m for m in result.messages if m.role == "toolResult")
    assert first.is_error
    assert _error_of(first.content)["code"] == "OUTPUT_INVALID"
    assert "population" in _error_of(first.content)["message"]
    assert result.messages[-1].role == "toolResult"  # the accepted call is answered too


async def test_exhausted_output_retries_fail_with_a_stable_code() -> None:
    model = ScriptedModel(
        [
            _final({"name": "Paris"}, "call-1"),
            ScriptedReply(text=("Paris, about two million.",)),
            _final({"population": 1}, "call-3"),
        ]
    )
    run = run_agent_loop(
        messages=[UserMessage(content="Biggest city in France?")],
        model=model,
        tools=ToolRegistry(),
        max_steps=8,
        output_type=CityDict,
        output_retries=2,
    )
    result = await run.result
    assert isinstance(result, FailedRunResult), result
    assert result.error.code == "OUTPUT_RETRIES_EXHAUSTED"
    assert "output_retries" in result.error.hint
    # The text answer was answered with a request to call final_result.
    retry = next(m for m in result.messages if m.role == "user" and m.id != result.messages[0].id)
    assert "final_result" in retry.content
    assert len(model.requests) == 3


async def test_a_scalar_output_type_is_wrapped_and_the_agent_returns_it_typed() -> None:
    model = ScriptedModel([_final({"response": ["a", "b"]}, "call-1")])
    agent = Agent(model=model)
    result = await agent.run("letters?", output_type=list[str])
    assert isinstance(result, CompletedRunResult), result
    letters = assert_type(result.output, list[str])
    assert letters == ["a", "b"]
    assert agent.messages[-1].role == "toolResult"


@pytest.mark.skipif(BaseModel is None, reason="pydantic is not installed")
async def test_a_pydantic_model_is_validated_by_pydantic() -> None:
    assert BaseModel is not None

    class Town(BaseModel):
        name: str
        population: int

    model = ScriptedModel(
        [
            _final({"name": "Lyon", "population": "x"}, "call-1"),
            _final({"name": "Lyon", "population": 5}, "call-2"),
        ]
    )
    run = run_agent_loop(
        messages=[UserMessage(content="?")],
        model=model,
        tools=ToolRegistry(),
        max_steps=4,
        output_type=Town,
    )
    result = await run.result
    assert isinstance(result, CompletedRunResult), result
    town: Town = result.output
    assert (town.name, town.population) == ("Lyon", 5)
    properties = model.requests[0].tools[-1].parameters["properties"]
    assert isinstance(properties, JsonObject)
    assert "population" in properties
    first = next(m for m in result.messages if m.role == "toolResult")
    assert _error_of(first.content)["code"] == "OUTPUT_INVALID"


def test_an_output_type_tether_cannot_describe_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        run_agent_loop(
            messages=[UserMessage(content="?")],
            model=ScriptedModel([]),
            tools=ToolRegistry(),
            max_steps=1,
            output_type=complex,
        )


# --- 6. constructors and types agree ----------------------------------------------------------


def test_from_json_reads_a_transcript_as_a_list_or_a_tuple() -> None:
    transcript = [UserMessage(content="hi"), user_message(content="there")]
    data = to_json(transcript)
    assert from_json(data, list[Message]) == transcript
    assert from_json(data, tuple[Message, ...]) == tuple(transcript)


def _value_of(decision: ToolValidation[int]) -> int | str:
    if decision.ok is True:  # ok is Literal[True] / Literal[False]: `is True` narrows
        return assert_type(decision, Valid[int]).value
    return assert_type(decision, Invalid).error


def test_validation_decisions_narrow_on_ok() -> None:
    assert _value_of(Valid(value=1)) == 1
    assert _value_of(Invalid(error="bad")) == "bad"


def test_a_function_tool_always_has_parameters() -> None:
    parameters = assert_type(lookup.parameters, JsonObject)
    assert parameters["required"] == ("key",)


# --- 7. the scripted model's own failure code -------------------------------------------------


async def test_a_scripted_model_out_of_replies_fails_with_its_own_code() -> None:
    model = ScriptedModel([_call_reply("lookup", {"key": "a"})])
    run = run_agent_loop(
        messages=[UserMessage(content="go")],
        model=model,
        tools=ToolRegistry([lookup]),
        max_steps=4,
        deps=Db(rows={"a": 1}),
    )
    result = await run.result
    assert isinstance(result, FailedRunResult), result
    assert result.error.code == "SCRIPT_EXHAUSTED"
    assert "ScriptedReply" in result.error.hint


def test_the_loop_documents_its_api_not_the_workshop() -> None:
    doc = run_agent_loop.__doc__ or ""
    assert "module docstring" not in doc
    assert "heckpoint" not in doc
    for word in ("messages", "tools", "max_steps", "deps", "output_type", "limits", "signal"):
        assert f"``{word}``" in doc, word


async def test_a_final_result_call_whose_arguments_are_not_json_is_an_output_retry() -> None:
    broken = ScriptedReply(
        tool_calls=(ScriptedToolCall(id="call-1", name="final_result", raw_arguments='{"name": '),)
    )
    model = ScriptedModel([broken, _final({"name": "Nice", "population": 1}, "call-2")])
    run = run_agent_loop(
        messages=[UserMessage(content="?")],
        model=model,
        tools=ToolRegistry(),
        max_steps=4,
        output_type=City,
    )
    result = await run.result
    assert isinstance(result, CompletedRunResult), result
    assert result.output == City(name="Nice", population=1)
    first = next(m for m in result.messages if m.role == "toolResult")
    assert _error_of(first.content)["code"] == "OUTPUT_INVALID"


# --- the output validator, under arbitrary input -----------------------------------------------

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=10,
)


@given(st.one_of(JSON, st.dictionaries(st.sampled_from(["name", "population", "x"]), JSON)))
def test_output_validation_never_raises_and_accepts_only_a_city(value: object) -> None:
    decision = output_spec(City).validate(value)
    if decision.ok is True:
        assert type(decision.value) is City
    else:
        assert decision.error


@given(st.text(max_size=20), st.integers(min_value=-(2**53), max_value=2**53))
def test_a_valid_city_round_trips_through_the_output_tool(name: str, population: int) -> None:
    decision = output_spec(City).validate({"name": name, "population": population})
    assert decision == Valid(value=City(name=name, population=population))


_OUTSIDE_A_LOOP = """
import warnings
warnings.simplefilter("error")
from tether import AbortController, ScriptedModel, ToolRegistry, run_agent_loop, text_reply
from tether.protocol.transcript import user_message
try:
    run_agent_loop(messages=[user_message(content="hi")], model=ScriptedModel([text_reply("x")]),
                   tools=ToolRegistry([]), max_steps=2, signal=AbortController().signal)
except RuntimeError as error:
    print(type(error).__name__, getattr(error, "code", None), error, sep="|")
"""


def test_run_agent_loop_outside_a_running_loop_is_a_clear_error() -> None:
    """Today: a bare ``RuntimeError: no running event loop`` from a private module and a
    "never awaited" warning. Now: a coded error that says what to do, and no warning."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-X", "dev", "-c", _OUTSIDE_A_LOOP],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    name, code, message = done.stdout.strip().split("|")
    assert (name, code) == ("NoRunningLoopError", "NO_RUNNING_LOOP")
    assert "asyncio.run" in message
    assert "Agent.run_sync" in message
    assert "never awaited" not in done.stderr


def test_agent_prompt_outside_a_running_loop_is_the_same_coded_error() -> None:
    from tether import Agent, NoRunningLoopError, text_reply

    agent = Agent(model=ScriptedModel([text_reply("x")]))
    with pytest.raises(NoRunningLoopError, match=r"Agent\.prompt\(\) needs a running") as info:
        agent.prompt("hi")
    assert info.value.code == "NO_RUNNING_LOOP"
    assert agent.run_sync("hi").status == "completed"  # the sync door
