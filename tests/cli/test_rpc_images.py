"""``tether rpc`` takes images with ``prompt`` (base64 in the JSON line): the user message
holds them (the session file has them); malformed ones are ``RPC_INVALID_REQUEST`` and the
session goes on. A real subprocess against the scripted ``ReplayServer``, as
``test_cli_rpc`` runs it."""

from __future__ import annotations

import base64
import sys
from pathlib import Path

import pytest

from cli_support import child_env
from image_support import png
from rpc_support import MODEL, is_event, rpc, text_reply
from servers.replay import ReplayServer
from tether.agent.session import MessageEntry, SessionStore
from tether.protocol import ImageBlock, UserMessage

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(sys.platform == "win32", reason="POSIX subprocesses"),
]


async def test_a_prompt_with_images_reaches_the_model(tmp_path: Path) -> None:
    shot = png(5, 4)
    encoded = base64.b64encode(shot).decode()
    async with (
        ReplayServer() as server,
        rpc("--model", MODEL, "--base-url", server.url, env=child_env(tmp_path)) as session,
    ):
        for request_id, images in [
            ("bad-1", "not a list"),
            ("bad-2", [{"data": "!!!"}]),
            ("bad-3", [{"data": base64.b64encode(b"plain text").decode()}]),
            ("bad-4", [{"data": encoded, "mediaType": "image/gif"}]),
            ("bad-5", [{"data": encoded, "extra": 1}]),
        ]:
            command = {"id": request_id, "type": "prompt", "message": "x", "images": images}
            error = await session.refused(command, request_id)
            assert error["code"] == "RPC_INVALID_REQUEST", error
        server.respond(text_reply("A small red picture."))
        images = [{"data": encoded, "mediaType": "image/png"}]
        await session.ok({"id": 1, "type": "prompt", "message": "what is it?", "images": images})
        await session.until(is_event("run.finished"))
        status, _ = await session.finish()
    assert status == 0
    assert len(server.requests) == 1  # the refused prompts reached no model
    (path,) = (tmp_path / "data" / "tether" / "sessions").glob("*.jsonl")
    async with await SessionStore.load(path) as stored:
        entry = stored.entries[0]
        assert type(entry) is MessageEntry
        user = entry.message
        assert type(user) is UserMessage
        assert (user.content, user.images) == ("what is it?", (ImageBlock.from_bytes(shot),))
