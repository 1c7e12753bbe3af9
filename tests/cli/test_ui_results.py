"""tether.cli.ui.results: a tool result's head and tail, and the full text to expand."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from tether.cli.ui.results import RESULT_HEAD_LINES, RESULT_TAIL_LINES, result_view
from tether.cli.ui.text import cell_width

SGR = re.compile(r"\x1b\[[0-9;]*m")
CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]")

PYTEST_RUN = (
    "".join(f"tests/test_{n}.py ....\n" for n in range(40))
    + "FAILED tests/test_7.py::test_edge - AssertionError\n"
    + "1 failed, 159 passed in 3.21s\n"
)


def rows(text: str) -> list[str]:
    return text[:-1].split("\n") if text else []


def test_the_verdict_at_the_end_is_shown() -> None:
    view = result_view(PYTEST_RUN, width=80, color=False)
    shown = rows(view.preview)
    assert shown[:RESULT_HEAD_LINES] == [f"  tests/test_{n}.py ...." for n in range(4)]
    assert shown[RESULT_HEAD_LINES] == "  … 32 lines hidden (Ctrl-O to expand)"
    assert shown[-1] == "  1 failed, 159 passed in 3.21s"
    assert shown[-2] == "  FAILED tests/test_7.py::test_edge - AssertionError"
    assert len(shown) == RESULT_HEAD_LINES + 1 + RESULT_TAIL_LINES
    assert view.hidden == 32
    assert view.lines == 42


def test_the_full_text_has_every_line() -> None:
    view = result_view(PYTEST_RUN, width=80, color=False)
    assert view.full == "".join(f"  {line}\n" for line in PYTEST_RUN.splitlines())


def test_a_short_result_is_shown_whole() -> None:
    text = "".join(f"{n}\n" for n in range(RESULT_HEAD_LINES + RESULT_TAIL_LINES + 1))
    view = result_view(text, width=40, color=False)
    assert view.hidden == 0
    assert view.preview == view.full
    assert result_view("", width=40, color=False).preview == "  \n"


def test_long_lines_are_cut_in_the_preview_and_wrapped_in_full() -> None:
    view = result_view("x" * 100 + "\nend", width=40, color=False, indent="")
    assert rows(view.preview) == ["x" * 39 + "…", "end"]
    assert rows(view.full) == ["x" * 40, "x" * 40, "x" * 20, "end"]


def test_colour_codes_are_dropped_and_other_controls_shown() -> None:
    view = result_view("\x1b[31mFAILED\x1b[0m\r\x1b[2Kall good", width=60, color=False)
    assert rows(view.preview) == ["  FAILED\\r\\x1b[2Kall good"]


def test_errors_are_red_when_coloured() -> None:
    view = result_view("TOOL_FAILED: boom", width=60, color=True, is_error=True)
    assert view.preview == "  \x1b[31mTOOL_FAILED: boom\x1b[0m\n"


def test_head_and_tail_are_configurable() -> None:
    text = "".join(f"{n}\n" for n in range(10))
    assert rows(result_view(text, width=40, color=False, head=1, tail=0, indent="").preview) == [
        "0",
        "… 9 lines hidden (Ctrl-O to expand)",
    ]
    assert rows(result_view(text, width=40, color=False, head=0, tail=2, indent="").preview) == [
        "… 8 lines hidden (Ctrl-O to expand)",
        "8",
        "9",
    ]


@given(
    text=st.text(max_size=600),
    width=st.integers(min_value=1, max_value=100),
    head=st.integers(min_value=0, max_value=6),
    tail=st.integers(min_value=0, max_value=6),
)
def test_any_result_fits_and_counts_its_lines(text: str, width: int, head: int, tail: int) -> None:
    view = result_view(text, width=width, color=False, head=head, tail=tail)
    for shown in (view.preview, view.full):
        assert CONTROL.search(SGR.sub("", shown)) is None
        for row in rows(shown):
            assert cell_width(row) <= max(width, 20)
    preview_rows = len(rows(view.preview))
    if view.hidden:
        assert view.hidden >= 2
        assert preview_rows == head + tail + 1
        assert view.lines == head + tail + view.hidden
    else:
        assert preview_rows == max(view.lines, 1)
