"""What the tests that drive ``tether chat`` in tmux share: the environment (a fake key, the
data and config directories in the test's temporary directory), starting the chat, typing,
waiting for the prompt, quitting, the session files, and the streamed OpenAI bodies."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path
from typing import Any

from servers.replay import Script, sse_body, sse_response
from tmux_support import DEADLINE, POLL, Tmux

TETHER = Path(sys.executable).parent / "tether"


FAKE_KEY = "sk-tether-FAKE-CHAT-KEY-0123456789-never-print-me"


MODEL = "openai/gpt-test"


PROMPT = "chat>"  # capture-pane drops the trailing space


_SCRUBBED = ("PYTHONDEVMODE", "PYTHONASYNCIODEBUG", "PYTHONWARNINGS", "TETHER_CONFIG", "TMUX")


def chat_env(tmp_path: Path) -> dict[str, str]:
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.endswith("_API_KEY") and name not in _SCRUBBED
    }
    env.update(
        HOME=str(tmp_path / "home"),
        XDG_DATA_HOME=str(tmp_path / "data"),
        XDG_CONFIG_HOME=str(tmp_path / "config"),
        TETHER_CONFIG=str(tmp_path / "config" / "tether" / "config.toml"),
        OPENAI_API_KEY=FAKE_KEY,
        PYTHONWARNINGS="default",
        TERM="screen",
        NO_COLOR="1",
    )
    return env


def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir(exist_ok=True)
    return folder


def start_chat(tmux: Tmux, tmp_path: Path, url: str, *extra: str) -> None:
    tmux.start(
        [str(TETHER), "chat", "--model", MODEL, "--base-url", url, *extra],
        env=chat_env(tmp_path),
        cwd=workspace(tmp_path),
    )


async def say(tmux: Tmux, text: str) -> None:
    tmux.type(text)
    tmux.send("Enter")


async def at_prompt(tmux: Tmux) -> None:
    """Wait until the last line on screen is an empty prompt: prompt_toolkit reads keys
    from then on (a Ctrl-D typed while the terminal is still in cooked mode is consumed by
    the line discipline, as in any terminal program)."""
    end = time.monotonic() + DEADLINE
    while True:
        lines = [line for line in tmux.screen().splitlines() if line.strip()]
        if lines and lines[-1].strip() == PROMPT:
            return
        if time.monotonic() > end:
            raise AssertionError(f"no empty prompt in {DEADLINE} s:\n{tmux.screen()}")
        await asyncio.sleep(POLL)


async def quit_chat(tmux: Tmux) -> None:
    await at_prompt(tmux)
    tmux.send("C-d")
    assert await tmux.wait_exit() == 0, tmux.screen()
    screen = tmux.screen()
    assert "Traceback" not in screen, screen
    assert "Warning" not in screen, screen


def sessions_dir(tmp_path: Path) -> Path:
    return tmp_path / "data" / "tether" / "sessions"


def session_files(tmp_path: Path) -> list[Path]:
    return sorted(sessions_dir(tmp_path).glob("*.jsonl"))


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-chat",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-test-2026",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def usage(prompt: int, completion: int) -> dict[str, Any]:
    return {
        "id": "chatcmpl-chat",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-test-2026",
        "choices": [],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }


def text_payloads(*parts: str) -> list[dict[str, Any]]:
    return [
        chunk({"role": "assistant", "content": ""}),
        *(chunk({"content": part}) for part in parts),
        chunk({}, "stop"),
        usage(11, len(parts)),
    ]


def text_reply(*parts: str) -> Script:
    return sse_response(sse_body(text_payloads(*parts)))


def stalled_reply(first: str) -> Script:
    payloads = text_payloads(first, " and the rest")
    offset = len(sse_body(payloads[:2], done=False))
    return sse_response(sse_body(payloads), stall_after=offset)
