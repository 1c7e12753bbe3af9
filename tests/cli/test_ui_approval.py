"""tether.cli.ui.approval: what is shown before ``allow TOOL?`` and how the answer is read."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tether.cli.ui.approval import (
    JSON_PREVIEW_MAX_CHARS,
    Allow,
    AllowAlways,
    Deny,
    approval_preview,
    approval_question,
    denial_text,
    parse_approval,
)
from tether.cli.ui.text import cell_width, visible
from tether.jsonvalue import JsonObject
from tether.tools.coding import Workspace

SGR = re.compile(r"\x1b\[[0-9;]*m")
CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")

TAIL_COMMAND = (
    "cd /srv/app && python -m pytest -q tests/ --maxfail=1 "
    + " ".join(f"--deselect tests/test_{n}.py::test_case" for n in range(6))
    + " && echo HIDDEN-TAIL-rm-rf"
)


def rows(text: str) -> list[str]:
    assert text.endswith("\n")
    return text[:-1].split("\n")


def assert_safe(text: str, width: int) -> None:
    """Only our own SGR codes; no other control character; every row fits."""
    bare = SGR.sub("", text)
    assert CONTROL.search(bare) is None, repr(bare)
    for row in rows(bare):
        assert cell_width(row) <= width, row


def command_of(preview: str) -> str:
    """The command a bash preview shows: rows after the title, gutters removed, re-joined."""
    lines: list[str] = []
    for row in rows(preview)[1:]:
        if row.startswith(("$ ", "> ")):
            lines.append(row[2:])
        else:
            assert row.startswith("  ")
            lines[-1] += row[2:]
    return "\n".join(lines)


# --- bash and python_process: never cut -------------------------------------------------------


def test_a_long_command_is_shown_whole_with_its_tail() -> None:
    assert len(TAIL_COMMAND) > 250
    preview = approval_preview(
        "bash", {"command": TAIL_COMMAND}, workspace=None, width=80, color=False
    )
    assert rows(preview)[0] == "bash"
    assert "HIDDEN-TAIL-rm-rf" in preview
    assert command_of(preview) == TAIL_COMMAND
    assert_safe(preview, 80)


def test_the_timeout_and_every_line_of_a_multi_line_command_are_shown() -> None:
    command = "set -e\nmake build\nmake test && rm -rf build"
    preview = approval_preview(
        "bash",
        {"command": command, "timeout_seconds": 30},
        workspace=None,
        width=40,
        color=False,
    )
    assert rows(preview)[0] == "bash (timeout 30 s)"
    assert rows(preview)[1:] == ["$ set -e", "> make build", "> make test && rm -rf build"]


@pytest.mark.parametrize(
    "hostile",
    [
        "echo safe\r\x1b[2Krm -rf ~",  # return to the line start and erase it
        "echo safe\x1b[8mrm -rf ~",  # concealed text
        "echo safe\x08\x08\x08\x08rm -rf ~",  # backspaces
        "echo safe \u202erm -rf ~",  # right-to-left override
        "echo safe\x9b2Krm -rf ~",  # the 8-bit CSI
        "echo safe\u2028rm -rf ~",  # a line separator
    ],
)
@pytest.mark.parametrize("color", [False, True])
def test_control_characters_are_shown_not_obeyed(hostile: str, color: bool) -> None:
    preview = approval_preview("bash", {"command": hostile}, workspace=None, width=50, color=color)
    assert_safe(preview, 50)
    bare = SGR.sub("", preview)
    assert "rm -rf ~" in bare
    assert command_of(bare) == visible(hostile, strict=True)
    assert "\\" in command_of(bare)  # the escape is spelled out
    if color:  # highlighted in reverse video
        assert "\x1b[7m\\" in preview


@given(command=st.text(max_size=400), width=st.integers(min_value=1, max_value=120))
def test_any_command_is_shown_whole_and_safe(command: str, width: int) -> None:
    preview = approval_preview(
        "bash", {"command": command}, workspace=None, width=width, color=False
    )
    shown_width = max(width, 20)
    assert_safe(preview, shown_width)
    assert command_of(preview) == visible(command, strict=True)


def test_python_process_shows_its_arguments_and_every_source_line() -> None:
    source = "\n".join(f"print({n})" for n in range(300)) + "\nimport os; os.remove('x')"
    preview = approval_preview(
        "python_process",
        {"source": source, "arguments": ["--fast", "a\x1bb"]},
        workspace=None,
        width=60,
        color=False,
    )
    lines = rows(preview)
    assert lines[0] == "python_process"
    assert lines[1] == 'arguments: ["--fast", "a\\u001bb"]'
    assert lines[2] == "  1 │ print(0)"
    assert lines[-1] == "301 │ import os; os.remove('x')"
    assert len(lines) == 2 + 301
    assert_safe(preview, 60)


# --- write_file and edit_file -----------------------------------------------------------------


def test_a_new_file_is_shown_with_line_numbers(tmp_path: Path) -> None:
    preview = approval_preview(
        "write_file",
        {"path": "src/new.py", "content": "def f():\n\treturn 1\n"},
        workspace=Workspace(tmp_path),
        width=60,
        color=False,
    )
    assert rows(preview) == [
        "write_file src/new.py (new file, 2 lines)",
        "1 │ def f():",
        "2 │ \\treturn 1",
    ]
    assert "\\n" not in preview.replace("\\treturn", "")


def test_a_long_new_file_shows_head_and_tail_and_the_hidden_count(tmp_path: Path) -> None:
    content = "".join(f"line {n}\n" for n in range(1, 201))
    preview = approval_preview(
        "write_file",
        {"path": "big.txt", "content": content},
        workspace=Workspace(tmp_path),
        width=60,
        color=False,
    )
    lines = rows(preview)
    assert lines[1] == "  1 │ line 1"
    assert "… 150 lines hidden …" in lines
    assert lines[-1] == "200 │ line 200"
    assert len(lines) == 1 + 40 + 1 + 10


def test_replacing_a_file_shows_a_coloured_diff(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text("a = 1\nb = 2\nc = 3\n", encoding="utf-8")
    preview = approval_preview(
        "write_file",
        {"path": "app.py", "content": "a = 1\nb = 20\nc = 3\n"},
        workspace=Workspace(tmp_path),
        width=60,
        color=True,
    )
    assert "\x1b[31m-b = 2\x1b[0m" in preview
    assert "\x1b[32m+b = 20\x1b[0m" in preview
    assert SGR.sub("", preview).split("\n")[1:3] == ["--- a/app.py", "+++ b/app.py"]
    assert_safe(preview, 60)


def test_an_unreadable_current_file_shows_why_and_the_content(tmp_path: Path) -> None:
    (tmp_path / "blob.bin").write_bytes(b"\xff\xfe not utf-8")
    preview = approval_preview(
        "write_file",
        {"path": "blob.bin", "content": "text\n"},
        workspace=Workspace(tmp_path),
        width=80,
        color=False,
    )
    assert "FILE_NOT_UTF8" in preview
    assert rows(preview)[-1] == "1 │ text"


def test_a_path_outside_the_workspace_is_never_read(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("SECRET\n", encoding="utf-8")
    root = tmp_path / "ws"
    root.mkdir()
    os.symlink(outside, root / "link.txt")
    for arguments in (
        {"path": "link.txt", "content": "x\n"},
        {"path": "../outside.txt", "content": "x\n"},
    ):
        preview = approval_preview(
            "write_file", arguments, workspace=Workspace(root), width=80, color=False
        )
        assert "SECRET" not in preview
        assert "current content unknown" in preview


def test_edit_file_shows_the_diff_of_its_one_replacement(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("".join(f"x{n} = {n}\n" for n in range(20)), encoding="utf-8")
    preview = approval_preview(
        "edit_file",
        {"path": "m.py", "old": "x10 = 10\n", "new": "x10 = 'ten'\n"},
        workspace=Workspace(tmp_path),
        width=60,
        color=False,
    )
    assert rows(preview) == [
        "edit_file m.py",
        "--- a/m.py",
        "+++ b/m.py",
        "@@ -8,7 +8,7 @@",
        " x7 = 7",
        " x8 = 8",
        " x9 = 9",
        "-x10 = 10",
        "+x10 = 'ten'",
        " x11 = 11",
        " x12 = 12",
        " x13 = 13",
    ]


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("nothing here\n", "`old` is not in the file: the edit will fail"),
        ("dup\ndup\n", "`old` occurs 2 times: the edit will fail"),
        (None, "the file does not exist: the edit will fail"),
    ],
)
def test_an_edit_that_would_fail_shows_old_and_new(
    tmp_path: Path, content: str | None, reason: str
) -> None:
    if content is not None:
        (tmp_path / "f.txt").write_text(content, encoding="utf-8")
    preview = approval_preview(
        "edit_file",
        {"path": "f.txt", "old": "dup\n", "new": "one\ntwo\n"},
        workspace=Workspace(tmp_path),
        width=60,
        color=False,
    )
    assert rows(preview) == ["edit_file f.txt", f"({reason})", "- dup", "+ one", "+ two"]


def test_no_workspace_means_the_current_content_is_unknown() -> None:
    preview = approval_preview(
        "edit_file",
        {"path": "f.txt", "old": "a", "new": "b"},
        workspace=None,
        width=60,
        color=False,
    )
    assert rows(preview) == ["edit_file f.txt", "(no workspace to read it from)", "- a", "+ b"]


# --- other tools ------------------------------------------------------------------------------


def test_other_tools_show_their_arguments_as_indented_json() -> None:
    preview = approval_preview(
        "grep",
        {"pattern": "TODO", "path": "src", "nested": {"a": [1, 2]}},
        workspace=None,
        width=60,
        color=False,
    )
    assert rows(preview) == [
        "grep",
        "{",
        '  "pattern": "TODO",',
        '  "path": "src",',
        '  "nested": {',
        '    "a": [',
        "      1,",
        "      2",
        "    ]",
        "  }",
        "}",
    ]


def test_frozen_json_arguments_as_a_tool_call_holds_them() -> None:
    arguments = JsonObject({"query": "x", "filters": [{"k": "v"}, 2.5, None, True]})
    preview = approval_preview("search", arguments, workspace=None, width=60, color=False)
    assert rows(preview)[1:] == [
        "{",
        '  "query": "x",',
        '  "filters": [',
        "    {",
        '      "k": "v"',
        "    },",
        "    2.5,",
        "    null,",
        "    true",
        "  ]",
        "}",
    ]
    bash = approval_preview(
        "bash", JsonObject({"command": "ls -la"}), workspace=None, width=60, color=False
    )
    assert rows(bash) == ["bash", "$ ls -la"]


def test_a_shape_the_tool_does_not_take_falls_back_to_json() -> None:
    preview = approval_preview(
        "bash", {"command": "ls", "extra": "\u202eoops"}, workspace=None, width=60, color=False
    )
    assert '"extra": "\\u202eoops"' in preview
    assert_safe(preview, 60)


def test_huge_json_arguments_say_how_much_is_left_out() -> None:
    value = "v" * (JSON_PREVIEW_MAX_CHARS + 5_000)
    preview = approval_preview("mcp_tool", {"blob": value}, workspace=None, width=100, color=False)
    total = len('{\n  "blob": ""\n}') + len(value)
    assert rows(preview)[-1] == f"[… {total - JSON_PREVIEW_MAX_CHARS} more characters]"
    big = approval_preview(
        "mcp_tool", {"blob": "v" * 19_000}, workspace=None, width=100, color=False
    )
    assert "more characters" not in big


# --- the answer -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        ("y", Allow()),
        (" YES ", Allow()),
        ("a", AllowAlways()),
        ("Always\n", AllowAlways()),
        ("n", Deny()),
        ("no", Deny()),
        ("n: use pytest -x instead", Deny(reason="use pytest -x instead")),
        ("No, not now", Deny(reason="not now")),
        ("n   run the linter first  ", Deny(reason="run the linter first")),
        ("n:", Deny()),
        ("nope", None),
        ("y: sure", None),
        ("", None),
        ("maybe", None),
        ("yess", None),
    ],
)
def test_answers(text: str, answer: object) -> None:
    assert parse_approval(text) == answer


@given(st.text())
def test_any_text_parses_or_is_none(text: str) -> None:
    answer = parse_approval(text)
    if answer is not None:
        assert text.strip()[:1].lower() in ("y", "n", "a")


@given(
    word=st.sampled_from(["n", "N", "no", "No", "NO"]),
    separator=st.sampled_from([":", ",", " ", ": ", "\t"]),
    reason=st.text(min_size=1).filter(lambda s: s.strip().lstrip(":,;").strip() == s),
)
def test_a_reason_after_no_reaches_the_model(word: str, separator: str, reason: str) -> None:
    answer = parse_approval(f"{word}{separator}{reason}")
    assert answer == Deny(reason=reason)
    assert isinstance(answer, Deny)
    assert denial_text(answer).endswith(f"Their reason: {reason}")


def test_the_denial_text_and_the_question() -> None:
    assert denial_text(Deny()) == "The user declined this tool call; it did not run."
    assert approval_question("bash") == (
        "allow bash? [y]es / [n]o (n: reason) / [a]lways for bash: "
    )
    assert approval_question("evil\x1b[2J") == (
        "allow evil\\x1b[2J? [y]es / [n]o (n: reason) / [a]lways for evil\\x1b[2J: "
    )


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("bash", {"command": 42}),
        ("bash", {"command": "ls", "timeout_seconds": "soon"}),
        ("python_process", {"source": "print(1)", "arguments": "not a list"}),
        ("write_file", {"path": 7, "content": "x"}),
        ("edit_file", {"path": "f", "old": None, "new": "x"}),
    ],
)
def test_arguments_of_the_wrong_type_are_shown_as_json(
    name: str, arguments: dict[str, object]
) -> None:
    preview = approval_preview(name, arguments, workspace=None, width=60, color=False)
    assert rows(preview)[:2] == [name, "{"]


def test_writes_that_change_the_final_newline_or_nothing_say_so(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("a\nb\n", encoding="utf-8")
    ws = Workspace(tmp_path)
    same = approval_preview(
        "write_file", {"path": "f.txt", "content": "a\nb\n"}, workspace=ws, width=60, color=False
    )
    assert rows(same)[-1] == "(no change: the new content is the current content)"
    newline = approval_preview(
        "write_file", {"path": "f.txt", "content": "a\nb"}, workspace=ws, width=60, color=False
    )
    assert rows(newline)[-1] == "(the final newline changes)"
    empty = approval_preview(
        "write_file", {"path": "new.txt", "content": ""}, workspace=ws, width=60, color=False
    )
    assert rows(empty) == ["write_file new.txt (new file, 0 lines)", "1 │ "]


def test_a_long_diff_says_how_many_lines_are_left_out(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("".join(f"{n}\n" for n in range(600)), encoding="utf-8")
    preview = approval_preview(
        "write_file",
        {"path": "f.txt", "content": "".join(f"{n}!\n" for n in range(600))},
        workspace=Workspace(tmp_path),
        width=60,
        color=False,
    )
    assert rows(preview)[-1] == "… 803 more diff lines"
    assert len(rows(preview)) == 1 + 400 + 1


def test_a_name_the_file_system_refuses_is_shown_as_unknown(tmp_path: Path) -> None:
    preview = approval_preview(
        "write_file",
        {"path": "x" * 300 + ".txt", "content": "y\n"},
        workspace=Workspace(tmp_path),
        width=80,
        color=False,
    )
    assert "current content unknown" in preview
    assert rows(preview)[-1] == "1 │ y"


def test_an_answer_word_glued_to_something_else_is_no_answer() -> None:
    assert parse_approval("n1") is None
    assert parse_approval("n-x") is None
    assert parse_approval("?") is None
