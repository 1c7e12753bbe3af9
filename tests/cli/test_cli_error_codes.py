"""The CLI's stable error codes are one ``Literal`` union (``tether.cli.config.CliErrorCode``):
every ``CLI_*`` code the CLI's source writes is a member, and a misspelt one is a type error."""

from __future__ import annotations

import re
from pathlib import Path
from typing import get_args

import tether.cli
from tether.cli.config import CliConfigError, CliError, CliErrorCode

_CODE = re.compile(r"[\"'](CLI_[A-Z_]+)[\"']")


def test_every_code_the_cli_writes_is_a_member_of_the_union() -> None:
    package = Path(tether.cli.__file__).parent
    written = {
        match.group(1)
        for path in package.rglob("*.py")
        for match in _CODE.finditer(path.read_text(encoding="utf-8"))
    }
    members = set(get_args(CliErrorCode))
    assert written, "the scan found no codes: the pattern is wrong"
    assert written <= members, sorted(written - members)
    assert len(members) == len(get_args(CliErrorCode)), "a code is listed twice"


def test_a_misspelt_code_is_a_type_error_and_a_member_round_trips() -> None:
    # pyright strict reports an unnecessary ignore, so this line proves the misspelling is
    # caught; at run time nothing checks the code (the type checker is the guard).
    misspelt = CliError("CLI_CONFIG_INVALD", "x")  # pyright: ignore[reportArgumentType]
    assert misspelt.code == "CLI_CONFIG_INVALD"
    error = CliConfigError("CLI_CONFIG_UNREADABLE", Path("tether.toml"), "gone")
    assert error.code == "CLI_CONFIG_UNREADABLE"
    assert isinstance(error, CliError)
    assert str(error) == "tether.toml: gone"
