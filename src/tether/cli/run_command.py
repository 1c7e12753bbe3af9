"""``tether run``: run the agent on a provider fixture or a real model, show the run as it goes.

Without ``--model`` (``run_command``) it loads a provider fixture (the bundled round trip by
default) and runs the agent loop on it with the built-in ``add`` tool: no key, no network.
With ``--model`` (``run_model_command``, print mode) it sends one prompt to the coding
session every mode drives (``tether.coding.CodingSession``, built by
``tether.cli.session_config`` as for ``tether chat``: the same system prompt, context files,
skills and extensions; with ``RunLimits.for_real_models()``; with ``--tools coding``, the
coding tools confined to the current directory, never asked about) on the chosen HTTP model
(``tether.cli.models``). The prompt is ``-p TEXT``, or standard input (``-p -``, or no
``-p`` while stdin is not a terminal; ``tether.cli.print_prompt``). Both kinds of run write the same
events the same way: the human view, or one camelCase JSON event per line (``--json``: the
events ``tether rpc`` sends too). A
model run that failed in a way a person can fix (``tether.cli.models.run_problem``: server
unreachable, key refused, rate limited, context overflow) also gets one line of advice on
stderr and exit status 2. ``--session PATH`` (model runs) continues the session file's
active branch and records the run into it (created when missing; without it the session is
ephemeral, in a temporary directory removed at the end); a file it cannot use
(``SESSION_...``, or ``CLI_SESSION_UNUSABLE`` when the system refuses it: a missing
directory, a name too long, ``/proc/self/mem``) is exit status 2.

Ctrl-C (SIGINT) is always answered, in both kinds of run:

* The first SIGINT aborts the run. A notice on stderr says so (and that a second Ctrl-C quits
  at once); the run ends ``cancelled`` ("Interrupted by the user") at its next check (for a
  model run: at once, the HTTP request is closed), the events it emitted and the summary are
  written, and the command exits 130. During fixture loading it exits 130 at once, having
  written nothing.
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
  turn, and the events waiting to be written never exceed one turn's. A model run is paced
  the same way.
* The fixture is loaded on a daemon worker thread, raced against the abort, with SIGINT
  blocked in that thread so that the signal always reaches the main thread. A FIFO with no
  writer, or one that never delivers, cannot hold the command; the thread is left behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from tether import (
    AbortController,
    AbortSignal,
    AgentEvent,
    EventStream,
    FixtureProviderAdapter,
    RunResult,
    ToolRegistry,
    run_agent_loop,
    tool,
)
from tether._base.dataclass import dataclass
from tether._base.exact_types import instance_of
from tether.cli.exit_codes import EXIT_INTERRUPTED, EXIT_STATUS, EXIT_USAGE
from tether.cli.interrupts import INTERRUPT_REASON, Interrupts, sigint_blocked
from tether.cli.render import HumanView, Output, event_json, json_line, warn
from tether.coding.meter import UsageMeter
from tether.protocol.transcript import user_message
from tether.providers.fixture import FixtureProviderError

if TYPE_CHECKING:
    from collections.abc import Callable

    from tether.agent.runtime import TetherRuntimeError
    from tether.cli.config import CliConfig
    from tether.cli.models import ModelChoice
    from tether.coding import CodingEvent, CodingSession, SessionPlace, ToolSet
    from tether.protocol import ModelUsage

__all__ = [
    "EXIT_INTERRUPTED",
    "EXIT_STATUS",
    "EXIT_USAGE",
    "INTERRUPT_REASON",
    "FixtureOptions",
    "Interrupts",
    "Pacer",
    "PrintOptions",
    "UsageMeter",
    "add",
    "run_command",
    "run_model_command",
    "show_run",
    "sigint_blocked",
]


@tool
async def add(left: int, right: int) -> int:
    """Add two integers.

    Args:
        left: The first addend.
        right: The second addend.
    """
    return left + right


@dataclass(frozen=True, slots=True, kw_only=True)
class FixtureOptions:
    """What ``tether run`` without ``--model`` runs: the provider ``fixture`` (``None``: the
    bundled round trip), the user message, the step budget and ``json`` output."""

    fixture: Path | None = None
    prompt: str
    max_steps: int = 8
    json: bool = False


async def run_command(args: FixtureOptions, out: Output) -> int:
    """Run ``tether run`` (a fixture) as ``args`` says, writing to ``out``; returns the exit
    status. A failed write raises ``OutputError`` (after the run was told to stop).
    """
    controller = AbortController()
    with Interrupts(asyncio.get_running_loop(), controller):
        fixture: Path = args.fixture or _bundled_fixture()
        try:
            provider = await _load(fixture, controller.signal)
        except FixtureProviderError as error:
            detail = f" ({error.__cause__})" if error.__cause__ else ""
            warn(f"tether run: {fixture}: [{error.code}] {error}{detail}")
            return EXIT_USAGE
        if provider is None:
            return EXIT_INTERRUPTED
        pacer = Pacer()
        meter = UsageMeter(provider, pacer.wait)
        view = None if args.json else HumanView(out)
        stream = run_agent_loop(
            messages=[user_message(id="user-001", content=args.prompt)],
            model=meter,
            tools=ToolRegistry([add]),
            max_steps=args.max_steps,
            signal=controller.signal,
        )
        try:
            await show_run(stream, pacer, view, out)
        finally:
            if not stream.settled:  # the output failed: stop the run instead of leaving it
                controller.abort("The output failed")
        result = await stream.result
        if view is not None:
            view.summary(result, meter.turns, meter.input_tokens, meter.output_tokens)
    return EXIT_STATUS[result.status]


def _bundled_fixture() -> Path:
    return Path(str(resources.files("tether") / "_data" / "provider-tool-roundtrip.json"))


# --- a real model ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class PrintOptions:
    """What ``tether run --model`` (print mode) runs, from the command line: the user
    message (``prompt``), ``json`` output, the ``tools`` (``none`` or ``coding``), the
    ``introduction`` that replaces the system prompt's first paragraph (``--system``), the
    step budget and the ``session`` file (``None``: an ephemeral session, nothing kept)."""

    prompt: str
    json: bool = False
    tools: ToolSet = "none"
    introduction: str | None = None
    max_steps: int = 64
    session: Path | None = None

    @property
    def auto_approve(self) -> bool:
        """Always: a print run's tool calls are never asked about (there is nobody to ask)."""
        return True

    def sessions(self) -> SessionPlace:
        """The ``session`` file (none: an ephemeral session)."""
        from tether.coding import SessionPlace

        return SessionPlace(file=self.session)


async def run_model_command(
    options: PrintOptions, choice: ModelChoice, config: CliConfig, out: Output
) -> int:
    """Run ``tether run --model ...``: one prompt to a ``CodingSession`` on ``choice``'s
    model (with ``config``'s extensions), shown on ``out``; returns the exit status. A failed
    write raises ``OutputError`` (after the run was cancelled)."""
    from tether.cli.command_setup import extensions_or_warn
    from tether.cli.session_config import mode_config
    from tether.coding import CodingSession

    extensions = extensions_or_warn(config, "run")
    if extensions is None:
        return EXIT_USAGE
    controller = AbortController()
    with Interrupts(asyncio.get_running_loop(), controller):
        made = mode_config(options, choice, config, extensions)
        session = CodingSession(made)
        try:
            return await _print_run(session, options, choice, controller.signal, out)
        finally:
            await _close_session(session)


async def _close_session(session: CodingSession[ModelChoice]) -> None:
    from tether.agent.runtime import TetherRuntimeError

    try:
        await session.close()
    except TetherRuntimeError as error:
        warn(f"tether run: the session did not close cleanly: [{error.code}] {error}")


async def _print_run(
    session: CodingSession[ModelChoice],
    options: PrintOptions,
    choice: ModelChoice,
    interrupted: AbortSignal,
    out: Output,
) -> int:
    from tether.agent.runtime import TetherRuntimeError
    from tether.cli.models import run_problem

    pacer = Pacer()
    session.set_pace(pacer.wait)
    place = "" if options.session is None else f" ({options.session})"

    def notice(event: CodingEvent) -> None:
        if event.type == "session.notice":
            warn(f"tether run: {event.text}{place}")

    session.subscribe(notice)
    try:
        await session.start()
    except TetherRuntimeError as error:
        warn(f"tether run: {_session_problem(error, options.session)}")
        return EXIT_USAGE
    if interrupted.aborted:
        return EXIT_INTERRUPTED
    remove = interrupted.add_listener(lambda: session.abort(INTERRUPT_REASON))
    view = None if options.json else HumanView(out)
    try:
        stream = await session.prompt(options.prompt)
        try:
            await show_run(stream, pacer, view, out, choice.cost)
        finally:
            if not stream.settled:  # the output failed: stop the run instead of leaving it
                session.abort("The output failed")
                agent = session.agent
                if agent is not None:
                    await agent.wait_until_idle()
        result = await stream.result
    finally:
        remove()
    meter = session.meter
    if view is not None and meter is not None:
        from tether.cli.ui.status import format_cost

        cost = format_cost(choice.cost(result.usage)) if choice.prices.known else None
        view.summary(result, meter.turns, meter.input_tokens, meter.output_tokens, cost)
    problem = run_problem(result, None if meter is None else meter.last_error, choice)
    if problem is not None:
        warn(f"tether run: [{problem.code}] {problem}")
        return EXIT_USAGE
    return EXIT_STATUS[result.status]


def _session_problem(error: TetherRuntimeError, path: Path | None) -> str:
    """``[CODE] message`` for a session that could not be opened: the session store's own
    code (``SESSION_IN_USE``, ``SESSION_INVALID_JSON``...) when it is the cause,
    ``CLI_SESSION_UNUSABLE`` when the system refused the file, else the runtime's."""
    from tether.agent.session import SessionStoreError

    seen: list[BaseException] = [error]
    while seen:
        cause = seen.pop(0)
        if isinstance(cause, SessionStoreError):
            return f"[{cause.code}] {cause.message} ({path})"
        if isinstance(cause, OSError):
            reason = cause.strerror or type(cause).__name__
            return f"[CLI_SESSION_UNUSABLE] cannot use the session file {path}: {reason}"
        if instance_of(cause, BaseExceptionGroup):
            seen.extend(cause.exceptions)
        if cause.__cause__ is not None:
            seen.append(cause.__cause__)
    if path is not None and error.code == "RUNTIME_INVALID_OPTIONS":
        return f"[CLI_SESSION_UNUSABLE] cannot use the session file {path}: {error}"
    return f"[{error.code}] {error}"


# --- the display and its pace ---------------------------------------------------------------


async def show_run(
    stream: EventStream[AgentEvent, RunResult],
    pacer: Pacer,
    view: HumanView | None,
    out: Output,
    cost: Callable[[ModelUsage], float | None] | None = None,
) -> None:
    """Write every event of the run as it comes, telling ``pacer`` when all are written;
    ``cost`` prices the run for its JSON ``run.finished`` (``render.event_json``).

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
                out.write(json_line(event_json(event, cost)))
            else:
                view.show(event)
            await asyncio.sleep(0)
    except StopAsyncIteration:
        return


class Pacer:
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
        with sigint_blocked():
            threading.Thread(target=work, name="tether-fixture-load", daemon=True).start()
        return await loaded
    finally:
        remove()
