"""Images attached from the chat prompt (``tether.cli.ui.attachments``): which words of a
line are image paths, in the forms people type and terminals paste, and what is attached
from real files in a temporary directory (a non-image or a missing path stays text)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from image_support import gif, png
from support import examples
from tether.cli.ui.attachments import (
    MAX_ATTACHED_IMAGES,
    attach_images,
    find_image_paths,
    prompt_images,
)
from tether.protocol import MAX_IMAGE_BYTES


@pytest.mark.parametrize(
    ("line", "paths"),
    [
        ("look at ./shot.png", ["./shot.png"]),
        ("what is in shot.PNG?", ["shot.PNG"]),
        ("compare a.jpg, b.jpeg and c.webp.", ["a.jpg", "b.jpeg", "c.webp"]),
        ("see @docs/diagram.gif", ["docs/diagram.gif"]),
        ("'/tmp/My Shot.png' please", ["/tmp/My Shot.png"]),
        ('"/tmp/My Shot.png"', ["/tmp/My Shot.png"]),
        (r"/tmp/My\ Screen\ Shot.png", ["/tmp/My Screen Shot.png"]),
        ("file:///tmp/My%20Shot.png", ["/tmp/My Shot.png"]),
        ("file://elsewhere/tmp/a.png", []),
        ("(see ~/Desktop/a.png)", ["~/Desktop/a.png"]),
        ("a.png a.png", ["a.png"]),
        ("no image here, just png and .png", [".png"]),
        ("shot.png.txt", []),
        ("don't look at it.png", ["it.png"]),
    ],
)
def test_image_paths_are_found_in_the_forms_people_type_and_paste(
    line: str, paths: list[str]
) -> None:
    assert find_image_paths(line) == paths


@given(line=st.text(max_size=80))
@settings(max_examples=examples(300))
def test_any_line_gives_a_list_of_image_names(line: str) -> None:
    for path in find_image_paths(line):
        assert path.lower().endswith((".png", ".jpg", ".jpeg", ".gif", ".webp"))


@given(line=st.text(max_size=40).map(lambda text: "~" + text + ".png") | st.text(max_size=80))
@settings(max_examples=examples(100))
@example(line="look at ~\0.png")  # pwd raised ValueError (embedded null byte)
def test_any_line_attaches_images_or_nothing_without_raising(line: str) -> None:
    attached = attach_images(line, Path("/nonexistent/tether-cwd"))
    assert len(attached.images) == len(attached.shown) <= MAX_ATTACHED_IMAGES


def test_image_files_are_attached_and_everything_else_stays_text(tmp_path: Path) -> None:
    (tmp_path / "shot.png").write_bytes(png(640, 480))
    (tmp_path / "My Icon.gif").write_bytes(gif(16, 16))
    (tmp_path / "fake.png").write_text("not an image")
    (tmp_path / "dir.png").mkdir()
    line = "look at ./shot.png and 'My Icon.gif', fake.png, dir.png, gone.png"
    found = attach_images(line, tmp_path)
    assert [(i.media_type, i.width, i.height) for i in found.images] == [
        ("image/png", 640, 480),
        ("image/gif", 16, 16),
    ]
    assert found.shown == ("[image: shot.png 640x480]", "[image: My Icon.gif 16x16]")
    (note,) = found.notes
    assert note.startswith("(not attached: fake.png: ")


def test_an_absolute_path_outside_the_directory_is_the_persons_choice(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "a.png").write_bytes(png(2, 2))
    project = tmp_path / "project"
    project.mkdir()
    found = attach_images(f"see {elsewhere / 'a.png'} and ./a.png", project)
    assert len(found.images) == 1  # the same file named twice is attached once
    found = attach_images(f"{elsewhere / 'a.png'} ../elsewhere/a.png", project)
    assert len(found.images) == 1


def test_too_large_or_too_many_images_are_not_attached_and_said(tmp_path: Path) -> None:
    (tmp_path / "big.png").write_bytes(png(2, 2) + b"\0" * MAX_IMAGE_BYTES)
    found = attach_images("big.png", tmp_path)
    assert found.images == ()
    assert "big.png has" in found.notes[0]
    names = [f"{n}.png" for n in range(MAX_ATTACHED_IMAGES + 1)]
    for name in names:
        (tmp_path / name).write_bytes(png(1, 1 + len(name)))
    found = attach_images(" ".join(names), tmp_path)
    assert len(found.images) == MAX_ATTACHED_IMAGES
    assert found.notes == (
        f"(not attached: {names[-1]}: at most {MAX_ATTACHED_IMAGES} images a prompt)",
    )


async def test_the_chat_hook_shows_each_attachment(tmp_path: Path) -> None:
    (tmp_path / "shot.png").write_bytes(png(4, 3))
    shown: list[str] = []
    images = await prompt_images("look at shot.png", tmp_path, shown.append)
    assert len(images) == 1
    assert shown == ["[image: shot.png 4x3]"]
    assert await prompt_images("no images", tmp_path, shown.append) == ()
