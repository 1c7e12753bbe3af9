"""The base class every deliberate tether error shares.

Each error carries a stable, read-only ``code``: codes are the contract, messages are for people.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Generic

__all__ = ["TetherError"]

if TYPE_CHECKING:  # a default, so a bare ``TetherError`` means ``TetherError[str]``
    from typing_extensions import TypeVar

    CodeT_co = TypeVar("CodeT_co", bound=str, covariant=True, default=str)
else:
    from typing import TypeVar

    CodeT_co = TypeVar("CodeT_co", bound=str, covariant=True)


def _restore(cls: type[TetherError], args: tuple[Any, ...], state: dict[str, Any]) -> TetherError:
    error = cls.__new__(cls, *args)
    error.args = args
    error.__dict__.update(state)
    return error


class TetherError(Exception, Generic[CodeT_co]):
    """Base class of the errors tether raises on purpose.

    ``code`` is a stable machine-readable string (assignment raises ``AttributeError``);
    ``name`` is the class name, so logs and JSON forms match the TypeScript workshop. A layer
    types its codes by subclassing ``TetherError[ItsCodeLiteral]``.
    """

    _code: CodeT_co

    def __init__(self, code: CodeT_co, message: str) -> None:
        super().__init__(message)
        self._code = code

    @property
    def code(self) -> CodeT_co:
        """The stable error code."""
        return self._code

    @property
    def name(self) -> str:
        """The error's class name (``"FixtureProviderError"``, ...)."""
        return type(self).__name__

    @property
    def message(self) -> str:
        """The human-readable message."""
        return str(self.args[0]) if self.args else ""

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self._code!r}, message={self.message!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (_restore, (type(self), self.args, dict(self.__dict__)))
