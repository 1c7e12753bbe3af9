"""``tether run``: run the agent on a provider fixture or a real model, show the run as it goes.

Without ``--model`` (``run_command``) it loads a provider fixture (the bundled round trip by
default) and runs the agent loop on it with the built-in ``add`` tool: no key, no network.
With ``--model`` (``run_model_command``) it runs a stateful ``Agent`` on the chosen HTTP model
(``tether.cli.models``) for one prompt, with ``RunLimits.for_real_models()`` and, with
``--tools coding``, the coding tools confined to the current directory. Both write the same
events the same way: the human view, or one camelCase JSON event per line (``--json``). A
model run that failed in a way a person can fix (``tether.cli.models.run_problem``: server
unreachable, key refused, rate limited, context overflow) also gets one line of advice on
stderr and exit status 2. ``--session PATH`` (model runs) continues the session file's
active branch and records the run into it (created when missing); a file it cannot use
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

import argparse
import asyncio
import contextlib
import os
import threading
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from tether import (
    AbortController,
    AbortSignal,
    AgentEvent,
    EventStream,
    FixtureProviderAdapter,
    FixtureProviderError,
    Message,
    Model,
    RunResult,
    ToolRegistry,
    run_agent_loop,
    to_json,
    tool,
    user_message,
)
from tether.cli.exit_codes import EXIT_INTERRUPTED, EXIT_STATUS, EXIT_USAGE
from tether.cli.interrupts import INTERRUPT_REASON, Interrupts, sigint_blocked
from tether.cli.render import HumanView, Output, json_line, warn
from tether.coding.meter import UsageMeter

if TYPE_CHECKING:
    from tether.agent.agent import Agent
    from tether.agent.session import SessionStore
    from tether.cli.models import ModelChoice

__all__ = [
    "EXIT_INTERRUPTED",
    "EXIT_STATUS",
    "EXIT_USAGE",
    "INTERRUPT_REASON",
    "Interrupts",
    "UsageMeter",
    "add",
    "run_command",
    "run_model_command",
    "session_agent",
    "sigint_blocked",
    "starting_transcript",
]


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
        pacer = _Pacer()
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


# --- a real model ----------------------------------------------------------------------------


async def run_model_command(args: argparse.Namespace, choice: ModelChoice, out: Output) -> int:
    """Run ``tether run --model ...``: one prompt (``args.prompt``) to an ``Agent`` on
    ``choice``'s model, shown on ``out``; returns the exit status.

    ``args`` also carries ``system``, ``tools`` (``"coding"`` or ``None``), ``max_steps`` and
    ``json``. A failed write raises ``OutputError`` (after the run was cancelled).
    """
    controller = AbortController()
    with Interrupts(asyncio.get_running_loop(), controller):
        model = choice.build()
        try:
            return await _run_agent(args, choice, model, controller.signal, out)
        finally:
            await model.aclose()


async def _run_agent(
    args: argparse.Namespace,
    choice: ModelChoice,
    model: Model,
    interrupted: AbortSignal,
    out: Output,
) -> int:
    pacer = _Pacer()
    meter = UsageMeter(model, pacer.wait)
    session: str | None = getattr(args, "session", None)
    if session is None:
        agent = build_agent(meter, args, (), choice=choice)
    else:
        from tether.agent.session import SessionStoreError

        try:
            agent = await session_agent(meter, args, session, choice)
        except SessionStoreError as error:
            warn(f"tether run: [{error.code}] {error.message} ({session})")
            return EXIT_USAGE
        except OSError as error:  # a directory that is missing, a name too long, /proc/...
            reason = error.strerror or type(error).__name__
            warn(
                f"tether run: [CLI_SESSION_UNUSABLE] cannot use the session file {session}: "
                f"{reason}"
            )
            return EXIT_USAGE
        store = session_store(agent)
        try:
            if store.recovered is not None:
                warn(f"tether run: recovered: {store.recovered} ({session})")
            return await _prompt_agent(agent, args, choice, meter, pacer, interrupted, out)
        finally:
            await store.close()  # let the file go (its lock)
    return await _prompt_agent(agent, args, choice, meter, pacer, interrupted, out)


async def _prompt_agent(
    agent: Agent,
    args: argparse.Namespace,
    choice: ModelChoice,
    meter: UsageMeter,
    pacer: _Pacer,
    interrupted: AbortSignal,
    out: Output,
) -> int:
    from tether.cli.models import run_problem

    if interrupted.aborted:
        return EXIT_INTERRUPTED
    remove = interrupted.add_listener(lambda: agent.cancel(INTERRUPT_REASON))
    view = None if args.json else HumanView(out)
    try:
        stream = agent.prompt(args.prompt)
        try:
            await _show(stream, pacer, view, out)
        finally:
            if not stream.settled:  # the output failed: stop the run instead of leaving it
                agent.cancel("The output failed")
                await agent.wait_until_idle()
        result = await stream.result
    finally:
        remove()
    if view is not None:
        view.summary(result, meter.turns, meter.input_tokens, meter.output_tokens)
    problem = run_problem(result, meter.last_error, choice)
    if problem is not None:
        warn(f"tether run: [{problem.code}] {problem}")
        return EXIT_USAGE
    return EXIT_STATUS[result.status]


DEFAULT_CONTEXT_WINDOW: Final = 128_000
"""Tokens assumed for a model whose ``context_window`` the config does not set."""


def build_agent(
    model: Model,
    args: argparse.Namespace,
    messages: Sequence[Message],
    *,
    choice: ModelChoice,
) -> Agent:
    """The ``Agent`` of a model run (``tether run`` and ``tether rpc``): ``args.tools``
    (``"coding"``: the coding tools confined to the current directory, their processes
    without ``choice.hidden_env``), ``args.system``, ``args.max_steps`` and the real-model
    limits, starting from ``messages``; it compacts automatically near the choice's context
    window (the config's, else 128,000 tokens)."""
    from tether.agent.agent import Agent

    return Agent(messages=messages, **agent_options(model, args, choice=choice))


def agent_options(model: Model, args: argparse.Namespace, *, choice: ModelChoice) -> dict[str, Any]:
    """The keyword options every model run's ``Agent`` is built with (see ``build_agent``)."""
    from tether.agent.auto_compaction import AutoCompaction
    from tether.loop.limits import RunLimits

    tools = None
    if args.tools == "coding":
        from tether.tools.coding import coding_tools

        tools = coding_tools(Path.cwd(), hide_env=choice.hidden_env, pass_env=choice.pass_env)
    window = choice.settings.context_window or DEFAULT_CONTEXT_WINDOW
    return {
        "model": model,
        "tools": tools,
        "system": args.system,
        "limits": RunLimits.for_real_models(),
        "max_steps": args.max_steps,
        "compaction": AutoCompaction(context_window=window),
    }


def starting_transcript(args: argparse.Namespace) -> Sequence[Message]:
    """The transcript an ``rpc`` Agent starts from: empty (``tether run --session`` starts
    from its session file instead, see ``session_agent``)."""
    return ()


def _exists(path: str) -> bool:
    return os.path.lexists(path)


async def session_agent(
    model: Model, args: argparse.Namespace, path: str, choice: ModelChoice
) -> Agent:
    """``tether run --session PATH``: an Agent over the session file's active branch (created
    when missing, with ``SessionLimits.for_coding()``) that records every message into it as
    the run goes, compactions included. Raises ``SessionStoreError`` for a file it cannot use
    (``SESSION_IN_USE`` while another process writes it). The store holds the file's lock:
    close it (``session_store(agent).close()``) when the run is over.
    """
    from tether.agent.persistence import resume_agent
    from tether.agent.session import SessionLimits, SessionStore, SessionStoreOptions, SessionTree

    options = SessionStoreOptions(limits=SessionLimits.for_coding())
    if _exists(path):
        store = await SessionStore.load(path, options)
    else:
        store = await SessionStore.create(path, options)
    try:
        return await resume_agent(SessionTree(store), **agent_options(model, args, choice=choice))
    except BaseException:
        await store.close()
        raise


def session_store(agent: Agent) -> SessionStore:
    """The session store a ``session_agent`` records into."""
    from tether.agent.persistence import SessionRecorder

    recorder = agent.recorder
    assert isinstance(recorder, SessionRecorder)
    return recorder.tree.store


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
