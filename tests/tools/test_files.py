"""Coding tools, files: the §08 workspace, grammar, containment, read/write/edit, escapes and
races, list_files and grep. Real temp directories; races are injected through the documented
``Workspace.observer`` seam, never with sleeps."""

# Tests inspect real temp directories synchronously on purpose.
# ruff: noqa: ASYNC240

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from tether import (
    AbortController,
    JsonObject,
    ScriptedModel,
    ToolCall,
    ToolRegistry,
    ToolResultMessage,
    UserMessage,
    Valid,
    run_agent_loop,
    text_reply,
    to_json,
    tool_call_reply,
)
from tether.tools.coding import (
    CODING_FILE_MAX_BYTES,
    CodingToolError,
    Workspace,
    bash_tool,
    coding_tools,
    edit_file_tool,
    grep_tool,
    list_files_tool,
    normalize_relative_path,
    python_process_tool,
    read_file_tool,
    search,
    write_file_tool,
)
from tether.tools.coding._write_locks import DirectoryLock
from tether.tools.coding.worker import workers_settled
from tether.tools.contract import define_tool
from tether.tools.execution import execute_tool_call

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
    assert result.error_code == code, message  # the same code as a field, not only in prose


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


@pytest.mark.parametrize(
    "pattern",
    [
        "a{4294967296}",
        "x{1,99999999999999999999}",
        "(" * 2000 + ")" * 2000,
        "(?:" * 5000 + ")" * 5000,
    ],
    ids=["huge-repeat", "huge-repeat-range", "deep-groups", "deep-non-capturing"],
)
async def test_a_regex_python_cannot_compile_is_an_invalid_pattern(
    root: Path, pattern: str
) -> None:
    # re.compile raises OverflowError for a repeat count past its limit and RecursionError for
    # groups nested too deep, not re.error: both are a model's pattern that is not one.
    tools = coding_tools(root)
    assert_code(await call(tools, "grep", pattern=pattern), "INVALID_GREP_PATTERN")


# --- hostile input (issue 25) --------------------------------------------------------------------


def test_hostile_globs_finish_promptly(root: Path) -> None:
    """The reported patterns backtracked for hours on the event loop; a child process bounds
    the test, so a regression fails here instead of hanging the suite."""
    (root / ("a" * 200)).write_text("x")
    deep = root.joinpath(*["d"] * 60)
    deep.mkdir(parents=True)
    (deep / "y").write_text("VALUE\n")
    script = (
        "import asyncio, json, sys\n"
        "from tether import AbortController, JsonObject, ToolCall\n"
        "from tether.tools.coding import coding_tools\n"
        "from tether.tools.execution import execute_tool_call\n"
        "async def main():\n"
        "    tools = coding_tools(sys.argv[1])\n"
        "    calls = [('list_files', {'pattern': p}) for p in sys.argv[2:]]\n"
        "    calls += [('grep', {'pattern': 'VALUE', 'glob': p}) for p in sys.argv[2:]]\n"
        "    for index, (name, arguments) in enumerate(calls):\n"
        "        call = ToolCall(id=f'c{index}', name=name, arguments=JsonObject(arguments))\n"
        "        result = await execute_tool_call(tools, call, AbortController().signal)\n"
        "        print(json.dumps(result.content))\n"
        "asyncio.run(main())\n"
    )
    patterns = ["*a*a*a*a*a*a*a*ab", "**/**/**/**/**/**/**/x", "**/" * 12 + "*d*d*d*d*e"]
    done = subprocess.run(
        [sys.executable, "-c", script, str(root), *patterns],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    contents = [json.loads(line) for line in done.stdout.splitlines()]
    assert contents[:3] == [f"No files match {p!r}.\n" for p in patterns]
    assert contents[3:] == ["No matches for 'VALUE'.\n"] * 3


async def test_abort_wins_while_a_walk_is_in_progress(root: Path) -> None:
    for index in range(5):
        (root / f"f{index}.txt").write_text("VALUE\n")
    ws = Workspace(root)
    loop = asyncio.get_running_loop()
    walking: asyncio.Future[None] = loop.create_future()
    release = threading.Event()
    seen: list[object] = []

    def hold(stage: str, value: object) -> None:
        if stage == "search:entry":  # on the worker thread: block it mid-walk
            seen.append(value)
            if len(seen) == 1:
                loop.call_soon_threadsafe(walking.set_result, None)
            release.wait(30)

    ws.observer = hold
    tools = coding_tools(ws)
    for name, arguments in (("list_files", {}), ("grep", {"pattern": "VALUE"})):
        seen.clear()
        release.clear()
        walking = loop.create_future()
        controller = AbortController()
        call_ = ToolCall(id=f"walk-{name}", name=name, arguments=JsonObject(arguments))
        task = asyncio.ensure_future(execute_tool_call(tools, call_, controller.signal))
        async with asyncio.timeout(20):
            await walking
        controller.abort(RuntimeError("user pressed stop"))
        with pytest.raises(RuntimeError, match="user pressed stop"):
            async with asyncio.timeout(20):
                await task
        assert not release.is_set()  # the walk was still blocked when the abort won
        release.set()
        async with asyncio.timeout(20):
            await workers_settled()
        assert len(seen) == 1  # the walk stopped at the next entry


async def test_a_walk_over_its_budget_ends_with_a_coded_note(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for index in range(10):
        (root / f"f{index}.txt").write_text("VALUE\n")
    tools = coding_tools(root)
    monkeypatch.setattr(search, "SEARCH_MAX_ENTRIES", 4)
    listed = await call(tools, "list_files")
    assert listed.content.startswith("f0.txt\nf1.txt\nf2.txt\n")
    assert listed.content.splitlines()[-1].startswith("[SEARCH_LIMIT_REACHED: ")
    grepped = await call(tools, "grep", pattern="VALUE")
    assert grepped.content.splitlines()[-1].startswith("[SEARCH_LIMIT_REACHED: ")
    monkeypatch.setattr(search, "SEARCH_MAX_ENTRIES", 1_000)
    monkeypatch.setattr(search, "SEARCH_MAX_STEPS", 50)
    stepped = await call(tools, "list_files", pattern="*a*a*a*b")
    assert stepped.content.splitlines()[-1].startswith("[SEARCH_LIMIT_REACHED: ")
    monkeypatch.setattr(search, "SEARCH_MAX_STEPS", 1_000_000)
    monkeypatch.setattr(search, "GREP_MAX_TOTAL_BYTES", 20)
    scanned = await call(tools, "grep", pattern="VALUE")
    assert scanned.content.splitlines()[-1].startswith("[SEARCH_LIMIT_REACHED: ")


async def test_grep_skips_a_hard_linked_outside_file(root: Path, outside: Path) -> None:
    try:
        os.link(outside / "secret.txt", root / "hard.txt")
    except OSError:
        pytest.skip("hard links are not allowed here")
    (root / "own.txt").write_text("no secret here\n")
    tools = coding_tools(root)
    assert_code(await call(tools, "read_file", path="hard.txt"), "PATH_OUTSIDE_WORKSPACE")
    result = await call(tools, "grep", pattern="secret")
    assert result.content == "own.txt:1: no secret here\n"


async def test_edit_fails_with_edit_conflict_when_the_file_changed_meanwhile(root: Path) -> None:
    target = root / "log.txt"
    ws = Workspace(root)
    tools = coding_tools(ws)

    def append() -> None:  # in place, as `echo theirs >> log.txt` would
        with target.open("a") as handle:
            handle.write("theirs\n")

    def replace() -> None:  # by rename, as another editor would
        (root / "new").write_text("start\ntheirs\n")
        os.replace(root / "new", target)

    pending: list[Callable[[], None]] = []

    def interfere(stage: str, value: object) -> None:
        if stage == "write:before-rename" and pending:
            pending.pop()()

    ws.observer = interfere
    for kind, write_theirs in {"append": append, "replace": replace}.items():
        target.write_text("start\n")
        pending.append(write_theirs)
        result = await call(tools, "edit_file", path="log.txt", old="start\n", new="start\nmine\n")
        assert_code(result, "EDIT_CONFLICT")
        assert "read_file" in error_message(result), kind
        assert target.read_text() == "start\ntheirs\n", kind  # their change is kept
        assert leftovers(root) == []
        again = await call(tools, "edit_file", path="log.txt", old="start\n", new="start\nmine\n")
        assert again.content.startswith("Edited log.txt:"), kind
        assert target.read_text() == "start\nmine\ntheirs\n", kind


def test_a_write_that_lands_right_after_ours_is_kept(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process's write renamed over the target the moment our directory lock is
    released must neither fail our acknowledged edit nor be removed (it holds our line too)."""
    target = root / "log.txt"
    target.write_text("END\n")
    release = DirectoryLock.release
    theirs: list[str] = []

    def release_then_theirs(lock: object) -> None:
        release(lock)  # type: ignore[arg-type]
        if not theirs:  # what a second tether process does next: its own edit, renamed over
            theirs.append(target.read_text().replace("END\n", "theirs\nEND\n"))
            (root / "other-temp").write_text(theirs[0])
            os.replace(root / "other-temp", target)

    monkeypatch.setattr(DirectoryLock, "release", release_then_theirs)
    tools = coding_tools(root)
    result = asyncio.run(call(tools, "edit_file", path="log.txt", old="END\n", new="mine\nEND\n"))
    assert result.content.startswith("Edited log.txt:"), result.content
    assert theirs == ["mine\ntheirs\nEND\n"]
    assert target.read_text() == "mine\ntheirs\nEND\n"  # their file is kept, with our line


_EDITOR = """
import asyncio, sys
from tether import AbortController, JsonObject, ToolCall
from tether.tools.coding import coding_tools
from tether.tools.execution import execute_tool_call

# what a model does: read again and retry (a read that saw the file renamed under it, too)
RETRY = ("EDIT_CONFLICT", "PATH_CHANGED_DURING_READ")

async def main(root, tag, count):
    tools = coding_tools(root)
    acknowledged = 0
    for index in range(count * 100):
        if acknowledged == count:
            break
        line = f"{tag}-{acknowledged}"
        arguments = {"path": "log.txt", "old": "END\\n", "new": f"{line}\\nEND\\n"}
        call = ToolCall(id=f"c{index}", name="edit_file", arguments=JsonObject(arguments))
        result = await execute_tool_call(tools, call, AbortController().signal)
        if result.content.startswith("Edited "):
            print(line, flush=True)
            acknowledged += 1
        elif not any(code in result.content for code in RETRY):
            raise SystemExit(result.content)

asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
"""


def test_concurrent_editors_lose_no_acknowledged_edit(root: Path) -> None:
    (root / "log.txt").write_text("END\n")
    editors = [
        subprocess.Popen(
            [sys.executable, "-c", _EDITOR, str(root), f"p{index}", "12"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for index in range(4)
    ]
    acknowledged: list[str] = []
    try:
        for editor in editors:
            out, err = editor.communicate(timeout=120)
            assert editor.returncode == 0, err
            acknowledged += out.split()
    finally:  # a failed editor must not leave the others running (or their pipes open)
        for editor in editors:
            if editor.returncode is None:
                editor.kill()
                editor.communicate()
    assert len(acknowledged) == 48
    lines = (root / "log.txt").read_text().splitlines()
    assert lines[-1] == "END"
    assert sorted(lines[:-1]) == sorted(acknowledged)  # every "Edited" is in the file, once


async def test_non_utf8_names_and_output_reach_the_model_encodable(root: Path) -> None:
    name = os.fsdecode(b"caf\xe9.txt")  # 'caf\udce9.txt', as os.listdir gives it
    (root / name).write_text("VALUE\n")

    async def run_ls(value: object, context: object) -> str:
        ls = await asyncio.create_subprocess_exec("ls", cwd=root, stdout=subprocess.PIPE)
        stdout, _ = await ls.communicate()
        return stdout.decode("utf-8", "surrogateescape")  # a tool that keeps the bytes

    ls_tool = define_tool(
        name="ls", description="ls", validate=lambda value: Valid(value=value), execute=run_ls
    )
    tools = ToolRegistry([*(coding_tools(root).get(n) for n in coding_tools(root).names), ls_tool])
    model = ScriptedModel(
        [
            tool_call_reply(
                ("list_files", {}),
                ("grep", {"pattern": "VALUE"}),
                ("bash", {"command": "ls"}),
                ("ls", {}),
            ),
            text_reply("done"),
        ]
    )
    run = run_agent_loop(
        messages=[UserMessage(content="look")], model=model, tools=tools, max_steps=4
    )
    async with asyncio.timeout(30):
        result = await run.result
    assert result.status == "completed"
    request = model.requests[-1]
    # what a provider does with the next request: JSON, then UTF-8 bytes
    json.dumps(to_json(request), ensure_ascii=False).encode("utf-8")
    contents = [m.content for m in request.messages if isinstance(m, ToolResultMessage)]
    assert contents[0] == "caf\ufffd.txt\n"
    assert contents[1] == "caf\ufffd.txt:1: VALUE\n"
    assert contents[2] == "exit code 0\n--- stdout ---\ncaf\ufffd.txt\nstderr: (empty)\n"
    assert contents[3] == "caf\ufffd.txt\n"


async def test_deep_trees_are_walked_without_recursion(root: Path) -> None:
    depth = 1_100
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    opened = [fd]
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=opened[-1])
            opened.append(os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=opened[-1]))
            if len(opened) > 2:
                os.close(opened.pop(-2))
        bottom = os.open("x.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=opened[-1])
        os.write(bottom, b"VALUE\n")
        os.close(bottom)
    finally:
        for descriptor in opened:
            os.close(descriptor)
    expected = "/".join(["d"] * depth) + "/x.txt"
    try:
        tools = coding_tools(root)
        listed = await call(tools, "list_files", pattern="**/x.txt")
        assert listed.content == expected + "\n"
        grepped = await call(tools, "grep", pattern="VALUE")
        assert grepped.content == expected + ":1: VALUE\n"
    finally:
        remove_chain(root, depth)


def remove_chain(root: Path, depth: int) -> None:
    """Remove ``root/d/d/.../x.txt`` bottom-up without recursion (``rmtree`` recurses)."""
    for level in range(depth, -1, -1):
        directory = os.path.join(root, *["d"] * level) if level else str(root)
        for entry in os.listdir(directory):
            if entry != "d":
                os.unlink(os.path.join(directory, entry))
        if level:
            os.rmdir(directory)


async def test_write_file_takes_names_up_to_name_max(root: Path) -> None:
    tools = coding_tools(root)
    name = "n" * 251 + ".txt"  # 255 bytes, NAME_MAX of common file systems
    result = await call(tools, "write_file", path=f"sub/{name}", content="hello\n")
    assert result.content == f"Wrote 6 bytes to sub/{name}."
    edited = await call(tools, "edit_file", path=f"sub/{name}", old="hello", new="bye")
    assert edited.content.startswith(f"Edited sub/{name}:")
    assert (root / "sub" / name).read_text() == "bye\n"
    assert os.listdir(root / "sub") == [name]


def test_the_per_tool_factories_check_their_workspace(root: Path) -> None:
    factories = [
        read_file_tool,
        write_file_tool,
        edit_file_tool,
        list_files_tool,
        grep_tool,
        bash_tool,
        python_process_tool,
    ]
    for factory in factories:
        with pytest.raises(TypeError, match=r"\bws\b.*Workspace"):
            factory(str(root))  # pyright: ignore[reportArgumentType]
        assert factory(Workspace(root)).name == factory.__name__.removesuffix("_tool")


async def test_a_write_waits_for_the_directory_lock_and_an_abort_still_wins(root: Path) -> None:
    """Another tether process holds the directory's write lock (here: this test, through a
    descriptor of its own): the write waits on a worker thread; an abort wins at once, and
    the waiting thread closes its descriptor when the lock is finally free."""
    ws = Workspace(root)
    tools = coding_tools(ws)
    loop = asyncio.get_running_loop()
    before = set(os.listdir("/proc/self/fd"))
    for abort in (True, False):
        held = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
        fcntl.flock(held, fcntl.LOCK_EX)
        controller = AbortController()
        waiting: asyncio.Future[None] = loop.create_future()

        def lock_wait(stage: str, value: object, waiting: asyncio.Future[None] = waiting) -> None:
            if stage == "write:lock-wait":
                waiting.set_result(None)

        ws.observer = lock_wait
        arguments = JsonObject({"path": "t.txt", "content": f"abort={abort}"})
        call_ = ToolCall(id=f"lock-{abort}", name="write_file", arguments=arguments)
        task = asyncio.ensure_future(execute_tool_call(tools, call_, controller.signal))
        async with asyncio.timeout(20):
            await waiting
        if abort:
            controller.abort(RuntimeError("user pressed stop"))
            with pytest.raises(RuntimeError, match="user pressed stop"):
                async with asyncio.timeout(20):
                    await task
            os.close(held)  # the lock is free: the thread takes it, then lets it go
        else:
            loop.call_soon(os.close, held)
            async with asyncio.timeout(20):
                result = await task
            assert result.content == "Wrote 11 bytes to t.txt."
        async with asyncio.timeout(20):
            await workers_settled()
    assert (root / "t.txt").read_text() == "abort=False"
    assert leftovers(root) == []
    assert set(os.listdir("/proc/self/fd")) == before


async def test_a_directory_replaced_above_a_deep_walk_is_not_adopted(root: Path) -> None:
    """Deeper than the walk keeps descriptors for, the walk reopens the ancestors when it
    comes back; one that was replaced meanwhile is not entered again."""
    chain = root.joinpath("a", "b", *["d"] * 70)
    chain.mkdir(parents=True)
    (chain / "x.txt").write_text("deep\n")
    (root / "a" / "c").mkdir()
    (root / "a" / "c" / "y.txt").write_text("original\n")
    ws = Workspace(root)

    def swap(stage: str, value: object) -> None:
        if stage == "search:entry" and str(value).endswith("x.txt"):
            (root / "a").rename(root / "moved")
            (root / "a" / "c").mkdir(parents=True)
            (root / "a" / "c" / "evil.txt").write_text("planted\n")

    ws.observer = swap
    listed = await call(coding_tools(ws), "list_files")
    assert listed.content == "a/b/" + "d/" * 70 + "x.txt\n"
