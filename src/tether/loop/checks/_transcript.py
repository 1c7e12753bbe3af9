"""Snapshotting the transcript a run starts from: each entry parsed once (protocol values
as they are) and its tool-call linkage checked in the same pass (``InvalidTranscript``)."""

from __future__ import annotations

from typing import Any, cast

from tether._base.exact_types import is_array, real_items, type_of
from tether._base.strings import message_of
from tether.loop.checks._bounds import check_assistant_bounds
from tether.loop.checks._failures import InvalidTranscript, ModelProtocolError, limit_hint
from tether.models.limits import RunLimits
from tether.protocol import (
    AssistantMessage,
    Message,
    ToolResultMessage,
    UserMessage,
)
from tether.protocol.transcript import assistant_message, parse_message
from tether.protocol.transcript._diagnostics import TranscriptLinks
from tether.protocol.transcript._reading import is_mapping, read_field

# --- the starting transcript ----------------------------------------------------------------


def snapshot_transcript(messages: object, limits: RunLimits) -> tuple[Message, ...]:
    """The run's starting transcript as protocol messages, in one pass.

    Protocol messages are taken as they are (valid by construction); JSON-shaped mappings are
    parsed once. Along the way: the message cap, each assistant message's bounds, and the
    tool-call linkage (what construction cannot know). Raises ``InvalidTranscript``.
    """
    kind = type_of(messages)
    if is_array(messages):
        entries: tuple[Any, ...] = tuple(messages)
    elif issubclass(kind, list | tuple):  # the real contents, not what an override says
        entries = real_items(cast("list[Any]", messages))
    else:
        raise InvalidTranscript("messages must be a list or tuple of messages")
    if len(entries) > limits.max_initial_messages:
        raise InvalidTranscript(
            f"messages must not hold more than {limits.max_initial_messages} messages",
            hint=limit_hint("max_initial_messages"),
        )
    snapshot: list[Message] = []
    links = TranscriptLinks()
    found: list[Any] = []
    for index, entry in enumerate(entries):
        entry_type = type_of(entry)
        if entry_type is UserMessage:
            message: Message = entry
        elif entry_type is AssistantMessage or entry_type is ToolResultMessage:
            message = entry
        else:
            message = _parse_entry(entry, index, limits)
        if message.role == "assistant":
            if entry_type is AssistantMessage:
                try:
                    check_assistant_bounds(message.content, limits)
                except ModelProtocolError as error:
                    raise InvalidTranscript(str(error)) from error
            for block in message.content:
                if block.type == "toolCall":
                    links.add_call(block.id, block.name, index, found)
        elif message.role == "toolResult":
            links.add_result(message.tool_call_id, message.tool_name, index, found)
        snapshot.append(message)
    found.extend(links.diagnostics())
    if found:
        raise InvalidTranscript(found[0].message, tuple(snapshot))
    return tuple(snapshot)


def _parse_entry(entry: object, index: int, limits: RunLimits) -> Message:
    try:
        if not is_mapping(entry):
            raise InvalidTranscript(f"messages[{index}] has an unsupported role")
        role = read_field(entry, "role")
        if type_of(role) is not str or role not in ("user", "assistant", "toolResult"):
            raise InvalidTranscript(f"messages[{index}] has an unsupported role")
        if role == "assistant":
            content = read_field(entry, "content")
            check_assistant_bounds(content, limits)
            return assistant_message(id=read_field(entry, "id"), content=content)
        return parse_message(entry)
    except InvalidTranscript:
        raise
    except Exception as error:
        raise InvalidTranscript(message_of(error, "Invalid transcript")) from error
