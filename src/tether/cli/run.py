"""``tether run``: load a provider fixture, run the agent loop on it, show the run as it goes.

Ctrl-C (SIGINT) is always answered:

* The first SIGINT aborts the run. A notice on stderr says so (and that a second Ctrl-C quits
  at once); the run ends ``cancelled`` ("Interrupted by the user") at its next check, the
  events it emitted and the summary are written, and the command exits 130. During fixture
  loading it exits 130 at once, having written nothing.
* The second SIGINT exits at once with 130 (``os._exit``: nothing more is written), even
  while a write to a reader that does not keep up is blocked.

Three things make that hold:

* SIGINT is handled by a Python-level handler (``signal.signal``). Such a handler runs even
  in the middle of a blocking write: the write is interrupted, the handler runs, and the
  write resumes. The event loop's ``add_signal_handler`` would instead run only when the loop
  regains control, which a blocked write never gives it. The handler only hands the abort to
  the loop (``call_soon_threadsafe``); it never touches the run itself.
* The run is paced by the display: before each model turn, the model wrapper waits until
  every event so far has been written. A fixture run never waits on its own (its model
  answers from memory and the ``add`` tool returns at once), so unpaced, the whole run would
  be over, in memory, before its first line was written, and an abort could no longer change
  it. Paced, the run is at most one turn ahead of its output: an abort cancels it at the next
  turn, and the events waiting to be written never exceed one turn's.
* The fixture is loaded on a daemon worker thread, raced against the abort, with SIGINT
  blocked in that thread so that the signal always reaches the main thread. A FIFO with no
  writer, or one that never delivers, cannot hold the command; the thread is left behind.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal as signals
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Generator
from importlib import resources
from pathlib import Path
from types import FrameType
from typing import Any, Final

from tether import (
    AbortController,
    AbortSignal,
    AgentEvent,
    EventStream,
    FixtureProviderAdapter,
    FixtureProviderError,
    Model,
    ModelChunk,
    ModelRequest,
    ModelResponse,
    ModelStream,
    RunResult,
    ToolRegistry,
    run_agent_loop,
    to_json,
    tool,
    user_message,
)
from tether.cli.render import HumanView, Output, json_line, warn

__all__ = ["EXIT_INTERRUPTED", "EXIT_STATUS", "EXIT_USAGE", "add", "run_command"]

EXIT_STATUS: Final = {"completed": 0, "failed": 1, "maxSteps": 3, "cancelled": 130}
"""The exit status of each run result."""
EXIT_USAGE: Final = 2
"""A usage error, or a fixture that could not be loaded."""
EXIT_INTERRUPTED: Final = 130
"""Ctrl-C (128 + SIGINT, as a shell reports it)."""

INTERRUPT_REASON: Final = "Interrupted by the user"
_NOTICE: Final = b"tether run: interrupted; stopping the run (Ctrl-C again quits at once)\n"


@tool
async def add(left: int, right: int) -> int:
    """Add two integers.

    Args:
        left: The first addend.
        right: The second addend.
    """
    return left + right


async def run_command(args: argparse.Namespace, out: Output) -> int:
    """Run ``tether run`` with parsed ``args``, writing to ``out``; returns the exit status.

    A failed write raises ``OutputError`` (after the run was told to stop).
    """
    controller = AbortController()
    with _Interrupts(asyncio.get_running_loop(), controller):
        fixture: Path = args.fixture or _bundled_fixture()
        try:
            provider = await _load(fixture, controller.signal)
        except FixtureProviderError as error:
            detail = f" ({error.__cause__})" if error.__cause__ else ""
            warn(f"tether run: {fixture}: [{error.code}] {error}{detail}")
            return EXIT_USAGE
        if provider is None:
            return EXIT_INTERRUPTED
        pacer = _Pacer()
        meter = _UsageMeter(provider, pacer.wait)
        view = None if args.json else HumanView(out)
        stream = run_agent_loop(
            messages=[user_message(id="user-001", content=args.prompt)],
            model=meter,
            tools=ToolRegistry([add]),
            max_steps=args.max_steps,
            signal=controller.signal,
        )
        try:
            await _show(stream, pacer, view, out)
        finally:
            if not stream.settled:  # the output failed: stop the run instead of leaving it
                controller.abort("The output failed")
        result = await stream.result
        if view is not None:
            view.summary(result, meter.turns, meter.input_tokens, meter.output_tokens)
    return EXIT_STATUS[result.status]


def _bundled_fixture() -> Path:
    return Path(str(resources.files("tether") / "_data" / "provider-tool-roundtrip.json"))


# --- the display and its pace ---------------------------------------------------------------


async def _show(
    stream: EventStream[AgentEvent, RunResult],
    pacer: _Pacer,
    view: HumanView | None,
    out: Output,
) -> None:
    """Write every event of the run as it comes, telling ``pacer`` when all are written.

    Between events the loop gets a turn, so an abort from the SIGINT handler lands promptly.
    """
    events = stream.__aiter__()
    try:
        while True:
            event = events.poll(None)
            if event is None:
                pacer.caught_up()
                event = await events.__anext__()
                pacer.behind()
            if view is None:
                out.write(json_line(to_json(event)))
            else:
                view.show(event)
            await asyncio.sleep(0)
    except StopAsyncIteration:
        return


class _Pacer:
    """Holds the run back, turn by turn, until every event it emitted has been written."""

    __slots__ = ("_written",)

    def __init__(self) -> None:
        self._written = asyncio.Event()

    def caught_up(self) -> None:
        """The display wrote every event and waits for the next one."""
        self._written.set()

    def behind(self) -> None:
        """The display has an event to write."""
        self._written.clear()

    async def wait(self) -> None:
        """Return once the display has caught up.

        The first loop turn lets a display that was just handed an event (its wakeup is
        already scheduled, ahead of this one) take it, so it no longer looks caught up.
        """
        await asyncio.sleep(0)
        await self._written.wait()


class _UsageMeter:
    """Wraps the model: paces each turn and adds up the token usage of every response."""

    def __init__(self, model: Model, pace: Callable[[], Awaitable[None]]) -> None:
        self.model = model
        self.pace = pace
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
        return _PacedIterator(self._inner.__aiter__(), self._meter.pace)

    @property
    def result(self) -> _MeteredResult:
        return _MeteredResult(self._meter, self._inner)


class _PacedIterator:
    """The model's chunks, the first one only once the display has caught up.

    The loop races every step against its signal, so an abort while this waits cancels the
    turn at once.
    """

    __slots__ = ("_inner", "_pace")

    def __init__(self, inner: AsyncIterator[ModelChunk], pace: Callable[[], Awaitable[None]]):
        self._inner = inner
        self._pace: Callable[[], Awaitable[None]] | None = pace

    def __aiter__(self) -> _PacedIterator:
        return self

    async def __anext__(self) -> ModelChunk:
        pace = self._pace
        if pace is not None:
            self._pace = None
            await pace()
        return await self._inner.__anext__()


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


# --- Ctrl-C ---------------------------------------------------------------------------------


class _Interrupts:
    """SIGINT during ``tether run``: the first aborts the run, the second exits at once.

    Installed for the ``with`` body (main thread only), then the previous handler is back.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, controller: AbortController) -> None:
        self._loop = loop
        self._controller = controller
        self._count = 0
        self._previous: Any = None
        self._installed = False

    def __enter__(self) -> _Interrupts:
        try:
            self._previous = signals.signal(signals.SIGINT, self._handle)
        except ValueError:  # not the main thread: SIGINT is not ours to handle
            return self
        self._installed = True
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._installed:
            previous = self._previous
            signals.signal(signals.SIGINT, signals.SIG_DFL if previous is None else previous)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self._count += 1
        if self._count > 1:
            os._exit(EXIT_INTERRUPTED)
        with contextlib.suppress(OSError):  # a raw write: no buffer a handler could re-enter
            os.write(2, _NOTICE)
        with contextlib.suppress(RuntimeError):  # the loop already closed
            self._loop.call_soon_threadsafe(self._abort)

    def _abort(self) -> None:
        if not self._controller.signal.aborted:
            self._controller.abort(INTERRUPT_REASON)


@contextlib.contextmanager
def _sigint_blocked() -> Generator[None, None, None]:
    """Block SIGINT in this thread for the ``with`` body; threads started in it inherit that,
    so the kernel delivers SIGINT to the main thread, whose handler and event loop see it."""
    if not hasattr(signals, "pthread_sigmask"):  # pragma: no cover - not POSIX
        yield
        return
    previous = signals.pthread_sigmask(signals.SIG_BLOCK, {signals.SIGINT})
    try:
        yield
    finally:
        signals.pthread_sigmask(signals.SIG_SETMASK, previous)


async def _load(path: Path, signal: AbortSignal) -> FixtureProviderAdapter | None:
    """The fixture at ``path``, read and parsed on a worker thread; ``None`` if ``signal``
    aborts first. Raises what ``from_path`` raises (``FixtureProviderError``)."""
    if signal.aborted:
        return None
    loop = asyncio.get_running_loop()
    loaded: asyncio.Future[FixtureProviderAdapter | None] = loop.create_future()

    def settle(adapter: FixtureProviderAdapter | None, error: BaseException | None) -> None:
        if loaded.done():
            return
        if error is None:
            loaded.set_result(adapter)
        else:
            loaded.set_exception(error)

    def work() -> None:
        adapter: FixtureProviderAdapter | None = None
        failure: BaseException | None = None
        try:
            adapter = FixtureProviderAdapter.from_path(path)
        except BaseException as error:  # raised again on the loop, by whoever awaits it
            failure = error
        with contextlib.suppress(RuntimeError):  # the loop closed: nobody waits any more
            loop.call_soon_threadsafe(settle, adapter, failure)

    remove = signal.add_listener(lambda: settle(None, None))
    try:
        with _sigint_blocked():
            threading.Thread(target=work, name="tether-fixture-load", daemon=True).start()
        return await loaded
    finally:
        remove()
