"""What ``tether rpc``'s commands do: ``RpcHandlers.dispatch`` carries out one parsed request
on the coding session and returns its response's ``data`` (or ``LATER``: written by the task
it started), and writes the events of the runs it starts."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Final

from tether.cli.models import choose_model, display_url, run_problem
from tether.cli.render import OutputError, event_json
from tether.cli.rpc_requests import (
    PROTOCOL_VERSION,
    Request,
    RequestId,
    RpcError,
    absolute_directory,
    images_field,
    message_field,
    short,
    text_field,
)
from tether.cli.urls import http_url_problem
from tether.protocol import ImageBlock, to_json

if TYPE_CHECKING:
    from tether.agent.agent import Agent
    from tether.cli.models import ModelChoice
    from tether.coding import Answer, CodingSession
    from tether.protocol import AgentEvent, RunResult
    from tether.providers.thinking import ThinkingLevel
    from tether.stream import EventStream

__all__ = ["LATER", "RpcHandlers"]
_ABORT_REASON: Final = "Aborted by the RPC client"
LATER: Final = object()
"""What a command returns whose response is written later, by the task it started."""


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


class RpcHandlers:
    """The commands of ``tether.cli.rpc``'s session: ``dispatch`` and what it calls. The
    session sets every attribute declared here and writes the lines."""

    session: CodingSession[ModelChoice]
    thinking_flag: ThinkingLevel | None
    pumps: set[asyncio.Task[None]]
    approvals: dict[str, asyncio.Future[Answer]]
    caught_up: asyncio.Event

    if TYPE_CHECKING:

        def write(self, value: object) -> None:
            """Write one line (``tether.cli.rpc``)."""
            ...

        def refuse(
            self, request_id: RequestId, command: str | None, code: str, message: str
        ) -> None:
            """Write a ``success: false`` response."""
            ...

        def decline_pending(self) -> None:
            """Answer every waiting approval ``no``."""
            ...

    @property
    def choice(self) -> ModelChoice:
        return self.session.model

    async def dispatch(self, request: Request) -> object:
        session = self.session
        fields = request.fields
        match request.command:
            case "prompt":
                return await self.prompt(message_field(fields), images_field(fields))
            case "steer":
                text, images = message_field(fields), images_field(fields)
                return {"messageId": (await session.steer(text, images)).id}
            case "follow_up":
                text, images = message_field(fields), images_field(fields)
                return {"messageId": (await session.follow_up(text, images)).id}
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
                await session.resume(text_field(fields, "sessionId"))
                return self.where()
            case "get_tree":
                return self.tree()
            case "move_to":
                self.idle("move_to")
                entry = await session.move_to(text_field(fields, "entryId"))
                return {"entryId": entry, **self.where()}
            case "set_cwd":
                return await self.set_cwd(text_field(fields, "cwd"))
            case "set_thinking":
                return self.set_thinking(fields.get("level"))
            case "command":
                return await self.slash(fields)
            case "compact":
                return self.compact(request.id)
            case unknown:  # parse_request lets only COMMANDS through
                raise RpcError("RPC_UNKNOWN_COMMAND", f"unknown command type {short(unknown)!r}")

    async def slash(self, fields: dict[str, object]) -> object:
        """``command``: a slash command of ``tether chat`` that needs no terminal
        (``tether.cli.slash_commands``), run on this session; its lines are the response."""
        from tether.cli.slash_commands import find_command, rpc_commands

        name = text_field(fields, "name")
        argument = fields.get("argument", "")
        if not isinstance(argument, str):
            raise RpcError("RPC_INVALID_REQUEST", '"argument" must be a string')
        found = find_command(name.removeprefix("/").lower())
        if found is None or found.handler is None:
            offered = ", ".join(command.name for command in rpc_commands())
            raise RpcError(
                "RPC_UNKNOWN_COMMAND",
                f"no slash command {short(name)!r} without a terminal; offered: {offered}",
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
        request_id = text_field(fields, "requestId")
        answer = fields.get("answer")
        if answer not in ("yes", "no", "always"):
            raise RpcError("RPC_INVALID_REQUEST", '"answer" must be "yes", "no" or "always"')
        future = self.approvals.get(request_id)
        if future is None or future.done():
            raise RpcError(
                "RPC_NO_SUCH_APPROVAL", f"no approval request {short(request_id)!r} is waiting"
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
        target = absolute_directory(cwd)
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
        return LATER

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

    async def prompt(self, message: str, images: tuple[ImageBlock, ...] = ()) -> object:
        session = self.session
        if session.is_running:
            raise RpcError(
                "AGENT_BUSY", "a prompt is running: steer, follow_up or abort it instead"
            )
        agent = await session.start()
        before = len(agent.messages)
        stream = await session.prompt(message, images)
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
