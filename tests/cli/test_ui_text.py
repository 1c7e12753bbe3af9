"""tether.cli.ui.text: control characters made visible, widths, wrapping."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tether.cli.ui.text import (
    Run,
    cell_width,
    clip,
    clip_runs,
    paint,
    plain,
    pretty_json,
    runs,
    visible,
    wrap,
)
from tether.jsonvalue import JsonObject

HIDDEN = {"Cc", "Cf", "Cs", "Zl", "Zp", "Cn", "Co"}


@pytest.mark.parametrize(
    ("text", "strict", "shown"),
    [
        ("a\rb", True, "a\\rb"),
        ("a\x1b[2Jb", False, "a\\x1b[2Jb"),
        ("tab\there", True, "tab\\there"),
        ("tab\there", False, "tab here"),
        ("rtl\u202eabc", False, "rtl\\u202eabc"),
        ("zwj 👩\u200d💻", False, "zwj 👩\u200d💻"),
        ("zwj 👩\u200d💻", True, "zwj 👩\\u200d💻"),
        ("c1 \x9b", False, "c1 \\x9b"),
        ("bell\x07", True, "bell\\x07"),
        ("lines\nkept", True, "lines\nkept"),
    ],
)
def test_visible(text: str, strict: bool, shown: str) -> None:
    assert visible(text, strict=strict) == shown


def test_widths() -> None:
    assert cell_width("abc") == 3
    assert cell_width("日本") == 4
    assert cell_width("e\u0301") == 1
    assert clip("日本語です", 5) == "日本…"
    assert clip("short", 10) == "short"


def test_escapes_are_painted_in_reverse_video() -> None:
    line = runs("a\rb", strict=True)
    assert paint(line, color=True) == "a\x1b[7m\\r\x1b[0mb"
    assert paint(line, color=False) == "a\\rb"
    assert clip_runs(line, 2) == [Run(text="a"), Run(text="…")]


def test_pretty_json_thaws_frozen_values() -> None:
    value = JsonObject({"a": [1, {"b": None}], "ü": "✓"})
    assert pretty_json(value, indent=None) == '{"a": [1, {"b": null}], "ü": "✓"}'


@given(
    text=st.text(max_size=200), width=st.integers(min_value=1, max_value=80), strict=st.booleans()
)
def test_wrapping_keeps_every_character_and_fits(text: str, width: int, strict: bool) -> None:
    line = runs(text, strict=strict)
    rows = wrap(line, width)
    assert "".join(plain(row) for row in rows) == plain(line)
    for row in rows:
        shown = plain(row)
        if strict:
            assert all(unicodedata.category(char) not in HIDDEN for char in shown)
        assert cell_width(shown) <= width or len(shown) == 1  # a wide character alone
    clipped = plain(clip_runs(line, width))
    assert cell_width(clipped) <= max(width, 1) or len(clipped) == 1


def test_a_row_breaks_after_a_space_and_never_overflows() -> None:
    line = [Run(text="aaaaaaaaaa bbb")]
    assert [plain(row) for row in wrap(line, 10)] == ["aaaaaaaaaa", " bbb"]
    assert [plain(row) for row in wrap([Run(text="aaaa bbbbbbbb")], 10)] == ["aaaa ", "bbbbbbbb"]
    assert [plain(row) for row in wrap([Run(text="ab"), Run(text="日本")], 3)] == ["ab", "日", "本"]
    assert [plain(row) for row in wrap([Run(text="日")], 1)] == ["日"]
    assert wrap([], 5) == [[]]
