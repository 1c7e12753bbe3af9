"""Anthropic Messages stream bytes to a ``ModelResponse``: tether next to the official SDK
accumulator and the ``json.loads`` floor.

    python benchmarks/bench_anthropic.py            # 7 rounds
    python benchmarks/bench_anthropic.py --quick    # 3 rounds, half the sizes
    python benchmarks/bench_anthropic.py --json     # print the figures as JSON

The stream is written here in Anthropic's recorded shape (an
``event:`` line and a padded ``data:`` line per event, ``ping`` after the first block start,
``message_start`` usage with the cache fields): a thinking block of 500 deltas and its
``signature_delta``, a text block of 2,000 text deltas, then one ``write`` ``tool_use`` whose
100 kB of JSON arguments (a source file with quotes, backslashes and newlines) arrive in 1,000
``input_json_delta`` fragments (the first ``""``), ``message_delta`` and ``message_stop``.
Everything is in memory; the body is cut into 64 KiB network chunks. Two workloads: ``text``
(the stream without the tool call, ``end_turn``) and ``tool`` (all of it). Contenders, all on
the same bytes:

* ``tether``: ``tether.providers._sse.SSEDecoder``, ``json.loads`` of each payload and
  ``AnthropicStreamParser``: chunks and the final ``ModelResponse`` with the call's arguments
  parsed and frozen.
* ``anthropic SDK``: the same decoder and ``json.loads``, then
  ``anthropic.lib.streaming._messages.accumulate_event`` for each payload (``ping`` skipped,
  as §5.4 says): the final ``Message`` snapshot, tool input parsed by the SDK. Skipped when
  ``anthropic`` is not installed.
* ``floor``: ``json.loads`` of each payload text alone (already split out of the stream).
* ``sse floor`` (recorded streams): ``floor.py``, the same network chunks framed into events by
  the WHATWG rules and each payload's JSON decoded: the least any parser of these bytes must
  do. ``sse floor / json.loads`` and ``tether / sse floor`` are printed per round, and
  ``tether / sse floor`` is a goal (benchmarks/README.md, "The SSE + JSON floor").

Goal: the SDK at least 3x slower than tether. Medians of CPU time (``process_time``) over
interleaved rounds (the order alternates), with the garbage collector paused inside each timed
region; every contender's output is checked.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import importlib.util
import itertools
import json
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import floor
import goals
import recorded

try:
    from tether.providers._sse import SSEDecoder
except ImportError:  # running from a checkout without an installed tether
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    from tether.providers._sse import SSEDecoder
if TYPE_CHECKING:
    from tether.providers.anthropic_stream import AnthropicStreamParser
else:
    try:
        from tether.providers.anthropic_stream import AnthropicStreamParser
    except ImportError:  # a tree from before the parser had its own module
        from tether.providers.anthropic_wire import AnthropicStreamParser

REQUEST_ID: Final = "request-001"
NETWORK_CHUNK: Final = 64 * 1024
SDK_MISSING: Final = "anthropic not installed (pip install anthropic): SDK contender skipped"

Contender = Callable[[], tuple[int, int, int]]
"""Runs the workload once; returns (thinking, text, argument characters) to check."""

# --- the stream -----------------------------------------------------------------------------------


def source_file(size: int) -> str:
    """About ``size`` characters of Python-looking source: quotes, backslashes, newlines."""
    line = 'def f_{0}(path: str) -> str:\n    return "C:\\\\tmp\\\\" + path.replace("\\"", "\'")\n'
    lines: list[str] = []
    total = 0
    index = 0
    while total < size:
        text = line.format(index)
        lines.append(text)
        total += len(text)
        index += 1
    return "".join(lines)[:size]


def split(text: str, parts: int) -> list[str]:
    """``text`` in exactly ``parts`` pieces (or one per character, if it is shorter)."""
    parts = min(parts, len(text))
    size, extra = divmod(len(text), parts)
    bounds = [index * size + min(index, extra) for index in range(parts + 1)]
    return [text[start:end] for start, end in itertools.pairwise(bounds)]


def _event(payload: dict[str, Any], n: int) -> str:
    data = json.dumps(payload, separators=(",", ":"))
    padded = f"{data[:-1]}{' ' * (n % 13)}}}"  # as recorded: spaces before the last brace
    return f"event: {payload['type']}\ndata: {padded}\n\n"


def stream_body(thinking_deltas: int, text_deltas: int, arguments: str, fragments: int) -> bytes:
    """An Anthropic-shaped SSE body; no tool call when ``fragments`` is 0."""
    events: list[dict[str, Any]] = [
        {
            "type": "message_start",
            "message": {
                "model": "claude-sonnet-4-6",
                "id": "msg_01B3nchB3nchB3nch",
                "type": "message",
                "role": "assistant",
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "stop_details": None,
                "usage": {
                    "input_tokens": 1200,
                    "cache_creation_input_tokens": 0,
                    "cache_read_input_tokens": 1024,
                    "cache_creation": {
                        "ephemeral_5m_input_tokens": 0,
                        "ephemeral_1h_input_tokens": 0,
                    },
                    "output_tokens": 1,
                    "service_tier": "standard",
                },
            },
        },
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "thinking", "thinking": "", "signature": ""},
        },
        {"type": "ping"},
    ]

    def delta(index: int, body: dict[str, Any]) -> dict[str, Any]:
        return {"type": "content_block_delta", "index": index, "delta": body}

    events.extend(
        delta(0, {"type": "thinking_delta", "thinking": f" idea{n}"})
        for n in range(thinking_deltas)
    )
    events.append(delta(0, {"type": "signature_delta", "signature": "EqQBCkYIBRgCIkB" * 20}))
    events.append({"type": "content_block_stop", "index": 0})
    events.append(
        {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}}
    )
    events.extend(delta(1, {"type": "text_delta", "text": f" word{n}"}) for n in range(text_deltas))
    events.append({"type": "content_block_stop", "index": 1})
    if fragments:
        events.append(
            {
                "type": "content_block_start",
                "index": 2,
                "content_block": {
                    "type": "tool_use",
                    "id": "toolu_01B3nchWrite",
                    "name": "write",
                    "input": {},
                    "caller": {"type": "direct"},
                },
            }
        )
        events.append(delta(2, {"type": "input_json_delta", "partial_json": ""}))
        events.extend(
            delta(2, {"type": "input_json_delta", "partial_json": piece})
            for piece in split(arguments, fragments)
        )
        events.append({"type": "content_block_stop", "index": 2})
    events.append(
        {
            "type": "message_delta",
            "delta": {
                "stop_reason": "tool_use" if fragments else "end_turn",
                "stop_sequence": None,
                "stop_details": None,
            },
            "usage": {"input_tokens": 1200, "output_tokens": 30_000},
        }
    )
    events.append({"type": "message_stop"})
    return "".join(_event(event, n) for n, event in enumerate(events)).encode()


def network_chunks(body: bytes) -> list[bytes]:
    return [body[start : start + NETWORK_CHUNK] for start in range(0, len(body), NETWORK_CHUNK)]


def decode(chunks: list[bytes]) -> list[tuple[str, str]]:
    decoder = SSEDecoder(max_event_bytes=16 << 20)
    events: list[tuple[str, str]] = []
    for chunk in chunks:
        events.extend((event.event, event.data) for event in decoder.feed(chunk))
    events.extend((event.event, event.data) for event in decoder.close())
    return events


# --- contenders -----------------------------------------------------------------------------------


_loads = recorded.payload_loader


def tether_contender(chunks: list[bytes]) -> Contender:
    """The providers' path: ``SSEDecoder.feed_fields`` and ``loads_payload`` per event (what
    ``HttpStreamModel`` runs), when this tether has them, else ``feed`` and ``json.loads``."""
    loads = _loads()
    has_fields = hasattr(SSEDecoder, "feed_fields")

    def run() -> tuple[int, int, int]:
        parser = AnthropicStreamParser(REQUEST_ID)
        feed = parser.feed
        emitted = 0
        decoder = SSEDecoder(max_event_bytes=16 << 20)
        for chunk in chunks:
            if has_fields:
                for kind, data, _, _ in decoder.feed_fields(chunk):
                    emitted += len(feed(loads(data), kind))
            else:
                for event in decoder.feed(chunk):
                    emitted += len(feed(loads(event.data), event.event))
        tail, response = parser.finish(done=parser.stopped)
        if emitted == 0 or tail:
            raise AssertionError("tether produced no chunks")
        thinking = text = arguments = 0
        for block in response.message.content:
            if block.type == "thinking":
                thinking += len(block.text)
            elif block.type == "text":
                text += len(block.text)
            else:
                content: Any = block.arguments["content"]
                arguments += len(content)
        return thinking, text, arguments

    return run


def sdk_contender(chunks: list[bytes]) -> Contender | None:
    """What the SDK's own stream does (``anthropic._streaming.Stream.__stream__``): skip
    ``ping``, ``construct_type`` each event as a ``RawMessageStreamEvent``
    (``_process_response_data``), then ``accumulate_event`` (``MessageStream``'s snapshot)."""
    try:
        messages: Any = importlib.import_module("anthropic.lib.streaming._messages")
        models: Any = importlib.import_module("anthropic._models")
        types_: Any = importlib.import_module("anthropic.types")
    except ImportError:
        return None
    accumulate = messages.accumulate_event
    construct = models.construct_type
    event_type = types_.RawMessageStreamEvent
    loads = json.loads

    def run() -> tuple[int, int, int]:
        snapshot: Any = None
        json_bufs: dict[int, bytes] = {}
        for kind, data in decode(chunks):
            if kind == "ping":
                continue
            event = construct(type_=event_type, value=loads(data))
            snapshot = accumulate(event=event, current_snapshot=snapshot, json_bufs=json_bufs)
        thinking = text = arguments = 0
        for block in snapshot.content:
            if block.type == "thinking":
                thinking += len(block.thinking)
            elif block.type == "text":
                text += len(block.text)
            elif block.type == "tool_use":
                arguments += len(block.input["content"])
        return thinking, text, arguments

    return run


def floor_contender(payloads: list[str]) -> Contender:
    loads = json.loads

    def run() -> tuple[int, int, int]:
        for data in payloads:
            loads(data)
        return 0, 0, 0

    return run


# --- measurement ----------------------------------------------------------------------------------


def time_once(contender: Contender) -> tuple[float, tuple[int, int, int]]:
    gc.collect()
    gc.disable()
    try:
        start = time.process_time()
        outcome = contender()
        elapsed = time.process_time() - start
    finally:
        gc.enable()
    return elapsed, outcome


def measure(
    contenders: dict[str, Contender], rounds: int, expected: dict[str, tuple[int, int, int]]
) -> dict[str, list[float]]:
    """CPU milliseconds per run for each contender, one sample per round, interleaved."""
    names = list(contenders)
    for name in names:  # warm-up, and check every contender's output
        _, outcome = time_once(contenders[name])
        if outcome != expected[name]:
            raise AssertionError(f"{name} produced {outcome}, expected {expected[name]}")
    samples: dict[str, list[float]] = {name: [] for name in names}
    for round_index in range(rounds):
        order = names if round_index % 2 == 0 else names[::-1]
        for name in order:
            elapsed, _ = time_once(contenders[name])
            samples[name].append(elapsed * 1e3)
    return samples


def workload(
    body: bytes,
    rounds: int,
    expected: tuple[int, int, int],
    *,
    sdk: bool = True,
    tether: Callable[[list[bytes]], Contender] = tether_contender,
    sdk_for: Callable[[list[bytes]], Contender | None] = sdk_contender,
    sdk_name: str = "anthropic SDK",
) -> dict[str, Any]:
    """The floor, ``tether`` and (with ``sdk``) the SDK contender ``sdk_for`` makes, called
    ``sdk_name``, on ``body`` cut into network chunks (``bench_responses`` passes its own)."""
    chunks = network_chunks(body)
    payloads = [data for _, data in decode(chunks)]
    contenders: dict[str, Contender] = {
        "floor": floor_contender(payloads),
        "tether": tether(chunks),
    }
    wanted = {"floor": (0, 0, 0), "tether": expected}
    contender = sdk_for(chunks) if sdk else None
    if contender is not None:
        contenders[sdk_name] = contender
        wanted[sdk_name] = expected
    samples = measure(contenders, rounds, wanted)
    ms = {name: statistics.median(values) for name, values in samples.items()}
    ratios = {"tether/floor": ms["tether"] / ms["floor"]}
    if sdk_name in ms:
        ratios["sdk/tether"] = ms[sdk_name] / ms["tether"]
    return {
        "bytes": len(body),
        "events": len(payloads),
        "ms": ms,
        "ratios": ratios,
        "samples": samples,
    }


def recorded_workload(
    rounds: int, api: str = "anthropic-messages", parser_class: Any = AnthropicStreamParser
) -> dict[str, Any] | None:
    """tether (``parser_class``) on every recorded stream of ``api`` (the providers' path, a
    stream that fails with its vendor error included) next to ``json.loads`` of every
    payload."""
    found = recorded.bodies(api)
    if not found:
        return None
    loads = _loads()
    error_class: Any = importlib.import_module("tether.providers.errors").ProviderError
    streams = [network_chunks(body) for body in found.values()]
    payloads = [data for chunks in streams for _, data in decode(chunks)]
    has_fields = hasattr(SSEDecoder, "feed_fields")
    repeat = 20  # the recordings are small: each sample parses all of them this many times

    def run_tether() -> tuple[int, int, int]:
        completed = events = 0
        for _ in range(repeat):
            completed = events = 0
            for chunks in streams:
                parser = parser_class(REQUEST_ID)
                feed = parser.feed
                decoder = SSEDecoder()
                try:
                    for chunk in chunks:
                        if has_fields:
                            for kind, data, _, _ in decoder.feed_fields(chunk):
                                events += 1
                                feed(loads(data), kind)
                        else:
                            for event in decoder.feed(chunk):
                                events += 1
                                feed(loads(event.data), event.event)
                    parser.finish(done=parser.stopped)
                    completed += 1
                except error_class:
                    pass
        return completed, events, 0

    def run_floor() -> tuple[int, int, int]:
        for _ in range(repeat):
            for data in payloads:
                json.loads(data)
        return 0, len(payloads), 0

    floor.checked(streams, [decode(chunks) for chunks in streams])
    run_sse_floor_events = floor.contender(streams, repeat)

    def run_sse_floor() -> tuple[int, int, int]:
        return 0, run_sse_floor_events(), 0

    contenders = {"tether": run_tether, "floor": run_floor, "sse floor": run_sse_floor}
    expected = {name: run() for name, run in contenders.items()}
    samples = measure(contenders, rounds, expected)
    return {
        "streams": len(found),
        "events": len(payloads),
        "completed": expected["tether"][0],
        "ms": {name: statistics.median(values) / repeat for name, values in samples.items()},
        "ratios": floor.figures(samples, "tether", "floor", "sse floor"),
        "samples": samples,
    }


def floor_goal(api: str, recorded_figures: dict[str, Any] | None, missing: str) -> dict[str, Any]:
    """The goal "tether vs the SSE + JSON floor" on the recorded streams of ``api``."""
    what = f"{api} parse vs the SSE + JSON floor (recorded streams)"
    if recorded_figures is None:
        return goals.skipped(what, f"≤ {floor.BOUND}x", missing)
    samples = recorded_figures["samples"]
    return goals.at_most(what, goals.ratios(samples["tether"], samples["sse floor"]), floor.BOUND)


def anthropic_goals(figures: dict[str, Any], sdk_missing: str | None) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    what = "Anthropic parse vs a bare json.loads per SSE event (recorded streams)"
    if figures["recorded"] is None:
        found.append(goals.skipped(what, "≤ 1.5x", recorded.missing("anthropic-messages")))
    else:
        samples = figures["recorded"]["samples"]
        found.append(goals.at_most(what, goals.ratios(samples["tether"], samples["floor"]), 1.5))
    found.append(
        floor_goal("Anthropic", figures["recorded"], recorded.missing("anthropic-messages"))
    )
    big = figures["big_tool"]["samples"]
    found.append(
        goals.at_most(
            f"Anthropic {figures['sizes']['big_argument_bytes'] / 1e6:.1f} MB tool arguments "
            f"in {figures['sizes']['big_fragments']:,} deltas vs json.loads of each payload",
            goals.ratios(big["tether"], big["floor"]),
            2,
        )
    )
    for name in ("text", "tool"):
        what = f"anthropic SDK accumulator / tether, {name} workload"
        samples = figures[name]["samples"]
        found.append(goals.sdk_goal(what, samples, "anthropic SDK", sdk_missing or SDK_MISSING))
    return found


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="3 rounds and half the sizes")
    parser.add_argument("--rounds", type=int, help="rounds per contender (default 7)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--json-out", help="also write the figures as JSON here")
    options = parser.parse_args(argv)
    rounds: int = options.rounds or (3 if options.quick else 7)
    scale = 2 if options.quick else 1
    thinking_deltas = 500 // scale
    text_deltas = 2_000 // scale
    argument_chars = 100_000 // scale
    fragments = 1_000 // scale

    if not options.json:
        print(
            f"Anthropic stream benchmark: Python {platform.python_version()} "
            f"({platform.python_implementation()}), {platform.machine()}"
        )
        if sys.flags.dev_mode:
            print("note: Python dev mode is on; numbers are slower than usual")
    sdk_missing = None if importlib.util.find_spec("anthropic") else SDK_MISSING
    if sdk_missing and not options.json:
        print(f"SKIPPED: {sdk_missing}", file=sys.stderr)

    big_chars = 1_000_000 // scale
    big_fragments = 100_000 // scale
    arguments = json.dumps({"path": "src/generated.py", "content": source_file(argument_chars)})
    big_arguments = json.dumps({"path": "src/generated.py", "content": source_file(big_chars)})
    content_chars = len(json.loads(arguments)["content"])
    thinking_chars = sum(len(f" idea{n}") for n in range(thinking_deltas))
    text_chars = sum(len(f" word{n}") for n in range(text_deltas))
    figures: dict[str, Any] = {
        "sizes": {
            "thinking_deltas": thinking_deltas,
            "text_deltas": text_deltas,
            "argument_bytes": len(arguments),
            "argument_fragments": fragments,
            "big_argument_bytes": len(big_arguments),
            "big_fragments": big_fragments,
        },
        "text": workload(
            stream_body(thinking_deltas, text_deltas, arguments, 0),
            rounds,
            (thinking_chars, text_chars, 0),
        ),
        "tool": workload(
            stream_body(thinking_deltas, text_deltas, arguments, fragments),
            rounds,
            (thinking_chars, text_chars, content_chars),
        ),
        "big_tool": workload(
            stream_body(0, 0, big_arguments, big_fragments),
            rounds,
            (0, 0, len(json.loads(big_arguments)["content"])),
            sdk=False,
        ),
        "recorded": recorded_workload(rounds),
    }
    figures["goals"] = anthropic_goals(figures, sdk_missing)
    for name in ("text", "tool", "big_tool"):
        del figures[name]["samples"]
    if figures["recorded"] is not None:
        del figures["recorded"]["samples"]
    if options.json_out:
        Path(options.json_out).write_text(json.dumps(figures, indent=2), encoding="utf-8")
    if options.json:
        print(json.dumps(figures, indent=2))
    else:
        report(figures, rounds)
    return figures


def report(figures: dict[str, Any], rounds: int) -> None:
    sizes = figures["sizes"]
    print(
        f"\n{sizes['thinking_deltas']:,} thinking + {sizes['text_deltas']:,} text deltas; tool "
        f"workload adds {sizes['argument_bytes'] / 1e3:.0f} kB of arguments in "
        f"{sizes['argument_fragments']:,} fragments; {rounds} rounds, median CPU ms"
    )
    report_workloads(figures, "anthropic SDK")


def report_workloads(figures: dict[str, Any], sdk_name: str) -> None:
    """The text and tool workloads, the recorded streams and the goals, as text
    (``bench_responses`` prints its own the same way)."""
    for name in ("text", "tool"):
        result = figures[name]
        print(f"\n{name}: {result['bytes'] / 1e6:.2f} MB, {result['events']:,} events")
        for contender, value in result["ms"].items():
            print(f"  {contender:<14} {value:9.2f} ms   {result['bytes'] / value / 1e3:7.1f} MB/s")
        ratios = result["ratios"]
        if "sdk/tether" in ratios:
            sdk = ratios["sdk/tether"]
            verdict = "met" if sdk >= 3 else "NOT met"
            print(f"  {sdk_name} / tether: {sdk:.2f}x (goal >= 3) — {verdict}")
        print(f"  tether / json.loads floor: {ratios['tether/floor']:.2f}x")
    if figures["recorded"] is not None:
        rec = figures["recorded"]
        print(f"\nrecorded: {rec['streams']} streams, {rec['events']:,} events")
        for contender, value in rec["ms"].items():
            print(f"  {contender:<14} {value:9.3f} ms")
        floor.report(rec["ratios"])
    for goal in figures["goals"]:
        print(goals.line(goal))


if __name__ == "__main__":
    main()
