"""The deterministic size of a context in units (the weights are in the package docstring).

These count values that are already valid; nothing here checks anything."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tether._text import code_points
from tether._types import type_of
from tether.protocol import MAX_SAFE_INTEGER, AssistantBlock, Message, assert_never

if TYPE_CHECKING:
    from tether.agent.compaction._context import ActiveContext
    from tether.agent.compaction._records import ContextRequirement
    from tether.jsonvalue import JsonValue


def cp(text: str) -> int:
    return code_points(text)[0]


def context_units(context: ActiveContext) -> int:
    units = requirements_units(context.requirements)
    if context.summary is not None:
        units += 5 + cp(context.summary.id) + cp(context.summary.content)
    for message in context.messages:
        units += message_units(message)
    return units


def requirements_units(requirements: tuple[ContextRequirement, ...]) -> int:
    return sum(3 + cp(requirement.id) + cp(requirement.content) for requirement in requirements)


def message_units(message: Message) -> int:
    """The units of one protocol message, by the rules in the package docstring, with no
    checks at all: for a caller that already holds valid messages and counts a part of a
    transcript (a part need not be a valid transcript on its own, so
    ``estimate_context_units`` would refuse it)."""
    if message.role == "user":
        return 4 + cp(message.id) + cp(message.content)
    if message.role == "assistant":
        return 4 + cp(message.id) + sum(_block_units(block) for block in message.content)
    if message.role != "toolResult":
        assert_never(message)
    return (
        7 + cp(message.id) + cp(message.tool_call_id) + cp(message.tool_name) + cp(message.content)
    )


def _block_units(block: AssistantBlock) -> int:
    if block.type == "text":
        return 2 + cp(block.text)
    if block.type == "thinking":
        return 2 + cp(block.text)
    if block.type != "toolCall":
        assert_never(block)
    raw = block.raw_arguments
    raw_units = 0 if raw is None else 1 + cp(raw)
    return 6 + cp(block.id) + cp(block.name) + _json_units(block.arguments) + raw_units


def _json_units(value: JsonValue) -> int:
    # A frozen JSON value holds exact built-in types only (``freeze_json`` made it), so
    # ``isinstance`` is the exact check here, and it narrows every branch.
    if value is None:
        return 1
    if isinstance(value, str):
        return 1 + cp(value)
    if isinstance(value, bool):  # before int: bool is an int subclass
        return 5 if value else 6
    if isinstance(value, int | float):
        return 1 + len(_js_number_text(value))
    if isinstance(value, tuple):
        return 2 + sum(1 + _json_units(item) for item in value)
    # The workshop sums over sorted keys; a sum does not depend on the order.
    return 2 + sum(1 + cp(key) + _json_units(item) for key, item in value.items())


def _js_number_text(value: int | float) -> str:
    """JavaScript's ``String(n)`` for a finite number (a safe ``int`` exactly; anything else
    as the double it would be in JavaScript: ``1.0 -> "1"``, ``1e21 -> "1e+21"``)."""
    if type_of(value) is int and -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
        return str(value)
    number = float(value)
    if number == 0:
        return "0"
    sign = "-" if number < 0 else ""
    text = repr(abs(number))  # the shortest round-trip digits, as JavaScript chooses them
    mantissa, _, exponent = text.partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = whole + fraction
    point = len(whole) + (int(exponent) if exponent else 0)
    stripped = digits.lstrip("0")
    point -= len(digits) - len(stripped)
    digits = stripped.rstrip("0")
    k = len(digits)
    n = point
    if k <= n <= 21:
        body = digits + "0" * (n - k)
    elif 0 < n <= 21:
        body = f"{digits[:n]}.{digits[n:]}"
    elif -6 < n <= 0:
        body = "0." + "0" * -n + digits
    else:
        power = n - 1
        mark = "+" if power >= 0 else "-"
        head = digits if k == 1 else f"{digits[0]}.{digits[1:]}"
        body = f"{head}e{mark}{abs(power)}"
    return sign + body
