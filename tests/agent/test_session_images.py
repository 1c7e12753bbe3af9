"""Images in session files: content-addressed blobs beside the file, a small reference in
the line, verified on reload; a missing or corrupt blob never loses the session (a marker
takes the image's place); blobs are durable before the line that names them. Real files in
temporary directories; faults injected through ``session_io``."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar, cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from image_support import gif, png
from support import examples
from tether.agent import Agent
from tether.agent.persistence import SessionRecorder, resume_agent
from tether.agent.session import (
    MessageEntry,
    SessionStore,
    SessionStoreError,
    SessionTree,
    parse_session,
    session_io,
)
from tether.agent.session.blobs import (
    MEDIA_TYPES,
    ImageRef,
    blob_directory_of,
    decode_image_ref,
)
from tether.jsonvalue import JsonObject
from tether.models.scripted import ScriptedModel, text_reply, tool_call_reply
from tether.protocol import (
    AssistantMessage,
    ImageBlock,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from tether.tools.coding import coding_tools

SHOT = ImageBlock.from_bytes(png(64, 48) + b"\0" * 200_000)
ICON = ImageBlock.from_bytes(gif(16, 16))


def digest(image: ImageBlock) -> str:
    return hashlib.sha256(image.data).hexdigest()


def message_of(entry: object) -> UserMessage | ToolResultMessage:
    assert isinstance(entry, MessageEntry)
    message = entry.message
    assert isinstance(message, (UserMessage, ToolResultMessage))
    return message


def images_of(entry: object) -> tuple[ImageBlock, ...]:
    return message_of(entry).images


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


async def new_store(tmp_path: Path) -> SessionStore:
    return await SessionStore.create(tmp_path / "s.jsonl", {"session_id": "s"})


async def test_images_go_to_blobs_and_the_line_holds_a_reference(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    async with await new_store(tmp_path) as store:
        user = UserMessage(id="u1", content="look", images=(SHOT, ICON))
        await store.append(None, user)
        assert store.blob_directory == str(path) + ".blobs"
    blobs = Path(blob_directory_of(path))
    assert sorted(os.listdir(blobs)) == sorted([digest(SHOT), digest(ICON)])
    assert (blobs / digest(SHOT)).read_bytes() == SHOT.data
    assert os.stat(blobs).st_mode & 0o777 == 0o700
    line = path.read_text().splitlines()[1]
    assert len(line) < 1_000  # no base64: the 200 KB image is not in the line
    refs = lines(path)[1]["message"]["images"]
    assert refs[0] == {
        "type": "imageRef",
        "sha256": digest(SHOT),
        "mediaType": "image/png",
        "width": 64,
        "height": 48,
        "size": len(SHOT.data),
    }
    async with await SessionStore.load(path) as again:
        (entry,) = again.entries
        assert message_of(entry) == user
        assert again.unavailable_images == ()
    snapshot = await SessionStore.read(path)
    assert message_of(snapshot.entries[0]) == user


async def test_tool_results_keep_their_images_and_one_image_is_one_blob(tmp_path: Path) -> None:
    call = ToolCall(id="c1", name="read_file", arguments=JsonObject({"path": "shot.png"}))
    messages = [
        UserMessage(id="u1", content="read it", images=(SHOT,)),
        AssistantMessage(id="a1", content=(call,)),
        ToolResultMessage(
            id="r1", tool_call_id="c1", tool_name="read_file", content="Read image", images=(SHOT,)
        ),
    ]
    async with await new_store(tmp_path) as store:
        await store.append_many(None, messages)
    assert os.listdir(blob_directory_of(tmp_path / "s.jsonl")) == [digest(SHOT)]
    async with await SessionStore.load(tmp_path / "s.jsonl") as again:
        assert [cast(MessageEntry, entry).message for entry in again.entries] == messages


async def test_load_removes_the_temporary_blobs_a_crash_left_and_read_does_not(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.jsonl"
    async with await new_store(tmp_path) as store:
        await store.append(None, UserMessage(id="u1", content="look", images=(SHOT,)))
    blobs = Path(blob_directory_of(path))
    (blobs / ".tmp-0123456789abcdef").write_bytes(SHOT.data[:100])  # a write a crash cut
    (blobs / ".tmp-dir").mkdir()  # not a regular file: left alone
    (blobs / "notes").write_bytes(b"not a temporary")
    snapshot = await SessionStore.read(path)  # no lock: a writer may be writing a blob
    assert message_of(snapshot.entries[0]).images == (SHOT,)
    assert ".tmp-0123456789abcdef" in os.listdir(blobs)
    async with await SessionStore.load(path) as again:  # the one writer: every temp is stale
        assert message_of(again.entries[0]).images == (SHOT,)
    assert sorted(os.listdir(blobs)) == sorted([".tmp-dir", digest(SHOT), "notes"])


async def test_a_missing_or_corrupt_blob_leaves_a_marker_and_the_session_loads(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.jsonl"
    async with await new_store(tmp_path) as store:
        first = await store.append(None, UserMessage(id="u1", content="two", images=(SHOT, ICON)))
        await store.append(first.id, AssistantMessage(id="a1", content=()))
    blobs = Path(blob_directory_of(path))
    (blobs / digest(SHOT)).unlink()
    (blobs / digest(ICON)).write_bytes(ICON.data[:-1] + b"!")  # same size, wrong digest
    async with await SessionStore.load(path) as again:
        user, assistant = (cast(MessageEntry, entry).message for entry in again.entries)
        assert type(user) is UserMessage
        assert user.images == ()
        assert user.content.splitlines() == [
            "two",
            f"[image unavailable: image/png 64x48, sha256 {digest(SHOT)[:12]}...: blob missing]",
            f"[image unavailable: image/gif 16x16, sha256 {digest(ICON)[:12]}...: blob corrupt]",
        ]
        assert assistant.id == "a1"
        reasons = [(u.entry_id, u.ref.sha256, u.reason) for u in again.unavailable_images]
        assert reasons == [
            (first.id, digest(SHOT), "missing"),
            (first.id, digest(ICON), "corrupt"),
        ]
        # the file is never rewritten: the reference stays, so a blob put back loads again
        await again.append(None, UserMessage(id="u2", content="again", images=(SHOT,)))
    async with await SessionStore.load(path) as restored:
        assert images_of(restored.entries[0]) == (SHOT,)
        assert [u.reason for u in restored.unavailable_images] == ["corrupt"]


async def test_a_blob_that_is_not_the_referenced_image_is_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    async with await new_store(tmp_path) as store:
        await store.append(None, UserMessage(id="u1", content="", images=(ICON,)))
    data = path.read_text().replace('"width":16', '"width":17')
    path.write_text(data)  # the digest verifies, the dimensions do not
    async with await SessionStore.load(path) as again:
        assert [u.reason for u in again.unavailable_images] == ["corrupt"]
        assert message_of(again.entries[0]).content.startswith(
            "[image unavailable: image/gif 17x16"
        )


async def test_a_blob_that_is_a_fifo_or_a_link_is_corrupt_never_waited_for(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.jsonl"
    async with await new_store(tmp_path) as store:
        await store.append(None, UserMessage(id="u1", content="", images=(SHOT, ICON)))
    blobs = blob_directory_of(path)
    os.unlink(os.path.join(blobs, digest(SHOT)))
    os.mkfifo(os.path.join(blobs, digest(SHOT)))
    os.rename(os.path.join(blobs, digest(ICON)), tmp_path / "icon")
    os.symlink(tmp_path / "icon", os.path.join(blobs, digest(ICON)))
    async with await SessionStore.load(path) as again:
        assert [u.reason for u in again.unavailable_images] == ["corrupt", "corrupt"]


async def test_parse_session_reads_blobs_only_when_told_where(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    async with await new_store(tmp_path) as store:
        await store.append(None, UserMessage(id="u1", content="hi", images=(ICON,)))
    data = path.read_bytes()
    alone = parse_session(data)
    assert message_of(alone.entries[0]).content.endswith(": not loaded]")
    loaded = parse_session(data, blobs=blob_directory_of(path))
    assert images_of(loaded.entries[0]) == (ICON,)


async def test_blobs_are_durable_before_the_line_that_references_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = await new_store(tmp_path)
    steps: list[str] = []
    original_rename, original_write = session_io.rename, session_io.write
    original_fsync = session_io.fsync

    def rename(source: str, destination: str) -> None:
        original_rename(source, destination)
        steps.append(f"rename {os.path.basename(destination)}")

    def write(fd: int, data: bytes | memoryview, offset: int) -> int:
        steps.append("write line" if b'"imageRef"' in bytes(data) else "write blob")
        return original_write(fd, data, offset)

    def fsync(fd: int) -> None:
        original_fsync(fd)
        steps.append("fsync")

    monkeypatch.setattr(session_io, "rename", rename)
    monkeypatch.setattr(session_io, "write", write)
    monkeypatch.setattr(session_io, "fsync", fsync)
    try:
        await store.append(None, UserMessage(id="u1", content="x", images=(ICON,)))
    finally:
        await store.close()
    blob, line = steps.index("write blob"), steps.index("write line")
    renamed = steps.index(f"rename {digest(ICON)}")
    assert blob < steps.index("fsync", blob) < renamed < line
    assert "fsync" in steps[renamed:line]  # the directory, after the rename


async def test_a_failed_blob_write_appends_nothing_and_the_store_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.jsonl"
    store = await new_store(tmp_path)
    before = path.read_bytes()

    def failing(source: str, destination: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(session_io, "rename", failing)
    with pytest.raises(OSError, match="No space"):
        await store.append(None, UserMessage(id="u1", content="x", images=(ICON,)))
    assert path.read_bytes() == before
    assert store.entries == ()
    assert os.listdir(store.blob_directory) == []  # the temp was removed
    monkeypatch.undo()
    await store.append(None, UserMessage(id="u1", content="x", images=(ICON,)))
    await store.close()
    async with await SessionStore.load(path) as again:
        assert images_of(again.entries[0]) == (ICON,)


async def test_a_blob_directory_that_is_not_a_directory_refuses_the_append(
    tmp_path: Path,
) -> None:
    store = await new_store(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.symlink(elsewhere, store.blob_directory)
    with pytest.raises(SessionStoreError) as raised:
        await store.append(None, UserMessage(id="u1", content="x", images=(ICON,)))
    assert raised.value.code == "SESSION_ROOT_CHANGED"
    assert os.listdir(elsewhere) == []
    await store.close()


# --- the reference decoder --------------------------------------------------------------------

T = TypeVar("T")


def outcome(work: Callable[[], T]) -> tuple[str | None, T | None]:
    """``(None, value)``, or ``(code, None)`` for a ``SessionStoreError``."""
    try:
        return None, work()
    except SessionStoreError as error:
        return error.code, None


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)
refs = st.builds(
    ImageRef,
    sha256=st.text("0123456789abcdef", min_size=64, max_size=64),
    media_type=st.sampled_from(sorted(MEDIA_TYPES)),
    width=st.integers(1, 8000),
    height=st.integers(1, 8000),
    size=st.integers(1, 5 * 1024 * 1024),
)
mutations = st.sampled_from(["type", "sha256", "mediaType", "width", "height", "size", "extra"])


@given(ref=refs)
def test_a_reference_round_trips(ref: ImageRef) -> None:
    assert decode_image_ref(json.loads(json.dumps(ref.to_json()))) == ref


@given(ref=refs, key=mutations, value=json_values)
@settings(max_examples=examples(300))
def test_a_changed_reference_decodes_or_is_an_invalid_message(
    ref: ImageRef, key: str, value: object
) -> None:
    data = ref.to_json()
    data[key] = value
    code, decoded = outcome(lambda: decode_image_ref(data))
    assert code in (None, "SESSION_INVALID_MESSAGE")
    assert decoded is None or decoded.to_json() == data


@given(value=json_values)
def test_any_json_value_is_a_reference_or_an_invalid_message(value: object) -> None:
    code, decoded = outcome(lambda: decode_image_ref(value))
    assert code in (None, "SESSION_INVALID_MESSAGE")
    assert decoded is None or decoded.to_json() == value


@given(images=st.lists(json_values | refs.map(ImageRef.to_json), max_size=3))
@settings(max_examples=examples(200))
def test_any_images_array_in_a_line_loads_or_is_an_invalid_message(images: list[object]) -> None:
    message = {"id": "u1", "role": "user", "content": "x", "images": images}
    record = {"type": "entry", "version": 1, "id": "e1", "parentId": None, "timestamp": "t"}
    header = {"type": "session", "version": 1, "id": "s", "createdAt": "t"}
    data = (json.dumps(header) + "\n" + json.dumps({**record, "message": message}) + "\n").encode()
    code, parsed = outcome(lambda: parse_session(data))
    assert code in (None, "SESSION_INVALID_MESSAGE")
    if parsed is not None:  # every reference is marked: no blobs are read here
        loaded = message_of(parsed.entries[0])
        marked = loaded.content.count("[image unavailable: ")
        assert marked == sum(type(i) is dict and i.get("type") == "imageRef" for i in images)


# --- through the Agent ------------------------------------------------------------------------


async def test_an_agent_records_and_resumes_prompt_and_tool_images(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "diagram.gif").write_bytes(ICON.data)
    store = await new_store(tmp_path)
    model = ScriptedModel(
        [tool_call_reply(("read_file", {"path": "diagram.gif"})), text_reply("a gif")]
    )
    agent = Agent(
        model=model, tools=coding_tools(project), recorder=SessionRecorder(SessionTree(store))
    )
    result = await agent.run("compare with the diagram", images=[SHOT])
    assert result.status == "completed"
    prompt, _, tool_result, _ = agent.messages
    assert type(prompt) is UserMessage
    assert prompt.images == (SHOT,)
    assert type(tool_result) is ToolResultMessage
    assert tool_result.images == (ICON,)
    assert model.requests[1].messages[-1] == tool_result  # the model saw the image
    await store.close()
    resumed = await resume_agent(
        SessionTree(await SessionStore.load(store.path)), model=ScriptedModel([])
    )
    assert resumed.messages == agent.messages
    assert sorted(os.listdir(store.blob_directory)) == sorted([digest(SHOT), digest(ICON)])
