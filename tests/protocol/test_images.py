"""Images in the protocol: the header sniffer, ``ImageBlock``, its JSON form, every decoder.

* ``read_image_header`` reads the four formats in each header layout, and returns ``None``
  (never raises) for any other bytes (Hypothesis over arbitrary bytes and over corrupted
  real headers);
* ``ImageBlock`` checks its media type and size against the header, and the bounds, with
  ``ImageError`` codes; its ``repr`` never shows the bytes;
* the JSON form is canonical base64; bad base64 is ``INVALID_PROTOCOL_JSON`` (Hypothesis);
* messages carry ``images`` as a v2 field (no key while empty), and the loop's transcript
  snapshot, ``parse_message``/``validate_transcript``, the session decoder and the
  compaction snapshot all read it.
"""

from __future__ import annotations

import base64
import json
import struct
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from image_support import IMAGES, gif, image_bytes, jpeg, png, webp
from tether.agent import session as session_module
from tether.agent.compaction import ContextCompactionError, estimate_context_units
from tether.loop.checks import InvalidTranscript, snapshot_transcript
from tether.models.limits import RunLimits
from tether.protocol import (
    MAX_IMAGE_BYTES,
    MAX_IMAGE_SIDE,
    ImageBlock,
    ImageError,
    ImageMediaType,
    Message,
    ProtocolJsonError,
    ToolResultMessage,
    UserMessage,
    from_json,
    to_json,
)
from tether.protocol.image_header import ImageHeader, read_image_header
from tether.protocol.transcript import (
    parse_message,
    tool_result_message,
    user_message,
    validate_transcript,
)

session_message_from_json: Callable[[object], Message] = vars(session_module)["_message_from_json"]

PNG = png(3, 2)
WRONG: dict[str, Any] = {
    "text": "abc",
    "bmp": "image/bmp",
    "strings": ["x"],
}
"""Values of the wrong static type, as a Python caller may pass them."""


def as_list(*items: object) -> Any:
    """A list where the annotation says tuple (Python-first construction)."""
    return list(items)


# --- the sniffer ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "media_type", "width", "height"),
    [
        (png(3, 2), "image/png", 3, 2),
        (jpeg(640, 480), "image/jpeg", 640, 480),
        (jpeg(7, 9, app_segments=0), "image/jpeg", 7, 9),
        (jpeg(7, 9, app_segments=3, fill=2), "image/jpeg", 7, 9),
        (gif(5, 4), "image/gif", 5, 4),
        (webp(1024, 768, "VP8 "), "image/webp", 1024, 768),
        (webp(16383, 1, "VP8L"), "image/webp", 16383, 1),
        (webp(8000, 2, "VP8X"), "image/webp", 8000, 2),
    ],
)
def test_each_format_and_layout_is_read(
    data: bytes, media_type: ImageMediaType, width: int, height: int
) -> None:
    assert read_image_header(data) == ImageHeader(media_type=media_type, width=width, height=height)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"hello",
        png(3, 2)[:23],  # IHDR cut short
        png(3, 2).replace(b"IHDR", b"IHDX"),
        b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + struct.pack(">II", 0, 5),
        b"\xff\xd8",  # SOI alone
        b"\xff\xd8\xff\xda\x00\x02",  # scan data before any frame header
        b"\xff\xd8\xff\xe0\x00\x01",  # a segment length below 2
        b"\xff\xd8\x00\x00",  # no marker
        jpeg(0, 7),  # height defined later (DNL): not supported, refused
        gif(0, 1),
        b"GIF89a\x01",
        b"RIFF\x00\x00\x00\x00WEBPVP8 ",
        webp(5, 5, "VP8L").replace(b"\x2f", b"\x00", 1),
        b"RIFF\x00\x00\x00\x00WEBPABCD" + bytes(20),
    ],
)
def test_malformed_or_unknown_headers_read_as_none(data: bytes) -> None:
    assert read_image_header(data) is None


@given(st.binary(max_size=64))
def test_the_sniffer_never_raises_on_arbitrary_bytes(data: bytes) -> None:
    header = read_image_header(data)
    assert header is None or (header.width >= 1 and header.height >= 1)


@given(drawn=image_bytes(), cut=st.integers(min_value=0, max_value=40), noise=st.binary())
def test_the_sniffer_never_raises_on_cut_or_corrupted_headers(
    drawn: tuple[ImageMediaType, int, int, bytes], cut: int, noise: bytes
) -> None:
    data = drawn[3]
    for candidate in (data[:cut], data[:cut] + noise, data[: len(data) - cut]):
        header = read_image_header(candidate)
        assert header is None or header.media_type == drawn[0]


@given(image_bytes())
def test_the_sniffer_reads_what_the_header_declares(
    drawn: tuple[ImageMediaType, int, int, bytes],
) -> None:
    media_type, width, height, data = drawn
    assert read_image_header(data) == ImageHeader(media_type=media_type, width=width, height=height)


# --- ImageBlock -------------------------------------------------------------------------------


def test_from_bytes_reads_type_and_size_and_repr_hides_the_bytes() -> None:
    image = ImageBlock.from_bytes(bytearray(PNG))
    assert (image.type, image.media_type, image.width, image.height) == ("image", "image/png", 3, 2)
    assert type(image.data) is bytes
    assert image.data == PNG
    assert repr(image) == f"ImageBlock(media_type='image/png', bytes={len(PNG)}, width=3, height=2)"
    assert "data" not in repr(UserMessage(id="u", content="", images=(image,)))


def test_construction_checks_the_header_agrees() -> None:
    with pytest.raises(
        ImageError, match="says image/jpeg 3x2 but its bytes are image/png 3x2"
    ) as caught:
        ImageBlock(media_type="image/jpeg", data=PNG, width=3, height=2)
    assert caught.value.code == "IMAGE_INVALID"
    with pytest.raises(ImageError, match="says image/png 4x2"):
        ImageBlock(media_type="image/png", data=PNG, width=4, height=2)
    with pytest.raises(ImageError, match="is not a PNG, JPEG, GIF or WebP image"):
        ImageBlock(media_type="image/png", data=b"not an image", width=1, height=1)
    with pytest.raises(ImageError) as caught:
        ImageBlock.from_bytes(b"BM\x00\x00")  # a BMP
    assert caught.value.code == "IMAGE_INVALID"


def test_construction_checks_field_types() -> None:
    with pytest.raises(TypeError, match=r"^ImageBlock\.data must be bytes \(got str\)$"):
        ImageBlock(media_type="image/png", data=WRONG["text"], width=3, height=2)
    with pytest.raises(TypeError, match=r"^ImageBlock\.width must be a positive int \(got bool\)"):
        ImageBlock(media_type="image/png", data=PNG, width=True, height=2)
    with pytest.raises(TypeError, match=r"^ImageBlock\.media_type must be 'image/png'"):
        ImageBlock(media_type=WRONG["bmp"], data=PNG, width=3, height=2)
    with pytest.raises(TypeError, match="needs bytes"):
        ImageBlock.from_bytes(WRONG["text"])


def test_the_bounds_refuse_large_images() -> None:
    at_limit = webp(MAX_IMAGE_SIDE, MAX_IMAGE_SIDE)
    assert ImageBlock.from_bytes(at_limit).width == MAX_IMAGE_SIDE
    with pytest.raises(ImageError, match="8001x1 pixels; at most 8000") as caught:
        ImageBlock.from_bytes(webp(MAX_IMAGE_SIDE + 1, 1))
    assert caught.value.code == "IMAGE_TOO_LARGE"
    full = PNG + bytes(MAX_IMAGE_BYTES - len(PNG))
    assert len(ImageBlock.from_bytes(full).data) == MAX_IMAGE_BYTES
    with pytest.raises(ImageError, match=f"{MAX_IMAGE_BYTES + 1} bytes") as caught:
        ImageBlock.from_bytes(full + b"\0")
    assert caught.value.code == "IMAGE_TOO_LARGE"
    with pytest.raises(ImageError, match="bytes"):
        ImageBlock(media_type="image/png", data=full + b"\0", width=3, height=2)


# --- JSON -------------------------------------------------------------------------------------


def test_images_are_a_v2_field_of_user_and_tool_result_messages() -> None:
    image = ImageBlock.from_bytes(PNG)
    plain = UserMessage(id="u", content="hi")
    assert to_json(plain) == {"id": "u", "role": "user", "content": "hi"}
    user = UserMessage(id="u", content="hi", images=as_list(image))  # Python-first
    assert user.images == (image,)
    encoded = to_json(user)
    assert encoded["images"] == [
        {
            "type": "image",
            "mediaType": "image/png",
            "data": base64.b64encode(PNG).decode(),
            "width": 3,
            "height": 2,
        }
    ]
    assert from_json(json.loads(json.dumps(encoded)), Message) == user
    result = ToolResultMessage(
        id="r", tool_call_id="c", tool_name="read_file", content="", images=(image,)
    )
    assert from_json(to_json(result), Message) == result
    assert "images" not in to_json(
        ToolResultMessage(id="r", tool_call_id="c", tool_name="t", content="")
    )


@given(st.lists(IMAGES, min_size=1, max_size=3), st.booleans())
def test_messages_with_images_round_trip_through_every_decoder(
    images: list[ImageBlock], as_result: bool
) -> None:
    message: Message = (
        ToolResultMessage(
            id="r", tool_call_id="c", tool_name="t", content="x", images=tuple(images)
        )
        if as_result
        else UserMessage(id="u", content="x", images=tuple(images))
    )
    data = json.loads(json.dumps(to_json(message)))
    assert from_json(data, Message) == message
    assert session_message_from_json(data) == message
    assert parse_message(data) == message
    assert validate_transcript([data]) == () or as_result  # a lone result is an orphan
    assert json.dumps(to_json(from_json(data, Message))) == json.dumps(data)


BAD_BASE64 = [
    (7, "must be a base64 string"),
    ("iVBORw0KGgo", "standard base64"),  # no padding
    ("iVBO Rw0K", "standard base64"),
    ("iVBO\nRw0K", "standard base64"),
    ("iVBO-w0K", "standard base64"),  # url-safe alphabet
    ("QR==", "canonical"),  # unused bits set
    ("é===", "standard base64"),
]


@pytest.mark.parametrize(("data", "problem"), BAD_BASE64)
def test_bad_base64_is_invalid_protocol_json(data: object, problem: str) -> None:
    encoded: dict[str, Any] = {**to_json(ImageBlock.from_bytes(PNG)), "data": data}
    with pytest.raises(ProtocolJsonError, match=rf"^\$\.data: .*{problem}") as caught:
        from_json(encoded, ImageBlock)
    assert caught.value.code == "INVALID_PROTOCOL_JSON"
    message = {"id": "u", "role": "user", "content": "", "images": [encoded]}
    with pytest.raises(Exception, match=problem) as failure:
        session_message_from_json(message)
    assert getattr(failure.value, "code", None) == "SESSION_INVALID_MESSAGE"
    with pytest.raises(TypeError, match=problem):
        parse_message(message)


@given(
    st.text(max_size=24) | st.binary(max_size=16).map(lambda raw: base64.b64encode(raw).decode())
)
def test_any_data_text_decodes_or_is_a_protocol_error(text: str) -> None:
    encoded: dict[str, Any] = {**to_json(ImageBlock.from_bytes(PNG)), "data": text}
    try:
        image = from_json(encoded, ImageBlock)
    except ProtocolJsonError:
        return
    assert image.data == PNG  # only the image's own bytes can agree with its header


# --- the layers that read messages --------------------------------------------------------------


def test_constructors_and_parse_message_take_images() -> None:
    image = ImageBlock.from_bytes(gif(2, 2))
    encoded = to_json(image)
    assert user_message(content="look", images=[image]).images == (image,)
    assert user_message(content="look", images=[encoded]).images == (image,)
    result = tool_result_message(tool_call_id="c", tool_name="t", content="", images=(encoded,))
    assert result.images == (image,)
    with pytest.raises(TypeError, match=r"^userMessage: images\[0\] must be an image block$"):
        user_message(content="", images=WRONG["strings"])
    with pytest.raises(TypeError, match=r"^userMessage: images must be an array$"):
        user_message(content="", images=as_list(image)[0])
    bad = {"id": "u", "role": "user", "content": "", "images": [{**encoded, "width": 3}]}
    (diagnostic,) = validate_transcript([bad])
    assert diagnostic.code == "INVALID_MESSAGE"
    assert "images[0]" in diagnostic.message


def test_the_loop_snapshot_reads_images_from_json_messages() -> None:
    image = ImageBlock.from_bytes(PNG)
    user = UserMessage(id="u", content="see", images=(image,))
    snapshot = snapshot_transcript([to_json(user)], RunLimits())
    assert snapshot == (user,)
    bad = {**to_json(user), "images": [{"type": "image"}]}
    with pytest.raises(InvalidTranscript, match="images"):
        snapshot_transcript([bad], RunLimits())


def test_the_compaction_snapshot_reads_images() -> None:
    image = ImageBlock.from_bytes(PNG)
    user = UserMessage(id="u", content="see", images=(image,))
    assert estimate_context_units([to_json(user)]) == estimate_context_units([user])
    with pytest.raises(ContextCompactionError, match="images") as caught:
        estimate_context_units([{**to_json(user), "images": [{"type": "image"}]}])
    assert caught.value.code == "CONTEXT_INVALID_TRANSCRIPT"  # the transcript check reads it


def test_images_count_in_the_context_units_as_the_tokens_a_model_reads() -> None:
    plain = UserMessage(id="u", content="see")
    small = ImageBlock.from_bytes(png(30, 25))  # 750 pixels: one token
    large = ImageBlock.from_bytes(webp(MAX_IMAGE_SIDE, MAX_IMAGE_SIDE))  # capped at 1600
    base = estimate_context_units([plain])
    with_small = UserMessage(id="u", content="see", images=(small,))
    both = UserMessage(id="u", content="see", images=(small, large))
    assert estimate_context_units([with_small]) == base + 4
    assert estimate_context_units([both]) == base + 4 + 4 * 1600
