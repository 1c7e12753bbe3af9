"""tether.cli.ui.export: a session as one self-contained, escaped HTML page, written atomically."""

from __future__ import annotations

import base64
import html.parser
import os
import stat
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from image_support import gif, png
from tether.cli.config import CliError
from tether.cli.ui.export import export_html, session_html
from tether.jsonvalue import JsonObject
from tether.protocol import (
    AssistantMessage,
    ImageBlock,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

HOSTILE = (
    '</script><script>alert(1)</script><img src=x onerror="alert(2)">'
    "<style>body{display:none}</style>' \" & <a href=javascript:alert(3)>x</a>\x1b[2J"
)


def transcript(text: str = "hello") -> list[Message]:
    return [
        UserMessage(content=f"fix the test {text}"),
        AssistantMessage(
            content=(
                ThinkingBlock(text=f"the timeout is short {text}"),
                ThinkingBlock(text="", signature="opaque", redacted=True),
                TextBlock(text=f"Running it. {text}"),
                ToolCall(
                    id="call-1",
                    name="bash",
                    arguments=JsonObject({"command": f"pytest -q {text}", "n": [1, {"a": None}]}),
                ),
            )
        ),
        ToolResultMessage(
            tool_call_id="call-1",
            tool_name="bash",
            content="".join(f"line {n}\n" for n in range(30)) + f"1 failed {text}",
            is_error=True,
        ),
        AssistantMessage(content=(TextBlock(text=f"**Done**. {text}"),)),
    ]


class Collector(html.parser.HTMLParser):
    """Every tag and attribute of a page, and its text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.attributes: list[tuple[str, str | None]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attributes += attrs

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse(page: str) -> Collector:
    collector = Collector()
    collector.feed(page)
    collector.close()
    return collector


ALLOWED_TAGS = {
    "html",
    "head",
    "meta",
    "title",
    "style",
    "body",
    "h1",
    "p",
    "section",
    "div",
    "details",
    "summary",
    "pre",
    "span",
}


def test_the_page_shows_every_part_of_the_session() -> None:
    page = session_html(transcript(), title="tether session", note="openai/gpt-test")
    doc = parse(page)
    text = "".join(doc.text)
    assert "fix the test hello" in text
    assert "the timeout is short hello" in text
    assert "(redacted thinking)" in text
    assert "opaque" not in page
    assert "Running it. hello" in text
    assert '"command": "pytest -q hello"' in text
    assert "line 29" in text
    assert "error of bash (31 lines)" in text
    assert "**Done**. hello" in text
    assert doc.tags.count("details") == 3  # two thinking blocks and the long result
    assert '<details class="thinking">' in page  # collapsed: no "open"
    assert "<details open>" not in page  # the 31-line result starts collapsed


def test_the_page_is_self_contained() -> None:
    page = session_html(transcript(), title="t")
    doc = parse(page)
    assert set(doc.tags) <= ALLOWED_TAGS
    assert "script" not in doc.tags
    for name, value in doc.attributes:
        assert name in ("lang", "charset", "http-equiv", "content", "name", "class", "open")
        assert "http" not in (value or "") or name == "http-equiv"
    assert "default-src 'none'" in page
    assert "url(" not in page
    assert "@import" not in page


@pytest.mark.parametrize("where", ["user", "text", "thinking", "tool", "result", "title"])
def test_hostile_content_is_escaped_everywhere(where: str) -> None:
    messages = transcript(HOSTILE)
    if where == "tool":
        messages.append(
            AssistantMessage(
                content=(
                    ToolCall(
                        id="call-2", name=f"evil{HOSTILE}", arguments=JsonObject({HOSTILE: 1})
                    ),
                )
            )
        )
    page = session_html(messages, title=HOSTILE if where == "title" else "t", note=HOSTILE)
    doc = parse(page)
    assert set(doc.tags) <= ALLOWED_TAGS
    assert "script" not in doc.tags
    assert "img" not in doc.tags
    assert "a" not in doc.tags
    assert all(not name.startswith("on") for name, _ in doc.attributes)
    assert "</script>" not in page
    assert "<img" not in page
    assert "\x1b" not in page
    assert "&lt;/script&gt;&lt;script&gt;alert(1)" in page


@given(st.text())
def test_any_text_stays_text(text: str) -> None:
    page = session_html(
        [UserMessage(content=text), AssistantMessage(content=(TextBlock(text=text),))], title=text
    )
    doc = parse(page)
    assert set(doc.tags) <= ALLOWED_TAGS
    assert doc.tags.count("section") == 2


def test_the_summary_comes_first() -> None:
    page = session_html(transcript(), title="t", summary="earlier: we set up the project")
    assert page.index("earlier: we set up the project") < page.index("fix the test")


def test_export_writes_the_page_atomically(tmp_path: Path) -> None:
    target = tmp_path / "session.html"
    target.write_text("old", encoding="utf-8")
    written = export_html(transcript(), target, title="tether session")
    assert written == target
    assert target.read_text(encoding="utf-8") == session_html(transcript(), title="tether session")
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert sorted(os.listdir(tmp_path)) == ["session.html"]  # no temporary left


def test_a_failed_export_says_why_and_leaves_nothing(tmp_path: Path) -> None:
    with pytest.raises(CliError) as missing:
        export_html(transcript(), tmp_path / "no" / "such" / "dir.html", title="t")
    assert missing.value.code == "CLI_EXPORT_FAILED"
    assert "writable directory" in str(missing.value)
    with pytest.raises(CliError) as directory:
        export_html(transcript(), tmp_path, title="t")
    assert directory.value.code == "CLI_EXPORT_FAILED"
    not_a_directory = tmp_path / "file"
    not_a_directory.write_text("x", encoding="utf-8")
    with pytest.raises(CliError) as blocked:
        export_html(transcript(), not_a_directory / "x.html", title="t")
    assert blocked.value.code == "CLI_EXPORT_FAILED"
    assert sorted(os.listdir(tmp_path)) == ["file"]


def test_a_path_with_a_nul_byte_is_a_failed_export(tmp_path: Path) -> None:
    # /export's argument comes from a person or an RPC client: a NUL made os.open raise a
    # raw ValueError (embedded null byte), which rpc answered as RPC_INTERNAL_ERROR.
    for name in ("page\0.html", "dir\0/page.html"):
        with pytest.raises(CliError) as nul:
            export_html(transcript(), tmp_path / name, title="t")
        assert nul.value.code == "CLI_EXPORT_FAILED"
        assert "writable directory" in str(nul.value)
    assert os.listdir(tmp_path) == []


def test_a_rename_that_fails_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "out.html"
    target.mkdir()
    (target / "keep").write_text("x", encoding="utf-8")
    with pytest.raises(CliError) as failed:
        export_html(transcript(), target, title="t")
    assert failed.value.code == "CLI_EXPORT_FAILED"
    assert sorted(os.listdir(tmp_path)) == ["out.html"]
    assert os.listdir(target) == ["keep"]


def test_images_are_shown_inline_and_only_data_urls_may_load() -> None:
    shot = ImageBlock.from_bytes(png(4, 3))
    icon = ImageBlock.from_bytes(gif(2, 2))
    messages = [
        UserMessage(id="u", content="look", images=(shot,)),
        ToolResultMessage(
            id="r", tool_call_id="c", tool_name="read_file", content="Read image", images=(icon,)
        ),
    ]
    page = session_html(messages, title="t")
    doc = parse(page)
    sources = [value for name, value in doc.attributes if name == "src"]
    assert sources == [
        f"data:image/png;base64,{base64.b64encode(shot.data).decode()}",
        f"data:image/gif;base64,{base64.b64encode(icon.data).decode()}",
    ]
    assert [value for name, value in doc.attributes if name == "alt"] == [
        "image/png 4x3",
        "image/gif 2x2",
    ]
    assert "img-src data:;" in page  # nothing but the page's own images
    assert "default-src 'none'" in page
