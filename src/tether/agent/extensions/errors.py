"""Extension errors: ``ExtensionError`` with its stable codes, and the frozen aggregate that
carries every failure of a rollback or a disposal (as the ``__cause__`` of the error raised).

The twelve codes of the workshop's checkpoint 12 are kept exactly; ``EXTENSION_LOAD_FAILED``
is a thirteenth, tether's own, for extensions loaded from ``importlib.metadata`` entry points
(``tether.agent.extensions.entry_points``): an entry point that cannot be imported or does
not name an extension.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, Literal, TypeAlias, get_args

from tether._errors import TetherError

__all__ = [
    "EXTENSION_ERROR_CODES",
    "ExtensionAggregateError",
    "ExtensionError",
    "ExtensionErrorCode",
]

ExtensionErrorCode: TypeAlias = Literal[
    "EXTENSION_INVALID_OPTIONS",
    "INVALID_EXTENSION_DEFINITION",
    "DUPLICATE_EXTENSION_ID",
    "EXTENSION_NOT_FOUND",
    "EXTENSION_ALREADY_ACTIVE",
    "EXTENSION_ACTIVATION_FAILED",
    "EXTENSION_ACTIVATION_ROLLBACK_FAILED",
    "EXTENSION_CANCELLED",
    "EXTENSION_HOST_DISPOSED",
    "EXTENSION_REENTRANT_OPERATION",
    "EXTENSION_DISPOSAL_FAILED",
    "INVALID_AGENT_EVENT",
    "EXTENSION_LOAD_FAILED",
]
"""The workshop's twelve codes, then ``EXTENSION_LOAD_FAILED`` (tether's entry points)."""

EXTENSION_ERROR_CODES: Final[tuple[ExtensionErrorCode, ...]] = get_args(ExtensionErrorCode)
"""Every ``ExtensionErrorCode``, in declaration order."""


class ExtensionError(TetherError):
    """An extension host, definition or entry point broke the contract (see the codes)."""

    def __init__(self, code: ExtensionErrorCode, message: str) -> None:
        super().__init__(code, message)


_EXCEPTION_SLOTS: Final = frozenset(
    {"__traceback__", "__cause__", "__context__", "__suppress_context__", "__notes__"}
)


def _rebuild(
    cls: type[ExtensionAggregateError],
    code: ExtensionErrorCode,
    message: str,
    errors: tuple[Exception, ...],
) -> ExtensionAggregateError:
    return cls(code, message, errors)


class ExtensionAggregateError(TetherError, ExceptionGroup[Exception]):
    """A frozen list of failures, in the order they happened: the workshop's frozen
    ``AggregateError``, as an ``ExceptionGroup`` (so ``except*`` works) and a ``TetherError``.

    It is the ``__cause__`` of the ``ExtensionError`` it explains and carries the same
    ``code``: ``EXTENSION_ACTIVATION_ROLLBACK_FAILED`` with ``(primary, *cleanup_failures)``,
    ``EXTENSION_DISPOSAL_FAILED`` with every disposal failure in attempt order. ``errors``
    (also ``exceptions``) is a tuple; attributes cannot be set, except those Python itself
    manages on every exception (traceback, cause, context, notes).
    """

    def __new__(
        cls, code: ExtensionErrorCode, message: str, errors: Sequence[Exception]
    ) -> ExtensionAggregateError:
        return ExceptionGroup.__new__(cls, message, tuple(errors))

    def __init__(self, code: ExtensionErrorCode, message: str, errors: Sequence[Exception]) -> None:
        Exception.__init__(self, message, tuple(errors))
        object.__setattr__(self, "_code", code)

    @property
    def errors(self) -> tuple[Exception, ...]:
        """The failures, in order."""
        return self.exceptions

    @property
    def message(self) -> str:
        """The human-readable message."""
        return ExceptionGroup.message.__get__(self)

    def __repr__(self) -> str:
        return (
            f"ExtensionAggregateError(code={self.code!r}, message={self.message!r}, "
            f"errors={self.errors!r})"
        )

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild, (type(self), self.code, self.message, self.errors))

    def __setattr__(self, name: str, value: object) -> None:
        if name in _EXCEPTION_SLOTS:
            super().__setattr__(name, value)
            return
        raise AttributeError(f"ExtensionAggregateError is frozen: cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        if name in _EXCEPTION_SLOTS:
            super().__delattr__(name)
            return
        raise AttributeError(f"ExtensionAggregateError is frozen: cannot delete {name!r}")
