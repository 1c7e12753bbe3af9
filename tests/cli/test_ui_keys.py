"""tether.cli.ui.keys: the keys read while a turn runs (the terminal side is in the tmux tests)."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from tether.cli.ui.keys import Key, parse_keys


def test_keys_of_a_read() -> None:
    assert parse_keys("\x1b") == [Key(name="escape")]
    assert parse_keys("use pytest\r") == [Key(name="text", text="use pytest"), Key(name="enter")]
    assert parse_keys("later\x1b\r") == [Key(name="text", text="later"), Key(name="alt-enter")]
    assert parse_keys("ab\x7fc") == [
        Key(name="text", text="ab"),
        Key(name="backspace"),
        Key(name="text", text="c"),
    ]
    assert parse_keys("x\x15") == [Key(name="text", text="x"), Key(name="clear")]


def test_shift_tab_is_a_key_of_its_own() -> None:
    assert parse_keys("\x1b[Z") == [Key(name="shift-tab")]
    assert parse_keys("a\x1b[Zb\x1b[1;2Z") == [
        Key(name="text", text="a"),
        Key(name="shift-tab"),
        Key(name="text", text="b"),
    ]


def test_escape_sequences_are_skipped_whole() -> None:
    assert parse_keys("\x1b[A\x1b[1;5C\x1bOPok") == [Key(name="text", text="ok")]
    assert parse_keys("\x1bx") == []  # Alt-x: nothing to do
    assert parse_keys("\x1b[") == []  # a sequence cut by the read
    assert parse_keys("\x03\x07\t") == []  # other control characters are dropped


@given(st.text())
def test_any_input_parses_to_keys_without_control_characters(text: str) -> None:
    keys = parse_keys(text)
    for key in keys:
        assert (key.name == "text") == bool(key.text)
        assert all(char.isprintable() for char in key.text)
    typed = "".join(key.text for key in keys)
    assert len(typed) <= len(text)
    assert all(char in text for char in typed)
    assert all(
        not (first.name == second.name == "text") for first, second in itertools.pairwise(keys)
    )


@given(
    st.text(
        alphabet=st.characters(
            blacklist_categories=("Cc", "Cs", "Zl", "Zp", "Cf", "Co", "Cn", "Zs")
        )
        | st.just(" ")
    )
)
def test_printable_text_is_one_run(text: str) -> None:
    expected = [Key(name="text", text=text)] if text else []
    assert parse_keys(text) == expected
