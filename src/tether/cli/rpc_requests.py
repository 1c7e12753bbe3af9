"""``tether rpc``'s requests: the commands (``COMMANDS``) and their fields, a JSON line parsed
into a ``Request`` (``parse_request``), and the protocol's error codes (``RpcError``); the
protocol is ``docs/rpc.md``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Final, Literal, TypeAlias, cast

from tether._base.strings import surrogate_index
from tether._base.tether_error import TetherError
from tether.jsonvalue import loads_strict

if TYPE_CHECKING:
    from tether.cli.config import CliErrorCode
    from tether.protocol import ImageBlock

__all__ = [
    "COMMANDS",
    "FIELDS",
    "PROTOCOL_VERSION",
    "Refused",
    "Request",
    "RequestId",
    "RpcError",
    "RpcErrorCode",
    "RpcProtocolErrorCode",
    "absolute_directory",
    "message_field",
    "parse_request",
    "short",
    "text_field",
]
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

FIELDS: Final[dict[str, tuple[str, ...]]] = {
    "prompt": ("message", "images"),
    "steer": ("message", "images"),
    "follow_up": ("message", "images"),
    "approve": ("requestId", "answer"),
    "set_model": ("model", "baseUrl"),
    "resume": ("sessionId",),
    "move_to": ("entryId",),
    "set_cwd": ("cwd",),
    "command": ("name", "argument"),
    "set_thinking": ("level",),
}

RequestId: TypeAlias = str | int | None


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


class Request:
    """One command as read: its ``id``, its ``command`` (one of ``COMMANDS``) and its other
    ``fields`` (only those ``FIELDS`` allows it)."""

    __slots__ = ("command", "fields", "id")

    def __init__(self, request_id: RequestId, command: str, fields: dict[str, object]) -> None:
        self.id = request_id
        self.command = command
        self.fields = fields


def parse_request(line: bytes) -> Request:
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        raise RpcError("RPC_INVALID_JSON", "the line is not valid UTF-8") from None
    try:
        value: object = loads_strict(text)
    except ValueError as error:
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
        raise Refused(request_id, None, 'the command has no "type" string')
    if command not in COMMANDS:
        raise Refused(
            request_id,
            command,
            f"unknown command type {short(command)!r}; known: {', '.join(COMMANDS)}",
            "RPC_UNKNOWN_COMMAND",
        )
    allowed = FIELDS.get(command, ())
    for name in fields:
        if name not in allowed:
            raise Refused(request_id, command, f"unknown field {short(name)!r} for {command}")
    return Request(request_id, command, fields)


class Refused(RpcError):
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


def short(text: str) -> str:
    """``text`` cut to 80 characters, as an error message quotes what a client sent."""
    return text if len(text) <= 80 else text[:79] + "…"


def absolute_directory(text: str) -> Path | None:
    """The directory the absolute path ``text`` names (symlinks resolved), or ``None``."""
    target = Path(text)
    if not target.is_absolute() or not target.is_dir():
        return None
    return Path(os.path.realpath(target))


def images_field(fields: dict[str, object]) -> tuple[ImageBlock, ...]:
    """A command's ``images`` (``tether.cli.rpc_images``; else ``RPC_INVALID_REQUEST``)."""
    from tether.cli.rpc_images import request_images

    try:
        return request_images(fields)
    except ValueError as error:
        raise RpcError("RPC_INVALID_REQUEST", str(error)) from None


def message_field(fields: dict[str, object]) -> str:
    """The ``message`` of ``prompt``, ``steer`` or ``follow_up``: ``text_field``, and Unicode
    text. JSON's ``\\ud800`` escapes decode to lone surrogates, which the Agent refuses
    (``AGENT_INVALID_MESSAGE``: a provider would be sent U+FFFD): refused here first."""
    text = text_field(fields, "message")
    if surrogate_index(text) is not None:  # the Agent would refuse it: AGENT_INVALID_MESSAGE
        raise RpcError("RPC_INVALID_REQUEST", '"message" holds a lone surrogate (\\ud800-\\udfff)')
    return text


def text_field(fields: dict[str, object], name: str) -> str:
    """The non-empty string field ``name`` of a command (else ``RPC_INVALID_REQUEST``)."""
    value = fields.get(name)
    if value is None:
        raise RpcError("RPC_INVALID_REQUEST", f'the command has no "{name}"')
    if not isinstance(value, str) or not value:
        raise RpcError("RPC_INVALID_REQUEST", f'"{name}" must be a non-empty string')
    return value
