"""The loop's fast paths (issue 30) against the plain paths they shortcut.

Each shortcut must give what the path it skips gives, on any input it accepts:

* ``stream_reply`` (a ``ScriptedReply`` played straight into a stream) pushes the items that
  iterating the reply as a response factory yields, in order, and finishes with its response;
* a run over plain-data replies gives the events and the result of the same run over the
  same replies wrapped as response factories (the general path: a producer drives each
  reply's async iterator; the fast-path changes of issue 30 all lie between the two);
* a run whose model streams are finished ``EventStream``s (their events taken at once,
  ``EventStream.take_finished``) gives the events and the result of the run that iterates
  the same streams (wrapped so they are not ``EventStream``s);
* ``_measure_frozen`` (one pass over flat arguments) measures what the container walk
  ``_walk_frozen`` measures;
* ``freeze_measured`` (a tool call's dict arguments frozen and measured in one pass) gives
  the value ``freeze_json`` gives, and carries the size a fresh walk measures (or none);
  a ``ToolCall`` built from a dict carries it too, and the loop's bounds check on it
  decides as on the same arguments measured afresh.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from support import examples, run_async
from tether import (
    AbortController,
    AgentEvent,
    ModelRequest,
    RunResult,
    ScriptedModel,
    ScriptedReply,
    ScriptedToolCall,
    ToolCall,
    ToolRegistry,
    UserMessage,
    run_agent_loop,
    tool,
)
from tether.jsonvalue import JsonObject, JsonValueError, cached_size, freeze_json, freeze_measured
from tether.loop.checks import ModelProtocolError, check_argument_bounds
from tether.loop.checks._bounds import (
    _measure_frozen,  # pyright: ignore[reportPrivateUsage]
    _walk_frozen,  # pyright: ignore[reportPrivateUsage]
)
from tether.models.limits import RunLimits
from tether.models.scripted import ResponseFactory, stream_reply
from tether.stream import EventStream

TEXTS = st.lists(st.text(max_size=3), max_size=3).map(tuple)
ARGUMENTS = st.dictionaries(st.sampled_from(["left", "right", "path"]), st.integers(-3, 3))
CALLS = st.builds(
    ScriptedToolCall,
    name=st.sampled_from(["add", "echo"]),
    arguments=ARGUMENTS.map(freeze_json),
    id=st.one_of(st.none(), st.sampled_from(["call-a", "call-b"])),
)
INVALID_CALLS = st.builds(
    ScriptedToolCall,
    name=st.just("write"),
    raw_arguments=st.sampled_from(['{"path": ', "[1]", ""]),
)


@st.composite
def replies(draw: st.DrawFn) -> ScriptedReply:
    calls = tuple(draw(st.lists(st.one_of(CALLS, INVALID_CALLS), max_size=3)))
    reasons: list[Any] = [None, "length", "refusal", "toolCall" if calls else "stop"]
    return ScriptedReply(
        text=draw(TEXTS),
        thinking=draw(st.lists(st.text(max_size=3), max_size=2).map(tuple)),
        tool_calls=calls,
        response_id=draw(st.one_of(st.none(), st.just("r-7"))),
        stop_reason=draw(st.sampled_from(reasons)),
        model=draw(st.one_of(st.none(), st.just("scripted-model"))),
        tool_call_deltas=draw(st.booleans()),
    )


REQUEST = ModelRequest(id="request-004", messages=(UserMessage(id="user-1", content="go"),))


@settings(max_examples=examples(200))
@given(reply=replies())
def test_stream_reply_pushes_what_the_reply_as_a_factory_yields(reply: ScriptedReply) -> None:
    async def check() -> None:
        yielded = [item async for item in reply(REQUEST, AbortController().signal)]
        stream: EventStream[Any, Any] = EventStream()
        stream_reply(reply, REQUEST, stream)
        assert stream.settled
        pushed = [item async for item in stream]
        assert [*pushed, await stream.result] == yielded
        assert [type(item) for item in [*pushed, await stream.result]] == list(map(type, yielded))

    run_async(check)


SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=4),
)
KEYS = st.text(max_size=3)  # non-ASCII and surrogate keys included
JSON = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(KEYS, inner, max_size=3)),
    max_leaves=8,
)


@settings(max_examples=examples(300))
@given(value=st.dictionaries(KEYS, JSON, max_size=4))
def test_the_flat_measure_equals_the_walk(value: dict[str, object]) -> None:
    frozen = freeze_json(value)
    assert type(frozen) is JsonObject
    assert _measure_frozen(frozen) == _walk_frozen(frozen)


SCALAR_OR_NOT = st.one_of(
    SCALARS,
    st.just(float("nan")),
    st.just(float("inf")),
    st.builds(object),
    st.sets(st.integers(), max_size=1),
)


@settings(max_examples=examples(300))
@given(
    value=st.dictionaries(
        st.one_of(KEYS, st.integers(0, 2)), st.one_of(JSON, SCALAR_OR_NOT), max_size=4
    )
)
def test_the_measured_freeze_equals_the_plain_freeze_and_a_fresh_walk(
    value: dict[Any, Any],
) -> None:
    try:
        plain = freeze_json(value)
    except JsonValueError:
        plain = None
    measured = freeze_measured(value)
    assert measured == plain
    assert (measured is None) == (plain is None)
    if measured is None:
        return
    size = cached_size(measured)
    assert size is None or size == _walk_frozen(freeze_json(value))
    flat = all(type(item) is not dict and type(item) is not list for item in value.values())
    assert (size is not None) == flat  # a flat object always carries its size


LIMITS = st.builds(
    RunLimits,
    max_argument_entries=st.integers(1, 5),
    max_argument_nodes=st.integers(1, 6),
    max_argument_string_code_points=st.integers(1, 12),
    max_argument_depth=st.integers(1, 2),
)


def _bounds_error(arguments: JsonObject, limits: RunLimits) -> str | None:
    try:
        check_argument_bounds(arguments, limits)
    except ModelProtocolError as error:
        return f"{error.code}: {error}"
    return None


@settings(max_examples=examples(300))
@given(value=st.dictionaries(KEYS, JSON, max_size=4), limits=LIMITS)
def test_a_carried_size_checks_as_a_fresh_measure(value: dict[str, Any], limits: RunLimits) -> None:
    carried = ToolCall(id="call-1", name="add", arguments=value).arguments  # pyright: ignore[reportArgumentType]  # Python-first
    fresh = freeze_json(value)
    assert type(fresh) is JsonObject
    assert cached_size(fresh) is None  # measured by the check below, not by the freeze
    assert _bounds_error(carried, limits) == _bounds_error(fresh, limits)


@tool
async def add(left: int = 0, right: int = 0) -> int:
    """Add two integers."""
    return left + right


@tool
async def echo(path: int = 0) -> str:
    """Echo a number as text."""
    return str(path)


REGISTRY = ToolRegistry([add, echo])


def as_factory(reply: ScriptedReply) -> ResponseFactory:
    """The same turn as a hand-written factory: not a ``ScriptedReply``, so the model drives
    it as an async iterator on its general path."""

    def factory(request: ModelRequest, signal: Any) -> Any:
        return reply(request, signal)

    return factory


async def run_script(
    replies: list[ResponseFactory], max_steps: int
) -> tuple[list[AgentEvent], RunResult]:
    stream = run_agent_loop(
        messages=[UserMessage(id="user-1", content="go")],
        model=ScriptedModel(replies),
        tools=REGISTRY,
        max_steps=max_steps,
    )
    events = [event async for event in stream]
    return events, await stream.result


@settings(max_examples=examples(150))
@given(script=st.lists(replies(), min_size=1, max_size=4), max_steps=st.integers(1, 5))
def test_a_run_over_plain_replies_equals_the_run_over_factories(
    script: list[ScriptedReply], max_steps: int
) -> None:
    async def both() -> None:
        fast = await run_script(list[ResponseFactory](script), max_steps)
        general = await run_script([as_factory(reply) for reply in script], max_steps)
        assert fast == general

    run_async(both)


class Iterated:
    """A model stream that is not an ``EventStream``: the same items as the scripted
    model's stream, which the loop must iterate (the general path) instead of taking the
    finished events at once (``EventStream.take_finished``)."""

    def __init__(self, inner: EventStream[Any, Any]) -> None:
        self._inner = inner

    def __aiter__(self) -> Any:
        return aiter(self._inner)

    @property
    def result(self) -> Any:
        return self._inner.result


class IteratedModel:
    """``ScriptedModel`` whose every stream the loop has to iterate."""

    def __init__(self, replies: list[ResponseFactory]) -> None:
        self._inner = ScriptedModel(replies)

    def stream(self, request: ModelRequest, signal: Any) -> Iterated:
        return Iterated(self._inner.stream(request, signal))


@settings(max_examples=examples(150))
@given(script=st.lists(replies(), min_size=1, max_size=4), max_steps=st.integers(1, 5))
def test_a_run_over_finished_streams_equals_the_run_that_iterates_them(
    script: list[ScriptedReply], max_steps: int
) -> None:
    async def run(model: Any) -> tuple[list[AgentEvent], RunResult]:
        stream = run_agent_loop(
            messages=[UserMessage(id="user-1", content="go")],
            model=model,
            tools=REGISTRY,
            max_steps=max_steps,
        )
        return [event async for event in stream], await stream.result

    async def both() -> None:
        taken = await run(ScriptedModel(list[ResponseFactory](script)))
        iterated = await run(IteratedModel(list[ResponseFactory](script)))
        assert taken == iterated

    run_async(both)


def test_take_finished_takes_only_a_finished_stream_nobody_reads() -> None:
    open_stream: EventStream[int, None] = EventStream()
    open_stream.push(1)
    assert open_stream.take_finished() is None
    failed: EventStream[int, None] = EventStream()
    failed.push(1)
    failed.fail(RuntimeError("boom"))
    assert failed.take_finished() is None
    read: EventStream[int, None] = EventStream()
    read.push(1)
    read.finish(None)
    reader = aiter(read)
    assert read.take_finished() is None
    assert reader.poll(None) == 1
    finished: EventStream[int, None] = EventStream()
    finished.push(1)
    finished.push(2)
    finished.finish(None)
    assert list(finished.take_finished() or ()) == [1, 2]
    again = finished.take_finished()  # still finished, nothing left
    assert again is not None
    assert list(again) == []
    with pytest.raises(StopAsyncIteration):
        aiter(finished).poll(None)  # reads as consumed
