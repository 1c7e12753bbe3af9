"""Coding tools, files: the §08 workspace, grammar, containment, read/write/edit, escapes and
races, list_files and grep. Real temp directories; races are injected through the documented
``Workspace.observer`` seam, never with sleeps."""

# Tests inspect real temp directories synchronously on purpose.
# ruff: noqa: ASYNC240

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest

from tether import AbortController, JsonObject, ToolCall, ToolRegistry, ToolResultMessage
from tether.tools.coding import (
    CODING_FILE_MAX_BYTES,
    CodingToolError,
    Workspace,
    coding_tools,
    normalize_relative_path,
)
from tether.tools.contract import execute_tool_call

_ids = iter(range(1_000_000))


async def call(registry: ToolRegistry, name: str, **arguments: object) -> ToolResultMessage:
    signal = AbortController().signal
    tool_call = ToolCall(id=f"call-{next(_ids)}", name=name, arguments=JsonObject(arguments))
    async with asyncio.timeout(20):
        return await execute_tool_call(registry, tool_call, signal)


def error_message(result: ToolResultMessage) -> str:
    assert result.is_error, result.content
    return str(json.loads(result.content)["error"]["message"])


def assert_code(result: ToolResultMessage, code: str) -> None:
    message = error_message(result)
    assert message.split(":", 1)[0] == code, message


def leftovers(root: Path) -> list[str]:
    return [p.name for p in root.rglob("*") if ".pify-" in p.name]


# --- grammar and workspace --------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "",
        "/etc/passwd",
        "\\x",
        "\\\\server\\share",
        "C:x",
        "c:\\x",
        "..",
        "../x",
        "a/../b",
        "a/..",
        "~",
        "~/x",
        "~root/x",
        "a\0b",
        ".",
        "./",
        "././",
        "a:b",
        "x.",
        "x ",
        "NUL.txt",
        "com1",
        "LPT9.log",
    ],
)
def test_invalid_relative_paths(path: str) -> None:
    with pytest.raises(CodingToolError) as info:
        normalize_relative_path(path)
    assert info.value.code == "INVALID_RELATIVE_PATH"
    assert str(info.value).startswith("INVALID_RELATIVE_PATH")


def test_valid_relative_paths_normalize() -> None:
    assert normalize_relative_path("./source.txt") == ("source.txt",)
    assert normalize_relative_path("a//b/./c") == ("a", "b", "c")
    assert normalize_relative_path("a\\b") == ("a", "b")


def test_workspace_root_errors(tmp_path: Path) -> None:
    with pytest.raises(CodingToolError) as info:
        Workspace(tmp_path / "missing")
    assert info.value.code == "WORKSPACE_ROOT_NOT_FOUND"
    (tmp_path / "file").write_text("x")
    with pytest.raises(CodingToolError) as info:
        Workspace(tmp_path / "file")
    assert info.value.code == "WORKSPACE_ROOT_NOT_DIRECTORY"
    for bad in ("", "a\0b"):
        with pytest.raises(CodingToolError) as info:
            Workspace(bad)
        assert info.value.code == "INVALID_WORKSPACE_ROOT"


async def test_root_replaced_fails_with_workspace_root_changed(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("old")
    tools = coding_tools(root)
    root.rename(tmp_path / "moved")
    root.mkdir()
    (root / "a.txt").write_text("new")
    for result in (
        await call(tools, "read_file", path="a.txt"),
        await call(tools, "write_file", path="a.txt", content="evil"),
        await call(tools, "edit_file", path="a.txt", old="new", new="x"),
        await call(tools, "bash", command="echo hi > b.txt"),
        await call(tools, "list_files"),
    ):
        assert_code(result, "WORKSPACE_ROOT_CHANGED")
    assert (root / "a.txt").read_text() == "new"
    assert not (root / "b.txt").exists()


async def test_root_symlink_repointed_fails(tmp_path: Path) -> None:
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "one")
    tools = coding_tools(link)
    assert not (await call(tools, "write_file", path="x.txt", content="1")).is_error
    link.unlink()
    link.symlink_to(tmp_path / "two")
    assert_code(
        await call(tools, "write_file", path="x.txt", content="2"), "WORKSPACE_ROOT_CHANGED"
    )
    assert_code(await call(tools, "read_file", path="x.txt"), "WORKSPACE_ROOT_CHANGED")
    assert (tmp_path / "one" / "x.txt").read_text() == "1"
    assert list((tmp_path / "two").iterdir()) == []


async def test_root_replaced_during_an_operation(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("content")
    ws = Workspace(root)
    tools = coding_tools(ws)

    def swap(stage: str, value: object) -> None:
        if stage == "read:before-open":
            root.rename(tmp_path / "gone")
            root.mkdir()
            (root / "a.txt").write_text("impostor")

    ws.observer = swap
    assert_code(await call(tools, "read_file", path="a.txt"), "WORKSPACE_ROOT_CHANGED")


# --- read_file ---------------------------------------------------------------------------------


async def test_read_file_whole_and_range(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "m.py").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    tools = coding_tools(tmp_path)
    whole = await call(tools, "read_file", path="./src/m.py")
    assert not whole.is_error
    assert whole.content.startswith("src/m.py (lines 1-10 of 10)\nline 1\n")
    part = await call(tools, "read_file", path="src/m.py", offset=3, limit=2)
    assert part.content == (
        "src/m.py (lines 3-4 of 10)\nline 3\nline 4\n"
        "[6 more lines; call read_file with offset=5 to continue]\n"
    )
    assert_code(await call(tools, "read_file", path="src/m.py", offset=11), "INVALID_READ_INPUT")
    (tmp_path / "empty").write_text("")
    assert (await call(tools, "read_file", path="empty")).content == "empty (empty file)\n"


async def test_read_file_errors(tmp_path: Path) -> None:
    tools = coding_tools(tmp_path)
    (tmp_path / "bin").write_bytes(b"\xff\xfe\x00")
    (tmp_path / "big").write_bytes(b"a" * (CODING_FILE_MAX_BYTES + 1))
    (tmp_path / "max").write_bytes(b"a" * CODING_FILE_MAX_BYTES)
    (tmp_path / "dir").mkdir()
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "bom").write_bytes(b"\xef\xbb\xbfhi")
    assert_code(await call(tools, "read_file", path="bin"), "FILE_NOT_UTF8")
    assert_code(await call(tools, "read_file", path="big"), "FILE_TOO_LARGE")
    assert not (await call(tools, "read_file", path="max")).is_error
    assert_code(await call(tools, "read_file", path="dir"), "FILE_NOT_REGULAR")
    assert_code(await call(tools, "read_file", path="fifo"), "FILE_NOT_REGULAR")
    assert_code(await call(tools, "read_file", path="nope"), "FILE_NOT_FOUND")
    assert_code(await call(tools, "read_file", path="nope/x"), "FILE_NOT_FOUND")
    assert_code(await call(tools, "read_file", path="../x"), "INVALID_RELATIVE_PATH")
    assert_code(await call(tools, "read_file", path="a", extra=1), "INVALID_READ_INPUT")
    bom = await call(tools, "read_file", path="bom")
    assert bom.content == "bom (lines 1-1 of 1)\nhi\n\\ No newline at end of file\n"


# --- escapes -------------------------------------------------------------------------------------


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    directory = tmp_path / "outside"
    directory.mkdir()
    (directory / "secret.txt").write_text("secret")
    return directory


@pytest.fixture
def root(tmp_path: Path) -> Path:
    directory = tmp_path / "ws"
    directory.mkdir()
    return directory


def snapshot(directory: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(directory)): p.read_bytes() for p in directory.rglob("*") if p.is_file()
    }


@pytest.mark.parametrize(
    "path", ["../outside/secret.txt", "/etc/passwd", "~/x", "a\0b", "x/../../outside/s"]
)
async def test_escape_by_grammar(root: Path, outside: Path, path: str) -> None:
    tools = coding_tools(root)
    before = snapshot(outside)
    for result in (
        await call(tools, "read_file", path=path),
        await call(tools, "write_file", path=path, content="pwn"),
        await call(tools, "edit_file", path=path, old="secret", new="pwn"),
    ):
        assert_code(result, "INVALID_RELATIVE_PATH")
    assert snapshot(outside) == before
    assert list(root.iterdir()) == []


async def test_escape_by_symlinked_parent(root: Path, outside: Path) -> None:
    (root / "link").symlink_to(outside)
    tools = coding_tools(root)
    before = snapshot(outside)
    assert_code(await call(tools, "read_file", path="link/secret.txt"), "PATH_OUTSIDE_WORKSPACE")
    assert_code(
        await call(tools, "write_file", path="link/new.txt", content="x"), "PATH_OUTSIDE_WORKSPACE"
    )
    assert_code(
        await call(tools, "write_file", path="link/secret.txt", content="x"),
        "PATH_OUTSIDE_WORKSPACE",
    )
    assert_code(
        await call(tools, "edit_file", path="link/secret.txt", old="secret", new="x"),
        "PATH_OUTSIDE_WORKSPACE",
    )
    assert snapshot(outside) == before
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]


async def test_symlinks_inside_are_followed_for_parents_and_reads(root: Path) -> None:
    (root / "real").mkdir()
    (root / "real" / "f.txt").write_text("inside")
    (root / "alias").symlink_to(root / "real")
    (root / "flink").symlink_to(root / "real" / "f.txt")
    tools = coding_tools(root)
    read = await call(tools, "read_file", path="alias/f.txt")
    assert read.content.startswith("real/f.txt (lines 1-1 of 1)")
    assert (await call(tools, "read_file", path="flink")).content.startswith("real/f.txt")
    assert not (await call(tools, "write_file", path="alias/g.txt", content="g")).is_error
    assert (root / "real" / "g.txt").read_text() == "g"


async def test_target_symlinks(root: Path, outside: Path) -> None:
    (root / "in.txt").write_text("in")
    (root / "to_in").symlink_to(root / "in.txt")
    (root / "to_out").symlink_to(outside / "secret.txt")
    (root / "dangling").symlink_to(root / "missing")
    tools = coding_tools(root)
    assert_code(await call(tools, "write_file", path="to_in", content="x"), "WRITE_TARGET_SYMLINK")
    assert_code(
        await call(tools, "write_file", path="to_out", content="x"), "PATH_OUTSIDE_WORKSPACE"
    )
    assert_code(await call(tools, "read_file", path="to_out"), "PATH_OUTSIDE_WORKSPACE")
    assert not (await call(tools, "write_file", path="dangling", content="d")).is_error
    assert (root / "dangling").read_text() == "d"
    assert not (root / "dangling").is_symlink()
    assert (root / "in.txt").read_text() == "in"
    assert (outside / "secret.txt").read_text() == "secret"


async def test_hard_link_to_outside(root: Path, outside: Path) -> None:
    try:
        os.link(outside / "secret.txt", root / "hard.txt")
    except OSError:
        pytest.skip("hard links are not allowed here")
    tools = coding_tools(root)
    assert_code(await call(tools, "read_file", path="hard.txt"), "PATH_OUTSIDE_WORKSPACE")
    assert_code(
        await call(tools, "edit_file", path="hard.txt", old="secret", new="x"),
        "PATH_OUTSIDE_WORKSPACE",
    )
    # write replaces the name (rename), never the shared inode
    assert not (await call(tools, "write_file", path="hard.txt", content="mine")).is_error
    assert (outside / "secret.txt").read_text() == "secret"
    assert (root / "hard.txt").read_text() == "mine"


async def test_symlink_swapped_in_between_check_and_open(root: Path, outside: Path) -> None:
    (root / "a.txt").write_text("benign")
    ws = Workspace(root)
    tools = coding_tools(ws)

    def swap(stage: str, value: object) -> None:
        if stage == "read:before-open":
            (root / "a.txt").unlink()
            (root / "a.txt").symlink_to(outside / "secret.txt")

    ws.observer = swap
    result = await call(tools, "read_file", path="a.txt")
    assert_code(result, "PATH_CHANGED_DURING_READ")
    assert "secret" not in result.content


async def test_file_replaced_between_open_and_recheck(root: Path) -> None:
    (root / "a.txt").write_text("one")
    ws = Workspace(root)
    tools = coding_tools(ws)

    def swap(stage: str, value: object) -> None:
        if stage == "read:before-open":
            (root / "b.txt").write_text("two")
            os.replace(root / "b.txt", root / "a.txt")

    ws.observer = swap
    # the open sees the new file; the identity re-check agrees, so this read is consistent
    assert "two" in (await call(tools, "read_file", path="a.txt")).content


# --- write_file ----------------------------------------------------------------------------------


async def test_write_creates_parents_and_keeps_mode(root: Path) -> None:
    tools = coding_tools(root)
    result = await call(tools, "write_file", path="a/b/c.txt", content="héllo")
    assert result.content == "Wrote 6 bytes to a/b/c.txt."
    assert (root / "a" / "b" / "c.txt").read_text() == "héllo"
    assert (root / "a" / "b" / "c.txt").stat().st_mode & 0o777 == 0o644
    (root / "run.sh").write_text("#!/bin/sh\n")
    (root / "run.sh").chmod(0o755)
    await call(tools, "write_file", path="run.sh", content="#!/bin/sh\necho\n")
    assert (root / "run.sh").stat().st_mode & 0o777 == 0o755
    assert leftovers(root) == []


async def test_write_errors(root: Path) -> None:
    tools = coding_tools(root)
    (root / "file").write_text("x")
    assert_code(
        await call(tools, "write_file", path="file/x.txt", content="x"),
        "WRITE_PARENT_NOT_DIRECTORY",
    )
    assert_code(
        await call(tools, "write_file", path="big", content="a" * (CODING_FILE_MAX_BYTES + 1)),
        "FILE_TOO_LARGE",
    )
    assert_code(await call(tools, "write_file", path="x", content=1), "INVALID_WRITE_INPUT")
    (root / "dir").mkdir()
    assert_code(await call(tools, "write_file", path="dir", content="x"), "WRITE_FAILED")
    assert leftovers(root) == []


async def test_temp_replaced_before_rename(root: Path) -> None:
    (root / "t.txt").write_text("original")
    ws = Workspace(root)
    tools = coding_tools(ws)

    def replace_temp(stage: str, value: object) -> None:
        if stage == "write:before-rename":
            temp = Path(str(value))
            temp.unlink()
            temp.write_text("attacker")

    ws.observer = replace_temp
    result = await call(tools, "write_file", path="t.txt", content="mine")
    assert_code(result, "WRITE_TEMP_IDENTITY_CHANGED")
    assert (root / "t.txt").read_text() == "original"
    assert leftovers(root) == []


async def test_temp_replaced_by_symlink_or_directory(root: Path, outside: Path) -> None:
    ws = Workspace(root)
    tools = coding_tools(ws)
    kinds = ["symlink", "empty-dir", "full-dir"]
    current = [""]

    def plant(stage: str, value: object) -> None:
        if stage == "write:before-rename":
            temp = Path(str(value))
            temp.unlink()
            if current[0] == "symlink":
                temp.symlink_to(outside / "secret.txt")
            else:
                temp.mkdir()
                if current[0] == "full-dir":
                    (temp / "keep").write_text("attacker")

    ws.observer = plant
    for kind in kinds:
        current[0] = kind
        result = await call(tools, "write_file", path="t.txt", content="mine")
        assert_code(result, "WRITE_TEMP_IDENTITY_CHANGED")
    assert not (root / "t.txt").exists()
    assert (outside / "secret.txt").read_text() == "secret"
    # only the attacker's non-empty directory stays, with its content
    remaining = list(root.iterdir())
    assert len(remaining) == 1
    assert remaining[0].is_dir()
    assert (remaining[0] / "keep").read_text() == "attacker"


async def test_abort_during_write_leaves_no_temp(root: Path) -> None:
    ws = Workspace(root)
    tools = coding_tools(ws)
    controller = AbortController()

    def abort(stage: str, value: object) -> None:
        if stage == "write:before-rename":
            controller.abort(RuntimeError("stop"))

    ws.observer = abort
    call_ = ToolCall(
        id="c1", name="write_file", arguments=JsonObject({"path": "t.txt", "content": "x"})
    )
    with pytest.raises(RuntimeError, match="stop"):
        async with asyncio.timeout(20):
            await execute_tool_call(tools, call_, controller.signal)
    assert list(root.iterdir()) == []


async def test_concurrent_writes_apply_in_arrival_order(root: Path) -> None:
    ws = Workspace(root)
    tools = coding_tools(ws)
    order: list[str] = []

    def record(stage: str, value: object) -> None:
        if stage == "write:before-rename":
            order.append((Path(str(value)).parent / "t.txt").read_text() if order else "-")

    ws.observer = record
    signal = AbortController().signal
    calls = [
        execute_tool_call(
            tools,
            ToolCall(
                id=f"w{i}",
                name="write_file",
                arguments=JsonObject({"path": "t.txt", "content": str(i)}),
            ),
            signal,
        )
        for i in range(20)
    ]
    async with asyncio.timeout(20):
        results = await asyncio.gather(*calls)
    assert all(not r.is_error for r in results)
    assert (root / "t.txt").read_text() == "19"
    # each writer saw its predecessor's content: strictly one at a time, in arrival order
    assert order == ["-", *[str(i) for i in range(19)]]
    assert leftovers(root) == []


# --- edit_file -----------------------------------------------------------------------------------


async def test_edit_file_unique_match_and_diff(root: Path) -> None:
    (root / "m.py").write_text("def f():\n    return 1\n")
    tools = coding_tools(root)
    result = await call(tools, "edit_file", path="m.py", old="return 1", new="return 2")
    assert not result.is_error
    assert result.content.startswith("Edited m.py:\n--- a/m.py\n+++ b/m.py\n")
    assert "-    return 1\n+    return 2\n" in result.content
    assert (root / "m.py").read_text() == "def f():\n    return 2\n"
    assert leftovers(root) == []


async def test_edit_file_zero_and_several_matches(root: Path) -> None:
    (root / "m.py").write_text("x = 1\nx = 1\n")
    tools = coding_tools(root)
    none = await call(tools, "edit_file", path="m.py", old="y = 1", new="y = 2")
    assert_code(none, "EDIT_NO_MATCH")
    assert "exact text" in error_message(none)
    many = await call(tools, "edit_file", path="m.py", old="x = 1", new="x = 2")
    assert_code(many, "EDIT_AMBIGUOUS_MATCH")
    assert "2 times" in error_message(many)
    assert "lines 1, 2" in error_message(many)
    assert "more surrounding lines" in error_message(many)
    assert_code(await call(tools, "edit_file", path="m.py", old="", new="z"), "INVALID_EDIT_INPUT")
    assert_code(await call(tools, "edit_file", path="nope.py", old="a", new="b"), "FILE_NOT_FOUND")
    assert (root / "m.py").read_text() == "x = 1\nx = 1\n"


# --- list_files and grep -------------------------------------------------------------------------


def make_tree(root: Path) -> None:
    for rel, text in {
        "src/pkg/a.py": "import os\nVALUE = 1\n",
        "src/pkg/b.py": "value = 2\n" + "x" * 500 + "VALUE\n",
        "README.md": "Value docs\n",
        ".git/config": "VALUE\n",
        "node_modules/m/index.js": "VALUE\n",
        ".venv/lib.py": "VALUE\n",
        "src/__pycache__/a.pyc": "VALUE\n",
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / "blob.bin").write_bytes(b"VALUE\0\x01")


async def test_list_files(root: Path, outside: Path) -> None:
    make_tree(root)
    (root / "out").symlink_to(outside)
    tools = coding_tools(root)
    everything = await call(tools, "list_files")
    assert everything.content.splitlines() == [
        "README.md",
        "blob.bin",
        "src/pkg/a.py",
        "src/pkg/b.py",
    ]
    assert "secret.txt" not in everything.content
    assert (
        await call(tools, "list_files", pattern="*.py")
    ).content == "src/pkg/a.py\nsrc/pkg/b.py\n"
    assert (await call(tools, "list_files", pattern="src/*/a.py")).content == "src/pkg/a.py\n"
    limited = await call(tools, "list_files", pattern="**/*", limit=1)
    assert "[1 of" in limited.content
    hidden = await call(tools, "list_files", pattern="**/*.py", include_ignored=True)
    assert ".venv/lib.py" in hidden.content
    assert_code(await call(tools, "list_files", pattern="../*"), "INVALID_RELATIVE_PATH")
    assert_code(await call(tools, "list_files", pattern="/etc/*"), "INVALID_RELATIVE_PATH")


async def test_grep(root: Path) -> None:
    make_tree(root)
    tools = coding_tools(root)
    result = await call(tools, "grep", pattern="VALUE")
    lines = result.content.splitlines()
    assert lines[0] == "src/pkg/a.py:2: VALUE = 1"
    assert lines[1].startswith("src/pkg/b.py:2: xxx")
    assert lines[1].endswith("…[line truncated]")
    assert len(lines) == 2  # .git, node_modules, .venv, __pycache__ and binary skipped
    folded = await call(tools, "grep", pattern="^value", ignore_case=True, glob="*.md")
    assert folded.content == "README.md:1: Value docs\n"
    scoped = await call(tools, "grep", pattern="import", path="src/pkg")
    assert scoped.content == "src/pkg/a.py:1: import os\n"
    assert "[1 of 2" in (await call(tools, "grep", pattern="VALUE", limit=1)).content
    assert_code(await call(tools, "grep", pattern="("), "INVALID_GREP_PATTERN")
    assert_code(await call(tools, "grep", pattern="x", path="../"), "INVALID_RELATIVE_PATH")
    assert (await call(tools, "grep", pattern="nomatch")).content == "No matches for 'nomatch'.\n"
