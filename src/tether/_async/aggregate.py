"""The one frozen aggregate of failures tether raises: ``TetherAggregateError``.

Rollbacks, disposals and cleanups attempt every step and keep every failure. The workshop
collects them in a frozen ``AggregateError``; in Python that is an ``ExceptionGroup`` (so
``except*`` works), which is also a ``TetherError`` with a stable ``code``. It is the
``__cause__`` of the error that explains it. ``errors`` (the same tuple as ``exceptions``)
keeps the order the failures happened in. It is frozen: setting or deleting an attribute
raises, except those Python manages on every exception (traceback, cause, context, notes).
It pickles (Ray ships errors between processes), and ``split``/``subgroup`` keep the class
and the code.

Each layer subclasses it to type its codes (``ExtensionAggregateError``,
``EvaluationCleanupErrors``, ``RuntimeAggregateError``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, TypeVar

from tether._base.tether_error import CodeT_co, TetherError

__all__ = ["TetherAggregateError"]

_EXCEPTION_SLOTS: Final = frozenset(
    {"__traceback__", "__cause__", "__context__", "__suppress_context__", "__notes__"}
)

_A = TypeVar("_A", bound="TetherAggregateError")


def _rebuild(cls: type[_A], code: str, message: str, errors: tuple[Exception, ...]) -> _A:
    group = ExceptionGroup.__new__(cls, message, errors)
    Exception.__init__(group, message, errors)
    object.__setattr__(group, "_code", code)
    return group


class TetherAggregateError(TetherError[CodeT_co], ExceptionGroup[Exception]):
    """A frozen list of failures with a stable ``code`` (see the module docstring)."""

    def __new__(cls, code: CodeT_co, message: str, errors: Sequence[Exception]) -> Any:
        return ExceptionGroup.__new__(cls, message, tuple(errors))

    def __init__(self, code: CodeT_co, message: str, errors: Sequence[Exception]) -> None:
        Exception.__init__(self, message, tuple(errors))
        object.__setattr__(self, "_code", code)

    @property
    def errors(self) -> tuple[Exception, ...]:
        """The failures, in the order they happened."""
        return self.exceptions

    @property
    def message(self) -> str:
        """The human-readable message."""
        return ExceptionGroup.message.__get__(self)

    # ExceptionGroup.derive is generic in the errors' type; a TetherAggregateError holds
    # Exception and derives its own class, which typeshed's signature cannot say.
    def derive(self: _A, excs: Sequence[Exception]) -> _A:  # pyright: ignore[reportIncompatibleMethodOverride]
        """A part of this group (``split``, ``subgroup``): same class, code and message."""
        return _rebuild(type(self), self.code, self.message, tuple(excs))

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(code={self.code!r}, message={self.message!r}, "
            f"errors={self.errors!r})"
        )

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild, (type(self), self.code, self.message, self.errors))

    def __setattr__(self, name: str, value: object) -> None:
        if name in _EXCEPTION_SLOTS:
            super().__setattr__(name, value)
            return
        raise AttributeError(f"{type(self).__name__} is frozen: cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        if name in _EXCEPTION_SLOTS:
            super().__delattr__(name)
            return
        raise AttributeError(f"{type(self).__name__} is frozen: cannot delete {name!r}")
