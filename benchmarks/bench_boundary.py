"""Records per second through the provider fixture boundary, next to two reference points.

    python benchmarks/bench_boundary.py            # 2,000 responses x 8 records, 7 rounds
    python benchmarks/bench_boundary.py --quick    # 200 responses, 5 rounds

One generated fixture (each response: ``response_start``, 5 ``text_delta``, 1 ``tool_call``,
``response_end``) is serialized to JSON text once; every contender starts from that text:

* baseline: ``json.loads`` + plain dict access of every record's fields (type, responseId,
  text, id, name, arguments, usage), building nothing. The floor of any parser.
* tether: ``json.loads`` + ``FixtureProviderAdapter(fixture)`` (deep snapshot of every
  record) + one ``stream()`` per response, consuming every chunk and awaiting every
  ``result``, all on one event loop (debug mode off).
* pydantic (streamed, same checks), the goal's contender: the fixture held to every rule
  tether's boundary promises, in pydantic's own terms: the text's loading rules (at most
  16 MiB of UTF-8, no byte-order mark, no ``NaN``/``Infinity``), then one strict
  ``TypeAdapter`` of the whole fixture (``schemaVersion`` 1, the response and record limits,
  a ``type``-discriminated union of five record models with non-blank IDs, exact types,
  token counts 0..2**53-1 under one of their two names, tool arguments of JSON values with
  finite numbers), then per response the rules that span records in plain Python (one
  start first, nothing after the end, matching IDs, unique call IDs, ``stopReason`` agreeing
  with the calls), its chunks (``text_delta`` and ``tool_call`` records) delivered through
  an async generator consumed with ``async for`` on the same event loop,
  ``response_start``/``response_end`` standing for the result. Before timing, both it and
  tether must refuse each of 16 fixtures that break one rule (``check_same_checks``).
  Skipped when pydantic is not installed (``pip install -r requirements/bench.txt``).
* pydantic (streamed, shape only): the records' shapes alone (lax types, no limits, no
  non-blank IDs or count bounds, no rule across records), streamed the same way. This was
  the goal's contender until it was found to skip those checks; printed for reference.
* pydantic (validate only): the shape-only validation with no stream, for reference.

The pydantic goal compares tether with ``pydantic (streamed, same checks)``: like with like,
both from the JSON text to a consumer that has read every chunk of every response, both
refusing what the fixture format forbids. What pydantic still does not do: tether's error
codes and record indexes (a ``ValidationError`` instead; its cost only shows on failure) and
a deep-frozen snapshot of the tool arguments (a mutable dict). tether builds more than
pydantic on top: a text block and a text chunk per delta, frozen tool arguments, a
``ModelResponse``.

Each round runs every contender once; the order alternates between rounds (forward, then
reversed) so warm-up and drift favour no one. The garbage collector is paused inside each
timed region. Every contender's output is checked, so no work can be skipped silently.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib
import json
import platform
import statistics
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Annotated, Any, Final, Literal

import goals

try:
    from tether import AbortController, FixtureProviderAdapter, ModelRequest
except ImportError:  # running from a checkout without an installed tether
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    from tether import AbortController, FixtureProviderAdapter, ModelRequest

TEXT_DELTAS: Final = 5
RECORDS_PER_RESPONSE: Final = TEXT_DELTAS + 3
CHECKED: Final = "pydantic (streamed, same checks)"
"""The pydantic contender of the goal: the fixture held to every rule tether's boundary keeps."""
PYDANTIC_MISSING: Final = "pydantic not installed (pip install -r requirements/bench.txt)"

Contender = Callable[[str], int]
"""Parses the fixture text; returns a count that proves every record was handled."""


def make_fixture_text(responses: int) -> str:
    entries: list[dict[str, Any]] = []
    for index in range(responses):
        response_id = f"response-{index:05d}"
        records: list[dict[str, Any]] = [
            {"type": "response_start", "responseId": response_id, "role": "assistant"}
        ]
        records.extend(
            {"type": "text_delta", "text": f"part {part} of response {index}. "}
            for part in range(TEXT_DELTAS)
        )
        records.append(
            {
                "type": "tool_call",
                "id": f"call-{index:05d}",
                "name": "add",
                "arguments": {"left": index, "right": 22, "options": {"exact": True}},
            }
        )
        records.append(
            {
                "type": "response_end",
                "responseId": response_id,
                "stopReason": "tool_call",
                "usage": {"inputTokens": 12 + index, "outputTokens": 8},
            }
        )
        entries.append({"records": records})
    return json.dumps({"schemaVersion": 1, "responses": entries})


# --- contenders -----------------------------------------------------------------------------


def run_baseline(text: str) -> int:
    fixture = json.loads(text)
    handled = 0
    for response in fixture["responses"]:
        for record in response["records"]:
            kind = record["type"]
            if kind == "response_start":
                record["responseId"]
            elif kind == "text_delta":
                record["text"]
            elif kind == "tool_call":
                record["id"]
                record["name"]
                record["arguments"]
            elif kind == "response_end":
                record["responseId"]
                usage = record["usage"]
                usage["inputTokens"]
                usage["outputTokens"]
            handled += 1
    return handled


def make_tether_runner(runner: asyncio.Runner, *, from_text: bool = True) -> Contender:
    """tether from the JSON text (``from_json``), or from the parsed dict (a deep snapshot)."""
    request = ModelRequest(id="request-001", messages=())
    signal = AbortController().signal

    async def consume_all(text: str) -> int:
        if from_text:
            adapter = FixtureProviderAdapter.from_json(text)
        else:
            adapter = FixtureProviderAdapter(json.loads(text))
        handled = 0
        for _ in range(adapter.pending_response_count):
            stream = adapter.stream(request, signal)
            async for _chunk in stream:
                handled += 1
            await stream.result
            handled += 2  # response_start and response_end produce the result, not chunks
        return handled

    def run_tether(text: str) -> int:
        return runner.run(consume_all(text))

    return run_tether


def _records_adapter(pydantic: Any) -> Any:
    """A ``TypeAdapter`` of a list of the five record models, discriminated by ``type``."""
    base_model: Any = pydantic.BaseModel
    field: Any = pydantic.Field
    type_adapter: Any = pydantic.TypeAdapter

    class BaseModel(base_model):
        pass

    class ResponseStart(BaseModel):
        type: Literal["response_start"]
        responseId: str
        role: Literal["assistant"]

    class TextDelta(BaseModel):
        type: Literal["text_delta"]
        text: str

    class ToolCallRecord(BaseModel):
        type: Literal["tool_call"]
        id: str
        name: str
        arguments: dict[str, Any]

    class Usage(BaseModel):
        inputTokens: int
        outputTokens: int

    class ResponseEnd(BaseModel):
        type: Literal["response_end"]
        responseId: str
        stopReason: Literal["stop", "tool_call"]
        usage: Usage

    class TransportError(BaseModel):
        type: Literal["transport_error"]
        code: str
        message: str

    record_union = Annotated[
        ResponseStart | TextDelta | ToolCallRecord | ResponseEnd | TransportError,
        field(discriminator="type"),
    ]
    return type_adapter(list[record_union])


MAX_FIXTURE_BYTES: Final = 16 * 1024 * 1024
MAX_FIXTURE_RESPONSES: Final = 10_000
MAX_FIXTURE_RECORDS_PER_RESPONSE: Final = 100_000
MAX_SAFE_INTEGER: Final = 2**53 - 1
JS_WHITESPACE: Final = (
    "\t\n\x0b\x0c\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)
"""What JavaScript's ``trim()`` removes, as a character class: a non-blank string has one
character outside it (tether's ``NON_EMPTY`` rule), which pydantic tests in Rust."""


class FixtureRejected(ValueError):
    """The same-checks pydantic contender refused the fixture (never raised by this one)."""


def _reject_constant(name: str) -> object:
    raise FixtureRejected(f"{name} is not JSON")


def _checked_adapter(pydantic: Any) -> Any:
    """A ``TypeAdapter`` of the whole fixture holding every per-field rule tether's fixture
    boundary promises, in pydantic's own terms (strict types, Rust-side constraints):
    ``schemaVersion`` 1, at most ``MAX_FIXTURE_RESPONSES`` responses and
    ``MAX_FIXTURE_RECORDS_PER_RESPONSE`` records, non-blank IDs, names and codes, exact
    ``str``/``int`` (no coercion), token counts from 0 to 2**53 - 1 under one of their two
    names, tool arguments a JSON object of JSON values with finite numbers. The rules that
    span records (``_check_sequence``) are plain Python, as a pydantic user would write them.
    """
    base_model: Any = pydantic.BaseModel
    config: Any = pydantic.ConfigDict
    field: Any = pydantic.Field
    constraints: Any = pydantic.StringConstraints
    json_value: Any = pydantic.JsonValue
    after: Any = pydantic.model_validator

    class BaseModel(base_model):
        model_config = config(strict=True, allow_inf_nan=False)

    non_blank = constraints(pattern=f"[^{JS_WHITESPACE}]")  # metadata of a str
    count = field(ge=0, le=MAX_SAFE_INTEGER)  # metadata of an int

    class ResponseStart(BaseModel):
        type: Literal["response_start"]
        responseId: Annotated[str, non_blank]
        role: Literal["assistant"]

    class TextDelta(BaseModel):
        type: Literal["text_delta"]
        text: str

    class ToolCallRecord(BaseModel):
        type: Literal["tool_call"]
        id: Annotated[str, non_blank]
        name: Annotated[str, non_blank]
        arguments: dict[str, json_value]  # pyright: ignore[reportInvalidTypeForm]

    class Usage(BaseModel):
        inputTokens: Annotated[int, count] = -1
        input_tokens: Annotated[int, count] = -1
        outputTokens: Annotated[int, count] = -1
        output_tokens: Annotated[int, count] = -1

        @after(mode="after")
        def one_name_each(self) -> Any:
            given = self.model_fields_set
            if ("inputTokens" in given) == ("input_tokens" in given) or (
                "outputTokens" in given
            ) == ("output_tokens" in given):
                raise ValueError("each token count under exactly one of its names")
            return self

    class ResponseEnd(BaseModel):
        type: Literal["response_end"]
        responseId: Annotated[str, non_blank]
        stopReason: Literal["stop", "tool_call"]
        usage: Usage

    class TransportError(BaseModel):
        type: Literal["transport_error"]
        code: Annotated[str, non_blank]
        message: Annotated[str, non_blank]

    tagged = field(discriminator="type")

    class Response(BaseModel):
        records: Annotated[
            list[
                Annotated[
                    ResponseStart | TextDelta | ToolCallRecord | ResponseEnd | TransportError,
                    tagged,
                ]
            ],
            field(max_length=MAX_FIXTURE_RECORDS_PER_RESPONSE),
        ]

    class Fixture(BaseModel):
        schemaVersion: Literal[1]
        responses: Annotated[list[Response], field(max_length=MAX_FIXTURE_RESPONSES)]

    return pydantic.TypeAdapter(Fixture)


def _check_sequence(records: list[Any]) -> None:
    """The rules that span one response's records, as tether's parser keeps them: one
    ``response_start`` first, nothing after ``response_end``, which must come and match the
    start's ID, unique tool-call IDs, ``stopReason`` agreeing with the calls, and a
    ``transport_error`` failing the response."""
    response_id: str | None = None
    ended = False
    call_ids: set[str] = set()
    for record in records:
        kind = record.type
        if ended:
            raise FixtureRejected(f"{kind} after response_end")
        if kind == "text_delta":
            if response_id is None:
                raise FixtureRejected("text_delta before response_start")
        elif kind == "tool_call":
            if response_id is None:
                raise FixtureRejected("tool_call before response_start")
            if record.id in call_ids:
                raise FixtureRejected("tool-call IDs must be unique")
            call_ids.add(record.id)
        elif kind == "response_start":
            if response_id is not None:
                raise FixtureRejected("more than one response_start")
            response_id = record.responseId
        elif kind == "response_end":
            if response_id is None:
                raise FixtureRejected("response_end before response_start")
            if record.responseId != response_id:
                raise FixtureRejected("response_end ID does not match")
            if (record.stopReason == "tool_call") != bool(call_ids):
                raise FixtureRejected("stopReason disagrees with the tool calls")
            ended = True
        else:
            raise FixtureRejected(f"transport error {record.code}")
    if not ended:
        raise FixtureRejected("no response_end")


def make_pydantic_runners(runner: asyncio.Runner) -> dict[str, Contender] | None:
    """The pydantic contenders by name; ``None`` without pydantic.

    ``streamed, same checks`` (the goal's contender) holds the fixture to every rule tether's
    boundary promises (``_checked_adapter``, ``_check_sequence``, the text's size and
    encoding, no ``NaN``); ``streamed, shape only`` and ``validate only`` check only the
    records' shapes (see the module docstring). Each streamed one delivers every response's
    chunks through an async generator (the cheapest stream) consumed on ``runner``'s loop,
    as the boundary delivers its output."""
    try:
        pydantic: Any = importlib.import_module("pydantic")  # optional: requirements/bench.txt
    except ImportError:
        return None
    records_adapter: Any = _records_adapter(pydantic)
    fixture_adapter: Any = _checked_adapter(pydantic)
    decoder = json.JSONDecoder(parse_constant=_reject_constant)

    def run_validate_only(text: str) -> int:
        fixture = json.loads(text)
        handled = 0
        for response in fixture["responses"]:
            handled += len(records_adapter.validate_python(response["records"]))
        return handled

    async def chunks(records: list[Any]) -> AsyncIterator[Any]:
        for record in records[1:-1]:  # between response_start and response_end
            yield record

    async def consume_shape_only(text: str) -> int:
        fixture = json.loads(text)
        handled = 0
        for response in fixture["responses"]:
            validated = records_adapter.validate_python(response["records"])
            async for _chunk in chunks(validated):
                handled += 1
            handled += 2  # response_start and response_end: the result
        return handled

    async def consume_checked(text: str) -> int:
        # tether's loading rules for the text: at most MAX_FIXTURE_BYTES of UTF-8 (a lone
        # surrogate has none), no byte-order mark, no NaN or Infinity.
        if len(text) > MAX_FIXTURE_BYTES or len(text.encode("utf-8")) > MAX_FIXTURE_BYTES:
            raise FixtureRejected("fixture too large")
        if text.startswith("\ufeff"):
            raise FixtureRejected("byte-order mark")
        fixture = fixture_adapter.validate_python(decoder.decode(text))
        handled = 0
        for response in fixture.responses:
            records = response.records
            _check_sequence(records)
            async for _chunk in chunks(records):
                handled += 1
            handled += 2  # response_start and response_end: the result
        return handled

    def run_checked(text: str) -> int:
        return runner.run(consume_checked(text))

    def run_shape_only(text: str) -> int:
        return runner.run(consume_shape_only(text))

    return {
        "pydantic (streamed, same checks)": run_checked,
        "pydantic (streamed, shape only)": run_shape_only,
        "pydantic (validate only)": run_validate_only,
    }


def _broken_fixtures() -> dict[str, str]:
    """One-response fixtures that each break one rule the boundary promises, by name."""

    def one(*records: dict[str, Any], version: object = 1) -> str:
        return json.dumps({"schemaVersion": version, "responses": [{"records": list(records)}]})

    start = {"type": "response_start", "responseId": "r", "role": "assistant"}
    usage = {"inputTokens": 1, "outputTokens": 1}
    call: dict[str, Any] = {"type": "tool_call", "id": "c", "name": "add", "arguments": {}}
    end = {"type": "response_end", "responseId": "r", "stopReason": "stop", "usage": usage}
    calls_end = {**end, "stopReason": "tool_call"}
    return {
        "schemaVersion 2": one(start, end, version=2),
        "blank responseId": one({**start, "responseId": " \u3000"}, {**end, "responseId": " "}),
        "BOM-blank tool name": one(start, {**call, "name": "\ufeff"}, calls_end),
        "text not a string": one(start, {"type": "text_delta", "text": 1}, end),
        "count 2**53": one(start, {**end, "usage": {**usage, "inputTokens": 2**53}}),
        "count a bool": one(start, {**end, "usage": {**usage, "outputTokens": True}}),
        "both count names": one(start, {**end, "usage": {**usage, "input_tokens": 1}}),
        "NaN in arguments": one(start, {**call, "arguments": {"x": float("nan")}}, calls_end),
        "duplicate call id": one(start, call, call, calls_end),
        "end id mismatch": one(start, {**end, "responseId": "other"}),
        "tool_call with stop": one(start, call, end),
        "no response_end": one(start),
        "record after end": one(start, end, {"type": "text_delta", "text": "x"}),
        "no response_start": one({"type": "text_delta", "text": "x"}, end),
        "transport error": one(start, {"type": "transport_error", "code": "x", "message": "y"}),
        "unknown type": one(start, {"type": "mystery"}, end),
    }


def check_same_checks(run_checked: Contender, runner: asyncio.Runner) -> None:
    """Both tether and the same-checks pydantic contender refuse every broken fixture, so the
    goal compares like with like (and neither side's checks can go missing silently)."""
    validation_error: Any = importlib.import_module("pydantic").ValidationError
    request = ModelRequest(id="request-001", messages=())

    async def tether_refuses(text: str) -> bool:
        try:
            stream = FixtureProviderAdapter.from_json(text).stream(
                request, AbortController().signal
            )
            await stream.result
        except Exception:
            return True
        return False

    for name, text in _broken_fixtures().items():
        if not runner.run(tether_refuses(text)):
            raise AssertionError(f"tether accepted a fixture with {name}")
        try:
            run_checked(text)
        except (FixtureRejected, validation_error):
            continue
        raise AssertionError(f"the same-checks pydantic contender accepted {name}")


# --- measurement ----------------------------------------------------------------------------


def time_once(contender: Contender, text: str, expected: int) -> float:
    """Records per CPU second for one run."""
    gc.collect()
    gc.disable()
    try:
        start = time.process_time()
        handled = contender(text)
        elapsed = time.process_time() - start
    finally:
        gc.enable()
    if handled != expected:
        raise AssertionError(f"handled {handled} records, expected {expected}")
    return expected / elapsed


def measure(
    contenders: dict[str, Contender], text: str, expected: int, rounds: int
) -> dict[str, list[float]]:
    names = list(contenders)
    for name in names:  # warm-up, not recorded
        time_once(contenders[name], text, expected)
    samples: dict[str, list[float]] = {name: [] for name in names}
    for round_index in range(rounds):
        order = names if round_index % 2 == 0 else names[::-1]
        for name in order:
            samples[name].append(time_once(contenders[name], text, expected))
    return samples


def report(samples: dict[str, list[float]], records: int, responses: int) -> None:
    medians = {name: statistics.median(values) for name, values in samples.items()}
    rounds = len(next(iter(samples.values())))
    print(f"\n{records:,} records ({responses:,} responses), {rounds} rounds, alternating order")
    print(f"  {'contender':<34} {'median records/s':>18} {'best records/s':>16}")
    for name, values in samples.items():
        print(f"  {name:<34} {medians[name]:>18,.0f} {max(values):>16,.0f}")
    tether = medians["tether"]
    print(f"  tether / baseline (throughput): {tether / medians['baseline']:.3f}x")
    if CHECKED in medians:
        streamed = medians[CHECKED]
        print(f"  tether / pydantic, streamed, same checks (throughput): {tether / streamed:.3f}x")
        shape = medians["pydantic (streamed, shape only)"]
        print(f"  tether / pydantic, streamed, shape only (throughput): {tether / shape:.3f}x")
        only = medians["pydantic (validate only)"]
        print(f"  tether / pydantic (validate only, no stream): {tether / only:.3f}x")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="200 responses and 5 rounds")
    parser.add_argument("--responses", type=int, help="responses in the fixture (default 2000)")
    parser.add_argument("--rounds", type=int, help="rounds per contender (default 7, min 5)")
    parser.add_argument("--json-out", help="also write the medians (records/s) as JSON here")
    options = parser.parse_args(argv)
    responses: int = options.responses or (200 if options.quick else 2_000)
    rounds: int = max(options.rounds or (5 if options.quick else 7), 5)

    print(
        f"Provider boundary benchmark: Python {platform.python_version()} "
        f"({platform.python_implementation()}), {platform.machine()}"
    )
    if sys.flags.dev_mode:
        print("note: Python dev mode is on; numbers are slower than usual")

    text = make_fixture_text(responses)
    records = responses * RECORDS_PER_RESPONSE
    with asyncio.Runner(debug=False) as runner:
        contenders: dict[str, Contender] = {
            "baseline": run_baseline,
            "tether": make_tether_runner(runner),
            "tether (dict)": make_tether_runner(runner, from_text=False),
        }
        pydantic_runners = make_pydantic_runners(runner)
        if pydantic_runners is None:
            print(PYDANTIC_MISSING)
        else:
            check_same_checks(pydantic_runners[CHECKED], runner)
            contenders.update(pydantic_runners)
        samples = measure(contenders, text, records, rounds)

    report(samples, records, responses)
    found = [
        goals.at_least(
            "fixture boundary throughput vs json.loads + dict access",
            goals.ratios(samples["tether"], samples["baseline"]),
            1 / 3,
        )
    ]
    what = "fixture boundary throughput vs pydantic with the same checks, both streamed"
    if CHECKED in samples:
        ratio = goals.ratios(samples["tether"], samples[CHECKED])
        found.append(goals.at_least(what, ratio, 1))
    else:
        found.append(goals.skipped(what, "≥ 1x", PYDANTIC_MISSING))
    for goal in found:
        print(goals.line(goal))
    if options.json_out:
        medians = {name: statistics.median(values) for name, values in samples.items()}
        figures = {"records": records, "records_per_second": medians, "goals": found}
        Path(options.json_out).write_text(json.dumps(figures, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
