"""``RuntimeManager``: one current runtime, replaced without a gap.

Every operation runs on one queue, inside the manager's operation scope (so a factory of a
replacement, or an extension disposer it triggers, that calls ``replace``/``flush``/``dispose``
gets ``RUNTIME_REENTRANT_OPERATION``). The same goes for a call from inside the *current
runtime's* operation scope (one of its extension hooks): the queued work would wait for that
runtime's event tail, which waits for the hook, so the call is refused at once, before any
state changes. The shared layer is captured once, at ``create``.

A queued operation that waits for a disposal (a discarded candidate's, the previous runtime's)
and is cancelled waits for that disposal to finish before it ends, so the queue never moves on
while a disposal still holds the session file.

``replace(workspace)`` checks reentrancy, state and the workspace options at call time
(``os.chdir`` afterwards changes nothing), then, queued: builds a full candidate while
``current`` still returns the old runtime; if the manager began disposing meanwhile, disposes
the candidate and fails ``RUNTIME_DISPOSED``; publishes the candidate; only then disposes the
old runtime (a failure there is ``RUNTIME_REPLACEMENT_CLEANUP_FAILED``, the candidate stays
current). A failed build leaves the old runtime current and fully usable.

**Same session file** (tether's): the candidate may be built on the file the current runtime
holds only while the current Agent is idle (else ``RUNTIME_SESSION_IN_USE``); it shares the
current runtime's store (the file's one writer) with a session tree of its own. At the swap,
if the session changed since the candidate was built from it (a run started, an entry was
written), the candidate is disposed and the replace fails ``RUNTIME_SESSION_DIVERGED``; the old
runtime stays current. The candidate itself writes nothing before it is published: the
default agent factory holds the closing results of unanswered tool calls (a ``create_agent``
override may ``move_to`` an entry whose tool calls have no results), and the manager writes
them under its active leaf once it is published and the old runtime disposed (a failed write
leaves them held: the Agent's first write retries them). A candidate that wrote anyway (an
override appending to the session) fails ``RUNTIME_SESSION_DIVERGED`` too, with its own
message; the old runtime stays current and its session as it was (the candidate's entries
stay in the file, on their own branch). Publication disposes the old runtime at once, which
first detaches its Agent from the session, so a stale reference to it cannot write any more.
This is how a host switches the model (or the agent options) of a live conversation: replace
onto the same session, with a ``create_agent`` override that passes the new model to the
fallback.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Coroutine
from typing import Any, Literal, TypeAlias, TypeVar

from tether._async.race import observe
from tether.agent.runtime.build import build_runtime
from tether.agent.runtime.errors import RuntimeAggregateError, TetherRuntimeError
from tether.agent.runtime.options import (
    CapturedWorkspaceOptions,
    SharedLayer,
    capture_shared,
    capture_workspace_options,
)
from tether.agent.runtime.owned import Disposal, Runtime, core_of, file_mark
from tether.agent.runtime.scope import assert_not_reentrant, operation_scope

__all__ = ["RuntimeManager", "RuntimeManagerState", "create_runtime"]

RuntimeManagerState: TypeAlias = Literal["open", "disposing", "disposed"]

T = TypeVar("T")


async def create_runtime(options: object) -> Runtime:
    """Capture ``options`` (``RuntimeOptions`` or its ``dict``) and build a runtime."""
    workspace, shared = capture_shared(options)
    return await build_runtime(workspace, shared)


def _disposed() -> TetherRuntimeError:
    return TetherRuntimeError("RUNTIME_DISPOSED", "Runtime manager is disposed")


class RuntimeManager:
    """Owns the current runtime; see the module docstring. Build one with
    ``await RuntimeManager.create(options)``; the constructor is private."""

    __slots__ = ("_current", "_disposal", "_shared", "_state", "_tail")

    _current: Runtime
    _disposal: Disposal | None
    _shared: SharedLayer
    _state: RuntimeManagerState
    _tail: asyncio.Future[Any] | None

    def __init__(self) -> None:
        raise TypeError("use 'await RuntimeManager.create(options)' to build a manager")

    @classmethod
    async def create(cls, options: object) -> RuntimeManager:
        """Capture ``options`` and build the first runtime."""
        workspace, shared = capture_shared(options)
        manager = object.__new__(cls)
        manager._shared = shared
        manager._state = "open"
        manager._tail = None
        manager._disposal = None
        with operation_scope(manager):
            manager._current = await build_runtime(workspace, shared)
        return manager

    @property
    def state(self) -> RuntimeManagerState:
        """``open``, ``disposing`` or ``disposed``."""
        return self._state

    @property
    def current(self) -> Runtime:
        """The current runtime (``RUNTIME_DISPOSED`` unless the manager is open)."""
        if self._state != "open":
            raise _disposed()
        return self._current

    def _enqueue(self, operation: Callable[[], Coroutine[Any, Any, T]]) -> asyncio.Task[T]:
        previous = self._tail

        async def run() -> T:
            if previous is not None and not previous.done():
                await asyncio.wait((previous,))
            with operation_scope(self):
                return await operation()

        task = asyncio.ensure_future(run())
        self._tail = task
        return task

    def _assert_not_reentrant(self, operation: str) -> None:
        assert_not_reentrant(self, operation)
        assert_not_reentrant(self._current, operation)

    def replace(self, workspace: object) -> asyncio.Task[Runtime]:
        """Queue a replacement onto ``workspace`` (``RuntimeWorkspaceOptions`` or its
        ``dict``), captured now; await the returned task for the new current runtime."""
        self._assert_not_reentrant("RuntimeManager.replace")
        if self._state != "open":
            raise _disposed()
        captured = capture_workspace_options(workspace)
        return self._enqueue(lambda: self._replace(captured))

    async def _replace(self, captured: CapturedWorkspaceOptions) -> Runtime:
        if self._state != "open":
            raise _disposed()
        previous = self._current
        candidate = await build_runtime(captured, self._shared, share_with=previous)
        problem: TetherRuntimeError | None = None
        if self._state != "open":
            problem = _disposed()
        elif core_of(candidate).claim.shared:
            problem = _same_file_problem(previous, candidate)
        if problem is not None:
            try:
                await _settle(candidate.dispose())
            except Exception as cleanup:
                error = TetherRuntimeError(
                    "RUNTIME_DISPOSAL_FAILED", "Runtime replacement candidate disposal failed"
                )
                error.__cause__ = RuntimeAggregateError(
                    "RUNTIME_DISPOSAL_FAILED",
                    "Runtime replacement candidate disposal failed",
                    (problem, cleanup),
                )
                raise error from error.__cause__
            raise problem
        self._current = candidate
        try:
            await _settle(previous.dispose())
        except Exception as cleanup:
            error = TetherRuntimeError(
                "RUNTIME_REPLACEMENT_CLEANUP_FAILED",
                "The previous runtime could not be disposed (the replacement is current)",
            )
            error.__cause__ = cleanup
            raise error from cleanup
        finally:
            # Published, and the previous runtime let the file go: write what the candidate
            # held back (a failure leaves it held: the Agent's first write retries it).
            with contextlib.suppress(Exception):
                await core_of(candidate).record_held()
        return candidate

    async def flush(self) -> None:
        """Flush the current runtime, after every queued replacement."""
        self._assert_not_reentrant("RuntimeManager.flush")
        if self._state != "open":
            raise _disposed()
        await asyncio.shield(self._enqueue(self._flush))

    async def _flush(self) -> None:
        await self._current.flush()

    def dispose(self) -> Disposal:
        """Dispose the manager and its current runtime after queued replacements;
        idempotent (the same awaitable). ``current`` raises ``RUNTIME_DISPOSED`` at once."""
        self._assert_not_reentrant("RuntimeManager.dispose")
        if self._disposal is None:
            self._state = "disposing"
            task = self._enqueue(self._dispose)
            observe(task)
            self._disposal = Disposal(task)
        return self._disposal

    async def _dispose(self) -> None:
        try:
            await _settle(self._current.dispose())
        finally:
            self._state = "disposed"

    def __repr__(self) -> str:
        return f"<RuntimeManager {self._state}>"


async def _settle(disposal: Disposal) -> None:
    """Await ``disposal``; if cancelled meanwhile, wait for it to finish, then re-raise."""
    try:
        await disposal
    except asyncio.CancelledError:
        await asyncio.wait((disposal.task,))
        raise


def _same_file_problem(previous: Runtime, candidate: Runtime) -> TetherRuntimeError | None:
    """Why the shared session is no longer what the candidate was built from (or ``None``)."""
    core = core_of(candidate)
    store = candidate.store
    ids = tuple(entry.id for entry in store.entries)
    if (
        not previous.agent.is_running
        and ids == core.loaded_entries
        and file_mark(store.path) == core.loaded
    ):
        return None
    new = set(ids) - set(core.loaded_entries)
    if any(entry.id in new for entry in candidate.session.active_entries):
        return TetherRuntimeError(
            "RUNTIME_SESSION_DIVERGED",
            "The replacement wrote the session file before it was published; "
            "the current runtime stays",
        )
    return TetherRuntimeError(
        "RUNTIME_SESSION_DIVERGED",
        "The session changed while its replacement was built; the current runtime stays",
    )
