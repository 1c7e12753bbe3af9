"""``grep``'s one optimization (a plain literal skips files without it) gives exactly the
lines of the plain path: every line of every file matched with ``re.search``."""

from __future__ import annotations

import asyncio
import re
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from support import examples
from tether import AbortController, JsonObject, ToolCall
from tether.tools.coding import coding_tools
from tether.tools.execution import execute_tool_call

# Letters the patterns use, regex syntax, and every separator str.splitlines knows.
ALPHABET = "ab #:-\t" + ".^$*+?()[]\\|{}" + "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"
LITERALS = st.text(alphabet="ab #:-\t", min_size=1, max_size=4)
REGEXES = st.sampled_from(["a.b", "^a", "b$", "a\\b", "(?<=a)b", "a|b ", "[ab]{2}", "\\s"])
FILES = st.lists(st.text(alphabet=ALPHABET, max_size=40), min_size=1, max_size=3)


def plain_grep(files: list[str], pattern: str) -> list[str]:
    """The reference: each file's lines as ``grep`` splits them, each matched by the regex."""
    compiled = re.compile(pattern)
    found: list[str] = []
    for index, text in enumerate(files):
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
