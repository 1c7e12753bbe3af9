"""Images in ``tether rpc`` requests: the ``images`` field of ``prompt``, ``steer`` and
``follow_up``.

``"images": [{"data": "<standard base64>", "mediaType": "image/png"}]``: each item's bytes
are a PNG, JPEG, GIF or WebP file (within ``MAX_IMAGE_BYTES`` and ``MAX_IMAGE_SIDE``; a
request line is at most 1 MiB, which bounds what fits); ``mediaType`` is optional and, when
given, must be what the bytes are. The type and the dimensions are read from the bytes
(``ImageBlock.from_bytes``). Anything else is a ``ValueError`` whose text the server sends
as ``RPC_INVALID_REQUEST``.
"""

from __future__ import annotations

import binascii
from typing import Final, cast

from tether.protocol import MAX_IMAGES_PER_REQUEST, ImageBlock, ImageError

__all__ = ["request_images"]

_SHAPE: Final = '"images" must be an array of {"data": base64, "mediaType"?: string}'


def request_images(fields: dict[str, object]) -> tuple[ImageBlock, ...]:
    """The images of a request's fields (``()`` without an ``images`` field)."""
    value = fields.get("images")
    if value is None:
        return ()
    if type(value) is not list:
        raise ValueError(_SHAPE)
    items = cast("list[object]", value)
    if len(items) > MAX_IMAGES_PER_REQUEST:
        raise ValueError(f'"images" may hold at most {MAX_IMAGES_PER_REQUEST} images')
    return tuple(_image(index, item) for index, item in enumerate(items))


def _image(index: int, item: object) -> ImageBlock:
    if type(item) is not dict:
        raise ValueError(_SHAPE)
    record = cast("dict[str, object]", item)
    data, media_type = record.get("data"), record.get("mediaType")
    if not record.keys() <= {"data", "mediaType"} or type(data) is not str:
        raise ValueError(_SHAPE)
    if media_type is not None and type(media_type) is not str:
        raise ValueError(_SHAPE)
    try:
        raw = binascii.a2b_base64(data, strict_mode=True)
    except (binascii.Error, ValueError):
        raise ValueError(f"images[{index}].data is not standard base64") from None
    try:
        image = ImageBlock.from_bytes(raw)
    except ImageError as error:
        raise ValueError(f"images[{index}]: {error.message}") from None
    if media_type is not None and media_type != image.media_type:
        raise ValueError(f"images[{index}] is {image.media_type}, not {media_type}")
    return image
