"""Glob patterns of ``list_files`` and ``grep`` (``tether.tools.coding.globmatch``).

The reference semantics (documented in the module): pattern and path are split on ``/``; a
pattern of one segment matches the file name at any depth; ``**`` matches any number of whole
segments (at least one as the pattern's last segment); every other segment matches exactly
one path segment as ``fnmatch.fnmatchcase`` does. The matcher must agree with a direct
(exponential) recursive implementation of that, and its counted work must stay within
``c * (len(pattern) + 4) * (len(path) + 1)``: a bound on steps, not on time, so it holds on
any machine.
"""

from __future__ import annotations

import fnmatch

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tether.tools.coding.globmatch import GLOB_STEP_FACTOR, compile_glob


def reference(pattern: str, path: str) -> bool:
    stripped = pattern.strip("/")
    if "/" not in stripped:
        stripped = "**/" + stripped
    segments = [s for s in stripped.split("/") if s not in ("", ".")]
    return _reference(segments, path.split("/"))


def _reference(segments: list[str], names: list[str]) -> bool:
    if not segments:
        return not names
    head, rest = segments[0], segments[1:]
    if head == "**":
        if not rest:
            return len(names) >= 1
        return any(_reference(rest, names[k:]) for k in range(len(names) + 1))
    return bool(names) and fnmatch.fnmatchcase(names[0], head) and _reference(rest, names[1:])


def bound(pattern: str, path: str) -> int:
    return GLOB_STEP_FACTOR * (len(pattern) + 4) * (len(path) + 1)


_PIECES = ["a", "b", "*", "?", "[ab]", "[!a]", "[a-b]", "[]a]", "[", "]", "!", "-", "/", "**", "."]
patterns = (
    st.lists(st.sampled_from(_PIECES), min_size=1, max_size=8)
    .map("".join)
    .filter(lambda p: not p.startswith("/") and ".." not in p.split("/"))
)
_segment = st.text(alphabet="ab.-[]!", min_size=1, max_size=4).filter(
    lambda s: s not in (".", "..")
)
paths = st.lists(_segment, min_size=1, max_size=5).map("/".join)


@given(patterns, paths)
def test_matching_agrees_with_the_fnmatch_reference(pattern: str, path: str) -> None:
    matched, _ = compile_glob(pattern).match(path)
    assert matched == reference(pattern, path), (pattern, path)


@given(patterns, paths)
def test_work_is_bounded_by_pattern_times_path(pattern: str, path: str) -> None:
    _, steps = compile_glob(pattern).match(path)
    assert steps <= bound(pattern, path), (pattern, path, steps)


@pytest.mark.parametrize("pattern", ["./.", "/./.", "././.", "./"])
def test_a_pattern_of_only_dots_and_slashes_never_raises(pattern: str) -> None:
    """``./.`` names no segment below the root, so it matches no path (as the reference
    says); hypothesis found it raising IndexError. ``./`` strips to ``.``, which matches every
    path, as ``.`` does."""
    for path in ("a", "a/b", ".x"):
        matched, steps = compile_glob(pattern).match(path)
        assert matched == reference(pattern, path)
        assert steps <= bound(pattern, path)


def test_the_reported_hostile_patterns_stay_linear() -> None:
    cases = [
        ("*a*a*a*a*a*a*a*ab", "a" * 200),
        ("*a" * 40 + "b", "a" * 2_000),
        ("**/**/**/**/**/**/**/x", "/".join(["d"] * 200) + "/y"),
        ("**/" * 30 + "*a*a*a*b", "/".join(["a" * 20] * 60)),
        ("[!b]*" * 30 + "b", "a" * 1_000),
    ]
    for pattern, path in cases:
        matched, steps = compile_glob(pattern).match(path)
        assert not matched
        assert steps <= bound(pattern, path), (pattern, steps)


def test_work_grows_linearly_with_the_path() -> None:
    glob = compile_glob("*a*a*a*a*a*a*a*ab")
    _, small = glob.match("a" * 1_000)
    _, large = glob.match("a" * 4_000)
    assert large <= 4 * small + 100  # quadratic growth would be 16 times


def test_documented_examples() -> None:
    cases = [
        ("*.py", "src/pkg/a.py", True),
        ("*.py", "a.py", True),
        ("src/*/a.py", "src/pkg/a.py", True),
        ("src/*/a.py", "src/a.py", False),
        ("src/**", "src/a/b.txt", True),
        ("src/**", "src", False),
        ("src/**/b.txt", "src/b.txt", True),
        ("**/*", "x", True),
        ("[!a]*", "a/b", True),
        ("[^a]", "^", True),  # fnmatch: '^' is an ordinary class member
        ("a[", "a[", True),  # an unclosed '[' is a literal
        ("A*", "a", False),  # case-sensitive
    ]
    for pattern, path, expected in cases:
        assert compile_glob(pattern).match(path)[0] is expected, (pattern, path)
        assert reference(pattern, path) is expected, (pattern, path)
