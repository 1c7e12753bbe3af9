"""OpenAI Responses stream bytes to a ``ModelResponse``: tether next to the official SDK's
stream accumulator and the ``json.loads`` floor.

    python benchmarks/bench_responses.py            # 7 rounds
    python benchmarks/bench_responses.py --quick    # 3 rounds, half the sizes
    python benchmarks/bench_responses.py --json     # print the figures as JSON

The stream is written here in OpenAI's recorded shape (an ``event:`` line and a ``data:``
line per event, ``sequence_number`` on every event, the random ``obfuscation`` padding and
``logprobs`` on deltas, the full ``response`` object on the lifecycle events): a reasoning
item whose summary streams in 500 deltas and whose ``output_item.done`` carries a 4 kB
encrypted content, a message of 2,000 text deltas, then one ``write`` function call whose
100 kB of JSON arguments (a source file with quotes, backslashes and newlines) arrive in
1,000 ``function_call_arguments.delta`` events, then ``response.completed``. Everything is in
memory; the body is cut into 64 KiB network chunks. Two workloads: ``text`` (the stream
without the call) and ``tool`` (all of it). Contenders, all on the same bytes:

* ``tether``: ``tether.providers._sse.SSEDecoder``, ``loads_payload`` of each payload and
  ``ResponsesStreamParser`` (what ``OpenAIResponsesModel`` runs): chunks and the final
  ``ModelResponse`` with the call's arguments parsed and frozen.
* ``openai SDK``: the same decoder and ``json.loads``, then what the SDK's own stream does
  (``openai._streaming`` then ``client.responses.stream``): ``construct_type`` of each event
  as a ``ResponseStreamEvent`` and ``ResponseStreamState.handle_event``; its completed
  response, the call's arguments parsed with ``json.loads``. Skipped when ``openai`` is not
  installed.
* ``floor``: ``json.loads`` of each payload text alone (already split out of the stream).
* ``sse floor`` (recorded streams, ``bench_anthropic.recorded_workload``): ``floor.py``, the
  same network chunks framed into events and each payload's JSON decoded; ``tether / sse
  floor`` is a goal too (benchmarks/README.md, "The SSE + JSON floor").

Goals: the SDK at least 3x slower than tether (text, tool); tether at most 1.5x the floor on
the recorded Responses streams. Medians of CPU time (``process_time``) over interleaved
rounds (the order alternates), with the garbage collector paused inside each timed region;
every contender's output is checked.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import platform
import sys
from pathlib import Path
from typing import Any, Final

import goals
import recorded
from bench_anthropic import (
    Contender,
    decode,
    floor_goal,
    recorded_workload,
    report_workloads,
    source_file,
    split,
    workload,
)

try:
    from tether.providers._sse import SSEDecoder
    from tether.providers.responses_wire import ResponsesStreamParser
except ImportError:  # running from a checkout without an installed tether
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    from tether.providers._sse import SSEDecoder
    from tether.providers.responses_wire import ResponsesStreamParser

REQUEST_ID: Final = "request-001"
SDK_MISSING: Final = "openai not installed (pip install openai): SDK contender skipped"
RESPONSE_ID: Final = "resp_0b3nchB3nchB3nchB3nchB3nch"

# --- the stream -----------------------------------------------------------------------------------


def _response(status: str, usage: dict[str, Any] | None) -> dict[str, Any]:
    """The ``response`` object lifecycle events carry (the fields a real one has)."""
    return {
        "id": RESPONSE_ID,
        "object": "response",
        "created_at": 1782321745,
        "status": status,
        "background": False,
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "max_output_tokens": None,
        "model": "gpt-5-2025-08-07",
        "output": None if status == "completed" else [],
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": {"effort": "medium", "summary": "auto"},
        "store": False,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}, "verbosity": "medium"},
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": usage,
        "metadata": {},
    }


def stream_body(summary_deltas: int, text_deltas: int, arguments: str, fragments: int) -> bytes:
    """A Responses-shaped SSE body; no function call when ``fragments`` is 0."""
    reasoning_id = "rs_0b3nchB3nchB3nchB3nch"
    message_id = "msg_0b3nchB3nchB3nchB3nch"
    call_id = "fc_0b3nchB3nchB3nchB3nch"
    encrypted = "gAAAAABqPBJRAhmec86Fy9tP-ivVhrv0x9ECGIiqBAfx7OXcUgKd9ho8" * 70
    summary = "".join(f" idea{n}" for n in range(summary_deltas))
    text = "".join(f" word{n}" for n in range(text_deltas))
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": _response("in_progress", None)},
        {"type": "response.in_progress", "response": _response("in_progress", None)},
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {
                "id": reasoning_id,
                "type": "reasoning",
                "encrypted_content": encrypted[:824],
                "summary": [],
            },
        },
        {
            "type": "response.reasoning_summary_part.added",
            "item_id": reasoning_id,
            "output_index": 0,
            "summary_index": 0,
            "part": {"type": "summary_text", "text": ""},
        },
    ]
    events.extend(
        {
            "type": "response.reasoning_summary_text.delta",
            "delta": f" idea{n}",
            "item_id": reasoning_id,
            "obfuscation": "xgdyp"[: n % 5 + 1],
            "output_index": 0,
            "summary_index": 0,
        }
        for n in range(summary_deltas)
    )
    events += [
        {
            "type": "response.reasoning_summary_text.done",
            "item_id": reasoning_id,
            "output_index": 0,
            "summary_index": 0,
            "text": summary,
        },
        {
            "type": "response.reasoning_summary_part.done",
            "item_id": reasoning_id,
            "output_index": 0,
            "summary_index": 0,
            "part": {"type": "summary_text", "text": summary},
        },
        {
            "type": "response.output_item.done",
            "output_index": 0,
            "item": {
                "id": reasoning_id,
                "type": "reasoning",
                "encrypted_content": encrypted,
                "summary": [{"type": "summary_text", "text": summary}],
            },
        },
        {
            "type": "response.output_item.added",
            "output_index": 1,
            "item": {
                "id": message_id,
                "type": "message",
                "status": "in_progress",
                "content": [],
                "role": "assistant",
            },
        },
        {
            "type": "response.content_part.added",
            "item_id": message_id,
            "output_index": 1,
            "content_index": 0,
            "part": {"type": "output_text", "annotations": [], "logprobs": [], "text": ""},
        },
    ]
    events.extend(
        {
            "type": "response.output_text.delta",
            "content_index": 0,
            "delta": f" word{n}",
            "item_id": message_id,
            "logprobs": [],
            "obfuscation": "y4lUv4u4Yw"[: n % 9 + 1],
            "output_index": 1,
        }
        for n in range(text_deltas)
    )
    part: dict[str, Any] = {"type": "output_text", "annotations": [], "logprobs": [], "text": text}
    events += [
        {
            "type": "response.output_text.done",
            "content_index": 0,
            "item_id": message_id,
            "logprobs": [],
            "output_index": 1,
            "text": text,
        },
        {
            "type": "response.content_part.done",
            "content_index": 0,
            "item_id": message_id,
            "output_index": 1,
            "part": part,
        },
        {
            "type": "response.output_item.done",
            "output_index": 1,
            "item": {
                "id": message_id,
                "type": "message",
                "status": "completed",
                "content": [part],
                "role": "assistant",
            },
        },
    ]
    if fragments:
        call = {"id": call_id, "type": "function_call", "call_id": "call_B3nch", "name": "write"}
        events.append(
            {
                "type": "response.output_item.added",
                "output_index": 2,
                "item": {**call, "arguments": "", "status": "in_progress"},
            }
        )
        events.extend(
            {
                "type": "response.function_call_arguments.delta",
                "delta": piece,
                "item_id": call_id,
                "obfuscation": "kx8",
                "output_index": 2,
            }
            for piece in split(arguments, fragments)
        )
        events += [
            {
                "type": "response.function_call_arguments.done",
                "arguments": arguments,
                "item_id": call_id,
                "output_index": 2,
            },
            {
                "type": "response.output_item.done",
                "output_index": 2,
                "item": {**call, "arguments": arguments, "status": "completed"},
            },
        ]
    usage = {
        "input_tokens": 1200,
        "input_tokens_details": {"cached_tokens": 1024},
        "output_tokens": 30_000,
        "output_tokens_details": {"reasoning_tokens": 2_000},
        "total_tokens": 31_200,
    }
    events.append({"type": "response.completed", "response": _response("completed", usage)})
    frames: list[str] = []
    for number, event in enumerate(events):
        data = json.dumps({**event, "sequence_number": number}, separators=(",", ":"))
        frames.append(f"event: {event['type']}\ndata: {data}\n\n")
    return "".join(frames).encode()


# --- contenders -----------------------------------------------------------------------------------

_loads = recorded.payload_loader


def _measured(response: Any) -> tuple[int, int, int]:
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


def tether_contender(chunks: list[bytes]) -> Contender:
    """The provider's path: ``SSEDecoder.feed_fields`` and ``loads_payload`` per event (what
    ``HttpStreamModel`` runs), the parser fed until its terminal event."""
    loads = _loads()

    def run() -> tuple[int, int, int]:
        parser = ResponsesStreamParser(REQUEST_ID)
        feed = parser.feed
        emitted = 0
        decoder = SSEDecoder(max_event_bytes=16 << 20)
        for chunk in chunks:
            for kind, data, _, _ in decoder.feed_fields(chunk):
                emitted += len(feed(loads(data), kind))
        tail, response = parser.finish(done=parser.stopped)
        if emitted == 0 or tail:
            raise AssertionError("tether produced no chunks")
        return _measured(response)

    return run


def sdk_contender(chunks: list[bytes]) -> Contender | None:
    """What the SDK's own stream does: ``construct_type`` each event as a
    ``ResponseStreamEvent`` (``openai._streaming``), then ``ResponseStreamState.handle_event``
    (``client.responses.stream``); the completed response, the call's arguments parsed."""
    try:
        models: Any = importlib.import_module("openai._models")
        types_: Any = importlib.import_module("openai.types.responses")
        streaming: Any = importlib.import_module("openai.lib.streaming.responses._responses")
        openai: Any = importlib.import_module("openai")
    except ImportError:
        return None
    construct = models.construct_type
    event_type = types_.ResponseStreamEvent
    state_class = streaming.ResponseStreamState
    omit = openai.omit
    loads = json.loads

    def run() -> tuple[int, int, int]:
        state = state_class(input_tools=omit, text_format=omit)
        handle = state.handle_event
        for _, data in decode(chunks):
            handle(construct(type_=event_type, value=loads(data)))
        response = state._completed_response  # the stream's final response
        thinking = text = arguments = 0
        for item in response.output:
            if item.type == "reasoning":
                thinking += sum(len(part.text) for part in item.summary)
            elif item.type == "message":
                text += sum(len(part.text) for part in item.content)
            elif item.type == "function_call":
                arguments += len(loads(item.arguments)["content"])
        return thinking, text, arguments

    return run


# --- measurement ----------------------------------------------------------------------------------

CONTENDERS: Final[dict[str, Any]] = {
    "tether": tether_contender,
    "sdk_for": sdk_contender,
    "sdk_name": "openai SDK",
}
"""This API's contenders for ``bench_anthropic.workload`` (which measures and checks them)."""


def responses_goals(figures: dict[str, Any], sdk_missing: str | None) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    what = "Responses parse vs a bare json.loads per SSE event (recorded streams)"
    if figures["recorded"] is None:
        found.append(goals.skipped(what, "≤ 1.5x", recorded.missing("openai-responses")))
    else:
        samples = figures["recorded"]["samples"]
        found.append(goals.at_most(what, goals.ratios(samples["tether"], samples["floor"]), 1.5))
    found.append(floor_goal("Responses", figures["recorded"], recorded.missing("openai-responses")))
    for name in ("text", "tool"):
        what = f"openai SDK Responses accumulator / tether, {name} workload"
        samples = figures[name]["samples"]
        found.append(goals.sdk_goal(what, samples, "openai SDK", sdk_missing or SDK_MISSING))
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
    summary_deltas = 500 // scale
    text_deltas = 2_000 // scale
    argument_chars = 100_000 // scale
    fragments = 1_000 // scale

    if not options.json:
        print(
            f"OpenAI Responses stream benchmark: Python {platform.python_version()} "
            f"({platform.python_implementation()}), {platform.machine()}"
        )
        if sys.flags.dev_mode:
            print("note: Python dev mode is on; numbers are slower than usual")
    sdk_missing = None if importlib.util.find_spec("openai") else SDK_MISSING
    if sdk_missing and not options.json:
        print(f"SKIPPED: {sdk_missing}", file=sys.stderr)

    arguments = json.dumps({"path": "src/generated.py", "content": source_file(argument_chars)})
    content_chars = len(json.loads(arguments)["content"])
    thinking_chars = sum(len(f" idea{n}") for n in range(summary_deltas))
    text_chars = sum(len(f" word{n}") for n in range(text_deltas))
    figures: dict[str, Any] = {
        "sizes": {
            "summary_deltas": summary_deltas,
            "text_deltas": text_deltas,
            "argument_bytes": len(arguments),
            "argument_fragments": fragments,
        },
        "text": workload(
            stream_body(summary_deltas, text_deltas, arguments, 0),
            rounds,
            (thinking_chars, text_chars, 0),
            **CONTENDERS,
        ),
        "tool": workload(
            stream_body(summary_deltas, text_deltas, arguments, fragments),
            rounds,
            (thinking_chars, text_chars, content_chars),
            **CONTENDERS,
        ),
        "recorded": recorded_workload(rounds, "openai-responses", ResponsesStreamParser),
    }
    figures["goals"] = responses_goals(figures, sdk_missing)
    for name in ("text", "tool"):
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
        f"\n{sizes['summary_deltas']:,} summary + {sizes['text_deltas']:,} text deltas; tool "
        f"workload adds {sizes['argument_bytes'] / 1e3:.0f} kB of arguments in "
        f"{sizes['argument_fragments']:,} fragments; {rounds} rounds, median CPU ms"
    )
    report_workloads(figures, "openai SDK")


if __name__ == "__main__":
    main()
