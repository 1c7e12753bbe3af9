"""``validate_transcript``: checking a whole transcript without ever raising.

It returns ``TranscriptDiagnostic`` values: shape problems in traversal order, then linkage
problems (orphan results, results before their call, name mismatches), then calls that have
no later result. Ambiguous linkage (a malformed or duplicated call) is not reported twice.
Every caller field is read once; an exception while inspecting one entry becomes that
entry's diagnostic and the other entries are still checked.
"""

from __future__ import annotations

from typing import Any

from tether._base.exact_types import real_items, type_of
from tether._base.strings import is_non_empty
from tether.jsonvalue import JsonObject, JsonValueError, freeze_json
from tether.protocol import (
    AssistantMessage,
    TextBlock,
    ThinkingBlock,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from tether.protocol.transcript._blocks import raw_arguments_problem, thinking_from_mapping
from tether.protocol.transcript._diagnostics import (
    TranscriptDiagnostic,
    TranscriptLinks,
    diagnostic,
)
from tether.protocol.transcript._reading import MISSING, is_array, is_mapping, read_field, rest_of

__all__ = ["validate_transcript"]


class _Uninspectable(Exception):
    """Internal: reading a caller's entry raised."""


def validate_transcript(transcript: object) -> tuple[TranscriptDiagnostic, ...]:
    """Check a transcript (protocol messages or JSON-shaped mappings); never raises.

    An empty tuple means the transcript is valid.
    """
    entries = _transcript_entries(transcript)
    if entries is None:
        return (diagnostic("INVALID_TRANSCRIPT", -1, "Transcript must be an array"),)
    if entries is MISSING:
        return (diagnostic("INVALID_TRANSCRIPT", -1, "Transcript could not be inspected safely"),)
    found: list[TranscriptDiagnostic] = []
    links = TranscriptLinks()
    for index, entry in enumerate(entries):
        try:
            _inspect_entry(entry, index, links, found)
        except Exception:
            found.append(
                diagnostic(
                    "INVALID_MESSAGE", index, "Transcript entry could not be inspected safely"
                )
            )
    found.extend(links.diagnostics())
    return tuple(found)


def _transcript_entries(transcript: Any) -> Any:
    """The entries of a list or tuple (subclasses included); ``None`` for anything else."""
    kind = type_of(transcript)
    if kind is list or kind is tuple:
        return tuple(transcript)
    if not issubclass(kind, list | tuple):
        return None
    # The real contents, read from the underlying storage: a subclass's own __len__,
    # __iter__ or __getitem__ is never called (one claiming 10**7 items costs nothing).
    return real_items(transcript)


def _inspect_entry(
    entry: Any, index: int, links: TranscriptLinks, found: list[TranscriptDiagnostic]
) -> None:
    kind = type_of(entry)
    if kind is UserMessage:
        return
    if kind is AssistantMessage:
        for block in entry.content:
            if block.type == "toolCall":
                links.add_call(block.id, block.name, index, found)
        return
    if kind is ToolResultMessage:
        links.add_result(entry.tool_call_id, entry.tool_name, index, found)
        return
    if not is_mapping(entry):
        found.append(
            diagnostic("INVALID_MESSAGE", index, "Transcript entry must be a message object")
        )
        return
    role = read_field(entry, "role")
    if type_of(role) is not str:
        found.append(diagnostic("INVALID_MESSAGE", index, "Message role must be a string"))
        return
    if not is_non_empty(read_field(entry, "id")):
        found.append(diagnostic("INVALID_MESSAGE", index, "Message ID must be a non-empty string"))
        return
    if role == "user":
        if type_of(read_field(entry, "content")) is not str:
            found.append(
                diagnostic("INVALID_MESSAGE", index, "User message content must be a string")
            )
        else:
            _inspect_rest(entry, index, UserMessage, "User message", found)
    elif role == "assistant":
        _inspect_assistant(read_field(entry, "content"), index, links, found)
    elif role == "toolResult":
        _inspect_result(entry, index, links, found)
    else:
        found.append(diagnostic("INVALID_MESSAGE", index, f'Unsupported message role "{role}"'))


def _inspect_assistant(
    content: Any, index: int, links: TranscriptLinks, found: list[TranscriptDiagnostic]
) -> None:
    if not is_array(content):
        found.append(
            diagnostic("INVALID_MESSAGE", index, "Assistant message content must be an array")
        )
        return
    for position, block in enumerate(tuple(content)):
        try:
            _inspect_block(block, position, index, links, found)
        except _Uninspectable:
            found.append(
                diagnostic(
                    "INVALID_MESSAGE",
                    index,
                    f"Assistant content[{position}] could not be inspected safely",
                )
            )


def _inspect_block(
    block: Any, position: int, index: int, links: TranscriptLinks, found: list[TranscriptDiagnostic]
) -> None:
    kind = type_of(block)
    if kind is TextBlock or kind is ThinkingBlock:
        return
    if kind is ToolCall:
        links.add_call(block.id, block.name, index, found)
        return
    call_id: Any = MISSING
    try:
        if not is_mapping(block):
            found.append(
                diagnostic(
                    "INVALID_MESSAGE", index, f"Assistant content[{position}] must be an object"
                )
            )
            return
        block_type = read_field(block, "type")
        if type_of(block_type) is str and block_type == "text":
            if type_of(read_field(block, "text")) is not str:
                found.append(
                    diagnostic(
                        "INVALID_MESSAGE",
                        index,
                        f"Assistant content[{position}].text must be a string",
                    )
                )
            return
        if type_of(block_type) is str and block_type == "thinking":
            try:
                thinking_from_mapping(block, f"Assistant content[{position}]")
            except TypeError as problem:
                found.append(diagnostic("INVALID_MESSAGE", index, str(problem)))
            return
        if type_of(block_type) is not str or block_type != "toolCall":
            found.append(
                diagnostic(
                    "INVALID_MESSAGE",
                    index,
                    f"Assistant content[{position}] has an unsupported type",
                )
            )
            return
        call_id = read_field(block, "id")
        name = read_field(block, "name")
        arguments = read_field(block, "arguments")
        raw = read_field(block, "rawArguments")
    except Exception as error:
        if is_non_empty(call_id):
            links.malformed_calls.add(call_id)
        raise _Uninspectable from error
    valid = True
    if not is_non_empty(call_id):
        valid = False
        found.append(
            diagnostic("INVALID_MESSAGE", index, "Tool call ID must be a non-empty string")
        )
    if not is_non_empty(name):
        valid = False
        found.append(
            diagnostic("EMPTY_TOOL_NAME", index, "Tool call name must be a non-empty string")
        )
    if not _is_json_object(arguments):
        valid = False
        found.append(
            diagnostic(
                "INVALID_TOOL_ARGUMENTS",
                index,
                "Tool call arguments must be a non-null JSON object and not an array",
            )
        )
    elif raw is not MISSING and raw is not None:
        problem = raw_arguments_problem(raw, arguments)
        if problem is not None:
            valid = False
            found.append(diagnostic("INVALID_TOOL_ARGUMENTS", index, f"Tool call {problem}"))
    if not valid:
        if is_non_empty(call_id):
            links.malformed_calls.add(call_id)
        return
    links.add_call(call_id, name, index, found)


def _is_json_object(value: object) -> bool:
    kind = type_of(value)
    if kind is JsonObject:
        return True
    if kind is not dict:
        return False
    try:
        freeze_json(value)
    except JsonValueError:
        return False
    return True


def _rest_problem(entry: Any, index: int, kind: type, what: str) -> TranscriptDiagnostic | None:
    """The diagnostic of the fields of ``entry`` this module does not check itself (a
    message's ``images``, any field added later), decoded by the one decoder, or ``None``."""
    try:
        rest_of(kind).decode(lambda key: read_field(entry, key), MISSING, what)
    except TypeError as error:
        return diagnostic("INVALID_MESSAGE", index, str(error))
    return None


def _inspect_rest(
    entry: Any, index: int, kind: type, what: str, found: list[TranscriptDiagnostic]
) -> None:
    problem = _rest_problem(entry, index, kind, what)
    if problem is not None:
        found.append(problem)


def _inspect_result(
    entry: Any, index: int, links: TranscriptLinks, found: list[TranscriptDiagnostic]
) -> None:
    call_id = read_field(entry, "toolCallId")
    if not is_non_empty(call_id):
        found.append(
            diagnostic("INVALID_MESSAGE", index, "Tool result call ID must be a non-empty string")
        )
        return
    try:
        name = read_field(entry, "toolName")
        if not is_non_empty(name):
            problem = diagnostic(
                "EMPTY_TOOL_NAME", index, "Tool result name must be a non-empty string"
            )
        elif type_of(read_field(entry, "content")) is not str:
            problem = diagnostic("INVALID_MESSAGE", index, "Tool result content must be a string")
        elif type_of(read_field(entry, "isError")) is not bool:
            problem = diagnostic("INVALID_MESSAGE", index, "Tool result isError must be a boolean")
        else:
            problem = _rest_problem(entry, index, ToolResultMessage, "Tool result")
    except Exception:
        links.malformed_results.add(call_id)
        raise
    if problem is not None:
        links.malformed_results.add(call_id)
        found.append(problem)
        return
    links.add_result(call_id, name, index, found)
