"""The snapshotting constructors of the message IR and ``parse_message``.

``user_message``, ``assistant_message`` and ``tool_result_message`` take keyword arguments
(assistant blocks may be protocol blocks or JSON-shaped mappings with camelCase keys), copy
and freeze everything, and raise ``TypeError`` with the workshop's messages.
``parse_message`` does the same for a whole JSON-shaped message; ``text_from_assistant``
reads an assistant message's text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tether._base.exact_types import type_of
from tether._base.strings import is_non_empty
from tether.protocol import (
    AssistantBlock,
    AssistantMessage,
    ImageBlock,
    Message,
    ToolResultMessage,
    UserMessage,
)
from tether.protocol.transcript._blocks import assistant_block, snapshot_images
from tether.protocol.transcript._reading import MISSING, is_array, is_mapping, read_field, with_rest

__all__ = [
    "assistant_message",
    "parse_message",
    "text_from_assistant",
    "tool_result_message",
    "user_message",
]


def user_message(
    *,
    content: str,
    id: str | None = None,
    images: Sequence[ImageBlock | Mapping[str, object]] | None = None,
) -> UserMessage:
    """A frozen user message, like ``UserMessage(content=...)``: ``id`` is generated when
    omitted. ``content`` may be empty. ``images`` may be ``ImageBlock`` values or their JSON
    form (``{"type": "image", "mediaType": ..., "data": <base64>, ...}``). Untrusted values
    are checked (``TypeError``)."""
    if type(content) is not str:
        raise TypeError("userMessage: content must be a string")
    blocks = snapshot_images(images, "userMessage: images")
    if id is None:
        return UserMessage(content=content, images=blocks)
    if not is_non_empty(id):
        raise TypeError("userMessage: id must be a non-empty string")
    return UserMessage(id=id, content=content, images=blocks)


def assistant_message(
    *, content: Sequence[AssistantBlock | Mapping[str, object]], id: str | None = None
) -> AssistantMessage:
    """A frozen assistant message; blocks are snapshotted and tool arguments deep-frozen.

    Blocks may be ``TextBlock``/``ToolCall`` values or mappings such as
    ``{"type": "toolCall", "id": "c1", "name": "add", "arguments": {"left": 1}}``; an invalid
    call also has ``"rawArguments"`` (a string, with ``"arguments": {}``).
    Tool-call ID uniqueness is the transcript validator's job, not the constructor's.
    ``id`` is generated when omitted, as by ``AssistantMessage``.
    """
    if id is not None and not is_non_empty(id):
        raise TypeError("assistantMessage: id must be a non-empty string")
    if not is_array(content):
        raise TypeError("assistantMessage: content must be an array")
    items: tuple[Any, ...] = tuple(content)
    blocks = tuple(assistant_block(item, index) for index, item in enumerate(items))
    if id is None:
        return AssistantMessage(content=blocks)
    return AssistantMessage(id=id, content=blocks)


def tool_result_message(
    *,
    tool_call_id: str,
    tool_name: str,
    content: str,
    is_error: bool | None = False,
    id: str | None = None,
    images: Sequence[ImageBlock | Mapping[str, object]] | None = None,
) -> ToolResultMessage:
    """A frozen tool-result message linked to its call by ``tool_call_id``.

    ``is_error`` defaults to ``False`` (also when ``None``); ``id`` is generated when omitted,
    as by ``ToolResultMessage``; ``images`` as for ``user_message``.
    """
    if id is not None and not is_non_empty(id):
        raise TypeError("toolResultMessage: id must be a non-empty string")
    if not is_non_empty(tool_call_id):
        raise TypeError("toolResultMessage: toolCallId must be a non-empty string")
    if not is_non_empty(tool_name):
        raise TypeError("toolResultMessage: toolName must be a non-empty string")
    if type(content) is not str:
        raise TypeError("toolResultMessage: content must be a string")
    if is_error is None:
        is_error = False
    if type(is_error) is not bool:
        raise TypeError("toolResultMessage: isError must be a boolean")
    blocks = snapshot_images(images, "toolResultMessage: images")
    if id is None:
        return ToolResultMessage(
            tool_call_id=tool_call_id,
            tool_name=tool_name,
            content=content,
            is_error=is_error,
            images=blocks,
        )
    return ToolResultMessage(
        id=id,
        tool_call_id=tool_call_id,
        tool_name=tool_name,
        content=content,
        is_error=is_error,
        images=blocks,
    )


def parse_message(value: object) -> Message:
    """Build a message from its JSON form (camelCase keys), e.g. from ``json.loads``.

    Protocol messages are returned as they are. Raises ``TypeError`` for anything else.
    """
    if type(value) is UserMessage or type(value) is AssistantMessage:
        return value
    if type(value) is ToolResultMessage:
        return value
    try:
        return _message_from_mapping(value)
    except TypeError:
        raise
    except Exception as error:  # a hostile mapping: its reads are not to be trusted
        raise TypeError("parse_message: message could not be inspected safely") from error


def _message_from_mapping(value: Any) -> Message:
    if not is_mapping(value):
        raise TypeError("parse_message: message must be an object")
    role = read_field(value, "role")
    if type_of(role) is str and role == "user":
        user = user_message(id=read_field(value, "id"), content=read_field(value, "content"))
        return with_rest(user, value, "parse_message: message")
    if type_of(role) is str and role == "assistant":
        assistant = assistant_message(
            id=read_field(value, "id"), content=read_field(value, "content")
        )
        return with_rest(assistant, value, "parse_message: message")
    if type_of(role) is str and role == "toolResult":
        is_error = read_field(value, "isError")
        result = tool_result_message(
            id=read_field(value, "id"),
            tool_call_id=read_field(value, "toolCallId"),
            tool_name=read_field(value, "toolName"),
            content=read_field(value, "content"),
            is_error=False if is_error is MISSING else is_error,
        )
        return with_rest(result, value, "parse_message: message")
    raise TypeError('parse_message: role must be "user", "assistant" or "toolResult"')


def text_from_assistant(message: AssistantMessage) -> str:
    """The text blocks of ``message`` joined in order; tool-call blocks contribute nothing."""
    if type_of(message) is not AssistantMessage:
        raise TypeError("textFromAssistant: message must be an assistant message")
    return "".join([block.text for block in message.content if block.type == "text"])
