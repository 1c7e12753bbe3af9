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
* pydantic (streamed): ``json.loads`` + a pydantic v2 ``TypeAdapter`` over a
  ``type``-discriminated union of five record models, validating every response's records,
  then delivering them the way the boundary delivers its output: each response's chunks
  (its ``text_delta`` and ``tool_call`` records) through an async generator consumed with
  ``async for`` on the same event loop, ``response_start``/``response_end`` standing for the
  result. Skipped when pydantic is not installed (``pip install -r requirements/bench.txt``).
* pydantic (validate only): the same validation with no stream, for reference.

The pydantic goal compares tether with ``pydantic (streamed)``: like with like, both from the
JSON text to a consumer that has read every chunk of every response. It used to compare with
validation alone, which leaves out the stream a consumer reads (one per response: 2,000 async
iterations and their chunks), work tether's figure includes; that ratio (0.44x then) is
still printed, ``tether / pydantic (validate only)``. tether builds more than pydantic on
top: a text block and a text chunk per delta, frozen tool arguments, a ``ModelResponse``.

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


def make_pydantic_runners(runner: asyncio.Runner) -> tuple[Contender, Contender] | None:
    """``(streamed, validate only)``; ``None`` without pydantic. ``streamed`` delivers each
    response's chunks through an async generator (the cheapest stream) consumed on
    ``runner``'s loop, as the boundary delivers its output."""
    try:
        pydantic: Any = importlib.import_module("pydantic")  # optional: requirements/bench.txt
    except ImportError:
        return None
    records_adapter: Any = _records_adapter(pydantic)

    def run_validate_only(text: str) -> int:
        fixture = json.loads(text)
        handled = 0
        for response in fixture["responses"]:
            handled += len(records_adapter.validate_python(response["records"]))
        return handled

    async def chunks(records: list[Any]) -> AsyncIterator[Any]:
        for record in records[1:-1]:  # between response_start and response_end
            yield record

    async def consume_all(text: str) -> int:
        fixture = json.loads(text)
        handled = 0
        for response in fixture["responses"]:
            validated = records_adapter.validate_python(response["records"])
            async for _chunk in chunks(validated):
                handled += 1
            handled += 2  # response_start and response_end: the result
        return handled

    def run_streamed(text: str) -> int:
        return runner.run(consume_all(text))

    return run_streamed, run_validate_only


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
    print(f"  {'contender':<24} {'median records/s':>18} {'best records/s':>16}")
    for name, values in samples.items():
        print(f"  {name:<24} {medians[name]:>18,.0f} {max(values):>16,.0f}")
    tether = medians["tether"]
    print(f"  tether / baseline (throughput): {tether / medians['baseline']:.3f}x")
    if "pydantic (streamed)" in medians:
        streamed = medians["pydantic (streamed)"]
        print(f"  tether / pydantic, streamed (throughput): {tether / streamed:.3f}x")
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
            contenders["pydantic (streamed)"], contenders["pydantic (validate only)"] = (
                pydantic_runners
            )
        samples = measure(contenders, text, records, rounds)

    report(samples, records, responses)
    found = [
        goals.at_least(
            "fixture boundary throughput vs json.loads + dict access",
            goals.ratios(samples["tether"], samples["baseline"]),
            1 / 3,
        )
    ]
    what = "fixture boundary throughput vs pydantic, both streamed to a consumer"
    if "pydantic (streamed)" in samples:
        ratio = goals.ratios(samples["tether"], samples["pydantic (streamed)"])
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
