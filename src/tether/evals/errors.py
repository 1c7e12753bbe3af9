"""The one error class of the evaluation layer, and the aggregate it uses for cleanup failures.

An evaluation either returns a report or raises ``EvaluationInfrastructureError``: a run whose
candidate *failed the task* is a report row (verdict ``error``), never an exception; an
exception means the evaluation itself could not be carried out (bad options, cancellation, a
workspace, factory, runtime, judge, clock or cleanup that misbehaved).

``EVALUATION_CLEANUP_FAILED`` carries an ``EvaluationCleanupErrors`` (an ``ExceptionGroup``)
as ``__cause__``: the primary failure of the run (if any) followed by the cleanup failures.
Both pickle with their cause intact, because the Ray executor ships errors between processes
(plain pickling drops ``__cause__``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, Literal, TypeAlias, get_args

from tether._async.aggregate import TetherAggregateError
from tether._base.tether_error import TetherError

__all__ = [
    "EVALUATION_ERROR_CODES",
    "EvaluationCleanupErrors",
    "EvaluationErrorCode",
    "EvaluationInfrastructureError",
]

EvaluationErrorCode: TypeAlias = Literal[
    "EVALUATION_INVALID_OPTIONS",
    "EVALUATION_CANCELLED",
    "EVALUATION_WORKSPACE_FAILED",
    "EVALUATION_RUNTIME_FACTORY_FAILED",
    "EVALUATION_RUNTIME_FAILED",
    "EVALUATION_JUDGE_FAILED",
    "EVALUATION_CLOCK_FAILED",
    "EVALUATION_CLEANUP_FAILED",
    "EVALUATION_CLEANUP_TIMEOUT",
    "EVALUATION_INVALID_REPORT",
]

EVALUATION_ERROR_CODES: Final[tuple[EvaluationErrorCode, ...]] = get_args(EvaluationErrorCode)
"""Every ``EvaluationErrorCode``, in declaration order."""


def _restore(
    cls: type[EvaluationInfrastructureError],
    args: tuple[Any, ...],
    state: dict[str, Any],
    cause: BaseException | None,
) -> EvaluationInfrastructureError:
    error = cls.__new__(cls, *args)
    error.args = args
    error.__dict__.update(state)
    error.__cause__ = cause
    return error


class EvaluationInfrastructureError(TetherError[EvaluationErrorCode]):
    """The evaluation could not be carried out; ``code`` says why (``EVALUATION_ERROR_CODES``).

    Frozen in spirit: ``code`` is read-only. ``__cause__`` is the underlying failure when there
    is one (for ``EVALUATION_CLEANUP_FAILED`` always an ``EvaluationCleanupErrors``).
    """

    def __init__(self, code: EvaluationErrorCode, message: str) -> None:
        super().__init__(code, message)

    @property
    def errors(self) -> tuple[BaseException, ...]:
        """The aggregated failures of an ``EVALUATION_CLEANUP_FAILED`` (else empty)."""
        cause = self.__cause__
        if isinstance(cause, EvaluationCleanupErrors):
            return tuple(cause.exceptions)
        return ()

    def __reduce__(self) -> tuple[Any, ...]:
        return (_restore, (type(self), self.args, dict(self.__dict__), self.__cause__))


class EvaluationCleanupErrors(TetherAggregateError):
    """The aggregate behind ``EVALUATION_CLEANUP_FAILED``: ``[primary?, *cleanup failures]``
    (a frozen ``TetherAggregateError`` with that code)."""

    def __new__(cls, message: str, errors: Sequence[Exception]) -> EvaluationCleanupErrors:
        return super().__new__(cls, "EVALUATION_CLEANUP_FAILED", message, errors)

    def __init__(self, message: str, errors: Sequence[Exception]) -> None:
        super().__init__("EVALUATION_CLEANUP_FAILED", message, errors)
