"""Every subcommand's ``--help`` is complete: its exit statuses; ``chat``'s slash commands and
keys; ``rpc``'s commands and where the protocol is documented; ``run``'s stdin prompt."""

from __future__ import annotations

import pytest

from tether.cli.main import main
from tether.cli.rpc import COMMANDS as RPC_COMMANDS
from tether.cli.slash_commands import COMMANDS as CHAT_COMMANDS


def help_of(capsys: pytest.CaptureFixture[str], *command: str) -> str:
    with pytest.raises(SystemExit) as exited:
        main([*command, "--help"])
    assert exited.value.code == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("command", ["run", "rpc", "chat", "models", "trace", "eval"])
def test_every_subcommand_lists_its_exit_statuses(
    capsys: pytest.CaptureFixture[str], command: str
) -> None:
    text = help_of(capsys, command)
    assert "exit status" in text
    assert "\n  0 " in text


def test_chat_lists_every_slash_command_and_key(capsys: pytest.CaptureFixture[str]) -> None:
    text = help_of(capsys, "chat")
    for name in CHAT_COMMANDS:
        assert f"  /{name} " in text, name
    for key in ("Enter", "Alt-Enter", "Ctrl-C", "Ctrl-D", "y / n / a"):
        assert key in text, key
    assert "130" in text


def test_rpc_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    text = " ".join(help_of(capsys, "rpc").split())
    for name in RPC_COMMANDS:
        assert name in text, name
    assert "docs/rpc.md" in text
    assert "--auto-approve" in text


def test_run_says_where_the_prompt_comes_from(capsys: pytest.CaptureFixture[str]) -> None:
    text = " ".join(help_of(capsys, "run").split())
    assert "-p -" in text
    assert "same system prompt" in text
    assert "130" in text
