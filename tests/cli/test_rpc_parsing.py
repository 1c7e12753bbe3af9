"""Property tests of the ``tether rpc`` command parser
(``tether.cli.rpc_requests.parse_request``): every line either becomes a known command with
only its listed fields, or is refused with one of the protocol's codes; never another
exception."""

from __future__ import annotations

import argparse
import base64
import json
import os

from hypothesis import assume, given
from hypothesis import strategies as st

from image_support import MEDIA_TYPES, header
from tether.cli.rpc_requests import (
    COMMANDS,
    FIELDS,
    Request,
    RpcError,
    images_field,
    parse_request,
)
from tether.protocol import ImageBlock

CODES = {"RPC_INVALID_JSON", "RPC_INVALID_REQUEST", "RPC_UNKNOWN_COMMAND"}

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)
names = st.sampled_from(
    ["id", "type", "message", "requestId", "answer", "sessionId", "entryId", "cwd", "model"]
) | st.text(max_size=8)
commands = st.dictionaries(
    names,
    json_values | st.sampled_from(COMMANDS) | st.integers(0, 9),
    max_size=5,
).map(lambda fields: fields if "type" not in fields else {"id": 1, **fields})


def parsed(line: bytes) -> object:
    """The request, or the code it was refused with."""
    try:
        return parse_request(line)
    except RpcError as error:
        return error.code


def check(line: bytes) -> None:
    request = parsed(line)
    if isinstance(request, str):
        assert request in CODES, request
        return
    assert isinstance(request, Request)
    assert request.command in COMMANDS
    assert set(request.fields) <= set(FIELDS.get(request.command, ()))
    assert type(request.id) in (str, int)


@given(commands)
def test_every_object_is_a_command_or_a_coded_refusal(command: dict[str, object]) -> None:
    check(json.dumps(command).encode())


@given(st.binary(max_size=64))
def test_every_byte_string_is_a_command_or_a_coded_refusal(line: bytes) -> None:
    check(line)


@st.composite
def image_data(draw: st.DrawFn) -> str:
    """An image's ``"data"``: base64 of a real header (maybe cut, maybe with bytes after it)
    or of any bytes, or any text."""
    if draw(st.booleans()):
        side = draw(st.integers(1, 0xFFFF))  # past MAX_IMAGE_SIDE too
        raw = header(draw(st.sampled_from(MEDIA_TYPES)), side, side)[: draw(st.integers(0, 64))]
        raw += draw(st.binary(max_size=8))
    elif draw(st.booleans()):
        raw = draw(st.binary(max_size=24))
    else:
        return draw(st.text(max_size=12))
    return base64.b64encode(raw).decode()


image_items = st.fixed_dictionaries(
    {"data": image_data() | json_values},
    optional={"mediaType": st.sampled_from(MEDIA_TYPES) | json_values, "other": json_values},
)


def taken(images: object) -> tuple[ImageBlock, ...] | str:
    """The images of a prompt's ``images`` field, or the code they were refused with."""
    try:
        return images_field({"message": "m", "images": images})
    except RpcError as error:
        return error.code


@given(st.lists(image_items | json_values, max_size=3) | json_values)
def test_every_images_field_is_images_or_a_coded_refusal(images: object) -> None:
    result = taken(images)
    if isinstance(result, str):
        assert result == "RPC_INVALID_REQUEST"
        return
    assert all(isinstance(image, ImageBlock) for image in result)
    assert images is None or isinstance(images, list)


def test_every_command_with_its_fields_is_accepted() -> None:
    for command in COMMANDS:
        fields = dict.fromkeys(FIELDS.get(command, ()), "x")
        request = parse_request(json.dumps({"id": "a", "type": command, **fields}).encode())
        assert (request.command, request.fields) == (command, fields)


@given(st.binary(max_size=200) | st.text(max_size=40).map(lambda t: (t + "\n").encode()))
def test_a_stdin_prompt_is_text_or_nothing(data: bytes) -> None:
    from tether.cli.print_prompt import stdin_prompt

    decoded = data.decode("utf-8", "replace")
    text = stdin_prompt(data)
    if text is None:
        assert not decoded.strip()
        return
    assert text.strip()
    assert decoded in (text, text + "\n", text + "\r\n")


@given(st.binary(max_size=40))
def test_a_prompt_argument_is_its_bytes_as_utf8_with_bad_bytes_replaced(data: bytes) -> None:
    from tether.cli.print_prompt import print_prompt

    given = os.fsdecode(data) or "x"  # as Python decodes argv (surrogateescape)
    assume(given != "-")  # `-p -` reads standard input (found by Hypothesis)
    prompt = print_prompt(given, argparse.ArgumentParser())
    assert prompt == os.fsencode(given).decode("utf-8", "replace")
    prompt.encode("utf-8")  # no lone surrogate left


def test_one_final_newline_is_dropped() -> None:
    from tether.cli.print_prompt import stdin_prompt

    assert stdin_prompt(b"two\nlines\r\n") == "two\nlines"
    assert stdin_prompt(b"\xffx\n") == "\ufffdx"
    assert stdin_prompt(b" \n") is None
    assert stdin_prompt(b"\x00\r") == "\x00\r"  # a lone CR is not a newline (found by Hypothesis)
