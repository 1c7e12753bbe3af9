"""``grep``'s fast paths (a plain literal skips files whose bytes do not hold it, before they
are decoded; a file read whole in one short read) give exactly the lines of the plain path:
every line of every file, decoded as UTF-8 with replacement, matched with ``re.search``."""

from __future__ import annotations

import asyncio
import os
import re
import tempfile
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from support import examples
from tether import AbortController, JsonObject, ToolCall
from tether.tools.coding import coding_tools, search
from tether.tools.coding.walk import SearchBudget, walk
from tether.tools.coding.workspace import Workspace
from tether.tools.execution import execute_tool_call

# Letters the patterns use, regex syntax, and every separator str.splitlines knows.
ALPHABET = "ab #:-\t" + ".^$*+?()[]\\|{}" + "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"
LITERALS = st.text(alphabet="ab #:-\t", min_size=1, max_size=4)
REGEXES = st.sampled_from(["a.b", "^a", "b$", "a\\b", "(?<=a)b", "a|b ", "[ab]{2}", "\\s"])
FILES = st.lists(st.text(alphabet=ALPHABET, max_size=40), min_size=1, max_size=3)
# Bytes that are not all UTF-8: a lone continuation byte, a truncated sequence, an overlong
# form, a surrogate's encoding, U+FFFD itself, and characters of 2, 3 and 4 bytes.
PIECES = st.sampled_from(
    [
        *(b"a", b"b", b" ", b"\n", b"\x80", b"\xe2\x82", b"\xc0\xaf", b"\xed\xa0\x80"),
        *("\ufffd".encode(), "é".encode(), "€".encode(), "😀".encode()),
    ]
)
BYTE_FILES = st.lists(st.lists(PIECES, max_size=30).map(b"".join), min_size=1, max_size=3)
WIDE_LITERALS = st.text(alphabet="ab é€😀\ufffd", min_size=1, max_size=3)


def plain_grep(files: list[str], pattern: str) -> list[str]:
    """The reference: each file's lines as ``grep`` splits them, each matched by the regex."""
    compiled = re.compile(pattern)
    found: list[str] = []
    for index, text in enumerate(files):
        if "\0" in text:  # a binary file (a NUL in the first 8 KiB): skipped
            continue
        for number, line in enumerate(text.splitlines(), start=1):
            if compiled.search(line):
                found.append(f"f{index}.txt:{number}: {line}")
    return found


def tool_grep(root: Path, pattern: str) -> list[str]:
    call = ToolCall(id="c", name="grep", arguments=JsonObject({"pattern": pattern, "limit": 1000}))
    result = asyncio.run(execute_tool_call(coding_tools(root), call, AbortController().signal))
    assert not result.is_error, result.content
    if result.content.startswith("No matches for "):
        return []
    return result.content.split("\n")[:-1]


@settings(max_examples=examples(150))
@given(files=FILES, pattern=st.one_of(LITERALS, REGEXES))
def test_grep_lines_are_the_plain_paths(files: list[str], pattern: str) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        for index, text in enumerate(files):
            (root / f"f{index}.txt").write_bytes(text.encode())
        expected = plain_grep(files, pattern)
        # grep prints files in walk order; a line is "name:number: text" and text may hold
        # separators splitlines does not split on, so compare the sets of printed lines.
        assert sorted(tool_grep(root, pattern)) == sorted(
            part for line in expected for part in line.split("\n")
        )


@settings(max_examples=examples(150))
@given(files=BYTE_FILES, pattern=WIDE_LITERALS)
def test_grep_of_bytes_that_are_not_utf8_is_the_plain_paths(
    files: list[bytes], pattern: str
) -> None:
    """The needle is looked for in the bytes: a literal is found exactly where the decoded
    text holds it, U+FFFD (which replaced bytes decode to) included."""
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        for index, data in enumerate(files):
            (root / f"f{index}.txt").write_bytes(data)
        texts = [data.decode("utf-8", errors="replace") for data in files]
        expected = plain_grep(texts, re.escape(pattern))
        assert sorted(tool_grep(root, pattern)) == sorted(
            part for line in expected for part in line.split("\n")
        )


@pytest.mark.parametrize("size", [0, 1, 65_535, 65_536, 65_537, 200_000])
def test_grep_reads_a_file_whole_at_every_size_around_a_chunk(size: int) -> None:
    """One short read is the whole file; a file of a chunk or more is read to its end."""
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        body = ("x" * 99 + "\n") * (size // 100) + "x" * (size % 100)
        (root / "f0.txt").write_text(body[: max(0, size - 4)] + "\nzz\n"[: min(4, size)])
        data = (root / "f0.txt").read_bytes()
        assert len(data) == size
        texts = [data.decode()]
        assert tool_grep(root, "zz") == plain_grep(texts, "zz")


@pytest.mark.parametrize("stated", [0, 3, 70_000])
def test_grep_reads_a_file_to_its_end_whatever_size_fstat_gave(
    stated: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first read's shortcut trusts only a short read of exactly the stated size: a file
    that holds more than ``fstat`` said (one that grew, or a size of 0) is read on to its end."""
    real = search.open_for_reading

    def stale(name: str, dir_fd: int, display: str) -> tuple[int, os.stat_result]:
        handle, info = real(name, dir_fd, display)
        fields = tuple(info)
        return handle, os.stat_result((*fields[:6], stated, *fields[7:]))

    monkeypatch.setattr(search, "open_for_reading", stale)
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        text = "a\n" * 40_000 + "zz\n"
        (root / "f0.txt").write_text(text)
        assert tool_grep(root, "zz") == plain_grep([text], "zz") == ["f0.txt:40001: zz"]


@pytest.mark.parametrize("pattern", ["zz", "z+z"])
def test_grep_skips_a_binary_file_whether_or_not_it_holds_the_needle(pattern: str) -> None:
    """The NUL sniff runs after the needle's test, on the files that pass it: a file with a
    NUL in its first 8 KiB is skipped with or without the needle, one with a NUL later is
    searched, for a literal (the needle's path) and a regex (no needle) alike."""
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        files = ["\0zz\n", "a\0\nb\n", "zz\n" + "x" * 9_000 + "\0\nzz\n", "zz\n"]
        for index, text in enumerate(files):
            (root / f"f{index}.txt").write_bytes(text.encode())
        assert tool_grep(root, pattern) == ["f2.txt:1: zz", "f2.txt:3: zz", "f3.txt:1: zz"]


@settings(max_examples=examples(30))
@given(
    names=st.lists(st.sampled_from(["a", "b/c", "b/d/e", "f/g", "h"]), min_size=1, max_size=5),
    limit=st.integers(min_value=1, max_value=8),
)
def test_the_walk_without_an_observer_is_the_observed_walk(names: list[str], limit: int) -> None:
    """``walk``'s loop for a workspace without an observer yields the entries, and stops at
    the entry budget, exactly as the observed loop does (which calls it for each entry)."""
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        for name in names:
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text("x")
        ws = Workspace(root)

        def run() -> tuple[list[str], str | None]:
            budget = SearchBudget(threading.Event(), entries=limit, steps=10, bytes=10)
            found = [path for path, _, _ in walk(ws, (), include_ignored=False, budget=budget)]
            return found, budget.note

        plain = run()
        seen: list[object] = []
        ws.observer = lambda stage, value: seen.append(value) if stage == "search:entry" else None
        assert run() == plain
        assert seen == plain[0]
