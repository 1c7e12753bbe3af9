"""The incomplete-prefix recognizer: whether an unterminated last line is a torn write, a
syntactically valid but unfinished JSON object, which loading may ignore."""

# The package's modules share their underscore helpers with one another.
# pyright: reportUnusedFunction=false

from __future__ import annotations

import re
from typing import Final

__all__: list[str] = []

_INCOMPLETE: Final = 0
_INVALID: Final = 1
_COMPLETE: Final = 2
_JSON_WHITESPACE: Final = frozenset(" \t\r\n")
_DIGITS: Final = frozenset("0123456789")
_NONZERO_DIGITS: Final = frozenset("123456789")
_HEX_DIGITS: Final = frozenset("0123456789abcdefABCDEF")
_SIMPLE_ESCAPES: Final = frozenset('"\\/bfnrt')
_STRING_RUN: Final = re.compile(r'[^"\\\x00-\x1f]*')
_DIGIT_RUN: Final = re.compile(r"[0-9]*")


def _run_end(pattern: re.Pattern[str], text: str, index: int) -> int:
    found = pattern.match(text, index)
    return index if found is None else found.end()


def _skip_whitespace(text: str, index: int) -> int:
    end = len(text)
    while index < end and text[index] in _JSON_WHITESPACE:
        index += 1
    return index


def _scan_string(text: str, index: int) -> tuple[int, int]:
    """Scan a string whose opening quote is at ``index``: ``(status, index after it)``."""
    end = len(text)
    index += 1
    while True:
        index = _run_end(_STRING_RUN, text, index)
        if index >= end:
            return _INCOMPLETE, index
        character = text[index]
        index += 1
        if character == '"':
            return _COMPLETE, index
        if character != "\\":
            return _INVALID, index  # a raw control character
        if index >= end:
            return _INCOMPLETE, index
        escape = text[index]
        index += 1
        if escape in _SIMPLE_ESCAPES:
            continue
        if escape != "u":
            return _INVALID, index
        for _ in range(4):
            if index >= end:
                return _INCOMPLETE, index
            if text[index] not in _HEX_DIGITS:
                return _INVALID, index
            index += 1


def _scan_literal(text: str, index: int, expected: str) -> tuple[int, int]:
    end = len(text)
    for character in expected:
        if index >= end:
            return _INCOMPLETE, index
        if text[index] != character:
            return _INVALID, index
        index += 1
    return _COMPLETE, index


def _scan_number(text: str, index: int) -> tuple[int, int]:
    end = len(text)
    if text[index] == "-":
        index += 1
        if index >= end:
            return _INCOMPLETE, index
    if text[index] == "0":
        index += 1
        if index < end and text[index] in _DIGITS:
            return _INVALID, index
    elif text[index] in _NONZERO_DIGITS:
        index = _run_end(_DIGIT_RUN, text, index)
    else:
        return _INVALID, index
    if index < end and text[index] == ".":
        state, index = _scan_digits(text, index + 1)
        if state != _COMPLETE:
            return state, index
    if index < end and text[index] in "eE":
        index += 1
        if index < end and text[index] in "+-":
            index += 1
        return _scan_digits(text, index)
    return _COMPLETE, index


def _scan_digits(text: str, index: int) -> tuple[int, int]:
    """The one or more digits a fraction or an exponent needs, from ``index``."""
    if index >= len(text):
        return _INCOMPLETE, index
    if text[index] not in _DIGITS:
        return _INVALID, index
    return _COMPLETE, _run_end(_DIGIT_RUN, text, index)


def _scan_key(text: str, index: int) -> tuple[int, int]:
    """A member's key and colon, ``index`` at the key's quote; stops before the value."""
    end = len(text)
    if text[index] != '"':
        return _INVALID, index
    status, index = _scan_string(text, index)
    if status != _COMPLETE:
        return status, index
    index = _skip_whitespace(text, index)
    if index >= end:
        return _INCOMPLETE, index
    if text[index] != ":":
        return _INVALID, index
    return _COMPLETE, index + 1


def _scan_object(text: str, index: int) -> int:
    """Scan the JSON object starting at ``text[index] == "{"``: ``_COMPLETE`` when it is a
    whole object, ``_INCOMPLETE`` when the text ends inside a valid prefix of one, else
    ``_INVALID``. The workshop's recursive recognizer with an explicit stack, so nesting as
    deep as a line allows cannot overflow Python's stack."""
    end = len(text)
    closers: list[str] = []  # "}" or "]" per open container
    while True:  # scan one value (the "{" at index is the first)
        index = _skip_whitespace(text, index)
        if index >= end:
            return _INCOMPLETE
        character = text[index]
        if character == "{" or character == "[":
            closer = "}" if character == "{" else "]"
            index = _skip_whitespace(text, index + 1)
            if index >= end:
                return _INCOMPLETE
            if text[index] != closer:
                closers.append(closer)
                if closer == "}":
                    status, index = _scan_key(text, index)
                    if status != _COMPLETE:
                        return status
                continue  # scan the container's first value
            index += 1  # an empty container: a complete value
        else:
            if character == '"':
                status, index = _scan_string(text, index)
            elif character == "t":
                status, index = _scan_literal(text, index, "true")
            elif character == "f":
                status, index = _scan_literal(text, index, "false")
            elif character == "n":
                status, index = _scan_literal(text, index, "null")
            elif character == "-" or character in _DIGITS:
                status, index = _scan_number(text, index)
            else:
                return _INVALID
            if status != _COMPLETE:
                return status
        # a value just completed: close containers or move to the next member
        while True:
            if not closers:
                return _COMPLETE
            index = _skip_whitespace(text, index)
            if index >= end:
                return _INCOMPLETE
            closer = closers[-1]
            delimiter = text[index]
            if delimiter == closer:
                closers.pop()
                index += 1
                continue
            if delimiter != ",":
                return _INVALID
            index = _skip_whitespace(text, index + 1)
            if index >= end:
                return _INCOMPLETE
            if text[index] == closer:
                return _INVALID  # a trailing comma
            if closer == "}":
                status, index = _scan_key(text, index)
                if status != _COMPLETE:
                    return status
            break


def _is_incomplete_object_prefix(text: str) -> bool:
    """True when ``text`` is a syntactically valid but unfinished prefix of a JSON object
    (a torn last line), False for a complete object, garbage, or an impossible prefix."""
    index = _skip_whitespace(text, 0)
    if index >= len(text) or text[index] != "{":
        return False
    return _scan_object(text, index) == _INCOMPLETE
