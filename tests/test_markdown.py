"""``tether.cli.markdown``: streamed markdown styling keeps every character, for any cut."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from tether.cli.markdown import MarkdownStream

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def styled(parts: list[str], *, color: bool = True) -> str:
    stream = MarkdownStream(color=color)
    return "".join(stream.feed(part) for part in parts) + stream.finish()


def plain(text: str) -> str:
    return ANSI.sub("", text)


SAMPLE = "# Title\nSome **bold** and `code`.\n```python\nx = 1 * 2\n```\nafter *star*\n"


def test_code_blocks_headings_inline_code_and_bold_are_styled() -> None:
    out = styled([SAMPLE])
    assert plain(out) == SAMPLE
    assert "\x1b[0m\x1b[1m# Title" in out
    assert "\x1b[0m\x1b[1m**bold**\x1b[0m" in out
    assert "\x1b[0m\x1b[36m`code`\x1b[0m" in out
    assert "\x1b[0m\x1b[2m```python" in out
    assert "\x1b[0m\x1b[36mx = 1 * 2" in out  # no bold inside a code block
    assert "*star*" in plain(out)
    assert out.endswith("\n")


def test_without_colour_the_text_passes_through_at_once() -> None:
    stream = MarkdownStream(color=False)
    assert stream.feed("``") == "``"
    assert stream.finish() == ""


def test_it_holds_back_only_what_the_next_characters_decide() -> None:
    stream = MarkdownStream(color=True)
    assert stream.feed("``") == ""  # a fence or inline code: not known yet
    assert plain(stream.feed("`py\n")) == "```py\n"
    assert plain(stream.feed("code")) == "code"  # written at once inside the block
    assert plain(stream.feed("\n```\nend *")) == "\n```\nend "
    assert plain(stream.finish()) == "*"


@given(
    text=st.text(alphabet="ab`*#\n ", max_size=80),
    cuts=st.lists(st.integers(min_value=0, max_value=80), max_size=8),
)
def test_every_character_is_kept_for_any_cut_into_deltas(text: str, cuts: list[int]) -> None:
    points = sorted({min(cut, len(text)) for cut in cuts})
    parts = [text[start:end] for start, end in zip([0, *points], [*points, len(text)], strict=True)]
    out = styled(parts)
    assert plain(out) == text
    assert out == styled([text])  # the styling does not depend on how the text was cut
