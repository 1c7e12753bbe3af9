"""Gemini ``streamGenerateContent?alt=sse`` bytes to a ``ModelResponse``: tether next to the
official SDK (``google-genai``) and the ``json.loads`` floor.

    python benchmarks/bench_gemini.py            # 7 rounds
    python benchmarks/bench_gemini.py --quick    # 3 rounds, half the sizes
    python benchmarks/bench_gemini.py --json     # print the figures as JSON

Gemini streams whole ``GenerateContentResponse`` objects, one per event (``data:`` lines,
CRLF CRLF between events, ``usageMetadata`` and ``modelVersion`` on every chunk). Workloads,
all in memory, each body cut into 64 KiB network chunks:

* ``recorded``: every recorded Gemini stream of the shared folder, each parsed 50 times;
* ``text``: a synthetic stream in the recorded shape: 200 ``thought: true`` chunks, then
  2,000 answer chunks (the first with a 6 kB ``thoughtSignature``), the last with ``STOP``;
* ``tool``: 20 chunks of prose, then 40 whole ``functionCall`` parts (one per chunk, the
  first signed, each with about 2.5 kB of arguments: a source file with quotes, backslashes
  and newlines).

Contenders, on the same bytes:

* ``tether``: ``tether.providers._sse.SSEDecoder.feed_fields``, ``loads_payload`` and
  ``GeminiStreamParser`` (what ``GeminiModel`` runs): chunks and the final ``ModelResponse``;
* ``google-genai SDK``: the same decoder and ``json.loads``, then what the SDK's own stream
  does with each event (``models._GenerateContentResponse_from_mldev`` and
  ``types.GenerateContentResponse._from_response``), the parts' text, thoughts and calls
  gathered from its objects (the SDK has no accumulator of its own). Skipped when
  ``google-genai`` is not installed;
* ``floor``: ``json.loads`` of each payload text alone (already split out of the stream).

Goal: the SDK at least 3x slower than tether on every workload. Medians of CPU time
(``process_time``) over interleaved rounds (the order alternates), with the garbage collector
paused inside each timed region; every contender's output is checked.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import platform
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import goals
import recorded
from bench_anthropic import network_chunks, source_file, time_once

try:
    from tether.providers._sse import SSEDecoder
    from tether.providers.gemini_wire import GeminiStreamParser
except ImportError:  # running from a checkout without an installed tether
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    from tether.providers._sse import SSEDecoder
    from tether.providers.gemini_wire import GeminiStreamParser

REQUEST_ID: Final = "request-001"
SDK = "google-genai SDK"
SDK_MISSING: Final = "google-genai not installed (pip install google-genai): SDK contender skipped"
RECORDED_REPEAT: Final = 50

Outcome = tuple[int, int, int]
"""(thinking characters, text characters, tool calls): what every contender must agree on."""
Contender = Callable[[], Outcome]

# --- the streams ----------------------------------------------------------------------------------


def _payload(parts: list[dict[str, Any]], n: int, finish: str | None = None) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
    if finish is not None:
        candidate["finishReason"] = finish
    return {
        "candidates": [candidate],
        "usageMetadata": {
            "promptTokenCount": 1200,
            "candidatesTokenCount": n,
            "totalTokenCount": 1200 + 2 * n,
            "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 1200}],
            "thoughtsTokenCount": n,
        },
        "modelVersion": "gemini-2.5-pro",
        "responseId": "beHBaJfEMIi-qtsP3769-Q8",
    }


def _body(payloads: list[dict[str, Any]]) -> bytes:
    # Gemini's own JSON: ": " after keys, no space after commas.
    return "".join(
        f"data: {json.dumps(payload, separators=(',', ': '))}\r\n\r\n" for payload in payloads
    ).encode()


SIGNATURE: Final = "CiIB0e2Kb6Syj1a961EfbWv4W5C8RgAA/hGleV9VYJtnJFh4CmkB0e2Kb2qMva5N" * 96


def text_body(thoughts: int, words: int) -> bytes:
    thought = "**Step {0}**\n\nI'm thinking about part {0}.\n\n"
    payloads = [
        _payload([{"text": thought.format(n), "thought": True}], n) for n in range(thoughts)
    ]
    for n in range(words):
        part: dict[str, Any] = {"text": f" word{n}"}
        if n == 0:
            part["thoughtSignature"] = SIGNATURE
        payloads.append(_payload([part], n, "STOP" if n == words - 1 else None))
    return _body(payloads)


def tool_body(prose: int, calls: int, argument_chars: int) -> bytes:
    payloads = [_payload([{"text": f" step{n}"}], n) for n in range(prose)]
    for n in range(calls):
        part: dict[str, Any] = {
            "functionCall": {
                "name": "write",
                "args": {"path": f"src/generated_{n}.py", "content": source_file(argument_chars)},
            }
        }
        if n == 0:
            part["thoughtSignature"] = SIGNATURE
        payloads.append(_payload([part], n))
    payloads.append(_payload([{"text": ""}], calls, "STOP"))
    return _body(payloads)


def payload_texts(streams: list[list[bytes]]) -> list[str]:
    decoder_texts: list[str] = []
    for chunks in streams:
        decoder = SSEDecoder(max_event_bytes=16 << 20)
        for chunk in chunks:
            decoder_texts.extend(event.data for event in decoder.feed(chunk))
        decoder_texts.extend(event.data for event in decoder.close())
    return decoder_texts


# --- contenders -----------------------------------------------------------------------------------


def tether_contender(streams: list[list[bytes]], repeat: int = 1) -> Contender:
    """The provider's path: ``SSEDecoder.feed_fields``, ``loads_payload``, the parser."""
    loads = recorded.payload_loader()

    def run() -> Outcome:
        outcome = (0, 0, 0)
        for _ in range(repeat):
            thinking = text = calls = 0
            for chunks in streams:
                parser = GeminiStreamParser(REQUEST_ID)
                feed = parser.feed
                decoder = SSEDecoder(max_event_bytes=16 << 20)
                fields = decoder.feed_fields
                for chunk in chunks:
                    for _, data, _, _ in fields(chunk):
                        feed(loads(data))
                _, response = parser.finish(done=False)
                for block in response.message.content:
                    if block.type == "thinking":
                        thinking += len(block.text)
                    elif block.type == "text":
                        text += len(block.text)
                    else:
                        calls += 1
            outcome = (thinking, text, calls)
        return outcome

    return run


def sdk_contender(streams: list[list[bytes]], repeat: int = 1) -> Contender | None:
    """What ``google.genai.models.Models.generate_content_stream`` does with each event, then
    the parts gathered from its objects."""
    try:
        models: Any = importlib.import_module("google.genai.models")
        types_: Any = importlib.import_module("google.genai.types")
    except ImportError:
        return None
    from_mldev = models._GenerateContentResponse_from_mldev
    from_response = types_.GenerateContentResponse._from_response
    loads = json.loads

    def run() -> Outcome:
        outcome = (0, 0, 0)
        for _ in range(repeat):
            thinking = text = calls = 0
            for chunks in streams:
                decoder = SSEDecoder(max_event_bytes=16 << 20)
                for chunk in chunks:
                    for _, data, _, _ in decoder.feed_fields(chunk):
                        response = from_response(response=from_mldev(loads(data)), kwargs={})
                        for candidate in response.candidates or ():
                            content = candidate.content
                            for part in (content and content.parts) or ():
                                if part.function_call is not None:
                                    calls += 1
                                elif part.text:
                                    if part.thought:
                                        thinking += len(part.text)
                                    else:
                                        text += len(part.text)
            outcome = (thinking, text, calls)
        return outcome

    return run


def floor_contender(payloads: list[str], repeat: int = 1) -> Contender:
    loads = json.loads

    def run() -> Outcome:
        for _ in range(repeat):
            for data in payloads:
                loads(data)
        return 0, 0, 0

    return run


# --- measurement ----------------------------------------------------------------------------------


def workload(bodies: list[bytes], rounds: int, repeat: int = 1) -> dict[str, Any]:
    """CPU milliseconds per pass over ``bodies`` for each contender, interleaved rounds."""
    streams = [network_chunks(body) for body in bodies]
    payloads = payload_texts(streams)
    contenders: dict[str, Contender] = {
        "floor": floor_contender(payloads, repeat),
        "tether": tether_contender(streams, repeat),
    }
    sdk = sdk_contender(streams, repeat)
    if sdk is not None:
        contenders[SDK] = sdk
    _, expected = time_once(contenders["tether"])
    for name, contender in contenders.items():  # warm-up, and check every contender's output
        _, outcome = time_once(contender)
        wanted = (0, 0, 0) if name == "floor" else expected
        if outcome != wanted:
            raise AssertionError(f"{name} produced {outcome}, expected {wanted}")
    names = list(contenders)
    samples: dict[str, list[float]] = {name: [] for name in names}
    for round_index in range(rounds):
        for name in names if round_index % 2 == 0 else names[::-1]:
            elapsed, _ = time_once(contenders[name])
            samples[name].append(elapsed * 1e3 / repeat)
    ms = {name: statistics.median(values) for name, values in samples.items()}
    ratios = {"tether/floor": ms["tether"] / ms["floor"]}
    if SDK in ms:
        ratios["sdk/tether"] = ms[SDK] / ms["tether"]
    return {
        "streams": len(bodies),
        "bytes": sum(len(body) for body in bodies),
        "events": len(payloads),
        "outcome": expected,
        "ms": ms,
        "ratios": ratios,
        "samples": samples,
    }


def gemini_goals(figures: dict[str, Any], sdk_missing: str | None) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for name in ("recorded", "text", "tool"):
        what = f"google-genai SDK / tether, {name} Gemini streams"
        result = figures[name]
        if result is None:
            found.append(goals.skipped(what, "≥ 3x", recorded.missing("gemini")))
        else:
            missing = sdk_missing or SDK_MISSING
            found.append(goals.sdk_goal(what, result["samples"], SDK, missing))
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
    if not options.json:
        print(
            f"Gemini stream benchmark: Python {platform.python_version()} "
            f"({platform.python_implementation()}), {platform.machine()}"
        )
        if sys.flags.dev_mode:
            print("note: Python dev mode is on; numbers are slower than usual")
    sdk_missing = None if importlib.util.find_spec("google.genai") else SDK_MISSING
    if sdk_missing and not options.json:
        print(f"SKIPPED: {sdk_missing}", file=sys.stderr)
    found = list(recorded.bodies("gemini").values())
    figures: dict[str, Any] = {
        "recorded": workload(found, rounds, RECORDED_REPEAT // scale) if found else None,
        "text": workload([text_body(200 // scale, 2_000 // scale)], rounds),
        "tool": workload([tool_body(20, 40 // scale, 2_500)], rounds),
    }
    figures["goals"] = gemini_goals(figures, sdk_missing)
    for name in ("recorded", "text", "tool"):
        if figures[name] is not None:
            del figures[name]["samples"]
    if options.json_out:
        Path(options.json_out).write_text(json.dumps(figures, indent=2), encoding="utf-8")
    if options.json:
        print(json.dumps(figures, indent=2))
    else:
        report(figures, rounds)
    return figures


def report(figures: dict[str, Any], rounds: int) -> None:
    print(f"\n{rounds} rounds, median CPU ms per pass")
    for name in ("recorded", "text", "tool"):
        result = figures[name]
        if result is None:
            print(f"\n{name}: SKIPPED ({recorded.missing('gemini')})")
            continue
        print(
            f"\n{name}: {result['streams']} stream(s), {result['bytes'] / 1e6:.3f} MB, "
            f"{result['events']:,} events"
        )
        for contender, value in result["ms"].items():
            print(f"  {contender:<17} {value:9.3f} ms")
        ratios = result["ratios"]
        if "sdk/tether" in ratios:
            print(f"  google-genai SDK / tether: {ratios['sdk/tether']:.2f}x (goal >= 3)")
        print(f"  tether / json.loads floor: {ratios['tether/floor']:.2f}x")
    for goal in figures["goals"]:
        print(goals.line(goal))


if __name__ == "__main__":
    main()
