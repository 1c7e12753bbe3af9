"""The ``RunLimits`` bounds on what a model sends: an assistant message's text and calls,
and tool-call arguments (raw text, and the parsed JSON's size, depth and items)."""

from __future__ import annotations

import math
from typing import Any

from tether._base.exact_types import exactly, is_array, type_of
from tether._base.strings import code_points
from tether.jsonvalue import JsonObject, cached_size, entries, store_size
from tether.loop.checks._failures import ModelProtocolError, limit_hint
from tether.models.limits import RunLimits
from tether.protocol import (
    TextBlock,
    ThinkingBlock,
    ToolCall,
)
from tether.protocol.transcript._reading import is_mapping, read_field

# --- bounds ---------------------------------------------------------------------------------


def check_assistant_bounds(
    content: object, limits: RunLimits, checked: set[int] | None = None
) -> None:
    """Block count, text per message and tool-argument budgets, before materializing.

    ``checked`` holds the identities of tool calls whose arguments were already checked
    (streamed chunks carrying the very same immutable object).
    """
    if not is_array(content):
        return  # the constructor reports the shape
    blocks: tuple[Any, ...] = tuple(content)
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
    if exactly(raw, str):
        text: str = raw
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
    _walk_frozen(arguments, limits)
    raise AssertionError("unreachable: the walk reports the exceeded budget")  # pragma: no cover


def _measure_frozen(arguments: Any) -> tuple[int, int, int]:
    """``(entries, string code points, deepest container depth)`` of frozen arguments.

    Flat arguments (no nested object or array: the common call) are measured in one pass
    over their items, with no stack; the first nested container hands the whole measure to
    ``_walk_frozen``. Why: a model that builds fresh arguments every turn (a real
    one, a scripted factory) pays this once per call, and the walk's set-up cost more than
    the measure. ``tests/loop/test_fast_paths.py`` checks both on any JSON object.
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
            return _walk_frozen(arguments)
    return len(items), strings, 0


def _walk_frozen(arguments: Any, limits: RunLimits | None = None) -> tuple[int, int, int]:
    """``(entries, string code points, deepest container depth)`` of any frozen arguments,
    one container at a time. With ``limits``, the first budget exceeded raises as it is
    reached (keys are ``str``, numbers finite and nothing can be cyclic, so only sizes are
    counted; a container and its entries are the values, ``entries + 1`` nodes)."""
    entries = 0
    strings = 0
    deepest = 0
    stack: list[tuple[Any, int]] = [(arguments, 0)]
    while stack:
        container, depth = stack.pop()
        deepest = max(deepest, depth)
        entries += len(container)
        if limits is not None:
            if entries > limits.max_argument_entries:
                raise ModelProtocolError(
                    f"Tool-call arguments exceed {limits.max_argument_entries} entries",
                    limit_hint("max_argument_entries"),
                )
            if entries + 1 > limits.max_argument_nodes:
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
                if limits is not None and depth >= limits.max_argument_depth:
                    raise ModelProtocolError(
                        f"Tool-call arguments nest deeper than {limits.max_argument_depth}",
                        limit_hint("max_argument_depth"),
                    )
                stack.append((value, depth + 1))
        if limits is not None and strings > limits.max_argument_string_code_points:
            raise ModelProtocolError(
                "Tool-call arguments exceed "
                f"{limits.max_argument_string_code_points} string code points",
                limit_hint("max_argument_string_code_points"),
            )
    return entries, strings, deepest
