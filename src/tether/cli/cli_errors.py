"""The CLI's error: ``CliError``, a problem a person can fix (exit status 2), and its codes
(``CliErrorCode``). Every command raises it; ``tether.cli.config`` re-exports both."""

from __future__ import annotations

from typing import Literal, TypeAlias

from tether._base.tether_error import TetherError

__all__ = ["CliError", "CliErrorCode"]
CliErrorCode: TypeAlias = Literal[
    "CLI_CONFIG_INVALID",
    "CLI_CONFIG_UNREADABLE",
    "CLI_NO_MODEL",
    "CLI_INVALID_MODEL_SPEC",
    "CLI_UNKNOWN_PROVIDER",
    "CLI_MISSING_API_KEY",
    "CLI_SERVER_UNREACHABLE",
    "CLI_AUTH_FAILED",
    "CLI_RATE_LIMITED",
    "CLI_CONTEXT_OVERFLOW",
    "CLI_EXTENSION_UNAVAILABLE",
    "CLI_SANDBOX_UNAVAILABLE",
    "CLI_TRACING_UNAVAILABLE",
    "CLI_EXPORT_FAILED",
    "CLI_EVAL_TASKS_INVALID",
    "CLI_EVAL_TASKS_UNREADABLE",
    "CLI_EVAL_BASELINE_UNREADABLE",
    "CLI_EVAL_WRITE_FAILED",
    "CLI_EVAL_RAY_MISSING",
    "CLI_EVAL_RAY_FAILED",
]
"""Every code a ``CliError`` carries: a typo in one is a type error, not a new code."""


class CliError(TetherError[CliErrorCode]):
    """A problem a person can fix (exit status 2): ``code`` is stable, the message says what to
    do. Never carries a secret."""

    def __init__(self, code: CliErrorCode, message: str) -> None:
        super().__init__(code, message)
