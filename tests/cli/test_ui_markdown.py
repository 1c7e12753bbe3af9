"""tether.cli.ui.markdown: Markdown rendered as it streams (committed rows plus a live tail)."""

from __future__ import annotations

import itertools
import os
import re
import subprocess
import sys

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from support import examples
from tether.cli.ui.markdown import (
    CODE_HIGHLIGHT_EVERY,
    BlockSplitter,
    LiveRegion,
    MarkdownTheme,
    StreamingMarkdown,
    theme_from_environment,
)
from tether.cli.ui.text import cell_width

SGR = re.compile(r"\x1b\[[0-9;]*m")

ANSWER = """# Fixing the flaky test

The failure comes from **two** things: the *timeout* is too short, and `pytest -x`
stops at the first failure, so the later tests never ran.

## Steps

1. Raise the timeout in `conftest.py`.
2. Run the suite again:

   ```bash
   pytest -q tests/test_api.py
   ```

3. Check the verdict.

- a bullet
- another, with a [link](https://example.com/docs)

```python
def test_fast(client):
    # a comment

    assert client.get("/health").status_code == 200
```

| file | change |
|------|--------|
| conftest.py | timeout 5 → 30 |
| test_api.py | retry once |

> Note: this is a workaround,
> not a fix.

Setext heading
--------------

    indented code

That's all; ~~nothing~~ else.
"""


def feed_in(text: str, cuts: list[int]) -> str:
    """Feed ``text`` cut at ``cuts``; every committed row."""
    md = StreamingMarkdown(width=60, color=False)
    points = sorted({0, len(text), *cuts})
    chunks = [md.feed(text[a:b]) for a, b in itertools.pairwise(points)]
    chunks.append(md.finish())
    return "".join(chunks)


def whole(text: str, *, width: int = 60, color: bool = False) -> str:
    md = StreamingMarkdown(width=width, color=color)
    return md.feed(text) + md.finish()


def rows(text: str) -> list[str]:
    return text[:-1].split("\n") if text else []


# --- the rendering ------------------------------------------------------------------------


def test_the_elements_render_as_a_person_reads_them() -> None:
    shown = whole(ANSWER)
    lines = rows(shown)
    assert lines[0] == "# Fixing the flaky test"
    assert "## Steps" in lines
    assert " 1 Raise the timeout in conftest.py." in lines
    assert " • another, with a link (https://example.com/docs)" in lines
    assert any("conftest.py  timeout 5 → 30" in line for line in lines)
    assert any(line.strip() == "pytest -q tests/test_api.py" for line in lines)
    assert "▌ Note: this is a workaround, not a fix." in lines
    assert "**" not in shown
    assert "```" not in shown
    assert "|---" not in shown


def test_without_colour_there_is_no_escape_sequence_and_rows_fit() -> None:
    for width in (20, 33, 60, 100):
        shown = whole(ANSWER, width=width)
        assert "\x1b" not in shown
        assert all(cell_width(line) <= width for line in rows(shown))


def test_with_colour_code_is_highlighted_and_emphasis_styled() -> None:
    shown = whole(ANSWER, color=True)
    assert "\x1b[" in shown
    assert "\x1b[1m" in shown  # bold
    assert "\x1b[3m" in shown  # italic
    assert re.search(r"\x1b\[38;2;\d+;\d+;\d+", shown)  # the highlighted code
    bare = SGR.sub("", shown)
    assert "def test_fast(client):" in bare
    assert "Fixing the flaky test" in bare


def test_the_light_theme_differs_from_the_dark_one() -> None:
    code = "```python\ndef f():\n    return 'x'\n```\n"
    dark = StreamingMarkdown(width=40, color=True, theme="dark")
    light = StreamingMarkdown(width=40, color=True, theme="light")
    dark_rows, light_rows = dark.feed(code), light.feed(code)
    assert dark_rows
    assert light_rows
    assert dark_rows != light_rows
    assert SGR.sub("", dark_rows) == SGR.sub("", light_rows)


def test_thinking_is_dimmed() -> None:
    md = StreamingMarkdown(width=40, color=True, thinking=True)
    shown = md.feed("Let me *think* about it.\n\n") + md.finish()
    assert re.search(r"\x1b\[[0-9;]*\b2\b[0-9;]*m", shown)
    plain = StreamingMarkdown(width=40, color=True)
    assert not re.search(r"\x1b\[(?:[0-9;]*;)?2(?:;[0-9;]*)?m", plain.feed("Let me think.\n\n"))


def test_without_colour_thinking_has_a_label_and_a_gutter() -> None:
    md = StreamingMarkdown(width=30, color=False, thinking=True)
    source = "Let me think about " + "this " * 12 + "now.\n\n```\nx = 1\n```\n\nDone.\n"
    live = ""
    committed = ""
    for char in source:
        committed += md.feed(char)
        live = md.live(max_rows=10) or live
    committed += md.finish()
    rows = committed.split("\n")[:-1]
    assert rows[0] == "thinking:"
    assert all(row == "│" or row.startswith("│ ") for row in rows[1:]), rows
    assert all(len(row) <= 30 for row in rows)
    assert "│ Done." in rows
    assert live.startswith("│")  # the tail joins the rows above
    assert "thinking:" not in live
    assert md.render_all() == committed
    answer = StreamingMarkdown(width=30, color=False)
    assert answer.feed("Plain.\n") + answer.finish() == "Plain.\n"


@pytest.mark.parametrize("color", [False, True])
def test_control_characters_in_the_answer_are_shown_not_obeyed(color: bool) -> None:
    shown = whole(
        "Done.\x1b[2J\x1b]0;owned\x07\r\u202eevil\n\n```\nrm\x1b[8m -rf\n```\n", color=color
    )
    bare = SGR.sub("", shown)
    assert "\x1b" not in bare
    assert "\x07" not in bare
    assert "\r" not in bare
    assert "\u202e" not in bare
    assert "Done.\\x1b[2J\\x1b]0;owned\\x07\\r\\u202eevil" in bare
    assert "rm\\x1b[8m -rf" in bare


# --- streaming ----------------------------------------------------------------------------


@settings(max_examples=examples(40))
@given(cuts=st.lists(st.integers(min_value=0, max_value=len(ANSWER)), max_size=80))
def test_any_split_into_deltas_renders_like_the_whole(cuts: list[int]) -> None:
    assert feed_in(ANSWER, cuts) == whole(ANSWER)


def test_committed_rows_are_append_only_and_render_all_gives_them_again() -> None:
    md = StreamingMarkdown(width=60, color=False)
    committed = ""
    lives: list[str] = []
    for char in ANSWER:
        committed += md.feed(char)
        lives.append(md.live())
    committed += md.finish()
    assert md.live() == ""
    assert committed == whole(ANSWER)
    assert md.render_all() == committed
    assert md.source == ANSWER
    # the live tail is small: never more than the biggest block
    assert max(len(rows(live)) for live in lives) <= 16


def test_a_block_commits_when_it_is_complete() -> None:
    md = StreamingMarkdown(width=60, color=False)
    assert md.feed("# Title\n") == "# Title\n"
    assert md.feed("A paragraph ") == ""
    assert md.live() == "\nA paragraph\n"
    assert md.feed("that goes on.\n\n") == ""  # a list or an indented line may follow
    assert md.feed("```py\nx = 1\n") == "\nA paragraph that goes on.\n"
    assert md.live() == "\n x = 1\n"
    assert md.feed("```\n") == "\n x = 1\n"
    assert md.live() == ""
    assert md.feed("end") == ""
    assert md.finish() == "\nend\n"


def test_render_all_at_a_new_width_rewraps_everything() -> None:
    md = StreamingMarkdown(width=80, color=False)
    text = "word " * 30 + "\n\nnext " * 3
    md.feed(text)
    narrow = md.render_all(30)
    assert md.width == 30
    assert all(cell_width(line) <= 30 for line in rows(narrow))
    assert narrow.count("word") == 30
    assert narrow.endswith("\nnext\n\nnext\n")  # the live tail: the pending blocks
    assert md.finish() == "\nnext\n\nnext\n"
    assert md.render_all() == whole(text, width=30)


# --- the block splitter -------------------------------------------------------------------

LINES = st.sampled_from(
    [
        "",
        "text",
        "more text",
        "# heading",
        "## heading",
        "- item",
        "1. item",
        "  indented",
        "    code",
        "```",
        "```py",
        "~~~",
        "| a | b |",
        "> quote",
        "---",
        "   ```",
        "#nope",
    ]
)


def blocks_of(text: str, cuts: list[int]) -> list[str]:
    splitter = BlockSplitter()
    points = sorted({0, len(text), *cuts})
    blocks: list[str] = []
    for a, b in itertools.pairwise(points):
        blocks += splitter.feed(text[a:b])
        assert "".join(blocks) + splitter.pending == text[:b]
    return blocks + splitter.finish()


@given(
    lines=st.lists(LINES, max_size=40),
    tail=st.sampled_from(["", "\n", "partial"]),
    cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=30),
)
def test_the_split_into_blocks_never_depends_on_the_deltas(
    lines: list[str], tail: str, cuts: list[int]
) -> None:
    text = "\n".join(lines) + tail
    expected = blocks_of(text, [])
    assert blocks_of(text, [cut for cut in cuts if cut < len(text)]) == expected
    if text.strip():
        assert "".join(expected).strip() == text.strip()


@given(st.text(max_size=300), st.lists(st.integers(min_value=0, max_value=300), max_size=20))
def test_any_text_splits_the_same_and_loses_nothing(text: str, cuts: list[int]) -> None:
    expected = blocks_of(text, [])
    assert blocks_of(text, cuts) == expected


def test_the_blocks_of_an_answer() -> None:
    text = "# T\nintro\n\n- a\n\n- b\nlazy\n\nafter\n```\nx\n\n```\n## H\n  - deep\n"
    assert blocks_of(text, []) == [
        "# T\n",
        "intro\n\n",
        "- a\n\n- b\nlazy\n\n",
        "after\n```\nx\n\n```\n",
        "## H\n",
        "  - deep\n",
    ]


# --- the terminal side --------------------------------------------------------------------


def test_the_live_region_erases_what_it_drew() -> None:
    region = LiveRegion(height=24)
    assert region.update("", "") == ""
    assert region.update("", "a\nb\n") == "a\nb\n"
    erase_two = "\r\x1b[2K\x1b[1F\x1b[2K\x1b[1F\x1b[2K"
    assert region.update("", "a\nbc\n") == erase_two + "a\nbc\n"
    assert region.update("done\n", "") == erase_two + "done\n"
    assert region.update("", "") == ""
    assert region.erase() == ""


def test_the_live_region_never_draws_more_rows_than_the_screen_holds() -> None:
    region = LiveRegion(height=4)
    live = "".join(f"{n}\n" for n in range(10))
    assert region.update("", live) == "7\n8\n9\n"
    assert region.drawn == 3
    assert region.update("x\n", live) == "\r\x1b[2K" + "\x1b[1F\x1b[2K" * 3 + "x\n7\n8\n9\n"


def test_after_the_terminal_narrows_the_live_region_erases_the_rows_it_re_wrapped() -> None:
    region = LiveRegion(height=24, width=120)
    wide = "\x1b[1m" + "x" * 119 + "\x1b[0m"  # 119 cells, however it is styled
    region.update("", f"{wide}\nshort\n{'y' * 120}\n")
    assert region.screen_rows() == 3
    region.width = 60  # the terminal re-wraps: 2 + 1 + 2 rows
    assert region.screen_rows() == 5
    assert region.update("", "z\n") == "\r\x1b[2K" + "\x1b[1F\x1b[2K" * 5 + "z\n"
    region.width = 200  # wider: a row never takes fewer than one
    assert region.erase() == "\r\x1b[2K\x1b[1F\x1b[2K"


# --- lazy import ---------------------------------------------------------------------------


def test_import_and_help_do_not_load_rich_and_a_render_does() -> None:
    code = (
        "import sys, contextlib, io\n"
        "import tether\n"
        "import tether.cli.ui.markdown as md\n"
        "import tether.cli.ui.approval, tether.cli.ui.results\n"
        "from tether.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        "    main(['--help'])\n"
        "before = sorted(m for m in sys.modules if m.split('.')[0] in ('rich', 'pygments'))\n"
        "stream = md.StreamingMarkdown(width=40, color=False)\n"
        "stream.feed('# hi\\n')\n"
        "print(before, 'rich' in sys.modules)\n"
    )
    env = {key: value for key, value in os.environ.items() if key != "PYTHONWARNINGS"}
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True, env=env
    ).stdout
    assert out.strip() == "[] True"


def test_a_block_that_shows_nothing_adds_no_empty_row() -> None:
    md = StreamingMarkdown(width=40, color=False)
    assert md.feed("[ref]: https://example.com\n\n") == ""
    assert md.feed("Text\n\n# H\n") == "Text\n\n# H\n"
    assert md.source == "[ref]: https://example.com\n\nText\n\n# H\n"
    assert md.feed("") == ""


def test_a_long_code_block_renders_only_its_last_lines_while_it_streams() -> None:
    md = StreamingMarkdown(width=60, color=False)
    md.feed("Here:\n\n```python\n")
    for n in range(300):
        md.feed(f"value_{n} = {n}\n")
    bounded = rows(md.live(max_rows=10))
    assert len(bounded) <= 10 + 3  # the lines, the code block's padding, the separator
    assert bounded[-1].strip() == "value_299 = 299"
    assert "value_289 = 289" not in md.live(max_rows=10)
    whole_tail = md.live()
    assert "value_0 = 0" in whole_tail
    assert md.live(max_rows=10) == "\n".join(bounded) + "\n"  # cached per max_rows
    assert md.feed("```\n").count("value_") == 300  # committed whole
    assert md.live(max_rows=10) == ""
    splitter = BlockSplitter()
    splitter.feed("```\nx\n")
    assert splitter.open_code == ("```\n", "x\n")
    splitter.feed("```\n")
    assert splitter.open_code is None


def test_a_streaming_code_block_is_highlighted_in_groups_of_lines() -> None:
    md = StreamingMarkdown(width=60, color=True)
    md.feed("```python\n")
    for n in range(CODE_HIGHLIGHT_EVERY + 3):
        md.feed(f"x_{n} = {n}\n")
    md.feed("y = (")
    live = rows(md.live(max_rows=40))
    plain_rows = [row for row in live if "\x1b" not in row]
    assert [row.strip() for row in plain_rows] == ["x_8 = 8", "x_9 = 9", "x_10 = 10", "y = ("]
    highlighted = SGR.sub("", "\n".join(live))
    assert all(f"x_{n} = {n}" in highlighted for n in range(CODE_HIGHLIGHT_EVERY))
    committed = md.feed(")\n```\n")
    assert all("\x1b[" in row for row in rows(committed) if "x_10" in SGR.sub("", row))
    assert SGR.sub("", committed).count("x_") == CODE_HIGHLIGHT_EVERY + 3


@pytest.mark.parametrize(
    ("colorfgbg", "theme"),
    [
        ("15;0", "dark"),
        ("0;15", "light"),
        ("0;7", "light"),
        ("12;8", "dark"),
        ("0;default;15", "light"),
        ("junk", "dark"),
        (None, "dark"),
        ("0;\u00b2", "dark"),  # str.isdigit() takes a superscript two, int() does not
        ("0;" + "1" * 5000, "dark"),  # more digits than int() converts
    ],
)
def test_the_theme_follows_the_terminal_background(colorfgbg: str | None, theme: str) -> None:
    environ = {} if colorfgbg is None else {"COLORFGBG": colorfgbg}
    assert theme_from_environment(environ) == theme


CODE_PIECES = st.sampled_from(
    ['"""', "'", '"', "#", "x", " ", "\t", "def", "(", ")", ":", "é", "世", "\x1b[31m", "y" * 45]
)
CODE_LINES = st.lists(
    st.lists(CODE_PIECES, max_size=6).map("".join), min_size=CODE_HIGHLIGHT_EVERY, max_size=45
)
STRING_ACROSS_CHUNKS = ['x = """', *(["inside"] * 20), '"""', *(["y = 1"] * 20)]
OPENINGS = st.sampled_from(["```python\n", "```\n", "~~~ text\n", "```nosuchlexer\n", "````js\n"])


@settings(max_examples=examples(60), deadline=None)
@example(STRING_ACROSS_CHUNKS, "```python\n", 70, "dark", 4 * CODE_HIGHLIGHT_EVERY)
@example(STRING_ACROSS_CHUNKS[:9] + [""] * 8 + ["z"], "```python\n", 70, "dark", 17)
@given(
    lines=CODE_LINES,
    opening=OPENINGS,
    width=st.sampled_from([30, 70]),
    theme=st.sampled_from(["dark", "light"]),
    window=st.integers(min_value=1, max_value=4 * CODE_HIGHLIGHT_EVERY),
)
def test_the_bounded_code_tails_chunks_give_the_plain_paths_rows(
    lines: list[str], opening: str, width: int, theme: MarkdownTheme, window: int
) -> None:
    """The highlighted part of a bounded code tail, built from chunks rendered alone and kept
    from one window to the next, is the window rendered whole: for multi-line strings,
    blank lines, tabs, wide characters, escapes, lines that wrap, lexers and none."""
    md = StreamingMarkdown(width=width, color=True, theme=theme)
    for done in range(CODE_HIGHLIGHT_EVERY, len(lines) + 1, CODE_HIGHLIGHT_EVERY):
        shown = lines[max(done - window, 0) : done]
        plain = md._render(opening + "".join(line + "\n" for line in shown))  # pyright: ignore[reportPrivateUsage]
        assert md._code_window(opening, shown) == plain  # pyright: ignore[reportPrivateUsage]
