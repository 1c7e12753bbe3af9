"""Reading untrusted context input: every value is checked against the limits and copied into
tether's frozen classes, spending a budget of collection items and string code points as it
goes, so hostile input is refused before it is inspected in full. Only exact classes are read
(a subclass could run caller code); every failure is a ``ContextCompactionError``."""

from __future__ import annotations

from typing import Final, TypeGuard, TypeVar, cast

from tether._base.exact_types import exactly, is_dict, type_of
from tether._base.strings import is_non_empty
from tether.agent.compaction._errors import ContextCompactionError, fail
from tether.agent.compaction._limits import ContextLimits
from tether.agent.compaction._records import (
    ContextCompactionRecord,
    ContextRequirement,
    ContextSummary,
)
from tether.agent.compaction._units import cp, message_units, requirements_units
from tether.jsonvalue import JsonObject, freeze_json_object, is_json_object
from tether.protocol import (
    MAX_SAFE_INTEGER,
    AssistantBlock,
    AssistantMessage,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from tether.protocol._decoder import Layer, Problem, Rest
from tether.protocol.codec import problem_text
from tether.protocol.transcript import validate_transcript


class Budget:
    """What the input spent so far (collection items and string code points), and the
    limits it is checked against."""

    __slots__ = ("items", "limits", "max_depth", "max_items", "max_string", "max_total", "units")

    def __init__(self, limits: ContextLimits) -> None:
        self.items = 0
        self.units = 0
        self.limits = limits
        self.max_depth = limits.max_depth
        self.max_items = limits.max_collection_items
        self.max_string = limits.max_string_units
        self.max_total = limits.max_total_units

    def add_items(self, count: int) -> None:
        self.items += count
        if self.items > self.max_items:
            fail("CONTEXT_LIMIT_EXCEEDED", f"Context exceeds {self.max_items} collection items")

    def text(self, value: object, path: str) -> str:
        """``value`` as a bounded string; counts its code points. Not a string: invalid."""
        if not exactly(value, str):
            fail("CONTEXT_INVALID_INPUT", f"{path} must be a string")
        text = value
        size = cp(text)
        if size > self.max_string:
            fail("CONTEXT_LIMIT_EXCEEDED", f"{path} exceeds {self.max_string} code points")
        self.units += size
        if self.units > self.max_total:
            fail(
                "CONTEXT_LIMIT_EXCEEDED",
                f"Context input exceeds {self.max_total} string code points",
            )
        return text

    def name(self, value: object, path: str) -> str:
        """A bounded, non-blank string (an ID or a name)."""
        text = self.text(value, path)
        if not is_non_empty(text):
            fail("CONTEXT_INVALID_INPUT", f"{path} must be a non-empty string")
        return text


_MISSING: Final = object()
_T = TypeVar("_T")


def _exact(value: object, cls: type[_T]) -> _T | None:
    """``value`` when it is exactly a ``cls`` (never a subclass), else ``None``."""
    return value if exactly(value, cls) else None


def _uninspectable() -> ContextCompactionError:
    return ContextCompactionError("CONTEXT_INVALID_INPUT", "Context could not be inspected safely")


def record_fields(value: object, path: str) -> dict[str, object]:
    """An exact ``dict`` whose keys are all exact strings (so no lookup runs caller code)."""
    if not _is_dict(value):
        fail("CONTEXT_INVALID_INPUT", f"{path} must be an object")
    if not _string_keyed(value):
        fail("CONTEXT_INVALID_INPUT", f"{path} keys must be strings")
    return value


def _is_dict(value: object) -> TypeGuard[dict[object, object]]:
    """Whether ``value`` is exactly a ``dict`` (its keys and values not yet read)."""
    return type_of(value) is dict


def _is_array(value: object) -> TypeGuard[list[object] | tuple[object, ...]]:
    """Whether ``value`` is exactly a ``list`` or a ``tuple`` (its items not yet read)."""
    kind = type_of(value)
    return kind is list or kind is tuple


def _is_container(
    value: object,
) -> TypeGuard[dict[object, object] | JsonObject | list[object] | tuple[object, ...]]:
    """Whether ``value`` is exactly a ``dict``, ``JsonObject``, ``list`` or ``tuple``."""
    kind = type_of(value)
    return kind is dict or kind is JsonObject or kind is list or kind is tuple


def _string_keyed(record: dict[object, object]) -> TypeGuard[dict[str, object]]:
    """Whether every key of ``record`` is exactly a ``str`` (so no lookup runs caller code)."""
    return all(type_of(key) is str for key in record)


def _required(record: dict[str, object], key: str, path: str) -> object:
    value = record.get(key, _MISSING)
    if value is _MISSING:
        fail("CONTEXT_INVALID_INPUT", f"{path}.{key} is required")
    return value


def _array(value: object, path: str, limit: int) -> tuple[object, ...]:
    if not _is_array(value):
        fail("CONTEXT_INVALID_INPUT", f"{path} must be a list or tuple")
    items = tuple(value)
    if len(items) > limit:
        fail("CONTEXT_LIMIT_EXCEEDED", f"{path} exceeds its {limit}-item limit")
    return items


def _counted_array(value: object, path: str, limit: int, budget: Budget) -> tuple[object, ...]:
    """``_array``, its items counted in ``budget``."""
    items = _array(value, path, limit)
    budget.add_items(len(items))
    return items


def _each(value: object, what: str, limit: int, budget: Budget) -> list[tuple[str, object]]:
    """The items of the array ``value`` (``_counted_array``), each with its path."""
    items = _counted_array(value, what, limit, budget)
    return [(f"{what}[{index}]", item) for index, item in enumerate(items)]


def snapshot_context(
    requirements: object,
    summary: object,
    messages: object,
    compactions: object,
    limits: ContextLimits,
) -> tuple[
    tuple[ContextRequirement, ...],
    ContextSummary | None,
    tuple[Message, ...],
    tuple[ContextCompactionRecord, ...],
]:
    try:
        budget = Budget(limits)
        snapshot = (
            _snapshot_requirements(requirements, budget),
            _snapshot_summary(summary, budget),
            snapshot_messages(messages, budget),
            _snapshot_records(compactions, budget),
        )
        units = requirements_units(snapshot[0])
        if snapshot[1] is not None:
            units += 5 + cp(snapshot[1].id) + cp(snapshot[1].content)
        units += sum(message_units(message) for message in snapshot[2])
        if units > limits.max_total_units:
            fail(
                "CONTEXT_LIMIT_EXCEEDED", f"Context must not exceed {limits.max_total_units} units"
            )
        return snapshot
    except ContextCompactionError:
        raise
    except Exception as error:
        raise _uninspectable() from error


_IdAndContent = TypeVar("_IdAndContent", ContextRequirement, ContextSummary)


def _id_and_content(
    value: object, cls: type[_IdAndContent], path: str
) -> tuple[_IdAndContent | None, object, object]:
    """An exact ``cls`` value (then its fields), or the ``id`` and ``content`` of a record
    (unchecked: the caller budgets and checks them)."""
    given = _exact(value, cls)
    if given is not None:
        return given, given.id, given.content
    record = record_fields(value, path)
    return None, _required(record, "id", path), _required(record, "content", path)


def _snapshot_requirements(value: object, budget: Budget) -> tuple[ContextRequirement, ...]:
    limit = budget.limits.max_requirements
    seen: set[str] = set()
    requirements: list[ContextRequirement] = []
    for path, entry in _each(value, "Context requirements", limit, budget):
        given, raw_id, raw_content = _id_and_content(entry, ContextRequirement, path)
        requirement_id = budget.name(raw_id, f"{path}.id")
        content = budget.name(raw_content, f"{path}.content")
        if requirement_id in seen:
            fail(
                "CONTEXT_INVALID_INPUT", f'Context requirement ID "{requirement_id}" is duplicated'
            )
        seen.add(requirement_id)
        requirements.append(
            given if given is not None else ContextRequirement(id=requirement_id, content=content)
        )
    return tuple(requirements)


def _snapshot_summary(value: object, budget: Budget) -> ContextSummary | None:
    if value is None:
        return None
    path = "Context summary"
    given, raw_id, raw_content = _id_and_content(value, ContextSummary, path)
    summary_id = budget.name(raw_id, f"{path}.id")
    content = budget.text(raw_content, f"{path}.content")
    if not is_non_empty(content):
        fail("CONTEXT_SUMMARY_INVALID", "Context summary content must not be blank")
    return given if given is not None else ContextSummary(id=summary_id, content=content)


def _snapshot_records(value: object, budget: Budget) -> tuple[ContextCompactionRecord, ...]:
    seen: set[str] = set()
    records: list[ContextCompactionRecord] = []
    for path, entry in _each(value, "Context compactions", budget.limits.max_records, budget):
        given = _exact(entry, ContextCompactionRecord)
        if given is not None:
            raw = (
                given.id,
                given.summary_id,
                given.boundary,
                given.compacted_message_ids,
                given.units_before,
                given.units_after,
            )
        else:
            record = record_fields(entry, path)
            raw = tuple(_required(record, key, path) for key in _RECORD_KEYS)
        record_id = budget.name(raw[0], f"{path}.id")
        summary_id = budget.name(raw[1], f"{path}.summaryId")
        boundary = _record_integer(raw[2], f"{path}.boundary", 1)
        ids_path = f"{path}.compactedMessageIds"
        id_values = _counted_array(raw[3], ids_path, budget.limits.max_messages, budget)
        if not id_values or len(id_values) != boundary:
            fail("CONTEXT_INVALID_INPUT", f"{ids_path} must hold exactly boundary message IDs")
        message_ids = tuple(
            budget.name(item, f"{ids_path}[{position}]") for position, item in enumerate(id_values)
        )
        units_before = _record_integer(raw[4], f"{path}.unitsBefore", 0)
        units_after = _record_integer(raw[5], f"{path}.unitsAfter", 0)
        if record_id in seen:
            fail("CONTEXT_INVALID_INPUT", f'Context compaction ID "{record_id}" is duplicated')
        seen.add(record_id)
        if given is None or type_of(given.compacted_message_ids) is not tuple:
            given = ContextCompactionRecord(
                id=record_id,
                summary_id=summary_id,
                boundary=boundary,
                compacted_message_ids=message_ids,
                units_before=units_before,
                units_after=units_after,
            )
        records.append(given)
    return tuple(records)


_RECORD_KEYS: Final = (
    "id",
    "summaryId",
    "boundary",
    "compactedMessageIds",
    "unitsBefore",
    "unitsAfter",
)


def _record_integer(value: object, path: str, minimum: int) -> int:
    if not (exactly(value, int) and minimum <= value <= MAX_SAFE_INTEGER):
        fail("CONTEXT_INVALID_INPUT", f"{path} must be a safe integer >= {minimum}")
    return value


def snapshot_messages(value: object, budget: Budget) -> tuple[Message, ...]:
    """Snapshot and validate a transcript; every problem is ``CONTEXT_INVALID_TRANSCRIPT``
    except ``CONTEXT_LIMIT_EXCEEDED``."""
    try:
        entries = _counted_array(value, "Context messages", budget.limits.max_messages, budget)
        messages = tuple(
            _snapshot_message(entry, index, budget) for index, entry in enumerate(entries)
        )
        check_transcript(messages)
        return messages
    except ContextCompactionError as error:
        if error.code in ("CONTEXT_LIMIT_EXCEEDED", "CONTEXT_INVALID_TRANSCRIPT"):
            raise
        raise ContextCompactionError("CONTEXT_INVALID_TRANSCRIPT", error.message) from error
    except Exception as error:
        raise ContextCompactionError(
            "CONTEXT_INVALID_TRANSCRIPT", "Context messages could not be inspected safely"
        ) from error


def check_transcript(messages: tuple[Message, ...]) -> None:
    problems = validate_transcript(messages)
    if problems:
        first = problems[0]
        fail(
            "CONTEXT_INVALID_TRANSCRIPT",
            f"Context transcript is invalid: {first.code} at message {first.message_index}"
            f" ({first.message})",
        )


def _transcript_error(path: str, problem: Problem) -> ContextCompactionError:
    code = "CONTEXT_LIMIT_EXCEEDED" if problem.kind.startswith("too_") else None
    return ContextCompactionError(
        code or "CONTEXT_INVALID_TRANSCRIPT", f"{path}: {problem_text(problem)}"
    )


_LAYER: Final = Layer(name="compaction", fail=_transcript_error)
"""Compaction's configuration of the one decoder, for the fields ``_with_rest`` reads."""

_HANDLED: Final[dict[type, frozenset[str]]] = {
    UserMessage: frozenset({"id", "role", "content"}),
    AssistantMessage: frozenset({"id", "role", "content"}),
    ToolResultMessage: frozenset({"id", "role", "toolCallId", "toolName", "content", "isError"}),
    TextBlock: frozenset({"type", "text"}),
    ThinkingBlock: frozenset({"type", "text", "signature", "redacted"}),
    ToolCall: frozenset({"type", "id", "name", "arguments", "rawArguments"}),
}
"""The JSON keys this module reads and budgets itself, by class; every other field (a tool
result's ``errorCode``, a text block's or call's ``signature``, any field added later) comes
from the one decoder, its strings and items spent from the same budget."""
_RESTS: dict[type, Rest] = {}
_Value = TypeVar("_Value", bound=object)


def _with_rest(value: _Value, record: dict[str, object], path: str, budget: Budget) -> _Value:
    """``value`` with the other fields of ``record`` (see ``_HANDLED``), within the budget."""
    kind = type(value)
    rest = _RESTS.get(kind)
    if rest is None:
        rest = _RESTS[kind] = Rest(kind, _HANDLED[kind], _LAYER)
    for key, _, _ in rest.fields:
        item = record.get(key)
        if type_of(item) is str:
            budget.text(item, f"{path}.{key}")
        elif type_of(item) is list or type_of(item) is tuple:
            budget.add_items(len(cast("list[object]", item)))
    try:
        return rest.onto(value, lambda key: record.get(key, _MISSING), _MISSING, path)
    except (TypeError, ValueError) as error:
        raise ContextCompactionError("CONTEXT_INVALID_TRANSCRIPT", f"{path}: {error}") from None


def _snapshot_message(value: object, index: int, budget: Budget) -> Message:
    path = f"Context messages[{index}]"
    if exactly(value, UserMessage):
        user = value
        budget.name(user.id, f"{path}.id")
        budget.text(user.content, f"{path}.content")
        return user
    if exactly(value, AssistantMessage):
        assistant = value
        budget.name(assistant.id, f"{path}.id")
        blocks = _counted_array(assistant.content, f"{path}.content", budget.max_items, budget)
        for position, block in enumerate(blocks):
            _snapshot_block(block, f"{path}.content[{position}]", budget)
        return assistant
    if exactly(value, ToolResultMessage):
        result = value
        budget.name(result.id, f"{path}.id")
        budget.name(result.tool_call_id, f"{path}.toolCallId")
        budget.name(result.tool_name, f"{path}.toolName")
        budget.text(result.content, f"{path}.content")
        if type_of(result.is_error) is not bool:
            fail("CONTEXT_INVALID_TRANSCRIPT", f"{path}.isError must be a boolean")
        return result
    record = record_fields(value, path)
    role = _required(record, "role", path)
    message_id = budget.name(_required(record, "id", path), f"{path}.id")
    if type_of(role) is str and role == "user":
        content = budget.text(_required(record, "content", path), f"{path}.content")
        return _with_rest(UserMessage(id=message_id, content=content), record, path, budget)
    if type_of(role) is str and role == "assistant":
        raw_content = _required(record, "content", path)
        raw_blocks = _counted_array(raw_content, f"{path}.content", budget.max_items, budget)
        assistant = AssistantMessage(
            id=message_id,
            content=tuple(
                _snapshot_block(block, f"{path}.content[{position}]", budget)
                for position, block in enumerate(raw_blocks)
            ),
        )
        return _with_rest(assistant, record, path, budget)
    if type_of(role) is str and role == "toolResult":
        call_id = budget.name(_required(record, "toolCallId", path), f"{path}.toolCallId")
        name = budget.name(_required(record, "toolName", path), f"{path}.toolName")
        content = budget.text(_required(record, "content", path), f"{path}.content")
        is_error = _required(record, "isError", path)
        if not exactly(is_error, bool):
            fail("CONTEXT_INVALID_TRANSCRIPT", f"{path}.isError must be a boolean")
        result = ToolResultMessage(
            id=message_id,
            tool_call_id=call_id,
            tool_name=name,
            content=content,
            is_error=is_error,
        )
        return _with_rest(result, record, path, budget)
    raise ContextCompactionError(
        "CONTEXT_INVALID_TRANSCRIPT", f'{path}.role must be "user", "assistant" or "toolResult"'
    )


def _snapshot_block(value: object, path: str, budget: Budget) -> AssistantBlock:
    if exactly(value, TextBlock):
        text_block = value
        budget.text(text_block.text, f"{path}.text")
        return text_block
    if exactly(value, ThinkingBlock):
        thinking = value
        budget.text(thinking.text, f"{path}.text")
        if thinking.signature is not None:
            budget.text(thinking.signature, f"{path}.signature")
        return thinking
    if exactly(value, ToolCall):
        call = value
        budget.name(call.id, f"{path}.id")
        budget.name(call.name, f"{path}.name")
        _check_json(call.arguments, 0, f"{path}.arguments", budget, set())
        if call.raw_arguments is not None:
            budget.text(call.raw_arguments, f"{path}.rawArguments")
        return call
    record = record_fields(value, path)
    block_type = _required(record, "type", path)
    if type_of(block_type) is str and block_type == "text":
        text_block = TextBlock(text=budget.text(_required(record, "text", path), f"{path}.text"))
        return _with_rest(text_block, record, path, budget)
    if type_of(block_type) is str and block_type == "thinking":
        text = budget.text(_required(record, "text", path), f"{path}.text")
        signature = record.get("signature")
        if signature is not None:
            signature = budget.text(signature, f"{path}.signature")
        redacted = record.get("redacted", False)
        if not exactly(redacted, bool):
            fail("CONTEXT_INVALID_TRANSCRIPT", f"{path}.redacted must be a boolean")
        thinking = ThinkingBlock(text=text, signature=signature, redacted=redacted)
        return _with_rest(thinking, record, path, budget)
    if type_of(block_type) is str and block_type == "toolCall":
        call_id = budget.name(_required(record, "id", path), f"{path}.id")
        name = budget.name(_required(record, "name", path), f"{path}.name")
        arguments = _required(record, "arguments", path)
        if not is_dict(arguments) and not is_json_object(arguments):
            fail("CONTEXT_INVALID_TRANSCRIPT", f"{path}.arguments must be a JSON object")
        _check_json(arguments, 0, f"{path}.arguments", budget, set())
        raw = record.get("rawArguments")
        if raw is not None:
            raw = budget.text(raw, f"{path}.rawArguments")
        # ``arguments`` is an exact dict or JsonObject whose JSON was checked just above, so
        # freezing it (what ToolCall would do with a dict) cannot fail.
        if not is_json_object(arguments):
            arguments = freeze_json_object(arguments, path=f"{path}.arguments")
        try:
            # ``arguments`` is an exact dict or JsonObject whose JSON was checked just above;
            # ToolCall takes a dict as its JSON form and freezes it (a ValueError otherwise).
            call = ToolCall(id=call_id, name=name, arguments=arguments, raw_arguments=raw)
        except ValueError as error:
            fail("CONTEXT_INVALID_TRANSCRIPT", f"{path}: {error}")
        return _with_rest(call, record, path, budget)
    raise ContextCompactionError(
        "CONTEXT_INVALID_TRANSCRIPT", f'{path}.type must be "text", "thinking" or "toolCall"'
    )


_MAX_FLOAT: Final = float.fromhex("0x1.fffffffffffffp+1023")


def _check_json(value: object, depth: int, path: str, budget: Budget, active: set[int]) -> None:
    """Check a JSON value within the budget: depth first, then cycles, then its items."""
    if depth > budget.max_depth:
        fail("CONTEXT_LIMIT_EXCEEDED", f"{path} is nested deeper than {budget.max_depth}")
    kind = type_of(value)
    if value is None or kind is bool:
        return
    if kind is str:
        budget.text(value, path)
        return
    if exactly(value, int):
        if not -_MAX_FLOAT <= value <= _MAX_FLOAT:
            fail("CONTEXT_INVALID_TRANSCRIPT", f"{path} is not a finite JSON number")
        return
    if exactly(value, float):
        if not -_MAX_FLOAT <= value <= _MAX_FLOAT:
            fail("CONTEXT_INVALID_TRANSCRIPT", f"{path} is not a finite JSON number")
        return
    if not _is_container(value):
        fail("CONTEXT_INVALID_TRANSCRIPT", f"{path} is not a JSON value")
    marker = id(value)
    if marker in active:
        fail("CONTEXT_INVALID_TRANSCRIPT", f"{path} must not be circular")
    active.add(marker)
    try:
        if isinstance(value, list | tuple):  # its class is exact (above): isinstance narrows
            items = tuple(value)
            budget.add_items(len(items))
            for position, item in enumerate(items):
                _check_json(item, depth + 1, f"{path}[{position}]", budget, active)
            return
        budget.add_items(len(value))
        pairs: list[tuple[object, object]] = list(value.items())
        named: list[tuple[str, object]] = []
        for key, item in pairs:  # every key first: no lookup below may run caller code
            if not exactly(key, str):
                fail("CONTEXT_INVALID_TRANSCRIPT", f"{path} keys must be strings")
            named.append((key, item))
        for name, item in named:
            budget.text(name, f"{path} key")
            _check_json(item, depth + 1, f"{path}.{name}", budget, active)
    finally:
        active.discard(marker)
