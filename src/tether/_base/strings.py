"""Text rules shared by every layer: "non-empty" strings, code-point counting and patterns
compiled on first use.

"Non-empty" follows the workshop's JavaScript ``trim()``: a string is blank when it holds only
ECMAScript whitespace and line terminators (which include U+FEFF and exclude U+001C..U+001F).

Code points are counted as the workshop counts them over UTF-16: every Python code point counts
one, except a low surrogate that directly follows a high surrogate (a pair written as two
code points) counts zero. A lone surrogate counts one.

``well_formed`` and ``utf8_well_formed`` write text the way JavaScript hands a string to
UTF-8 (``String.prototype.toWellFormed``, ``TextEncoder``): a lone surrogate becomes U+FFFD.

``LazyPattern`` is a regular expression compiled by its first match rather than by the import
of the module that declares it (see its docstring).
"""

from __future__ import annotations

import re
from typing import Final, TypeGuard

__all__ = [
    "JS_WHITESPACE",
    "LazyPattern",
    "code_points",
    "is_non_empty",
    "message_of",
    "surrogate_index",
    "utf8_well_formed",
    "well_formed",
]

JS_WHITESPACE: Final = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)


_WHITESPACE_SET: Final = frozenset(JS_WHITESPACE)


def is_non_empty(value: object) -> TypeGuard[str]:
    """True for an exact ``str`` that is not blank under JavaScript ``trim()``."""
    if type(value) is not str or not value:
        return False
    return value[0] not in _WHITESPACE_SET or bool(value.strip(JS_WHITESPACE))


def code_points(text: str, pending_high: bool = False) -> tuple[int, bool]:
    """Count ``text`` by the workshop rule; returns ``(count, ends_with_high_surrogate)``.

    ``pending_high`` says the previous adjacent text ended with a high surrogate, so a leading
    low surrogate completes that pair and counts zero. An empty ``text`` keeps the flag.
    """
    if not text:
        return 0, pending_high
    count = len(text)
    if text.isascii():
        return count, False
    try:
        text.encode("utf-8")  # fails exactly when the text holds a surrogate code point
    except UnicodeEncodeError:
        pass
    else:
        return count, False
    previous_high = pending_high
    for char in text:
        point = ord(char)
        if 0xDC00 <= point <= 0xDFFF and previous_high:
            count -= 1
            previous_high = False
        else:
            previous_high = 0xD800 <= point <= 0xDBFF
    return count, previous_high


def surrogate_index(text: str) -> int | None:
    """The index of the first surrogate code point (U+D800..U+DFFF) in ``text``, which UTF-8
    cannot encode, or ``None`` when there is none. ASCII text is answered by ``str.isascii()``
    (no scan, no copy); other text by one UTF-8 encoding, which fails exactly at the first
    surrogate."""
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        return error.start
    return None


def well_formed(text: str) -> str:
    """``text`` as JavaScript reads it as UTF-16 and ``toWellFormed()`` returns it: a
    surrogate pair written as two code points (``"\\ud83d\\ude00"``) is the one character it
    spells, and each lone surrogate (a high one not followed by a low one, a low one not after
    a high one) is U+FFFD. ``text`` itself when it holds no surrogate (``isascii()``, then one
    UTF-8 encoding, which fails exactly when it holds one); else a round trip through UTF-16,
    whose ``"replace"`` decoding puts one U+FFFD for each unpaired code unit (tested against a
    plain code point loop in ``tests/base/test_strings.py``)."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


def utf8_well_formed(text: str) -> bytes:
    """``text`` as UTF-8, as a JavaScript ``TextEncoder`` (a ``fetch`` body) encodes it: a lone
    surrogate, which UTF-8 cannot encode, is sent as U+FFFD, a pair written as two code points
    as its character (``well_formed``). For a request body: JSON text that ``json.dumps`` wrote
    with ``ensure_ascii=False`` holds a surrogate only inside a string (its syntax is ASCII),
    so it stays JSON, and a provider is never handed a ``"\\ud800"`` escape it may refuse.

    The fast path is the one ``encode`` a body needs anyway; only text that fails it (it holds
    a surrogate) is made well-formed and encoded again."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return well_formed(text).encode("utf-8")


def message_of(error: object, fallback: str) -> str:
    """The text to report for a failure: a non-empty string as it is, else ``str(error)``
    when that is not blank (and does not itself fail), else ``fallback``."""
    if isinstance(error, str):
        return error or fallback
    try:
        text = str(error)
    except Exception:
        return fallback
    return text if is_non_empty(text) else fallback


class LazyPattern:
    """A regular expression (``source``, ``flags``) compiled by its first ``match``,
    ``fullmatch`` or ``search``, not when the module declaring it is imported.

    Importing the usable API compiled some twenty module-level patterns, a tenth of a
    millisecond each, that most programs never use: a model name's thinking levels, a
    provider's context-overflow message, a ``Retry-After`` delay, a session ID (issue 30).
    The methods are those of the compiled ``re.Pattern``; a pattern matched in a hot loop
    stays an ``re.compile`` of its module (this adds a method call per match).
    """

    __slots__ = ("_compiled", "_flags", "_source")

    def __init__(self, source: str, flags: int = 0) -> None:
        self._source = source
        self._flags = flags
        self._compiled: re.Pattern[str] | None = None

    def compiled(self) -> re.Pattern[str]:
        """The compiled pattern (compiled now if it was not yet)."""
        compiled = self._compiled
        if compiled is None:
            compiled = self._compiled = re.compile(self._source, self._flags)
        return compiled

    def match(self, text: str) -> re.Match[str] | None:
        """``re.Pattern.match``: a match at the start of ``text``, or ``None``."""
        return self.compiled().match(text)

    def fullmatch(self, text: str) -> re.Match[str] | None:
        """``re.Pattern.fullmatch``: a match of the whole of ``text``, or ``None``."""
        return self.compiled().fullmatch(text)

    def search(self, text: str) -> re.Match[str] | None:
        """``re.Pattern.search``: the first match anywhere in ``text``, or ``None``."""
        return self.compiled().search(text)
