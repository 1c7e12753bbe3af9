"""Tools that return images: ``ToolReturn``, a bare ``ImageBlock`` or a list of text and
images put their images in ``ToolResultMessage.images`` (through the real loop, so the next
model request carries them), and every other output is unchanged. ``read_file`` on a PNG,
JPEG, GIF or WebP file (recognised by its bytes) returns the image, confined and bounded like
text, in real temporary directories."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from image_support import gif, header, jpeg, png, webp
from tether.abort import AbortController
from tether.jsonvalue import JsonObject
from tether.loop import run_agent_loop
from tether.models.scripted import ScriptedModel, text_reply, tool_call_reply
from tether.protocol import (
    MAX_IMAGE_BYTES,
    MAX_IMAGES_PER_REQUEST,
    ImageBlock,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from tether.tools import ToolRegistry, execute_tool_call, tool
from tether.tools.coding import Workspace
from tether.tools.coding.files import read_file_tool
from tether.tools.returns import ToolReturn, split_tool_output

RED = ImageBlock.from_bytes(png(4, 3))
BLUE = ImageBlock.from_bytes(png(2, 2, (0, 0, 255)))


async def call(registry: ToolRegistry, name: str, arguments: dict[str, Any]) -> ToolResultMessage:
    return await execute_tool_call(
        registry,
        ToolCall(id="call-1", name=name, arguments=JsonObject(arguments)),
        AbortController().signal,
    )


# --- the contract -----------------------------------------------------------------------------


async def test_a_tool_return_reaches_the_next_model_request_through_the_loop() -> None:
    @tool
    async def screenshot(page: str) -> ToolReturn:
        """Take a screenshot of a page."""
        return ToolReturn(value=f"Screenshot of {page}", images=[RED, BLUE])

    model = ScriptedModel(
        [tool_call_reply(("screenshot", {"page": "home"})), text_reply("a red box and a blue one")]
    )
    stream = run_agent_loop(
        messages=[UserMessage(content="what is on the home page?")],
        model=model,
        tools=ToolRegistry([screenshot]),
        max_steps=4,
    )
    async for _ in stream:
        pass
    result = await stream.result
    assert result.status == "completed"
    (tool_result,) = [m for m in result.messages if type(m) is ToolResultMessage]
    assert tool_result.content == "Screenshot of home"
    assert tool_result.images == (RED, BLUE)
    assert not tool_result.is_error
    second = model.requests[1]
    assert second.messages[-1] == tool_result  # the model sees the images on its next step


@pytest.mark.parametrize(
    ("output", "content", "images"),
    [
        (RED, "", (RED,)),
        (ToolReturn(images=(RED,)), "", (RED,)),
        (ToolReturn(value={"b": 2, "a": [1]}, images=[BLUE]), '{"a":[1],"b":2}', (BLUE,)),
        (["caption one", RED, "caption two", BLUE], "caption one\ncaption two", (RED, BLUE)),
        ((BLUE,), "", (BLUE,)),
        ("plain text", "plain text", ()),
        (["a", "b"], '["a","b"]', ()),
        ({"x": 1}, '{"x":1}', ()),
    ],
)
async def test_each_output_form_gives_its_text_and_images(
    output: object, content: str, images: tuple[ImageBlock, ...]
) -> None:
    @tool
    async def show() -> object:
        """Show something."""
        return output

    result = await call(ToolRegistry([show]), "show", {})
    assert (result.content, result.images, result.is_error) == (content, images, False)


async def test_text_beside_images_is_capped_like_any_output() -> None:
    @tool(output_limit=100)
    async def chatty() -> ToolReturn:
        """Talk a lot."""
        return ToolReturn(value="x" * 1000, images=[RED])

    result = await call(ToolRegistry([chatty]), "chatty", {})
    assert len(result.content) == 100
    assert result.content.endswith("[Tool output truncated]")
    assert result.images == (RED,)


async def test_too_many_images_or_an_image_inside_json_fail_the_call() -> None:
    @tool
    async def flood() -> ToolReturn:
        """Too many."""
        return ToolReturn(images=[RED] * (MAX_IMAGES_PER_REQUEST + 1))

    @tool
    async def nested() -> object:
        """An image where JSON goes."""
        return {"image": RED}

    registry = ToolRegistry([flood, nested])
    for name in ("flood", "nested"):
        result = await call(registry, name, {})
        assert result.is_error
        assert result.images == ()
        assert json.loads(result.content)["error"]["code"] == "TOOL_OUTPUT_SERIALIZATION_FAILED"
    flooded = await call(registry, "flood", {})
    assert f"at most {MAX_IMAGES_PER_REQUEST}" in flooded.content


def test_tool_return_checks_its_images() -> None:
    assert ToolReturn(images=[RED]).images == (RED,)
    with pytest.raises(TypeError, match=r"ToolReturn\.images must hold ImageBlock"):
        ToolReturn(images=[b"png bytes"])  # pyright: ignore[reportArgumentType]
    with pytest.raises(TypeError, match="sequence of ImageBlock"):
        ToolReturn(images="not images")  # pyright: ignore[reportArgumentType]
    assert split_tool_output([1, RED]) == ([1, RED], ())  # not text and images: JSON's job


# --- read_file --------------------------------------------------------------------------------


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    return folder


@pytest.fixture
def workspace(root: Path) -> Workspace:
    return Workspace(root)


async def read(ws: Workspace, path: str) -> ToolResultMessage:
    return await call(ToolRegistry([read_file_tool(ws)]), "read_file", {"path": path})


@pytest.mark.parametrize(
    ("name", "data", "media_type", "size"),
    [
        ("shot.png", png(640, 480), "image/png", (640, 480)),
        ("photo.jpg", jpeg(320, 200), "image/jpeg", (320, 200)),
        ("anim.gif", gif(16, 9), "image/gif", (16, 9)),
        ("pic.webp", webp(30, 20), "image/webp", (30, 20)),
        ("no-extension", png(3, 5), "image/png", (3, 5)),  # the bytes decide, not the name
    ],
)
async def test_read_file_returns_an_image_it_recognises_by_its_bytes(
    root: Path, workspace: Workspace, name: str, data: bytes, media_type: str, size: tuple[int, int]
) -> None:
    (root / name).write_bytes(data)
    result = await read(workspace, name)
    assert not result.is_error, result.content
    (image,) = result.images
    assert (image.media_type, (image.width, image.height), image.data) == (media_type, size, data)
    assert result.content.startswith(f"Read image file {name} [{media_type}, {size[0]}x{size[1]}, ")
    assert result.content.endswith(" B]") or result.content.endswith(" KB]")


async def test_read_file_shows_the_size_for_people(root: Path, workspace: Workspace) -> None:
    data = png(64, 64) + b"\0" * (12_595 - len(png(64, 64)))  # trailing bytes: still the image
    (root / "a.png").write_bytes(data)
    result = await read(workspace, "a.png")
    assert result.content == "Read image file a.png [image/png, 64x64, 12.3 KB]"


async def test_a_file_named_like_an_image_holding_text_is_read_as_text(
    root: Path,
    workspace: Workspace,
) -> None:
    (root / "notes.png").write_text("not really a picture\n")
    result = await read(workspace, "notes.png")
    assert result.images == ()
    assert "not really a picture" in result.content


async def test_other_binary_files_keep_the_text_errors(root: Path, workspace: Workspace) -> None:
    (root / "blob.bin").write_bytes(b"\x00\xff\xfe binary")
    result = await read(workspace, "blob.bin")
    assert result.is_error
    assert result.error_code == "FILE_NOT_UTF8"
    big = b"\xff\xfe" * (40 * 1024)  # over the 64 KiB text limit, not an image
    (root / "big.bin").write_bytes(big)
    result = await read(workspace, "big.bin")
    assert result.is_error
    assert result.error_code == "FILE_TOO_LARGE"


async def test_an_image_larger_than_text_files_may_be_is_read(
    root: Path, workspace: Workspace
) -> None:
    data = png(8, 8) + b"\0" * (300 * 1024)
    (root / "large.png").write_bytes(data)
    result = await read(workspace, "large.png")
    assert not result.is_error, result.content
    assert result.images[0].data == data


async def test_an_image_over_the_bounds_is_image_too_large_with_a_hint(
    root: Path,
    workspace: Workspace,
) -> None:
    (root / "huge.png").write_bytes(png(8, 8) + b"\0" * MAX_IMAGE_BYTES)
    (root / "wide.png").write_bytes(header("image/png", 9000, 10))
    for name in ("huge.png", "wide.png"):
        result = await read(workspace, name)
        assert result.is_error, result.content
        assert result.error_code == "IMAGE_TOO_LARGE", result.content
        message = json.loads(result.content)["error"]["message"]
        assert name in message
        assert "smaller copy" in message


async def test_a_broken_image_header_is_image_invalid(root: Path, workspace: Workspace) -> None:
    (root / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"garbage" * 4)
    result = await read(workspace, "broken.png")
    assert result.is_error
    assert result.error_code == "IMAGE_INVALID"
    assert "broken.png" in result.content


async def test_an_image_outside_the_workspace_is_not_read(
    root: Path, workspace: Workspace, tmp_path: Path
) -> None:
    outside = tmp_path / "secret.png"
    outside.write_bytes(png(2, 2))
    os.symlink(outside, (root / "link.png"))
    result = await read(workspace, "link.png")
    assert result.is_error
    assert result.error_code == "PATH_OUTSIDE_WORKSPACE"
    assert result.images == ()
    result = await read(workspace, "../secret.png")
    assert result.is_error
    assert result.images == ()
