"""``tether chat``: the interactive coding agent in the current directory.

The interactive mode over ``tether.coding.CodingSession`` (built by
``tether.cli.session_config``, as ``tether run -p`` and ``tether rpc`` build theirs): one
runtime (``tether.agent.runtime``) at a time: the workspace (the current directory), the
coding tools confined to it (``tether.tools.coding``), the session file, the extensions the
config file names (entry points of group ``tether.extensions``: their tools and event hooks)
and an ``Agent`` on the chosen model (``tether.cli.models``) whose system prompt is built from
the context files (``tether.coding.context_files``) and announces the workspace's skills
(``tether.coding.resources``). ``/new``, ``/resume``, ``/tree ID``, ``/model`` and ``/cd``
have the session build a new runtime with ``RuntimeManager.replace``: the current one stays
in use until the new one is fully built, and a failure leaves it as it was; the entry the
session stands on (``/tree ID``) is the session's, so ``/model`` and ``/cd`` keep it. This
module wires it to the terminal (``chat_command``; the session a person talks to is
``tether.cli.chat_session.Chat``). What a person sees and can do:

* **Output.** Assistant text is rendered as Markdown as it streams
  (``tether.cli.ui.markdown``: headings, emphasis, lists, tables and highlighted code, wrapped
  to the terminal's width, read again after a resize): each finished block is written
  once, the unfinished one is drawn below it and redrawn as it grows; thinking is rendered
  the same way, dimmed (without colour: after a ``thinking:`` row, in a ``│`` gutter).
  Each tool call shows as ``→ name({arguments})`` and its result as its
  first and last lines (``tether.cli.ui.results``; ``edit_file``: more of its diff, coloured),
  with how many are hidden between; then a usage line per turn: the turn's tokens and the
  session's, and for a model with prices (``tether.providers.model_catalog``, the config's
  ``[models."..."]``) their costs (``unknown`` when a kind of token spent has no price).
  While a turn runs, a status line under the output (``tether.cli.ui.status``,
  redrawn ten times a second, erased when the turn ends) shows what is happening (waiting for
  the model, thinking, writing, running a tool; a stream quiet for 2 s shows waiting again),
  the elapsed time, the turn's tokens, the session's cost and how much of the context window
  the last response filled. Colour only on a terminal without ``NO_COLOR``; off a terminal
  only finished rows are written (no live redraw, no status line).
* **Resizing.** The chat writes into the terminal's scrollback, not a full-screen view, so
  rows already written cannot be re-wrapped by the chat: the terminal keeps them as they
  were written (or re-wraps them itself: tmux, VTE, iTerm2, kitty). What is still live (the
  unfinished Markdown block, a running tool's box, the status line) is redrawn at the new
  width on ``SIGWINCH``: erased as the terminal now shows it (a row wider than the new width
  takes several) and drawn again; what follows is wrapped to the new width. A terminal that
  re-wraps while narrowing may push the top of a tall live region into its scrollback, where
  that copy stays; one that truncates instead of re-wrapping (xterm) may lose a few written
  rows above the live region on a narrowing resize.
* **Input.** ``prompt_toolkit`` line editing (readline keys) with a history file,
  ``<data dir>/tether/chat-history``; Enter sends, Alt-Enter (or Esc then Enter) starts a
  new line. Tab completes slash commands, ``/model`` names (the current model, the default,
  the config's models, ``PROVIDER/``) and ``@path`` mentions inside the workspace
  (``tether.cli.ui.complete``).
* **Keys.** Ctrl-C or Esc during a turn cancels the turn (``Agent.cancel``): what streamed is
  kept with a note for the model, and the prompt comes back. While a turn runs the terminal
  does not echo (``tether.cli.ui.keys``): what is typed shows under the status line, Enter
  queues it as a steer (``CodingSession.steer``: the model sees it at the next turn
  boundary) and Alt-Enter as a follow-up (``CodingSession.follow_up``); text not sent when
  the turn ends is put back on the next prompt. Ctrl-O at the prompt
  shows the last tool result whole. Shift-Tab, at the prompt or during a turn, cycles the
  thinking level (``off``, ``minimal``, ``low``, ``medium``, ``high``;
  ``CodingSession.cycle_thinking``: the next request uses it), shown in the status line.
  Ctrl-C while a
  runtime is being built (the first prompt, ``/new``, ``/resume``, ``/tree ID``, ``/model``,
  ``/cd``) cancels the build: what it made is rolled back, the current runtime stays, the
  prompt comes back. Ctrl-C while the chat waits for extension hooks after a turn stops
  waiting; at exit, while the runtime closes, it stops waiting and exits (status 130). A
  second Ctrl-C while a cancellation is still being rolled back quits at once (status 130).
  Extensions are bounded anyway: an activation or a cleanup that takes longer than the
  config's ``extension_timeout`` (30 s by default) fails ``EXTENSION_TIMED_OUT``, naming the
  extension. Ctrl-C at the prompt clears the line. Ctrl-D on an empty line, or ``/quit``,
  exits (status 0).
* **Slash commands.** One table, ``tether.cli.slash_commands`` (``tether rpc``'s ``command``
  runs those that need no terminal), makes the dispatch, ``/help`` and Tab completion:
  ``/help``; ``/model PROVIDER/MODEL`` (switch, the conversation kept;
  ``/model`` alone opens a list to pick from, ``tether.cli.ui.picker``: the current,
  default and configured models, then, once it answers (within ``MODEL_LIST_SECONDS``), the
  models the provider's server offers (``GET /models``; a failure is a note in the list),
  then every provider as ``PROVIDER/``, which puts ``/model PROVIDER/`` on the prompt for the
  name to be typed; off a terminal it lists them numbered and ``/model N`` switches to one);
  ``/new`` (a new session); ``/sessions`` (the saved ones, newest first, each with the
  directory it was started in); ``/resume ID`` (an ID or a unique prefix of one;
  ``/resume`` alone opens the list of sessions, each with its start, its last message and
  its directory); ``/tree`` (the active branch's entries with short IDs);
  ``/tree ID`` (move the branch to that entry: the next prompt continues from there, a new
  branch beside the old one); ``/tree all`` (every branch, each indented under the entry it
  leaves from, the active one marked ``*``); ``/cd DIR`` (the same session in another
  workspace: tools, context files, skills and extensions rebuilt there); ``/export [FILE]``
  (the conversation as one self-contained HTML page, ``tether.cli.ui.export``; ``FILE``
  relative to the workspace, ``tether-ID.html`` by default); ``/compact`` (compact the context
  now; the Agent also compacts on its own near the model's ``context_window``: the
  config's, else 128,000 tokens); ``/usage``; ``/quit``. ``/NAME args`` expands the prompt
  template ``NAME`` (``.tether/prompts/NAME.md`` in the workspace, or ``prompts/NAME.md``
  in the user's config directory) and sends it.
* **Approval.** Before ``write_file``, ``edit_file``, ``bash`` and ``python_process`` run
  (the config's ``[tools] approve`` list), what would run is shown in full
  (``tether.cli.ui.approval``: the whole command wrapped, a new file's content or the diff
  an edit or overwrite would make) and the person answers ``y`` (run it), ``n`` (do not: the
  model gets ``TOOL_CALL_BLOCKED`` "the user declined"), ``n: REASON`` (do not, and the model
  is told the reason: ``coding.Decline``) or ``a`` (run it and every later call of that tool
  in this session). ``--auto-approve``, or ``[tools] auto_approve = true``, never asks.
  Ctrl-C at that question declines the call and cancels the turn; Esc cancels the turn as
  Esc during a stream does (the call is answered ``TOOL_CALL_INTERRUPTED``, as any call a
  cancelled turn left unanswered).

**Sessions.** Every message is appended, as it enters the transcript, to a session file in
``<data dir>/tether/sessions/`` (the runtime's session, recorded by ``SessionRecorder``; the
first runtime is built, and its file created, with the first prompt, so a chat that sends
nothing leaves nothing). The
data directory follows the XDG rules of ``tether.agent.session.default_sessions_dir``.
``-r ID`` resumes a session (an ID or unique prefix; ``-r`` alone opens the list of
sessions ``/resume`` opens: Esc starts a new session); ``-c`` continues the last session
started in this directory, found through ``<sessions dir>/cwd-index.json``: one JSON object
``{"version": 1, "sessions": {"<absolute cwd>": "<session id>"}, "directories":
{"<session id>": "<absolute cwd>"}}`` (``directories``: where each of the newest 2,000
sessions was started, for ``/sessions``), rewritten atomically whenever a chat creates a
session. An index that is not a regular file, is larger than 4 MiB
or is not that JSON is ignored (and replaced at the next rewrite).

The model, the tools and the agent are built when the first prompt is sent; the modules
they need are imported on a background thread started once the first prompt is drawn, so
the prompt shows quickly and the first turn does not wait for imports.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal as signals
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from tether.cli.chat_approval import Escaped
from tether.cli.chat_commands import parse_command
from tether.cli.chat_completion import prompt_completer
from tether.cli.chat_session import Chat
from tether.cli.chat_view import ChatView
from tether.cli.command_setup import extensions_or_warn
from tether.cli.config import CliConfig
from tether.cli.exit_codes import EXIT_INTERRUPTED, EXIT_USAGE
from tether.cli.render import Output
from tether.cli.session_index import chat_data_dir, last_session

if TYPE_CHECKING:
    from tether.cli.models import ModelChoice
    from tether.cli.ui.picker import More, PickItem

__all__ = [
    "APPROVE_PROMPT",
    "HISTORY_NAME",
    "PROMPT",
    "ChatOptions",
    "chat_command",
    "message_text",
]

PROMPT: Final = "chat> "
"""The input prompt."""
APPROVE_PROMPT: Final = "allow {name}? [y]es / [n]o (n: reason) / [a]lways for {name}: "
"""The approval question (``{name}``: the tool; ``tether.cli.ui.approval``)."""
HISTORY_NAME: Final = "chat-history"
"""The input history's file, in the data directory."""


def message_text(line: str) -> str:
    """What a non-command line sends: ``//text`` sends ``/text``."""
    text = line.strip()
    return text[1:] if text.startswith("//") else text


_WARM_MODULES: Final = (
    "tether.agent.persistence",
    "tether.agent.session",
    "tether.cli.models",
    "tether.cli.run_command",
    "tether.providers.openai_chat",
    "tether.tools.coding",
)


def _warm_up() -> None:
    """Import what the first turn needs, off the main thread (failures show up later)."""
    import importlib

    for name in _WARM_MODULES:
        with contextlib.suppress(Exception):
            importlib.import_module(name)


@dataclass(frozen=True, slots=True, kw_only=True)
class ChatOptions:
    """What ``tether chat`` was asked for on the command line: the ``introduction`` that
    replaces the system prompt's first paragraph (``--system``), ``auto_approve``, a session
    to ``resume`` (``-r ID``) or ``continue_last`` (``-c``)."""

    introduction: str | None = None
    auto_approve: bool = False
    resume: str | None = None
    continue_last: bool = False


async def chat_command(options: ChatOptions, choice: ModelChoice, config: CliConfig) -> int:
    """Run ``tether chat`` on the terminal; returns the exit status (0 when it ends)."""
    from prompt_toolkit import PromptSession
    from prompt_toolkit.history import FileHistory, InMemoryHistory
    from prompt_toolkit.key_binding import KeyBindings
    from prompt_toolkit.key_binding.key_processor import KeyPressEvent

    cwd = Path.cwd()
    data_dir = chat_data_dir()
    extensions = extensions_or_warn(config, "chat")
    if extensions is None:
        return EXIT_USAGE
    out = Output.for_people(sys.stdout)
    from tether.cli.ui.markdown import theme_from_environment

    terminal = sys.stdout.isatty()
    color = terminal and not os.environ.get("NO_COLOR")

    def size() -> tuple[int, int]:
        columns, rows = shutil.get_terminal_size()
        return columns, rows

    view = ChatView(
        out, color=color, live=terminal, size=size, theme=theme_from_environment(os.environ)
    )

    bindings = KeyBindings()

    @bindings.add("c-o")
    def _expand(event: KeyPressEvent) -> None:
        from prompt_toolkit.application import run_in_terminal

        run_in_terminal(view.expand_last)

    @bindings.add("s-tab")
    def _thinking(event: KeyPressEvent) -> None:
        from prompt_toolkit.application import run_in_terminal

        run_in_terminal(chat.cycle_thinking)

    @bindings.add("escape", "enter")
    def _newline(event: KeyPressEvent) -> None:
        event.current_buffer.insert_text("\n")

    try:
        os.makedirs(data_dir, mode=0o700, exist_ok=True)
        history: Any = FileHistory(str(data_dir / HISTORY_NAME))
    except OSError:
        history = InMemoryHistory()
    completer = prompt_completer(lambda: chat)
    session: PromptSession[str] = PromptSession(
        history=history,
        key_bindings=bindings,
        multiline=False,
        completer=completer,
        complete_while_typing=False,
    )
    questions: PromptSession[str] | None = None

    async def ask(question: str) -> str:
        nonlocal questions
        if questions is None:
            escape = KeyBindings()

            @escape.add("escape", eager=True)
            def _escape(event: KeyPressEvent) -> None:
                event.app.exit(exception=Escaped())

            questions = PromptSession(key_bindings=escape)
        return await questions.prompt_async(question, handle_sigint=False)

    async def picker(title: str, items: Sequence[PickItem], more: More | None) -> str | None:
        from tether.cli.ui.picker import pick

        return await pick(title, items, more, color=color)

    chat = Chat(
        choice=choice,
        config=config,
        cwd=cwd,
        data_dir=data_dir,
        view=view,
        ask=ask,
        introduction=options.introduction,
        auto_approve=options.auto_approve,
        extensions=extensions,
        pick=picker if terminal and sys.stdin.isatty() else None,
    )
    loop = asyncio.get_running_loop()
    if sys.stdin.isatty():
        from tether.cli.ui.keys import TurnKeys

        def on_escape() -> None:
            if chat.interrupt() == "turn":
                view.line("Esc: cancelling the turn")

        def on_typed(typed: str) -> None:
            chat.typed = typed

        chat.keys = TurnKeys(
            sys.stdin.fileno(),
            on_escape=on_escape,
            on_enter=lambda text: chat.queue(text, follow_up=False),
            on_alt_enter=lambda text: chat.queue(text, follow_up=True),
            on_change=on_typed,
            on_shift_tab=chat.cycle_thinking,
        )

    def on_sigint() -> None:
        done = chat.interrupt()
        if done == "turn":
            view.line("^C cancelling the turn")
        elif done == "operation":
            view.line("^C cancelling (Ctrl-C again quits at once)")
        elif done == "again":
            view.line("^C quitting")
            os._exit(EXIT_INTERRUPTED)

    loop.add_signal_handler(signals.SIGINT, on_sigint)
    winch = getattr(signals, "SIGWINCH", None)
    if winch is not None and view.live:  # prompt_toolkit puts it back after each prompt
        loop.add_signal_handler(winch, view.redraw)
    try:
        view.line(f"tether chat · {choice.spec} · {cwd} · /help for commands, Ctrl-D to quit")
        if options.resume == "":
            picked = await chat.pick_session()
            if picked is not None:
                await chat.resume(picked)
        elif options.resume is not None:
            await chat.resume(options.resume)
        elif options.continue_last:
            found = last_session(chat.sessions_dir, cwd)
            if found is None:
                view.line("no earlier session in this directory: starting a new one")
            else:
                await chat.resume(found)
        warm = options.resume is None and not options.continue_last

        def after_first_draw() -> None:  # pre_run runs just before the prompt is drawn
            nonlocal warm
            if warm:
                warm = False
                thread = threading.Thread(target=_warm_up, name="tether-chat-warm-up", daemon=True)
                loop.call_soon(thread.start)

        while True:
            try:
                unsent, chat.unsent = chat.unsent, ""
                line = await session.prompt_async(
                    PROMPT, handle_sigint=False, pre_run=after_first_draw, default=unsent
                )
            except KeyboardInterrupt:
                continue
            except EOFError:
                break
            if not line.strip():
                continue
            command = parse_command(line)
            if command is not None:
                if not await chat.command(command):
                    break
                continue
            await chat.turn(message_text(line))
    finally:
        try:
            closed = await chat.close()
        finally:
            loop.remove_signal_handler(signals.SIGINT)
            if winch is not None and view.live:
                loop.remove_signal_handler(winch)
    return 0 if closed else EXIT_INTERRUPTED
