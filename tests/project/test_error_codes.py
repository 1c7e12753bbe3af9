"""docs/ERROR_CODES.md: every stable code has a row with advice, and the file is current."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

_SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "generate_error_codes.py"


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("generate_error_codes", _SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their module while built
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module


generator = _generator()


def _codes() -> set[str]:
    return {code for layer in generator.gather() for code in layer.codes}


def test_every_code_has_advice_and_every_row_a_code() -> None:
    assert generator.problems(generator.gather()) == []


def test_the_committed_file_is_current() -> None:
    committed = generator.OUTPUT.read_text(encoding="utf-8")
    assert committed == generator.render(generator.gather()), (
        "docs/ERROR_CODES.md is stale: run scripts/generate_error_codes.py"
    )


def test_codes_come_from_every_layer() -> None:
    codes = _codes()
    samples = {
        "PROVIDER_AUTH_FAILED",  # a Literal alias (ProviderErrorCode)
        "FILE_NOT_FOUND",  # the coding tools' CodingToolErrorCode
        "CLI_MISSING_API_KEY",  # the CLI's CliErrorCode
        "RPC_UNKNOWN_COMMAND",  # rpc's RpcProtocolErrorCode
        "SESSION_IN_USE",  # the session store's
        "AGENT_BUSY",  # built literally: AgentBusyError
        "CODING_SESSION_NOT_FOUND",  # built literally: CodingSessionError(...)
        "ABORTED",  # a code without an underscore
        "TOOL_CALL_INTERRUPTED",  # the Agent's ClosedCallCode
    }
    assert samples <= codes


def test_a_code_without_advice_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    advice = dict(generator.ADVICE)
    del advice["FILE_NOT_FOUND"]
    advice["NOT_A_CODE_ANYWHERE"] = "nothing"
    monkeypatch.setattr(generator, "ADVICE", advice)
    assert generator.problems(generator.gather()) == [
        "FILE_NOT_FOUND: no row in ADVICE",
        "NOT_A_CODE_ANYWHERE: ADVICE row for a code that no longer exists",
    ]
    monkeypatch.setattr(sys, "argv", ["generate_error_codes.py", "--check"])
    assert generator.main() == 1


def test_a_stale_file_fails_the_check(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stale = tmp_path / "ERROR_CODES.md"
    stale.write_text("# Error codes\n", encoding="utf-8")
    monkeypatch.setattr(generator, "OUTPUT", stale)
    monkeypatch.setattr(sys, "argv", ["generate_error_codes.py", "--check"])
    assert generator.main() == 1
    assert "stale" in capsys.readouterr().err
    monkeypatch.setattr(sys, "argv", ["generate_error_codes.py"])
    assert generator.main() == 0
    monkeypatch.setattr(sys, "argv", ["generate_error_codes.py", "--check"])
    assert generator.main() == 0


def test_each_advice_is_one_line_of_its_own_words() -> None:
    for code, advice in generator.ADVICE.items():
        assert "\n" not in advice, code
        assert "|" not in advice, code
        words = set(advice.lower().replace("`", " ").split())
        assert len(words) >= 5, code  # advice, not a restatement of the name
