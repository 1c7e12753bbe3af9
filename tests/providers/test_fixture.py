"""Checkpoint 05: ``FixtureProviderAdapter``, the offline provider trust boundary (spec 5.A-5.E).

Covers the seed's acceptance criteria (schema version 1, snapshots, text order and opaque
tool-call IDs, usage aliases, exactly one correlated terminal, the twelve stable codes, async
record sources, no network) and its failure experiment (remove ``response_end``: the tool-call
chunk is observed, then iteration and ``result`` both fail with PROVIDER_MISSING_TERMINAL).
"""

from __future__ import annotations

import ast
import asyncio
import copy
import datetime
import decimal
import enum
import inspect
import json
import math
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import tether.providers.fixture as fixture_module
from factories import aborted_signal, live_signal
from support import Impostor, Outcome, consume, fail, settle, succeed, turns
from tether import (
    AbortController,
    AbortError,
    FixtureProviderAdapter,
    JsonObject,
    ModelChunk,
    ModelRequest,
    ModelUsage,
    TextBlock,
    ToolCall,
    jsonvalue,
)
from tether._base.exact_types import type_of
from tether.jsonvalue import freeze_json, freeze_plain_object
from tether.protocol import TextDeltaChunk, ToolCallChunk
from tether.providers.fixture import FixtureProviderError

FIXTURE_PATH = Path(__file__).resolve().parents[2] / "fixtures" / "provider-tool-roundtrip.json"
REQUEST_ID = "request-001"
INVALID_FIXTURE = "Fixture could not be inspected safely"
SOURCE_FAILED = "Async fixture record source failed"
MAX_SAFE_INTEGER = 2**53 - 1

Record = dict[str, Any]


class Boom(Exception):
    """A failure whose identity the tests track."""


class Interrupt(BaseException):
    """A bare ``BaseException`` (not an ``Exception``)."""


# --- record builders ------------------------------------------------------------------------

USAGE: Record = {"inputTokens": 5, "outputTokens": 7}


def start(response_id: object = "response-1") -> Record:
    return {"type": "response_start", "responseId": response_id, "role": "assistant"}


def text(value: object) -> Record:
    return {"type": "text_delta", "text": value}


def call(call_id: object = "call-1", name: object = "add", arguments: object = None) -> Record:
    args = {"left": 20, "right": 22} if arguments is None else arguments
    return {"type": "tool_call", "id": call_id, "name": name, "arguments": args}


def end(response_id: object = "response-1", stop: object = "stop", usage: object = None) -> Record:
    return {
        "type": "response_end",
        "responseId": response_id,
        "stopReason": stop,
        "usage": dict(USAGE) if usage is None else usage,
    }


def transport_error(code: object = "rate_limited", message: object = "Slow down") -> Record:
    return {"type": "transport_error", "code": code, "message": message}


def changed(record: Record, **changes: object) -> Record:
    return {**record, **changes}


def without(record: Record, key: str) -> Record:
    return {name: value for name, value in record.items() if name != key}


def document(*responses: object) -> dict[str, Any]:
    return {"schemaVersion": 1, "responses": [{"records": records} for records in responses]}


def load_bundled() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(FIXTURE_PATH.read_text(encoding="utf-8"))
    return loaded


# --- stream helpers -------------------------------------------------------------------------


def make_request(request_id: str = REQUEST_ID) -> ModelRequest:
    return ModelRequest(id=request_id, messages=())


async def run_records(records: object) -> Outcome:
    adapter = FixtureProviderAdapter(document(records))
    return await consume(adapter.stream(make_request(), live_signal()))


def assert_provider_error(
    error: BaseException | None,
    code: str,
    message: str | None = None,
    *,
    record_index: int | None = None,
    provider_code: str | None = None,
) -> None:
    assert type(error) is FixtureProviderError, repr(error)
    assert error.code == code
    if message is not None:
        assert str(error) == message
    assert error.record_index == record_index
    assert error.provider_code == provider_code


def assert_invalid_fixture(fixture: object) -> None:
    with pytest.raises(FixtureProviderError) as caught:
        FixtureProviderAdapter(fixture)
    assert_provider_error(caught.value, "PROVIDER_INVALID_FIXTURE", INVALID_FIXTURE)


# --- the bundled fixture round trip ---------------------------------------------------------

ADD_CALL = ToolCall(id="call-add-001", name="add", arguments=JsonObject({"left": 20, "right": 22}))


async def assert_round_trip(adapter: FixtureProviderAdapter) -> None:
    assert adapter.pending_response_count == 2

    chunks, first = await succeed(adapter.stream(make_request("request-001"), live_signal()))
    assert chunks == [ToolCallChunk(request_id="request-001", tool_call=ADD_CALL)]
    assert first.id == "response-tool-001"
    assert first.request_id == "request-001"
    assert first.stop_reason == "toolCall"
    assert first.usage == ModelUsage(input_tokens=12, output_tokens=8)
    assert first.message.id == "message-response-tool-001"
    assert first.message.content == (ADD_CALL,)

    chunks, second = await succeed(adapter.stream(make_request("request-002"), live_signal()))
    assert chunks == [TextDeltaChunk(request_id="request-002", delta="The sum is 42.")]
    assert second.id == "response-text-002"
    assert second.request_id == "request-002"
    assert second.stop_reason == "stop"
    assert second.usage == ModelUsage(input_tokens=20, output_tokens=6)
    assert second.message.id == "message-response-text-002"
    assert second.message.content == (TextBlock(text="The sum is 42."),)

    assert adapter.call_count == 2
    assert adapter.pending_response_count == 0


async def test_bundled_fixture_round_trip() -> None:
    await assert_round_trip(FixtureProviderAdapter(load_bundled()))


@pytest.mark.parametrize("as_path", [False, True], ids=["str", "Path"])
async def test_from_path_loads_the_bundled_fixture(as_path: bool) -> None:
    path: Any = FIXTURE_PATH if as_path else str(FIXTURE_PATH)

    await assert_round_trip(FixtureProviderAdapter.from_path(path))


async def test_bundled_fixture_is_exhausted_after_two_calls() -> None:
    adapter = FixtureProviderAdapter.from_path(FIXTURE_PATH)
    await succeed(adapter.stream(make_request("request-001"), live_signal()))
    await succeed(adapter.stream(make_request("request-002"), live_signal()))

    chunks, error = await fail(adapter.stream(make_request("request-003"), live_signal()))

    assert chunks == []
    assert_provider_error(
        error, "PROVIDER_EXHAUSTED", 'No fixture response remains for request "request-003"'
    )
    assert adapter.call_count == 3


DEEP_JSON_TEXT = (
    '{"schemaVersion": 1, "responses": [{"records": [' + "[" * 10_000 + "]" * 10_000 + "]}]}"
)


@pytest.mark.parametrize(
    "content",
    ["", "{not json", '{"schemaVersion": 1, "responses": [{"records": [NaN]}]}', DEEP_JSON_TEXT],
    ids=["empty", "malformed", "nan-literal", "10000-deep"],
)
def test_from_path_rejects_unusable_files(tmp_path: Path, content: str) -> None:
    path = tmp_path / "fixture.json"
    path.write_text(content, encoding="utf-8")

    with pytest.raises(FixtureProviderError) as caught:
        FixtureProviderAdapter.from_path(path)

    assert_provider_error(caught.value, "PROVIDER_INVALID_FIXTURE", INVALID_FIXTURE)


@pytest.mark.parametrize("name", ["missing.json", "."], ids=["missing-file", "directory"])
def test_from_path_rejects_unreadable_paths(tmp_path: Path, name: str) -> None:
    with pytest.raises(FixtureProviderError) as caught:
        FixtureProviderAdapter.from_path(tmp_path / name)

    assert_provider_error(caught.value, "PROVIDER_INVALID_FIXTURE", INVALID_FIXTURE)


# --- the seed's failure experiment ----------------------------------------------------------


async def test_failure_experiment_missing_response_end_fails_after_the_chunk() -> None:
    fixture = load_bundled()
    first_records: list[Record] = fixture["responses"][0]["records"]
    removed = first_records.pop()
    assert removed["type"] == "response_end"
    fixture["responses"] = fixture["responses"][:1]
    adapter = FixtureProviderAdapter(fixture)
    stream = adapter.stream(make_request(), live_signal())

    observed: list[ModelChunk] = []
    iteration_error: BaseException | None = None
    try:
        async for chunk in stream:
            observed.append(chunk)
    except FixtureProviderError as error:
        iteration_error = error
    with pytest.raises(FixtureProviderError) as from_result:
        await stream.result

    assert observed == [ToolCallChunk(request_id=REQUEST_ID, tool_call=ADD_CALL)]
    assert from_result.value is iteration_error
    assert_provider_error(
        iteration_error,
        "PROVIDER_MISSING_TERMINAL",
        "Fixture response ended without a response_end record",
        record_index=2,
    )


async def test_failure_experiment_restored_response_end_settles_as_tool_call() -> None:
    fixture = load_bundled()
    first_records: list[Record] = fixture["responses"][0]["records"]
    first_records.pop()
    first_records.append(
        end("response-tool-001", "tool_call", {"inputTokens": 12, "outputTokens": 8})
    )
    adapter = FixtureProviderAdapter(fixture)

    chunks, response = await succeed(adapter.stream(make_request(), live_signal()))

    assert chunks == [ToolCallChunk(request_id=REQUEST_ID, tool_call=ADD_CALL)]
    assert response.stop_reason == "toolCall"
    assert response.message.content == (ADD_CALL,)


# --- construction: schema version and snapshot ----------------------------------------------


@pytest.mark.parametrize(
    "version",
    [0, 2, -1, "1", 1.0, True, None, [1], {"v": 1}],
    ids=["0", "2", "-1", "str", "float", "true", "none", "list", "dict"],
)
def test_schema_version_must_be_exactly_one(version: object) -> None:
    assert_invalid_fixture({"schemaVersion": version, "responses": []})


def test_schema_version_is_required() -> None:
    assert_invalid_fixture({"responses": []})


def test_schema_version_one_with_no_responses_is_accepted() -> None:
    adapter = FixtureProviderAdapter({"schemaVersion": 1, "responses": []})

    assert adapter.pending_response_count == 0
    assert adapter.call_count == 0


def test_unknown_top_level_keys_are_ignored() -> None:
    fixture = {**document([start(), end()]), "expected": {"anything": [1, 2]}, "notes": "x"}

    assert FixtureProviderAdapter(fixture).pending_response_count == 1


async def test_construction_snapshots_the_fixture() -> None:
    fixture = document(
        [start(), text("original"), call("call-1", arguments={"n": [1]}), end(stop="tool_call")]
    )
    adapter = FixtureProviderAdapter(fixture)

    records: list[Record] = fixture["responses"][0]["records"]
    records[1]["text"] = "rewritten"
    records[2]["arguments"]["n"].append(2)
    records[2]["arguments"]["extra"] = True
    records.insert(0, {"type": "garbage"})
    fixture["responses"].append({"records": []})
    fixture["schemaVersion"] = 99

    assert adapter.pending_response_count == 1
    chunks, response = await succeed(adapter.stream(make_request(), live_signal()))
    assert chunks[0] == TextDeltaChunk(request_id=REQUEST_ID, delta="original")
    assert response.message.content[1] == ToolCall(
        id="call-1", name="add", arguments=JsonObject({"n": [1]})
    )


async def test_normalized_values_are_immutable() -> None:
    adapter = FixtureProviderAdapter(
        document([start(), call(arguments={"n": [1]}), end(stop="tool_call")])
    )

    chunks, response = await succeed(adapter.stream(make_request(), live_signal()))

    chunk: Any = chunks[0]
    arguments: Any = response.message.content[0]
    usage: Any = response.usage
    with pytest.raises(AttributeError):
        chunk.request_id = "other"
    with pytest.raises(TypeError):
        arguments.arguments["n"] = 2
    with pytest.raises(AttributeError):
        usage.input_tokens = 1
    assert type(response.message.content) is tuple


# --- construction: everything malformed is PROVIDER_INVALID_FIXTURE ---------------------------


class DictSubclass(dict[str, Any]):
    pass


class ListSubclass(list[Any]):
    pass


class StrSubclass(str):
    __slots__ = ()


class Color(enum.IntEnum):
    RED = 1


class CustomMapping(Mapping[str, object]):
    def __init__(self, data: dict[str, object]) -> None:
        self._data = data

    def __getitem__(self, key: str) -> object:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


def cyclic_list() -> list[Any]:
    value: list[Any] = [start()]
    value.append(value)
    return value


def cyclic_record() -> Record:
    record = text("x")
    record["self"] = record
    return record


def deep_list(depth: int = 10_000) -> Any:
    value: Any = []
    for _ in range(depth):
        value = [value]
    return value


def deep_dict(depth: int = 10_000) -> Any:
    value: Any = {}
    for _ in range(depth):
        value = {"k": value}
    return value


def with_responses(responses: list[Any]) -> dict[str, Any]:
    return {"schemaVersion": 1, "responses": responses}


def valid_document() -> dict[str, Any]:
    return document([start(), text("ok"), end()])


INVALID_FIXTURES: list[tuple[str, Callable[[], object]]] = [
    ("fixture-none", lambda: None),
    ("fixture-list", lambda: [valid_document()]),
    ("fixture-json-text", lambda: json.dumps(valid_document())),
    ("fixture-dict-subclass", lambda: DictSubclass(valid_document())),
    ("fixture-mapping-proxy", lambda: MappingProxyType(valid_document())),
    ("fixture-custom-mapping", lambda: CustomMapping(valid_document())),
    ("responses-missing", lambda: {"schemaVersion": 1}),
    ("responses-none", lambda: {"schemaVersion": 1, "responses": None}),
    ("responses-tuple", lambda: {"schemaVersion": 1, "responses": ()}),
    ("responses-dict", lambda: {"schemaVersion": 1, "responses": {"0": {"records": []}}}),
    ("responses-str", lambda: {"schemaVersion": 1, "responses": "[]"}),
    ("responses-list-subclass", lambda: {"schemaVersion": 1, "responses": ListSubclass()}),
    ("response-none", lambda: {"schemaVersion": 1, "responses": [None]}),
    ("response-list", lambda: {"schemaVersion": 1, "responses": [[start(), end()]]}),
    ("response-str", lambda: {"schemaVersion": 1, "responses": ["records"]}),
    (
        "response-dict-subclass",
        lambda: {"schemaVersion": 1, "responses": [DictSubclass(records=[])]},
    ),
    (
        "response-custom-mapping",
        lambda: {"schemaVersion": 1, "responses": [CustomMapping({"records": []})]},
    ),
    ("records-missing", lambda: with_responses([{}])),
    ("records-misspelled", lambda: with_responses([{"recrods": []}])),
    ("records-none", lambda: document(None)),
    ("records-str", lambda: document("records")),
    ("records-int", lambda: document(3)),
    ("records-dict", lambda: document({"0": start()})),
    ("records-tuple", lambda: document((start(), end()))),
    ("records-set", lambda: document({1, 2})),
    ("records-list-subclass", lambda: document(ListSubclass([start(), end()]))),
    ("records-sync-iterator", lambda: document(iter([start(), end()]))),
    ("record-set", lambda: document([start(), {"type": "text_delta", "text": {"a"}}])),
    ("record-frozenset", lambda: document([frozenset({1})])),
    (
        "record-nan",
        lambda: document([start(), end(usage={"inputTokens": math.nan, "outputTokens": 1})]),
    ),
    ("record-inf", lambda: document([start(), call(arguments={"x": math.inf})])),
    ("record-negative-inf", lambda: document([-math.inf])),
    ("record-bytes", lambda: document([start(), text(b"bytes")])),
    ("record-complex", lambda: document([1j])),
    ("record-decimal", lambda: document([start(), call(arguments={"x": decimal.Decimal("1.5")})])),
    (
        "record-datetime",
        lambda: document([start(), call(arguments={"at": datetime.datetime(2024, 1, 1)})]),
    ),
    ("record-object", lambda: document([object()])),
    (
        "record-int-subclass",
        lambda: document([start(), end(usage={"inputTokens": Color.RED, "outputTokens": 1})]),
    ),
    ("record-str-subclass", lambda: document([start(), text(StrSubclass("x"))])),
    ("record-dict-subclass", lambda: document([DictSubclass(start())])),
    ("record-custom-mapping", lambda: document([CustomMapping(start())])),
    ("record-nested-dict-subclass", lambda: document([start(), call(arguments=DictSubclass(x=1))])),
    ("record-int-key", lambda: document([start(), call(arguments={1: "one"})])),
    ("record-none-key", lambda: document([{None: 1, "type": "text_delta"}])),
    ("record-tuple-key", lambda: document([{("type",): "text_delta"}])),
    ("record-str-subclass-key", lambda: document([{StrSubclass("type"): "response_start"}])),
    ("records-cycle", lambda: document(cyclic_list())),
    ("record-cycle", lambda: document([start(), cyclic_record()])),
    ("record-10000-deep-list", lambda: document([start(), call(arguments={"deep": deep_list()})])),
    ("record-10000-deep-dict", lambda: document([start(), call(arguments=deep_dict())])),
    ("second-response-bad", lambda: document([start(), end()], [start(), {1, 2}])),
]


@pytest.mark.parametrize(
    "make", [make for _, make in INVALID_FIXTURES], ids=[name for name, _ in INVALID_FIXTURES]
)
def test_malformed_fixtures_are_rejected_as_invalid_fixture(make: Callable[[], object]) -> None:
    assert_invalid_fixture(make())


class RaisingKey:
    """A key that hashes like ``schemaVersion`` and raises when compared."""

    def __hash__(self) -> int:
        return hash("schemaVersion")

    def __eq__(self, other: object) -> bool:
        raise Boom("compared")


IMPOSTOR_FIXTURES: list[object] = [
    {Impostor("schemaVersion"): 1, "responses": []},
    {"schemaVersion": 1, Impostor("responses"): []},
    with_responses([{Impostor("records"): []}]),
]


def test_hostile_key_whose_comparison_raises_is_invalid_fixture() -> None:
    assert_invalid_fixture({RaisingKey(): 1, "responses": []})


@pytest.mark.parametrize(
    "fixture", IMPOSTOR_FIXTURES, ids=["schemaVersion", "responses", "records"]
)
def test_non_str_key_cannot_impersonate_a_fixture_field(fixture: object) -> None:
    assert_invalid_fixture(fixture)


def test_invalid_fixture_error_has_no_record_metadata() -> None:
    with pytest.raises(FixtureProviderError) as caught:
        FixtureProviderAdapter(None)

    assert caught.value.record_index is None
    assert caught.value.provider_code is None
    assert caught.value.name == "FixtureProviderError"


# --- record processing: success paths -------------------------------------------------------


async def test_text_order_and_provider_tool_call_ids_are_preserved() -> None:
    records = [
        start("resp-zz"),
        text("one "),
        call("zeta-9", "lookup", {"q": "a"}),
        text("two "),
        call("ALPHA-1", "lookup", {"q": "b"}),
        text(""),
        end("resp-zz", "tool_call"),
    ]

    outcome = await run_records(records)

    zeta = ToolCall(id="zeta-9", name="lookup", arguments=JsonObject({"q": "a"}))
    alpha = ToolCall(id="ALPHA-1", name="lookup", arguments=JsonObject({"q": "b"}))
    assert outcome.chunks == [
        TextDeltaChunk(request_id=REQUEST_ID, delta="one "),
        ToolCallChunk(request_id=REQUEST_ID, tool_call=zeta),
        TextDeltaChunk(request_id=REQUEST_ID, delta="two "),
        ToolCallChunk(request_id=REQUEST_ID, tool_call=alpha),
        TextDeltaChunk(request_id=REQUEST_ID, delta=""),
    ]
    assert outcome.response is not None
    assert outcome.response.message.id == "message-resp-zz"
    assert outcome.response.message.content == (
        TextBlock(text="one "),
        zeta,
        TextBlock(text="two "),
        alpha,
        TextBlock(text=""),
    )


async def test_response_carries_the_active_request_id() -> None:
    adapter = FixtureProviderAdapter(document([start(), text("x"), end()]))

    chunks, response = await succeed(adapter.stream(make_request("request-042"), live_signal()))

    assert response.request_id == "request-042"
    assert all(chunk.request_id == "request-042" for chunk in chunks)


async def test_transport_records_may_carry_extra_fields() -> None:
    records = [
        changed(start(), model="fixture-1"),
        changed(text("hi"), index=0),
        changed(end(), extra={"ignored": True}),
    ]

    outcome = await run_records(records)

    assert outcome.response is not None
    assert outcome.response.message.content == (TextBlock(text="hi"),)


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        ({"inputTokens": 12, "outputTokens": 8}, (12, 8)),
        ({"input_tokens": 12, "output_tokens": 8}, (12, 8)),
        ({"inputTokens": 0, "outputTokens": 0}, (0, 0)),
        (
            {"inputTokens": MAX_SAFE_INTEGER, "output_tokens": MAX_SAFE_INTEGER},
            (MAX_SAFE_INTEGER,) * 2,
        ),
    ],
    ids=["camelCase", "snake_case", "zero", "max-safe-integer"],
)
async def test_usage_aliases_normalize_to_one_frozen_usage(
    usage: Record, expected: tuple[int, int]
) -> None:
    outcome = await run_records([start(), end(usage=usage)])

    assert outcome.response is not None
    assert outcome.response.usage == ModelUsage(input_tokens=expected[0], output_tokens=expected[1])


async def test_dangerous_argument_keys_stay_ordinary_keys() -> None:
    arguments = {
        "__proto__": {"polluted": True},
        "constructor": {"prototype": {"polluted": True}},
        "prototype": 1,
        "__class__": "str",
        "__dict__": {},
    }

    outcome = await run_records([start(), call(arguments=arguments), end(stop="tool_call")])

    assert outcome.response is not None
    block = outcome.response.message.content[0]
    assert isinstance(block, ToolCall)
    assert type(block.arguments) is JsonObject
    assert sorted(block.arguments) == sorted(arguments)
    assert block.arguments["__proto__"] == {"polluted": True}
    assert block.arguments["constructor"] == {"prototype": {"polluted": True}}
    assert block.arguments["__class__"] == "str"
    assert not hasattr(block.arguments, "polluted")
    assert not hasattr(JsonObject(), "polluted")


# --- record processing: every code, message and index ---------------------------------------


@dataclass(frozen=True)
class Case:
    name: str
    records: list[Any]
    code: str
    message: str
    index: int | None
    chunks: int = 0
    provider_code: str | None = None


def invalid(name: str, records: list[Any], message: str, index: int, chunks: int = 0) -> Case:
    return Case(name, records, "PROVIDER_INVALID_EVENT", message, index, chunks)


USAGE_COUNT = "response_end.usage token counts must be non-negative safe integers"

CASES: list[Case] = [
    Case(
        "unknown-type",
        [start(), {"type": "thinking"}],
        "PROVIDER_UNKNOWN_EVENT",
        'Unknown provider transport record type "thinking"',
        1,
    ),
    Case(
        "unknown-before-start",
        [{"type": "mystery"}],
        "PROVIDER_UNKNOWN_EVENT",
        'Unknown provider transport record type "mystery"',
        0,
    ),
    Case(
        "camel-case-discriminant",
        [start(), {"type": "textDelta", "text": "x"}],
        "PROVIDER_UNKNOWN_EVENT",
        'Unknown provider transport record type "textDelta"',
        1,
    ),
    invalid("record-int", [5], "Transport record[0] must be an object", 0),
    invalid("record-list", [start(), ["text_delta"]], "Transport record[1] must be an object", 1),
    invalid(
        "record-str",
        [start(), text("a"), "text_delta"],
        "Transport record[2] must be an object",
        2,
        chunks=1,
    ),
    invalid("record-null", [None], "Transport record[0] must be an object", 0),
    invalid("type-missing", [{"text": "x"}], "Transport record type must be a string", 0),
    invalid("type-int", [start(), {"type": 5}], "Transport record type must be a string", 1),
    invalid("type-empty", [{"type": ""}], "Transport record type must be a string", 0),
    invalid("type-blank", [{"type": " \t"}], "Transport record type must be a string", 0),
    invalid("type-null", [{"type": None}], "Transport record type must be a string", 0),
    invalid(
        "start-id-missing",
        [without(start(), "responseId")],
        "response_start.responseId must be a non-empty string",
        0,
    ),
    invalid(
        "start-id-empty", [start("")], "response_start.responseId must be a non-empty string", 0
    ),
    invalid("start-id-int", [start(7)], "response_start.responseId must be a non-empty string", 0),
    invalid(
        "start-role-missing",
        [without(start(), "role")],
        'response_start.role must be "assistant"',
        0,
    ),
    invalid(
        "start-role-user",
        [changed(start(), role="user")],
        'response_start.role must be "assistant"',
        0,
    ),
    invalid(
        "text-missing", [start(), {"type": "text_delta"}], "text_delta.text must be a string", 1
    ),
    invalid("text-int", [start(), text(42)], "text_delta.text must be a string", 1),
    invalid("text-null", [start(), text(None)], "text_delta.text must be a string", 1),
    invalid(
        "call-id-missing",
        [start(), without(call(), "id")],
        "tool_call.id must be a non-empty string",
        1,
    ),
    invalid("call-id-empty", [start(), call("")], "tool_call.id must be a non-empty string", 1),
    invalid("call-id-blank", [start(), call("  ")], "tool_call.id must be a non-empty string", 1),
    invalid("call-id-int", [start(), call(1)], "tool_call.id must be a non-empty string", 1),
    invalid(
        "call-name-missing",
        [start(), without(call(), "name")],
        "tool_call.name must be a non-empty string",
        1,
    ),
    invalid(
        "call-name-empty", [start(), call(name="")], "tool_call.name must be a non-empty string", 1
    ),
    invalid(
        "call-arguments-missing",
        [start(), without(call(), "arguments")],
        "tool_call.arguments must be a non-null JSON object",
        1,
    ),
    invalid(
        "call-arguments-null",
        [start(), changed(call(), arguments=None)],
        "tool_call.arguments must be a non-null JSON object",
        1,
    ),
    invalid(
        "call-arguments-array",
        [start(), call(arguments=[1, 2])],
        "tool_call.arguments must be a non-null JSON object",
        1,
    ),
    invalid(
        "call-arguments-str",
        [start(), call(arguments='{"left": 1}')],
        "tool_call.arguments must be a non-null JSON object",
        1,
    ),
    invalid(
        "call-arguments-int",
        [start(), call(arguments=3)],
        "tool_call.arguments must be a non-null JSON object",
        1,
    ),
    invalid(
        "call-id-duplicate",
        [start(), call("call-1"), call("call-1"), end(stop="tool_call")],
        'Tool-call ID "call-1" must be unique within a response',
        2,
        chunks=1,
    ),
    invalid(
        "end-id-missing",
        [start(), without(end(), "responseId")],
        "response_end.responseId must be a non-empty string",
        1,
    ),
    invalid(
        "end-id-empty", [start(), end("")], "response_end.responseId must be a non-empty string", 1
    ),
    invalid(
        "stop-missing",
        [start(), without(end(), "stopReason")],
        'response_end.stopReason must be "stop" or "tool_call"',
        1,
    ),
    invalid(
        "stop-course-spelling",
        [start(), call(), end(stop="toolCall")],
        'response_end.stopReason must be "stop" or "tool_call"',
        2,
        chunks=1,
    ),
    invalid(
        "stop-unknown",
        [start(), end(stop="length")],
        'response_end.stopReason must be "stop" or "tool_call"',
        1,
    ),
    invalid(
        "stop-null",
        [start(), changed(end(), stopReason=None)],
        'response_end.stopReason must be "stop" or "tool_call"',
        1,
    ),
    invalid(
        "usage-missing",
        [start(), without(end(), "usage")],
        "response_end.usage must be an object",
        1,
    ),
    invalid(
        "usage-null",
        [start(), changed(end(), usage=None)],
        "response_end.usage must be an object",
        1,
    ),
    invalid(
        "usage-array", [start(), end(usage=[12, 8])], "response_end.usage must be an object", 1
    ),
    invalid("usage-int", [start(), end(usage=20)], "response_end.usage must be an object", 1),
    invalid(
        "usage-duplicate-input",
        [start(), end(usage={"inputTokens": 1, "input_tokens": 1, "outputTokens": 1})],
        "response_end.usage must not mix duplicate token fields",
        1,
    ),
    invalid(
        "usage-duplicate-output",
        [start(), end(usage={"inputTokens": 1, "outputTokens": 1, "output_tokens": 2})],
        "response_end.usage must not mix duplicate token fields",
        1,
    ),
    invalid(
        "usage-duplicate-by-presence",
        [start(), end(usage={"inputTokens": None, "input_tokens": 1, "outputTokens": 1})],
        "response_end.usage must not mix duplicate token fields",
        1,
    ),
    invalid("usage-empty", [start(), end(usage={})], USAGE_COUNT, 1),
    invalid("usage-output-missing", [start(), end(usage={"inputTokens": 1})], USAGE_COUNT, 1),
    invalid(
        "usage-negative",
        [start(), end(usage={"inputTokens": -1, "outputTokens": 1})],
        USAGE_COUNT,
        1,
    ),
    invalid(
        "usage-unsafe",
        [start(), end(usage={"inputTokens": 1, "outputTokens": 2**53})],
        USAGE_COUNT,
        1,
    ),
    invalid(
        "usage-true", [start(), end(usage={"inputTokens": True, "outputTokens": 1})], USAGE_COUNT, 1
    ),
    invalid(
        "usage-false",
        [start(), end(usage={"input_tokens": 1, "output_tokens": False})],
        USAGE_COUNT,
        1,
    ),
    invalid(
        "usage-float", [start(), end(usage={"inputTokens": 1.0, "outputTokens": 1})], USAGE_COUNT, 1
    ),
    invalid(
        "usage-str", [start(), end(usage={"inputTokens": "1", "outputTokens": 1})], USAGE_COUNT, 1
    ),
    invalid(
        "usage-null-count",
        [start(), end(usage={"inputTokens": None, "outputTokens": 1})],
        USAGE_COUNT,
        1,
    ),
    invalid(
        "transport-error-code-missing",
        [without(transport_error(), "code")],
        "transport_error code and message must be non-empty strings",
        0,
    ),
    invalid(
        "transport-error-message-empty",
        [start(), transport_error(message="")],
        "transport_error code and message must be non-empty strings",
        1,
    ),
    invalid(
        "transport-error-code-int",
        [transport_error(code=429)],
        "transport_error code and message must be non-empty strings",
        0,
    ),
    Case(
        "text-before-start",
        [text("x")],
        "PROVIDER_MISSING_START",
        'Transport record "text_delta" appeared before response_start',
        0,
    ),
    Case(
        "call-before-start",
        [call(), start()],
        "PROVIDER_MISSING_START",
        'Transport record "tool_call" appeared before response_start',
        0,
    ),
    Case(
        "end-before-start",
        [end()],
        "PROVIDER_MISSING_START",
        'Transport record "response_end" appeared before response_start',
        0,
    ),
    Case(
        "second-start",
        [start(), text("a"), start("response-2")],
        "PROVIDER_DUPLICATE_START",
        "Fixture response contains more than one response_start record",
        2,
        chunks=1,
    ),
    Case(
        "no-records",
        [],
        "PROVIDER_MISSING_TERMINAL",
        "Fixture response ended without a response_end record",
        0,
    ),
    Case(
        "no-end",
        [start(), text("a"), text("b")],
        "PROVIDER_MISSING_TERMINAL",
        "Fixture response ended without a response_end record",
        3,
        chunks=2,
    ),
    Case(
        "second-end",
        [start(), end(), end()],
        "PROVIDER_DUPLICATE_TERMINAL",
        "Fixture response contains more than one response_end record",
        2,
    ),
    Case(
        "second-end-mismatched",
        [start(), end(), end("other", "tool_call", [])],
        "PROVIDER_DUPLICATE_TERMINAL",
        "Fixture response contains more than one response_end record",
        2,
    ),
    Case(
        "end-id-mismatch",
        [start("response-a"), text("x"), end("response-b")],
        "PROVIDER_RESPONSE_MISMATCH",
        'response_end ID "response-b" does not match response_start ID "response-a"',
        2,
        chunks=1,
    ),
    Case(
        "text-after-end",
        [start(), end(), text("late")],
        "PROVIDER_INVALID_TERMINAL",
        'Transport record "text_delta" appears after response_end',
        2,
    ),
    Case(
        "start-after-end",
        [start(), end(), start("response-2")],
        "PROVIDER_INVALID_TERMINAL",
        'Transport record "response_start" appears after response_end',
        2,
    ),
    Case(
        "unknown-after-end",
        [start(), end(), {"type": "thinking"}],
        "PROVIDER_INVALID_TERMINAL",
        'Transport record "thinking" appears after response_end',
        2,
    ),
    Case(
        "transport-error-after-end",
        [start(), end(), transport_error()],
        "PROVIDER_INVALID_TERMINAL",
        'Transport record "transport_error" appears after response_end',
        2,
    ),
    Case(
        "tool-call-terminal-without-calls",
        [start(), text("x"), end(stop="tool_call")],
        "PROVIDER_INVALID_TERMINAL",
        "A tool_call terminal must contain at least one Tool call",
        2,
        chunks=1,
    ),
    Case(
        "stop-terminal-with-calls",
        [start(), call(), end(stop="stop")],
        "PROVIDER_INVALID_TERMINAL",
        "A stop terminal must not contain Tool calls",
        2,
        chunks=1,
    ),
    Case(
        "transport-error",
        [start(), text("partial"), transport_error("rate_limited", "Slow down")],
        "PROVIDER_TRANSPORT_ERROR",
        "Slow down",
        2,
        chunks=1,
        provider_code="rate_limited",
    ),
    Case(
        "transport-error-before-start",
        [transport_error("overloaded", "Try later")],
        "PROVIDER_TRANSPORT_ERROR",
        "Try later",
        0,
        provider_code="overloaded",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
async def test_record_failures_have_stable_codes_messages_and_indexes(case: Case) -> None:
    outcome = await run_records(case.records)

    assert_provider_error(
        outcome.error,
        case.code,
        case.message,
        record_index=case.index,
        provider_code=case.provider_code,
    )
    assert len(outcome.chunks) == case.chunks
    assert all(type(chunk) in (TextDeltaChunk, ToolCallChunk) for chunk in outcome.chunks)


def test_every_one_of_the_twelve_codes_is_covered() -> None:
    covered = {case.code for case in CASES} | {
        "PROVIDER_INVALID_FIXTURE",  # construction and async sources, below
        "PROVIDER_EXHAUSTED",  # test_bundled_fixture_is_exhausted_after_two_calls
        "PROVIDER_ITERATOR_REUSED",  # async sources, below
    }
    declared = set(fixture_module.FixtureProviderErrorCode.__args__)

    assert covered == declared
    assert len(declared) == 12


def test_fixture_provider_error_fields_are_read_only() -> None:
    error: Any = FixtureProviderError(
        "PROVIDER_TRANSPORT_ERROR", "Slow down", record_index=3, provider_code="rate_limited"
    )

    assert (error.code, error.record_index, error.provider_code) == (
        "PROVIDER_TRANSPORT_ERROR",
        3,
        "rate_limited",
    )
    assert error.name == "FixtureProviderError"
    assert str(error) == "Slow down"
    for field in ("code", "record_index", "provider_code", "name"):
        with pytest.raises(AttributeError):
            setattr(error, field, "changed")


# --- queue, counters, cancellation ----------------------------------------------------------


async def test_exhausted_empty_adapter_counts_the_call() -> None:
    adapter = FixtureProviderAdapter({"schemaVersion": 1, "responses": []})

    _, error = await fail(adapter.stream(make_request("request-009"), live_signal()))

    assert_provider_error(
        error, "PROVIDER_EXHAUSTED", 'No fixture response remains for request "request-009"'
    )
    assert adapter.call_count == 1


async def test_a_failed_response_is_consumed() -> None:
    adapter = FixtureProviderAdapter(document([{"type": "bogus"}], [start(), end()]))

    await fail(adapter.stream(make_request(), live_signal()))
    _, response = await succeed(adapter.stream(make_request(), live_signal()))

    assert response.id == "response-1"
    assert adapter.pending_response_count == 0


@pytest.mark.parametrize(
    "reason", [Boom("stop"), "string reason", None], ids=["exception", "string", "default"]
)
async def test_pre_cancelled_call_counts_but_keeps_the_queued_response(reason: object) -> None:
    adapter = FixtureProviderAdapter.from_path(FIXTURE_PATH)

    chunks, error = await fail(adapter.stream(make_request(), aborted_signal(reason)))

    assert chunks == []
    if isinstance(reason, BaseException):
        assert error is reason
    else:
        assert type(error) is AbortError
        assert error.reason == reason
    assert adapter.call_count == 1
    assert adapter.pending_response_count == 2
    _, response = await succeed(adapter.stream(make_request(), live_signal()))
    assert response.id == "response-tool-001"


@pytest.mark.parametrize(
    ("request_value", "signal_value"),
    [("request-001", "live"), (None, "live"), ("request", None)],
    ids=["request-is-a-string", "request-is-none", "signal-is-none"],
)
async def test_invalid_arguments_raise_before_the_call_is_counted(
    request_value: object, signal_value: object
) -> None:
    adapter = FixtureProviderAdapter.from_path(FIXTURE_PATH)
    request: Any = make_request() if request_value == "request" else request_value
    signal: Any = live_signal() if signal_value == "live" else signal_value

    with pytest.raises(TypeError):
        adapter.stream(request, signal)

    assert adapter.call_count == 0
    assert adapter.pending_response_count == 2


async def test_abort_from_a_consumer_after_a_chunk_stops_an_async_source() -> None:
    controller = AbortController()
    source = GatedSource([start(), text("a"), text("b"), end()])
    adapter = FixtureProviderAdapter(document(source))
    stream = adapter.stream(make_request(), controller.signal)
    iterator = aiter(stream)

    first = await anext(iterator)
    controller.abort(Boom("seen enough"))
    await settle(stream)
    with pytest.raises(Boom):
        await anext(iterator)
    with pytest.raises(Boom):
        await stream.result

    assert first == TextDeltaChunk(request_id=REQUEST_ID, delta="a")


# --- async record sources -------------------------------------------------------------------


class GatedSource:
    """An async iterable (``__aiter__`` returns itself) that hands out records one per step."""

    def __init__(self, records: list[Any]) -> None:
        self.records = list(records)
        self.steps = 0
        self.closed = 0

    def __aiter__(self) -> GatedSource:
        return self

    async def __anext__(self) -> Any:
        await asyncio.sleep(0)
        if self.steps >= len(self.records):
            raise StopAsyncIteration
        record = self.records[self.steps]
        self.steps += 1
        return record

    async def aclose(self) -> None:
        self.closed += 1


class FreshSource:
    """An async iterable that opens a new iterator on every ``__aiter__`` call."""

    def __init__(self, records: list[Any]) -> None:
        self.records = records
        self.opened = 0

    def __aiter__(self) -> GatedSource:
        self.opened += 1
        return GatedSource(self.records)


async def generator_source(
    records: list[Any], finished: list[str] | None = None
) -> AsyncIterator[Any]:
    try:
        for record in records:
            yield record
    finally:
        if finished is not None:
            finished.append("finally")


async def test_async_generator_source_streams_records_in_order() -> None:
    records = [start(), text("a"), text("b"), call("c-1"), end(stop="tool_call")]
    adapter = FixtureProviderAdapter(document(generator_source(records)))

    chunks, response = await succeed(adapter.stream(make_request(), live_signal()))

    assert [type(chunk).__name__ for chunk in chunks] == [
        "TextDeltaChunk",
        "TextDeltaChunk",
        "ToolCallChunk",
    ]
    assert chunks[1] == TextDeltaChunk(request_id=REQUEST_ID, delta="b")
    assert response.stop_reason == "toolCall"


async def test_custom_async_iterable_source_streams_records_in_order() -> None:
    source = GatedSource([start(), text("x"), text("y"), end()])
    adapter = FixtureProviderAdapter(document(source))

    chunks, response = await succeed(adapter.stream(make_request(), live_signal()))

    assert [chunk for chunk in chunks if isinstance(chunk, TextDeltaChunk)] == [
        TextDeltaChunk(request_id=REQUEST_ID, delta="x"),
        TextDeltaChunk(request_id=REQUEST_ID, delta="y"),
    ]
    assert response.message.content == (TextBlock(text="x"), TextBlock(text="y"))
    assert source.closed == 0


async def test_async_source_is_opened_lazily_once_per_consuming_call() -> None:
    source = FreshSource([start(), text("again"), end()])
    adapter = FixtureProviderAdapter(document(source, source))
    assert source.opened == 0

    await fail(adapter.stream(make_request(), aborted_signal()))
    assert source.opened == 0
    await succeed(adapter.stream(make_request(), live_signal()))
    await succeed(adapter.stream(make_request(), live_signal()))

    assert source.opened == 2


async def test_async_source_missing_response_end_is_missing_terminal() -> None:
    adapter = FixtureProviderAdapter(document(generator_source([start(), text("a")])))

    chunks, error = await fail(adapter.stream(make_request(), live_signal()))

    assert len(chunks) == 1
    assert_provider_error(
        error,
        "PROVIDER_MISSING_TERMINAL",
        "Fixture response ended without a response_end record",
        record_index=2,
    )


def failing_source(error: BaseException) -> AsyncIterator[Any]:
    async def source() -> AsyncIterator[Any]:
        yield start()
        yield text("partial")
        raise error

    return source()


FORGED_ERRORS: list[tuple[str, Callable[[], Exception]]] = [
    ("value-error", lambda: ValueError("bad")),
    ("key-error", lambda: KeyError("records")),
    ("type-error", lambda: TypeError("bad type")),
    ("runtime-error", lambda: RuntimeError("bad")),
    ("abort-error", lambda: AbortError()),
    (
        "forged-transport-error",
        lambda: FixtureProviderError(
            "PROVIDER_TRANSPORT_ERROR", "forged", record_index=1, provider_code="forged"
        ),
    ),
    ("forged-exhausted", lambda: FixtureProviderError("PROVIDER_EXHAUSTED", "forged")),
    (
        "forged-invalid-fixture",
        lambda: FixtureProviderError("PROVIDER_INVALID_FIXTURE", SOURCE_FAILED, record_index=7),
    ),
]


@pytest.mark.parametrize(
    "make_error", [make for _, make in FORGED_ERRORS], ids=[name for name, _ in FORGED_ERRORS]
)
async def test_any_exception_from_a_source_becomes_source_failed(
    make_error: Callable[[], Exception],
) -> None:
    raised = make_error()
    adapter = FixtureProviderAdapter(document(failing_source(raised)))

    chunks, error = await fail(adapter.stream(make_request(), live_signal()))

    assert chunks == [TextDeltaChunk(request_id=REQUEST_ID, delta="partial")]
    assert error is not raised
    assert_provider_error(error, "PROVIDER_INVALID_FIXTURE", SOURCE_FAILED)


async def test_source_whose_anext_raises_synchronously_is_source_failed() -> None:
    class SyncFailing:
        def __aiter__(self) -> SyncFailing:
            return self

        def __anext__(self) -> Any:
            raise Boom("synchronous")

    adapter = FixtureProviderAdapter(document(SyncFailing()))

    _, error = await fail(adapter.stream(make_request(), live_signal()))

    assert_provider_error(error, "PROVIDER_INVALID_FIXTURE", SOURCE_FAILED)


async def test_source_whose_anext_returns_a_non_awaitable_is_source_failed() -> None:
    class NotAwaitable:
        def __aiter__(self) -> NotAwaitable:
            return self

        def __anext__(self) -> Any:
            return start()

    adapter = FixtureProviderAdapter(document(NotAwaitable()))

    _, error = await fail(adapter.stream(make_request(), live_signal()))

    assert_provider_error(error, "PROVIDER_INVALID_FIXTURE", SOURCE_FAILED)


async def test_bare_base_exception_from_a_source_settles_without_loop_errors() -> None:
    interrupt = Interrupt()
    adapter = FixtureProviderAdapter(document(failing_source(interrupt)))

    _, error = await fail(adapter.stream(make_request(), live_signal()))

    assert error is interrupt


class OpenFails:
    def __aiter__(self) -> Any:
        raise Boom("cannot open")


class OpensNone:
    def __aiter__(self) -> Any:
        return None


class OpensInt:
    def __aiter__(self) -> Any:
        return 42


class NoNextIterator:
    def __init__(self) -> None:
        self.closed = 0

    async def aclose(self) -> None:
        self.closed += 1


class NonCallableNextIterator(NoNextIterator):
    __anext__ = 5


class HidesNext(type):
    def __getattribute__(cls, name: str) -> Any:
        if name == "__anext__":
            raise Boom("no peeking")
        return super().__getattribute__(name)


class HostileNextIterator(NoNextIterator, metaclass=HidesNext):
    pass


class Opens:
    def __init__(self, iterator: object) -> None:
        self.iterator = iterator

    def __aiter__(self) -> Any:
        return self.iterator


@pytest.mark.parametrize(
    ("make_source", "message"),
    [
        (OpenFails, "Async fixture record source could not be opened"),
        (OpensNone, "Async fixture record source returned no iterator"),
        (OpensInt, "Async fixture record source returned no iterator"),
        (lambda: Opens(NoNextIterator()), "Async fixture iterator must expose next()"),
        (lambda: Opens(NonCallableNextIterator()), "Async fixture iterator must expose next()"),
        (lambda: Opens(object()), "Async fixture iterator must expose next()"),
        (
            lambda: Opens(HostileNextIterator()),
            "Async fixture iterator next() could not be inspected",
        ),
    ],
    ids=[
        "aiter-raises",
        "aiter-returns-none",
        "aiter-returns-int",
        "no-anext",
        "anext-not-callable",
        "plain-object",
        "anext-lookup-raises",
    ],
)
async def test_unusable_async_sources_are_invalid_fixture(
    make_source: Callable[[], object], message: str
) -> None:
    adapter = FixtureProviderAdapter(document(make_source()))

    chunks, error = await fail(adapter.stream(make_request(), live_signal()))

    assert chunks == []
    assert_provider_error(error, "PROVIDER_INVALID_FIXTURE", message)
    assert adapter.call_count == 1


@pytest.mark.parametrize(
    "make_iterator",
    [NoNextIterator, NonCallableNextIterator, HostileNextIterator],
    ids=["no-anext", "anext-not-callable", "anext-lookup-raises"],
)
async def test_iterator_without_usable_next_is_closed_quietly(
    make_iterator: Callable[[], NoNextIterator],
) -> None:
    iterator = make_iterator()
    adapter = FixtureProviderAdapter(document(Opens(iterator)))

    await fail(adapter.stream(make_request(), live_signal()))
    await turns()

    assert iterator.closed == 1


async def test_same_async_source_in_two_responses_is_iterator_reused() -> None:
    source = generator_source([start(), text("once"), end()])
    adapter = FixtureProviderAdapter(document(source, source))

    await succeed(adapter.stream(make_request(), live_signal()))
    _, error = await fail(adapter.stream(make_request(), live_signal()))

    assert_provider_error(
        error, "PROVIDER_ITERATOR_REUSED", "An async fixture iterator may be consumed once"
    )


async def test_same_custom_source_across_two_adapters_is_iterator_reused() -> None:
    source = GatedSource([start(), end()])
    first = FixtureProviderAdapter(document(source))
    second = FixtureProviderAdapter(document(source))

    await succeed(first.stream(make_request(), live_signal()))
    _, error = await fail(second.stream(make_request(), live_signal()))

    assert_provider_error(
        error, "PROVIDER_ITERATOR_REUSED", "An async fixture iterator may be consumed once"
    )


async def test_source_yielding_a_non_json_record_is_invalid_event_and_closed() -> None:
    finished: list[str] = []
    records = [start(), {"type": "text_delta", "text": {"a", "b"}}, text("never"), end()]
    adapter = FixtureProviderAdapter(document(generator_source(records, finished)))

    _, error = await fail(adapter.stream(make_request(), live_signal()))

    assert_provider_error(
        error,
        "PROVIDER_INVALID_EVENT",
        "Transport record[1] could not be inspected safely",
        record_index=1,
    )
    assert finished == ["finally"]


async def test_source_yielding_a_non_object_record_is_invalid_event() -> None:
    adapter = FixtureProviderAdapter(document(generator_source([start(), "text_delta"])))

    _, error = await fail(adapter.stream(make_request(), live_signal()))

    assert_provider_error(
        error, "PROVIDER_INVALID_EVENT", "Transport record[1] must be an object", record_index=1
    )


@pytest.mark.parametrize(
    "records",
    [
        [start(), {"type": "bogus"}, text("never"), end()],
        [start(), end(), text("after the end"), text("never")],
        [start(), text("a"), transport_error(), text("never")],
    ],
    ids=["unknown-record", "record-after-end", "transport-error"],
)
async def test_generator_source_abandoned_early_is_closed(records: list[Any]) -> None:
    finished: list[str] = []
    adapter = FixtureProviderAdapter(document(generator_source(records, finished)))

    _, error = await fail(adapter.stream(make_request(), live_signal()))

    assert type(error) is FixtureProviderError
    assert finished == ["finally"]


async def test_custom_source_abandoned_early_is_closed() -> None:
    source = GatedSource([start(), {"type": "bogus"}, text("never"), end()])
    adapter = FixtureProviderAdapter(document(source))

    _, error = await fail(adapter.stream(make_request(), live_signal()))
    await turns()

    assert_provider_error(
        error,
        "PROVIDER_UNKNOWN_EVENT",
        'Unknown provider transport record type "bogus"',
        record_index=1,
    )
    assert source.closed == 1
    assert source.steps == 2


async def test_close_failure_never_replaces_the_primary_outcome() -> None:
    async def source() -> AsyncIterator[Any]:
        try:
            yield start()
            yield {"type": "bogus"}
        finally:
            raise Boom("cleanup failed")

    adapter = FixtureProviderAdapter(document(source()))

    _, error = await fail(adapter.stream(make_request(), live_signal()))

    assert_provider_error(error, "PROVIDER_UNKNOWN_EVENT", record_index=1)


class BlockedSource:
    """A custom source whose second step waits for an event nobody sets."""

    def __init__(self, *, close_error: BaseException | None = None) -> None:
        loop = asyncio.get_running_loop()
        self.parked: asyncio.Future[None] = loop.create_future()
        self.never = asyncio.Event()
        self.steps = 0
        self.step_finally = 0
        self.closed = 0
        self.close_error = close_error

    def __aiter__(self) -> BlockedSource:
        return self

    async def __anext__(self) -> Any:
        self.steps += 1
        if self.steps == 1:
            return start()
        try:
            self.parked.set_result(None)
            await self.never.wait()
            return end()
        finally:
            self.step_finally += 1

    async def aclose(self) -> None:
        self.closed += 1
        if self.close_error is not None:
            raise self.close_error


async def test_abort_while_a_generator_source_is_pending_rejects_at_once() -> None:
    controller = AbortController()
    parked = asyncio.get_running_loop().create_future()
    finished = asyncio.get_running_loop().create_future()
    never = asyncio.Event()

    async def source() -> AsyncIterator[Any]:
        try:
            yield start()
            yield text("before the block")
            parked.set_result(None)
            await never.wait()
            yield end()
        finally:
            finished.set_result("finally")

    adapter = FixtureProviderAdapter(document(source()))
    stream = adapter.stream(make_request(), controller.signal)
    await parked
    await turns()
    assert not stream.settled

    reason = Boom("cancelled by the user")
    controller.abort(reason)
    await settle(stream)
    chunks, error = await fail(stream)

    assert error is reason
    assert chunks == [TextDeltaChunk(request_id=REQUEST_ID, delta="before the block")]
    assert await finished == "finally"
    assert not never.is_set()


@pytest.mark.parametrize(
    "close_error", [None, Boom("aclose failed")], ids=["quiet-close", "failing-close"]
)
async def test_abort_while_a_custom_source_is_pending_closes_it_quietly(
    close_error: BaseException | None,
) -> None:
    controller = AbortController()
    source = BlockedSource(close_error=close_error)
    adapter = FixtureProviderAdapter(document(source))
    stream = adapter.stream(make_request(), controller.signal)
    await source.parked

    controller.abort("string reason")
    await settle(stream)
    _, error = await fail(stream)
    await turns()

    assert type(error) is AbortError
    assert error.reason == "string reason"
    assert source.step_finally == 1
    assert source.closed == 1


# --- no network -----------------------------------------------------------------------------

NETWORK_MODULES = {"socket", "ssl", "http", "urllib", "requests", "httpx", "aiohttp", "websockets"}


def imported_roots(source: str) -> set[str]:
    roots: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module is not None and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


def test_adapter_module_imports_nothing_network_capable() -> None:
    source = inspect.getsource(fixture_module)
    roots = imported_roots(source)

    assert roots, "the import scan found nothing; it is not reading the module"
    assert not roots & NETWORK_MODULES
    assert "__import__" not in source
    assert "importlib" not in source
    assert "fetch" not in source.lower()
    assert "websocket" not in source.lower()
    assert "cast(" not in source


def test_import_scan_detects_network_imports() -> None:
    sample = "import socket\nfrom urllib.request import urlopen\nimport http.client as h\n"

    assert imported_roots(sample) >= {"socket", "urllib", "http"}


async def test_round_trip_works_with_sockets_disabled(monkeypatch: pytest.MonkeyPatch) -> None:
    attempts: list[str] = []

    def refuse(name: str) -> Callable[..., Any]:
        def refused(*args: object, **kwargs: object) -> Any:
            attempts.append(name)
            raise AssertionError(f"network access attempted: socket.{name}")

        return refused

    # Patched inside the test: the event loop already owns its self-pipe sockets.
    for name in ("socket", "create_connection", "getaddrinfo", "socketpair"):
        monkeypatch.setattr(socket, name, refuse(name))

    await assert_round_trip(FixtureProviderAdapter.from_path(FIXTURE_PATH))
    await assert_round_trip(FixtureProviderAdapter(copy.deepcopy(load_bundled())))

    assert attempts == []


# --- from_json: the adapter parses (and owns) the text -----------------------------------------


async def test_from_json_round_trip_matches_the_dict_constructor() -> None:
    text = FIXTURE_PATH.read_text(encoding="utf-8")
    from_text = FixtureProviderAdapter.from_json(text)
    from_dict = FixtureProviderAdapter(json.loads(text))
    signal = AbortController().signal
    for number in (1, 2):
        request = ModelRequest(id=f"request-00{number}", messages=())
        left = from_text.stream(request, signal)
        right = from_dict.stream(request, signal)
        assert [chunk async for chunk in left] == [chunk async for chunk in right]
        assert await left.result == await right.result


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        '{"schemaVersion": 1, "responses": [{"records": [NaN]}]}',
        '{"schemaVersion": 1, "responses": [{"records": [Infinity]}]}',
        '{"schemaVersion": 2, "responses": []}',
        '{"schemaVersion": 1, "responses": {}}',
        "[" * 100_000,
    ],
)
def test_from_json_rejects_bad_text_as_an_invalid_fixture(text: str) -> None:
    with pytest.raises(FixtureProviderError) as caught:
        FixtureProviderAdapter.from_json(text)
    assert caught.value.code == "PROVIDER_INVALID_FIXTURE"
    assert str(caught.value) == "Fixture could not be inspected safely"


async def test_from_json_checks_tool_arguments_when_the_record_is_streamed() -> None:
    deep: object = 0
    for _ in range(200):
        deep = [deep]
    records = [
        {"type": "response_start", "responseId": "r", "role": "assistant"},
        {"type": "tool_call", "id": "c", "name": "add", "arguments": {"nested": deep}},
        {
            "type": "response_end",
            "responseId": "r",
            "stopReason": "tool_call",
            "usage": {"inputTokens": 1, "outputTokens": 1},
        },
    ]
    text = json.dumps({"schemaVersion": 1, "responses": [{"records": records}]})
    adapter = FixtureProviderAdapter.from_json(text)
    stream = adapter.stream(ModelRequest(id="request-001", messages=()), AbortController().signal)
    with pytest.raises(FixtureProviderError) as caught:
        await stream.result
    assert caught.value.code == "PROVIDER_INVALID_EVENT"
    assert caught.value.record_index == 1


async def test_from_json_arguments_are_frozen_json_objects() -> None:
    text = FIXTURE_PATH.read_text(encoding="utf-8")
    adapter = FixtureProviderAdapter.from_json(text.encode("utf-8"))
    stream = adapter.stream(ModelRequest(id="request-001", messages=()), AbortController().signal)
    response = await stream.result
    (call,) = response.message.content
    assert isinstance(call, ToolCall)
    assert type(call.arguments) is JsonObject
    assert call.arguments == {"left": 20, "right": 22}


# --- loading: what a path is, size and count caps, one text encoding --------------------------

MAX_FIXTURE_BYTES = 16 * 1024 * 1024
MAX_FIXTURE_RESPONSES = 10_000
MAX_FIXTURE_RECORDS_PER_RESPONSE = 100_000
SMALL_FIXTURE = json.dumps(document([start(), text("é \ud800 😀"), end()]))
"""A small valid fixture, pure ASCII: its text holds a lone surrogate as a JSON escape."""


def test_the_loading_caps_are_documented_module_constants() -> None:
    assert fixture_module.MAX_FIXTURE_BYTES == MAX_FIXTURE_BYTES
    assert fixture_module.MAX_FIXTURE_RESPONSES == MAX_FIXTURE_RESPONSES
    assert fixture_module.MAX_FIXTURE_RECORDS_PER_RESPONSE == MAX_FIXTURE_RECORDS_PER_RESPONSE
    documented = fixture_module.__doc__ or ""
    for name in ("MAX_FIXTURE_BYTES", "MAX_FIXTURE_RESPONSES", "MAX_FIXTURE_RECORDS_PER_RESPONSE"):
        assert name in documented


@pytest.mark.parametrize("path", [None, 1.5, b"fixture.json", ["fixture.json"], object()], ids=repr)
def test_from_path_takes_only_str_or_path_like(path: object) -> None:
    with pytest.raises(TypeError, match=r"str or os\.PathLike"):
        FixtureProviderAdapter.from_path(path)  # pyright: ignore[reportArgumentType]


FILE_DESCRIPTOR_PROBE = """
import json, os, sys
from tether import FixtureProviderAdapter
outcomes = {}
for value in (True, False, 0, 1, 2):
    try:
        FixtureProviderAdapter.from_path(value)
    except TypeError as error:
        outcomes[repr(value)] = "TypeError"
    except Exception as error:
        outcomes[repr(value)] = f"{type(error).__name__} {getattr(error, 'code', '')}"
    else:
        outcomes[repr(value)] = "loaded"
for fd in (0, 1, 2):
    os.fstat(fd)  # still open
sys.stdout.write(json.dumps(outcomes))
"""


@pytest.mark.slow
def test_from_path_never_opens_a_file_descriptor_given_as_a_bool_or_int() -> None:
    # In a subprocess: before the fix, from_path(True) read and then closed this very stdout.
    completed = subprocess.run(
        [sys.executable, "-c", FILE_DESCRIPTOR_PROBE],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )

    assert completed.returncode == 0, completed.stderr
    assert json.loads(completed.stdout) == dict.fromkeys(
        ["True", "False", "0", "1", "2"], "TypeError"
    )


def padded(size: int) -> bytes:
    """A valid fixture of exactly ``size`` bytes (JSON padded with trailing spaces)."""
    body = SMALL_FIXTURE.encode("utf-8")
    return body + b" " * (size - len(body))


def test_from_path_accepts_a_fixture_of_exactly_the_size_cap(tmp_path: Path) -> None:
    path = tmp_path / "fixture.json"
    path.write_bytes(padded(MAX_FIXTURE_BYTES))

    assert FixtureProviderAdapter.from_path(path).pending_response_count == 1


def test_from_path_rejects_a_fixture_one_byte_over_the_size_cap(tmp_path: Path) -> None:
    path = tmp_path / "fixture.json"
    path.write_bytes(padded(MAX_FIXTURE_BYTES + 1))

    with pytest.raises(FixtureProviderError) as caught:
        FixtureProviderAdapter.from_path(path)

    assert_provider_error(caught.value, "PROVIDER_INVALID_FIXTURE", INVALID_FIXTURE)
    assert "MAX_FIXTURE_BYTES" in str(caught.value.__cause__)


@pytest.mark.parametrize("as_bytes", [False, True], ids=["str", "bytes"])
def test_from_json_applies_the_same_size_cap(as_bytes: bool) -> None:
    at_cap, over_cap = padded(MAX_FIXTURE_BYTES), padded(MAX_FIXTURE_BYTES + 1)

    accepted = FixtureProviderAdapter.from_json(at_cap if as_bytes else at_cap.decode())
    with pytest.raises(FixtureProviderError) as caught:
        FixtureProviderAdapter.from_json(over_cap if as_bytes else over_cap.decode())

    assert accepted.pending_response_count == 1
    assert_provider_error(caught.value, "PROVIDER_INVALID_FIXTURE", INVALID_FIXTURE)


def test_a_str_is_measured_by_its_utf8_length() -> None:
    wide_text = "é" * (MAX_FIXTURE_BYTES // 2 + 1)  # 2 bytes each in UTF-8
    wide = json.dumps(document([start(), text(wide_text), end()]), ensure_ascii=False)
    assert len(wide) < MAX_FIXTURE_BYTES < len(wide.encode("utf-8"))

    with pytest.raises(FixtureProviderError) as caught:
        FixtureProviderAdapter.from_json(wide)

    assert caught.value.code == "PROVIDER_INVALID_FIXTURE"


EMPTY_RECORD: Record = {}
NO_RECORDS: list[Record] = []


def many_records(count: int) -> list[Record]:
    """``count`` records making one valid response: start, text deltas, end."""
    return [start(), *[text("x")] * (count - 2), end()]


async def test_a_response_of_exactly_the_record_cap_is_accepted() -> None:
    records = many_records(MAX_FIXTURE_RECORDS_PER_RESPONSE)
    adapter = FixtureProviderAdapter.from_json(json.dumps(document(records)))

    response = await adapter.stream(make_request(), live_signal()).result

    assert len(response.message.content) == MAX_FIXTURE_RECORDS_PER_RESPONSE - 2


def test_a_response_over_the_record_cap_is_an_invalid_fixture() -> None:
    text_form = json.dumps(document(many_records(MAX_FIXTURE_RECORDS_PER_RESPONSE + 1)))

    with pytest.raises(FixtureProviderError) as caught:
        FixtureProviderAdapter.from_json(text_form)

    assert_provider_error(caught.value, "PROVIDER_INVALID_FIXTURE", INVALID_FIXTURE)
    assert "MAX_FIXTURE_RECORDS_PER_RESPONSE" in str(caught.value.__cause__)


def test_a_million_record_response_fails_at_construction_without_being_snapshotted() -> None:
    # One shared record object a million times: before the cap every one was deep-copied,
    # and later replayed in full before the loop's 1,024-chunk limit could apply.
    assert_invalid_fixture(document(many_records(1_000_000)))
    with pytest.raises(FixtureProviderError) as caught:
        FixtureProviderAdapter.from_json(json.dumps(document([EMPTY_RECORD] * 1_000_000)))
    assert caught.value.code == "PROVIDER_INVALID_FIXTURE"


def test_the_response_cap_applies_to_dicts_and_text() -> None:
    at_cap = document(*[NO_RECORDS] * MAX_FIXTURE_RESPONSES)
    over_cap = document(*[NO_RECORDS] * (MAX_FIXTURE_RESPONSES + 1))

    assert FixtureProviderAdapter(at_cap).pending_response_count == MAX_FIXTURE_RESPONSES
    assert (
        FixtureProviderAdapter.from_json(json.dumps(at_cap)).pending_response_count
        == MAX_FIXTURE_RESPONSES
    )
    assert_invalid_fixture(over_cap)
    with pytest.raises(FixtureProviderError) as caught:
        FixtureProviderAdapter.from_json(json.dumps(over_cap))
    assert "MAX_FIXTURE_RESPONSES" in str(caught.value.__cause__)


def load_via(entry: str, data: bytes, tmp_path: Path) -> FixtureProviderAdapter:
    """Load ``data`` through one entry point (a ``str`` is decoded leniently so that
    every byte sequence has a text form to hand to ``from_json(str)``)."""
    if entry == "from_path":
        path = tmp_path / "fixture.json"
        path.write_bytes(data)
        return FixtureProviderAdapter.from_path(path)
    if entry == "from_json(bytes)":
        return FixtureProviderAdapter.from_json(data)
    return FixtureProviderAdapter.from_json(data.decode("utf-8", "surrogatepass"))


ENTRY_POINTS = ["from_path", "from_json(bytes)", "from_json(str)"]


@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_every_entry_point_accepts_utf8_without_a_bom(entry: str, tmp_path: Path) -> None:
    adapter = load_via(entry, SMALL_FIXTURE.encode("utf-8"), tmp_path)

    assert adapter.pending_response_count == 1


@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_every_entry_point_rejects_a_utf8_bom(entry: str, tmp_path: Path) -> None:
    with pytest.raises(FixtureProviderError) as caught:
        load_via(entry, SMALL_FIXTURE.encode("utf-8-sig"), tmp_path)

    assert_provider_error(caught.value, "PROVIDER_INVALID_FIXTURE", INVALID_FIXTURE)


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le"])
@pytest.mark.parametrize("entry", ["from_path", "from_json(bytes)"])
def test_byte_entry_points_reject_utf16_and_utf32(
    entry: str, encoding: str, tmp_path: Path
) -> None:
    with pytest.raises(FixtureProviderError) as caught:
        load_via(entry, SMALL_FIXTURE.encode(encoding), tmp_path)

    assert_provider_error(caught.value, "PROVIDER_INVALID_FIXTURE", INVALID_FIXTURE)


@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_every_entry_point_rejects_a_lone_surrogate_that_is_not_an_escape(
    entry: str, tmp_path: Path
) -> None:
    # "\\ud800" spelled as a JSON escape is fine (SMALL_FIXTURE has one); the code point
    # itself is not text UTF-8 can carry, so no entry point accepts it.
    raw = json.dumps(document([start(), text("\ud800"), end()]), ensure_ascii=False)

    with pytest.raises(FixtureProviderError) as caught:
        load_via(entry, raw.encode("utf-8", "surrogatepass"), tmp_path)

    assert_provider_error(caught.value, "PROVIDER_INVALID_FIXTURE", INVALID_FIXTURE)


def test_from_json_takes_a_bytearray_like_bytes() -> None:
    adapter = FixtureProviderAdapter.from_json(bytearray(SMALL_FIXTURE.encode("utf-8")))

    assert adapter.pending_response_count == 1


@pytest.mark.parametrize("text_form", [42, None, memoryview(b"{}")], ids=repr)
def test_from_json_text_must_be_str_or_bytes(text_form: object) -> None:
    with pytest.raises(FixtureProviderError) as caught:
        FixtureProviderAdapter.from_json(text_form)  # pyright: ignore[reportArgumentType]

    assert_provider_error(caught.value, "PROVIDER_INVALID_FIXTURE", INVALID_FIXTURE)


# --- the usage of response_end: built by the trusted builder after the parser's own checks ---

_TOKEN_COUNTS = st.one_of(
    st.integers(min_value=-2, max_value=2**53 + 1),
    st.booleans(),
    st.floats(allow_nan=False, max_value=10, min_value=-1),
    st.text(max_size=2),
    st.none(),
)


@given(
    usage=st.dictionaries(
        st.sampled_from(["inputTokens", "outputTokens", "input_tokens", "output_tokens"]),
        _TOKEN_COUNTS,
    )
)
def test_the_parsed_usage_is_the_public_constructors_usage(usage: dict[str, Any]) -> None:
    from tether.providers.fixture import _records

    parsed: object
    try:
        parsed = _records._usage(usage, 0)  # pyright: ignore[reportPrivateUsage]
    except FixtureProviderError as error:
        parsed = error.code
    pairs = (("inputTokens", "input_tokens"), ("outputTokens", "output_tokens"))
    mixed = any(camel in usage and snake in usage for camel, snake in pairs)
    missing = any(camel not in usage and snake not in usage for camel, snake in pairs)
    if mixed or missing:
        assert parsed == "PROVIDER_INVALID_EVENT"
        return
    counts = [usage[camel] if camel in usage else usage[snake] for camel, snake in pairs]
    if parsed == "PROVIDER_INVALID_EVENT":  # only counts the public constructor refuses
        with pytest.raises((TypeError, ValueError)):
            ModelUsage(input_tokens=counts[0], output_tokens=counts[1])
        return
    public = ModelUsage(input_tokens=counts[0], output_tokens=counts[1])
    assert type(parsed) is ModelUsage
    assert parsed == public


# --- the fast paths against the plain ones ------------------------------------------------

_ODD_STRINGS: st.SearchStrategy[Any] = st.sampled_from(
    ["", " ", "\u3000", "call-1", "call-2", "add", "x"]
)
_PLAIN_SCALARS: st.SearchStrategy[Any] = st.none() | st.booleans() | st.text(max_size=3)
_PLAIN_NUMBERS: st.SearchStrategy[Any] = st.integers(-(2**60), 2**60) | st.floats()


def _plain_containers(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Arrays and objects of ``inner``, as ``json.loads`` makes them (lists, dicts)."""
    return st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=2), inner, max_size=3)


_PLAIN_JSON: st.SearchStrategy[Any] = st.recursive(
    _PLAIN_SCALARS | _PLAIN_NUMBERS, _plain_containers, max_leaves=8
)
_ODD_VALUES: st.SearchStrategy[Any] = st.one_of(
    _PLAIN_JSON,
    st.tuples(st.integers()),
    st.sets(st.integers(), max_size=2),
    st.dictionaries(st.integers(), st.integers(), min_size=1, max_size=2),
    st.builds(MappingProxyType, st.dictionaries(st.text(max_size=2), st.integers(), max_size=2)),
)
_ARGUMENTS: st.SearchStrategy[Any] = st.one_of(
    st.dictionaries(st.text(max_size=3), _PLAIN_JSON, max_size=4),
    st.dictionaries(st.text(max_size=3), _ODD_VALUES, max_size=3),
    _ODD_VALUES,
)
_RECORDS: st.SearchStrategy[Any] = st.one_of(
    st.builds(start, st.sampled_from(["response-1", "response-2", "", 7])),
    st.builds(text, st.one_of(st.text(max_size=3), st.integers(), st.none())),
    st.builds(text, st.just("common")),
    st.builds(call, _ODD_STRINGS, _ODD_STRINGS, _ARGUMENTS),
    st.builds(call, st.sampled_from(["call-1", "call-2", "call-3"])),
    st.builds(
        end,
        st.sampled_from(["response-1", "response-2"]),
        st.sampled_from(["stop", "tool_call", "other"]),
    ),
    st.builds(transport_error),
    st.fixed_dictionaries({"type": st.sampled_from(["", 3, "mystery", None])}),
    st.sampled_from([None, 1, "text_delta", ["text_delta"]]),
)


def _frozen_records(records: list[object]) -> list[object]:
    """Each record as a snapshot freezes it, where it can be frozen."""
    frozen: list[object] = []
    for record in records:
        try:
            frozen.append(freeze_json(record))
        except TypeError:
            frozen.append(record)
    return frozen


def _run_plain(records: list[object]) -> tuple[list[object], object, object]:
    from tether.providers.fixture._records import ResponseParser

    parser = ResponseParser(REQUEST_ID)
    chunks: list[object] = []
    try:
        for index, record in enumerate(records):
            chunk = parser.feed(record, index)
            if chunk is not None:
                chunks.append(chunk)
    except FixtureProviderError as error:
        return chunks, _state(parser), _failure(error)
    return chunks, _state(parser), None


def _run_fast(records: list[object]) -> tuple[list[object], object, object]:
    from tether.providers.fixture._records import ResponseParser

    parser = ResponseParser(REQUEST_ID)
    chunks: list[ModelChunk] = []
    try:
        parser.feed_all(records, chunks)
    except FixtureProviderError as error:
        return list(chunks), _state(parser), _failure(error)
    return list(chunks), _state(parser), None


def _state(parser: Any) -> object:
    return (parser.response_id, list(parser.content), set(parser.tool_call_ids), parser.terminal)


def _failure(error: FixtureProviderError) -> object:
    cause = error.__cause__
    return (
        error.code,
        str(error),
        error.record_index,
        error.provider_code,
        None if cause is None else (type(cause), str(cause)),
    )


@given(records=st.lists(_RECORDS, max_size=9), snapshot=st.booleans())
def test_feed_all_is_feed_record_by_record(records: list[object], snapshot: bool) -> None:
    listed = _frozen_records(records) if snapshot else records
    assert _run_fast(list(listed)) == _run_plain(list(listed))


@given(
    records=st.lists(st.builds(text, st.text(max_size=3)), max_size=4),
    calls=st.lists(st.builds(call, _ODD_STRINGS, _ODD_STRINGS, _ARGUMENTS), max_size=3),
    snapshot=st.booleans(),
)
def test_feed_all_is_feed_on_well_formed_responses(
    records: list[object], calls: list[object], snapshot: bool
) -> None:
    listed = [start(), *records, *calls, end(stop="tool_call" if calls else "stop")]
    listed = _frozen_records(listed) if snapshot else listed
    assert _run_fast(list(listed)) == _run_plain(list(listed))


@given(
    middle=st.lists(
        st.one_of(
            st.builds(text, st.text(max_size=3)),
            st.builds(text, st.one_of(st.integers(), st.none())),
            st.builds(call, st.sampled_from(["call-1", "call-2", "call-3", " "])),
        ),
        max_size=8,
    ),
    tail=st.lists(_RECORDS, max_size=3),
    snapshot=st.booleans(),
)
def test_feed_all_is_feed_on_runs_of_text_between_other_records(
    middle: list[object], tail: list[object], snapshot: bool
) -> None:
    """Runs of text deltas (built together by ``feed_all``) broken by tool calls, a broken
    delta, a repeated call ID or whatever follows the end: the same chunks in the same
    order, the same content and the same failure as ``feed``."""
    listed = [start(), *middle, end(stop="tool_call"), *tail]
    listed = _frozen_records(listed) if snapshot else listed
    assert _run_fast(list(listed)) == _run_plain(list(listed))


def _same_json(left: Any, right: Any) -> bool:
    """Equal and of the same types all the way down (``==`` takes a list for a tuple)."""
    if type(left) is not type(right):
        return False
    kind = type_of(left)
    if kind is JsonObject:
        return list(left) == list(right) and all(_same_json(left[k], right[k]) for k in left)
    if kind is tuple:
        return len(left) == len(right) and all(map(_same_json, left, right))
    return left == right or (left != left and right != right)


def general_freeze(value: object) -> object:
    """``freeze_json``'s general walk alone (cycle tracking, paths), without its fast path:
    the reference ``freeze_plain_object`` must agree with (``TypeError`` where it rejects)."""
    try:
        return jsonvalue._freeze(value, 0, set())  # pyright: ignore[reportPrivateUsage]
    except jsonvalue._Rejected as rejected:  # pyright: ignore[reportPrivateUsage]
        raise TypeError(rejected.reason) from None


@given(value=st.one_of(_ARGUMENTS, st.dictionaries(st.text(max_size=2), _PLAIN_JSON)))
def test_freeze_plain_is_freeze_json_or_declines(value: Any) -> None:
    """``freeze_plain_object`` (``freeze_json``'s own fast path) against the general walk."""
    if type_of(value) is not dict:
        return
    document: dict[str, Any] = value
    fast = freeze_plain_object(document)
    try:
        plain: object = general_freeze(document)
    except TypeError:
        assert fast is None
        return
    assert fast is None or _same_json(fast, plain)
    assert _same_json(freeze_json(document), plain)


def test_freeze_plain_declines_cycles_and_depth_beyond_the_limit() -> None:
    from tether.jsonvalue import MAX_JSON_DEPTH

    cyclic: dict[str, Any] = {}
    cyclic["self"] = cyclic
    assert freeze_plain_object(cyclic) is None
    deepest: dict[str, Any] = {}
    for _ in range(MAX_JSON_DEPTH):
        deepest = {"a": deepest}
    too_deep = {"a": deepest}
    frozen = freeze_plain_object(deepest)
    assert frozen is not None
    assert _same_json(frozen, general_freeze(deepest))
    assert freeze_plain_object(too_deep) is None
    with pytest.raises(TypeError):
        freeze_json(too_deep)
    arrays = {"a": [[1, 2.5], {"b": [None, True]}], "c": []}
    frozen = freeze_plain_object(arrays)
    assert frozen is not None
    assert _same_json(frozen, general_freeze(arrays))
