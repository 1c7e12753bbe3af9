"""``tether chat`` attaches an image from a path typed in the prompt, in a real terminal
(tmux), as ``test_chat_tmux`` drives it: the transcript shows ``[image: shot.png 4x3]`` and
the session file holds the message's image as a reference with its blob beside it; a path
that is no image stays plain text (the second request's message is only text); resuming
(``-c``) a session whose blob was deleted says so once and sends the marker in its place. How
each provider sends an image is tested with the providers."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from chat_support import (
    PROMPT,
    at_prompt,
    quit_chat,
    say,
    session_files,
    stalled_reply,
    start_chat,
    text_reply,
    workspace,
)
from image_support import gif, png
from servers.replay import ReplayServer
from tmux_support import Tmux

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(sys.platform == "win32", reason="tmux and POSIX terminals"),
]


async def test_a_typed_image_path_is_attached_and_stored(tmux: Tmux, tmp_path: Path) -> None:
    project = workspace(tmp_path)
    shot = png(4, 3)
    (project / "shot.png").write_bytes(shot)
    (project / "notes.png").write_text("not a picture")
    async with ReplayServer() as server:
        server.respond(text_reply("A red rectangle."))
        server.respond(text_reply("That is text."))
        start_chat(tmux, tmp_path, server.url)
        await at_prompt(tmux)
        await say(tmux, "what is in ./shot.png?")
        screen = await tmux.wait_for("A red rectangle.")
        assert "[image: shot.png 4x3]" in screen
        await at_prompt(tmux)
        await say(tmux, "and in notes.png or missing.png?")
        screen = await tmux.wait_for("That is text.")
        assert "(not attached: notes.png: " in screen
        assert "[image: notes.png" not in screen
        await quit_chat(tmux)

    second = server.requests[1].json["messages"][-1]
    assert second == {"role": "user", "content": "and in notes.png or missing.png?"}

    (session,) = session_files(tmp_path)
    lines = [json.loads(line) for line in session.read_text().splitlines()]
    users = [line["message"] for line in lines[1:] if line["message"]["role"] == "user"]
    (ref,) = users[0]["images"]
    assert ref["type"] == "imageRef"
    assert (ref["width"], ref["height"]) == (4, 3)
    blob = Path(str(session) + ".blobs") / ref["sha256"]
    assert blob.read_bytes() == shot
    assert "images" not in users[1]


async def test_a_session_whose_image_blob_is_gone_resumes_with_a_notice(
    tmux: Tmux, tmp_path: Path
) -> None:
    project = workspace(tmp_path)
    (project / "shot.png").write_bytes(png(4, 3))
    async with ReplayServer() as server:
        server.respond(text_reply("A red rectangle."))
        start_chat(tmux, tmp_path, server.url)
        await at_prompt(tmux)
        await say(tmux, "what is in shot.png")
        await tmux.wait_for("A red rectangle.")
        await quit_chat(tmux)
    (session,) = session_files(tmp_path)
    (blob,) = os.listdir(f"{session}.blobs")
    os.unlink(os.path.join(f"{session}.blobs", blob))
    async with ReplayServer() as server:
        server.respond(text_reply("It is gone."))
        start_chat(tmux, tmp_path, server.url, "-c")
        screen = await tmux.wait_for("could not be loaded")
        assert "1 image of this session could not be loaded (blob missing: 1)" in screen
        await at_prompt(tmux)
        await say(tmux, "and now?")
        await tmux.wait_for("It is gone.")
        await quit_chat(tmux)
    sent = server.requests[0].json["messages"]
    first = next(message for message in sent if message["role"] == "user")
    assert first["content"].startswith("what is in shot.png\n[image unavailable: image/png 4x3")


async def test_an_image_path_typed_during_a_turn_goes_with_the_steer(
    tmux: Tmux, tmp_path: Path
) -> None:
    project = workspace(tmp_path)
    (project / "diagram.gif").write_bytes(gif(8, 6))
    async with ReplayServer() as server:
        stalled = server.respond(stalled_reply("Looking"))
        server.respond(text_reply("Seen the diagram."))
        start_chat(tmux, tmp_path, server.url)
        await at_prompt(tmux)
        await say(tmux, "Fix the layout")
        await stalled.stalled.wait()
        tmux.type("see diagram.gif")
        tmux.send("Enter")
        screen = await tmux.wait_for("(steer queued: see diagram.gif)")
        stalled.release.set()
        screen = await tmux.wait_for("Seen the diagram.")
        assert "[image: diagram.gif 8x6]" in screen
        await tmux.wait_for(PROMPT, count=2)
        await quit_chat(tmux)
        start_chat(tmux, tmp_path, server.url, "-c")  # the resumed view counts the images
        await tmux.wait_for("you: see diagram.gif [1 image(s)]")
        await quit_chat(tmux)
    (session,) = session_files(tmp_path)
    lines = [json.loads(line) for line in session.read_text().splitlines()]
    users = [line["message"] for line in lines[1:] if line["message"]["role"] == "user"]
    assert [user["content"] for user in users] == ["Fix the layout", "see diagram.gif"]
    (ref,) = users[1]["images"]
    assert (ref["mediaType"], ref["width"], ref["height"]) == ("image/gif", 8, 6)
