"""Runtime errors: ``TetherRuntimeError`` with its stable codes, and the frozen aggregate that
carries several failures (construction plus rollback, disposal, hook failures) as the
``__cause__`` of the error raised.

The class is not called ``RuntimeError`` (that would shadow the builtin). The ten codes of the
workshop's checkpoint 13 are kept; ``RUNTIME_SESSION_IN_USE`` is tether's own: a second runtime
on a session file another runtime of this process holds (see ``tether.agent.runtime``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, Literal, TypeAlias, get_args

from tether._async.aggregate import TetherAggregateError
from tether._base.tether_error import TetherError

__all__ = [
    "RUNTIME_ERROR_CODES",
    "RuntimeAggregateError",
    "RuntimeErrorCode",
    "TetherRuntimeError",
]

RuntimeErrorCode: TypeAlias = Literal[
    "RUNTIME_INVALID_OPTIONS",
    "RUNTIME_CONSTRUCTION_FAILED",
    "RUNTIME_ROOT_CHANGED",
    "RUNTIME_EVENT_FAILED",
    "RUNTIME_SESSION_DIVERGED",
    "RUNTIME_REENTRANT_OPERATION",
    "RUNTIME_DISPOSED",
    "RUNTIME_DISPOSAL_FAILED",
    "RUNTIME_SESSION_ROLLBACK_FAILED",
    "RUNTIME_REPLACEMENT_CLEANUP_FAILED",
    "RUNTIME_SESSION_IN_USE",
]
"""The workshop's ten codes, then ``RUNTIME_SESSION_IN_USE`` (tether's)."""

RUNTIME_ERROR_CODES: Final[tuple[RuntimeErrorCode, ...]] = get_args(RuntimeErrorCode)
"""Every ``RuntimeErrorCode``, in declaration order."""


class TetherRuntimeError(TetherError[RuntimeErrorCode]):
    """A runtime (or its manager) could not be built, used, replaced or disposed."""

    def __init__(self, code: RuntimeErrorCode, message: str) -> None:
        super().__init__(code, message)


class RuntimeAggregateError(TetherAggregateError[RuntimeErrorCode]):
    """Several failures in the order they happened (the workshop's frozen ``AggregateError``;
    a ``TetherAggregateError``), with the ``code`` of the error whose ``__cause__`` it is."""

    def __new__(
        cls, code: RuntimeErrorCode, message: str, errors: Sequence[Exception]
    ) -> RuntimeAggregateError:
        return super().__new__(cls, code, message, errors)

    def __init__(self, code: RuntimeErrorCode, message: str, errors: Sequence[Exception]) -> None:
        super().__init__(code, message, errors)


def fail(
    code: RuntimeErrorCode, message: str, cause: Exception, *more: Exception
) -> TetherRuntimeError:
    """A ``TetherRuntimeError`` whose ``__cause__`` is ``cause``, or an aggregate of every
    cause when there are more."""
    error = TetherRuntimeError(code, message)
    error.__cause__ = RuntimeAggregateError(code, message, (cause, *more)) if more else cause
    return error
