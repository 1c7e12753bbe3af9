"""Shift-Tab in ``tether chat`` (tmux): it cycles the thinking level, the screen says the new
one (and, once, that the model clamps one), the status line of the next turn shows it and
the next request carries it.

The model is built with the first prompt; a level set before it is clamped (and said) then.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import cli_support
from chat_support import at_prompt, quit_chat, say, start_chat
from servers.replay import ReplayServer
from tmux_support import Tmux

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(sys.platform == "win32", reason="tmux and POSIX terminals"),
]


async def test_shift_tab_cycles_the_level_shown_and_sent(tmux: Tmux, tmp_path: Path) -> None:
    async with ReplayServer() as server:
        start_chat(tmux, tmp_path, server.url)
        server.respond(cli_support.text_reply("Hello.", prompt_tokens=5))
        await at_prompt(tmux)
        await say(tmux, "Hi")  # no level: none sent
        await tmux.wait_for("Hello.")
        await at_prompt(tmux)
        tmux.send("BTab")  # no level yet: off
        await tmux.wait_for("(thinking: off)")
        tmux.send("BTab")  # minimal: gpt-test is no gpt-5, so low
        shown = await tmux.wait_for("thinking: gpt-test has no 'minimal' level; using 'low'")
        assert shown.index("(thinking: minimal)") < shown.index("has no 'minimal' level")
        tmux.send("BTab")
        await tmux.wait_for("(thinking: low)")
        tmux.send("BTab")
        await tmux.wait_for("(thinking: medium)")
        stalled = server.respond(cli_support.stalled_reply("Thinking it over", prompt_tokens=5))
        await at_prompt(tmux)
        await say(tmux, "Go")
        await tmux.wait_for("think medium")  # the status line of the running turn
        tmux.send("BTab")  # during the turn too: high, for the next request
        await tmux.wait_for("think high")
        stalled.release.set()
        await tmux.wait_for("and the rest")
        await at_prompt(tmux)
        tmux.send("BTab")  # off again; minimal again: the notice is not said twice
        await tmux.wait_for("(thinking: off)", count=2)
        tmux.send("BTab")
        await tmux.wait_for("(thinking: minimal)", count=2)
        server.respond(cli_support.text_reply("Done.", prompt_tokens=5))
        await at_prompt(tmux)
        await say(tmux, "Again")
        await tmux.wait_for("Done.")
        await quit_chat(tmux)
        screen = tmux.screen()
    assert screen.count("has no 'minimal' level") == 1, screen
    efforts = [request.json.get("reasoning_effort") for request in server.requests]
    assert efforts == [None, "medium", "low"]
