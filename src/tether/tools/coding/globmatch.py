"""Glob patterns of ``list_files`` and ``grep``'s ``glob``, matched in linear time.

What a pattern means (``tests/tools/test_globmatch.py`` checks the matcher against a direct
implementation of exactly this): the pattern and the workspace-relative path are split on
``/`` (the pattern's empty and ``.`` segments are dropped). A pattern with one segment matches
the file name at any depth (``*.py`` is ``**/*.py``). A segment ``**`` matches any number of
whole path segments, zero included, except as the pattern's last segment, where it matches at
least one (``src/**`` is what lies under ``src``). Every other segment matches exactly one path
segment as ``fnmatch.fnmatchcase`` does: ``*`` any run of characters, ``?`` one character,
``[abc]``/``[a-z]`` a class, ``[!abc]`` its complement, an unclosed ``[`` itself;
case-sensitive, and a leading ``.`` is not special.

Why a matcher of its own: a translated regular expression backtracks, and a pattern such as
``*a*a*a*a*a*a*a*ab`` against a name of 200 ``a`` s takes hours. Here a segment with several
``*`` is matched with the one-resume-point algorithm for wildcards (only the last ``*`` seen
is ever resumed, Russ Cox, "Glob Matching Can Be Simple And Fast Too"); a segment with at
most one ``*`` (most of them: ``*.py``, ``test_*``) by its ``fnmatch`` regular expression,
which with one star backtracks over that star alone. The path's segments are matched against
the pattern's with the same one-resume-point algorithm one level up (only the last ``**`` is
resumed).
Each pair (pattern segment, path segment) is then compared at most once, and one comparison
costs at most (its pattern length + 1) * (its name length + 2) steps, so one match costs at
most ``GLOB_STEP_FACTOR * (len(pattern) + 4) * (len(path) + 1)`` steps (the 4: the ``**/`` a
one-segment pattern gains and the extra segment a last ``**`` needs). ``Glob.match`` returns
the steps it took, which the search tools charge to their work budget.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Sequence
from typing import Final, TypeAlias, TypeVar

from tether._base.dataclass import dataclass

__all__ = ["GLOB_STEP_FACTOR", "Glob", "compile_glob"]

GLOB_STEP_FACTOR: Final = 4
"""The constant of the bound on one match's steps (see the module docstring)."""


class _Star:
    """``*`` inside a segment; ``**`` as a whole segment."""

    __slots__ = ()


class _Any:
    """``?``: any one character."""

    __slots__ = ()


_STAR: Final = _Star()
_ANY: Final = _Any()
_Token: TypeAlias = "str | re.Pattern[str] | _Any | _Star"
"""What one position of a segment pattern is: a literal character, a class, ``?`` or ``*``."""
_Segment: TypeAlias = "tuple[_Token, ...] | _OneStar | _Star"


def _tokens(segment: str) -> tuple[_Token, ...]:
    """A segment as tokens, classes parsed as ``fnmatch`` parses them."""
    out: list[_Token] = []
    index = 0
    size = len(segment)
    while index < size:
        char = segment[index]
        index += 1
        if char == "*":
            if not out or out[-1] is not _STAR:  # ** inside a segment is *
                out.append(_STAR)
        elif char == "?":
            out.append(_ANY)
        elif char == "[":
            end = index
            if end < size and segment[end] == "!":
                end += 1
            if end < size and segment[end] == "]":
                end += 1
            while end < size and segment[end] != "]":
                end += 1
            if end >= size:
                out.append("[")  # unclosed: a literal
            else:
                # fnmatch's own translation of the class alone: it matches one character
                out.append(re.compile(fnmatch.translate(segment[index - 1 : end + 1])))
                index = end + 1
        else:
            out.append(char)
    return tuple(out)


@dataclass(frozen=True, slots=True)
class _OneStar:
    """A segment with at most one ``*``, matched by ``fnmatch``'s regular expression for it,
    which backtracks over that one star only: at most ``(len(tokens) + 1) * (len(name) + 1)``
    character comparisons, which is what a match is charged (so the count stays a bound)."""

    regex: re.Pattern[str]
    size: int

    def matches(self, name: str, counter: _Counter) -> bool:
        counter.steps += (self.size + 1) * (len(name) + 1)
        return self.regex.match(name) is not None


def _segment(part: str) -> tuple[_Token, ...] | _OneStar:
    tokens = _tokens(part)
    if sum(1 for token in tokens if token is _STAR) <= 1:
        return _OneStar(re.compile(fnmatch.translate(part)), len(tokens))
    return tokens


def _accepts(token: _Token, char: str) -> bool:
    if isinstance(token, str):
        return token == char
    if isinstance(token, re.Pattern):
        return token.match(char) is not None
    return token is _ANY


class _Counter:
    """The steps one match took."""

    __slots__ = ("steps",)

    def __init__(self) -> None:
        self.steps = 0

    def segment(self, segment: tuple[_Token, ...] | _OneStar, name: str) -> bool:
        """Whether ``name`` matches one pattern segment, its steps counted."""
        if isinstance(segment, _OneStar):
            return segment.matches(name, self)
        return _wildcard(segment, name, _accepts, self)


ElementT = TypeVar("ElementT")
ItemT = TypeVar("ItemT")


def _wildcard(
    pattern: Sequence[ElementT | _Star],
    items: Sequence[ItemT],
    accepts: Callable[[ElementT, ItemT], bool],
    counter: _Counter,
) -> bool:
    """Whether ``items`` match ``pattern``, where ``_STAR`` matches any run of items and any
    other element the one item it ``accepts``. Only the last star is ever resumed, one item
    further each time: at most (len(pattern) + 1) * (len(items) + 2) steps, counted."""
    p = i = steps = 0
    resume_p, resume_i = -1, 0
    size_p, size_i = len(pattern), len(items)
    try:
        while p < size_p or i < size_i:
            steps += 1
            if p < size_p:
                element = pattern[p]
                if isinstance(element, _Star):
                    resume_p, resume_i = p, i + 1
                    p += 1
                    continue
                if i < size_i and accepts(element, items[i]):
                    p += 1
                    i += 1
                    continue
            if resume_p >= 0 and resume_i <= size_i:
                p, i = resume_p, resume_i
                continue
            return False
        return True
    finally:
        counter.steps += steps


@dataclass(frozen=True, slots=True)
class Glob:
    """A compiled pattern (``compile_glob``); ``pattern`` is the text it was compiled from."""

    pattern: str
    _segments: tuple[_Segment, ...]
    _name_only: tuple[_Token, ...] | _OneStar | None
    """For ``**/X`` (every one-segment pattern): X, which the file name alone must match."""

    def match(self, path: str) -> tuple[bool, int]:
        """Whether the workspace-relative ``path`` matches, and the steps that took."""
        name_only = self._name_only
        if isinstance(name_only, _OneStar):  # the most common case, kept short
            name = path.rpartition("/")[2]
            steps = 1 + (name_only.size + 1) * (len(name) + 1)
            return name_only.regex.match(name) is not None, steps
        counter = _Counter()
        counter.steps = 1
        if name_only is not None:
            matched = counter.segment(name_only, path.rpartition("/")[2])
        else:
            matched = _wildcard(self._segments, path.split("/"), counter.segment, counter)
        return matched, counter.steps


def compile_glob(pattern: str) -> Glob:
    """Compile ``pattern`` (the meaning is in the module docstring). Never fails: every
    string is a pattern; the tools refuse absolute patterns and ``..`` before this."""
    stripped = pattern.strip("/")
    if "/" not in stripped:
        stripped = "**/" + stripped
    parts = [s for s in stripped.split("/") if s not in ("", ".")]
    segments: list[_Segment] = []
    for index, part in enumerate(parts):
        if part != "**":
            segments.append(_segment(part))
            continue
        if not segments or segments[-1] is not _STAR:  # **/** is **
            segments.append(_STAR)
        if index == len(parts) - 1:  # last: at least one segment
            segments.append(_segment("*"))
    # ``./.`` names no segment below the root: no segments, which match no path
    only = None if len(segments) != 2 or segments[0] is not _STAR else segments[1]
    return Glob(pattern, tuple(segments), None if isinstance(only, _Star) else only)
