"""The ``tether`` command.

``tether run`` runs the agent loop on a provider fixture with a built-in ``add`` tool and
shows the run as it happens: streamed text, each tool call and its result, the final status
and token usage. With no options it replays the bundled round-trip fixture ("What is 20 +
22?"). ``--json`` prints one camelCase JSON event per line instead. The exit status is 0 only
for a ``completed`` run (1 failed, 2 usage or fixture error, 3 max steps, 130 cancelled).

``tether trace`` prints the checkpoint-00 trace as JSON lines.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal as signals
import sys
from collections.abc import AsyncIterator, Generator, Sequence
from importlib import resources
from pathlib import Path
from typing import Any, TextIO

from tether.abort import AbortController, AbortSignal
from tether.tools.function import tool
from tether.loop import MAX_AGENT_STEPS, Model, ModelStream, run_agent_loop
from tether.messages import user_message
from tether.protocol import (
    AgentEvent,
    ModelChunk,
    ModelRequest,
    ModelResponse,
    RunResult,
    assert_never,
    to_json,
)
from tether.providers.fixture import FixtureProviderAdapter, FixtureProviderError
from tether.tools import ToolRegistry

__all__ = ["main"]

DEFAULT_PROMPT = "What is 20 + 22?"
EXIT_STATUS = {"completed": 0, "failed": 1, "maxSteps": 3, "cancelled": 130}


@tool
async def add(left: int, right: int) -> int:
    """Add two integers.

    Args:
        left: The first addend.
        right: The second addend.
    """
    return left + right


class _UsageMeter:
    """Wraps a model to add up the token usage of every response the run received."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self.input_tokens = 0
        self.output_tokens = 0
        self.turns = 0

    def stream(self, request: ModelRequest, signal: AbortSignal) -> ModelStream:
        return _MeteredStream(self, self.model.stream(request, signal))


class _MeteredStream:
    def __init__(self, meter: _UsageMeter, inner: ModelStream) -> None:
        self._meter = meter
        self._inner = inner

    def __aiter__(self) -> AsyncIterator[ModelChunk]:
        return self._inner.__aiter__()

    @property
    def result(self) -> _MeteredResult:
        return _MeteredResult(self._meter, self._inner)


class _MeteredResult:
    def __init__(self, meter: _UsageMeter, inner: ModelStream) -> None:
        self._meter = meter
        self._inner = inner

    def __await__(self) -> Generator[Any, Any, ModelResponse]:
        response = yield from self._inner.result.__await__()
        self._meter.turns += 1
        self._meter.input_tokens += response.usage.input_tokens
        self._meter.output_tokens += response.usage.output_tokens
        return response


def _bundled_fixture() -> Path:
    return Path(str(resources.files("tether") / "_data" / "provider-tool-roundtrip.json"))


def _compact(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


class _HumanView:
    """Writes a run for a person to read, as it happens."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.in_text = False

    def show(self, event: AgentEvent) -> None:
        match event.type:
            case "message.accepted":
                message = event.payload.message
                if message.role == "user":
                    self.line(f"user: {message.content}")
            case "model.chunk":
                chunk = event.payload.chunk
                if chunk.type == "textDelta":
                    if not self.in_text:
                        self.out.write("assistant: ")
                        self.in_text = True
                    self.out.write(chunk.delta)
                    self.out.flush()
            case "tool.started":
                call = event.payload.tool_call
                self.line(f"→ {call.name}({_compact(to_json(call.arguments))})  [{call.id}]")
            case "tool.finished":
                result = event.payload.message
                marker = "error" if result.is_error else "ok"
                self.line(f"← {result.tool_name} {marker}: {result.content}")
            case "run.finished":
                self.end_text()
            case _:
                assert_never(event)

    def line(self, text: str) -> None:
        self.end_text()
        self.out.write(text + "\n")
        self.out.flush()

    def end_text(self) -> None:
        if self.in_text:
            self.out.write("\n")
            self.in_text = False

    def summary(self, result: RunResult, meter: _UsageMeter) -> None:
        match result.status:
            case "completed":
                detail = "completed"
            case "cancelled":
                detail = f"cancelled: {result.reason}"
            case "maxSteps":
                detail = f"stopped after max steps ({result.max_steps})"
            case "failed":
                detail = f"failed [{result.error.code}]: {result.error.message}"
            case _:
                assert_never(result)
        self.line(
            f"status: {detail} · model turns: {meter.turns} · tokens: "
            f"{meter.input_tokens} in, {meter.output_tokens} out"
        )


async def _run(args: argparse.Namespace, out: TextIO) -> int:
    fixture = Path(args.fixture) if args.fixture else _bundled_fixture()
    try:
        provider = FixtureProviderAdapter.from_path(fixture)
    except FixtureProviderError as error:
        detail = f" ({error.__cause__})" if error.__cause__ else ""
        sys.stderr.write(f"tether run: {fixture}: [{error.code}] {error}{detail}\n")
        return 2
    meter = _UsageMeter(provider)
    controller = AbortController()
    loop = asyncio.get_running_loop()
    with contextlib.suppress(NotImplementedError, RuntimeError):  # not on every platform
        loop.add_signal_handler(signals.SIGINT, controller.abort, "Interrupted by the user")
    view = None if args.json else _HumanView(out)
    try:
        stream = run_agent_loop(
            messages=[user_message(id="user-001", content=args.prompt)],
            model=meter,
            tools=ToolRegistry([add]),
            max_steps=args.max_steps,
            signal=controller.signal,
        )
        async for event in stream:
            if view is None:
                out.write(_compact(to_json(event)) + "\n")
                out.flush()
            else:
                view.show(event)
        result = await stream.result
    finally:
        loop.remove_signal_handler(signals.SIGINT)
    if view is not None:
        view.summary(result, meter)
    return EXIT_STATUS[result.status]


def _print_trace(out: TextIO) -> int:
    from tether.trace import run_prologue

    prologue = run_prologue()
    for record in prologue.events:
        out.write(_compact(record.to_json()) + "\n")
    out.write(_compact(prologue.result.to_json()) + "\n")
    return 0


def _steps(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if not 1 <= value <= MAX_AGENT_STEPS:
        raise argparse.ArgumentTypeError(f"must be between 1 and {MAX_AGENT_STEPS}")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tether", description="The tether agent runtime.")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser(
        "run", help="run the agent loop on a provider fixture with a built-in add tool"
    )
    run.add_argument("--fixture", metavar="PATH", help="provider fixture (default: bundled)")
    run.add_argument("--prompt", default=DEFAULT_PROMPT, help="the user message")
    run.add_argument(
        "--max-steps", type=_steps, default=8, metavar="N", help="model steps allowed (1-64)"
    )
    run.add_argument("--json", action="store_true", help="one camelCase JSON event per line")
    commands.add_parser("trace", help="print the checkpoint-00 agent trace as JSON lines")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``tether`` console script; returns the process exit status."""
    args = _parser().parse_args(argv)
    if args.command == "trace":
        return _print_trace(sys.stdout)
    if args.command == "run":
        try:
            return asyncio.run(_run(args, sys.stdout))
        except BrokenPipeError:  # the reader went away (`tether run --json | head`)
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 1
    raise AssertionError(f"unhandled command {args.command!r}")  # pragma: no cover


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
