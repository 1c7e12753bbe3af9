"""Checkpoint 03: the normalized message IR.

Snapshotting constructors turn untrusted arguments into protocol messages:
``user_message``, ``assistant_message`` and ``tool_result_message`` take keyword arguments
(assistant blocks may be protocol blocks or JSON-shaped mappings with camelCase keys), copy
and freeze everything, and raise ``TypeError`` with the workshop's messages.
``parse_message`` does the same for a whole JSON-shaped message.

``validate_transcript`` checks a transcript without ever raising. It returns
``TranscriptDiagnostic(code, message_index, message)`` values: shape problems in traversal
order, then linkage problems (orphan results, results before their call, name mismatches),
then calls that have no later result. Ambiguous linkage (a malformed or duplicated call) is
not reported twice. Every caller field is read once; an exception while inspecting one entry
becomes that entry's diagnostic and the other entries are still checked.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal, TypeAlias, TypeGuard, TypeVar, cast

from tether._dataclass import dataclass
from tether._text import is_non_empty
from tether._types import exactly, is_dict, real_items, type_of
from tether.jsonvalue import JsonObject, JsonValueError, freeze_json, is_json_object
from tether.protocol import (
    MAX_RAW_ARGUMENTS_CODE_POINTS,
    AssistantBlock,
    AssistantMessage,
    ImageBlock,
    Message,
    ProtocolJsonError,
    TextBlock,
    ThinkingBlock,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    from_json,
)
from tether.protocol._decoder import Layer, Problem, Rest
from tether.protocol.codec import problem_text

__all__ = [
    "TranscriptDiagnostic",
    "TranscriptDiagnosticCode",
    "assistant_message",
    "parse_message",
    "text_from_assistant",
    "tool_result_message",
    "user_message",
    "validate_transcript",
]

TranscriptDiagnosticCode: TypeAlias = Literal[
    "INVALID_TRANSCRIPT",
    "INVALID_MESSAGE",
    "DUPLICATE_TOOL_CALL_ID",
    "DUPLICATE_TOOL_RESULT",
    "ORPHAN_TOOL_RESULT",
    "TOOL_RESULT_BEFORE_CALL",
    "MISSING_TOOL_RESULT",
    "TOOL_NAME_MISMATCH",
    "EMPTY_TOOL_NAME",
    "INVALID_TOOL_ARGUMENTS",
]


class _Missing:
    """An absent field, as opposed to a field whose value is ``None``."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Final = _Missing()


def read_field(source: Any, key: str) -> Any:
    """Read ``source[key]`` exactly once; ``MISSING`` when absent. Other errors propagate."""
    if type_of(source) is dict:
        return source.get(key, MISSING)
    try:
        return source[key]
    except KeyError:
        return MISSING


def is_mapping(value: object) -> TypeGuard[Mapping[Any, Any]]:
    """A JSON-shaped object: an exact ``dict`` whose keys are all ``str`` (so a lookup never
    compares a caller's key object), or any other ``Mapping``, read with ``read_field``."""
    if is_dict(value):
        return all(type_of(key) is str for key in value)
    return isinstance(value, Mapping)


def _is_array(value: object) -> bool:
    kind = type_of(value)
    return kind is list or kind is tuple


# --- the fields this module does not word itself -------------------------------------------


def _ir_error(path: str, problem: Problem) -> TypeError:
    return TypeError(f"{path}: {problem_text(problem)}")


_IR: Final = Layer(name="messages", fail=_ir_error)
"""The IR's configuration of the one decoder, for the fields read by ``_with_rest``."""

_HANDLED: Final[dict[type, frozenset[str]]] = {
    UserMessage: frozenset({"id", "role", "content"}),
    AssistantMessage: frozenset({"id", "role", "content"}),
    ToolResultMessage: frozenset({"id", "role", "toolCallId", "toolName", "content", "isError"}),
    TextBlock: frozenset({"type", "text", "signature"}),
    ThinkingBlock: frozenset({"type", "text", "signature", "redacted"}),
    ToolCall: frozenset({"type", "id", "name", "arguments", "rawArguments", "signature"}),
}
"""The JSON keys this module reads and words itself, by class; every other field of the
class (a tool result's ``errorCode``, any field added later) comes from the one decoder."""
_RESTS: dict[type, Rest] = {}
_Value = TypeVar("_Value", bound=object)


def _with_rest(value: _Value, source: Any, where: str) -> _Value:
    """``value`` with the fields of ``source`` (its JSON form, read with ``read_field``) that
    this module does not read itself, decoded by the one decoder (``TypeError`` naming
    ``where`` and the key)."""
    return _rest(type(value)).onto(value, lambda key: read_field(source, key), MISSING, where)


def _rest(kind: type) -> Rest:
    rest = _RESTS.get(kind)
    if rest is None:
        rest = _RESTS[kind] = Rest(kind, _HANDLED[kind], _IR)
    return rest


# --- constructors ---------------------------------------------------------------------------


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


def snapshot_images(value: object, prefix: str) -> tuple[ImageBlock, ...]:
    """A message's images from ``ImageBlock`` values or their JSON form; ``()`` for
    ``None`` or ``MISSING``. ``TypeError`` names the image that is not one."""
    if value is None or value is MISSING:
        return ()
    if not _is_array(value):
        raise TypeError(f"{prefix} must be an array")
    items = tuple(cast("tuple[Any, ...]", value))
    blocks: list[ImageBlock] = []
    for index, item in enumerate(items):
        if type_of(item) is ImageBlock:
            blocks.append(item)
            continue
        if type_of(item) is not dict:
            raise TypeError(f"{prefix}[{index}] must be an image block")
        try:
            blocks.append(from_json(item, ImageBlock))
        except ProtocolJsonError as error:
            raise TypeError(f"{prefix}[{index}] is not an image: {error}") from error
    return tuple(blocks)


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
    if not _is_array(content):
        raise TypeError("assistantMessage: content must be an array")
    items: tuple[Any, ...] = tuple(content)
    blocks = tuple(_assistant_block(item, index) for index, item in enumerate(items))
    if id is None:
        return AssistantMessage(content=blocks)
    return AssistantMessage(id=id, content=blocks)


def _assistant_block(block: Any, index: int) -> AssistantBlock:
    kind = type_of(block)
    if kind is TextBlock or kind is ToolCall:
        return block
    prefix = f"assistantMessage: content[{index}]"
    try:
        return _block_from_mapping(block, prefix)
    except TypeError:
        raise
    except Exception as error:  # a hostile mapping: its reads are not to be trusted
        raise TypeError(f"{prefix} could not be inspected safely") from error


def _block_from_mapping(block: Any, prefix: str) -> AssistantBlock:
    if not is_mapping(block):
        raise TypeError(f"{prefix} must be an object")
    block_type = read_field(block, "type")
    if type_of(block_type) is str and block_type == "text":
        text = read_field(block, "text")
        if type_of(text) is not str:
            raise TypeError(f"{prefix}.text must be a string")
        return _with_rest(TextBlock(text=text, signature=_signature(block, prefix)), block, prefix)
    if type_of(block_type) is str and block_type == "thinking":
        return _with_rest(_thinking_from_mapping(block, prefix), block, prefix)
    if type_of(block_type) is str and block_type == "toolCall":
        call_id = read_field(block, "id")
        if not is_non_empty(call_id):
            raise TypeError(f"{prefix}.id must be a non-empty string")
        name = read_field(block, "name")
        if not is_non_empty(name):
            raise TypeError(f"{prefix}.name must be a non-empty string")
        arguments = snapshot_arguments(read_field(block, "arguments"), f"{prefix}.arguments")
        signature = _signature(block, prefix)
        raw = read_field(block, "rawArguments")
        if raw is MISSING or raw is None:
            call = ToolCall(id=call_id, name=name, arguments=arguments, signature=signature)
            return _with_rest(call, block, prefix)
        problem = _raw_arguments_problem(raw, arguments)
        if problem is not None:
            raise TypeError(f"{prefix}.{problem}")
        call = ToolCall(
            id=call_id, name=name, arguments=arguments, raw_arguments=raw, signature=signature
        )
        return _with_rest(call, block, prefix)
    raise TypeError(f'{prefix}.type must be "text", "thinking" or "toolCall"')


def _signature(block: Any, prefix: str) -> str | None:
    """A block's optional ``signature``: a string, or ``None`` when missing or null."""
    signature = read_field(block, "signature")
    if signature is MISSING or signature is None:
        return None
    if type_of(signature) is not str:
        raise TypeError(f"{prefix}.signature must be a string or null")
    text: str = signature
    return text


def _thinking_from_mapping(block: Any, prefix: str) -> ThinkingBlock:
    text = read_field(block, "text")
    if type_of(text) is not str:
        raise TypeError(f"{prefix}.text must be a string")
    signature = _signature(block, prefix)
    redacted = read_field(block, "redacted")
    if redacted is MISSING:
        redacted = False
    elif type_of(redacted) is not bool:
        raise TypeError(f"{prefix}.redacted must be a boolean")
    return ThinkingBlock(text=text, signature=signature, redacted=redacted)


def _raw_arguments_problem(raw: object, arguments: object) -> str | None:
    """Why a mapping's ``rawArguments`` (present, not null) cannot stand with its
    ``arguments``, or ``None``: an invalid call holds a bounded string and ``{}``."""
    if not exactly(raw, str):
        return "rawArguments must be a string or null"
    text: str = raw
    if len(text) > MAX_RAW_ARGUMENTS_CODE_POINTS:
        return f"rawArguments must be at most {MAX_RAW_ARGUMENTS_CODE_POINTS} code points"
    if (is_dict(arguments) or is_json_object(arguments)) and len(arguments) != 0:
        return "arguments must be empty when rawArguments is set"
    return None


def snapshot_arguments(value: object, path: str) -> JsonObject:
    """Deep-freeze tool-call arguments: a JSON object (not null, not an array)."""
    if type(value) is JsonObject:
        return value
    if type_of(value) is not dict:
        raise TypeError(f"{path} must be a non-null object and not an array")
    frozen = freeze_json(value, path=path)
    assert type(frozen) is JsonObject
    return frozen


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
        return _with_rest(user, value, "parse_message: message")
    if type_of(role) is str and role == "assistant":
        assistant = assistant_message(
            id=read_field(value, "id"), content=read_field(value, "content")
        )
        return _with_rest(assistant, value, "parse_message: message")
    if type_of(role) is str and role == "toolResult":
        is_error = read_field(value, "isError")
        result = tool_result_message(
            id=read_field(value, "id"),
            tool_call_id=read_field(value, "toolCallId"),
            tool_name=read_field(value, "toolName"),
            content=read_field(value, "content"),
            is_error=False if is_error is MISSING else is_error,
        )
        return _with_rest(result, value, "parse_message: message")
    raise TypeError('parse_message: role must be "user", "assistant" or "toolResult"')


def text_from_assistant(message: AssistantMessage) -> str:
    """The text blocks of ``message`` joined in order; tool-call blocks contribute nothing."""
    if type_of(message) is not AssistantMessage:
        raise TypeError("textFromAssistant: message must be an assistant message")
    return "".join([block.text for block in message.content if block.type == "text"])


# --- transcript validation ------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class TranscriptDiagnostic:
    """One problem in a transcript. ``message_index`` is ``-1`` for the whole transcript."""

    code: TranscriptDiagnosticCode
    message_index: int
    message: str


class _Uninspectable(Exception):
    """Internal: reading a caller's entry raised."""


class TranscriptLinks:
    """Tool-call and tool-result linkage gathered while walking a transcript.

    Kept apart from the shape checks so a caller that appends known-good messages (the agent
    loop) can extend the links incrementally instead of revalidating the whole transcript.
    """

    __slots__ = ("calls", "malformed_calls", "malformed_results", "results")

    def __init__(self) -> None:
        self.calls: dict[str, list[tuple[int, str]]] = {}
        self.results: dict[str, list[tuple[int, str]]] = {}
        self.malformed_calls: set[str] = set()
        self.malformed_results: set[str] = set()

    def add_call(self, call_id: str, name: str, index: int) -> TranscriptDiagnostic | None:
        """Record a valid call; returns the duplicate diagnostic if the ID was seen before."""
        seen = self.calls.get(call_id)
        if seen is None:
            self.calls[call_id] = [(index, name)]
            return None
        seen.append((index, name))
        return TranscriptDiagnostic(
            code="DUPLICATE_TOOL_CALL_ID",
            message_index=index,
            message=f'Tool call ID "{call_id}" is not unique',
        )

    def add_result(self, call_id: str, name: str, index: int) -> TranscriptDiagnostic | None:
        """Record a valid result; returns the duplicate diagnostic for a second result."""
        seen = self.results.get(call_id)
        if seen is None:
            self.results[call_id] = [(index, name)]
            return None
        seen.append((index, name))
        return TranscriptDiagnostic(
            code="DUPLICATE_TOOL_RESULT",
            message_index=index,
            message=f'Tool call "{call_id}" has more than one result',
        )

    def diagnostics(self) -> list[TranscriptDiagnostic]:
        """Linkage problems: orphan, early and misnamed results, then calls with no result."""
        found: list[TranscriptDiagnostic] = []
        for call_id, results in self.results.items():
            calls = self.calls.get(call_id)
            if not calls:
                if call_id not in self.malformed_calls:
                    found.extend(
                        TranscriptDiagnostic(
                            code="ORPHAN_TOOL_RESULT",
                            message_index=index,
                            message=f'Tool result references unknown call ID "{call_id}"',
                        )
                        for index, _ in results
                    )
                continue
            if len(calls) != 1 or call_id in self.malformed_calls:
                continue
            call_index, call_name = calls[0]
            for index, name in results:
                if index <= call_index:
                    found.append(
                        TranscriptDiagnostic(
                            code="TOOL_RESULT_BEFORE_CALL",
                            message_index=index,
                            message=f'Tool result for "{call_id}" appears before its call',
                        )
                    )
                elif name != call_name:
                    found.append(
                        TranscriptDiagnostic(
                            code="TOOL_NAME_MISMATCH",
                            message_index=index,
                            message=(
                                f'Tool result name "{name}" does not match call name "{call_name}"'
                            ),
                        )
                    )
        for call_id, calls in self.calls.items():
            if len(calls) != 1 or call_id in self.malformed_calls:
                continue
            if call_id in self.malformed_results:
                continue
            call_index = calls[0][0]
            results = self.results.get(call_id)
            if results is None or max(index for index, _ in results) <= call_index:
                found.append(
                    TranscriptDiagnostic(
                        code="MISSING_TOOL_RESULT",
                        message_index=call_index,
                        message=f'Tool call "{call_id}" has no later result',
                    )
                )
        return found


def validate_transcript(transcript: object) -> tuple[TranscriptDiagnostic, ...]:
    """Check a transcript (protocol messages or JSON-shaped mappings); never raises.

    An empty tuple means the transcript is valid.
    """
    entries = _transcript_entries(transcript)
    if entries is None:
        return (_diagnostic("INVALID_TRANSCRIPT", -1, "Transcript must be an array"),)
    if entries is MISSING:
        return (_diagnostic("INVALID_TRANSCRIPT", -1, "Transcript could not be inspected safely"),)
    found: list[TranscriptDiagnostic] = []
    links = TranscriptLinks()
    for index, entry in enumerate(entries):
        try:
            _inspect_entry(entry, index, links, found)
        except Exception:
            found.append(
                _diagnostic(
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


def _diagnostic(code: TranscriptDiagnosticCode, index: int, message: str) -> TranscriptDiagnostic:
    return TranscriptDiagnostic(code=code, message_index=index, message=message)


def _inspect_entry(
    entry: Any, index: int, links: TranscriptLinks, found: list[TranscriptDiagnostic]
) -> None:
    kind = type_of(entry)
    if kind is UserMessage:
        return
    if kind is AssistantMessage:
        for block in entry.content:
            if block.type == "toolCall":
                duplicate = links.add_call(block.id, block.name, index)
                if duplicate is not None:
                    found.append(duplicate)
        return
    if kind is ToolResultMessage:
        duplicate = links.add_result(entry.tool_call_id, entry.tool_name, index)
        if duplicate is not None:
            found.append(duplicate)
        return
    if not is_mapping(entry):
        found.append(
            _diagnostic("INVALID_MESSAGE", index, "Transcript entry must be a message object")
        )
        return
    role = read_field(entry, "role")
    if type_of(role) is not str:
        found.append(_diagnostic("INVALID_MESSAGE", index, "Message role must be a string"))
        return
    if not is_non_empty(read_field(entry, "id")):
        found.append(_diagnostic("INVALID_MESSAGE", index, "Message ID must be a non-empty string"))
        return
    if role == "user":
        if type_of(read_field(entry, "content")) is not str:
            found.append(
                _diagnostic("INVALID_MESSAGE", index, "User message content must be a string")
            )
        else:
            _inspect_rest(entry, index, UserMessage, "User message", found)
    elif role == "assistant":
        _inspect_assistant(read_field(entry, "content"), index, links, found)
    elif role == "toolResult":
        _inspect_result(entry, index, links, found)
    else:
        found.append(_diagnostic("INVALID_MESSAGE", index, f'Unsupported message role "{role}"'))


def _inspect_assistant(
    content: Any, index: int, links: TranscriptLinks, found: list[TranscriptDiagnostic]
) -> None:
    if not _is_array(content):
        found.append(
            _diagnostic("INVALID_MESSAGE", index, "Assistant message content must be an array")
        )
        return
    for position, block in enumerate(tuple(content)):
        try:
            _inspect_block(block, position, index, links, found)
        except _Uninspectable:
            found.append(
                _diagnostic(
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
        duplicate = links.add_call(block.id, block.name, index)
        if duplicate is not None:
            found.append(duplicate)
        return
    call_id: Any = MISSING
    try:
        if not is_mapping(block):
            found.append(
                _diagnostic(
                    "INVALID_MESSAGE", index, f"Assistant content[{position}] must be an object"
                )
            )
            return
        block_type = read_field(block, "type")
        if type_of(block_type) is str and block_type == "text":
            if type_of(read_field(block, "text")) is not str:
                found.append(
                    _diagnostic(
                        "INVALID_MESSAGE",
                        index,
                        f"Assistant content[{position}].text must be a string",
                    )
                )
            return
        if type_of(block_type) is str and block_type == "thinking":
            try:
                _thinking_from_mapping(block, f"Assistant content[{position}]")
            except TypeError as problem:
                found.append(_diagnostic("INVALID_MESSAGE", index, str(problem)))
            return
        if type_of(block_type) is not str or block_type != "toolCall":
            found.append(
                _diagnostic(
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
            _diagnostic("INVALID_MESSAGE", index, "Tool call ID must be a non-empty string")
        )
    if not is_non_empty(name):
        valid = False
        found.append(
            _diagnostic("EMPTY_TOOL_NAME", index, "Tool call name must be a non-empty string")
        )
    if not _is_json_object(arguments):
        valid = False
        found.append(
            _diagnostic(
                "INVALID_TOOL_ARGUMENTS",
                index,
                "Tool call arguments must be a non-null JSON object and not an array",
            )
        )
    elif raw is not MISSING and raw is not None:
        problem = _raw_arguments_problem(raw, arguments)
        if problem is not None:
            valid = False
            found.append(_diagnostic("INVALID_TOOL_ARGUMENTS", index, f"Tool call {problem}"))
    if not valid:
        if is_non_empty(call_id):
            links.malformed_calls.add(call_id)
        return
    duplicate = links.add_call(call_id, name, index)
    if duplicate is not None:
        found.append(duplicate)


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
        _rest(kind).decode(lambda key: read_field(entry, key), MISSING, what)
    except TypeError as error:
        return _diagnostic("INVALID_MESSAGE", index, str(error))
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
            _diagnostic("INVALID_MESSAGE", index, "Tool result call ID must be a non-empty string")
        )
        return
    try:
        name = read_field(entry, "toolName")
        if not is_non_empty(name):
            problem = _diagnostic(
                "EMPTY_TOOL_NAME", index, "Tool result name must be a non-empty string"
            )
        elif type_of(read_field(entry, "content")) is not str:
            problem = _diagnostic("INVALID_MESSAGE", index, "Tool result content must be a string")
        elif type_of(read_field(entry, "isError")) is not bool:
            problem = _diagnostic("INVALID_MESSAGE", index, "Tool result isError must be a boolean")
        else:
            problem = _rest_problem(entry, index, ToolResultMessage, "Tool result")
    except Exception:
        links.malformed_results.add(call_id)
        raise
    if problem is not None:
        links.malformed_results.add(call_id)
        found.append(problem)
        return
    duplicate = links.add_result(call_id, name, index)
    if duplicate is not None:
        found.append(duplicate)
