"""``tether._base.strings.LazyPattern`` (issue 30): a pattern compiled by its first match,
not by the import of its module, that matches exactly as ``re.compile`` of the same source does."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from support import plain_utf16_text
from tether._base.strings import LazyPattern, surrogate_index, utf8_well_formed, well_formed

SOURCES = (
    r"gpt-5(?![.\d])",
    r"(\d{1,7}(?:\.\d{1,9})?)s",
    r"^(con|prn|aux|nul|com[1-9]|lpt[1-9])(\..*)?$",
    r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}",
)


def _spans(found: re.Match[str] | None) -> object:
    return None if found is None else (found.span(), found.groups())


@given(
    source=st.sampled_from(SOURCES),
    flags=st.sampled_from([0, re.IGNORECASE]),
    text=st.text(alphabet="gpt-5.0123456789sconCONlpt1.x_ ", max_size=20),
)
def test_it_matches_as_the_compiled_pattern_does(source: str, flags: int, text: str) -> None:
    lazy, compiled = LazyPattern(source, flags), re.compile(source, flags)
    assert _spans(lazy.match(text)) == _spans(compiled.match(text))
    assert _spans(lazy.fullmatch(text)) == _spans(compiled.fullmatch(text))
    assert _spans(lazy.search(text)) == _spans(compiled.search(text))
    assert lazy.compiled() == compiled


def test_it_is_compiled_once_by_its_first_use() -> None:
    lazy = LazyPattern(r"o\d")
    first = lazy.compiled()
    assert lazy.match("o3") is not None
    assert lazy.compiled() is first


def test_a_bad_source_fails_at_its_first_use_with_re_error() -> None:
    lazy = LazyPattern("(")
    with pytest.raises(re.error):
        lazy.match("x")


_PROBE = """
import json, sys
import tether
tether.run_agent_loop, tether.OpenAIChatModel, tether.coding_tools, tether.SessionStore
from tether._base.strings import LazyPattern, surrogate_index
declared, compiled = [], []
for name, module in list(sys.modules.items()):
    if name.startswith("tether"):
        for attribute, value in vars(module).items():
            if isinstance(value, LazyPattern):
                declared.append(f"{name}.{attribute}")
                if value._compiled is not None:
                    compiled.append(f"{name}.{attribute}")
print(json.dumps({"declared": len(declared), "compiled": compiled}))
"""


@pytest.mark.slow
def test_importing_the_usable_api_compiles_none_of_them() -> None:
    completed = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, check=False
    )
    assert completed.returncode == 0, completed.stderr
    report = json.loads(completed.stdout)
    # The probe must see patterns to mean anything: the modules the usable API loads declare
    # 9 (12 before the loop's and the session's machinery loaded with first use, issue 30).
    assert report["declared"] >= 8
    assert report["compiled"] == []


@given(st.text(alphabet=st.characters(codec=None, exclude_categories=())))
def test_surrogate_index_is_the_first_surrogate_of_a_plain_scan(text: str) -> None:
    plain = next((i for i, char in enumerate(text) if 0xD800 <= ord(char) <= 0xDFFF), None)
    assert surrogate_index(text) == plain


@pytest.mark.parametrize(
    ("text", "index"),
    [("", None), ("ascii", None), ("é😀", None), ("a\ud800", 1), ("é\udfff\ud800", 1)],
)
def test_surrogate_index_finds_lone_halves_and_halves_of_a_pair(
    text: str, index: int | None
) -> None:
    assert surrogate_index(text) == index
    assert surrogate_index("\ud83d\ude00") == 0  # a pair as two code points: UTF-8 has no form


def plain_well_formed(text: str) -> str:
    """The reference: a code point loop, as JavaScript's ``toWellFormed`` walks UTF-16."""
    return plain_utf16_text(text, lone="\ufffd")


SURROGATE_HEAVY = st.lists(
    st.sampled_from(["a", "\ud800", "\udbff", "\udc00", "\udfff", "é", "\U0001f600", "\x00"])
).map("".join)
ANY_TEXT = st.text(alphabet=st.characters(codec=None, exclude_categories=()))


@given(SURROGATE_HEAVY | ANY_TEXT)
def test_well_formed_is_the_plain_loop(text: str) -> None:
    expected = plain_well_formed(text)
    assert well_formed(text) == expected
    assert utf8_well_formed(text) == expected.encode("utf-8")  # strict: no surrogate left
    if surrogate_index(text) is None:
        assert well_formed(text) is text  # the fast path hands the text back, no copy


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", ""),
        ("a\ud800b", "a\ufffdb"),
        ("\udc00\ud800", "\ufffd\ufffd"),  # a low before a high is no pair
        ("\ud800\ud800\udc00", "\ufffd\U00010000"),
        ("end \udbff", "end \ufffd"),
        ("\ud83d\ude00", "\U0001f600"),  # a pair as two code points: its character
    ],
)
def test_well_formed_replaces_each_lone_half(text: str, expected: str) -> None:
    assert well_formed(text) == expected
    assert utf8_well_formed(text).decode("utf-8") == expected
