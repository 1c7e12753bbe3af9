"""Extension errors: ``ExtensionError`` with its stable codes, and the frozen aggregate that
carries every failure of a rollback or a disposal (as the ``__cause__`` of the error raised).

The twelve codes of the workshop's checkpoint 12 are kept exactly; two more are tether's own:
``EXTENSION_LOAD_FAILED`` for extensions loaded from ``importlib.metadata`` entry points
(``tether.agent.extensions.entry_points``): an entry point that cannot be imported (or exits
the interpreter as it is imported) or does not name an extension; ``EXTENSION_TIMED_OUT`` for
an activation or a cleanup that did not finish within the host's ``timeout`` (the message
names the extension).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, Literal, TypeAlias, get_args

from tether._async.aggregate import TetherAggregateError
from tether._base.tether_error import TetherError

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
    "EXTENSION_TIMED_OUT",
]
"""The workshop's twelve codes, then ``EXTENSION_LOAD_FAILED`` (tether's entry points) and
``EXTENSION_TIMED_OUT`` (tether's bound on activation and cleanup)."""

EXTENSION_ERROR_CODES: Final[tuple[ExtensionErrorCode, ...]] = get_args(ExtensionErrorCode)
"""Every ``ExtensionErrorCode``, in declaration order."""


class ExtensionError(TetherError[ExtensionErrorCode]):
    """An extension host, definition or entry point broke the contract (see the codes)."""

    def __init__(self, code: ExtensionErrorCode, message: str) -> None:
        super().__init__(code, message)


class ExtensionAggregateError(TetherAggregateError[ExtensionErrorCode]):
    """The failures of a rollback or a disposal, in the order they happened (a frozen
    ``TetherAggregateError``: an ``ExceptionGroup`` with a ``code``).

    It is the ``__cause__`` of the ``ExtensionError`` it explains and carries the same
    ``code``: ``EXTENSION_ACTIVATION_ROLLBACK_FAILED`` with ``(primary, *cleanup_failures)``,
    ``EXTENSION_DISPOSAL_FAILED`` with every disposal failure in attempt order.
    """

    def __new__(
        cls, code: ExtensionErrorCode, message: str, errors: Sequence[Exception]
    ) -> ExtensionAggregateError:
        return super().__new__(cls, code, message, errors)

    def __init__(self, code: ExtensionErrorCode, message: str, errors: Sequence[Exception]) -> None:
        super().__init__(code, message, errors)
