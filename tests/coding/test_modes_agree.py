"""One scripted coding conversation through every mode gives the same session, prompt and
requests (issue 27: every mode drives the one ``CodingSession``).

The conversation: "Create hello.txt saying hi." → the model calls ``write_file`` → the call
is approved (chat: ``y`` typed in tmux; RPC: an ``approve`` command; print: never asked) →
the model answers. It runs through ``tether chat`` (in tmux), ``tether run -p``, ``tether
run -p --json`` and ``tether rpc`` against one scripted loopback server, each in the same
freshly made workspace (with an ``AGENTS.md``) and the same environment. Then:

* the request bodies the server received are identical across modes (so is the system
  prompt, their first message: the introduction, the tools, the date, the directory and
  ``AGENTS.md``);
* the session files hold the same records, once the IDs and timestamps are replaced by
  their order of appearance (the tree's shape is compared too);
* ``run --json`` and ``rpc`` stream the same events.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any, Literal

import pytest

from chat_support import FAKE_KEY, MODEL, at_prompt, chat_env, quit_chat, say
from cli_support import TETHER, run_tether
from rpc_support import text_reply, tool_reply
from servers.replay import ReplayServer
from tether.coding.rpc_client import RpcApprovalRequest, RpcClient, RpcEvent
from tmux_support import Tmux

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(sys.platform == "win32", reason="tmux and POSIX terminals"),
]

PROMPT = "Create hello.txt saying hi."
ANSWER = "Created hello.txt."
_VOLATILE = frozenset({"id", "parentId", "timestamp", "createdAt"})


def fresh_workspace(tmp_path: Path) -> Path:
    """The same directory for every mode, made again: the same cwd, the same AGENTS.md."""
    folder = tmp_path / "project"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    (folder / "AGENTS.md").write_text("Keep files short.\n", encoding="utf-8")
    return folder


def script(server: ReplayServer) -> None:
    server.respond(tool_reply("w1", "write_file", {"path": "hello.txt", "content": "hi\n"}))
    server.respond(text_reply(ANSWER))


def sessions(tmp_path: Path) -> set[Path]:
    return set((tmp_path / "data" / "tether" / "sessions").glob("*.jsonl"))


def normalized(path: Path) -> list[Any]:
    """The session file's records, every entry ID replaced by its order of appearance (the
    parent links with it), timestamps and the header's ID and date dropped."""
    records = [json.loads(line) for line in path.read_bytes().splitlines()]
    order = {record["id"]: n for n, record in enumerate(records) if record["type"] == "entry"}
    shaped: list[Any] = []
    for record in records:
        kept = {key: value for key, value in record.items() if key not in _VOLATILE}
        if record["type"] == "entry":
            kept["at"] = order[record["id"]]
            kept["parent"] = None if record["parentId"] is None else order[record["parentId"]]
        shaped.append(kept)
    return shaped


def without_volatile(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            key: without_volatile(item)
            for key, item in value.items()  # pyright: ignore[reportUnknownVariableType]
            if key not in ("durationMs", "startedAt", "finishedAt")
        }
    if isinstance(value, list):
        return [without_volatile(item) for item in value]  # pyright: ignore[reportUnknownVariableType]
    return value


async def through_chat(tmux: Tmux, tmp_path: Path, url: str) -> Path:
    before = sessions(tmp_path)
    tmux.start(
        [str(TETHER), "chat", "--model", MODEL, "--base-url", url],
        env=chat_env(tmp_path),
        cwd=fresh_workspace(tmp_path),
    )
    await at_prompt(tmux)
    await say(tmux, PROMPT)
    await tmux.wait_for("allow write_file? [y]es / [n]o (n: reason) / [a]lways")
    await say(tmux, "y")
    await tmux.wait_for(ANSWER)
    await quit_chat(tmux)
    (made,) = sessions(tmp_path) - before
    return made


async def through_print(tmp_path: Path, url: str, *extra: str) -> tuple[Path, str]:
    path = tmp_path / f"print{len(extra)}.jsonl"
    completed = await run_tether(
        "run",
        "--model",
        MODEL,
        "--base-url",
        url,
        "--tools",
        "coding",
        "--session",
        str(path),
        "-p",
        PROMPT,
        *extra,
        env=chat_env(tmp_path),
        cwd=fresh_workspace(tmp_path),
    )
    assert completed.returncode == 0, completed.err
    return path, completed.out


async def through_rpc(tmp_path: Path, url: str) -> tuple[Path, list[Any]]:
    before = sessions(tmp_path)

    async def yes(request: RpcApprovalRequest) -> Literal["yes", "no", "always"]:
        assert request.name == "write_file"
        return "yes"

    client = await RpcClient.start(
        "--model",
        MODEL,
        "--base-url",
        url,
        "--tools",
        "coding",
        env=chat_env(tmp_path),
        cwd=fresh_workspace(tmp_path),
        command=[str(TETHER)],
    )
    async with client:
        lines = await client.run(PROMPT, yes)
    assert await client.close() == 0
    (made,) = sessions(tmp_path) - before
    return made, [line.event for line in lines if isinstance(line, RpcEvent)]


async def test_chat_print_json_and_rpc_agree(tmux: Tmux, tmp_path: Path) -> None:
    async with ReplayServer() as server:
        script(server)
        chat_file = await through_chat(tmux, tmp_path, server.url)
        assert (tmp_path / "project" / "hello.txt").read_text() == "hi\n"
        script(server)
        print_file, _ = await through_print(tmp_path, server.url)
        script(server)
        json_file, json_out = await through_print(tmp_path, server.url, "--json")
        script(server)
        rpc_file, rpc_events = await through_rpc(tmp_path, server.url)
        assert (tmp_path / "project" / "hello.txt").read_text() == "hi\n"
        bodies = [request.json for request in server.requests]

    # Each session sends its own prompt cache key (random, one per session): the same key
    # in both requests of a mode, another in each mode; the rest must be equal.
    keys = [body.pop("prompt_cache_key") for body in bodies]
    assert all(key.startswith("tether-") for key in keys)
    assert [keys[n] == keys[n + 1] for n in range(0, 8, 2)] == [True] * 4
    assert len(set(keys)) == 4
    # The same requests, two per mode: the system prompt included.
    assert len(bodies) == 8
    chat_bodies = bodies[0:2]
    for mode, start in (("print", 2), ("json", 4), ("rpc", 6)):
        assert bodies[start : start + 2] == chat_bodies, mode
    system = chat_bodies[0]["messages"][0]
    assert system["role"] == "system"
    assert "Tools: read_file, write_file, edit_file" in system["content"]
    assert f"Project directory: {tmp_path / 'project'}" in system["content"]
    assert "Keep files short." in system["content"]
    assert [m["role"] for m in chat_bodies[1]["messages"]] == [
        "system",
        "user",
        "assistant",
        "tool",
    ]

    # The same session records.
    expected = normalized(chat_file)
    assert [record["type"] for record in expected] == ["session", *["entry"] * 4]
    for mode, path in (("print", print_file), ("json", json_file), ("rpc", rpc_file)):
        assert normalized(path) == expected, mode

    # The same events from run --json and rpc.
    json_events = [json.loads(line) for line in json_out.splitlines()]
    assert [event["type"] for event in json_events][-1] == "run.finished"
    assert without_volatile(json_events) == without_volatile(rpc_events)
    for path in (chat_file, print_file, json_file, rpc_file):
        assert FAKE_KEY.encode() not in path.read_bytes()
