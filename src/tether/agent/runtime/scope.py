"""Operation scopes: which runtimes and managers the current task is acting for.

A runtime runs its event operations, extension hooks and extension disposal inside its own
scope; a manager runs every queued operation (and so every factory of a replacement) inside
its scope. Calling ``flush``/``dispose``/``replace`` of an owner from inside that owner's own
scope would wait for itself, so it is refused (``RUNTIME_REENTRANT_OPERATION``). One
``ContextVar`` holds the owners of the current context; tasks started inside a scope inherit it
(``asyncio`` copies the context), which is what makes a hook's own tasks reentrant too.
"""

from __future__ import annotations

import contextlib
from collections.abc import Generator
from contextvars import ContextVar
from typing import Final

from tether.agent.runtime.errors import TetherRuntimeError

__all__ = ["assert_not_reentrant", "in_scope", "operation_scope"]

_OWNERS: Final[ContextVar[tuple[object, ...]]] = ContextVar("tether_runtime_scope", default=())


def in_scope(owner: object) -> bool:
    """Whether the current context acts for ``owner``."""
    return any(active is owner for active in _OWNERS.get())


def assert_not_reentrant(owner: object, operation: str) -> None:
    """``RUNTIME_REENTRANT_OPERATION`` when called from inside ``owner``'s own scope."""
    if in_scope(owner):
        raise TetherRuntimeError(
            "RUNTIME_REENTRANT_OPERATION",
            f"{operation}() cannot be called from inside an operation it would wait for",
        )


@contextlib.contextmanager
def operation_scope(owner: object) -> Generator[None]:
    """Act for ``owner`` until the block ends (nested scopes accumulate)."""
    token = _OWNERS.set((*_OWNERS.get(), owner))
    try:
        yield
    finally:
        _OWNERS.reset(token)
