"""Transcript messages: ``user``, ``assistant`` and ``toolResult`` (``Message``).

IDs of messages built in Python may be omitted: a unique ``message-<hex>`` is generated.
"""

from __future__ import annotations

import os
from dataclasses import field
from typing import Literal, TypeAlias

from tether._base.dataclass import dataclass
from tether.protocol._fields import NonEmpty, ProtocolValue, v2
from tether.protocol.content import AssistantBlock
from tether.protocol.images import ImageBlock

__all__ = [
    "AssistantMessage",
    "Message",
    "MessageId",
    "ToolResultMessage",
    "UserMessage",
    "new_message_id",
]

MessageId: TypeAlias = str
"""Identifies one message in a transcript."""


def new_message_id() -> MessageId:
    """A fresh, unique message ID: ``message-`` and 16 random hex digits."""
    return f"message-{os.urandom(8).hex()}"


@dataclass(frozen=True, slots=True, kw_only=True)
class UserMessage(ProtocolValue):
    """Input from the person (or program) driving the agent.

    ``images`` (protocol v2) are images shown with the text, in order (a screenshot, a
    diagram); ``()``, omitted from JSON, when there are none. A list is stored as a tuple.
    """

    id: NonEmpty = field(default_factory=new_message_id)
    role: Literal["user"] = "user"
    content: str
    images: tuple[ImageBlock, ...] = v2(())


@dataclass(frozen=True, slots=True, kw_only=True)
class AssistantMessage(ProtocolValue):
    """One complete model turn: its blocks in the order the model produced them.

    ``content`` may be given as a list; it is stored as a tuple.
    """

    id: NonEmpty = field(default_factory=new_message_id)
    role: Literal["assistant"] = "assistant"
    content: tuple[AssistantBlock, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolResultMessage(ProtocolValue):
    """The outcome of one tool call, linked to it by ``tool_call_id``.

    ``content`` is what the model reads. ``error_code`` (JSON ``errorCode``, protocol v2) is
    the stable code of the tool's own failure, for the program: the ``code`` of a
    ``TetherError`` the tool raised (a coding tool's ``FILE_NOT_FOUND``) or of the
    ``Invalid`` its ``validate`` returned; ``""`` (omitted from JSON) for a success or a
    failure without one. The contract's code (``TOOL_EXECUTION_FAILED``...) stays in
    ``content``, as the model sees it.

    ``images`` (protocol v2) are images the tool returned with its text (``read_file`` on a
    PNG); ``()``, omitted from JSON, when there are none. A list is stored as a tuple.
    """

    id: NonEmpty = field(default_factory=new_message_id)
    role: Literal["toolResult"] = "toolResult"
    tool_call_id: NonEmpty
    tool_name: NonEmpty
    content: str
    is_error: bool = False
    error_code: str = v2("")
    images: tuple[ImageBlock, ...] = v2(())


Message: TypeAlias = UserMessage | AssistantMessage | ToolResultMessage
"""Every message a transcript can hold."""
