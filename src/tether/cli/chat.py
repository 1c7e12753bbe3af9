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
module is what a person sees and can do:

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
import dataclasses
import os
import shutil
import signal as signals
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias, TypeVar

from tether._errors import TetherError
from tether._types import instance_of
from tether.cli.config import CliConfig, CliError
from tether.cli.render import Output, compact, shorten, warn
from tether.cli.session_config import configured_extensions
from tether.cli.session_index import (
    INDEX_NAME,
    MAX_INDEX_BYTES,
    MAX_INDEXED_DIRECTORIES,
    chat_data_dir,
    last_session,
    remember_session,
    session_directories,
)
from tether.cli.slash_commands import COMMANDS, HELP, find_command, list_sessions, tree_rows
from tether.coding.approval import (
    DECLINED,
    Answer,
    ApprovalRequest,
    Approvals,
    Decline,
    parse_answer,
)

if TYPE_CHECKING:
    from tether.agent.agent import Agent
    from tether.agent.extensions import ExtensionDefinition
    from tether.agent.runtime import Runtime
    from tether.agent.session import SessionTree
    from tether.cli.models import ModelChoice
    from tether.cli.ui.complete import Completion
    from tether.cli.ui.keys import TurnKeys
    from tether.cli.ui.markdown import LiveRegion, StreamingMarkdown
    from tether.cli.ui.picker import More, Picker, PickItem
    from tether.cli.ui.results import ResultView
    from tether.cli.ui.status import Activity
    from tether.coding.meter import UsageMeter
    from tether.coding.resources import ChatResources
    from tether.coding.session import CodingEvent, CodingSession
    from tether.loop.hooks import BlockToolCall, ToolCallContext
    from tether.models.base import Model
    from tether.protocol import (
        AgentEvent,
        Message,
        ModelUsage,
        RunResult,
        ToolCall,
        ToolResultMessage,
    )
    from tether.tools.coding.workspace import Workspace

__all__ = [
    "APPROVE_PROMPT",
    "COMMANDS",
    "DECLINED",
    "HELP",
    "INDEX_NAME",
    "MAX_INDEXED_DIRECTORIES",
    "MAX_INDEX_BYTES",
    "PROMPT",
    "Answer",
    "Approvals",
    "Chat",
    "ChatOptions",
    "ChatView",
    "Command",
    "Escaped",
    "Interrupt",
    "chat_command",
    "chat_completions",
    "chat_data_dir",
    "last_session",
    "parse_answer",
    "parse_command",
    "remember_session",
    "session_directories",
    "tree_rows",
]

PROMPT: Final = "chat> "
"""The input prompt."""
APPROVE_PROMPT: Final = "allow {name}? [y]es / [n]o (n: reason) / [a]lways for {name}: "
"""The approval question (``{name}``: the tool; ``tether.cli.ui.approval``)."""
HISTORY_NAME: Final = "chat-history"
_INTERRUPT: Final = "Interrupted by the user"
_EXIT_INTERRUPTED: Final = 130
_DIFF_LINES: Final = 12
_DEFAULT_WIDTH: Final = 100
_DEFAULT_HEIGHT: Final = 40
_LIVE_PERIOD: Final = 0.08
"""The shortest time between two redraws of the answer's unfinished block."""
_STATUS_PERIOD: Final = 0.1
"""Seconds between two redraws of the status line."""
_STALL_SECONDS: Final = 2.0
"""A stream quiet this long shows as waiting for the model again."""
MODEL_LIST_SECONDS: Final = 5.0
"""How long the ``/model`` list waits for the server's models (then says so)."""


# --- slash commands ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Command:
    """A slash command as typed: its ``name`` (without the slash, lower case) and the rest of
    the line (``argument``, stripped; empty when there is none)."""

    name: str
    argument: str = ""

    @property
    def known(self) -> bool:
        """Whether ``name`` is one of ``COMMANDS``."""
        return self.name in COMMANDS


def parse_command(line: str) -> Command | None:
    """The slash command ``line`` is, or ``None`` for a message to the model (anything not
    starting with ``/``, and ``//text``, which sends ``/text``)."""
    text = line.strip()
    if not text.startswith("/") or text.startswith("//") or len(text) == 1:
        return None
    name, _, rest = text[1:].partition(" ")
    return Command(name.lower(), rest.strip())


def message_text(line: str) -> str:
    """What a non-command line sends: ``//text`` sends ``/text``."""
    text = line.strip()
    return text[1:] if text.startswith("//") else text


# --- completion -------------------------------------------------------------------------------


def chat_completions(
    before_cursor: str,
    *,
    workspace: Workspace | None,
    models: Sequence[str],
) -> list[Completion]:
    """What Tab offers for the line before the cursor: ``/model`` names (``models``: specs
    and ``PROVIDER/`` prefixes), slash commands (``COMMANDS``), ``@path`` mentions inside the
    workspace (``tether.cli.ui.complete``)."""
    from tether.cli.ui.complete import Completion, complete_command, complete_path

    head, space, rest = before_cursor.partition(" ")
    if head.lower() == "/model" and space:
        if any(char.isspace() for char in rest):
            return []
        folded = rest.casefold()
        return [
            Completion(text=spec, start_position=-len(rest), display=spec)
            for spec in dict.fromkeys(models)
            if spec.casefold().startswith(folded)
        ]
    if before_cursor.startswith("/"):
        return complete_command(before_cursor, COMMANDS)
    if workspace is None:
        return []
    return complete_path(before_cursor, workspace)


# --- approval ---------------------------------------------------------------------------------

# --- the view ---------------------------------------------------------------------------------


class ChatView:
    """Writes a chat's events for a person (see the module docstring).

    ``color`` styles the output (ANSI); ``live`` (a terminal) draws the answer's unfinished
    Markdown block and the status line below what is final, erased and redrawn as they change
    (``tether.cli.ui.markdown.LiveRegion``); without it only final rows are written. ``size``
    gives the terminal's columns and rows (read at every draw); ``theme`` the background.
    """

    def __init__(
        self,
        out: Output,
        *,
        color: bool,
        live: bool = False,
        size: Callable[[], tuple[int, int]] | None = None,
        theme: Literal["dark", "light"] = "dark",
    ) -> None:
        self.out = out
        self.color = color
        self.live = live
        self.theme: Literal["dark", "light"] = theme
        self._size = size or (lambda: (_DEFAULT_WIDTH, _DEFAULT_HEIGHT))
        self.mode: Literal["line", "text", "thinking"] = "line"
        self.markdown: StreamingMarkdown | None = None
        self.status = ""
        """The status row drawn below the live tail (``""``: none)."""
        self.last_result: ResultView | None = None
        """The last tool result with hidden lines (``expand_last`` shows it whole)."""
        self._region: LiveRegion | None = None
        self._drawn_at = 0.0  # when the live tail was last drawn (time.monotonic)
        # The running tool's live output: its call, its complete lines so far (the last
        # PROGRESS_ROWS of them, and how many in all), its unfinished line.
        self._progress: tuple[str, list[str], int, str] | None = None

    @property
    def width(self) -> int:
        """The terminal's width in cells."""
        return max(self._size()[0], 20)

    @property
    def height(self) -> int:
        """The terminal's height in rows."""
        return max(self._size()[1], 2)

    def _style(self, code: str, text: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.color else text

    def dim(self, text: str) -> str:
        """``text`` dimmed (with colour)."""
        return self._style("2", text)

    def _draw(self, committed: str) -> None:
        """Write ``committed`` (final rows) and, when ``live``, redraw the live tail and the
        status row below it."""
        if not self.live:
            if committed:
                self.out.write(committed)
            return
        from tether.cli.ui.markdown import LiveRegion

        height = self.height
        markdown = self.markdown
        if markdown is not None and markdown.width != self.width:
            markdown.render_all(self.width)  # resized: what follows is wrapped to the new width
        region = self._region
        if region is None:
            region = self._region = LiveRegion(height)
        region.height = height
        region.width = self.width
        tail = "" if self.markdown is None else self.markdown.live(max_rows=height)
        tail += self._progress_block()
        if self.status:
            tail += self.status + "\n"
        text = region.update(committed, tail)
        self._drawn_at = time.monotonic()
        if text:
            self.out.write(text)

    def write(self, text: str) -> None:
        """Write ``text`` (whole lines) as it is."""
        self._draw(text)

    def redraw(self) -> None:
        """The terminal was resized (``SIGWINCH``): erase the live region as the terminal now
        shows it and draw it again at the new width (rows already written stay as they are:
        a terminal keeps its scrollback as it was written, or re-wraps it itself)."""
        if self.live:
            self._draw("")

    def line(self, text: str) -> None:
        """Write ``text`` on a line of its own (ending any streamed text first)."""
        self.end_stream()
        self._draw(text + "\n")

    def set_status(self, text: str) -> None:
        """Show ``text`` as the status row (``""`` erases it); only when ``live``."""
        if text != self.status:
            self.status = text
            self._draw("")

    def end_stream(self) -> None:
        """Finish streamed text or thinking: its last rows are written for good."""
        markdown = self.markdown
        self.mode = "line"
        if markdown is not None:
            committed = markdown.finish()
            self.markdown = None
            self._draw(committed)

    def _stream(self, mode: Literal["text", "thinking"], delta: str) -> None:
        if self.mode != mode:
            self.end_stream()
            from tether.cli.ui.markdown import StreamingMarkdown

            self.mode = mode
            self.markdown = StreamingMarkdown(
                width=self.width, color=self.color, theme=self.theme, thinking=mode == "thinking"
            )
        assert self.markdown is not None
        committed = self.markdown.feed(delta)
        if committed or not self.live:
            self._draw(committed)
            return
        # Rendering the unfinished block costs as much as the block is long: redraw it at a
        # frame rate, not per delta (the status ticker redraws it too while the turn runs).
        now = time.monotonic()
        if now - self._drawn_at >= _LIVE_PERIOD:
            self._draw("")

    def show(self, event: AgentEvent) -> None:
        """Write one event of a run."""
        match event.type:
            case "model.chunk":
                chunk = event.payload.chunk
                if chunk.type == "textDelta" and chunk.delta:
                    self._stream("text", chunk.delta)
                elif chunk.type == "thinkingDelta" and chunk.delta:
                    self._stream("thinking", chunk.delta)
            case "tool.started":
                self.line(self.tool_call_line(event.payload.tool_call))
            case "tool.progress":
                payload = event.payload
                self.tool_progress(payload.tool_call_id, payload.text)
            case "tool.finished":
                for text in self.tool_result_lines(event.payload.message):
                    self.line(text)
            case "model.retry":
                retry = event.payload
                self.line(
                    self._style(
                        "33",
                        f"retrying in {retry.delay_ms / 1000:g} s "
                        f"({retry.reason}, attempt {retry.attempt})",
                    )
                )
            case "message.accepted":
                message = event.payload.message
                if message.role == "user" and message.id.startswith("context-summary-"):
                    self.line(self._style("2", "(the context was compacted)"))
            case "run.finished":
                self.end_stream()

    def tool_call_line(self, call: ToolCall) -> str:
        """``→ name({arguments})``, the arguments shortened to one line; for a call whose
        arguments were not a JSON object, ``→ name(not JSON: TEXT)`` with the text sent."""
        from tether.cli.ui.text import visible
        from tether.protocol import to_json

        if call.raw_arguments is not None:
            raw = shorten(visible(call.raw_arguments, strict=True).replace("\n", " "), 200)
            return f"→ {call.name}(not JSON: {raw})"
        return f"→ {call.name}({shorten(compact(to_json(call.arguments)), 200)})"

    def tool_progress(self, call_id: str, text: str) -> None:
        """A running tool's output as it arrives. On a terminal (``live``): its last
        ``PROGRESS_ROWS`` lines in a box above the status row, redrawn as output comes and
        gone when the result is shown (head and tail, ``tool_result_lines``). Otherwise each
        complete line is written, at most ``PROGRESS_MAX_LINES`` per call, then one note."""
        call, rows, total, tail = self._progress or (call_id, [], 0, "")
        if call != call_id:
            rows, total, tail = [], 0, ""
        pieces = (tail + text).split("\n")
        tail = pieces.pop()[-4096:]
        for piece in pieces:
            if not self.live:
                if total < PROGRESS_MAX_LINES:
                    self.line(self._progress_row(piece))
                elif total == PROGRESS_MAX_LINES:
                    self.line(self.dim("    │ … (more output: the result follows)"))
            total += 1
        rows = [*rows, *pieces][-PROGRESS_ROWS:]
        self._progress = (call_id, rows, total, tail)
        if self.live:
            self._draw("")

    def _progress_row(self, text: str) -> str:
        from tether.cli.ui.text import clip, visible

        return self.dim("    │ " + clip(visible(text, strict=True), max(self.width - 7, 10)))

    def _progress_block(self) -> str:
        """The live box of the running tool's output (``""`` when there is none)."""
        if self._progress is None:
            return ""
        _, rows, total, tail = self._progress
        shown = [*rows, tail] if tail else rows
        hidden = total - len(rows)
        head = [self.dim(f"    │ … {hidden} earlier lines")] if hidden > 0 else []
        return "".join(row + "\n" for row in [*head, *map(self._progress_row, shown)])

    def tool_result_lines(self, result: ToolResultMessage) -> list[str]:
        """A tool's result, marked ok or error: its first and last lines
        (``tether.cli.ui.results``; ``edit_file``: more of its diff, coloured), the ones
        between hidden (``expand_last`` shows them)."""
        from tether.cli.ui.results import result_view

        self._progress = None  # the call's live output ends with its result
        edit = result.tool_name == "edit_file"
        view = result_view(
            result.content,
            width=self.width,
            color=self.color,
            indent="    ",
            is_error=result.is_error,
            **({"head": _DIFF_LINES, "tail": 2} if edit else {}),
        )
        self.last_result = view if view.hidden else None
        rows = view.preview.splitlines()
        if edit and self.color:
            rows = [_diff_colour(row, self._style) for row in rows]
        if result.is_error:
            return [self._style("31", f"  ✗ {result.tool_name} error"), *rows]
        return [f"  ✓ {result.tool_name}", *rows]

    def expand_last(self) -> None:
        """Ctrl-O: write the last tool result whole (or say there is none hidden)."""
        view = self.last_result
        if view is None:
            self.line(self._style("2", "(no hidden tool output)"))
            return
        self.line(self._style("2", f"(all {view.lines} lines of the last tool result)"))
        self.write(view.full)

    def usage_line(
        self,
        turn: tuple[int, int],
        session: tuple[int, int],
        costs: tuple[str, str] | None = None,
    ) -> str:
        """The token usage of a turn and of the session, and their ``costs`` (shown when
        given: the model has prices)."""
        turn_cost, session_cost = ("", "") if costs is None else (f" · {c}" for c in costs)
        return self._style(
            "2",
            f"[tokens: {turn[0]} in, {turn[1]} out{turn_cost} · "
            f"session: {session[0]} in, {session[1]} out{session_cost}]",
        )


PROGRESS_MAX_LINES: Final = 20
"""How many lines of a running tool's output are written per call off a terminal."""
PROGRESS_ROWS: Final = 8
"""How many of a running tool's last output lines the chat's live box shows."""


def _typed_row(typed: str, width: int) -> str:
    """The row under the status line showing what was typed during the turn."""
    from tether.cli.ui.text import clip, visible

    hint = "  (Enter steers, Alt-Enter follows up)"
    return clip("> " + visible(typed, strict=True) + hint, max(width, 1))


def _diff_colour(row: str, style: Callable[[str, str], str]) -> str:
    indent, text = row[:4], row[4:]
    if text.startswith("+") and not text.startswith("+++"):
        return indent + style("32", text)
    if text.startswith("-") and not text.startswith("---"):
        return indent + style("31", text)
    return row


# --- the chat ---------------------------------------------------------------------------------

Interrupt: TypeAlias = Literal["turn", "operation", "again"]
"""What a Ctrl-C did (``Chat.interrupt``): cancelled the running ``turn``, cancelled the
``operation`` the chat waits for (a runtime being built or closed, extension hooks), or came
``again`` while that cancellation is still settling (``tether chat`` then quits at once)."""

T = TypeVar("T")


class _Cancelled(Exception):
    """The operation the chat waited for was cancelled by Ctrl-C."""


class Escaped(Exception):
    """Esc at a question (``Ask`` raises it): at the approval question it interrupts the
    turn, as Esc during a stream does."""


Ask: TypeAlias = Callable[[str], Awaitable[str]]
"""Asks a question and returns the answer; raises ``KeyboardInterrupt`` (Ctrl-C),
``EOFError`` (Ctrl-D) or ``Escaped`` (Esc)."""

_WARM_MODULES: Final = (
    "tether.agent.persistence",
    "tether.agent.session",
    "tether.cli.models",
    "tether.cli.run",
    "tether.providers.openai_chat",
    "tether.tools.coding",
)


def _warm_up() -> None:
    """Import what the first turn needs, off the main thread (failures show up later)."""
    import importlib

    for name in _WARM_MODULES:
        with contextlib.suppress(Exception):
            importlib.import_module(name)


class Chat:
    """One interactive session: a ``CodingSession`` (``tether.coding``: the model, the
    runtime, the session file and its branch, the system prompt, approvals) and what a person
    sees of it.

    ``ask`` answers the approval question (the terminal's prompt in ``tether chat``; a
    script in tests); ``pick`` opens the lists of ``/model`` and ``/resume`` without an
    argument (``tether.cli.ui.picker.pick``); ``view`` writes what happens; ``build_model``
    makes the model of a choice (default: ``ModelChoice.build``, the HTTP model, with the
    session's prompt cache key);
    ``extensions`` are activated in every runtime the chat builds.
    """

    def __init__(
        self,
        *,
        choice: ModelChoice,
        config: CliConfig,
        cwd: Path,
        data_dir: Path,
        view: ChatView,
        ask: Ask,
        introduction: str | None = None,
        auto_approve: bool = False,
        build_model: Callable[[ModelChoice], Model] | None = None,
        extensions: Sequence[ExtensionDefinition] = (),
        pick: Picker | None = None,
    ) -> None:
        from tether.cli.session_config import coding_config
        from tether.coding import CodingSession, SessionPlace
        from tether.coding.context_files import user_config_dir

        self.config = config
        self.data_dir = data_dir
        self.sessions_dir = data_dir / "sessions"
        self.view = view
        self.ask = ask
        self.pick = pick
        """Opens a list to pick from (``tether.cli.ui.picker``; ``None``: no terminal, so
        ``/model`` and ``-r`` list and ask instead)."""
        self.session_tokens = (0, 0)
        made = coding_config(
            choice,
            config,
            cwd=cwd,
            tools="coding",
            introduction=introduction,
            sessions=SessionPlace(directory=self.sessions_dir),
            config_dir=user_config_dir(),
            extensions=tuple(extensions),
            auto_approve=auto_approve,
        )
        self.coding: CodingSession[ModelChoice] = CodingSession(
            dataclasses.replace(made, build_model=build_model),
            approver=self._approve,
        )
        self.coding.subscribe(self._on_event)
        self._running: Agent | None = None
        self._shown_error: BaseException | None = None
        self._busy: asyncio.Future[Any] | None = None  # what Ctrl-C cancels between turns
        self._busy_cancelled = False
        self._asking = False  # the approval question is up
        self.keys: TurnKeys | None = None
        """The terminal's keys during a turn (``tether chat`` sets them)."""
        self.typed = ""
        """What was typed during the turn and not yet sent (shown under the status)."""
        self._model_list: list[str] = []  # what /model listed last
        self.unsent = ""
        """What was typed during the last turn and never sent (the next prompt starts with
        it)."""
        self._queued: set[asyncio.Future[Any]] = set()
        self._activity: tuple[Activity, str | None] = ("waiting", None)
        self._retry: tuple[float, str] | None = None  # a retry's deadline (loop time), why
        self._last_chunk = 0.0
        self._preview_workspace: tuple[Path, Workspace | None] | None = None
        self._rebuilt = 0  # how many rebuilds worked

    def _on_event(self, event: CodingEvent) -> None:
        self._note_activity(event)
        if event.type == "session.notice":
            self.view.line(event.text)
        elif event.type == "session.opened":
            if event.reason == "created":
                remember_session(self.sessions_dir, self.cwd, event.session_id)
        else:
            self.view.show(event)

    def _note_activity(self, event: CodingEvent) -> None:
        """What the status line says the turn is doing, from its events."""
        loop_time = asyncio.get_running_loop().time()
        if event.type == "model.chunk":
            kind = event.payload.chunk.type
            if kind == "textDelta":
                self._activity = ("writing", None)
            elif kind == "thinkingDelta":
                self._activity = ("thinking", None)
            self._last_chunk = loop_time
        elif event.type == "tool.started":
            self._activity = ("tool", event.payload.tool_call.name)
        elif event.type == "model.retry":
            retry = event.payload
            self._activity = ("retrying", None)
            self._retry = (loop_time + retry.delay_ms / 1000, retry.reason)
        elif event.type in ("tool.finished", "message.accepted"):
            self._activity = ("waiting", None)
            self._last_chunk = loop_time

    def cycle_thinking(self) -> None:
        """Shift-Tab at the prompt: the next thinking level (``CodingSession.cycle_thinking``),
        said on a line of its own (then a level the model clamps is said once, by the
        session)."""
        from tether.providers.thinking import next_level

        level = next_level(self.coding.thinking)
        self.view.line(self.view.dim(f"(thinking: {level})"))
        self.coding.set_thinking(level)

    def queue(self, text: str, *, follow_up: bool) -> None:
        """Enter (a steer: the next turn boundary) or Alt-Enter (a follow-up: when the model
        would finish) while a turn runs: queue ``text`` and say so."""
        work = self.coding.follow_up(text) if follow_up else self.coding.steer(text)
        task = asyncio.ensure_future(work)
        self._queued.add(task)

        def done(finished: asyncio.Future[Any]) -> None:
            self._queued.discard(finished)
            if not finished.cancelled() and finished.exception() is not None:
                self.view.line(f"(not queued: {finished.exception()})")

        task.add_done_callback(done)
        kind = "follow-up" if follow_up else "steer"
        self.view.line(self.view.dim(f"({kind} queued: {shorten(text, 100)})"))

    def _current_activity(self) -> tuple[Activity, str | None]:
        return self._activity

    async def _tick(self) -> None:
        """Redraw the status line under the live tail about ten times a second while a turn
        runs (not while the approval question is up)."""
        from tether.cli.ui.status import StatusState, status_line
        from tether.coding.config import DEFAULT_CONTEXT_WINDOW

        loop = asyncio.get_running_loop()
        started = self._last_chunk = loop.time()
        self._activity = ("waiting", None)
        meter = self.meter
        base = (0, 0) if meter is None else (meter.input_tokens, meter.output_tokens)
        frame = 0
        while True:
            now = loop.time()
            activity, tool = self._current_activity()
            if activity in ("writing", "thinking") and now - self._last_chunk > _STALL_SECONDS:
                activity = "waiting"  # the stream went quiet
            meter = self.meter
            tokens = (
                (None, None)
                if meter is None
                else (meter.input_tokens - base[0], meter.output_tokens - base[1])
            )
            retry_in, retry_reason = None, None
            if activity == "retrying" and self._retry is not None:
                retry_in, retry_reason = max(self._retry[0] - now, 0.0), self._retry[1]
            state = StatusState(
                activity=activity,
                frame=frame,
                tool=tool,
                retry_in=retry_in,
                retry_reason=retry_reason,
                elapsed=now - started,
                input_tokens=tokens[0] or None,
                output_tokens=tokens[1] or None,
                cost=self.coding.cost,
                context_used=None if meter is None else meter.context_tokens,
                context_window=self.choice.context_window or DEFAULT_CONTEXT_WINDOW,
                thinking=self.coding.thinking,
            )
            if not self._asking:
                width = self.view.width - 1
                line = status_line(state, width=width, color=self.view.color)
                if self.typed:
                    line += "\n" + _typed_row(self.typed, width)
                self.view.set_status(line)
            frame += 1
            await asyncio.sleep(_STATUS_PERIOD)

    # -- what it is ----------------------------------------------------------------------------

    @property
    def choice(self) -> ModelChoice:
        """The current model choice."""
        return self.coding.model

    @property
    def cwd(self) -> Path:
        """The current workspace."""
        return self.coding.cwd

    @property
    def approvals(self) -> Approvals:
        """Which tool calls are asked about (the session's)."""
        return self.coding.approvals

    @property
    def tree(self) -> SessionTree | None:
        """The current session (``None`` before the first runtime is built; after ``close``
        the last one)."""
        return self.coding.tree

    @property
    def session_id(self) -> str | None:
        """The session file's ID, once there is one."""
        return self.coding.session_id

    @property
    def runtime(self) -> Runtime | None:
        """The current runtime (``None`` before the first prompt or resume)."""
        return self.coding.runtime

    @property
    def meter(self) -> UsageMeter | None:
        """The model, metered (``None`` until the agent is built)."""
        return self.coding.meter

    async def agent(self) -> Agent:
        """The agent, built on first use (with a new session)."""
        return await self._interruptible(self.coding.start())

    async def resources(self) -> ChatResources:
        """The skills and prompt templates of the current workspace
        (``tether.coding.resources``)."""
        return await self.coding.resources()

    async def _rebuild(self, work: Awaitable[Any]) -> bool:
        """Wait for a runtime rebuild of the session (``work``); whether it worked. A
        failure is shown and leaves the current runtime as it was."""
        from tether.agent.runtime import TetherRuntimeError

        before = self.coding.runtime
        try:
            await self._interruptible(work)
            self._rebuilt += 1
            return True
        except TetherRuntimeError as error:
            self.view.line(_problem(error))
            return False
        except _Cancelled:
            if before is None:
                self.view.line("(cancelled: no runtime was built)")
            else:
                self.view.line("(cancelled: the current runtime stays)")
            return False

    async def close(self) -> bool:
        """Dispose of the runtime (the session flushed, extensions disposed), then close the
        model's HTTP client; ``False`` when Ctrl-C stopped the wait for the runtime (its
        disposal goes on in the background, bounded by ``extension_timeout``)."""
        from tether.agent.runtime import TetherRuntimeError

        closing = asyncio.ensure_future(self.coding.close())
        try:
            await self._interruptible(asyncio.shield(closing))
        except TetherRuntimeError as error:
            self.view.line(f"(the session did not close cleanly) {_problem(error)}")
        except _Cancelled:
            self.view.line("(not waiting for the runtime to close)")
            return False
        return True

    # -- turns ---------------------------------------------------------------------------------

    def interrupt(self) -> Interrupt | None:
        """Ctrl-C: cancel the running turn, else the operation the chat waits for (a runtime
        being built or closed, extension hooks); what it did (``None``: nothing to cancel)."""
        running = self._running
        if running is not None:
            running.cancel(_INTERRUPT)
            return "turn"
        busy = self._busy
        if busy is None or busy.done():
            return None
        if self._busy_cancelled:
            return "again"
        self._busy_cancelled = True
        busy.cancel()
        return "operation"

    async def _interruptible(self, work: Awaitable[T]) -> T:
        """Wait for ``work`` (on a task of its own) as the operation ``interrupt`` cancels;
        raises ``_Cancelled`` once the cancelled work has settled."""
        task: asyncio.Future[T] = asyncio.ensure_future(work)
        self._busy, self._busy_cancelled = task, False
        try:
            return await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise  # the chat itself is being cancelled
            raise _Cancelled from None
        finally:
            self._busy, self._busy_cancelled = None, False

    async def turn(self, text: str) -> RunResult | None:
        """Send ``text`` and show the run until it settles (``None``: no runtime could be
        built for it, which is shown)."""
        from tether.agent.runtime import TetherRuntimeError
        from tether.cli.models import run_problem

        try:
            agent = await self.agent()
        except TetherRuntimeError as error:
            self.view.line(_problem(error))
            return None
        except _Cancelled:
            self.view.line("(cancelled: the turn was not sent)")
            return None
        self._running = agent
        ticker = asyncio.ensure_future(self._tick()) if self.view.live else None
        keys = self.keys
        if keys is not None:
            keys.start()
        try:
            result = await (await self.coding.prompt(text)).result
        finally:
            self._running = None
            if keys is not None:
                keys.stop()
                self.unsent, keys.typed = keys.typed, ""
            self.typed = ""
            if ticker is not None:
                ticker.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await ticker
            self.view.set_status("")
        view = self.view
        view.end_stream()
        if result.status == "cancelled":
            view.line("(turn cancelled)")
        elif result.status == "maxSteps":
            view.line(f"(stopped after {result.max_steps} model steps)")
        elif result.status == "failed":
            meter = self.meter
            problem = run_problem(result, None if meter is None else meter.last_error, self.choice)
            if problem is None:
                view.line(f"turn failed [{result.error.code}]: {result.error.message}")
            else:
                view.line(f"[{problem.code}] {problem}")
        usage = result.usage
        turn = (usage.input_tokens, usage.output_tokens)
        total = self.session_tokens
        self.session_tokens = (total[0] + turn[0], total[1] + turn[1])
        view.line(view.usage_line(turn, self.session_tokens, self._costs(usage)))
        await self._check_runtime()
        return result

    def _costs(self, usage: ModelUsage) -> tuple[str, str] | None:
        """What a turn's ``usage`` and the session cost (``None``: the model has no prices,
        so no cost is shown)."""
        from tether.cli.ui.status import format_cost

        choice = self.choice
        if not choice.prices.known:
            return None
        return format_cost(choice.cost(usage)), format_cost(self.coding.cost)

    async def _check_runtime(self) -> None:
        """After a turn: wait for the runtime's event tail (extension hooks, the session
        coherence check: the runtime's subscriber returns each operation to the Agent) and
        show, once, an error that poisoned the runtime."""
        runtime = self.runtime
        if runtime is None:
            return
        try:
            await self._interruptible(runtime.agent.wait_for_subscribers())
        except _Cancelled:
            self.view.line("(not waiting for the extensions' hooks)")
            return
        error = runtime.error
        if error is not None and error is not self._shown_error:
            self._shown_error = error
            self.view.line(
                f"(the session is no longer kept in step) {_problem(error)}: "
                "/new or /resume starts over"
            )

    async def before_tool_call(self, context: ToolCallContext) -> BlockToolCall | None:
        """The approval hook (see the module docstring; the session's policy decides what
        is asked, ``ask`` asks)."""
        return await self.coding.before_tool_call(context)

    def model_names(self) -> list[str]:
        """The ``/model`` names Tab offers: the current model, the default one, the config's
        models, then every provider as ``PROVIDER/``."""
        from tether.cli.models import known_providers

        config = self.config
        names = [self.choice.spec]
        if config.default_model:
            names.append(config.default_model)
        names += list(config.models)
        names += [f"{name}/" for name in known_providers(config)]
        return names

    def workspace_view(self) -> Workspace | None:
        """The coding tools' view of the current workspace (``None`` if it cannot be
        opened), for previews and ``@path`` completion."""
        return self._workspace()

    def _workspace(self) -> Workspace | None:
        """The coding tools' view of the workspace, for the approval preview's reads."""
        from tether.tools.coding.workspace import Workspace

        cached = self._preview_workspace
        if cached is not None and cached[0] == self.cwd:
            return cached[1]
        try:
            made: Workspace | None = Workspace(self.cwd)
        except TetherError:
            made = None
        self._preview_workspace = (self.cwd, made)
        return made

    async def _approve(self, request: ApprovalRequest) -> Answer | Decline:
        from tether.cli.ui.approval import (
            Deny,
            approval_preview,
            approval_question,
            denial_text,
            parse_approval,
        )

        call = request.tool_call
        name = call.name
        view = self.view
        view.end_stream()
        status, view.status = view.status, ""
        view.write(
            approval_preview(
                name,
                call.arguments,
                workspace=self._workspace(),
                width=view.width,
                color=view.color,
            )
        )
        view.set_status("")
        self._asking = True
        keys = self.keys
        taken = keys is not None and keys.pause()
        try:
            while True:
                try:
                    reply = await self.ask(approval_question(name))
                except (KeyboardInterrupt, EOFError):
                    self.interrupt()
                    return "no"
                except Escaped:
                    if self.interrupt() != "turn":
                        return "no"
                    view.line("Esc: cancelling the turn")
                    # The loop races this hook against the run's abort signal: the wait
                    # ends there, and the call is answered as interrupted, not declined.
                    await asyncio.get_running_loop().create_future()
                    return "no"  # pragma: no cover - the future is never set
                answer = parse_approval(reply)
                if answer is not None:
                    break
                view.line("answer y, n (or n: a reason for the model) or a")
        finally:
            self._asking = False
            if taken and keys is not None:
                keys.resume()
            view.set_status(status)
        match answer.kind:
            case "yes":
                return "yes"
            case "always":
                return "always"
            case "no":
                assert isinstance(answer, Deny)
                view.line(f"  (declined: {name} did not run)")
                if answer.reason is None:
                    return "no"
                return Decline(reason=denial_text(answer))

    # -- commands ------------------------------------------------------------------------------

    async def command(self, command: Command) -> bool:
        """Run a slash command; ``False`` when the chat should end (``/quit``)."""
        try:
            return await self._command(command)
        except _Cancelled:
            self.view.line("(cancelled)")
            return True

    async def _command(self, command: Command) -> bool:
        name, argument = command.name, command.argument
        found = find_command(name)
        if found is None:  # not a command: a prompt template, or unknown
            expanded = (await self.resources()).expand(f"/{name} {argument}")
            if expanded is None:
                self.view.line(f"unknown command /{name} (/help lists them)")
            else:
                await self.turn(expanded)
            return True
        if found.chat_handler is not None:
            return await found.chat_handler(self, argument)
        assert found.handler is not None  # SlashCommand holds exactly one
        return await found.handler(self, argument)

    # -- what the commands work on (tether.cli.slash_commands.ChatHost) -------------------------

    def line(self, text: str) -> None:
        """Write one line of a command's output."""
        self.view.line(text)

    async def rebuild(self, work: Awaitable[Any]) -> bool:
        """Wait for a runtime rebuild of the session (``work``, cancelled by Ctrl-C); whether
        it worked. A failure is shown and leaves the current runtime as it was."""
        return await self._rebuild(work)

    async def show_help(self) -> None:
        """``/help``: the commands and keys, then the workspace's prompt templates."""
        self.view.write(HELP)
        templates = (await self.resources()).templates
        if templates:
            self.view.line("prompt templates (/name args):")
            for template in templates:
                self.view.line(f"  /{template.name:<9} {shorten(template.description, 70)}")

    async def resume_command(self, argument: str) -> None:
        """``/resume [ID]``: without an ID, the list of sessions to pick from."""
        await self._resume_command(argument)

    async def new_session(self) -> bool:
        """``/new``: a runtime on a new session (the file is created now when a runtime is
        current, else with the first prompt); whether it worked."""
        rebuilt = self._rebuilt
        await self.command(Command("new"))
        return self._rebuilt > rebuilt

    async def change_directory(self, argument: str) -> bool:
        """``/cd DIR``: the same session in another workspace (tools, context files, skills
        and extensions rebuilt there, through ``RuntimeManager.replace``: the current
        runtime stays until the new one is built); whether it moved."""
        rebuilt = self._rebuilt
        await self.command(Command("cd", argument))
        return self._rebuilt > rebuilt

    async def switch_model(self, spec: str) -> None:
        """``/model [SPEC]``: switch to ``SPEC`` (or ``N`` of the last list); without it,
        the list to pick from (off a terminal: numbered)."""
        from tether.cli.models import choose_model

        if not spec and self.pick is not None:
            picked = await self.pick(
                f"model (now {self.choice.spec})", self._model_items(), self._server_models()
            )
            if picked is None:
                return
            if picked.endswith("/"):  # a provider: the model's name is still to be typed
                self.unsent = f"/model {picked}"
                self.view.line(f"/model {picked}MODEL switches (type the model's name)")
                return
            spec = picked
        if not spec:
            self._model_list = [
                name for name in dict.fromkeys(self.model_names()) if not name.endswith("/")
            ]
            self.view.line(f"model: {self.choice.spec}")
            for number, name in enumerate(self._model_list, 1):
                mark = "*" if name == self.choice.spec else " "
                self.view.line(f"{mark} {number:>2}  {name}")
            self.view.line("/model N switches to one of these, /model PROVIDER/MODEL to any")
            return
        if spec.isdigit():
            listed = self._model_list
            if not 1 <= int(spec) <= len(listed):
                self.view.line(f"no model {spec} (/model lists them)")
                return
            spec = listed[int(spec) - 1]
        same = spec.partition("/")[0] == self.choice.provider.name
        try:
            choice = choose_model(
                spec, base_url=self.choice.base_url if same else None, config=self.config
            )
        except CliError as error:
            self.view.line(f"[{error.code}] {error}")
            return
        if not await self._rebuild(self.coding.switch_model(choice)):
            return
        self.view.line(f"model: {choice.spec}")

    def _model_items(self) -> list[PickItem]:
        """What the ``/model`` list starts with: the current model, the default, the
        config's models, every provider (``PROVIDER/``: then the name is typed)."""
        from tether.cli.ui.picker import PickItem

        config = self.config
        items: dict[str, PickItem] = {}
        for spec in self.model_names():
            if spec in items:
                continue
            if spec == self.choice.spec:
                detail = "current"
            elif spec == config.default_model:
                detail = "default"
            elif spec.endswith("/"):
                detail = "provider: type the model's name next"
            else:
                detail = "configured"
            items[spec] = PickItem(value=spec, label=spec, detail=detail)
        return list(items.values())

    async def _server_models(self) -> tuple[list[PickItem], str]:
        """The ``/model`` list with the models the current provider's server offers
        (``GET /models``, within ``MODEL_LIST_SECONDS``) after the known ones; a failure is
        the note (the list as it was), never raised."""
        from tether.cli.ui.picker import PickItem
        from tether.providers.errors import ProviderError

        name = self.choice.provider.name
        try:
            model = self.choice.build()
        except TetherError as error:
            return self._model_items(), f"{name}'s models: [{error.code}] {error}"
        try:
            async with asyncio.timeout(MODEL_LIST_SECONDS):
                ids = await model.list_models()
        except TimeoutError:
            return self._model_items(), f"{name}'s models: no answer in {MODEL_LIST_SECONDS:g} s"
        except ProviderError as error:
            return self._model_items(), f"{name}'s models: [{error.code}] {error.message}"
        finally:
            await model.aclose()
        first = self._model_items()
        known = {item.value for item in first}
        found = [
            PickItem(value=spec, label=spec, detail=f"{name}'s server")
            for spec in (f"{name}/{ident}" for ident in ids)
            if spec not in known
        ]
        models = [item for item in first if not item.value.endswith("/")]
        providers = [item for item in first if item.value.endswith("/")]
        return [*models, *found, *providers], f"{len(ids)} from {name}"

    async def pick_session(self) -> str | None:
        """``tether chat -r`` or ``/resume`` without an ID: the saved sessions to pick from
        (with a terminal: ``pick``; else numbered, and asked which); its ID (``None``: a new
        session, nothing saved, or Esc / Ctrl-C / Ctrl-D)."""
        if self.pick is not None:
            items = await self._session_items()
            if not items:
                self.view.line("no saved sessions")
                return None
            return await self.pick("resume a session", items, None)
        listed = await list_sessions(self, numbered=True)
        if not listed:
            return None
        while True:
            try:
                reply = (await self.ask("resume which? (a number or an ID; Enter: new): ")).strip()
            except (KeyboardInterrupt, EOFError):
                return None
            if not reply:
                return None
            if reply.isdigit() and 1 <= int(reply) <= len(listed):
                return listed[int(reply) - 1]
            if self.coding.matching_sessions(reply):
                return reply
            self.view.line(f"no session {reply!r}: a number from 1 to {len(listed)}, or an ID")

    async def _session_items(self) -> list[PickItem]:
        """The saved sessions as picker items: the ID's start, when it was created and its
        last message, then its directory."""
        from tether.agent.session import SessionLimits, list_sessions
        from tether.cli.ui.picker import PickItem

        found = await asyncio.to_thread(
            list_sessions, self.sessions_dir, limits=SessionLimits.for_coding()
        )
        directories = session_directories(self.sessions_dir)
        items: list[PickItem] = []
        for info in found:
            if info.id is None:
                continue
            mark = " (this one)" if info.id == self.session_id else ""
            where = directories.get(info.id, "(directory unknown)")
            last = info.last_message or info.title or "(no message)"
            items.append(
                PickItem(
                    value=info.id,
                    label=f"{info.id[:8]}  {(info.created_at or '')[:16]}  {shorten(last, 50)}",
                    detail=where + mark,
                )
            )
        return items

    async def resume(self, ident: str) -> bool:
        """Resume the session ``ident`` names; whether it was found and loaded (a runtime
        built on it replaces the current one)."""
        matches = self.coding.matching_sessions(ident)
        if len(matches) != 1:
            if matches:
                self.view.line(f"{ident!r} names {len(matches)} sessions: give more of the ID")
            else:
                self.view.line(f"no session {ident!r} (/sessions lists them)")
            return False
        session_id = matches[0]
        if session_id == self.session_id:
            self.view.line(f"already in session {session_id}")
            return True
        self.view.line(f"resuming {session_id}.jsonl")
        if not await self._rebuild(self.coding.resume(session_id)):
            return False
        agent = await self.agent()
        count = len(agent.messages)
        self.view.line(f"resumed session {session_id} ({count} messages)")
        self._show_last(agent.messages)
        return True

    def _show_last(self, messages: tuple[Message, ...]) -> None:
        for message in messages[-2:]:
            if message.role == "user":
                self.view.line(f"  you: {shorten(message.content, 100)}")
            elif message.role == "assistant":
                text = "".join(block.text for block in message.content if block.type == "text")
                if text:
                    self.view.line(f"  assistant: {shorten(text, 100)}")

    async def _resume_command(self, argument: str) -> None:
        if not argument and self.pick is None:
            self.view.line("/resume ID (/sessions lists them)")
            return
        if not argument:
            picked = await self.pick_session()
            if picked is None:
                return
            argument = picked
        await self.resume(argument)


def _problem(error: TetherError) -> str:
    """``[CODE] message (causes)``: a runtime error as the chat shows it."""
    return f"[{error.code}] {_explain(error)}"


def _explain(error: BaseException, depth: int = 0) -> str:
    """``error``'s message, then its causes in parentheses (an aggregate's each, ``;``
    separated), three levels deep at most."""
    text = str(error) or type(error).__name__
    cause = error.__cause__
    if cause is None or depth >= 3:
        return text
    if instance_of(cause, BaseExceptionGroup):
        parts = cause.exceptions
        inner = "; ".join(_explain(part, depth + 1) for part in parts)
    else:
        inner = _explain(cause, depth + 1)
    return text if inner in text else f"{text} ({inner})"  # said once, not twice


# --- the terminal -----------------------------------------------------------------------------


def _completer(chat: Callable[[], Chat]) -> Any:
    """A prompt_toolkit ``Completer`` over ``chat_completions`` for the chat ``chat()``."""
    from prompt_toolkit.completion import CompleteEvent, Completer
    from prompt_toolkit.completion import Completion as ToolkitCompletion
    from prompt_toolkit.document import Document

    class ChatCompleter(Completer):
        def get_completions(
            self, document: Document, complete_event: CompleteEvent
        ) -> Iterator[ToolkitCompletion]:
            current = chat()
            found = chat_completions(
                document.text_before_cursor,
                workspace=current.workspace_view(),
                models=current.model_names(),
            )
            for item in found:
                yield ToolkitCompletion(
                    item.text,
                    start_position=item.start_position,
                    display=item.display,
                    display_meta=item.meta,
                )

    return ChatCompleter()


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
    try:
        extensions = configured_extensions(config)
    except CliError as error:
        warn(f"tether chat: [{error.code}] {error}")
        return 2
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
    completer = _completer(lambda: chat)
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
            os._exit(_EXIT_INTERRUPTED)

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
    return 0 if closed else _EXIT_INTERRUPTED
