"""Throughput of tether's ``SSEDecoder`` next to a bare ``split(b"\\n\\n")`` parser.

    python benchmarks/bench_sse.py            # full run (10,000 events, 15 rounds)
    python benchmarks/bench_sse.py --quick    # a few seconds
    python benchmarks/bench_sse.py --json     # also print the figures as JSON

The input is a synthetic OpenAI Chat Completions stream: N ``data: {chunk JSON}`` events of
one token each (LF line ends, the shape real servers send), then ``data: [DONE]``. It is cut
into 1 KiB and 16 KiB chunks before timing, as a socket would deliver it. Two contenders
decode the same chunks in the same process:

* baseline: append the chunk to the leftover bytes, ``split(b"\\n\\n")``, keep the last
  piece for the next chunk, and for each block split the lines, keep those starting with
  ``data: `` and decode their joined values (the least a correct-for-this-input parser does;
  it knows nothing of CR, BOM, comments, other fields, or bounds);
* SSEDecoder: ``feed`` every chunk, then ``close`` (the whole rule set, UTF-8 checked per
  line, bounds enforced, one frozen ``SSEEvent`` per event).

Both must return the same number of events and data characters, so nothing is skipped. Each
round runs every contender once per chunk size; the order alternates between rounds (forward,
then reversed) so warm-up and drift favour no one. Figures are medians of this thread's CPU
time (``thread_time``, meaningful on a busy machine), with the garbage collector paused inside
each timed region; the ratio is SSEDecoder CPU time over baseline CPU time (1.0 = as fast).
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Final

try:
    from tether.providers._sse import SSEDecoder
except ImportError:  # running from a checkout without an installed tether
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    from tether.providers._sse import SSEDecoder

Contender = Callable[[list[bytes]], tuple[int, int]]
"""Decodes the chunks; returns (events, characters of data), checked against each other."""

CHUNK_SIZES: Final = (1024, 16 * 1024)
WORDS: Final = ("The", " quick", " brown", " fox", " jumps", " over", " the", " lazy", " dog.")


def synthetic_stream(events: int) -> bytes:
    """An OpenAI-like body: ``events`` one-token chunks, a finish chunk and ``[DONE]``."""
    out: list[bytes] = []
    base = {
        "id": "chatcmpl-BxTqI7eZ0a9sG4kHn2VbQ1",
        "object": "chat.completion.chunk",
        "created": 1766400000,
        "model": "gpt-4o-mini-2024-07-18",
        "service_tier": "default",
        "system_fingerprint": "fp_560af6e559",
    }
    for index in range(events):
        chunk = {
            **base,
            "choices": [
                {
                    "index": 0,
                    "delta": {"content": WORDS[index % len(WORDS)]},
                    "logprobs": None,
                    "finish_reason": None,
                }
            ],
            "usage": None,
            "obfuscation": f"{index * 2654435761 % 99991:05d}",
        }
        out.append(b"data: " + json.dumps(chunk, separators=(",", ":")).encode() + b"\n\n")
    out.append(b"data: [DONE]\n\n")
    return b"".join(out)


def chunked(body: bytes, size: int) -> list[bytes]:
    return [body[start : start + size] for start in range(0, len(body), size)]


def baseline(chunks: list[bytes]) -> tuple[int, int]:
    """``split(b"\\n\\n")`` + line parsing: the floor for LF-only ``data:`` streams."""
    pending = b""
    events = 0
    characters = 0
    for chunk in chunks:
        blocks = (pending + chunk).split(b"\n\n")
        pending = blocks.pop()
        for block in blocks:
            values = [line[6:] for line in block.split(b"\n") if line.startswith(b"data: ")]
            if values:
                data = b"\n".join(values).decode()
                events += 1
                characters += len(data)
    return events, characters


def sse_decoder(chunks: list[bytes]) -> tuple[int, int]:
    """tether's ``SSEDecoder``: every chunk fed, then closed."""
    decoder = SSEDecoder()
    events = 0
    characters = 0
    for chunk in chunks:
        for event in decoder.feed(chunk):
            events += 1
            characters += len(event.data)
    for event in decoder.close():
        events += 1
        characters += len(event.data)
    return events, characters


CONTENDERS: Final[dict[str, Contender]] = {"baseline": baseline, "SSEDecoder": sse_decoder}


def time_once(contender: Contender, chunks: list[bytes], repeat: int) -> tuple[float, int, int]:
    """CPU seconds of ``repeat`` decodes of ``chunks``, and what one decode returned."""
    events = characters = 0
    gc.collect()
    gc.disable()
    try:
        start = time.thread_time()
        for _ in range(repeat):
            events, characters = contender(chunks)
        cpu = time.thread_time() - start
    finally:
        gc.enable()
    return cpu, events, characters


def measure(
    chunks: dict[int, list[bytes]], rounds: int, repeat: int
) -> dict[int, dict[str, list[float]]]:
    """CPU seconds per decode, per chunk size and contender, over interleaved rounds."""
    names = list(CONTENDERS)
    results: dict[str, tuple[int, int]] = {}
    for size, pieces in chunks.items():  # warm-up and cross-check, not recorded
        for name in names:
            _, events, characters = time_once(CONTENDERS[name], pieces, 1)
            results[f"{size}/{name}"] = (events, characters)
        if len({results[f"{size}/{name}"] for name in names}) != 1:
            raise AssertionError(f"contenders disagree: {results}")
    samples: dict[int, dict[str, list[float]]] = {size: {n: [] for n in names} for size in chunks}
    for round_index in range(rounds):
        order = names if round_index % 2 == 0 else names[::-1]
        for size, pieces in chunks.items():
            for name in order:
                cpu, _, _ = time_once(CONTENDERS[name], pieces, repeat)
                samples[size][name].append(cpu / repeat)
    return samples


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="3 rounds of one decode each")
    parser.add_argument("--events", type=int, help="events in the stream (default 10000)")
    parser.add_argument("--rounds", type=int, help="rounds per contender (default 15)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--json-out", help="also write the figures as JSON here")
    options = parser.parse_args(argv)
    n_events: int = options.events or 10_000
    rounds: int = options.rounds or (3 if options.quick else 15)
    repeat = 1 if options.quick else 5

    body = synthetic_stream(n_events)
    dispatched = n_events + 1  # the [DONE] event too
    chunks = {size: chunked(body, size) for size in CHUNK_SIZES}
    print(
        f"SSE decoder benchmark: Python {platform.python_version()} "
        f"({platform.python_implementation()}), {platform.machine()}"
    )
    if sys.flags.dev_mode:
        print("note: Python dev mode is on; numbers are slower than usual")
    samples = measure(chunks, rounds, repeat)

    megabytes = len(body) / 1e6
    print(
        f"\nstream: {dispatched:,} events, {megabytes:.2f} MB; {rounds} rounds x {repeat} "
        "decodes; medians of CPU time"
    )
    print(f"  {'chunk':>6}  {'contender':<11} {'ms/decode':>10} {'MB/s':>8} {'events/s':>12}")
    figures: dict[str, object] = {"events": dispatched, "bytes": len(body), "rounds": rounds}
    for size, runs in samples.items():
        label = f"{size // 1024}KiB"
        row: dict[str, object] = {}
        for name, values in runs.items():
            cpu = statistics.median(values)
            row[name] = {
                "cpu_ms": cpu * 1e3,
                "mb_per_s": megabytes / cpu,
                "events_per_s": dispatched / cpu,
            }
            print(
                f"  {label:>6}  {name:<11} {cpu * 1e3:>10.2f} {megabytes / cpu:>8.1f} "
                f"{dispatched / cpu:>12,.0f}"
            )
        ratio = statistics.median(runs["SSEDecoder"]) / statistics.median(runs["baseline"])
        row["ratio"] = ratio
        figures[label] = row
        print(f"  {label:>6}  SSEDecoder / baseline CPU time: {ratio:.2f}x")
    if options.json_out:
        Path(options.json_out).write_text(json.dumps(figures, indent=2), encoding="utf-8")
    if options.json:
        print(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
