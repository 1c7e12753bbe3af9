"""How a run step fails: ``Step`` carries an ``EvaluationErrorCode`` inside a run, and the
infrastructure errors it becomes (with their fixed messages)."""

from __future__ import annotations

from typing import Final, NoReturn

from tether.evals.errors import (
    EvaluationErrorCode,
    EvaluationInfrastructureError,
)

# -- Small helpers ------------------------------------------------------------------------------


class Step(Exception):
    """A run step failed with ``code`` (internal; becomes an infrastructure error)."""

    def __init__(self, code: EvaluationErrorCode, detail: str) -> None:
        super().__init__(detail)
        self.code: EvaluationErrorCode = code


MESSAGES: Final[dict[EvaluationErrorCode, str]] = {
    "EVALUATION_INVALID_OPTIONS": "Invalid evaluation options",
    "EVALUATION_CANCELLED": "Evaluation was cancelled",
    "EVALUATION_WORKSPACE_FAILED": "Evaluation workspace failed",
    "EVALUATION_RUNTIME_FACTORY_FAILED": "Evaluation runtime factory failed",
    "EVALUATION_RUNTIME_FAILED": "Evaluation runtime failed",
    "EVALUATION_JUDGE_FAILED": "Evaluation judge failed",
    "EVALUATION_CLOCK_FAILED": "Evaluation clock failed",
    "EVALUATION_CLEANUP_FAILED": "Evaluation cleanup failed",
    "EVALUATION_CLEANUP_TIMEOUT": "Evaluation cleanup timed out",
    "EVALUATION_INVALID_REPORT": "Invalid evaluation report",
}


def step_error(
    code: EvaluationErrorCode, cause: BaseException | None = None
) -> EvaluationInfrastructureError:
    error = EvaluationInfrastructureError(code, MESSAGES[code])
    error.__cause__ = cause
    return error


def options_error(detail: str, cause: BaseException | None = None) -> NoReturn:
    error = EvaluationInfrastructureError(
        "EVALUATION_INVALID_OPTIONS", f"Invalid evaluation options: {detail}"
    )
    raise error from cause


class _Missing:
    __slots__ = ()


MISSING: Final = _Missing()
