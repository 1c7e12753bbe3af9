"""Tool output that carries images: ``ToolReturn``, and how the contract reads it.

A tool returns what the model should read. Most return text (an exact ``str``, sent as it is)
or JSON-able data (serialized by the bounded serializer), and that is unchanged. A tool that
has an image to show (a screenshot, a plot, ``read_file`` on a PNG) returns one of:

* an ``ImageBlock`` on its own: the result's ``images`` is that image, its text empty;
* a ``ToolReturn(value=..., images=...)``: ``value`` becomes the result's text exactly as a
  plain return would (a ``str`` verbatim, anything else through the serializer, capped at
  the tool's ``output_limit``) and ``images`` its images, in order (pydantic-ai's
  ``ToolReturn``; Pi's ``{content: [text, image]}``);
* a ``list`` or ``tuple`` of ``str`` and ``ImageBlock`` items with at least one image (as a
  pydantic-ai tool returns ``["caption", BinaryContent(...)]``): the strings joined with
  newlines are the text, the images the images.

The images go into ``ToolResultMessage.images`` beside ``content``; each was checked when it
was built (``ImageBlock``: type, dimensions, ``MAX_IMAGE_BYTES``, ``MAX_IMAGE_SIDE``). At most
``MAX_IMAGES_PER_REQUEST`` images per result: more is ``TOOL_OUTPUT_SERIALIZATION_FAILED``.
An ``ImageBlock`` anywhere else (inside a ``dict``, nested lists) is not JSON and fails the
serializer the same way. An error result never carries images.

::

    @tool
    async def screenshot(url: str) -> ToolReturn:
        \"\"\"Take a screenshot of a page.\"\"\"
        png = await browser.screenshot(url)
        return ToolReturn(value=f"Screenshot of {url}", images=[ImageBlock.from_bytes(png)])
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final, cast

from tether._base.dataclass import dataclass
from tether._base.exact_types import type_of
from tether.protocol import MAX_IMAGES_PER_REQUEST, ImageBlock

__all__ = ["ToolReturn", "split_tool_output"]

_NO_IMAGES: Final[tuple[ImageBlock, ...]] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolReturn:
    """What a tool returns to send images with its text (see the module docstring).

    ``value`` is the text part: a ``str`` (sent as it is) or JSON-able data (serialized),
    ``""`` by default. ``images`` is a sequence of ``ImageBlock``, stored as a tuple;
    anything else in it is a ``TypeError`` naming the field.
    """

    value: object = ""
    images: Sequence[ImageBlock] = ()

    def __post_init__(self) -> None:
        images = cast(object, self.images)  # checked here: a caller may pass anything
        if type(images) is not tuple:
            if type(images) in (str, bytes) or not isinstance(images, Iterable):
                raise TypeError("ToolReturn.images must be a sequence of ImageBlock")
            images = tuple(cast("Iterable[object]", images))
            object.__setattr__(self, "images", images)
        for image in cast("tuple[object, ...]", images):
            if type(image) is not ImageBlock:
                raise TypeError(
                    f"ToolReturn.images must hold ImageBlock values (got {type(image).__name__})"
                )


def split_tool_output(output: object) -> tuple[object, tuple[ImageBlock, ...]]:
    """``(text part, images)`` of a tool's output: the forms the module docstring lists give
    their images; any other output is itself the text part, without images. ``ValueError``
    for more than ``MAX_IMAGES_PER_REQUEST`` images."""
    kind = type_of(output)
    if kind is ImageBlock:
        return "", (cast(ImageBlock, output),)
    if kind is ToolReturn:
        value = cast(ToolReturn, output)
        return value.value, _bounded(tuple(value.images))
    if kind is list or kind is tuple:
        items = cast("list[object] | tuple[object, ...]", output)
        if any(type(item) is ImageBlock for item in items) and all(
            type(item) is ImageBlock or type(item) is str for item in items
        ):
            text = "\n".join(item for item in items if isinstance(item, str))
            images = tuple(item for item in items if isinstance(item, ImageBlock))
            return text, _bounded(images)
    return output, _NO_IMAGES


def _bounded(images: tuple[ImageBlock, ...]) -> tuple[ImageBlock, ...]:
    if len(images) > MAX_IMAGES_PER_REQUEST:
        raise ValueError(
            f"Tool output has {len(images)} images; at most {MAX_IMAGES_PER_REQUEST} are allowed"
        )
    return images
