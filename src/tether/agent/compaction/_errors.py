"""The one error every fail-closed context operation raises, and its stable codes."""

from __future__ import annotations

from typing import Literal, NoReturn, TypeAlias

from tether._base.tether_error import TetherError

ContextCompactionErrorCode: TypeAlias = Literal[
    "CONTEXT_INVALID_INPUT",
    "CONTEXT_INVALID_TRANSCRIPT",
    "CONTEXT_LIMIT_EXCEEDED",
    "CONTEXT_INVALID_BUDGET",
    "CONTEXT_BOUNDARY_UNAVAILABLE",
    "CONTEXT_SUMMARY_INVALID",
    "CONTEXT_SUMMARY_INSUFFICIENT",
    "CONTEXT_SUMMARIZER_FAILED",
    "CONTEXT_ASYNC_VALUE_UNOBSERVABLE",
    "CONTEXT_CANCELLED",
]
"""Every code a ``ContextCompactionError`` carries."""


class ContextCompactionError(TetherError[ContextCompactionErrorCode]):
    """Every fail-closed context operation raises this; ``code`` says which rule failed.

    Codes: ``CONTEXT_INVALID_INPUT``, ``CONTEXT_INVALID_TRANSCRIPT``,
    ``CONTEXT_LIMIT_EXCEEDED``, ``CONTEXT_INVALID_BUDGET``, ``CONTEXT_BOUNDARY_UNAVAILABLE``,
    ``CONTEXT_SUMMARY_INVALID``, ``CONTEXT_SUMMARY_INSUFFICIENT``,
    ``CONTEXT_SUMMARIZER_FAILED``, ``CONTEXT_ASYNC_VALUE_UNOBSERVABLE`` (reserved: an awaitable
    whose ``__await__`` does not return an iterator), ``CONTEXT_CANCELLED``. The cause, when
    there is one, is ``__cause__``.
    """

    def __init__(self, code: ContextCompactionErrorCode, message: str) -> None:
        super().__init__(code, message)


def fail(code: ContextCompactionErrorCode, message: str) -> NoReturn:
    raise ContextCompactionError(code, message)
