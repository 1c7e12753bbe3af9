"""Checkpoint 10, session trees: every §10 rule one by one, in real temp directories.

Faults are injected through the documented seam (the module-level ``session_io`` adapter),
never with sleeps; an error at every step of an append is checked to leave a file holding
every acknowledged entry. Crashes (real SIGKILLs), recovery of a torn last line and the
one-writer lock across processes are in test_session_durability.py.
"""

# Tests inspect real temp directories synchronously on purpose.
# ruff: noqa: ASYNC240

from __future__ import annotations

import asyncio
import dataclasses
import errno
import gc
import json
import os
import pickle
import stat
import sys
import threading
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, cast

import pytest

from session_support import rejects
from support import Impostor
from tether import (
    AssistantMessage,
    JsonObject,
    TetherError,
    TextBlock,
    ThinkingBlock,
    ToolCall,
    UserMessage,
    from_json,
    to_json,
)
from tether.agent import session as session_module
from tether.agent.session import (
    MAX_SESSION_FILE_BYTES,
    MAX_SESSION_LINE_BYTES,
    MAX_SESSION_RECORDS,
    SESSION_FORMAT_VERSION,
    CompactionEntry,
    CompactionSummary,
    MessageEntry,
    SessionEntry,
    SessionHeader,
    SessionLimits,
    SessionRecovery,
    SessionStore,
    SessionStoreError,
    SessionStoreOptions,
    SessionTree,
    default_sessions_dir,
    list_sessions,
    parse_session,
    session_io,
)

LIMIT = 30.0
"""Seconds a test waits for a worker thread at most (a guard, never reached)."""

LONE = "\udc00"
"""A lone surrogate: JSON lines can spell it as an escape, UTF-8 cannot hold it."""

HEADER = {
    "type": "session",
    "version": 1,
    "id": "session-001",
    "createdAt": "2026-08-26T00:00:01.000Z",
}


def options(**changes: Any) -> SessionStoreOptions:
    """Deterministic IDs (``entry-001``...) and timestamps (``...:02.000Z``...)."""
    ids = iter(range(1, 10**6))
    ticks = iter(range(1, 10**6))
    base = SessionStoreOptions(
        session_id="session-001",
        id_factory=lambda: f"entry-{next(ids):03d}",
        clock=lambda: f"2026-08-26T00:00:{next(ticks):02d}.000Z",
    )
    return dataclasses.replace(base, **changes)


def user(message_id: str, content: str) -> UserMessage:
    return UserMessage(id=message_id, content=content)


def compact(value: object, *, ascii_only: bool = False) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=ascii_only)


def header_line(**changes: Any) -> str:
    return compact({**HEADER, **changes}, ascii_only=True)


def entry_line(**changes: Any) -> str:
    """An entry line; non-ASCII text is written as ``\\u`` escapes (so a lone surrogate
    can be written, as a JavaScript writer would)."""
    record: dict[str, Any] = {
        "type": "entry",
        "version": 1,
        "id": "entry-001",
        "parentId": None,
        "timestamp": "2026-08-26T00:00:02.000Z",
        "message": {"id": "message-001", "role": "user", "content": "hello"},
    }
    record.update(changes)
    return compact(record, ascii_only=True)


def user_json(message_id: str, content: str) -> dict[str, Any]:
    return {"id": message_id, "role": "user", "content": content}


def call_message(message_id: str, call_id: str, name: str = "read_file") -> dict[str, Any]:
    return {
        "id": message_id,
        "role": "assistant",
        "content": [{"type": "toolCall", "id": call_id, "name": name, "arguments": {}}],
    }


def result_message(message_id: str, call_id: str, name: str = "read_file") -> dict[str, Any]:
    return {
        "id": message_id,
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": name,
        "content": "ok",
        "isError": False,
    }


def leftovers(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.iterdir() if ".pify-session-" in path.name)


def ids(entries: tuple[SessionEntry, ...]) -> list[str]:
    return [entry.id for entry in entries]


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "session.jsonl"


# --- the public surface ------------------------------------------------------------------------


def test_constants_and_limits() -> None:
    assert SESSION_FORMAT_VERSION == 1
    assert MAX_SESSION_LINE_BYTES == 65_536
    assert MAX_SESSION_FILE_BYTES == 4_194_304
    assert MAX_SESSION_RECORDS == 4_096
    assert SessionLimits() == SessionLimits(
        max_line_bytes=65_536, max_file_bytes=4_194_304, max_records=4_096
    )
    coding = SessionLimits.for_coding()
    assert coding.max_line_bytes == 64 * 2**20
    assert coding.max_file_bytes == 2**30
    assert coding.max_records == 1_048_576
    for bad in (0, -1, True, 1.5, 2**53):
        with pytest.raises(TypeError, match="max_records"):
            SessionLimits(max_records=cast(Any, bad))
    with pytest.raises(dataclasses.FrozenInstanceError):
        coding.max_records = 1  # type: ignore[misc]


def test_error_class() -> None:
    error = SessionStoreError("SESSION_FILE_CHANGED", "changed")
    assert isinstance(error, TetherError)
    assert (error.code, error.name, str(error)) == (
        "SESSION_FILE_CHANGED",
        "SessionStoreError",
        "changed",
    )
    copy = pickle.loads(pickle.dumps(error))
    assert (type(copy), copy.code, copy.message) == (SessionStoreError, error.code, error.message)
    with pytest.raises(AttributeError):
        error.code = "X"  # type: ignore[misc]


def test_constructors_are_guarded() -> None:
    with pytest.raises(TypeError):
        SessionStore()
    with pytest.raises(TypeError, match="Expected a SessionStore"):
        SessionStore.canonical_path_of(cast(Any, object()))
    with pytest.raises(TypeError, match="SessionStore"):
        SessionTree(cast(Any, "store"))
    with pytest.raises(TypeError, match="clock"):
        SessionStoreOptions(clock=cast(Any, "now"))
    with pytest.raises(TypeError, match="limits"):
        SessionStoreOptions(limits=cast(Any, {}))


# --- create --------------------------------------------------------------------------------------


async def test_creates_a_versioned_header_line(path: Path) -> None:
    store = await SessionStore.create(path, options())
    assert store.header == SessionHeader(id="session-001", created_at="2026-08-26T00:00:01.000Z")
    with pytest.raises(dataclasses.FrozenInstanceError):
        store.header.id = "x"  # type: ignore[misc]
    assert store.entries == ()
    assert path.read_text(encoding="utf-8") == header_line() + "\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert store.path == str(path)
    assert store.limits == SessionLimits()


async def test_create_defaults_to_uuid_ids_and_iso_clock(path: Path) -> None:
    store = await SessionStore.create(str(path))
    assert len(store.header.id) == 36
    assert store.header.id.count("-") == 4
    assert store.header.created_at.endswith("Z")
    assert "T" in store.header.created_at
    entry = await store.append(None, user("m1", "hi"))
    assert len(entry.id) == 36
    assert entry.timestamp.endswith("Z")


async def test_create_refuses_an_existing_file(path: Path) -> None:
    path.write_text("precious", encoding="utf-8")
    await rejects("SESSION_ALREADY_EXISTS", SessionStore.create(path, options()))
    assert path.read_text(encoding="utf-8") == "precious"


@pytest.mark.parametrize("bad", ["", "   ", "\u3000", 5, None])
async def test_create_checks_the_path(bad: object) -> None:
    with pytest.raises(TypeError, match="Session path is required"):
        await SessionStore.create(cast(Any, bad))


async def test_create_rejects_nul_and_missing_or_non_directory_parents(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="NUL"):
        await SessionStore.create(str(tmp_path / "a\0b"))
    with pytest.raises(FileNotFoundError):
        await SessionStore.create(tmp_path / "missing" / "s.jsonl", options())
    (tmp_path / "file").write_text("x", encoding="utf-8")
    await rejects("SESSION_ROOT_CHANGED", SessionStore.create(tmp_path / "file" / "s.jsonl"))


async def test_create_checks_header_values_before_writing(path: Path) -> None:
    for session_id in ("", "  ", 7):
        await rejects(
            "SESSION_INVALID_HEADER",
            SessionStore.create(path, options(session_id=cast(Any, session_id))),
        )
    await rejects("SESSION_INVALID_HEADER", SessionStore.create(path, options(clock=lambda: " ")))
    await rejects(
        "SESSION_INVALID_HEADER", SessionStore.create(path, options(session_id="bad\ud800"))
    )
    assert not path.exists()


async def test_options_may_be_a_plain_dict_but_not_a_subclass(path: Path) -> None:
    reads: list[str] = []

    class Hostile(dict[str, object]):
        def __getitem__(self, key: str) -> object:
            reads.append(key)
            return "session-001"

        def get(self, key: str, default: object = None) -> object:
            reads.append(key)
            return "session-001"

    await rejects(
        "SESSION_INVALID_HEADER", SessionStore.create(path, cast(Any, Hostile(session_id="x")))
    )
    assert reads == []
    assert not path.exists()
    with pytest.raises(TypeError, match="unknown session option"):
        await SessionStore.create(path, {"sessionId": "camel"})
    with pytest.raises(TypeError, match="unknown session option"):
        await SessionStore.create(path, cast(Any, {Impostor("clock"): 1}))
    with pytest.raises(TypeError, match="clock"):
        await SessionStore.create(path, {"clock": "now"})
    with pytest.raises(TypeError, match="dict or SessionStoreOptions"):
        await SessionStore.create(path, cast(Any, [("session_id", "x")]))
    store = await SessionStore.create(path, {"session_id": "from-dict", "clock": lambda: "t0"})
    assert store.header == SessionHeader(id="from-dict", created_at="t0")


async def test_a_failed_create_removes_its_own_file(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing(fd: int) -> None:
        raise OSError(errno.EIO, "injected create fsync failure")

    monkeypatch.setattr(session_io, "fsync", failing)
    with pytest.raises(OSError, match="injected create fsync failure"):
        await SessionStore.create(path, options())
    assert not path.exists()
    monkeypatch.undo()
    await SessionStore.create(path, options())


# --- append, tree, branches ----------------------------------------------------------------------


async def test_appends_in_call_order_with_ids_timestamps_and_parents(path: Path) -> None:
    store = await SessionStore.create(path, options())
    first = await store.append(None, user("message-001", "first"))
    second = await store.append(first.id, user("message-002", "second"))
    assert store.entries == (first, second)
    assert first == MessageEntry(
        id="entry-001",
        parent_id=None,
        timestamp="2026-08-26T00:00:02.000Z",
        message=user("message-001", "first"),
    )
    assert (second.id, second.parent_id, second.timestamp) == (
        "entry-002",
        "entry-001",
        "2026-08-26T00:00:03.000Z",
    )
    lines = path.read_text(encoding="utf-8").split("\n")
    assert lines == [
        header_line(),
        entry_line(message={"id": "message-001", "role": "user", "content": "first"}),
        entry_line(
            id="entry-002",
            parentId="entry-001",
            timestamp="2026-08-26T00:00:03.000Z",
            message={"id": "message-002", "role": "user", "content": "second"},
        ),
        "",
    ]
    assert store.entries is not store.entries  # a new tuple each call
    assert store.entries[0] is first  # stable records
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.id = "x"  # type: ignore[misc]


async def test_writes_the_spec_key_order_for_every_message_kind(path: Path) -> None:
    store = await SessionStore.create(path, options())
    tree = SessionTree(store)
    await tree.append(call_message("m1", "c1"))
    await tree.append(result_message("m2", "c1"))
    lines = path.read_text(encoding="utf-8").splitlines()
    assert (
        '"message":{"id":"m1","role":"assistant","content":[{"type":"toolCall","id":"c1",'
        in (lines[1])
    )
    assert lines[2].endswith(
        '"message":{"id":"m2","role":"toolResult","toolCallId":"c1","toolName":"read_file",'
        '"content":"ok","isError":false}}'
    )
    assert '"arguments":{}}]}}' in lines[1]
    text = await store.append(
        "entry-002", {"id": "m3", "role": "assistant", "content": [{"type": "text", "text": "é✓"}]}
    )
    assert (
        path.read_text(encoding="utf-8")
        .splitlines()[3]
        .endswith('{"id":"m3","role":"assistant","content":[{"type":"text","text":"é✓"}]}}')
    )
    assert text.message == AssistantMessage(id="m3", content=(TextBlock(text="é✓"),))


async def test_branches_from_an_earlier_entry_and_keeps_inactive_ones(path: Path) -> None:
    store = await SessionStore.create(path, options())
    tree = SessionTree(store)
    root = await tree.append(user("message-001", "root"))
    old_leaf = await tree.append(user("message-002", "old branch"))
    await tree.move_to(root.id)
    new_leaf = await tree.append(user("message-003", "new branch"))
    assert new_leaf.parent_id == root.id
    assert tree.active_leaf_id == new_leaf.id
    assert [cast(UserMessage, m).content for m in tree.active_messages] == ["root", "new branch"]
    assert ids(tree.entries) == [root.id, old_leaf.id, new_leaf.id]
    assert tree.entries[1] is old_leaf
    assert tree.active_entries == (root, new_leaf)
    assert tree.store is store
    await store.close()
    reloaded = SessionTree(await SessionStore.load(path, options()))
    assert reloaded.active_leaf_id == new_leaf.id  # a new tree starts at the last record
    await reloaded.move_to(old_leaf.id)
    assert [cast(UserMessage, m).content for m in reloaded.active_messages] == [
        "root",
        "old branch",
    ]


async def test_move_to_is_in_memory_only_and_sets_the_next_parent(path: Path) -> None:
    store = await SessionStore.create(path, options())
    tree = SessionTree(store)
    root = await tree.append(user("message-001", "root"))
    await tree.append(user("message-002", "child"))
    before = path.read_bytes()
    await tree.move_to(root.id)
    assert path.read_bytes() == before
    branched = await tree.append(user("message-003", "branch"))
    assert branched.parent_id == root.id
    await tree.move_to(None)
    assert tree.active_entries == ()
    assert tree.active_messages == ()
    second_root = await tree.append(user("message-004", "second root"))
    assert second_root.parent_id is None
    assert store.branch(second_root.id) == (second_root,)
    assert store.get("nope") is None
    assert store.get(cast(Any, 5)) is None


async def test_unknown_entries_have_a_stable_error(path: Path) -> None:
    store = await SessionStore.create(path, options())
    tree = SessionTree(store)
    await rejects("SESSION_ENTRY_NOT_FOUND", tree.move_to("entry-missing"))
    await rejects("SESSION_ENTRY_NOT_FOUND", tree.move_to(cast(Any, 12)))
    assert tree.active_leaf_id is None
    with pytest.raises(SessionStoreError) as caught:
        store.branch("entry-missing")
    assert caught.value.code == "SESSION_ENTRY_NOT_FOUND"


async def test_rejects_duplicate_ids_and_missing_parents_without_writing(path: Path) -> None:
    store = await SessionStore.create(path, options(id_factory=lambda: "entry-same"))
    first = await store.append(None, user("message-001", "first"))
    before = path.read_bytes()
    await rejects("SESSION_DUPLICATE_ENTRY_ID", store.append(first.id, user("message-002", "dup")))
    await rejects("SESSION_PARENT_NOT_FOUND", store.append("entry-missing", user("m3", "missing")))
    for parent in ("", "  ", 5):
        await rejects("SESSION_PARENT_NOT_FOUND", store.append(cast(Any, parent), user("m", "x")))
    assert path.read_bytes() == before
    assert len(store.entries) == 1


async def test_generated_ids_and_timestamps_must_be_non_empty(path: Path) -> None:
    store = await SessionStore.create(path, options(id_factory=lambda: " "))
    await rejects("SESSION_INVALID_RECORD", store.append(None, user("m1", "x")))
    store = await SessionStore.create(path.with_name("b.jsonl"), options(id_factory=lambda: 5))
    await rejects("SESSION_INVALID_RECORD", store.append(None, user("m1", "x")))
    ticks = iter(["t0", ""])
    store = await SessionStore.create(path.with_name("c.jsonl"), options(clock=lambda: next(ticks)))
    await rejects("SESSION_INVALID_RECORD", store.append(None, user("m1", "x")))
    store = await SessionStore.create(
        path.with_name("d.jsonl"), options(id_factory=lambda: "e\udc00")
    )
    await rejects("SESSION_INVALID_RECORD", store.append(None, user("m1", "x")))
    assert store.entries == ()


async def test_snapshots_messages_and_never_runs_caller_code(path: Path) -> None:
    store = await SessionStore.create(path, options())
    source: dict[str, Any] = {"id": "message-001", "role": "user", "content": "before"}
    entry = await store.append(None, source)
    source["content"] = "after"
    assert entry.message == user("message-001", "before")
    with pytest.raises(dataclasses.FrozenInstanceError):
        entry.message.content = "x"  # type: ignore[misc]

    reads: list[str] = []

    class Spy(dict[str, object]):
        def __getitem__(self, key: str) -> object:
            reads.append(key)
            return super().__getitem__(key)

        def get(self, key: str, default: object = None) -> object:
            reads.append(key)
            return super().get(key, default)

    class UserSubclass(UserMessage):
        pass

    hostile: list[object] = [
        Spy(id="m", role="user", content="x"),
        {"id": "m", "role": "user", "content": Spy()},
        {Impostor("id"): "m", "role": "user", "content": "x"},
        UserSubclass(id="m", content="x"),
        ("m", "user", "x"),
        None,
    ]
    for message in hostile:
        await rejects("SESSION_INVALID_MESSAGE", store.append(entry.id, cast(Any, message)))
    assert reads == []
    assert len(store.entries) == 1


INVALID_MESSAGES: list[dict[str, Any]] = [
    {"id": "m", "role": "admin", "content": "x"},
    {"id": "m", "role": "user"},
    {"role": "user", "content": "x"},  # from_json would generate an id
    {"id": " ", "role": "user", "content": "x"},
    {"id": "m", "role": "user", "content": 5},
    {"id": "m", "role": "user", "content": "x", "extra": 1},
    {"id": "m", "role": "assistant", "content": "text"},
    {"id": "m", "role": "assistant", "content": [{"type": "text"}]},
    {"id": "m", "role": "assistant", "content": [{"type": "text", "text": "x", "more": 1}]},
    {"id": "m", "role": "assistant", "content": [{"type": "image", "url": "x"}]},
    {"id": "m", "role": "assistant", "content": [{"type": "toolCall", "id": "c", "name": "n"}]},
    {
        "id": "m",
        "role": "assistant",
        "content": [{"type": "toolCall", "id": "c", "name": "n", "arguments": []}],
    },
    {
        "id": "m",
        "role": "assistant",
        "content": [{"type": "toolCall", "id": "c", "name": "n", "arguments": {"x": float("nan")}}],
    },
    {
        "id": "m",
        "role": "assistant",
        "content": [{"type": "thinking", "text": "x", "signature": 5}],
    },
    {"id": "m", "role": "toolResult", "toolCallId": "c", "toolName": "n", "content": "x"},
    {
        "id": "m",
        "role": "toolResult",
        "toolCallId": "c",
        "toolName": "n",
        "content": "x",
        "isError": 0,
    },
]


@pytest.mark.parametrize("message", INVALID_MESSAGES)
async def test_rejects_invalid_messages(path: Path, message: dict[str, Any]) -> None:
    store = await SessionStore.create(path, options())
    await rejects("SESSION_INVALID_MESSAGE", store.append(None, message))
    await rejects("SESSION_INVALID_MESSAGE", SessionTree(store).append(message))
    assert path.read_text(encoding="utf-8") == header_line() + "\n"


async def test_a_message_holding_a_lone_surrogate_is_written_escaped_and_reloads(
    path: Path,
) -> None:
    """Regression: a message holding a lone surrogate (a model's reply can: a provider's
    ``"\\ud800"`` escape decodes to one) was refused, ``SESSION_INVALID_MESSAGE``, so the
    Agent's recording failed. Its line is now written with ``\\u`` escapes (ASCII JSON)
    and reloads to the same message; other lines stay unescaped."""
    store = await SessionStore.create(path, options())
    arguments = JsonObject({"k\ud800": "v\udc00"})
    call = AssistantMessage(id="m2", content=(ToolCall(id="c", name="n", arguments=arguments),))
    written = [
        user("m1", "\udfff caf\u00e9"),
        call,
        user_json("m3", "lone \ud800 surrogate"),
        user("m4", "caf\u00e9"),
    ]
    for message in written:
        await store.append(None, message)
    lines = path.read_bytes().splitlines()
    assert b"\\udfff caf\\u00e9" in lines[1]
    assert lines[1].isascii()
    assert b"k\\ud800" in lines[2]
    assert b"v\\udc00" in lines[2]
    assert "caf\u00e9".encode() in lines[4]  # the fast path: UTF-8, no escaping
    expected = [user("m1", "\udfff caf\u00e9"), call, user("m3", "lone \ud800 surrogate")]
    expected.append(user("m4", "caf\u00e9"))
    assert messages_in(store) == expected
    assert messages_in(await SessionStore.read(path, options())) == expected
    await store.close()
    assert messages_in(await SessionStore.load(path, options())) == expected


def messages_in(store: SessionStore) -> list[Any]:
    return [entry.message for entry in store.entries if isinstance(entry, MessageEntry)]


async def test_branch_local_tool_linkage(path: Path) -> None:
    store = await SessionStore.create(path, options())
    tree = SessionTree(store)
    root = await tree.append(user("m0", "start"))
    await tree.append(call_message("m1", "call-1"))  # a pending call is fine
    await tree.move_to(root.id)
    error = await rejects(
        "SESSION_INVALID_TOOL_LINKAGE", tree.append(result_message("m2", "call-1"))
    )
    assert str(error) == "Session branch has invalid Tool linkage: ORPHAN_TOOL_RESULT"
    await tree.move_to("entry-002")
    await tree.append(result_message("m2", "call-1"))
    error = await rejects(
        "SESSION_INVALID_TOOL_LINKAGE", tree.append(result_message("m3", "call-1"))
    )
    assert str(error).endswith("DUPLICATE_TOOL_RESULT")
    error = await rejects("SESSION_INVALID_TOOL_LINKAGE", tree.append(call_message("m4", "call-1")))
    assert str(error).endswith("DUPLICATE_TOOL_CALL_ID")
    await tree.append(call_message("m5", "call-2", name="grep"))
    error = await rejects(
        "SESSION_INVALID_TOOL_LINKAGE", tree.append(result_message("m6", "call-2", name="read"))
    )
    assert str(error).endswith("TOOL_NAME_MISMATCH")
    # the same call ID on another branch is another call
    await tree.move_to(root.id)
    await tree.append(call_message("m7", "call-1"))
    await tree.append(result_message("m8", "call-1"))
    assert len(store.entries) == 6
    reloaded = await SessionStore.read(path, options())
    assert reloaded.entries == store.entries


async def test_tree_queue_linearizes_appends_and_moves(path: Path) -> None:
    store = await SessionStore.create(path, options())
    tree = SessionTree(store)
    first, second = await asyncio.gather(
        tree.append(user("message-001", "first")), tree.append(user("message-002", "second"))
    )
    assert (first.parent_id, second.parent_id) == (None, first.id)
    assert tree.active_leaf_id == second.id

    other = SessionTree(await SessionStore.create(path.with_name("b.jsonl"), options()))
    outcomes = await asyncio.gather(
        other.append(user("message-001", "first")),
        other.move_to("entry-001"),  # names the entry the queued append creates
        other.move_to(None),
        return_exceptions=True,
    )
    assert not any(isinstance(outcome, BaseException) for outcome in outcomes)
    assert other.active_leaf_id is None
    assert ids(other.entries) == ["entry-001"]


async def test_tree_continues_after_a_failed_operation(path: Path) -> None:
    generated = iter(["entry-001", "entry-001", "entry-002"])
    store = await SessionStore.create(path, options(id_factory=lambda: next(generated)))
    tree = SessionTree(store)
    await tree.append(user("message-001", "existing"))
    failed, recovered = await asyncio.gather(
        tree.append(user("message-002", "duplicate")),
        tree.append(user("message-003", "recovered")),
        return_exceptions=True,
    )
    assert isinstance(failed, SessionStoreError)
    assert failed.code == "SESSION_DUPLICATE_ENTRY_ID"
    assert isinstance(recovered, MessageEntry)
    assert (recovered.id, recovered.parent_id) == ("entry-002", "entry-001")
    assert tree.active_leaf_id == "entry-002"


async def test_serializes_concurrent_appends_and_flushes(path: Path) -> None:
    store = await SessionStore.create(path, options())
    results = await asyncio.gather(
        store.append(None, user("message-001", "one")),
        store.append(None, user("message-002", "two")),
        store.flush(),
        store.append(None, user("message-003", "three")),
        store.flush(),
    )
    assert [r.id for r in results if r is not None] == ["entry-001", "entry-002", "entry-003"]
    assert ids((await SessionStore.read(path, options())).entries) == [
        "entry-001",
        "entry-002",
        "entry-003",
    ]
    assert leftovers(path.parent) == []


# --- loading -------------------------------------------------------------------------------------


async def test_reloads_crlf_a_bom_and_a_final_record_without_newline(path: Path) -> None:
    lines = [
        header_line(),
        entry_line(),
        entry_line(
            id="entry-002",
            parentId="entry-001",
            message={"id": "message-002", "role": "user", "content": "xin chào ✓"},
        ),
    ]
    path.write_bytes(b"\xef\xbb\xbf" + "\r\n".join(lines).encode())
    tree = SessionTree(await SessionStore.load(path, options()))
    assert [cast(UserMessage, m).content for m in tree.active_messages] == ["hello", "xin chào ✓"]
    assert tree.active_leaf_id == "entry-002"


async def test_canonicalizes_a_final_record_without_newline_on_the_next_append(path: Path) -> None:
    path.write_text(f"{header_line()}\r\n{entry_line()}", encoding="utf-8")
    store = await SessionStore.load(path, options(id_factory=lambda: "entry-002"))
    await store.append("entry-001", user("message-002", "after reload"))
    text = path.read_text(encoding="utf-8")
    assert "\r" not in text
    assert text.endswith("\n")
    assert text.count("\n") == 3
    assert ids((await SessionStore.read(path, options())).entries) == ["entry-001", "entry-002"]


async def test_ignores_only_an_incomplete_final_record(path: Path) -> None:
    path.write_text(
        f'{header_line()}\n{entry_line()}\n{{"type":"entry","id":"cut', encoding="utf-8"
    )
    store = await SessionStore.read(path, options())
    assert ids(store.entries) == ["entry-001"]
    assert '"id":"cut' in path.read_text(encoding="utf-8")  # reading writes nothing
    recovered = await SessionStore.load(path, options(id_factory=lambda: "entry-002"))
    assert recovered.recovered == SessionRecovery(dropped_bytes=len('{"type":"entry","id":"cut'))
    assert '"id":"cut' not in path.read_text(encoding="utf-8")  # loading cut the torn line
    await recovered.append("entry-001", user("message-002", "after recovery"))
    assert '"id":"cut' not in path.read_text(encoding="utf-8")
    assert ids((await SessionStore.read(path, options())).entries) == ["entry-001", "entry-002"]


async def test_load_cuts_a_torn_tail_and_flush_writes_nothing(path: Path) -> None:
    path.write_text(f'{header_line()}\n{entry_line()}\n{{"type":"ent', encoding="utf-8")
    store = await SessionStore.load(path, options())
    assert path.read_text(encoding="utf-8") == f"{header_line()}\n{entry_line()}\n"
    await store.flush()
    assert path.read_text(encoding="utf-8") == f"{header_line()}\n{entry_line()}\n"


@pytest.mark.parametrize(
    "tail",
    [
        "not-json",
        f"{entry_line()}TRAIL",
        '{"type":"entry",,"id":"broken"',
        '{"type":"entry","id":truX',
        '{"type":"entry","id":"x",}',
        '{"a":[1,]',
        '{"a":01',
        '{"a":"\\x"',
        '{"a":"\x01',
        "[1, 2",
        "   ",
        '{"a": NaN}',
    ],
)
async def test_rejects_corruption_in_an_unterminated_tail(path: Path, tail: str) -> None:
    path.write_text(f"{header_line()}\n{tail}", encoding="utf-8")
    await rejects("SESSION_INVALID_JSON", SessionStore.load(path, options()))


@pytest.mark.parametrize(
    "tail",
    [
        '{"',
        '{"type":"entry","n":-',
        '{"a":1.',
        '{"a":1e',
        '{"a":tr',
        '{"a":"\\u12',
        '{"a":[{}, [',
        " {",
    ],
)
async def test_accepts_incomplete_prefixes_in_the_tail(path: Path, tail: str) -> None:
    path.write_text(f"{header_line()}\n{entry_line()}\n{tail}", encoding="utf-8")
    assert ids((await SessionStore.read(path, options())).entries) == ["entry-001"]


@pytest.mark.parametrize(
    "raw",
    [
        f"{header_line()}\nnot-json\n{entry_line()}\n",
        f"{header_line()}\n{entry_line()}\nnot-json\n",
        f'{header_line()}\n{entry_line()}\n{{"type":"entry"\n',  # incomplete but terminated
        f"{header_line()}\n\n{entry_line()}\n",  # an empty line
        f'{header_line()}\n{entry_line()[:-1]},"n":Infinity}}\n',
        "\n",
    ],
)
async def test_fails_closed_for_malformed_terminated_lines(path: Path, raw: str) -> None:
    path.write_text(raw, encoding="utf-8")
    await rejects("SESSION_INVALID_JSON", SessionStore.load(path, options()))


async def test_fails_closed_for_invalid_utf8_including_the_tail(path: Path) -> None:
    valid = f"{header_line()}\n{entry_line()}\n".encode()
    for raw in (
        valid + b"{\xc3",  # a character cut short, but where no string could hold it
        valid + b'{"a":1}\xc3',
        f"{header_line()}\n".encode() + b"\xc3\n",
        valid + b"\xed\xa0\x80",
    ):
        path.write_bytes(raw)
        await rejects("SESSION_INVALID_UTF8", SessionStore.load(path, options()))


async def test_errors_come_in_line_order(path: Path) -> None:
    path.write_bytes(f"{header_line()}\nnot-json\n".encode() + b"\xff\n")
    await rejects("SESSION_INVALID_JSON", SessionStore.load(path, options()))
    path.write_bytes(f"{header_line()}\n".encode() + b"\xff\n" + b"x" * 70_000 + b"\n")
    await rejects("SESSION_INVALID_UTF8", SessionStore.load(path, options()))
    path.write_bytes(f"{header_line()}\n".encode() + b"x" * 70_000 + b"\n\xff\n")
    await rejects("SESSION_LINE_TOO_LARGE", SessionStore.load(path, options()))
    path.write_text(f"{header_line(version=2)}\nnot-json\n", encoding="utf-8")
    await rejects("SESSION_INVALID_JSON", SessionStore.load(path, options()))


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        ("", "SESSION_INVALID_HEADER"),
        ('{"type":"session","id":"cut', "SESSION_INVALID_HEADER"),
        ("[1]\n", "SESSION_INVALID_HEADER"),
        (compact({**HEADER, "type": "entry"}) + "\n", "SESSION_INVALID_HEADER"),
        (compact({**HEADER, "extra": 1}) + "\n", "SESSION_INVALID_HEADER"),
        (
            compact({k: v for k, v in HEADER.items() if k != "createdAt"}) + "\n",
            "SESSION_INVALID_HEADER",
        ),
        (header_line(id=" ") + "\n", "SESSION_INVALID_HEADER"),
        (header_line(createdAt=5) + "\n", "SESSION_INVALID_HEADER"),
        (header_line(id="\ud800") + "\n", "SESSION_INVALID_HEADER"),
        (header_line(version=99) + "\n", "SESSION_UNSUPPORTED_VERSION"),
        (header_line(version="1") + "\n", "SESSION_UNSUPPORTED_VERSION"),
        (header_line(version=True) + "\n", "SESSION_UNSUPPORTED_VERSION"),
        (
            header_line(version={"toString": None, "valueOf": None}) + "\n",
            "SESSION_UNSUPPORTED_VERSION",
        ),
        (f"{header_line()}\n[]\n", "SESSION_INVALID_RECORD"),
        (f"{header_line()}\n{entry_line(type='note')}\n", "SESSION_INVALID_RECORD"),
        (f'{header_line()}\n{entry_line()[:-1]},"x":1}}\n', "SESSION_INVALID_RECORD"),
        (f"{header_line()}\n{entry_line(version=2)}\n", "SESSION_UNSUPPORTED_VERSION"),
        (f"{header_line()}\n{entry_line(version=[1])}\n", "SESSION_UNSUPPORTED_VERSION"),
        (f"{header_line()}\n{entry_line(id='')}\n", "SESSION_INVALID_RECORD"),
        (f"{header_line()}\n{entry_line(parentId='  ')}\n", "SESSION_INVALID_RECORD"),
        (f"{header_line()}\n{entry_line(parentId=3)}\n", "SESSION_INVALID_RECORD"),
        (f"{header_line()}\n{entry_line(timestamp=None)}\n", "SESSION_INVALID_RECORD"),
        (f"{header_line()}\n{entry_line(id=LONE)}\n", "SESSION_INVALID_RECORD"),
        (f"{header_line()}\n{entry_line(timestamp=LONE)}\n", "SESSION_INVALID_RECORD"),
        (f"{header_line()}\n{entry_line(parentId=LONE)}\n", "SESSION_INVALID_RECORD"),
        (
            f"{header_line()}\n{entry_line(message={'id': 'x', 'role': 'admin'})}\n",
            "SESSION_INVALID_MESSAGE",
        ),
        (f"{header_line()}\n{entry_line(message=[])}\n", "SESSION_INVALID_MESSAGE"),
        (
            f"{header_line()}\n"
            + entry_line(message=call_message("m", "c")).replace("{}", '{"n":1e400}')
            + "\n",
            "SESSION_INVALID_MESSAGE",
        ),
        (
            f"{header_line()}\n{entry_line(message=result_message('r', 'missing'))}\n",
            "SESSION_INVALID_TOOL_LINKAGE",
        ),
        (
            f"{header_line()}\n{entry_line()}\n{entry_line(message=user_json('m2', 'dup'))}\n",
            "SESSION_DUPLICATE_ENTRY_ID",
        ),
        (f"{header_line()}\n{entry_line(parentId='entry-missing')}\n", "SESSION_PARENT_NOT_FOUND"),
        (
            f"{header_line()}\n{entry_line(id='a', parentId='b')}\n{entry_line(id='b')}\n",
            "SESSION_PARENT_NOT_FOUND",
        ),
    ],
)
async def test_validates_headers_records_messages_and_linkage(
    path: Path, raw: str, code: str
) -> None:
    path.write_text(raw, encoding="utf-8")
    await rejects(code, SessionStore.load(path, options()))
    with pytest.raises(SessionStoreError) as caught:
        parse_session(raw.encode())
    assert caught.value.code == code


async def test_reports_versions_without_coercion(path: Path) -> None:
    path.write_text(header_line(version={"toString": None}) + "\n", encoding="utf-8")
    error = await rejects("SESSION_UNSUPPORTED_VERSION", SessionStore.load(path, options()))
    assert str(error) == "Unsupported session version non-primitive"
    path.write_text(f"{header_line()}\n{entry_line(version='2')}\n", encoding="utf-8")
    error = await rejects("SESSION_UNSUPPORTED_VERSION", SessionStore.load(path, options()))
    assert str(error) == 'Unsupported entry version string("2")'


async def test_accepts_what_javascript_reads_as_the_same_values(path: Path) -> None:
    pair = entry_line(message={"id": "m", "role": "user", "content": "😀"})
    assert "\\ud83d\\ude00" in pair  # a pair of escapes, as JavaScript writes it
    raw = header_line(version=1.0) + "\n" + pair + "\n"
    path.write_text(raw, encoding="utf-8")
    store = await SessionStore.load(path, options())
    assert cast(UserMessage, cast(MessageEntry, store.entries[0]).message).content == "😀"


async def test_load_checks_the_path(path: Path, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        await SessionStore.load(path, options())
    (tmp_path / "dir.jsonl").mkdir()
    await rejects("SESSION_FILE_CHANGED", SessionStore.load(tmp_path / "dir.jsonl", options()))
    target = tmp_path / "real.jsonl"
    target.write_text(header_line() + "\n", encoding="utf-8")
    path.symlink_to(target)
    await rejects("SESSION_FILE_CHANGED", SessionStore.load(path, options()))


async def test_load_rejects_a_file_swapped_while_it_is_opened(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path.write_text(header_line() + "\n", encoding="utf-8")
    real_open = session_io.open

    def swapping_open(name: str, flags: int, mode: int = 0o777) -> int:
        if name == str(path):
            other = path.with_name("other")
            other.write_text(header_line() + "\n", encoding="utf-8")
            os.replace(other, path)
        return real_open(name, flags, mode)

    monkeypatch.setattr(session_io, "open", swapping_open)
    await rejects("SESSION_FILE_CHANGED", SessionStore.load(path, options()))


async def test_a_symlinked_parent_works_until_it_is_retargeted(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    store = await SessionStore.create(link / "s.jsonl", options())
    direct = await SessionStore.read(real / "s.jsonl", options())
    assert SessionStore.canonical_path_of(store) == SessionStore.canonical_path_of(direct)
    assert SessionStore.canonical_path_of(store) == str(real.resolve() / "s.jsonl")
    await store.append(None, user("m1", "via the link"))
    other = tmp_path / "other"
    other.mkdir()
    link.unlink()
    link.symlink_to(other)
    await rejects("SESSION_ROOT_CHANGED", store.append(None, user("m2", "blocked")))


# --- stores and files changing underneath -----------------------------------------------------


async def test_detects_a_replaced_root_and_keeps_disk_and_memory(
    path: Path, tmp_path: Path
) -> None:
    store = await SessionStore.create(path, options())
    await store.append(None, user("message-001", "keep"))
    original = path.read_bytes()
    moved = tmp_path.with_name(tmp_path.name + "-moved")
    tmp_path.rename(moved)
    tmp_path.mkdir()
    try:
        await rejects("SESSION_ROOT_CHANGED", store.flush())
        await rejects("SESSION_ROOT_CHANGED", store.append("entry-001", user("m2", "blocked")))
        assert len(store.entries) == 1
        assert (moved / "session.jsonl").read_bytes() == original
        assert not path.exists()
    finally:
        for child in moved.iterdir():
            child.unlink()
        moved.rmdir()


async def test_detects_a_replaced_file_without_changing_memory(path: Path) -> None:
    store = await SessionStore.create(path, options())
    await store.append(None, user("message-001", "keep"))
    replacement = path.with_name("replacement.jsonl")
    replacement.write_text(header_line() + "\n", encoding="utf-8")
    os.replace(replacement, path)
    await rejects("SESSION_FILE_CHANGED", store.append("entry-001", user("m2", "blocked")))
    assert ids(store.entries) == ["entry-001"]
    assert path.read_text(encoding="utf-8") == header_line() + "\n"


async def test_detects_a_file_modified_in_place(path: Path) -> None:
    store = await SessionStore.create(path, options())
    await store.append(None, user("message-001", "keep"))
    with path.open("ab") as handle:
        handle.write(entry_line(id="foreign").encode() + b"\n")
    changed = path.read_bytes()
    await rejects("SESSION_FILE_CHANGED", store.append("entry-001", user("m2", "blocked")))
    await rejects("SESSION_FILE_CHANGED", store.flush())
    assert path.read_bytes() == changed
    assert leftovers(path.parent) == []


async def test_a_second_store_on_one_file_is_refused(path: Path) -> None:
    first = await SessionStore.create(path, options(id_factory=lambda: "entry-first"))
    await rejects("SESSION_IN_USE", SessionStore.load(path, options()))
    await rejects("SESSION_ALREADY_EXISTS", SessionStore.create(path, options()))
    entry = await first.append(None, user("message-first", "aaaaa"))
    snapshot = await SessionStore.read(path, options())
    assert SessionStore.canonical_path_of(first) == SessionStore.canonical_path_of(snapshot)
    assert snapshot.entries == (entry,)
    await first.close()
    fresh = await SessionStore.load(path, options(id_factory=lambda: "entry-third"))
    await fresh.append("entry-first", user("message-third", "after reload"))
    await fresh.close()


# --- faults, cancellation, closing ----------------------------------------------------------

STEPS = ("lstat", "stat", "realpath", "fstat", "write", "fsync")
"""The ``session_io`` calls an append makes (the checks, the write, the fsync)."""


@pytest.mark.parametrize("step", STEPS)
async def test_an_error_at_any_step_of_an_append_keeps_every_acknowledged_entry(
    path: Path, monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    store = await SessionStore.create(path, options())
    kept = await store.append(None, user("message-001", "acknowledged"))
    acknowledged = path.read_bytes()
    real = getattr(session_io, step)
    calls: list[int] = []

    def failing(*args: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:
            raise OSError(errno.EIO, f"injected {step} failure")
        return real(*args)

    monkeypatch.setattr(session_io, step, failing)
    with pytest.raises((OSError, SessionStoreError)):
        await store.append(kept.id, user("message-002", "lost"))
    assert calls
    assert path.read_bytes() == acknowledged
    assert store.entries == (kept,)
    monkeypatch.undo()
    await store.append(kept.id, user("message-003", "after"))
    messages = [
        e.message for e in parse_session(path.read_bytes()).entries if type(e) is MessageEntry
    ]
    assert [m.id for m in messages] == ["message-001", "message-003"]
    assert leftovers(path.parent) == []
    await store.close()


async def test_a_write_making_invalid_progress_fails_and_is_cut_off(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = await SessionStore.create(path, options())
    before = path.read_bytes()
    real = session_io.write
    lengths: list[int] = []

    def short(fd: int, data: bytes | memoryview, offset: int) -> int:
        lengths.append(len(data))
        if len(lengths) == 1:
            return real(fd, data[:5], offset)  # a short write: the rest follows
        return 0

    monkeypatch.setattr(session_io, "write", short)
    with pytest.raises(OSError, match="invalid progress"):
        await store.append(None, user("m1", "x"))
    assert lengths[1] == lengths[0] - 5
    assert path.read_bytes() == before
    await store.close()


def blocking(monkeypatch: pytest.MonkeyPatch, step: str) -> tuple[threading.Event, threading.Event]:
    """Make the next ``session_io.<step>`` call wait (on its worker thread) until released:
    ``(entered, release)``."""
    entered = threading.Event()
    release = threading.Event()
    real = getattr(session_io, step)

    def wait(*args: Any) -> Any:
        if not entered.is_set():
            entered.set()
            assert release.wait(LIMIT)
        return real(*args)

    monkeypatch.setattr(session_io, step, wait)
    return entered, release


async def cancelled_while_blocked(
    monkeypatch: pytest.MonkeyPatch, step: str, work: Coroutine[Any, Any, object]
) -> None:
    """Run ``work`` until its worker thread is inside ``session_io.<step>``, cancel it
    there, release the thread, and check the cancellation is what ``work`` raises."""
    entered, release = blocking(monkeypatch, step)
    task = asyncio.ensure_future(work)
    assert await asyncio.to_thread(entered.wait, LIMIT)
    task.cancel()
    await asyncio.sleep(0)  # the loop runs on meanwhile: the cancellation is delivered
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    monkeypatch.undo()


async def test_an_append_cancelled_during_its_write_still_commits_and_moves_the_leaf(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = await SessionStore.create(path, options())
    tree = SessionTree(store)
    await cancelled_while_blocked(
        monkeypatch, "fsync", tree.append(user("message-001", "durable anyway"))
    )
    assert ids(store.entries) == ["entry-001"]
    assert tree.active_leaf_id == "entry-001"
    assert ids(parse_session(path.read_bytes()).entries) == ["entry-001"]
    compaction = tree.append_compaction(
        summary_id="s", summary="x", first_kept_entry_id=None, units_before=1, units_after=1
    )
    await cancelled_while_blocked(monkeypatch, "write", compaction)
    assert tree.active_leaf_id == "entry-002"
    await store.close()


async def test_a_load_cancelled_on_its_worker_thread_lets_the_file_go(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path.write_text(header_line() + "\n", encoding="utf-8")
    await cancelled_while_blocked(monkeypatch, "lock", SessionStore.load(path, options()))
    async with await SessionStore.load(path, options()) as store:  # not SESSION_IN_USE
        assert store.entries == ()


async def test_a_flush_cancelled_during_its_check_is_cancelled(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = await SessionStore.create(path, options())
    await cancelled_while_blocked(monkeypatch, "fstat", store.flush())
    await store.flush()
    await store.close()


async def test_closed_stores_trees_and_snapshots_refuse_writes(path: Path) -> None:
    store = await SessionStore.create(path, options())
    tree = SessionTree(store)
    await tree.append(user("message-001", "kept"))
    tree.close()
    assert tree.closed
    await rejects("SESSION_CLOSED", tree.append(user("message-002", "refused")))
    await rejects("SESSION_CLOSED", tree.move_to(None))
    await rejects(
        "SESSION_CLOSED",
        tree.append_compaction(
            summary_id="s", summary="x", first_kept_entry_id=None, units_before=1, units_after=1
        ),
    )
    assert [m.id for m in tree.active_messages] == ["message-001"]  # it still reads
    await store.append("entry-001", user("message-003", "the store still writes"))
    await store.close()
    await rejects("SESSION_CLOSED", store.append(None, user("message-004", "closed")))
    await rejects("SESSION_CLOSED", store.flush())
    snapshot = await SessionStore.read(path, options())
    assert snapshot.closed
    assert ids(snapshot.entries) == ["entry-001", "entry-002"]
    await rejects("SESSION_CLOSED", snapshot.append(None, user("message-005", "read-only")))


async def test_a_dropped_store_lets_the_file_go(path: Path) -> None:
    store = await SessionStore.create(path, options())
    await store.append(None, user("message-001", "kept"))
    del store
    gc.collect()
    async with await SessionStore.load(path, options()) as again:
        assert ids(again.entries) == ["entry-001"]


async def test_an_empty_batch_writes_nothing(path: Path) -> None:
    store = await SessionStore.create(path, options())
    before = path.read_bytes()
    assert await store.append_many(None, ()) == ()
    assert path.read_bytes() == before
    await store.close()


# --- bounds -----------------------------------------------------------------------------------


def padded_line(size: int, entry_id: str = "entry-001", fill: str = "x") -> str:
    """An entry line of exactly ``size`` UTF-8 bytes, its content made of ``fill``."""
    record: dict[str, Any] = json.loads(entry_line(id=entry_id))
    record["message"]["content"] = ""
    room = size - len(compact(record).encode())
    width = len(fill.encode())
    record["message"]["content"] = fill * (room // width) + "x" * (room % width)
    line = compact(record)
    assert len(line.encode()) == size
    return line


async def test_line_bounds_on_load_and_append(path: Path) -> None:
    path.write_text(f"{header_line()}\n{padded_line(MAX_SESSION_LINE_BYTES)}\n", encoding="utf-8")
    store = await SessionStore.read(path, options(id_factory=lambda: "entry-002"))
    path.write_text(
        f"{header_line()}\n{padded_line(MAX_SESSION_LINE_BYTES + 1)}\r\n", encoding="utf-8"
    )
    await rejects("SESSION_LINE_TOO_LARGE", SessionStore.load(path, options()))
    path.write_text(f"{header_line()}\n{'x' * (MAX_SESSION_LINE_BYTES + 1)}", encoding="utf-8")
    await rejects("SESSION_LINE_TOO_LARGE", SessionStore.load(path, options()))
    # multi-byte lines count bytes, not code points ("é" is 2 bytes, "😀" 4)
    for fill in ("é", "😀"):
        wide = padded_line(MAX_SESSION_LINE_BYTES, fill=fill)
        assert len(wide) < MAX_SESSION_LINE_BYTES // 2 + 200
        path.write_text(f"{header_line()}\n{wide}\n", encoding="utf-8")
        assert len((await SessionStore.read(path, options())).entries) == 1
        path.write_text(
            f"{header_line()}\n{padded_line(MAX_SESSION_LINE_BYTES + 1, fill=fill)}\n",
            encoding="utf-8",
        )
        await rejects("SESSION_LINE_TOO_LARGE", SessionStore.load(path, options()))

    fresh = await SessionStore.create(path.with_name("b.jsonl"), options())
    overhead = len(entry_line(message={"id": "m", "role": "user", "content": ""}))
    fits = user("m", "x" * (MAX_SESSION_LINE_BYTES - overhead))
    await fresh.append(None, fits)
    await rejects(
        "SESSION_LINE_TOO_LARGE",
        fresh.append(None, user("m", "x" * (MAX_SESSION_LINE_BYTES - overhead + 1))),
    )
    assert len(fresh.entries) == 1
    assert store.entries


async def test_file_bounds_on_load_and_append(path: Path) -> None:
    path.write_bytes(b"a" * (MAX_SESSION_FILE_BYTES + 1))
    await rejects("SESSION_FILE_TOO_LARGE", SessionStore.load(path, options()))
    # exactly 4 MiB of valid records loads
    lines = [header_line()]
    size = len(header_line()) + 1
    index = 0
    while size < MAX_SESSION_FILE_BYTES:
        index += 1
        room = MAX_SESSION_FILE_BYTES - size - 1
        length = min(60_000, room)
        if room - length < 200 and room > 60_000:
            length = room // 2
        line = padded_line(length, f"entry-{index:04d}")
        lines.append(line)
        size += len(line) + 1
    data = ("\n".join(lines) + "\n").encode()
    assert len(data) == MAX_SESSION_FILE_BYTES
    path.write_bytes(data)
    store = await SessionStore.load(path, options())
    assert len(store.entries) == index
    await rejects("SESSION_FILE_TOO_LARGE", store.append(None, user("m", "x")))
    assert path.read_bytes() == data
    assert leftovers(path.parent) == []
    path.write_bytes(data + b"\n")
    await rejects("SESSION_FILE_TOO_LARGE", SessionStore.load(path, options()))


async def test_record_bounds_at_the_default_limit(path: Path) -> None:
    lines = [header_line()]
    for index in range(1, MAX_SESSION_RECORDS + 1):
        lines.append(
            entry_line(
                id=f"entry-{index}", message={"id": f"m{index}", "role": "user", "content": "x"}
            )
        )
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    store = await SessionStore.load(path, options(id_factory=lambda: "entry-new"))
    assert len(store.entries) == MAX_SESSION_RECORDS
    before = path.read_bytes()
    await rejects("SESSION_RECORD_LIMIT", store.append(None, user("m", "x")))
    await rejects(
        "SESSION_RECORD_LIMIT",
        store.append_compaction(
            None,
            summary_id="s",
            summary="x",
            first_kept_entry_id=None,
            units_before=1,
            units_after=1,
        ),
    )
    assert path.read_bytes() == before
    lines.append(entry_line(id="entry-extra", message={"id": "mx", "role": "user", "content": "x"}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    await store.close()
    await rejects("SESSION_RECORD_LIMIT", SessionStore.load(path, options()))


async def test_custom_limits_bound_records_lines_and_files(path: Path) -> None:
    limits = SessionLimits(max_records=2, max_line_bytes=300, max_file_bytes=700)
    store = await SessionStore.create(path, options(limits=limits))
    await store.append(None, user("m1", "x"))
    await rejects("SESSION_LINE_TOO_LARGE", store.append(None, user("m2", "x" * 300)))
    await store.append(None, user("m2", "y" * 150))
    await rejects("SESSION_RECORD_LIMIT", store.append(None, user("m3", "z")))
    assert len((await SessionStore.read(path, options(limits=limits))).entries) == 2
    await store.close()
    small = SessionLimits(max_file_bytes=500)
    await rejects("SESSION_FILE_TOO_LARGE", SessionStore.load(path, options(limits=small)))
    roomy = await SessionStore.load(
        path,
        options(limits=SessionLimits(max_records=3, max_file_bytes=700), id_factory=lambda: "e3"),
    )
    await rejects("SESSION_FILE_TOO_LARGE", roomy.append(None, user("m3", "z" * 200)))
    with pytest.raises(SessionStoreError) as caught:
        parse_session(path.read_bytes(), SessionLimits(max_records=1))
    assert caught.value.code == "SESSION_RECORD_LIMIT"


def test_parse_session_takes_bytes_only() -> None:
    with pytest.raises(TypeError, match="bytes"):
        parse_session(cast(Any, "text"))
    with pytest.raises(TypeError, match="bytes"):
        parse_session(cast(Any, bytearray(b"x")))
    parsed = parse_session(f"{header_line()}\n{entry_line()}\n".encode())
    assert parsed.header.id == "session-001"
    assert ids(parsed.entries) == ["entry-001"]


# --- protocol v2 and compaction ----------------------------------------------------------------


async def test_protocol_v2_blocks_round_trip_byte_for_byte(path: Path) -> None:
    store = await SessionStore.create(path, options())
    thinking = AssistantMessage(
        id="m1",
        content=(
            ThinkingBlock(text="let me think", signature="EqQBCkYIARgC"),
            ThinkingBlock(text="", signature="opaque==", redacted=True),
            TextBlock(text="done"),
            ToolCall(
                id="c1",
                name="write_file",
                arguments=JsonObject(
                    {"path": "a.py", "lines": [1, 2.5, None, True], "deep": {"x": {"y": []}}}
                ),
            ),
        ),
    )
    entry = await store.append(None, thinking)
    raw = path.read_bytes()
    assert b'{"type":"thinking","text":"let me think","signature":"EqQBCkYIARgC"}' in raw
    assert b'{"type":"thinking","text":"","signature":"opaque==","redacted":true}' in raw
    await store.close()
    reloaded = await SessionStore.load(path, options(id_factory=lambda: "entry-002"))
    assert reloaded.entries == (entry,)
    loaded = cast(MessageEntry, reloaded.entries[0]).message
    assert loaded == thinking
    assert to_json(loaded) == to_json(thinking)
    await reloaded.flush()
    assert path.read_bytes() == raw
    explicit = {
        "id": "m2",
        "role": "assistant",
        "content": [{"type": "thinking", "text": "t", "signature": None, "redacted": False}],
    }
    second = await reloaded.append(entry.id, explicit)  # v2 defaults may be spelled out
    assert second.message == AssistantMessage(id="m2", content=(ThinkingBlock(text="t"),))
    assert path.read_bytes().endswith(b'"content":[{"type":"thinking","text":"t"}]}}\n')


async def test_compaction_records_and_the_active_context(path: Path) -> None:
    store = await SessionStore.create(path, options())
    tree = SessionTree(store)
    await tree.append(user("m1", "first question"))
    await tree.append(call_message("m2", "c1"))
    await tree.append(result_message("m3", "c1"))
    kept = await tree.append(user("m4", "second question"))
    assert tree.active_context().summary is None
    assert tree.active_context().messages == tree.active_messages
    compaction = await tree.append_compaction(
        summary_id="summary-1",
        summary="The user asked about a file.",
        first_kept_entry_id=kept.id,
        units_before=900,
        units_after=120,
    )
    assert tree.active_leaf_id == compaction.id
    assert compaction == CompactionEntry(
        id="entry-005",
        parent_id="entry-004",
        timestamp="2026-08-26T00:00:06.000Z",
        summary=CompactionSummary(id="summary-1", content="The user asked about a file."),
        first_kept_entry_id="entry-004",
        units_before=900,
        units_after=120,
    )
    assert path.read_text(encoding="utf-8").splitlines()[-1] == compact(
        {
            "type": "compaction",
            "version": 1,
            "id": "entry-005",
            "parentId": "entry-004",
            "timestamp": "2026-08-26T00:00:06.000Z",
            "summary": {"id": "summary-1", "content": "The user asked about a file."},
            "firstKeptEntryId": "entry-004",
            "unitsBefore": 900,
            "unitsAfter": 120,
        }
    )
    answer = await tree.append(
        {"id": "m5", "role": "assistant", "content": [{"type": "text", "text": "ok"}]}
    )
    context = tree.active_context()
    assert context.summary == CompactionSummary(
        id="summary-1", content="The user asked about a file."
    )
    assert context.compaction == compaction
    assert [m.id for m in context.messages] == ["m4", "m5"]
    assert [m.id for m in tree.active_messages] == ["m1", "m2", "m3", "m4", "m5"]
    assert ids(tree.active_entries)[-2:] == [compaction.id, answer.id]
    # the call before the kept range is gone from the context: a late result is an orphan
    error = await rejects("SESSION_INVALID_TOOL_LINKAGE", tree.append(result_message("m6", "c1")))
    assert str(error).endswith("ORPHAN_TOOL_RESULT")
    # a second compaction that keeps nothing: the last one wins
    second = await tree.append_compaction(
        summary_id="summary-2",
        summary="All of it.",
        first_kept_entry_id=None,
        units_before=200,
        units_after=20,
    )
    assert tree.active_context().summary == CompactionSummary(id="summary-2", content="All of it.")
    assert tree.active_context().messages == ()
    assert tree.active_context().compaction == second
    reloaded = SessionTree(await SessionStore.read(path, options()))
    assert reloaded.entries == store.entries
    assert reloaded.active_context() == tree.active_context()
    # other branches do not see the compaction
    await reloaded.move_to("entry-003")
    assert reloaded.active_context().summary is None
    await reloaded.move_to(answer.id)
    assert reloaded.active_context() == context


async def test_compaction_keeps_must_be_on_the_branch_and_link(path: Path) -> None:
    store = await SessionStore.create(path, options())
    tree = SessionTree(store)
    root = await tree.append(user("m1", "root"))
    call = await tree.append(call_message("m2", "c1"))
    result = await tree.append(result_message("m3", "c1"))
    await tree.move_to(root.id)
    other = await tree.append(user("m4", "other branch"))
    before = path.read_bytes()
    error = await rejects(
        "SESSION_ENTRY_NOT_FOUND",
        tree.append_compaction(
            summary_id="s", summary="x", first_kept_entry_id=call.id, units_before=1, units_after=1
        ),
    )
    assert "not on the compaction's branch" in str(error)
    await tree.move_to(result.id)
    error = await rejects(
        "SESSION_INVALID_TOOL_LINKAGE",
        tree.append_compaction(
            summary_id="s",
            summary="x",
            first_kept_entry_id=result.id,
            units_before=1,
            units_after=1,
        ),
    )
    assert str(error).endswith("ORPHAN_TOOL_RESULT")
    assert path.read_bytes() == before
    kept = await tree.append_compaction(
        summary_id="s", summary="x", first_kept_entry_id=call.id, units_before=5, units_after=3
    )
    assert [m.id for m in tree.active_context().messages] == ["m2", "m3"]
    await tree.append(user("m5", "after"))
    assert (await SessionStore.read(path, options())).entries[-2] == kept
    await tree.move_to(other.id)
    bad_values: list[dict[str, Any]] = [
        {"summary_id": " ", "summary": "x", "units_before": 1, "units_after": 1},
        {"summary_id": "s", "summary": 5, "units_before": 1, "units_after": 1},
        {"summary_id": "s", "summary": "x", "units_before": -1, "units_after": 1},
        {"summary_id": "s", "summary": "x", "units_before": 1, "units_after": True},
    ]
    for bad in bad_values:
        await rejects(
            "SESSION_INVALID_RECORD", tree.append_compaction(first_kept_entry_id=None, **bad)
        )
    await rejects(
        "SESSION_ENTRY_NOT_FOUND",
        tree.append_compaction(
            summary_id="s", summary="x", first_kept_entry_id="", units_before=1, units_after=1
        ),
    )
    await rejects(
        "SESSION_PARENT_NOT_FOUND",
        store.append_compaction(
            "", summary_id="s", summary="x", first_kept_entry_id=None, units_before=1, units_after=1
        ),
    )
    root_compaction = await store.append_compaction(
        None,
        summary_id="s0",
        summary="a fresh start",
        first_kept_entry_id=None,
        units_before=0,
        units_after=0,
    )
    assert store.context(root_compaction.id) == dataclasses.replace(
        store.context(root_compaction.id), messages=()
    )


def compaction_line(**changes: Any) -> str:
    record: dict[str, Any] = {
        "type": "compaction",
        "version": 1,
        "id": "entry-002",
        "parentId": "entry-001",
        "timestamp": "2026-08-26T00:00:03.000Z",
        "summary": {"id": "s", "content": "summary"},
        "firstKeptEntryId": "entry-001",
        "unitsBefore": 10,
        "unitsAfter": 2,
    }
    record.update(changes)
    return compact(record)


@pytest.mark.parametrize(
    ("changes", "code"),
    [
        ({}, None),
        ({"firstKeptEntryId": None}, None),
        ({"firstKeptEntryId": "entry-404"}, "SESSION_INVALID_RECORD"),
        ({"firstKeptEntryId": ""}, "SESSION_INVALID_RECORD"),
        ({"summary": {"id": "s"}}, "SESSION_INVALID_RECORD"),
        ({"summary": {"id": "", "content": "x"}}, "SESSION_INVALID_RECORD"),
        ({"summary": {"id": "s", "content": None}}, "SESSION_INVALID_RECORD"),
        ({"summary": ["s", "x"]}, "SESSION_INVALID_RECORD"),
        ({"unitsBefore": -1}, "SESSION_INVALID_RECORD"),
        ({"unitsAfter": 1.5}, "SESSION_INVALID_RECORD"),
        ({"unitsAfter": False}, "SESSION_INVALID_RECORD"),
        ({"version": 2}, "SESSION_UNSUPPORTED_VERSION"),
        ({"extra": 1}, "SESSION_INVALID_RECORD"),
        ({"id": "entry-001"}, "SESSION_DUPLICATE_ENTRY_ID"),
        ({"parentId": "entry-404"}, "SESSION_PARENT_NOT_FOUND"),
    ],
)
async def test_loading_validates_compaction_records(
    path: Path, changes: dict[str, Any], code: str | None
) -> None:
    raw = f"{header_line()}\n{entry_line()}\n{compaction_line(**changes)}\n"
    path.write_text(raw, encoding="utf-8")
    if code is None:
        store = await SessionStore.load(path, options())
        assert type(store.entries[1]) is CompactionEntry
    else:
        await rejects(code, SessionStore.load(path, options()))


async def test_loading_checks_linkage_in_the_compacted_context(path: Path) -> None:
    first = entry_line(message=call_message("m1", "c1"))
    result = entry_line(id="entry-003", parentId="entry-002", message=result_message("m2", "c1"))
    kept_call = compaction_line(firstKeptEntryId="entry-001")
    dropped_call = compaction_line(firstKeptEntryId=None)
    path.write_text(f"{header_line()}\n{first}\n{kept_call}\n{result}\n", encoding="utf-8")
    assert len((await SessionStore.read(path, options())).entries) == 3
    path.write_text(f"{header_line()}\n{first}\n{dropped_call}\n{result}\n", encoding="utf-8")
    await rejects("SESSION_INVALID_TOOL_LINKAGE", SessionStore.load(path, options()))
    orphan_kept = entry_line(
        id="entry-002", parentId="entry-001", message=result_message("m2", "c1")
    )
    bad_keep = compaction_line(id="entry-003", parentId="entry-002", firstKeptEntryId="entry-002")
    path.write_text(f"{header_line()}\n{first}\n{orphan_kept}\n{bad_keep}\n", encoding="utf-8")
    await rejects("SESSION_INVALID_TOOL_LINKAGE", SessionStore.load(path, options()))


# --- the sessions directory --------------------------------------------------------------------


def test_default_sessions_dir_follows_the_xdg_rules(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert default_sessions_dir() == tmp_path / "data" / "tether" / "sessions"
    monkeypatch.setenv("XDG_DATA_HOME", "relative/is/ignored")
    assert default_sessions_dir() == tmp_path / ".local" / "share" / "tether" / "sessions"
    monkeypatch.delenv("XDG_DATA_HOME")
    assert default_sessions_dir() == tmp_path / ".local" / "share" / "tether" / "sessions"
    monkeypatch.setattr(sys, "platform", "darwin")
    assert (
        default_sessions_dir()
        == tmp_path / "Library" / "Application Support" / "tether" / "sessions"
    )
    assert not (tmp_path / "Library").exists()  # nothing is created


async def test_create_in_makes_a_private_directory_and_names_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "deep" / "sessions"
    store = await SessionStore.create_in(folder, options(session_id="abc-123"))
    assert Path(store.path) == folder / "abc-123.jsonl"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    generated = await SessionStore.create_in(folder)
    assert Path(generated.path).name == f"{generated.header.id}.jsonl"
    for bad in ("../escape", ".hidden", "a/b", "x" * 129, "", "a\0b", 5):
        await rejects(
            "SESSION_INVALID_HEADER",
            SessionStore.create_in(folder, options(session_id=cast(Any, bad))),
        )
    await rejects(
        "SESSION_ALREADY_EXISTS", SessionStore.create_in(folder, options(session_id="abc-123"))
    )
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(sys, "platform", "linux")
    default = await SessionStore.create_in(options=options(session_id="in-default"))
    assert Path(default.path) == tmp_path / "xdg" / "tether" / "sessions" / "in-default.jsonl"


async def test_list_sessions_newest_first_with_errors_listed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "sessions"
    assert list_sessions(folder) == ()
    for number, (created, content) in enumerate(
        [
            ("2026-01-02T00:00:00.000Z", "  \n\nFix the failing test in parser.py\nand more"),
            ("2026-03-01T00:00:00.000Z", "y" * 200),
            ("2025-12-31T23:59:59.000Z", None),
        ]
    ):
        store = await SessionStore.create_in(
            folder, options(session_id=f"s{number}", clock=lambda c=created: c)
        )
        if content is not None:
            await store.append(None, user("blank", "   "))
            await store.append(None, user("m", content))
        else:
            await store.append_compaction(
                None,
                summary_id="s",
                summary="only a summary",
                first_kept_entry_id=None,
                units_before=1,
                units_after=1,
            )
    (folder / "broken.jsonl").write_text("not-json\n", encoding="utf-8")
    (folder / "notes.txt").write_text("ignored", encoding="utf-8")
    marked = await SessionStore.create_in(  # held by its writer: listed all the same
        folder, options(session_id="marked", clock=lambda: "2027-01-01T00:00:00Z")
    )
    Path(marked.path + ".pify-session-recovery").write_text("x", encoding="utf-8")  # ignored
    locked = folder / "locked.jsonl"
    locked.write_text(header_line() + "\n", encoding="utf-8")
    real_open = session_io.open

    def refusing(name: str, flags: int, mode: int = 0o777) -> int:
        if name == str(locked):  # as if it were not readable (root reads anything)
            raise PermissionError(errno.EACCES, "Permission denied", name)
        return real_open(name, flags, mode)

    monkeypatch.setattr(session_io, "open", refusing)
    (folder / "dir.jsonl").mkdir()
    infos = list_sessions(folder)
    by_name = {info.path.name: info for info in infos}
    assert set(by_name) == {
        "s0.jsonl",
        "s1.jsonl",
        "s2.jsonl",
        "broken.jsonl",
        "marked.jsonl",
        "locked.jsonl",
        "dir.jsonl",
    }
    ordered = [info.path.name for info in infos if info.error is None and info.id != "session-001"]
    assert ordered == ["marked.jsonl", "s1.jsonl", "s0.jsonl", "s2.jsonl"]
    assert by_name["s0.jsonl"].title == "Fix the failing test in parser.py"
    assert by_name["s1.jsonl"].title == "y" * 80
    assert by_name["s2.jsonl"].title is None
    assert (by_name["s0.jsonl"].id, by_name["s0.jsonl"].entry_count) == ("s0", 2)
    assert by_name["s0.jsonl"].created_at == "2026-01-02T00:00:00.000Z"
    assert by_name["broken.jsonl"].error == "SESSION_INVALID_JSON"
    assert by_name["broken.jsonl"].error_message
    assert by_name["marked.jsonl"].error is None
    assert by_name["marked.jsonl"].id == "marked"
    assert by_name["dir.jsonl"].error == "SESSION_FILE_CHANGED"
    assert by_name["locked.jsonl"].error == "SESSION_UNREADABLE"
    assert by_name["s2.jsonl"].entry_count == 1
    assert all(info.modified_at > 0 for info in infos)


async def test_list_sessions_gives_each_sessions_last_message(tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    store = await SessionStore.create_in(folder, options(session_id="talk"))
    first = await store.append(None, user("m1", "The first question"))
    answer = AssistantMessage(id="m2", content=(TextBlock(text="\n  The answer\nmore"),))
    second = await store.append(first.id, answer)
    call = AssistantMessage(id="m3", content=(ToolCall(id="c", name="n", arguments=JsonObject()),))
    await store.append(second.id, call)  # no text: the answer before it is the last message
    empty = await SessionStore.create_in(folder, options(session_id="empty"))
    await empty.append(None, user("m1", "   "))
    by_id = {info.id: info for info in list_sessions(folder)}
    assert by_id["talk"].title == "The first question"
    assert by_id["talk"].last_message == "The answer"
    assert by_id["empty"].last_message is None


async def test_list_sessions_orders_odd_timestamps_by_mtime(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    monkeypatch.setattr(sys, "platform", "linux")
    older = await SessionStore.create_in(
        options=options(session_id="older", clock=lambda: "yesterday")
    )
    newer = await SessionStore.create_in(
        options=options(session_id="newer", clock=lambda: "2026-05-05T10:00:00")
    )
    os.utime(older.path, (1_000, 1_000))
    os.utime(newer.path, (2_000, 2_000))
    assert [info.id for info in list_sessions()] == ["newer", "older"]
    os.utime(older.path, (4_000_000_000, 4_000_000_000))
    assert [info.id for info in list_sessions()] == ["older", "newer"]


def test_the_fast_entry_builder_matches_the_constructor() -> None:
    fill = session_module._message_entry  # pyright: ignore[reportPrivateUsage]
    for parent in (None, "entry-000"):
        built = fill("entry-001", parent, "t", user("m", "x"))
        public = MessageEntry(
            id="entry-001", parent_id=parent, timestamp="t", message=user("m", "x")
        )
        assert built == public
        assert repr(built) == repr(public)
        assert [getattr(built, field.name) for field in dataclasses.fields(MessageEntry)] == [
            getattr(public, field.name) for field in dataclasses.fields(MessageEntry)
        ]


# --- edges of the rules -------------------------------------------------------------------------

incomplete_prefix = session_module._is_incomplete_object_prefix  # pyright: ignore[reportPrivateUsage]


@pytest.mark.parametrize(
    "text",
    [
        '{"a":"\\u12G',
        '{"a":"\\q',
        '{"a":tx',
        '{"a":nul!',
        '{"a":-x',
        '{"a":1.x',
        '{"a":1e+x',
        '{"a":@',
        '{"a"x',
        '{"a":1 x',
        "{1:2",
        '{"a":[1 x',
        '{"a":[,',
        '{"a":[1,]',
        '{"a":{}}x',
        "",
        "   ",
        "[",
    ],
)
def test_the_recognizer_rejects_impossible_prefixes(text: str) -> None:
    assert not incomplete_prefix(text)


@pytest.mark.parametrize(
    "text",
    ['{"a":{}', '{"a":[]', '{"a":[{"b":[]},', '{"a":fals', '{"a":-0.5e-', '{"a":"\\u00e', "{ "],
)
def test_the_recognizer_accepts_unfinished_prefixes(text: str) -> None:
    assert incomplete_prefix(text)


def test_single_class_decoders_agree_with_from_json() -> None:
    decoder_for = session_module._decoder_for  # pyright: ignore[reportPrivateUsage]
    samples: list[object] = [
        TextBlock(text="t"),
        ThinkingBlock(text="t", signature="s", redacted=True),
        ToolCall(id="c", name="n", arguments=JsonObject({"a": [1]})),
        user("m", "x"),
    ]
    for value in samples:
        data = to_json(value)
        assert decoder_for(type(value))(data) == from_json(data, type(value))


def escaped_compaction_line(**changes: Any) -> str:
    record: dict[str, Any] = {
        "type": "compaction",
        "version": 1,
        "id": "entry-002",
        "parentId": "entry-001",
        "timestamp": "t",
        "summary": {"id": "s", "content": "x"},
        "firstKeptEntryId": None,
        "unitsBefore": 1,
        "unitsAfter": 1,
    }
    record.update(changes)
    return compact(record, ascii_only=True)


async def test_a_compaction_record_with_a_lone_surrogate_in_a_name_is_refused(
    path: Path,
) -> None:
    for changes in [{"id": LONE}, {"timestamp": LONE}, {"firstKeptEntryId": LONE}]:
        raw = f"{header_line()}\n{entry_line()}\n{escaped_compaction_line(**changes)}\n"
        path.write_text(raw, encoding="utf-8")
        await rejects("SESSION_INVALID_RECORD", SessionStore.load(path, options()))


async def test_a_compaction_summary_holding_a_lone_surrogate_is_kept(path: Path) -> None:
    """Regression: a summary (a model's text) holding a lone surrogate was refused, on
    append and on load; it is written escaped and reloads to the same text."""
    summary = {"id": "s" + LONE, "content": "kept " + LONE}
    raw = f"{header_line()}\n{entry_line()}\n{escaped_compaction_line(summary=summary)}\n"
    path.write_text(raw, encoding="utf-8")
    loaded = await SessionStore.load(path, options(id_factory=lambda: "entry-100"))
    entry = loaded.entries[-1]
    assert isinstance(entry, CompactionEntry)
    assert (entry.summary.id, entry.summary.content) == ("s" + LONE, "kept " + LONE)
    compaction = await SessionTree(loaded).append_compaction(
        summary_id="s2",
        summary="again \ud800 caf\u00e9",
        first_kept_entry_id=None,
        units_before=1,
        units_after=1,
    )
    assert compaction.summary.content == "again \ud800 caf\u00e9"
    await loaded.close()
    again = (await SessionStore.load(path, options())).entries
    assert again[-2:] == (entry, compaction)
    assert path.read_bytes().isascii()


async def test_invalid_utf8_files_are_read_line_by_line_with_crlf(path: Path) -> None:
    path.write_bytes(f"{header_line()}\r\n{entry_line()}\r\n".encode() + b'{"a\xff')
    error = await rejects("SESSION_INVALID_UTF8", SessionStore.load(path, options()))
    assert str(error) == "Session line 3 is not valid UTF-8"
    path.write_bytes(f"{header_line()}\r\n".encode() + b"x" * 70_000 + b"\r\n\xff")
    await rejects("SESSION_LINE_TOO_LARGE", SessionStore.load(path, options()))


def failing_directory_sync(monkeypatch: pytest.MonkeyPatch, code: int) -> None:
    """Make every fsync of a directory fail with ``code`` (files sync as usual)."""
    real = session_io.fsync

    def fsync(fd: int) -> None:
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            raise OSError(code, "injected directory sync failure")
        real(fd)

    monkeypatch.setattr(session_io, "fsync", fsync)


async def test_ignored_directory_sync_errors(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    failing_directory_sync(monkeypatch, errno.EINVAL)  # cannot be synced here: ignored
    store = await SessionStore.create(path, options())
    await store.append(None, user("m1", "x"))
    assert len((await SessionStore.read(path, options())).entries) == 1


async def test_a_failing_directory_sync_fails_the_create_and_removes_the_file(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    failing_directory_sync(monkeypatch, errno.EIO)
    with pytest.raises(OSError, match="injected directory sync failure"):
        await SessionStore.create(path, options())
    assert not path.exists()


async def test_a_create_whose_file_was_replaced_meanwhile_leaves_the_replacement(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = session_io.fsync

    def replacing(fd: int) -> None:
        real(fd)
        os.remove(path)
        path.write_text("someone else's", encoding="utf-8")

    monkeypatch.setattr(session_io, "fsync", replacing)
    await rejects("SESSION_FILE_CHANGED", SessionStore.create(path, options()))
    assert path.read_text(encoding="utf-8") == "someone else's"


async def test_an_old_marker_blocks_a_create_until_load_puts_it_back(path: Path) -> None:
    marker = Path(f"{path}.pify-session-recovery")
    marker.write_text(header_line() + "\n", encoding="utf-8")
    error = await rejects("SESSION_ALREADY_EXISTS", SessionStore.create(path, options()))
    assert "load puts it back" in str(error)
    assert not path.exists()
    async with await SessionStore.load(path, options()) as store:
        assert store.header.id == "session-001"
    assert not marker.exists()


async def test_leftovers_of_a_live_process_or_not_files_are_kept(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path.write_text(header_line() + "\n", encoding="utf-8")
    ours = Path(f"{path}.pify-session-{os.getpid()}-0b1e")  # this version never makes one
    live = Path(f"{path}.pify-session-1-0b1e")  # pid 1 is alive: an old version's, maybe
    folder = Path(f"{path}.pify-session-999999999-0b1e")
    odd = Path(f"{path}.pify-session-notes")
    ours.write_text("x", encoding="utf-8")
    live.write_text("x", encoding="utf-8")
    folder.mkdir()
    odd.write_text("x", encoding="utf-8")
    Path(f"{path}.pify-session-recovery").mkdir()  # not a regular file: not put back either
    async with await SessionStore.load(path, options()):
        pass
    assert not ours.exists()
    assert live.exists()
    assert folder.is_dir()
    assert odd.exists()
    real_kill = os.kill

    def foreign(pid: int, signal: int) -> None:
        if pid == 1:
            raise PermissionError(errno.EPERM, "not permitted")
        real_kill(pid, signal)

    monkeypatch.setattr(os, "kill", foreign)
    async with await SessionStore.load(path, options()):
        pass
    assert live.exists()  # another user's live process: kept
    monkeypatch.undo()

    def unremovable(name: str) -> None:
        raise PermissionError(errno.EACCES, "Permission denied", name)

    stale = Path(f"{path}.pify-session-999999998-0b1e")
    stale.write_text("x", encoding="utf-8")
    monkeypatch.setattr(session_io, "remove", unremovable)
    async with await SessionStore.load(path, options()):  # best effort: the load works
        pass
    assert stale.exists()

    def unlistable(name: str) -> list[str]:
        raise PermissionError(errno.EACCES, "Permission denied", name)

    monkeypatch.setattr(session_io, "listdir", unlistable)
    async with await SessionStore.load(path, options()):
        pass


async def test_a_snapshot_reads_what_the_file_held_when_it_was_opened(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path.write_text(f"{header_line()}\n{entry_line()}\n", encoding="utf-8")
    real_read = session_io.read

    def cut(fd: int, size: int, offset: int) -> bytes:
        return real_read(fd, size, offset) if offset == 0 and size > 200 else b""

    monkeypatch.setattr(session_io, "read", cut)  # shorter than its size: cut meanwhile
    assert ids((await SessionStore.read(path, options())).entries) == ["entry-001"]
    monkeypatch.undo()
    small = SessionLimits(max_file_bytes=len(header_line()) + 1)
    real_lstat = session_io.lstat

    def shrunk(name: str) -> os.stat_result:
        info = real_lstat(name)
        if name != str(path):
            return info
        values = list(info)
        values[stat.ST_SIZE] = 10  # it grew between the check and the read
        return os.stat_result(values, {"st_birthtime_ns": getattr(info, "st_birthtime_ns", None)})

    monkeypatch.setattr(session_io, "lstat", shrunk)
    await rejects("SESSION_FILE_TOO_LARGE", SessionStore.read(path, options(limits=small)))


@pytest.mark.parametrize(
    ("data", "count"),
    [
        (f"{header_line()}\n{entry_line()}\r", 1),  # a last line with CR, no LF
        ("\ufeff" + header_line(), 0),  # a BOM, a header without its newline
        (f"{header_line()}\r\n" + '{"type":"entry","id":"cut\r', 0),
    ],
)
def test_an_unterminated_last_line_with_cr_or_bom(data: str, count: int) -> None:
    assert len(parse_session(data.encode()).entries) == count


async def test_a_file_that_grows_or_turns_into_a_link_while_loading(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path.write_text(header_line() + "\n", encoding="utf-8")
    real_open = session_io.open
    limits = SessionLimits(max_file_bytes=200)

    def growing(name: str, flags: int, mode: int = 0o777) -> int:
        if name == str(path):
            with open(name, "ab") as handle:
                handle.write(b"x" * 300)
        return real_open(name, flags, mode)

    monkeypatch.setattr(session_io, "open", growing)
    await rejects("SESSION_FILE_TOO_LARGE", SessionStore.load(path, options(limits=limits)))
    path.write_text(header_line() + "\n", encoding="utf-8")
    target = path.with_name("target.jsonl")
    target.write_text(header_line() + "\n", encoding="utf-8")

    def linking(name: str, flags: int, mode: int = 0o777) -> int:
        if name == str(path):
            os.remove(name)
            os.symlink(target, name)
        return real_open(name, flags, mode)

    monkeypatch.setattr(session_io, "open", linking)
    await rejects("SESSION_FILE_CHANGED", SessionStore.load(path, options()))


async def test_a_header_larger_than_the_file_limit(path: Path) -> None:
    small = SessionLimits(max_file_bytes=50)
    await rejects("SESSION_FILE_TOO_LARGE", SessionStore.create(path, options(limits=small)))
    tiny = SessionLimits(max_line_bytes=20)
    await rejects("SESSION_LINE_TOO_LARGE", SessionStore.create(path, options(limits=tiny)))
    assert not path.exists()
