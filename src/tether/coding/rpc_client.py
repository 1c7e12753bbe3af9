"""A small typed client of the ``tether rpc`` protocol (``docs/rpc.md``).

``await RpcClient.start("--model", "openai/gpt-4o-mini", "--tools", "coding")`` starts
``tether rpc`` as a child process (``python -m tether.cli rpc ...`` with this interpreter,
unless ``command`` says otherwise) and talks to it over its stdin and stdout. Each command
is a method that returns the response's ``data`` (typed where it has a fixed shape) or raises
``RpcCommandError`` with the response's ``code`` and ``message``. Everything else the server
writes (run events, approval requests, advice, notices) comes out of ``next_line`` in order;
``run`` sends a prompt and collects the lines of that run to its ``run.finished``, answering
each approval request with the ``approve`` callback.

Nothing here imports the CLI: the client speaks the protocol only.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, TypeAlias, cast

from tether._base.dataclass import dataclass
from tether._base.tether_error import TetherError

__all__ = [
    "RPC_PROTOCOL_VERSION",
    "RpcAdvice",
    "RpcApprovalRequest",
    "RpcClient",
    "RpcCommandError",
    "RpcEvent",
    "RpcLine",
    "RpcNotice",
    "RpcState",
]

RPC_PROTOCOL_VERSION = 2
"""The protocol version this client speaks (``get_state``'s ``protocolVersion``)."""

_LINE_LIMIT = 64 << 20


class RpcCommandError(TetherError):
    """A command the server refused: its ``code`` (``AGENT_BUSY``, ``RPC_INVALID_REQUEST``,
    ``CODING_SESSION_NOT_FOUND``...) and ``message``; ``RPC_CLIENT_CLOSED`` when the server
    ended before it answered."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RpcEvent:
    """One agent event of a run (``event``: its camelCase JSON, as ``tether run --json``)."""

    event: dict[str, Any]

    @property
    def type(self) -> str:
        """The event's type (``message.accepted``, ``model.chunk``, ``run.finished``...)."""
        return cast("str", self.event["type"])


@dataclass(frozen=True, slots=True, kw_only=True)
class RpcApprovalRequest:
    """A tool call waiting for ``approve``: ``request_id``, the tool's ``name`` and its
    ``arguments``."""

    request_id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class RpcAdvice:
    """What a person can do about a failed run (``CLI_RATE_LIMITED``...)."""

    code: str
    message: str


@dataclass(frozen=True, slots=True, kw_only=True)
class RpcNotice:
    """Something the session says (a skipped skill, a repaired session file)."""

    text: str


RpcLine: TypeAlias = RpcEvent | RpcApprovalRequest | RpcAdvice | RpcNotice
"""A line that is not a response."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RpcState:
    """``get_state``'s answer."""

    protocol_version: int
    is_running: bool
    model: str
    provider: str
    base_url: str
    session_id: str | None
    cwd: str
    message_count: int
    queued_steering: int
    queued_follow_ups: int
    pending_approvals: tuple[str, ...]
    input_tokens: int
    output_tokens: int
    cost: float | None
    tools: tuple[str, ...]
    max_steps: int


Approve: TypeAlias = Callable[[RpcApprovalRequest], "Awaitable[Literal['yes', 'no', 'always']]"]


class RpcClient:
    """A running ``tether rpc`` (see the module docstring). Use ``start``; ``close`` ends
    the input and returns the exit status."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self._process = process
        self._next_id = 0
        self._waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._lines: asyncio.Queue[RpcLine | None] = asyncio.Queue()
        self._reader = asyncio.ensure_future(self._read())

    @classmethod
    async def start(
        cls,
        *arguments: str,
        env: Mapping[str, str] | None = None,
        cwd: str | Path | None = None,
        command: Sequence[str] | None = None,
    ) -> RpcClient:
        """Start ``tether rpc ARGUMENTS`` (``command``: the program and its leading
        arguments; default: this interpreter's ``-m tether.cli rpc``)."""
        program = list(command) if command is not None else [sys.executable, "-m", "tether.cli"]
        process = await asyncio.create_subprocess_exec(
            *program,
            "rpc",
            *arguments,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            env=None if env is None else dict(env),
            cwd=cwd,
            limit=_LINE_LIMIT,
        )
        return cls(process)

    async def _read(self) -> None:
        stdout = self._process.stdout
        assert stdout is not None
        try:
            while True:
                raw = await stdout.readline()
                if not raw:
                    return
                self._dispatch(cast("dict[str, Any]", json.loads(raw)))
        finally:
            for future in self._waiting.values():
                if not future.done():
                    future.set_exception(
                        RpcCommandError("RPC_CLIENT_CLOSED", "tether rpc ended before answering")
                    )
            self._lines.put_nowait(None)

    def _dispatch(self, line: dict[str, Any]) -> None:
        kind = line.get("type")
        if kind == "response":
            request_id = line.get("id")
            future = self._waiting.pop(request_id, None) if type(request_id) is int else None
            if future is not None and not future.done():
                future.set_result(line)
            return
        if kind == "event":
            self._lines.put_nowait(RpcEvent(event=line["event"]))
        elif kind == "approval_request":
            call = line["toolCall"]
            self._lines.put_nowait(
                RpcApprovalRequest(
                    request_id=line["requestId"], name=call["name"], arguments=call["arguments"]
                )
            )
        elif kind == "error":
            error = line["error"]
            self._lines.put_nowait(RpcAdvice(code=error["code"], message=error["message"]))
        elif kind == "notice":
            self._lines.put_nowait(RpcNotice(text=line["text"]))

    async def request(self, command: str, **fields: object) -> Any:
        """Send the command ``command`` with ``fields``; its response's ``data``."""
        self._next_id += 1
        request_id = self._next_id
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[request_id] = future
        stdin = self._process.stdin
        assert stdin is not None
        body = {"id": request_id, "type": command, **fields}
        stdin.write((json.dumps(body, ensure_ascii=False) + "\n").encode("utf-8"))
        await stdin.drain()
        response = await future
        if not response["success"]:
            error = response["error"]
            raise RpcCommandError(error["code"], error["message"])
        return response.get("data")

    async def next_line(self) -> RpcLine | None:
        """The next line that is not a response (``None``: the server ended)."""
        return await self._lines.get()

    # -- the commands -----------------------------------------------------------------------

    async def prompt(self, message: str) -> str:
        """Start a run; the user message's ID."""
        return cast("str", (await self.request("prompt", message=message))["messageId"])

    async def steer(self, message: str) -> str:
        """Queue a message for the next turn boundary; its ID."""
        return cast("str", (await self.request("steer", message=message))["messageId"])

    async def follow_up(self, message: str) -> str:
        """Queue a message for when the model would finish; its ID."""
        return cast("str", (await self.request("follow_up", message=message))["messageId"])

    async def abort(self) -> bool:
        """Cancel the running prompt; whether one was running."""
        return cast("bool", (await self.request("abort"))["cancelled"])

    async def approve(self, request_id: str, answer: Literal["yes", "no", "always"]) -> bool:
        """Answer an approval request; whether the call runs."""
        data = await self.request("approve", requestId=request_id, answer=answer)
        return cast("bool", data["approved"])

    async def get_state(self) -> RpcState:
        """The server's state."""
        data = cast("dict[str, Any]", await self.request("get_state"))
        usage = cast("dict[str, int]", data["usage"])
        return RpcState(
            protocol_version=data["protocolVersion"],
            is_running=data["isRunning"],
            model=data["model"],
            provider=data["provider"],
            base_url=data["baseUrl"],
            session_id=data["sessionId"],
            cwd=data["cwd"],
            message_count=data["messageCount"],
            queued_steering=data["queuedSteering"],
            queued_follow_ups=data["queuedFollowUps"],
            pending_approvals=tuple(data["pendingApprovals"]),
            input_tokens=usage["inputTokens"],
            output_tokens=usage["outputTokens"],
            cost=data["cost"],
            tools=tuple(data["tools"]),
            max_steps=data["maxSteps"],
        )

    async def get_messages(self) -> list[dict[str, Any]]:
        """The transcript, as camelCase JSON."""
        return cast("list[dict[str, Any]]", (await self.request("get_messages"))["messages"])

    async def get_system_prompt(self) -> str:
        """The current system prompt."""
        return cast("str", (await self.request("get_system_prompt"))["systemPrompt"])

    async def set_model(self, model: str, base_url: str | None = None) -> dict[str, Any]:
        """Switch the model (``{model, baseUrl}``)."""
        if base_url is None:
            return cast("dict[str, Any]", await self.request("set_model", model=model))
        return cast(
            "dict[str, Any]", await self.request("set_model", model=model, baseUrl=base_url)
        )

    async def new_session(self) -> str:
        """A new session; its ID."""
        return cast("str", (await self.request("new_session"))["sessionId"])

    async def list_sessions(self) -> list[dict[str, Any]]:
        """The saved sessions, newest first."""
        return cast("list[dict[str, Any]]", (await self.request("list_sessions"))["sessions"])

    async def resume(self, session_id: str) -> int:
        """Resume a saved session (an ID or a unique prefix); its message count."""
        return cast("int", (await self.request("resume", sessionId=session_id))["messageCount"])

    async def get_tree(self) -> dict[str, Any]:
        """The session's entries and the active leaf."""
        return cast("dict[str, Any]", await self.request("get_tree"))

    async def move_to(self, entry_id: str) -> str:
        """Stand on an entry (an ID or a unique prefix); its full ID."""
        return cast("str", (await self.request("move_to", entryId=entry_id))["entryId"])

    async def set_cwd(self, cwd: str | Path) -> str:
        """Go on in another workspace (an absolute directory); the new cwd."""
        return cast("str", (await self.request("set_cwd", cwd=str(cwd)))["cwd"])

    async def compact(self) -> dict[str, Any]:
        """Compact the context now."""
        return cast("dict[str, Any]", await self.request("compact"))

    async def command(self, name: str, argument: str = "") -> list[str]:
        """Run one of ``tether chat``'s slash commands that need no terminal (``usage``,
        ``tree``, ``export FILE``...); the lines it wrote."""
        data = await self.request("command", name=name, argument=argument)
        return cast("list[str]", data["output"])

    # -- a whole run --------------------------------------------------------------------------

    async def run(self, message: str, approve: Approve | None = None) -> list[RpcLine]:
        """Prompt with ``message`` and collect the lines of the run up to its
        ``run.finished``, answering each approval request with ``approve`` (``no`` without
        one)."""
        await self.prompt(message)
        seen: list[RpcLine] = []
        while True:
            line = await self.next_line()
            if line is None:
                raise RpcCommandError("RPC_CLIENT_CLOSED", "tether rpc ended during the run")
            seen.append(line)
            if isinstance(line, RpcApprovalRequest):
                answer = "no" if approve is None else await approve(line)
                await self.approve(line.request_id, answer)
            elif isinstance(line, RpcEvent) and line.type == "run.finished":
                return seen

    async def close(self) -> int:
        """End the input; wait for the server to exit; its exit status."""
        stdin = self._process.stdin
        if stdin is not None and not stdin.is_closing():
            stdin.close()
        status = await self._process.wait()
        with contextlib.suppress(asyncio.CancelledError):
            await self._reader
        return status

    async def __aenter__(self) -> RpcClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._process.returncode is None and exc_info[0] is not None:
            self._process.kill()
        await self.close()
