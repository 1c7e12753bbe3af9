"""The loop's boundary checks: what a model sends and what a run starts from.

A model is untrusted. Each streamed chunk is snapshotted (protocol values as they are,
JSON-shaped mappings parsed once), correlated with the active request and counted against
the run's ``RunLimits``; the final response is checked the same way and must agree with what
was streamed (text and thinking coalesced, tool calls one for one; ``toolCallDelta`` chunks
are progress and are not matched). The starting transcript is snapshotted and its tool-call
linkage checked in one pass. Every failure here is a ``ModelProtocolError`` or an
``InvalidTranscript`` with the message the run reports.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any, Final, TypeAlias, cast, get_args

from tether._text import code_points, is_non_empty, message_of
from tether._types import real_items, type_of
from tether.jsonvalue import JsonObject, cached_size, entries, store_size
from tether.loop.limits import RunLimits
from tether.messages import (
    MISSING,
    TranscriptLinks,
    assistant_message,
    is_mapping,
    parse_message,
    read_field,
)
from tether.protocol import (
    AssistantBlock,
    AssistantMessage,
    Message,
    ModelChunk,
    ModelResponse,
    ModelUsage,
    TextBlock,
    TextDeltaChunk,
    ThinkingBlock,
    ThinkingDeltaChunk,
    ToolCall,
    ToolCallChunk,
    ToolResultMessage,
    UserMessage,
    from_json,
)
from tether.protocol.codec import ProtocolJsonError
from tether.protocol.results import RunFailureCode

__all__ = [
    "AGREEMENT_KINDS",
    "InvalidTranscript",
    "ModelOutputTruncated",
    "ModelProtocolError",
    "ModelRefused",
    "ModelStreamFailure",
    "RunFailure",
    "RunFailureCode",
    "SignalAccessError",
    "ToolPhaseFailure",
    "check_agreement",
    "check_argument_bounds",
    "check_assistant_bounds",
    "check_raw_argument_bounds",
    "limit_hint",
    "snapshot_chunk",
    "snapshot_response",
    "snapshot_transcript",
]


class RunFailure(Exception):
    """Internal: a failure with a run failure code and an optional hint (what to change)."""

    code: RunFailureCode = "AGENT_RUNTIME_FAILED"

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.hint = hint


def limit_hint(field: str) -> str:
    """The hint of a broken ``RunLimits`` bound: which field, and how to raise it."""
    return (
        f"raise RunLimits.{field} (pass limits=RunLimits.for_real_models(), or "
        f"dataclasses.replace(limits, {field}=...)) to run_agent_loop or Agent"
    )


class ModelProtocolError(RunFailure):
    code = "MODEL_PROTOCOL_ERROR"


class ModelStreamFailure(RunFailure):
    code = "MODEL_STREAM_FAILED"


class ToolPhaseFailure(RunFailure):
    code = "TOOL_EXECUTION_FAILED"


class SignalAccessError(RunFailure):
    code = "SIGNAL_ACCESS_FAILED"


class InvalidTranscript(RunFailure):
    """The starting transcript is unusable; ``messages`` holds it when it could be read."""

    code = "INVALID_TRANSCRIPT"

    def __init__(self, message: str, messages: tuple[Message, ...] = (), *, hint: str = "") -> None:
        super().__init__(message, hint)
        self.messages = messages


class ModelOutputTruncated(RunFailure):
    code = "MODEL_OUTPUT_TRUNCATED"


class ModelRefused(RunFailure):
    code = "MODEL_REFUSED"


# --- the starting transcript ----------------------------------------------------------------


def snapshot_transcript(messages: object, limits: RunLimits) -> tuple[Message, ...]:
    """The run's starting transcript as protocol messages, in one pass.

    Protocol messages are taken as they are (valid by construction); JSON-shaped mappings are
    parsed once. Along the way: the message cap, each assistant message's bounds, and the
    tool-call linkage (what construction cannot know). Raises ``InvalidTranscript``.
    """
    kind = type_of(messages)
    if kind is list or kind is tuple:
        entries: tuple[Any, ...] = tuple(messages)  # pyright: ignore[reportArgumentType]
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
                    duplicate = links.add_call(block.id, block.name, index)
                    if duplicate is not None:
                        found.append(duplicate)
        elif message.role == "toolResult":
            duplicate = links.add_result(message.tool_call_id, message.tool_name, index)
            if duplicate is not None:
                found.append(duplicate)
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


# --- bounds ---------------------------------------------------------------------------------


def check_assistant_bounds(
    content: object, limits: RunLimits, checked: set[int] | None = None
) -> None:
    """Block count, text per message and tool-argument budgets, before materializing.

    ``checked`` holds the identities of tool calls whose arguments were already checked
    (streamed chunks carrying the very same immutable object).
    """
    kind = type_of(content)
    if kind is not list and kind is not tuple:
        return  # the constructor reports the shape
    blocks: tuple[Any, ...] = tuple(content)  # pyright: ignore[reportArgumentType]
    if len(blocks) > limits.max_blocks_per_step:
        raise ModelProtocolError(
            f"Assistant message exceeds {limits.max_blocks_per_step} content blocks",
            limit_hint("max_blocks_per_step"),
        )
    total = 0
    pending_high = False
    for block in blocks:
        block_type = type_of(block)
        if block_type is TextBlock:
            count, pending_high = code_points(block.text, pending_high)
        elif block_type is ThinkingBlock:
            count, pending_high = code_points(block.text, False)
            pending_high = False
        elif block_type is ToolCall:
            pending_high = False
            if checked is None or id(block) not in checked:
                check_argument_bounds(block.arguments, limits)
                check_raw_argument_bounds(block.raw_arguments, limits)
            continue
        elif is_mapping(block):
            block_kind = read_field(block, "type")
            if type_of(block_kind) is not str:
                continue  # the constructor reports the shape
            if block_kind == "toolCall":
                pending_high = False
                check_argument_bounds(read_field(block, "arguments"), limits)
                check_raw_argument_bounds(read_field(block, "rawArguments"), limits)
                continue
            text = read_field(block, "text") if block_kind in ("text", "thinking") else ""
            if type_of(text) is not str:
                continue
            count, pending_high = code_points(text, pending_high)
        else:
            continue
        total += count
        if total > limits.max_text_code_points:
            raise ModelProtocolError(
                f"Assistant message exceeds {limits.max_text_code_points} text code points",
                limit_hint("max_text_code_points"),
            )


def check_raw_argument_bounds(raw: object, limits: RunLimits) -> None:
    """An invalid call's raw argument text counts as argument strings: the same budget
    (``max_argument_string_code_points``) as a valid call's. Absent or ``None`` passes; any
    other shape is left to the constructor."""
    if type_of(raw) is str:
        text: str = raw  # pyright: ignore[reportAssignmentType]
        count = len(text) if text.isascii() else code_points(text)[0]
        if count > limits.max_argument_string_code_points:
            raise ModelProtocolError(
                "Tool-call raw arguments exceed "
                f"{limits.max_argument_string_code_points} string code points",
                limit_hint("max_argument_string_code_points"),
            )


def check_argument_bounds(arguments: object, limits: RunLimits) -> None:
    """Walk tool arguments iteratively against the depth, node, entry and string budgets."""
    kind = type_of(arguments)
    if kind is JsonObject:
        _check_frozen_argument_bounds(arguments, limits)
        return
    if kind is not dict:
        raise ModelProtocolError("Tool-call arguments must be a JSON object")
    nodes = 0
    entries = 0
    strings = 0
    active: set[int] = set()
    stack: list[tuple[Any, int, bool]] = [(arguments, 0, False)]
    while stack:
        value, depth, leaving = stack.pop()
        if leaving:
            active.discard(id(value))
            continue
        nodes += 1
        if nodes > limits.max_argument_nodes:
            raise ModelProtocolError(
                f"Tool-call arguments exceed {limits.max_argument_nodes} JSON values",
                limit_hint("max_argument_nodes"),
            )
        value_type = type_of(value)
        if value is None or value_type is bool or value_type is int:
            continue
        if value_type is float:
            if not math.isfinite(value):
                raise ModelProtocolError("Tool-call arguments must contain only finite numbers")
            continue
        if value_type is str:
            strings += code_points(value)[0]
            if strings > limits.max_argument_string_code_points:
                raise ModelProtocolError(
                    "Tool-call arguments exceed "
                    f"{limits.max_argument_string_code_points} string code points",
                    limit_hint("max_argument_string_code_points"),
                )
            continue
        if value_type not in (JsonObject, dict, list, tuple):
            raise ModelProtocolError("Tool-call arguments must contain only JSON values")
        if depth > limits.max_argument_depth:
            raise ModelProtocolError(
                f"Tool-call arguments nest deeper than {limits.max_argument_depth}",
                limit_hint("max_argument_depth"),
            )
        marker = id(value)
        if marker in active:
            raise ModelProtocolError("Tool-call arguments must not contain circular references")
        active.add(marker)
        stack.append((value, depth, True))
        children: list[Any] = []
        if value_type is JsonObject or value_type is dict:
            for key, item in value.items():
                entries += 1
                if entries > limits.max_argument_entries:
                    break
                if type_of(key) is not str:
                    raise ModelProtocolError("Tool-call argument keys must be strings")
                strings += code_points(key)[0]
                children.append(item)
        else:
            entries += len(value)
            children.extend(value[: limits.max_argument_entries + 1])
        if entries > limits.max_argument_entries:
            raise ModelProtocolError(
                f"Tool-call arguments exceed {limits.max_argument_entries} entries",
                limit_hint("max_argument_entries"),
            )
        if strings > limits.max_argument_string_code_points:
            raise ModelProtocolError(
                "Tool-call arguments exceed "
                f"{limits.max_argument_string_code_points} string code points",
                limit_hint("max_argument_string_code_points"),
            )
        stack.extend((child, depth + 1, False) for child in reversed(children))


def _check_frozen_argument_bounds(arguments: Any, limits: RunLimits) -> None:
    """The same budgets for frozen arguments.

    A ``JsonObject`` never changes, so its size is measured once and kept with it
    (``jsonvalue.store_size``): a reused arguments object (a scripted reply, a retried call)
    is then checked in constant time. Within every budget is the common case; otherwise the
    walk below runs to report the first budget exceeded, exactly as without the cache.
    """
    size = cached_size(arguments)
    if size is None:
        size = _measure_frozen(arguments)
        store_size(arguments, size)
    entries, strings, depth = size
    if (
        entries <= limits.max_argument_entries
        and entries + 1 <= limits.max_argument_nodes
        and strings <= limits.max_argument_string_code_points
        and depth <= limits.max_argument_depth
    ):
        return
    _walk_frozen_argument_bounds(arguments, limits)
    raise AssertionError("unreachable: the walk reports the exceeded budget")  # pragma: no cover


def _measure_frozen(arguments: Any) -> tuple[int, int, int]:
    """``(entries, string code points, deepest container depth)`` of frozen arguments.

    Flat arguments (no nested object or array: the common call) are measured in one pass
    over their items, with no stack; the first nested container hands the whole measure to
    ``_measure_frozen_walk``. Why: a model that builds fresh arguments every turn (a real
    one, a scripted factory) pays this once per call, and the walk's set-up cost more than
    the measure. ``tests/test_loop_fast_paths.py`` checks both on any JSON object.
    """
    strings = 0
    items: dict[str, Any] = entries(arguments)  # the object's own dict
    for key, value in items.items():
        strings += len(key) if key.isascii() else code_points(key)[0]
        value_type = type_of(value)
        if value_type is str:
            text: str = value
            strings += len(text) if text.isascii() else code_points(text)[0]
        elif value_type is JsonObject or value_type is tuple:
            return _measure_frozen_walk(arguments)
    return len(items), strings, 0


def _measure_frozen_walk(arguments: Any) -> tuple[int, int, int]:
    """``_measure_frozen`` for any frozen arguments, one container at a time."""
    entries = 0
    strings = 0
    deepest = 0
    stack: list[tuple[Any, int]] = [(arguments, 0)]
    while stack:
        container, depth = stack.pop()
        deepest = max(deepest, depth)
        entries += len(container)
        if type_of(container) is JsonObject:
            for key in container:
                strings += len(key) if key.isascii() else code_points(key)[0]
            values = container.values()
        else:
            values = container
        for value in values:
            value_type = type_of(value)
            if value_type is str:
                strings += len(value) if value.isascii() else code_points(value)[0]
            elif value_type is JsonObject or value_type is tuple:
                stack.append((value, depth + 1))
    return entries, strings, deepest


def _walk_frozen_argument_bounds(arguments: Any, limits: RunLimits) -> None:
    """The budgets for frozen arguments, walked one container at a time: keys are ``str``,
    numbers finite and nothing can be cyclic, so only sizes are counted."""
    nodes = 1
    entries = 0
    strings = 0
    stack: list[tuple[Any, int]] = [(arguments, 0)]
    while stack:
        container, depth = stack.pop()
        entries += len(container)
        nodes += len(container)
        if entries > limits.max_argument_entries:
            raise ModelProtocolError(
                f"Tool-call arguments exceed {limits.max_argument_entries} entries",
                limit_hint("max_argument_entries"),
            )
        if nodes > limits.max_argument_nodes:
            raise ModelProtocolError(
                f"Tool-call arguments exceed {limits.max_argument_nodes} JSON values",
                limit_hint("max_argument_nodes"),
            )
        if type_of(container) is JsonObject:
            for key in container:
                strings += len(key) if key.isascii() else code_points(key)[0]
            values = container.values()
        else:
            values = container
        for value in values:
            value_type = type_of(value)
            if value_type is str:
                strings += len(value) if value.isascii() else code_points(value)[0]
            elif value_type is JsonObject or value_type is tuple:
                if depth >= limits.max_argument_depth:
                    raise ModelProtocolError(
                        f"Tool-call arguments nest deeper than {limits.max_argument_depth}",
                        limit_hint("max_argument_depth"),
                    )
                stack.append((value, depth + 1))
        if strings > limits.max_argument_string_code_points:
            raise ModelProtocolError(
                "Tool-call arguments exceed "
                f"{limits.max_argument_string_code_points} string code points",
                limit_hint("max_argument_string_code_points"),
            )


# --- chunks ---------------------------------------------------------------------------------

_CHUNK_TYPES: Final = frozenset(get_args(ModelChunk))


def snapshot_chunk(item: object, active: str, limits: RunLimits) -> ModelChunk:
    """A streamed item as a protocol chunk of the active request (tool-call arguments within
    budget); mappings use the chunk's camelCase JSON form."""
    kind = type_of(item)
    try:
        if kind in _CHUNK_TYPES:
            chunk: ModelChunk = item  # pyright: ignore[reportAssignmentType]
        elif is_mapping(item):
            chunk = _chunk_from_mapping(item, limits)
        else:
            raise ModelProtocolError("Model chunk must be an object")
    except ModelProtocolError:
        raise
    except Exception as error:
        raise ModelProtocolError("Model chunk could not be inspected safely") from error
    if chunk.request_id != active:
        raise ModelProtocolError(f'Model chunk requestId must equal active request "{active}"')
    if chunk.type == "toolCall":
        check_argument_bounds(chunk.tool_call.arguments, limits)
        check_raw_argument_bounds(chunk.tool_call.raw_arguments, limits)
    return chunk


def _chunk_from_mapping(item: object, limits: RunLimits) -> ModelChunk:
    chunk_type = read_field(item, "type")
    if type_of(chunk_type) is not str:
        raise ModelProtocolError("Model chunk has an unsupported type")
    if chunk_type == "textDelta":
        request_id = read_field(item, "requestId")
        delta = read_field(item, "delta")
        if not is_non_empty(request_id) or type_of(delta) is not str:
            raise ModelProtocolError("Model text chunk is invalid")
        return TextDeltaChunk(request_id=request_id, delta=delta)
    if chunk_type == "toolCall":
        request_id = read_field(item, "requestId")
        raw_call = read_field(item, "toolCall")
        if not is_non_empty(request_id) or (
            type_of(raw_call) is not ToolCall and not is_mapping(raw_call)
        ):
            raise ModelProtocolError("Model Tool-call chunk is invalid")
        try:
            if type_of(raw_call) is not ToolCall:
                check_argument_bounds(read_field(raw_call, "arguments"), limits)
                check_raw_argument_bounds(read_field(raw_call, "rawArguments"), limits)
            block = assistant_message(id="chunk", content=[raw_call]).content[0]
        except ModelProtocolError:
            raise
        except Exception as error:
            raise ModelProtocolError("Model Tool-call chunk is invalid") from error
        assert block.type == "toolCall"
        return ToolCallChunk(request_id=request_id, tool_call=block)
    if chunk_type in ("thinkingDelta", "toolCallDelta"):
        if type_of(item) is not dict:
            item = dict(item)  # pyright: ignore[reportArgumentType, reportCallIssue]
        try:
            return from_json(item, ModelChunk)
        except ProtocolJsonError as error:
            raise ModelProtocolError(f"Model {chunk_type} chunk is invalid: {error}") from error
    raise ModelProtocolError("Model chunk has an unsupported type")


# --- the response ---------------------------------------------------------------------------


def snapshot_response(
    raw: object, active: str, checked: set[int], limits: RunLimits
) -> ModelResponse:
    """The terminal value as a protocol response of the active request, within bounds, whose
    stop reason agrees with its content. ``checked``: tool calls already checked as chunks."""
    try:
        if type_of(raw) is ModelResponse:
            response: ModelResponse = raw  # pyright: ignore[reportAssignmentType]
            check_assistant_bounds(response.message.content, limits, checked)
        elif is_mapping(raw):
            response = _response_from_mapping(raw, limits)
        else:
            raise ModelProtocolError("Model response must be an object")
    except ModelProtocolError:
        raise
    except Exception as error:
        raise ModelProtocolError(
            f"Model response is invalid: {message_of(error, 'could not be inspected')}"
        ) from error
    if response.request_id != active:
        raise ModelProtocolError(f'Model response requestId must equal active request "{active}"')
    # The blocks are exact protocol classes (the message's constructor admits no other).
    has_calls = ToolCall in map(type_of, response.message.content)
    if response.stop_reason == "stop" and has_calls:
        raise ModelProtocolError("A stop response must not contain Tool calls")
    if response.stop_reason == "toolCall" and not has_calls:
        raise ModelProtocolError("A toolCall response must contain at least one Tool call")
    return response


_USAGE_KEYS: Final = (
    ("input_tokens", "inputTokens"),
    ("output_tokens", "outputTokens"),
    ("cache_read_tokens", "cacheReadTokens"),
    ("cache_write_tokens", "cacheWriteTokens"),
)


def _response_from_mapping(raw: object, limits: RunLimits) -> ModelResponse:
    message = read_field(raw, "message")
    if type_of(message) is AssistantMessage:
        check_assistant_bounds(message.content, limits)
        assistant: AssistantMessage = message
    else:
        if not is_mapping(message) or read_field(message, "role") != "assistant":
            raise ModelProtocolError("Model response message must be an assistant message")
        content = read_field(message, "content")
        check_assistant_bounds(content, limits)
        assistant = assistant_message(id=read_field(message, "id"), content=content)
    usage = read_field(raw, "usage")
    if type_of(usage) is not ModelUsage:
        if not is_mapping(usage):
            raise ModelProtocolError("Model response usage must be an object")
        counts: dict[str, Any] = {}
        for name, key in _USAGE_KEYS:
            value = read_field(usage, key)
            if value is not MISSING or name in ("input_tokens", "output_tokens"):
                counts[name] = value
        usage = ModelUsage(**counts)
    model = read_field(raw, "model")
    return ModelResponse(
        id=read_field(raw, "id"),
        request_id=read_field(raw, "requestId"),
        message=assistant,
        stop_reason=read_field(raw, "stopReason"),
        usage=usage,
        model=None if model is MISSING else model,
    )


# --- agreement between the chunks and the final message --------------------------------------

AGREEMENT_KINDS: Final[dict[type, str]] = {
    TextDeltaChunk: "text",
    ThinkingDeltaChunk: "thinking",
    TextBlock: "text",
    ThinkingBlock: "thinking",
}
"""Streamed and final pieces whose text is coalesced and compared, by kind. Tool calls are
compared one for one; a redacted thinking block is never streamed and is not compared."""

_Segment: TypeAlias = "tuple[str, str] | ToolCall"


def _segments(pieces: Iterable[_Segment]) -> list[_Segment]:
    """Adjacent text of one kind coalesced into one segment; other pieces separate runs."""
    segments: list[_Segment] = []
    parts: list[str] = []
    current: str | None = None
    for piece in pieces:
        if isinstance(piece, tuple):
            kind, text = piece
            if kind == current:
                parts.append(text)
                continue
            if current is not None:
                segments.append((current, "".join(parts)))
            current, parts = kind, [text]
            continue
        if current is not None:
            segments.append((current, "".join(parts)))
            current = None
        segments.append(piece)
    if current is not None:
        segments.append((current, "".join(parts)))
    return segments


def _streamed_pieces(chunks: Sequence[ModelChunk]) -> Iterable[tuple[str, str] | ToolCall]:
    for chunk in chunks:
        if chunk.type == "toolCall":
            yield chunk.tool_call
        elif chunk.type == "textDelta" or chunk.type == "thinkingDelta":
            yield (AGREEMENT_KINDS[type(chunk)], chunk.delta)


def _final_pieces(content: Sequence[AssistantBlock]) -> Iterable[tuple[str, str] | ToolCall]:
    for block in content:
        if block.type == "toolCall":
            yield block
        elif block.type == "thinking" and block.redacted:
            continue
        else:
            yield (AGREEMENT_KINDS[type(block)], block.text)


def check_agreement(chunks: Sequence[ModelChunk], message: AssistantMessage) -> None:
    """Everything in the final message must have been streamed, in the same order.

    ``chunks`` holds the run's accepted text, thinking and tool-call chunks (tool-call deltas
    are progress and are left out by the caller).
    """
    if _streamed_verbatim(chunks, message.content):
        return
    streamed = _segments(_streamed_pieces(chunks))
    final = _segments(_final_pieces(message.content))
    if len(streamed) != len(final):
        raise ModelProtocolError("Streamed chunks do not match the final message")
    for left, right in zip(streamed, final, strict=True):
        if type_of(left) is not type_of(right):
            raise ModelProtocolError("Streamed chunk order does not match the final message")
        if isinstance(left, tuple) and isinstance(right, tuple):
            left_kind, left_text = left
            right_kind, right_text = right
            if left_kind != right_kind:
                raise ModelProtocolError("Streamed chunk order does not match the final message")
            if joined(left_text) != joined(right_text):
                noun = "text" if left_kind == "text" else "thinking"
                raise ModelProtocolError(f"Streamed {noun} does not match the final message")
        elif isinstance(left, ToolCall) and isinstance(right, ToolCall):
            if not _same_call(left, right):
                raise ModelProtocolError("Streamed Tool call does not match the final message")
        else:  # pragma: no cover - the type check above already compared the kinds
            raise ModelProtocolError("Streamed Tool call does not match the final message")


def _streamed_verbatim(chunks: Sequence[ModelChunk], content: tuple[AssistantBlock, ...]) -> bool:
    """True when each block is exactly one chunk: the same tool-call object, or a text block
    whose text is the delta. Such a turn agrees without coalescing anything."""
    if len(chunks) != len(content):
        return False
    for chunk, block in zip(chunks, content, strict=True):
        if chunk.type == "toolCall":
            if chunk.tool_call is not block:
                return False
        elif chunk.type == "textDelta":
            if block.type != "text" or block.text != chunk.delta:
                return False
        else:
            return False
    return True


def joined(text: str) -> str:
    """Join surrogate halves written as two code points into one character."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "surrogatepass")
    return text


def _same_call(left: ToolCall, right: ToolCall) -> bool:
    if left is right:
        return True
    return (
        left.id == right.id
        and left.name == right.name
        and left.raw_arguments == right.raw_arguments
        and _same_json(left.arguments, right.arguments)
    )


def _same_json(left: object, right: object) -> bool:
    """Deep JSON equality where ``True`` is not ``1`` and ``0.0`` is not ``-0.0``."""
    left_type = type_of(left)
    if left_type is not type_of(right) and not (
        left_type in (int, float) and type_of(right) in (int, float)
    ):
        return False
    if left_type is JsonObject:
        left_map: JsonObject = left  # pyright: ignore[reportAssignmentType]
        right_map: JsonObject = right  # pyright: ignore[reportAssignmentType]
        return left_map.keys() == right_map.keys() and all(
            _same_json(value, right_map[key]) for key, value in left_map.items()
        )
    if left_type is tuple:
        left_items: tuple[object, ...] = left  # pyright: ignore[reportAssignmentType]
        right_items: tuple[object, ...] = right  # pyright: ignore[reportAssignmentType]
        return len(left_items) == len(right_items) and all(
            _same_json(a, b) for a, b in zip(left_items, right_items, strict=True)
        )
    if left_type is float or type_of(right) is float:
        return left == right and math.copysign(1, left) == math.copysign(1, right)  # pyright: ignore[reportArgumentType]
    return left == right
