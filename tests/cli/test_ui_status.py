"""tether.cli.ui.status and tether.cli.ui.complete: the status line and prompt completion."""

from __future__ import annotations

import os
import re
import unicodedata
from pathlib import Path
from typing import get_args

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tether.cli.ui.complete import Completion, complete_command, complete_path
from tether.cli.ui.status import (
    SPINNER,
    Activity,
    StatusState,
    format_count,
    format_duration,
    status_line,
)
from tether.cli.ui.text import cell_width
from tether.tools.coding import Workspace

SGR = re.compile(r"\x1b\[[0-9;]*m")
ACTIVITIES: list[Activity] = list(get_args(Activity))

FULL = StatusState(
    activity="retrying",
    frame=3,
    retry_in=2,
    retry_reason="HTTP 503",
    elapsed=12.3,
    input_tokens=12_345,
    output_tokens=340,
    cost=0.0123,
    context_used=41_000,
    context_window=100_000,
)


# --- the status line ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("state", "line"),
    [
        (StatusState(activity="waiting", elapsed=0.4), "⠋ waiting for the model · 0.4 s"),
        (StatusState(activity="tool", tool="bash", frame=1), "⠙ running bash"),
        (StatusState(activity="thinking", frame=10), "⠋ thinking"),
        (StatusState(activity="compacting"), "⠋ compacting the context"),
        (StatusState(activity="idle", cost=1.5), "  ready · $1.50"),
        (
            StatusState(activity="retrying", retry_in=2.2, retry_reason="HTTP 503"),
            "⠋ retrying in 2 s (HTTP 503)",
        ),
        (FULL, "⠸ retrying in 2 s (HTTP 503) · 12 s · ↑12k ↓340 · $0.0123 · context 41%"),
    ],
)
def test_the_status_line_says_what_is_happening(state: StatusState, line: str) -> None:
    assert status_line(state, width=120, color=False) == line


def test_the_least_useful_parts_go_first_when_narrow() -> None:
    assert status_line(FULL, width=60, color=False) == (
        "⠸ retrying in 2 s (HTTP 503) · 12 s · context 41%"
    )
    assert status_line(FULL, width=30, color=False) == "⠸ retrying in 2 s (HTTP 503)"
    assert status_line(FULL, width=10, color=False) == "⠸ retryin…"


def test_the_thinking_level_is_shown_last_and_kept_before_the_details() -> None:
    state = StatusState(activity="writing", elapsed=3.2, cost=0.5, thinking="high")
    assert status_line(state, width=80, color=False) == "⠋ writing · 3.2 s · $0.5000 · think high"
    assert status_line(state, width=30, color=False) == "⠋ writing · 3.2 s · think high"
    assert status_line(state, width=22, color=False) == "⠋ writing · think high"
    assert status_line(StatusState(activity="idle"), width=80, color=False) == "  ready"


def test_colour_marks_a_full_context() -> None:
    nearly = StatusState(activity="writing", context_used=96, context_window=100)
    assert "\x1b[31mcontext 96%\x1b[0m" in status_line(nearly, width=80, color=True)
    high = StatusState(activity="writing", context_used=85, context_window=100)
    assert "\x1b[33mcontext 85%\x1b[0m" in status_line(high, width=80, color=True)
    assert SGR.sub("", status_line(FULL, width=120, color=True)) == status_line(
        FULL, width=120, color=False
    )


def test_outside_text_cannot_move_the_cursor() -> None:
    state = StatusState(activity="tool", tool="x\r\x1b[2Ky", retry_reason="\x1b]0;t\x07")
    line = status_line(state, width=80, color=False)
    assert line == "⠋ running x\\r\\x1b[2Ky"
    retry = StatusState(activity="retrying", retry_reason="\x1b]0;t\x07")
    assert status_line(retry, width=80, color=False) == "⠋ retrying (\\x1b]0;t\\x07)"
    two_lines = StatusState(activity="tool", tool="a\nb")
    assert status_line(two_lines, width=80, color=False) == "⠋ running a\\nb"


def test_the_spinner_turns_and_has_an_ascii_form() -> None:
    frames = [
        status_line(StatusState(activity="waiting", frame=n), width=40, color=False)[0]
        for n in range(len(SPINNER))
    ]
    assert "".join(frames) == SPINNER
    ascii_line = status_line(
        StatusState(activity="waiting", frame=1), width=40, color=False, ascii_only=True
    )
    assert ascii_line == "/ waiting for the model"


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (0.44, "0.4 s"),
        (9.96, "10.0 s"),
        (12.7, "12 s"),
        (185, "3m 05s"),
        (3720, "1h 02m"),
        (-1, "0.0 s"),
    ],
)
def test_durations(seconds: float, shown: str) -> None:
    assert format_duration(seconds) == shown


@pytest.mark.parametrize(
    ("count", "shown"), [(950, "950"), (1_234, "1.2k"), (34_999, "34k"), (1_500_000, "1.5M")]
)
def test_counts(count: int, shown: str) -> None:
    assert format_count(count) == shown


@given(
    activity=st.sampled_from(ACTIVITIES),
    tool=st.none() | st.text(max_size=30),
    elapsed=st.none() | st.floats(min_value=0, max_value=1e6),
    tokens=st.none() | st.integers(min_value=0, max_value=10**9),
    cost=st.none() | st.floats(min_value=0, max_value=1e4),
    used=st.none() | st.integers(min_value=0, max_value=10**7),
    width=st.integers(min_value=1, max_value=150),
)
def test_any_status_fits_its_width(
    activity: Activity,
    tool: str | None,
    elapsed: float | None,
    tokens: int | None,
    cost: float | None,
    used: int | None,
    width: int,
) -> None:
    state = StatusState(
        activity=activity,
        tool=tool,
        elapsed=elapsed,
        input_tokens=tokens,
        output_tokens=tokens,
        cost=cost,
        context_used=used,
        context_window=200_000,
    )
    line = status_line(state, width=width, color=True)
    bare = SGR.sub("", line)
    assert cell_width(bare) <= width
    assert "\n" not in bare
    hidden = {"Cc", "Cf", "Cs", "Zl", "Zp", "Cn", "Co"}
    assert all(unicodedata.category(char) not in hidden for char in bare)


# --- @path completion -----------------------------------------------------------------------


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    for name in ("src/tether", "src/tests", "node_modules/x", ".git/objects", ".github", "docs"):
        (root / name).mkdir(parents=True)
    for name in ("README.md", "readme.txt", "src/main.py", "src/tether/__init__.py", ".env"):
        (root / name).write_text("x", encoding="utf-8")
    (root / "has space.txt").write_text("x", encoding="utf-8")
    (tmp_path / "secret.txt").write_text("SECRET", encoding="utf-8")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "leak.txt").write_text("x", encoding="utf-8")
    os.symlink(tmp_path / "outside", root / "link")
    return root


def texts(completions: list[Completion]) -> list[str]:
    return [completion.text for completion in completions]


def test_an_at_word_completes_workspace_paths(tree: Path) -> None:
    ws = Workspace(tree)
    assert texts(complete_path("look at @", ws)) == [
        "@docs/",
        "@src/",
        "@link",
        "@README.md",
        "@readme.txt",
    ]
    assert texts(complete_path("look at @re", ws)) == ["@README.md", "@readme.txt"]
    found = complete_path("see @src/te", ws)
    assert texts(found) == ["@src/tests/", "@src/tether/"]
    assert found[0].start_position == -len("@src/te")
    assert found[0].display == "tests/"
    assert found[0].meta == "directory"
    assert texts(complete_path("@src/tether/", ws)) == ["@src/tether/__init__.py"]


def test_hidden_entries_only_for_a_dot_and_ignored_directories_never(tree: Path) -> None:
    ws = Workspace(tree)
    assert texts(complete_path("@.", ws)) == ["@.github/", "@.env"]
    assert texts(complete_path("@node", ws)) == []


@pytest.mark.parametrize(
    "line",
    ["@../", "@../outside/", "@/etc/", "@~/", "@link/", "@src/../../", "@nope/", "no at", ""],
)
def test_nothing_outside_the_workspace_is_ever_listed(tree: Path, line: str) -> None:
    assert complete_path(line, Workspace(tree)) == []


def test_the_limit(tree: Path) -> None:
    assert len(complete_path("@", Workspace(tree), limit=2)) == 2


@given(st.text(max_size=40))
def test_any_input_completes_inside_or_not_at_all(text: str) -> None:
    root = Path(__file__).resolve().parents[2] / "src"
    for completion in complete_path(text, Workspace(root), limit=5):
        path = completion.text[1:]
        assert ".." not in path.split("/")
        assert (root / path).resolve().is_relative_to(root.resolve())


# --- slash commands --------------------------------------------------------------------------

COMMANDS = {"help": "show the commands", "export": "write the session as HTML", "exit": "quit"}


def test_slash_commands_complete_at_the_start_of_the_line() -> None:
    found = complete_command("/ex", COMMANDS)
    assert texts(found) == ["/exit", "/export"]
    assert found[1].meta == "write the session as HTML"
    assert found[1].start_position == -3
    assert texts(complete_command("/", COMMANDS)) == ["/exit", "/export", "/help"]
    assert complete_command("/export now", COMMANDS) == []
    assert complete_command("//ex", COMMANDS) == []
    assert complete_command("say /ex", COMMANDS) == []
