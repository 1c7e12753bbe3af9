"""Property tests for the fixture provider boundary (checkpoint 05).

(a) Arbitrary record lists -- well-formed records of all five types with random field values,
    in random order, mixed with garbage JSON -- either settle with a ``ModelResponse`` or fail
    with a ``FixtureProviderError``: no other exception, no hang (the stream must settle within
    a bounded number of loop turns), no warning (warnings are errors), and only protocol chunks
    before a failure. A small reference model written from spec 5.C predicts the exact outcome.
(b) Hostile Python objects as the fixture or inside it: construction either succeeds or raises
    ``FixtureProviderError("PROVIDER_INVALID_FIXTURE")``; a non-JSON value inside a record
    list always fails construction; whatever constructs streams to a response or a
    ``FixtureProviderError``.
"""

from __future__ import annotations

import asyncio
import datetime
import decimal
import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeGuard

from hypothesis import event, given
from hypothesis import strategies as st

from support import Impostor, run_async
from tether import (
    AbortController,
    FixtureProviderAdapter,
    JsonObject,
    ModelChunk,
    ModelRequest,
    ModelResponse,
    TextBlock,
    ToolCall,
)
from tether._base.strings import is_non_empty
from tether.protocol import TextDeltaChunk, ToolCallChunk
from tether.providers.fixture import FixtureProviderError

REQUEST_ID = "request-001"
MAX_SAFE_INTEGER = 2**53 - 1
CODES = frozenset(
    {
        "PROVIDER_INVALID_FIXTURE",
        "PROVIDER_EXHAUSTED",
        "PROVIDER_UNKNOWN_EVENT",
        "PROVIDER_INVALID_EVENT",
        "PROVIDER_MISSING_START",
        "PROVIDER_DUPLICATE_START",
        "PROVIDER_MISSING_TERMINAL",
        "PROVIDER_DUPLICATE_TERMINAL",
        "PROVIDER_RESPONSE_MISMATCH",
        "PROVIDER_INVALID_TERMINAL",
        "PROVIDER_ITERATOR_REUSED",
        "PROVIDER_TRANSPORT_ERROR",
    }
)

# --- running one response -------------------------------------------------------------------


@dataclass
class Outcome:
    chunks: list[ModelChunk]
    response: ModelResponse | None
    error: BaseException | None


async def stream_once(adapter: FixtureProviderAdapter) -> Outcome:
    stream = adapter.stream(ModelRequest(id=REQUEST_ID, messages=()), AbortController().signal)
    for _ in range(50):
        if stream.settled:
            break
        await asyncio.sleep(0)
    assert stream.settled, "the stream did not settle: the adapter hangs"
    chunks: list[ModelChunk] = []
    failure: BaseException | None = None
    try:
        async for chunk in stream:
            chunks.append(chunk)
    except Exception as error:
        failure = error
    if failure is None:
        return Outcome(chunks, await stream.result, None)
    result_error: BaseException | None = None
    try:
        await stream.result
    except Exception as error:
        result_error = error
    assert result_error is failure, "iteration and result disagree"
    return Outcome(chunks, None, failure)


def assert_protocol_outcome(outcome: Outcome) -> None:
    for chunk in outcome.chunks:
        assert type(chunk) in (TextDeltaChunk, ToolCallChunk)
        assert chunk.request_id == REQUEST_ID
    if outcome.error is not None:
        assert type(outcome.error) is FixtureProviderError, repr(outcome.error)
        assert outcome.error.code in CODES
        return
    response = outcome.response
    assert type(response) is ModelResponse
    assert response.request_id == REQUEST_ID
    assert response.message.id == f"message-{response.id}"
    expected_blocks = tuple(
        TextBlock(text=chunk.delta) if isinstance(chunk, TextDeltaChunk) else chunk.tool_call
        for chunk in outcome.chunks
        if isinstance(chunk, TextDeltaChunk | ToolCallChunk)
    )
    assert response.message.content == expected_blocks
    has_calls = any(isinstance(block, ToolCall) for block in expected_blocks)
    assert response.stop_reason == ("toolCall" if has_calls else "stop")


# --- a reference model of spec 5.C ----------------------------------------------------------


STOP_REASONS = {"stop": "stop", "tool_call": "toolCall"}


@dataclass
class Expected:
    chunks: list[ModelChunk]
    code: str | None = None
    index: int | None = None
    stop_reason: str | None = None
    usage: tuple[int, int] | None = None
    response_id: str | None = None


def is_exact_dict(value: object) -> TypeGuard[dict[str, Any]]:
    return type(value) is dict


def is_count(value: object) -> bool:
    return type(value) is int and 0 <= value <= MAX_SAFE_INTEGER


def reference_usage(usage: object) -> tuple[int, int] | str:
    if not is_exact_dict(usage):
        return "not-object"
    fields = usage
    counts: list[object] = []
    for camel, snake in (("inputTokens", "input_tokens"), ("outputTokens", "output_tokens")):
        if camel in fields and snake in fields:
            return "duplicate"
        counts.append(fields[camel] if camel in fields else fields.get(snake))
    if not all(is_count(count) for count in counts):
        return "counts"
    return (counts[0], counts[1])  # pyright: ignore[reportReturnType]


def reference(records: list[Any]) -> Expected:  # one branch per spec rule
    chunks: list[ModelChunk] = []
    response_id: str | None = None
    call_ids: set[str] = set()
    terminal: Expected | None = None

    def fail(code: str, index: int) -> Expected:
        return Expected(chunks, code, index)

    for index, record in enumerate(records):
        if not is_exact_dict(record):
            return fail("PROVIDER_INVALID_EVENT", index)
        fields = record
        kind = fields.get("type")
        if not is_non_empty(kind):
            return fail("PROVIDER_INVALID_EVENT", index)
        if terminal is not None:
            duplicate = kind == "response_end"
            return fail(
                "PROVIDER_DUPLICATE_TERMINAL" if duplicate else "PROVIDER_INVALID_TERMINAL", index
            )
        if kind == "response_start":
            if response_id is not None:
                return fail("PROVIDER_DUPLICATE_START", index)
            if not is_non_empty(fields.get("responseId")) or fields.get("role") != "assistant":
                return fail("PROVIDER_INVALID_EVENT", index)
            response_id = fields["responseId"]
            continue
        if kind == "transport_error":
            valid = is_non_empty(fields.get("code")) and is_non_empty(fields.get("message"))
            return fail("PROVIDER_TRANSPORT_ERROR" if valid else "PROVIDER_INVALID_EVENT", index)
        if kind not in ("text_delta", "tool_call", "response_end"):
            return fail("PROVIDER_UNKNOWN_EVENT", index)
        if response_id is None:
            return fail("PROVIDER_MISSING_START", index)
        if kind == "text_delta":
            if type(fields.get("text")) is not str:
                return fail("PROVIDER_INVALID_EVENT", index)
            chunks.append(TextDeltaChunk(request_id=REQUEST_ID, delta=fields["text"]))
        elif kind == "tool_call":
            call_id, name, arguments = fields.get("id"), fields.get("name"), fields.get("arguments")
            if not is_non_empty(call_id) or not is_non_empty(name) or not is_exact_dict(arguments):
                return fail("PROVIDER_INVALID_EVENT", index)
            if call_id in call_ids:
                return fail("PROVIDER_INVALID_EVENT", index)
            call_ids.add(call_id)
            call = ToolCall(id=call_id, name=name, arguments=JsonObject(arguments))
            chunks.append(ToolCallChunk(request_id=REQUEST_ID, tool_call=call))
        else:
            end_id = fields.get("responseId")
            if not is_non_empty(end_id):
                return fail("PROVIDER_INVALID_EVENT", index)
            if end_id != response_id:
                return fail("PROVIDER_RESPONSE_MISMATCH", index)
            raw_stop = fields.get("stopReason")
            stop = STOP_REASONS.get(raw_stop) if isinstance(raw_stop, str) else None
            usage = reference_usage(fields.get("usage"))
            if stop is None or isinstance(usage, str):
                return fail("PROVIDER_INVALID_EVENT", index)
            if (stop == "toolCall") != bool(call_ids):
                return fail("PROVIDER_INVALID_TERMINAL", index)
            terminal = Expected(list(chunks), None, None, stop, usage, response_id)
    if terminal is None:
        return fail("PROVIDER_MISSING_TERMINAL", len(records))
    return terminal


# --- strategies: transport records ----------------------------------------------------------

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**60), max_value=2**60),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=6),
)
json_values: st.SearchStrategy[Any] = st.recursive(
    json_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)
json_objects = st.dictionaries(st.text(max_size=6), json_values, max_size=3)

ids = st.one_of(st.sampled_from(["r-1", "r-2", "", "  ", "call-1", "call-2"]), st.text(max_size=4))
counts = st.one_of(
    st.integers(min_value=0, max_value=50),
    st.sampled_from([-1, MAX_SAFE_INTEGER, MAX_SAFE_INTEGER + 1, True, False, 1.0, None, "1"]),
)
usages = st.one_of(
    st.fixed_dictionaries({}, optional={"inputTokens": counts, "outputTokens": counts}),
    st.fixed_dictionaries({}, optional={"input_tokens": counts, "output_tokens": counts}),
    st.fixed_dictionaries(
        {},
        optional={
            "inputTokens": counts,
            "outputTokens": counts,
            "input_tokens": counts,
            "output_tokens": counts,
        },
    ),
    json_values,
)
record_types: st.SearchStrategy[Any] = st.one_of(
    st.sampled_from(
        ["response_start", "text_delta", "tool_call", "response_end", "transport_error"]
    ),
    st.sampled_from(["", " ", "textDelta", "thinking", "RESPONSE_END"]),
    json_values,
)


def record(
    kind: str | st.SearchStrategy[Any], fields: dict[str, st.SearchStrategy[Any]]
) -> st.SearchStrategy[Any]:
    """A record of ``kind`` whose fields are each present or absent at random."""
    kinds: st.SearchStrategy[Any] = st.just(kind) if isinstance(kind, str) else kind
    required: dict[str, st.SearchStrategy[Any]] = {"type": kinds}
    return st.fixed_dictionaries(required, optional=fields)


well_formed_records: st.SearchStrategy[Any] = st.one_of(
    record(
        "response_start",
        {"responseId": ids, "role": st.sampled_from(["assistant", "user"]) | json_values},
    ),
    record("text_delta", {"text": st.text(max_size=8) | json_values}),
    record("tool_call", {"id": ids, "name": ids, "arguments": json_objects | json_values}),
    record(
        "response_end",
        {
            "responseId": ids,
            "stopReason": st.sampled_from(["stop", "tool_call", "toolCall"]) | json_values,
            "usage": usages,
        },
    ),
    record("transport_error", {"code": ids, "message": st.text(max_size=8) | json_values}),
)
garbage_records: st.SearchStrategy[Any] = st.one_of(
    json_values,
    record(record_types, {"text": json_values}),
)


@st.composite
def plausible_response(draw: st.DrawFn) -> list[Any]:
    """start, text/tool records with unique IDs, a matching end: mostly a success."""
    response_id = draw(st.sampled_from(["r-1", "response-tool-001"]))
    body: list[Any] = []
    for position, is_call in enumerate(draw(st.lists(st.booleans(), max_size=5))):
        if is_call:
            body.append(
                {
                    "type": "tool_call",
                    "id": f"call-{position}",
                    "name": draw(st.sampled_from(["add", "search"])),
                    "arguments": draw(json_objects),
                }
            )
        else:
            body.append({"type": "text_delta", "text": draw(st.text(max_size=8))})
    has_calls = any(item["type"] == "tool_call" for item in body)
    usage_keys = draw(
        st.sampled_from([("inputTokens", "outputTokens"), ("input_tokens", "output_tokens")])
    )
    end = {
        "type": "response_end",
        "responseId": response_id,
        "stopReason": "tool_call" if has_calls else "stop",
        "usage": {usage_keys[0]: draw(counts), usage_keys[1]: draw(counts)},
    }
    records = [
        {"type": "response_start", "responseId": response_id, "role": "assistant"},
        *body,
        end,
    ]
    if draw(st.booleans()):  # perturb: insert, drop or duplicate one record
        position = draw(st.integers(min_value=0, max_value=len(records)))
        action = draw(st.sampled_from(["insert", "drop", "duplicate"]))
        if action == "insert":
            records.insert(position, draw(well_formed_records | garbage_records))
        elif records and position < len(records):
            if action == "drop":
                del records[position]
            else:
                records.insert(position, records[position])
    return records


START_RECORD: dict[str, Any] = {"type": "response_start", "responseId": "r-1", "role": "assistant"}
record_lists: st.SearchStrategy[list[Any]] = st.one_of(
    plausible_response(),
    st.lists(well_formed_records | garbage_records, max_size=10),
    st.lists(well_formed_records, max_size=10),
    st.lists(well_formed_records, max_size=8).map(lambda rest: [dict(START_RECORD), *rest]),
)


@given(record_lists)
def test_arbitrary_records_settle_with_a_response_or_a_provider_error(records: list[Any]) -> None:
    async def scenario() -> Outcome:
        adapter = FixtureProviderAdapter({"schemaVersion": 1, "responses": [{"records": records}]})
        return await stream_once(adapter)

    outcome: Outcome = run_async(scenario)

    assert_protocol_outcome(outcome)
    event("success" if outcome.error is None else getattr(outcome.error, "code", "?"))


@given(record_lists)
def test_arbitrary_records_match_the_reference_model(records: list[Any]) -> None:
    async def scenario() -> Outcome:
        adapter = FixtureProviderAdapter({"schemaVersion": 1, "responses": [{"records": records}]})
        return await stream_once(adapter)

    outcome: Outcome = run_async(scenario)
    expected = reference(records)

    assert outcome.chunks == expected.chunks
    if expected.code is not None:
        error = outcome.error
        assert type(error) is FixtureProviderError, f"expected {expected.code}, got {outcome!r}"
        assert (error.code, error.record_index) == (expected.code, expected.index)
        return
    assert outcome.response is not None, f"expected success, got {outcome.error!r}"
    assert outcome.response.id == expected.response_id
    assert outcome.response.stop_reason == expected.stop_reason
    usage = outcome.response.usage
    assert (usage.input_tokens, usage.output_tokens) == expected.usage


# --- strategies: hostile Python objects -----------------------------------------------------


class DictSubclass(dict[str, Any]):
    pass


class ListSubclass(list[Any]):
    pass


class StrSubclass(str):
    __slots__ = ()


class IntSubclass(int):
    pass


class CustomMapping(Mapping[str, object]):
    def __init__(self, data: dict[str, object]) -> None:
        self._data = data

    def __getitem__(self, key: str) -> object:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


class ExplodingMapping(CustomMapping):
    def __getitem__(self, key: str) -> object:
        raise RuntimeError("exploded")

    def __len__(self) -> int:
        raise RuntimeError("exploded")


class RaisingKey:
    """Hashes like a field name and raises when compared."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __hash__(self) -> int:
        return hash(self.name)

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("compared")


class Opaque:
    """An arbitrary object whose attribute access raises."""

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(f"no attribute {name}")


class BrokenSource:
    """Looks like an async record source, but opening it raises."""

    def __aiter__(self) -> Any:
        raise RuntimeError("cannot open")


def cyclic_list() -> list[Any]:
    value: list[Any] = [{"type": "response_start"}]
    value.append(value)
    return value


def cyclic_dict() -> dict[str, Any]:
    value: dict[str, Any] = {"type": "text_delta"}
    value["self"] = value
    return value


def nested(depth: int, as_dict: bool) -> Any:
    value: Any = {} if as_dict else []
    for _ in range(depth):
        value = {"k": value} if as_dict else [value]
    return value


FIELDS = ["schemaVersion", "responses", "records", "type", "usage"]

# (name, factory, is_json): is_json values are legal JSON (construction may succeed).
HOSTILE_LEAVES: list[tuple[str, Callable[[], object], bool]] = [
    ("dict-subclass", lambda: DictSubclass(type="response_start"), False),
    ("list-subclass", lambda: ListSubclass([1]), False),
    ("custom-mapping", lambda: CustomMapping({"type": "text_delta", "text": "x"}), False),
    ("exploding-mapping", lambda: ExplodingMapping({}), False),
    ("int-key", lambda: {1: "one"}, False),
    ("none-key", lambda: {None: "none"}, False),
    ("tuple-key", lambda: {("type",): "text_delta"}, False),
    ("str-subclass-key", lambda: {StrSubclass("type"): "text_delta"}, False),
    ("impostor-key", lambda: {Impostor("type"): "text_delta"}, False),
    ("raising-key", lambda: {RaisingKey("records"): []}, False),
    ("nan", lambda: math.nan, False),
    ("inf", lambda: math.inf, False),
    ("negative-inf", lambda: -math.inf, False),
    ("set", lambda: {1, 2}, False),
    ("frozenset", lambda: frozenset({"a"}), False),
    ("bytes", lambda: b"bytes", False),
    ("complex", lambda: 1j, False),
    ("decimal", lambda: decimal.Decimal("1.5"), False),
    ("datetime", lambda: datetime.datetime(2024, 1, 1), False),
    ("object", object, False),
    ("opaque", Opaque, False),
    ("broken-source", BrokenSource, False),
    ("str-subclass", lambda: StrSubclass("text_delta"), False),
    ("int-subclass", lambda: IntSubclass(1), False),
    ("cyclic-list", cyclic_list, False),
    ("cyclic-dict", cyclic_dict, False),
    ("deep-list", lambda: nested(10_000, as_dict=False), False),
    ("deep-dict", lambda: nested(10_000, as_dict=True), False),
    ("nested-200", lambda: nested(200, as_dict=False), False),
    ("true", lambda: True, True),
    ("false", lambda: False, True),
    ("negative", lambda: -1, True),
    ("huge", lambda: 2**64, True),
    ("empty-dict", dict, True),
    ("none", lambda: None, True),
]

hostile_leaves = st.sampled_from(HOSTILE_LEAVES)


def valid_records() -> list[Any]:
    return [
        {"type": "response_start", "responseId": "r-1", "role": "assistant"},
        {"type": "text_delta", "text": "hi"},
        {
            "type": "response_end",
            "responseId": "r-1",
            "stopReason": "stop",
            "usage": {"inputTokens": 1, "outputTokens": 2},
        },
    ]


@dataclass
class Placement:
    fixture: object
    in_records: bool  # the hostile value sits inside a record list (deep-snapshotted)
    leaf_is_json: bool
    label: str


@st.composite
def hostile_fixtures(draw: st.DrawFn) -> Placement:
    name, make, is_json = draw(hostile_leaves)
    leaf = make()
    where = draw(
        st.sampled_from(
            [
                "fixture",
                "schemaVersion",
                "responses",
                "response",
                "records",
                "record",
                "record-field",
                "arguments",
                "usage-count",
                "fixture-key",
            ]
        )
    )
    records = valid_records()
    fixture: Any = {"schemaVersion": 1, "responses": [{"records": records}]}
    in_records = False
    if where == "fixture":
        fixture = leaf
    elif where == "schemaVersion":
        fixture["schemaVersion"] = leaf
    elif where == "responses":
        fixture["responses"] = leaf
    elif where == "response":
        fixture["responses"].append(leaf)
    elif where == "records":
        fixture["responses"][0]["records"] = leaf
    elif where == "record":
        records.insert(draw(st.integers(0, len(records))), leaf)
        in_records = True
    elif where == "record-field":
        records[draw(st.integers(0, len(records) - 1))][draw(st.sampled_from(FIELDS))] = leaf
        in_records = True
    elif where == "arguments":
        records.insert(
            1, {"type": "tool_call", "id": "c-1", "name": "add", "arguments": {"x": leaf}}
        )
        in_records = True
    elif where == "usage-count":
        records[-1]["usage"][draw(st.sampled_from(["inputTokens", "outputTokens"]))] = leaf
        in_records = True
    else:
        key = draw(st.sampled_from([1, None, ("responses",), Impostor("x"), RaisingKey("z")]))
        fixture[key] = leaf
    return Placement(fixture, in_records, is_json, f"{name}@{where}")


@given(hostile_fixtures())
def test_hostile_objects_construct_or_raise_invalid_fixture(placement: Placement) -> None:
    adapter: FixtureProviderAdapter | None = None
    rejection: FixtureProviderError | None = None
    try:
        adapter = FixtureProviderAdapter(placement.fixture)
    except FixtureProviderError as error:
        rejection = error
    if adapter is None:
        assert rejection is not None
        assert rejection.code == "PROVIDER_INVALID_FIXTURE"
        assert str(rejection) == "Fixture could not be inspected safely"
        event("rejected")
        return
    event("constructed")
    assert not (placement.in_records and not placement.leaf_is_json), (
        f"non-JSON value accepted inside a record list: {placement.label}"
    )

    constructed = adapter

    async def scenario() -> list[Outcome]:
        return [await stream_once(constructed) for _ in range(constructed.pending_response_count)]

    for outcome in run_async(scenario):
        assert_protocol_outcome(outcome)
