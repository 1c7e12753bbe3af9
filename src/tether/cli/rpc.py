"""``tether rpc``: one ``CodingSession`` driven by JSON lines over stdin and stdout.

The protocol (version ``PROTOCOL_VERSION``, 2) is documented in ``docs/rpc.md``: every
command, line, error and a transcript; ``tether.coding.rpc_client`` is its typed client.
In short: a host starts ``tether rpc --model PROVIDER/MODEL [--base-url URL] [--tools
coding] [--system TEXT] [--max-steps N] [--auto-approve] [--session-dir DIR] [-r ID]``,
writes commands (``{"id", "type", ...}``: ``COMMANDS``) on its stdin and reads responses
(``{"type":"response","id","command","success","data"|"error"}``), run events
(``{"type":"event","event":E}``, ``E`` as in ``tether run --json``), approval requests
(``{"type":"approval_request","requestId","toolCall"}``, answered by ``approve``), advice
(``{"type":"error",...}``, just before the ``run.finished`` of a run a person can fix) and
notices from its stdout, one JSON object per line.

The session is the one ``tether chat`` and ``tether run -p`` drive (``tether.coding``): the
same system prompt, the same session files (created in ``--session-dir``, by default chat's
sessions directory, with the first command that needs one, as in chat; ``-r ID`` resumes
one at start), the same approvals (asked of the
client unless ``--auto-approve``), model switching, new session, resume, moves in the
session tree and compaction. This module is only the adapter: framing, parsing, the
commands' JSON and the order of the lines.

**Framing.** Input is split on ``\\n`` bytes only (a ``\\r`` before it is dropped); a line
longer than 1 MiB is refused (``RPC_LINE_TOO_LONG``) and skipped without being held in
memory. Output lines are written whole, in UTF-8, and never contain a raw line separator
(``tether.cli.render.json_line``). No line of input can end the process.

**Lifetime.** End of input cancels a running prompt ("Standard input closed"), declines a
waiting approval, writes the rest of its events, closes the session and the model and
exits 0. Ctrl-C (SIGINT) does the same and exits 130; a second Ctrl-C exits at once. When
stdout cannot be written, the run is cancelled and the command exits 4.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Final, Literal, TypeAlias, cast

from tether._dataclass import dataclass
from tether._errors import TetherError
from tether.abort import AbortController, AbortSignal
from tether.cli.exit_codes import EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE
from tether.cli.interrupts import INTERRUPT_REASON, Interrupts, sigint_blocked
from tether.cli.models import choose_model, display_url, run_problem
from tether.cli.render import Output, OutputError, event_json, json_line, warn
from tether.cli.urls import http_url_problem
from tether.protocol import to_json

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from tether.agent.agent import Agent
    from tether.agent.extensions import ExtensionDefinition
    from tether.cli.config import CliConfig, CliErrorCode
    from tether.cli.models import ModelChoice
    from tether.coding import (
        Answer,
        ApprovalRequest,
        CodingEvent,
        CodingSession,
        CodingSessionConfig,
        ToolSet,
    )
    from tether.protocol import AgentEvent, RunResult
    from tether.providers.thinking import ThinkingLevel
    from tether.stream import EventStream

__all__ = [
    "COMMANDS",
    "MAX_LINE_BYTES",
    "PROTOCOL_VERSION",
    "RpcError",
    "RpcErrorCode",
    "RpcOptions",
    "RpcProtocolErrorCode",
    "rpc_command",
    "rpc_config",
]

MAX_LINE_BYTES: Final = 1 << 20
"""The longest input line read (without its ``\\n``)."""
PROTOCOL_VERSION: Final = 2
"""The protocol's version (``get_state``'s ``protocolVersion``): 2 since sessions, approvals
and the session commands (1 was the first, sessionless protocol)."""
COMMANDS: Final = (
    "prompt",
    "steer",
    "follow_up",
    "abort",
    "approve",
    "get_state",
    "get_messages",
    "get_system_prompt",
    "set_model",
    "new_session",
    "list_sessions",
    "resume",
    "get_tree",
    "move_to",
    "set_cwd",
    "set_thinking",
    "compact",
    "command",
)
"""Every command ``type``, in the order of ``docs/rpc.md``."""

_FIELDS: Final[dict[str, tuple[str, ...]]] = {
    "prompt": ("message",),
    "steer": ("message",),
    "follow_up": ("message",),
    "approve": ("requestId", "answer"),
    "set_model": ("model", "baseUrl"),
    "resume": ("sessionId",),
    "move_to": ("entryId",),
    "set_cwd": ("cwd",),
    "command": ("name", "argument"),
    "set_thinking": ("level",),
}
_READ_BYTES: Final = 65_536
_QUEUED_CHUNKS: Final = 4
_ABORT_REASON: Final = "Aborted by the RPC client"
_EOF_REASON: Final = "Standard input closed"
_NOTICE: Final = b"tether rpc: interrupted; stopping (Ctrl-C again quits at once)\n"

RequestId: TypeAlias = str | int | None


_LATER: Final = object()
"""What a command returns whose response is written later, by the task it started."""


RpcProtocolErrorCode: TypeAlias = Literal[
    "RPC_INVALID_JSON",
    "RPC_INVALID_REQUEST",
    "RPC_UNKNOWN_COMMAND",
    "RPC_NO_SUCH_APPROVAL",
    "AGENT_BUSY",
]
"""The protocol's own codes: a line that is not JSON, a malformed command, a command type it
does not know, an approval answered that is not waiting, and ``AGENT_BUSY`` (a command that
needs an idle agent)."""

RpcErrorCode: TypeAlias = "RpcProtocolErrorCode | CliErrorCode"
"""Every code an ``RpcError`` carries: the protocol's own, and a ``CliErrorCode`` passed on
from the model choice (``set_model``). A string, so the CLI's codes are imported only by the
type checker."""


class RpcError(TetherError[RpcErrorCode]):
    """A command that could not be carried out; becomes a ``success: false`` response."""

    def __init__(self, code: RpcErrorCode, message: str) -> None:
        super().__init__(code, message)


class _TooLong:
    """A line over ``MAX_LINE_BYTES`` was skipped."""


_TOO_LONG: Final = _TooLong()


async def rpc_command(
    options: RpcOptions, choice: ModelChoice, config: CliConfig, out: Output
) -> int:
    """Serve ``tether rpc`` on stdin and ``out`` with a ``CodingSession`` on ``choice``'s
    model (with ``config``'s extensions and approvals) until end of input (0) or Ctrl-C
    (130); 2 when the session cannot be opened (one line on stderr). A failed write raises
    ``OutputError`` after cleanup."""
    from tether.agent.runtime import TetherRuntimeError
    from tether.cli.config import CliError
    from tether.cli.session_config import configured_extensions
    from tether.coding import CodingSession, CodingSessionError
    from tether.coding.context_files import user_config_dir

    try:
        extensions = configured_extensions(config)
    except CliError as error:
        warn(f"tether rpc: [{error.code}] {error}")
        return EXIT_USAGE
    controller = AbortController()
    with Interrupts(asyncio.get_running_loop(), controller, _NOTICE):
        made = rpc_config(
            options,
            choice,
            config,
            cwd=Path.cwd(),
            config_dir=user_config_dir(),
            extensions=extensions,
        )
        server: _Session | None = None

        async def approve(request: ApprovalRequest) -> Answer:
            assert server is not None
            return await server.approve(request)

        session = CodingSession(made, approver=approve)
        server = _Session(session, out, thinking_flag=options.thinking)
        try:
            try:
                if options.resume is not None:
                    await session.resume(options.resume)
            except (TetherRuntimeError, CodingSessionError) as error:
                warn(f"tether rpc: [{error.code}] {error.message}")
                return EXIT_USAGE
            await server.serve(controller.signal)
        finally:
            await server.close(INTERRUPT_REASON if controller.signal.aborted else _EOF_REASON)
        if server.output_error is not None:
            raise server.output_error
    return EXIT_INTERRUPTED if controller.signal.aborted else EXIT_OK


# --- input ------------------------------------------------------------------------------------


class _Stdin:
    """Standard input's bytes, read on a daemon thread (so a regular file, a pipe, a TTY or
    ``/dev/null`` all work, and SIGINT still reaches the main thread) at most a few chunks
    ahead of the loop. ``b""`` is the end."""

    def __init__(self, loop: asyncio.AbstractEventLoop, descriptor: int | None) -> None:
        self._loop = loop
        self._descriptor = descriptor
        self._queue: asyncio.Queue[bytes] = asyncio.Queue()
        self._slots = threading.Semaphore(_QUEUED_CHUNKS)

    @classmethod
    def of_process(cls, loop: asyncio.AbstractEventLoop) -> _Stdin:
        """The process's standard input. When Python found no stdin at startup
        (``sys.stdin is None``), descriptor 0 may since have been reused for something else
        (a socket of the event loop): it is then never read, the input is simply empty."""
        stream = sys.stdin
        try:
            descriptor = None if stream is None else stream.fileno()
        except (OSError, ValueError):
            descriptor = None
        return cls(loop, descriptor)

    def start(self) -> None:
        if self._descriptor is None:
            self._queue.put_nowait(b"")
            return
        with sigint_blocked():
            threading.Thread(target=self._work, name="tether-rpc-stdin", daemon=True).start()

    def _work(self) -> None:
        while True:
            self._slots.acquire()
            assert self._descriptor is not None
            try:
                data = os.read(self._descriptor, _READ_BYTES)
            except OSError:  # a closed or unreadable stdin ends the input
                data = b""
            try:
                self._loop.call_soon_threadsafe(self._queue.put_nowait, data)
            except RuntimeError:  # the loop closed: nobody reads any more
                return
            if not data:
                return

    async def read(self) -> bytes:
        data = await self._queue.get()
        self._slots.release()
        return data


class _Lines:
    """Splits bytes into lines on ``\\n`` only; a line over ``limit`` bytes becomes
    ``_TOO_LONG`` (reported once, as soon as it is too long) and is dropped to its end."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._buffer = bytearray()
        self._skipping = False

    def feed(self, data: bytes) -> list[bytes | _TooLong]:
        lines: list[bytes | _TooLong] = []
        start = 0
        while True:
            end = data.find(b"\n", start)
            piece = data[start:] if end < 0 else data[start:end]
            if not self._skipping:
                self._buffer += piece
                if len(self._buffer) > self._limit:
                    self._buffer.clear()
                    self._skipping = True
                    lines.append(_TOO_LONG)
            if end < 0:
                return lines
            if self._skipping:
                self._skipping = False
            else:
                lines.append(bytes(self._buffer))
                self._buffer.clear()
            start = end + 1

    def finish(self) -> list[bytes | _TooLong]:
        """The last line, if the input ended without its ``\\n``."""
        if self._skipping or not self._buffer:
            return []
        line = bytes(self._buffer)
        self._buffer.clear()
        return [line]


# --- the session --------------------------------------------------------------------------------


class _Request:
    __slots__ = ("command", "fields", "id")

    def __init__(self, request_id: RequestId, command: str, fields: dict[str, object]) -> None:
        self.id = request_id
        self.command = command
        self.fields = fields


@dataclass(frozen=True, slots=True, kw_only=True)
class RpcOptions:
    """What ``tether rpc`` serves, from the command line: the ``tools``, the
    ``introduction`` (``--system``), the step budget, whether tool calls are approved without
    asking (``auto_approve``), the sessions directory, a session to ``resume`` at start
    (an ID or a unique prefix) and the ``--thinking`` level (kept for the config file read
    again by ``set_model``)."""

    tools: ToolSet = "none"
    introduction: str | None = None
    max_steps: int = 64
    auto_approve: bool = False
    sessions_dir: Path
    resume: str | None = None
    thinking: ThinkingLevel | None = None


def rpc_config(
    options: RpcOptions,
    choice: ModelChoice,
    config: CliConfig,
    *,
    cwd: Path,
    config_dir: Path | None,
    extensions: tuple[ExtensionDefinition, ...] = (),
) -> CodingSessionConfig[ModelChoice]:
    """The coding session ``tether rpc`` drives (``tether.cli.session_config``): chat's
    system prompt, extensions and sessions, its approvals asked of the client
    (``approval_request``) unless ``auto_approve``."""
    from tether.cli.session_config import coding_config
    from tether.coding import SessionPlace

    return coding_config(
        choice,
        config,
        cwd=cwd,
        tools=options.tools,
        introduction=options.introduction,
        sessions=SessionPlace(directory=options.sessions_dir),
        config_dir=config_dir,
        extensions=extensions,
        max_steps=options.max_steps,
        auto_approve=options.auto_approve,
    )


class _SlashHost:
    """What a slash command runs on in ``tether rpc`` (``tether.cli.slash_commands.SlashHost``):
    the session, its output lines kept for the response; a failed rebuild is raised (an
    error response) and leaves the session as it was."""

    def __init__(self, session: CodingSession[ModelChoice]) -> None:
        self.session = session
        self.lines: list[str] = []

    @property
    def coding(self) -> CodingSession[ModelChoice]:
        return self.session

    def line(self, text: str) -> None:
        self.lines.append(text)

    async def rebuild(self, work: Awaitable[object]) -> bool:
        await work
        return True

    async def agent(self) -> Agent:
        return await self.session.start()


class _Session:
    """One ``CodingSession``, the running prompt's event pumps, the pending approvals and
    the output."""

    def __init__(
        self,
        session: CodingSession[ModelChoice],
        out: Output,
        *,
        thinking_flag: ThinkingLevel | None = None,
    ) -> None:
        self.session = session
        self.thinking_flag = thinking_flag
        self.out = out
        self.output_error: OutputError | None = None
        self.pumps: set[asyncio.Task[None]] = set()
        self.approvals: dict[str, asyncio.Future[Answer]] = {}
        self.caught_up = asyncio.Event()
        self.caught_up.set()
        self.stopping: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        session.subscribe(self.on_event)

    @property
    def choice(self) -> ModelChoice:
        return self.session.model

    def on_event(self, event: CodingEvent) -> None:
        """A notice becomes a line of its own (agent events are written by the pump of their
        run, in order; which session is open, the responses and ``get_state`` say)."""
        if event.type == "session.notice":
            self.write({"type": "notice", "text": event.text})

    async def approve(self, request: ApprovalRequest) -> Answer:
        """Ask the client: an ``approval_request`` line, answered by an ``approve``
        command (declined when the run is aborted or the input ends)."""
        future: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
        self.approvals[request.id] = future
        call = request.tool_call
        try:
            # The run's events so far are written first: a pump just handed one (its wakeup
            # already scheduled, ahead of this one) takes it in the first loop turn.
            await asyncio.sleep(0)
            await self.caught_up.wait()
            self.write(
                {
                    "type": "approval_request",
                    "requestId": request.id,
                    "toolCall": {
                        "id": call.id,
                        "name": call.name,
                        "arguments": to_json(call.arguments),
                    },
                }
            )
            return await future
        finally:
            self.approvals.pop(request.id, None)

    def decline_pending(self) -> None:
        for future in self.approvals.values():
            if not future.done():
                future.set_result("no")

    # --- the loop -----------------------------------------------------------------------------

    async def serve(self, interrupted: AbortSignal) -> None:
        """Read and carry out commands until end of input, Ctrl-C or an output failure."""
        stdin = _Stdin.of_process(asyncio.get_running_loop())
        stdin.start()
        lines = _Lines(MAX_LINE_BYTES)
        remove = interrupted.add_listener(self.stop)
        if interrupted.aborted:  # Ctrl-C came before the listener: it is never called
            self.stop()
        try:
            while not self.stopping.done():
                data = await self._next(stdin)
                if data is None:
                    return
                for line in lines.feed(data) if data else lines.finish():
                    await self.handle(line)
                    if self.stopping.done():
                        return
                if not data:
                    return
        finally:
            remove()

    def stop(self) -> None:
        if not self.stopping.done():
            self.stopping.set_result(None)

    async def _next(self, stdin: _Stdin) -> bytes | None:
        """The next chunk of input, or ``None`` once the session is stopping."""
        read = asyncio.ensure_future(stdin.read())
        await asyncio.wait((read, self.stopping), return_when=asyncio.FIRST_COMPLETED)
        if read.done():
            return read.result()
        read.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await read
        return None

    async def close(self, reason: str) -> None:
        """Cancel a running prompt, let its events be written, close the session."""
        from tether.agent.runtime import TetherRuntimeError

        self.session.abort(reason)
        self.decline_pending()
        while self.pumps:
            await asyncio.gather(*self.pumps)
        agent = self.session.agent
        if agent is not None:
            await agent.wait_until_idle()
        try:
            await self.session.close()
        except TetherRuntimeError as error:
            warn(f"tether rpc: the session did not close cleanly: [{error.code}] {error}")

    # --- one line -----------------------------------------------------------------------------

    async def handle(self, line: bytes | _TooLong) -> None:
        """Answer one input line (never raises, but for a failed write)."""
        if isinstance(line, _TooLong):
            self.refuse(
                None, None, "RPC_LINE_TOO_LONG", f"a line must be at most {MAX_LINE_BYTES} bytes"
            )
            return
        if line.endswith(b"\r"):
            line = line[:-1]
        if not line.strip():
            return
        request_id: RequestId = None
        command: str | None = None
        try:
            request = _parse(line)
            request_id, command = request.id, request.command
            data = await self.dispatch(request)
        except _Refused as error:
            self.refuse(error.request_id, error.command, error.code, error.message)
        except TetherError as error:  # ours, the session's, the runtime's, the Agent's
            self.refuse(request_id, command, error.code, error.message)
        except OutputError:
            raise
        except Exception as error:  # a bug: answered, never a crash
            self.refuse(
                request_id, command, "RPC_INTERNAL_ERROR", f"{type(error).__name__}: {error}"
            )
        else:
            if data is _LATER:
                return
            self.write(
                {
                    "type": "response",
                    "id": request_id,
                    "command": command,
                    "success": True,
                    "data": data,
                }
            )

    def refuse(self, request_id: RequestId, command: str | None, code: str, message: str) -> None:
        self.write(
            {
                "type": "response",
                "id": request_id,
                "command": command,
                "success": False,
                "error": {"code": code, "message": message},
            }
        )

    def write(self, value: object) -> None:
        if self.output_error is not None:
            raise self.output_error
        try:
            self.out.write(json_line(value))
        except OutputError as error:
            self.output_error = error
            self.stop()
            raise

    # --- the commands -------------------------------------------------------------------------

    async def dispatch(self, request: _Request) -> object:
        session = self.session
        fields = request.fields
        match request.command:
            case "prompt":
                return await self.prompt(_text(fields, "message"))
            case "steer":
                text = _text(fields, "message")
                return {"messageId": (await session.steer(text)).id}
            case "follow_up":
                text = _text(fields, "message")
                return {"messageId": (await session.follow_up(text)).id}
            case "abort":
                cancelled = session.abort(_ABORT_REASON)
                self.decline_pending()
                return {"cancelled": cancelled}
            case "approve":
                return self.answer(fields)
            case "get_state":
                return self.state()
            case "get_messages":
                agent = session.agent
                messages = () if agent is None else agent.messages
                return {"messages": [to_json(message) for message in messages]}
            case "get_system_prompt":
                await session.start()
                return {"systemPrompt": session.system_prompt}
            case "set_model":
                return await self.set_model(fields)
            case "new_session":
                self.idle("new_session")
                await session.new_session()
                return self.where()
            case "list_sessions":
                return await self.list_sessions()
            case "resume":
                self.idle("resume")
                await session.resume(_text(fields, "sessionId"))
                return self.where()
            case "get_tree":
                return self.tree()
            case "move_to":
                self.idle("move_to")
                entry = await session.move_to(_text(fields, "entryId"))
                return {"entryId": entry, **self.where()}
            case "set_cwd":
                return await self.set_cwd(_text(fields, "cwd"))
            case "set_thinking":
                return self.set_thinking(fields.get("level"))
            case "command":
                return await self.slash(fields)
            case "compact":
                return self.compact(request.id)
            case unknown:  # parse_request lets only COMMANDS through
                raise RpcError("RPC_UNKNOWN_COMMAND", f"unknown command type {_short(unknown)!r}")

    async def slash(self, fields: dict[str, object]) -> object:
        """``command``: a slash command of ``tether chat`` that needs no terminal
        (``tether.cli.slash_commands``), run on this session; its lines are the response."""
        from tether.cli.slash_commands import find_command, rpc_commands

        name = _text(fields, "name")
        argument = fields.get("argument", "")
        if not isinstance(argument, str):
            raise RpcError("RPC_INVALID_REQUEST", '"argument" must be a string')
        found = find_command(name.removeprefix("/").lower())
        if found is None or found.handler is None:
            offered = ", ".join(command.name for command in rpc_commands())
            raise RpcError(
                "RPC_UNKNOWN_COMMAND",
                f"no slash command {_short(name)!r} without a terminal; offered: {offered}",
            )
        self.idle(f"/{found.name}")
        host = _SlashHost(self.session)
        await found.handler(host, argument.strip())
        return {"name": found.name, "output": host.lines}

    def where(self) -> dict[str, object]:
        session = self.session
        agent = session.agent
        return {
            "sessionId": session.session_id,
            "messageCount": 0 if agent is None else len(agent.messages),
        }

    def answer(self, fields: dict[str, object]) -> object:
        request_id = _text(fields, "requestId")
        answer = fields.get("answer")
        if answer not in ("yes", "no", "always"):
            raise RpcError("RPC_INVALID_REQUEST", '"answer" must be "yes", "no" or "always"')
        future = self.approvals.get(request_id)
        if future is None or future.done():
            raise RpcError(
                "RPC_NO_SUCH_APPROVAL", f"no approval request {_short(request_id)!r} is waiting"
            )
        future.set_result(answer)
        return {"approved": answer != "no"}

    async def list_sessions(self) -> object:
        from tether.agent.session import SessionLimits, list_sessions

        directory = self.session.sessions_dir
        assert directory is not None
        found = await asyncio.to_thread(list_sessions, directory, limits=SessionLimits.for_coding())
        return {
            "sessions": [
                {
                    "sessionId": info.id,
                    "file": info.path.name,
                    "createdAt": info.created_at,
                    "entryCount": info.entry_count,
                    "title": info.title,
                    "error": info.error,
                }
                for info in found
            ]
        }

    def tree(self) -> object:
        from tether.agent.session import MessageEntry

        session = self.session
        active = {entry.id for entry in session.active_entries()}
        tree = session.tree
        entries: list[dict[str, object]] = []
        for entry in session.entries():
            item: dict[str, object] = {
                "id": entry.id,
                "parentId": entry.parent_id,
                "active": entry.id in active,
            }
            if type(entry) is MessageEntry:
                item.update(kind="message", role=entry.message.role)
            else:
                item.update(kind="compaction")
            entries.append(item)
        return {
            "leafId": None if tree is None else tree.active_leaf_id,
            "entries": entries,
        }

    async def set_cwd(self, cwd: str) -> object:
        self.idle("set_cwd")
        target = _directory(cwd)
        if target is None:
            raise RpcError("RPC_INVALID_REQUEST", '"cwd" must be the absolute path of a directory')
        await self.session.change_directory(target)
        return {"cwd": str(self.session.cwd)}

    def compact(self, request_id: RequestId) -> object:
        """Start ``Agent.compact`` (a summary replaces the oldest part); the response comes
        when it is done, and lines keep being read meanwhile, so ``abort`` cancels it."""
        self.idle("compact")
        task = asyncio.get_running_loop().create_task(self.compacting(request_id))
        self.pumps.add(task)
        task.add_done_callback(self.pumps.discard)
        return _LATER

    async def compacting(self, request_id: RequestId) -> None:
        from tether.agent.compaction import ContextCompactionError

        try:
            record = None if self.session.agent is None else await self.session.compact()
        except ContextCompactionError as error:
            self.refuse(request_id, "compact", error.code, error.message)
            return
        except Exception as error:  # a bug: answered, never a crash
            self.refuse(
                request_id, "compact", "RPC_INTERNAL_ERROR", f"{type(error).__name__}: {error}"
            )
            return
        data: dict[str, object] = {"compacted": record is not None}
        if record is not None:
            data.update(
                summaryId=record.summary_id,
                compactedMessages=record.boundary,
                unitsBefore=record.units_before,
                unitsAfter=record.units_after,
            )
        self.write(
            {
                "type": "response",
                "id": request_id,
                "command": "compact",
                "success": True,
                "data": data,
            }
        )

    def idle(self, command: str) -> None:
        if self.session.is_running:
            raise RpcError(
                "AGENT_BUSY", f"a prompt is running: {command} needs an idle agent (abort first)"
            )

    async def prompt(self, message: str) -> object:
        session = self.session
        if session.is_running:
            raise RpcError(
                "AGENT_BUSY", "a prompt is running: steer, follow_up or abort it instead"
            )
        agent = await session.start()
        before = len(agent.messages)
        stream = await session.prompt(message)
        # The response is written before this task gets a turn: events always follow it.
        pump = asyncio.get_running_loop().create_task(self.pump(stream))
        self.pumps.add(pump)
        pump.add_done_callback(self.pumps.discard)
        return {"messageId": agent.messages[before].id}

    async def pump(self, stream: EventStream[AgentEvent, RunResult]) -> None:
        """Write the events of one run; after an output failure, cancel it. ``caught_up``
        is set while every event so far is written (an approval request waits for it)."""
        events = stream.__aiter__()
        try:
            while True:
                event = events.poll(None)
                if event is None:
                    self.caught_up.set()
                    event = await events.__anext__()
                    self.caught_up.clear()
                if event.type == "run.finished":
                    self.advise(event.payload.result)
                self.write({"type": "event", "event": event_json(event, self.choice.cost)})
        except StopAsyncIteration:
            return
        except OutputError:
            self.session.abort("The output failed")
            self.decline_pending()
        finally:
            self.caught_up.set()

    def advise(self, result: RunResult) -> None:
        meter = self.session.meter
        last = None if meter is None else meter.last_error
        problem = run_problem(result, last, self.choice)
        if problem is None:
            return
        error: dict[str, object] = {"code": problem.code, "message": problem.message}
        if problem.code == "CLI_RATE_LIMITED" and last is not None and last.retry_after is not None:
            error["retryAfter"] = last.retry_after
        self.write({"type": "error", "error": error})

    def state(self) -> object:
        session = self.session
        agent = session.agent
        choice = self.choice
        return {
            "protocolVersion": PROTOCOL_VERSION,
            "isRunning": session.is_running,
            "model": choice.spec,
            "provider": choice.provider.name,
            "baseUrl": display_url(choice.base_url),
            "sessionId": session.session_id,
            "cwd": str(session.cwd),
            "messageCount": 0 if agent is None else len(agent.messages),
            "queuedSteering": 0 if agent is None else len(agent.queued_steering),
            "queuedFollowUps": 0 if agent is None else len(agent.queued_follow_ups),
            "pendingApprovals": sorted(self.approvals),
            "usage": to_json(session.usage),
            "cost": session.cost,
            "contextWindow": choice.context_window,
            "prices": _prices_json(choice),
            "tools": [] if agent is None else list(agent.tool_names),
            "maxSteps": session.config.max_steps,
            "thinking": session.thinking,
        }

    def set_thinking(self, level: object) -> object:
        from tether.providers.thinking import THINKING_LEVELS, is_thinking_level

        if not is_thinking_level(level):
            raise RpcError(
                "RPC_INVALID_REQUEST", f'"level" must be one of: {", ".join(THINKING_LEVELS)}'
            )
        return {"thinking": self.session.set_thinking(level)}

    async def set_model(self, fields: dict[str, object]) -> object:
        from tether.cli.config import CliError, load_config, with_thinking_flag

        self.idle("set_model")
        spec = fields.get("model")
        if not isinstance(spec, str) or not spec:
            raise RpcError("RPC_INVALID_REQUEST", '"model" must be a non-empty PROVIDER/MODEL')
        base_url = fields.get("baseUrl")
        if base_url is not None:
            if not isinstance(base_url, str):
                raise RpcError(
                    "RPC_INVALID_REQUEST", '"baseUrl" must be an http:// or https:// URL'
                )
            problem = http_url_problem(base_url)
            if problem is not None:
                raise RpcError("RPC_INVALID_REQUEST", f'"baseUrl" {problem}')
        if base_url is None and spec.partition("/")[0] == self.choice.provider.name:
            base_url = self.choice.base_url
        try:
            config = with_thinking_flag(load_config(), self.thinking_flag)
            choice = choose_model(spec, base_url=base_url, config=config)
        except CliError as error:
            raise RpcError(error.code, error.message) from None
        await self.session.switch_model(choice)
        return {"model": choice.spec, "baseUrl": display_url(choice.base_url)}


# --- parsing ------------------------------------------------------------------------------------


def _reject_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


def _parse(line: bytes) -> _Request:
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        raise RpcError("RPC_INVALID_JSON", "the line is not valid UTF-8") from None
    try:
        value: object = json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as error:
        raise RpcError("RPC_INVALID_JSON", f"the line is not JSON: {error}") from None
    if not isinstance(value, dict):
        raise RpcError("RPC_INVALID_REQUEST", 'a command is a JSON object with "id" and "type"')
    fields = cast("dict[str, object]", value)
    if "id" not in fields:
        raise RpcError("RPC_INVALID_REQUEST", 'the command has no "id"')
    request_id = fields.pop("id")
    if type(request_id) is not str and type(request_id) is not int:
        raise RpcError("RPC_INVALID_REQUEST", '"id" must be a string or an integer')
    command = fields.pop("type", None)
    if not isinstance(command, str):
        raise _Refused(request_id, None, 'the command has no "type" string')
    if command not in COMMANDS:
        raise _Refused(
            request_id,
            command,
            f"unknown command type {_short(command)!r}; known: {', '.join(COMMANDS)}",
            "RPC_UNKNOWN_COMMAND",
        )
    allowed = _FIELDS.get(command, ())
    for name in fields:
        if name not in allowed:
            raise _Refused(request_id, command, f"unknown field {_short(name)!r} for {command}")
    return _Request(request_id, command, fields)


class _Refused(RpcError):
    """A refusal once the ``id`` (and maybe the ``type``) could be read."""

    def __init__(
        self,
        request_id: str | int,
        command: str | None,
        message: str,
        code: RpcErrorCode = "RPC_INVALID_REQUEST",
    ) -> None:
        super().__init__(code, message)
        self.request_id = request_id
        self.command = command


def _short(text: str) -> str:
    return text if len(text) <= 80 else text[:79] + "…"


def _directory(text: str) -> Path | None:
    """The directory the absolute path ``text`` names (symlinks resolved), or ``None``."""
    target = Path(text)
    if not target.is_absolute() or not target.is_dir():
        return None
    return Path(os.path.realpath(target))


def _text(fields: dict[str, object], name: str) -> str:
    value = fields.get(name)
    if value is None:
        raise RpcError("RPC_INVALID_REQUEST", f'the command has no "{name}"')
    if not isinstance(value, str) or not value:
        raise RpcError("RPC_INVALID_REQUEST", f'"{name}" must be a non-empty string')
    return value


def _prices_json(choice: ModelChoice) -> dict[str, float | None]:
    """The model's prices for ``get_state``: US dollars per million tokens (``null``: not
    known)."""
    prices = choice.prices
    return {
        "input": prices.input,
        "output": prices.output,
        "cacheRead": prices.cache_read,
        "cacheWrite": prices.cache_write,
    }
