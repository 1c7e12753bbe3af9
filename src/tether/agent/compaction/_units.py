"""The deterministic size of a context in units (the weights are in the package docstring).

These count values that are already valid; nothing here checks anything."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from tether._base.strings import code_points
from tether.jsonvalue import js_number_text
from tether.protocol import AssistantBlock, ImageBlock, Message, assert_never

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
        return 4 + cp(message.id) + cp(message.content) + _images_units(message.images)
    if message.role == "assistant":
        return 4 + cp(message.id) + sum(_block_units(block) for block in message.content)
    if message.role != "toolResult":
        assert_never(message)
    return (
        7
        + cp(message.id)
        + cp(message.tool_call_id)
        + cp(message.tool_name)
        + cp(message.content)
        + _images_units(message.images)
    )


_IMAGE_TOKENS_MAX: Final = 1600
"""Anthropic's most tokens for one image: it scales an image to at most 1568 px a side."""


def _images_units(images: tuple[ImageBlock, ...]) -> int:
    """Images as the tokens a model reads them as (Anthropic's ``width * height / 750``, at
    most ``_IMAGE_TOKENS_MAX``), four units a token."""
    return sum(
        4 * min(-(-image.width * image.height // 750), _IMAGE_TOKENS_MAX) for image in images
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
        return 1 + len(js_number_text(value))
    if isinstance(value, tuple):
        return 2 + sum(1 + _json_units(item) for item in value)
    # The workshop sums over sorted keys; a sum does not depend on the order.
    return 2 + sum(1 + cp(key) + _json_units(item) for key, item in value.items())
