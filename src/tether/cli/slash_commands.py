"""The slash commands of ``tether chat`` and ``tether rpc``: one table, ``SLASH_COMMANDS``.

Each ``SlashCommand`` is a name, its argument's form, its help and its handler; adding a
command is adding one entry. ``tether chat`` looks the typed name up in the table and runs
that entry's handler (a name the table does not hold is a prompt template or unknown: it can
never run another command); ``/help``, ``tether chat --help`` and Tab completion are made
from the table. A command whose handler needs only the coding session and a place to write
lines (``handler``: a ``SlashHost``) is offered by ``tether rpc`` too, as
``{"type": "command", "name", "argument"}`` (its lines are the response); one that needs the
terminal (``chat_handler``: the chat itself, a ``ChatHost``: a list to pick from, the help of
the keys, quitting) is ``tether chat``'s only.

Imports nothing heavy (not even ``asyncio``: the handlers import what they use when they
run), so ``tether --help`` stays fast.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeAlias

from tether._base.dataclass import dataclass

if TYPE_CHECKING:
    from tether.agent.agent import Agent
    from tether.agent.session import SessionEntry
    from tether.coding.session import CodingSession
    from tether.protocol import Message

__all__ = [
    "CHAT_EXIT_HELP",
    "COMMANDS",
    "COMMANDS_HELP",
    "HELP",
    "KEYS_HELP",
    "SLASH_COMMANDS",
    "ChatHandler",
    "ChatHost",
    "Handler",
    "SlashCommand",
    "SlashHost",
    "find_command",
    "rpc_commands",
    "tree_rows",
]

LIST_SESSIONS: Final = 20
"""The most sessions ``/sessions`` lists."""


class SlashHost(Protocol):
    """What a command that needs no terminal works on (``tether chat``'s chat, ``tether
    rpc``'s session)."""

    @property
    def coding(self) -> CodingSession[Any]:
        """The coding session."""
        ...

    def line(self, text: str) -> None:
        """Write one line of the command's output."""
        ...

    async def rebuild(self, work: Awaitable[Any]) -> bool:
        """Wait for a runtime rebuild of the session (``work``); whether it worked (a failure
        is shown, or raised to the caller, and leaves the runtime as it was)."""
        ...

    async def agent(self) -> Agent:
        """The agent, built on first use."""
        ...


class ChatHost(SlashHost, Protocol):
    """What a command that needs ``tether chat``'s terminal works on: the chat."""

    async def show_help(self) -> None:
        """``/help``: the commands, the keys and the prompt templates."""
        ...

    async def switch_model(self, spec: str) -> None:
        """``/model [SPEC]`` (without ``SPEC``: the list to pick from)."""
        ...

    async def resume_command(self, argument: str) -> None:
        """``/resume [ID]`` (without ``ID``: the list to pick from)."""
        ...


Handler: TypeAlias = Callable[[SlashHost, str], Awaitable[bool]]
"""Runs a command with its argument; ``False`` ends the chat."""
ChatHandler: TypeAlias = Callable[[ChatHost, str], Awaitable[bool]]
"""Runs a command that needs the terminal; ``False`` ends the chat."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SlashCommand:
    """One slash command: its ``name`` (typed after ``/``), the form of its argument
    (``args``, ``""``: none), its ``help`` and exactly one of ``handler`` (no terminal needed:
    ``tether rpc`` offers it too) and ``chat_handler`` (``tether chat`` only)."""

    name: str
    args: str
    help: str
    handler: Handler | None = None
    chat_handler: ChatHandler | None = None

    def __post_init__(self) -> None:
        if (self.handler is None) == (self.chat_handler is None):
            raise ValueError(f"/{self.name} needs exactly one of handler and chat_handler")
        if not self.name or self.name != self.name.lower() or " " in self.name:
            raise ValueError(f"slash command name {self.name!r} must be one lower-case word")

    @property
    def terminal(self) -> bool:
        """Whether it needs ``tether chat``'s terminal (``tether rpc`` does not offer it)."""
        return self.chat_handler is not None

    @property
    def usage(self) -> str:
        """``/name args``."""
        return f"/{self.name} {self.args}".rstrip()


# --- the handlers -----------------------------------------------------------------------------


async def _help(chat: ChatHost, argument: str) -> bool:
    await chat.show_help()
    return True


async def _quit(chat: ChatHost, argument: str) -> bool:
    return False


async def _model(chat: ChatHost, argument: str) -> bool:
    await chat.switch_model(argument)
    return True


async def _resume(chat: ChatHost, argument: str) -> bool:
    await chat.resume_command(argument)
    return True


async def _usage(host: SlashHost, argument: str) -> bool:
    coding = host.coding
    usage = coding.usage
    cost = coding.cost
    priced = "" if cost is None else f" · cost {cost:.4f}"
    host.line(
        f"session tokens: {usage.input_tokens} in, {usage.output_tokens} out{priced} · "
        f"model {coding.model.spec}"
    )
    return True


async def _new(host: SlashHost, argument: str) -> bool:
    if await host.rebuild(host.coding.new_session()):
        host.line("new session")
    return True


def _expanded(name: str) -> Path:
    """``name`` with a leading ``~`` or ``~user`` expanded; as it is when it cannot be (a NUL
    byte in the user name makes ``pwd`` raise ``ValueError``): the path then names nothing."""
    try:
        return Path(os.path.expanduser(name))
    except ValueError:
        return Path(name)


def _directory(cwd: Path, argument: str) -> Path | str:
    """The directory ``/cd argument`` names (``~`` expanded, relative to ``cwd``, symlinks
    resolved), or what is wrong with it."""
    target = _expanded(argument)
    if not target.is_absolute():
        target = cwd / target
    if not target.is_dir():
        return f"no directory {target}"
    return Path(os.path.realpath(target))


async def _cd(host: SlashHost, argument: str) -> bool:
    coding = host.coding
    if not argument:
        host.line(f"workspace: {coding.cwd} (/cd DIR switches)")
        return True
    target = _directory(coding.cwd, argument)
    if isinstance(target, str):
        host.line(target)
        return True
    if await host.rebuild(coding.change_directory(target)):
        host.line(f"workspace: {coding.cwd}")
    return True


async def _sessions(host: SlashHost, argument: str) -> bool:
    await list_sessions(host)
    return True


async def list_sessions(host: SlashHost, *, numbered: bool = False) -> list[str]:
    """``/sessions``: the saved sessions, newest first (``numbered``: 1, 2, ... instead of
    marking the current one ``*``), each with the directory it was started in; their IDs."""
    import asyncio

    from tether.agent.session import SessionLimits
    from tether.agent.session import list_sessions as listing
    from tether.cli.session_index import session_directories

    coding = host.coding
    directory = coding.sessions_dir
    if directory is None:
        host.line("no sessions directory (one session file)")
        return []
    # Every file is read and parsed: on a worker thread, so a long list of large sessions
    # never stalls the loop (a session another chat writes is read, not locked).
    found = await asyncio.to_thread(listing, directory, limits=SessionLimits.for_coding())
    if not found:
        host.line("no saved sessions")
        return []
    directories = session_directories(directory)
    listed: list[str] = []
    for info in found[:LIST_SESSIONS]:
        if info.id is None:
            host.line(f"  {info.path.name}: unreadable [{info.error}]")
            continue
        listed.append(info.id)
        mark = f"{len(listed):>2}" if numbered else "*" if info.id == coding.session_id else " "
        title = info.title or "(no user message)"
        where = directories.get(info.id, "(directory unknown)")
        host.line(
            f"{mark} {info.id[:8]}  {info.created_at}  {info.entry_count:>4} entries  "
            f"{where}  {title}"
        )
    if len(found) > LIST_SESSIONS:
        host.line(f"  … and {len(found) - LIST_SESSIONS} more")
    return listed


async def _tree(host: SlashHost, argument: str) -> bool:
    from tether.agent.session import MessageEntry

    coding = host.coding
    if coding.tree is None:
        host.line("nothing in this session yet")
        return True
    if not argument:
        for entry in coding.active_entries():
            if type(entry) is MessageEntry:
                host.line(f"  {entry.id[:8]}  {describe(entry.message)}")
            else:
                host.line(f"  {entry.id[:8]}  [compaction]")
        return True
    if argument.lower() == "all":
        active = {entry.id for entry in coding.active_entries()}
        for row in tree_rows(coding.entries(), active):
            host.line(row)
        return True
    matches = coding.matching_entries(argument)
    if len(matches) != 1:
        host.line(
            f"no entry {argument!r} (/tree lists them)"
            if not matches
            else f"{argument!r} names {len(matches)} entries: give more of the ID"
        )
        return True
    if not await host.rebuild(coding.move_to(matches[0])):
        return True
    agent = await host.agent()
    host.line(
        f"moved to {matches[0][:8]} ({len(agent.messages)} messages): the next prompt "
        "starts a branch there"
    )
    return True


def _export_target(cwd: Path, name: str) -> Path:
    """The file ``/export name`` writes (``~`` expanded, relative to the workspace)."""
    target = _expanded(name)
    return target if target.is_absolute() else cwd / target


async def _export(host: SlashHost, argument: str) -> bool:
    """``/export [FILE]``: the conversation as one HTML page (``tether.cli.ui.export``),
    ``FILE`` relative to the workspace (default ``tether-ID.html`` there)."""
    from tether.cli.config import CliError
    from tether.cli.ui.export import export_html

    coding = host.coding
    agent, ident = coding.agent, coding.session_id
    if agent is None or ident is None or not agent.messages:
        host.line("nothing to export yet")
        return True
    target = _export_target(coding.cwd, argument or f"tether-{ident[:8]}.html")
    title = f"tether session {ident} · {coding.cwd}"
    try:
        written = export_html(agent.messages, target, title=title)
    except CliError as error:
        host.line(f"[{error.code}] {error}")
        return True
    host.line(f"exported to {written}")
    return True


async def _compact(host: SlashHost, argument: str) -> bool:
    """``/compact``: ``Agent.compact()`` (the summary is written by the model and the
    compaction recorded in the session, like an automatic one)."""
    from tether.agent.agent import AgentStateError
    from tether.agent.compaction import ContextCompactionError

    agent = await host.agent()
    try:
        record = await agent.compact()
    except (ContextCompactionError, AgentStateError) as error:
        host.line(f"compaction failed [{error.code}]: {error}")
        return True
    if record is None:
        host.line("nothing to compact")
        return True
    host.line(
        f"compacted: {record.units_before} → {record.units_after} units, "
        f"{len(agent.messages)} messages"
    )
    return True


# --- the table --------------------------------------------------------------------------------

SLASH_COMMANDS: Final[tuple[SlashCommand, ...]] = (
    SlashCommand(name="help", args="", help="show this help", chat_handler=_help),
    SlashCommand(
        name="model",
        args="[PROVIDER/MODEL]",
        help="switch, keeping the conversation (alone: pick from a list)",
        chat_handler=_model,
    ),
    SlashCommand(name="new", args="", help="start a new session", handler=_new),
    SlashCommand(
        name="cd",
        args="DIR",
        help="continue this session in another directory (its tools and files)",
        handler=_cd,
    ),
    SlashCommand(
        name="sessions", args="", help="list saved sessions, newest first", handler=_sessions
    ),
    SlashCommand(
        name="resume",
        args="[ID]",
        help="continue a saved session, by ID or prefix (alone: pick from a list)",
        chat_handler=_resume,
    ),
    SlashCommand(
        name="tree",
        args="[all|ID]",
        help="list the active branch; all: every branch; ID: move to that entry",
        handler=_tree,
    ),
    SlashCommand(
        name="export",
        args="[FILE]",
        help="write the conversation as an HTML page (default tether-ID.html)",
        handler=_export,
    ),
    SlashCommand(
        name="compact",
        args="",
        help="compact the conversation now (a summary replaces the oldest part)",
        handler=_compact,
    ),
    SlashCommand(name="usage", args="", help="token usage of the session", handler=_usage),
    SlashCommand(name="quit", args="", help="exit (Ctrl-D does too)", chat_handler=_quit),
)
"""Every slash command, in the order ``/help`` lists them."""

_BY_NAME: Final[Mapping[str, SlashCommand]] = {command.name: command for command in SLASH_COMMANDS}


def find_command(name: str) -> SlashCommand | None:
    """The command named ``name`` (``None``: not one of the table)."""
    return _BY_NAME.get(name)


def rpc_commands() -> list[SlashCommand]:
    """The commands ``tether rpc`` offers: those that need no terminal."""
    return [command for command in SLASH_COMMANDS if not command.terminal]


# --- tree rows --------------------------------------------------------------------------------


def describe(message: Message) -> str:
    """One entry of ``/tree``: who said it and the start of what."""
    from tether.cli.render import shorten

    if message.role == "user":
        return f"you: {shorten(message.content, 70)}"
    if message.role == "assistant":
        parts: list[str] = []
        for block in message.content:
            if block.type == "text" and block.text:
                parts.append(shorten(block.text, 70))
            elif block.type == "toolCall":
                parts.append(f"→ {block.name}")
        return "assistant: " + (" ".join(parts) or "(empty)")
    return f"{message.tool_name} {'error' if message.is_error else 'ok'}"


def tree_rows(entries: Sequence[SessionEntry], active: Collection[str]) -> list[str]:
    """``/tree all``: every entry of a session, a branch indented under the entry it leaves
    from (``├─`` / ``└─``), the entries of the ``active`` branch marked ``*``."""
    from tether.agent.session import MessageEntry

    children: dict[str | None, list[SessionEntry]] = {}
    known = {entry.id for entry in entries}
    for entry in entries:
        parent = entry.parent_id if entry.parent_id in known else None
        children.setdefault(parent, []).append(entry)
    rows: list[str] = []

    def row(entry: SessionEntry) -> str:
        mark = "*" if entry.id in active else " "
        what = describe(entry.message) if type(entry) is MessageEntry else "[compaction]"
        return f"{mark} {entry.id[:8]}  {what}"

    # iterative (a long session is deep): (entry, prefix of its row, prefix of what follows)
    stack: list[tuple[SessionEntry, str, str]] = [
        (root, "", "") for root in reversed(children.get(None, []))
    ]
    while stack:
        entry, prefix, after = stack.pop()
        rows.append(prefix + row(entry))
        kids = children.get(entry.id, [])
        if len(kids) == 1:
            stack.append((kids[0], after, after))
            continue
        for index in range(len(kids) - 1, -1, -1):
            last = index == len(kids) - 1
            stack.append(
                (
                    kids[index],
                    after + ("└─ " if last else "├─ "),
                    after + ("   " if last else "│  "),
                )
            )
    return rows


# --- help -------------------------------------------------------------------------------------

_USAGE_WIDTH: Final = max(len(command.usage) for command in SLASH_COMMANDS)
COMMANDS: Final[Mapping[str, str]] = {command.name: command.help for command in SLASH_COMMANDS}
"""Each slash command's name and help (what Tab completion shows beside it)."""
HELP: Final = (
    "commands:\n"
    + "".join(f"  {command.usage:<{_USAGE_WIDTH}} {command.help}\n" for command in SLASH_COMMANDS)
    + "keys: Enter sends · Alt-Enter (Esc Enter) new line · Tab completes /commands, "
    "/model names and @paths · Ctrl-O shows the last tool result whole · Shift-Tab cycles "
    "the thinking level · Esc or Ctrl-C "
    "cancels the turn (Ctrl-C: or a runtime being built, or clears the line) · during a "
    "turn Enter steers and Alt-Enter follows up · Ctrl-D exits\n"
)
"""What ``/help`` prints."""
COMMANDS_HELP: Final = (
    "slash commands:\n"
    + "".join(f"  {command.usage:<{_USAGE_WIDTH}} {command.help}\n" for command in SLASH_COMMANDS)
    + f"  {'/NAME ARGS':<{_USAGE_WIDTH}} send the prompt template NAME (.tether/prompts/NAME.md,\n"
    + " " * (_USAGE_WIDTH + 3)
    + "or prompts/NAME.md in the user's config directory), ARGS filled in\n"
    + f"  {'//text':<{_USAGE_WIDTH}} send /text as a message\n"
)
"""The slash commands, as ``tether chat --help`` lists them."""
KEYS_HELP: Final = """\
keys:
  Enter          send the line
  Alt-Enter      a new line (Esc then Enter too)
  Tab            complete a /command, a /model name or an @path in the workspace
  Ctrl-O         show the last tool result whole (its hidden middle lines too)
  Shift-Tab      the next thinking level: off, minimal, low, medium, high (at the prompt
                 or during a turn: the next request uses it; shown in the status line;
                 --thinking or the config's thinking sets the first)
  Esc            cancel the running turn (what streamed is kept), at an approval
                 question too (the call does not run)
  during a turn  typing does not echo into the answer: Enter queues the text as a steer
                 (seen at the next turn boundary), Alt-Enter as a follow-up
  Ctrl-C         cancel the running turn, or the runtime being built (the current one
                 stays), or stop waiting for extension hooks; at the prompt: clear the line;
                 at an approval question: decline and cancel the turn; a second Ctrl-C
                 while a cancellation settles quits at once (status 130)
  Ctrl-D         exit (on an empty line)
  y / n / a      answer an approval question: yes, no, always for this tool; n: REASON
                 declines and tells the model why
  in a list      (/model, /resume, -r alone) arrows move, typing filters, Enter picks,
                 Esc cancels
"""
"""The keys, as ``tether chat --help`` lists them."""
CHAT_EXIT_HELP: Final = """\
exit status:
  0    the chat ended (/quit, Ctrl-D)
  2    usage or setup error: a bad option or config file, an unknown provider, a missing
       API key, an extension that cannot be loaded, not a terminal
  4    output failed: stdout closed, full or otherwise unwritable
  130  interrupted: Ctrl-C while the session closed, or twice while a cancellation settled
"""
"""``tether chat``'s exit statuses."""
