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
from pathlib import Path
from typing import TYPE_CHECKING, Final

from tether._base.dataclass import dataclass
from tether._base.tether_error import TetherError
from tether.abort import AbortController, AbortSignal
from tether.cli.exit_codes import EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE
from tether.cli.interrupts import INTERRUPT_REASON, Interrupts
from tether.cli.render import Output, OutputError, json_line, warn
from tether.cli.rpc_framing import Lines, Stdin, TooLong
from tether.cli.rpc_handlers import LATER, RpcHandlers
from tether.cli.rpc_requests import COMMANDS, PROTOCOL_VERSION, Refused, RequestId, parse_request
from tether.protocol import to_json

if TYPE_CHECKING:
    from tether.cli.config import CliConfig
    from tether.cli.models import ModelChoice
    from tether.coding import (
        Answer,
        ApprovalRequest,
        CodingEvent,
        CodingSession,
        SessionPlace,
        ToolSet,
    )
    from tether.providers.thinking import ThinkingLevel

__all__ = [
    "COMMANDS",
    "MAX_LINE_BYTES",
    "PROTOCOL_VERSION",
    "RpcOptions",
    "rpc_command",
]

MAX_LINE_BYTES: Final = 1 << 20
"""The longest input line read (without its ``\\n``)."""
_EOF_REASON: Final = "Standard input closed"
_NOTICE: Final = b"tether rpc: interrupted; stopping (Ctrl-C again quits at once)\n"


async def rpc_command(
    options: RpcOptions, choice: ModelChoice, config: CliConfig, out: Output
) -> int:
    """Serve ``tether rpc`` on stdin and ``out`` with a ``CodingSession`` on ``choice``'s
    model (with ``config``'s extensions and approvals) until end of input (0) or Ctrl-C
    (130); 2 when the session cannot be opened (one line on stderr). A failed write raises
    ``OutputError`` after cleanup."""
    from tether.agent.runtime import TetherRuntimeError
    from tether.cli.command_setup import extensions_or_warn
    from tether.cli.session_config import mode_config
    from tether.coding import CodingSession, CodingSessionError

    extensions = extensions_or_warn(config, "rpc")
    if extensions is None:
        return EXIT_USAGE
    controller = AbortController()
    with Interrupts(asyncio.get_running_loop(), controller, _NOTICE):
        made = mode_config(options, choice, config, extensions)
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

    def sessions(self) -> SessionPlace:
        """The sessions directory, where ``tether chat`` keeps its sessions by default."""
        from tether.coding import SessionPlace

        return SessionPlace(directory=self.sessions_dir)


class _Session(RpcHandlers):
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
        stdin = Stdin.of_process(asyncio.get_running_loop())
        stdin.start()
        lines = Lines(MAX_LINE_BYTES)
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

    async def _next(self, stdin: Stdin) -> bytes | None:
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

    async def handle(self, line: bytes | TooLong) -> None:
        """Answer one input line (never raises, but for a failed write)."""
        if isinstance(line, TooLong):
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
            request = parse_request(line)
            request_id, command = request.id, request.command
            data = await self.dispatch(request)
        except Refused as error:
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
            if data is LATER:
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
