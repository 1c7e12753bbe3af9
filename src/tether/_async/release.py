"""Ordered release with every failure kept: ``Release``.

A disposal or a rollback (a runtime's disposal, a construction ledger's rollback, an
extension host's cleanups) releases several things in a fixed order and must attempt every
one: a failing step does not stop the next, and every failure is kept, in the order it
happened, for the caller to raise as its layer's ``TetherAggregateError`` (``_aggregate``).
The workshop writes a loop of ``try``/``catch`` pushing onto an array; here it is one object
whose ``attempt`` runs one step.

A step is a callable returning an awaitable (``lambda: store.flush()``), so a step that
raises before it returns its awaitable fails like one that fails while awaited. What it
raises decides what happens:

* an ``Exception``: kept in ``failures``, and the release goes on;
* a ``CancelledError`` the step raised on its own (this task is not being cancelled), when
  the release was made with ``cancelled`` (and without ``hold``): the failure
  ``cancelled()`` returns is kept instead, and the release goes on;
* any other ``BaseException`` (this task's cancellation, ``KeyboardInterrupt``) is never
  swallowed: it propagates at once, or, for a release made with ``hold=True``, the first one
  is kept in ``escaping`` (see ``hold``) and the release goes on, for the caller to raise
  once everything ran.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from tether._async.race import reraise_task_cancellation

__all__ = ["Release"]


class Release:
    """The failures of one ordered release, in order (see the module docstring)."""

    __slots__ = ("_cancelled", "_hold", "escaping", "failures")

    def __init__(
        self, *, hold: bool = False, cancelled: Callable[[], Exception] | None = None
    ) -> None:
        self.failures: list[Exception] = []
        """What the steps raised (or ``cancelled()`` for a step that cancelled itself)."""
        self.escaping: BaseException | None = None
        """With ``hold``: the first ``BaseException`` a step raised, for the caller to raise."""
        self._hold = hold
        self._cancelled = cancelled

    async def attempt(self, step: Callable[[], Awaitable[object]]) -> BaseException | None:
        """Run ``step`` and keep its failure; the ``BaseException`` it raised when this
        release holds them (``hold=True``), else ``None``."""
        try:
            await step()
        except Exception as error:
            self.failures.append(error)
        except asyncio.CancelledError as error:
            if self._hold:
                return self.hold(error)
            if self._cancelled is None:
                raise
            reraise_task_cancellation(error)
            self.failures.append(self._cancelled())
        except BaseException as error:
            if not self._hold:
                raise
            return self.hold(error)
        return None

    def hold(self, error: BaseException) -> BaseException:
        """Keep ``error`` as ``escaping`` unless an earlier one is kept; returns ``error``."""
        if self.escaping is None:
            self.escaping = error
        return error
